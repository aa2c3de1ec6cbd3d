"""The metrics table: one row per metric the tool optimises, compares, diffs or reports.

A row names the metric (the key of the evaluator's metrics dict), its unit, which way is better
(``maximize`` / ``minimize``), how many significant digits it is printed with, a label in words,
where it is computed (``source``: :data:`SOURCES`), whether a sweep may optimise it
(``objective``) and which config key makes the evaluator produce it (``requires``).

The views read their lists from here: :data:`OBJECTIVES` (explore.config: the objectives a study
may name, primary or secondary), :data:`ENTRY_METRICS` and :data:`TWIN_INPUTS` (explore.compare),
:data:`DIFF_METRICS` (explore.diff) and :data:`REPORT_METRICS` (explore.report.sections). Each view
keeps the order it prints in (best.json's keys, the report's tables, the diff's rows); every name
of a view is a row of :data:`METRICS` (checked when the module loads).

A new metric: its row here, the views it appears in, and the code that computes it (its ``source``:
explore.costing.aggregate for the mix's PPA figures, explore.evaluator for the others).
This module imports nothing of the project: it sits below explore.config in explore's one-way order.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Literal

Direction = Literal["maximize", "minimize"]

#: Where a metric is computed: ``costing`` (explore.costing.aggregate, the workload mix's PPA
#: figures), ``evaluator`` (explore.evaluator, the design point's columns and the cycle model's
#: figures), ``serving`` (explore.evaluator.SERVING_METRICS, the serving simulation), ``quality``
#: (explore.evaluator, the pruning-quality evidence), ``twins`` (explore.twins.TWIN_METRICS, against
#: the dense twins), ``detail`` (explore.diff_study, the per-layer re-evaluation of a study's design).
SOURCES = ("costing", "evaluator", "serving", "quality", "twins", "detail")
DIRECTIONS = ("maximize", "minimize")


@dataclass(frozen=True)
class Metric:
    """One metric: its key, unit ('' for a ratio or count), direction, printed significant digits,
    label, source (:data:`SOURCES`), whether a study may optimise it, and the config key that must
    be set for the evaluator to produce it (None: always produced)."""

    name: str
    unit: str
    direction: Direction
    digits: int
    label: str
    source: str
    objective: bool = False
    requires: str | None = None

    def render(self, value: float) -> str:
        """``value`` with the row's significant digits and its unit ('1.631 TOPS/W')."""
        text = f"{value:.{self.digits}g}"
        return f"{text} {self.unit}" if self.unit else text


def _m(
    name: str,
    unit: str,
    direction: Direction,
    label: str,
    source: str,
    *,
    objective: bool = False,
    requires: str | None = None,
    digits: int = 4,
) -> Metric:
    return Metric(name, unit, direction, digits, label, source, objective, requires)


_SERVING = "limits.p99_latency_ms"
#: What the TTFT / TPOT rows need: the serving limit and an LLM workload.
LLM_SERVING = "limits.p99_latency_ms with an LLM workload (llama*-prefill / -decode)"

#: Every metric, one row each.
METRICS: tuple[Metric, ...] = (
    _m(
        "perf_per_watt",
        "TOPS/W",
        "maximize",
        "effective TOPS/W on the weighted workload mix",
        "costing",
        objective=True,
    ),
    _m(
        "effective_tops",
        "TOPS",
        "maximize",
        "dense-equivalent operations per second",
        "costing",
        objective=True,
    ),
    _m("area_mm2", "mm^2", "minimize", "die area", "costing", objective=True),
    _m("power_w", "W", "minimize", "average power on the mix", "costing", objective=True),
    _m(
        "latency_ms",
        "ms",
        "minimize",
        "latency of one inference, weighted mean over the mix",
        "costing",
        objective=True,
    ),
    _m(
        "p99_latency_ms",
        "ms",
        "minimize",
        "p99 request latency of the serving simulation",
        "serving",
        objective=True,
        requires=_SERVING,
    ),
    _m(
        "energy_per_inference_mj",
        "mJ",
        "minimize",
        "energy of one inference, weighted mean over the mix",
        "costing",
        objective=True,
    ),
    _m("clock_mhz", "MHz", "maximize", "clock of the design point", "evaluator"),
    _m("fmax_mhz", "MHz", "maximize", "highest clock the design's critical stage meets", "costing"),
    _m("fmax_at_voltage_mhz", "MHz", "maximize", "fmax at the voltage chosen for the clock", "costing"),
    _m("voltage_v", "V", "minimize", "supply voltage that meets the clock", "costing"),
    _m(
        "vt_delay_factor",
        "",
        "maximize",
        "the logic cells' threshold-voltage flavour as its delay factor: 1 rvt, "
        "0.79 lvt, 0.66 slvt (ppa.references VT_FLAVOURS; higher leaks less)",
        "costing",
    ),
    _m("tj_c", "C", "minimize", "junction temperature, hottest workload", "costing"),
    _m("power_density_w_mm2", "W/mm^2", "minimize", "power density, hottest workload", "costing"),
    _m("stall_fraction", "", "minimize", "share of cycles stalled on memory, worst workload", "costing"),
    _m("utilization", "", "maximize", "share of the array's MAC slots doing work", "costing"),
    _m("dram_bytes", "B", "minimize", "DRAM traffic of one inference", "costing"),
    _m("effective_speedup", "", "maximize", "sparse against dense kernels on the same hardware", "costing"),
    _m("ideal_speedup", "", "maximize", "the effective speedup's bound without stalls", "evaluator"),
    _m("speedup_vs_dense_design", "", "maximize", "latency of the iso-array dense twin / latency", "twins"),
    _m("speedup_vs_iso_area_dense", "", "maximize", "latency of the iso-area dense twin / latency", "twins"),
    _m(
        "perf_per_watt_vs_dense_design", "", "maximize", "perf_per_watt / the iso-array dense twin's", "twins"
    ),
    _m("area_vs_dense_design", "", "minimize", "area / the iso-array dense twin's", "twins"),
    _m(
        "p99_latency_lo_ms",
        "ms",
        "minimize",
        "low end of the p99's 95 % interval across arrival seeds",
        "serving",
        requires=_SERVING,
    ),
    _m(
        "p99_latency_hi_ms",
        "ms",
        "minimize",
        "high end of the p99's 95 % interval across arrival seeds",
        "serving",
        requires=_SERVING,
    ),
    _m(
        "p95_latency_ms",
        "ms",
        "minimize",
        "p95 request latency of the serving simulation",
        "serving",
        requires=_SERVING,
    ),
    _m("ttft_p99_ms", "ms", "minimize", "p99 time to first token", "serving", requires=LLM_SERVING),
    _m("tpot_p99_ms", "ms", "minimize", "p99 time per output token", "serving", requires=LLM_SERVING),
    _m(
        "quality_delta",
        "(fraction)",
        "minimize",
        "pruning quality loss at equal latency",
        "quality",
        requires="limits.max_quality_delta",
    ),
    _m("total_cycles", "cycles", "minimize", "cycles of one inference, weighted sum over the mix", "detail"),
    _m("fallback_fraction", "", "minimize", "share of MACs on the dense fallback, worst workload", "detail"),
)

