"""What a sweep's evaluations come to, for every mode and every reader: the constraints of a
design, the content of ``best.json``, and the evaluator behind them.

* :func:`constraint_values` turns one design's metrics into its normalised constraints (feasible
  when every one is <= 0); the search, the grid, the comparison and the report all call it.
* :func:`summarise` is ``best.json`` from evaluated records (``number``, ``params``, ``metrics``,
  ``constraints``): the search's COMPLETE trials or the grid's points.
* :class:`Evaluator` is the evaluator module a study used (``make_context``, ``evaluate``, and
  where it has them ``evaluate_batch`` and ``evaluate_detail``), loaded by name with its context
  made once; :class:`Detail` is one design re-evaluated with what its metrics were computed from.
  The report reads these, never the evaluator's internals.
"""

from __future__ import annotations

import importlib
from collections.abc import Callable
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import numpy as np

from explore.config import LIMIT_CONSTRAINTS, SweepConfig, quality_evidence_kind
from explore.safety import dumps, write_text
from explore.space import parse_sparsity
from explore.twins import ABSENT
from hw.errors import InputError

#: Constraint always present: the clock must not exceed the achievable fmax.
TIMING_CONSTRAINT = "timing"
#: ppa.model found the design unable to run for a reason no limit carries (thermal runaway, power
#: density above the cooling stack's limit, DRAM traffic above the memory's bandwidth): 1, else 0.
PPA_CONSTRAINT = "ppa_feasibility"
#: The product's evaluator module (a study names another in its ``evaluator`` user attribute).
DEFAULT_EVALUATOR = "explore.evaluator"


def constraint_values(
    cfg: SweepConfig, metrics: dict[str, Any], as_number: Callable[[Any], Any] = float
) -> dict[str, Any]:
    """One normalised constraint per limit (feasible when <= 0) plus the timing constraint.

    Normalisation: (metric - limit) / limit, and for T_j (T_j - limit) / (limit - ambient), so
    0.1 reads "10 % of the allowed amount over". A limit of 0 (quality delta) is not divided.
    ``as_number`` converts each metric: ``float`` for one trial; explore.grid passes a conversion
    to float arrays and gets the same formulas on every grid point at once."""
    out: dict[str, Any] = {}
    for key, limit in cfg.limits.active().items():
        metric = LIMIT_CONSTRAINTS[key]
        # the quality limit binds on the pessimistic end of the delta's 95 % interval
        # (quality_delta_ci); an evaluator that gives no interval is held to its point estimate
        src = "quality_delta_ci" if key == "max_quality_delta" and "quality_delta_ci" in metrics else metric
        value = as_number(metrics[src])
        if key == "max_tj_c":
            out[metric] = (value - limit) / (limit - cfg.fixed.ambient_c)
        elif limit > 0:
            out[metric] = (value - limit) / limit
        else:
            out[metric] = value - limit
    out[TIMING_CONSTRAINT] = as_number(metrics["clock_mhz"]) / as_number(metrics["fmax_mhz"]) - 1.0
    if (
        "ppa_infeasible" in metrics
    ):  # ppa.model says the design cannot run (explore.evaluator.ppa_only_reasons)
        out[PPA_CONSTRAINT] = as_number(metrics["ppa_infeasible"])
    return out


def study_constraint_names(cfg: SweepConfig, constraint_dicts) -> list[str]:
    """The constraints of a study, in report order: one per limit, timing, then ppa feasibility
    when the evaluator reports it."""
    names = [LIMIT_CONSTRAINTS[k] for k in cfg.limits.active()] + [TIMING_CONSTRAINT]
    if any(PPA_CONSTRAINT in c for c in constraint_dicts):
        names.append(PPA_CONSTRAINT)
    return names


def point_sparsity(point: dict[str, Any]) -> tuple[int, int, bool]:
    """(N, M, sparse) of a design point's sparsity (explore.space.parse_sparsity; 'dense' when the
    point has no sparsity axis)."""
    return parse_sparsity(point.get("sparsity", "dense"))


def stored_value(v: Any) -> Any:
    """A stored user attribute as a number: non-finite floats were stored as strings ('inf', 'nan')."""
    if isinstance(v, str) and v in ("inf", "-inf", "nan"):
        return float(v)
    return v


# ---- best.json -----------------------------------------------------------------------------------


