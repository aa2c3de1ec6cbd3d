"""The PPA half of the evaluator: each workload's ppa.model estimates as columns, and their mix.

explore.evaluator costs a design on each workload of the mix (ppa.model.estimate on sim.perf's
activity); :func:`ppa_columns` turns one workload's estimates of P designs into arrays, and
:func:`aggregate` combines the workloads into the metrics of the mix (the formulas in
explore.evaluator's docstring). The robustness step (explore.robustness) uses the same
:func:`aggregate` on :func:`recost_columns`, one design's estimates re-costed under many samples of
the assumptions (ppa.recost), so a sample at the model's own values gives the evaluator's metrics.
"""

from __future__ import annotations

import math
from typing import Any

import numpy as np

from ppa import thermal
from ppa.recost import recost

#: Reported as T_j of a design whose junction temperature has no fixed point (thermal runaway):
#: ppa.thermal's runaway bound. Such a design also gets perf_per_watt 0 (it cannot operate).
RUNAWAY_TJ_C = thermal.RUNAWAY_T_C
#: The power parts of ppa.model (PPAResult.power_breakdown_w keys).
POWER_PARTS = ("dynamic", "clock", "leakage", "sram", "vector", "phy", "dram")

#: ppa.model reasons that another constraint already carries: the clock above fmax (the timing
#: constraint) and the junction temperature above the T_j limit (max_tj_c). Every other reason ppa
#: gives (thermal runaway, power density above the cooling limit, DRAM traffic above the memory's
#: bandwidth, ...) makes the design infeasible through the ``ppa_infeasible`` constraint.
COVERED_REASONS = ("clock ", "junction temperature ")


def ppa_only_reasons(r) -> list[str]:
    """ppa.model.PPAResult.infeasible_reasons that no other constraint of the study carries."""
    return [x for x in r.infeasible_reasons if not x.startswith(COVERED_REASONS)]


def ppa_columns(results: list[Any]) -> dict[str, np.ndarray]:
    """One workload's ppa.model.PPAResult of P designs as arrays: area_mm2 (and area_<part>_mm2),
    fmax_mhz, fmax_at_voltage_mhz, voltage_v, peak_tops, power_w, tj_c, power_density_w_mm2 (NaN on
    thermal runaway), power_<part>_w (a part ppa could not give counts 0), runaway, ppa_bad."""
    out: dict[str, np.ndarray] = {
        "area_mm2": np.array([r.area_mm2 for r in results], float),
        "fmax_mhz": np.array([r.fmax_mhz for r in results], float),
        "fmax_at_voltage_mhz": np.array([r.fmax_at_voltage_mhz for r in results], float),
        "voltage_v": np.array([r.voltage_v for r in results], float),
        "peak_tops": np.array([r.peak_tops for r in results], float),
        "vt_delay_factor": np.array([r.details["vt"]["delay_factor"] for r in results], float),
        "runaway": np.array([r.tj_c is None for r in results], bool),
        "ppa_bad": np.array([bool(ppa_only_reasons(r)) for r in results], bool),
    }
    for k in ("power_w", "tj_c", "power_density_w_mm2"):
        out[k] = np.array([np.nan if getattr(r, k) is None else getattr(r, k) for r in results], float)
    for part in POWER_PARTS:
        out[f"power_{part}_w"] = np.array([r.power_breakdown_w.get(part) or 0.0 for r in results], float)
    for part in results[0].area_breakdown_mm2:
        out[f"area_{part}_mm2"] = np.array([r.area_breakdown_mm2[part] for r in results], float)
    return out


def recost_columns(r: Any, samples: dict[str, np.ndarray], n: int) -> dict[str, np.ndarray]:
    """One workload's estimate ``r`` of one design re-costed under ``n`` samples of the assumptions
    (ppa.recost), as the columns :func:`ppa_columns` gives (one element per sample)."""
    c = recost(r.details["terms"], samples, n)
    out = {
        k: c[k]
        for k in (
            "area_mm2",
            "fmax_mhz",
            "fmax_at_voltage_mhz",
            "voltage_v",
            "power_w",
            "tj_c",
            "power_density_w_mm2",
        )
    }
    out["peak_tops"] = np.full(n, r.peak_tops)
    out["vt_delay_factor"] = np.full(n, r.details["vt"]["delay_factor"])  # recost keeps the chosen cells
    out["runaway"] = c["runaway"]
    out["ppa_bad"] = c["runaway"] | c["density_violated"] | c["bandwidth_violated"]
    for part in POWER_PARTS:
        out[f"power_{part}_w"] = np.nan_to_num(c[f"power_{part}_w"], nan=0.0)
    return out


