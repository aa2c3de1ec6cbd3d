"""Section 1 of the report: the verdict, with sparse against dense on equal terms.

It opens the report, before the summary's binding-limit box. The figures come from
:mod:`explore.compare` (the same function that writes ``best.json``'s ``comparison``); the decision
is :func:`explore.report.decision.decide`, whose rules use that comparison.
"""

from __future__ import annotations

from typing import Any

from explore.report.data import StudyData
from explore.report.document import Section, Table
from explore.report.format import fmt, pct, point_label

#: Rows of the twin table: comparison key -> label.
ROWS = (
    ("chosen", "chosen design"),
    ("iso_array_dense", "iso-array dense twin (same R x C, dense PEs)"),
    ("iso_area_dense", "iso-area dense twin (fastest feasible dense design within its area)"),
    ("best_sparse", "best feasible sparse design"),
    ("best_dense", "best feasible dense design"),
)


def _ratio_word(r: float | None) -> str:
    if r is None:
        return "n/a"
    return f"sparse {'+' if r >= 1 else ''}{pct(r - 1.0)}"


def section_verdict(
    data: StudyData,
    comp: dict[str, Any],
    decision: dict[str, Any],
    m: dict[str, Any] | None,
    rob: dict[str, Any] | None = None,
) -> Section:
    """``comp``: explore.compare.comparison; ``decision``: {'verdict', 'rule', 'reason'}; ``m``: the
    chosen design's metrics (re-evaluated) or None; ``rob``: explore.robustness's figures or None."""
    s = Section(1, "verdict", "Verdict: sparse vs dense, on equal terms", "verdict")
    prim = data.cfg.objectives.primary
    adv = comp.get("primary_advantage")
    bs, bd = comp.get("best_sparse"), comp.get("best_dense")
    head = f"Recommendation: {decision['verdict']} (rule {decision['rule']}: {decision['reason']})."
    if bs and bd:
        head += (
            f" Best feasible sparse design {fmt(bs.get(prim))} vs best feasible dense design {fmt(bd.get(prim))} "
            f"{prim}: {_ratio_word(adv)}."
        )
    if rob is not None:
        head += f" Over the assumptions' ranges: {rob['line']}."
    s.verdict = head
    s.paras.append(
        "Every design here is costed by one method: the same cycle model (sim.perf, stalls included), area and "
        "power from synthesis of each PE's own RTL (ppa.model), the same SRAM, clock, node, memory and limits. "
        f"SHIP needs the best sparse design to beat the best dense design on {prim} by at least "
        f"{pct(data.cfg.decision.margin)} under the same limits, with probability at least "
        f"{data.cfg.decision.min_confidence:g} over the assumptions' plausible ranges (section 2)."
    )
    srch = comp.get("search")
    if srch:
        s.bullets.append(
            "Search effort: "
            + "; ".join(
                f"{side} {v['trials']} trials, {v['distinct_designs']} distinct designs ({v['sampler']})"
                for side, v in srch.items()
            )
            + "."
        )
    t = Table(
        "Best feasible sparse vs best feasible dense design, per objective",
        ["objective", "direction", "best sparse (trial)", "best dense (trial)", "sparse advantage"],
        [],
        name="sparse_vs_dense",
    )
    for p in comp.get("per_objective", []):
        bsp, bdn = p.get("best_sparse"), p.get("best_dense")
        src = "" if not bdn or bdn.get("source", "study") == "study" else f", {bdn['source']}"
        t.rows.append(
            [
                p["objective"],
                p["direction"],
                f"{fmt(bsp['value'])} ({bsp['trial']})" if bsp else "none feasible",
                f"{fmt(bdn['value'])} ({bdn['trial']}{src})" if bdn else "none feasible",
                _ratio_word(p.get("sparse_advantage")),
            ]
        )
    s.tables.append(t)
    tw = Table(
        "The chosen design, its dense twins, and the best of each kind",
        [
            "design",
            "point",
            "latency (ms)",
            "p99 (ms)",
            "energy / inference (mJ)",
            "area (mm^2)",
            "power (W)",
            "perf/W (TOPS/W)",
            "TOPS/mm^2",
            "feasible",
        ],
        [],
        name="dense_twins",
    )
    for key, label in ROWS:
        e = comp.get(key)
        if not e:
            continue
        tw.rows.append(
            [
                label + (f" (trial {e['trial']})" if e.get("trial") is not None else ""),
                point_label(e["design"]),
                fmt(e.get("latency_ms")),
                fmt(e.get("p99_latency_ms")),
                fmt(e.get("energy_per_inference_mj")),
                fmt(e.get("area_mm2")),
                fmt(e.get("power_w")),
                fmt(e.get("perf_per_watt")),
                fmt(e.get("tops_per_mm2")),
                {True: "yes", False: "no", None: ""}[e.get("feasible")],
            ]
        )
    if tw.rows:
        s.tables.append(tw)
    if m is not None:
        s.bullets.append(
            f"Speedup against the dense design: {fmt(m.get('speedup_vs_dense_design'))}x vs the iso-array twin, "
            f"{fmt(m.get('speedup_vs_iso_area_dense'))}x vs the iso-area twin (latency of the twin / latency of the "
            "design, same workload mix)."
        )
        s.bullets.append(
            f"Effective speedup {fmt(m.get('effective_speedup'))} (ideal bound {fmt(m.get('ideal_speedup'))}): sparse "
            "against dense kernels on the same hardware, the GPU-style figure. It is not a comparison with a dense "
            "chip and is not the headline."
        )
    s.bullets += comp.get("notes", [])
    return s
