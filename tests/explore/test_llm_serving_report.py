"""The sweep's LLM serving figures: TTFT and TPOT p50/p95/p99 as metrics, and the report section
that sets the design against its dense twin with and without double-buffered weights."""

from __future__ import annotations

import tomllib
from pathlib import Path
from types import SimpleNamespace

import pytest

from explore.config import parse_config
from explore.report.serving import section_llm_serving, serving_variants
from explore.results import Evaluator

REPO = Path(__file__).resolve().parents[2]


def _cfg():
    """examples/llama.toml on one small array, with a short serving run (200 requests, 2 seeds)."""
    data = tomllib.loads((REPO / "examples" / "llama.toml").read_text())
    data["space"].update(
        rows=[32], cols=[32], sram_kb=[2048], clock_mhz=1000, node_nm=[7], pipeline=[1], dram=["hbm3"]
    )
    data["serving"].update(n_requests=200, seeds=2, output_tokens=16)
    return parse_config(data, "llama.toml")


def _num(cell: str) -> float:
    return float(cell.replace(",", "").rstrip("x"))


POINT = dict(
    rows=32,
    cols=32,
    sram_kb=2048,
    clock_mhz=1000.0,
    node_nm=7,
    sparsity="2:4",
    pipeline=1,
    dataflow="ws",
    dram="hbm3",
    double_buffer=False,
)


def test_variants_pair_each_sparse_design_with_its_dense_twin():
    data = SimpleNamespace(cfg=_cfg())
    ws = serving_variants(data, POINT)
    assert [lab for lab, _ in ws] == [
        "sparse 2:4, WS, single-buffered",
        "dense, WS, single-buffered",
        "sparse 2:4, WS, double-buffered",
        "dense, WS, double-buffered",
    ]
    assert ws[0][1] == POINT and ws[3][1] == {**POINT, "sparsity": "dense", "double_buffer": True}
    os_rows = serving_variants(data, {**POINT, "dataflow": "os", "sparsity": "dense"})
    assert [lab for lab, _ in os_rows][:2] == [
        "sparse 2:4, OS, single-buffered",
        "dense, OS, single-buffered",
    ]
    assert [(p["dataflow"], p["double_buffer"]) for _, p in os_rows] == [
        ("os", False),
        ("os", False),
        ("ws", False),
        ("ws", False),
        ("ws", True),
        ("ws", True),
    ]


@pytest.mark.yosys
def test_section_reports_percentiles_speedups_and_limits():
    cfg = _cfg()
    ev = Evaluator("explore.evaluator", cfg)
    det = ev.detail(POINT)
    m = det.metrics
    for k in ("ttft", "tpot"):  # the metrics every trial stores
        assert 0 < m[f"{k}_p50_ms"] <= m[f"{k}_p95_ms"] <= m[f"{k}_p99_ms"]
    sec = section_llm_serving(SimpleNamespace(cfg=cfg), ev, det)
    (t,) = sec.tables
    rows = {r[0]: dict(zip(t.columns, r, strict=True)) for r in t.rows}
    assert list(rows) == [lab for lab, _ in serving_variants(SimpleNamespace(cfg=cfg), POINT)]
    first = rows["sparse 2:4, WS, single-buffered"]
    assert _num(first["TTFT p99"]) == pytest.approx(m["ttft_p99_ms"], rel=1e-3)
    for buf in ("single", "double"):
        sp, dn = rows[f"sparse 2:4, WS, {buf}-buffered"], rows[f"dense, WS, {buf}-buffered"]
        assert dn["decode speedup vs dense"] == "-"
        speed, limit = (_num(sp[c]) for c in ("decode speedup vs dense", "memory-bound limit"))
        assert speed == pytest.approx(_num(dn["decode step (ms)"]) / _num(sp["decode step (ms)"]), rel=2e-3)
        # INT8 2:4: dense bytes / (half the bytes + 2 bits per kept weight) = 1 / (1/2 + 1/8)
        assert limit == pytest.approx(1.6, abs=2e-3) and speed <= limit + 1e-3
    for side in ("sparse 2:4", "dense"):  # shorter folds: never a slower decode step
        assert _num(rows[f"{side}, WS, double-buffered"]["decode step (ms)"]) <= _num(
            rows[f"{side}, WS, single-buffered"]["decode step (ms)"]
        )
    assert section_llm_serving(SimpleNamespace(cfg=cfg), ev, None) is None
