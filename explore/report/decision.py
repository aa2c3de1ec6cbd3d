"""Section 11 of the report: the release decision (SHIP / BOUNDED ROLLOUT / ROLLBACK / ESCALATE)
by the first of the rules ``RULES`` that fires, with the validation matrix and rollback triggers
and the rejected alternatives."""

from __future__ import annotations

import math
from typing import Any

from explore.compare import best_record
from explore.config import LIMIT_CONSTRAINTS, MIN_CONFIDENCE, SHIP_MIN_ADVANTAGE
from explore.report.data import StudyData
from explore.report.document import Section, Table
from explore.report.format import describe_constraint, fmt, num, pct, point_label
from explore.report.sparsity import interval_text
from explore.results import Detail, point_sparsity
from explore.robustness import confident
from explore.space import parse_sparsity

# The rule thresholds below are our stated assumptions [A], not published figures; the report
# prints them beside the verdict they produce.
#: Decision: the effective speedup must reach this share of the ideal (Amdahl) bound to ship outright.
SHIP_SPEEDUP_SHARE_OF_IDEAL = 0.75
#: Decision: a limit with less normalised slack than this is "binding"; shipping on it is bounded.
SHIP_MIN_SLACK = 0.05
#: Rejected alternatives listed in the decision section.
N_REJECTED = 5

#: The decision rules, evaluated in order: the first that fires decides.
RULES = (
    ("R1", "no feasible design -> ESCALATE (the limits cannot all be met; revisit them or the space)"),
    (
        "R2",
        "quality evidence on the team's model shows the guardrail violated -> ROLLBACK to the dense design; "
        "proxy evidence (a reference model) showing it cannot decide ROLLBACK: it holds the decision at BOUNDED "
        "ROLLOUT at most",
    ),
    (
        "R3",
        "the best feasible sparse design does not beat the best feasible dense design on the primary objective "
        "under the same limits (or there is no feasible sparse design) -> ROLLBACK: build the dense design",
    ),
    (
        "R4",
        "no quality evidence for a sparse design, or only proxy evidence (a reference model, not the team's) "
        "-> BOUNDED ROLLOUT at most; only evidence on the team's own model can support SHIP",
    ),
    (
        "R5",
        f"sparse beats dense by less than the margin ([decision] margin, default {SHIP_MIN_ADVANTAGE:.0%}) on the "
        f"primary objective, P(advantage >= margin) over the assumptions' ranges below [decision] min_confidence "
        f"(default {MIN_CONFIDENCE:g}; explore.robustness), effective speedup < {SHIP_SPEEDUP_SHARE_OF_IDEAL:g} x "
        f"the ideal bound, or a limit with less than {SHIP_MIN_SLACK:.0%} slack -> BOUNDED ROLLOUT",
    ),
    ("R6", "otherwise -> SHIP"),
)


def p99_text(m: dict[str, Any], cfg) -> str:
    """The p99 latency with its 95 % interval over the arrival seeds (explore.evaluator serving
    metrics), and how it was taken."""
    p99, lo, hi = (num(m.get(k)) for k in ("p99_latency_ms", "p99_latency_lo_ms", "p99_latency_hi_ms"))
    if p99 is None:
        return "n/a"
    s = cfg.serving
    if lo is None or hi is None:
        return f"{fmt(p99)} (no interval: the study stored p99 from one arrival seed)"
    txt = (
        f"{fmt(p99)} (95 % interval [{fmt(lo)}, {fmt(hi)}] over {s.seeds} arrival seeds, first "
        f"{pct(s.warmup_fraction, 0)} of each run discarded as warm-up)"
    )
    ttft = num(m.get("ttft_p99_ms"))
    if ttft is not None and math.isfinite(ttft):
        txt += (
            f"; LLM request = prefill + {s.output_tokens} tokens: TTFT p99 {fmt(m['ttft_p99_ms'])} ms, "
            f"TPOT p99 {fmt(m['tpot_p99_ms'])} ms"
        )
    return txt


