"""The review memo: Symptom, Mechanism hypothesis, Proposed action, Signoff, filled from the run.

* **Symptom**: the failing (or deciding) metric, the workload slice, the first failing layer or
  stage in execution order, and the build and runtime tags (sparsepe version, git revision, Yosys
  and OpenSTA versions, config hash, the user's ``[context]`` block).
* **Mechanism hypothesis**: the primary mechanism (explore.report.bottleneck.bottleneck_scores) and
  each competing one with the evidence for and against it, and the evidence still missing.
* **Proposed action**: the smallest reversible change, a one-step move of one axis from the chosen
  design (to the adjacent value of the space, or, for the axes that need no new synthesis, one
  step beyond it: ``_off_space``). Every such move on the axes that act on the primary mechanism
  (``MECHANISM_AXES``) is evaluated with the study's evaluator; the proposal is the one that stays
  feasible with the best perf-per-watt (else the least violation), with its expected movement in
  throughput, p99 and perf-per-watt, and its regression risk (correctness, quality, thermal,
  compatibility).
* **Signoff**: the artifact the primary finding's owner owes, every owner and its artifact status,
  and the decision.

Nothing is left blank: where evidence is missing, the memo says which, and how to supply it.
"""

from __future__ import annotations

import json
import math
from typing import Any

import pandas as pd

from explore.config import OWNER_ROLES, axis_values
from explore.provenance import package_version
from explore.report.bottleneck import MEMORY_STALL_SHARE, bottleneck_scores
from explore.report.document import Section, Table
from explore.report.format import describe_constraint, fmt, md_cell, md_text, num, pct
from explore.report.owners import ROLES, artifact_frames, serving_evidence
from explore.report.repro import git_revision
from explore.results import constraint_values
from explore.space import parse_sparsity
from ppa.tech import NODES_NM
from ppa.timing.opensta import find_sta
from ppa.yosys import yosys_id

#: Axes whose one-step move acts on each mechanism (the proposed action's candidates).
MECHANISM_AXES = {
    "memory": ("dram", "dram_gbps", "sram_kb", "dataflow"),
    "compute": ("clock_mhz", "rows", "cols", "pipeline"),
    "scheduling": ("dataflow", "rows", "cols", "double_buffer"),
    "precision": ("sparsity",),
    "thermal": ("clock_mhz", "node_nm", "pipeline"),
}
#: [A] a layer computing with less than this utilisation is where a scheduling loss shows first.
LOW_UTILISATION = 0.5
#: The user-supplied [context] tags, in the memo's order.
CONTEXT_TAGS = ("model_revision", "compiler_version", "runtime_version", "power_mode", "notes")


# ---- tags ----------------------------------------------------------------------------------------


def build_tags(data) -> list[tuple[str, str]]:
    """The build and runtime tags: measured here, stored by the study, or supplied in [context]."""
    tags = [("sparsepe version", package_version()), ("git revision", git_revision())]
    try:
        tags.append(("Yosys", yosys_id()))
    except Exception as exc:  # noqa: BLE001 - no Yosys here: the tag says so
        tags.append(("Yosys", f"unavailable here ({exc})"))
    sta = find_sta()
    tags.append(
        (
            "OpenSTA",
            f"OpenSTA {sta[1]} ({sta[0]})" if sta else "not on PATH here: timing used the generic path",
        )
    )
    for host, prov in sorted((data.user_attrs.get("tools") or {}).items()):
        tags.append(
            (
                f"tools that costed the trials on {host}",
                "; ".join(f"{k}: {v}" for k, v in sorted(prov.items())),
            )
        )
    tags.append(("config hash (sha256 fingerprint)", data.fingerprint))
    ctx = data.cfg.context
    for k in CONTEXT_TAGS:
        v = getattr(ctx, k)
        tags.append((f"[context] {k}", v if v else f'not supplied (set [context] {k} = "..." in the config)'))
    return tags


# ---- symptom -------------------------------------------------------------------------------------


