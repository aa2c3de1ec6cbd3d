"""The precision policy section of the report: one row per precision x sparsity of the
study's designs, with latency, energy per inference and area of the best design of that pair (from
the stored trials), the quality delta against the dense FP32 model with its interval and the gate
(sim.quality.precision on the digits reference MLP; sim.quality.transformer_precision on the
char-level transformer for workloads with attention layers, picked by each workload's structure
like explore.evaluator's quality evidence), and the decision naming the recommended
precision: the gate-passing pair with the lowest energy per inference (ties: lower latency).
"""

from __future__ import annotations

from typing import Any, cast

from explore.config import SweepConfig
from explore.report.document import Section, Table
from explore.report.format import fmt
from explore.space import parse_sparsity
from hw.errors import InputError
from sim.quality.evidence.evidence import limit_excess, reference_families, transformer_config
from sim.quality.evidence.precision import precision_quality
from sim.quality.evidence.transformer_precision import transformer_precision_quality

__all__ = ["policy_rows", "section_precision", "family_quality", "mix_families"]

#: [A] seeds of the quality gate per pair (as the multi-seed quality evidence of the report)
GATE_SEEDS = (0, 1, 2)
#: Each reference family and the metric its quality delta is in.
UNITS = {
    "mlp": "digits MLP (accuracy points)",
    "transformer": "char-level transformer (relative NLL increase)",
}


def _sparsity_label(s: str) -> tuple[str, str]:
    """(row label, quality model sparsity): 'dense' or 'N:M' (the +dense path keeps N:M weights)."""
    n, m, sparse = parse_sparsity(s)
    return str(s), (f"{n}:{m}" if sparse else "dense")


def _best(records: list[dict[str, Any]]) -> dict[str, Any]:
    def key(r):
        mt = r["metrics"]
        e = mt.get("energy_per_inference_mj")
        return (
            not r["feasible"],
            float("inf") if e is None else float(e),
            float(mt.get("latency_ms") or float("inf")),
        )

    return min(records, key=key)


def mix_families(cfg: SweepConfig) -> list[str]:
    """The reference families of the config's workload mix (its ``[[workload]]`` entries, each
    built and told by its structure: sim.quality.evidence.reference_family), sorted."""
    pairs = []
    for i, w in enumerate(cfg.workload):
        try:
            pairs.append((cast(str, w.name), w.build()))  # the validator sets a workload's name
        except InputError as exc:
            raise InputError(str(exc), where=f"{cfg.source}: workload[{i}]") from None
    return list(reference_families(pairs))


def family_quality(families):
    """A quality function (precisions, sparsities, seeds, max_delta) -> rows for the workload
    ``families``: the digits MLP ("mlp") and/or the char-level transformer ("transformer"), one row
    per pair and family (``reference``). Each family's gate tests its own metric; policy_rows
    passes a pair when every family's gate passes (no family's delta is compared with another's)."""

    def transformer(
        precs, sparsities, seeds, max_delta=None
    ):  # the configuration the sweep's evidence trains
        return transformer_precision_quality(
            precs, sparsities, seeds, max_delta=max_delta, cfg=transformer_config()
        )

    fns = {"mlp": precision_quality, "transformer": transformer}

    def quality(precs, sparsities, seeds, max_delta=None):
        out = []
        for fam in families:
            for r in fns[fam](precs, sparsities, seeds, max_delta=max_delta):
                r.reference = fam
                out.append(r)
        return out

    return quality


