"""Sections 6-12: the sparsity deployment report (supported layers, fallback, metadata, quality,
bottlenecks, the release decision, reproducibility). Data model as in :mod:`explore.report.sections`."""

from __future__ import annotations

import hashlib
import json
import math
import platform
import shutil
import subprocess
from pathlib import Path
from typing import Any

import numpy as np
import pandas as pd

from explore.compare import SHIP_MIN_ADVANTAGE
from explore.config import parse_sparsity
from explore.report.data import Detail, StudyData
from explore.report.figures import Figure
from explore.report.sections import (
    MECHANISM,
    MEMORY_STALL_SHARE,
    N_REJECTED,
    SHIP_MIN_SLACK,
    SHIP_SPEEDUP_SHARE_OF_IDEAL,
    Section,
    Table,
    _describe_constraint,
    _f,
    _no_layers,
    _point_label,
    fmt,
    pct,
)
from hw.errors import InputError


def _is_array(layers: pd.DataFrame) -> pd.Series:
    """Rows of GEMM layers (the array), not the vector unit's operators."""
    return layers["unit"] == "array" if "unit" in layers else pd.Series(True, index=layers.index)


def _nm(det: Detail) -> tuple[int, int, bool]:
    return parse_sparsity(det.point.get("sparsity", "dense"))


# =====================================================================================================
# 6. Supported layer matrix
# =====================================================================================================

def section_matrix(data: StudyData, det: Detail | None, layers: pd.DataFrame) -> Section:
    s = Section(6, "matrix", "Supported layer matrix", "sparsity")
    if det is None or layers.empty:
        s.paras.append(_no_layers(data, det))
        return s
    n, m, sparse = _nm(det)
    if not sparse:
        s.paras.append("The best design is dense: every layer runs dense by design; the matrix shows which layers "
                       "an N:M design could have run sparse (ASP verdict).")
    t = Table("Every layer: sparse or dense fallback, and why", ["workload", "layer", "kind", "count", "M x N x K",
                                                                  "ran", "why"], [], name="layer_matrix")
    for _, r in layers.iterrows():
        shape = "x".join(str(int(v)) for v in (r["M"], r["N"], r["K"])) if r["M"] is not None and not pd.isna(r["M"]) else "n/a"
        if r.get("unit", "array") == "vector":
            t.rows.append([r["workload"], r["layer"], r["kind"], fmt(int(r["count"])), "n/a", "vector unit",
                           r["fallback_reason"] or "non-GEMM operator: runs on the vector unit beside the array"])
            continue
        if r["sparse"]:
            ran, why = f"sparse {n}:{m}", f"weights prunable to {n}:{m} ({r['asp_verdict']})" if r["asp_verdict"] else f"{n}:{m}"
        elif sparse:
            ran, why = "dense fallback", r["fallback_reason"] or "not sparsifiable"
        else:
            ran, why = "dense", f"dense hardware (ASP verdict for N:M: {r['asp_verdict']})"
        t.rows.append([r["workload"], r["layer"], r["kind"], fmt(int(r["count"])), shape, ran, why])
    s.tables.append(t)
    arr = layers[_is_array(layers)]
    n_sp = int(arr["sparse"].sum())
    s.paras.append(f"{n_sp} of {len(arr)} GEMM layers run sparse; {len(arr) - n_sp} run dense; "
                   f"{len(layers) - len(arr)} non-GEMM operators run on the vector unit.")
    _operator_tables(s, det, n, m, sparse)
    return s


def operator_time_shares(det: Detail) -> list[dict[str, Any]]:
    """Per workload and operator type, the share of the network's time: GEMM kinds on the array
    (sparse or dense fallback) and each non-GEMM operator type on the vector unit (unsupported ones
    flagged, costed by sim.vector's fallback rule)."""
    out = []
    for wname, weight, net in det.networks:
        total = float(net.totals["total_cycles"])
        acc: dict[tuple, float] = {}
        lay = net.layers
        busy = (np.asarray(lay["cycles"], float) + 1 + np.asarray(lay["stall_cycles"], float)) * np.asarray(net.counts, float)
        for i, kind in enumerate(net.kinds):
            key = ("array", kind, "sparse" if bool(lay["sparse"][i]) else "dense", True)
            acc[key] = acc.get(key, 0.0) + float(busy[i])
        vec = getattr(net, "vector", None) or {}
        for j, op in enumerate(getattr(net, "vector_ops", []) or []):
            key = ("vector", op.op_type, "data movement" if op.movement_only else "arithmetic", bool(op.supported))
            acc[key] = acc.get(key, 0.0) + float(vec["vector_op_cycles"][j]) * op.count
        for (unit, typ, mode, ok), cyc in sorted(acc.items(), key=lambda kv: -kv[1]):
            out.append({"workload": wname, "unit": unit, "op_type": typ, "mode": mode, "supported": ok,
                        "cycles": cyc, "time_share": cyc / total if total else 0.0})
    return out