def _first_layer(layers: pd.DataFrame, mech: str, sparse_hw: bool) -> str:
    """The first layer, in execution order (workloads in config order), where the mechanism shows."""
    if layers.empty:
        return "no per-layer results (the evaluator gives none): the first failing layer cannot be named"
    if mech == "memory":
        hit = layers[layers["stall_fraction"] > 0]
        what = "stalls on memory"
    elif mech == "precision" and sparse_hw:
        hit = layers[~layers["sparse"]]
        what = "falls back to dense"
    elif mech == "scheduling":
        hit = layers[layers["utilization"] < LOW_UTILISATION]
        what = f"computes with utilisation below {fmt(LOW_UTILISATION)}"
    else:
        heavy = layers.loc[layers["time_share"].idxmax()]
        return (
            f"stage: the whole array ({mech} acts on every layer); the heaviest layer is {heavy['workload']}: "
            f"{heavy['layer']} ({pct(heavy['time_share'])} of its workload's time)"
        )
    if hit.empty:
        return f"no layer {what}: the {mech} loss is spread over the array, not one layer"
    r = hit.iloc[0]
    idx = int(layers.index.get_loc(hit.index[0]))
    return (
        f"{r['workload']}: layer {r['layer']} (position {idx} in execution order) is the first that {what} "
        f"(stall fraction {fmt(float(r['stall_fraction']))}, utilisation {fmt(float(r['utilization']))})"
    )


def _symptom(data, det, layers: pd.DataFrame, decision: dict[str, Any], mech: str) -> dict[str, Any]:
    best = data.best
    if not best.get("feasible"):
        c = best.get("closest")
        lim = ", ".join(best.get("binding_limits", [])) or "none"
        metric = f"no feasible design: {lim} fail(s) at the closest design" + (
            f" (trial {c['number']}): "
            + "; ".join(
                describe_constraint(data, k, v, c["metrics"]) for k, v in c["constraints"].items() if v > 0
            )
            if c
            else ""
        )
    else:
        b = best["best"]
        t = best["tightest_limit"]
        metric = (
            f"decision {decision['verdict']} by {decision['rule']} ({decision['reason']}); the tightest limit at "
            f"the chosen design (trial {b['number']}): "
            + describe_constraint(data, t["name"], t["constraint"], b["metrics"])
        )
    wl = [
        f"{w.name} (weight {fmt(w.weight)}" + (f", {w.params}" if w.params else "") + ")"
        for w in data.cfg.workload
    ]
    slice_ = "; ".join(wl)
    if det is not None and det.has_layers:
        worst = max(det.networks, key=lambda x: float(x[2].totals["stall_fraction"]))
        slice_ += (
            f". Worst stall fraction: {worst[0]} ({fmt(float(worst[2].totals['stall_fraction']))}) on "
            f"{_hw(det)}"
        )
    sparse_hw = det is not None and parse_sparsity(det.point.get("sparsity", "dense"))[2]
    return {
        "failing_metric": metric,
        "workload_slice": slice_,
        "first_failing": _first_layer(layers, mech, sparse_hw)
        if det is not None
        else "no design was evaluated",
        "tags": build_tags(data),
    }


def _hw(det) -> str:
    return ", ".join(f"{k}={v}" for k, v in det.point.items())


# ---- mechanism -----------------------------------------------------------------------------------

_ALL = ("compute", "memory", "scheduling", "precision", "thermal")


