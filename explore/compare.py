"""Sparse versus dense on equal terms: the comparison behind the verdict.

``effective_speedup`` (sim.perf) compares sparse and dense *kernels on the same hardware*: the
sparse array running the pruned model against itself running the dense model. That is the
GPU-style figure, and it says nothing about whether a dense chip would have been better. This
module answers that question with designs costed by one method (explore.evaluator: the same
cycle model, synthesis-based area and power, memory and limits):

* **best sparse vs best dense**: for each objective of the study, the best feasible design whose
  PEs are sparse against the best feasible design whose PEs are dense, under the same limits.
* **equal search effort**: both sides are searched alike. When the space offers sparse and dense
  PEs, the study's sampler gives each side the same number of trials with its own sampler of the
  same kind (explore.sampler.SideBalancedSampler). When it offers only sparse PEs, the dense side
  is a study of the dense twins of its options (:func:`dense_substudy`) with as many trials as the
  sparse side, the same sampler and seed. After the budget each side is settled
  (explore.settle): its best design's untried one- and two-step neighbours are evaluated until none
  is left, so a side that stopped a few steps short of its optimum does not tilt the verdict (on the
  default example the advantage spread over ten seeds falls from 7.1 points to 0.0;
  docs/benchmarks.md). ``--exhaustive`` (and ``--grid``) evaluates every point of both sides.
  ``search`` states, per side, the trials, the distinct designs and the sampler.
* **the chosen design's dense twins** (explore.twins): the same design with dense PEs (iso-array),
  and the fastest feasible dense design within its area over every other axis (iso-area), found
  among the dense side's designs.

``comparison`` is what ``best.json`` carries under ``comparison``; the report's first section
prints it. Every figure in it is an evaluator output for a named design point, so it traces to the
same inputs as every other figure.
"""

from __future__ import annotations

import math
from collections.abc import Callable
from typing import Any

import optuna

from explore.config import SweepConfig
from explore.metrics import ENTRY_METRICS, TWIN_INPUTS
from explore.results import Evaluator, constraint_values, stored_value
from explore.sampler import make_sampler, sparsity_sides, study_directions, suggest_point
from explore.settle import CAP_FACTOR, settle
from explore.space import axis_choices, dense_twin_sparsity, design_key, parse_sparsity
from explore.twins import TWIN_METRICS, DensePool, iso_array_point, twin_metrics

#: The ``source`` of a dense-study record that settling evaluated (explore.settle).
SETTLE_SOURCE = "dense study (settling)"
#: The sampler names ``search`` reports.
SAMPLER_NAMES = {
    "tpe": "tpe + incumbent neighbourhood steps",
    "nsga2": "nsga2",
    "random": "random",
    "exhaustive": "exhaustive (every point of the discretised space)",
}


def is_sparse(params: dict[str, Any]) -> bool:
    return bool(parse_sparsity(params["sparsity"])[2])


def _num(v: Any) -> float | None:
    try:
        f = float(v)
    except (TypeError, ValueError):
        return None
    return f if math.isfinite(f) else None


def entry(
    params: dict[str, Any],
    metrics: dict[str, Any],
    source: str,
    number: int | None = None,
    feasible: bool | None = None,
) -> dict[str, Any]:
    """One side of a comparison: the design and its figures (None where not finite)."""
    out: dict[str, Any] = {"design": dict(params), "source": source, "trial": number}
    for k in ENTRY_METRICS:
        if k in metrics:
            out[k] = _num(metrics[k])
    area, tops = _num(metrics.get("area_mm2")), _num(metrics.get("effective_tops"))
    out["tops_per_mm2"] = tops / area if area and tops is not None else None
    if feasible is not None:
        out["feasible"] = bool(feasible)
    return out


def _feasible(r: dict[str, Any]) -> bool:
    return all(v <= 0 for v in r["constraints"].values())