#: name -> row.
BY_NAME: dict[str, Metric] = {m.name: m for m in METRICS}

#: The objectives a study may name (primary or secondary): name -> Optuna direction.
OBJECTIVES: dict[str, str] = {m.name: m.direction for m in METRICS if m.objective}
#: The primary objective when the config names none (explore.config.Objectives).
DEFAULT_PRIMARY = "perf_per_watt"

#: What each entry of best.json's ``comparison`` carries, in its key order (explore.compare.entry).
ENTRY_METRICS = (
    "latency_ms",
    "p99_latency_ms",
    "energy_per_inference_mj",
    "area_mm2",
    "power_w",
    "perf_per_watt",
    "effective_tops",
)
#: The metrics explore.twins.twin_metrics reads of a design and of its twins (explore.compare).
TWIN_INPUTS = ("latency_ms", "perf_per_watt", "area_mm2", "energy_per_inference_mj")
#: Design-level metrics ``sparsepe diff`` compares, in the order it prints them (explore.diff).
DIFF_METRICS = (
    "total_cycles",
    "latency_ms",
    "stall_fraction",
    "utilization",
    "fallback_fraction",
    "effective_speedup",
    "energy_per_inference_mj",
    "power_w",
    "area_mm2",
    "fmax_mhz",
    "tj_c",
    "power_density_w_mm2",
    "p99_latency_ms",
    "p95_latency_ms",
    "ttft_p99_ms",
    "tpot_p99_ms",
    "quality_delta",
    "perf_per_watt",
    "effective_tops",
    "dram_bytes",
)
#: Metrics the report shows for a design wherever they exist, in this order (explore.report.sections).
REPORT_METRICS = (
    "perf_per_watt",
    "effective_tops",
    "power_w",
    "area_mm2",
    "clock_mhz",
    "fmax_at_voltage_mhz",
    "voltage_v",
    "vt_delay_factor",
    "tj_c",
    "power_density_w_mm2",
    "stall_fraction",
    "speedup_vs_dense_design",
    "speedup_vs_iso_area_dense",
    "perf_per_watt_vs_dense_design",
    "area_vs_dense_design",
    "effective_speedup",
    "ideal_speedup",
    "fallback_fraction",
    "latency_ms",
    "p99_latency_ms",
    "p99_latency_lo_ms",
    "p99_latency_hi_ms",
    "p95_latency_ms",
    "ttft_p99_ms",
    "tpot_p99_ms",
    "energy_per_inference_mj",
    "quality_delta",
)

#: Every view by name (the contract test walks them).
VIEWS: dict[str, tuple[str, ...]] = {
    "objectives": tuple(OBJECTIVES),
    "entry": ENTRY_METRICS,
    "twin_inputs": TWIN_INPUTS,
    "diff": DIFF_METRICS,
    "report": REPORT_METRICS,
}


def units(names: tuple[str, ...]) -> dict[str, str]:
    """name -> unit of the rows ``names``."""
    return {n: BY_NAME[n].unit for n in names}


def _check_table() -> None:
    """Names unique, directions and sources known, every view's names rows of the table."""
    if len(BY_NAME) != len(METRICS):
        raise ValueError("explore.metrics: a metric name appears twice in METRICS")
    for m in METRICS:
        if m.direction not in DIRECTIONS or m.source not in SOURCES or m.digits < 1:
            raise ValueError(f"explore.metrics: row {m.name!r} has a bad direction, source or digits")
    for view, names in VIEWS.items():
        unknown = [n for n in names if n not in BY_NAME]
        if unknown or len(set(names)) != len(names):
            raise ValueError(
                f"explore.metrics: view {view!r} names {unknown or 'a metric twice'} (not one row each)"
            )


_check_table()
