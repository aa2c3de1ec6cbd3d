"""Published accelerator silicon against the PPA model: the chips of explore.validation.published_chips
(TPU v1, Eyeriss v1, the NVDLA configurations, TPU v4i's bf16 MXUs and the A100's INT8 tensor-core
throughput), each configured from its published architecture only and costed with
ppa.model.estimate. One constant is fitted to one of these chips: the fixed control block
(ppa.model.CONTROL_FIXED_TRANSISTORS) to NVDLA nv_small, whose row is shown as its fit anchor; every
other figure is held out. Sources are in docs/published-silicon.md.

Scope of each published figure: "chip" (the whole die or package), "block" (the accelerator block
without DRAM PHY; NVDLA's synthesis areas include its memories), "array" (the MAC array only),
"slope" (a per-MAC increment from differences between published rows). The model's figure is taken
at the same scope (``model_figures``). Power is on-die power (DRAM device power excluded) at the
default activity (every PE busy), so model TOPS/W is peak.

Used by ``sparsepe validate`` (explore.validation) and bench/bench_silicon.py.
"""

from __future__ import annotations

import os
from dataclasses import replace

from explore.validation.published_chips import chips
from explore.validation.row import Row, fit_row
from hw.errors import InputError
from ppa.design import DesignPoint, WorkloadActivity
from ppa.model import default_traffic, estimate

__all__ = [
    "CLOCK_POWER_FIGURES",
    "CONFIGURED_FIGURES",
    "SKIPPED",
    "chips",
    "estimate_with_fallback",
    "lsq_slope",
    "measured_activity",
    "model_figures",
    "silicon_rows",
]

#: figures whose model value depends on the clock power (ppa.model.clock_energy_per_ff_cycle_pj)
CLOCK_POWER_FIGURES = ("power_w", "tops_per_w")


def measured_activity(design: DesignPoint, macs: int, macs_per_s: float) -> WorkloadActivity:
    """One second of the chip at its clock, its PEs busy for the fraction of cycles that gives the
    published throughput, with the model's default traffic per busy cycle (ppa.model.default_traffic)."""
    if design.clock_mhz is None:
        raise InputError("a measured activity needs the design's clock (clock_mhz)", where="clock_mhz")
    cycles = design.clock_mhz * 1e6
    busy = macs_per_s / (macs * cycles)
    rd, wr, dram_b = default_traffic(design, cycles * busy)
    return WorkloadActivity(
        cycles=cycles,
        effective_macs=macs_per_s,
        pe_busy_fraction=busy,
        sram_read_bytes=rd,
        sram_write_bytes=wr,
        dram_bytes=dram_b,
    )


#: The 7 nm matrix-unit TOPS/W rows of published-figures §8b that are NOT configured, and why
SKIPPED = (
    (
        "IBM 7 nm 4-core AI chip (JSSC 2022: INT4 104.9 TOPS at 16.9 TOPS/W, HFP8 26.2 TFLOPS at 3.58 TFLOPS/W; "
        "ISCA 2021 RaPiD: 36 mm^2, TOPS/W 'at nominal voltage')",
        "MAC count, clock and voltage of the efficiency point are not published in the abstracts read "
        "(104.9 TOPS = 32,768 x 2 x 1.6 GHz is a factorisation, not a published configuration), and the "
        "TOPS/W is chip scope (scratchpads, ring, throttling)",
    ),
    (
        "Samsung 4 nm NPU (JSSC 2023: INT8 11.59 TOPS/W, 3.45 TOPS/mm^2, 8k MACs)",
        "no clock or voltage published; 4 nm is outside ppa.tech's nodes",
    ),
    (
        "Samsung 5 nm NPU (ISCA 2021: 13.6 TOPS/W)",
        "MAC count, clock and voltage not published; zero skipping",
    ),
    (
        "MediaTek 7 nm (ISSCC 2020 7.1: 3.4-13.3 TOPS/W, 3.6 TOPS)",
        "MAC count, clock and voltage not published",
    ),
)


def estimate_with_fallback(design: DesignPoint, activity: WorkloadActivity | None = None):
    """ppa.model.estimate; when the OpenSTA flow cannot map the design's array column to the Liberty
    library (Yosys 0.23's ABC crashed on the bf16 dense column with ppa.timing.sta's first two scripts;
    the third, ``buffer -p``, maps it), the design is timed on the generic
    logical-effort path instead (SPARSEPE_STA=off) and the result says so in its notes. Areas do
    not depend on the timing path."""
    try:
        return estimate(design, activity)
    except InputError as e:
        if e.where != "ppa.timing.sta":
            raise
        old = os.environ.get("SPARSEPE_STA")
        os.environ["SPARSEPE_STA"] = "off"
        try:
            res = estimate(design, activity)
        finally:
            if old is None:
                del os.environ["SPARSEPE_STA"]
            else:
                os.environ["SPARSEPE_STA"] = old
        res.notes.append(f"OpenSTA mapping failed ({str(e)[:90]}...): timed on the generic path")
        return res