def _mechanism(data, det, layers, q) -> dict[str, Any]:
    if det is None:
        return {
            "primary": "unknown",
            "primary_evidence": "no design was evaluated",
            "competing": [],
            "missing": ["a finished trial: the study has none"],
        }
    scores = bottleneck_scores(data, det, layers)
    best_of: dict[str, tuple[float, str]] = {}
    for sc, mech, txt in scores:
        if mech not in best_of:
            best_of[mech] = (sc, txt)
    primary = scores[0][1]
    p_sc = scores[0][0]
    m = det.metrics
    against = {
        "memory": f"stall fraction {fmt(num(m.get('stall_fraction')))} "
        f"(significant above {pct(MEMORY_STALL_SHARE, 0)})",
        "compute": f"clock {fmt(num(m.get('clock_mhz')))} MHz of fmax {fmt(num(m.get('fmax_mhz')))} MHz; utilisation "
        f"{fmt(num(m.get('utilization')))}",
        "scheduling": f"utilisation {fmt(num(m.get('utilization')))} with stalls {fmt(num(m.get('stall_fraction')))}",
        "precision": f"effective speedup {fmt(num(m.get('effective_speedup')))} against the ideal "
        f"{fmt(num(m.get('ideal_speedup')))}",
        "thermal": f"T_j {fmt(num(m.get('tj_c')))} C, power density {fmt(num(m.get('power_density_w_mm2')))} W/mm^2",
    }
    competing = []
    for mech in _ALL:
        if mech == primary:
            continue
        if mech in best_of:
            sc, txt = best_of[mech]
            competing.append(
                {
                    "mechanism": mech,
                    "for": txt,
                    "against": f"costs {fmt(sc)} against {fmt(p_sc)} for {primary}; {against[mech]}",
                }
            )
        else:
            why = {
                "precision": "the design is dense: no sparse path to lose"
                if not parse_sparsity(det.point.get("sparsity", "dense"))[2]
                else "no layer-level result",
                "thermal": "no T_j limit is set: thermal margin is not scored",
            }.get(mech, "not scored")
            competing.append(
                {"mechanism": mech, "for": "none measured", "against": f"{why}; {against[mech]}"}
            )
    missing = []
    if q is None:
        missing.append(
            "quality evidence: set limits.max_quality_delta (and [quality] weights + eval for the deployed "
            "model)"
        )
    elif not q.get("dense") and q.get("evidence") == "proxy":
        missing.append(
            f"quality on the deployed model: only proxy evidence ({q.get('reference', 'reference model')}); "
            "give [quality] weights + eval"
        )
    elif not q.get("dense") and q.get("evidence") != "model":  # fails closed: unlabelled evidence is missing
        missing.append(
            "quality evidence: the evaluator's evidence does not say what it was measured on, so it counts "
            "as missing; give [quality] weights + eval"
        )
    if data.cfg.limits.p99_latency_ms is None:
        missing.append(
            "serving p95/p99: no SLA is set (limits.p99_latency_ms + request_rate_hz), so queueing "
            "(scheduling at the request level) is not measured"
        )
    missing.append(
        "a measured profile trace (silicon or RTL simulation of the whole workload): the per-layer "
        "profile is the analytical cycle model's (sim.perf, SCALE-Sim-exact on its own terms)"
    )
    missing.append(
        "non-GEMM operators: timed on the modelled vector unit (sim.vector: operator recipes and sourced "
        "lane rates), not measured on the team's runtime kernels"
    )
    unset = [k for k in CONTEXT_TAGS[:4] if not getattr(data.cfg.context, k)]
    if unset:
        missing.append("runtime tags not supplied in [context]: " + ", ".join(unset))
    return {
        "primary": primary,
        "primary_evidence": best_of[primary][1],
        "competing": competing,
        "missing": missing,
    }


# ---- proposed action -----------------------------------------------------------------------------


#: Axes whose value can step outside the searched space without new synthesis (SRAM from the CACTI
#: fit, the clock and voltage from the timing model, the memory from ppa.dram, the node by scaling):
#: one step each way, as below. Array shape, pipeline, dataflow and sparsity move only within the space.
def _off_space(data, axis: str, v: Any) -> list[Any]:
    if axis == "sram_kb":
        return [v / 2, v * 2]
    if axis == "clock_mhz":  # [A] one 25 % clock step, either way
        return [round(v / 1.25, 3), round(v * 1.25, 3)]
    if axis == "dram_gbps":
        return [v / 2, v * 2]
    if axis == "dram":  # the other memories the config gives unit counts for
        return [t for t in data.cfg.fixed.dram_units if t != v]
    if axis == "node_nm":
        nodes = sorted(NODES_NM)
        i = nodes.index(v) if v in nodes else -1
        return [nodes[j] for j in (i - 1, i + 1) if i >= 0 and 0 <= j < len(nodes)]
    return []


def _neighbours(data, point: dict[str, Any], axis: str) -> list[tuple[Any, bool]]:
    """One-step moves of ``axis`` from the point: (value, inside the searched space). The adjacent
    values of the space; where the space has none on a side, the off-space step (``_off_space``).
    An OS point has no double_buffer move (it streams its weights: explore.space.double_buffered)."""
    if axis == "double_buffer" and point.get("dataflow") == "os":
        return []
    try:
        vals = axis_values(data.cfg).get(axis)
    except Exception:  # noqa: BLE001 - an axis that cannot be discretised has no in-space step
        vals = None
    v = point.get(axis)
    out: list[tuple[Any, bool]] = []
    if vals and v in vals:
        i = vals.index(v)
        out += [(vals[j], True) for j in (i - 1, i + 1) if 0 <= j < len(vals)]
    if len(out) < 2:
        inside = {x for x, _ in out}
        for x in _off_space(data, axis, v):
            if x not in inside and x != v and (not vals or x not in vals):
                out.append((x, False))
    return out


