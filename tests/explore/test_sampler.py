"""explore.sampler: TPE with a one-step neighbourhood search around the incumbent."""

import optuna
import pytest
from optuna.distributions import CategoricalDistribution, FloatDistribution, IntDistribution

from explore.sampler import IncumbentSearchSampler, make_sampler, neighbours

optuna.logging.set_verbosity(optuna.logging.WARNING)


def test_neighbours_ordinal_nominal_and_stepped():
    dists = {
        "rows": CategoricalDistribution([64, 8, 32, 16]),
        "dataflow": CategoricalDistribution(["ws", "os", "is"]),
        "clock_mhz": IntDistribution(200, 2000, step=200),
        "v": FloatDistribution(0.5, 1.0, step=0.25),
        "x": FloatDistribution(0.0, 1.0),
    }
    p = {"rows": 16, "dataflow": "os", "clock_mhz": 2000, "v": 0.5, "x": 0.3}
    got = neighbours(p, dists)
    changed = sorted((k, q[k]) for q in got for k in q if q[k] != p[k])
    # rows is ordinal by value (8 and 32 are adjacent to 16 whatever the config order); dataflow is
    # nominal (every other choice); the clock is at its top (one step down only); x is continuous
    assert changed == [
        ("clock_mhz", 1800),
        ("dataflow", "is"),
        ("dataflow", "ws"),
        ("rows", 8),
        ("rows", 32),
        ("v", 0.75),
    ]
    assert all(sum(q[k] != p[k] for k in p) == 1 for q in got)


def _grid_objective(trial):
    # a separable, unimodal landscape on a 6 x 6 x 6 x 2 grid with its maximum at (32, 3, 4, "b")
    a = trial.suggest_categorical("a", [1, 2, 4, 8, 16, 32])
    b = trial.suggest_int("b", 0, 5)
    c = trial.suggest_categorical("c", [0, 1, 2, 3, 4, 5])
    d = trial.suggest_categorical("d", ["a", "b"])
    trial.set_constraint("slice", 0.0 if b != 1 else 1.0)  # one infeasible slice
    return -abs(a - 32) / 32 - (b - 3) ** 2 - (c - 4) ** 2 - (0 if d == "b" else 0.5)


def _run(sampler, n):
    study = optuna.create_study(direction="maximize", sampler=sampler)
    study.optimize(_grid_objective, n_trials=n)
    return study


def test_neighbour_turns_are_untried_one_step_moves_of_the_incumbent():
    base = optuna.samplers.RandomSampler(seed=3)
    s = IncumbentSearchSampler(base, seed=3, startup=5, every=2)
    study = _run(s, 5)
    for _ in range(10):
        number = len(study.trials)
        prop = s.proposal(study, number) if number % 2 == 1 else None
        study.optimize(_grid_objective, n_trials=1)
        t = study.trials[-1]
        if prop is None:
            continue
        assert t.params == prop
        done = study.trials[:-1]
        feas = [x for x in done if x.state.name == "COMPLETE" and all(v <= 0 for v in x.constraints.values())]
        inc = max(feas, key=lambda x: (x.value, -x.number))
        assert sum(inc.params[k] != t.params[k] for k in t.params) == 1
        assert all(x.params != t.params for x in done)


def test_reproducible_from_seed_and_reaches_the_grid_optimum():
    a = _run(make_sampler("tpe", 7, 1), 60)
    b = _run(make_sampler("tpe", 7, 1), 60)
    assert [t.params for t in a.trials] == [t.params for t in b.trials]
    # the neighbourhood search climbs the unimodal landscape to its maximum (0.0) in 60 trials for
    # every seed (plain multivariate TPE missed it with seed 2: -0.5, the nominal axis left at "a")
    assert a.best_value == pytest.approx(0.0)
    for seed in range(5):
        assert _run(make_sampler("tpe", seed, 1), 60).best_value == pytest.approx(0.0), seed