def _operator_tables(s: Section, det: Detail, n: int, m: int, sparse: bool) -> None:
    rows = operator_time_shares(det)
    if not rows:
        return
    t = Table("Operator types by share of their workload's time (array: GEMMs; vector unit: every other operator)",
              ["workload", "unit", "operator type", "runs as", "time share"], [], name="operator_matrix")
    for r in rows:
        mode = r["mode"] if r["supported"] else f"{r['mode']}, UNSUPPORTED (fallback rule)"
        if r["unit"] == "array" and r["mode"] == "dense" and sparse:
            mode = "dense fallback"
        elif r["unit"] == "array" and r["mode"] == "sparse":
            mode = f"sparse {n}:{m}"
        t.rows.append([r["workload"], r["unit"], r["op_type"], mode, pct(r["time_share"])])
    s.tables.append(t)
    unsup = [(wname, u) for wname, _, net in det.networks for u in (getattr(net, "unsupported_ops", None) or [])]
    if unsup:
        s.paras.append("Unsupported operators (not in the vector unit's catalogue; costed as one element-wise op per "
                       "output element with every tensor moved once): " + "; ".join(
                           f"{w}: {u['op_type']} x{u['count']}" for w, u in unsup) + ".")


# =====================================================================================================
# 7. Dense-fallback impact
# =====================================================================================================

def fallback_numbers(det: Detail) -> list[dict[str, Any]]:
    """Per workload: nominal (M/N), ideal after fallback (Amdahl), effective (with stalls) speedups."""
    n, m, sparse = _nm(det)
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
        meta_share = float(t["metadata_bytes"]) / float(t["dram_bytes"]) if float(t.get("dram_bytes", 0)) > 0 else 0.0
        rest = ideal - eff
        out.append({"workload": wname, "weight": weight, "nominal_speedup": nominal,
                    "ideal_speedup": ideal, "effective_speedup": eff, "array_ideal_speedup": array_ideal,
                    "fallback_time_share": float(t["fallback_fraction"]), "stall_fraction": float(t["stall_fraction"]),
                    "vector_time_share": float(t.get("vector_fraction", 0.0)),
                    "fallback_loss": nominal - array_ideal, "vector_loss": array_ideal - ideal,
                    "metadata_loss": rest * meta_share, "stall_loss": rest * (1 - meta_share),
                    "stall_and_mapping_loss": rest})
    return out


def section_fallback(data: StudyData, det: Detail | None, layers: pd.DataFrame) -> Section:
    s = Section(7, "fallback", "Dense-fallback impact", "sparsity")
    if det is None or not det.has_layers:
        s.paras.append(_no_layers(data, det))
        if det is not None and "effective_speedup" in det.metrics:
            s.paras.append(f"Stored mix totals: effective speedup {fmt(det.metrics['effective_speedup'])}, ideal bound "
                           f"{fmt(det.metrics.get('ideal_speedup'))}.")
        return s
    n, m, sparse = _nm(det)
    rows = fallback_numbers(det)
    df = pd.DataFrame(rows)
    t = Table("Where the nominal speedup went (per workload)", ["workload", "nominal (M/N)", "ideal after fallback",
                                                                "effective", "fallback time share", "lost to fallback",
                                                                "lost to stalls and mapping"], [], name="fallback")
    for r in rows:
        t.rows.append([r["workload"], fmt(r["nominal_speedup"]), fmt(r["ideal_speedup"]), fmt(r["effective_speedup"]),
                       pct(r["fallback_time_share"]), fmt(r["fallback_loss"]), fmt(r["stall_and_mapping_loss"])])
    s.tables.append(t)
    tg = Table(f"The gap to the {fmt(m / n if sparse else 1.0)} bound, step by step (speedup lost to each cause)",
               ["workload", "nominal", "dense fallback", "vector work", "metadata", "stalls and mapping", "effective",
                "vector time share"], [], name="gap")
    for r in rows:
        tg.rows.append([r["workload"], fmt(r["nominal_speedup"]), fmt(r["fallback_loss"]), fmt(r["vector_loss"]),
                        fmt(r["metadata_loss"]), fmt(r["stall_loss"]), fmt(r["effective_speedup"]),
                        pct(r["vector_time_share"])])
    s.tables.append(tg)
    s.paras.append("The gap from the nominal M/N bound to the effective speedup adds up from four causes: layers "
                   "that fall back to dense (Amdahl over the array's time), the vector unit's non-GEMM work (the same "
                   "in the dense and the sparse run, so it dilutes the gain), the metadata's share of the memory "
                   "traffic, and the remaining stalls and fold mapping. Operator types by time share are in the "
                   "supported-layer matrix.")
    long = df.melt(id_vars=["workload"], value_vars=["nominal_speedup", "ideal_speedup", "effective_speedup"],
                   var_name="step", value_name="speedup")
    long["label"] = long["workload"] + ": " + long["step"].str.replace("_speedup", "")
    s.figures.append(Figure("fallback_breakdown", "Nominal sparsity -> ideal after dense fallback -> real speedup", "bar",
                            long, "label", "speedup", "", "speedup vs dense",
                            hline=(m / n if sparse else 1.0, f"nominal {fmt(m / n if sparse else 1.0)}")))
    mix = det.metrics
    s.paras.append(f"Workload mix (evaluator): effective speedup {fmt(mix.get('effective_speedup'))} against an ideal "
                   f"bound of {fmt(mix.get('ideal_speedup'))} and a nominal {fmt(m / n if sparse else 1.0)}.")
    if sparse and not layers.empty:
        fb = layers[~layers["sparse"] & _is_array(layers)].sort_values("time_share", ascending=False)
        if len(fb):
            tf = Table("Dense-fallback layers by share of their workload's time",
                       ["workload", "layer", "time share", "why"], [])
            for _, r in fb.head(15).iterrows():
                tf.rows.append([r["workload"], r["layer"], pct(r["time_share"]), r["fallback_reason"]])
            s.tables.append(tf)
    return s


