"""The PPA model against published silicon: TPU v1, Eyeriss v1, the NVDLA configurations, TPU v4i's
bf16 MXUs and the A100's INT8 tensor-core throughput, side by side.

Run: python bench/bench_silicon.py   (first run synthesises the PEs and vector lanes, a few minutes;
warm, a few seconds)

The chips and the model's figure at each published scope live in explore.validation.silicon (also
used by `sparsepe validate`, whose "silicon" rows hold each figure to 1.5x). Every design is
configured from its published architecture only (MAC count, precision, node,
clock, on-chip SRAM, post-processing throughputs, DRAM type) and costed with ppa.model.estimate,
whose energy constants are calibrated on Horowitz (45 nm) and Jouppi (7 nm) operator energies and
whose logic area comes from published process logic densities (ppa.tech); one constant, the fixed
control block (ppa.model.CONTROL_FIXED_TRANSISTORS), is fitted on NVDLA nv_small, whose row is
its fit anchor; nothing else is fitted to these chips.
Sources are in docs/published-silicon.md. Our PE covers M = 4 reduction elements per cycle (4
multipliers and an adder tree), so a chip of N MACs is configured as R x C PEs with R x C x 4 = N.

Scope of each published figure (printed in the table, with what the model covers and leaves out):
- "chip": the whole die or package (host interface, control, caches, PHYs, I/O);
- "block": the accelerator block without DRAM PHY (NVDLA's synthesis areas include its memories);
- "array": the MAC array only;
- "slope": a derived per-MAC increment (differences between published rows), scope of everything that
  grows with the MAC count.
The model's figure is taken at the same scope: chip = everything ppa.model costs (array, SRAM,
vector unit, PHY, wiring/control allowances), block = chip less PHY, array = pe_array + decoders.
Power is on-die power (DRAM device power excluded) at the default activity (every PE busy), or,
where the chip publishes the throughput its power was measured at (Eyeriss: AlexNet at 35 fps),
at that throughput (silicon.measured_activity); model TOPS/W is peak TOPS over that power, as the
published TOPS/W is published peak TOPS over published power. Power and TOPS/W depend on
ppa.model's clock power (clock_energy_per_ff_cycle_pj): those rows are marked "clk".

Targets: every figure within 2x; array area and TOPS/W of the matrix units within 1.5x.
Misses are printed with their reason.
"""

from __future__ import annotations

from explore.validation.silicon import (
    CLOCK_POWER_FIGURES,
    SKIPPED,
    chips,
    estimate_with_fallback as estimate,
    lsq_slope,
    measured_activity,
    model_figures,
)
from ppa import calibration, tech


def _verdict(fig: str, scope: str, ratio: float) -> tuple[bool, float]:
    limit = 1.5 if scope == "array" and fig in ("array_area_mm2", "mxu_area_mm2", "tops_per_w") else 2.0
    return 1 / limit <= ratio <= limit, limit


def _line(fig, scope, got, pub, note, ok, limit, ratio):
    verdict = f"within {limit:g}x" if ok else f"MISS (> {limit:g}x)"
    clk = " clk" if fig in CLOCK_POWER_FIGURES else ""
    return f"{'':46s} {fig:16s} {scope:6s} {got:10.3g} {pub:10.3g} {ratio:6.2f}  {verdict}{clk}   [{note}]"


