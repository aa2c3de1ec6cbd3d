"""Reference experiment, equal-latency search and guardrail."""

from __future__ import annotations

import math

import numpy as np
import pytest

from hw.errors import InputError
from sim.perf import ArrayConfig
from sim.quality.prune.pruning import is_nm
from sim.quality.references.reference import (
    analytic_latency_fn,
    check_guardrail,
    equal_latency_width,
    mlp_gemms,
    parse_nm,
    perf_latency_fn,
    quality_loss,
    reference_experiment,
)


@pytest.fixture(scope="module")
def ref():
    return reference_experiment(seed=0, latency_fn=analytic_latency_fn(16, 16, 2, 4))


def test_reference_acceptance(ref):
    assert ref.dense_accuracy >= 0.95
    assert ref.oneshot_accuracy <= ref.dense_accuracy - 0.01  # measurable drop (>= 1 point)
    assert ref.finetuned_accuracy >= ref.dense_accuracy - 0.015  # recovers within 1.5 points
    assert ref.gradual_accuracy >= ref.dense_accuracy - 0.015
    assert ref.seconds < 60
    # ASP verdict: 64->64 and 64->64 pruned, the 64->10 head fails size(0) % 8 and stays dense
    assert ref.layers_pruned == [True, True, False]


def test_reference_models_are_nm(ref):
    for key in ("oneshot", "finetuned", "gradual"):
        model = ref.models[key]
        assert is_nm(model.weights[0]) and is_nm(model.weights[1])
        assert not is_nm(model.weights[2])  # the head stays dense
    # fine-tuning kept the one-shot mask: zeros stay zeros
    for w1, w2 in zip(ref.models["oneshot"].weights[:2], ref.models["finetuned"].weights[:2], strict=True):
        assert np.all(w2[w1 == 0] == 0)


def test_reference_is_deterministic(ref):
    again = reference_experiment(seed=0, latency_fn=analytic_latency_fn(16, 16, 2, 4))
    assert again.to_json() | {"seconds": 0} == ref.to_json() | {"seconds": 0}
    for a, b in zip(again.models["finetuned"].weights, ref.models["finetuned"].weights, strict=True):
        np.testing.assert_array_equal(a, b)


def test_equal_latency_sizes(ref):
    # Closed form under the analytic model: sparse 64-64-64-10 costs (64*64 + 64*64)/4 + 640/2 = 2368
    # MAC-cycles per sample per PE; dense h costs (64h + h^2 + 10h)/2 -> largest multiple of 16 is 32.
    assert ref.dense_equal_latency_hidden == 32
    assert ref.sparse_params == 64 * 64 + 64 + 64 * 64 + 64 + 64 * 10 + 10
    assert ref.dense_equal_latency_params == 64 * 32 + 32 + 32 * 32 + 32 + 32 * 10 + 10
    assert ref.delta_at_equal_latency == pytest.approx(
        ref.finetuned_accuracy - ref.dense_equal_latency_accuracy
    )


def _closed_form_dense_width(hs, rate_sparse, rate_dense, step=16):
    ls = (64 * hs + hs * hs) / rate_sparse + 10 * hs / rate_dense
    h = (-74 + math.sqrt(74**2 + 4 * ls * rate_dense)) / 2
    return int(h // step) * step


@pytest.mark.parametrize("hs,n,m", [(64, 2, 4), (128, 2, 4), (256, 2, 4), (128, 1, 4), (128, 2, 8)])
def test_equal_latency_search_matches_closed_form(hs, n, m):
    eq = equal_latency_width(analytic_latency_fn(8, 8, n, m), hs, n, m)
    assert eq.dense_hidden == _closed_form_dense_width(hs, m, n)
    assert eq.dense_latency <= eq.sparse_latency
    assert eq.candidates[eq.dense_hidden + 16] > eq.sparse_latency


def test_equal_latency_with_custom_latency_fn():
    # a latency model where sparsity gives no speedup: the equal-latency dense width is the same width
    eq = equal_latency_width(lambda gemms: float(sum(g.macs for g in gemms)), 96)
    assert eq.dense_hidden == 96


def test_mlp_gemms_follow_asp_verdict():
    g = mlp_gemms([64, 128, 128, 10], 2, 4, sparse=True, batch=8)
    assert [x.nm for x in g] == [(2, 4), (2, 4), None]
    assert [(x.m, x.n, x.k) for x in g] == [(8, 128, 64), (8, 128, 128), (8, 10, 128)]


def test_guardrail():
    ok, msg = check_guardrail(-0.004, 0.01)
    assert ok and "met" in msg
    ok, msg = check_guardrail(-0.02, 0.01)
    assert not ok and "2.00 points" in msg
    assert check_guardrail(0.01, 0.0)[0]
    assert quality_loss(-0.02) == pytest.approx(0.02)
    for bad in [(0.0, -0.1), (float("nan"), 0.01), ("x", 0.01)]:
        with pytest.raises(InputError):
            check_guardrail(*bad)


@pytest.mark.parametrize("text", ["3:4", "2-4", "a:b", "4:4", "2:4:8"])
def test_parse_nm_rejects(text):
    with pytest.raises(InputError):
        parse_nm(text)


def test_bad_hidden_width_rejected():
    with pytest.raises(InputError):
        reference_experiment(hidden=40)


def test_equal_latency_on_sim_perf_matches_hand_fold_count():
    # 16x16 WS, batch 256: SCALE-Sim folding, 2R + C + M - 2 = 302 cycles per fold, no stalls here
    # (DRAM at the default 64 GB/s keeps up; the SRAM port limit is lifted).
    # Sparse 64-64-64-10 (2:4, pe_k = 2): fc0 1x4 folds, fc1 1x4, dense head 2x1 -> 10 folds.
    # Dense h=32: fc0 2x2, fc1 1x2, head 1x1 -> 7 folds; h=48: 2x3 + 2x3 + 2x1 = 14 folds (too slow).
    eq = equal_latency_width(perf_latency_fn(ArrayConfig(rows=16, cols=16, sram_port_bytes=None)), 64)
    assert eq.sparse_latency == 10 * 302
    assert eq.dense_hidden == 32 and eq.dense_latency == 7 * 302
    assert eq.candidates[48] == 14 * 302