# =====================================================================================================
# 8. Metadata overhead
# =====================================================================================================

def metadata_numbers(det: Detail) -> dict[str, float]:
    w = np.array([wt for _, wt, _ in det.networks], float)
    tot = lambda k: float(sum(a * float(net.totals[k]) for a, (_, _, net) in zip(w, det.networks)))  # noqa: E731
    time_s = float(sum(a * net.total_cycles / (net.arch.clock_mhz * 1e6) for a, (_, _, net) in zip(w, det.networks)))
    meta, dram_b, wbytes = tot("metadata_bytes"), tot("dram_bytes"), tot("dram_weight_bytes")
    sram_meta = tot("sram_metadata_read_bytes")
    sram_all = sum(tot(k) for k in ("sram_ifmap_read_bytes", "sram_filter_read_bytes", "sram_metadata_read_bytes",
                                    "sram_ofmap_read_bytes"))
    gbps = det.networks[0][2].arch.dram_gbps
    out = {"metadata_bytes": meta / w.sum(), "dram_bytes": dram_b / w.sum(), "weight_bytes": wbytes / w.sum(),
           "metadata_share_of_dram": meta / dram_b if dram_b else 0.0,
           "metadata_per_weight_byte": meta / wbytes if wbytes else 0.0,
           "metadata_gbps": meta / time_s / 1e9 if time_s else 0.0, "dram_gbps": gbps,
           "metadata_share_of_sram_reads": sram_meta / sram_all if sram_all else 0.0}
    out["metadata_bandwidth_share"] = out["metadata_gbps"] / gbps
    m = det.metrics
    if "area_decoders_mm2" in m and m.get("area_mm2"):
        out["decoder_area_mm2"] = float(m["area_decoders_mm2"])
        out["decoder_area_share"] = float(m["area_decoders_mm2"]) / float(m["area_mm2"])
    if m.get("power_w") and "power_dram_w" in m:
        out["metadata_dram_energy_share"] = out["metadata_share_of_dram"] * float(m["power_dram_w"]) / float(m["power_w"])
    return out


def section_metadata(data: StudyData, det: Detail | None) -> Section:
    s = Section(8, "metadata", "Metadata overhead", "sparsity")
    if det is None or not det.has_layers:
        s.paras.append(_no_layers(data, det))
        return s
    n, m, sparse = _nm(det)
    if not sparse:
        s.paras.append("The best design is dense: it stores and moves no metadata and has no decoders.")
        return s
    mn = metadata_numbers(det)
    bits = int(math.log2(m))
    s.paras.append(f"{n}:{m} stores {n} of every {m} weights with {bits} index bits each "
                   f"({n * bits} bits per group of {m}).")
    t = Table("Metadata (weighted over the workload mix, per inference)", ["quantity", "value"], [], name="metadata")
    t.rows += [["metadata bytes from DRAM", fmt(mn["metadata_bytes"])],
               ["share of DRAM bytes", pct(mn["metadata_share_of_dram"], 2)],
               ["metadata bytes per kept-weight byte", fmt(mn["metadata_per_weight_byte"])],
               ["metadata bandwidth (GB/s)", f"{fmt(mn['metadata_gbps'])} of {fmt(mn['dram_gbps'])} "
                                            f"({pct(mn['metadata_bandwidth_share'], 2)})"],
               ["share of SRAM reads", pct(mn["metadata_share_of_sram_reads"], 2)]]
    if "decoder_area_mm2" in mn:
        t.rows.append(["decoder area (mm^2)", f"{fmt(mn['decoder_area_mm2'])} ({pct(mn['decoder_area_share'], 2)} of the die)"])
    if "metadata_dram_energy_share" in mn:
        t.rows.append(["energy share of metadata DRAM traffic", pct(mn["metadata_dram_energy_share"], 2)])
    s.tables.append(t)
    s.paras.append("Decoder energy: ppa.model counts the decoders' switching inside the PE array's dynamic power "
                   "(gate-level activity of the sparse PE, decoder included); it is not separated. Their share of "
                   "the die area is above; the metadata's share of energy is its share of the DRAM traffic energy.")
    df = pd.DataFrame({"component": ["kept weights", "metadata", "activations + outputs"],
                       "bytes": [mn["weight_bytes"], mn["metadata_bytes"],
                                 mn["dram_bytes"] - mn["weight_bytes"] - mn["metadata_bytes"]]})
    s.figures.append(Figure("metadata_bytes", "DRAM bytes per inference by kind", "bar", df, "component", "bytes", "",
                            "bytes"))
    return s


# =====================================================================================================
# 9. Quality
# =====================================================================================================

def quality_evidence(data: StudyData, det: Detail | None, stored: dict[str, Any] | None = None
                     ) -> dict[str, Any] | None:
    """The quality evidence behind the design, from the evaluator (``evaluate_detail``: the
    sim.quality reference experiment it ran for the design's N:M and its guardrail verdict), with
    the quality_delta the study stored for the trial (``stored``, its metrics) beside it."""
    if det is None or not det.quality:
        return None
    out = dict(det.quality)
    if stored is not None and not out.get("dense"):
        out["stored_quality_delta"] = _f(stored.get("quality_delta"))
    return out


