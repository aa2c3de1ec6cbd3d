"""Owners and closure artifacts: every finding of a run goes to exactly one of four owners.

The review packet names four owners, each owing a closure artifact (``ROLES``). A **finding** is
one of:

* ``bottleneck``: a mechanism that costs the chosen design at least ``BOTTLENECK_MIN_SCORE`` of its
  run time or margin (explore.report.bottleneck.bottleneck_scores), and always the dominant one;
* ``limit``: a limit that fails in some trial of the study, or that the chosen design meets with
  less than ``NEAR_BINDING_SLACK`` normalised slack (near-binding);
* ``fallback``: a family of layers that run dense on sparse hardware (layers whose names differ
  only by their index, e.g. ``layer3.attn_qk`` of every block), with its counters;
* ``quality_gate``: the quality guardrail (limits.max_quality_delta) and the kind of evidence.

Each finding goes to its owner by the first rule of ``OWNER_RULES`` that matches (printed in the
report). Each owner's artifact is a file the run writes (``closure_<role>.csv``): whether it is
produced, partial (the evidence exists but is not the deployed system's) or missing says the
artifact status, with the reason.
"""

from __future__ import annotations

import re
from collections.abc import Mapping
from dataclasses import asdict, dataclass
from pathlib import Path
from typing import Any

import pandas as pd

from explore.config import OWNER_ROLES, SweepConfig, config_fingerprint
from explore.report.bottleneck import MECHANISM, bottleneck_scores
from explore.report.decision import SHIP_MIN_SLACK
from explore.report.document import Section, Table
from explore.report.format import describe_constraint, fmt, pct
from explore.report.layers import layer_frame
from explore.results import DEFAULT_EVALUATOR, Detail, Evaluator, study_constraint_names
from explore.space import parse_sparsity
from hw.host import write_file

#: [A] a bottleneck other than the dominant one becomes a finding when it costs at least this share
#: of the run time (or margin): 10 %, the same size the report calls significant for stalls.
BOTTLENECK_MIN_SCORE = 0.10
#: [A] a limit the chosen design meets with less normalised slack than this is near-binding (a
#: finding): twice the decision's SHIP_MIN_SLACK, so it is flagged before it decides the release.
NEAR_BINDING_SLACK = 2 * SHIP_MIN_SLACK

ROLES: dict[str, dict[str, str]] = {
    "model_optimization": {
        "title": "model optimization lead",
        "artifact": "design rationale + tradeoffs (pruning schedule, quality evidence)",
    },
    "accelerator_architecture": {
        "title": "accelerator architecture owner",
        "artifact": "profile traces + bottleneck map (per-layer cycles, stalls, occupancy)",
    },
    "compiler_sparsity": {
        "title": "compiler sparsity pass owner",
        "artifact": "test report + closure memo (supported-layer matrix, fallback counters, format conversions)",
    },
    "serving_performance": {"title": "serving performance owner", "artifact": "p95/p99 under the SLA"},
}
assert tuple(ROLES) == OWNER_ROLES

#: (rule id, statement, predicate on a finding, role): the first rule that matches assigns the owner.
OWNER_RULES: tuple[tuple[str, str, Any, str], ...] = (
    (
        "O1",
        "a quality gate, or a limit on quality_delta -> model optimization lead",
        lambda f: f.kind == "quality_gate" or (f.kind == "limit" and f.subject == "quality_delta"),
        "model_optimization",
    ),
    (
        "O2",
        "a limit on p99_latency_ms (the serving SLA) -> serving performance owner",
        lambda f: f.kind == "limit" and f.subject == "p99_latency_ms",
        "serving_performance",
    ),
    (
        "O3",
        "a dense-fallback layer family, or a bottleneck whose mechanism is precision (time lost to dense "
        "fallback) -> compiler sparsity pass owner",
        lambda f: f.kind == "fallback" or (f.kind == "bottleneck" and f.mechanism == "precision"),
        "compiler_sparsity",
    ),
    (
        "O4",
        "every other limit (stall fraction, T_j, power density, area, timing, ppa feasibility) and every other "
        "bottleneck (compute, memory, scheduling, thermal) -> accelerator architecture owner",
        lambda f: f.kind in ("limit", "bottleneck"),
        "accelerator_architecture",
    ),
)


