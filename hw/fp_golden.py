"""Bit-exact numpy golden models of the floating-point PE datapath (hw.precision rules). No Amaranth.

Everything is integer bit manipulation on int64 arrays of bit patterns (no float arithmetic), so the
model is independent of the host FPU; ``tests/hw/test_fp_golden.py`` checks it against a reference
built on numpy's float32/float64 arithmetic and ml_dtypes' format decoders.

* :func:`fp_mul` - operand x operand -> binary32 (exact product, RNE to binary32, FTZ, specials).
* :func:`f32_add` - binary32 + binary32 -> binary32 with RNE and FTZ. Inputs are never binary32
  subnormals in the PE (products and sums are flushed); a subnormal input is read as zero (DAZ).
* :func:`fp_pe_reference`, :func:`fp_dense_pe_reference`, :func:`fp_dense_path_pe_reference` - what
  the float ``sparse_pe`` / ``dense_pe`` / ``sparse_pe_dp`` output per consumed group (bit patterns).
"""

from __future__ import annotations

import numpy as np

from hw.errors import InputError
from hw.golden import decode_table
from hw.params import PEParams
from hw.precision import CANONICAL_NAN, FPFormat

__all__ = [
    "decode",
    "fp_mul",
    "f32_add",
    "f32_chain",
    "fp_pe_reference",
    "fp_dense_pe_reference",
    "fp_dense_path_pe_reference",
    "run_streams",
    "fp_gemm",
    "encode",
    "bits_to_f32",
    "f32_to_bits",
]

_F32_INF = 0x7F800000


def _bitlen(x: np.ndarray) -> np.ndarray:
    """Bit length of non-negative int64 values < 2**40 (0 for 0), by binary search."""
    x = x.astype(np.int64)
    n = np.zeros(x.shape, dtype=np.int64)
    for s in (32, 16, 8, 4, 2, 1):
        big = (x >> s) > 0
        n = np.where(big, n + s, n)
        x = np.where(big, x >> s, x)
    return n + (x > 0)


def decode(x, fmt: FPFormat):
    """Decode operand bit patterns: (sign, sig, exp, is_nan, is_inf) int64/bool arrays with
    value = (-1)**sign * sig * 2**exp for finite encodings (sig == 0 for zeros and DAZ inputs)."""
    x = np.asarray(x, dtype=np.int64)
    s = (x >> (fmt.exp_bits + fmt.man_bits)) & 1
    e = (x >> fmt.man_bits) & fmt.exp_max_field
    f = x & ((1 << fmt.man_bits) - 1)
    top = e == fmt.exp_max_field
    if fmt.ieee_specials:
        nan, inf = top & (f != 0), top & (f == 0)
    else:
        nan, inf = top & (f == (1 << fmt.man_bits) - 1), np.zeros(x.shape, dtype=bool)
    sig = np.where(e == 0, 0 if fmt.daz else f, f | (1 << fmt.man_bits))
    exp = np.maximum(e, 1) - fmt.bias - fmt.man_bits
    return s, sig, exp, nan, inf


def fp_mul(a, w, fmt: FPFormat) -> np.ndarray:
    """binary32 bit patterns (int64) of a * w for operand bit patterns of ``fmt``."""
    sa, ga, ea, na, ia = decode(a, fmt)
    sw, gw, ew, nw, iw = decode(w, fmt)
    s = sa ^ sw
    zero_a, zero_w = (ga == 0) & ~ia & ~na, (gw == 0) & ~iw & ~nw
    nan = na | nw | (ia & zero_w) | (iw & zero_a)
    inf = (ia | iw) & ~nan
    sig = ga * gw  # exact: at most 2 * sig_bits <= 22 bits (fp16)
    top = _bitlen(sig) - 1  # position of the leading one
    ef = top + ea + ew + 127  # binary32 exponent field of the exact product
    mant = np.where(sig > 0, (sig << np.maximum(23 - top, 0)) & 0x7FFFFF, 0)  # exact: top <= 21 < 23
    out = (s << 31) | (np.clip(ef, 0, 255) << 23) | mant
    out = np.where(ef >= 255, (s << 31) | _F32_INF, out)  # |p| >= 2**128: RNE gives inf
    out = np.where((ef <= 0) | (sig == 0), s << 31, out)  # binary32 subnormal: FTZ; zero
    out = np.where(inf, (s << 31) | _F32_INF, out)
    return np.where(nan, CANONICAL_NAN, out).astype(np.int64)


