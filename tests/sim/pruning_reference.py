"""Independent references for the calibrated pruning methods, written from the papers' own code.

* :func:`sparsegpt_reference`: a line-by-line numpy port of ``SparseGPT.fasterprune`` (N:M branch)
  from IST-DASLab/sparsegpt ``sparsegpt.py``: Hessian ``2/n X^T X`` as its ``add_batch`` builds it,
  ``torch.linalg.cholesky`` / ``cholesky_inverse`` / ``cholesky(upper=True)`` as numpy's
  cholesky and inverse, rows = outputs (the torch code's orientation), ``topk(largest=False)`` of
  the ``prune_n`` smallest scores as an argsort.
* :func:`wanda_reference`: ``lib/prune.py`` of locuslab/wanda, N:M branch: ``W_metric = |W| *
  sqrt(scaler_row)`` with ``scaler_row = ||X_j||^2 / nsamples``, and in each group of M the
  ``prune_n = M - N`` smallest metrics pruned, one row and one group at a time.
"""

from __future__ import annotations

import numpy as np


def sparsegpt_reference(W, X, n, m, blocksize=128, percdamp=0.01):
    """(pruned W, keep mask); N kept per group of M (the torch code's prune_n = M - N)."""
    prune_n, prune_m = m - n, m
    W = np.array(W, dtype=np.float64)
    columns = W.shape[1]
    H = 2 / X.shape[0] * (X.T @ X)
    dead = np.diag(H) == 0
    H[dead, dead] = 1
    W[:, dead] = 0
    damp = percdamp * np.mean(np.diag(H))
    H[np.arange(columns), np.arange(columns)] += damp
    L = np.linalg.cholesky(H)
    Hinv = np.linalg.cholesky(np.linalg.inv(L @ L.T)).T  # upper
    pruned = np.zeros_like(W, dtype=bool)
    for i1 in range(0, columns, blocksize):
        i2 = min(i1 + blocksize, columns)
        W1 = W[:, i1:i2].copy()
        Q1 = np.zeros_like(W1)
        Err1 = np.zeros_like(W1)
        Hinv1 = Hinv[i1:i2, i1:i2]
        mask1 = np.zeros_like(W1, dtype=bool)
        for i in range(i2 - i1):
            w = W1[:, i]
            d = Hinv1[i, i]
            if i % prune_m == 0:
                tmp = W1[:, i : i + prune_m] ** 2 / (np.diag(Hinv1)[i : i + prune_m].reshape((1, -1))) ** 2
                idx = np.argsort(tmp, axis=1, kind="stable")[:, :prune_n]
                np.put_along_axis(mask1[:, i : i + prune_m], idx, True, axis=1)
            q = w.copy()
            q[mask1[:, i]] = 0
            Q1[:, i] = q
            err1 = (w - q) / d
            W1[:, i:] -= np.outer(err1, Hinv1[i, i:])
            Err1[:, i] = err1
        W[:, i1:i2] = Q1
        pruned[:, i1:i2] = mask1
        W[:, i2:] -= Err1 @ Hinv[i1:i2, i2:]
    return W, ~pruned


def wanda_reference(W, X, n, m):
    """(pruned W, keep mask) by Wanda's N:M rule, looping over rows and groups."""
    W = np.array(W, dtype=np.float64)
    metric = np.abs(W) * np.sqrt((X.astype(np.float64) ** 2).sum(axis=0) / X.shape[0])
    keep = np.ones_like(W, dtype=bool)
    for r in range(W.shape[0]):
        for g in range(0, W.shape[1], m):
            order = np.argsort(metric[r, g : g + m], kind="stable")
            keep[r, g + order[: m - n]] = False
    return np.where(keep, W, 0.0), keep
