"""Settling each side of the verdict: after the trial budget, a local search from each side's best
design until no better design is one or two steps away.

A sampler's budget ends wherever its luck has taken it: on examples/default.toml, 75 trials per
side put the verdict's advantage anywhere between +11.5 % and +18.6 % over ten seeds
(bench/bench_search_balance.py), because one side sometimes stops a few steps short of its optimum.
The cure is the standard polish of DSE tools (pattern search from the incumbent), run per side
until it converges instead of for a fixed number of turns:

1. For each side (its sparsity options; the whole study when it has one side), walks start from
   its best trial (a free walk) and from its best trial with each other value of each nominal axis
   (dataflow, memory type: the structurally different kinds of design, which one- and two-step
   moves cannot cross with the sizes that go with them; such a walk keeps its value, and starts only
   from a feasible design: one walk per side and kind, restarted when another walk finds a better
   design of its kind). The best feasible design on each threshold-voltage flavour of its cells (the
   model's choice per design, ppa.references VT_FLAVOURS: a clock a step above a flavour's reach takes
   the next, leakier cells, which splits the landscape alike) starts a free walk too. "Best" is the
   first objective among feasible trials; a side
   or kind with no feasible trial starts from the trial that violates its limits least, so it walks
   towards feasibility instead of reporting "no feasible design" where a neighbour would be one.
2. A walk moves to its best known better one-step neighbour (explore.sampler.neighbours, kept to
   the side's PEs), else evaluates its untried one-step neighbours; when none is left and none is
   better, the same with its two-step neighbours (two axes changed).
3. Repeat until every walk is at a local optimum of both neighbourhoods (**converged**), or the
   extra trials reach ``cap`` (CAP_FACTOR x the budget in a sweep). A better best found on the way,
   or a new kind, starts a walk of its own.

Why two steps and one walk per kind: on the default example's space, the one-step landscape has 3
local optima per side (basins of 711, 107 and 231 of the sparse side's 1,049 feasible points), and
with two-step moves each side has exactly one, its global optimum; the same holds on the 7 nm space
up to 2 GHz. On the LLM example's space (7 nm, HBM3) each side has two two-step optima, one per
dataflow (sparse 1.475 OS and 1.435 WS; dense 1.277 WS and 0.939 OS): a single walk from the
sampler's best ended in the wrong one in 2 of 10 seeds, and the verdict's advantage read +12.4 % and
+57.2 % against the exhaustive +15.6 % (measured with the grid as ground truth; docs/benchmarks.md,
bench_search_balance). It is a local search all the same: on a space with several optima of one
kind it converges to those it reaches, and the verdict says it settled, not that it is exhaustive.

The extra trials are ordinary trials of the study (candidates are enqueued with their parameters
fixed; a design tried before is never queued again), so they resume, show in trials.csv, and are
counted in each side's trials in the report. A rerun of a settled study queues nothing.
"""

from __future__ import annotations

import math
from collections.abc import Callable
from dataclasses import replace
from functools import partial
from typing import Any

import optuna
from optuna.distributions import BaseDistribution
from optuna.trial import FrozenTrial, TrialState
from rich.console import Console

from explore.sampler import neighbours, sparsity_sides
from explore.space import Space, design_key
from explore.study import (
    run_worker,
    trial_point as _design,  # a design as trial parameters (OS: no double_buffer)
)

__all__ = ["settle", "side_options", "incumbent", "candidates"]

#: Settling evaluates at most this many times the trial budget in extra trials. [A] 3: on the default
#: example (150 trials) a walk costs its ~12 one-step and ~50 two-step neighbours to confirm its
#: optimum, and with one walk per side and kind settling took 151-300+ extra trials; at 2x, 4 of 10
#: seeds stopped at the cap (bench/bench_search_balance.py).
CAP_FACTOR = 3
#: The trial metric that names the cells' threshold-voltage flavour (explore.metrics: its delay factor).
VT_ATTR = "vt_delay_factor"

#: Trial states whose design counts as tried (a failed design is not retried: it would fail again).
_TRIED = (TrialState.COMPLETE, TrialState.RUNNING, TrialState.WAITING, TrialState.PRUNED, TrialState.FAIL)


def side_options(space: Space) -> dict[str, frozenset[str]]:
    """The sides to settle: {side: its sparsity options as strings}; one entry ("all") when the space
    offers one side only (the study is that side)."""
    sides = {k: frozenset(map(str, v)) for k, v in sparsity_sides(space).items() if v}
    return sides if len(sides) > 1 else {"all": frozenset().union(*sides.values()) if sides else frozenset()}