def _sparse_quality_failure(data: StudyData) -> str | None:
    """When the study's sparse designs all violate the quality limit (max_quality_delta, tested on
    the pessimistic end of the delta's interval): the reason in words, else None."""
    limit = data.cfg.limits.max_quality_delta
    cname = LIMIT_CONSTRAINTS["max_quality_delta"]
    if limit is None:
        return None
    sparse = [r for r in data.records if parse_sparsity(str(r["params"].get("sparsity", "dense")))[2]]
    if not sparse or not all(r["constraints"].get(cname, 0.0) > 0 for r in sparse):
        return None
    worst = min(sparse, key=lambda r: r["constraints"][cname])
    mt = worst["metrics"]
    pess = num(mt.get("quality_delta_ci", mt.get("quality_delta")))
    return (
        f"the quality limit max_quality_delta = {fmt(limit)} fails on all {len(sparse)} sparse designs: "
        f"quality loss {fmt(num(mt.get('quality_delta')))}, pessimistic end {fmt(pess)} "
        f"({mt.get('quality_evidence', 'unlabelled')} evidence)"
    )


def evidence_kind(data: StudyData, q: dict[str, Any] | None) -> str:
    """What the quality evidence behind the decision was measured on: ``"model"`` (the team's
    model) or ``"proxy"`` only when the evidence says so, else ``"unlabelled"`` (fails closed: never
    read as the team's model). The chosen sparse design's evidence, else the study's sparse trials'."""
    if q is not None and not q.get("dense"):
        kind = q.get("evidence")
    else:
        kinds = {
            r["metrics"].get("quality_evidence")
            for r in data.records
            if parse_sparsity(str(r["params"].get("sparsity", "dense")))[2]
        }
        kind = kinds.pop() if len(kinds) == 1 else None
    return kind if kind in ("model", "proxy") else "unlabelled"


def _proxy_hold(data: StudyData, comp: dict[str, Any]) -> str | None:
    """When sparsity loses only through the quality limit on proxy evidence: the sparse design that
    fails nothing but that limit and beats the best feasible dense design on the primary objective
    (or there is none), in words; else None."""
    cname = LIMIT_CONSTRAINTS["max_quality_delta"]
    prim, sign = data.cfg.objectives.primary, (1.0 if data.directions[0] == "maximize" else -1.0)
    cands = [
        r
        for r in data.records
        if parse_sparsity(str(r["params"].get("sparsity", "dense")))[2]
        and r["constraints"].get(cname, 0.0) > 0
        and num(r["metrics"].get(prim)) is not None
        and all(v <= 0 for c, v in r["constraints"].items() if c != cname)
    ]
    if not cands:
        return None
    bs = max(cands, key=lambda r: (sign * float(r["metrics"][prim]), -r["number"]))
    a = float(bs["metrics"][prim])
    if "best_dense" in (comp or {}):  # the equal-terms comparison (with its dense sub-study)
        b = num(comp["best_dense"].get(prim)) if comp["best_dense"] else None
    else:
        bd = best_record(data.records, prim, data.directions[0], sparse=False)
        b = num(bd["metrics"][prim]) if bd else None
    what = (
        f"trial {bs['number']} ({point_label(bs['params'])}) fails only the quality limit, on proxy evidence"
    )
    if b is None:
        return f"{what}, and no dense design is feasible"
    ratio = (a / b if sign > 0 else b / a) if a > 0 and b > 0 else None
    if ratio is None or ratio <= 1.0:
        return None
    return (
        f"{what}, and beats the best feasible dense design: {prim} {fmt(a)} vs {fmt(b)}, ratio {fmt(ratio)}"
    )


#: The reason of a decision held at BOUNDED ROLLOUT by proxy evidence (rule R2).
HOLD_REASON = (
    "proxy evidence shows the quality limit violated; a reference model cannot decide ROLLBACK, so the "
    "decision is held at BOUNDED ROLLOUT until the team's own model is evaluated ([quality] weights + eval)"
)


