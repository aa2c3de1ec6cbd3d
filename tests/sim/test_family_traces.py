"""Real-data PE streams per workload family (sim.quality.family_traces) and the CNN reference.

The family comes from the workload's structure; the CNN's im2col GEMM is checked against a direct
convolution; the float streams against hw.fp_golden (decoded values, the float PE's golden sums)
and against an independent RNE rounding (ml_dtypes); the integer streams against the golden PE.
"""

from __future__ import annotations

import numpy as np
import pytest

from hw.errors import InputError
from hw.fp_golden import bits_to_f32, decode, fp_pe_reference
from hw.golden import decode_meta, pe_reference
from hw.params import PEParams
from hw.precision import fp_format
from sim.quality.references import cnn
from sim.quality.traces.family_traces import activity_family, family_models, family_streams
from sim.workloads import Workload, get_workload, make_layer


def test_family_of_each_workload_kind():
    assert activity_family(get_workload("bert-base", seq=64))[0] == "transformer"
    assert activity_family(get_workload("llama2-7b-decode"))[0] == "transformer"
    assert activity_family(get_workload("resnet50"))[0] == "cnn"
    mlp = Workload(
        "mlp",
        (
            make_layer("fc0", "gemm", 64, 256, 256, weight_shape=(256, 256), sparsifiable=True),
            make_layer("fc1", "gemm", 64, 10, 256, weight_shape=(10, 256), sparsifiable=False),
        ),
    )
    assert activity_family(mlp)[0] == "mlp"


def test_im2col_gemm_is_the_convolution():
    rng = np.random.default_rng(1)
    x = rng.normal(size=(2, 8, 8, 3))
    w = rng.normal(size=(5, 3, 3, 3))  # (Cout, Cin, R, S)
    y = (cnn.im2col(x) @ cnn.gemm_weight(w).T).reshape(2, 8, 8, 5)
    xp = np.pad(x, ((0, 0), (1, 1), (1, 1), (0, 0)))
    ref = np.zeros((2, 8, 8, 5))
    for r in range(3):
        for s in range(3):
            ref += np.einsum("bhwc,oc->bhwo", xp[:, r : r + 8, s : s + 8, :], w[:, :, r, s])
    np.testing.assert_allclose(y, ref, rtol=1e-12, atol=1e-12)
    # an N:M group of the GEMM's reduction is M input channels of one tap (the conv's ASP axis)
    assert np.array_equal(cnn.gemm_weight(w)[:, :3], w[:, :, 0, 0])


@pytest.fixture(scope="module")
def mlp_models():
    return family_models("mlp", 2, 4)


def test_int8_sparse_stream_runs_on_the_golden_pe(mlp_models):
    acts, w, meta, clear, layers = family_streams("mlp", 2, 4, "sparse", models=mlp_models, order="os")
    assert layers == ["fc0", "fc1"]  # the head (10 rows) stays dense
    assert acts.min() >= 0 and np.count_nonzero(acts) > 0.2 * acts.size  # post-ReLU, real data
    assert all(decode_meta(int(c))[1] for c in np.unique(meta))
    t = 640
    acc, err = pe_reference(acts[:t], w[:t], meta[:t], clear[:t], PEParams())
    idx = np.array([decode_meta(int(c))[0] for c in meta[:t]])
    prod = (np.take_along_axis(acts[:t], idx, axis=1) * w[:t]).sum(axis=1)
    start = np.maximum.accumulate(np.where(clear[:t] == 1, np.arange(t), 0))
    csum = np.cumsum(prod)
    np.testing.assert_array_equal(acc, csum - np.where(start > 0, csum[start - 1], 0))
    assert not err.any()
    # OS order: one clear per dot product (K/M = 16 groups); WS order: weights held over the samples
    assert clear[:t].sum() == t // 16
    a2, w2, m2, c2, _ = family_streams("mlp", 2, 4, "sparse", models=mlp_models, order="ws", acc_len=16)
    changes = np.count_nonzero(np.any(np.diff(w2[:4096], axis=0) != 0, axis=1))
    assert changes < 4096 / 32 and c2[:4096].sum() == 4096 // 16