def best_record(
    records: list[dict[str, Any]], objective: str, direction: str, *, sparse: bool
) -> dict[str, Any] | None:
    """The best feasible record with sparse (or dense) PEs on ``objective`` (ties: lower number)."""
    sign = -1.0 if direction == "maximize" else 1.0
    cands = [
        r
        for r in records
        if _feasible(r) and is_sparse(r["params"]) == sparse and _num(r["metrics"].get(objective)) is not None
    ]
    if not cands:
        return None
    return min(cands, key=lambda r: (sign * float(r["metrics"][objective]), r["number"]))


def advantage(sparse_value: float, dense_value: float, direction: str) -> float | None:
    """best sparse / best dense on one objective, oriented so > 1 favours sparse (None unless both > 0)."""
    if not (sparse_value > 0 and dense_value > 0):
        return None
    return sparse_value / dense_value if direction == "maximize" else dense_value / sparse_value


def needs_dense_substudy(cfg: SweepConfig) -> bool:
    """True when the space offers sparse PEs and no dense ones: the dense side is then a study of its own."""
    sides = sparsity_sides(cfg.space)
    return bool(sides["sparse"]) and not sides["dense"]


def dense_substudy(
    cfg: SweepConfig,
    evaluate: Callable[[dict[str, Any]], dict[str, Any]],
    n_trials: int,
    seed: int,
    *,
    settled: bool = False,
) -> list[dict[str, Any]]:
    """The dense side of a space without dense PEs: ``n_trials`` trials (as many as the sparse side)
    of the study's sampler on its space with the sparsity axis replaced by the dense PE of each
    option's M, in memory, seeded, then (``settled``: the sparse side was) settled as the study was
    (explore.settle, at most CAP_FACTOR x ``n_trials`` more); distinct designs as records (``number`` is the
    sub-study's trial number, ``source`` says where it came from: SETTLE_SOURCE for settling's)."""
    dense_opts = sorted({dense_twin_sparsity(o) for o in axis_choices(cfg.space, "sparsity") or ["dense"]})
    space = cfg.space.model_copy(update={"sparsity": dense_opts})
    sub = cfg.model_copy(update={"space": space})
    optuna.logging.set_verbosity(optuna.logging.WARNING)
    study = optuna.create_study(
        directions=study_directions(cfg),
        sampler=make_sampler(cfg.study.sampler, seed, len(cfg.objectives.names())),
    )
    seen: dict[str, tuple[dict[str, Any], dict[str, float]]] = {}
    records: list[dict[str, Any]] = []
    names = cfg.objectives.names()
    source = ["dense study"]

    def objective(trial: optuna.Trial):
        point = suggest_point(trial, sub)
        key = design_key(point)
        if key not in seen:
            metrics = evaluate(point)
            seen[key] = (metrics, constraint_values(cfg, metrics))
            records.append(
                {
                    "number": trial.number,
                    "params": point,
                    "metrics": metrics,
                    "constraints": seen[key][1],
                    "source": source[0],
                }
            )
        metrics, cons = seen[key]
        for k, v in cons.items():
            trial.set_constraint(k, v)
        values = [float(metrics[o]) for o in names]
        return values[0] if len(values) == 1 else values

    study.optimize(objective, n_trials=n_trials)
    if settled:
        source[0] = SETTLE_SOURCE
        settle(study, space, lambda n: study.optimize(objective, n_trials=n), cap=CAP_FACTOR * n_trials)
    return records


