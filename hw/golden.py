"""Bit-exact numpy golden models of the N:M PE, the dense PE and the N:M GEMM. No Amaranth here.

Metadata format (NVIDIA 2:4, generalised to N:M): a group of M activations carries one code of
N fields of log2(M) bits; field j (bits ``[j*b +: b]``, b = log2 M) is the index of the
activation that kept weight j multiplies. A code is legal iff the indices are strictly
increasing (for 2:4: 6 of 16 codes; 0000/0101/1010/1111 and every idx0 > idx1 are illegal).
Several groups pack into one word with group g at bits ``[g*N*b +: N*b]`` (8 groups of 2:4 make
the 32-bit metadata register of PTX ``mma.sp``).

Arithmetic: operands are signed two's complement; every sum is taken modulo 2**64 (uint64) and
then wrapped to the signed accumulator width, which is exact for accumulators up to 64 bits.
"""

from __future__ import annotations

from collections.abc import Sequence

import numpy as np

from hw.errors import InputError
from hw.nm import check_nm, meta_bits_per_weight
from hw.params import PEParams

__all__ = [
    "wrap_signed",
    "decode_meta",
    "encode_meta",
    "pack_meta",
    "unpack_meta",
    "legal_codes",
    "pe_reference",
    "dense_pe_reference",
    "dense_path_pe_reference",
    "compress_nm",
    "decompress_nm",
    "gemm_nm",
    "gemm_dense",
    "ws_folds",
    "sum_folds",
    "dense_to_sparse_stream",
    "fallback_clears",
]


def wrap_signed(x, bits: int):
    """Wrap an int or integer array to signed ``bits`` (1..64), two's complement."""
    if not 1 <= bits <= 64:
        raise InputError(f"must be between 1 and 64, got {bits}", where="bits")
    if isinstance(x, (int, np.integer)) and not isinstance(x, np.ndarray):
        x = int(x) & ((1 << bits) - 1)
        return x - (1 << bits) if x >> (bits - 1) else x
    arr = np.asarray(x)
    u = arr.astype(np.uint64) if arr.dtype != np.uint64 else arr
    shift = np.uint64(64 - bits)
    return ((u << shift).view(np.int64) >> np.int64(64 - bits)).astype(np.int64)


def _check_range(arr: np.ndarray, bits: int, what: str) -> None:
    if arr.size == 0:
        return
    lo, hi = -(1 << (bits - 1)), (1 << (bits - 1)) - 1
    bad = np.flatnonzero((arr < lo) | (arr > hi))
    if bad.size:
        pos = np.unravel_index(bad[0], arr.shape)
        raise InputError(
            f"value {arr[pos]} outside signed {bits}-bit range [{lo}, {hi}]",
            where=f"{what}{list(map(int, pos))}",
        )


def _as_int(a, name: str) -> np.ndarray:
    arr = np.asarray(a)
    if arr.dtype == bool or not np.issubdtype(arr.dtype, np.integer):
        if arr.size and np.issubdtype(arr.dtype, np.floating) and np.all(np.mod(arr, 1) == 0):
            return arr.astype(np.int64)
        if arr.size:
            raise InputError(f"must hold integers, got dtype {arr.dtype}", where=name)
    return arr.astype(np.int64)


# ---------------------------------------------------------------------------------------------
# metadata
# ---------------------------------------------------------------------------------------------


def decode_meta(code: int, n: int = 2, m: int = 4) -> tuple[tuple[int, ...], bool]:
    """Decode one group's code into (indices, legal). Legal iff indices strictly increase."""
    check_nm(n, m)
    b = meta_bits_per_weight(m)
    code = int(code)
    if not 0 <= code < (1 << (n * b)):
        raise InputError(f"code {code} does not fit in {n * b} bits for {n}:{m}", where="meta")
    idx = tuple((code >> (j * b)) & (m - 1) for j in range(n))
    return idx, all(idx[j] < idx[j + 1] for j in range(n - 1))


def encode_meta(indices: Sequence[int], m: int = 4) -> int:
    """Encode kept-weight indices (field j = indices[j]) into one code. Any indices in [0, m)
    are encoded, illegal orders included (tests need them); ``decode_meta`` reports legality."""
    n = len(indices)
    check_nm(n, m)
    b = meta_bits_per_weight(m)
    code = 0
    for j, i in enumerate(indices):
        i = int(i)
        if not 0 <= i < m:
            raise InputError(f"index {i} outside [0, {m})", where=f"indices[{j}]")
        code |= i << (j * b)
    return code