@dataclass
class Finding:
    id: str
    kind: str  # bottleneck | limit | fallback | quality_gate
    subject: str  # mechanism, constraint name, layer family or gate name
    mechanism: str
    text: str
    owner: str = ""
    rule: str = ""

    def as_dict(self) -> dict[str, Any]:
        return asdict(self)


def assign(f: Finding) -> tuple[str, str]:
    """(role, rule id) of a finding: the first matching rule of OWNER_RULES."""
    for rid, _, pred, role in OWNER_RULES:
        if pred(f):
            return role, rid
    raise AssertionError(f"no owner rule matches finding {f.kind}/{f.subject}")  # O4 catches every kind left


def _family(name: str) -> str:
    """A layer family: the name with its block indices replaced by '*' (layer3.attn -> layer*.attn)."""
    return re.sub(r"\d+", "*", name)


def findings(
    cfg,
    records: list[dict[str, Any]],
    best: dict[str, Any],
    constraint_names: list[str],
    det: Any,
    layers: pd.DataFrame,
    q: dict[str, Any] | None,
    data: Any = None,
) -> list[Finding]:
    """Every finding of a run (module docstring), each with its owner and the rule that chose it.
    ``data`` (a StudyData, or anything with ``cfg``) is what the bottleneck rule and the constraint
    descriptions read."""
    out: list[Finding] = []
    data = data if data is not None else _Facts(cfg)
    if det is not None:
        ev = bottleneck_scores(data, det, layers)
        for k, (score, mech, txt) in enumerate(ev):
            if k == 0 or score >= BOTTLENECK_MIN_SCORE:
                if any(f.kind == "bottleneck" and f.mechanism == mech for f in out):
                    continue  # one finding per mechanism (the strongest evidence)
                lead = "dominant" if k == 0 else f"score {fmt(score)}"
                out.append(Finding(f"B{len(out) + 1}", "bottleneck", mech, mech, f"{mech} ({lead}): {txt}"))
    chosen = best.get("best") if best.get("feasible") else best.get("closest")
    for c in constraint_names:
        fails = [r for r in records if r["constraints"].get(c, 0.0) > 0]
        slack = None
        if chosen is not None and c in chosen["constraints"]:
            slack = -float(chosen["constraints"][c])
        near = slack is not None and 0 <= slack < NEAR_BINDING_SLACK and c != "ppa_feasibility"
        if not fails and not near:
            continue
        parts = []
        if fails:
            worst = min(fails, key=lambda r: (r["constraints"][c], r["number"]))
            parts.append(
                f"fails in {len(fails)}/{len(records)} trials (closest failing, trial {worst['number']}: "
                + describe_constraint(data, c, worst["constraints"][c], worst["metrics"])
                + ")"
            )
        if slack is not None and chosen is not None:
            state = "fails" if slack < 0 else "near-binding" if near else "met"
            parts.append(f"at the chosen design (trial {chosen['number']}): {state}, slack {pct(slack)}")
        out.append(
            Finding(
                f"L{sum(f.kind == 'limit' for f in out) + 1}",
                "limit",
                c,
                MECHANISM.get(c, "compute"),
                f"{c}: " + "; ".join(parts),
            )
        )
    if det is not None and not layers.empty and parse_sparsity(det.point.get("sparsity", "dense"))[2]:
        fb = layers[~layers["sparse"]].copy()
        if len(fb):
            fb["family"] = [_family(n) for n in fb["layer"]]
            for (wname, fam), g in fb.groupby(["workload", "family"], sort=False):
                share = float(g["time_share"].sum())
                reasons = sorted({r for r in g["fallback_reason"] if r})
                out.append(
                    Finding(
                        f"F{sum(f.kind == 'fallback' for f in out) + 1}",
                        "fallback",
                        f"{wname}: {fam}",
                        "precision",
                        f"{wname}: {fam}: {len(g)} layer(s), {int(g['count'].sum())} instance(s), "
                        f"{pct(share)} of the workload's time run dense; why: "
                        + ("; ".join(reasons) or "not sparsifiable"),
                    )
                )
    if cfg.limits.max_quality_delta is not None:
        if q is None:
            txt = (
                "quality gate max_quality_delta = "
                + fmt(cfg.limits.max_quality_delta)
                + ": no evidence for the design"
            )
        elif q.get("dense"):
            txt = "quality gate: the chosen design is dense (no pruning, loss 0 by construction)"
        else:
            txt = f"quality gate ({q.get('evidence') or 'unlabelled'} evidence): " + str(
                q.get("guardrail", f"quality_delta {fmt(q.get('quality_delta'))}")
            )
        out.append(Finding("Q1", "quality_gate", "max_quality_delta", "precision", txt))
    for f in out:
        f.owner, f.rule = assign(f)
    return out


