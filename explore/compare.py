"""Sparse versus dense on equal terms: the comparison behind the verdict.

``effective_speedup`` (sim.perf) compares sparse and dense *kernels on the same hardware*: the
sparse array running the pruned model against itself running the dense model. That is the
GPU-style figure, and it says nothing about whether a dense chip would have been better. This
module answers that question with designs costed by one method (explore.evaluator: the same
cycle model, synthesis-based area and power, memory and limits):

* **best sparse vs best dense**: for each objective of the study, the best feasible design whose
  PEs are sparse against the best feasible design whose PEs are dense, under the same limits.
  When the study evaluated too few dense designs for that to be fair (fewer than
  ``MIN_DENSE_SHARE`` of a fair share: trials / number of sparsity options), a focused dense
  sub-study of that share is run (same sampler family, seeded, the space with dense PEs only)
  and the comparison says so.
* **the chosen design's dense twins** (explore.twins.twin_points / iso_area_choice): the same
  R x C array with dense PEs (iso-array), and the fastest dense array of the space whose area does
  not exceed the design's (iso-area).

``comparison`` is what ``best.json`` carries under ``comparison``; the report's first section
prints it. Every figure in it is an evaluator output for a named design point, so it traces to the
same inputs as every other figure.
"""

from __future__ import annotations

import math
from typing import Any, Callable

import optuna

from explore.config import SweepConfig
from explore.results import Evaluator, constraint_values, stored_value
from explore.sampler import make_sampler, suggest_point
from explore.space import axis_choices, dense_twin_sparsity, parse_sparsity

#: A dense sub-study runs when the study's distinct dense designs are fewer than this share of a
#: fair share of its trials (trials / sparsity options) [A]: half a share still lets TPE find the
#: dense optimum in the default space (bench/bench_sweep_efficiency.py: within 1 % after a median
#: of 76 trials over all 30,720 points, i.e. a few dozen per sparsity option).
MIN_DENSE_SHARE = 0.5
#: SHIP needs the best sparse design to beat the best dense design on the primary objective by at
#: least this margin [A]: 5 %, the size of model error we would not bet a tape-out on (the SRAM fit
#: is within 2.4 % of CACTI, PE-scaled area within 2.5 % of whole-array synthesis; DRAM energy
#: per bit varies by more between vendors).
SHIP_MIN_ADVANTAGE = 0.05
#: What each entry of ``comparison`` carries (the best.json keys, plus p99, TOPS/mm2
#: and the trial it came from).
ENTRY_METRICS = ("latency_ms", "p99_latency_ms", "energy_per_inference_mj", "area_mm2", "power_w", "perf_per_watt",
                 "effective_tops")


def is_sparse(params: dict[str, Any]) -> bool:
    return bool(parse_sparsity(params["sparsity"])[2])


def _num(v: Any) -> float | None:
    try:
        f = float(v)
    except (TypeError, ValueError):
        return None
    return f if math.isfinite(f) else None


def entry(params: dict[str, Any], metrics: dict[str, Any], source: str, number: int | None = None,
          feasible: bool | None = None) -> dict[str, Any]:
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


def best_record(records: list[dict[str, Any]], objective: str, direction: str, *, sparse: bool
                ) -> dict[str, Any] | None:
    """The best feasible record with sparse (or dense) PEs on ``objective`` (ties: lower number)."""
    sign = -1.0 if direction == "maximize" else 1.0
    cands = [r for r in records if _feasible(r) and is_sparse(r["params"]) == sparse
             and _num(r["metrics"].get(objective)) is not None]
    if not cands:
        return None
    return min(cands, key=lambda r: (sign * float(r["metrics"][objective]), r["number"]))


def dense_share(cfg: SweepConfig, n_trials: int) -> int:
    """A fair share of ``n_trials`` for the dense option: trials / sparsity options (dense counted
    once even when the space does not offer it)."""
    opts = axis_choices(cfg.space, "sparsity") or []
    k = len(opts) + (0 if any(not parse_sparsity(o)[2] for o in opts) else 1)
    return max(1, math.ceil(n_trials / max(k, 1)))


