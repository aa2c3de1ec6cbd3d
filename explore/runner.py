"""A finished sweep's files: the search (an Optuna study) and the grid write them the same way.

Both go through one sequence: ``trials.csv`` (one row per trial or grid point), ``best.json`` from
the evaluated records (explore.results.summarise), the sparse-vs-dense comparison on equal terms
(explore.compare), the owners and closure artifacts of the chosen design
(explore.report.owners.attach_owners, which writes ``closure/``), then ``best.json`` itself. The
output directory is checked before anything is written (explore.safety.check_out_dir), and every
file is written atomically.

* :func:`export_study`: a stored study's trials (explore.trials). Its dense sub-study, when the
  comparison needs one, is stored in the study so the report shows the same comparison.
* :func:`run_grid`: evaluates the whole discretised space (explore.grid) and writes the same files.
"""

from __future__ import annotations

from pathlib import Path
from typing import Any

import optuna

from explore.compare import build_comparison, storable_substudy, stored_substudy
from explore.config import SweepConfig
from explore.grid import GridResults, evaluate_grid
from explore.report.owners import attach_owners
from explore.results import DEFAULT_EVALUATOR, Evaluator, summarise, write_json
from explore.safety import check_out_dir
from explore.trials import EVALUATOR_ATTR, SUBSTUDY_ATTR, study_records, trial_rows, write_trials_csv


def export_study(study: optuna.Study, cfg: SweepConfig, out_dir: Path, extra: dict[str, Any] | None = None, *,
                 compare: bool = True) -> dict[str, Any]:
    """Write DIR/trials.csv and DIR/best.json of a study; return the best.json content. With
    ``compare``, best.json carries ``comparison``: sparse against dense on equal terms."""
    check_out_dir(out_dir)
    write_trials_csv(out_dir / "trials.csv", *trial_rows(study, cfg))
    records = study_records(study, cfg)
    best = summarise(records, cfg, extra)
    if compare:
        best["comparison"] = study_comparison(study, cfg, records, best)
    return _finish(best, cfg, records, out_dir, study.user_attrs.get(EVALUATOR_ATTR))


def study_comparison(study: optuna.Study, cfg: SweepConfig, records: list[dict[str, Any]], best: dict[str, Any]
                     ) -> dict[str, Any]:
    """best.json's ``comparison`` (explore.compare) for a stored study, with the evaluator the study
    used. The dense sub-study, when one is needed, is read back from the study or run and stored."""
    ev = Evaluator(study.user_attrs.get(EVALUATOR_ATTR) or DEFAULT_EVALUATOR, cfg, where=None)
    n = len(records)
    sub = stored_substudy(study.user_attrs.get(SUBSTUDY_ATTR), cfg, n)
    chosen = best.get("best") if best.get("feasible") else None
    comp, sub_new = build_comparison(records, cfg, chosen, ev, n, substudy=sub)
    if sub is None and sub_new is not None:
        study.set_user_attr(SUBSTUDY_ATTR, storable_substudy(cfg, n, sub_new))
    return comp


def run_grid(cfg: SweepConfig, out_dir: Path, *, progress: bool = False, evaluator: str = DEFAULT_EVALUATOR
             ) -> dict[str, Any]:
    """Evaluate the grid; write DIR/trials.csv and DIR/best.json; return best.json's content."""
    ev = Evaluator(evaluator, cfg, where="--grid")
    grid = GridResults(cfg, *evaluate_grid(cfg, ev.ctx, progress=progress, evaluator=evaluator))
    check_out_dir(out_dir)
    write_trials_csv(out_dir / "trials.csv", *grid.trial_rows())
    best = grid.summary()
    chosen = best.get("best") if best.get("feasible") else None
    # every dense point of the grid is evaluated already: no dense sub-study
    best["comparison"], _ = build_comparison(grid.records, cfg, chosen, ev, grid.size, allow_substudy=False)
    return _finish(best, cfg, grid.every_point(), out_dir, evaluator)


def _finish(best: dict[str, Any], cfg: SweepConfig, records: list[dict[str, Any]], out_dir: Path,
            evaluator: str | None) -> dict[str, Any]:
    """The owners of the chosen design (and its closure artifacts), then best.json."""
    if records:
        attach_owners(best, cfg, records, out_dir, evaluator)
    write_json(out_dir / "best.json", best)
    return best
