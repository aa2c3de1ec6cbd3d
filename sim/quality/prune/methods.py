"""One-shot N:M pruning of one weight matrix: ``magnitude``, ``wanda`` and ``sparsegpt``.

Every function takes the weight as a matrix ``W`` of shape ``(out, K)`` whose *last* axis is the
reduction axis, laid out so that each group of M consecutive columns is one N:M group
(sim.quality.prune.layouts maps a checkpoint tensor to this form and back), and keeps at most N weights
per group. Calibration inputs ``X`` are ``(samples, K)`` in the same column order.

* ``magnitude``: the N largest ``|W_ij|`` of each group (NVIDIA ASP ``m4n2_1d``;
  sim.quality.prune.pruning.nm_mask, ties to the lower index). No calibration data.
* ``wanda`` (Sun, Liu, Bair & Kolter, "A Simple and Effective Pruning Approach for Large Language
  Models", ICLR 2024): score ``S_ij = |W_ij| * ||X_j||_2`` over the calibration rows; the N largest
  scores of each group are kept (the reference code, ``lib/prune.py`` of locuslab/wanda, ranks
  ``|W| * sqrt(||X_j||^2 / samples)``: the same order). No weight update.
* ``sparsegpt`` (Frantar & Alistarh, "SparseGPT: Massive Language Models Can Be Accurately Pruned
  in One-Shot", ICML 2023, Algorithm 1 and the reference code ``sparsegpt.py``, ``fasterprune``):

  1. ``H = 2/n X^T X`` over the ``n`` calibration rows (the Hessian of the mean squared output
     error ``||W X^T - W' X^T||^2 / n``, scaled as the reference code's ``add_batch`` builds it);
     inputs that are zero in every calibration row ("dead") get ``H_jj = 1`` and their weights 0,
     as in the reference code;
  2. dampening ``lambda = percdamp * mean(diag H)`` added to the diagonal (``percdamp`` default
     0.01, the paper's 1 %);
  3. ``U`` = the upper Cholesky factor of ``H^-1`` (``H^-1 = U^T U``): row ``j`` of ``U`` holds the
     OBS update of the columns after ``j`` once columns ``< j`` are fixed;
  4. columns in blocks of ``blocksize`` (128); inside a block, at every column ``i`` with
     ``i % M == 0`` the group's mask keeps the N largest ``W_ij^2 / U_jj^2`` of the *current*
     (already updated) weights; column ``i`` is then pruned, the error ``e = (w_i - q_i) / U_ii``
     is spread over the block's later columns (``W[:, i:] -= e U[i, i:]``), and after the block the
     block's errors update all later columns at once (``W[:, i2:] -= E U[i1:i2, i2:]``, a GEMM).

  Cost: one ``K x K`` Cholesky, inverse and Cholesky (``~K^3`` flops) and ``~out * K^2`` flops of
  updates; memory ``~3 K^2 + 3 out K`` floats. Computed in float64.
"""

from __future__ import annotations

import numpy as np
import scipy.linalg

from hw.errors import InputError
from hw.nm import check_nm
from sim.quality.prune.method_names import CALIBRATED, METHODS
from sim.quality.prune.pruning import nm_mask, top_n_of_groups

__all__ = [
    "METHODS",
    "CALIBRATED",
    "magnitude_prune",
    "wanda_scores",
    "wanda_prune",
    "sparsegpt_prune",
    "layer_hessian",
    "prune_matrix",
    "PERCDAMP",
    "BLOCKSIZE",
]

#: SparseGPT dampening, a fraction of the mean Hessian diagonal: 0.01 (Frantar & Alistarh 2023,
#: sec. 3.4 / the reference code's ``percdamp`` default).
PERCDAMP = 0.01
#: SparseGPT column block: 128 (Frantar & Alistarh 2023, sec. 3.3, "B_s = 128"; the reference code's
#: ``blocksize``).
BLOCKSIZE = 128


def _check(w: np.ndarray, n: int, m: int) -> None:
    check_nm(n, m)
    if w.ndim != 2:
        raise InputError(f"expected a weight matrix (out, K), got shape {w.shape}", where="pruning")
    if w.shape[1] % m:
        raise InputError(f"K = {w.shape[1]} is not a multiple of M = {m}", where="pruning")


def magnitude_prune(w: np.ndarray, n: int, m: int) -> tuple[np.ndarray, np.ndarray]:
    """(pruned W, keep mask): the N largest |W| of each group of M along the last axis."""
    w = np.asarray(w, dtype=np.float64)
    _check(w, n, m)
    keep = nm_mask(w, n, m, -1)
    return np.where(keep, w, 0.0), keep


def wanda_scores(w: np.ndarray, x: np.ndarray) -> np.ndarray:
    """``|W_ij| * ||X_j||_2`` (Sun et al. 2024, eq. 1), float64."""
    x = np.asarray(x, dtype=np.float64)
    scores = np.abs(np.asarray(w, dtype=np.float64))
    scores *= np.sqrt(np.einsum("ij,ij->j", x, x))[None, :]
    return scores


def wanda_prune(w: np.ndarray, x: np.ndarray, n: int, m: int) -> tuple[np.ndarray, np.ndarray]:
    """(pruned W, keep mask): the N largest Wanda scores of each group of M; weights not updated."""
    w = np.asarray(w, dtype=np.float64)
    _check(w, n, m)
    scores = wanda_scores(w, x)
    keep = top_n_of_groups(scores.reshape(w.shape[0], -1, m), n).reshape(w.shape)
    del scores
    return np.where(keep, w, 0.0), keep


