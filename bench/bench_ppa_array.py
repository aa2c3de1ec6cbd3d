"""Row-resolved array model vs whole-array synthesis (2x2, 4x4, 8x8; 16x16 when asked or cached),
and sparse vs dense PE.

Run: python bench/bench_ppa_array.py [--with-16x16]
     python bench/bench_ppa_array.py --kinds   (sparse, dense, dense-path; WS and OS; 2x2..8x8)
The one-off column characterisation takes about 20 s and 8x8 synthesis about 2 minutes on one
core (both cached on disk afterwards); 16x16 synthesis takes several more minutes and runs only
with --with-16x16 (or is printed when already cached).
"""

import sys
import time

from hw.params import PEParams
from ppa import activity, rtl, synth as _synth, tech
from ppa.array_cost import KINDS, array_facts, decoder_transistors, synth_array
from ppa.liberty import energy as liberty_energy
from ppa.liberty.library import default_liberty
from ppa.model import fmax_mhz
from ppa.timing.effort import generic_stage_fo4
from ppa.timing.opensta import find_sta


def _uniform_row(f, p, R, C):
    """A uniform-row model, for comparison: every row below the first costs as row 1 and the
    deskew registers carry the full accumulator."""
    ma = p.m * p.act_bits
    psum = f.row_psum_bits[0] if R == 1 else p.acc_bits
    edges = ma * R * (C - 1) + ma * R * (R - 1) / 2 + psum * C * (C - 1) / 2 + (R + C - 2)
    return (
        f.t0 + C * f.row_transistors[0] + C * (R - 1) * f.row_transistors[1] + f.reg_bit_transistors * edges
    )


def _cached(p, n) -> bool:
    key = _synth._key(rtl.array_verilog(p, n, n), "sparse_array")
    return (_synth.cache_dir() / key / "result.json").exists()


def _generic_fo4(p, sparse):
    return generic_stage_fo4(activity.synth_pe(p, sparse, mapping="delay"))


def main() -> None:
    p = PEParams()
    t = time.time()
    f = array_facts(p, True, None)
    print(f"INT8 2:4 ACC32 array model terms (column characterisation {time.time() - t:.1f} s):")
    print(f"  shared t0 {f.t0:.0f} transistors, register bit {f.reg_bit_transistors:.0f} transistors")
    print("  row  psum bits  cell transistors  cell flip-flops  depth of column to this row")
    for r, (w, tr, ff, d) in enumerate(
        zip(f.row_psum_bits, f.row_transistors, f.row_flip_flops, f.row_depth, strict=True)
    ):
        print(
            f"  {r:3d}{'+' if r == len(f.row_psum_bits) - 1 else ' '} {w:9d}  {tr:16.0f}  {ff:15.0f}  {d:5d}"
        )
    sizes = [2, 4, 8]
    if "--with-16x16" in sys.argv or _cached(p, 16):
        sizes.append(16)
    else:
        print("  (16x16: not cached; run with --with-16x16 to synthesise it, several minutes)")
    print(
        "\n        model  synthesised  ratio | previous uniform-row model ratio | FFs model/synth | depth model/synth"
    )
    for n in sizes:
        t = time.time()
        real = synth_array(p, n, n)
        dt = time.time() - t
        est = f.transistors(p, n, n)
        old = _uniform_row(f, p, n, n)
        print(
            f"{n:2d}x{n:<2d} {est:9.0f}  {real.transistors:9d}  {est / real.transistors:.3f} | "
            f"{old / real.transistors:.3f}{'':28s}| {f.flip_flops(p, n, n):5.0f} / {real.flip_flops:<5d}   | "
            f"{f.depth(n)} / {real.logic_depth}   (synthesis {dt:.1f} s{', cached' if real.cached else ''})"
        )
    n45 = tech.node(45, 1.0)
    print(
        "\nsparse 2:4 PE vs dense 4-MAC PE, INT8, 45 nm 1.0 V, default trace "
        f"(both cover 4 MACs/cycle; {_clock_terms()[2]}):"
    )
    rows = {}
    for sparse in (True, False):
        a = activity.pe_activity(p, sparse)
        e = _pe_energy_pj(a, n45.toggle_energy_pj, p, sparse)
        rows[sparse] = (
            a.transistors * n45.area_per_transistor_um2,
            e / p.m,
            fmax_mhz(a.logic_depth, 45, 1.0, cycle_fo4=_generic_fo4(p, sparse)),
            a.logic_depth,
        )
    for sparse, (area, epm, fm, depth) in rows.items():
        print(
            f"  {'sparse' if sparse else 'dense ':6}: area {area:7.0f} um^2  "
            f"energy/effective MAC {epm:.3f} pJ  fmax {fm:6.0f} MHz (depth {depth})"
        )
    s, d = rows[True], rows[False]
    print(
        f"  ratio sparse/dense: area {s[0] / d[0]:.3f}, energy/MAC {s[1] / d[1]:.3f}, fmax {s[2] / d[2]:.3f}"
    )
    # The same 2:4-pruned model on the dense PE (zero weights included): what a dense array gets
    # for free from a pruned model, without any sparse hardware.
    tr = activity.synthetic_trace(p, False, dense_model="pruned")
    a = activity.pe_activity(p, False, tr)
    e_pruned = _pe_energy_pj(a, n45.toggle_energy_pj, p, False) / p.m
    print(
        f"  dense PE on the 2:4-pruned model: energy/effective MAC {e_pruned:.3f} pJ; "
        f"sparse/dense-on-pruned {s[1] / e_pruned:.3f}"
    )
    dec = decoder_transistors(p.n, p.m, None) * n45.area_per_transistor_um2
    half_dense = d[0] / 2
    print(
        f"  decoder alone {dec:.1f} um^2; sparse PE minus half a dense PE (2 of 4 multipliers) = "
        f"{s[0] - half_dense:.0f} um^2 = "
        f"{100 * (s[0] - half_dense) / half_dense:.0f} % overhead for 2:4 support (derived)"
    )