@dataclass
class _Facts:
    """The part of a StudyData the findings read, for callers that have only a config (best.json)."""

    cfg: Any


# ---- closure artifacts ---------------------------------------------------------------------------


Artifact = tuple[pd.DataFrame | None, str, str]


def artifact_frames(
    cfg, det: Any, layers: pd.DataFrame, q: dict[str, Any] | None, serving: dict[str, Any] | None
) -> dict[str, Artifact]:
    """Per role: (the artifact's data or None, status produced|partial|missing, why)."""
    out: dict[str, Artifact] = {}
    out["model_optimization"] = _model_optimization_artifact(cfg, q)
    out["accelerator_architecture"], out["compiler_sparsity"] = _layer_artifacts(det, layers)
    out["serving_performance"] = _serving_artifact(cfg, det, serving)
    return out


def _model_optimization_artifact(cfg, q: dict[str, Any] | None) -> Artifact:
    """Model optimization's artifact: the pruning schedule and quality evidence."""
    if q is None:
        why = (
            "no quality limit is set (limits.max_quality_delta): no quality evidence was produced"
            if cfg.limits.max_quality_delta is None
            else "the evaluator gave no quality evidence"
        )
        return (None, "missing", why)
    else:
        rows = [
            (k, v) for k, v in q.items() if isinstance(v, (int, float, str, bool)) and not isinstance(v, dict)
        ]
        df = pd.DataFrame(rows, columns=["quantity", "value"])
        if q.get("dense"):
            return (df, "produced", "the chosen design is dense: no pruning to justify")
        elif q.get("evidence") == "model":
            return (df, "produced", "the team's weights scored by the team's eval")
        elif q.get("evidence") == "proxy":
            return (
                df,
                "partial",
                f"proxy evidence ({q.get('reference', 'reference model')}): "
                "the deployed model's weights and eval ([quality]) are missing",
            )
        else:  # fails closed: evidence that does not say what it was measured on is no evidence
            return (
                df,
                "missing",
                "the quality evidence does not say what it was measured on "
                "(neither the team's model nor a named reference)",
            )


def _layer_artifacts(det: Any, layers: pd.DataFrame) -> tuple[Artifact, Artifact]:
    """Accelerator architecture's (per-layer profile and bottleneck map) and compiler sparsity's
    (supported-layer matrix) artifacts."""
    if det is None or layers.empty:
        return (
            (None, "missing", "no per-layer results (no design, or the evaluator has no evaluate_detail)"),
            (None, "missing", "no per-layer results: no supported-layer matrix"),
        )
    cols = [
        "workload",
        "layer",
        "kind",
        "count",
        "cycles_per_instance",
        "compute_cycles",
        "stall_cycles",
        "total_cycles",
        "stall_fraction",
        "utilization",
        "bound",
        "time_share",
        "dram_bytes",
    ]
    prof = layers[cols].copy()
    # the workload as the cycle model names it, with its parameters (what `sparsepe simulate` prints)
    full = {w: net.workload for w, _, net in det.networks}
    prof.insert(1, "workload_id", [full.get(w, w) for w in prof["workload"]])
    architecture: Artifact = (
        prof,
        "produced",
        "per-layer cycles, stalls and occupancy from the cycle model (sim.perf); not a silicon trace",
    )
    n, m, sparse = parse_sparsity(det.point.get("sparsity", "dense"))
    cm = layers[
        [
            "workload",
            "layer",
            "kind",
            "count",
            "sparse",
            "fallback_reason",
            "asp_verdict",
            "metadata_bytes",
            "dram_weight_bytes",
        ]
    ].copy()
    cm["ran"] = [f"sparse {n}:{m}" if s else ("dense fallback" if sparse else "dense") for s in cm["sparse"]]
    cm["format_conversion"] = [
        f"dense int8 -> {n}:{m} compressed + metadata" if s else "none (dense)" for s in cm["sparse"]
    ]
    compiler: Artifact = (
        cm,
        "produced",
        "supported-layer matrix, fallback counters and format conversions of the chosen design",
    )
    return architecture, compiler