def search_summary(
    cfg: SweepConfig,
    records: list[dict[str, Any]],
    side_trials: dict[str, int],
    sampler: str,
    substudy: list[dict[str, Any]] | None = None,
    substudy_trials: int = 0,
    settled: dict[str, Any] | None = None,
) -> dict[str, Any]:
    """best.json's ``comparison.search``: per side, the trials it got (``settle_trials`` of them after
    the budget: explore.settle, from the study's ``settled`` record), its distinct designs, its sampler."""
    out = {}
    by_side = (settled or {}).get("sides") or {}
    for side in ("sparse", "dense"):
        recs = [r for r in records if is_sparse(r["params"]) == (side == "sparse")]
        n_trials = side_trials.get(side, 0)
        extra = (
            int((by_side.get(side) or by_side.get("all") or {}).get("queued", 0))
            if recs or side in by_side
            else 0
        )
        source = "study"
        if side == "dense" and substudy is not None:
            recs = recs + list(substudy)
            sub_extra = sum(1 for r in substudy if r.get("source") == SETTLE_SOURCE)
            n_trials += substudy_trials + sub_extra
            extra = sub_extra
            source = "dense study of the sparse options' dense twins (the space offers no dense PE)"
        name = SAMPLER_NAMES.get(sampler, sampler)
        if settled is not None:
            name += f", then settled (+{extra} trials: explore.settle)"
        out[side] = {
            "trials": int(n_trials),
            "settle_trials": extra,
            "settled": settled is not None,
            "converged": bool((settled or {}).get("converged", False)),
            "distinct_designs": len({design_key(r["params"]) for r in recs}),
            "sampler": name,
            "source": source,
        }
    return out


def _twin_sources(records: list[dict[str, Any]]) -> dict[str, dict[str, Any]]:
    return {design_key(r["params"]): r["metrics"] for r in records}


def study_twin_metrics(
    records: list[dict[str, Any]],
    pool_records: list[dict[str, Any]],
    evaluate_many: Callable[[list[dict[str, Any]]], list[dict[str, Any]]],
) -> dict[str, dict]:
    """TWIN_METRICS of every record (design key -> metrics): the iso-array twin from the designs
    evaluated already where it is one of them, else evaluated here (one batch); the iso-area twin
    from the feasible dense designs of ``pool_records``."""
    if not records:
        return {}
    known = _twin_sources(pool_records)
    twins = [iso_array_point(r["params"]) for r in records]
    missing = {}
    for p in twins:
        k = design_key(p)
        if k not in known and k not in missing:
            missing[k] = p
    if missing:
        for k, m in zip(missing, evaluate_many(list(missing.values())), strict=True):
            known[k] = m
    pool = DensePool(pool_records, lambda p: not is_sparse(p))
    res = twin_metrics(
        _columns([r["metrics"] for r in records]), _columns([known[design_key(p)] for p in twins]), pool
    )
    return {
        design_key(r["params"]): {k: float(res[k][i]) for k in TWIN_METRICS} for i, r in enumerate(records)
    }


def _columns(metrics: list[dict[str, Any]]) -> dict[str, Any]:
    """The metrics twin_metrics reads, as columns."""
    return {k: [float(m.get(k, math.nan)) for m in metrics] for k in TWIN_INPUTS}


def comparison(
    records: list[dict[str, Any]],
    cfg: SweepConfig,
    chosen: dict[str, Any] | None,
    evaluate_many: Callable[[list[dict[str, Any]]], list[dict[str, Any]]] | None,
    substudy: list[dict[str, Any]] | None = None,
    search: dict[str, Any] | None = None,
) -> dict[str, Any]:
    """best.json's ``comparison``: ``best_sparse``, ``best_dense``, ``iso_array_dense``,
    ``iso_area_dense``, ``chosen`` (each an :func:`entry` or None), ``chosen_twin_metrics``,
    ``per_objective`` (best sparse vs best dense on every objective), ``primary_advantage`` (best
    sparse / best dense on the primary objective, oriented so > 1 favours sparse), ``search`` and
    ``notes``."""
    pool_records = list(records) + list(substudy or [])
    notes: list[str] = []
    if substudy is not None:
        notes.append(
            f"the space offers no dense PE: the dense side is a study of the sparse options' dense twins "
            f"({len(substudy)} distinct designs, seed {cfg.study.seed}, the same sampler, as many trials as "
            "the sparse side)"
        )
    out: dict[str, Any] = {
        "best_sparse": None,
        "best_dense": None,
        "iso_array_dense": None,
        "iso_area_dense": None,
    }
    _add_objective_bests(out, records, pool_records, cfg)
    if out["best_sparse"] is None:
        notes.append("no feasible sparse design in the study")
    if out["best_dense"] is None:
        notes.append(
            "no feasible dense design" + (" in the study or its dense study" if substudy is not None else "")
        )
    if chosen is not None and evaluate_many is not None:
        notes.extend(_add_chosen_twins(out, cfg, chosen, evaluate_many, pool_records))
    elif chosen is not None:
        notes.append("the evaluator cannot cost designs in batches (evaluate_batch): no dense twins")
    if search is not None:
        out["search"] = search
        notes.extend(_search_notes(search))
    out["notes"] = notes
    return out


