"""The twelve sections of the sparsepe reports, as plain data (text, tables, figures).

Sections 1-5 make the PPA tradeoff report, 6-12 the sparsity deployment report. Every number
comes from the stored study (``explore.study.study_records`` / ``summarise``, the same functions
behind ``best.json``) or from re-evaluating a design with the study's evaluator
(:class:`explore.report.data.Evaluator`), never from a constant in this file. The few thresholds
that turn numbers into words (the decision rules, the bottleneck rules) are named constants below
and are printed in the report beside the verdict they produce.
"""

from __future__ import annotations

import math
from dataclasses import dataclass, field
from typing import Any

import numpy as np
import pandas as pd

from explore.config import LIMIT_CONSTRAINTS, axis_choices, is_integer_axis
from explore.report.data import Detail, Evaluator, StudyData
from explore.report.figures import FEASIBLE_LABEL, Figure, Line
from explore.study import PPA_CONSTRAINT, TIMING_CONSTRAINT, constraint_values

# ---- thresholds of the rules (printed in the report) -----------------------------------------------

# The report's rule thresholds below are our stated assumptions [A], not published figures.
#: Decision: the effective speedup must reach this share of the ideal (Amdahl) bound to ship outright.
SHIP_SPEEDUP_SHARE_OF_IDEAL = 0.75
#: Decision: a limit with less normalised slack than this is "binding"; shipping on it is bounded.
SHIP_MIN_SLACK = 0.05
#: Bottleneck: a stall fraction above this makes memory a candidate mechanism.
MEMORY_STALL_SHARE = 0.10
#: Sensitivity: at most this many values per axis in the one-at-a-time sweeps.
OAT_MAX_VALUES = 8
#: Rejected alternatives listed in the decision section.
N_REJECTED = 5

#: metric -> limit key (reverse of LIMIT_CONSTRAINTS), and the limit's mechanism for the bottleneck section.
METRIC_LIMIT = {v: k for k, v in LIMIT_CONSTRAINTS.items()}
MECHANISM = {
    "stall_fraction": "memory",
    "tj_c": "thermal",
    "power_density_w_mm2": "thermal",
    "area_mm2": "compute",
    "p99_latency_ms": "scheduling",
    "quality_delta": "precision",
    TIMING_CONSTRAINT: "compute",
    PPA_CONSTRAINT: "thermal",
}
UNITS = {"stall_fraction": "", "tj_c": "C", "power_density_w_mm2": "W/mm^2", "area_mm2": "mm^2",
         "p99_latency_ms": "ms", "quality_delta": "(fraction)", TIMING_CONSTRAINT: "MHz",
         PPA_CONSTRAINT: ""}
#: Metrics shown for a design wherever they exist, in this order.
KEY_METRICS = ("perf_per_watt", "effective_tops", "power_w", "area_mm2", "clock_mhz", "fmax_at_voltage_mhz",
               "voltage_v", "tj_c", "power_density_w_mm2", "stall_fraction", "speedup_vs_dense_design",
               "speedup_vs_iso_area_dense", "perf_per_watt_vs_dense_design", "area_vs_dense_design",
               "effective_speedup", "ideal_speedup",
               "fallback_fraction", "latency_ms", "p99_latency_ms", "p99_latency_lo_ms", "p99_latency_hi_ms",
               "p95_latency_ms", "ttft_p99_ms", "tpot_p99_ms", "energy_per_inference_mj", "quality_delta")


def fmt(v: Any, digits: int = 4) -> str:
    """How every number appears in the report (and how the tests look for it)."""
    if v is None:
        return "n/a"
    if isinstance(v, (bool, np.bool_)):
        return "yes" if v else "no"
    if isinstance(v, (int, np.integer)):
        return f"{int(v):,}"
    if isinstance(v, (float, np.floating)):
        f = float(v)
        if not math.isfinite(f):
            return str(f)
        if 1000 <= abs(f) < 1e15:
            return f"{f:,.0f}"
        return f"{f:.{digits}g}"
    return str(v)


def pct(v: float | None, digits: int = 1) -> str:
    return "n/a" if v is None or not math.isfinite(float(v)) else f"{100 * float(v):.{digits}f} %"


@dataclass
class Table:
    title: str
    columns: list[str]
    rows: list[list[str]]
    name: str | None = None  # CSV file stem when the table is data behind a claim


@dataclass
class Section:
    number: int
    key: str
    title: str
    report: str  # "ppa" or "sparsity"
    paras: list[str] = field(default_factory=list)
    bullets: list[str] = field(default_factory=list)
    tables: list[Table] = field(default_factory=list)
    figures: list[Figure] = field(default_factory=list)
    verdict: str | None = None
    pre: list[tuple[str, str]] = field(default_factory=list)  # (caption, preformatted text)
    data: dict[str, pd.DataFrame] = field(default_factory=dict)  # extra CSV files (stem -> raw data)
    links: list[tuple[str, str]] = field(default_factory=list)  # (label, path relative to the report)


