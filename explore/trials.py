"""A stored study read back: the names of what a sweep stores in it, its trials as the rows of
``trials.csv``, and its COMPLETE trials as the records ``best.json`` and the report are computed
from (:func:`explore.results.summarise`).

Study user attributes (written by :func:`explore.study.open_study` and the exports):
``FINGERPRINT_ATTR``, ``MODEL_CODE_ATTR``, ``CONFIG_ATTR``, ``EVALUATOR_ATTR``, ``SWEEP_ATTR``,
``TOOLS_ATTR``, ``SUBSTUDY_ATTR`` and ``VERDICT_ATTR``. Trial attributes: ``DUPLICATE_ATTR`` (user) and
``ERROR_ATTR`` and ``CHARACTERISED_ATTR`` (system).
"""

from __future__ import annotations

import csv
import io
import math
from pathlib import Path
from typing import Any

import optuna
from optuna.trial import TrialState

from explore.config import SweepConfig
from explore.results import study_constraint_names
from explore.safety import write_text

#: Study user attribute holding the fingerprint of the config that created the study.
FINGERPRINT_ATTR = "sparsepe_config_sha256"
#: Study user attribute holding the version of the model code that computed its trials
#: (:func:`explore.provenance.model_code_version`): with the config's fingerprint, the study's fingerprint.
MODEL_CODE_ATTR = "sparsepe_model_code"
#: Study user attribute holding the config (``SweepConfig.model_dump(mode="json")``).
CONFIG_ATTR = "config"
#: Study user attribute naming the evaluator module when it is not the product's.
EVALUATOR_ATTR = "evaluator"
#: Study user attribute with the last run's options (trials, seed, sampler, workers).
SWEEP_ATTR = "sweep"
#: Study user attribute: per host, the tools (Yosys, OpenSTA, Liberty digest) that evaluated trials there.
TOOLS_ATTR = "tools"
#: Study user attribute holding the records of the focused dense sub-study (explore.compare), so
#: the report shows the same comparison as best.json without running it again.
SUBSTUDY_ATTR = "dense_substudy"
#: Study user attribute holding best.json's ``comparison`` and ``robustness`` as the last export
#: computed them (with the record count and config fingerprint they were computed for), so the
#: report states the same verdict without re-costing the designs.
VERDICT_ATTR = "verdict"
#: User attribute of a trial whose design an earlier trial already evaluated: that trial's number.
#: Its metrics are the stored ones (not evaluated again), and records/best.json/reports count the
#: design once.
DUPLICATE_ATTR = "duplicate_of"
#: Trial system attribute holding the one-line error of a FAILED trial.
ERROR_ATTR = "sparsepe:error"
#: Trial system attribute naming what the trial had to characterise itself (synthesise, time,
#: simulate: ppa.characterisation.computed), when the prewarm and the caches did not cover it.
CHARACTERISED_ATTR = "sparsepe:characterised"

_NON_METRIC_ATTRS = {
    "surplus",
    "failed_trial",
    "retry_history",
    "feasible",
    "violated_limits",
    DUPLICATE_ATTR,
}


def _is_feasible(t: optuna.trial.FrozenTrial) -> bool:
    return t.state == TrialState.COMPLETE and all(v <= 0 for v in t.constraints.values())


def trial_rows(study: optuna.Study, cfg: SweepConfig) -> tuple[list[str], list[dict[str, Any]]]:
    """One row per trial (sorted by number): params, objectives, constraints, feasibility, metrics,
    state. No wall-clock columns, so one worker and one seed give the same file every time."""
    trials = sorted(study.get_trials(deepcopy=False), key=lambda t: t.number)
    axes = list(cfg.space.active_axes())
    objectives = cfg.objectives.names()
    constraint_names = study_constraint_names(cfg, [t.constraints for t in trials])
    metric_names = sorted(
        {k for t in trials for k in t.user_attrs} - _NON_METRIC_ATTRS - set(axes) - set(objectives)
    )
    header = (
        ["number", "state"]
        + axes
        + objectives
        + [f"c_{c}" for c in constraint_names]
        + ["feasible"]
        + metric_names
        + ["retry_of", DUPLICATE_ATTR]
        # the one-line error of FAILED trials, a column only when a trial failed
        + (["error"] if any(ERROR_ATTR in t.system_attrs for t in trials) else [])
    )
    rows = []
    for t in trials:
        row: dict[str, Any] = {"number": t.number, "state": t.state.name}
        for a in axes:
            row[a] = t.params[a] if a in t.params else t.user_attrs.get(a, "")
        for o in objectives:
            row[o] = t.user_attrs.get(o, "")
        cons = t.constraints
        for c in constraint_names:
            row[f"c_{c}"] = cons.get(c, "")
        row["feasible"] = int(_is_feasible(t)) if t.state == TrialState.COMPLETE else ""
        for m in metric_names:
            row[m] = t.user_attrs.get(m, "")
        row["retry_of"] = t.system_attrs.get("failed_trial", "")
        row[DUPLICATE_ATTR] = t.user_attrs.get(DUPLICATE_ATTR, "")
        if "error" in header:
            row["error"] = t.system_attrs.get(ERROR_ATTR, "")
        rows.append(row)
    return header, rows


def write_trials_csv(path: Path, header: list[str], rows: list[dict[str, Any]]) -> None:
    """trials.csv, written atomically and never through a symlink (explore.safety.write_text). A
    metric that does not exist for a trial (a NaN or infinite float) is an empty cell, as CSV readers
    (pandas, spreadsheets) take a missing value."""
    f = io.StringIO(newline="")
    w = csv.DictWriter(f, fieldnames=header, lineterminator="\n")
    w.writeheader()
    for r in rows:
        w.writerow({k: "" if isinstance(v, float) and not math.isfinite(v) else v for k, v in r.items()})
    write_text(path, f.getvalue())


def study_records(study: optuna.Study, cfg: SweepConfig) -> list[dict[str, Any]]:
    """The study's COMPLETE trials, each design once (a duplicate trial is left out), as records
    {number, params, metrics, constraints} in trial order."""
    axes = cfg.space.active_axes()
    recs = []
    for t in sorted(study.get_trials(deepcopy=False, states=(TrialState.COMPLETE,)), key=lambda t: t.number):
        if DUPLICATE_ATTR in t.user_attrs:  # the same design as an earlier trial: counted once
            continue
        metrics = {k: v for k, v in t.user_attrs.items() if k not in _NON_METRIC_ATTRS}
        params = {a: t.params[a] if a in t.params else t.user_attrs.get(a) for a in axes}
        recs.append(
            {"number": t.number, "params": params, "metrics": metrics, "constraints": dict(t.constraints)}
        )
    return recs