def f32_add(a, b) -> np.ndarray:
    """binary32 a + b (bit patterns, int64 arrays) with RNE, FTZ (and DAZ), canonical NaN."""
    a, b = np.asarray(a, dtype=np.int64), np.asarray(b, dtype=np.int64)
    sa, ea, fa = (a >> 31) & 1, (a >> 23) & 0xFF, a & 0x7FFFFF
    sb, eb, fb = (b >> 31) & 1, (b >> 23) & 0xFF, b & 0x7FFFFF
    nan_a, nan_b = (ea == 255) & (fa != 0), (eb == 255) & (fb != 0)
    inf_a, inf_b = (ea == 255) & (fa == 0), (eb == 255) & (fb == 0)
    zero_a, zero_b = ea == 0, eb == 0
    # order by magnitude: (big, small)
    a_big = ((ea << 23) | fa) >= ((eb << 23) | fb)
    s1, e1, f1 = np.where(a_big, sa, sb), np.where(a_big, ea, eb), np.where(a_big, fa, fb)
    s2, e2, f2 = np.where(a_big, sb, sa), np.where(a_big, eb, ea), np.where(a_big, fb, fa)
    m1, m2 = (f1 | (1 << 23)) << 3, (f2 | (1 << 23)) << 3  # 27 bits: 24 + guard, round, sticky
    d = np.minimum(e1 - e2, 27)
    shifted = m2 >> d
    sticky = ((shifted << d) != m2).astype(np.int64)
    m2s = shifted | sticky
    total = np.where(s1 != s2, m1 - m2s, m1 + m2s)  # 0 .. 2**28 - 1
    carry = total >> 27
    total = np.where(carry == 1, (total >> 1) | (total & 1), total)
    e = e1 + carry
    lz = np.where(total > 0, 27 - _bitlen(total), 0)
    total = total << lz
    e = e - lz
    keep, g, rs = total >> 3, (total >> 2) & 1, (total & 3) != 0
    keep = keep + (g & (rs | (keep & 1)))
    over = keep >> 24
    keep, e = np.where(over == 1, keep >> 1, keep), e + over
    out = (s1 << 31) | (np.clip(e, 0, 255) << 23) | (keep & 0x7FFFFF)
    out = np.where(e >= 255, (s1 << 31) | _F32_INF, out)
    out = np.where(e <= 0, s1 << 31, out)  # FTZ: a zero of the result's sign
    out = np.where(total == 0, 0, out)  # exact cancellation: +0 (RNE)
    out = np.where(zero_b, a, out)
    out = np.where(zero_a, b, out)
    out = np.where(zero_a & zero_b, (sa & sb) << 31, out)
    out = np.where(inf_b, b, out)
    out = np.where(inf_a, a, out)
    nan = nan_a | nan_b | (inf_a & inf_b & (sa != sb))
    return np.where(nan, CANONICAL_NAN, out).astype(np.int64)


def f32_chain(start, products, enables=None) -> np.ndarray:
    """start (T,) + products[:, 0] + products[:, 1] + ... one binary32 add at a time; a product whose
    ``enables`` entry is False is skipped (not added as zero)."""
    acc = np.asarray(start, dtype=np.int64)
    products = np.asarray(products, dtype=np.int64)
    for k in range(products.shape[1]):
        nxt = f32_add(acc, products[:, k])
        acc = nxt if enables is None else np.where(enables[:, k], nxt, acc)
    return acc


def _check_bits(arr, bits: int, what: str) -> np.ndarray:
    arr = np.asarray(arr)
    if arr.dtype == bool or not np.issubdtype(arr.dtype, np.integer):
        raise InputError(f"must be integer bit patterns, got dtype {arr.dtype}", where=what)
    arr = arr.astype(np.int64)
    bad = np.flatnonzero((arr < 0) | (arr >> bits != 0))
    if bad.size:
        raise InputError(f"value {arr.reshape(-1)[bad[0]]} is not a {bits}-bit pattern", where=what)
    return arr