def _params(t: FrozenTrial) -> dict[str, Any]:
    return {**t.params, **(t.system_attrs.get("fixed_params") or {})}


def _on_side(params: dict[str, Any], options: frozenset[str]) -> bool:
    return not options or "sparsity" not in params or str(params["sparsity"]) in options


def _violation(t: FrozenTrial) -> float:
    return sum(max(c, 0.0) for c in (t.constraints or {}).values())


def incumbent(trials: list[FrozenTrial], options: frozenset[str], maximise: bool) -> FrozenTrial | None:
    """The side's best feasible COMPLETE trial on the first objective (ties: the earliest); when the
    side has no feasible trial, the one that violates its limits least (the sum of its normalised
    constraint excesses; ties: the better objective), so settling walks towards feasibility."""
    best, least, sign = None, None, 1.0 if maximise else -1.0
    for t in trials:
        if t.state != TrialState.COMPLETE or t.values is None or not _on_side(t.params, options):
            continue
        v = t.values[0]
        if not math.isfinite(v):
            continue
        if _violation(t) > 0:
            if least is None or (_violation(t), -sign * v) < (_violation(least), -sign * least.values[0]):
                least = t
        elif best is None or sign * v > sign * best.values[0]:
            best = t
    return best if best is not None else least


def _step(
    params: dict[str, Any], dists: dict[str, BaseDistribution], options: frozenset[str]
) -> list[dict[str, Any]]:
    """One-step neighbours on the side; a move from OS to a stationary dataflow takes each
    ``double_buffer`` choice (an OS design has none: explore.space.double_buffered)."""
    out: list[dict[str, Any]] = []
    for c in neighbours(params, {k: dists[k] for k in params if k in dists}):
        if not _on_side(c, options):
            continue
        if c.get("dataflow") != "os" and "double_buffer" in dists and "double_buffer" not in c:
            out.extend({**c, "double_buffer": v} for v in dists["double_buffer"].choices)  # type: ignore[attr-defined]
        else:
            out.append(_design(c))
    return out


def _kind_step(
    p: dict[str, Any],
    dists: dict[str, BaseDistribution],
    options: frozenset[str],
    fix: tuple[str, Any] | None,
) -> list[dict[str, Any]]:
    """One-step neighbours of ``p`` on the side that keep the walk's kind ``fix`` (axis, value)."""
    free = fix is None or fix[0] == VT_ATTR  # a flavour's walk is free (the flavour is no axis)
    return [c for c in _step(p, dists, options) if free or (fix is not None and c.get(fix[0]) == fix[1])]


def candidates(
    best: dict[str, Any], dists: dict[str, BaseDistribution], options: frozenset[str], tried: set[str]
) -> tuple[int, list[dict[str, Any]]]:
    """(1, untried one-step neighbours) of ``best``, else (2, its untried two-step neighbours), else
    (0, []): ``best`` is a local optimum of both neighbourhoods among what was tried."""
    one = _step(best, dists, options)
    fresh = _untried(one, tried)
    if fresh:
        return 1, fresh
    two = [c2 for c in one for c2 in _step(c, dists, options)]
    fresh = _untried(two, tried | {design_key(_design(best))})
    return (2, fresh) if fresh else (0, [])


def _untried(points: list[dict[str, Any]], tried: set[str]) -> list[dict[str, Any]]:
    seen, out = set(tried), []
    for p in points:
        k = design_key(_design(p))
        if k not in seen:
            seen.add(k)
            out.append(p)
    return out


def _distributions(trials: list[FrozenTrial]) -> dict[str, BaseDistribution]:
    """Each parameter's distribution; for ``sparsity`` the widest one seen (all the space's options)."""
    dists: dict[str, BaseDistribution] = {}
    for t in trials:
        for k, d in t.distributions.items():
            old = dists.get(k)
            if old is None or (
                k == "sparsity" and len(getattr(d, "choices", ())) > len(getattr(old, "choices", ()))
            ):
                dists[k] = d
    return dists


def _rank(t: FrozenTrial, sign: float) -> tuple[float, float]:
    """Lower is better: feasible designs by the first objective, then infeasible ones by violation."""
    v = _violation(t)
    return (0.0, -sign * t.values[0]) if v <= 0 else (1.0, v)


