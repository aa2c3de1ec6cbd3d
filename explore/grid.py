"""Grid mode (``sparsepe sweep --grid``): evaluate every point of the discretised space at once.

The space's axes are discretised (choice lists as given, ranges by ``step`` or ``grid_points``),
their Cartesian product is built as numpy columns, and the evaluator's vectorised
:func:`explore.evaluator.evaluate_batch` runs on chunks of it. The result is the ground truth the
search is measured against (bench/bench_sweep_efficiency.py) and, for small spaces, an answer in
itself. It writes the same ``trials.csv`` (one row per grid point, state COMPLETE) and
``best.json`` as a search; no study storage is used.
"""

from __future__ import annotations

from pathlib import Path
from typing import Any

import numpy as np

from explore.config import SweepConfig, axis_choices, is_integer_axis
from explore.study import constraint_values, summarise, write_json
from hw.errors import InputError

#: Grid points evaluated per vectorised call (bounds memory: points x layers x ~20 arrays).
CHUNK = 4096
#: Refuse grids larger than this (use the search instead).
MAX_GRID_POINTS = 2_000_000


def axis_values(cfg: SweepConfig) -> dict[str, list[Any]]:
    """The discretised values of each active axis, in AXES order."""
    out: dict[str, list[Any]] = {}
    for name in cfg.space.active_axes():
        choices = axis_choices(cfg.space, name)
        if choices is not None:
            out[name] = list(choices)
            continue
        try:
            out[name] = cfg.space.axis(name).grid(integer=is_integer_axis(name))
        except InputError as exc:
            raise InputError(str(exc), where=f"{cfg.source}: space.{name}") from None
    return out


def grid_size(cfg: SweepConfig) -> int:
    n = 1
    for v in axis_values(cfg).values():
        n *= len(v)
    return n


def grid_columns(cfg: SweepConfig) -> dict[str, np.ndarray]:
    """The Cartesian product of the axes as columns (first axis varies slowest)."""
    vals = axis_values(cfg)
    size = grid_size(cfg)
    if size > MAX_GRID_POINTS:
        raise InputError(f"the grid has {size:,} points (more than {MAX_GRID_POINTS:,}); coarsen the ranges or search instead",
                         where="--grid")
    names = list(vals)
    idx = np.indices([len(vals[n]) for n in names]).reshape(len(names), -1)
    cols: dict[str, np.ndarray] = {}
    for i, n in enumerate(names):
        arr = np.array(vals[n], dtype=object if isinstance(vals[n][0], str) else None)
        cols[n] = arr[idx[i]]
    return cols


def constraint_arrays(cfg: SweepConfig, metrics: dict[str, np.ndarray]) -> dict[str, np.ndarray]:
    """:func:`explore.study.constraint_values` on every grid point at once (the same formulas)."""
    return constraint_values(cfg, metrics, lambda v: np.asarray(v, dtype=float))


def evaluate_grid(cfg: SweepConfig, ctx: Any = None, *, progress: bool = False, evaluator: str = "explore.evaluator"
                  ) -> tuple[dict[str, np.ndarray], dict[str, np.ndarray], dict[str, np.ndarray]]:
    """(columns, metrics, constraints) for every grid point, each a dict of arrays of length P."""
    import importlib

    ev = importlib.import_module(evaluator)
    if ctx is None:
        ctx = ev.make_context(cfg)
    cols = grid_columns(cfg)
    P = len(next(iter(cols.values())))
    parts: list[dict[str, np.ndarray]] = []
    bar = None
    if progress:
        from rich.console import Console
        from rich.progress import BarColumn, MofNCompleteColumn, Progress, TextColumn, TimeElapsedColumn

        bar = Progress(TextColumn("grid"), BarColumn(), MofNCompleteColumn(), TimeElapsedColumn(),
                       console=Console(stderr=True))
        bar.start()
        task = bar.add_task("grid", total=P)
    try:
        for lo in range(0, P, CHUNK):
            chunk = {k: v[lo:lo + CHUNK] for k, v in cols.items()}
            parts.append(ev.evaluate_batch(chunk, ctx))
            if bar is not None:
                bar.update(task, completed=min(lo + CHUNK, P))
    finally:
        if bar is not None:
            bar.stop()
    metrics = {k: np.concatenate([p[k] for p in parts]) for k in parts[0]}
    return cols, metrics, constraint_arrays(cfg, metrics)


