"""Dense twins (explore.twins, computed by explore.compare.study_twin_metrics over a study's dense
designs) against independent runs of the command line: ``sparsepe simulate`` for each design's
latency and ``sparsepe ppa`` for its area. The iso-array twin is the same array with dense PEs; the
iso-area twin is the fastest feasible dense design whose area does not exceed the design's, here
among every dense point of the space (chosen from the ppa runs, not by the evaluator); and the
iso-area lookup itself on records made up here."""

from __future__ import annotations

import json
import math
import tomllib

import pytest
from typer.testing import CliRunner

from explore.cli import app
from explore.compare import study_twin_metrics
from explore.config import parse_config
from explore.results import Evaluator, constraint_values
from explore.twins import DensePool, twin_metrics

pytestmark = pytest.mark.yosys

CONFIG = """
[study]
name = "twins"
[space]
rows = [8, 16, 32]
cols = [8, 16, 32]
sram_kb = [256]
clock_mhz = [500]
node_nm = [16]
sparsity = ["2:4", "dense"]
pipeline = [1]
dataflow = ["ws"]
dram_gbps = [100.0]
[fixed]
dram_type = "lpddr5"
[[workload]]
name = "bert-base"
[limits]
"""
DESIGN = dict(
    rows=16,
    cols=16,
    sram_kb=256,
    clock_mhz=500.0,
    node_nm=16,
    sparsity="2:4",
    pipeline=1,
    dataflow="ws",
    dram_gbps=100.0,
)


def _cli(*args) -> dict:
    r = CliRunner().invoke(app, [*map(str, args), "--json"])
    assert r.exit_code == 0, r.output
    return json.loads(r.stdout)


def _latency_s(rows, cols, sparsity) -> float:
    j = _cli(
        "simulate",
        "--workload",
        "bert-base",
        "--rows",
        rows,
        "--cols",
        cols,
        "--sram-kb",
        256,
        "--clock-mhz",
        500,
        "--dram-gbps",
        100,
        "--dataflow",
        "ws",
        "--sparsity",
        sparsity,
    )
    return j["total_cycles"] / 500e6


def _area(rows, cols, sparsity) -> float:
    j = _cli(
        "ppa",
        "--rows",
        rows,
        "--cols",
        cols,
        "--sram-kb",
        256,
        "--clock-mhz",
        500,
        "--node",
        16,
        "--sparsity",
        sparsity,
        "--dram",
        "lpddr5",
        "--dram-units",
        8,
    )
    return j["area_mm2"]


def _records(ev: Evaluator, points: list[dict]) -> list[dict]:
    return [
        {"number": i, "params": p, "metrics": m, "constraints": constraint_values(ev.cfg, m)}
        for i, (p, m) in enumerate(zip(points, ev.evaluate_many(points), strict=True))
    ]


@pytest.fixture(scope="module")
def twins():
    cfg = parse_config(tomllib.loads(CONFIG), source="twins.toml")
    ev = Evaluator("explore.evaluator", cfg, where=None)
    dense = _records(
        ev, [{**DESIGN, "rows": r, "cols": c, "sparsity": "dense"} for r in (8, 16, 32) for c in (8, 16, 32)]
    )
    design = _records(ev, [dict(DESIGN)])
    out = study_twin_metrics(design, design + dense, ev.evaluate_many)
    return [out[k] for k in out], design


@pytest.fixture(scope="module")
def metrics(twins):
    t, design = twins
    return {**design[0]["metrics"], **t[0]}


def test_iso_array_twin_equals_independent_runs(metrics):
    lat, lat_dense = _latency_s(16, 16, "2:4"), _latency_s(16, 16, "dense")
    assert metrics["latency_ms"] == pytest.approx(lat * 1e3, rel=1e-9)
    assert metrics["speedup_vs_dense_design"] == pytest.approx(lat_dense / lat, rel=1e-9)
    assert metrics["area_vs_dense_design"] == pytest.approx(
        _area(16, 16, "2:4") / _area(16, 16, "dense"), rel=1e-9
    )


def test_iso_area_twin_is_the_fastest_dense_array_that_fits(metrics):
    area = _area(16, 16, "2:4")
    cands = {(r, c): _area(r, c, "dense") for r in (8, 16, 32) for c in (8, 16, 32)}
    fit = {k: a for k, a in cands.items() if a <= area}
    assert fit, "some dense array fits in the 2:4 design's area"
    best = min(fit, key=lambda k: (_latency_s(*k, "dense"), -fit[k]))
    assert (metrics["iso_area_dense_rows"], metrics["iso_area_dense_cols"]) == best
    assert metrics["iso_area_dense_fits"] == 1.0
    assert metrics["speedup_vs_iso_area_dense"] == pytest.approx(
        _latency_s(*best, "dense") / _latency_s(16, 16, "2:4"), rel=1e-9
    )


def _rec(n, rows, cols, area, lat, ppw=1.0, feasible=True, sparsity="dense"):
    return {
        "number": n,
        "params": {"rows": rows, "cols": cols, "sparsity": sparsity},
        "metrics": {
            "area_mm2": area,
            "latency_ms": lat,
            "perf_per_watt": ppw,
            "energy_per_inference_mj": 1.0,
        },
        "constraints": {"area_mm2": -0.1 if feasible else 0.2},
    }


def test_iso_area_twin_counts_only_feasible_dense_designs_within_the_area():
    pool = DensePool(
        [
            _rec(0, 8, 8, 1.0, 9.0),
            _rec(1, 16, 16, 2.0, 3.0, feasible=False),
            _rec(2, 16, 8, 2.0, 5.0),
            _rec(3, 8, 16, 2.0, 5.0),
            _rec(4, 32, 32, 5.0, 1.0),
            _rec(5, 4, 4, 0.5, 7.0, sparsity="2:4"),
        ],
        lambda p: p["sparsity"] == "dense",
    )
    assert pool.iso_area(0.9) is None  # smaller than every feasible dense design: no twin
    assert pool.iso_area(1.5)["number"] == 0
    assert (
        pool.iso_area(2.0)["number"] == 2
    )  # the infeasible faster one does not count; a tie goes to the earlier
    assert pool.iso_area(10.0)["number"] == 4
    m = {
        "latency_ms": [2.0, 2.0],
        "perf_per_watt": [2.0, 2.0],
        "area_mm2": [0.9, 2.0],
        "energy_per_inference_mj": [1.0, 1.0],
    }
    t = twin_metrics(m, m, pool)
    assert t["iso_area_dense_fits"].tolist() == [0.0, 1.0]
    assert math.isnan(t["speedup_vs_iso_area_dense"][0]) and t["speedup_vs_iso_area_dense"][1] == 2.5
    assert t["perf_per_watt_vs_iso_area_dense"][1] == 2.0 and t["iso_area_dense_rows"][1] == 16
