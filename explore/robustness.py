"""How far the verdict holds: the sparse advantage under every assumption's plausible range.

After a study, the :data:`TOP_DESIGNS` best distinct feasible designs of each side (sparse PEs,
dense PEs) on an objective are costed again under samples of the assumptions (ppa.assumptions,
``varied``; ranges from the config's ``[assumptions]`` where it sets them), in one numpy batch per
design (explore.evaluator.evaluate_under -> ppa.recost: no synthesis, STA or activity simulation):

* a one-dimensional grid of :data:`GRID_POINTS` log-spaced values over each assumption's range, the
  others at the model's values: its ends are the tornado (``low_advantage``, ``high_advantage``),
  and where the verdict changes along it is the value that flips it;
* ``[decision] samples`` joint samples (default 256): a Latin hypercube (scipy.stats.qmc, seeded with
  the study's seed), log-uniform within each range.

In every sample each side's best design is picked again among its designs that meet every limit
under that sample, and the advantage is best sparse / best dense - 1 on the objective (oriented so
that > 0 favours sparse; -1 when no sparse design meets the limits but a dense one does, +inf when
only sparse ones do, undefined when no design of either side does). Reported: the advantage at the
model's values, its median and 5-95 % interval over the joint samples where both sides have a
feasible design (``advantage_samples`` of them; the samples without a feasible design of one side
are counted beside it, and where none has both the interval is null with
``advantage_interval_reason``),
P(advantage >= [decision] margin) over all of them (a sample without any feasible design counts
against it), and the assumptions whose range alone flips the verdict (sparse >= margin, or not)
with the value where it flips. With several objectives, the same for
each (``per_objective``); the primary objective's figures are the top-level ones.
"""

from __future__ import annotations

import math
from typing import Any

import numpy as np
from scipy.stats import qmc

from explore.compare import is_sparse
from explore.config import SweepConfig, assumption_ranges
from explore.results import Evaluator, constraint_values
from explore.space import design_key
from ppa.assumptions import Assumption

#: Designs per side re-costed under the samples (the best distinct feasible ones on the objective).
TOP_DESIGNS = 10
#: Values per assumption on its one-dimensional grid (log-spaced over its range, ends included).
GRID_POINTS = 33
#: Flips the verdict line names (the rest are in best.json).
LINE_FLIPS = 3


def _top(records: list[dict[str, Any]], objective: str, direction: str, sparse: bool) -> list[dict[str, Any]]:
    sign = -1.0 if direction == "maximize" else 1.0
    seen, out = set(), []
    ok = [
        r
        for r in records
        if is_sparse(r["params"]) == sparse
        and all(v <= 0 for v in r["constraints"].values())
        and math.isfinite(float(r["metrics"].get(objective, math.nan)))
    ]
    for r in sorted(ok, key=lambda r: (sign * float(r["metrics"][objective]), r["number"])):
        k = design_key(r["params"])
        if k not in seen:
            seen.add(k)
            out.append(r)
        if len(out) == TOP_DESIGNS:
            break
    return out


def samples(
    ranges: dict[str, Assumption], n_joint: int, seed: int
) -> tuple[dict[str, np.ndarray], int, dict]:
    """(assumption name -> array of S values, S, layout): sample 0 at the model's values, then each
    varied assumption's grid (others at the model's values), then ``n_joint`` Latin-hypercube samples."""
    varied = [a for a in ranges.values() if a.varied]
    S = 1 + GRID_POINTS * len(varied) + n_joint
    cols = {a.name: np.full(S, a.value) for a in varied}
    layout: dict[str, Any] = {"grid": {}, "joint": slice(S - n_joint, S)}
    for j, a in enumerate(varied):
        lo = 1 + GRID_POINTS * j
        cols[a.name][lo : lo + GRID_POINTS] = np.geomspace(a.low, a.high, GRID_POINTS)
        layout["grid"][a.name] = slice(lo, lo + GRID_POINTS)
    u = qmc.LatinHypercube(d=len(varied), rng=seed).random(n_joint)
    for j, a in enumerate(varied):
        cols[a.name][S - n_joint :] = a.low * (a.high / a.low) ** u[:, j]
    return cols, S, layout


