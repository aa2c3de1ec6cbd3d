"""Quality gates per precision on the char-level transformer (sim.quality.transformer_precision)."""

from __future__ import annotations

import numpy as np
import pytest

from hw.errors import InputError
from sim.quality.evidence.transformer_precision import (
    quantized_nll,
    trained_models,
    transformer_precision_quality,
)
from sim.quality.references.transformer import TINY, corpus, eval_lm, eval_windows


def test_numpy_forward_matches_the_training_forward(tmp_path, monkeypatch):
    # the FP32 path of the quantised forward is the training network (autograd) itself
    monkeypatch.setenv("SPARSEPE_CACHE_DIR", str(tmp_path))
    models = trained_models(0, 2, 4, TINY)
    again = trained_models(0, 2, 4, TINY)  # from the on-disk cache, identical
    assert all(np.array_equal(models["finetuned"][k], again["finetuned"][k]) for k in models["finetuned"])
    w = eval_windows(corpus()[1], TINY)
    ref = eval_lm(models["finetuned"], w, TINY.heads)
    got = quantized_nll(models["finetuned"], "fp32", w, (w[0][:8], w[1][:8]), TINY.heads)
    assert np.allclose(got, ref, rtol=1e-5, atol=1e-5)


def test_bf16_close_to_fp32_and_int4_worse_than_int8(tmp_path, monkeypatch):
    monkeypatch.setenv("SPARSEPE_CACHE_DIR", str(tmp_path))
    rows = {
        (r.precision, r.sparsity): r
        for r in transformer_precision_quality(
            ["fp32", "bf16", "fp16", "int8", "int4"], ("2:4",), (0,), cfg=TINY
        )
    }
    fp32, bf16, fp16 = rows[("fp32", "2:4")], rows[("bf16", "2:4")], rows[("fp16", "2:4")]
    # BF16 2:4 within 0.1 % NLL of FP32 2:4 (both measured against the same dense FP32 model); FP16,
    # three more significand bits, closer still
    assert abs(bf16.accuracy / fp32.accuracy - 1) < 1e-3
    assert abs(bf16.delta.point - fp32.delta.point) < 1e-3
    assert abs(fp16.accuracy / fp32.accuracy - 1) < abs(bf16.accuracy / fp32.accuracy - 1)
    # INT4 loses clearly more than INT8 (measured on the same 2:4 model)
    assert rows[("int4", "2:4")].delta.point > rows[("int8", "2:4")].delta.point + 1e-3
    assert rows[("int4", "2:4")].accuracy > rows[("int8", "2:4")].accuracy
    with pytest.raises(InputError):
        transformer_precision_quality(["fp64"], ("2:4",), (0,), cfg=TINY)


def test_team_model_per_precision(tmp_path):
    from sim.quality.team.user_precision import model_precision_quality, quantize_tensors
    from tests.sim.test_quality_eval import two_strong, write_model

    w = two_strong()
    path = write_model(tmp_path, w)
    rows = {
        (r["precision"], r["sparsity"]): r
        for r in model_precision_quality(path, "team_eval:score", ["fp32", "bf16", "int4"], base_dir=tmp_path)
    }
    assert rows[("fp32", "dense")]["quality_delta"] == 0.0
    # independent check of the INT4 weights: per-row scale max|w| / 7, round, clip
    q = quantize_tensors({"fc.weight": w.astype(np.float32)}, ["fc.weight"], "int4")["fc.weight"]
    s = np.abs(w).max(axis=1, keepdims=True) / 7
    assert np.allclose(q, np.clip(np.rint(w / s), -7, 7) * s, atol=1e-6)
    assert abs(rows[("bf16", "2:4")]["quality_delta"] - rows[("fp32", "2:4")]["quality_delta"]) <= 0.01
    assert rows[("int4", "2:4")]["quantised"] == "weights only"
