"""Section 4 of the report: the per-layer view of the chosen design, and the per-layer frame
(:func:`layer_frame`) every later section reads (supported layers, fallback, bottlenecks, owners)."""

from __future__ import annotations

import re
from typing import Any, Protocol

import numpy as np
import pandas as pd

from explore.report.data import StudyData
from explore.report.document import Section, Table
from explore.report.figures import Figure, Line
from explore.report.format import fmt, pct
from explore.results import Detail
from sim.array_config import design_arrays
from sim.perf import evaluate, layer_arrays


class HasConfig(Protocol):
    """What :func:`layer_frame` reads of a StudyData: its config (a caller may have only that)."""

    @property
    def cfg(self) -> Any: ...


def _workload_objects(data: HasConfig, det: Detail) -> dict[str, Any]:
    """Workload name -> sim.workloads.Workload (from the evaluator when it says, else the config)."""
    if det.workloads:
        return dict(det.workloads)
    out = {}
    for w in data.cfg.workload:
        wl = w.build()
        out[wl.name] = wl
        out[w.name] = wl
    return out


def layer_frame(data: HasConfig, det: Detail) -> pd.DataFrame:
    """One row per layer of every workload of the best design, with the dense run of the same
    array beside it (sim.perf.evaluate with force_dense: same array, every layer dense)."""
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
            shapes = [(layer.M, layer.N, layer.K, layer.reason) for layer in wl.layers]
        else:
            dense_busy = np.full(len(busy), np.nan)
            shapes = [(None, None, None, "") for _ in net.names]
        f_hz = arch.clock_mhz * 1e6
        ops = 2.0 * lay["dense_macs"]
        dram = np.asarray(lay["dram_bytes"], float)
        frames.append(
            pd.DataFrame(
                {
                    "workload": wname,
                    "weight": weight,
                    "layer": net.names,
                    "kind": net.kinds,
                    "count": counts.astype(int),
                    "M": [sh[0] for sh in shapes],
                    "N": [sh[1] for sh in shapes],
                    "K": [sh[2] for sh in shapes],
                    "cycles_per_instance": busy.astype(np.int64),
                    "compute_cycles": (lay["cycles"] + 1).astype(np.int64),
                    "stall_cycles": lay["stall_cycles"].astype(np.int64),
                    "total_cycles": (busy * counts).astype(np.int64),
                    "stall_fraction": lay["stall_cycles"] / busy,
                    "utilization": np.asarray(lay["utilization"], float),
                    "sparse": np.asarray(lay["sparse"], bool),
                    "dense_cycles_per_instance": dense_busy,
                    "speedup_vs_dense": dense_busy / busy,
                    "ops_per_dram_byte": np.where(dram > 0, ops / np.maximum(dram, 1e-30), np.inf),
                    "attained_tops": ops / (busy / f_hz) / 1e12,
                    "bound": np.where(lay["stall_cycles"] > 0, "memory", "compute"),
                    "dram_bytes": dram,
                    "metadata_bytes": np.asarray(lay["metadata_bytes"], float),
                    "dram_weight_bytes": np.asarray(lay["dram_weight_bytes"], float),
                    "fallback_reason": [r or "" for r in net.fallback_reasons],
                    "asp_verdict": [sh[3] for sh in shapes],
                    "hw": f"{arch.rows}x{arch.cols} {arch.dataflow} "
                    + (f"{arch.n}:{arch.m}" if arch.sparse else "dense"),
                    "clock_mhz": arch.clock_mhz,
                    "dram_gbps": arch.dram_gbps,
                    "unit": "array",
                }
            )
        )
        vops = list(getattr(net, "vector_ops", []) or [])
        if vops:  # the vector unit's operators: the same time in the dense and the sparse run
            v = net.vector
            cyc = np.asarray(v["vector_op_cycles"], float)
            vst = np.asarray(v["vector_sram_stall_cycles"], float) + np.asarray(
                v["vector_dram_stall_cycles"], float
            )
            vc = np.array([o.count for o in vops], float)
            frames.append(
                pd.DataFrame(
                    {
                        "workload": wname,
                        "weight": weight,
                        "layer": [o.name for o in vops],
                        "kind": [o.op_type if o.supported else f"{o.op_type} (unsupported)" for o in vops],
                        "count": vc.astype(int),
                        "M": None,
                        "N": None,
                        "K": None,
                        "cycles_per_instance": cyc.astype(np.int64),
                        "compute_cycles": (cyc - vst).astype(np.int64),
                        "stall_cycles": vst.astype(np.int64),
                        "total_cycles": (cyc * vc).astype(np.int64),
                        "stall_fraction": np.where(cyc > 0, vst / np.maximum(cyc, 1), 0.0),
                        "utilization": np.nan,
                        "sparse": False,
                        "dense_cycles_per_instance": cyc,
                        "speedup_vs_dense": 1.0,
                        "ops_per_dram_byte": np.nan,
                        "attained_tops": 0.0,
                        "bound": np.where(vst > 0, "memory", "compute"),
                        "dram_bytes": np.asarray(v["vector_dram_bytes"], float),
                        "metadata_bytes": 0.0,
                        "dram_weight_bytes": 0.0,
                        "fallback_reason": [o.reason or "" for o in vops],
                        "asp_verdict": "",
                        "hw": f"{arch.rows}x{arch.cols} {arch.dataflow} "
                        + (f"{arch.n}:{arch.m}" if arch.sparse else "dense"),
                        "clock_mhz": arch.clock_mhz,
                        "dram_gbps": arch.dram_gbps,
                        "unit": "vector",
                    }
                )
            )
    if not frames:
        return pd.DataFrame()
    df = pd.concat(frames, ignore_index=True)
    tot = df.groupby("workload")["total_cycles"].transform("sum")
    df["time_share"] = df["total_cycles"] / tot
    return df


