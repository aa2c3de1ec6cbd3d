"""The PPAResult of :func:`ppa.model.estimate` from its phases: the headline figures, and the details
explore/ and ppa.recost read (``details["terms"]``: the parts of the estimate that scale with an
assumption, at the values in force)."""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any

from hw.params import PEParams
from ppa import activity, phy, tech
from ppa.activity import PEActivity
from ppa.array_cost import ArrayFacts, ArrayShape
from ppa.clock_gating import ClockGating
from ppa.design import AreaBreakdown, DesignPoint, OperatingPoint, Power, PPAResult, Thermal, Workload
from ppa.dram import DramType
from ppa.liberty.energy import LibraryEnergy
from ppa.override import in_force
from ppa.phy import PhyType
from ppa.power import clock_energy_per_ff_cycle_pj
from ppa.sram import SramCost
from ppa.timing.stage import CLOCK_UNCERTAINTY_FRACTION, WIRE_ALLOWANCE
from ppa.vector_cost import VectorLaneCost


@dataclass(frozen=True)
class Phases:
    """What :func:`result_of` reads: the design, its PE, array facts, shape and activity, and the
    estimate's phases."""

    design: DesignPoint
    p: PEParams
    facts: ArrayFacts
    shape: ArrayShape
    act: PEActivity
    trace: Any  # what estimate was given: a PETrace, TraceRecipe or TraceMix (ppa.activity), or None
    depth: int
    op: OperatingPoint
    ar: AreaBreakdown
    wl: Workload
    pw: Power
    tm: Thermal


@dataclass(frozen=True)
class Parts:
    """The parts of the area and power phases that ppa.design types as ``object``, with their types
    (ppa.model.area_of and ppa.power.power_of build them)."""

    vlane: VectorLaneCost | None
    ph: PhyType
    lib_e: LibraryEnergy | None
    gate: ClockGating
    dd: DramType
    largest: SramCost | None


def parts_of(ar: AreaBreakdown, pw: Power) -> Parts:
    """The typed :class:`Parts` of the area and power phases."""
    vlane, ph, lib_e, gate, dd, largest = ar.vlane, ar.ph, pw.lib_e, pw.gate, pw.dd, pw.largest
    assert vlane is None or isinstance(vlane, VectorLaneCost)
    assert isinstance(ph, PhyType) and isinstance(gate, ClockGating) and isinstance(dd, DramType)
    assert lib_e is None or isinstance(lib_e, LibraryEnergy)
    assert largest is None or isinstance(largest, SramCost)
    return Parts(vlane, ph, lib_e, gate, dd, largest)


def _design_details(x: Phases, parts: Parts) -> dict:
    """The design point, its PE kind and array size (details)."""
    design, p, vlane = x.design, x.p, parts.vlane
    R, C = design.rows, design.cols
    return {
        "node_nm": design.node_nm,
        "sparse": design.sparse,
        "pe": (f"{p.n}:{p.m}" + ("+dense" if design.dense_path else "")) if design.sparse else "dense",
        "kind": design.kind,
        "dataflow": design.dataflow,
        "cost_dataflow": design.cost_dataflow,
        "dense_path": design.dense_path,
        "double_buffer": design.double_buffer,
        "effective_macs_per_pe_cycle": x.wl.mac_per_pe_cycle,
        "multipliers_per_pe": x.shape.multipliers,
        "dynamic_breakdown_w": {
            "pe": x.pw.pe_dyn_w,
            "edge_registers": x.pw.edge_dyn_w,
            "weight_load": x.pw.load_w,
        },
        "vector_unit": {
            "lanes": x.ar.lanes,
            "width_bits": design.effective_vector_bits,
            "lane_transistors": vlane.transistors if vlane else 0,
            "energy_pj_per_op": dict(vlane.energy_pj) if vlane else {},
            "method": "synthesised hw.vector.VectorLane (ppa.vector_cost)",
        },
        "edge_register_bits": x.facts.edge_bits(p, R, C),
        "logic_depth": x.depth,
        "array_transistors": x.ar.tr_total,
        "array_flip_flops": x.pw.ffs,
        "pe_transistors": x.facts.pe_transistors,
    }


def _switching_details(x: Phases) -> dict:
    """The gate delay, the toggle energy and the PE's toggles (details)."""
    act = x.act
    return {
        "gate_delay_ps": x.op.nd.gate_delay_ps,
        "toggle_energy_fj": x.pw.e_t * 1e3,
        "toggles_per_pe_cycle": act.toggles,
        "toggle_eq_per_pe_cycle": act.gate_energy + act.ff_net_energy,
        "switching_energy": {
            "method": "zero-delay toggles of the generic netlist at their nets' osu018 cell "
            "energies (ppa.liberty.gates)",
            "sizing_factor": x.pw.sizing_factor,
            "sizing_source": x.pw.sizing_source,
        },
        "theta_ja_k_per_w": x.tm.theta,
    }


