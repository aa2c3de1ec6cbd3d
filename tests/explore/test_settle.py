"""Settling each side after the budget (explore.settle, issue 38 item 3): the neighbourhoods it
evaluates, that it escapes a one-step local optimum with two-step moves and stops when converged,
and that a sweep reports it, stores its trials and queues nothing more on a rerun."""

from __future__ import annotations

import itertools
import json

import numpy as np
import optuna
import pytest
import tomli_w
from optuna.distributions import CategoricalDistribution, IntDistribution

from explore.config import parse_config
from explore.sampler import make_sampler
from explore.settle import VT_ATTR, candidates, settle
from explore.space import design_key
from tests.explore.conftest import FIXED, ONE_POINT

DISTS = {
    "rows": CategoricalDistribution([8, 16, 32]),
    "clock_mhz": IntDistribution(400, 800, step=200),
    "dataflow": CategoricalDistribution(["os", "ws"]),
    "double_buffer": CategoricalDistribution([False, True]),
    "sparsity": CategoricalDistribution(["2:4", "dense"]),
}
BEST = {"rows": 16, "clock_mhz": 600, "dataflow": "os", "sparsity": "2:4"}


def _moves(d: dict) -> int | None:
    """Axes changed from BEST when each is an adjacent step (None: not a neighbour at all); written
    out from the axes, not with explore.sampler.neighbours."""
    if d["sparsity"] != "2:4":
        return None
    n = 0
    for axis, order in (("rows", [8, 16, 32]), ("clock_mhz", [400, 600, 800])):
        gap = abs(order.index(d[axis]) - order.index(BEST[axis]))
        if gap > 1:
            return None
        n += gap
    return n + (d["dataflow"] != "os")  # OS has no double_buffer: a stationary design's is part of the move


def _all_designs() -> list[dict]:
    out = []
    for r, c, df, s in itertools.product([8, 16, 32], [400, 600, 800], ["os", "ws"], ["2:4", "dense"]):
        base = {"rows": r, "clock_mhz": c, "dataflow": df, "sparsity": s}
        out += [base] if df == "os" else [{**base, "double_buffer": b} for b in (False, True)]
    return out


def test_one_step_neighbours_then_two_step_ones_on_the_side():
    ring, one = candidates(BEST, DISTS, frozenset({"2:4"}), set())
    expect_one = {design_key(d) for d in _all_designs() if _moves(d) == 1}
    assert (
        ring == 1 and {design_key(d) for d in one} == expect_one and len(one) == 6
    )  # OS -> WS: both buffers
    tried = expect_one | {design_key(BEST)}
    ring, two = candidates(BEST, DISTS, frozenset({"2:4"}), tried)
    expect_two = {design_key(d) for d in _all_designs() if _moves(d) == 2}
    assert ring == 2 and {design_key(d) for d in two} == expect_two and len(two) == len(expect_two) == 12
    assert candidates(BEST, DISTS, frozenset({"2:4"}), tried | expect_two) == (0, [])


def _toy_study(space_cfg):
    """Two ordinal axes and both sides; perf is best at (6, 6) for sparse and (3, 3) for dense, and
    a move off the diagonal costs 100 (so the diagonal start (1, 1) is a one-step local optimum)."""
    study = optuna.create_study(direction="maximize", sampler=make_sampler("tpe", 0, 1, space_cfg.space))
    goal = {"2:4": 6, "dense": 3}

    def objective(trial):
        a, b = trial.suggest_int("a", 0, 9), trial.suggest_int("b", 0, 9)
        s = trial.suggest_categorical("sparsity", ["2:4", "dense"])
        trial.set_constraint("limit", 0.0 if (a, b) != (0, 9) else 1.0)
        return -100.0 * (a - b) ** 2 - (a + b - 2 * goal[s]) ** 2

    optuna.logging.set_verbosity(optuna.logging.WARNING)
    return study, objective


def _toy_cfg():
    return parse_config(
        {
            "study": {"name": "toy", "seed": 0, "trials": 2},
            "space": {**ONE_POINT},
            "fixed": FIXED,
            "workload": [{"name": "resnet50", "weight": 1.0}],
        }
    )


def _started_toy():
    """The toy study with one trial per side at the diagonal start (1, 1)."""
    cfg = _toy_cfg()
    study, objective = _toy_study(cfg)
    for s in ("2:4", "dense"):
        study.enqueue_trial({"a": 1, "b": 1, "sparsity": s})
    study.optimize(objective, n_trials=2)
    return cfg, study, objective


def test_settle_escapes_a_one_step_optimum_and_converges_on_each_side():
    cfg, study, objective = _started_toy()
    info = settle(study, cfg.space, lambda n: study.optimize(objective, n_trials=n), cap=1000)
    best = {
        s: max((t for t in study.trials if t.params["sparsity"] == s), key=lambda t: t.value).params
        for s in ("2:4", "dense")
    }
    assert (best["2:4"]["a"], best["2:4"]["b"]) == (6, 6) and (best["dense"]["a"], best["dense"]["b"]) == (
        3,
        3,
    )
    assert (
        info["converged"]
        and info["sides"]["sparse"]["after"] == 0.0
        and info["sides"]["dense"]["after"] == 0.0
    )
    assert info["sides"]["sparse"]["before"] == -100.0 and info["sides"]["dense"]["before"] == -16.0
    keys = [design_key(t.params) for t in study.trials]
    assert len(keys) == len(set(keys))  # no design is evaluated twice
    assert info["extra_trials"] == len(study.trials) - 2 < 200  # a local search, not the 200-point grid
    # nothing left: a second call queues nothing
    again = settle(study, cfg.space, lambda n: study.optimize(objective, n_trials=n), cap=1000)
    assert again["extra_trials"] == 0 and again["converged"]