def aggregate(
    per_wl: list[dict[str, np.ndarray]],
    sims: list[dict[str, np.ndarray]],
    weights: np.ndarray,
    clock_mhz: np.ndarray,
) -> dict[str, np.ndarray]:
    """The mix's metrics (explore.evaluator's docstring) from each workload's PPA columns ``per_wl``
    and sim.perf totals ``sims`` (arrays of the same length), workload weights ``weights``."""
    P = len(clock_mhz)
    ops = np.zeros(P)
    energy = np.zeros(P)
    time_s = np.zeros(P)
    dense_time = np.zeros(P)
    util = np.zeros(P)
    dram_b = np.zeros(P)
    stall = np.full(P, -math.inf)
    tj = np.full(P, -math.inf)
    dens = np.full(P, -math.inf)
    runaway = np.zeros(P, bool)
    ppa_bad = np.zeros(P, bool)
    parts = {p: np.zeros(P) for p in POWER_PARTS}
    f_hz = clock_mhz * 1e6
    for c, sim, a in zip(per_wl, sims, weights, strict=True):
        t = sim["total_cycles"] / f_hz
        ops += a * 2.0 * sim["dense_macs"]
        time_s += a * t
        dense_time += a * sim["dense_total_cycles"] / f_hz
        stall = np.maximum(stall, sim["stall_fraction"])
        util += a * t * sim["utilization"]
        dram_b += a * sim["dram_bytes"]
        ppa_bad |= c["ppa_bad"]
        run = c["runaway"]
        runaway |= run
        known = sum(c[f"power_{p}_w"] for p in POWER_PARTS)  # a runaway design's leakage is 0 here
        energy += a * np.where(run, known, c["power_w"]) * t
        tj = np.maximum(tj, np.where(run, RUNAWAY_TJ_C, c["tj_c"]))
        dens = np.maximum(dens, np.where(run, math.inf, c["power_density_w_mm2"]))
        for p in POWER_PARTS:
            parts[p] += a * c[f"power_{p}_w"] * t
    last = per_wl[-1]
    W = float(np.sum(weights))
    out = {k: last[k].copy() for k in last if k.startswith("area_")}
    out.update(
        {
            "fmax_mhz": last["fmax_mhz"].copy(),
            "fmax_at_voltage_mhz": last["fmax_at_voltage_mhz"].copy(),
            "ppa_infeasible": ppa_bad.astype(float),
            "voltage_v": last["voltage_v"].copy(),
            "peak_tops": last["peak_tops"].copy(),
            "vt_delay_factor": last["vt_delay_factor"].copy(),
        }
    )
    out["power_w"] = energy / time_s
    for p in POWER_PARTS:
        out[f"power_{p}_w"] = parts[p] / time_s
    out["energy_per_inference_mj"] = energy / W * 1e3
    with np.errstate(divide="ignore", invalid="ignore"):
        out["perf_per_watt"] = np.where(runaway, 0.0, ops / energy / 1e12)
    out["effective_tops"] = ops / time_s / 1e12
    out["latency_ms"] = time_s / W * 1e3
    out["tj_c"] = tj
    # runaway has no density; report what the dynamic power alone gives, flagged by thermal_runaway
    out["power_density_w_mm2"] = np.where(np.isfinite(dens), dens, out["power_w"] / out["area_mm2"])
    out["stall_fraction"] = stall
    out["effective_speedup"] = dense_time / time_s
    out["utilization"] = util / time_s
    out["energy_per_mac_pj"] = energy / (ops / 2.0) * 1e12
    out["dram_bytes"] = dram_b / W
    out["thermal_runaway"] = runaway.astype(float)
    return out