def pareto_indices(points: list[tuple[float, ...]], directions: list[str]) -> list[int]:
    """Indices of non-dominated points (directions: maximize/minimize per objective)."""
    sign = [(-1.0 if d == "maximize" else 1.0) for d in directions]
    keys = [tuple(s * v for s, v in zip(sign, p, strict=True)) for p in points]
    front = []
    for i, a in enumerate(keys):
        dominated = False
        for j, b in enumerate(keys):
            if (
                j != i
                and all(y <= x for x, y in zip(a, b, strict=True))
                and any(y < x for x, y in zip(a, b, strict=True))
            ):
                dominated = True
                break
        if not dominated:
            front.append(i)
    return front


def summarise(
    records: list[dict[str, Any]], cfg: SweepConfig, extra: dict[str, Any] | None = None
) -> dict[str, Any]:
    """best.json from evaluated records (``params``, ``metrics``, ``constraints``, ``number``).

    With one objective: the best feasible design. With several: the feasible Pareto set. With
    none feasible: ``feasible: false`` and the binding limits (those violated by the design that
    came closest, and how often each limit was violated)."""
    objectives = cfg.objectives.names()
    directions = cfg.objectives.directions()
    limit_names = list(cfg.limits.active().items())
    out: dict[str, Any] = {
        "objectives": dict(zip(objectives, directions, strict=True)),
        "limits": {k: v for k, v in limit_names},
        "n_evaluated": len(records),
        # what the quality limit binds on ("model" / "proxy" / "none"); the designs' metrics carry
        # quality_delta, quality_delta_ci (the pessimistic end the limit tests) and quality_evidence
        "quality_evidence": quality_evidence_kind(cfg),
    }
    if extra:
        out.update(extra)
    feasible = [r for r in records if all(v <= 0 for v in r["constraints"].values())]
    out["n_feasible"] = len(feasible)
    cnames = sorted({c for r in records for c in r["constraints"]})
    out["violated_share"] = {
        c: (sum(1 for r in records if r["constraints"].get(c, 0.0) > 0) / len(records) if records else 0.0)
        for c in cnames
    }
    if not feasible:
        out["feasible"] = False
        if records:
            closest = min(
                records, key=lambda r: (sum(max(v, 0.0) for v in r["constraints"].values()), r["number"])
            )
            out["binding_limits"] = sorted(c for c, v in closest["constraints"].items() if v > 0)
            out["closest"] = _design(closest)
        else:
            out["binding_limits"] = []
        out["message"] = (
            "no feasible design: "
            + (", ".join(out["binding_limits"]) or "no trial finished")
            + " cannot be met"
        )
        return out
    out["feasible"] = True
    primary, pdir = objectives[0], directions[0]
    sign = -1.0 if pdir == "maximize" else 1.0
    best = min(feasible, key=lambda r: (sign * float(r["metrics"][primary]), r["number"]))
    out["best"] = _design(best)
    # the pass/fail ppa constraint has no slack to speak of
    tight = max(((k, v) for k, v in best["constraints"].items() if k != PPA_CONSTRAINT), key=lambda kv: kv[1])
    out["tightest_limit"] = {"name": tight[0], "constraint": tight[1]}
    # A limit binds when an evaluated design better than the best violates that limit alone.
    binding: dict[str, dict[str, Any]] = {}
    for r in records:
        if sign * float(r["metrics"][primary]) >= sign * float(best["metrics"][primary]):
            continue
        violated = [c for c, v in r["constraints"].items() if v > 0]
        if len(violated) == 1:
            c = violated[0]
            if c not in binding or sign * float(r["metrics"][primary]) < sign * binding[c]["value"]:
                binding[c] = {"number": r["number"], "value": float(r["metrics"][primary])}
    out["binding_limits"] = sorted(binding)
    out["binding_evidence"] = {
        c: f"trial {b['number']} reaches {primary} {b['value']:.4g} and violates only {c}"
        for c, b in sorted(binding.items())
    }
    if len(objectives) > 1:
        pts = [tuple(float(r["metrics"][o]) for o in objectives) for r in feasible]
        idx = pareto_indices(pts, directions)
        front = sorted(
            (feasible[i] for i in idx), key=lambda r: (sign * float(r["metrics"][primary]), r["number"])
        )
        out["pareto"] = [_design(r) for r in front]
    return out