# =====================================================================================================
# 4. Per-layer view
# =====================================================================================================


def section_layers(data: StudyData, det: Detail | None, layers: pd.DataFrame) -> Section:
    s = Section(4, "layers", "Per-layer view of the best design", "ppa")
    if det is None or layers.empty:
        s.paras.append(no_layers_text(data, det))
        return s
    for wname, _, net in det.networks:
        df = _workload_layers(layers, wname)
        arch = net.arch
        stem = _stem(wname)
        s.figures.append(_cycles_figure(wname, stem, df))
        s.figures.append(_roofline_figure(wname, stem, df, arch, det.ppa.peak_tops))
        nb = int((df["bound"] == "memory").sum())
        share_mem = float(df.loc[df["bound"] == "memory", "time_share"].sum())
        s.paras.append(
            f"{wname} on {df['hw'].iloc[0]}: {nb} of {len(df)} layers are memory bound "
            f"({pct(share_mem)} of the time); utilisation {fmt(net.totals.get('utilization'))}, "
            f"stall fraction {fmt(net.totals.get('stall_fraction'))}."
        )
        if arch.sparse:
            s.figures.append(_speedup_figure(wname, stem, df, arch))
        else:
            s.paras.append(f"{wname}: the design is dense, so there is no sparse speedup per layer.")
        s.data[f"layers_{stem}"] = layers[layers["workload"] == wname]
        s.tables.append(_layers_table(wname, stem, df))
    return s


def _workload_layers(layers: pd.DataFrame, wname: str) -> pd.DataFrame:
    """One workload's rows of the layer frame, labelled, with the cycles of all instances."""
    df = layers[layers["workload"] == wname].copy()
    lab = [f"{i}:{n}" for i, n in enumerate(df["layer"])]
    df.insert(0, "label", lab)
    df["compute_total"] = df["compute_cycles"] * df["count"]
    df["stall_total"] = df["stall_cycles"] * df["count"]
    return df


def _cycles_figure(wname: str, stem: str, df: pd.DataFrame) -> Figure:
    return Figure(
        f"layers_cycles_{stem}",
        f"{wname}: cycles per layer (x count), compute and stall",
        "bar",
        df[
            [
                "label",
                "layer",
                "count",
                "compute_total",
                "stall_total",
                "utilization",
                "stall_fraction",
            ]
        ],
        "label",
        ["compute_total", "stall_total"],
        "layer",
        "cycles",
    )