def _interval_text(q: dict[str, Any]) -> str:
    iv = q.get("quality_delta_interval")
    if not iv:
        return f"{fmt(q['quality_delta'])} (no interval: the eval gave no per-sample scores)"
    return f"{fmt(q['quality_delta'])} (95 % interval [{fmt(iv[0])}, {fmt(iv[1])}])"


def section_quality(data: StudyData, det: Detail | None, q: dict[str, Any] | None) -> Section:
    s = Section(9, "quality", "Quality", "sparsity")
    if q is None:
        why = ("the config sets no max_quality_delta" if data.cfg.limits.max_quality_delta is None else
               f"the evaluator ({data.evaluator}) gives no quality results (evaluate_detail)")
        s.verdict = (f"No quality evidence was given: {why}, so this report makes no claim about model quality. "
                     "Any speedup below is a hardware speedup only.")
        return s
    if q.get("dense"):
        s.paras.append(f"The best design is dense: no pruning, quality delta 0 by construction "
                       f"(quality evidence configured: {q.get('evidence', 'n/a')}).")
        return s
    kind = q.get("evidence", "proxy")
    if kind == "proxy":
        s.paras.append(f"Evidence: PROXY. A reference model ({q['reference']}: {q['model']}) stands in for the "
                       "deployed model; it shows what N:M pruning does to a model of this family, not to yours. "
                       "It caps the decision at BOUNDED ROLLOUT; give [quality] weights + eval to bind on the "
                       "team's own model.")
    else:
        s.paras.append(f"Evidence: MODEL. The team's weights ({q.get('weights_file')}) scored by the team's eval "
                       f"({q.get('eval')}).")
    s.paras.append(f"Pruning schedule: {q.get('pruning_schedule', 'n/a')}. Fine-tune recipe: "
                   f"{q.get('finetune_recipe', 'given by the team' if kind == 'model' else 'n/a')}.")
    metric = q.get("metric", "metric")
    t = Table(f"{metric} against the dense baseline ({'higher' if q.get('higher_is_better', True) else 'lower'} "
              "is better" + (f"; mean over seeds {q['seeds']}" if q.get("seeds") is not None and kind == "proxy" else "")
              + ")", ["model", metric], [], name="quality")
    for label, key in (("dense baseline", "dense_metric"), (f"one-shot {q.get('nm') or str(q.get('n')) + ':' + str(q.get('m'))}", "oneshot_metric"),
                       ("fine-tuned, fixed mask (ASP)", "finetuned_metric"), ("gradual", "gradual_metric"),
                       (f"dense {q.get('dense_equal_latency_size', '')} at equal latency", "dense_equal_latency_metric"),
                       ("unigram baseline", "unigram_metric")):
        if q.get(key) is not None:
            t.rows.append([label, fmt(q[key])])
    s.tables.append(t)
    if q.get("sparse_latency") is not None:
        s.paras.append(f"At an equal latency budget: the sparse model ({q['sparse_size']}, {q['sparse_params']} "
                       f"parameters, {q['sparse_nonzero_params']} nonzero; {fmt(q['sparse_latency'])} cycles on "
                       f"{q['latency_model']}) against the dense model of the same latency "
                       f"({q['dense_equal_latency_size']}, {q['dense_equal_latency_params']} parameters; "
                       f"{fmt(q['dense_equal_latency_latency'])} cycles on {q['dense_latency_model']}).")
    unit = ("accuracy points as a fraction" if q.get("higher_is_better", True)
            else f"relative {metric} increase")
    s.paras.append(f"Quality loss (quality_delta, {unit}; positive = the sparse model is worse): {_interval_text(q)}; "
                   f"the guardrail tests the pessimistic end quality_delta_ci = {fmt(q['quality_delta_ci'])}. "
                   f"Interval: {q.get('interval_method', 'n/a')}.")
    if q.get("stored_quality_delta") is not None:
        same = math.isclose(q["quality_delta"], q["stored_quality_delta"], rel_tol=0, abs_tol=1e-12)
        s.paras.append(f"Stored quality_delta of the design: {fmt(q['stored_quality_delta'])}; regenerated here: "
                       f"{fmt(q['quality_delta'])} ({'identical' if same else 'DIFFERENT: the study is stale'}).")
    if "guardrail" in q:
        s.verdict = q["guardrail"] + "."
    return s


# =====================================================================================================
# 10. Bottleneck classification
# =====================================================================================================

def best_bottleneck(data: StudyData, det: Detail, layers: pd.DataFrame) -> tuple[str, list[str]]:
    """The dominant loss of the best design against its peak, with the numbers that show it."""
    ev = bottleneck_scores(data, det, layers)
    return ev[0][1], [f"{mech}: {txt}" for _, mech, txt in ev]


