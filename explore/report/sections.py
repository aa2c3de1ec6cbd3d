"""Sections 2-6 of the report: the PPA tradeoff (summary, Pareto front, sensitivity); the best
design's area, power, operating point and thermal are explore.report.best_design, the per-layer
view is explore.report.layers.

Every number comes from the stored study (explore.trials.study_records / explore.results.summarise,
the functions behind ``best.json``) or from re-evaluating a design with the study's evaluator
(:class:`explore.results.Evaluator`), never from a constant in this file. The thresholds that turn
numbers into words are named constants and are printed in the report beside the verdict they
produce (the decision's in explore.report.decision, the bottleneck's in explore.report.bottleneck).
"""

from __future__ import annotations

import math
from typing import Any

import numpy as np
import pandas as pd

from explore.metrics import BY_NAME, REPORT_METRICS
from explore.report.data import StudyData
from explore.report.document import Section, Table
from explore.report.figures import FEASIBLE_LABEL, Figure, Line
from explore.report.format import (
    constraint_metric,
    describe_constraint,
    fmt,
    limit_value,
    num,
    pct,
    point_label,
)
from explore.results import PPA_CONSTRAINT, TIMING_CONSTRAINT, Evaluator, constraint_values
from explore.space import axis_choices, is_integer_axis

#: Sensitivity: at most this many values per axis in the one-at-a-time sweeps.
OAT_MAX_VALUES = 8


def _status(rec: dict[str, Any]) -> str:
    if rec["feasible"]:
        return FEASIBLE_LABEL
    worst = max(rec["constraints"].items(), key=lambda kv: kv[1])
    return f"fails {worst[0]}"


def _pareto_mask(x: np.ndarray, y: np.ndarray) -> np.ndarray:
    """Non-dominated points maximising y and minimising x (vectorised, O(n^2) booleans)."""
    if len(x) == 0:
        return np.zeros(0, bool)
    better_eq = (y[None, :] >= y[:, None]) & (x[None, :] <= x[:, None])
    strictly = (y[None, :] > y[:, None]) | (x[None, :] < x[:, None])
    dominated = np.any(better_eq & strictly, axis=1)
    return ~dominated


# =====================================================================================================
# 1. Summary
# =====================================================================================================


def section_summary(data: StudyData) -> Section:
    cfg = data.cfg
    s = Section(1, "summary", "Summary", "ppa")
    best = data.best
    wl = "; ".join(
        f"{w.name} (weight {fmt(w.weight)}" + (f", {w.params}" if w.params else "") + ")"
        for w in cfg.workload
    )
    s.bullets.append(f"Workload mix: {wl}")
    space = []
    for a in cfg.space.active_axes():
        ch = axis_choices(cfg.space, a)
        if ch is not None:
            space.append(f"{a} in {{{', '.join(map(str, ch))}}}")
        else:
            r = cfg.space.axis(a)
            space.append(
                f"{a} in [{fmt(r.min)}, {fmt(r.max)}]"
                + (f" step {fmt(r.step)}" if r.step else "")
                + (" (log)" if r.log else "")
            )
    s.bullets.append("Design space: " + "; ".join(space))
    lim = cfg.limits.active()
    s.bullets.append(
        "Limits: "
        + ("; ".join(f"{k} = {fmt(v)}" for k, v in lim.items()) or "none")
        + f"; always: clock <= fmax ({TIMING_CONSTRAINT})"
    )
    s.bullets.append(
        "Objectives: "
        + ", ".join(f"{o} ({d})" for o, d in zip(data.objectives, data.directions, strict=True))
    )
    n_ev, n_fe = best["n_evaluated"], best["n_feasible"]
    states = ", ".join(f"{v} {k.lower()}" for k, v in sorted(data.state_counts.items()))
    s.bullets.append(f"Trials: {n_ev} evaluated ({states}); {n_fe} feasible")
    if best.get("feasible"):
        b = best["best"]
        s.paras.append(f"Best feasible design: trial {b['number']}: {point_label(b['params'])}.")
        t = Table("Best feasible design", ["metric", "value"], [])
        for k in REPORT_METRICS:
            if k in b["metrics"]:
                t.rows.append([k, fmt(b["metrics"][k], BY_NAME[k].digits)])
        s.tables.append(t)
        tight = best["tightest_limit"]
        slack = -float(tight["constraint"])
        word = "binds" if slack < 0.05 else "is the closest to binding"
        s.verdict = (
            f"The limit that {word}: "
            + describe_constraint(data, tight["name"], tight["constraint"], b["metrics"])
            + "."
        )
        if "pareto" in best:
            s.paras.append(
                f"The feasible Pareto set of the objectives holds {len(best['pareto'])} designs "
                f"(the Pareto front section and best.json)."
            )
    else:
        s.paras.append(f"No feasible design among {n_ev} evaluated. " + (best.get("message", "") + "."))
        s.verdict = (
            "Limits that bind: "
            + (", ".join(best.get("binding_limits", [])) or "none (no trial finished)")
            + "."
        )
    s.tables.append(_limit_table(data))
    return s