def legal_codes(n: int = 2, m: int = 4) -> list[int]:
    """All legal codes of an N:M pattern, ascending (6 for 2:4)."""
    check_nm(n, m)
    return [c for c in range(1 << (n * meta_bits_per_weight(m))) if decode_meta(c, n, m)[1]]


def pack_meta(codes: Sequence[int], n: int = 2, m: int = 4) -> int:
    """Pack per-group codes into one word, group g at bits [g*n*b +: n*b]."""
    check_nm(n, m)
    w = n * meta_bits_per_weight(m)
    word = 0
    for g, c in enumerate(codes):
        c = int(c)
        if not 0 <= c < (1 << w):
            raise InputError(f"code {c} does not fit in {w} bits", where=f"codes[{g}]")
        word |= c << (g * w)
    return word


def unpack_meta(word: int, groups: int, n: int = 2, m: int = 4) -> list[int]:
    """Inverse of :func:`pack_meta`: the ``groups`` codes of a packed metadata word."""
    check_nm(n, m)
    w = n * meta_bits_per_weight(m)
    word = int(word)
    if word < 0 or word >> (groups * w):
        raise InputError(f"word {word:#x} does not fit in {groups} groups of {w} bits", where="meta word")
    return [(word >> (g * w)) & ((1 << w) - 1) for g in range(groups)]


def decode_table(n: int, m: int) -> tuple[np.ndarray, np.ndarray]:
    """(indices[code, j], legal[code]) for every code."""
    codes = range(1 << (n * meta_bits_per_weight(m)))
    dec = [decode_meta(c, n, m) for c in codes]
    return np.array([d[0] for d in dec], dtype=np.int64), np.array([d[1] for d in dec], dtype=bool)


# ---------------------------------------------------------------------------------------------
# PE models
# ---------------------------------------------------------------------------------------------


def _stream_common(acts, clears, valid, params: PEParams, lanes_w: int, weights):
    acts = _as_int(acts, "acts")
    weights = _as_int(weights, "weights")
    t = acts.shape[0] if acts.ndim == 2 else -1
    if acts.ndim != 2 or acts.shape[1] != params.m:
        raise InputError(f"must have shape (T, {params.m}), got {acts.shape}", where="acts")
    if weights.shape != (t, lanes_w):
        raise InputError(f"must have shape ({t}, {lanes_w}), got {weights.shape}", where="weights")
    clears = np.asarray(clears, dtype=bool).reshape(-1)
    if clears.shape != (t,):
        raise InputError(f"must have shape ({t},), got {clears.shape}", where="clears")
    valid = np.ones(t, dtype=bool) if valid is None else np.asarray(valid, dtype=bool).reshape(-1)
    if valid.shape != (t,):
        raise InputError(f"must have shape ({t},), got {valid.shape}", where="valid")
    _check_range(acts, params.act_bits, "acts")
    _check_range(weights, params.weight_bits, "weights")
    return acts, weights, clears, valid


def _accumulate(contrib: np.ndarray, clears: np.ndarray, acc_bits: int) -> np.ndarray:
    """Running accumulator after each group: (clear ? 0 : acc) + contrib, wrapped."""
    out = np.empty(contrib.shape[0], dtype=np.int64)
    acc = 0
    mask = (1 << acc_bits) - 1
    for k, (c, clr) in enumerate(zip(contrib.tolist(), clears.tolist(), strict=True)):
        acc = ((0 if clr else acc) + c) & mask
        out[k] = acc - (1 << acc_bits) if acc >> (acc_bits - 1) else acc
    return out


def pe_reference(acts, weights, metas, clears, params: PEParams, valid=None):
    """What ``sparse_pe`` outputs, per consumed group (rows with ``valid`` False are skipped).

    acts (T, M), weights (T, N), metas (T,) codes, clears (T,). Returns ``(acc, err)``: int64
    (T',) accumulator after each consumed group and bool (T',) ``out_meta_err``. An illegal code
    drops the group's product; ``clear`` still zeroes the accumulator first. Starts from reset.
    """
    acts, weights, clears, valid = _stream_common(acts, clears, valid, params, params.n, weights)
    metas = _as_int(metas, "metas").reshape(-1)
    if metas.shape != clears.shape:
        raise InputError(f"must have shape {clears.shape}, got {metas.shape}", where="metas")
    bad = np.flatnonzero((metas < 0) | (metas >= (1 << params.meta_bits)))
    if bad.size:
        raise InputError(
            f"code {metas[bad[0]]} does not fit in {params.meta_bits} bits", where=f"metas[{bad[0]}]"
        )
    acts, weights, metas, clears = acts[valid], weights[valid], metas[valid], clears[valid]
    table, legal = decode_table(params.n, params.m)
    idx = table[metas]  # (T', N)
    sel = np.take_along_axis(acts, idx, axis=1)  # (T', N)
    prods = (sel * weights).sum(axis=1)  # int64 wraps mod 2**64: exact after masking
    err = ~legal[metas]
    contrib = np.where(err, 0, prods)
    return _accumulate(contrib, clears, params.acc_bits), err


