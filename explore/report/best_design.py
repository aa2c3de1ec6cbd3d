"""Section 3 of the report: the chosen design's area, power, operating point and thermal figures,
and the model-limits box (what the figures do not capture, and the assumptions that set a large
share of the design's power or area).

Every number comes from re-evaluating the design with the study's evaluator
(:class:`explore.results.Evaluator`) or from its stored metrics, never from a constant in this file.
"""

from __future__ import annotations

import math
from typing import Any

import pandas as pd

from explore.metrics import BY_NAME, REPORT_METRICS
from explore.report.data import StudyData
from explore.report.document import Section, Table
from explore.report.figures import Figure, Line
from explore.report.format import fmt, num, pct, point_label
from explore.results import Detail
from explore.robustness import SHARE_LIMIT
from ppa import model as ppa_model, tech, thermal


def section_best(
    data: StudyData, det: Detail | None, subject: str, shares: list[dict[str, Any]] | None = None
) -> Section:
    """The chosen design's area, power, operating point and thermal figures, and the model-limits
    box: the model's omissions (:data:`MODEL_LIMITS`), the estimate's notes, and every assumption
    that sets more than :data:`~explore.robustness.SHARE_LIMIT` of the design's power or area
    (``shares``: explore.robustness.assumption_shares of the design)."""
    s = Section(3, "best", "Best design: area, power, operating point, thermal", "ppa")
    if det is None:
        s.paras.append("No finished trial: no design to break down.")
        return s
    m = det.metrics
    s.paras.append(f"{subject}: {point_label(det.point)}.")
    ppa = det.ppa
    if ppa is None:
        s.paras.append(
            f"The evaluator ({data.evaluator}) gives no ppa.model estimate for a design "
            "(evaluate_detail), so the area and power breakdowns are not shown; the totals are:"
        )
        s.tables.append(_totals_table(m))
        return s
    area, area_total = _area_breakdown(m, ppa)
    s.figures.append(_area_figure(area, area_total))
    pw, power_total = _power_breakdown(m, ppa)
    s.figures.append(_power_figure(pw, power_total))
    s.tables.append(_area_power_table(area, area_total, pw, power_total))
    s.tables.append(_operating_point_table(data, det, ppa))
    vf = _vf_figure(ppa)
    if vf is not None:
        s.figures.append(vf)
    s.tables.append(_model_limits_table(ppa, shares))
    return s


def _totals_table(m: dict[str, Any]) -> Table:
    """The stored totals, for an evaluator without a ppa.model estimate."""
    return Table(
        "Totals",
        ["metric", "value"],
        [[k, fmt(m[k], BY_NAME[k].digits)] for k in REPORT_METRICS if k in m],
    )


def _area_breakdown(m: dict[str, Any], ppa: Any) -> tuple[dict[str, float], float]:
    """(component -> area in mm^2, total area) from the evaluator's metrics, else the estimate's."""
    area = {
        k: float(m[f"area_{k}_mm2"]) if f"area_{k}_mm2" in m else float(v)
        for k, v in ppa.area_breakdown_mm2.items()
    }
    if (
        "area_vector_mm2" in m and "vector" not in area
    ):  # the vector unit (explore.evaluator, ppa.vector_cost)
        area["vector"] = float(m["area_vector_mm2"])
    return area, float(m.get("area_mm2", ppa.area_mm2))


def _area_figure(area: dict[str, float], area_total: float) -> Figure:
    dfa = pd.DataFrame({"component": list(area), "area_mm2": list(area.values())})
    return Figure(
        "best_area",
        f"Area breakdown (total {fmt(area_total)} mm^2)",
        "bar",
        dfa,
        "component",
        "area_mm2",
        "",
        "area (mm^2)",
    )


def _power_breakdown(m: dict[str, Any], ppa: Any) -> tuple[dict[str, float | None], Any]:
    """(component -> power in W, total power), power averaged over the workload mix as power_w is."""
    pw = {
        k: (float(m[f"power_{k}_w"]) if f"power_{k}_w" in m else (float(v) if v is not None else None))
        for k, v in ppa.power_breakdown_w.items()
    }
    if "power_vector_w" in m and "vector" not in pw:
        pw["vector"] = float(m["power_vector_w"])
    return pw, float(m["power_w"]) if "power_w" in m else ppa.power_w


def _power_figure(pw: dict[str, float | None], power_total: Any) -> Figure:
    dfp = pd.DataFrame({"component": list(pw), "power_w": list(pw.values())})
    return Figure(
        "best_power",
        f"Power breakdown (total {fmt(power_total)} W, averaged over the mix)",
        "bar",
        dfp,
        "component",
        "power_w",
        "",
        "power (W)",
    )