def _limit_table(data: StudyData) -> Table:
    """Per limit: how often it failed and how close the closest design came (by how much it binds)."""
    t = Table(
        "How each limit binds (normalised constraint: (metric - limit) / limit; > 0 fails)",
        ["limit", "value", "trials failing", "closest design", "best normalised value", "metric there"],
        [],
        name="limits",
    )
    recs = data.records
    for c in data.constraint_names:
        vals = [(r["constraints"].get(c), r) for r in recs if c in r["constraints"]]
        if not vals:
            continue
        fails = sum(1 for v, _ in vals if v > 0)
        v, r = min(vals, key=lambda vr: (vr[0], vr[1]["number"]))
        lim = limit_value(data, c)
        t.rows.append(
            [
                c,
                {TIMING_CONSTRAINT: "clock <= fmax", PPA_CONSTRAINT: "can operate"}.get(c, fmt(lim)),
                f"{fails}/{len(vals)}",
                f"trial {r['number']}",
                f"{v:+.4g}",
                fmt(constraint_metric(c, r["metrics"])),
            ]
        )
    return t


# =====================================================================================================
# 2. Pareto front
# =====================================================================================================


def section_pareto(data: StudyData) -> Section:
    s = Section(2, "pareto", "Pareto front", "ppa")
    recs = [r for r in data.records if num(r["metrics"].get("perf_per_watt")) is not None]
    rows = []
    for r in recs:
        m = r["metrics"]
        rows.append(
            {
                "number": r["number"],
                **{f"p_{k}": v for k, v in r["params"].items()},
                "perf_per_watt": num(m.get("perf_per_watt")),
                "area_mm2": num(m.get("area_mm2")),
                "latency_ms": num(m.get("latency_ms")),
                "p99_latency_ms": num(m.get("p99_latency_ms")),
                "status": _status(r),
                "feasible": int(r["feasible"]),
            }
        )
    df = pd.DataFrame(
        rows,
        columns=[
            "number",
            *[f"p_{a}" for a in data.cfg.space.active_axes()],
            "perf_per_watt",
            "area_mm2",
            "latency_ms",
            "p99_latency_ms",
            "status",
            "feasible",
        ],
    )
    if df.empty:
        s.paras.append("No finished trial: nothing to plot.")
        return s
    df["label"] = [f"trial {n}" for n in df["number"]]
    fe = df["feasible"].to_numpy() == 1
    x = df["area_mm2"].to_numpy(float)
    y = df["perf_per_watt"].to_numpy(float)
    pm = np.zeros(len(df), bool)
    idx = np.flatnonzero(fe & np.isfinite(x) & np.isfinite(y))
    pm[idx] = _pareto_mask(x[idx], y[idx])
    df["pareto_area"] = pm.astype(int)
    front = df[pm].sort_values("area_mm2")
    lines = (
        [Line("feasible Pareto front", list(front["area_mm2"]), list(front["perf_per_watt"]), "solid")]
        if len(front)
        else []
    )
    s.figures.append(
        Figure(
            "pareto_area",
            "Perf-per-watt against area (colour: feasible, or the limit that failed worst)",
            "scatter",
            df,
            "area_mm2",
            "perf_per_watt",
            "area (mm^2)",
            "perf per watt (TOPS/W)",
            color="status",
            hover="label",
            lines=lines,
        )
    )
    s.paras.append(
        f"{int(fe.sum())} of {len(df)} finished designs are feasible; {int(pm.sum())} of them are on the "
        f"perf-per-watt / area front."
    )
    lat_obj = next((o for o in data.objectives if o in ("latency_ms", "p99_latency_ms")), None)
    if lat_obj is not None and df[lat_obj].notna().any():
        xl = df[lat_obj].to_numpy(float)
        pl = np.zeros(len(df), bool)
        idl = np.flatnonzero(fe & np.isfinite(xl) & np.isfinite(y))
        pl[idl] = _pareto_mask(xl[idl], y[idl])
        df["pareto_latency"] = pl.astype(int)
        fl = df[pl].sort_values(lat_obj)
        s.figures.append(
            Figure(
                "pareto_latency",
                f"Perf-per-watt against {lat_obj}",
                "scatter",
                df,
                lat_obj,
                "perf_per_watt",
                f"{lat_obj} (ms)",
                "perf per watt (TOPS/W)",
                color="status",
                hover="label",
                lines=[Line("feasible Pareto front", list(fl[lat_obj]), list(fl["perf_per_watt"]), "solid")]
                if len(fl)
                else [],
            )
        )
    else:
        s.paras.append("No latency objective is set, so there is no perf-per-watt / latency front.")
    t = Table(
        "Feasible Pareto designs (perf-per-watt / area)", ["trial", "design", "perf_per_watt", "area_mm2"], []
    )
    for _, r in front.sort_values("perf_per_watt", ascending=False).head(10).iterrows():
        rec = next(q for q in recs if q["number"] == r["number"])
        t.rows.append(
            [str(int(r["number"])), point_label(rec["params"]), fmt(r["perf_per_watt"]), fmt(r["area_mm2"])]
        )
    if t.rows:
        s.tables.append(t)
    return s