def _memory_details(x: Phases, parts: Parts) -> dict:
    """The DRAM and the SRAM's energy source (details)."""
    dd, largest = parts.dd, parts.largest
    return {
        "dram": dd.name,
        "dram_gb_per_s": x.pw.dram_bw,
        "dram_pj_per_bit": dd.pj_per_bit,
        "dram_energy_source": dd.energy_source,
        "dram_total_pj_per_bit": dd.pj_per_bit + parts.ph.pj_per_bit,
        "sram_model": x.design.sram_model,
        "sram_read_pj_per_64b": largest.read_pj * 64 / largest.word_bits if largest is not None else None,
    }


def _point_details(x: Phases, parts: Parts) -> dict:
    """The trace, the timing path, the voltages and FO4s, the cells' flavour, the PHYs and the die's
    minimum (details)."""
    design, op, nd, macros, ph = x.design, x.op, x.op.nd, x.ar.macros, parts.ph
    return {
        "activity_trace": activity.trace_label(x.trace),
        "timing_source": ("liberty+sta" if op.timing.source == "sta" else "generic"),
        "sram_in_range": all(c.in_range for _, c in macros) if macros else None,
        "effective_macs_per_s": x.wl.eff_macs / x.wl.runtime_s,
        "vmin_v": tech.vmin_v(design.node_nm),
        "sram_vmin_v": tech.sram_vmin_v(design.node_nm),
        "sram_voltage_v": x.ar.v_sram,
        "fo4_ps": nd.fo4_ps,
        "node_correction": nd.node_correction,
        "realised_path_factor": nd.gate_delay_ps
        / nd.fo4_ps,  # timing FO4 / node FO4 (ppa.tech FO4_ANCHORS_NM)
        "sram_macros_kb": {name: c.kb for name, c in macros},
        "vt": {
            "flavour": op.vt,
            "choice": op.vt_choice,
            "delay_factor": op.flavour.delay,
            "leakage_factor": op.flavour.leakage,
            "energy_factor": op.flavour.energy,
            "source": "ppa.references VT_FLAVOURS: ASAP7 TT 0.7 V LVT / SLVT against RVT cells, every logic "
            "cell in the flavour",
        },
        "phy": {
            "type": ph.name,
            "units": design.dram_units,
            "area_mm2_each": ph.area_mm2,
            "pj_per_bit": ph.pj_per_bit,
            "static_w_each": ph.static_w,
            "source": ph.source,
        },
        "min_die_mm2": x.ar.min_die,
        "die_phy_limited": x.ar.die_phy_limited,
    }


def recost_terms(x: Phases, parts: Parts) -> dict:
    """What ppa.recost re-composes the estimate from under other assumption values: the parts that
    scale with an assumption, at the values in force here (ppa.override)."""
    design, op, ar, wl, pw = x.design, x.op, x.ar, x.wl, x.pw
    return {
        "overrides": in_force(),
        "node_nm": design.node_nm,
        "clock_mhz": op.clk,
        "clock_given": design.clock_mhz is not None,
        "voltage_v": op.v,
        "voltage_forced": design.voltage_v is not None,
        "cycle_fo4": op.timing.cycle_fo4,
        "vt_delay": op.flavour.delay,
        "sram_voltage_v": ar.v_sram,
        "sram_voltage_forced": design.sram_voltage_v is not None,
        "logic_mm2": ar.pe_mm2 + ar.dec_mm2 + ar.vec_mm2,
        "mm2_per_transistor": ar.a_t,
        "logic_transistors": ar.tr_total + ar.vec_tr,
        "sram_mm2": ar.sram_mm2,
        "dram": design.dram,
        "dram_units": design.dram_units,
        "min_die_mm2": ar.min_die,
        "dyn_w": pw.dyn_w,
        "vec_w": pw.vec_w,
        "clk_w": pw.clk_w,
        "sram_w": pw.sram_w,
        "sram_leak_ref_w": pw.sram_leak_ref,
        "logic_leak_ref_w": x.tm.logic_leak_ref,
        "dram_bytes_per_s": wl.dram_b / wl.runtime_s,
        "theta_ja": design.theta_ja,
        "cooling": design.cooling,
        "t_ambient_c": design.t_ambient_c,
        "tj_max_c": design.tj_max_c,
        "bandwidth_infeasible": pw.dram_bw > parts.dd.gb_per_s * design.dram_units,
    }