def model_figures(res) -> dict:
    a = res.area_breakdown_mm2
    p = res.power_breakdown_w
    on_die = None if res.power_w is None else res.power_w - p["dram"]
    return {
        "peak_tops": res.peak_tops,
        "area_mm2": res.area_mm2,
        "block_area_mm2": res.area_mm2 - a["phy"],
        "array_area_mm2": a["pe_array"] + a["decoders"],
        "mxu_area_mm2": a["pe_array"] + a["decoders"],
        "power_w": on_die,
        "tops_per_w": None if not on_die else res.peak_tops / on_die,
    }


def lsq_slope(xs, ys) -> tuple[float, float]:
    """Least-squares (slope, intercept) of ys on xs."""
    n = len(xs)
    mx, my = sum(xs) / n, sum(ys) / n
    sxx = sum((x - mx) ** 2 for x in xs)
    sxy = sum((x - mx) * (y - my) for x, y in zip(xs, ys, strict=True))
    return sxy / sxx, my - sxy / sxx * mx


#: published figures that are configured, not predicted (a chip's peak TOPS is its MAC count x clock)
CONFIGURED_FIGURES = ("peak_tops",)
_UNITS = {
    "peak_tops": "TOPS",
    "area_mm2": "mm^2",
    "block_area_mm2": "mm^2",
    "array_area_mm2": "mm^2",
    "mxu_area_mm2": "mm^2",
    "power_w": "W",
    "tops_per_w": "TOPS/W",
    "area_per_mac_um2": "um^2 per MAC",
}


def silicon_rows(liberty: dict | None = None) -> list[Row]:
    """One row per published figure of each chip (``chips``), and the NVDLA per-MAC area slope.
    Held out: every predicted figure except a fit anchor (``Chip.fits``); not a check:
    a chip's peak TOPS (configured) and the figures whose reason says the scopes differ."""
    rows: list[Row] = []
    nvdla256 = []
    for chip in chips():
        design = replace(chip.design, **liberty) if liberty else chip.design
        act = (
            measured_activity(design, chip.macs, chip.measured_macs_per_s)
            if chip.measured_macs_per_s is not None
            else None
        )
        res = estimate_with_fallback(design, act)
        m = model_figures(res)
        for fig, (pub, scope, note) in chip.published.items():
            why = chip.reasons.get(fig, "")
            scope_only = why.startswith("scope, not a model check")
            held = fig not in CONFIGURED_FIGURES and not scope_only
            got = m[fig]
            q = f"{chip.name}: {fig} ({scope} scope)"
            src = f"{note}; docs/published-silicon.md"
            if fig in chip.fits:
                rows.append(
                    fit_row(
                        "silicon", q, chip.design.node_nm, got, pub, _UNITS.get(fig, ""), src, chip.fits[fig]
                    )
                )
                continue
            row = Row("silicon", q, chip.design.node_nm, got, pub, _UNITS.get(fig, ""), src, held_out=held)
            if fig in CONFIGURED_FIGURES:
                row.reason = "configured (MAC count x clock), not predicted: not a check"
            elif scope_only or not row.within:
                row.reason = why or "no reason recorded"
            rows.append(row)
        if chip.macs and chip.cbuf_kb == 256:
            nvdla256.append((chip.macs, m["block_area_mm2"], chip.published["block_area_mm2"][0]))
    if len(nvdla256) >= 2:
        xs = [x[0] for x in nvdla256]
        pub_s, _ = lsq_slope(xs, [x[2] for x in nvdla256])
        mod_s, _ = lsq_slope(xs, [x[1] for x in nvdla256])
        row = Row(
            "silicon",
            f"NVDLA 256 KB rows ({', '.join(map(str, xs))} MACs): area per MAC (slope scope)",
            28,
            mod_s * 1e6,
            pub_s * 1e6,
            _UNITS["area_per_mac_um2"],
            "[D] least-squares slope of the nvdla primer's areas over MACs",
            held_out=True,
        )
        if not row.within:
            row.reason = (
                "the per-MAC increment covers everything NVDLA scales with the MAC count (CMAC, CACC adders "
                "and buffers, CSC data paths, wider SDP); the model's is the MAC array and the CACC SRAM"
            )
        rows.append(row)
    return rows
