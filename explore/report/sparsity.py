"""Sections 7-10 of the report, the sparsity deployment part: the supported layer matrix, the
dense-fallback impact, the metadata overhead and the quality evidence. The bottleneck, the decision
and reproducibility follow in explore.report.bottleneck, .decision and .repro; the data model is
explore.report.document's."""

from __future__ import annotations

import math
from typing import Any

import numpy as np
import pandas as pd

from explore.report.data import StudyData
from explore.report.document import Section, Table
from explore.report.figures import Figure
from explore.report.format import fmt, num, pct
from explore.report.layers import array_rows, no_layers_text
from explore.results import Detail, point_sparsity

# =====================================================================================================
# 6. Supported layer matrix
# =====================================================================================================


def section_matrix(data: StudyData, det: Detail | None, layers: pd.DataFrame) -> Section:
    s = Section(6, "matrix", "Supported layer matrix", "sparsity")
    if det is None or layers.empty:
        s.paras.append(no_layers_text(data, det))
        return s
    n, m, sparse = point_sparsity(det.point)
    if not sparse:
        s.paras.append(
            "The best design is dense: every layer runs dense by design; the matrix shows which layers "
            "an N:M design could have run sparse (ASP verdict)."
        )
    t = Table(
        "Every layer: sparse or dense fallback, and why",
        ["workload", "layer", "kind", "count", "M x N x K", "ran", "why"],
        [],
        name="layer_matrix",
    )
    for _, r in layers.iterrows():
        shape = (
            "x".join(str(int(v)) for v in (r["M"], r["N"], r["K"]))
            if r["M"] is not None and not pd.isna(r["M"])
            else "n/a"
        )
        if r.get("unit", "array") == "vector":
            t.rows.append(
                [
                    r["workload"],
                    r["layer"],
                    r["kind"],
                    fmt(int(r["count"])),
                    "n/a",
                    "vector unit",
                    r["fallback_reason"] or "non-GEMM operator: runs on the vector unit beside the array",
                ]
            )
            continue
        if r["sparse"]:
            ran, why = (
                f"sparse {n}:{m}",
                f"weights prunable to {n}:{m} ({r['asp_verdict']})" if r["asp_verdict"] else f"{n}:{m}",
            )
        elif sparse:
            ran, why = "dense fallback", r["fallback_reason"] or "not sparsifiable"
        else:
            ran, why = "dense", f"dense hardware (ASP verdict for N:M: {r['asp_verdict']})"
        t.rows.append([r["workload"], r["layer"], r["kind"], fmt(int(r["count"])), shape, ran, why])
    s.tables.append(t)
    arr = layers[array_rows(layers)]
    n_sp = int(arr["sparse"].sum())
    s.paras.append(
        f"{n_sp} of {len(arr)} GEMM layers run sparse; {len(arr) - n_sp} run dense; "
        f"{len(layers) - len(arr)} non-GEMM operators run on the vector unit."
    )
    _operator_tables(s, det, n, m, sparse)
    return s


def operator_time_shares(det: Detail) -> list[dict[str, Any]]:
    """Per workload and operator type, the share of the network's time: GEMM kinds on the array
    (sparse or dense fallback) and each non-GEMM operator type on the vector unit (unsupported ones
    flagged, costed by sim.vector's fallback rule)."""
    out = []
    for wname, _weight, net in det.networks:
        total = float(net.totals["total_cycles"])
        acc: dict[tuple, float] = {}
        lay = net.layers
        busy = (np.asarray(lay["cycles"], float) + 1 + np.asarray(lay["stall_cycles"], float)) * np.asarray(
            net.counts, float
        )
        for i, kind in enumerate(net.kinds):
            key = ("array", kind, "sparse" if bool(lay["sparse"][i]) else "dense", True)
            acc[key] = acc.get(key, 0.0) + float(busy[i])
        vec = getattr(net, "vector", None) or {}
        for j, op in enumerate(getattr(net, "vector_ops", []) or []):
            key = (
                "vector",
                op.op_type,
                "data movement" if op.movement_only else "arithmetic",
                bool(op.supported),
            )
            acc[key] = acc.get(key, 0.0) + float(vec["vector_op_cycles"][j]) * op.count
        for (unit, typ, mode, ok), cyc in sorted(acc.items(), key=lambda kv: -kv[1]):
            out.append(
                {
                    "workload": wname,
                    "unit": unit,
                    "op_type": typ,
                    "mode": mode,
                    "supported": ok,
                    "cycles": cyc,
                    "time_share": cyc / total if total else 0.0,
                }
            )
    return out


