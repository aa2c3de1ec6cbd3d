"""explore.evaluator.evaluate_detail: the metrics are evaluate()'s, and the pieces it returns
(ppa.model estimates, sim.perf per-layer results, quality evidence) re-add to them.

References: evaluate() on a fresh context; the aggregation formulas of the evaluator's docstring
re-applied here by hand to the returned PPAResults and NetworkResults; sim.quality's own
reference experiment and guardrail for the quality block.
"""

from __future__ import annotations

import math

import pytest

import explore.evaluator as ev
from explore.config import parse_config
from tests.explore.conftest import fixed_toml, space_toml

CONFIG = (
    '[study]\nname = "detail"\nseed = 0\n'
    + space_toml(rows=[8], clock_mhz=[800.0])
    + fixed_toml()
    + """
[[workload]]
name = "bert-base"
weight = 3.0
params = { seq = 64, batch = 1 }
[[workload]]
name = "gpt2-small"
weight = 1.0
params = { seq = 32, batch = 1 }
[limits]
max_stall_fraction = 0.5
{extra}
[objectives]
primary = "perf_per_watt"
"""
)

POINT = {
    "rows": 8,
    "cols": 16,
    "sram_kb": 256.0,
    "clock_mhz": 800.0,
    "node_nm": 7,
    "sparsity": "2:4",
    "pipeline": 1,
    "dataflow": "ws",
    "dram": "lpddr5",
}


def _cfg(extra: str = "", source: str = "detail.toml"):
    import tomllib

    return parse_config(tomllib.loads(CONFIG.replace("{extra}", extra)), source=source)


def test_detail_metrics_are_evaluate_and_the_parts_re_add():
    ctx = ev.make_context(_cfg())
    det = ev.evaluate_detail(dict(POINT), ctx)
    ref = ev.evaluate(dict(POINT), ev.make_context(_cfg(source="other.toml")))
    assert det["metrics"] == ref  # exact: the same computation
    assert det["quality"] is None  # no max_quality_delta in the config
    assert set(det["ppa"]) == set(det["workloads"]) == {"bert-base", "gpt2-small"}
    assert [(n, w) for n, w, _ in det["networks"]] == [("bert-base", 3.0), ("gpt2-small", 1.0)]
    # the docstring's aggregates, by hand from the returned per-workload results
    clk_hz = POINT["clock_mhz"] * 1e6
    W = time_s = energy = ops = dense_time = 0.0
    for name, a, net in det["networks"]:
        assert net.arch.rows == 8 and net.arch.cols == 16 and net.arch.sparse
        t = net.total_cycles / clk_hz
        p = det["ppa"][name]
        assert p.clock_mhz == POINT["clock_mhz"]
        W += a
        time_s += a * t
        energy += a * p.power_w * t
        ops += a * 2.0 * float(net.totals["dense_macs"])
        dense_time += a * float(net.totals["dense_total_cycles"]) / clk_hz
    m = det["metrics"]
    assert math.isclose(m["latency_ms"], time_s / W * 1e3, rel_tol=1e-12)
    assert math.isclose(m["power_w"], energy / time_s, rel_tol=1e-12)
    assert math.isclose(m["perf_per_watt"], ops / energy / 1e12, rel_tol=1e-12)
    assert math.isclose(m["effective_speedup"], dense_time / time_s, rel_tol=1e-12)
    assert m["area_mm2"] == det["ppa"]["bert-base"].area_mm2 == det["ppa"]["gpt2-small"].area_mm2
    # the vector unit (one lane per column) is in ppa's area and, with each workload's operations, its power
    for name, _, net in det["networks"]:
        p = det["ppa"][name]
        assert p.area_breakdown_mm2["vector"] > 0 and p.details["vector_unit"]["lanes"] == 16
        from ppa.vector_cost import workload_vector_ops

        e = (
            sum(
                n * p.details["vector_unit"]["energy_pj_per_op"][c]
                for c, n in workload_vector_ops(det["workloads"][name]).items()
            )
            * 1e-12
            * p.details["vt"]["energy_factor"]
        )
        assert math.isclose(p.power_breakdown_w["vector"], e / (net.total_cycles / clk_hz), rel_tol=1e-12)
    assert m["tj_c"] == max(p.tj_c for p in det["ppa"].values())


def test_detail_quality_is_the_transformer_reference_run_once(monkeypatch):
    import sim.quality.evidence.evidence as qe

    calls = []
    real = qe.transformer_evidence

    def counted(*a, **k):
        calls.append((a, k))
        return real(*a, **k)

    monkeypatch.setattr(ev, "transformer_evidence", counted)  # the evaluator's reference (imported from qe)
    ctx = ev.make_context(_cfg("max_quality_delta = 0.015"))
    assert len(calls) == 1  # 2:4 is the space's only sparse pattern; bert and gpt share the reference
    det = ev.evaluate_detail(dict(POINT), ctx)
    dense = ev.evaluate_detail({**POINT, "sparsity": "dense"}, ctx)
    assert len(calls) == 1  # kept in the context, not re-run
    e, r = real(2, 4, seed=ev.QUALITY_SEED)  # the cached run: the same evidence
    qd = det["quality"]
    assert qd["reference"] == "char-transformer" and qd["evidence"] == "proxy"
    for k, v in e.items():
        if k != "details":  # details carry "cached": the first run computed, this one loaded
            assert qd[k] == v, k
    assert {**qd["details"], "cached": True} == e["details"]
    m = det["metrics"]
    assert m["quality_delta"] == qd["quality_delta"] and m["quality_delta_ci"] == qd["quality_delta_ci"]
    assert m["quality_evidence"] == "proxy"
    lo, hi = qd["quality_delta_interval"]
    assert lo <= qd["quality_delta"] <= hi == qd["quality_delta_ci"]
    # the loss is the relative perplexity increase of the fine-tuned model over the equal-latency dense one
    import numpy as np

    ps = r.per_sample
    point = np.mean(
        [
            np.expm1(np.mean(s) - np.mean(d))
            for d, s in zip(ps["dense_equal_latency"], ps["finetuned"], strict=True)
        ]
    )
    assert qd["quality_delta"] == pytest.approx(point, rel=1e-12)
    assert (qd["guardrail_ok"], qd["guardrail"]) == qe.guardrail_verdict(e, 0.015)
    assert qd["guardrail_ok"] == (hi <= 0.015)
    assert qd["max_quality_delta"] == 0.015
    assert dense["quality"] == {
        "dense": True,
        "quality_delta": 0.0,
        "quality_delta_ci": 0.0,
        "evidence": "proxy",
    }
    assert dense["metrics"]["quality_evidence"] == "proxy"


def test_no_quality_limit_labels_the_evidence_none():
    ctx = ev.make_context(_cfg())
    m = ev.evaluate(dict(POINT), ctx)
    assert m["quality_evidence"] == "none" and "quality_delta" not in m


@pytest.fixture(autouse=True)
def _fresh_contexts(monkeypatch):
    """make_context memoises per config object; each test builds its own configs anyway."""
    monkeypatch.setattr(ev, "_CONTEXTS", {})