def _area_power_table(
    area: dict[str, float], area_total: float, pw: dict[str, float | None], power_total: Any
) -> Table:
    """Area and power components side by side, each with its share of the total."""
    t = Table(
        "Area and power",
        ["component", "area (mm^2)", "share", "", "power component", "power (W)", "share"],
        [],
    )
    ak, pk = list(area), list(pw)
    for i in range(max(len(ak), len(pk))):
        row = ["", "", "", "", "", "", ""]
        if i < len(ak):
            row[0:3] = [ak[i], fmt(area[ak[i]]), pct(area[ak[i]] / area_total if area_total else None)]
        if i < len(pk):
            v = pw[pk[i]]
            row[4:7] = [pk[i], fmt(v), pct(v / power_total if (v is not None and power_total) else None)]
        t.rows.append(row)
    return t


def _operating_point_table(data: StudyData, det: Detail, ppa: Any) -> Table:
    """Voltage, clock against fmax, logic depth, critical stage, Vmin, T_j and power density
    against their limits, and peak against effective TOPS."""
    m = det.metrics
    cooling = data.cfg.fixed.cooling
    cool_lim = thermal.COOLING_LIMIT_W_PER_MM2[cooling]
    tj_lim = data.cfg.limits.max_tj_c if data.cfg.limits.max_tj_c is not None else ppa.design.tj_max_c
    op = Table("Operating point and thermal", ["quantity", "value", "against"], [])
    op.rows.append(["supply voltage (V)", fmt(ppa.voltage_v), f"node {ppa.details.get('node_nm')} nm"])
    op.rows.append(
        [
            "clock (MHz)",
            fmt(ppa.clock_mhz),
            f"fmax {fmt(ppa.fmax_at_voltage_mhz)} MHz at {fmt(ppa.voltage_v)} V; {fmt(ppa.fmax_mhz)} MHz at the top "
            f"of the voltage range",
        ]
    )
    op.rows.append(
        ["logic depth (gates)", fmt(ppa.details.get("logic_depth")), f"pipeline {det.point.get('pipeline')}"]
    )
    timing = ppa.details.get("timing") or {}
    if timing.get("cycle_fo4") is not None:
        sta = ppa.details.get("sta") or {}
        op.rows.append(
            [
                "critical stage (FO4 of its library)",
                fmt(timing["cycle_fo4"]),
                f"{timing.get('source')}: {timing.get('stage', '')}"
                + (f"; {sta.get('library')}, {fmt(sta.get('critical_path_ps'))} ps there" if sta else ""),
            ]
        )
    if ppa.details.get("vmin_v") is not None:
        op.rows.append(
            [
                "Vmin logic / SRAM (V)",
                f"{fmt(ppa.details['vmin_v'])} / {fmt(ppa.details.get('sram_vmin_v'))}",
                f"SRAM rail at {fmt(ppa.details.get('sram_voltage_v'))} V",
            ]
        )
    tj = num(m.get("tj_c", ppa.tj_c))
    runaway = bool(num(m.get("thermal_runaway")) or ppa.tj_c is None)
    if not runaway and tj is not None:
        op.rows.append(
            [
                "junction temperature (C), worst workload",
                fmt(tj),
                f"limit {fmt(tj_lim)} C: headroom {fmt(tj_lim - tj)} C; ambient {fmt(data.cfg.fixed.ambient_c)} C, "
                f"theta_ja {fmt(ppa.details.get('theta_ja_k_per_w'))} K/W",
            ]
        )
    else:
        op.rows.append(
            ["junction temperature (C)", "thermal runaway (no stable T_j)", f"limit {fmt(tj_lim)} C"]
        )
    dens = num(m.get("power_density_w_mm2", ppa.power_density_w_mm2))
    if dens is not None:
        op.rows.append(
            [
                "power density (W/mm^2), worst workload",
                fmt(dens),
                f"{cooling} cooling limit {fmt(cool_lim)} W/mm^2 ({pct(dens / cool_lim)} of it)",
            ]
        )
    op.rows.append(
        ["peak (dense-equivalent) TOPS", fmt(ppa.peak_tops), f"effective {fmt(m.get('effective_tops'))} TOPS"]
    )
    return op


def _model_limits_table(ppa: Any, shares: list[dict[str, Any]] | None) -> Table:
    """What the figures do not capture: the model's omissions, the estimate's notes and the
    assumptions that set a large share of the design's power or area."""
    return Table(
        "Model limits: what these figures do not capture",
        ["limit", "effect on the figures"],
        [list(r) for r in MODEL_LIMITS]
        + [["ppa note", n] for n in ppa.notes]
        + assumption_limit_rows(shares or []),
        name="model_limits",
    )


