"""Dense twins (explore.twins.twin_metrics, run by explore.evaluator) against independent runs of
the command line: ``sparsepe simulate`` for each design's latency and ``sparsepe ppa`` for its area.
The iso-array twin is the same array with dense PEs; the iso-area twin is the fastest dense array of
the space whose area does not exceed the design's (chosen here from the ppa runs, not by the
evaluator)."""

from __future__ import annotations

import json
import tomllib

import pytest
from typer.testing import CliRunner

import explore.evaluator as ev
from explore.cli import app
from explore.config import parse_config

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
DESIGN = dict(rows=16, cols=16, sram_kb=256, clock_mhz=500.0, node_nm=16, sparsity="2:4", pipeline=1, dataflow="ws",
              dram_gbps=100.0)


def _cli(*args) -> dict:
    r = CliRunner().invoke(app, [*map(str, args), "--json"])
    assert r.exit_code == 0, r.output
    return json.loads(r.stdout)


def _latency_s(rows, cols, sparsity) -> float:
    j = _cli("simulate", "--workload", "bert-base", "--rows", rows, "--cols", cols, "--sram-kb", 256,
             "--clock-mhz", 500, "--dram-gbps", 100, "--dataflow", "ws", "--sparsity", sparsity)
    return j["total_cycles"] / 500e6


def _area(rows, cols, sparsity) -> float:
    j = _cli("ppa", "--rows", rows, "--cols", cols, "--sram-kb", 256, "--clock-mhz", 500, "--node", 16,
             "--sparsity", sparsity, "--dram", "lpddr5", "--dram-units", 8)
    return j["area_mm2"]


@pytest.fixture(scope="module")
def metrics():
    cfg = parse_config(tomllib.loads(CONFIG), source="twins.toml")
    return ev.evaluate(dict(DESIGN), ev.make_context(cfg))


def test_iso_array_twin_equals_independent_runs(metrics):
    lat, lat_dense = _latency_s(16, 16, "2:4"), _latency_s(16, 16, "dense")
    assert metrics["latency_ms"] == pytest.approx(lat * 1e3, rel=1e-9)
    assert metrics["speedup_vs_dense_design"] == pytest.approx(lat_dense / lat, rel=1e-9)
    assert metrics["area_vs_dense_design"] == pytest.approx(_area(16, 16, "2:4") / _area(16, 16, "dense"), rel=1e-9)


def test_iso_area_twin_is_the_fastest_dense_array_that_fits(metrics):
    area = _area(16, 16, "2:4")
    cands = {(r, c): _area(r, c, "dense") for r in (8, 16, 32) for c in (8, 16, 32)}
    fit = {k: a for k, a in cands.items() if a <= area}
    assert fit, "some dense array fits in the 2:4 design's area"
    best = min(fit, key=lambda k: (_latency_s(*k, "dense"), -fit[k]))
    assert (metrics["iso_area_dense_rows"], metrics["iso_area_dense_cols"]) == best
    assert metrics["iso_area_dense_fits"] == 1.0
    assert metrics["speedup_vs_iso_area_dense"] == pytest.approx(_latency_s(*best, "dense") / _latency_s(16, 16, "2:4"),
                                                                 rel=1e-9)