@pytest.mark.parametrize("seed", range(20))
def test_a_second_settle_queues_nothing_when_flavours_split_the_landscape(seed):
    """Random landscapes whose designs each get a threshold-voltage flavour (the free walks from each
    flavour's best may leave it): settling again starts from the kinds' bests as they ended, and
    finds every neighbourhood tried. A walk that was restarted only when the new best of its kind
    beat the walk's own point left such starts unexplored (7 of these 20 seeds queued more trials)."""
    rng = np.random.default_rng(seed)
    value, flavour = rng.normal(size=(6, 6, 2)), rng.choice([1.0, 0.79, 0.66], size=(6, 6))
    cfg = _toy_cfg()
    optuna.logging.set_verbosity(optuna.logging.WARNING)
    study = optuna.create_study(direction="maximize", sampler=optuna.samplers.RandomSampler(seed=seed))

    def objective(trial):
        a, b = trial.suggest_int("a", 0, 5), trial.suggest_int("b", 0, 5)
        s = trial.suggest_categorical("sparsity", ["2:4", "dense"])
        trial.set_constraint("limit", 0.0)
        trial.set_user_attr(VT_ATTR, float(flavour[a, b]))
        return float(value[a, b, int(s == "dense")])

    def run(n):
        study.optimize(objective, n_trials=n)

    run(8)
    first = settle(study, cfg.space, run, cap=1000)
    assert first["converged"]
    again = settle(study, cfg.space, run, cap=1000)
    assert again["extra_trials"] == 0 and again["converged"]


def test_the_cap_bounds_it_and_says_it_did_not_converge():
    cfg, study, objective = _started_toy()
    info = settle(study, cfg.space, lambda n: study.optimize(objective, n_trials=n), cap=10)
    assert info["extra_trials"] == 10 and not info["converged"]


@pytest.mark.yosys
def test_a_sweep_settles_reports_it_and_a_rerun_queues_nothing(tmp_path, run_cli):
    space = {**ONE_POINT, "clock_mhz": {"min": 400, "max": 1400, "step": 100}, "rows": [8, 16]}
    cfg = tmp_path / "st.toml"
    cfg.write_text(
        tomli_w.dumps(
            {
                "study": {"name": "st", "seed": 0, "trials": 10},
                "space": space,
                "fixed": FIXED,
                "workload": [{"name": "resnet50", "weight": 1.0}],
                "limits": {"max_stall_fraction": 0.5, "max_tj_c": 85.0},
            }
        )
    )
    out = tmp_path / "out"
    p = run_cli(["sweep", str(cfg), "--out", str(out)], cwd=tmp_path)  # 44 points > 4 x 10: searched
    assert p.returncode == 0, p.stderr[-2000:]
    text = " ".join((p.stdout + p.stderr).split())
    mode = json.loads((out / "best.json").read_text())["search_mode"]
    assert mode["mode"] == "search" and mode["settle"]["converged"] and mode["settle"]["extra_trials"] > 0
    assert f"settled: +{mode['settle']['extra_trials']} trials" in text
    best = json.loads((out / "best.json").read_text())["comparison"]
    assert best["search"]["sparse"]["settle_trials"] == mode["settle"]["sides"]["sparse"]["queued"]
    assert "each side was settled" in " ".join(best["notes"])
    # the settled bests are each side's exhaustive bests (--exhaustive: every point of both sides)
    ex = tmp_path / "ex"
    q = run_cli(["sweep", str(cfg), "--exhaustive", "--out", str(ex)], cwd=tmp_path)
    assert q.returncode == 0, q.stderr[-2000:]
    exact = json.loads((ex / "best.json").read_text())["comparison"]
    for side in ("best_sparse", "best_dense"):
        assert best[side]["design"] == exact[side]["design"], side
    n_before = len(open(out / "trials.csv").read().splitlines())
    p = run_cli(["sweep", str(cfg), "--out", str(out)], cwd=tmp_path)  # resume: settled already
    assert p.returncode == 0, p.stderr[-2000:]
    assert len(open(out / "trials.csv").read().splitlines()) == n_before


def test_each_kind_of_design_gets_its_own_walk():
    """The best trial is a two-step optimum of its kind (y); the better optimum is in kind x, more
    than two steps away: the walk from the best of kind x finds it."""
    cfg = _toy_cfg()
    study = optuna.create_study(direction="maximize", sampler=make_sampler("tpe", 0, 1, cfg.space))

    def objective(trial):
        a, b = trial.suggest_int("a", 0, 9), trial.suggest_int("b", 0, 9)
        kind = trial.suggest_categorical("kind", ["x", "y"])
        trial.suggest_categorical("sparsity", ["2:4", "dense"])
        goal, offset = (8, 0.0) if kind == "x" else (1, -5.0)
        return -100.0 * (a - b) ** 2 - (a + b - 2 * goal) ** 2 + offset

    for s in ("2:4", "dense"):
        study.enqueue_trial({"a": 1, "b": 1, "kind": "y", "sparsity": s})
        study.enqueue_trial({"a": 0, "b": 0, "kind": "x", "sparsity": s})
    study.optimize(objective, n_trials=4)
    info = settle(study, cfg.space, lambda n: study.optimize(objective, n_trials=n), cap=2000)
    assert info["converged"] and info["walks"] >= 4  # per side: the best (kind y) and the best of kind x
    for side in ("sparse", "dense"):
        assert info["sides"][side]["before"] == -5.0 and info["sides"][side]["after"] == 0.0