def policy_rows(data, *, max_delta: float | None = None, quality=None) -> list[dict[str, Any]]:
    """One dict per (precision, sparsity) pair present in the study's trials. ``quality``: a
    function (precisions, sparsities, seeds, max_delta) -> rows like sim.quality.precision (default:
    the reference of the study's workload families, ``family_quality``)."""
    if quality is None:
        quality = family_quality(mix_families(data.cfg))
    groups: dict[tuple[str, str], list[dict[str, Any]]] = {}
    for r in data.records:
        p = r["params"]
        groups.setdefault((str(p.get("precision", "int8")), str(p["sparsity"])), []).append(r)
    if not groups:
        return []
    precs = sorted({k[0] for k in groups})
    sparsities = sorted({_sparsity_label(k[1])[1] for k in groups})
    if max_delta is None:
        max_delta = getattr(data.cfg.limits, "max_quality_delta", None)
    q: dict[tuple[str, str], list[Any]] = {}
    for x in quality(precs, sparsities, GATE_SEEDS, max_delta=max_delta):
        q.setdefault((x.precision, x.sparsity), []).append(x)
    rows = []
    for (prec, sp), recs in sorted(groups.items()):
        best = _best(recs)
        mt = best["metrics"]
        gates = [
            {
                "reference": getattr(g, "reference", "mlp"),
                "quality_delta": g.delta.point,
                "quality_interval": [g.delta.low, g.delta.high],
                "gate_pass": bool(g.passed),
                "limit_excess": limit_excess(g.delta.high, g.max_delta),
            }
            for g in q[(prec, _sparsity_label(sp)[1])]
        ]
        # each family's gate on its own metric; the pair passes when all do. The binding family (the
        # one farthest past its limit, as a fraction of it; as the evaluator's evidence) is shown first
        gates.sort(key=lambda g: (-g["limit_excess"], g["reference"]))
        g = gates[0]
        rows.append(
            {
                "precision": prec,
                "sparsity": sp,
                "trial": best["number"],
                "feasible": bool(best["feasible"]),
                "latency_ms": mt.get("latency_ms"),
                "energy_per_inference_mj": mt.get("energy_per_inference_mj"),
                "area_mm2": mt.get("area_mm2"),
                "quality_delta": g["quality_delta"],
                "quality_interval": g["quality_interval"],
                "gate_pass": all(x["gate_pass"] for x in gates),
                "max_delta": q[(prec, _sparsity_label(sp)[1])][0].max_delta,
                "trials": len(recs),
                "reference": g["reference"],
                "gates": gates,
            }
        )
    return rows


def recommend(rows: list[dict[str, Any]]) -> dict[str, Any] | None:
    ok = [r for r in rows if r["gate_pass"] and r["feasible"] and r["energy_per_inference_mj"] is not None]
    if not ok:
        return None
    return min(
        ok, key=lambda r: (float(r["energy_per_inference_mj"]), float(r["latency_ms"] or float("inf")))
    )


def section_precision(data, *, quality=None) -> tuple[Section, dict[str, Any]]:
    """The precision policy section and its key figures ({'rows': [...], 'recommended': {...}})."""
    s = Section(0, "precision", "Precision policy", "sparsity")
    rows = policy_rows(data, quality=quality)
    if not rows:
        s.paras.append("No trials: no precision policy.")
        return s, {"rows": [], "recommended": None}
    t = Table(
        "Precision x sparsity: the best design of each pair and its quality gate",
        [
            "precision",
            "sparsity",
            "trial",
            "latency (ms)",
            "energy / inference (mJ)",
            "area (mm2)",
            "reference",
            "quality delta (x100)",
            "95 % interval",
            "gate",
        ],
        [],
        name="precision_policy",
    )
    for r in rows:
        for g in r.get("gates") or [r]:  # one line per reference family, each gated on its own metric
            lo, hi = g["quality_interval"]
            t.rows.append(
                [
                    r["precision"],
                    r["sparsity"],
                    fmt(int(r["trial"])),
                    fmt(r["latency_ms"]),
                    fmt(r["energy_per_inference_mj"]),
                    fmt(r["area_mm2"]),
                    UNITS[g["reference"]],
                    f"{g['quality_delta'] * 100:+.2f}",
                    f"[{lo * 100:+.2f}, {hi * 100:+.2f}]",
                    ("pass" if g["gate_pass"] else "FAIL")
                    + ("" if r["feasible"] else " (design infeasible)"),
                ]
            )
    s.tables.append(t)
    s.paras.append(
        "Latency, energy and area: the trial of each (precision, sparsity) pair with the lowest energy per inference "
        "(feasible first). Quality: the reference of each workload family ("
        + ", ".join(sorted({UNITS[g["reference"]] for r in rows for g in r.get("gates") or [r]}))
        + "; each gated on its own metric, "
        "a pair passing when every family's gate passes; dense, or N:M pruned and "
        "fine-tuned by the ASP recipe) quantised to the precision (INT8/INT4: symmetric per-output-channel "
        "weights, per-tensor activations "
        "calibrated on held-out training data; FP8: per-tensor scales; BF16: RNE) against the dense FP32 model, "
        f"{len(GATE_SEEDS)} seeds, paired bootstrap 95 % interval; a gate passes when the interval's upper end is at "
        f"most {rows[0]['max_delta'] * 100:.1f} (x100: points of accuracy, or % of NLL)."
    )
    rec = recommend(rows)
    if rec is None:
        s.verdict = "No precision passes its quality gate on a feasible design: no precision is recommended."
    else:
        s.verdict = (
            f"Recommended precision: {rec['precision']} with {rec['sparsity']} (trial {rec['trial']}): "
            f"the lowest energy per inference ({fmt(rec['energy_per_inference_mj'])} mJ) among the pairs "
            f"that pass the quality gate."
        )
    return s, {"rows": rows, "recommended": rec}