def _point_label(params: dict[str, Any]) -> str:
    return ", ".join(f"{k}={v}" for k, v in params.items())


def _limit_value(data: StudyData, cname: str) -> float | None:
    if cname in (TIMING_CONSTRAINT, PPA_CONSTRAINT):
        return None
    return data.cfg.limits.active().get(METRIC_LIMIT[cname])


def _metric_of_constraint(cname: str, m: dict[str, Any]) -> float | None:
    if cname == TIMING_CONSTRAINT:
        return _f(m.get("clock_mhz"))
    if cname == PPA_CONSTRAINT:
        return _f(m.get("ppa_infeasible"))
    return _f(m.get(cname))


def _f(v: Any) -> float | None:
    try:
        f = float(v)
    except (TypeError, ValueError):
        return None
    return f


def _status(rec: dict[str, Any]) -> str:
    if rec["feasible"]:
        return FEASIBLE_LABEL
    worst = max(rec["constraints"].items(), key=lambda kv: kv[1])
    return f"fails {worst[0]}"


def _describe_constraint(data: StudyData, cname: str, value: float, m: dict[str, Any]) -> str:
    """A constraint value in words: '12.0 % over the 85 C limit (T_j 89.4 C)'."""
    metric = _metric_of_constraint(cname, m)
    if cname == TIMING_CONSTRAINT:
        return (f"clock {fmt(m.get('clock_mhz'))} MHz vs fmax {fmt(m.get('fmax_mhz'))} MHz "
                f"({pct(abs(value))} {'over' if value > 0 else 'under'})")
    if cname == PPA_CONSTRAINT:
        return ("ppa.model: the design cannot operate (thermal runaway, power density above the cooling limit "
                "or DRAM traffic above its bandwidth)" if value > 0 else "ppa.model: the design can operate")
    lim = _limit_value(data, cname)
    side = "over" if value > 0 else "under"
    unit = UNITS.get(cname, "")
    return f"{cname} {fmt(metric)} {unit} vs limit {fmt(lim)} {unit}: {pct(abs(value))} {side}".replace("  ", " ")


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
    wl = "; ".join(f"{w.name} (weight {fmt(w.weight)}" + (f", {w.params}" if w.params else "") + ")" for w in cfg.workload)
    s.bullets.append(f"Workload mix: {wl}")
    space = []
    for a in cfg.space.active_axes():
        ch = axis_choices(cfg.space, a)
        if ch is not None:
            space.append(f"{a} in {{{', '.join(map(str, ch))}}}")
        else:
            r = cfg.space.axis(a)
            space.append(f"{a} in [{fmt(r.min)}, {fmt(r.max)}]" + (f" step {fmt(r.step)}" if r.step else "")
                         + (" (log)" if r.log else ""))
    s.bullets.append("Design space: " + "; ".join(space))
    lim = cfg.limits.active()
    s.bullets.append("Limits: " + ("; ".join(f"{k} = {fmt(v)}" for k, v in lim.items()) or "none")
                     + f"; always: clock <= fmax ({TIMING_CONSTRAINT})")
    s.bullets.append("Objectives: " + ", ".join(f"{o} ({d})" for o, d in zip(data.objectives, data.directions)))
    n_ev, n_fe = best["n_evaluated"], best["n_feasible"]
    states = ", ".join(f"{v} {k.lower()}" for k, v in sorted(data.state_counts.items()))
    s.bullets.append(f"Trials: {n_ev} evaluated ({states}); {n_fe} feasible")
    if best.get("feasible"):
        b = best["best"]
        s.paras.append(f"Best feasible design: trial {b['number']}: {_point_label(b['params'])}.")
        t = Table("Best feasible design", ["metric", "value"], [])
        for k in KEY_METRICS:
            if k in b["metrics"]:
                t.rows.append([k, fmt(b["metrics"][k])])
        s.tables.append(t)
        tight = best["tightest_limit"]
        slack = -float(tight["constraint"])
        word = "binds" if slack < 0.05 else "is the closest to binding"
        s.verdict = (f"The limit that {word}: " + _describe_constraint(data, tight["name"], tight["constraint"], b["metrics"])
                     + ".")
        if "pareto" in best:
            s.paras.append(f"The feasible Pareto set of the objectives holds {len(best['pareto'])} designs "
                           f"(the Pareto front section and best.json).")
    else:
        s.paras.append(f"No feasible design among {n_ev} evaluated. " + (best.get("message", "") + "."))
        s.verdict = "Limits that bind: " + (", ".join(best.get("binding_limits", [])) or "none (no trial finished)") + "."
    s.tables.append(_limit_table(data))
    return s