def bottleneck_scores(data: StudyData, det: Detail, layers: pd.DataFrame) -> list[tuple[float, str, str]]:
    """Every candidate mechanism of the design as (score: share of lost time or margin, mechanism,
    evidence), largest score first: the rule of :func:`best_bottleneck`, with its scores."""
    m = det.metrics
    ev: list[tuple[float, str, str]] = []  # (share of lost time or margin score, mechanism, evidence)
    stall = _f(m.get("stall_fraction")) or 0.0
    util = _f(m.get("utilization"))
    ev.append((stall, "memory", f"stall fraction {fmt(stall)} (time waiting for DRAM beyond double buffering)"))
    # Roofline: below the machine balance (peak ops per DRAM byte) the workload streams its operands
    # (a decode step uses every weight once at a batch of a few tokens): the time the PEs sit idle
    # waits for weights, from DRAM or shifting into the array, whether or not DRAM stalls. Below the
    # roof that idle share is charged to memory (weight streaming), listed before scheduling so a
    # tie goes to it; above the roof it stays with scheduling.
    tops, lat, dbytes = _f(m.get("effective_tops")), _f(m.get("latency_ms")), _f(m.get("dram_bytes"))
    peak, gbps = _f(m.get("peak_tops")), _f(m.get("dram_gbps"))
    if tops and lat and dbytes and peak and gbps and util is not None:
        intensity = tops * 1e12 * lat * 1e-3 / dbytes
        balance = peak * 1e12 / (gbps * 1e9)
        if intensity < balance:
            ev.append((max(1.0 - intensity / balance, 1.0 - util), "memory",
                       f"weight streaming: {fmt(intensity)} ops per DRAM byte against a machine balance of "
                       f"{fmt(balance)} ({fmt(peak)} TOPS / {fmt(gbps)} GB/s, roofline), utilisation {fmt(util)}: "
                       f"the PEs wait for operands streamed once"))
    if util is not None:
        sched = max(0.0, (1.0 - stall) - util)
        ev.append((sched, "scheduling", f"utilisation {fmt(util)}: {pct(sched)} of the time the array computes "
                                        f"with idle PEs (fold quantisation, fill and drain, dense fallback)"))
    if not layers.empty:
        dn = ~layers["sparse"] & _is_array(layers)
        fb = float((layers.loc[dn, "time_share"] * layers.loc[dn, "weight"]).sum()
                   / max(layers.groupby("workload")["weight"].first().sum(), 1e-30))
        n, mm, sparse = _nm(det)
        if sparse:
            ev.append((fb * (1 - n / mm), "precision", f"{pct(fb)} of the time in dense-fallback layers whose weights "
                                                       f"cannot keep {n}:{mm} (numeric format / pruning rules)"))
    lim = data.cfg.limits
    tj = _f(m.get("tj_c"))
    if tj is not None and lim.max_tj_c is not None:
        used = (tj - data.cfg.fixed.ambient_c) / (lim.max_tj_c - data.cfg.fixed.ambient_c)
        ev.append((used if used > 0.9 else 0.0, "thermal", f"T_j {fmt(tj)} C uses {pct(used)} of the "
                                                           f"{fmt(lim.max_tj_c)} C budget above ambient"))
    clk, fmax = _f(m.get("clock_mhz")), _f(m.get("fmax_mhz"))
    if clk and fmax:
        ratio = clk / fmax
        ev.append((ratio if ratio > 0.9 else 0.0, "compute", f"clock at {pct(ratio)} of fmax"))
    if util is not None and stall < MEMORY_STALL_SHARE:
        ev.append((util, "compute", f"no significant stalls (< {pct(MEMORY_STALL_SHARE)}) and utilisation "
                                          f"{fmt(util)}: the array's peak rate bounds the speed"))
    ev.sort(key=lambda e: -e[0])
    return ev


def section_bottleneck(data: StudyData, det: Detail | None, layers: pd.DataFrame) -> Section:
    s = Section(10, "bottleneck", "Bottleneck classification", "sparsity")
    s.paras.append("Mechanisms: compute (array rate, clock vs fmax, area), memory (DRAM stalls), scheduling "
                   "(mapping and queueing: idle PEs, fold quantisation, p99 under batching), precision "
                   "(numeric format and pruning: dense fallback, quality loss), thermal (T_j, power density).")
    s.paras.append("Rule for one design: the mechanism with the largest share of the run time wins: compute = time "
                   "the PEs do useful work (utilisation, when stalls are below "
                   f"{pct(MEMORY_STALL_SHARE)}), memory = stall time, scheduling = time computing with idle PEs, "
                   "precision = time lost to dense fallback; thermal and clock/fmax count only within 10 % of "
                   "their limit. For a failing limit, the mechanism is that of the limit.")
    if det is not None:
        mech, evidence = best_bottleneck(data, det, layers)
        s.verdict = f"Best design: dominated by {mech}."
        s.bullets += evidence
    t = Table("Each limit that fails somewhere in the study", ["limit", "mechanism", "trials failing",
                                                               "median violation", "evidence (closest failing design)"],
              [], name="bottlenecks")
    for c in data.constraint_names:
        fails = [r for r in data.records if r["constraints"].get(c, 0.0) > 0]
        if not fails:
            continue
        vals = np.array([r["constraints"][c] for r in fails])
        closest = min(fails, key=lambda r: (r["constraints"][c], r["number"]))
        t.rows.append([c, MECHANISM.get(c, "compute"), f"{len(fails)}/{len(data.records)}", pct(float(np.median(vals))),
                       f"trial {closest['number']}: " + _describe_constraint(data, c, closest["constraints"][c],
                                                                             closest["metrics"])])
    if t.rows:
        s.tables.append(t)
    else:
        s.paras.append("No limit failed in any trial.")
    return s


# =====================================================================================================
# 11. Decision
# =====================================================================================================