def dense_pe_reference(acts, weights, clears, params: PEParams, valid=None):
    """What ``dense_pe`` outputs, per consumed group: weights (T, M), all M products summed.
    Returns ``(acc, err)`` like :func:`pe_reference`; ``err`` is all False (port tied to 0)."""
    acts, weights, clears, valid = _stream_common(acts, clears, valid, params, params.m, weights)
    acts, weights, clears = acts[valid], weights[valid], clears[valid]
    contrib = (acts * weights).sum(axis=1)
    return _accumulate(contrib, clears, params.acc_bits), np.zeros(contrib.shape[0], dtype=bool)


def dense_path_pe_reference(acts, weights, metas, dense, clears, params: PEParams, valid=None):
    """What ``sparse_pe_dp`` (``SparsePE(params, dense_path=True)``) outputs, per consumed cycle.

    G = M/N. acts (T, G*M): group g lane i at column g*M+i; weights (T, M); metas (T, G) codes
    (group g's code in column g); dense (T,) bool; clears (T,). A dense row multiplies
    acts[:, :M] by the M weights lane by lane (codes ignored); an N:M row adds, per group g with a
    legal code, sum_j acts[g*M + idx_gj] * weights[g*N + j]; an illegal code drops its group's
    products only and sets ``err``. Returns ``(acc, err)`` like :func:`pe_reference`.
    """
    p = params
    g_n = p.m // p.n
    acts = _as_int(acts, "acts")
    weights = _as_int(weights, "weights")
    t = acts.shape[0] if acts.ndim == 2 else -1
    if acts.ndim != 2 or acts.shape[1] != g_n * p.m:
        raise InputError(f"must have shape (T, {g_n * p.m}), got {acts.shape}", where="acts")
    if weights.shape != (t, p.m):
        raise InputError(f"must have shape ({t}, {p.m}), got {weights.shape}", where="weights")
    metas = _as_int(metas, "metas").reshape(t, -1) if t >= 0 else _as_int(metas, "metas")
    if metas.shape != (t, g_n):
        raise InputError(f"must have shape ({t}, {g_n}), got {metas.shape}", where="metas")
    dense = np.asarray(dense, dtype=bool).reshape(-1)
    clears = np.asarray(clears, dtype=bool).reshape(-1)
    valid = np.ones(t, dtype=bool) if valid is None else np.asarray(valid, dtype=bool).reshape(-1)
    for name, v in (("dense", dense), ("clears", clears), ("valid", valid)):
        if v.shape != (t,):
            raise InputError(f"must have shape ({t},), got {v.shape}", where=name)
    _check_range(acts, p.act_bits, "acts")
    _check_range(weights, p.weight_bits, "weights")
    bad = np.flatnonzero(((metas < 0) | (metas >= (1 << p.meta_bits))).reshape(-1))
    if bad.size:
        raise InputError(
            f"code {metas.reshape(-1)[bad[0]]} does not fit in {p.meta_bits} bits", where="metas"
        )
    acts, weights, metas, dense, clears = (
        acts[valid],
        weights[valid],
        metas[valid],
        dense[valid],
        clears[valid],
    )
    table, legal = decode_table(p.n, p.m)
    dense_sum = (acts[:, : p.m] * weights).sum(axis=1)
    sparse_sum = np.zeros(acts.shape[0], dtype=np.int64)
    err = np.zeros(acts.shape[0], dtype=bool)
    for g in range(g_n):
        idx = table[metas[:, g]] + g * p.m  # (T', N) activation columns
        sel = np.take_along_axis(acts, idx, axis=1)
        part = (sel * weights[:, g * p.n : (g + 1) * p.n]).sum(axis=1)
        ok = legal[metas[:, g]]
        sparse_sum += np.where(ok, part, 0)
        err |= ~ok
    contrib = np.where(dense, dense_sum, sparse_sum)
    err &= ~dense
    return _accumulate(contrib, clears, p.acc_bits), err


# ---------------------------------------------------------------------------------------------
# matrices
# ---------------------------------------------------------------------------------------------