def _roofline_figure(wname: str, stem: str, df: pd.DataFrame, arch: Any, peak: float) -> Figure:
    """Roofline: dense-equivalent ops per DRAM byte against attained TOPS, with the array's roofs
    (``peak``: ppa.model's dense-equivalent peak of this array at its clock)."""
    peak_dense = peak * (arch.n / arch.m) if arch.sparse else peak
    ai = df.loc[df["unit"] == "array", "ops_per_dram_byte"].replace(np.inf, np.nan)
    lo = max(float(np.nanmin(ai)) / 2 if ai.notna().any() else 0.1, 1e-3)
    hi = float(np.nanmax(ai)) * 2 if ai.notna().any() else 1e4
    xs = list(np.geomspace(lo, hi, 40))
    bw = arch.dram_gbps * 1e9 / 1e12
    roofs = [
        Line(
            f"DRAM {fmt(arch.dram_gbps)} GB/s + sparse peak {fmt(peak)} TOPS",
            xs,
            [min(peak, bw * x) for x in xs],
            "solid",
        )
    ]
    if arch.sparse:
        roofs.append(
            Line(
                f"dense-fallback peak {fmt(peak_dense)} TOPS",
                xs,
                [min(peak_dense, bw * x) for x in xs],
                "dot",
            )
        )
    rf = df.loc[
        df["unit"] == "array", ["label", "layer", "ops_per_dram_byte", "attained_tops", "bound", "sparse"]
    ].copy()
    rf["status"] = [f"{b}-bound" for b in rf["bound"]]
    return Figure(
        f"roofline_{stem}",
        f"{wname}: roofline (dense-equivalent ops)",
        "scatter",
        rf,
        "ops_per_dram_byte",
        "attained_tops",
        "ops per DRAM byte",
        "attained TOPS",
        color="status",
        hover="label",
        log_x=True,
        log_y=True,
        lines=roofs,
    )


def _speedup_figure(wname: str, stem: str, df: pd.DataFrame, arch: Any) -> Figure:
    """A sparse design's speedup per layer against the same array dense, with the M/N bound."""
    bound = arch.m / arch.n
    sp = df[
        [
            "label",
            "layer",
            "sparse",
            "speedup_vs_dense",
            "dense_cycles_per_instance",
            "cycles_per_instance",
        ]
    ]
    return Figure(
        f"speedup_{stem}",
        f"{wname}: sparse vs dense speedup per layer (bound {fmt(bound)} = M/N)",
        "bar",
        sp,
        "label",
        "speedup_vs_dense",
        "layer",
        "speedup vs the same array dense",
        hline=(bound, f"{arch.n}:{arch.m} bound {fmt(bound)}"),
    )


def _layers_table(wname: str, stem: str, df: pd.DataFrame) -> Table:
    t = Table(
        f"{wname}: layers",
        ["layer", "kind", "count", "cycles", "stall", "util", "bound", "sparse", "speedup"],
        [],
        name=f"layers_table_{stem}",
    )
    for _, r in df.iterrows():
        t.rows.append(
            [
                r["layer"],
                r["kind"],
                fmt(int(r["count"])),
                fmt(int(r["total_cycles"])),
                fmt(float(r["stall_fraction"])),
                fmt(float(r["utilization"])),
                r["bound"],
                fmt(bool(r["sparse"])),
                fmt(float(r["speedup_vs_dense"])),
            ]
        )
    return t


def _stem(name: str) -> str:
    return re.sub(r"[^A-Za-z0-9_-]+", "_", name)[:40] or "workload"


def no_layers_text(data: StudyData, det: Detail | None) -> str:
    """Why a per-layer section is empty: no design, or an evaluator without per-layer results."""
    if det is None:
        return "No finished trial: no design to show."
    return (
        f"The evaluator ({data.evaluator}) gives no per-layer results (evaluate_detail with the sim.perf "
        "NetworkResult of each workload), so this section has no per-layer data."
    )


def array_rows(layers: pd.DataFrame) -> pd.Series:
    """Rows of GEMM layers (the array), not the vector unit's operators."""
    return layers["unit"] == "array" if "unit" in layers else pd.Series(True, index=layers.index)