RULES = (
    ("R1", "no feasible design -> ESCALATE (the limits cannot all be met; revisit them or the space)"),
    ("R2", "quality evidence shows the guardrail violated -> ROLLBACK to the dense design"),
    ("R3", "the best feasible sparse design does not beat the best feasible dense design on the primary objective "
           "under the same limits (or there is no feasible sparse design) -> ROLLBACK: build the dense design"),
    ("R4", "no quality evidence for a sparse design, or only proxy evidence (a reference model, not the team's) "
           "-> BOUNDED ROLLOUT at most; only evidence on the team's own model can support SHIP"),
    ("R5", f"sparse beats dense by less than {SHIP_MIN_ADVANTAGE:.0%} on the primary objective, effective speedup < "
           f"{SHIP_SPEEDUP_SHARE_OF_IDEAL:g} x the ideal bound, or a limit with less than {SHIP_MIN_SLACK:.0%} slack "
           "-> BOUNDED ROLLOUT"),
    ("R6", "otherwise -> SHIP"),
)


def p99_text(m: dict[str, Any], cfg) -> str:
    """The p99 latency with its 95 % interval over the arrival seeds (explore.evaluator serving
    metrics), and how it was taken."""
    p99, lo, hi = (_f(m.get(k)) for k in ("p99_latency_ms", "p99_latency_lo_ms", "p99_latency_hi_ms"))
    if p99 is None:
        return "n/a"
    s = cfg.serving
    if lo is None or hi is None:
        return f"{fmt(p99)} (no interval: the study stored p99 from one arrival seed)"
    txt = (f"{fmt(p99)} (95 % interval [{fmt(lo)}, {fmt(hi)}] over {s.seeds} arrival seeds, first "
           f"{pct(s.warmup_fraction, 0)} of each run discarded as warm-up)")
    if _f(m.get("ttft_p99_ms")) is not None and math.isfinite(_f(m.get("ttft_p99_ms"))):
        txt += (f"; LLM request = prefill + {s.output_tokens} tokens: TTFT p99 {fmt(m['ttft_p99_ms'])} ms, "
                f"TPOT p99 {fmt(m['tpot_p99_ms'])} ms")
    return txt


def _sparse_quality_failure(data: StudyData) -> str | None:
    """When the study's sparse designs all violate the quality limit (max_quality_delta, tested on
    the pessimistic end of the delta's interval): the reason in words, else None."""
    from explore.config import LIMIT_CONSTRAINTS

    limit = data.cfg.limits.max_quality_delta
    cname = LIMIT_CONSTRAINTS["max_quality_delta"]
    if limit is None:
        return None
    sparse = [r for r in data.records if parse_sparsity(str(r["params"].get("sparsity", "dense")))[2]]
    if not sparse or not all(r["constraints"].get(cname, 0.0) > 0 for r in sparse):
        return None
    worst = min(sparse, key=lambda r: r["constraints"][cname])
    mt = worst["metrics"]
    pess = _f(mt.get("quality_delta_ci", mt.get("quality_delta")))
    return (f"the quality limit max_quality_delta = {fmt(limit)} fails on all {len(sparse)} sparse designs: "
            f"quality loss {fmt(_f(mt.get('quality_delta')))}, pessimistic end {fmt(pess)} "
            f"({mt.get('quality_evidence', 'unlabelled')} evidence)")


def decide(data: StudyData, det: Detail | None, q: dict[str, Any] | None, comp: dict[str, Any] | None = None
           ) -> tuple[str, str, list[list[str]]]:
    """(verdict, rule that fired, rule table rows with the evaluated values). ``comp``: the equal-terms
    comparison (explore.compare.comparison); without it R3 and R5 cannot hold and the verdict is at
    most BOUNDED ROLLOUT."""
    rows: list[list[str]] = []
    feasible = bool(data.best.get("feasible"))
    qfail = _sparse_quality_failure(data)
    r1 = not feasible and qfail is None
    rows.append(["R1", RULES[0][1], f"{data.best['n_feasible']} feasible of {data.best['n_evaluated']}",
                 "fires" if r1 else "passes" if feasible else "passes (the quality limit explains it: R2)"])
    if r1 or (det is None and qfail is None):
        return "ESCALATE", "R1", rows
    sparse = _nm(det)[2] if det is not None else True
    guard_bad = bool(q and not q.get("dense") and q.get("guardrail_ok") is False)
    if qfail is not None and not (feasible and sparse):
        # every sparse design of the study violates the quality limit: sparsity does not ship
        rows.append(["R2", RULES[1][1], qfail, "fires"])
        return "ROLLBACK", "R2", rows
    if det is None:
        return "ESCALATE", "R1", rows
    rows.append(["R2", RULES[1][1], (q or {}).get("guardrail", "no quality evidence") if sparse else "dense design",
                 "fires" if guard_bad else "passes"])
    if guard_bad:
        return "ROLLBACK", "R2", rows
    comp = comp or {}
    adv = comp.get("primary_advantage")
    prim = data.cfg.objectives.primary
    bs, bd = comp.get("best_sparse"), comp.get("best_dense")
    if bs is None:
        measured = "no feasible sparse design"
    elif bd is None:
        measured = "no feasible dense design to compare with"
    else:
        measured = f"best sparse {fmt(bs.get(prim))} vs best dense {fmt(bd.get(prim))} {prim}: ratio {fmt(adv)}"
    r3 = bs is None or (adv is not None and adv <= 1.0) or not sparse
    rows.append(["R3", RULES[2][1], measured + ("" if sparse else "; the best design is dense"),
                 "fires" if r3 else "passes"])
    if r3:
        return "ROLLBACK", "R3", rows
    kind = (q or {}).get("evidence", "model") if q is not None else None
    r4 = sparse and (q is None or kind != "model")
    r4_text = ("no quality evidence" if q is None else
               f"proxy evidence only ({q.get('reference', 'reference model')}): it shows the family, not the "
               f"deployed model" if kind != "model" else "evidence on the team's model")
    rows.append(["R4", RULES[3][1], r4_text if sparse else "dense design", "fires" if r4 else "passes"])
    if r4:
        return "BOUNDED ROLLOUT", "R4", rows
    eff = _f(det.metrics.get("effective_speedup"))
    ideal = _f(det.metrics.get("ideal_speedup"))
    slack = -float(data.best["tightest_limit"]["constraint"])
    low = eff is not None and ideal and eff < SHIP_SPEEDUP_SHARE_OF_IDEAL * ideal
    thin = adv is None or adv < 1.0 + SHIP_MIN_ADVANTAGE
    r5 = bool(low or thin or slack < SHIP_MIN_SLACK)
    rows.append(["R5", RULES[4][1], f"sparse/dense {fmt(adv)}; effective/ideal {fmt(eff / ideal) if (eff and ideal) else 'n/a'}; "
                                    f"tightest slack {pct(slack)} ({data.best['tightest_limit']['name']})",
                 "fires" if r5 else "passes"])
    if r5:
        return "BOUNDED ROLLOUT", "R5", rows
    rows.append(["R6", RULES[5][1], "", "fires"])
    return "SHIP", "R6", rows


