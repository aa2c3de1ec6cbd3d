"""Amaranth simulation speed of one sparse PE and a 4x4 weight-stationary array (PE-cycles/s).

Reference: tooling-facts.md measured about 3,000 cycles/s for one 8-bit 2:4 PE on this kind of
machine (2 cores, Python 3.11). Run: ``python bench/bench_hw_sim.py [--cycles 3000] [--seed 0]``.
"""

from __future__ import annotations

import argparse
import time

import numpy as np

from hw.array import SparseArray, tile_cycles
from hw.golden import compress_nm, gemm_nm, legal_codes, pe_reference
from hw.params import PEParams
from hw.pe import DensePE, SparsePE
from hw.simulate import run_array_ws, run_pe

REFERENCE_PE_CYCLES_PER_S = 3000  # /work/shared/reference/tooling-facts.md, "Amaranth 0.5.10"


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__)
    ap.add_argument("--cycles", type=int, default=3000, help="PE stream length")
    ap.add_argument("--vectors", type=int, default=200, help="activation vectors per array tile")
    ap.add_argument("--seed", type=int, default=0)
    args = ap.parse_args()
    rng = np.random.default_rng(args.seed)
    p = PEParams()
    t = args.cycles
    acts = rng.integers(-128, 128, size=(t, 4))
    w = rng.integers(-128, 128, size=(t, 2))
    metas = rng.choice(legal_codes(), size=t)
    clears = rng.random(t) < 0.05

    rows = []
    t0 = time.perf_counter()
    run = run_pe(SparsePE(p), acts, w, metas, clears)
    dt = time.perf_counter() - t0
    assert run.acc.tolist() == pe_reference(acts, w, metas, clears, p)[0].tolist()
    rows.append(("sparse_pe 2:4 int8", run.cycles, 1, dt))

    wd = rng.integers(-128, 128, size=(t, 4))
    t0 = time.perf_counter()
    run = run_pe(DensePE(p), acts, wd, None, clears)
    rows.append(("dense_pe int8", run.cycles, 1, time.perf_counter() - t0))

    R = C = 4
    T = args.vectors
    dense = rng.integers(-128, 128, size=(C, R * 4))
    values, meta = compress_nm(dense)
    x = rng.integers(-128, 128, size=(R * 4, T))
    t0 = time.perf_counter()
    arun = run_array_ws(SparseArray(R, C, p), values, meta, x)
    dt = time.perf_counter() - t0
    assert arun.out.tolist() == gemm_nm(values, meta, x).tolist()
    assert arun.cycles == tile_cycles(R, C, T, "ws")
    rows.append((f"sparse_array 4x4 WS (T={T})", arun.cycles, R * C, dt))

    print(
        f"{'design':32s} {'cycles':>8s} {'PEs':>4s} {'wall s':>8s} {'cycles/s':>10s} {'PE-cycles/s':>12s} "
        f"{'ref PE-c/s':>10s} {'ratio':>6s}"
    )
    for name, cyc, pes, sec in rows:
        pcs = cyc * pes / sec
        print(
            f"{name:32s} {cyc:8d} {pes:4d} {sec:8.2f} {cyc / sec:10.0f} {pcs:12.0f} "
            f"{REFERENCE_PE_CYCLES_PER_S:10d} {pcs / REFERENCE_PE_CYCLES_PER_S:6.2f}"
        )


if __name__ == "__main__":
    main()
