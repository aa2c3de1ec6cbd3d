"""PE-scaled array area vs whole-array synthesis (2x2, 4x4, 8x8), and sparse vs dense PE.

Run: python bench/bench_ppa_array.py   (8x8 synthesis takes about 2 minutes on one core)
"""

import time

from hw.params import PEParams
from ppa import activity, tech
from ppa.model import array_facts, fmax_mhz, synth_array


def main() -> None:
    p = PEParams()
    f = array_facts(p, True, None)
    print(f"model terms: t0 {f.t0:.0f}, t_first {f.t_first:.0f}, t_cell {f.t_cell:.0f}, register bit {f.reg_bit_transistors:.0f} transistors")
    for n in (2, 4, 8):
        t = time.time()
        real = synth_array(p, n, n)
        dt = time.time() - t
        est = f.transistors(p, n, n)
        print(f"{n}x{n}: PE-scaled {est:9.0f}  synthesised {real.transistors:9d}  ratio {est / real.transistors:.3f}  "
              f"(FFs {f.flip_flops(p, n, n):.0f} vs {real.flip_flops}; synthesis {dt:.1f} s{', cached' if real.cached else ''})")
    n45 = tech.node(45, 1.0)
    print("\nsparse 2:4 PE vs dense 4-MAC PE, INT8, 45 nm 1.0 V, default trace (both cover 4 MACs/cycle):")
    rows = {}
    for sparse in (True, False):
        a = activity.pe_activity(p, sparse)
        e = (a.toggles + a.flip_flops * tech.CLOCK_TOGGLES_PER_FF_CYCLE) * n45.toggle_energy_pj
        rows[sparse] = (a.transistors * n45.area_per_transistor_um2, e / p.m, fmax_mhz(a.logic_depth, 45, 1.0), a.logic_depth)
    for sparse, (area, epm, fm, depth) in rows.items():
        print(f"  {'sparse' if sparse else 'dense ':6}: area {area:7.0f} um^2  energy/effective MAC {epm:.3f} pJ  fmax {fm:6.0f} MHz (depth {depth})")
    s, d = rows[True], rows[False]
    print(f"  ratio sparse/dense: area {s[0] / d[0]:.3f}, energy/MAC {s[1] / d[1]:.3f}, fmax {s[2] / d[2]:.3f}")
    from ppa.model import _decoder_transistors

    dec = _decoder_transistors(p.n, p.m, None) * n45.area_per_transistor_um2
    half_dense = d[0] / 2
    print(f"  decoder alone {dec:.1f} um^2; sparse PE minus half a dense PE (2 of 4 multipliers) = "
          f"{s[0] - half_dense:.0f} um^2 = {100 * (s[0] - half_dense) / half_dense:.0f} % overhead for 2:4 support (derived)")


if __name__ == "__main__":
    main()