def decide(
    data: StudyData,
    det: Detail | None,
    q: dict[str, Any] | None,
    comp: dict[str, Any] | None = None,
    rob: dict[str, Any] | None = None,
) -> tuple[str, str, list[list[str]]]:
    """(verdict, rule that fired, rule table rows with the evaluated values). ``comp``: the equal-terms
    comparison (explore.compare.comparison); ``rob``: the advantage under the assumptions' ranges
    (explore.robustness); without them R3 and R5 cannot hold and the verdict is at most BOUNDED ROLLOUT.
    Only evidence on the team's model can decide ROLLBACK on quality (R2);
    evidence that does not say what it was measured on counts as missing (R4)."""
    rows: list[list[str]] = []
    feasible = bool(data.best.get("feasible"))
    qfail = _sparse_quality_failure(data)
    r1 = not feasible and qfail is None
    rows.append(
        [
            "R1",
            RULES[0][1],
            f"{data.best['n_feasible']} feasible of {data.best['n_evaluated']}",
            "fires" if r1 else "passes" if feasible else "passes (the quality limit explains it: R2)",
        ]
    )
    if r1 or (det is None and qfail is None):
        return "ESCALATE", "R1", rows
    sparse = point_sparsity(det.point)[2] if det is not None else True
    kind = evidence_kind(data, q)
    hold = (
        _proxy_hold(data, comp or {})
        if kind != "model" and data.cfg.limits.max_quality_delta is not None
        else None
    )
    guard_bad = bool(q and not q.get("dense") and q.get("guardrail_ok") is False)
    fired = _quality_rule(rows, det, q, qfail, feasible=feasible, sparse=sparse, kind=kind, hold=hold)
    if fired is not None:
        return (*fired, rows)
    if det is None:
        return "ESCALATE", "R1", rows
    comp = comp or {}
    adv = comp.get("primary_advantage")
    fired = _advantage_rule(rows, data, comp, sparse=sparse, hold=hold)
    if fired is not None:
        return (*fired, rows)
    if guard_bad:  # the chosen design's guardrail fails on proxy evidence: held (R2)
        return "BOUNDED ROLLOUT", "R2", rows
    if _evidence_rule(rows, q, sparse=sparse, kind=kind):
        return "BOUNDED ROLLOUT", "R4", rows
    if _margin_rule(rows, data, det, adv, rob):
        return "BOUNDED ROLLOUT", "R5", rows
    rows.append(["R6", RULES[5][1], "", "fires"])
    return "SHIP", "R6", rows


def _quality_rule(
    rows: list[list[str]],
    det: Detail | None,
    q: dict[str, Any] | None,
    qfail: str | None,
    *,
    feasible: bool,
    sparse: bool,
    kind: str,
    hold: str | None,
) -> tuple[str, str] | None:
    """R2, the quality guardrail: its row, and the (verdict, rule) when it decides."""
    guard_bad = bool(q and not q.get("dense") and q.get("guardrail_ok") is False)
    if qfail is not None and not (feasible and sparse):
        # every sparse design of the study violates the quality limit: sparsity does not ship on the
        # team's model's evidence; on a proxy's, the decision is held unless sparsity loses anyway
        if kind == "model":
            rows.append(["R2", RULES[1][1], qfail, "fires"])
            return "ROLLBACK", "R2"
        if hold is not None:
            rows.append(["R2", RULES[1][1], f"{qfail}; {hold}", "holds at BOUNDED ROLLOUT"])
            return "BOUNDED ROLLOUT", "R2"
        rows.append(
            [
                "R2",
                RULES[1][1],
                f"{qfail}; {kind} evidence cannot decide ROLLBACK, and no sparse design "
                "failing only the quality limit beats the best dense design",
                "passes (R3 decides)",
            ]
        )
        if not feasible:
            return "ESCALATE", "R1"
    elif det is not None:
        held = guard_bad and kind != "model"
        rows.append(
            [
                "R2",
                RULES[1][1],
                (q or {}).get("guardrail", "no quality evidence") if sparse else "dense design",
                "holds at BOUNDED ROLLOUT" if held else "fires" if guard_bad else "passes",
            ]
        )
        if guard_bad and not held:
            return "ROLLBACK", "R2"
    return None


def _advantage_rule(
    rows: list[list[str]], data: StudyData, comp: dict[str, Any], *, sparse: bool, hold: str | None
) -> tuple[str, str] | None:
    """R3, sparsity against the best dense design on equal terms: its row, and the (verdict, rule)
    when it decides (a proxy quality hold turns its firing into R2's BOUNDED ROLLOUT)."""
    adv = comp.get("primary_advantage")
    prim = data.cfg.objectives.primary
    bs, bd = comp.get("best_sparse"), comp.get("best_dense")
    if bs is None:
        measured = "no feasible sparse design"
    elif bd is None:
        measured = "no feasible dense design to compare with"
    else:
        measured = (
            f"best sparse {fmt(bs.get(prim))} vs best dense {fmt(bd.get(prim))} {prim}: ratio {fmt(adv)}"
        )
    r3 = bs is None or (adv is not None and adv <= 1.0) or not sparse
    if r3 and hold is not None:  # sparsity loses only through the quality limit on proxy evidence: R2 holds
        rows.append(
            [
                "R3",
                RULES[2][1],
                f"{measured}; {hold}",
                "fires only through the proxy quality limit (R2 holds)",
            ]
        )
        return "BOUNDED ROLLOUT", "R2"
    rows.append(
        [
            "R3",
            RULES[2][1],
            measured + ("" if sparse else "; the best design is dense"),
            "fires" if r3 else "passes",
        ]
    )
    if r3:
        return "ROLLBACK", "R3"
    return None