def run_streams(prods, clears, enables=None) -> np.ndarray:
    """Accumulators of S independent streams: prods (S, T, K) binary32 products in addition order,
    enables (S, T, K) (None: all), clears (S, T). acc[s, t] = chain(clear ? +0 : acc[s, t-1],
    prods[s, t, :]); starts from +0 (reset). Returns int64 (S, T) bit patterns."""
    prods = np.asarray(prods, dtype=np.int64)
    s_n, t_n, _ = prods.shape
    clears = np.asarray(clears, dtype=bool).reshape(s_n, t_n)
    out = np.empty((s_n, t_n), dtype=np.int64)
    acc = np.zeros(s_n, dtype=np.int64)
    for t in range(t_n):
        base = np.where(clears[:, t], 0, acc)
        acc = f32_chain(base, prods[:, t], None if enables is None else enables[:, t])
        out[:, t] = acc
    return out


def _prep(acts, weights, clears, valid, p: PEParams, a_lanes: int, w_lanes: int):
    if not p.is_float:
        raise InputError(f"fp golden models need a float precision, got {p.precision}", where="precision")
    acts = _check_bits(acts, p.act_bits, "acts")
    weights = _check_bits(weights, p.weight_bits, "weights")
    t = acts.shape[0] if acts.ndim == 2 else -1
    if acts.ndim != 2 or acts.shape[1] != a_lanes:
        raise InputError(f"must have shape (T, {a_lanes}), got {acts.shape}", where="acts")
    if weights.shape != (t, w_lanes):
        raise InputError(f"must have shape ({t}, {w_lanes}), got {weights.shape}", where="weights")
    clears = np.asarray(clears, dtype=bool).reshape(-1)
    valid = np.ones(t, dtype=bool) if valid is None else np.asarray(valid, dtype=bool).reshape(-1)
    for name, v in (("clears", clears), ("valid", valid)):
        if v.shape != (t,):
            raise InputError(f"must have shape ({t},), got {v.shape}", where=name)
    return acts, weights, clears, valid


def _table(p: PEParams):
    return decode_table(p.n, p.m)


def fp_pe_reference(acts, weights, metas, clears, params: PEParams, valid=None):
    """Float ``sparse_pe``: acts (T, M), weights (T, N) operand bit patterns, metas (T,), clears (T,).
    Returns ``(acc, err)``: int64 binary32 bit patterns after each consumed group, bool err."""
    p = params
    acts, weights, clears, valid = _prep(acts, weights, clears, valid, p, p.m, p.n)
    metas = np.asarray(metas, dtype=np.int64).reshape(-1)
    if metas.shape != clears.shape or (metas.size and (metas.min() < 0 or metas.max() >= 1 << p.meta_bits)):
        raise InputError(f"must be {clears.shape[0]} codes of {p.meta_bits} bits", where="metas")
    acts, weights, metas, clears = acts[valid], weights[valid], metas[valid], clears[valid]
    table, legal = _table(p)
    sel = np.take_along_axis(acts, table[metas], axis=1)
    prods = fp_mul(sel, weights, p.fmt)  # (T', N), in index order
    ok = legal[metas]
    en = np.repeat(ok[:, None], p.n, axis=1)
    return run_streams(prods[None], clears[None], en[None])[0], ~ok


def fp_dense_pe_reference(acts, weights, clears, params: PEParams, valid=None):
    """Float ``dense_pe``: acts, weights (T, M); products added in lane order."""
    p = params
    acts, weights, clears, valid = _prep(acts, weights, clears, valid, p, p.m, p.m)
    acts, weights, clears = acts[valid], weights[valid], clears[valid]
    prods = fp_mul(acts, weights, p.fmt)
    return run_streams(prods[None], clears[None])[0], np.zeros(len(clears), dtype=bool)


