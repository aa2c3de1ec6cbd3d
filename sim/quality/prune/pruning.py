"""N:M magnitude pruning, as NVIDIA's ASP ``m4n2_1d`` mask and its generalisation to any N:M.

Groups are M consecutive weights along the *reduction* dimension: the last axis of a linear
weight ``(out, in)`` (the ``K`` of ``hw.golden.compress_nm``) and the input-channel axis of a
convolution weight ``(Cout, Cin, R, S)`` (apex permutes conv weights so that its 1-D mask runs
along ``Cin``). In each group the N entries of largest magnitude are kept.

Tie rule (stated once, used everywhere): among equal magnitudes the **lower index wins**. This is
the rule of ``hw.golden.compress_nm`` (stable sort on descending magnitude), so the mask chosen
here is the one the compressor reproduces, and ``decompress_nm(*compress_nm(prune_nm(w)))`` is
``prune_nm(w)`` exactly. A group with fewer than N nonzeros keeps its nonzeros plus its lowest
zeros, so a tensor that already is N:M is returned unchanged.

Which layers may be pruned at all is decided by :func:`sim.asp_rules.weight_verdict`, the same
verdict the workload model uses; :func:`prune_layer` applies it, so the two never disagree.
"""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np

from hw.errors import InputError
from hw.nm import check_nm
from sim.asp_rules import CONV, DEPTHWISE, WEIGHT_GEMM, Verdict, weight_verdict

__all__ = [
    "nm_mask",
    "top_n_of_groups",
    "prune_nm",
    "is_nm",
    "reduction_axis",
    "kind_for_shape",
    "PrunedLayer",
    "prune_layer",
    "candidate_mask",
    "gradual_nm_mask",
    "cubic_sparsity",
]


