"""A sweep's objective (explore.study runs it): one trial evaluates a design with the evaluator,
stores every metric as a user attribute and each limit as a constraint, reuses the stored result
of a design the study evaluated already, and prunes a trial that starts once the target number
of trials is covered. A failed evaluation is one line naming the design and the error."""

from __future__ import annotations

import math
from collections.abc import Callable
from typing import Any

import optuna
from optuna.study._constrained_optimization import _CONSTRAINTS_KEY
from optuna.trial import TrialState

from explore.config import SweepConfig
from explore.results import constraint_values
from explore.sampler import suggest_point
from explore.space import design_key
from explore.storage import WORKER_ATTR, one_journal_append, set_trial_attrs, worker_tag
from explore.trials import CHARACTERISED_ATTR, DUPLICATE_ATTR, ERROR_ATTR
from hw.errors import InputError
from ppa import characterisation


class StudyObjective:
    """A study's objective that remembers the id of the trial it ran last (``last_trial_id``, None
    before the first): the worker reads the outcome of its own last trial."""

    def __init__(self, run: Callable[[optuna.Trial], Any]):
        self._run = run
        self.last_trial_id: int | None = None

    def __call__(self, trial: optuna.Trial) -> Any:
        self.last_trial_id = trial._trial_id
        return self._run(trial)


def make_objective(cfg: SweepConfig, ctx: Any, evaluate: Callable, target: int) -> StudyObjective:
    names = cfg.objectives.names()
    live = (TrialState.COMPLETE, TrialState.RUNNING, TrialState.WAITING)
    known: dict[str, Any] = {}  # design key -> (number, attrs, constraints) of its first evaluation
    scanned: set[int] = set()

    def objective(trial: optuna.Trial) -> Any:
        storage = trial.study._storage
        storage.set_trial_system_attr(trial._trial_id, WORKER_ATTR, worker_tag())
        trials = trial.study.get_trials(
            deepcopy=False
        )  # read once: the surplus check and the duplicate check
        ahead = sum(1 for t in trials if t.state in live and t.number < trial.number)
        if ahead >= target:
            trial.set_user_attr("surplus", True)
            raise optuna.TrialPruned("target number of trials already covered by other workers")
        with one_journal_append(storage):  # the parameters in one journal append (one fsync)
            point = suggest_point(trial, cfg)
        prior = _evaluated(trials, point, known, scanned)
        if prior is not None:  # the design is in the study already: reuse its stored result
            number, prior_attrs, prior_cons = prior
            _write_attrs(storage, trial, {**prior_attrs, DUPLICATE_ATTR: number}, prior_cons)
            return _objective_values(prior_attrs)
        mark = len(characterisation.computed())
        try:
            metrics = evaluate(point, ctx)
            cons = constraint_values(cfg, metrics)
            _check_objectives(metrics, names)
        except (KeyboardInterrupt, SystemExit):
            raise
        except Exception as exc:  # one line in the trial and, after MAX_CONSECUTIVE_FAILURES, for the user
            line = _error_line(exc, point, getattr(cfg, "source", ""))
            storage.set_trial_system_attr(trial._trial_id, ERROR_ATTR, line)
            raise TrialFailed(line) from None
        finally:
            made = characterisation.computed(mark)
            if made:  # the progress line says so (run_study)
                storage.set_trial_system_attr(
                    trial._trial_id, CHARACTERISED_ATTR, characterised_summary(made)
                )
        attrs: dict[str, Any] = {
            k: v for k, v in point.items() if k not in trial.params
        }  # axes fixed to one value
        for key in sorted(metrics):
            value = metrics[key]
            if isinstance(value, float) and not math.isfinite(value):
                value = str(value)
            attrs[key] = value
        # optuna-dashboard (0.21) shows only the pre-5.0 list form of constraints, so feasibility
        # is also written as user attributes the dashboard can filter on
        violated = sorted(k for k, v in cons.items() if v > 0)
        attrs["feasible"] = not violated
        attrs["violated_limits"] = ",".join(violated)
        _write_attrs(storage, trial, attrs, cons)
        return _objective_values(attrs)

    def _objective_values(attrs: dict[str, Any]):
        values = [float(attrs[n]) for n in names]
        return values[0] if len(values) == 1 else values

    return StudyObjective(objective)