def _limit_table(data: StudyData) -> Table:
    """Per limit: how often it failed and how close the closest design came (by how much it binds)."""
    t = Table("How each limit binds (normalised constraint: (metric - limit) / limit; > 0 fails)",
              ["limit", "value", "trials failing", "closest design", "best normalised value", "metric there"], [],
              name="limits")
    recs = data.records
    for c in data.constraint_names:
        vals = [(r["constraints"].get(c), r) for r in recs if c in r["constraints"]]
        if not vals:
            continue
        fails = sum(1 for v, _ in vals if v > 0)
        v, r = min(vals, key=lambda vr: (vr[0], vr[1]["number"]))
        lim = _limit_value(data, c)
        t.rows.append([c, {TIMING_CONSTRAINT: "clock <= fmax", PPA_CONSTRAINT: "can operate"}.get(c, fmt(lim)), f"{fails}/{len(vals)}",
                       f"trial {r['number']}", f"{v:+.4g}", fmt(_metric_of_constraint(c, r["metrics"]))])
    return t


# =====================================================================================================
# 2. Pareto front
# =====================================================================================================

def section_pareto(data: StudyData) -> Section:
    s = Section(2, "pareto", "Pareto front", "ppa")
    recs = [r for r in data.records if _f(r["metrics"].get("perf_per_watt")) is not None]
    rows = []
    for r in recs:
        m = r["metrics"]
        rows.append({"number": r["number"], **{f"p_{k}": v for k, v in r["params"].items()},
                     "perf_per_watt": _f(m.get("perf_per_watt")), "area_mm2": _f(m.get("area_mm2")),
                     "latency_ms": _f(m.get("latency_ms")), "p99_latency_ms": _f(m.get("p99_latency_ms")),
                     "status": _status(r), "feasible": int(r["feasible"])})
    df = pd.DataFrame(rows, columns=["number", *[f"p_{a}" for a in data.cfg.space.active_axes()], "perf_per_watt",
                                     "area_mm2", "latency_ms", "p99_latency_ms", "status", "feasible"])
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
    lines = [Line("feasible Pareto front", list(front["area_mm2"]), list(front["perf_per_watt"]), "solid")] if len(front) else []
    s.figures.append(Figure("pareto_area", "Perf-per-watt against area (colour: feasible, or the limit that failed worst)",
                            "scatter", df, "area_mm2", "perf_per_watt", "area (mm^2)", "perf per watt (TOPS/W)",
                            color="status", hover="label", lines=lines))
    s.paras.append(f"{int(fe.sum())} of {len(df)} finished designs are feasible; {int(pm.sum())} of them are on the "
                   f"perf-per-watt / area front.")
    lat_obj = next((o for o in data.objectives if o in ("latency_ms", "p99_latency_ms")), None)
    if lat_obj is not None and df[lat_obj].notna().any():
        xl = df[lat_obj].to_numpy(float)
        pl = np.zeros(len(df), bool)
        idl = np.flatnonzero(fe & np.isfinite(xl) & np.isfinite(y))
        pl[idl] = _pareto_mask(xl[idl], y[idl])
        df["pareto_latency"] = pl.astype(int)
        fl = df[pl].sort_values(lat_obj)
        s.figures.append(Figure("pareto_latency", f"Perf-per-watt against {lat_obj}", "scatter", df, lat_obj,
                                "perf_per_watt", f"{lat_obj} (ms)", "perf per watt (TOPS/W)", color="status",
                                hover="label",
                                lines=[Line("feasible Pareto front", list(fl[lat_obj]), list(fl["perf_per_watt"]), "solid")]
                                if len(fl) else []))
    else:
        s.paras.append("No latency objective is set, so there is no perf-per-watt / latency front.")
    t = Table("Feasible Pareto designs (perf-per-watt / area)", ["trial", "design", "perf_per_watt", "area_mm2"], [])
    for _, r in front.sort_values("perf_per_watt", ascending=False).head(10).iterrows():
        rec = next(q for q in recs if q["number"] == r["number"])
        t.rows.append([str(int(r["number"])), _point_label(rec["params"]), fmt(r["perf_per_watt"]), fmt(r["area_mm2"])])
    if t.rows:
        s.tables.append(t)
    return s


# =====================================================================================================
# 3. Best design
# =====================================================================================================