def _operator_tables(s: Section, det: Detail, n: int, m: int, sparse: bool) -> None:
    rows = operator_time_shares(det)
    if not rows:
        return
    t = Table(
        "Operator types by share of their workload's time (array: GEMMs; vector unit: every other operator)",
        ["workload", "unit", "operator type", "runs as", "time share"],
        [],
        name="operator_matrix",
    )
    for r in rows:
        mode = r["mode"] if r["supported"] else f"{r['mode']}, UNSUPPORTED (fallback rule)"
        if r["unit"] == "array" and r["mode"] == "dense" and sparse:
            mode = "dense fallback"
        elif r["unit"] == "array" and r["mode"] == "sparse":
            mode = f"sparse {n}:{m}"
        t.rows.append([r["workload"], r["unit"], r["op_type"], mode, pct(r["time_share"])])
    s.tables.append(t)
    unsup = [
        (wname, u) for wname, _, net in det.networks for u in (getattr(net, "unsupported_ops", None) or [])
    ]
    if unsup:
        s.paras.append(
            "Unsupported operators (not in the vector unit's catalogue; costed as one element-wise op per "
            "output element with every tensor moved once): "
            + "; ".join(f"{w}: {u['op_type']} x{u['count']}" for w, u in unsup)
            + "."
        )


# =====================================================================================================
# 7. Dense-fallback impact
# =====================================================================================================


def fallback_numbers(det: Detail) -> list[dict[str, Any]]:
    """Per workload: nominal (M/N), ideal after fallback (Amdahl), effective (with stalls) speedups."""
    n, m, sparse = point_sparsity(det.point)
    out = []
    for wname, weight, net in det.networks:
        t = net.totals
        nominal = m / n if sparse else 1.0
        ideal, eff = float(t["ideal_speedup"]), float(t["effective_speedup"])
        V = float(t.get("vector_cycles", 0.0))
        # the gap to the nominal bound, in speedup units, split in steps that add up exactly:
        # fallback (Amdahl over the array alone), vector work (the vector unit's time added to both runs;
        # serial mode), then ideal -> effective split between metadata (its share of the DRAM bytes [A])
        # and the rest (stalls, fold mapping)
        D = float(t["dense_total_cycles"]) - V
        I_arr = (D + V) / ideal - V if ideal > 0 else D
        array_ideal = D / I_arr if V > 0 and I_arr > 0 and not net.arch.vector_overlap else ideal
        meta_share = (
            float(t["metadata_bytes"]) / float(t["dram_bytes"]) if float(t.get("dram_bytes", 0)) > 0 else 0.0
        )
        rest = ideal - eff
        out.append(
            {
                "workload": wname,
                "weight": weight,
                "nominal_speedup": nominal,
                "ideal_speedup": ideal,
                "effective_speedup": eff,
                "array_ideal_speedup": array_ideal,
                "fallback_time_share": float(t["fallback_fraction"]),
                "stall_fraction": float(t["stall_fraction"]),
                "vector_time_share": float(t.get("vector_fraction", 0.0)),
                "fallback_loss": nominal - array_ideal,
                "vector_loss": array_ideal - ideal,
                "metadata_loss": rest * meta_share,
                "stall_loss": rest * (1 - meta_share),
                "stall_and_mapping_loss": rest,
            }
        )
    return out


