"""What a report is made of: the stored study and its config.

:func:`load_study_data` reads a study back from its storage (journal file, SQLite or PostgreSQL)
without writing to it. The config comes from the study's user attribute ``config`` (stored by the
sweep) or from an explicit config file whose fingerprint must match the study's. The records and
the best design come from the same functions that write ``best.json`` (explore.trials.study_records,
explore.results.summarise), so the report and ``best.json`` agree by construction.

Designs are re-evaluated with :class:`explore.results.Evaluator` (the evaluator the study used):
the flat metrics and, where the evaluator provides it, the per-layer and per-component detail
behind them (:class:`explore.results.Detail`).
"""

from __future__ import annotations

from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import optuna
from optuna.trial import TrialState

from explore.config import SweepConfig, config_fingerprint, load_config, parse_config
from explore.results import DEFAULT_EVALUATOR, stored_value, study_constraint_names, summarise
from explore.storage import open_storage, redact, resolve_storage
from explore.trials import CONFIG_ATTR, EVALUATOR_ATTR, FINGERPRINT_ATTR, SWEEP_ATTR, study_records
from hw.errors import InputError

#: Trees of the fANOVA random forest. Optuna's default is 64; on the 1000-trial study of
#: bench/bench_report.py (examples/default.toml) 16 trees took 1.3 s instead of 7.0 s, kept the
#: ranking of all 9 parameters and moved no importance by more than 0.02.
FANOVA_TREES = 16


@dataclass
class StudyData:
    study_name: str
    storage_url: str
    storage_kind: str
    cfg: SweepConfig
    config_json: dict
    fingerprint: str
    objectives: list[str]
    directions: list[str]
    records: list[dict[str, Any]]
    best: dict[str, Any]
    state_counts: dict[str, int]
    user_attrs: dict[str, Any]
    evaluator: str
    constraint_names: list[str]
    importances: dict[str, float] | None = None
    importance_note: str = ""
    sweep: dict[str, Any] = field(default_factory=dict)

    @property
    def feasible_records(self) -> list[dict[str, Any]]:
        return [r for r in self.records if r["feasible"]]

    def point_of(self, rec: dict[str, Any]) -> dict[str, Any]:
        return dict(rec["params"])


def load_study_data(
    storage_url: str,
    study_name: str,
    *,
    config: str | Path | SweepConfig | None = None,
    evaluator: str | None = None,
) -> StudyData:
    spec = resolve_storage(storage_url, Path("."))
    storage = open_storage(spec, create=False)
    try:
        study = optuna.load_study(study_name=study_name, storage=storage)
    except KeyError:
        names = [
            s.study_name for s in optuna.get_all_study_summaries(storage=storage, include_best_trial=False)
        ]
        raise InputError(
            f"no study named {study_name!r} in this storage (studies: {', '.join(names) or 'none'})",
            where="--study",
        ) from None
    attrs = dict(study.user_attrs)
    cfg = _study_config(attrs, config, study_name)
    fp = config_fingerprint(cfg)
    stored_fp = attrs.get(FINGERPRINT_ATTR)
    if stored_fp is not None and stored_fp != fp:
        raise InputError(
            "the config does not match the one this study was created from (fingerprint differs)",
            where="--config" if config is not None else f"study {study_name!r}",
        )
    records = study_records(study, cfg)
    for r in records:
        r["metrics"] = {k: stored_value(v) for k, v in r["metrics"].items()}
        r["feasible"] = all(v <= 0 for v in r["constraints"].values())
    best = summarise(records, cfg, extra={"study": study_name})
    counts: dict[str, int] = {}
    for t in study.get_trials(deepcopy=False):
        counts[t.state.name] = counts.get(t.state.name, 0) + 1
    ev = evaluator or attrs.get(EVALUATOR_ATTR) or DEFAULT_EVALUATOR
    cnames = study_constraint_names(cfg, [r["constraints"] for r in records])
    data = StudyData(
        study_name=study_name,
        storage_url=redact(spec.url),
        storage_kind=spec.kind,
        cfg=cfg,  # no password in a report
        config_json=cfg.model_dump(mode="json", exclude={"source"}),
        fingerprint=fp,
        objectives=cfg.objectives.names(),
        directions=cfg.objectives.directions(),
        records=records,
        best=best,
        state_counts=counts,
        user_attrs=attrs,
        evaluator=ev,
        constraint_names=cnames,
        sweep=dict(attrs.get(SWEEP_ATTR) or {}),
    )
    data.importances, data.importance_note = param_importances(study, cfg)
    return data


def _study_config(
    attrs: dict[str, Any], config: str | Path | SweepConfig | None, study_name: str
) -> SweepConfig:
    if isinstance(config, SweepConfig):
        return config
    if config is not None:
        return load_config(config)
    stored = attrs.get(CONFIG_ATTR)
    if stored is None:
        raise InputError(
            "the study does not hold its config (created by an older sweep); give it with --config FILE",
            where=f"study {study_name!r}",
        )
    src = attrs.get("config_source") or f"study {study_name!r} (stored config)"
    return parse_config(dict(stored), source=str(src))


def param_importances(study: optuna.Study, cfg: SweepConfig) -> tuple[dict[str, float] | None, str]:
    """optuna.importance.get_param_importances on the primary objective, guarded: it needs at least
    two COMPLETE trials and a parameter that took more than one value."""
    trials = study.get_trials(deepcopy=False, states=(TrialState.COMPLETE,))
    seen: dict[str, set[str]] = {}
    for t in trials:
        for k, v in t.params.items():
            seen.setdefault(k, set()).add(repr(v))
    varied = sorted(k for k, vals in seen.items() if len(vals) > 1)
    if len(trials) < 4:
        return None, f"parameter importances need at least 4 finished trials; the study has {len(trials)}"
    if not varied:
        return None, "every searched parameter took a single value: no importance to estimate"
    # No warning filter here: with optuna 5.0 / scikit-learn, fANOVA with normalize=True emits no
    # warning (measured on real sweeps, single- and multi-objective, constant, inf and nan targets;
    # tests/explore/test_report_importances.py pins it), so any warning that appears is news.
    evaluator = optuna.importance.FanovaImportanceEvaluator(n_trees=FANOVA_TREES, seed=0)
    target = None
    if len(cfg.objectives.names()) > 1:

        def target(t):  # noqa: E306 - the primary objective of a multi-objective study
            return t.values[0]

    try:
        imp = optuna.importance.get_param_importances(
            study, evaluator=evaluator, params=varied, target=target, normalize=True
        )
    except (RuntimeError, ValueError) as exc:
        return None, f"parameter importances could not be estimated: {exc}"
    return {k: float(v) for k, v in imp.items()}, (
        f"fANOVA (optuna.importance, {FANOVA_TREES} trees, seed 0) on {cfg.objectives.primary} "
        f"over {len(trials)} finished trials; "
        f"parameters with a single value are left out"
    )