def _ratios(
    metrics: list[dict[str, np.ndarray]],
    cfg: SweepConfig,
    sparse: np.ndarray,
    objective: str,
    direction: str,
    S: int,
) -> np.ndarray:
    """best sparse / best dense on ``objective`` per sample (oriented: > 1 favours sparse; 0 without a
    feasible sparse design, inf without a feasible dense one, NaN without either)."""
    sign = 1.0 if direction == "maximize" else -1.0
    score = np.full((len(metrics), S), -np.inf)
    for i, m in enumerate(metrics):
        cons = constraint_values(cfg, m, lambda v: np.asarray(v, dtype=float))
        ok = np.all(np.stack([c <= 0 for c in cons.values()]), axis=0)
        v = np.asarray(m[objective], float)
        score[i] = np.where(ok & np.isfinite(v) & (v > 0), sign * v, -np.inf)
    bs = score[sparse].max(axis=0) if sparse.any() else np.full(S, -np.inf)
    bd = score[~sparse].max(axis=0) if (~sparse).any() else np.full(S, -np.inf)
    with np.errstate(divide="ignore", invalid="ignore"):
        a, b = sign * bs, sign * bd  # the values back (positive)
        r = a / b if direction == "maximize" else b / a
    return np.where(
        np.isinf(bs) & np.isinf(bd), np.nan, np.where(np.isinf(bs), 0.0, np.where(np.isinf(bd), np.inf, r))
    )


def _adv(r: float) -> float | None:
    """A ratio as an advantage (ratio - 1), None where it is not finite (no feasible dense design, or none at all)."""
    return float(r - 1.0) if math.isfinite(r) else None


def summarise(r: np.ndarray, layout: dict, ranges: dict[str, Assumption], margin: float) -> dict[str, Any]:
    """The robustness figures of one objective from its ratios ``r`` (best sparse / best dense per
    sample, as :func:`_ratios` gives them; ``layout`` says which entries are the nominal point, the
    joint samples and each assumption's grid). Every figure is a finite number or None."""
    joint = r[layout["joint"]]
    ok0 = bool(r[0] >= 1.0 + margin)
    # the interval is over the samples where both sides have a feasible design: elsewhere the advantage
    # does not exist (no dense design: no ratio; no sparse design: -100 % by convention), and those samples
    # are counted beside it, never folded in as a stand-in number
    both = joint[np.isfinite(joint) & (joint > 0.0)]
    p05: float | None
    med: float | None
    p95: float | None
    p05, med, p95 = (
        (float(x) - 1.0 for x in np.percentile(both, [5, 50, 95])) if len(both) else (None, None, None)
    )
    tornado, flips = [], []
    for name, sl in layout["grid"].items():
        g, vals = r[sl], np.geomspace(ranges[name].low, ranges[name].high, GRID_POINTS)
        tornado.append(
            {
                "name": name,
                "low": float(vals[0]),
                "high": float(vals[-1]),
                "value": ranges[name].value,
                "low_advantage": _adv(g[0]),
                "high_advantage": _adv(g[-1]),
            }
        )
        verdict = g >= 1.0 + margin
        if (verdict != ok0).any():
            # walk from the model's value outward to the nearer end where the verdict changes
            nom = ranges[name].value
            up = [i for i in range(GRID_POINTS) if vals[i] > nom]
            down = [i for i in reversed(range(GRID_POINTS)) if vals[i] < nom]
            hit = [(i, ">=") for i in up if verdict[i] != ok0][:1] + [
                (i, "<=") for i in down if verdict[i] != ok0
            ][:1]
            i, op = min(hit, key=lambda h: abs(math.log(vals[h[0]] / nom))) if hit else (0, "<=")
            flips.append({"name": name, "op": op, "value": float(vals[i]), "advantage": _adv(g[i])})
    tornado.sort(
        key=lambda t: (
            -abs(
                (t["high_advantage"] if t["high_advantage"] is not None else 1e9)
                - (t["low_advantage"] if t["low_advantage"] is not None else 1e9)
            )
        )
    )
    flips.sort(key=lambda f: abs(math.log(f["value"] / ranges[f["name"]].value)))
    return {
        "advantage_nominal": _adv(r[0]),
        "advantage_median": med,
        "advantage_p05": p05,
        "advantage_p95": p95,
        "advantage_samples": int(len(both)),
        "advantage_interval_reason": (
            None if len(both) else "no joint sample leaves a feasible design on both sides"
        ),
        "p_advantage_ge_margin": float(np.mean(np.nan_to_num(joint, nan=0.0) >= 1.0 + margin)),
        "samples": int(len(joint)),
        "samples_without_feasible_design": int(np.sum(np.isnan(joint))),
        "samples_without_feasible_sparse": int(np.sum(joint == 0.0)),
        "samples_without_feasible_dense": int(np.sum(np.isinf(joint))),
        "flips": [f["name"] for f in flips],
        "flip_points": flips,
        "tornado": tornado,
        "sample_advantages": [None if not math.isfinite(x) else float(x - 1.0) for x in joint],
    }


