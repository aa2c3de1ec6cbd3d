"""Golden models against independent scalar Python references and properties (hypothesis)."""

from __future__ import annotations

import itertools

import numpy as np
import pytest
from hypothesis import given, settings, strategies as st

from hw.errors import InputError
from hw.golden import (
    compress_nm,
    decode_meta,
    decompress_nm,
    dense_pe_reference,
    dense_to_sparse_stream,
    encode_meta,
    fallback_clears,
    gemm_nm,
    legal_codes,
    pack_meta,
    pe_reference,
    unpack_meta,
    wrap_signed,
)
from hw.params import PEParams

NM = [(1, 4), (2, 4), (2, 8), (4, 8), (1, 2)]


def test_2of4_legal_codes_are_the_six_nvidia_codes():
    # bits [1:0] = idx0, bits [3:2] = idx1, legal iff idx0 < idx1
    expect = sorted(i0 | (i1 << 2) for i0, i1 in itertools.combinations(range(4), 2))
    assert legal_codes(2, 4) == expect == [4, 8, 9, 12, 13, 14]
    for code in (0b0000, 0b0101, 0b1010, 0b1111):
        assert decode_meta(code)[1] is False
    assert decode_meta(0b1101) == ((1, 3), True)
    assert decode_meta(0b0111) == ((3, 1), False)


@pytest.mark.parametrize("n,m", NM)
def test_legal_count_is_binomial(n, m):
    from math import comb

    assert len(legal_codes(n, m)) == comb(m, n)
    for code in legal_codes(n, m):
        idx, ok = decode_meta(code, n, m)
        assert ok and encode_meta(idx, m) == code


def test_pack_unpack_ptx_word():
    codes = [4, 8, 9, 12, 13, 14, 4, 14]
    word = pack_meta(codes, 2, 4)
    assert word < 2**32 and word & 0xF == 4 and word >> 28 == 14
    assert unpack_meta(word, 8, 2, 4) == codes
    with pytest.raises(InputError):
        pack_meta([16], 2, 4)
    with pytest.raises(InputError):
        unpack_meta(1 << 32, 8, 2, 4)


def test_wrap_signed_scalar_and_array():
    assert wrap_signed(2**31, 32) == -(2**31)
    assert wrap_signed(-1, 8) == -1 and wrap_signed(255, 8) == -1 and wrap_signed(128, 8) == -128
    arr = np.array([2**63 - 1, -(2**63), 5, -5], dtype=np.int64)
    assert wrap_signed(arr, 64).tolist() == arr.tolist()
    assert wrap_signed(arr, 4).tolist() == [-1, 0, 5, -5]


def _scalar_pe(acts, weights, metas, clears, p: PEParams, dense=False):
    """Straight Python-int reference of the PE semantics in the issue text."""
    acc, outs, errs = 0, [], []
    for a, w, code, clr in zip(acts, weights, metas, clears, strict=True):
        if dense:
            s, err = sum(int(x) * int(y) for x, y in zip(a, w, strict=True)), False
        else:
            idx, legal = decode_meta(int(code), p.n, p.m)
            s, err = sum(int(a[i]) * int(w[j]) for j, i in enumerate(idx)), not legal
            s = 0 if err else s
        acc = (0 if clr else acc) + s
        acc = ((acc + (1 << (p.acc_bits - 1))) % (1 << p.acc_bits)) - (1 << (p.acc_bits - 1))
        outs.append(acc)
        errs.append(err)
    return outs, errs


@pytest.mark.parametrize(
    "n,m,ab,wb,accb",
    [(2, 4, 8, 8, 16), (2, 4, 4, 6, 10), (4, 8, 8, 8, 32), (1, 4, 16, 16, 32), (2, 8, 32, 32, 64)],
)
def test_pe_reference_matches_scalar(n, m, ab, wb, accb):
    p = PEParams(act_bits=ab, weight_bits=wb, acc_bits=accb, n=n, m=m)
    rng = np.random.default_rng(1)
    t = 200
    acts = rng.integers(-(1 << (ab - 1)), 1 << (ab - 1), size=(t, m))
    acts[:10] = -(1 << (ab - 1))
    w = rng.integers(-(1 << (wb - 1)), 1 << (wb - 1), size=(t, n))
    w[:10] = -(1 << (wb - 1))
    metas = rng.integers(0, 1 << p.meta_bits, size=t)
    clears = rng.random(t) < 0.1
    valid = rng.random(t) < 0.8
    acc, err = pe_reference(acts, w, metas, clears, p, valid=valid)
    ref, ref_err = _scalar_pe(acts[valid], w[valid], metas[valid], clears[valid], p)
    assert acc.tolist() == ref and err.tolist() == ref_err
    wd = rng.integers(-(1 << (wb - 1)), 1 << (wb - 1), size=(t, m))
    dacc, derr = dense_pe_reference(acts, wd, clears, p, valid=valid)
    dref, _ = _scalar_pe(acts[valid], wd[valid], metas[valid], clears[valid], p, dense=True)
    assert dacc.tolist() == dref and not derr.any()