def compress_nm(dense, n: int = 2, m: int = 4):
    """Compress along the last axis (K, the reduction) into N:M values + metadata codes.

    Keeps, per group of M, the N entries of largest magnitude; ties go to the lower index
    (stable sort), so a group with fewer than N nonzeros keeps its nonzeros plus the
    lowest-indexed zeros. Kept entries are stored in ascending index order, so every code is
    legal, and the compression is exact (``decompress_nm`` returns the input) iff the input
    already is N:M. dense (..., K) -> values (..., K*n//m) of dense's dtype, meta (..., K//m).
    """
    check_nm(n, m)
    dense = np.asarray(dense)
    if dense.ndim < 1 or dense.shape[-1] % m:
        raise InputError(f"last axis (K) must be a multiple of M={m}, got shape {dense.shape}", where="dense")
    if not (np.issubdtype(dense.dtype, np.integer) or np.issubdtype(dense.dtype, np.floating)):
        raise InputError(f"must be integer or float, got dtype {dense.dtype}", where="dense")
    lead, k = dense.shape[:-1], dense.shape[-1]
    g = dense.reshape(*lead, k // m, m)
    mag = np.abs(g.astype(np.float64)) if np.issubdtype(g.dtype, np.floating) else np.abs(g.astype(np.int64))
    order = np.argsort(-mag, axis=-1, kind="stable")[..., :n]  # ties: lower index first
    idx = np.sort(order, axis=-1)
    values = np.take_along_axis(g, idx, axis=-1).reshape(*lead, k * n // m)
    b = meta_bits_per_weight(m)
    meta = (idx << (b * np.arange(n))).sum(axis=-1).astype(np.int64)
    return values, meta


def _indices(meta: np.ndarray, n: int, m: int, where: str) -> np.ndarray:
    """Per-group index array (..., N) from codes; illegal or oversized codes raise InputError."""
    b = meta_bits_per_weight(m)
    if meta.size and (meta.min() < 0 or meta.max() >= (1 << (n * b))):
        pos = np.unravel_index(np.flatnonzero((meta < 0) | (meta >= (1 << (n * b))))[0], meta.shape)
        raise InputError(
            f"code {meta[pos]} does not fit in {n * b} bits", where=f"{where}{list(map(int, pos))}"
        )
    idx = (meta[..., None] >> (b * np.arange(n))) & (m - 1)
    if n > 1:
        bad = ~np.all(np.diff(idx, axis=-1) > 0, axis=-1)
        if bad.any():
            pos = np.unravel_index(np.flatnonzero(bad)[0], meta.shape)
            raise InputError(
                f"illegal code {meta[pos]} (indices must strictly increase)",
                where=f"{where}{list(map(int, pos))}",
            )
    return idx


def decompress_nm(values, meta, n: int = 2, m: int = 4):
    """Inverse of :func:`compress_nm`: values (..., G*N), meta (..., G) -> dense (..., G*M).
    An illegal code raises InputError naming its position."""
    check_nm(n, m)
    values, meta = np.asarray(values), _as_int(meta, "meta")
    if values.shape[:-1] != meta.shape[:-1] or values.shape[-1] != meta.shape[-1] * n:
        raise InputError(
            f"shape {values.shape} does not match meta shape {meta.shape} for {n}:{m}", where="values"
        )
    idx = _indices(meta, n, m, "meta")
    groups = meta.shape[-1]
    dense = np.zeros((*meta.shape, m), dtype=values.dtype)
    np.put_along_axis(dense, idx, values.reshape(*meta.shape, n), axis=-1)
    return dense.reshape(*meta.shape[:-1], groups * m)


def gemm_nm(values, meta, x, n: int = 2, m: int = 4, acc_bits: int = 32):
    """out = W @ x for an N:M-compressed W, wrapped to signed ``acc_bits``.

    values (rows, K*n//m) and meta (rows, K//m) as from :func:`compress_nm`; x (K, P) integers.
    Exact modulo 2**acc_bits whatever the operand widths (uint64 arithmetic). Illegal codes raise.
    """
    values = _as_int(values, "values")
    w = decompress_nm(values, meta, n, m)
    x = _as_int(x, "x")
    if w.ndim != 2 or x.ndim != 2 or x.shape[0] != w.shape[1]:
        raise InputError(f"shape {x.shape} does not match W of shape {w.shape} (need (K, P))", where="x")
    out = w.astype(np.uint64) @ x.astype(np.uint64)
    return wrap_signed(out, acc_bits)


def gemm_dense(w, x, acc_bits: int = 32):
    """out = W @ x for a dense W (rows, K) and x (K, P), wrapped to signed ``acc_bits`` (uint64
    arithmetic, exact modulo 2**acc_bits)."""
    w, x = _as_int(w, "w"), _as_int(x, "x")
    if w.ndim != 2 or x.ndim != 2 or x.shape[0] != w.shape[1]:
        raise InputError(f"shape {x.shape} does not match W of shape {w.shape} (need (K, P))", where="x")
    return wrap_signed(w.astype(np.uint64) @ x.astype(np.uint64), acc_bits)


def ws_folds(values, meta, x, rows: int, cols: int, steps: int) -> list[tuple]:
    """The folds (tiles) a weight-stationary ``rows`` x ``cols`` array runs a GEMM in: column folds
    of ``cols`` output channels, each split into K folds of ``rows`` reduction steps (one step per
    PE row: its weights, codes and activations), K folds innermost.

    values (Cout, steps * w) and meta (Cout, steps * g) (None for dense weights) hold ``w``
    weights and ``g`` codes per channel and step; x (steps * k, T) holds ``k`` reduction elements
    per step. Returns [(values_f (cols, rows*w), meta_f or None, x_f (rows*k, T), channel
    slice)]; Cout must be a multiple of ``cols`` and ``steps`` of ``rows``."""
    values, x = np.asarray(values), np.asarray(x)
    meta = None if meta is None else np.asarray(meta)
    cout = values.shape[0]
    if values.ndim != 2 or cout % cols or steps % rows or values.shape[1] % steps or x.shape[0] % steps:
        raise InputError(
            f"values {values.shape} / x {x.shape} do not split into {rows} x {cols} folds of {steps} steps",
            where="ws_folds",
        )
    w, k = values.shape[1] // steps, x.shape[0] // steps
    g = 0 if meta is None else meta.shape[1] // steps
    out = []
    for c0 in range(0, cout, cols):
        ch = slice(c0, c0 + cols)
        for s0 in range(0, steps, rows):
            out.append(
                (
                    values[ch, s0 * w : (s0 + rows) * w],
                    None if meta is None else meta[ch, s0 * g : (s0 + rows) * g],
                    x[s0 * k : (s0 + rows) * k],
                    ch,
                )
            )
    return out


def sum_folds(outs, folds, acc_bits: int = 32) -> np.ndarray:
    """The GEMM from the folds' outputs (``outs[f]`` (cols, T) for ``folds[f]`` of :func:`ws_folds`):
    each channel's K-fold partial sums added and wrapped to signed ``acc_bits``, as the host adds
    them (exact modulo 2**acc_bits, so equal to :func:`gemm_nm` / :func:`gemm_dense` of the whole)."""
    cout = max(ch.stop for *_, ch in folds)
    t = np.asarray(outs[0]).shape[1]
    total = np.zeros((cout, t), dtype=np.uint64)
    for o, (*_, ch) in zip(outs, folds, strict=True):
        total[ch] += _as_int(o, "outs").astype(np.uint64)
    return wrap_signed(total, acc_bits)


# ---------------------------------------------------------------------------------------------
# dense fallback
# ---------------------------------------------------------------------------------------------


def dense_to_sparse_stream(acts_group, w_group, n: int = 2, m: int = 4):
    """Dense fallback: turn dense groups into the sparse-PE stream.

    acts_group (T, M) or (M,), w_group likewise with M dense weights. Each dense group becomes
    M/N consecutive sparse groups carrying the same activations, weights w[kN:(k+1)N] and
    metadata (kN, ..., kN+N-1), k = 0..M/N-1 (for 2:4: (0,1) then (2,3)). Returns
    ``(acts (T*M/N, M), weights (T*M/N, N), metas (T*M/N,))``. See :func:`fallback_clears`.
    """
    check_nm(n, m)
    a, w = np.atleast_2d(np.asarray(acts_group)), np.atleast_2d(np.asarray(w_group))
    if a.ndim != 2 or a.shape[1] != m:
        raise InputError(f"must have shape (T, {m}), got {np.shape(acts_group)}", where="acts_group")
    if w.shape != a.shape:
        raise InputError(f"must have shape {a.shape}, got {np.shape(w_group)}", where="w_group")
    steps = m // n
    acts = np.repeat(a, steps, axis=0)
    weights = w.reshape(a.shape[0] * steps, n)
    codes = np.array([encode_meta(range(k * n, (k + 1) * n), m) for k in range(steps)], dtype=np.int64)
    return acts, weights, np.tile(codes, a.shape[0])


def fallback_clears(clears, n: int = 2, m: int = 4) -> np.ndarray:
    """Clears for the fallback stream: a dense group's clear goes on its first sparse group only."""
    check_nm(n, m)
    clears = np.asarray(clears, dtype=bool).reshape(-1)
    out = np.zeros((clears.size, m // n), dtype=bool)
    out[:, 0] = clears
    return out.reshape(-1)