def section_fallback(data: StudyData, det: Detail | None, layers: pd.DataFrame) -> Section:
    s = Section(7, "fallback", "Dense-fallback impact", "sparsity")
    if det is None or not det.has_layers:
        s.paras.append(no_layers_text(data, det))
        if det is not None and "effective_speedup" in det.metrics:
            s.paras.append(
                f"Stored mix totals: effective speedup {fmt(det.metrics['effective_speedup'])}, ideal bound "
                f"{fmt(det.metrics.get('ideal_speedup'))}."
            )
        return s
    n, m, sparse = point_sparsity(det.point)
    rows = fallback_numbers(det)
    df = pd.DataFrame(rows)
    t = Table(
        "Where the nominal speedup went (per workload)",
        [
            "workload",
            "nominal (M/N)",
            "ideal after fallback",
            "effective",
            "fallback time share",
            "lost to fallback",
            "lost to stalls and mapping",
        ],
        [],
        name="fallback",
    )
    for r in rows:
        t.rows.append(
            [
                r["workload"],
                fmt(r["nominal_speedup"]),
                fmt(r["ideal_speedup"]),
                fmt(r["effective_speedup"]),
                pct(r["fallback_time_share"]),
                fmt(r["fallback_loss"]),
                fmt(r["stall_and_mapping_loss"]),
            ]
        )
    s.tables.append(t)
    tg = Table(
        f"The gap to the {fmt(m / n if sparse else 1.0)} bound, step by step (speedup lost to each cause)",
        [
            "workload",
            "nominal",
            "dense fallback",
            "vector work",
            "metadata",
            "stalls and mapping",
            "effective",
            "vector time share",
        ],
        [],
        name="gap",
    )
    for r in rows:
        tg.rows.append(
            [
                r["workload"],
                fmt(r["nominal_speedup"]),
                fmt(r["fallback_loss"]),
                fmt(r["vector_loss"]),
                fmt(r["metadata_loss"]),
                fmt(r["stall_loss"]),
                fmt(r["effective_speedup"]),
                pct(r["vector_time_share"]),
            ]
        )
    s.tables.append(tg)
    s.paras.append(
        "The gap from the nominal M/N bound to the effective speedup adds up from four causes: layers "
        "that fall back to dense (Amdahl over the array's time), the vector unit's non-GEMM work (the same "
        "in the dense and the sparse run, so it dilutes the gain), the metadata's share of the memory "
        "traffic, and the remaining stalls and fold mapping. Operator types by time share are in the "
        "supported-layer matrix."
    )
    long = df.melt(
        id_vars=["workload"],
        value_vars=["nominal_speedup", "ideal_speedup", "effective_speedup"],
        var_name="step",
        value_name="speedup",
    )
    long["label"] = long["workload"] + ": " + long["step"].str.replace("_speedup", "")
    s.figures.append(
        Figure(
            "fallback_breakdown",
            "Nominal sparsity -> ideal after dense fallback -> real speedup",
            "bar",
            long,
            "label",
            "speedup",
            "",
            "speedup vs dense",
            hline=(m / n if sparse else 1.0, f"nominal {fmt(m / n if sparse else 1.0)}"),
        )
    )
    mix = det.metrics
    s.paras.append(
        f"Workload mix (evaluator): effective speedup {fmt(mix.get('effective_speedup'))} against an ideal "
        f"bound of {fmt(mix.get('ideal_speedup'))} and a nominal {fmt(m / n if sparse else 1.0)}."
    )
    if sparse and not layers.empty:
        fb = layers[~layers["sparse"] & array_rows(layers)].sort_values("time_share", ascending=False)
        if len(fb):
            tf = Table(
                "Dense-fallback layers by share of their workload's time",
                ["workload", "layer", "time share", "why"],
                [],
            )
            for _, r in fb.head(15).iterrows():
                tf.rows.append([r["workload"], r["layer"], pct(r["time_share"]), r["fallback_reason"]])
            s.tables.append(tf)
    return s


# =====================================================================================================
# 8. Metadata overhead
# =====================================================================================================


def metadata_numbers(det: Detail) -> dict[str, float]:
    w = np.array([wt for _, wt, _ in det.networks], float)

    def tot(k: str) -> float:
        return float(sum(a * float(net.totals[k]) for a, (_, _, net) in zip(w, det.networks, strict=True)))

    time_s = float(
        sum(
            a * net.total_cycles / (net.arch.clock_mhz * 1e6)
            for a, (_, _, net) in zip(w, det.networks, strict=True)
        )
    )
    meta, dram_b, wbytes = tot("metadata_bytes"), tot("dram_bytes"), tot("dram_weight_bytes")
    sram_meta = tot("sram_metadata_read_bytes")
    sram_all = sum(
        tot(k)
        for k in (
            "sram_ifmap_read_bytes",
            "sram_filter_read_bytes",
            "sram_metadata_read_bytes",
            "sram_ofmap_read_bytes",
        )
    )
    gbps = det.networks[0][2].arch.dram_gbps
    out = {
        "metadata_bytes": meta / w.sum(),
        "dram_bytes": dram_b / w.sum(),
        "weight_bytes": wbytes / w.sum(),
        "metadata_share_of_dram": meta / dram_b if dram_b else 0.0,
        "metadata_per_weight_byte": meta / wbytes if wbytes else 0.0,
        "metadata_gbps": meta / time_s / 1e9 if time_s else 0.0,
        "dram_gbps": gbps,
        "metadata_share_of_sram_reads": sram_meta / sram_all if sram_all else 0.0,
    }
    out["metadata_bandwidth_share"] = out["metadata_gbps"] / gbps
    m = det.metrics
    if "area_decoders_mm2" in m and m.get("area_mm2"):
        out["decoder_area_mm2"] = float(m["area_decoders_mm2"])
        out["decoder_area_share"] = float(m["area_decoders_mm2"]) / float(m["area_mm2"])
    if m.get("power_w") and "power_dram_w" in m:
        out["metadata_dram_energy_share"] = (
            out["metadata_share_of_dram"] * float(m["power_dram_w"]) / float(m["power_w"])
        )
    return out