def test_pe_reference_rejects_out_of_range():
    p = PEParams()
    with pytest.raises(InputError, match="acts"):
        pe_reference([[128, 0, 0, 0]], [[1, 1]], [4], [1], p)
    with pytest.raises(InputError, match="metas"):
        pe_reference([[1, 0, 0, 0]], [[1, 1]], [16], [1], p)


@st.composite
def _nm_matrix(draw):
    n, m = draw(st.sampled_from(NM))
    rows, groups = draw(st.integers(1, 5)), draw(st.integers(1, 4))
    vals = draw(st.lists(st.integers(-128, 127), min_size=rows * groups * n, max_size=rows * groups * n))
    idx_choices = list(itertools.combinations(range(m), n))
    picks = draw(st.lists(st.sampled_from(idx_choices), min_size=rows * groups, max_size=rows * groups))
    dense = np.zeros((rows, groups, m), dtype=np.int64)
    v = np.array(vals).reshape(rows, groups, n)
    for r in range(rows):
        for g in range(groups):
            dense[r, g, list(picks[r * groups + g])] = v[r, g]
    return n, m, dense.reshape(rows, groups * m)


@settings(max_examples=150, deadline=None)
@given(_nm_matrix())
def test_compress_exact_on_nm_input(case):
    n, m, dense = case
    values, meta = compress_nm(dense, n, m)
    assert values.shape == (dense.shape[0], dense.shape[1] * n // m) and meta.shape == (
        dense.shape[0],
        dense.shape[1] // m,
    )
    assert np.array_equal(decompress_nm(values, meta, n, m), dense)
    assert all(decode_meta(int(c), n, m)[1] for c in meta.ravel())


