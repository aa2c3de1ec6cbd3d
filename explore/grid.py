"""Grid mode (``sparsepe sweep --grid``): evaluate every point of the discretised space at once.

The space's axes are discretised (choice lists as given, ranges by ``step`` or ``grid_points``:
explore.config.axis_values), their Cartesian product is built as numpy columns, and the
evaluator's vectorised :func:`explore.evaluator.evaluate_batch` runs on chunks of it. The result
is the ground truth the search is measured against (bench/bench_sweep_efficiency.py) and, for
small spaces, an answer in itself. :class:`GridResults` gives it the shape of a search's results:
the rows of ``trials.csv`` (one per grid point, state COMPLETE) and the content of ``best.json``;
explore.runner writes them as it writes a search's. No study storage is used.
"""

from __future__ import annotations

from typing import Any

import numpy as np
from rich.console import Console
from rich.progress import BarColumn, MofNCompleteColumn, Progress, TextColumn, TimeElapsedColumn

from explore.config import SweepConfig, axis_values, grid_size
from explore.results import DEFAULT_EVALUATOR, Evaluator, constraint_values, summarise
from hw.errors import InputError

#: Grid points evaluated per vectorised call (bounds memory: points x layers x ~20 arrays).
CHUNK = 4096
#: Refuse grids larger than this (use the search instead).
MAX_GRID_POINTS = 2_000_000


def grid_columns(cfg: SweepConfig) -> dict[str, np.ndarray]:
    """The Cartesian product of the axes as columns (first axis varies slowest), less the OS points
    with ``double_buffer`` true (an OS array streams its weights: those are its ``false`` points,
    explore.space.double_buffered)."""
    vals = axis_values(cfg)
    size = grid_size(cfg)
    if size > MAX_GRID_POINTS:
        raise InputError(
            f"the grid has {size:,} points (more than {MAX_GRID_POINTS:,}); coarsen the ranges or search instead",
            where="--grid",
        )
    names = list(vals)
    idx = np.indices([len(vals[n]) for n in names]).reshape(len(names), -1)
    cols: dict[str, np.ndarray] = {}
    for i, n in enumerate(names):
        arr = np.array(vals[n], dtype=object if isinstance(vals[n][0], str) else None)
        cols[n] = arr[idx[i]]
    if "double_buffer" in cols:
        keep = ~((cols["dataflow"] == "os") & cols["double_buffer"].astype(bool))
        cols = {n: v[keep] for n, v in cols.items()}
    return cols


def constraint_arrays(cfg: SweepConfig, metrics: dict[str, np.ndarray]) -> dict[str, np.ndarray]:
    """:func:`explore.results.constraint_values` on every grid point at once (the same formulas)."""
    return constraint_values(cfg, metrics, lambda v: np.asarray(v, dtype=float))


def evaluate_grid(
    cfg: SweepConfig, ctx: Any = None, *, progress: bool = False, evaluator: str = DEFAULT_EVALUATOR
) -> tuple[dict[str, np.ndarray], dict[str, np.ndarray], dict[str, np.ndarray]]:
    """(columns, metrics, constraints) for every grid point, each a dict of arrays of length P
    (``ctx``: the evaluator's context when the caller has made it)."""
    ev = Evaluator(evaluator, cfg, where="--grid", ctx=ctx)
    cols = grid_columns(cfg)
    P = len(next(iter(cols.values())))
    parts: list[dict[str, np.ndarray]] = []
    bar = None
    if progress:
        bar = Progress(
            TextColumn("grid"),
            BarColumn(),
            MofNCompleteColumn(),
            TimeElapsedColumn(),
            console=Console(stderr=True),
        )
        bar.start()
        task = bar.add_task("grid", total=P)
    try:
        for lo in range(0, P, CHUNK):
            chunk = {k: v[lo : lo + CHUNK] for k, v in cols.items()}
            parts.append(ev.mod.evaluate_batch(chunk, ev.ctx))
            if bar is not None:
                bar.update(task, completed=min(lo + CHUNK, P))
    finally:
        if bar is not None:
            bar.stop()
    metrics = {k: np.concatenate([p[k] for p in parts]) for k in parts[0]}
    return cols, metrics, constraint_arrays(cfg, metrics)


def grid_optimum(
    cfg: SweepConfig, metrics: dict[str, np.ndarray], cons: dict[str, np.ndarray]
) -> tuple[int | None, float]:
    """Index and value of the best feasible point for the primary objective (None if none)."""
    feasible = np.all(np.stack([c <= 0 for c in cons.values()]), axis=0)
    primary = cfg.objectives.primary
    sign = 1.0 if cfg.objectives.directions()[0] == "maximize" else -1.0
    score = np.where(feasible, sign * np.asarray(metrics[primary], float), -np.inf)
    if not np.any(feasible):
        return None, float("nan")
    i = int(np.argmax(score))
    return i, float(metrics[primary][i])