def characterised_summary(made: list[str], shown: int = 3) -> str:
    """What a trial characterised, in one short phrase."""
    uniq = list(dict.fromkeys(made))
    return ", ".join(uniq[:shown]) + (f" and {len(uniq) - shown} more" if len(uniq) > shown else "")


class TrialFailed(Exception):
    """A trial's evaluation raised; the message is one line naming the design and the error."""


#: The models name their parameters by the flags of ``sparsepe ppa``/``simulate``; inside a sweep
#: the user wrote config keys, so a trial's error names those.
_FLAG_TO_KEY = {
    "--t-ambient": "fixed.ambient_c",
    "--theta-ja": "fixed.theta_ja_c_per_w",
    "--cooling": "fixed.cooling",
    "--dram-units": "fixed.dram_units",
    "--sram-banks": "fixed.sram_banks",
    "--acc-bits": "fixed.acc_bits",
    "--liberty": "fixed.liberty",
    "--liberty-node": "fixed.liberty_node",
    "--rows": "space.rows",
    "--cols": "space.cols",
    "--rows/--cols": "space.rows/space.cols",
    "--sram-kb": "space.sram_kb",
    "--clock-mhz": "space.clock_mhz",
    "--node": "space.node_nm",
    "--dataflow": "space.dataflow",
    "--dram": "space.dram",
    "--pipeline": "space.pipeline",
    "--sparsity": "space.sparsity",
    "--dense-path": "space.sparsity",
    "pipeline": "space.pipeline",
    "n:m": "space.sparsity",
}


def _error_line(exc: BaseException, point: dict[str, Any], source: str = "") -> str:
    if isinstance(exc, InputError):
        msg = str(exc).removeprefix(f"{exc.where}: ") if exc.where else str(exc)
        key = _FLAG_TO_KEY.get(exc.where or "", exc.where)
        what = f"{source + ': ' if source and key in _FLAG_TO_KEY.values() else ''}{key + ': ' if key else ''}{msg}"
    else:
        what = f"{type(exc).__name__}: {exc}"
    design = ", ".join(f"{k}={v}" for k, v in point.items())
    return " ".join(f"{what} (design {design})".split())


def _check_objectives(metrics: dict[str, Any], names: list[str]) -> None:
    for n in names:
        v = metrics.get(n)
        if v is None:
            raise InputError(f"the evaluator returned no objective {n!r}")
        if not math.isfinite(float(v)):
            raise InputError(f"objective {n} is {float(v)} (not a finite number)")


def _write_attrs(storage: Any, trial: optuna.Trial, attrs: dict[str, Any], cons: dict[str, float]) -> None:
    # one append (journal) or one transaction (database) for every metric and constraint (see
    # explore.storage.set_trial_attrs); the constraint records are exactly what trial.set_constraint
    # writes
    set_trial_attrs(
        storage, trial._trial_id, attrs, {f"{_CONSTRAINTS_KEY}:{k}": float(v) for k, v in cons.items()}
    )


def _evaluated(
    trials: list[optuna.trial.FrozenTrial], point: dict[str, Any], known: dict[str, Any], scanned: set[int]
) -> tuple[int, dict[str, Any], dict[str, float]] | None:
    """(number, user attributes, constraints) of the first COMPLETE trial of ``trials`` (a study's)
    with the same design as ``point``, or None. ``known``/``scanned`` carry what earlier calls indexed."""
    for t in trials:
        if t.state != TrialState.COMPLETE or t.number in scanned:
            continue
        scanned.add(t.number)
        if DUPLICATE_ATTR in t.user_attrs or not t.constraints:
            continue
        p = {**{k: v for k, v in t.user_attrs.items() if k in point}, **t.params}
        k = design_key({a: p.get(a) for a in point})
        if k not in known or known[k][0] > t.number:
            known[k] = (
                t.number,
                {a: v for a, v in t.user_attrs.items() if a != "surplus"},
                dict(t.constraints),
            )
    return known.get(design_key(point))