@settings(max_examples=100, deadline=None)
@given(st.sampled_from(NM), st.lists(st.integers(-50, 50), min_size=8, max_size=8))
def test_compress_keeps_largest_magnitudes(nm, vals):
    n, m = nm
    dense = np.array(vals[: (8 // m) * m]).reshape(1, -1)
    values, meta = compress_nm(dense, n, m)
    for g in range(dense.shape[1] // m):
        grp = [int(x) for x in dense[0, g * m : (g + 1) * m]]
        # independent rule: sort by (-|x|, index) and keep the first n, lower index wins ties
        keep = sorted(sorted(range(m), key=lambda i: (-abs(grp[i]), i))[:n])
        idx, ok = decode_meta(int(meta[0, g]), n, m)
        assert ok and list(idx) == keep
        assert values[0, g * n : (g + 1) * n].tolist() == [grp[i] for i in keep]


def test_compress_tie_rule_lower_index_wins():
    values, meta = compress_nm(np.array([[3, -3, 3, 3]]))
    assert decode_meta(int(meta[0, 0]))[0] == (0, 1) and values.tolist() == [[3, -3]]
    values, meta = compress_nm(np.array([[0, 0, 0, 7]]))
    assert decode_meta(int(meta[0, 0]))[0] == (0, 3)


def test_decompress_rejects_illegal_code():
    with pytest.raises(InputError, match=r"meta\[0, 1\]"):
        decompress_nm(np.zeros((1, 4)), np.array([[4, 5]]))


@pytest.mark.parametrize("n,m", NM)
def test_gemm_nm_matches_python_ints(n, m):
    rng = np.random.default_rng(n * 10 + m)
    rows, k, p = 5, 4 * m, 3
    dense = rng.integers(-128, 128, size=(rows, k))
    values, meta = compress_nm(dense, n, m)
    w = decompress_nm(values, meta, n, m)
    x = rng.integers(-128, 128, size=(k, p))
    x[0] = -128
    for acc_bits in (16, 32, 64):
        out = gemm_nm(values, meta, x, n, m, acc_bits)
        ref = [
            [wrap_signed(sum(int(w[r, i]) * int(x[i, c]) for i in range(k)), acc_bits) for c in range(p)]
            for r in range(rows)
        ]
        assert out.tolist() == ref


def test_gemm_nm_wraps_64bit_products():
    big = -(2**31)
    values, meta = compress_nm(np.array([[big, big, 0, 0]]))
    x = np.array([[big], [big], [0], [0]])
    assert gemm_nm(values, meta, x, acc_bits=64).tolist() == [[wrap_signed(2 * big * big, 64)]]


@pytest.mark.parametrize("n,m", NM)
def test_dense_fallback_stream_gives_dense_result(n, m):
    p = PEParams(n=n, m=m, acc_bits=24)
    rng = np.random.default_rng(7)
    acts = rng.integers(-128, 128, size=(20, m))
    w = rng.integers(-128, 128, size=(20, m))
    clears = rng.random(20) < 0.2
    sa, sw, sm = dense_to_sparse_stream(acts, w, n, m)
    assert sa.shape == (20 * m // n, m) and sw.shape == (20 * m // n, n)
    sacc, serr = pe_reference(sa, sw, sm, fallback_clears(clears, n, m), p)
    dacc, _ = dense_pe_reference(acts, w, clears, p)
    assert not serr.any()
    assert sacc[m // n - 1 :: m // n].tolist() == dacc.tolist()
    if (n, m) == (2, 4):
        assert sm[:2].tolist() == [encode_meta((0, 1)), encode_meta((2, 3))]


def _scalar_dp(acts, w, metas, dense, clears, p):
    """The dense-path PE, one group and one product at a time in plain Python integers."""
    g_n, b = p.m // p.n, p.index_bits
    acc, outs, errs = 0, [], []
    for a, ww, codes, d, c in zip(
        acts.tolist(), w.tolist(), metas.tolist(), dense.tolist(), clears.tolist(), strict=True
    ):
        total, err = 0, False
        if d:
            total = sum(a[i] * ww[i] for i in range(p.m))
        else:
            for g in range(g_n):
                idx = [(codes[g] >> (j * b)) & (p.m - 1) for j in range(p.n)]
                if all(idx[j] < idx[j + 1] for j in range(p.n - 1)):
                    total += sum(a[g * p.m + idx[j]] * ww[g * p.n + j] for j in range(p.n))
                else:
                    err = True
        acc = ((0 if c else acc) + total) % (1 << p.acc_bits)
        outs.append(acc - (1 << p.acc_bits) if acc >> (p.acc_bits - 1) else acc)
        errs.append(err)
    return outs, errs


@pytest.mark.parametrize(
    "n,m,ab,wb,accb", [(2, 4, 8, 8, 16), (1, 4, 4, 6, 10), (2, 8, 8, 8, 32), (4, 8, 32, 32, 64)]
)
def test_dense_path_reference_matches_scalar(n, m, ab, wb, accb):
    from hw.golden import dense_path_pe_reference, gemm_dense

    p = PEParams(act_bits=ab, weight_bits=wb, acc_bits=accb, n=n, m=m)
    rng = np.random.default_rng(2)
    t, g_n = 200, m // n
    acts = rng.integers(-(1 << (ab - 1)), 1 << (ab - 1), size=(t, g_n * m))
    acts[:10] = -(1 << (ab - 1))
    w = rng.integers(-(1 << (wb - 1)), 1 << (wb - 1), size=(t, m))
    w[:10] = -(1 << (wb - 1))
    metas = rng.integers(0, 1 << p.meta_bits, size=(t, g_n))
    dense = rng.random(t) < 0.4
    clears = rng.random(t) < 0.1
    valid = rng.random(t) < 0.8
    acc, err = dense_path_pe_reference(acts, w, metas, dense, clears, p, valid=valid)
    ref, ref_err = _scalar_dp(acts[valid], w[valid], metas[valid], dense[valid], clears[valid], p)
    assert acc.tolist() == ref and err.tolist() == ref_err
    assert any(ref_err) if n > 1 else not any(ref_err)
    with pytest.raises(InputError, match="metas"):
        dense_path_pe_reference(acts, w, metas[:, :1], dense, clears, p)
    wm = rng.integers(-(1 << (wb - 1)), 1 << (wb - 1), size=(3, 2 * m))
    x = rng.integers(-(1 << (ab - 1)), 1 << (ab - 1), size=(2 * m, 5))
    ref_mm = [[sum(int(wm[i, k]) * int(x[k, j]) for k in range(2 * m)) for j in range(5)] for i in range(3)]
    wrapped = [[((v + (1 << (accb - 1))) % (1 << accb)) - (1 << (accb - 1)) for v in row] for row in ref_mm]
    assert gemm_dense(wm, x, accb).tolist() == wrapped