def _add_objective_bests(
    out: dict[str, Any], records: list[dict[str, Any]], pool_records: list[dict[str, Any]], cfg: SweepConfig
) -> None:
    """Into ``out``: ``per_objective`` (best sparse vs best dense on every objective) and, of the
    primary objective, ``best_sparse``, ``best_dense`` and ``primary_advantage``."""
    objectives = cfg.objectives.names()
    directions = cfg.objectives.directions()
    per: list[dict[str, Any]] = []
    for obj, dirn in zip(objectives, directions, strict=True):
        bs = best_record(records, obj, dirn, sparse=True)
        bd = best_record(pool_records, obj, dirn, sparse=False)
        ratio = (
            None
            if bs is None or bd is None
            else advantage(float(bs["metrics"][obj]), float(bd["metrics"][obj]), dirn)
        )
        per.append(
            {
                "objective": obj,
                "direction": dirn,
                "best_sparse": None
                if bs is None
                else {"trial": bs["number"], "value": float(bs["metrics"][obj])},
                "best_dense": None
                if bd is None
                else {
                    "trial": bd["number"],
                    "value": float(bd["metrics"][obj]),
                    "source": bd.get("source", "study"),
                },
                "sparse_advantage": ratio,
            }
        )
        if obj == objectives[0]:
            out["best_sparse"] = (
                None if bs is None else entry(bs["params"], bs["metrics"], "study", bs["number"], True)
            )
            out["best_dense"] = (
                None
                if bd is None
                else entry(bd["params"], bd["metrics"], bd.get("source", "study"), bd["number"], True)
            )
            out["primary_advantage"] = ratio
    out["per_objective"] = per


def _add_chosen_twins(
    out: dict[str, Any],
    cfg: SweepConfig,
    chosen: dict[str, Any],
    evaluate_many: Callable[[list[dict[str, Any]]], list[dict[str, Any]]],
    pool_records: list[dict[str, Any]],
) -> list[str]:
    """Into ``out``: the chosen design's ``iso_array_dense`` and ``iso_area_dense`` twins, the
    ``chosen`` entry and its ``chosen_twin_metrics``; returns the notes (no iso-area twin)."""
    notes: list[str] = []
    iso = iso_array_point(chosen["params"])
    m_iso = _twin_sources(pool_records).get(design_key(iso)) or evaluate_many([iso])[0]
    feas = all(v <= 0 for v in constraint_values(cfg, m_iso).values())
    out["iso_array_dense"] = entry(iso, m_iso, "iso-array twin of the chosen design", None, feas)
    twin = DensePool(pool_records, lambda p: not is_sparse(p)).iso_area(float(chosen["metrics"]["area_mm2"]))
    if twin is None:
        notes.append(
            f"no feasible dense design of the dense side fits in the chosen design's "
            f"{chosen['metrics']['area_mm2']:.4g} mm^2: there is no iso-area twin"
        )
    else:
        out["iso_area_dense"] = entry(
            twin["params"],
            twin["metrics"],
            "iso-area twin of the chosen design (the fastest feasible dense design within its area)",
            twin["number"],
            True,
        )
        out["iso_area_dense"]["fits_area"] = True
    out["chosen"] = entry(chosen["params"], chosen["metrics"], "chosen design", chosen.get("number"), True)
    tm = twin_metrics(
        _columns([chosen["metrics"]]),
        _columns([m_iso]),
        DensePool(pool_records, lambda p: not is_sparse(p)),
    )
    out["chosen_twin_metrics"] = {k: _num(v[0]) for k, v in tm.items()}
    return notes