def section_best(data: StudyData, det: Detail | None, subject: str) -> Section:
    s = Section(3, "best", "Best design: area, power, operating point, thermal", "ppa")
    if det is None:
        s.paras.append("No finished trial: no design to break down.")
        return s
    m = det.metrics
    s.paras.append(f"{subject}: {_point_label(det.point)}.")
    ppa = det.ppa
    if ppa is None:
        s.paras.append(f"The evaluator ({data.evaluator}) gives no ppa.model estimate for a design "
                       "(evaluate_detail), so the area and power breakdowns are not shown; the totals are:")
        s.tables.append(Table("Totals", ["metric", "value"], [[k, fmt(m[k])] for k in KEY_METRICS if k in m]))
        return s
    # breakdowns from the evaluator's metrics (power averaged over the workload mix, as power_w is)
    area = {k: float(m[f"area_{k}_mm2"]) if f"area_{k}_mm2" in m else float(v) for k, v in ppa.area_breakdown_mm2.items()}
    if "area_vector_mm2" in m and "vector" not in area:  # the vector unit (explore.evaluator, ppa.vector_cost)
        area["vector"] = float(m["area_vector_mm2"])
    area_total = float(m.get("area_mm2", ppa.area_mm2))
    dfa = pd.DataFrame({"component": list(area), "area_mm2": list(area.values())})
    s.figures.append(Figure("best_area", f"Area breakdown (total {fmt(area_total)} mm^2)", "bar", dfa, "component",
                            "area_mm2", "", "area (mm^2)"))
    pw = {k: (float(m[f"power_{k}_w"]) if f"power_{k}_w" in m else (float(v) if v is not None else None))
          for k, v in ppa.power_breakdown_w.items()}
    if "power_vector_w" in m and "vector" not in pw:
        pw["vector"] = float(m["power_vector_w"])
    power_total = float(m["power_w"]) if "power_w" in m else ppa.power_w
    dfp = pd.DataFrame({"component": list(pw), "power_w": list(pw.values())})
    s.figures.append(Figure("best_power", f"Power breakdown (total {fmt(power_total)} W, averaged over the mix)", "bar", dfp, "component",
                            "power_w", "", "power (W)"))
    t = Table("Area and power", ["component", "area (mm^2)", "share", "", "power component", "power (W)", "share"], [])
    ak, pk = list(area), list(pw)
    for i in range(max(len(ak), len(pk))):
        row = ["", "", "", "", "", "", ""]
        if i < len(ak):
            row[0:3] = [ak[i], fmt(area[ak[i]]), pct(area[ak[i]] / area_total if area_total else None)]
        if i < len(pk):
            v = pw[pk[i]]
            row[4:7] = [pk[i], fmt(v), pct(v / power_total if (v is not None and power_total) else None)]
        t.rows.append(row)
    s.tables.append(t)
    from ppa import thermal

    cooling = data.cfg.fixed.cooling
    cool_lim = thermal.COOLING_LIMIT_W_PER_MM2[cooling]
    tj_lim = data.cfg.limits.max_tj_c if data.cfg.limits.max_tj_c is not None else ppa.design.tj_max_c
    op = Table("Operating point and thermal", ["quantity", "value", "against"], [])
    op.rows.append(["supply voltage (V)", fmt(ppa.voltage_v), f"node {ppa.details.get('node_nm')} nm"])
    op.rows.append(["clock (MHz)", fmt(ppa.clock_mhz),
                    f"fmax {fmt(ppa.fmax_at_voltage_mhz)} MHz at {fmt(ppa.voltage_v)} V; {fmt(ppa.fmax_mhz)} MHz at the top "
                    f"of the voltage range"])
    op.rows.append(["logic depth (gates)", fmt(ppa.details.get("logic_depth")), f"pipeline {det.point.get('pipeline')}"])
    timing = ppa.details.get("timing") or {}
    if timing.get("cycle_fo4") is not None:
        sta = ppa.details.get("sta") or {}
        op.rows.append(["critical stage (FO4 of its library)", fmt(timing["cycle_fo4"]),
                        f"{timing.get('source')}: {timing.get('stage', '')}"
                        + (f"; {sta.get('library')}, {fmt(sta.get('critical_path_ps'))} ps there" if sta else "")])
    if ppa.details.get("vmin_v") is not None:
        op.rows.append(["Vmin logic / SRAM (V)", f"{fmt(ppa.details['vmin_v'])} / {fmt(ppa.details.get('sram_vmin_v'))}",
                        f"SRAM rail at {fmt(ppa.details.get('sram_voltage_v'))} V"])
    tj = _f(m.get("tj_c", ppa.tj_c))
    runaway = bool(_f(m.get("thermal_runaway")) or ppa.tj_c is None)
    if not runaway and tj is not None:
        op.rows.append(["junction temperature (C), worst workload", fmt(tj),
                        f"limit {fmt(tj_lim)} C: headroom {fmt(tj_lim - tj)} C; ambient {fmt(data.cfg.fixed.ambient_c)} C, "
                        f"theta_ja {fmt(ppa.details.get('theta_ja_k_per_w'))} K/W"])
    else:
        op.rows.append(["junction temperature (C)", "thermal runaway (no stable T_j)", f"limit {fmt(tj_lim)} C"])
    dens = _f(m.get("power_density_w_mm2", ppa.power_density_w_mm2))
    if dens is not None:
        op.rows.append(["power density (W/mm^2), worst workload", fmt(dens),
                        f"{cooling} cooling limit {fmt(cool_lim)} W/mm^2 ({pct(dens / cool_lim)} of it)"])
    op.rows.append(["peak (dense-equivalent) TOPS", fmt(ppa.peak_tops), f"effective {fmt(m.get('effective_tops'))} TOPS"])
    s.tables.append(op)
    vf = _vf_figure(ppa)
    if vf is not None:
        s.figures.append(vf)
    s.tables.append(Table("Model limits: what these figures do not capture", ["limit", "effect on the figures"],
                          [list(r) for r in MODEL_LIMITS] + [["ppa note", n] for n in ppa.notes], name="model_limits"))
    return s


