"""TPE with a neighbourhood search around the incumbent: the sweep's default sampler.

Design spaces of accelerators are small products of ordered axes (rows, SRAM size, clock...) and
a few nominal ones (dataflow, memory type). TPE finds the good region quickly but, with categorical
axes, has no notion of "the next size up", so it circles the optimum without landing on it
(bench/bench_sweep_efficiency.py: on examples/default.toml the grid optimum is the only point
within 1 %). Local search around the best design found so far is the standard cure (the
"TPE + local refinement" hybrids of DSE tools; pattern search): every ``every``-th trial after the
start-up trials evaluates an untried one-step neighbour of the incumbent instead of TPE's proposal.

- **Incumbent**: the best feasible COMPLETE trial on the first objective (constraints all <= 0;
  Optuna 5's ``FrozenTrial.constraints``), ties to the earliest trial.
- **One-step neighbours**: one axis changed, the others kept. A categorical axis whose choices are
  all numbers (rows, SRAM KB...) is ordinal: its neighbours are the adjacent choices in sorted
  order. Other categorical axes (dataflow, DRAM, sparsity) are nominal: every other choice is a
  neighbour. Int and stepped float axes move by one step; continuous float axes keep their value.
- **Untried**: no trial of the study (any state but FAIL) has those parameters. Candidates are taken
  in an order shuffled by (seed, trial number), so a run reproduces from its seed and concurrent
  workers spread over the neighbourhood (a repeat is still reused, not re-evaluated: explore.study).
- When the incumbent has no untried neighbour (a local optimum for one-step moves) the trial is
  TPE's, as are all trials before ``startup`` COMPLETE trials and all other turns.

:func:`make_sampler` builds the sweep's samplers by name (TPE with this neighbourhood search,
NSGA-II, random), and :func:`suggest_point` asks a trial for one value per axis of the space.

Equal search effort for sparse and dense (:class:`SideBalancedSampler`): when the space offers both
sparse and dense PEs, every trial belongs to one side (its sparsity option), the side with fewer
live trials gets the next one, and each side has its own sampler of the same kind and seed that
sees only that side's trials (its own TPE model, its own start-up trials, its own incumbent and
neighbourhood steps). A study of N trials thus gives each side N/2 (exactly, with one worker;
concurrent workers may tip it by one trial each), and the first start-up designs of the two sides
are the same points but for their PEs (the same random stream).
"""

from __future__ import annotations

import math
import random
import warnings
from typing import Any, Literal, cast

import optuna
from optuna.distributions import BaseDistribution, CategoricalDistribution, FloatDistribution, IntDistribution
from optuna.samplers import BaseSampler
from optuna.trial import FrozenTrial, TrialState

from explore.config import SweepConfig
from explore.space import Space, axis_choices, is_integer_axis, parse_sparsity
from hw.errors import InputError

__all__ = [
    "IncumbentSearchSampler",
    "SideBalancedSampler",
    "neighbours",
    "make_sampler",
    "suggest_point",
    "sparsity_sides",
    "trial_side",
]

#: TPE: random start-up trials before the density model is used (Optuna default 10). Measured on
#: the example spaces with bench/bench_sweep_efficiency.py.
TPE_STARTUP_TRIALS = 10
#: After start-up, every INCUMBENT_EVERY-th trial of the "tpe" sampler evaluates an untried one-step
#: neighbour of the best feasible design (explore.sampler); measured with bench_sweep_efficiency.py.
INCUMBENT_EVERY = 2
#: The sampler name of a sweep that evaluates every point of its discretised space (explore.study.
#: exhaustive_points): each point is an enqueued trial, so both sides get all of theirs.
EXHAUSTIVE = "exhaustive"
#: NSGA-II population size (Optuna's default).
NSGA2_POPULATION = 50

_LIVE = (TrialState.COMPLETE, TrialState.RUNNING, TrialState.WAITING, TrialState.PRUNED)
#: The two sides of the comparison, in the order a tie is broken.
SIDES = ("sparse", "dense")


def _is_number(v: Any) -> bool:
    return isinstance(v, (int, float)) and not isinstance(v, bool)