def fp_dense_path_pe_reference(acts, weights, metas, dense, clears, params: PEParams, valid=None):
    """Float ``sparse_pe_dp``: acts (T, G*M), weights (T, M), metas (T, G), dense (T,). Dense rows add
    act[i] * w[i] in lane order; N:M rows add group 0's products (index order), then group 1's, ...;
    a group with an illegal code is skipped."""
    p = params
    g_n = p.m // p.n
    acts, weights, clears, valid = _prep(acts, weights, clears, valid, p, g_n * p.m, p.m)
    t = acts.shape[0]
    metas = np.asarray(metas, dtype=np.int64).reshape(t, g_n)
    dense = np.asarray(dense, dtype=bool).reshape(-1)
    acts, weights, metas, dense, clears = (
        acts[valid],
        weights[valid],
        metas[valid],
        dense[valid],
        clears[valid],
    )
    table, legal = _table(p)
    dense_prods = fp_mul(acts[:, : p.m], weights, p.fmt)
    sp_groups: list[np.ndarray] = []
    en_groups: list[np.ndarray] = []
    for g in range(g_n):
        idx = table[metas[:, g]] + g * p.m
        sp_groups.append(
            fp_mul(np.take_along_axis(acts, idx, axis=1), weights[:, g * p.n : (g + 1) * p.n], p.fmt)
        )
        en_groups.append(np.repeat(legal[metas[:, g]][:, None], p.n, axis=1))
    sp, en = np.concatenate(sp_groups, axis=1), np.concatenate(en_groups, axis=1)
    prods = np.where(dense[:, None], dense_prods, sp)
    en = en | dense[:, None]
    return run_streams(prods[None], clears[None], en[None])[0], ~en.all(axis=1) & ~dense


def bits_to_f32(bits) -> np.ndarray:
    """View binary32 bit patterns as numpy float32 (for printing and quality models)."""
    return np.asarray(bits, dtype=np.int64).astype(np.uint32).view(np.float32)


def f32_to_bits(x) -> np.ndarray:
    return np.asarray(x, dtype=np.float32).view(np.uint32).astype(np.int64)


def fp_gemm(w_bits, x_bits, params: PEParams, keep=None) -> np.ndarray:
    """out[c, t] of a float array: the binary32 sum, from +0, of w[c, k] * x[k, t] over the kept
    k in increasing k order (the order every array kind and dataflow adds its products: rows /
    reduction steps in order, metadata group then index order within a cell). w_bits (C, K) dense
    operand bit patterns (decompressed), x_bits (K, T), keep (C, K) bool (None: all; N:M: the kept
    positions). Returns int64 (C, T) bit patterns."""
    p = params
    w = np.asarray(w_bits, dtype=np.int64)
    x = np.asarray(x_bits, dtype=np.int64)
    c_n, k_n = w.shape
    t_n = x.shape[1]
    keep = np.ones(w.shape, dtype=bool) if keep is None else np.asarray(keep, dtype=bool)
    out = np.empty((c_n, t_n), dtype=np.int64)
    for c in range(c_n):
        ks = np.flatnonzero(keep[c])
        prods = fp_mul(np.broadcast_to(w[c, ks], (t_n, len(ks))), x[ks].T, p.fmt)  # (T, kept)
        out[c] = f32_chain(np.zeros(t_n, dtype=np.int64), prods)
    return out


def encode(values, fmt: FPFormat) -> np.ndarray:
    """Finite float values -> nearest operand bit patterns of ``fmt`` (ties to the even code),
    saturating at the largest finite value. For building operand traces and quantising models."""
    x = np.asarray(values, dtype=np.float64)
    if fmt.exp_bits == 8:  # bf16: RNE on the binary32 bit pattern
        with np.errstate(over="ignore"):
            b = (
                np.clip(x, -fmt.max_finite, fmt.max_finite)
                .astype(np.float32)
                .view(np.uint32)
                .astype(np.int64)
            )
        b = (b + 0x7FFF + ((b >> 16) & 1)) >> 16
        e = (b >> 7) & 0xFF
        b = np.where(e == 0xFF, (b & 0x8000) | 0x7F7F, b)  # rounding reached inf: saturate
        return b.astype(np.int64)
    codes = np.arange(1 << fmt.bits, dtype=np.int64)
    s, sig, exp, nan, inf = decode(codes, fmt)
    val = np.where(s == 1, -1.0, 1.0) * sig * np.exp2(exp.astype(np.float64))
    ok = ~nan & ~inf & ~((sig == 0) & (s == 1))  # one code per value: +0 for zero
    codes, val = codes[ok], val[ok]
    order = np.argsort(val, kind="stable")
    codes, val = codes[order], val[order]
    i = np.clip(np.searchsorted(val, x), 1, len(val) - 1)
    lo, hi = val[i - 1], val[i]
    pick_hi = (x - lo > hi - x) | ((x - lo == hi - x) & (codes[i] % 2 == 0))
    out = np.where(pick_hi, codes[i], codes[i - 1])
    return np.where(x <= val[0], codes[0], np.where(x >= val[-1], codes[-1], out)).astype(np.int64)