def main() -> None:
    print(
        "sparsepe PPA model vs published silicon (energy calibrated on Horowitz 45 nm / Jouppi 7 nm, logic area "
        "on published process logic densities; the fixed control block fitted on NVDLA nv_small)\n"
    )
    hdr = (
        f"{'design':46s} {'figure':16s} {'scope':6s} {'model':>10s} {'published':>10s} {'ratio':>6s}  verdict"
    )
    print(hdr)
    print("-" * len(hdr))
    misses = []
    nvdla256 = []  # (MACs, model block mm^2, published mm^2) of the 256 KB rows
    for chip in chips():
        act = (
            measured_activity(chip.design, chip.macs, chip.measured_macs_per_s)
            if chip.measured_macs_per_s is not None
            else None
        )
        res = estimate(chip.design, act)
        m = model_figures(res)
        nd = tech.node(chip.design.node_nm, res.voltage_v)
        sta_failed = any("OpenSTA mapping failed" in n for n in res.notes)
        print(
            f"{chip.name:46s} {'clock':16s} {'array':6s} {res.clock_mhz:8.0f} MHz at {res.voltage_v:.2f} V "
            f"(Vmin {res.details['vmin_v']:.2f}, fmax {res.fmax_at_voltage_mhz:.0f} MHz, FO4 {nd.fo4_ps:.1f} ps)"
            f"{'' if res.feasible else '  INFEASIBLE: ' + '; '.join(res.infeasible_reasons)}"
            f"{'  [timing: generic path, OpenSTA mapping failed]' if sta_failed else ''}"
        )
        a = res.area_breakdown_mm2
        vu = res.details["vector_unit"]
        print(
            f"{'':46s} {'area parts mm^2':16s} {'':6s} array {m['array_area_mm2']:.3g}, sram {a['sram']:.3g}, "
            f"vector {a['vector']:.3g} ({vu['lanes']} x {vu['width_bits']} b), other {a['other']:.3g}, "
            f"phy {a['phy']:.3g}"
        )
        if chip.scope:
            print(f"{'':46s} {'model scope':16s} {chip.scope}")
        for fig, (pub, scope, note) in chip.published.items():
            got = m[fig]
            if got is None:
                print(f"{'':46s} {fig:16s} {scope:6s} {'n/a':>10s} {pub:10.3g}")
                continue
            ratio = got / pub
            ok, limit = _verdict(fig, scope, ratio)
            print(_line(fig, scope, got, pub, note, ok, limit, ratio))
            if not ok:
                misses.append((chip.name, fig, ratio, chip.reasons.get(fig, "no reason recorded")))
        for label, d in chip.variants:
            vm = model_figures(estimate(d))
            for fig, (pub, scope, _note) in chip.published.items():
                print(
                    f"{'':46s} {fig:16s} {scope:6s} {vm[fig]:10.3g} {pub:10.3g} {vm[fig] / pub:6.2f}  "
                    f"info only: {label}"
                )
        if chip.macs and chip.cbuf_kb == 256:
            nvdla256.append((chip.macs, m["block_area_mm2"], chip.published["block_area_mm2"][0]))
        print()
    if len(nvdla256) >= 2:
        xs = [x[0] for x in nvdla256]
        pub_s, pub_i = lsq_slope(xs, [x[2] for x in nvdla256])
        mod_s, mod_i = lsq_slope(xs, [x[1] for x in nvdla256])
        name = f"NVDLA 256 KB rows ({', '.join(str(x) for x in xs)} MACs)"
        note = "[D] least-squares slope of the primer's areas over MACs"
        ratio = mod_s / pub_s
        ok, limit = _verdict("area_per_mac_um2", "slope", ratio)
        print(f"{name:46s} {'model scope':16s} v1 MAC cells (N INT8 MACs as N/2 INT16 MACs), CACC pro rata")
        print(_line("area_per_mac_um2", "slope", mod_s * 1e6, pub_s * 1e6, note, ok, limit, ratio))
        print(
            f"{'':46s} {'intercept_mm2':16s} {'block':6s} {mod_i:10.3g} {pub_i:10.3g} {mod_i / pub_i:6.2f}  "
            f"info only: area at 0 MACs with the 256 KB CBUF (fixed units + CBUF)"
        )
        if not ok:
            misses.append(
                (
                    name,
                    "area_per_mac_um2",
                    ratio,
                    "the per-MAC increment covers everything NVDLA scales with the MAC count (CMAC, CACC "
                    "adders and buffers, CSC data paths, wider SDP); the model's is the MAC array and CACC SRAM",
                )
            )
        print()
    if misses:
        print("Misses and their reasons:")
        for name, fig, ratio, why in misses:
            print(f"- {name}, {fig} (ratio {ratio:.2f}): {why}")
    print("\nPublished 7 nm matrix-unit TOPS/W (published-figures §8b) not configured:")
    for what, why in SKIPPED:
        print(f"- {what}: {why}")
    h = calibration.horowitz_area_check()
    print(
        f"\nArea note: logic area per transistor = 1 / (the node's published peak logic density x "
        f"{tech.REALISED_DENSITY_FRACTION:.2f} realised fraction: {tech.PLACEMENT_UTILISATION:.2f} placement "
        f"utilisation / {tech.POST_LAYOUT_CELL_GROWTH:.2f} post-layout cell growth), ppa.tech: "
        + ", ".join(
            f"{nm} nm {tech.node(nm).area_per_transistor_um2:.3g} um^2 "
            f"({tech.logic_density_mtr_mm2(nm):.3g} MTr/mm^2 peak)"
            for nm in (65, 28, 7)
        )
        + ". Check: Horowitz's 45 nm 8-bit multiplier (282 um^2, a cell-area figure) "
        f"against our {tech.CAL_MUL8_TRANSISTORS}-transistor "
        f"netlist: {h['model_block_um2']:.0f} um^2 placed ({h['block_ratio']:.2f}x), {h['model_cell_um2']:.0f} um^2 "
        f"at peak cell density ({h['cell_ratio']:.2f}x). SRAM area is CACTI's (ITRS-HP cells), unchanged."
    )


if __name__ == "__main__":
    main()