def grid_optimum(cfg: SweepConfig, metrics: dict[str, np.ndarray], cons: dict[str, np.ndarray]) -> tuple[int | None, float]:
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


def run_grid(cfg: SweepConfig, out_dir: Path, *, progress: bool = False, evaluator: str = "explore.evaluator") -> dict[str, Any]:
    """Evaluate the grid; write DIR/trials.csv and DIR/best.json; return best.json's content."""
    cols, metrics, cons = evaluate_grid(cfg, progress=progress, evaluator=evaluator)
    P = len(next(iter(cols.values())))
    axes = list(cols)
    objectives = cfg.objectives.names()
    cnames = list(cons)
    feasible = np.all(np.stack([c <= 0 for c in cons.values()]), axis=0)
    metric_names = sorted(set(metrics) - set(axes) - set(objectives))
    header = ["number", "state", *axes, *objectives, *[f"c_{c}" for c in cnames], "feasible", *metric_names, "retry_of", "duplicate_of"]
    import csv
    import io

    from explore.safety import check_out_dir, write_text

    check_out_dir(out_dir)
    f = io.StringIO(newline="")
    w = csv.writer(f, lineterminator="\n")
    w.writerow(header)
    for i in range(P):
        w.writerow(
            [i, "COMPLETE", *[_py(cols[a][i]) for a in axes], *[_py(metrics[o][i]) for o in objectives],
             *[_py(cons[c][i]) for c in cnames], int(feasible[i]), *[_py(metrics[m][i]) for m in metric_names], "", ""]
        )
    write_text(out_dir / "trials.csv", f.getvalue())  # atomic, never through a symlink
    # Summarise from the feasible points plus the least-violating ones (enough for best.json).
    viol = np.sum(np.stack([np.maximum(c, 0.0) for c in cons.values()]), axis=0)
    keep = np.flatnonzero(feasible) if np.any(feasible) else np.argsort(viol, kind="stable")[:1]
    recs = [
        {"number": int(i), "params": {a: _py(cols[a][i]) for a in axes},
         "metrics": {k: _py(v[i]) for k, v in metrics.items()}, "constraints": {c: float(cons[c][i]) for c in cnames}}
        for i in keep
    ]
    best = summarise(recs, cfg, extra={"mode": "grid", "grid_points": P})
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
                evidence[c] = f"grid point {j} reaches {primary} {float(metrics[primary][j]):.4g} and violates only {c}"
        best["binding_limits"] = sorted(binding)
        best["binding_evidence"] = {c: evidence[c] for c in sorted(binding)}
    best["n_evaluated"] = P
    best["n_feasible"] = int(feasible.sum())
    best["violated_share"] = {c: float(np.mean(cons[c] > 0)) for c in cnames}
    import importlib

    from explore import compare

    ev = importlib.import_module(evaluator)
    chosen = best.get("best") if best.get("feasible") else None
    best["comparison"], _ = compare.build(recs, cfg, chosen, ev, ev.make_context(cfg), P, allow_substudy=False)
    from explore.report.owners import attach_owners

    every = [{"number": i, "params": {}, "metrics": _RowMetrics(metrics, i),
              "constraints": {c: float(cons[c][i]) for c in cnames}} for i in range(P)]
    attach_owners(best, cfg, every, out_dir, evaluator)
    write_json(out_dir / "best.json", best)
    return best


class _RowMetrics(dict):
    """One grid point's metrics, read on demand from the metric columns (the owners' findings read
    a few points' metrics out of the whole grid)."""

    def __init__(self, cols: dict[str, Any], i: int):
        super().__init__()
        self._cols, self._i = cols, i

    def get(self, k, default=None):
        return _py(self._cols[k][self._i]) if k in self._cols else default

    def __getitem__(self, k):
        return _py(self._cols[k][self._i])

    def __contains__(self, k):
        return k in self._cols

