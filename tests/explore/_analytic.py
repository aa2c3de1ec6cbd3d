"""A TEST-ONLY analytic objective for the study/storage machinery tests.

It is not a hardware model and is never used by the product: it stands in for
``explore.evaluator`` so that resume, workers, storages and determinism can be tested quickly and
independently of sim/ and ppa/. It follows the evaluator interface (``make_context(cfg)``,
``evaluate(point, ctx) -> dict``) and returns every metric the limits and objectives need.
A ``SPARSEPE_TEST_SLOW_S`` environment variable adds a sleep per evaluation, so a test can kill a
sweep halfway.
"""

from __future__ import annotations

import math
import os
import time

_DRAM_GBPS = {"lpddr5": 51.2, "hbm2": 256.0}


def make_context(cfg):
    return {"slow_s": float(os.environ.get("SPARSEPE_TEST_SLOW_S", "0"))}


def evaluate(point, ctx):
    if ctx["slow_s"]:
        time.sleep(ctx["slow_s"])
    pes = point["rows"] * point["cols"]
    clk = float(point["clock_mhz"])
    bw = _DRAM_GBPS[point["dram"]]
    sparse = point["sparsity"] != "dense"
    ops = 2 * pes * clk * 1e6 * (2.0 if sparse else 1.0) / 1e12
    demand = ops * 1e12 / 2 / 50.0 / 1e9  # GB/s
    stall = max(0.0, 1.0 - bw / demand) if demand > 0 else 0.0
    eff = ops * (1.0 - stall)
    power = 0.05 + pes * clk * 1e-6 * (0.6 if sparse else 1.0) + point["sram_kb"] * 1e-5
    area = pes * 0.004 + point["sram_kb"] * 0.002 + 1.0
    fmax = 2200.0 / (1 + 0.1 * (3 - point["pipeline"])) * (1.0 if point["node_nm"] == 7 else 0.7)
    tj = 45.0 + 2.0 * power
    return {
        "clock_mhz": clk,
        "fmax_mhz": fmax,
        "effective_tops": eff,
        "power_w": power,
        "perf_per_watt": eff / power,
        "area_mm2": area,
        "power_density_w_mm2": power / area,
        "tj_c": tj,
        "stall_fraction": stall,
        "p99_latency_ms": 1.0 / max(eff, 1e-9),
        "latency_ms": 0.8 / max(eff, 1e-9),
        "quality_delta": 0.004 if sparse else 0.0,
        "sram_mb_log": math.log2(point["sram_kb"]),
    }