#: What the PPA and cycle models leave out, and which way each omission moves the figures. Shown
#: beside every best design so a reviewer weighs the numbers accordingly.
MODEL_LIMITS = (
    ("placement and routing", "timing is OpenSTA on the mapped netlist with a stated wire allowance and clock "
     "uncertainty (ppa.timing.sta), not extracted parasitics: fmax optimistic for long global nets (the weight-load "
     "enable of a wide array)"),
    ("process corner and variation", "typical corner of the Liberty library moved by FO4 ratios; no slow-corner "
     "or aging margin beyond the stated clock uncertainty"),
    ("voltage law below nominal", "alpha-power law with a per-node threshold voltage (ppa.tech), checked against one "
     "published V-f table (RK3399, 28 nm); Vmin is a rule (0.73 x nominal), not a per-design characterisation"),
    ("area", "transistor counts of the generic-gate netlist times a per-node area per transistor; bench_silicon "
     "prints the comparison with published accelerators"),
    ("clock tree and clock gating", "clock energy per flip-flop from the Liberty library's clock-pin energy, pin "
     "capacitance and a balanced tree of its clock buffer (ppa.liberty.energy), with an assumed wiring share (0.5 x the "
     "pin load; no placement), moved to the node in toggle-equivalents; without a library, osu018's figures; the WS weight registers are clock-gated "
     "while held (one gating cell per PE, costed with ASAP7's ICG/flip-flop energy ratio; [fixed] clock_gating); no "
     "gating of idle PEs (idle PEs pay clock power)"),
    ("memory system", "SRAM from CACTI fits, DRAM energy per bit and bandwidth per stack/channel; no DRAM page "
     "policy, refresh or bank conflicts; SRAM port limits are per-layer averages (bursts not resolved)"),
    ("non-GEMM operators", "softmax, normalisation, activations, residual adds and the like run on a modelled vector "
     "unit (sim.vector: per-operator recipes, lane rates from the CUDA throughput table, serialised with the array by "
     "default); its exp/divide rates describe a GPU special-function unit, not a measured kernel; operators the "
     "importer does not know are costed by a stated fallback rule"),
    ("quality", "proxy evidence (a reference model of the workload family) unless the config gives the team's own "
     "weights and eval"),
)


def _vf_figure(ppa) -> Figure | None:
    """fmax against supply voltage for the design's critical stage over the node's modelled range
    (Vmin to nominal), with Vmin and the chosen operating point."""
    from ppa import model as ppa_model
    from ppa import tech

    node = ppa.details.get("node_nm")
    timing = ppa.details.get("timing") or {}
    cycle_fo4, depth = timing.get("cycle_fo4"), ppa.details.get("logic_depth")
    if node is None or (cycle_fo4 is None and depth is None):
        return None
    vs = tech.voltage_grid(node)
    fs = [ppa_model.fmax_mhz(depth or 0, node, v, cycle_fo4=cycle_fo4) for v in vs]
    vmin = tech.vmin_v(node)
    pts = pd.DataFrame({"voltage_v": [ppa.voltage_v], "clock_mhz": [ppa.clock_mhz],
                        "point": [f"chosen: {fmt(ppa.clock_mhz)} MHz at {fmt(ppa.voltage_v)} V"]})
    lines = [Line("fmax of the critical stage", vs, fs, "solid"),
             Line(f"Vmin {fmt(vmin)} V", [vmin, vmin], [0.0, max(fs)], "dot")]
    return Figure("best_vf", f"Voltage-frequency curve ({node} nm, {timing.get('source', 'generic')} timing)", "scatter",
                  pts, "voltage_v", "clock_mhz", "supply voltage (V)", "frequency (MHz)", color="point", lines=lines)