def verdict_line(rob: dict[str, Any]) -> str:
    """'sparse +13.7 % (5-95 %: +4 ... +22 %), P(>= 5 %) = 0.81; flips if lpddr5_phy_area_mm2 >= 1.6'."""

    def pc(x: float | None, digits: int) -> str:
        return "n/a" if x is None or not math.isfinite(x) else f"{x * 100:+.{digits}f} %"

    adv = rob.get("advantage_nominal")
    n, both = rob["samples"], rob.get("advantage_samples", rob["samples"])
    if rob["advantage_p05"] is None:
        interval = (
            f"5-95 %: n/a, {rob.get('advantage_interval_reason') or 'no sample has both sides feasible'}"
        )
    else:
        interval = f"5-95 %: {pc(rob['advantage_p05'], 0)[:-2]} ... {pc(rob['advantage_p95'], 0)}"
    one_sided = rob.get("samples_without_feasible_dense", 0) + rob.get("samples_without_feasible_sparse", 0)
    if one_sided:  # samples where one side alone has a design: the interval leaves them out, counted here
        lack = [
            f"{what} in {k}"
            for what, k in (
                ("no feasible dense design", rob.get("samples_without_feasible_dense", 0)),
                ("no feasible sparse design", rob.get("samples_without_feasible_sparse", 0)),
                ("no feasible design of either side", rob.get("samples_without_feasible_design", 0)),
            )
            if k
        ]
        interval += f" over the {both} of {n} samples with both sides feasible; " + ", ".join(lack)
    head = f"sparse {pc(adv, 1)} ({interval}), P(>= {rob['margin'] * 100:g} %) = {rob['p_advantage_ge_margin']:.2f}"
    if not rob["flip_points"]:
        return head + "; no single range flips it"
    parts = [f"{f['name']} {f['op']} {f['value']:.3g}" for f in rob["flip_points"][:LINE_FLIPS]]
    more = len(rob["flip_points"]) - LINE_FLIPS
    return head + "; flips if " + ", or ".join(parts) + (f" (and {more} more)" if more > 0 else "")