# =====================================================================================================
# 5. Sensitivity
# =====================================================================================================


def _oat_values(data: StudyData, axis: str, centre: Any) -> list[Any]:
    ch = axis_choices(data.cfg.space, axis)
    if ch is not None:
        vals = list(ch)
    else:
        r = data.cfg.space.axis(axis)
        if r.min == r.max:
            vals = [r.min]
        elif r.step is not None:
            n = int(math.floor((r.max - r.min) / r.step + 1e-9)) + 1
            vals = [r.min + i * r.step for i in range(n)]
        elif r.log:
            vals = list(np.geomspace(r.min, r.max, r.grid_points or 7))
        else:
            vals = list(np.linspace(r.min, r.max, r.grid_points or 7))
        vals = [int(round(v)) if is_integer_axis(axis) else float(v) for v in vals]
    if len(vals) > OAT_MAX_VALUES:
        pick = np.unique(np.linspace(0, len(vals) - 1, OAT_MAX_VALUES).round().astype(int))
        vals = [vals[i] for i in pick]
    if centre not in vals:
        vals.append(centre)
    try:
        vals = sorted(set(vals), key=lambda v: (float(v), 0) if not isinstance(v, str) else (0, v))
    except TypeError:
        pass
    return vals


OAT_FEASIBLE = "feasible"
OAT_INFEASIBLE = "infeasible (fails a limit, see the table)"


