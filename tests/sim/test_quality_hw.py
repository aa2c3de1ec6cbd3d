"""Pruned int8 layers -> hw.golden (values, meta) + activation traces."""

from __future__ import annotations

import numpy as np
import pytest

import hw.golden as golden
from hw.errors import InputError
from hw.params import PEParams
from sim.quality.prune.pruning import is_nm, prune_nm
from sim.quality.references.reference import analytic_latency_fn, reference_experiment
from sim.quality.traces.traces import layer_trace, quantize_symmetric, reference_traces


def test_quantize_symmetric_bounds_and_error():
    x = np.random.default_rng(0).normal(size=(16, 64))
    q, s = quantize_symmetric(x, 8, axis=0)
    assert q.dtype == np.int8 and s.shape == (16,)
    assert np.abs(q).max() == 127
    assert np.all(np.abs(q * s[:, None] - x) <= s[:, None] / 2 + 1e-12)
    q1, s1 = quantize_symmetric(np.zeros((2, 4)), 8)
    assert np.all(q1 == 0)


def test_layer_trace_round_trips_through_golden():
    rng = np.random.default_rng(1)
    w, x = rng.normal(size=(32, 64)), np.maximum(rng.normal(size=(100, 64)), 0)
    tr = layer_trace("fc", w, x)
    assert tr.pruned and is_nm(tr.weights)
    np.testing.assert_array_equal(golden.decompress_nm(tr.values, tr.meta, 2, 4), tr.weights)
    assert tr.values.shape == (32, 32) and tr.meta.shape == (32, 16) and tr.activations.shape == (64, 100)
    # golden GEMM equals an independent int64 matmul of the dense pruned matrix
    np.testing.assert_array_equal(tr.gemm(32), tr.weights.astype(np.int64) @ tr.activations.astype(np.int64))
    # dequantised output approximates the float output of the pruned layer
    y = (tr.gemm(32) * tr.weight_scale[:, None] * tr.act_scale).T
    ref = x @ prune_nm(w).T
    assert np.linalg.norm(y - ref) / np.linalg.norm(ref) < 0.02


def test_dense_head_trace_has_no_metadata():
    rng = np.random.default_rng(2)
    tr = layer_trace("head", rng.normal(size=(10, 64)), rng.normal(size=(8, 64)))
    assert not tr.pruned and tr.values is None and tr.meta is None
    np.testing.assert_array_equal(tr.gemm(32), tr.weights.astype(np.int64) @ tr.activations.astype(np.int64))


def test_layer_trace_rejects_mismatch():
    with pytest.raises(InputError):
        layer_trace("fc", np.ones((8, 16)), np.ones((4, 12)))


def test_reference_traces_use_real_activations():
    res = reference_experiment(seed=0, latency_fn=analytic_latency_fn())
    traces = reference_traces(result=res, samples=64)
    assert [t.pruned for t in traces] == [True, True, False]
    assert traces[0].activations.shape == (64, 64)
    assert traces[1].activations.min() >= 0  # post-ReLU
    # each layer's integer GEMM, dequantised, matches the float layer on its calibration inputs
    model = res.models["finetuned"]
    _, acts = model.forward(res.models["data"][2][:64], keep=True)
    for tr, w, a in zip(traces, model.weights, acts, strict=True):
        y = (tr.gemm(32) * tr.weight_scale[:, None] * tr.act_scale).T
        ref = a @ w.T
        assert np.linalg.norm(y - ref) / np.linalg.norm(ref) < 0.03


def test_pe_stream_sums_to_the_layer_gemm():
    rng = np.random.default_rng(5)
    tr = layer_trace("fc", rng.normal(size=(16, 32)), np.maximum(rng.normal(size=(6, 32)), 0))
    acts, w, meta, clear = tr.pe_stream()
    assert acts.shape == (16 * 8 * 6, 4) and w.shape == (16 * 8 * 6, 2) and meta.shape == (16 * 8 * 6,)
    acc, err = golden.pe_reference(acts, w, meta, clear, PEParams())
    assert not err.any()
    # one clear per dot product (K/M = 8 groups), none in between: the accumulator after the
    # last group of (row r, sample p) is (W @ x)[r, p]
    assert clear.reshape(16, 6, 8)[..., 0].all() and not clear.reshape(16, 6, 8)[..., 1:].any()
    out = acc.reshape(16, 6, 8)[..., -1]
    np.testing.assert_array_equal(out, tr.weights.astype(np.int64) @ tr.activations.astype(np.int64))
    assert tr.pe_stream(max_cycles=100)[0].shape == (100, 4)
    dense = layer_trace("head", rng.normal(size=(10, 32)), rng.normal(size=(6, 32)))
    a2, w2, m2, _ = dense.pe_stream()
    assert m2 is None and w2.shape == (10 * 8 * 6, 4)