_RULE_REASON = {
    "R1": "no feasible design", "R2": "the quality guardrail is violated",
    "R3": "sparsity does not beat the best dense design on equal terms",
    "R4": "the quality evidence is a proxy or missing", "R5": "the sparse advantage or a limit's slack is thin", "R6": "all rules pass",
}


def rejected_alternatives(data: StudyData) -> list[list[str]]:
    """The top designs that lost: infeasible ones that beat the best on the primary objective, and
    feasible ones that are dominated (on all objectives) or simply worse on a single objective."""
    prim = data.cfg.objectives.primary
    sign = 1.0 if data.directions[0] == "maximize" else -1.0
    best = data.best.get("best")
    recs = [r for r in data.records if _f(r["metrics"].get(prim)) is not None and (best is None or r["number"] != best["number"])]
    recs.sort(key=lambda r: (-sign * float(r["metrics"][prim]), r["number"]))
    feas = [r for r in data.records if r["feasible"]]
    objs = data.objectives
    out = []
    for r in recs[:N_REJECTED]:
        val = float(r["metrics"][prim])
        if not r["feasible"]:
            bad = sorted(((c, v) for c, v in r["constraints"].items() if v > 0), key=lambda cv: -cv[1])
            why = "infeasible: " + "; ".join(_describe_constraint(data, c, v, r["metrics"]) for c, v in bad[:3])
        else:
            dom = None
            for f in feas:
                if f["number"] == r["number"]:
                    continue
                better = [(1 if d == "maximize" else -1) * (float(f["metrics"][o]) - float(r["metrics"][o]))
                          for o, d in zip(objs, data.directions)]
                if all(b >= 0 for b in better) and any(b > 0 for b in better):
                    dom = f
                    break
            if dom is not None:
                why = f"dominated by trial {dom['number']} on {', '.join(objs)}"
            else:
                why = f"feasible, on the front, but lower {prim}"
            if best is not None:
                why += f" ({fmt(val)} vs the best {fmt(best['metrics'][prim])})"
        out.append([str(r["number"]), _point_label(r["params"]), fmt(val), why])
    return out