def _action(data, ev, det, mech: str) -> dict[str, Any]:
    if det is None:
        return {
            "delta": None,
            "text": "no design was evaluated: no change to propose",
            "rows": [],
            "risks": [],
            "candidates": [],
        }
    point = dict(det.point)
    axes = [a for a in MECHANISM_AXES.get(mech, ()) if a in point]
    scope = f"the axes acting on {mech} ({', '.join(axes) or 'none in this space'})"
    moves = [(a, v, inside) for a in axes for v, inside in _neighbours(data, point, a)]
    if not moves:  # nothing on the mechanism's axes can move: any one-step move
        moves = [(a, v, inside) for a in point for v, inside in _neighbours(data, point, a)]
        scope = "every axis (none acting on the mechanism can move one step)"
    where = {(a, str(v)): inside for a, v, inside in moves}
    cands = [(a, v) for a, v, _ in moves]
    if not cands:
        return {
            "delta": None,
            "text": "every axis of the space has a single value: no one-step change exists; widen "
            "the space to evaluate a change",
            "rows": [],
            "risks": [],
            "candidates": [],
        }
    pts = [{**point, a: v} for a, v in cands]
    res = ev.evaluate_many(pts)
    base = det.metrics
    scored = []
    for (a, v), mm in zip(cands, res, strict=True):
        cons = constraint_values(data.cfg, mm)
        viol = sum(max(0.0, x) for x in cons.values())
        scored.append((viol > 0, viol, -(num(mm.get("perf_per_watt")) or 0.0), a, v, mm))
    scored.sort(key=lambda s: s[:3])
    bad, viol, _, a, v, mm = scored[0]
    ppw0, ppw1 = num(base.get("perf_per_watt")), num(mm.get("perf_per_watt"))
    gains = ppw0 is not None and ppw1 is not None and ppw1 > ppw0
    rows = []
    for key, label in (
        ("effective_tops", "throughput (effective TOPS)"),
        ("p99_latency_ms", "p99 latency (ms)"),
        ("perf_per_watt", "perf-per-watt (TOPS/W)"),
        ("latency_ms", "latency (ms)"),
        ("tj_c", "T_j (C)"),
        ("area_mm2", "area (mm^2)"),
        ("stall_fraction", "stall fraction"),
    ):
        b0, b1 = num(base.get(key)), num(mm.get(key))
        if b0 is None and b1 is None:
            if key == "p99_latency_ms":
                rows.append(
                    [
                        label,
                        "not evaluated",
                        "not evaluated",
                        "evidence missing: no serving SLA in the config (limits.p99_latency_ms + request_rate_hz)",
                    ]
                )
            continue
        ch = (
            pct(b1 / b0 - 1.0)
            if (b0 and b1 is not None and math.isfinite(b0) and math.isfinite(b1))
            else "n/a"
        )
        rows.append([label, fmt(b0), fmt(b1), ch])
    feas = (
        "stays feasible"
        if not bad
        else f"violates the limits by {fmt(viol)} (normalised sum; the least of all)"
    )
    verdict = (
        "raises perf-per-watt"
        if gains
        else "no evaluated one-step move raises perf-per-watt while feasible: the chosen design is locally optimal "
        "on these axes, and this least costly move is offered for the owner to accept or reject"
    )
    outside = "" if where[(a, str(v))] else ", outside the searched space"
    text = (
        f"{a}: {point[a]} -> {v} (one step{outside}, reversible by setting it back); "
        f"chosen among {len(cands)} one-step "
        f"moves on {scope}, each evaluated with {ev.name}: {feas}; {verdict}"
    )
    risks = _risks(data, a, point[a], v, base, mm)
    cand_rows = [
        [
            f"{ca}: {point[ca]} -> {cv}" + ("" if where[(ca, str(cv))] else " (outside the space)"),
            fmt(num(cm.get("perf_per_watt"))),
            fmt(num(cm.get("effective_tops"))),
            "yes" if not cb else f"no (violation {fmt(cvio)})",
        ]
        for cb, cvio, _, ca, cv, cm in scored
    ]
    return {
        "delta": {a: {"from": point[a], "to": v}},
        "text": text,
        "rows": rows,
        "risks": risks,
        "candidates": cand_rows,
        "metrics_after": {k: mm.get(k) for k in ("effective_tops", "p99_latency_ms", "perf_per_watt")},
    }