def _clock_energy_details(x: Phases, parts: Parts) -> dict:
    """Where the clock energy per flip-flop comes from: the Liberty library, else osu018's figures."""
    nd, lib_e = x.op.nd, parts.lib_e
    if lib_e is not None:
        return {
            "source": "liberty",
            "library": lib_e.library,
            "toggles_per_ff_cycle": lib_e.clock_toggles_per_ff_cycle,
            "ff_extra_toggles": lib_e.ff_extra_toggles,
            "pj_per_ff_cycle": clock_energy_per_ff_cycle_pj(nd, lib_e),
            "library_figures": lib_e.details(),
        }
    return {
        "source": "osu018 figures (no library used)",
        "toggles_per_ff_cycle": tech.CLOCK_TOGGLES_PER_FF_CYCLE,
        "ff_extra_toggles": tech.FF_EXTRA_TOGGLES,
        "pj_per_ff_cycle": clock_energy_per_ff_cycle_pj(nd),
    }


def _control_clock_timing_details(x: Phases, parts: Parts) -> dict:
    """The control block, the STA, the clock gating and energy, and the timing (details)."""
    design, op, ar, pw = x.design, x.op, x.ar, x.pw
    timing = op.timing
    return {
        "control_allowance": phy.CONTROL_ALLOWANCE,
        "control_fixed": {"transistors": ar.ctrl_tr, "area_mm2": ar.ctrl_mm2},
        "sta": None if timing.sta is None else timing.sta.details() | {"stage": timing.stage},
        "clock_gating": design.clock_gating,
        "clock_gating_detail": parts.gate.details() | {"clock_w_ungated": pw.ffs * pw.e_ff * 1e-12 * op.f_hz},
        "clock_energy": _clock_energy_details(x, parts),
        "timing": {
            "source": timing.source,
            "stage": timing.stage,
            "cycle_fo4": timing.cycle_fo4,
            "fo4_ps_at_point": op.nd.gate_delay_ps * op.flavour.delay,
            "cycle_time_ps_at_fmax": 1e6 / op.f_at_v,
            "silicon_limit_mhz": op.silicon_mhz,
            "wire_allowance": WIRE_ALLOWANCE,
            "clock_uncertainty_fraction": CLOCK_UNCERTAINTY_FRACTION,
        },
    }


def details_of(x: Phases, parts: Parts) -> dict:
    """``PPAResult.details``: its sections in their order."""
    return {
        **_design_details(x, parts),
        **_switching_details(x),
        **_memory_details(x, parts),
        **_point_details(x, parts),
        "terms": recost_terms(x, parts),
        **_control_clock_timing_details(x, parts),
    }


def result_of(
    design: DesignPoint,
    p,
    facts,
    shape,
    act,
    trace,
    depth: int,
    op: OperatingPoint,
    ar: AreaBreakdown,
    wl: Workload,
    pw: Power,
    tm: Thermal,
    notes: list[str],
    reasons: list[str],
) -> PPAResult:
    """The PPAResult of :func:`ppa.model.estimate` from its phases, with the details explore/ and
    ppa.recost read."""
    x = Phases(design, p, facts, shape, act, trace, depth, op, ar, wl, pw, tm)
    R, C = design.rows, design.cols
    peak_tops = 2 * R * C * wl.mac_per_pe_cycle * op.f_hz / 1e12
    return PPAResult(
        design=design,
        area_mm2=ar.area,
        area_breakdown_mm2={
            "pe_array": ar.pe_mm2,
            "decoders": ar.dec_mm2,
            "sram": ar.sram_mm2,
            "vector": ar.vec_mm2,
            "phy": ar.phy_mm2,
            "other": ar.other_mm2,
        },
        fmax_mhz=op.f_top,
        fmax_at_voltage_mhz=op.f_at_v,
        voltage_v=op.v,
        clock_mhz=op.clk,
        power_w=tm.total,
        power_breakdown_w={
            "dynamic": pw.dyn_w,
            "clock": pw.clk_w,
            "leakage": tm.leak_w,
            "sram": pw.sram_w,
            "vector": pw.vec_w,
            "phy": pw.phy_w,
            "dram": pw.dram_w,
        },
        energy_per_mac_pj=tm.epm,
        peak_tops=peak_tops,
        tj_c=tm.th.tj_c,
        power_density_w_mm2=tm.density,
        feasible=not reasons,
        infeasible_reasons=reasons,
        notes=notes,
        details=details_of(x, parts_of(ar, pw)),
    )
