"""The float golden models (hw.fp_golden, integer bit manipulation) against an independent reference
on numpy float32/float64 arithmetic (tests/hw/fp_reference.py), >= 10**5 random groups per format."""

from __future__ import annotations

import numpy as np
import pytest

from hw.errors import InputError
from hw.fp_golden import f32_add, fp_mul, fp_pe_reference, run_streams
from hw.golden import decode_table
from hw.params import PEParams
from hw.precision import FORMATS
from tests.hw import fp_reference as ref
from tests.hw.fp_vectors import big_band, operands, specials

pytestmark = pytest.mark.skipif(
    ref.ml_dtypes is None, reason="ml_dtypes (reference FP8/bf16 decoders) missing"
)

FLOATS = ("fp8-e4m3", "fp8-e5m2", "fp16", "bf16")
STREAMS, GROUPS = 2000, 50  # 10**5 groups per format


@pytest.mark.parametrize("precision", FLOATS)
def test_golden_matches_numpy_reference_on_1e5_groups(precision):
    rng = np.random.default_rng(13 + FLOATS.index(precision))
    p = PEParams(precision=precision)
    table, legal_t = decode_table(p.n, p.m)
    shape_a, shape_w = (STREAMS, GROUPS, p.m), (STREAMS, GROUPS, p.n)
    acts = operands(rng, precision, shape_a)
    weights = operands(rng, precision, shape_w)
    # a quarter of the streams near the range limits (overflow / flush to zero)
    edge = rng.random(STREAMS) < 0.25
    acts[edge] = big_band(rng, precision, acts[edge].shape)
    weights[edge] = big_band(rng, precision, weights[edge].shape)
    metas = rng.integers(0, 1 << p.meta_bits, size=(STREAMS, GROUPS))
    metas = np.where(
        rng.random(metas.shape) < 0.9,
        rng.choice([c for c in range(16) if legal_t[c]], size=metas.shape),
        metas,
    )
    clears = rng.random((STREAMS, GROUPS)) < 0.15
    idx, legal = table[metas], legal_t[metas]
    sel = np.take_along_axis(acts, idx, axis=2)
    prods = fp_mul(sel, weights, p.fmt)
    gold = run_streams(prods, clears, np.repeat(legal[..., None], p.n, axis=2))
    want = ref.sparse_streams(acts, weights, idx, legal, clears, precision)
    bad = np.argwhere(gold != want)
    assert bad.size == 0, (
        f"{len(bad)} mismatches, first at {bad[0]}: {gold[tuple(bad[0])]:#x} vs {want[tuple(bad[0])]:#x}"
    )
    # the vectors exercise what they claim: NaN, inf, flushed and cancelled sums all occur
    assert (gold == ref.CANON).any()
    if FORMATS[precision].ieee_specials:  # E4M3 has no infinity and its products cannot overflow binary32
        assert ((gold & 0x7FFFFFFF) == 0x7F800000).any()
    assert (gold == 0).sum() > 100  # cleared, cancelled and flushed sums
    if precision == "bf16":  # products below 2**-126 flushed (FTZ) do occur
        nonzero_in = (sel & 0x7F80 != 0) & (weights & 0x7F80 != 0)
        assert ((prods & 0x7FFFFFFF) == 0)[nonzero_in].any()


@pytest.mark.parametrize("precision", FLOATS)
def test_products_exhaustive_pairs(precision):
    f = FORMATS[precision]
    if f.bits == 8:
        a, w = np.meshgrid(np.arange(256), np.arange(256))
    else:
        rng = np.random.default_rng(5)
        a, w = rng.integers(0, 1 << 16, size=(2, 200000))
        a = np.concatenate([a, np.repeat(specials(precision), 20)])
        w = np.concatenate([w, np.tile(specials(precision), 20)])
    a, w = a.reshape(-1), w.reshape(-1)
    got = fp_mul(a, w, f)
    want = ref.to_bits(ref.mul(a, w, precision))
    assert np.array_equal(got, want), np.flatnonzero(got != want)[:5]


def test_f32_add_random_and_cancellation():
    rng = np.random.default_rng(7)
    n = 300000
    e = rng.integers(1, 255, size=(2, n))
    e[1, : n // 2] = np.clip(e[0, : n // 2] + rng.integers(-2, 3, size=n // 2), 1, 254)  # close exponents
    f = rng.integers(0, 1 << 23, size=(2, n))
    f[1, : n // 4] = f[0, : n // 4] ^ rng.integers(0, 8, size=n // 4)  # cancellation
    s = rng.integers(0, 2, size=(2, n))
    a, b = (s << 31) | (e << 23) | f
    a = np.concatenate([a, [0, 0x80000000, 0x7F800000, 0xFF800000, 0x7FC00001, 0x00800000, 0x80800000]])
    b = np.concatenate(
        [b, [0x80000000, 0x80000000, 0xFF800000, 0x7F800000, 0x3F800000, 0x80800001, 0x00800000]]
    )
    got = f32_add(a, b)
    want = ref.to_bits(ref.add(a.astype(np.uint32).view(np.float32), b.astype(np.uint32).view(np.float32)))
    assert np.array_equal(got, want), np.flatnonzero(got != want)[:5]


def test_stream_model_rules():
    """Hand cases: clear starts from +0; an illegal code adds nothing (-0 stays -0); order matters."""
    p = PEParams(precision="bf16")
    one, big, neg_zero = 0x3F80, 0x4B80, 0x8000  # 1.0, 2**24, -0.0
    # (2**24 + 1) + 1 in binary32: each add ties to even, so 2**24 stays 2**24
    acc, err = fp_pe_reference([[big, one, one, 0]], [[one, one]], [0b0100], [True], p)
    assert acc.tolist() == [0x4B800000] and not err[0]
    acc, _ = fp_pe_reference(
        [[neg_zero, one, 0, 0]] * 2, [[one, one], [one, one]], [0b0100, 0b0000], [True, False], p
    )
    assert acc.tolist() == [0x3F800000, 0x3F800000]  # -0 + 1 = 1; the illegal group adds nothing
    with pytest.raises(InputError):
        fp_pe_reference([[0x1FFFF, 0, 0, 0]], [[0, 0]], [4], [True], p)


def test_encode_fp16_is_numpys_float16_cast():
    """hw.fp_golden.encode (the nearest code among the format's decoded values, ties to the even
    code) against numpy's IEEE binary16 cast (RNE), subnormals and saturation included; a value
    that rounds to zero is +0 (one code per value)."""
    from hw.fp_golden import encode

    rng = np.random.default_rng(16)
    x = rng.normal(0, 1, 200000) * np.exp2(rng.integers(-26, 17, 200000))
    x = np.concatenate([x, [0.0, 65504.0, 65519.0, 65520.0, 1e6, -1e6, 2.0**-24, 1.5 * 2.0**-24, 2.0**-25]])
    want = np.clip(x, -65504, 65504).astype(np.float16).view(np.uint16).astype(np.int64)
    want = np.where(want == 0x8000, 0, want)
    assert np.array_equal(encode(x, FORMATS["fp16"]), want)
    assert (want == 0x7BFF).sum() >= 3 and (
        (want & 0x7C00) == 0
    ).sum() > 100  # saturated, subnormal codes occur
