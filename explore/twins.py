"""Dense twins: every design against dense designs costed by exactly the same method.

The same evaluation (explore.evaluator: sim.perf cycles and stalls, ppa.model area and power, the
same SRAM, clock, node, pipeline, dataflow and memory) costs the design and two dense twins:

* iso-array twin: the same R x C array with dense PEs covering the same M per cycle;
* iso-area twin: the fastest dense array, over the rows x cols the study's space offers, whose
  area is not above the design's (ties: the larger area, then fewer PEs) (:func:`iso_area_choice`).

Ratios are design / twin for perf-per-watt, area and energy, twin / design for latency (speedup
> 1: the design is faster). When no dense array of the space fits in the design's area, the
iso-area twin is the smallest dense array (``iso_area_dense_fits`` = 0, area ratio > 1).
:func:`twin_metrics` takes the evaluation as a function of a list of points; the evaluator
memoises twin evaluations in its context (many trials share them).
"""

from __future__ import annotations

from typing import Any, Callable

import numpy as np

from explore.config import SweepConfig, axis_values
from explore.space import axis_choices, dense_twin_sparsity

#: The twin comparison metrics :func:`twin_metrics` adds to every design.
TWIN_METRICS = ("speedup_vs_dense_design", "perf_per_watt_vs_dense_design", "area_vs_dense_design",
                "energy_vs_dense_design", "speedup_vs_iso_area_dense", "perf_per_watt_vs_iso_area_dense",
                "iso_area_dense_rows", "iso_area_dense_cols", "iso_area_dense_area_ratio", "iso_area_dense_fits")


def twin_points(point: dict[str, Any], cfg: SweepConfig) -> tuple[dict[str, Any], list[dict[str, Any]]]:
    """(iso-array twin, iso-area candidates) of one design point, as points of the same axes."""
    dense = dense_twin_sparsity(point["sparsity"])
    iso_array = {**point, "sparsity": dense}
    vals = axis_values(cfg) if _discrete(cfg, ("rows", "cols")) else {}
    rows = vals.get("rows", [point["rows"]])
    cols = vals.get("cols", [point["cols"]])
    cands = [{**point, "sparsity": dense, "rows": int(r), "cols": int(c)} for r in rows for c in cols]
    return iso_array, cands


def _discrete(cfg: SweepConfig, axes: tuple[str, ...]) -> bool:
    """True when every one of ``axes`` has a finite set of values (choices, a step, grid points or one value)."""
    for a in axes:
        if axis_choices(cfg.space, a) is None:
            r = cfg.space.axis(a)
            if r.step is None and r.grid_points is None and r.min != r.max:
                return False
    return True


def twin_metrics(columns: dict[str, np.ndarray], out: dict[str, np.ndarray], cfg: SweepConfig,
                 evaluate_points: Callable[[list[dict[str, Any]]], list[dict[str, float]]]) -> dict[str, np.ndarray]:
    """TWIN_METRICS of P designs (``columns``: their axes, ``out``: their metrics), with
    ``evaluate_points`` giving the metrics of a list of twin points (the evaluator's, memoised)."""
    P = len(out["latency_ms"])
    names = list(columns)
    res = {k: np.full(P, np.nan) for k in TWIN_METRICS}
    twins = []
    for i in range(P):
        point = {a: (v.item() if isinstance(v, np.generic) else v) for a, v in ((a, columns[a][i]) for a in names)}
        twins.append(twin_points(point, cfg))
    evaluate_points([p for iso_array, cands in twins for p in (iso_array, *cands)])  # new ones in one batch
    for i, (iso_array, cands) in enumerate(twins):
        tw, *cm = evaluate_points([iso_array, *cands])
        lat, ppw, area, e = (float(out[k][i]) for k in ("latency_ms", "perf_per_watt", "area_mm2", "energy_per_inference_mj"))
        res["speedup_vs_dense_design"][i] = tw["latency_ms"] / lat
        res["perf_per_watt_vs_dense_design"][i] = ppw / tw["perf_per_watt"] if tw["perf_per_watt"] > 0 else 0.0
        res["area_vs_dense_design"][i] = area / tw["area_mm2"]
        res["energy_vs_dense_design"][i] = e / tw["energy_per_inference_mj"]
        j, m, fits = iso_area_choice(area, cands, cm)
        res["speedup_vs_iso_area_dense"][i] = m["latency_ms"] / lat
        res["perf_per_watt_vs_iso_area_dense"][i] = ppw / m["perf_per_watt"] if m["perf_per_watt"] > 0 else 0.0
        res["iso_area_dense_rows"][i] = cands[j]["rows"]
        res["iso_area_dense_cols"][i] = cands[j]["cols"]
        res["iso_area_dense_area_ratio"][i] = m["area_mm2"] / area
        res["iso_area_dense_fits"][i] = float(fits)
    return res


def iso_area_choice(area_mm2: float, cands: list[dict[str, Any]], metrics: list[dict[str, float]]
                    ) -> tuple[int, dict[str, float], bool]:
    """(index, metrics, fits) of the iso-area dense twin among ``cands``: the fastest dense array of
    the space whose area does not exceed ``area_mm2`` (ties: larger area, then fewer PEs), i.e. the
    dense chip an architect would build in that area (the largest array is not always the fastest:
    an 8 x 64 OS array maps BERT far worse than a 16 x 32 one of the same area). When even the
    smallest dense array is larger, it is that smallest one, with ``fits`` False: the comparison
    then favours the dense side, and the report says so (``iso_area_dense_area_ratio`` > 1)."""
    fit = [j for j, m in enumerate(metrics) if m["area_mm2"] <= area_mm2 * (1 + 1e-12)]
    if not fit:
        j = min(range(len(cands)), key=lambda j: (metrics[j]["area_mm2"], metrics[j]["latency_ms"]))
        return j, metrics[j], False
    j = min(fit, key=lambda j: (metrics[j]["latency_ms"], -metrics[j]["area_mm2"],
                                cands[j]["rows"] * cands[j]["cols"]))
    return j, metrics[j], True
