"""Calibration at 45 nm (Horowitz, 0.9 V: energy on the 8-bit multiply and 32-bit add, area on the
8-bit multiply) and 7 nm (Jouppi, same two operators), held-out operators side by side.

Run: python bench/bench_ppa_calibration.py
"""

from ppa import tech
from ppa.calibration import calibrate, held_out_table, node_scaling_crosscheck


def main() -> None:
    c = calibrate()
    print(
        f"anchors 8x8 multiply: {c['transistors']} transistors, {c['toggles_per_op']:.3f} toggles/op "
        f"({c['energy_per_op']:.3f} toggle-equivalents); 32-bit add {c['add32_toggles_per_op']:.3f} toggles/op "
        f"({c['add32_energy_per_op']:.3f}) -> "
        f"E_toggle(45nm,0.9V) = {c['e_toggle_45_pj'] * 1e3:.4f} fJ, "
        f"area/transistor = {c['area_per_transistor_45_um2']:.4f} um^2 "
        f"(hard-coded: {tech.E_TOGGLE_45_PJ * 1e3:.4f} fJ, {tech.AREA_PER_TRANSISTOR_45_UM2:.4f} um^2)"
    )
    print(
        f"{'operator':18} {'tr':>6} {'tog/op':>8} {'eq/op':>8} {'E pJ':>8} "
        f"{'Horowitz':>8} {'ratio':>6} {'A um2':>8} {'Horowitz':>8} {'ratio':>6}"
    )
    for r in held_out_table():
        tag = " (anchor)" if r["anchor"] or r["energy_anchor"] else ""
        print(
            f"{r['operator'] + tag:18} {r['transistors']:6d} {r['toggles_per_op']:8.2f} {r['energy_per_op']:8.2f} "
            f"{r['energy_pj']:8.4f} {r['energy_ref_pj']:8.3f} {r['energy_ratio']:6.2f} "
            f"{r['area_um2']:8.1f} {r['area_ref_um2']:8.0f} {r['area_ratio']:6.2f}"
        )
    print()
    print(
        "7 nm, nominal voltage, against Jouppi ISCA 2021 Table 2 (8-bit multiply and 32-bit add are the 7 nm anchors)"
    )
    print(f"{'operator':18} {'model pJ':>9} {'Jouppi':>8} {'ratio':>6}")
    for r in node_scaling_crosscheck():
        print(f"{r['operator']:18} {r['energy_pj']:9.4f} {r['energy_ref_pj']:8.3f} {r['energy_ratio']:6.2f}")


if __name__ == "__main__":
    main()
