"""N:M pruning: exactness, tie rule, idempotence, agreement with hw.golden's compressor."""

from __future__ import annotations

import numpy as np
import pytest
from hypothesis import given, settings, strategies as st
from hypothesis.extra import numpy as hnp

from hw.errors import InputError
from sim.asp_rules import weight_verdict
from sim.quality.prune.pruning import (
    cubic_sparsity,
    gradual_nm_mask,
    is_nm,
    nm_mask,
    prune_layer,
    prune_nm,
)

NM = [(1, 2), (1, 4), (2, 4), (2, 8), (4, 8), (1, 8)]


def _reference_prune(w: np.ndarray, n: int, m: int) -> np.ndarray:
    """Plain-Python reference: per group, sort indices by (-|w|, index) and keep the first N."""
    out = np.zeros_like(w)
    for r in range(w.shape[0]):
        for g0 in range(0, w.shape[1], m):
            idx = sorted(range(g0, g0 + m), key=lambda i: (-abs(float(w[r, i])), i))[:n]
            for i in idx:
                out[r, i] = w[r, i]
    return out


@st.composite
def _matrix_nm(draw, small_ints=True):
    n, m = draw(st.sampled_from(NM))
    rows = draw(st.integers(1, 4))
    groups = draw(st.integers(1, 4))
    # Small integer values (as floats) make ties and zeros frequent.
    elems = st.integers(-3, 3).map(float) if small_ints else st.floats(-1e3, 1e3, allow_nan=False)
    w = draw(hnp.arrays(np.float64, (rows, groups * m), elements=elems))
    return w, n, m


@settings(max_examples=200, deadline=None)
@given(_matrix_nm())
def test_prune_matches_reference_and_is_nm(case):
    w, n, m = case
    p = prune_nm(w, n, m)
    np.testing.assert_array_equal(p, _reference_prune(w, n, m))
    assert is_nm(p, n, m)
    groups = p.reshape(p.shape[0], -1, m)
    assert np.all(np.count_nonzero(groups, axis=-1) <= n)
    mask = nm_mask(w, n, m).reshape(w.shape[0], -1, m)
    assert np.all(mask.sum(axis=-1) == n)  # exactly N kept positions per group
    # kept magnitudes dominate pruned ones; on ties the kept index is the lower one
    mag = np.abs(w).reshape(w.shape[0], -1, m)
    for r, g in zip(*np.nonzero(np.ones(mask.shape[:2], dtype=bool)), strict=True):
        kept, dropped = np.flatnonzero(mask[r, g]), np.flatnonzero(~mask[r, g])
        for i in kept:
            for j in dropped:
                assert mag[r, g, i] > mag[r, g, j] or (mag[r, g, i] == mag[r, g, j] and i < j)


@settings(max_examples=100, deadline=None)
@given(_matrix_nm(small_ints=False))
def test_already_nm_is_unchanged(case):
    w, n, m = case
    p = prune_nm(w, n, m)
    np.testing.assert_array_equal(prune_nm(p, n, m), p)


def test_known_group_and_ties():
    w = np.array([[0.5, -3.0, 3.0, 1.0, 2.0, 2.0, 2.0, 2.0, 0.0, 0.0, 0.0, 7.0]])
    np.testing.assert_array_equal(
        prune_nm(w, 2, 4), [[0.0, -3.0, 3.0, 0.0, 2.0, 2.0, 0.0, 0.0, 0.0, 0.0, 0.0, 7.0]]
    )
    np.testing.assert_array_equal(nm_mask(w, 2, 4)[0, 8:], [True, False, False, True])


def test_int8_dtype_preserved():
    w = np.array([[1, -5, 3, 2]], dtype=np.int8)
    p = prune_nm(w)
    assert p.dtype == np.int8
    np.testing.assert_array_equal(p, [[0, -5, 3, 0]])


def test_conv_groups_run_along_input_channels():
    rng = np.random.default_rng(0)
    w = rng.normal(size=(16, 32, 3, 3))
    layer = prune_layer("conv", w)
    assert layer.pruned and layer.kind == "conv"
    # every (cout, r, s) fibre along Cin is 2:4
    fibres = np.moveaxis(layer.weights, 1, -1).reshape(-1, 8, 4)
    assert np.all(np.count_nonzero(fibres, axis=-1) == 2)


def test_prune_layer_follows_asp_verdict():
    rng = np.random.default_rng(1)
    head = rng.normal(size=(10, 128))
    layer = prune_layer("head", head)
    assert not layer.pruned and layer.verdict == weight_verdict("gemm", (10, 128))
    np.testing.assert_array_equal(layer.weights, head)
    body = prune_layer("fc", rng.normal(size=(128, 64)))
    assert body.pruned and is_nm(body.weights)


@pytest.mark.parametrize(
    "bad",
    [np.array([[1.0, np.nan, 0, 0]]), np.array([[1, 2, 3]], dtype=float), np.array([["a", "b", "c", "d"]])],
)
def test_bad_weights_raise_input_error(bad):
    with pytest.raises(InputError):
        prune_nm(bad)


def test_gaussian_retained_share_matches_order_statistics():
    """Retained |w| share of 2:4 on iid normal weights vs the order-statistics integral."""
    from math import comb

    from scipy import integrate, stats

    def e_order(j, n=4):  # E of the j-th smallest of n iid |N(0,1)|
        def f(x):
            cdf = 2 * stats.norm.cdf(x) - 1
            pdf = 2 * stats.norm.pdf(x)
            return x * j * comb(n, j) * cdf ** (j - 1) * (1 - cdf) ** (n - j) * pdf

        return integrate.quad(f, 0, np.inf)[0]

    expected = (e_order(3) + e_order(4)) / (4 * np.sqrt(2 / np.pi))
    w = np.random.default_rng(2).normal(size=(512, 512))
    share = np.abs(prune_nm(w)).sum() / np.abs(w).sum()
    assert share == pytest.approx(expected, abs=3e-3)
    assert 0.74 < expected < 0.75  # about 0.7445


def test_cubic_ramp_and_gradual_mask_converge_to_nm():
    assert cubic_sparsity(0, 10, 0.5) == 0.0
    assert cubic_sparsity(10, 10, 0.5) == 0.5
    assert cubic_sparsity(5, 10, 0.5) == pytest.approx(0.5 * (1 - 0.5**3))
    w = np.random.default_rng(3).normal(size=(32, 64))
    np.testing.assert_array_equal(gradual_nm_mask(w, 0.5), nm_mask(w))
    assert gradual_nm_mask(w, 0.0).all()
    half = gradual_nm_mask(w, 0.25)
    assert abs((~half).mean() - 0.25) < 1e-3
    assert np.all(half.reshape(32, -1, 4).sum(axis=-1) >= 2)
    assert np.all(half | ~nm_mask(w))  # never removes a weight the final mask keeps


@settings(max_examples=100, deadline=None)
@given(_matrix_nm())
def test_golden_compressor_reproduces_the_pruned_matrix(case):
    golden = pytest.importorskip("hw.golden")
    w, n, m = case
    p = prune_nm(w, n, m)
    values, meta = golden.compress_nm(p, n, m)
    np.testing.assert_array_equal(golden.decompress_nm(values, meta, n, m), p)
    # and the compressor picks the same positions as the pruning mask
    v2, meta2 = golden.compress_nm(w, n, m)
    np.testing.assert_array_equal(meta2, meta)
    np.testing.assert_array_equal(golden.decompress_nm(v2, meta2, n, m), p)