def needs_dense_substudy(records: list[dict[str, Any]], cfg: SweepConfig, n_trials: int) -> bool:
    dense = {_point_key(r["params"]) for r in records if not is_sparse(r["params"])}
    return len(dense) < MIN_DENSE_SHARE * dense_share(cfg, n_trials)


def _point_key(params: dict[str, Any]) -> tuple:
    return tuple(sorted((k, str(v)) for k, v in params.items()))


def dense_substudy(cfg: SweepConfig, evaluate: Callable[[dict[str, Any]], dict[str, Any]], n_trials: int,
                   seed: int) -> list[dict[str, Any]]:
    """A focused dense sub-study: ``n_trials`` trials of the study's sampler on its space with the
    sparsity axis replaced by the dense PE of each option's M, in memory, seeded; distinct designs
    as records (``number`` is the sub-study's trial number, ``source`` says where it came from)."""
    dense_opts = sorted({dense_twin_sparsity(o) for o in axis_choices(cfg.space, "sparsity") or ["dense"]})
    space = cfg.space.model_copy(update={"sparsity": dense_opts})
    sub = cfg.model_copy(update={"space": space})
    optuna.logging.set_verbosity(optuna.logging.WARNING)
    study = optuna.create_study(direction=cfg.objectives.directions()[0],
                                sampler=make_sampler(cfg.study.sampler, seed, 1))
    seen: dict[tuple, dict[str, Any]] = {}
    records: list[dict[str, Any]] = []

    def objective(trial: optuna.Trial) -> float:
        point = suggest_point(trial, sub)
        key = _point_key(point)
        if key not in seen:
            metrics = evaluate(point)
            seen[key] = (metrics, constraint_values(cfg, metrics))
            records.append({"number": trial.number, "params": point, "metrics": metrics,
                            "constraints": seen[key][1], "source": "dense sub-study"})
        metrics, cons = seen[key]
        for k, v in cons.items():
            trial.set_constraint(k, v)
        return float(metrics[cfg.objectives.primary])

    study.optimize(objective, n_trials=n_trials)
    return records


def comparison(records: list[dict[str, Any]], cfg: SweepConfig, chosen: dict[str, Any] | None,
               evaluate_many: Callable[[list[dict[str, Any]]], list[dict[str, Any]]] | None,
               twin_points: Callable | None = None, iso_area_choice: Callable | None = None,
               substudy: list[dict[str, Any]] | None = None) -> dict[str, Any]:
    """best.json's ``comparison``: ``best_sparse``, ``best_dense``, ``iso_array_dense``,
    ``iso_area_dense`` (each an :func:`entry` or None), ``per_objective`` (best sparse vs best dense
    on every objective), ``primary_advantage`` (best sparse / best dense on the primary objective,
    oriented so > 1 favours sparse) and ``notes``."""
    objectives = cfg.objectives.names()
    directions = cfg.objectives.directions()
    dense_pool = [r for r in records if not is_sparse(r["params"])] + list(substudy or [])
    notes: list[str] = []
    if substudy is not None:
        notes.append(f"the study evaluated {len({_point_key(r['params']) for r in records if not is_sparse(r['params'])})} "
                     f"distinct dense designs, too few for a fair comparison; a focused dense sub-study "
                     f"({len(substudy)} distinct designs, seed {cfg.study.seed}, same sampler and limits) was added")
    out: dict[str, Any] = {"best_sparse": None, "best_dense": None, "iso_array_dense": None, "iso_area_dense": None}
    per: list[dict[str, Any]] = []
    for obj, dirn in zip(objectives, directions):
        bs = best_record(records, obj, dirn, sparse=True)
        bd = best_record(dense_pool, obj, dirn, sparse=False)
        ratio = None
        if bs is not None and bd is not None:
            a, b = float(bs["metrics"][obj]), float(bd["metrics"][obj])
            ratio = (a / b if dirn == "maximize" else b / a) if a > 0 and b > 0 else None
        per.append({"objective": obj, "direction": dirn,
                    "best_sparse": None if bs is None else {"trial": bs["number"], "value": float(bs["metrics"][obj])},
                    "best_dense": None if bd is None else {"trial": bd["number"], "value": float(bd["metrics"][obj]),
                                                           "source": bd.get("source", "study")},
                    "sparse_advantage": ratio})
        if obj == objectives[0]:
            out["best_sparse"] = None if bs is None else entry(bs["params"], bs["metrics"], "study", bs["number"], True)
            out["best_dense"] = None if bd is None else entry(bd["params"], bd["metrics"], bd.get("source", "study"),
                                                              bd["number"], True)
            out["primary_advantage"] = ratio
    out["per_objective"] = per
    if out["best_sparse"] is None:
        notes.append("no feasible sparse design in the study")
    if out["best_dense"] is None:
        notes.append("no feasible dense design" + (" in the study or its dense sub-study" if substudy is not None else ""))
    if chosen is not None and evaluate_many is not None and twin_points is not None and iso_area_choice is not None:
        iso_array, cands = twin_points(chosen["params"], cfg)
        res = evaluate_many([iso_array, *cands])
        feas = lambda m: all(v <= 0 for v in constraint_values(cfg, m).values())  # noqa: E731
        out["iso_array_dense"] = entry(iso_array, res[0], "iso-array twin of the chosen design", None, feas(res[0]))
        j, m, fits = iso_area_choice(float(chosen["metrics"]["area_mm2"]), cands, res[1:])
        out["iso_area_dense"] = entry(cands[j], m, "iso-area twin of the chosen design", None, feas(m))
        out["iso_area_dense"]["fits_area"] = bool(fits)
        if not fits:
            notes.append(f"no dense array of the space fits in the chosen design's {chosen['metrics']['area_mm2']:.4g} mm^2; "
                         f"the iso-area twin is the smallest dense array ({m['area_mm2']:.4g} mm^2), which favours dense")
        out["chosen"] = entry(chosen["params"], chosen["metrics"], "chosen design", chosen.get("number"), True)
    elif chosen is not None:
        notes.append("the evaluator gives no dense twins (twin_points): iso-array and iso-area entries are absent")
    out["notes"] = notes
    return out


