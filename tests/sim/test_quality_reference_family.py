"""Which reference model stands for a workload: read from its structure (attention layers), not its name."""

from __future__ import annotations

import pytest

from sim.importers.hf import load_hf_config
from sim.importers.onnx import load_onnx
from sim.quality.evidence.evidence import reference_family
from sim.workloads import get_workload
from tests.sim.test_hf_import import GPT2_SMALL, MISTRAL_7B, OPT_125M, QWEN2_05B
from tests.sim.test_onnx_import import build_model


@pytest.mark.parametrize(
    "cfg", [MISTRAL_7B, QWEN2_05B, OPT_125M, GPT2_SMALL], ids=["mistral", "qwen2", "opt", "gpt2"]
)
def test_hf_transformers_of_any_name_get_the_transformer_reference(cfg):
    w = load_hf_config(cfg, seq=64)
    family, why = reference_family(w)
    assert family == "transformer" and "attention" in why


def test_builtin_workloads_by_structure():
    assert reference_family(get_workload("bert-base"))[0] == "transformer"
    assert reference_family(get_workload("resnet50"))[0] == "mlp"


def test_onnx_graph_with_attention_gets_the_transformer_reference(tmp_path):
    w = load_onnx(build_model(tmp_path / "tiny.onnx"), batch=1)
    family, why = reference_family(w)
    assert family == "transformer" and "scores" in why
