"""Section 10 of the report: the bottleneck of the chosen design (the mechanism with the largest
share of lost time or margin) and the mechanism of every limit that fails in the study."""

from __future__ import annotations

import numpy as np
import pandas as pd

from explore.report.data import StudyData
from explore.report.document import Section, Table
from explore.report.format import describe_constraint, fmt, num, pct
from explore.report.layers import array_rows
from explore.results import PPA_CONSTRAINT, TIMING_CONSTRAINT, Detail, point_sparsity

# The rule thresholds below are our stated assumptions [A], not published figures; the report
# prints them beside the verdict they produce.
#: Bottleneck: a stall fraction above this makes memory a candidate mechanism.
MEMORY_STALL_SHARE = 0.10
#: The mechanism of each limit (and of the timing and ppa-feasibility constraints).
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


def best_bottleneck(data: StudyData, det: Detail, layers: pd.DataFrame) -> tuple[str, list[str]]:
    """The dominant loss of the best design against its peak, with the numbers that show it."""
    ev = bottleneck_scores(data, det, layers)
    return ev[0][1], [f"{mech}: {txt}" for _, mech, txt in ev]


def bottleneck_scores(data: StudyData, det: Detail, layers: pd.DataFrame) -> list[tuple[float, str, str]]:
    """Every candidate mechanism of the design as (score: share of lost time or margin, mechanism,
    evidence), largest score first: the rule of :func:`best_bottleneck`, with its scores."""
    m = det.metrics
    ev: list[tuple[float, str, str]] = []  # (share of lost time or margin score, mechanism, evidence)
    stall = num(m.get("stall_fraction")) or 0.0
    util = num(m.get("utilization"))
    ev.append(
        (stall, "memory", f"stall fraction {fmt(stall)} (time waiting for DRAM beyond double buffering)")
    )
    # Roofline: below the machine balance (peak ops per DRAM byte) the workload streams its operands
    # (a decode step uses every weight once at a batch of a few tokens): the time the PEs sit idle
    # waits for weights, from DRAM or shifting into the array, whether or not DRAM stalls. Below the
    # roof that idle share is charged to memory (weight streaming), listed before scheduling so a
    # tie goes to it; above the roof it stays with scheduling.
    tops, lat, dbytes = num(m.get("effective_tops")), num(m.get("latency_ms")), num(m.get("dram_bytes"))
    peak, gbps = num(m.get("peak_tops")), num(m.get("dram_gbps"))
    if tops and lat and dbytes and peak and gbps and util is not None:
        intensity = tops * 1e12 * lat * 1e-3 / dbytes
        balance = peak * 1e12 / (gbps * 1e9)
        if intensity < balance:
            ev.append(
                (
                    max(1.0 - intensity / balance, 1.0 - util),
                    "memory",
                    f"weight streaming: {fmt(intensity)} ops per DRAM byte against a machine balance of "
                    f"{fmt(balance)} ({fmt(peak)} TOPS / {fmt(gbps)} GB/s, roofline), utilisation {fmt(util)}: "
                    f"the PEs wait for operands streamed once",
                )
            )
    if util is not None:
        sched = max(0.0, (1.0 - stall) - util)
        ev.append(
            (
                sched,
                "scheduling",
                f"utilisation {fmt(util)}: {pct(sched)} of the time the array computes "
                f"with idle PEs (fold quantisation, fill and drain, dense fallback)",
            )
        )
    if not layers.empty:
        dn = ~layers["sparse"] & array_rows(layers)
        fb = float(
            (layers.loc[dn, "time_share"] * layers.loc[dn, "weight"]).sum()
            / max(layers.groupby("workload")["weight"].first().sum(), 1e-30)
        )
        n, mm, sparse = point_sparsity(det.point)
        if sparse:
            ev.append(
                (
                    fb * (1 - n / mm),
                    "precision",
                    f"{pct(fb)} of the time in dense-fallback layers whose weights "
                    f"cannot keep {n}:{mm} (numeric format / pruning rules)",
                )
            )
    lim = data.cfg.limits
    tj = num(m.get("tj_c"))
    if tj is not None and lim.max_tj_c is not None:
        used = (tj - data.cfg.fixed.ambient_c) / (lim.max_tj_c - data.cfg.fixed.ambient_c)
        ev.append(
            (
                used if used > 0.9 else 0.0,
                "thermal",
                f"T_j {fmt(tj)} C uses {pct(used)} of the {fmt(lim.max_tj_c)} C budget above ambient",
            )
        )
    clk, fmax = num(m.get("clock_mhz")), num(m.get("fmax_mhz"))
    if clk and fmax:
        ratio = clk / fmax
        ev.append((ratio if ratio > 0.9 else 0.0, "compute", f"clock at {pct(ratio)} of fmax"))
    if util is not None and stall < MEMORY_STALL_SHARE:
        ev.append(
            (
                util,
                "compute",
                f"no significant stalls (< {pct(MEMORY_STALL_SHARE)}) and utilisation "
                f"{fmt(util)}: the array's peak rate bounds the speed",
            )
        )
    ev.sort(key=lambda e: -e[0])
    return ev


def section_bottleneck(data: StudyData, det: Detail | None, layers: pd.DataFrame) -> Section:
    s = Section(10, "bottleneck", "Bottleneck classification", "sparsity")
    s.paras.append(
        "Mechanisms: compute (array rate, clock vs fmax, area), memory (DRAM stalls), scheduling "
        "(mapping and queueing: idle PEs, fold quantisation, p99 under batching), precision "
        "(numeric format and pruning: dense fallback, quality loss), thermal (T_j, power density)."
    )
    s.paras.append(
        "Rule for one design: the mechanism with the largest share of the run time wins: compute = time "
        "the PEs do useful work (utilisation, when stalls are below "
        f"{pct(MEMORY_STALL_SHARE)}), memory = stall time, scheduling = time computing with idle PEs, "
        "precision = time lost to dense fallback; thermal and clock/fmax count only within 10 % of "
        "their limit. For a failing limit, the mechanism is that of the limit."
    )
    if det is not None:
        mech, evidence = best_bottleneck(data, det, layers)
        s.verdict = f"Best design: dominated by {mech}."
        s.bullets += evidence
    t = Table(
        "Each limit that fails somewhere in the study",
        ["limit", "mechanism", "trials failing", "median violation", "evidence (closest failing design)"],
        [],
        name="bottlenecks",
    )
    for c in data.constraint_names:
        fails = [r for r in data.records if r["constraints"].get(c, 0.0) > 0]
        if not fails:
            continue
        vals = np.array([r["constraints"][c] for r in fails])
        closest = min(fails, key=lambda r: (r["constraints"][c], r["number"]))
        t.rows.append(
            [
                c,
                MECHANISM.get(c, "compute"),
                f"{len(fails)}/{len(data.records)}",
                pct(float(np.median(vals))),
                f"trial {closest['number']}: "
                + describe_constraint(data, c, closest["constraints"][c], closest["metrics"]),
            ]
        )
    if t.rows:
        s.tables.append(t)
    else:
        s.paras.append("No limit failed in any trial.")
    return s
