"""95 % intervals for quality deltas: a two-level (seeds x test samples) percentile bootstrap.

A quality delta is measured on several training seeds; on each seed, the dense and the sparse
model are scored on the same test samples (paired). One bootstrap replicate draws the seeds with
replacement and, inside each drawn seed, the test samples with replacement (the same indices for
both models, so the pairing is kept), and averages the per-seed statistic over the drawn seeds.
The interval is the 2.5th and 97.5th percentile of ``n_boot`` replicates (Efron & Tibshirani 1993,
ch. 13, percentile interval; the two-level resampling of clustered data follows Davison & Hinkley
1997, sec. 3.8). With one seed it is the ordinary paired bootstrap over the test set.

The *loss* of a sparse model against its dense reference (the ``quality_delta`` metric the
sweep's ``max_quality_delta`` bounds; positive = sparse is worse):

* higher-is-better metrics (accuracy): ``dense - sparse`` in the metric's units (0.01 = 1 point
  of accuracy);
* lower-is-better metrics (perplexity, bits per character, loss): the relative increase
  ``sparse / dense - 1`` (0.01 = the sparse model's perplexity is 1 % higher).
"""

from __future__ import annotations

from collections.abc import Callable, Sequence
from dataclasses import dataclass

import numpy as np

from hw.errors import InputError

__all__ = ["Interval", "loss_of", "paired_interval", "N_BOOT", "LEVEL"]

#: Bootstrap replicates [A]: 2,000 puts the Monte-Carlo error of a 2.5 % percentile well below
#: the interval's width (Efron & Tibshirani 1993 recommend >= 1,000 for percentile intervals).
N_BOOT = 2000
#: Coverage of every interval.
LEVEL = 0.95


@dataclass(frozen=True)
class Interval:
    """A point estimate with its 95 % interval ``[low, high]`` and how it was obtained."""

    point: float
    low: float
    high: float
    method: str

    def to_json(self) -> dict:
        return {
            "point": self.point,
            "low": self.low,
            "high": self.high,
            "level": LEVEL,
            "method": self.method,
        }


def loss_of(dense, sparse, higher_is_better: bool):
    """Quality lost by the sparse model (see the module docstring); numpy-broadcasting."""
    dense = np.asarray(dense, dtype=np.float64)
    sparse = np.asarray(sparse, dtype=np.float64)
    if higher_is_better:
        return dense - sparse
    return sparse / dense - 1.0


def paired_interval(
    dense: Sequence[np.ndarray],
    sparse: Sequence[np.ndarray],
    statistic: Callable[[np.ndarray, np.ndarray], np.ndarray],
    *,
    seed: int = 0,
    n_boot: int = N_BOOT,
) -> Interval:
    """Interval of ``mean over seeds of statistic(mean dense, mean sparse)``.

    ``dense[k]`` and ``sparse[k]`` are the per-sample scores of seed k (same samples, same order);
    ``statistic`` maps arrays of dense and sparse means to the per-seed value (vectorised), e.g.
    ``lambda d, s: loss_of(d, s, True)``."""
    if len(dense) != len(sparse) or not dense:
        raise InputError(
            f"need per-sample scores for the same seeds, got {len(dense)} and {len(sparse)}", where="interval"
        )
    rng = np.random.default_rng(seed)
    per_seed = []  # (n_boot,) replicate statistic of each seed
    points = []
    for k, (d, s) in enumerate(zip(dense, sparse, strict=True)):
        d = np.asarray(d, dtype=np.float64).reshape(-1)
        s = np.asarray(s, dtype=np.float64).reshape(-1)
        if d.shape != s.shape or d.size == 0:
            raise InputError(
                f"seed {k}: {d.size} dense and {s.size} sparse per-sample scores (need the same "
                "non-empty test set)",
                where="interval",
            )
        points.append(float(statistic(np.array(d.mean()), np.array(s.mean()))))
        idx = rng.integers(0, d.size, size=(n_boot, d.size))
        per_seed.append(np.asarray(statistic(d[idx].mean(axis=1), s[idx].mean(axis=1)), dtype=np.float64))
    reps = np.stack(per_seed, axis=1)  # (n_boot, seeds)
    S = reps.shape[1]
    if S > 1:
        pick = rng.integers(0, S, size=(n_boot, S))
        reps = np.take_along_axis(reps, pick, axis=1)
    boot = reps.mean(axis=1)
    lo, hi = np.percentile(boot, [100 * (1 - LEVEL) / 2, 100 * (1 + LEVEL) / 2])
    method = f"percentile bootstrap, {n_boot} replicates, " + (
        f"{S} seeds resampled x test samples resampled within each seed (paired)"
        if S > 1
        else "test samples resampled (paired)"
    )
    return Interval(float(np.mean(points)), float(lo), float(hi), method)