def robustness(records: list[dict[str, Any]], cfg: SweepConfig, ev: Evaluator) -> dict[str, Any] | None:
    """best.json's ``robustness`` for the study's records (the dense study's included), or None when
    the evaluator cannot re-cost designs (no ``evaluate_under``) or a side has no feasible design."""
    if not hasattr(ev.mod, "evaluate_under"):
        return None
    objectives, directions = cfg.objectives.names(), cfg.objectives.directions()
    tops = {
        o: (_top(records, o, d, True), _top(records, o, d, False))
        for o, d in zip(objectives, directions, strict=True)
    }
    if not tops[objectives[0]][0] or not tops[objectives[0]][1]:
        return None
    designs: dict[str, dict[str, Any]] = {}
    for sparse_top, dense_top in tops.values():
        for rec in sparse_top + dense_top:
            designs.setdefault(design_key(rec["params"]), rec)
    ranges = assumption_ranges(cfg)
    cols, S, layout = samples(ranges, cfg.decision.samples, cfg.study.seed)
    keys = list(designs)
    metrics = dict(
        zip(keys, ev.mod.evaluate_under([designs[k]["params"] for k in keys], ev.ctx, cols, S), strict=True)
    )
    per = []
    for o, d in zip(objectives, directions, strict=True):
        chosen = [design_key(r["params"]) for r in tops[o][0] + tops[o][1]]
        sparse = np.array([is_sparse(designs[k]["params"]) for k in chosen])
        ratios = _ratios([metrics[k] for k in chosen], cfg, sparse, o, d, S)
        per.append(
            {
                "objective": o,
                "direction": d,
                "designs_per_side": [len(tops[o][0]), len(tops[o][1])],
                **summarise(ratios, layout, ranges, cfg.decision.margin),
            }
        )
    out = {k: v for k, v in per[0].items() if k not in ("objective", "direction")}
    out.update(
        {
            "objective": objectives[0],
            "margin": cfg.decision.margin,
            "min_confidence": cfg.decision.min_confidence,
            "seed": cfg.study.seed,
            "method": "Latin hypercube, log-uniform within each range (scipy.stats.qmc)",
            "not_varied": [a.name for a in ranges.values() if not a.varied],
        }
    )
    out["line"] = verdict_line(out)
    if len(per) > 1:
        for p in per:
            p["line"] = verdict_line({**p, "margin": cfg.decision.margin})
            p.pop("sample_advantages")
        out["per_objective"] = per
    return out


def confident(rob: dict[str, Any] | None) -> bool:
    """SHIP's robustness rule: P(advantage >= margin) >= min_confidence."""
    return rob is not None and rob["p_advantage_ge_margin"] >= rob["min_confidence"]


#: Relative step of the assumption shares (central difference in log space).
SHARE_STEP = 0.01
#: The share above which the report's model-limits box names an assumption (issue: "sets more than 10 %").
SHARE_LIMIT = 0.10


def assumption_shares(point: dict[str, Any], cfg: SweepConfig, ev: Evaluator) -> list[dict[str, Any]]:
    """How much of one design's power and area each varied assumption sets: the elasticity
    |d ln(power) / d ln(value)| (and the same for area) at the model's values, by a central
    difference of +-:data:`SHARE_STEP` in log space (explore.evaluator.evaluate_under, no synthesis).

    For a constant that scales one part (the LPDDR5 PHY area, a DRAM energy per bit) the elasticity
    is that part's share of the total; for one that acts through the operating point (FO4, the wire
    allowance) it is how strongly power or area follows it. Rows sorted by the larger of the two, each
    with the assumption's value, range, unit, tag and reason; [] when the evaluator cannot re-cost."""
    if not hasattr(ev.mod, "evaluate_under"):
        return []
    ranges = [a for a in assumption_ranges(cfg).values() if a.varied]
    S = 1 + 2 * len(ranges)
    cols = {a.name: np.full(S, a.value) for a in ranges}
    for j, a in enumerate(ranges):
        cols[a.name][1 + 2 * j] = a.value * (1.0 + SHARE_STEP)
        cols[a.name][2 + 2 * j] = a.value / (1.0 + SHARE_STEP)
    m = ev.mod.evaluate_under([point], ev.ctx, cols, S)[0]
    power, area = np.asarray(m["power_w"], float), np.asarray(m["area_mm2"], float)
    step = 2.0 * math.log1p(SHARE_STEP)
    rows: list[dict[str, Any]] = []
    for j, a in enumerate(ranges):
        hi, lo = 1 + 2 * j, 2 + 2 * j
        with np.errstate(divide="ignore", invalid="ignore"):
            ps = abs(math.log(power[hi] / power[lo])) / step if power[hi] > 0 and power[lo] > 0 else math.nan
            ar = abs(math.log(area[hi] / area[lo])) / step if area[hi] > 0 and area[lo] > 0 else math.nan
        rows.append(
            {
                "name": a.name,
                "power_share": ps,
                "area_share": ar,
                "value": a.value,
                "low": a.low,
                "high": a.high,
                "unit": a.unit,
                "tag": a.tag,
                "reason": a.reason,
            }
        )
    rows.sort(key=lambda r: -max(np.nan_to_num(r["power_share"]), np.nan_to_num(r["area_share"])))
    return rows