def _py(v: Any) -> Any:
    return v.item() if isinstance(v, np.generic) else v


class GridResults:
    """The evaluated grid as a search's results: ``trials.csv``'s rows, the records ``best.json``
    is summarised from, and every point for the owners' findings."""

    def __init__(
        self,
        cfg: SweepConfig,
        cols: dict[str, np.ndarray],
        metrics: dict[str, np.ndarray],
        cons: dict[str, np.ndarray],
    ):
        self.cfg, self.cols, self.metrics, self.cons = cfg, cols, metrics, cons
        self.size = len(next(iter(cols.values())))
        self.feasible = np.all(np.stack([c <= 0 for c in cons.values()]), axis=0)
        # the feasible points plus the least-violating one (enough for best.json)
        viol = np.sum(np.stack([np.maximum(c, 0.0) for c in cons.values()]), axis=0)
        keep = np.flatnonzero(self.feasible) if np.any(self.feasible) else np.argsort(viol, kind="stable")[:1]
        axes, cnames = list(cols), list(cons)
        self.records: list[dict[str, Any]] = [
            {
                "number": int(i),
                "params": {a: _py(cols[a][i]) for a in axes},
                "metrics": {k: _py(v[i]) for k, v in metrics.items()},
                "constraints": {c: float(cons[c][i]) for c in cnames},
            }
            for i in keep
        ]

    def trial_rows(self) -> tuple[list[str], list[dict[str, Any]]]:
        """(header, rows) of trials.csv: one COMPLETE row per grid point, the columns of a search's."""
        cols, metrics, cons = self.cols, self.metrics, self.cons
        axes = list(cols)
        objectives = self.cfg.objectives.names()
        cnames = list(cons)
        metric_names = sorted(set(metrics) - set(axes) - set(objectives))
        header = [
            "number",
            "state",
            *axes,
            *objectives,
            *[f"c_{c}" for c in cnames],
            "feasible",
            *metric_names,
            "retry_of",
            "duplicate_of",
        ]
        rows = []
        for i in range(self.size):
            values = [
                i,
                "COMPLETE",
                *[_py(cols[a][i]) for a in axes],
                *[_py(metrics[o][i]) for o in objectives],
                *[_py(cons[c][i]) for c in cnames],
                int(self.feasible[i]),
                *[_py(metrics[m][i]) for m in metric_names],
                "",
                "",
            ]
            rows.append(dict(zip(header, values, strict=True)))
        return header, rows

    def summary(self) -> dict[str, Any]:
        """best.json's content but the comparison and the owners: :func:`explore.results.summarise`
        of the records, with the binding limits, counts and violation shares over the whole grid."""
        cfg, metrics, cons = self.cfg, self.metrics, self.cons
        cnames = list(cons)
        P = self.size
        best = summarise(self.records, cfg, extra={"mode": "grid", "grid_points": P})
        if best.get("feasible"):
            # binding limits over the whole grid: a better point that violates exactly one limit
            primary = cfg.objectives.primary
            sign = 1.0 if cfg.objectives.directions()[0] == "maximize" else -1.0
            score = sign * np.asarray(metrics[primary], float)
            better = score > sign * float(best["best"]["metrics"][primary])
            n_viol = np.sum(np.stack([c > 0 for c in cons.values()]), axis=0)
            binding, evidence = [], {}
            for c in cnames:
                idx = np.flatnonzero(better & (n_viol == 1) & (cons[c] > 0))
                if idx.size:
                    j = int(idx[np.argmax(score[idx])])
                    binding.append(c)
                    evidence[c] = (
                        f"grid point {j} reaches {primary} {float(metrics[primary][j]):.4g} and violates only {c}"
                    )
            best["binding_limits"] = sorted(binding)
            best["binding_evidence"] = {c: evidence[c] for c in sorted(binding)}
        best["n_evaluated"] = P
        best["n_feasible"] = int(self.feasible.sum())
        best["violated_share"] = {c: float(np.mean(cons[c] > 0)) for c in cnames}
        return best

    def every_point(self) -> list[dict[str, Any]]:
        """Every grid point as a record whose metrics are read on demand (the owners' findings read
        a few points' metrics out of the whole grid)."""
        return [
            {
                "number": i,
                "params": {},
                "metrics": _RowMetrics(self.metrics, i),
                "constraints": {c: float(self.cons[c][i]) for c in self.cons},
            }
            for i in range(self.size)
        ]


class _RowMetrics(dict):
    """One grid point's metrics, read on demand from the metric columns."""

    def __init__(self, cols: dict[str, Any], i: int):
        super().__init__()
        self._cols, self._i = cols, i

    def get(self, k, default=None):
        return _py(self._cols[k][self._i]) if k in self._cols else default

    def __getitem__(self, k):
        return _py(self._cols[k][self._i])

    def __contains__(self, k):
        return k in self._cols