def _evidence_rule(rows: list[list[str]], q: dict[str, Any] | None, *, sparse: bool, kind: str) -> bool:
    """R4, the quality evidence is a proxy or missing: its row; whether it fires."""
    r4 = sparse and (kind != "model" or q is None or q.get("guardrail_ok") is not True)
    r4_text = (
        "no quality evidence"
        if q is None
        else f"proxy evidence only ({q.get('reference', 'reference model')}): it shows the family, not the "
        f"deployed model"
        if kind == "proxy"
        else "evidence that does not say what it was measured on: counted as missing"
        if kind != "model"
        else "evidence on the team's model without a guardrail verdict: counted as missing"
        if q.get("guardrail_ok") is not True
        else "evidence on the team's model"
    )
    rows.append(["R4", RULES[3][1], r4_text if sparse else "dense design", "fires" if r4 else "passes"])
    return r4


def _margin_rule(
    rows: list[list[str]], data: StudyData, det: Detail, adv: Any, rob: dict[str, Any] | None
) -> bool:
    """R5, a thin advantage, confidence or slack: its row; whether it fires."""
    eff = num(det.metrics.get("effective_speedup"))
    ideal = num(det.metrics.get("ideal_speedup"))
    slack = -float(data.best["tightest_limit"]["constraint"])
    low = eff is not None and ideal and eff < SHIP_SPEEDUP_SHARE_OF_IDEAL * ideal
    margin = data.cfg.decision.margin
    thin = adv is None or adv < 1.0 + margin
    unsure = not confident(rob)
    r5 = bool(low or thin or unsure or slack < SHIP_MIN_SLACK)
    conf = (
        "no robustness figures" if rob is None else f"{rob['line']} (needs P >= {fmt(rob['min_confidence'])})"
    )
    rows.append(
        [
            "R5",
            RULES[4][1],
            f"sparse/dense {fmt(adv)} (margin {pct(margin)}); {conf}; effective/ideal "
            f"{fmt(eff / ideal) if (eff and ideal) else 'n/a'}; "
            f"tightest slack {pct(slack)} ({data.best['tightest_limit']['name']})",
            "fires" if r5 else "passes",
        ]
    )
    return r5


#: Each rule's reason, in the decision's words.
RULE_REASON = {
    "R1": "no feasible design",
    "R2": "the quality guardrail is violated",
    "R3": "sparsity does not beat the best dense design on equal terms",
    "R4": "the quality evidence is a proxy or missing",
    "R5": "the sparse advantage, its confidence over the assumptions' ranges, or a limit's slack is thin",
    "R6": "all rules pass",
}


def rule_reason(verdict: str, rule: str) -> str:
    """The decision's reason in words (a hold by proxy evidence has its own)."""
    return HOLD_REASON if (rule, verdict) == ("R2", "BOUNDED ROLLOUT") else RULE_REASON[rule]


def rejected_alternatives(data: StudyData) -> list[list[str]]:
    """The top designs that lost: infeasible ones that beat the best on the primary objective, and
    feasible ones that are dominated (on all objectives) or simply worse on a single objective."""
    prim = data.cfg.objectives.primary
    sign = 1.0 if data.directions[0] == "maximize" else -1.0
    best = data.best.get("best")
    recs = [
        r
        for r in data.records
        if num(r["metrics"].get(prim)) is not None and (best is None or r["number"] != best["number"])
    ]
    recs.sort(key=lambda r: (-sign * float(r["metrics"][prim]), r["number"]))
    feas = [r for r in data.records if r["feasible"]]
    objs = data.objectives
    out = []
    for r in recs[:N_REJECTED]:
        val = float(r["metrics"][prim])
        if not r["feasible"]:
            bad = sorted(((c, v) for c, v in r["constraints"].items() if v > 0), key=lambda cv: -cv[1])
            why = "infeasible: " + "; ".join(
                describe_constraint(data, c, v, r["metrics"]) for c, v in bad[:3]
            )
        else:
            dom = None
            for f in feas:
                if f["number"] == r["number"]:
                    continue
                better = [
                    (1 if d == "maximize" else -1) * (float(f["metrics"][o]) - float(r["metrics"][o]))
                    for o, d in zip(objs, data.directions, strict=True)
                ]
                if all(b >= 0 for b in better) and any(b > 0 for b in better):
                    dom = f
                    break
            if dom is not None:
                why = f"dominated by trial {dom['number']} on {', '.join(objs)}"
            else:
                why = f"feasible, on the front, but lower {prim}"
            if best is not None:
                why += f" ({fmt(val)} vs the best {fmt(best['metrics'][prim])})"
        out.append([str(r["number"]), point_label(r["params"]), fmt(val), why])
    return out


