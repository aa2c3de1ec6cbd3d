"""Speed of the analytical model: one design point over ResNet-50, and vectorised grid throughput.

    python bench/bench_sim_speed.py

Targets: whole-network ResNet-50 (53 convolutions + fc) for one design point < 2 ms;
vectorised >= 200,000 layer-evaluations per second on one core.
"""

from __future__ import annotations

import os
import statistics
import sys
import time
from pathlib import Path

os.environ.setdefault("OMP_NUM_THREADS", "1")
os.environ.setdefault("OPENBLAS_NUM_THREADS", "1")
sys.path.insert(0, str(Path(__file__).resolve().parents[1]))

import numpy as np  # noqa: E402

from sim.perf import ArrayConfig, simulate, simulate_grid  # noqa: E402
from sim.workloads import get_workload  # noqa: E402


def main() -> int:
    w = get_workload("resnet50")
    arch = ArrayConfig(rows=32, cols=32, dataflow="ws", clock_mhz=1000, dram_gbps=64)
    simulate(w, arch)
    times = []
    for _ in range(300):
        t0 = time.perf_counter()
        simulate(w, arch)
        times.append(time.perf_counter() - t0)
    med = statistics.median(times) * 1e3
    print(
        f"ResNet-50 ({len(w.layers)} layers incl. fc), one design point (sparse + dense baseline): "
        f"median {med:.3f} ms, p95 {np.percentile(times, 95) * 1e3:.3f} ms   [target < 2 ms]  ratio {2.0 / med:.1f}x"
    )

    rng = np.random.default_rng(0)
    P = 20_000
    params = {
        "rows": rng.choice([8, 16, 32, 64, 128], P),
        "cols": rng.choice([8, 16, 32, 64, 128], P),
        "clock_mhz": rng.uniform(200, 2000, P),
        "dram_gbps": rng.uniform(8, 512, P),
        "sram_kb": rng.choice([48, 192, 768, 3072], P),
        "dataflow": rng.choice(["ws", "os", "is"], P),
    }
    simulate_grid(w, {k: v[:10] for k, v in params.items()})
    t0 = time.perf_counter()
    g = simulate_grid(w, params)
    dt = time.perf_counter() - t0
    evals = P * len(w.layers)
    print(
        f"vectorised grid: {P:,} design points x {len(w.layers)} layers = {evals:,} layer-evaluations "
        f"(each also evaluated dense for the speedup) in {dt:.2f} s = {evals / dt:,.0f} /s   "
        f"[target >= 200,000 /s]  ratio {evals / dt / 2e5:.1f}x"
    )
    print(
        f"  sanity: effective speedup range {g['effective_speedup'].min():.3f}..{g['effective_speedup'].max():.3f}"
    )
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