def _serving_artifact(cfg, det: Any, serving: dict[str, Any] | None) -> Artifact:
    """Serving performance's artifact: p95/p99 under the SLA."""
    if cfg.limits.p99_latency_ms is None:
        return (
            None,
            "missing",
            "no serving SLA is set (limits.p99_latency_ms and request_rate_hz): p95/p99 were not simulated",
        )
    elif not serving:
        return (
            None,
            "missing",
            "no design to serve"
            if det is None
            else "the evaluator gives no per-workload serving statistics (explore.evaluator.serving_stats)",
        )
    else:
        serving_rows = []
        for wname, st in serving.items():
            serving_rows.append(
                {
                    "workload": wname,
                    **{
                        k: (v if not isinstance(v, list) else ";".join(fmt(x) for x in v))
                        for k, v in st.items()
                    },
                }
            )
        df = pd.DataFrame(serving_rows)
        ok = all(st["p99_interval_ms"][1] <= cfg.limits.p99_latency_ms for st in serving.values())
        return (
            df,
            "produced",
            f"p95/p99 over {cfg.serving.seeds} arrival seeds after a "
            f"{pct(cfg.serving.warmup_fraction, 0)} warm-up; the upper end of p99's "
            f"interval {'meets' if ok else 'does NOT meet'} the "
            f"{fmt(cfg.limits.p99_latency_ms)} ms SLA",
        )


def serving_evidence(det: Detail | None) -> dict[str, dict[str, Any]] | None:
    """Per workload, sim.serving's statistics of the chosen design, as the evaluator's detail gives
    them (explore.evaluator.evaluate_detail); None without a design, an SLA, or an evaluator that
    gives them."""
    return None if det is None else getattr(det, "serving", None)


def owners_block(
    cfg, found: list[Finding], arts: dict[str, tuple[Any, str, str]], files: Mapping[str, str | None]
) -> dict[str, Any]:
    """best.json's ``owners``: per role the name, its findings, the artifact owed and its status."""
    out: dict[str, Any] = {"rules": [f"{rid}: {txt}" for rid, txt, _, _ in OWNER_RULES]}
    for role in OWNER_ROLES:
        _, status, why = arts[role]
        out[role] = {
            "name": getattr(cfg.owners, role),
            "title": ROLES[role]["title"],
            "findings": [f.as_dict() for f in found if f.owner == role],
            "artifact": {
                "owed": ROLES[role]["artifact"],
                "status": status,
                "why": why,
                "file": files.get(role),
            },
        }
    return out


def write_artifacts(
    arts: dict[str, tuple[Any, str, str]], out_dir: Path, prefix: str
) -> dict[str, str | None]:
    """Write each produced artifact's data as ``out_dir/<prefix><role>.csv``; role -> that path
    (relative to ``out_dir``'s parent for best.json links), or None for a missing artifact."""
    out: dict[str, str | None] = {}
    for role, (df, _status, _) in arts.items():
        if df is None:
            out[role] = None
            continue
        p = out_dir / f"{prefix}{role}.csv"
        write_file(p, df.to_csv(index=False, lineterminator="\n"), parents=True)
        out[role] = p.name
    return out