def _risks(data, axis: str, old: Any, new: Any, m0: dict[str, Any], m1: dict[str, Any]) -> list[list[str]]:
    out = []
    if axis in ("sparsity", "dataflow"):
        out.append(
            [
                "correctness",
                f"the {axis} changes the datapath the kernels run on: re-run the golden-model "
                "parity tests (hw, sim RTL parity) before the change ships",
            ]
        )
    else:
        out.append(
            [
                "correctness",
                f"low: {axis} changes no arithmetic (same PE, same N:M); re-synthesis and the "
                "existing parity tests cover it",
            ]
        )
    q0, q1 = num(m0.get("quality_delta")), num(m1.get("quality_delta"))
    if axis == "sparsity":
        out.append(
            ["quality", f"quality loss {fmt(q0)} -> {fmt(q1)} ({m1.get('quality_evidence', 'no')} evidence)"]
        )
    else:
        out.append(
            [
                "quality",
                "none: the pruning pattern and weights are unchanged"
                + (f" (quality loss stays {fmt(q0)})" if q0 is not None else ""),
            ]
        )
    t0, t1 = num(m0.get("tj_c")), num(m1.get("tj_c"))
    lim = data.cfg.limits.max_tj_c
    out.append(
        [
            "thermal",
            f"T_j {fmt(t0)} -> {fmt(t1)} C"
            + (f" against the {fmt(lim)} C limit" if lim else " (no T_j limit set)")
            + f"; power density {fmt(num(m0.get('power_density_w_mm2')))} -> "
            f"{fmt(num(m1.get('power_density_w_mm2')))} W/mm^2",
        ]
    )
    compat = {
        "dram": "the memory type and its PHY change: board, package and controller",
        "dram_gbps": "the memory bandwidth changes: PHY/controller configuration",
        "node_nm": "another process node: a new PDK, libraries and signoff",
        "rows": "the array shape changes: the compiler's tiling and the runtime's buffer plan",
        "cols": "the array shape changes: the compiler's tiling and the runtime's buffer plan",
        "sram_kb": "the on-chip buffer size changes: the compiler's tiling",
        "clock_mhz": "the clock plan and the voltage it needs change",
        "pipeline": "PE latency changes: the compiler's schedule",
        "dataflow": "the mapping changes: the compiler's sparsity pass and layouts",
        "sparsity": "the weight format changes: the compiler's format conversion and metadata layout",
    }
    out.append(["compatibility", compat.get(axis, f"{axis} changes")])
    return out


# ---- the memo ------------------------------------------------------------------------------------


def build_memo(
    data, ev, det, layers: pd.DataFrame, q, decision: dict[str, Any], found: list
) -> dict[str, Any]:
    mech = _mechanism(data, det, layers, q)
    symptom = _symptom(data, det, layers, decision, mech["primary"])
    action = _action(data, ev, det, mech["primary"])
    arts = artifact_frames(data.cfg, det, layers, q, serving_evidence(det))
    lead = next((f for f in found if f.kind == "bottleneck"), found[0] if found else None)
    lead_role = lead.owner if lead is not None else "accelerator_architecture"
    owners = [
        [ROLES[r]["title"], getattr(data.cfg.owners, r), ROLES[r]["artifact"], f"{arts[r][1]}: {arts[r][2]}"]
        for r in OWNER_ROLES
    ]
    missing_arts = [ROLES[r]["title"] for r in OWNER_ROLES if arts[r][1] != "produced"]
    signoff = {
        "required_artifact": f"{ROLES[lead_role]['artifact']}, owed by the {ROLES[lead_role]['title']} "
        f"({getattr(data.cfg.owners, lead_role)}) for the primary finding"
        + (f" {lead.id} ({lead.subject})" if lead is not None else "")
        + f"; status: {arts[lead_role][1]}",
        "owners": owners,
        "decision": f"{decision['verdict']} (rule {decision['rule']}: {decision['reason']})"
        + (
            "; closure also needs the artifacts not yet produced: " + ", ".join(missing_arts)
            if missing_arts
            else "; every owner's artifact is produced"
        ),
    }
    return {"symptom": symptom, "mechanism": mech, "action": action, "signoff": signoff}