def _groups(w: np.ndarray, m: int, axis: int, where: str) -> tuple[np.ndarray, tuple[int, ...]]:
    """Move ``axis`` last and split it into groups: returns (groups (..., G, M), moved shape)."""
    if w.ndim < 1:
        raise InputError("needs at least one axis to group along, got a scalar", where=where)
    ax = axis % w.ndim
    moved = np.moveaxis(w, ax, -1)
    k = moved.shape[-1]
    if k % m:
        raise InputError(
            f"reduction dim {k} (axis {ax} of shape {tuple(w.shape)}) is not a multiple of M={m}: "
            f"{m}-groups cannot tile it",
            where=where,
        )
    return moved.reshape(*moved.shape[:-1], k // m, m), moved.shape


def _magnitude(w: np.ndarray, where: str) -> np.ndarray:
    if w.dtype == bool or not (np.issubdtype(w.dtype, np.floating) or np.issubdtype(w.dtype, np.integer)):
        raise InputError(f"weights must be float or integer, got dtype {w.dtype}", where=where)
    mag = np.abs(w.astype(np.float64, copy=False))
    # one reduction first (NaN/inf propagate into the sum); the element-wise check only if it is not finite
    if not np.isfinite(mag.sum()) and not np.all(np.isfinite(mag)):
        raise InputError("weights hold NaN or infinity", where=where)
    return mag


def nm_mask(w, n: int = 2, m: int = 4, axis: int = -1, *, where: str = "weights") -> np.ndarray:
    """Boolean keep-mask of ``w``'s shape: exactly N True per group of M along ``axis``.

    The N largest magnitudes of each group are kept; equal magnitudes go to the lower index.
    """
    check_nm(n, m)
    w = np.asarray(w)
    mag = _magnitude(w, where)
    g, moved_shape = _groups(mag, m, axis, where)
    keep = top_n_of_groups(g, n)
    return np.moveaxis(keep.reshape(moved_shape), -1, axis % w.ndim)


def top_n_of_groups(g: np.ndarray, n: int) -> np.ndarray:
    """Keep-mask of the N largest entries along the last axis of ``g`` (groups ``(..., M)`` of
    finite scores); equal scores go to the lower index.

    rank_i = #{j : g_j > g_i, or g_j == g_i and j < i}; keep rank < N. This is the position of i in
    a stable sort on descending score, computed with M vectorised comparisons instead of a
    per-group argsort (~10x faster for M = 4): entry j adds one to the ranks of the later entries
    it is at least as large as, and of the earlier entries it is strictly larger than."""
    m = g.shape[-1]
    rank = np.zeros(g.shape, dtype=np.uint8)  # M <= hw.nm.MAX_M = 64
    for j in range(m):
        gj = g[..., j : j + 1]
        if j + 1 < m:
            rank[..., j + 1 :] += gj >= g[..., j + 1 :]
        if j:
            rank[..., :j] += gj > g[..., :j]
    return rank < n


def prune_nm(w, n: int = 2, m: int = 4, axis: int = -1, *, where: str = "weights") -> np.ndarray:
    """``w`` with all but the N largest-magnitude entries of each M-group zeroed (same dtype)."""
    w = np.asarray(w)
    return np.where(nm_mask(w, n, m, axis, where=where), w, np.zeros((), dtype=w.dtype))


def is_nm(w, n: int = 2, m: int = 4, axis: int = -1) -> bool:
    """True iff every group of M along ``axis`` has at most N nonzeros."""
    check_nm(n, m)
    g, _ = _groups(np.asarray(w), m, axis, "weights")
    return bool(np.all(np.count_nonzero(g, axis=-1) <= n))


def reduction_axis(shape: tuple[int, ...]) -> int:
    """Axis the N:M groups run along: ``in`` (last) of a linear (out, in), ``Cin`` (1) of a conv."""
    return -1 if len(shape) == 2 else 1


def kind_for_shape(shape: tuple[int, ...]) -> str:
    """asp_rules layer kind of a weight tensor from its shape (PyTorch layout)."""
    if len(shape) == 2:
        return WEIGHT_GEMM
    if len(shape) >= 3 and shape[1] == 1:
        return DEPTHWISE
    return CONV


@dataclass(frozen=True)
class PrunedLayer:
    """One layer after the ASP decision: pruned weights (or the originals when left dense)."""

    name: str
    kind: str
    verdict: Verdict
    weights: np.ndarray
    mask: np.ndarray | None  # None when the layer stays dense

    @property
    def pruned(self) -> bool:
        return self.mask is not None


def prune_layer(name: str, w, n: int = 2, m: int = 4, kind: str | None = None) -> PrunedLayer:
    """Apply the shared ASP verdict, then N:M-prune the layer if it is sparsifiable."""
    w = np.asarray(w)
    kind = kind or kind_for_shape(w.shape)
    verdict = weight_verdict(kind, tuple(w.shape), n, m)
    if not verdict.sparsifiable:
        return PrunedLayer(name, kind, verdict, w, None)
    mask = nm_mask(w, n, m, reduction_axis(w.shape), where=name)
    return PrunedLayer(name, kind, verdict, np.where(mask, w, np.zeros((), dtype=w.dtype)), mask)


# ---------------------------------------------------------------------------------------------
# gradual schedule (Zhu & Gupta 2017) ending at N:M
# ---------------------------------------------------------------------------------------------


def cubic_sparsity(step: int, total_steps: int, final: float, initial: float = 0.0, start: int = 0) -> float:
    """Zhu & Gupta (2017, "To prune, or not to prune", eq. 1) cubic ramp:
    ``s_t = s_f + (s_i - s_f) * (1 - (t - t0) / (n dt))**3`` for t0 <= t <= t0 + n dt."""
    if total_steps <= 0:
        return final
    frac = min(max((step - start) / total_steps, 0.0), 1.0)
    return final + (initial - final) * (1.0 - frac) ** 3


def candidate_mask(w, n: int = 2, m: int = 4, axis: int = -1) -> np.ndarray:
    """Entries that the final N:M mask would remove (the M-N smallest of each group)."""
    return ~nm_mask(w, n, m, axis)


def gradual_nm_mask(w, sparsity: float, n: int = 2, m: int = 4, axis: int = -1) -> np.ndarray:
    """Keep-mask at an intermediate ``sparsity`` in [0, 1 - N/M] that converges to the N:M mask.

    Only entries outside each group's top N are candidates; the ``sparsity / (1 - N/M)`` fraction
    of candidates with the smallest magnitude (ties: lower flat index first) is removed. At
    ``sparsity = 1 - N/M`` this is exactly :func:`nm_mask`; below it every group still keeps at
    least N entries, and already-pruned zeros stay pruned (they are the smallest candidates).
    """
    check_nm(n, m)
    w = np.asarray(w)
    top = nm_mask(w, n, m, axis)
    final = 1.0 - n / m
    if not 0.0 <= sparsity <= final + 1e-12:
        raise InputError(f"sparsity {sparsity} outside [0, {final}] for {n}:{m}", where="sparsity")
    cand = np.flatnonzero(~top)
    k = int(round(cand.size * min(sparsity / final, 1.0)))
    keep = np.ones(w.size, dtype=bool)
    if k:
        mag = np.abs(w.astype(np.float64)).reshape(-1)[cand]
        drop = cand[np.argsort(mag, kind="stable")[:k]]
        keep[drop] = False
    return keep.reshape(w.shape)