def _library():
    """The osu018 Liberty when it and OpenSTA are installed (ppa.model's STA path), else None."""
    lib = default_liberty()
    return lib if lib is not None and find_sta() is not None else None


def _clock_terms():
    """(clock toggle-equivalents per flip-flop per cycle, extra per flip-flop output toggle, source):
    the osu018 Liberty's (ppa.liberty.energy) on the STA path, as ppa.model uses them, else the
    stated assumption."""
    lib = _library()
    if lib is not None:
        e = liberty_energy.library_energy(lib)
        return (
            e.clock_toggles_per_ff_cycle,
            e.ff_extra_toggles,
            f"clock and flip-flop energy and the PEs' sizing factors from {lib.library}",
        )
    return (
        tech.CLOCK_TOGGLES_PER_FF_CYCLE,
        tech.FF_EXTRA_TOGGLES,
        "clock and flip-flop energy: osu018's figures (ppa.tech; no Liberty/OpenSTA)",
    )


def _pe_energy_pj(a, e_t: float, p, sparse: bool, dense_path: bool = False) -> float:
    """Energy per PE-cycle, as ppa.model charges the PE: gate toggle-equivalents (ppa.liberty.gates)
    at the PE's sizing factor on the STA path (ppa.liberty.sizing), flip-flop output nets, the
    library's pin energy per flip-flop output toggle, and the clock of every flip-flop."""
    clk, ff_extra, _ = _clock_terms()
    lib = _library()
    s = activity.pe_sizing_factor(p, sparse, lib, dense_path=dense_path) if lib is not None else 1.0
    return (a.gate_energy * s + a.ff_net_energy + a.ff_toggles * ff_extra + a.flip_flops * clk) * e_t


def kinds(sizes=(2, 4, 8)) -> None:
    """Every PE kind and dataflow, each from its own array RTL (ppa.array_cost): model vs whole-array
    synthesis, and the standalone PEs per effective MAC."""
    p = PEParams()
    print(
        "\nmodel / whole-array synthesis, INT8 2:4 ACC32 "
        "(transistors ratio, flip-flops model/synth, depth model/synth):"
    )
    for df in ("ws", "os"):
        for kind in KINDS:
            cells = []
            for n in sizes:
                f = array_facts(p, kind=kind, dataflow=df, rows=n)
                real = synth_array(p, n, n, kind=kind, dataflow=df)
                cells.append(
                    f"{n}x{n} {f.transistors(p, n, n) / real.transistors:.3f} "
                    f"{f.flip_flops(p, n, n):.0f}/{real.flip_flops} {f.depth(n)}/{real.logic_depth}"
                )
            print(f"  {df} {kind:10s} " + " | ".join(cells))
    n45 = tech.node(45, 1.0)
    print("\nstandalone PEs, 45 nm 1.0 V, default trace (N:M mode for the dense path):")
    for kind, sparse, dp, macs in (
        ("sparse", True, False, p.m),
        ("dense", False, False, p.m),
        ("dense_path", True, True, p.m * p.m // p.n),
    ):
        a = activity.pe_activity(p, sparse, dense_path=dp)
        e = _pe_energy_pj(a, n45.toggle_energy_pj, p, sparse, dp)
        print(
            f"  {kind:10s} area {a.transistors * n45.area_per_transistor_um2:7.0f} um^2 "
            f"({a.transistors * n45.area_per_transistor_um2 / macs:6.0f} per effective MAC/cycle), "
            f"energy/effective MAC {e / macs:.3f} pJ, depth {a.logic_depth}"
        )


if __name__ == "__main__":
    if "--kinds" in sys.argv:
        kinds()
    else:
        main()
