"""Precision as a design axis: config, evaluator columns, simulate --precision, the quality gates
and the precision policy section of the report."""

from __future__ import annotations

import json
import tomllib
from pathlib import Path
from types import SimpleNamespace

import numpy as np
import pytest

from explore.config import load_config, parse_config
from explore.report.precision import mix_families, policy_rows
from hw.errors import InputError
from tests.hw.test_verilog import _cli
from tests.sim.test_hf_import import MISTRAL_7B

REPO = Path(__file__).resolve().parents[2]


def _cfg(**space):
    data = tomllib.loads((REPO / "examples" / "precision.toml").read_text())
    data["space"].update(space)
    return parse_config(data, "precision.toml")


def test_precision_axis_parses_and_rejects_unknown():
    cfg = _cfg()
    assert cfg.space.precision == ["int8", "fp8-e4m3", "bf16"] and "precision" in cfg.space.active_axes()
    with pytest.raises(InputError, match="precision"):
        _cfg(precision=["int8", "fp64"])
    with pytest.raises(InputError, match="precision"):
        _cfg(precision={"min": 1, "max": 2})


def test_evaluator_operand_widths_follow_precision():
    from explore.evaluator import design_columns

    cfg = _cfg()
    cols = {
        k: np.array(v)
        for k, v in {
            "rows": [8, 8, 8, 8],
            "cols": [8] * 4,
            "sram_kb": [256] * 4,
            "clock_mhz": [500] * 4,
            "node_nm": [7] * 4,
            "sparsity": ["2:4"] * 4,
            "pipeline": [1] * 4,
            "dataflow": ["ws"] * 4,
            "dram": ["hbm2"] * 4,
            "precision": ["int8", "int4", "fp8-e4m3", "bf16"],
        }.items()
    }
    d = design_columns(cfg, cols)
    assert d["act_bits"].tolist() == [8, 4, 8, 16] and d["weight_bits"].tolist() == [8, 4, 8, 16]


def test_simulate_precision_moves_bytes_not_metadata():
    out = {}
    for p in ("int8", "bf16"):
        r = _cli("simulate", "--workload", "resnet50", "--precision", p, "--json")
        assert r.returncode == 0, r.stderr
        d = json.loads(r.stdout)
        out[p] = d.get("totals", d)
    assert out["bf16"]["dram_weight_bytes"] == 2 * out["int8"]["dram_weight_bytes"]
    assert out["bf16"]["metadata_bytes"] == out["int8"]["metadata_bytes"]
    bad = _cli("simulate", "--workload", "resnet50", "--precision", "fp64")
    assert bad.returncode == 2 and "Traceback" not in bad.stderr


def test_quantizers_follow_their_recipes():
    from sim.quality.evidence.precision import quant_weights, quantized_forward

    rng = np.random.default_rng(0)
    w = rng.normal(size=(6, 32))
    q4 = quant_weights(w, "int4")
    for c in range(6):  # per output channel: at most 15 levels, the channel max kept exactly
        assert len(np.unique(q4[c])) <= 15 and np.isclose(np.abs(q4[c]).max(), np.abs(w[c]).max())
    e4 = quant_weights(w, "fp8-e4m3")
    assert np.isclose(np.abs(e4).max(), np.abs(w).max())  # per-tensor scale: max -> 448
    b = quant_weights(w, "bf16")
    assert np.allclose(b, w, rtol=2**-8) and not np.array_equal(b, w)
    from sim.quality.references.mlp import init_mlp

    model = init_mlp([64, 32, 10], rng)
    x = rng.random((50, 64))
    ref = model.forward(x)
    err8 = np.abs(quantized_forward(model, "int8", x)(x) - ref).mean()
    err4 = np.abs(quantized_forward(model, "int4", x)(x) - ref).mean()
    assert 0 < err8 < err4


def test_precision_policy_section_names_the_recommendation():
    from explore.report.precision import section_precision
    from sim.quality.evidence.precision import precision_quality

    def rec(number, prec, energy, latency, feasible=True):
        return {
            "number": number,
            "feasible": feasible,
            "params": {"precision": prec, "sparsity": "2:4"},
            "metrics": {"energy_per_inference_mj": energy, "latency_ms": latency, "area_mm2": 1.0},
        }

    data = SimpleNamespace(
        records=[
            rec(0, "int8", 2.0, 1.0),
            rec(1, "int8", 1.5, 1.2),
            rec(2, "bf16", 4.0, 1.5),
            rec(3, "int4", 0.5, 0.9),
        ],
        cfg=SimpleNamespace(limits=SimpleNamespace(max_quality_delta=0.015)),
    )
    seen = {}

    def quality(precs, sparsities, seeds, max_delta=None):  # the real gates, one seed (speed)
        seen["args"] = (precs, sparsities)
        return precision_quality(precs, sparsities, (0,), max_delta=max_delta)

    sec, key = section_precision(data, quality=quality)
    assert seen["args"] == (["bf16", "int4", "int8"], ["2:4"])
    rows = {r["precision"]: r for r in key["rows"]}
    assert rows["int8"]["trial"] == 1 and len(sec.tables[0].rows) == 3
    passing = [r for r in key["rows"] if r["gate_pass"]]
    best = min(passing, key=lambda r: r["energy_per_inference_mj"])
    assert key["recommended"]["precision"] == best["precision"]
    assert f"Recommended precision: {best['precision']}" in sec.verdict


def _policy_cfg(tmp_path, workloads: str):
    """examples/precision.toml with ``workloads`` as its [[workload]] entries, through the config parser."""
    text = (REPO / "examples" / "precision.toml").read_text()
    text = text.replace('[[workload]]\nname = "resnet50"\nweight = 1.0\n', workloads + "\n")
    p = tmp_path / "policy.toml"
    p.write_text(text)
    return load_config(p)


def test_precision_policy_reads_the_config_workloads(tmp_path):
    (tmp_path / "mistral.json").write_text(json.dumps(MISTRAL_7B))
    assert mix_families(_policy_cfg(tmp_path, '[[workload]]\nname = "resnet50"')) == ["mlp"]
    assert mix_families(_policy_cfg(tmp_path, '[[workload]]\nname = "bert-base"')) == ["transformer"]
    assert mix_families(
        _policy_cfg(tmp_path, '[[workload]]\nhf_config = "mistral.json"\nparams = { seq = 64 }')
    ) == ["transformer"]
    both = '[[workload]]\nname = "resnet50"\n[[workload]]\nname = "gpt2-small"\nparams = { seq = 64 }'
    assert mix_families(_policy_cfg(tmp_path, both)) == ["mlp", "transformer"]


def test_bert_precision_gate_uses_the_transformer_reference(tmp_path):
    cfg = _policy_cfg(tmp_path, '[[workload]]\nname = "bert-base"\nparams = { seq = 128 }')
    assert cfg.workload[0].name == "bert-base"
    rec = {
        "number": 0,
        "feasible": True,
        "params": {"precision": "int8", "sparsity": "2:4"},
        "metrics": {"energy_per_inference_mj": 1.0, "latency_ms": 1.0, "area_mm2": 1.0},
    }
    rows = policy_rows(SimpleNamespace(records=[rec], cfg=cfg))  # the default gate: the config's workloads
    assert [(r["precision"], r["sparsity"], r["reference"]) for r in rows] == [("int8", "2:4", "transformer")]