def assumption_limit_rows(shares: list[dict[str, Any]]) -> list[list[str]]:
    """The model-limits rows of the assumptions that set more than SHARE_LIMIT of power or area."""
    rows = []
    for r in shares:
        parts = [
            f"{pct(r[k])} of the {what}"
            for k, what in (("power_share", "power"), ("area_share", "area"))
            if r[k] is not None and math.isfinite(r[k]) and r[k] > SHARE_LIMIT
        ]
        if parts:
            rows.append(
                [
                    f"assumption {r['name']} [{r['tag']}]",
                    f"sets {' and '.join(parts)} (d ln / d ln of the value); {fmt(r['value'])} {r['unit']}, "
                    f"plausible {fmt(r['low'])} ... {fmt(r['high'])}: {r['reason']}",
                ]
            )
    return rows


#: What the PPA and cycle models leave out, and which way each omission moves the figures. Shown
#: beside every best design so a reviewer weighs the numbers accordingly.
MODEL_LIMITS = (
    (
        "placement and routing",
        "timing is OpenSTA on the mapped netlist with a stated wire allowance and clock "
        "uncertainty (ppa.timing.sta), not extracted parasitics: fmax optimistic for long global nets (the weight-load "
        "enable of a wide array)",
    ),
    (
        "process corner and variation",
        "typical corner of the Liberty library moved by FO4 ratios; no slow-corner "
        "or aging margin beyond the stated clock uncertainty",
    ),
    (
        "voltage law below nominal",
        "alpha-power law with a per-node threshold voltage (ppa.tech), checked against one "
        "published V-f table (RK3399, 28 nm); Vmin is a rule (0.73 x nominal), not a per-design characterisation",
    ),
    (
        "area",
        "transistor counts of the generic-gate netlist times a per-node area per transistor; bench_silicon "
        "prints the comparison with published accelerators",
    ),
    (
        "switching energy",
        "zero-delay toggles of the generic-gate netlist on the trace, each at its net's energy as an "
        "osu018 cell (ppa.liberty.gates), times the PE's sizing factor on the STA path (its netlist sized for minimum "
        "delay over its area mapping, ppa.liberty.sizing: 1.00 for the INT8 dense PE, 1.37 for the BF16 one; on the "
        "generic timing path 1); no glitches; the sizing is for minimum delay whatever the clock, so a design clocked "
        "well below its fmax is costed high",
    ),
    (
        "clock tree and clock gating",
        "clock energy per flip-flop from the Liberty library's clock-pin energy, pin "
        "capacitance and a balanced tree of its clock buffer (ppa.liberty.energy), "
        "with an assumed wiring share (0.5 x the "
        "pin load; no placement), moved to the node in toggle-equivalents; "
        "without a library, osu018's figures; the WS weight registers are clock-gated "
        "while held (one gating cell per PE, costed with ASAP7's ICG/flip-flop energy ratio; [fixed] clock_gating); no "
        "gating of idle PEs (idle PEs pay clock power)",
    ),
    (
        "memory system",
        "SRAM from CACTI fits, DRAM energy per bit and bandwidth per stack/channel; no DRAM page "
        "policy, refresh or bank conflicts; SRAM port limits are per-layer averages (bursts not resolved)",
    ),
    (
        "non-GEMM operators",
        "softmax, normalisation, activations, residual adds and the like run on a modelled vector "
        "unit (sim.vector: per-operator recipes, lane rates from the CUDA throughput table, "
        "serialised with the array by "
        "default); its exp/divide rates describe a GPU special-function unit, not a measured kernel; operators the "
        "importer does not know are costed by a stated fallback rule",
    ),
    (
        "quality",
        "proxy evidence (a reference model of the workload family) unless the config gives the team's own "
        "weights and eval",
    ),
)


def _vf_figure(ppa) -> Figure | None:
    """fmax against supply voltage for the design's critical stage over the node's modelled range
    (Vmin to nominal), with Vmin and the chosen operating point."""
    node = ppa.details.get("node_nm")
    timing = ppa.details.get("timing") or {}
    cycle_fo4, depth = timing.get("cycle_fo4"), ppa.details.get("logic_depth")
    if node is None or (cycle_fo4 is None and depth is None):
        return None
    vs = tech.voltage_grid(node)
    fs = [ppa_model.fmax_mhz(depth or 0, node, v, cycle_fo4=cycle_fo4) for v in vs]
    vmin = tech.vmin_v(node)
    pts = pd.DataFrame(
        {
            "voltage_v": [ppa.voltage_v],
            "clock_mhz": [ppa.clock_mhz],
            "point": [f"chosen: {fmt(ppa.clock_mhz)} MHz at {fmt(ppa.voltage_v)} V"],
        }
    )
    lines = [
        Line("fmax of the critical stage", vs, fs, "solid"),
        Line(f"Vmin {fmt(vmin)} V", [vmin, vmin], [0.0, max(fs)], "dot"),
    ]
    return Figure(
        "best_vf",
        f"Voltage-frequency curve ({node} nm, {timing.get('source', 'generic')} timing)",
        "scatter",
        pts,
        "voltage_v",
        "clock_mhz",
        "supply voltage (V)",
        "frequency (MHz)",
        color="point",
        lines=lines,
    )