def section_metadata(data: StudyData, det: Detail | None) -> Section:
    s = Section(8, "metadata", "Metadata overhead", "sparsity")
    if det is None or not det.has_layers:
        s.paras.append(no_layers_text(data, det))
        return s
    n, m, sparse = point_sparsity(det.point)
    if not sparse:
        s.paras.append("The best design is dense: it stores and moves no metadata and has no decoders.")
        return s
    mn = metadata_numbers(det)
    bits = int(math.log2(m))
    s.paras.append(
        f"{n}:{m} stores {n} of every {m} weights with {bits} index bits each "
        f"({n * bits} bits per group of {m})."
    )
    t = Table(
        "Metadata (weighted over the workload mix, per inference)", ["quantity", "value"], [], name="metadata"
    )
    t.rows += [
        ["metadata bytes from DRAM", fmt(mn["metadata_bytes"])],
        ["share of DRAM bytes", pct(mn["metadata_share_of_dram"], 2)],
        ["metadata bytes per kept-weight byte", fmt(mn["metadata_per_weight_byte"])],
        [
            "metadata bandwidth (GB/s)",
            f"{fmt(mn['metadata_gbps'])} of {fmt(mn['dram_gbps'])} "
            f"({pct(mn['metadata_bandwidth_share'], 2)})",
        ],
        ["share of SRAM reads", pct(mn["metadata_share_of_sram_reads"], 2)],
    ]
    if "decoder_area_mm2" in mn:
        t.rows.append(
            [
                "decoder area (mm^2)",
                f"{fmt(mn['decoder_area_mm2'])} ({pct(mn['decoder_area_share'], 2)} of the die)",
            ]
        )
    if "metadata_dram_energy_share" in mn:
        t.rows.append(["energy share of metadata DRAM traffic", pct(mn["metadata_dram_energy_share"], 2)])
    s.tables.append(t)
    s.paras.append(
        "Decoder energy: ppa.model counts the decoders' switching inside the PE array's dynamic power "
        "(gate-level activity of the sparse PE, decoder included); it is not separated. Their share of "
        "the die area is above; the metadata's share of energy is its share of the DRAM traffic energy."
    )
    df = pd.DataFrame(
        {
            "component": ["kept weights", "metadata", "activations + outputs"],
            "bytes": [
                mn["weight_bytes"],
                mn["metadata_bytes"],
                mn["dram_bytes"] - mn["weight_bytes"] - mn["metadata_bytes"],
            ],
        }
    )
    s.figures.append(
        Figure(
            "metadata_bytes", "DRAM bytes per inference by kind", "bar", df, "component", "bytes", "", "bytes"
        )
    )
    return s


# =====================================================================================================
# 9. Quality
# =====================================================================================================


def quality_evidence(
    data: StudyData, det: Detail | None, stored: dict[str, Any] | None = None
) -> dict[str, Any] | None:
    """The quality evidence behind the design, from the evaluator (``evaluate_detail``: the
    sim.quality reference experiment it ran for the design's N:M and its guardrail verdict), with
    the quality_delta the study stored for the trial (``stored``, its metrics) beside it."""
    if det is None or not det.quality:
        return None
    out = dict(det.quality)
    if stored is not None and not out.get("dense"):
        out["stored_quality_delta"] = num(stored.get("quality_delta"))
    return out


def interval_text(q: dict[str, Any]) -> str:
    iv = q.get("quality_delta_interval")
    if not iv:
        return f"{fmt(q['quality_delta'])} (no interval: the eval gave no per-sample scores)"
    return f"{fmt(q['quality_delta'])} (95 % interval [{fmt(iv[0])}, {fmt(iv[1])}])"