def test_parts_split_the_layers(mlp_models):
    fb = family_streams("mlp", 2, 4, "fallback", models=mlp_models)
    dense = family_streams("mlp", 2, 4, "dense", models=mlp_models)
    assert fb[4] == ["fc2"] and fb[2] is None and fb[1].shape[1] == 4
    assert dense[4] == ["fc0", "fc1", "fc2"]
    assert (np.count_nonzero(dense[1], axis=1) > 2).any()  # the dense model: no 2:4 structure


@pytest.mark.parametrize("precision", ["bf16", "fp8-e4m3"])
def test_float_stream_is_the_float_model_encoded(mlp_models, precision):
    p = PEParams(precision=precision)
    fmt = fp_format(precision)
    acts, w, meta, clear, _ = family_streams(
        "mlp", 2, 4, "sparse", precision=precision, models=mlp_models, order="os"
    )
    assert acts.max() < (1 << fmt.bits) and w.max() < (1 << fmt.bits)

    def value(bits):
        s, sig, e, nan, inf = decode(bits, fmt)
        assert not nan.any() and not inf.any()
        return np.where(s == 1, -1.0, 1.0) * sig * np.exp2(e.astype(np.float64))

    # the first row's first dot product: fc0 row 0 on the first test image, unquantised
    w_float, x_float = mlp_models["finetuned"][0][1], mlp_models["finetuned"][0][2]
    k = w_float.shape[1] // 4
    kept = w_float[0].reshape(k, 4)
    wv = value(w[:k])
    idx = np.array([decode_meta(int(c))[0] for c in meta[:k]])
    np.testing.assert_allclose(
        wv, np.take_along_axis(kept, idx, axis=1), rtol=2.0**-fmt.man_bits, atol=2.0**-9
    )
    np.testing.assert_allclose(value(acts[:k]).reshape(-1), x_float[0], rtol=2.0**-fmt.man_bits, atol=2.0**-9)
    if precision == "bf16":  # RNE, as an independent implementation rounds
        ml = pytest.importorskip("ml_dtypes")
        ref = np.asarray(x_float[0], dtype=np.float32).astype(ml.bfloat16).view(np.uint16).astype(np.int64)
        np.testing.assert_array_equal(acts[:k].reshape(-1), ref)
    # the float PE's golden running sum over the dot product equals the float64 sum of the decoded operands
    acc, err = fp_pe_reference(acts[:k], w[:k], meta[:k], clear[:k], p)
    prod = (np.take_along_axis(value(acts[:k]), idx, axis=1) * wv).sum(axis=1)
    np.testing.assert_allclose(bits_to_f32(acc)[-1], prod.sum(), rtol=1e-5, atol=1e-6)
    assert not err.any()


def test_unknown_part_or_order_is_an_input_error(mlp_models):
    with pytest.raises(InputError, match="part"):
        family_streams("mlp", 2, 4, "middle", models=mlp_models)
    with pytest.raises(InputError, match="order"):
        family_streams("mlp", 2, 4, "sparse", models=mlp_models, order="rs")
    with pytest.raises(InputError, match="family"):
        family_models("rnn", 2, 4)


def test_transformer_attention_products_run_dense():
    """The transformer's layers run dense: the head (97 rows, ASP skips it) and the attention
    products (activation x activation, never pruned); the projections are the pruned layers."""
    models = family_models("transformer", 2, 4)  # the tiny size under the test suite (seconds)
    sparse = family_streams("transformer", 2, 4, "sparse", models=models)[4]
    fallback = family_streams("transformer", 2, 4, "fallback", models=models)[4]
    assert all(name.endswith(("qkv", "out", "fc1", "fc2")) for name in sparse)
    assert "head" in fallback and "blocks.0.attn.scores" in fallback and "blocks.0.attn.context" in fallback
    assert not set(sparse) & set(fallback)
    ctx = [x for name, _, x, *kind in models["finetuned"] if name == "blocks.0.attn.context"][0]
    np.testing.assert_allclose(ctx.sum(axis=1), 1.0, rtol=1e-9)  # softmax rows
    assert not np.triu(ctx, 1).any()  # causal: no future position