def _design(r: dict[str, Any]) -> dict[str, Any]:
    return {
        "number": r["number"],
        "params": r["params"],
        "metrics": r["metrics"],
        "constraints": r["constraints"],
    }


def write_json(path: Path, obj: Any) -> None:
    """Standard JSON (non-finite numbers -> null, listed under "non_finite"), written atomically
    and never through a symlink."""
    write_text(path, dumps(obj, absent=ABSENT, indent=2, sort_keys=False, default=_json_default) + "\n")


def _json_default(o: Any) -> Any:
    if isinstance(o, np.generic):
        return o.item()
    raise TypeError(f"not JSON serialisable: {type(o).__name__}")


# ---- the evaluator a study used ----------------------------------------------------------------


@dataclass
class Detail:
    """One design point re-evaluated: the flat metrics and, when the evaluator provides them
    (``evaluate_detail``), the ppa.model estimates, the per-workload sim.perf results, the
    quality evidence and the serving statistics the metrics were computed from."""

    point: dict[str, Any]
    metrics: dict[str, Any]
    ppa_by_workload: dict[str, Any] = field(default_factory=dict)  # workload name -> ppa.model.PPAResult
    networks: list[tuple[str, float, Any]] = field(
        default_factory=list
    )  # (name, weight, sim.perf.NetworkResult)
    workloads: dict[str, Any] = field(default_factory=dict)  # workload name -> sim.workloads.Workload
    quality: dict[str, Any] | None = None
    serving: dict[str, dict[str, Any]] | None = None  # workload name -> sim.serving statistics (a p99 SLA)

    @property
    def ppa(self) -> Any:
        """The first workload's estimate: its design-level facts (area, voltage, clock, fmax,
        logic depth) are the design's; per-workload figures come from the metrics."""
        return next(iter(self.ppa_by_workload.values()), None)

    @property
    def has_layers(self) -> bool:
        return bool(self.networks)


class Evaluator:
    """The evaluator module a study used, with its context made once (or ``ctx``, one made
    before). ``where`` names the caller in the one-line error for a module that cannot be imported."""

    def __init__(self, name: str, cfg: SweepConfig, *, where: str | None = "report", ctx: Any = None):
        try:
            self.mod = importlib.import_module(name)  # the evaluator is named by the study: loaded by name
        except ModuleNotFoundError as exc:
            raise InputError(f"cannot import evaluator module {name!r}: {exc}", where=where) from None
        self.name = name
        self.cfg = cfg
        self.ctx = self.mod.make_context(cfg) if ctx is None else ctx

    @property
    def has_detail(self) -> bool:
        return hasattr(self.mod, "evaluate_detail")

    def evaluate(self, point: dict[str, Any]) -> dict[str, Any]:
        return dict(self.mod.evaluate(dict(point), self.ctx))

    def evaluate_many(self, points: list[dict[str, Any]]) -> list[dict[str, Any]]:
        """Several points: the vectorised ``evaluate_batch`` when the evaluator has one."""
        if not points:
            return []
        if hasattr(self.mod, "evaluate_batch"):
            keys = list(points[0])
            cols = {}
            for k in keys:
                vals = [p[k] for p in points]
                cols[k] = np.array(vals, dtype=object if isinstance(vals[0], str) else None)
            out = self.mod.evaluate_batch(cols, self.ctx)
            return [{k: _scalar(v[i]) for k, v in out.items()} for i in range(len(points))]
        return [self.evaluate(p) for p in points]

    def detail(self, point: dict[str, Any]) -> Detail:
        """The metrics of ``point`` and, from the evaluator's ``evaluate_detail`` when it has one
        (explore.evaluator does), the per-workload ppa.model estimates, sim.perf per-layer results
        quality evidence and serving statistics behind them. An evaluator without it gives the metrics only, and the
        report says which sections it cannot show."""
        if not self.has_detail:
            return Detail(point=dict(point), metrics=self.evaluate(point))
        d = self.mod.evaluate_detail(dict(point), self.ctx)
        return Detail(
            point=dict(point),
            metrics=dict(d["metrics"]),
            ppa_by_workload=dict(d.get("ppa") or {}),
            networks=[(str(n), float(w), r) for n, w, r in d.get("networks") or []],
            workloads=dict(d.get("workloads") or {}),
            quality=d.get("quality"),
            serving=d.get("serving"),
        )


def _scalar(v: Any) -> Any:
    return v.item() if isinstance(v, np.generic) else v