def _axis_neighbours(value: Any, dist: BaseDistribution) -> list[Any]:
    if isinstance(dist, CategoricalDistribution):
        choices = list(dist.choices)
        if value not in choices:
            return []
        if all(_is_number(c) for c in choices):
            ordered = sorted(cast(list[float], choices))  # all numbers (checked above)
            i = ordered.index(value)
            return [ordered[j] for j in (i - 1, i + 1) if 0 <= j < len(ordered)]
        return [c for c in choices if c != value]
    if isinstance(dist, IntDistribution):
        if dist.log:
            return [v for v in (value // 2, value * 2) if dist.low <= v <= dist.high and v != value]
        return [v for v in (value - dist.step, value + dist.step) if dist.low <= v <= dist.high]
    if isinstance(dist, FloatDistribution) and dist.step is not None:
        out = []
        for v in (value - dist.step, value + dist.step):
            v = round(v, 12)
            if dist.low - 1e-12 <= v <= dist.high + 1e-12:
                out.append(min(max(v, dist.low), dist.high))
        return out
    return []


def neighbours(params: dict[str, Any], distributions: dict[str, BaseDistribution]) -> list[dict[str, Any]]:
    """Every one-step neighbour of ``params`` (module docstring), axis by axis in name order."""
    out = []
    for name in sorted(params):
        for v in _axis_neighbours(params[name], distributions[name]):
            out.append({**params, name: v})
    return out


def _key(params: dict[str, Any]) -> tuple:
    return tuple(sorted((k, repr(v)) for k, v in params.items()))


class IncumbentSearchSampler(BaseSampler):
    """``base`` (TPE) plus, every ``every``-th trial after ``startup`` COMPLETE trials, an untried
    one-step neighbour of the incumbent (module docstring)."""

    def __init__(
        self,
        base: BaseSampler,
        *,
        seed: int | None = None,
        startup: int = 10,
        every: int = 2,
        keep: Any = None,
    ):
        if every < 1:
            raise ValueError("every must be >= 1")
        self._keep = keep  # a predicate on a neighbour's params (the side's PEs only), or None
        self._base = base
        self._feasible: dict[
            int, bool
        ] = {}  # COMPLETE trial number -> meets every constraint (they never change)
        self._keys: dict[int, tuple] = {}  # finished trial number -> its parameters' key
        self._seed = 0 if seed is None else int(seed)
        self._startup = int(startup)
        self._every = int(every)
        self._fixed: dict[int, dict[str, Any]] = {}

    # -- what TPE would do -----------------------------------------------------------------------
    def reseed_rng(self) -> None:
        self._base.reseed_rng()

    def infer_relative_search_space(
        self, study: optuna.Study, trial: FrozenTrial
    ) -> dict[str, BaseDistribution]:
        return self._base.infer_relative_search_space(study, trial)

    def sample_relative(
        self, study: optuna.Study, trial: FrozenTrial, search_space: dict[str, BaseDistribution]
    ) -> dict[str, Any]:
        fixed = self._fixed.get(trial.number)
        if fixed is not None:
            return {k: fixed[k] for k in search_space if k in fixed}
        return self._base.sample_relative(study, trial, search_space)

    def sample_independent(
        self, study: optuna.Study, trial: FrozenTrial, param_name: str, param_distribution: BaseDistribution
    ) -> Any:
        fixed = self._fixed.get(trial.number)
        if fixed is not None and param_name in fixed:
            return fixed[param_name]
        return self._base.sample_independent(study, trial, param_name, param_distribution)

    def after_trial(self, study: optuna.Study, trial: FrozenTrial, state: TrialState, values: Any) -> None:
        self._fixed.pop(trial.number, None)
        self._base.after_trial(study, trial, state, values)

    # -- the neighbourhood turn -------------------------------------------------------------------
    def before_trial(self, study: optuna.Study, trial: FrozenTrial) -> None:
        self._base.before_trial(study, trial)
        # the turn counts this sampler's own trials (under a SideBalancedSampler, the side's), which is
        # the trial number when it samples the whole study
        turn = sum(1 for t in study.get_trials(deepcopy=False) if t.number < trial.number)
        if turn % self._every != self._every - 1:
            return
        proposal = self.proposal(study, trial.number)
        if proposal is not None:
            self._fixed[trial.number] = proposal

    def proposal(self, study: optuna.Study, number: int) -> dict[str, Any] | None:
        """The neighbour this trial evaluates, or None (TPE's turn)."""
        trials = study.get_trials(deepcopy=False)
        complete = [t for t in trials if t.state == TrialState.COMPLETE and t.values is not None]
        if len(complete) < self._startup:
            return None
        sign = 1.0 if study.directions[0] == optuna.study.StudyDirection.MAXIMIZE else -1.0
        best = None
        for t in complete:
            ok = self._feasible.get(t.number)
            if ok is None:
                cons = t.constraints
                ok = self._feasible[t.number] = not (cons and any(c > 0 for c in cons.values()))
            v = t.values[0]
            if not ok or not math.isfinite(v):
                continue
            if best is None or sign * v > sign * best.values[0]:
                best = t
        if best is None:
            return None
        tried = set()
        for t in trials:
            if t.state in _LIVE and t.params:
                k = self._keys.get(t.number)
                if k is None:
                    k = _key(t.params)
                    if t.state in (
                        TrialState.COMPLETE,
                        TrialState.PRUNED,
                    ):  # finished: its parameters are final
                        self._keys[t.number] = k
                tried.add(k)
        cands = [
            c
            for c in neighbours(best.params, best.distributions)
            if _key(c) not in tried and (self._keep is None or self._keep(c))
        ]
        if not cands:
            return None
        random.Random(f"{self._seed}:{number}").shuffle(cands)
        return cands[0]


def sparsity_sides(space: Space) -> dict[str, list[Any]]:
    """The space's sparsity options by side: {"sparse": [...], "dense": [...]} (a side may be empty)."""
    opts = axis_choices(space, "sparsity") or []
    return {
        "sparse": [o for o in opts if parse_sparsity(o)[2]],
        "dense": [o for o in opts if not parse_sparsity(o)[2]],
    }


def trial_side(t: FrozenTrial) -> str | None:
    """The side of a trial: its sparsity's (None before its first parameter is set: a trial takes its
    parameters as its objective starts, so a concurrent worker sees a running trial's side at once)."""
    if "sparsity" in t.params:
        return "sparse" if parse_sparsity(t.params["sparsity"])[2] else "dense"
    return None


class _SideView:
    """A study as one side's sampler sees it: every method of the study, but the trial lists hold only
    that side's trials (those whose sparsity is one of ``options``)."""

    def __init__(self, study: optuna.Study, side: str, options: frozenset):
        self._study, self._side, self._options = study, side, options

    def __getattr__(self, name: str) -> Any:
        return getattr(self._study, name)

    def get_trials(self, deepcopy: bool = True, states: Any = None) -> list[FrozenTrial]:
        opts = self._options
        return [
            t
            for t in self._study.get_trials(deepcopy=deepcopy, states=states)
            if t.params.get("sparsity") in opts
        ]

    def _get_trials(
        self, deepcopy: bool = True, states: Any = None, use_cache: bool = False
    ) -> list[FrozenTrial]:
        opts = self._options
        return [
            t
            for t in self._study._get_trials(deepcopy=deepcopy, states=states, use_cache=use_cache)
            if t.params.get("sparsity") in opts
        ]


def as_study(view: _SideView) -> optuna.Study:
    """The view as the study the side's sampler is given: it forwards every other attribute to it."""
    return cast(optuna.Study, view)


class SideBalancedSampler(BaseSampler):
    """One sampler per side (module docstring): ``make(side)`` builds each (the same kind and seed);
    the side with fewer live trials gets the next trial, and its sparsity is one of that side's options."""

    def __init__(self, make: Any, sides: dict[str, list[Any]]):
        self._sides = {k: list(v) for k, v in sides.items() if v}
        self._options = {k: frozenset(v) for k, v in self._sides.items()}
        self._bases = {side: make(side) for side in self._sides}
        self._side: dict[int, str] = {}  # this sampler's trials in flight -> their side
        self._done: dict[int, str] = {}  # COMPLETE trials -> their side (it never changes)

    def side_of(self, number: int) -> str | None:
        return self._side.get(number)

    def reseed_rng(self) -> None:
        for b in self._bases.values():
            b.reseed_rng()

    def _view(self, study: optuna.Study, number: int) -> tuple[BaseSampler, _SideView]:
        side = self._side.get(number) or SIDES[0]
        return self._bases[side], _SideView(study, side, self._options[side])

    def side(self, t: FrozenTrial) -> str | None:
        """The side of a trial: the one this sampler gave it, else the side whose options hold its sparsity."""
        if t.number in self._side:
            return self._side[t.number]
        v = t.params.get("sparsity")
        return next((k for k, o in self._options.items() if v in o), None)

    def before_trial(self, study: optuna.Study, trial: FrozenTrial) -> None:
        live = (TrialState.COMPLETE, TrialState.RUNNING, TrialState.WAITING)
        counts = dict.fromkeys(self._sides, 0)
        for t in study.get_trials(deepcopy=False, states=live):
            s = self._done.get(t.number)
            if s is None:
                s = self.side(t)
                if t.state == TrialState.COMPLETE and s is not None:
                    self._done[t.number] = s
            if t.number != trial.number and s in counts:
                counts[s] += 1
        fixed = (trial.system_attrs.get("fixed_params") or {}).get("sparsity")
        # an enqueued trial (explore.settle, --exhaustive) belongs to its fixed PE's side
        side = next((k for k, o in self._options.items() if fixed in o), None) if fixed is not None else None
        self._side[trial.number] = side or min(self._sides, key=lambda s: (counts[s], SIDES.index(s)))
        base, view = self._view(study, trial.number)
        base.before_trial(as_study(view), trial)

    def infer_relative_search_space(
        self, study: optuna.Study, trial: FrozenTrial
    ) -> dict[str, BaseDistribution]:
        base, view = self._view(study, trial.number)
        space = dict(base.infer_relative_search_space(as_study(view), trial))
        space.pop("sparsity", None)  # each side draws its own options (sample_independent)
        return space

    def sample_relative(
        self, study: optuna.Study, trial: FrozenTrial, search_space: dict[str, BaseDistribution]
    ) -> dict[str, Any]:
        base, view = self._view(study, trial.number)
        return base.sample_relative(as_study(view), trial, search_space)

    def sample_independent(
        self, study: optuna.Study, trial: FrozenTrial, param_name: str, param_distribution: BaseDistribution
    ) -> Any:
        base, view = self._view(study, trial.number)
        if param_name == "sparsity":
            opts = self._sides[view._side]
            if len(opts) == 1:
                return opts[0]
            param_distribution = CategoricalDistribution(opts)
        return base.sample_independent(as_study(view), trial, param_name, param_distribution)

    def after_trial(self, study: optuna.Study, trial: FrozenTrial, state: TrialState, values: Any) -> None:
        base, view = self._view(study, trial.number)
        self._side.pop(trial.number, None)
        base.after_trial(as_study(view), trial, state, values)


def _base_sampler(name: str, seed: int, keep: Any = None) -> optuna.samplers.BaseSampler:
    if name == "tpe":
        with warnings.catch_warnings():
            warnings.simplefilter("ignore", optuna.exceptions.ExperimentalWarning)
            tpe = optuna.samplers.TPESampler(
                seed=seed, n_startup_trials=TPE_STARTUP_TRIALS, multivariate=True
            )
        # every 2nd trial after start-up: an untried one-step neighbour of the incumbent (explore.sampler)
        return IncumbentSearchSampler(
            tpe, seed=seed, startup=TPE_STARTUP_TRIALS, every=INCUMBENT_EVERY, keep=keep
        )
    if name == "nsga2":
        return optuna.samplers.NSGAIISampler(seed=seed, population_size=NSGA2_POPULATION)
    if name in (
        "random",
        EXHAUSTIVE,
    ):  # exhaustive: every point is enqueued (explore.study); nothing is drawn
        return optuna.samplers.RandomSampler(seed=seed)
    raise InputError(f"unknown sampler {name!r} (tpe, nsga2, random)", where="--sampler")


#: An objective's direction as Optuna's create_study takes it.
Direction = Literal["minimize", "maximize"]


def study_directions(cfg: SweepConfig) -> list[Direction]:
    """The objectives' directions for optuna.create_study (explore.config.OBJECTIVES holds only these two)."""
    return cast(list[Direction], cfg.objectives.directions())


def make_sampler(
    name: str, seed: int, n_objectives: int, space: Space | None = None
) -> optuna.samplers.BaseSampler:
    """The sweep's sampler ``name`` seeded ``seed``; with a ``space`` that offers both sparse and dense
    PEs, one per side under a :class:`SideBalancedSampler` (equal search effort)."""
    seed = int(seed) % 2**32  # numpy's seed range; worker and resume offsets wrap around
    sides = sparsity_sides(space) if space is not None and name != EXHAUSTIVE else {}
    if all(sides.get(s) for s in SIDES):

        def make(side: str) -> optuna.samplers.BaseSampler:
            opts = set(map(str, sides[side]))
            return _base_sampler(name, seed, keep=lambda params: str(params.get("sparsity")) in opts)

        return SideBalancedSampler(make, sides)
    return _base_sampler(name, seed)


def suggest_point(trial: optuna.Trial, cfg: SweepConfig) -> dict[str, Any]:
    """Ask the trial for one value per axis of the space (``double_buffer`` only for a stationary
    dataflow: an OS point is ``false`` without asking, explore.space.double_buffered)."""
    point: dict[str, Any] = {}
    for name in cfg.space.active_axes():
        choices = axis_choices(cfg.space, name)
        if name == "double_buffer" and point.get("dataflow") == "os":
            point[name] = False
            continue
        if choices is not None:
            point[name] = trial.suggest_categorical(name, choices) if len(choices) > 1 else choices[0]
            continue
        r = cfg.space.axis(name)
        if r.min == r.max:
            point[name] = int(r.min) if is_integer_axis(name) else float(r.min)
        elif is_integer_axis(name):
            step = int(r.step) if r.step is not None else 1
            point[name] = trial.suggest_int(name, int(r.min), int(r.max), step=step, log=r.log)
        else:
            point[name] = trial.suggest_float(name, r.min, r.max, step=r.step, log=r.log)
    return point