def _search_notes(search: dict[str, Any]) -> list[str]:
    """The notes on the search effort: an unequal budget between the sides, and the settling."""
    notes: list[str] = []
    s, d = search.get("sparse", {}), search.get("dense", {})
    budget = {k: v.get("trials", 0) - v.get("settle_trials", 0) for k, v in (("sparse", s), ("dense", d))}
    if s.get("trials") and d.get("trials") is not None and budget["sparse"] != budget["dense"]:
        notes.append(
            f"the sides got {budget['sparse']} (sparse) and {budget['dense']} (dense) trials of the "
            "budget: concurrent workers can tip the balance by a trial each"
        )
    if s.get("settled"):
        how = (
            "until none was left, so neither side's best is one or two steps short of a better design"
            if s.get("converged")
            else "until the cap of extra trials (not converged)"
        )
        notes.append(
            f"after the budget each side was settled (explore.settle): its best design's untried one- "
            f"and two-step neighbours were evaluated {how} (sparse +{s.get('settle_trials', 0)}, "
            f"dense +{d.get('settle_trials', 0)} trials)"
        )
    return notes


def build_comparison(
    records: list[dict[str, Any]],
    cfg: SweepConfig,
    chosen: dict[str, Any] | None,
    ev: Evaluator,
    side_trials: dict[str, int],
    sampler: str,
    substudy: list[dict[str, Any]] | None = None,
    *,
    allow_substudy: bool = True,
    settled: dict[str, Any] | None = None,
) -> tuple[dict[str, Any], list | None]:
    """The comparison with the study's evaluator ``ev``: runs the dense study when the space offers no
    dense PE and it is not given (``allow_substudy``; grid mode evaluates the dense twins itself).
    ``side_trials``: the study's COMPLETE trials per side; ``settled``: what settling the study did
    (explore.settle; the dense study is then settled too). Returns (comparison, dense-study records or None)."""
    n_sub = side_trials.get("sparse", 0)
    if substudy is None and allow_substudy and needs_dense_substudy(cfg) and n_sub:
        substudy = dense_substudy(cfg, ev.evaluate, n_sub, cfg.study.seed, settled=settled is not None)
    sub_budget = n_sub if substudy is not None else 0
    search = search_summary(cfg, records, side_trials, sampler, substudy, sub_budget, settled)
    many = ev.evaluate_many if hasattr(ev.mod, "evaluate_batch") else None
    comp = comparison(records, cfg, chosen, many, substudy, search)
    return comp, substudy


def stored_substudy(
    stored: dict[str, Any] | None, cfg: SweepConfig, n_trials: int, *, same_seed: bool = True
) -> list[dict[str, Any]] | None:
    """The dense study a study stored (explore.trials.SUBSTUDY_ATTR) as records, when it was run with
    ``n_trials`` trials (the sparse side's) and, with ``same_seed``, the config's seed; else None."""
    if not stored or stored.get("n_trials") != n_trials:
        return None
    if same_seed and stored.get("seed") != cfg.study.seed:
        return None
    return [
        {**r, "metrics": {k: stored_value(v) for k, v in r["metrics"].items()}} for r in stored["records"]
    ]


def storable_substudy(cfg: SweepConfig, n_trials: int, substudy: list[dict[str, Any]]) -> dict[str, Any]:
    """What a study stores of its dense study (read back by :func:`stored_substudy`): non-finite
    metrics as strings, as every stored metric."""
    return {
        "n_trials": n_trials,
        "seed": cfg.study.seed,
        "records": [{**r, "metrics": _storable(r["metrics"])} for r in substudy],
    }


def _storable(metrics: dict[str, Any]) -> dict[str, Any]:
    return {k: (str(v) if isinstance(v, float) and not math.isfinite(v) else v) for k, v in metrics.items()}
