"""[[workload]] from an ONNX file or a Hugging Face config.json, and the vector_lanes axis."""

from __future__ import annotations

import json

import numpy as np
import pytest

import explore.evaluator as ev
from explore.config import load_config
from hw.errors import InputError

pytest.importorskip("onnx")

GPT2 = {
    "model_type": "gpt2",
    "n_embd": 768,
    "n_head": 12,
    "n_layer": 12,
    "n_positions": 1024,
    "vocab_size": 50257,
}


def _cfg(tmp_path, workload: str, space_extra: str = "") -> str:
    p = tmp_path / "c.toml"
    p.write_text(f"""
[space]
rows = [16]
cols = [16]
sram_kb = [256]
clock_mhz = [500]
node_nm = [16]
sparsity = ["2:4"]
pipeline = [1]
dataflow = ["ws"]
dram_gbps = [100.0]
{space_extra}
[fixed]
dram_type = "lpddr5"
{workload}
[limits]
""")
    return p


def test_hf_and_onnx_workloads_load_relative_to_the_config(tmp_path):
    from tests.sim.test_onnx_import import build_model

    (tmp_path / "gpt2").mkdir()
    (tmp_path / "gpt2" / "config.json").write_text(json.dumps(GPT2))
    build_model(tmp_path / "tiny.onnx", symbolic_seq=True)
    p = _cfg(
        tmp_path,
        """
[[workload]]
hf_config = "gpt2/config.json"
params = { seq = 64, batch = 1 }
[[workload]]
onnx = "tiny.onnx"
input_shapes = { x = "1x3x32x32" }
weight = 2.0
""",
        "vector_lanes = [8, 32]",
    )
    cfg = load_config(p)
    assert [w.name for w in cfg.workload] == ["gpt2", "tiny"]
    assert cfg.space.active_axes()[-1] == "vector_lanes"
    ctx = ev.make_context(cfg)
    assert ctx.workloads[0].workload.weight_params == pytest.approx(124e6, rel=0.01)
    cols = {
        k: np.array([v, v])
        for k, v in dict(
            rows=16, cols=16, sram_kb=256, clock_mhz=500.0, node_nm=16, pipeline=1, dram_gbps=100.0
        ).items()
    }
    cols.update(
        sparsity=np.array(["2:4", "2:4"], dtype=object),
        dataflow=np.array(["ws", "ws"], dtype=object),
        vector_lanes=np.array([8, 32]),
    )
    out = ev.evaluate_batch(cols, ctx)
    # more lanes: faster (less vector time) and a larger vector unit
    assert (
        out["latency_ms"][1] < out["latency_ms"][0] and out["area_vector_mm2"][1] > out["area_vector_mm2"][0]
    )


@pytest.mark.parametrize(
    "workload,needle",
    [
        ('[[workload]]\nhf_config = "nope.json"', "config file not found"),
        ('[[workload]]\nonnx = "a.onnx"\nhf_config = "b.json"', "one of onnx or hf_config"),
        ('[[workload]]\nname = "bert-base"\ninput_shapes = { x = "1x2" }', "input_shapes applies to an onnx"),
        ("[[workload]]\nweight = 1.0", "give name"),
    ],
)
def test_bad_workload_sources_are_one_line(tmp_path, workload, needle):
    with pytest.raises(InputError) as exc:
        load_config(_cfg(tmp_path, workload))
    assert needle in str(exc.value) and "\n" not in str(exc.value)
