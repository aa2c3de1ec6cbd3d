"""Dense twins: every design against dense designs costed by exactly the same method.

The same evaluation (explore.evaluator: sim.perf cycles and stalls, ppa.model area and power, the
same limits) costs the design and two dense twins:

* iso-array twin (:func:`iso_array_point`): the same design with dense PEs covering the same M per
  cycle (same R x C, SRAM, clock, node, pipeline, dataflow and memory);
* iso-area twin (:class:`DensePool`): the fastest *feasible* dense design whose area is not above the
  design's, searched over every axis but sparsity under the same limits: among the dense designs the
  study's dense side evaluated (explore.sampler: as many trials as the sparse side; with
  ``--exhaustive``/``--grid``, every dense point of the space). Ties: the larger area, then fewer
  PEs, then the earlier design. When no feasible dense design fits, there is no iso-area twin: its
  metrics are NaN and ``iso_area_dense_fits`` is 0.

Ratios are design / twin for perf-per-watt, area and energy, twin / design for latency (speedup > 1:
the design is faster). Twin metrics are computed once per study, after its trials, for every design
(:func:`twin_metrics`): a trial's own evaluation does not cost its twins.
"""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

import numpy as np

from explore.space import dense_twin_sparsity

#: The twin comparison metrics :func:`twin_metrics` gives every design.
TWIN_METRICS = (
    "speedup_vs_dense_design",
    "perf_per_watt_vs_dense_design",
    "area_vs_dense_design",
    "energy_vs_dense_design",
    "speedup_vs_iso_area_dense",
    "perf_per_watt_vs_iso_area_dense",
    "iso_area_dense_rows",
    "iso_area_dense_cols",
    "iso_area_dense_area_ratio",
    "iso_area_dense_fits",
)


#: What a NaN of a twin metric means (explore.safety.dumps writes it as null with this reason): a
#: design smaller than every feasible dense design of the study has no iso-area twin.
ABSENT = {
    k: "no feasible dense design of at most this design's area (no iso-area twin)"
    for k in (
        "speedup_vs_iso_area_dense",
        "perf_per_watt_vs_iso_area_dense",
        "iso_area_dense_rows",
        "iso_area_dense_cols",
        "iso_area_dense_area_ratio",
    )
}


def iso_array_point(point: dict[str, Any]) -> dict[str, Any]:
    """The iso-array twin of a design point: the same point with dense PEs of the same M."""
    return {**point, "sparsity": dense_twin_sparsity(point["sparsity"])}


def _feasible(r: dict[str, Any]) -> bool:
    return all(v <= 0 for v in r["constraints"].values())


class DensePool:
    """The feasible dense designs of a study, for iso-area lookups: records ({number, params, metrics,
    constraints}) whose PEs are dense, sorted by area."""

    def __init__(self, records: list[dict[str, Any]], is_dense: Callable[[dict[str, Any]], bool]):
        ok = [
            r
            for r in records
            if is_dense(r["params"])
            and _feasible(r)
            and np.isfinite(float(r["metrics"].get("latency_ms", np.nan)))
            and np.isfinite(float(r["metrics"].get("area_mm2", np.nan)))
        ]
        # the order that decides ties: fastest, then the larger area, then fewer PEs, then the earlier design
        key = [
            (
                float(r["metrics"]["latency_ms"]),
                -float(r["metrics"]["area_mm2"]),
                int(r["params"].get("rows", 0)) * int(r["params"].get("cols", 0)),
                int(r.get("number", 0)),
            )
            for r in ok
        ]
        order = sorted(range(len(ok)), key=lambda i: key[i])
        self.records = [ok[i] for i in order]
        self.area = np.array([float(r["metrics"]["area_mm2"]) for r in self.records])
        # best[i]: the rank (in the tie-break order) of the best design among the i smallest areas
        by_area = np.argsort(self.area, kind="stable")
        self._sorted_area = self.area[by_area]
        self._prefix_best = np.minimum.accumulate(by_area) if len(by_area) else by_area

    def __len__(self) -> int:
        return len(self.records)

    def iso_area(self, area_mm2: float) -> dict[str, Any] | None:
        """The iso-area twin of a design of ``area_mm2``: the best-ranked feasible dense design whose
        area does not exceed it, or None."""
        j = int(self.iso_area_many(np.array([area_mm2]))[0])
        return None if j < 0 else self.records[j]

    def iso_area_many(self, area_mm2: np.ndarray) -> np.ndarray:
        """:meth:`iso_area` of many areas at once: indices into ``records``, -1 where none fits."""
        k = np.searchsorted(self._sorted_area, np.asarray(area_mm2, float) * (1 + 1e-12), side="right")
        if not len(self._prefix_best):
            return np.full(len(k), -1)
        return np.where(k > 0, self._prefix_best[np.maximum(k - 1, 0)], -1)


def twin_metrics(
    m: dict[str, np.ndarray], iso: dict[str, np.ndarray], pool: DensePool
) -> dict[str, np.ndarray]:
    """TWIN_METRICS of P designs: ``m`` their metric columns and ``iso`` their iso-array twins'
    (latency_ms, perf_per_watt, area_mm2, energy_per_inference_mj; arrays of P), ``pool`` the
    feasible dense designs the iso-area twin is searched among."""
    lat, ppw, area, e = (
        np.asarray(m[k], float)
        for k in ("latency_ms", "perf_per_watt", "area_mm2", "energy_per_inference_mj")
    )
    t_lat, t_ppw, t_area, t_e = (
        np.asarray(iso[k], float)
        for k in ("latency_ms", "perf_per_watt", "area_mm2", "energy_per_inference_mj")
    )
    res: dict[str, np.ndarray] = {}
    with np.errstate(divide="ignore", invalid="ignore"):
        res["speedup_vs_dense_design"] = t_lat / lat
        res["perf_per_watt_vs_dense_design"] = np.where(t_ppw > 0, ppw / t_ppw, 0.0)
        res["area_vs_dense_design"] = area / t_area
        res["energy_vs_dense_design"] = e / t_e
        j = pool.iso_area_many(area)
        fits = j >= 0
        col = {
            k: np.array([float(r["metrics"][k]) for r in pool.records] + [np.nan])
            for k in ("latency_ms", "perf_per_watt", "area_mm2")
        }
        rows = np.array([float(r["params"].get("rows", np.nan)) for r in pool.records] + [np.nan])
        cols = np.array([float(r["params"].get("cols", np.nan)) for r in pool.records] + [np.nan])
        jj = np.where(fits, j, len(pool.records))  # the NaN row where no twin fits
        res["speedup_vs_iso_area_dense"] = col["latency_ms"][jj] / lat
        res["perf_per_watt_vs_iso_area_dense"] = np.where(
            fits, np.where(col["perf_per_watt"][jj] > 0, ppw / col["perf_per_watt"][jj], 0.0), np.nan
        )
        res["iso_area_dense_rows"] = rows[jj]
        res["iso_area_dense_cols"] = cols[jj]
        res["iso_area_dense_area_ratio"] = col["area_mm2"][jj] / area
    res["iso_area_dense_fits"] = fits.astype(float)
    return {k: res[k] for k in TWIN_METRICS}