# =====================================================================================================
# 4. Per-layer view
# =====================================================================================================

def _workload_objects(data: StudyData, det: Detail) -> dict[str, Any]:
    """Workload name -> sim.workloads.Workload (from the evaluator when it says, else the config)."""
    if det.workloads:
        return dict(det.workloads)
    out = {}
    for w in data.cfg.workload:
        wl = w.build()
        out[wl.name] = wl
        out[w.name] = wl
    return out


def layer_frame(data: StudyData, det: Detail) -> pd.DataFrame:
    """One row per layer of every workload of the best design, with the dense run of the same
    array beside it (sim.perf.evaluate with force_dense: same array, every layer dense)."""
    from sim.perf import design_arrays, evaluate, layer_arrays

    wls = _workload_objects(data, det)
    frames = []
    for wname, weight, net in det.networks:
        arch = net.arch
        lay = net.layers
        counts = np.asarray(net.counts, float)
        busy = (lay["cycles"] + 1 + lay["stall_cycles"]).astype(float)
        wl = wls.get(net.workload) or wls.get(wname)
        if wl is not None and len(wl.layers) == len(net.names):
            dn = evaluate(layer_arrays(wl), design_arrays([arch]), force_dense=True)
            dense_busy = (dn["cycles"][0] + 1 + dn["stall_cycles"][0]).astype(float)
            shapes = [(l.M, l.N, l.K, l.reason) for l in wl.layers]
        else:
            dense_busy = np.full(len(busy), np.nan)
            shapes = [(None, None, None, "") for _ in net.names]
        f_hz = arch.clock_mhz * 1e6
        ops = 2.0 * lay["dense_macs"]
        dram = np.asarray(lay["dram_bytes"], float)
        frames.append(pd.DataFrame({
            "workload": wname, "weight": weight, "layer": net.names, "kind": net.kinds, "count": counts.astype(int),
            "M": [sh[0] for sh in shapes], "N": [sh[1] for sh in shapes], "K": [sh[2] for sh in shapes],
            "cycles_per_instance": busy.astype(np.int64), "compute_cycles": (lay["cycles"] + 1).astype(np.int64),
            "stall_cycles": lay["stall_cycles"].astype(np.int64), "total_cycles": (busy * counts).astype(np.int64),
            "stall_fraction": lay["stall_cycles"] / busy, "utilization": np.asarray(lay["utilization"], float),
            "sparse": np.asarray(lay["sparse"], bool), "dense_cycles_per_instance": dense_busy,
            "speedup_vs_dense": dense_busy / busy,
            "ops_per_dram_byte": np.where(dram > 0, ops / np.maximum(dram, 1e-30), np.inf),
            "attained_tops": ops / (busy / f_hz) / 1e12,
            "bound": np.where(lay["stall_cycles"] > 0, "memory", "compute"),
            "dram_bytes": dram, "metadata_bytes": np.asarray(lay["metadata_bytes"], float),
            "dram_weight_bytes": np.asarray(lay["dram_weight_bytes"], float),
            "fallback_reason": [r or "" for r in net.fallback_reasons],
            "asp_verdict": [sh[3] for sh in shapes],
            "hw": f"{arch.rows}x{arch.cols} {arch.dataflow} " + (f"{arch.n}:{arch.m}" if arch.sparse else "dense"),
            "clock_mhz": arch.clock_mhz, "dram_gbps": arch.dram_gbps, "unit": "array",
        }))
        vops = list(getattr(net, "vector_ops", []) or [])
        if vops:  # the vector unit's operators: the same time in the dense and the sparse run
            v = net.vector
            cyc = np.asarray(v["vector_op_cycles"], float)
            vst = np.asarray(v["vector_sram_stall_cycles"], float) + np.asarray(v["vector_dram_stall_cycles"], float)
            vc = np.array([o.count for o in vops], float)
            frames.append(pd.DataFrame({
                "workload": wname, "weight": weight, "layer": [o.name for o in vops],
                "kind": [o.op_type if o.supported else f"{o.op_type} (unsupported)" for o in vops],
                "count": vc.astype(int), "M": None, "N": None, "K": None,
                "cycles_per_instance": cyc.astype(np.int64), "compute_cycles": (cyc - vst).astype(np.int64),
                "stall_cycles": vst.astype(np.int64), "total_cycles": (cyc * vc).astype(np.int64),
                "stall_fraction": np.where(cyc > 0, vst / np.maximum(cyc, 1), 0.0), "utilization": np.nan,
                "sparse": False, "dense_cycles_per_instance": cyc, "speedup_vs_dense": 1.0,
                "ops_per_dram_byte": np.nan, "attained_tops": 0.0,
                "bound": np.where(vst > 0, "memory", "compute"),
                "dram_bytes": np.asarray(v["vector_dram_bytes"], float), "metadata_bytes": 0.0, "dram_weight_bytes": 0.0,
                "fallback_reason": [o.reason or "" for o in vops], "asp_verdict": "",
                "hw": f"{arch.rows}x{arch.cols} {arch.dataflow} " + (f"{arch.n}:{arch.m}" if arch.sparse else "dense"),
                "clock_mhz": arch.clock_mhz, "dram_gbps": arch.dram_gbps, "unit": "vector",
            }))
    if not frames:
        return pd.DataFrame()
    df = pd.concat(frames, ignore_index=True)
    tot = df.groupby("workload")["total_cycles"].transform("sum")
    df["time_share"] = df["total_cycles"] / tot
    return df