def layer_hessian(x: np.ndarray) -> np.ndarray:
    """``2/n X^T X`` (float64) of ``n`` calibration rows ``X`` (samples, K)."""
    x = np.asarray(x, dtype=np.float64)
    h = x.T @ x
    h *= 2.0 / x.shape[0]
    return h


def _upper_cholesky_of_inverse(h: np.ndarray) -> np.ndarray:
    """``U`` upper triangular with ``H^-1 = U^T U`` (the reference code's
    ``cholesky(cholesky_inverse(cholesky(H)), upper=True)``), with LAPACK potrf / potri / potrf."""
    c, info = scipy.linalg.lapack.dpotrf(h, lower=0, overwrite_a=1)
    if info:
        raise InputError(
            "the dampened Hessian X^T X is not positive definite (raise the dampening)", where="sparsegpt"
        )
    inv, info = scipy.linalg.lapack.dpotri(c, lower=0, overwrite_c=1)
    if info:
        raise InputError("the dampened Hessian X^T X is singular (raise the dampening)", where="sparsegpt")
    inv = np.triu(inv)
    inv += np.triu(inv, 1).T  # potri fills the upper triangle only
    u, info = scipy.linalg.lapack.dpotrf(inv, lower=0, overwrite_a=1)
    if info:
        raise InputError(
            "the inverse Hessian is not positive definite (raise the dampening)", where="sparsegpt"
        )
    return np.triu(u)


def sparsegpt_prune(
    w: np.ndarray,
    n: int,
    m: int,
    *,
    x: np.ndarray | None = None,
    hessian: np.ndarray | None = None,
    percdamp: float = PERCDAMP,
    blocksize: int = BLOCKSIZE,
) -> tuple[np.ndarray, np.ndarray]:
    """(pruned and updated W, keep mask) by SparseGPT (see the module docstring); give the
    calibration rows ``x`` (samples, K) or their ``hessian`` (:func:`layer_hessian`)."""
    w = np.array(w, dtype=np.float64)  # a copy: updated in place
    _check(w, n, m)
    if not percdamp > 0:
        raise InputError(f"dampening must be > 0, got {percdamp}", where="sparsegpt")
    if blocksize % m:
        raise InputError(f"block size {blocksize} must be a multiple of M = {m}", where="sparsegpt")
    if hessian is not None:
        h = np.array(hessian, dtype=np.float64)
    elif x is not None:
        h = layer_hessian(x)
    else:
        raise InputError("SparseGPT needs calibration rows x or their Hessian", where="sparsegpt")
    k = w.shape[1]
    if h.shape != (k, k):
        raise InputError(f"Hessian of shape {h.shape} for a weight with K = {k}", where="sparsegpt")
    diag = np.einsum("ii->i", h)  # a view: writes go to h
    dead = diag == 0
    diag[dead] = 1.0
    w[:, dead] = 0.0
    diag += percdamp * float(np.mean(diag))
    u = _upper_cholesky_of_inverse(h)
    del h, diag
    keep = np.zeros(w.shape, dtype=bool)
    # work on W^T (K, out): column i of W is a contiguous row, the rank-1 updates stream rows
    wt = np.ascontiguousarray(w.T)
    for i1 in range(0, k, blocksize):
        i2 = min(i1 + blocksize, k)
        w1 = wt[i1:i2].copy()  # (count, out)
        err = np.empty_like(w1)
        u1 = u[i1:i2, i1:i2]
        d = np.diag(u1).copy()
        k1 = np.zeros(w1.shape, dtype=bool)
        for i in range(i2 - i1):
            if i % m == 0:
                score = w1[i : i + m] ** 2 / (d[i : i + m, None] ** 2)  # (M, out)
                k1[i : i + m] = top_n_of_groups(score.T, n).T
            q = np.where(k1[i], w1[i], 0.0)
            e = (w1[i] - q) / d[i]
            w1[i] = q
            if i + 1 < i2 - i1:
                w1[i + 1 :] -= u1[i, i + 1 :, None] * e[None, :]
            err[i] = e
        wt[i1:i2] = w1
        keep[:, i1:i2] = k1.T
        if i2 < k:
            wt[i2:] -= u[i1:i2, i2:].T @ err
    return np.ascontiguousarray(wt.T), keep


def prune_matrix(
    method: str, w: np.ndarray, n: int, m: int, x: np.ndarray | None = None, *, percdamp: float = PERCDAMP
) -> tuple[np.ndarray, np.ndarray]:
    """(pruned W, keep mask) of one ``(out, K)`` matrix by ``method``; ``x`` (samples, K) for the
    calibrated methods."""
    if method == "magnitude":
        return magnitude_prune(w, n, m)
    if method not in METHODS:
        raise InputError(f"unknown pruning method {method!r} (known: {', '.join(METHODS)})", where="--method")
    if x is None:
        raise InputError(f"method {method} needs calibration inputs", where="--method")
    if method == "wanda":
        return wanda_prune(w, x, n, m)
    return sparsegpt_prune(w, n, m, x=x, percdamp=percdamp)