def section_quality(data: StudyData, det: Detail | None, q: dict[str, Any] | None) -> Section:
    s = Section(9, "quality", "Quality", "sparsity")
    if q is None:
        why = (
            "the config sets no max_quality_delta"
            if data.cfg.limits.max_quality_delta is None
            else f"the evaluator ({data.evaluator}) gives no quality results (evaluate_detail)"
        )
        s.verdict = (
            f"No quality evidence was given: {why}, so this report makes no claim about model quality. "
            "Any speedup below is a hardware speedup only."
        )
        return s
    if q.get("dense"):
        s.paras.append(
            f"The best design is dense: no pruning, quality delta 0 by construction "
            f"(quality evidence configured: {q.get('evidence', 'n/a')})."
        )
        return s
    kind = q.get("evidence")
    if kind == "proxy":
        s.paras.append(
            f"Evidence: PROXY. A reference model ({q['reference']}: {q['model']}) stands in for the "
            "deployed model; it shows what N:M pruning does to a model of this family, not to yours. "
            "It caps the decision at BOUNDED ROLLOUT and cannot decide ROLLBACK; give [quality] weights "
            "+ eval to bind on the team's own model."
        )
        for ref, f in (q.get("families") or {}).items():
            s.paras.append(
                f"Reference {ref} ({f.get('metric')}, for {', '.join(f.get('workloads') or {}) or 'n/a'}): "
                f"{interval_text(f)}; {f.get('guardrail')}. Each reference is held to the limit on its own "
                "metric; their deltas are not compared with each other."
            )
    elif kind != "model":
        s.paras.append(
            "Evidence: UNLABELLED. The evaluator's quality evidence does not say what it was measured on; "
            "it counts as missing and caps the decision at BOUNDED ROLLOUT."
        )
    else:
        s.paras.append(
            f"Evidence: MODEL. The team's weights ({q.get('weights_file')}) scored by the team's eval "
            f"({q.get('eval')})."
        )
    s.paras.append(
        f"Pruning schedule: {q.get('pruning_schedule', 'n/a')}. Fine-tune recipe: "
        f"{q.get('finetune_recipe', 'given by the team' if kind == 'model' else 'n/a')}."
    )
    metric = q.get("metric", "metric")
    t = Table(
        f"{metric} against the dense baseline ({'higher' if q.get('higher_is_better', True) else 'lower'} "
        "is better"
        + (f"; mean over seeds {q['seeds']}" if q.get("seeds") is not None and kind == "proxy" else "")
        + ")",
        ["model", metric],
        [],
        name="quality",
    )
    for label, key in (
        ("dense baseline", "dense_metric"),
        (f"one-shot {q.get('nm') or str(q.get('n')) + ':' + str(q.get('m'))}", "oneshot_metric"),
        ("fine-tuned, fixed mask (ASP)", "finetuned_metric"),
        ("gradual", "gradual_metric"),
        (f"dense {q.get('dense_equal_latency_size', '')} at equal latency", "dense_equal_latency_metric"),
        ("unigram baseline", "unigram_metric"),
    ):
        if q.get(key) is not None:
            t.rows.append([label, fmt(q[key])])
    s.tables.append(t)
    if q.get("sparse_latency") is not None:
        s.paras.append(
            f"At an equal latency budget: the sparse model ({q['sparse_size']}, {q['sparse_params']} "
            f"parameters, {q['sparse_nonzero_params']} nonzero; {fmt(q['sparse_latency'])} cycles on "
            f"{q['latency_model']}) against the dense model of the same latency "
            f"({q['dense_equal_latency_size']}, {q['dense_equal_latency_params']} parameters; "
            f"{fmt(q['dense_equal_latency_latency'])} cycles on {q['dense_latency_model']})."
        )
    unit = (
        "accuracy points as a fraction" if q.get("higher_is_better", True) else f"relative {metric} increase"
    )
    s.paras.append(
        f"Quality loss (quality_delta, {unit}; positive = the sparse model is worse): {interval_text(q)}; "
        f"the guardrail tests the pessimistic end quality_delta_ci = {fmt(q['quality_delta_ci'])}. "
        f"Interval: {q.get('interval_method', 'n/a')}."
    )
    if q.get("stored_quality_delta") is not None:
        same = math.isclose(q["quality_delta"], q["stored_quality_delta"], rel_tol=0, abs_tol=1e-12)
        s.paras.append(
            f"Stored quality_delta of the design: {fmt(q['stored_quality_delta'])}; regenerated here: "
            f"{fmt(q['quality_delta'])} ({'identical' if same else 'DIFFERENT: the study is stale'})."
        )
    if "guardrail" in q:
        s.verdict = q["guardrail"] + "."
    return s