def section_decision(
    data: StudyData,
    det: Detail | None,
    q: dict[str, Any] | None,
    comp: dict[str, Any] | None = None,
    rob: dict[str, Any] | None = None,
) -> tuple[Section, dict[str, Any]]:
    s = Section(11, "decision", "Decision", "sparsity")
    verdict, rule, rows = decide(data, det, q, comp, rob)
    s.verdict = f"Recommendation: {verdict} (rule {rule})."
    if rule == "R2" and verdict == "BOUNDED ROLLOUT":
        s.paras.append(f"Held at BOUNDED ROLLOUT: {HOLD_REASON}.")
    if rule == "R4" and q is not None and q.get("evidence") not in ("model", "proxy"):
        s.paras.append(
            "Capped at BOUNDED ROLLOUT: the quality evidence does not say what it was measured on, so it "
            "counts as missing; only the team's own weights and eval ([quality] weights + eval) can "
            "support SHIP."
        )
    if rule == "R4" and q is not None and q.get("evidence") == "proxy":
        s.paras.append(
            f"Capped at BOUNDED ROLLOUT: the quality evidence is a proxy ({q.get('reference')}, "
            f"{q.get('model')}), a reference model of the workload family rather than the deployed "
            "model; only the team's own weights and eval ([quality] weights + eval) can support SHIP."
        )
    s.tables.append(
        Table(
            "Rules, evaluated in order (the first that fires decides)",
            ["rule", "statement", "measured", "result"],
            rows,
            name="decision_rules",
        )
    )
    vm = Table(
        "Validation matrix and rollback triggers",
        ["check", "measured now", "limit", "rollback trigger"],
        [],
        name="validation_matrix",
    )
    m = det.metrics if det is not None else {}
    lim = data.cfg.limits
    if det is not None:
        sp = num(m.get("speedup_vs_iso_area_dense"))
        vm.rows.append(
            [
                "speedup vs the iso-area dense design (field measurement on the workload mix against the "
                "dense chip of the same area)",
                fmt(sp),
                "> 1.0",
                f"measured speedup < {fmt(max(1.0, 0.9 * sp) if sp else 1.0)} (10 % below this report, or no gain)",
            ]
        )
        eff = num(m.get("effective_speedup"))
        vm.rows.append(
            [
                "effective speedup (sparse vs dense kernels on this hardware)",
                fmt(eff),
                "> 1.0",
                "below 1.0: the sparse kernels lose to the dense fallback on the same chip",
            ]
        )
        vm.rows.append(
            [
                "stall fraction",
                fmt(m.get("stall_fraction")),
                fmt(lim.max_stall_fraction),
                "above the limit on any workload of the mix",
            ]
        )
        vm.rows.append(
            [
                "junction temperature (C)",
                fmt(m.get("tj_c")),
                fmt(lim.max_tj_c),
                "above the limit at the worst-case ambient",
            ]
        )
        vm.rows.append(
            [
                "power density (W/mm^2)",
                fmt(m.get("power_density_w_mm2")),
                fmt(lim.max_power_density_w_mm2),
                "above the limit",
            ]
        )
        if lim.p99_latency_ms is not None:
            vm.rows.append(
                [
                    f"p99 latency at {fmt(lim.request_rate_hz)} req/s (ms)",
                    p99_text(m, data.cfg),
                    fmt(lim.p99_latency_ms),
                    "SLA missed over any 1-hour window",
                ]
            )
        vm.rows.append(
            [
                f"quality loss (fraction, {(q or {}).get('evidence', 'no')} evidence)",
                interval_text(q)
                if q and not q.get("dense")
                else fmt(q.get("quality_delta"))
                if q
                else "no evidence",
                fmt(lim.max_quality_delta),
                "loss above the limit on the production eval set, or no "
                "evaluation before widening the rollout",
            ]
        )
    s.tables.append(vm)
    rej = rejected_alternatives(data)
    if rej:
        s.tables.append(
            Table(
                "Rejected alternatives (top designs that lost, and why)",
                ["trial", "design", data.cfg.objectives.primary, "why it lost"],
                rej,
                name="rejected",
            )
        )
    return s, {"verdict": verdict, "rule": rule, "reason": rule_reason(verdict, rule)}