def _starts(
    trials: list[FrozenTrial], dists: dict[str, BaseDistribution], options: frozenset[str], sign: float
) -> list[tuple[FrozenTrial, tuple[str, Any] | None]]:
    """Where a side's walks start: its best trial overall and its best trial with each value of each
    nominal axis (dataflow, memory type, ...; every axis whose choices are not all numbers, but the
    PE's), so each structurally different kind of design is settled on its own: (trial, the axis and
    value its walk keeps, None for the free walk from the best)."""
    done = [
        t
        for t in trials
        if t.state == TrialState.COMPLETE
        and t.values is not None
        and math.isfinite(t.values[0])
        and _on_side(t.params, options)
    ]
    if not done:
        return []
    out: list[tuple[FrozenTrial, tuple[str, Any] | None]] = [(min(done, key=lambda t: _rank(t, sign)), None)]
    for name, d in sorted(dists.items()):
        choices = getattr(d, "choices", None)
        if (
            name == "sparsity"
            or not choices
            or all(isinstance(c, (int, float)) and not isinstance(c, bool) for c in choices)
        ):
            continue
        for c in choices:
            if out[0][0].params.get(name) == c:
                continue  # the best's own kind: the free walk starts there
            group = [t for t in done if t.params.get(name) == c and _violation(t) <= 0]
            if group:  # a kind with no feasible design is left to the free walk
                out.append((min(group, key=lambda t: _rank(t, sign)), (name, c)))
    # the cells' threshold-voltage flavour is the model's choice per design, not an axis, but it splits the
    # landscape alike: a clock one step above a flavour's reach needs the next, leakier cells, so the best
    # design of each flavour starts a free walk of its own (its key names the flavour; it may leave it)
    best_vt = out[0][0].user_attrs.get(VT_ATTR)
    for vt in sorted(v for v in {t.user_attrs.get(VT_ATTR) for t in done} - {None, best_vt} if v is not None):
        group = [t for t in done if t.user_attrs.get(VT_ATTR) == vt and _violation(t) <= 0]
        if group:
            out.append((min(group, key=lambda t: _rank(t, sign)), (VT_ATTR, vt)))
    return out