def memo_markdown(memo: dict[str, Any], title: str = "Review memo") -> str:
    """The memo alone, as Markdown (``sparsepe memo``)."""
    sy, me, ac, so = memo["symptom"], memo["mechanism"], memo["action"], memo["signoff"]
    L = [
        f"# {md_text(title)}",
        "",
        "## 1. Symptom",
        "",
        f"- **Failing metric:** {md_text(sy['failing_metric'])}",
        f"- **Workload slice:** {md_text(sy['workload_slice'])}",
        f"- **First failing layer or stage:** {md_text(sy['first_failing'])}",
        "",
        "| tag | value |",
        "| --- | --- |",
    ]
    L += [f"| {md_cell(k)} | {md_cell(v)} |" for k, v in sy["tags"]]
    L += [
        "",
        "## 2. Mechanism hypothesis",
        "",
        f"- **Primary:** {md_text(me['primary'])}: {md_text(me['primary_evidence'])}",
        "",
        "| competing hypothesis | evidence for | evidence against |",
        "| --- | --- | --- |",
    ]
    L += [
        f"| {md_cell(c['mechanism'])} | {md_cell(c['for'])} | {md_cell(c['against'])} |"
        for c in me["competing"]
    ]
    L += ["", "**Evidence still missing:**", ""] + [f"- {md_text(x)}" for x in me["missing"]]
    L += ["", "## 3. Proposed action", "", f"- **Smallest reversible change:** {md_text(ac['text'])}", ""]
    if ac["rows"]:
        L += ["| metric | now | after the change | change |", "| --- | --- | --- | --- |"]
        L += ["| " + " | ".join(md_cell(c) for c in r) + " |" for r in ac["rows"]]
        L += [""]
    if ac["risks"]:
        L += ["| regression risk | assessment |", "| --- | --- |"]
        L += [f"| {md_cell(k)} | {md_cell(v)} |" for k, v in ac["risks"]]
        L += [""]
    L += [
        "## 4. Signoff",
        "",
        f"- **Required artifact:** {md_text(so['required_artifact'])}",
        f"- **Decision:** {md_text(so['decision'])}",
        "",
        "| owner | name | artifact owed | status |",
        "| --- | --- | --- | --- |",
    ]
    L += ["| " + " | ".join(md_cell(c) for c in r) + " |" for r in so["owners"]]
    return "\n".join(L) + "\n"


def section_memo(data, ev, det, layers: pd.DataFrame, q, decision: dict[str, Any], found: list) -> Section:
    """The memo as a report section; the memo's data is ``section.memo`` (report.json ``memo``)."""
    memo = build_memo(data, ev, det, layers, q, decision, found)
    sy, me, ac, so = memo["symptom"], memo["mechanism"], memo["action"], memo["signoff"]
    s = Section(0, "memo", "Review memo", "verdict")
    s.verdict = (
        f"Primary mechanism: {me['primary']}. Proposed change: {ac['text'].split(' (')[0]}. "
        f"Decision: {so['decision'].split(';')[0]}."
    )
    s.tables.append(
        Table(
            "1. Symptom",
            ["item", "value"],
            [
                ["failing metric", sy["failing_metric"]],
                ["workload slice", sy["workload_slice"]],
                ["first failing layer or stage", sy["first_failing"]],
                *[[k, v] for k, v in sy["tags"]],
            ],
            name="memo_symptom",
        )
    )
    s.tables.append(
        Table(
            f"2. Mechanism hypothesis: primary {me['primary']} ({me['primary_evidence']})",
            ["competing hypothesis", "evidence for", "evidence against"],
            [[c["mechanism"], c["for"], c["against"]] for c in me["competing"]],
            name="memo_mechanism",
        )
    )
    s.tables.append(
        Table(
            "2. Evidence still missing",
            ["evidence", "why it matters / how to supply it"],
            [x.split(": ", 1) if ": " in x else [x, ""] for x in me["missing"]],
        )
    )
    s.tables.append(
        Table(
            f"3. Proposed action: {ac['text']}",
            ["metric", "now", "after the change", "change"],
            ac["rows"] or [["(no change evaluated)", "-", "-", ac["text"]]],
            name="memo_action",
        )
    )
    if ac["risks"]:
        s.tables.append(
            Table("3. Regression risk of the proposed change", ["risk", "assessment"], ac["risks"])
        )
    if ac.get("candidates"):
        s.tables.append(
            Table(
                "3. Every one-step change evaluated (best first)",
                ["change", "perf_per_watt", "effective_tops", "feasible"],
                ac["candidates"],
                name="memo_candidates",
            )
        )
    s.tables.append(
        Table(
            "4. Signoff",
            ["item", "value"],
            [
                ["required artifact", so["required_artifact"]],
                ["decision", so["decision"]],
                *[[f"{o[0]} ({o[1]})", f"owes {o[2]}; {o[3]}"] for o in so["owners"]],
            ],
            name="memo_signoff",
        )
    )
    s.memo = _jsonable(memo)
    return s


def _jsonable(memo: dict[str, Any]) -> dict[str, Any]:
    return json.loads(json.dumps(memo, default=lambda o: o.item() if hasattr(o, "item") else str(o)))
