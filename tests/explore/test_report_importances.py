"""The report's parameter-importance step (fANOVA via optuna.importance): it emits no warning of
its own, so none is filtered and a DeprecationWarning/FutureWarning raised under it still surfaces."""

from __future__ import annotations

import tomllib
import warnings

import optuna
import pytest

from explore.config import parse_config
from explore.report.data import param_importances
from tests.explore.test_cli_sweep import CONFIG


def _study(directions, n=16):
    """rows dominates the target by construction (x10 per step), clock_mhz adds < 2, node_nm nothing."""
    study = optuna.create_study(directions=directions, sampler=optuna.samplers.RandomSampler(seed=0))

    def objective(t):
        rows = t.suggest_categorical("rows", [8, 16, 32])
        clock = t.suggest_int("clock_mhz", 200, 2000, step=200)
        t.suggest_categorical("node_nm", [16, 7])
        t.suggest_categorical("pipeline", [1])  # a single value: left out of the estimate
        v = 10.0 * rows + clock / 1000.0
        return (v, 1.0 / v) if len(directions) > 1 else v

    optuna.logging.set_verbosity(optuna.logging.WARNING)
    study.optimize(objective, n_trials=n)
    return study


def _cfg(secondary):
    data = tomllib.loads(CONFIG)
    if secondary:
        data["objectives"]["secondary"] = secondary
    return parse_config(data, source="test")


@pytest.mark.parametrize(
    "directions,secondary",
    [(["maximize"], []), (["maximize", "minimize"], ["power_w"])],
    ids=["single", "multi"],
)
def test_importances_emit_no_warning(directions, secondary):
    study = _study(directions)
    with warnings.catch_warnings():
        warnings.simplefilter("error")  # any warning at all fails the test
        imp, note = param_importances(study, _cfg(secondary))
    assert imp is not None, note
    assert set(imp) == {"rows", "clock_mhz", "node_nm"} and max(imp, key=imp.get) == "rows"
    assert imp["rows"] > 0.8 and sum(imp.values()) == pytest.approx(1.0)
    assert "16 finished trials" in note


def test_constant_target_is_a_note_not_a_warning():
    study = optuna.create_study(sampler=optuna.samplers.RandomSampler(seed=0))
    study.optimize(lambda t: 0.0 * t.suggest_categorical("rows", [8, 16, 32]), n_trials=6)
    with warnings.catch_warnings():
        warnings.simplefilter("error")
        imp, note = param_importances(study, _cfg([]))
    assert imp is None and "could not be estimated" in note and "zero total variance" in note


def test_deprecation_warning_under_the_step_surfaces(monkeypatch):
    real = optuna.importance.FanovaImportanceEvaluator.evaluate

    def evaluate(self, *args, **kwargs):
        warnings.warn("old API of ours", DeprecationWarning, stacklevel=1)
        warnings.warn("changing API of ours", FutureWarning, stacklevel=1)
        return real(self, *args, **kwargs)

    monkeypatch.setattr(optuna.importance.FanovaImportanceEvaluator, "evaluate", evaluate)
    study = _study(["maximize"], n=8)
    with warnings.catch_warnings(record=True) as rec:
        warnings.simplefilter("always")
        imp, _ = param_importances(study, _cfg([]))
    assert imp is not None
    assert sorted((r.category.__name__, str(r.message)) for r in rec) == [
        ("DeprecationWarning", "old API of ours"),
        ("FutureWarning", "changing API of ours"),
    ]