def section_layers(data: StudyData, det: Detail | None, layers: pd.DataFrame) -> Section:
    s = Section(4, "layers", "Per-layer view of the best design", "ppa")
    if det is None or layers.empty:
        s.paras.append(_no_layers(data, det))
        return s
    for wname, _, net in det.networks:
        df = layers[layers["workload"] == wname].copy()
        arch = net.arch
        stem = _stem(wname)
        lab = [f"{i}:{n}" for i, n in enumerate(df["layer"])]
        df.insert(0, "label", lab)
        df["compute_total"] = df["compute_cycles"] * df["count"]
        df["stall_total"] = df["stall_cycles"] * df["count"]
        s.figures.append(Figure(f"layers_cycles_{stem}", f"{wname}: cycles per layer (x count), compute and stall",
                                "bar", df[["label", "layer", "count", "compute_total", "stall_total", "utilization",
                                           "stall_fraction"]], "label", ["compute_total", "stall_total"], "layer",
                                "cycles"))
        # roofline: dense-equivalent ops per DRAM byte against attained TOPS, with the array's roofs
        peak = det.ppa.peak_tops  # ppa.model's dense-equivalent peak of this array at its clock
        peak_dense = peak * (arch.n / arch.m) if arch.sparse else peak
        ai = df.loc[df["unit"] == "array", "ops_per_dram_byte"].replace(np.inf, np.nan)
        lo = max(float(np.nanmin(ai)) / 2 if ai.notna().any() else 0.1, 1e-3)
        hi = float(np.nanmax(ai)) * 2 if ai.notna().any() else 1e4
        xs = list(np.geomspace(lo, hi, 40))
        bw = arch.dram_gbps * 1e9 / 1e12
        roofs = [Line(f"DRAM {fmt(arch.dram_gbps)} GB/s + sparse peak {fmt(peak)} TOPS", xs, [min(peak, bw * x) for x in xs], "solid")]
        if arch.sparse:
            roofs.append(Line(f"dense-fallback peak {fmt(peak_dense)} TOPS", xs, [min(peak_dense, bw * x) for x in xs],
                              "dot"))
        rf = df.loc[df["unit"] == "array", ["label", "layer", "ops_per_dram_byte", "attained_tops", "bound", "sparse"]].copy()
        rf["status"] = [f"{b}-bound" for b in rf["bound"]]
        s.figures.append(Figure(f"roofline_{stem}", f"{wname}: roofline (dense-equivalent ops)", "scatter", rf,
                                "ops_per_dram_byte", "attained_tops", "ops per DRAM byte", "attained TOPS",
                                color="status", hover="label", log_x=True, log_y=True, lines=roofs))
        nb = int((df["bound"] == "memory").sum())
        share_mem = float(df.loc[df["bound"] == "memory", "time_share"].sum())
        s.paras.append(f"{wname} on {df['hw'].iloc[0]}: {nb} of {len(df)} layers are memory bound "
                       f"({pct(share_mem)} of the time); utilisation {fmt(net.totals.get('utilization'))}, "
                       f"stall fraction {fmt(net.totals.get('stall_fraction'))}.")
        if arch.sparse:
            bound = arch.m / arch.n
            sp = df[["label", "layer", "sparse", "speedup_vs_dense", "dense_cycles_per_instance", "cycles_per_instance"]]
            s.figures.append(Figure(f"speedup_{stem}", f"{wname}: sparse vs dense speedup per layer "
                                    f"(bound {fmt(bound)} = M/N)", "bar", sp, "label", "speedup_vs_dense", "layer",
                                    "speedup vs the same array dense", hline=(bound, f"{arch.n}:{arch.m} bound {fmt(bound)}")))
        else:
            s.paras.append(f"{wname}: the design is dense, so there is no sparse speedup per layer.")
        t = Table(f"{wname}: layers", ["layer", "kind", "count", "cycles", "stall", "util", "bound", "sparse",
                                       "speedup"], [], name=f"layers_table_{stem}")
        s.data[f"layers_{stem}"] = layers[layers["workload"] == wname]
        for _, r in df.iterrows():
            t.rows.append([r["layer"], r["kind"], fmt(int(r["count"])), fmt(int(r["total_cycles"])),
                           fmt(float(r["stall_fraction"])), fmt(float(r["utilization"])), r["bound"],
                           fmt(bool(r["sparse"])), fmt(float(r["speedup_vs_dense"]))])
        s.tables.append(t)
    return s


