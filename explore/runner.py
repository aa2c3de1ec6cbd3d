"""A finished sweep's files: the search (an Optuna study) and the grid write them the same way.

Both go through one sequence: ``trials.csv`` (one row per trial or grid point), ``best.json`` from
the evaluated records (explore.results.summarise), the sparse-vs-dense comparison on equal terms
(explore.compare) with every design's dense twins (explore.twins), the robustness of the verdict
under the assumptions' ranges (explore.robustness), the owners and closure artifacts of the chosen
design (explore.report.owners.attach_owners, which writes ``closure/``), then ``best.json`` itself.
The output directory is checked before anything is written (explore.safety.check_out_dir), and
every file is written atomically.

* :func:`export_study`: a stored study's trials (explore.trials). What the report needs of the
  comparison (the dense study, when the space offers no dense PE; the comparison and robustness
  themselves) is stored in the study, so the report shows what best.json says.
* :func:`run_grid`: evaluates the whole discretised space (explore.grid) and writes the same files.
"""

from __future__ import annotations

from pathlib import Path
from typing import Any

import numpy as np
import optuna
from optuna.trial import TrialState

from explore.compare import (
    build_comparison,
    is_sparse,
    needs_dense_substudy,
    storable_substudy,
    stored_substudy,
    study_twin_metrics,
)
from explore.config import SweepConfig, config_fingerprint
from explore.grid import GridResults, evaluate_grid
from explore.report.owners import attach_owners
from explore.results import DEFAULT_EVALUATOR, Evaluator, summarise, write_json
from explore.robustness import robustness
from explore.safety import check_out_dir
from explore.sampler import trial_side
from explore.settle import SETTLE_ATTR
from explore.space import design_key
from explore.trials import (
    EVALUATOR_ATTR,
    SUBSTUDY_ATTR,
    VERDICT_ATTR,
    study_records,
    trial_rows,
    write_trials_csv,
)
from explore.twins import TWIN_METRICS, DensePool, iso_array_point, twin_metrics


def side_trials(study: optuna.Study) -> dict[str, int]:
    """COMPLETE trials of the study per side (explore.sampler.trial_side), duplicates included."""
    out = {"sparse": 0, "dense": 0}
    for t in study.get_trials(deepcopy=False, states=(TrialState.COMPLETE,)):
        s = trial_side(t)
        if s in out:
            out[s] += 1
    return out


def export_study(
    study: optuna.Study,
    cfg: SweepConfig,
    out_dir: Path,
    extra: dict[str, Any] | None = None,
    *,
    compare: bool = True,
) -> dict[str, Any]:
    """Write DIR/trials.csv and DIR/best.json of a study; return the best.json content. With
    ``compare``, best.json carries ``comparison`` (sparse against dense on equal terms) and
    ``robustness``, and every design its dense twins."""
    check_out_dir(out_dir)
    records = study_records(study, cfg)
    best = summarise(records, cfg, extra)
    header, rows = trial_rows(study, cfg)
    if compare:
        twins = study_comparison(study, cfg, records, best)
        _add_twins(best, twins)
        header, rows = _twin_columns(header, rows, twins, cfg)
    write_trials_csv(out_dir / "trials.csv", header, rows)
    return _finish(best, cfg, records, out_dir, study.user_attrs.get(EVALUATOR_ATTR))


def study_comparison(
    study: optuna.Study, cfg: SweepConfig, records: list[dict[str, Any]], best: dict[str, Any]
) -> dict[str, dict[str, float]]:
    """Put best.json's ``comparison`` and ``robustness`` into ``best`` for a stored study, with the
    evaluator the study used, and store them (and the dense study, when one was run) in the study;
    return every record's twin metrics (design key -> metrics)."""
    ev = Evaluator(study.user_attrs.get(EVALUATOR_ATTR) or DEFAULT_EVALUATOR, cfg, where=None)
    sides = side_trials(study)
    sub = (
        stored_substudy(study.user_attrs.get(SUBSTUDY_ATTR), cfg, sides["sparse"])
        if needs_dense_substudy(cfg)
        else None
    )
    chosen = best.get("best") if best.get("feasible") else None
    sampler = str((study.user_attrs.get("sweep") or {}).get("sampler", cfg.study.sampler))
    comp, sub_new = build_comparison(
        records, cfg, chosen, ev, sides, sampler, substudy=sub, settled=study.user_attrs.get(SETTLE_ATTR)
    )
    if sub is None and sub_new is not None:
        study.set_user_attr(SUBSTUDY_ATTR, storable_substudy(cfg, sides["sparse"], sub_new))
    pool = records + list(sub_new or [])
    best["comparison"] = comp
    best["robustness"] = robustness(pool, cfg, ev)
    study.set_user_attr(
        VERDICT_ATTR,
        {
            "n_records": len(records),
            "fingerprint": config_fingerprint(cfg),
            "comparison": comp,
            "robustness": best["robustness"],
        },
    )
    return study_twin_metrics(records, pool, ev.evaluate_many) if hasattr(ev.mod, "evaluate_batch") else {}