def build_comparison(records: list[dict[str, Any]], cfg: SweepConfig, chosen: dict[str, Any] | None, ev: Evaluator,
                     n_trials: int, substudy: list[dict[str, Any]] | None = None, *, allow_substudy: bool = True
                     ) -> tuple[dict[str, Any], list | None]:
    """The comparison with the study's evaluator ``ev``: runs the dense sub-study when needed and
    not given (and ``allow_substudy``: grid mode evaluates every dense point already). Returns
    (comparison, sub-study records or None)."""
    if substudy is None and allow_substudy and needs_dense_substudy(records, cfg, n_trials):
        substudy = dense_substudy(cfg, ev.evaluate, dense_share(cfg, n_trials), cfg.study.seed)
    comp = comparison(records, cfg, chosen, ev.evaluate_many, getattr(ev.mod, "twin_points", None),
                      getattr(ev.mod, "iso_area_choice", None), substudy)
    return comp, substudy


def stored_substudy(stored: dict[str, Any] | None, cfg: SweepConfig, n_records: int, *, same_seed: bool = True
                    ) -> list[dict[str, Any]] | None:
    """The dense sub-study a study stored (explore.trials.SUBSTUDY_ATTR) as records, when it was
    run for this study's size (and, with ``same_seed``, the config's seed); else None."""
    if not stored or stored.get("n_trials") != dense_share(cfg, n_records):
        return None
    if same_seed and stored.get("seed") != cfg.study.seed:
        return None
    return [{**r, "metrics": {k: stored_value(v) for k, v in r["metrics"].items()}} for r in stored["records"]]


def storable_substudy(cfg: SweepConfig, n_records: int, substudy: list[dict[str, Any]]) -> dict[str, Any]:
    """What a study stores of its dense sub-study (read back by :func:`stored_substudy`): non-finite
    metrics as strings, as every stored metric."""
    return {"n_trials": dense_share(cfg, n_records), "seed": cfg.study.seed,
            "records": [{**r, "metrics": _storable(r["metrics"])} for r in substudy]}


def _storable(metrics: dict[str, Any]) -> dict[str, Any]:
    return {k: (str(v) if isinstance(v, float) and not math.isfinite(v) else v) for k, v in metrics.items()}