def attach_owners(
    best: dict[str, Any],
    cfg: SweepConfig,
    records: list[dict[str, Any]],
    out_dir: Path,
    evaluator: str | None = None,
) -> dict[str, Any]:
    """Add ``owners`` to best.json's content ``best`` (in place) and write the closure artifacts
    into ``out_dir/closure/``: the chosen design (best feasible, else the closest) re-evaluated
    with its per-layer detail. Returns ``best``."""
    chosen = best.get("best") if best.get("feasible") else best.get("closest")
    ev = Evaluator(evaluator or DEFAULT_EVALUATOR, cfg)
    if chosen is None:
        det = None
    elif ev.has_detail:
        det = ev.detail(chosen["params"])
    else:  # nothing beyond the stored metrics to gain from evaluating the design again
        det = Detail(point=dict(chosen["params"]), metrics=dict(chosen["metrics"]))
    facts = _Facts(cfg)
    layers = layer_frame(facts, det) if det is not None and det.has_layers else pd.DataFrame()
    q = None
    if det is not None and det.quality:
        q = dict(det.quality)
    cnames = study_constraint_names(cfg, [r["constraints"] for r in records])
    found = findings(cfg, records, best, cnames, det, layers, q, data=facts)
    arts = artifact_frames(cfg, det, layers, q, serving_evidence(det))
    files = write_artifacts(arts, Path(out_dir) / "closure", "")
    best["owners"] = owners_block(
        cfg, found, arts, {k: (f"closure/{v}" if v else None) for k, v in files.items()}
    )
    # what `sparsepe diff` compares between two best.json files: the config and its fingerprint
    best["config_fingerprint"] = config_fingerprint(cfg)
    best["config"] = cfg.model_dump(mode="json", exclude={"source"})
    return best


# ---- report section ------------------------------------------------------------------------------


def section_owners(
    data, det: Detail | None, layers: pd.DataFrame, q: dict[str, Any] | None
) -> tuple[Section, list[Finding], dict[str, Any]]:
    """The owners section: the rules, and per owner its findings and closure artifact (the CSV the
    report writes beside it, ``report_files/closure_<role>.csv``). Also returns the findings and
    the ``owners`` block for report.json."""
    s = Section(0, "owners", "Owners and closure artifacts", "sparsity")
    found = findings(data.cfg, data.records, data.best, data.constraint_names, det, layers, q, data=data)
    arts = artifact_frames(data.cfg, det, layers, q, serving_evidence(det))
    s.paras.append(
        "Findings: the dominant bottleneck of the chosen design and every other mechanism costing at least "
        f"{pct(BOTTLENECK_MIN_SCORE, 0)}; every limit that fails in some trial or that the chosen design "
        f"meets with less than {pct(NEAR_BINDING_SLACK, 0)} slack; every dense-fallback layer family; the "
        "quality gate. Each goes to exactly one owner: the first rule below that matches."
    )
    s.tables.append(
        Table(
            "Owner rules (the first that matches assigns)",
            ["rule", "statement"],
            [[rid, txt] for rid, txt, _, _ in OWNER_RULES],
        )
    )
    files = {}
    for role in OWNER_ROLES:
        df, status, why = arts[role]
        name = getattr(data.cfg.owners, role)
        stem = f"closure_{role}"
        if df is not None:
            s.data[stem] = df
            files[role] = f"report_files/{stem}.csv"
            s.links.append(
                (f"closure artifact of the {ROLES[role]['title']} ({name}), {status}", files[role])
            )
        mine = [f for f in found if f.owner == role]
        t = Table(
            f"{ROLES[role]['title']}: {name}. Owes: {ROLES[role]['artifact']}. Artifact: {status.upper()}"
            + (f" ({files[role]})" if role in files else "")
            + f": {why}",
            ["finding", "kind", "rule", "evidence"],
            [[f.id, f.kind, f.rule, f.text] for f in mine]
            or [["none", "-", "-", "no finding goes to this owner"]],
        )
        s.tables.append(t)
    s.tables.append(
        Table(
            "Every finding and its one owner",
            ["finding", "kind", "subject", "owner", "rule"],
            [[f.id, f.kind, f.subject, getattr(data.cfg.owners, f.owner), f.rule] for f in found],
            name="owners_findings",
        )
    )
    block = owners_block(data.cfg, found, arts, files)
    return s, found, block