def _add_twins(best: dict[str, Any], twins: dict[str, dict[str, float]]) -> None:
    """The twin metrics of best.json's designs (best / closest and the Pareto set)."""
    for d in [best.get("best"), best.get("closest"), *best.get("pareto", [])]:
        if d is not None and design_key(d["params"]) in twins:
            d["metrics"] = {**d["metrics"], **twins[design_key(d["params"])]}


def _twin_columns(
    header: list[str], rows: list[dict[str, Any]], twins: dict[str, dict[str, float]], cfg: SweepConfig
) -> tuple[list[str], list[dict[str, Any]]]:
    """trials.csv with the twin metrics of each COMPLETE trial's design (after the other metrics)."""
    if not twins:
        return header, rows
    at = header.index("retry_of")
    header = header[:at] + [k for k in TWIN_METRICS if k not in header] + header[at:]
    axes = list(cfg.space.active_axes())
    for r in rows:
        t = twins.get(design_key({a: r[a] for a in axes})) if r.get("state") == "COMPLETE" else None
        for k in TWIN_METRICS:
            r[k] = "" if t is None else t[k]
    return header, rows


def run_grid(
    cfg: SweepConfig,
    out_dir: Path,
    *,
    progress: bool = False,
    evaluator: str = DEFAULT_EVALUATOR,
    sampler: str = "exhaustive",
) -> dict[str, Any]:
    """Evaluate the grid; write DIR/trials.csv and DIR/best.json; return best.json's content."""
    ev = Evaluator(evaluator, cfg, where="--grid")
    grid = GridResults(cfg, *evaluate_grid(cfg, ev.ctx, progress=progress, evaluator=evaluator))
    check_out_dir(out_dir)
    twins = _grid_twins(grid, ev)
    grid.metrics.update(twins)
    for r in grid.records:
        r["metrics"].update({k: float(twins[k][r["number"]]) for k in twins})
    write_trials_csv(out_dir / "trials.csv", *grid.trial_rows())
    best = grid.summary()
    chosen = best.get("best") if best.get("feasible") else None
    sparse = np.array([is_sparse({"sparsity": s}) for s in grid.cols["sparsity"]])
    n_side = {"sparse": int(sparse.sum()), "dense": int((~sparse).sum())}
    # every dense point of the grid is evaluated already: no dense study
    best["comparison"], _ = build_comparison(
        grid.records, cfg, chosen, ev, n_side, sampler, allow_substudy=False
    )
    best["robustness"] = robustness(grid.records, cfg, ev)
    return _finish(best, cfg, grid.every_point(), out_dir, evaluator)


def _grid_twins(grid: GridResults, ev: Evaluator) -> dict[str, np.ndarray]:
    """TWIN_METRICS of every grid point: the iso-array twin is a grid point when the space offers its
    dense PE (else evaluated), the iso-area twin is searched among the grid's feasible dense points."""
    cols, P = grid.cols, grid.size
    keys = list(cols)
    index = {design_key({a: _py(cols[a][i]) for a in keys}): i for i in range(P)}
    twin_keys = [design_key(iso_array_point({a: _py(cols[a][i]) for a in keys})) for i in range(P)]
    twin_idx = np.array([index.get(k, -1) for k in twin_keys], dtype=np.int64)
    iso = {
        k: np.asarray(grid.metrics[k], float)[twin_idx]
        for k in ("latency_ms", "perf_per_watt", "area_mm2", "energy_per_inference_mj")
    }
    todo = np.flatnonzero(twin_idx < 0)
    if len(todo):
        missing = {twin_keys[i]: iso_array_point({a: _py(cols[a][i]) for a in keys}) for i in todo}
        got = dict(zip(missing, ev.evaluate_many(list(missing.values())), strict=True))
        for i in todo:
            for k in iso:
                iso[k][i] = float(got[twin_keys[i]][k])
    pool = DensePool(grid.records, lambda p: not is_sparse(p))
    return twin_metrics(grid.metrics, iso, pool)


def _py(v: Any) -> Any:
    return v.item() if isinstance(v, np.generic) else v


def _finish(
    best: dict[str, Any],
    cfg: SweepConfig,
    records: list[dict[str, Any]],
    out_dir: Path,
    evaluator: str | None,
) -> dict[str, Any]:
    """The owners of the chosen design (and its closure artifacts), then best.json."""
    if records:
        attach_owners(best, cfg, records, out_dir, evaluator)
    write_json(out_dir / "best.json", best)
    return best