def _stem(name: str) -> str:
    import re

    return re.sub(r"[^A-Za-z0-9_-]+", "_", name)[:40] or "workload"


def _no_layers(data: StudyData, det: Detail | None) -> str:
    if det is None:
        return "No finished trial: no design to show."
    return (f"The evaluator ({data.evaluator}) gives no per-layer results (evaluate_detail with the sim.perf "
            "NetworkResult of each workload), so this section has no per-layer data.")


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
    base = next((mm for r, mm in zip(rows, metrics) if r["is_centre"]), None)
    b = _f(base["perf_per_watt"]) if base else None
    for r, mm in zip(rows, metrics):
        ppw = _f(mm.get("perf_per_watt"))
        r["perf_per_watt"] = ppw
        r["change_vs_centre"] = (ppw / b - 1.0) if (ppw is not None and b) else None
        cons = constraint_values(data.cfg, mm)
        bad = sorted(c for c, v in cons.items() if v > 0)
        r["feasible"] = int(not bad)
        r["fails"] = ";".join(bad)
        r["label"] = f"{r['axis']}={r['value']}"
    return pd.DataFrame(rows, columns=["axis", "value", "label", "is_centre", "perf_per_watt", "change_vs_centre",
                                       "feasible", "fails"])


def section_sensitivity(data: StudyData, ev: Evaluator, centre: dict[str, Any] | None, subject: str) -> tuple[Section, pd.DataFrame]:
    s = Section(5, "sensitivity", "Sensitivity", "ppa")
    if data.importances:
        di = pd.DataFrame({"parameter": list(data.importances), "importance": list(data.importances.values())})
        di = di.sort_values("importance")
        s.figures.append(Figure("importances", f"Parameter importances for {data.cfg.objectives.primary}", "hbar", di,
                                "parameter", "importance", "importance (share)", ""))
    s.paras.append(data.importance_note)
    if centre is None:
        s.paras.append("No finished trial: no design to sweep around.")
        return s, pd.DataFrame()
    df = oat_frame(data, ev, centre)
    if df.empty:
        s.paras.append("Every axis of the space has a single value: no one-at-a-time sweep.")
        return s, df
    s.paras.append(f"One-at-a-time sweeps around {subject}: each axis moved alone over its values (at most "
                   f"{OAT_MAX_VALUES}), every point re-evaluated with {ev.name}. Perf-per-watt change against the "
                   f"centre; infeasible points name the limits they fail.")
    bars = df.copy()  # one series per feasibility, so infeasible points stand out in their own colour
    bars[OAT_FEASIBLE] = [c if f else None for c, f in zip(bars["change_vs_centre"], bars["feasible"])]
    bars[OAT_INFEASIBLE] = [None if f else c for c, f in zip(bars["change_vs_centre"], bars["feasible"])]
    s.figures.append(Figure("sensitivity_oat", "Perf-per-watt change when one parameter moves (centre = 0)", "bar",
                            bars, "label", [OAT_FEASIBLE, OAT_INFEASIBLE], "parameter = value",
                            "change vs centre (fraction)"))
    t = Table("One-at-a-time sweeps", ["axis", "value", "perf_per_watt", "change", "feasible", "fails"], [],
              name="sensitivity_oat_table")
    for _, r in df.iterrows():
        t.rows.append([r["axis"], str(r["value"]) + (" (centre)" if r["is_centre"] else ""), fmt(r["perf_per_watt"]),
                       pct(r["change_vs_centre"]), fmt(bool(r["feasible"])), r["fails"]])
    s.tables.append(t)
    swing = df.groupby("axis")["perf_per_watt"].agg(lambda v: float(np.nanmax(v) - np.nanmin(v)))
    if len(swing):
        top = swing.idxmax()
        s.verdict = f"Largest one-at-a-time swing: {top} moves perf-per-watt by {fmt(swing[top])} TOPS/W."
    return s, df