def oat_frame(data: StudyData, ev: Evaluator, centre: dict[str, Any]) -> pd.DataFrame:
    rows, points = [], []
    for axis in data.cfg.space.active_axes():
        vals = _oat_values(data, axis, centre[axis])
        if len(vals) < 2:
            continue
        for v in vals:
            p = dict(centre)
            p[axis] = v
            points.append(p)
            rows.append({"axis": axis, "value": v, "is_centre": v == centre[axis]})
    metrics = ev.evaluate_many(points)
    base = next((mm for r, mm in zip(rows, metrics, strict=True) if r["is_centre"]), None)
    b = num(base["perf_per_watt"]) if base else None
    for r, mm in zip(rows, metrics, strict=True):
        ppw = num(mm.get("perf_per_watt"))
        r["perf_per_watt"] = ppw
        r["change_vs_centre"] = (ppw / b - 1.0) if (ppw is not None and b) else None
        cons = constraint_values(data.cfg, mm)
        bad = sorted(c for c, v in cons.items() if v > 0)
        r["feasible"] = int(not bad)
        r["fails"] = ";".join(bad)
        r["label"] = f"{r['axis']}={r['value']}"
    return pd.DataFrame(
        rows,
        columns=[
            "axis",
            "value",
            "label",
            "is_centre",
            "perf_per_watt",
            "change_vs_centre",
            "feasible",
            "fails",
        ],
    )


def section_sensitivity(
    data: StudyData, ev: Evaluator, centre: dict[str, Any] | None, subject: str
) -> tuple[Section, pd.DataFrame]:
    s = Section(5, "sensitivity", "Sensitivity", "ppa")
    if data.importances:
        di = pd.DataFrame(
            {"parameter": list(data.importances), "importance": list(data.importances.values())}
        )
        di = di.sort_values("importance")
        s.figures.append(
            Figure(
                "importances",
                f"Parameter importances for {data.cfg.objectives.primary}",
                "hbar",
                di,
                "parameter",
                "importance",
                "importance (share)",
                "",
            )
        )
    s.paras.append(data.importance_note)
    if centre is None:
        s.paras.append("No finished trial: no design to sweep around.")
        return s, pd.DataFrame()
    df = oat_frame(data, ev, centre)
    if df.empty:
        s.paras.append("Every axis of the space has a single value: no one-at-a-time sweep.")
        return s, df
    s.paras.append(
        f"One-at-a-time sweeps around {subject}: each axis moved alone over its values (at most "
        f"{OAT_MAX_VALUES}), every point re-evaluated with {ev.name}. Perf-per-watt change against the "
        f"centre; infeasible points name the limits they fail."
    )
    bars = df.copy()  # one series per feasibility, so infeasible points stand out in their own colour
    bars[OAT_FEASIBLE] = [
        c if f else None for c, f in zip(bars["change_vs_centre"], bars["feasible"], strict=True)
    ]
    bars[OAT_INFEASIBLE] = [
        None if f else c for c, f in zip(bars["change_vs_centre"], bars["feasible"], strict=True)
    ]
    s.figures.append(
        Figure(
            "sensitivity_oat",
            "Perf-per-watt change when one parameter moves (centre = 0)",
            "bar",
            bars,
            "label",
            [OAT_FEASIBLE, OAT_INFEASIBLE],
            "parameter = value",
            "change vs centre (fraction)",
        )
    )
    t = Table(
        "One-at-a-time sweeps",
        ["axis", "value", "perf_per_watt", "change", "feasible", "fails"],
        [],
        name="sensitivity_oat_table",
    )
    for _, r in df.iterrows():
        t.rows.append(
            [
                r["axis"],
                str(r["value"]) + (" (centre)" if r["is_centre"] else ""),
                fmt(r["perf_per_watt"]),
                pct(r["change_vs_centre"]),
                fmt(bool(r["feasible"])),
                r["fails"],
            ]
        )
    s.tables.append(t)
    swing = df.groupby("axis")["perf_per_watt"].agg(lambda v: float(np.nanmax(v) - np.nanmin(v)))
    if len(swing):
        top = swing.idxmax()
        s.verdict = f"Largest one-at-a-time swing: {top} moves perf-per-watt by {fmt(swing[top])} TOPS/W."
    return s, df