def section_decision(data: StudyData, det: Detail | None, q: dict[str, Any] | None,
                     comp: dict[str, Any] | None = None) -> tuple[Section, dict[str, Any]]:
    s = Section(11, "decision", "Decision", "sparsity")
    verdict, rule, rows = decide(data, det, q, comp)
    s.verdict = f"Recommendation: {verdict} (rule {rule})."
    if rule == "R4" and q is not None and q.get("evidence") != "model":
        s.paras.append(f"Capped at BOUNDED ROLLOUT: the quality evidence is a proxy ({q.get('reference')}, "
                       f"{q.get('model')}), a reference model of the workload family rather than the deployed "
                       "model; only the team's own weights and eval ([quality] weights + eval) can support SHIP.")
    s.tables.append(Table("Rules, evaluated in order (the first that fires decides)",
                          ["rule", "statement", "measured", "result"], rows, name="decision_rules"))
    vm = Table("Validation matrix and rollback triggers", ["check", "measured now", "limit", "rollback trigger"], [],
               name="validation_matrix")
    m = det.metrics if det is not None else {}
    lim = data.cfg.limits
    if det is not None:
        sp = _f(m.get("speedup_vs_iso_area_dense"))
        vm.rows.append(["speedup vs the iso-area dense design (field measurement on the workload mix against the "
                        "dense chip of the same area)", fmt(sp), "> 1.0",
                        f"measured speedup < {fmt(max(1.0, 0.9 * sp) if sp else 1.0)} (10 % below this report, or no gain)"])
        eff = _f(m.get("effective_speedup"))
        vm.rows.append(["effective speedup (sparse vs dense kernels on this hardware)", fmt(eff), "> 1.0",
                        "below 1.0: the sparse kernels lose to the dense fallback on the same chip"])
        vm.rows.append(["stall fraction", fmt(m.get("stall_fraction")), fmt(lim.max_stall_fraction),
                        "above the limit on any workload of the mix"])
        vm.rows.append(["junction temperature (C)", fmt(m.get("tj_c")), fmt(lim.max_tj_c), "above the limit at the "
                        "worst-case ambient"])
        vm.rows.append(["power density (W/mm^2)", fmt(m.get("power_density_w_mm2")), fmt(lim.max_power_density_w_mm2),
                        "above the limit"])
        if lim.p99_latency_ms is not None:
            vm.rows.append([f"p99 latency at {fmt(lim.request_rate_hz)} req/s (ms)", p99_text(m, data.cfg),
                            fmt(lim.p99_latency_ms), "SLA missed over any 1-hour window"])
        vm.rows.append([f"quality loss (fraction, {(q or {}).get('evidence', 'no')} evidence)",
                        _interval_text(q) if q and not q.get("dense") else fmt(q.get("quality_delta")) if q else "no evidence",
                        fmt(lim.max_quality_delta), "loss above the limit on the production eval set, or no "
                        "evaluation before widening the rollout"])
    s.tables.append(vm)
    rej = rejected_alternatives(data)
    if rej:
        s.tables.append(Table("Rejected alternatives (top designs that lost, and why)",
                              ["trial", "design", data.cfg.objectives.primary, "why it lost"], rej, name="rejected"))
    return s, {"verdict": verdict, "rule": rule, "reason": _RULE_REASON[rule]}


# =====================================================================================================
# 12. Reproducibility
# =====================================================================================================

def _versions() -> dict[str, str]:
    from importlib import metadata

    out = {"python": platform.python_version()}
    for pkg in ("sparsepe", "numpy", "scipy", "pandas", "optuna", "amaranth", "plotly", "matplotlib", "jinja2",
                "pydantic", "scikit-learn"):
        try:
            out[pkg] = metadata.version(pkg)
        except metadata.PackageNotFoundError:
            out[pkg] = "not installed"
    return out


def _yosys() -> str:
    try:
        from ppa.synth import find_yosys

        argv, name = find_yosys()
    except InputError as exc:  # no Yosys on this machine: the report says so
        return f"unavailable ({exc})"
    if shutil.which(argv[0]) or Path(argv[0]).exists():
        try:
            r = subprocess.run([*argv, "-V"], capture_output=True, text=True, timeout=60)
            return f"{name}: {r.stdout.strip().splitlines()[0] if r.stdout.strip() else 'version unknown'}"
        except (OSError, subprocess.TimeoutExpired):
            pass
    return name


def _git() -> str:
    root = Path(__file__).resolve().parents[2]
    try:
        rev = subprocess.run(["git", "-C", str(root), "rev-parse", "HEAD"], capture_output=True, text=True, timeout=10)
        if rev.returncode != 0:
            return "not a git checkout"
        dirty = subprocess.run(["git", "-C", str(root), "status", "--porcelain", "--untracked-files=no"],
                               capture_output=True, text=True, timeout=10)
        return rev.stdout.strip() + (" (with uncommitted changes)" if dirty.stdout.strip() else "")
    except (OSError, subprocess.TimeoutExpired):
        return "git unavailable"


def section_repro(data: StudyData, out_dir: Path, command: str) -> Section:
    s = Section(12, "repro", "Reproducibility", "sparsity")
    body = json.dumps(data.config_json, indent=2, sort_keys=True)
    sweep = data.sweep
    t = Table("Provenance", ["item", "value"], [], name="provenance")
    t.rows += [["study", data.study_name], ["storage", f"{data.storage_kind}: {data.storage_url}"],
               ["config source", data.cfg.source],
               ["config fingerprint (sha256, explore.study.config_fingerprint)", data.fingerprint],
               ["config sha256 (canonical JSON below)", hashlib.sha256(body.encode()).hexdigest()],
               ["model code that computed the trials (explore.study.model_code_version)",
                data.user_attrs.get("sparsepe_model_code") or "not recorded (a study from before it was)"],
               ["sampler / seed (config)", f"{data.cfg.study.sampler} / {data.cfg.study.seed}"]]
    if sweep:
        t.rows.append(["sweep run", ", ".join(f"{k}={v}" for k, v in sorted(sweep.items()))])
    for host, prov in sorted((data.user_attrs.get("tools") or {}).items()):
        t.rows.append([f"tools that costed the trials on {host} (cache keys)",
                       "; ".join(f"{k}: {v}" for k, v in sorted(prov.items()))])
    t.rows += [["evaluator", data.evaluator], ["Yosys on PATH now", _yosys()], ["git revision", _git()],
               ["platform", f"{platform.system()} {platform.machine()}"]]
    for k, v in _versions().items():
        t.rows.append([k, v])
    s.tables.append(t)
    s.pre.append(("Regenerate this report with:", command))
    s.pre.append(("The config the study was created from (canonical JSON):", body))
    return s