def settle(
    study: optuna.Study,
    space: Space,
    run: Callable[[int], None],
    cap: int,
    say: Callable[[str], None] | None = None,
) -> dict[str, Any]:
    """Settle every side of ``study`` (module docstring). ``run(n)`` evaluates the ``n`` trials just
    enqueued; ``cap`` bounds the extra trials. Returns ``extra_trials``, ``cap``, ``rounds``,
    ``converged``, ``walks`` and, per side, ``queued`` (its candidates evaluated) and its best feasible
    value on the first objective ``before`` and ``after`` (None without a feasible design)."""
    sign = 1.0 if study.directions[0] == optuna.study.StudyDirection.MAXIMIZE else -1.0
    sides = side_options(space)
    n0 = len(study.get_trials(deepcopy=False))
    per: dict[str, dict[str, Any]] = {}
    walks: dict[
        str, dict[str, Any]
    ] = {}  # design key of a walk's start -> {"side", "at": current trial params}
    rounds, capped = 0, False

    def best_value(trials: list[FrozenTrial], options: frozenset[str]) -> float | None:
        b = incumbent(trials, options, sign > 0)
        return None if b is None or _violation(b) > 0 else float(b.values[0])

    while True:
        trials = study.get_trials(deepcopy=False)
        dists = _distributions(trials)
        known: dict[str, FrozenTrial] = {}
        for t in trials:
            if t.state == TrialState.COMPLETE and t.values is not None and math.isfinite(t.values[0]):
                known.setdefault(design_key(_design(t.params)), t)
        tried = {design_key(_design(_params(t))) for t in trials if t.state in _TRIED and _params(t)}
        for side, options in sides.items():
            per.setdefault(side, {"queued": 0, "before": best_value(trials, options), "after": None})
            per[side]["after"] = best_value(trials, options)
            for t, fix in _starts(trials, dists, options, sign):  # one walk per side and kind
                w = walks.get(side + repr(fix))
                if w is None:
                    walks[side + repr(fix)] = {"side": side, "at": t, "start": t, "fix": fix, "done": False}
                elif t.number != w["start"].number:
                    # the kind's best changed (another walk found it): walk again from there, even when this
                    # walk has left the kind for a better design, so that a resumed study, whose walks start
                    # from the kinds' bests, finds every start's neighbourhood tried
                    w.update(at=t, start=t, done=False)
        batch: list[dict[str, Any]] = []
        queued: set[str] = set()
        for w in walks.values():
            if w["done"]:
                continue
            options = sides[w["side"]]
            fix = w["fix"]

            step = partial(_kind_step, dists=dists, options=options, fix=fix)
            while True:  # move while a known neighbour is better; else queue the untried ring
                at = w["at"]
                ring, cands = 0, []
                for ring in (1, 2):
                    nb = step(at.params) if ring == 1 else [c2 for c in step(at.params) for c2 in step(c)]
                    seen_nb = [known[k] for k in {design_key(_design(c)) for c in nb} if k in known]
                    better = [t for t in seen_nb if _rank(t, sign) < _rank(at, sign)]
                    if better:
                        w["at"] = min(better, key=lambda t: _rank(t, sign))
                        break
                    cands = _untried(nb, tried | queued | {design_key(_design(at.params))})
                    if cands or any(design_key(_design(c)) in queued for c in nb):
                        break  # evaluate the ring, or wait for another walk's evaluation of part of it
                else:
                    w["done"] = True  # a local optimum of both neighbourhoods
                    break
                if w["at"] is not at:
                    continue  # moved: look around the new point
                room = max(cap - (len(trials) - n0) - len(batch), 0)
                capped = capped or len(cands) > room
                cands = cands[:room]
                if cands and say is not None:
                    v = _violation(at)
                    what = f"at {at.values[0]:.4g}" if v <= 0 else f"infeasible (violation {v:.3g})"
                    say(
                        f"settle {w['side']}: walk {at.number} {what}; evaluating {len(cands)} untried "
                        f"{'one' if ring == 1 else 'two'}-step neighbours"
                    )
                per[w["side"]]["queued"] += len(cands)
                queued |= {design_key(_design(c)) for c in cands}
                batch.extend(cands)
                break
        if not batch:
            break
        for p in batch:
            study.enqueue_trial(p, skip_if_exists=False)
        run(len(batch))
        rounds += 1
    trials = study.get_trials(deepcopy=False)
    for side, options in sides.items():
        per.setdefault(side, {"queued": 0, "before": None})["after"] = best_value(trials, options)
    extra = len(trials) - n0
    return {
        "extra_trials": extra,
        "cap": cap,
        "rounds": rounds,
        "converged": not capped,
        "walks": len(walks),
        "sides": per,
    }


#: Study user attribute: what settling did (:func:`settle`'s result; extra trials add up over resumes).
SETTLE_ATTR = "settle"


def settle_sweep(opts: Any, cfg: Any, study: optuna.Study) -> dict[str, Any]:
    """Settle a sweep's study after its budget (explore.commands.sweep): each round's candidates run in
    this process as one worker (explore.study.run_worker: stored, resumable trials); at most
    CAP_FACTOR x ``opts.trials`` extra trials. Stores and returns the result under SETTLE_ATTR."""
    console = Console(stderr=True)

    def run(n: int) -> None:
        done = sum(1 for t in study.get_trials(deepcopy=False, states=(TrialState.COMPLETE,)))
        run_worker(replace(opts, trials=done + n, workers=1), 0)

    def say(line: str) -> None:
        if opts.progress:
            console.print(f"sweep {opts.study_name}: {line}", highlight=False, markup=False)

    info = settle(study, cfg.space, run, cap=CAP_FACTOR * int(opts.trials), say=say)
    prev = study.user_attrs.get(SETTLE_ATTR)
    if prev and prev.get("cap") == info["cap"]:  # a resumed study: the trials of earlier runs count too
        info["extra_trials"] += int(prev.get("extra_trials", 0))
        info["rounds"] += int(prev.get("rounds", 0))
        for side, rec in info["sides"].items():
            old = (prev.get("sides") or {}).get(side) or {}
            rec["queued"] += int(old.get("queued", 0))
            if old.get("before") is not None:
                rec["before"] = old["before"]
    study.set_user_attr(SETTLE_ATTR, info)
    return info


def settle_note(info: dict[str, Any]) -> str:
    """One line for the terminal and the report."""
    sides = ", ".join(f"{s} +{r['queued']}" for s, r in info["sides"].items())
    how = (
        "until each side's best had no better design one or two steps away"
        if info["converged"]
        else f"stopped at the cap of {info['cap']} extra trials before every side had converged"
    )
    return f"settled: +{info['extra_trials']} trials ({sides}) in {info['rounds']} rounds, {how}"
