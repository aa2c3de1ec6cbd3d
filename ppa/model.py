"""One design point -> area, fmax / voltage, power, energy per MAC, thermal feasibility.

Everything a number rests on comes from the generated hardware: transistor counts, flip-flops and
logic depth from Yosys on hw/'s Verilog (ppa.synth), switching activity from the gate netlist on
data traces (ppa.activity), scaled to the node and voltage with Stillmaker & Baas (ppa.tech). The
design point, the workload activity explore/ passes in and the result are ppa.design's.

Area (mm^2)
- pe_array: the array's cells and edge registers, from transistor counts x area per transistor at
  the node (calibrated on Horowitz's 8-bit multiplier at 45 nm, so the standard-cell placement
  density of that anchor is included; flip-flops are costed the same way). Array transistors
  are row-resolved, from synthesised columns of each PE kind's own array (ppa.array_cost, whose
  docstring gives the formula and its check against whole-array synthesis).
- decoders: the N:M metadata decoders (one per stationary code, R x C), synthesised standalone;
  reported separately and subtracted from pe_array. The dense PE has none.
- sram: ppa.sram (CACTI 7 fit) at the SRAM's own voltage (ppa.tech.sram_voltage: its own rail at
  max(SRAM Vmin, logic V) unless ``sram_voltage_v`` is given). One macro of ``sram_kb``, or, when
  ``sram_buffers_kb`` = (ifmap, filter, ofmap) KB is given (the split sim/ uses), three macros,
  each costed on its own (area, leakage, energy per access).
- phy: ppa.phy, the DRAM PHY + controller of each of the ``dram_units`` stacks/channels
  (bump/pad-limited, node-independent). A die is at least the square whose perimeter holds the
  PHYs; when that binds the difference is added to ``other`` and reported (a note and
  ``details.die_phy_limited``), never silently.
- other: stated allowances [A] of 10 % of the core (pe_array + decoders + sram + vector + the
  control block) for global wiring, clock tree and I/O periphery, and 5 % for control that grows
  with the core (ppa.phy.CONTROL_ALLOWANCE); plus the fixed control block
  (:data:`CONTROL_FIXED_TRANSISTORS`, fitted on NVDLA nv_small: DMA, sequencers, configuration
  registers, which do not scale with the array), priced like the array's logic and leaking like it.
  Every PE kind is costed this way from its own array RTL (hw.array.SparseArray(kind=...)):
  ``sparse`` (N:M PE), ``dense`` (``sparse=False``: the dense array, no decoders) and
  ``dense_path`` (``dense_path=True``: M multipliers, M/N decoders per PE); ``dataflow="os"`` from
  the output-stationary array (a uniform-cell model, ppa.array_cost), ``"is"`` as WS. The terms
  live in ppa.array_cost; every kind and dataflow is checked against whole-array synthesis at
  2x2, 4x4 and 8x8 (tests/ppa/test_array_cost.py).

Frequency (ppa.timing.stage, :func:`operating_point`): the deepest register-to-register stage of
the design, in FO4 delays, from static timing analysis on a Liberty library (ppa.timing.sta:
Yosys maps to the library, timing-driven; OpenSTA times it; FO4 measured on the library): the
R-row column of the design's own array. cycle time = stage FO4 x FO4 of the target node and
voltage (ppa.tech gate_delay_ps) x (1 + wire allowance) / (1 - clock skew + jitter), both stated
assumptions in ppa.timing.stage. Without OpenSTA or a library, the generic path: the same
column's generic netlist, delay-mapped, timed by logical effort (ppa.timing.effort, one scale
fitted on one STA result), with a note. A requested clock selects the lowest voltage in the node's modelled range that meets it; above fmax at the
top of the range the design is infeasible (more --pipeline stages are the remedy). Without a
clock, the design runs at fmax at nominal voltage.

Power (W)
- dynamic: busy PE-cycles/s x toggle-equivalents per PE-cycle (gate-level simulation on the trace,
  each net's toggles weighted by its energy as a cell of the default library, ppa.liberty.gates:
  an XOR or a wide fan-out costs more than a NAND driving one gate; for a sparse design on a
  workload, the PE-cycle-weighted mix of its N:M layers' trace and its dense layers' trace on the
  fallback / dense path, ppa.activity.TraceMix; on the STA path the gates' share times the PE's
  sizing factor, ppa.liberty.sizing: its minimum-delay netlist against its area mapping) x energy
  per toggle-equivalent; plus the registers outside the cells (activation forwarding and skew, the OS weight
  bundle, the WS psum deskew), each at the toggle rate per bit of what it carries on the same
  trace, while busy; plus WS weight loading (R*R*C register bits written per tile, the mux toggle
  and the register toggle per changed bit; tiles from ``WorkloadActivity.weight_tiles``, else one
  per W_HOLD busy cycles). Double-buffered (``double_buffer``, hw.array): the shadow rows shift
  R(R+1)/2 words a column (row r only from the tile's word r on), the swap copies R*C words into
  the active set (both behind a multiplexer), and the column skew passes R words through c plain
  registers in column c. With a Liberty library (the STA path) a flip-flop output toggle costs
  its net's energy (the PE's: the load it drives; the edge registers': one toggle) plus the
  library's D- and Q-pin internal energy (``ff_extra_toggles``, ppa.liberty.energy;
  1.24 toggle-equivalents in osu018); without one, osu018's figure (ppa.tech.FF_EXTRA_TOGGLES).
  Parts in ``details["dynamic_breakdown_w"]`` (pe, edge_registers, weight_load).
- clock: every flip-flop of the array, every cycle, busy or idle (idle PEs pay their clock power),
  except, with clock gating (``clock_gating``, on by default), the weight-stationary weight,
  metadata and mode registers (hw.array: reset-less, enabled by w_load): they are clocked only on
  load edges (R per weight tile; double-buffered: the active set, on the one swap edge per tile),
  and each PE pays one clock-gating cell (ppa.clock_gating ICG_* figures,
  from ASAP7's ICGx1 and DFFHQNx1 tables; :class:`ClockGating`). The enable multiplexers the
  synthesised netlist keeps in front of those registers are still costed in area (a gated design
  would drop them for the ICG: about 2 % of a cell's transistors, not credited). With a Liberty library: the library's clock-pin internal energy,
  pin + wiring capacitance and clock-buffer tree per flip-flop, in its own toggle-equivalents
  (ppa.liberty.energy; 4.02 in osu018), x the node's toggle energy. Without one:
  CLOCK_TOGGLES_PER_FF_CYCLE toggle-equivalents (osu018's figure, ppa.tech). ``details["clock_energy"]``
  says which.
- leakage: logic transistors (ppa.tech, per node and voltage) plus the SRAM's CACTI leakage at the
  SRAM voltage, both at the junction temperature solved with ppa.thermal.
- sram / dram: bytes moved x energy per byte (ppa.sram read/write per 512-bit access at the SRAM
  voltage; ppa.dram).
- phy: DRAM bits moved x the PHY/controller energy per bit + the PHYs' static power (ppa.phy); on
  die, so it heats the die.
Default activity without a workload (stated in the output): every PE busy every cycle on the
seeded synthetic trace of ppa.activity; SRAM traffic per cycle: the R x M activations entering
the array read once, C partial sums written once, weights re-read once per 64 cycles (the
weight-stationary hold); DRAM traffic: one DRAM byte per 16 SRAM bytes (default reuse 16 [A]).

Energy per MAC: total power / effective MACs per second; a PE covers M reduction elements per
cycle (the sparse PE does N multiplies for the work of M dense MACs), so effective MACs per
busy PE-cycle = M (M*M/N for the dense-path PE in N:M mode, whose default trace is N:M).
peak_tops = 2 x R x C x that x clock (dense-equivalent operations).
"""

from __future__ import annotations

from ppa import activity, dram, phy, silicon_clock, sram, synth as _synth, tech, thermal, vector_cost
from ppa.array_cost import array_facts, array_shape
from ppa.clock_gating import ICGS_PER_PE, clock_gating
from ppa.design import (
    AreaBreakdown,
    DesignPoint,
    OperatingPoint,
    Power,
    PPAResult,
    Thermal,
    Workload,
    WorkloadActivity,
    fields_of,
)
from ppa.liberty import energy as liberty_energy
from ppa.override import assumed, in_force
from ppa.references import VT_CHOICES, vt_flavour
from ppa.timing import sta
from ppa.timing.stage import (
    CLOCK_UNCERTAINTY_FRACTION,
    GENERIC_TIMING_NOTE,
    WIRE_ALLOWANCE,
    StageTiming,
    cycle_time_ps,
    resolve_liberty,
    stage_timing,
)

OTHER_ALLOWANCE = 0.10  # [A] global wiring, clock tree, I/O periphery, fraction of the rest
#: [D] fixed control block: DMA engines, sequencers, configuration registers, host interface and the
#: small buffers of the post-processing units, the part of an accelerator that does not scale with
#: its array. Fitted on NVDLA nv_small (nvdla/doc primer "Example Area and Performance": 64 INT8
#: MACs, 128 KB convolution buffer, 0.91 mm^2 at 28 nm, synthesis area with memories): the
#: published area minus the model's array, CBUF, 4 vector lanes and allowances, 0.557 mm^2 of
#: core logic at 28 nm = 3.19 M transistors; the other NVDLA rows, Eyeriss and the rest of
#: ``sparsepe validate --group silicon`` are its held-out checks
CONTROL_FIXED_TRANSISTORS = 3.19e6
DEFAULT_DRAM_REUSE = 16.0  # [A] SRAM bytes served per DRAM byte, without a workload
DEFAULT_SPARSITY_NOTE = (
    "no workload given: every PE busy every cycle on a seeded synthetic 2:4-pruned trace "
    "(post-ReLU activations, weights held 64 cycles); SRAM reads R*M activations + weights/64 and "
    "writes C partial sums per cycle; DRAM traffic = SRAM traffic / 16 (default reuse)"
)


def tools_provenance(design: DesignPoint) -> dict:
    """The tools that cost ``design`` here: the Yosys (native or wheel, with version) and, for the
    timing, OpenSTA + the Liberty file (name, digest) or the generic path. Results in the caches
    are keyed by exactly these, so a cached result used now was built by them."""
    lib = resolve_liberty(design)
    out = {"yosys": _synth.yosys_id()}
    if lib is None:
        out["timing"] = "generic gate-depth path (no OpenSTA/Liberty)"
    else:
        out.update(sta.tools(lib))
        out["timing"] = f"OpenSTA on {lib.describe()}"
    return out


# ------------------------------------------------------------------------------------------------
# frequency / voltage
# ------------------------------------------------------------------------------------------------


def _cycle_fo4(depth: int, cycle_fo4: float | None) -> float:
    if cycle_fo4 is None:
        raise ValueError("a stage's cycle_fo4 is needed (ppa.timing.stage.stage_timing)")
    return cycle_fo4


def fmax_mhz(
    depth: int, node_nm: int, voltage_v: float, *, cycle_fo4: float | None = None, vt: str = "rvt"
) -> float:
    """fmax of a stage of ``cycle_fo4`` FO4 (ppa.timing.stage.stage_timing; ``depth`` is informative)
    at the node and voltage: 1 / ppa.timing.stage.cycle_time_ps(cycle_fo4, FO4 of the node at that
    voltage), at most the clock published silicon of the node reaches at that voltage
    (ppa.silicon_clock.silicon_limit_mhz; 7 nm: TSMC's A72 chiplet moved along the alpha-power law).
    ``vt``: the cells' threshold-voltage flavour (ppa.references VT_FLAVOURS), a factor on the FO4; the silicon cap stays."""
    f = 1e6 / cycle_time_ps(
        _cycle_fo4(depth, cycle_fo4), tech.node(node_nm, voltage_v).gate_delay_ps * vt_flavour(vt).delay
    )
    cap = silicon_clock.silicon_limit_mhz(node_nm, voltage_v)
    return f if cap is None else min(f, cap)


def operating_point(
    depth: int,
    node_nm: int,
    clock_mhz: float | None,
    voltage_v: float | None = None,
    *,
    cycle_fo4: float | None = None,
    vt: str = "rvt",
):
    """(voltage, clock, fmax at that voltage, fmax at the top of the range, reason or None)."""
    cf = _cycle_fo4(depth, cycle_fo4)
    lo, hi = tech.voltage_range(node_nm)
    f_top = max(fmax_mhz(depth, node_nm, v, cycle_fo4=cf, vt=vt) for v in tech.voltage_grid(node_nm))
    if voltage_v is not None:
        f = fmax_mhz(depth, node_nm, voltage_v, cycle_fo4=cf, vt=vt)
        clk = f if clock_mhz is None else clock_mhz
        reason = (
            None
            if clk <= f * (1 + 1e-9)
            else f"clock {clk:.0f} MHz above fmax {f:.0f} MHz at the forced {voltage_v:g} V ({vt} cells)"
        )
        return voltage_v, clk, f, f_top, reason
    if clock_mhz is None:
        f_hi = fmax_mhz(depth, node_nm, hi, cycle_fo4=cf, vt=vt)
        return hi, f_hi, f_hi, f_top, None
    for v in tech.voltage_grid(node_nm):
        f = fmax_mhz(depth, node_nm, v, cycle_fo4=cf, vt=vt)
        if f >= clock_mhz:
            return v, clock_mhz, f, f_top, None
    f_hi = fmax_mhz(depth, node_nm, hi, cycle_fo4=cf, vt=vt)
    return (
        hi,
        clock_mhz,
        f_hi,
        f_top,
        (
            f"clock {clock_mhz:.0f} MHz above fmax {f_top:.0f} MHz at the maximum {hi:g} V of {node_nm} nm "
            f"(critical stage {cf:.1f} FO4, logic depth {depth}, {vt} cells); choose more --pipeline stages or a lower "
            "clock"
        ),
    )


# ------------------------------------------------------------------------------------------------
# the estimate
# ------------------------------------------------------------------------------------------------


def clock_energy_per_ff_cycle_pj(nd: tech.Node, lib_energy=None) -> float:
    """Clock energy per flip-flop per cycle at node ``nd`` (pJ).

    With a Liberty library (``lib_energy``: a ppa.liberty.energy.LibraryEnergy): the library's
    clock-pin internal energy + pin, wiring and buffer-tree switching per flip-flop, in the
    library's own toggle-equivalents, times the node's toggle energy. Without one:
    ppa.tech.CLOCK_TOGGLES_PER_FF_CYCLE toggle-equivalents (osu018's, derived)."""
    scale = assumed("clock_energy_scale", 1.0)  # ppa.assumptions: a 180 nm library's clock tree at every node
    if lib_energy is not None:
        return scale * lib_energy.clock_toggles_per_ff_cycle * nd.toggle_energy_pj
    return scale * tech.CLOCK_TOGGLES_PER_FF_CYCLE * nd.toggle_energy_pj


def library_energy(design: DesignPoint, timing: StageTiming, *, cache=None):
    """The Liberty energies (ppa.liberty.energy) of the library ``design`` is timed with, or None
    on the generic path."""
    if timing.source != "sta":
        return None
    lib = resolve_liberty(design)
    if lib is None:
        return None
    return liberty_energy.library_energy(lib, cache=_synth.cache_key(cache))


def _sram_macros(design: DesignPoint, v_sram: float) -> list[tuple[str, sram.SramCost]]:
    """(name, cost) of each SRAM macro: one of sram_kb, or the three sim/ buffers."""
    if design.sram_buffers_kb is not None:
        return [
            (
                name,
                sram.sram(
                    kb, design.node_nm, banks=design.sram_banks, voltage_v=v_sram, model=design.sram_model
                ),
            )
            for name, kb in zip(("ifmap", "filter", "ofmap"), design.sram_buffers_kb)
            if kb > 0
        ]
    if design.sram_kb > 0:
        return [
            (
                "sram",
                sram.sram(
                    design.sram_kb,
                    design.node_nm,
                    banks=design.sram_banks,
                    voltage_v=v_sram,
                    model=design.sram_model,
                ),
            )
        ]
    return []


def default_traffic(design: DesignPoint, busy_cycles: float) -> tuple[float, float, float]:
    """(SRAM read bytes, SRAM write bytes, DRAM bytes) of ``busy_cycles`` array cycles with every PE
    busy, without a workload (DEFAULT_SPARSITY_NOTE): WS reads R*M activations + the weights once per
    W_HOLD cycles and writes C partial sums per cycle; OS streams the weights every cycle and writes
    each accumulator once per ACC_LEN cycles; DRAM = SRAM traffic / DEFAULT_DRAM_REUSE."""
    p = design.validate()
    R, C = design.rows, design.cols
    shape = array_shape(p, design.kind)
    pe_w_bytes = (shape.w_lanes * p.weight_bits + shape.meta_groups * p.meta_bits) / 8
    if design.cost_dataflow == "os":  # weights stream in every cycle from the left, activations from the top
        sram_rd = busy_cycles * (C * shape.act_lanes * p.act_bits / 8 + R * pe_w_bytes)
        sram_wr = busy_cycles * R * C * p.acc_bits / 8 / activity.ACC_LEN
    else:
        sram_rd = busy_cycles * (R * shape.act_lanes * p.act_bits / 8 + R * C * pe_w_bytes / activity.W_HOLD)
        sram_wr = busy_cycles * C * p.acc_bits / 8
    return sram_rd, sram_wr, (sram_rd + sram_wr) / DEFAULT_DRAM_REUSE


def operating_point_of(
    p, design: DesignPoint, facts, depth: int, notes: list[str], reasons: list[str], *, cache=None
) -> OperatingPoint:
    """The operating point phase of :func:`estimate` (notes and reasons appended in its order)."""
    timing = stage_timing(p, design, facts, cache=cache)
    if timing.source == "generic":
        notes.append(GENERIC_TIMING_NOTE)
    # the threshold-voltage flavour (ppa.references VT_FLAVOURS): as given, else the lowest-leakage one that meets the clock
    tried = [design.vt] if design.vt is not None or design.clock_mhz is None else list(VT_CHOICES)
    for vt in (vt_flavour(x).name for x in tried):
        v, clk, f_at_v, f_top, why = operating_point(
            depth, design.node_nm, design.clock_mhz, design.voltage_v, cycle_fo4=timing.cycle_fo4, vt=vt
        )
        if not why:
            break
    if why:
        reasons.append(why)
    silicon_mhz = silicon_clock.silicon_limit_mhz(design.node_nm, v)
    if silicon_mhz is not None and f_at_v >= silicon_mhz * (1 - 1e-9):
        notes.append(
            f"fmax capped at {silicon_mhz:.0f} MHz at {v:g} V: the clock published {design.node_nm} nm silicon "
            f"reaches at that voltage ({silicon_clock.SILICON_LIMIT_FO4_PER_CYCLE[tech.NODE_ALIASES.get(design.node_nm, design.node_nm)]:.1f} "
            "FO4 per cycle, ppa.silicon_clock); the stage itself times faster"
        )
    nd = tech.node(design.node_nm, v)
    f_hz = clk * 1e6
    return OperatingPoint(
        timing,
        v,
        clk,
        f_at_v,
        f_top,
        silicon_mhz,
        nd,
        f_hz,
        vt,
        "given"
        if design.vt is not None
        else "no clock asked"
        if design.clock_mhz is None
        else "the lowest-leakage flavour that meets the clock",
    )


def area_of(
    p, design: DesignPoint, facts, op: OperatingPoint, notes: list[str], *, cache=None
) -> AreaBreakdown:
    """The area phase of :func:`estimate` (notes appended in its order)."""
    R, C, nd, v = design.rows, design.cols, op.nd, op.v
    tr_total = facts.transistors(p, R, C)
    dec_tr = facts.decoder_transistors * facts.decoders(R, C)
    a_t = nd.area_per_transistor_um2 * 1e-6  # mm^2
    pe_mm2 = (tr_total - dec_tr) * a_t
    dec_mm2 = dec_tr * a_t
    v_sram = tech.sram_voltage(design.node_nm, v, design.sram_voltage_v)
    macros = _sram_macros(design, v_sram)
    sram_mm2 = sum(c.area_mm2 for _, c in macros)
    for name, c in macros:
        if not c.in_range:
            notes.extend(f"sram{'' if name == 'sram' else ' ' + name}: {n}" for n in c.notes)
    # the vector unit: lanes x the synthesised lane (ppa.vector_cost), priced like the array's logic
    lanes = design.effective_vector_lanes
    vlane = (
        vector_cost.vector_lane_cost(design.effective_vector_bits, design.node_nm, v, cache=cache)
        if lanes
        else None
    )
    vec_tr = lanes * vlane.transistors if vlane else 0
    vec_mm2 = vec_tr * a_t
    # the fixed control block (DMA engines, sequencers, configuration registers, host interface):
    # logic that does not scale with the array, priced like the array's logic
    ctrl_tr = assumed("control_fixed_transistors", CONTROL_FIXED_TRANSISTORS)
    ctrl_mm2 = ctrl_tr * a_t
    core_mm2 = pe_mm2 + dec_mm2 + sram_mm2 + vec_mm2 + ctrl_mm2
    ph = phy.phy(design.dram)
    phy_mm2 = ph.area_mm2 * design.dram_units
    allowance = assumed("other_allowance", OTHER_ALLOWANCE) + assumed(
        "control_allowance", phy.CONTROL_ALLOWANCE
    )
    other_mm2 = allowance * core_mm2 + ctrl_mm2
    area = core_mm2 + phy_mm2 + allowance * core_mm2
    min_die = phy.min_die_mm2(design.dram, design.dram_units)
    die_phy_limited = area < min_die
    if die_phy_limited:
        notes.append(
            f"die area set by its PHYs: {design.dram_units} x {ph.name} need {ph.edge_mm * design.dram_units:.1f} mm "
            f"of die edge, i.e. at least {min_die:.2f} mm^2; the logic needs {area:.2f} mm^2 (difference in 'other')"
        )
        other_mm2 += min_die - area
        area = min_die
    return AreaBreakdown(
        tr_total,
        a_t,
        pe_mm2,
        dec_mm2,
        v_sram,
        macros,
        sram_mm2,
        lanes,
        vlane,
        vec_tr,
        vec_mm2,
        ctrl_tr,
        ctrl_mm2,
        ph,
        phy_mm2,
        other_mm2,
        area,
        min_die,
        die_phy_limited,
    )


def activity_of(
    p, design: DesignPoint, shape, op: OperatingPoint, activity_in: WorkloadActivity | None, notes: list[str]
) -> Workload:
    """The activity phase of :func:`estimate`: the workload's, else the default (DEFAULT_SPARSITY_NOTE)."""
    R, C, f_hz = design.rows, design.cols, op.f_hz
    # effective (dense-equivalent) MACs per busy PE-cycle: M; the dense path in N:M mode covers M/N groups
    mac_per_pe_cycle = shape.act_lanes
    if activity_in is None:
        notes.append(DEFAULT_SPARSITY_NOTE)
        busy = 1.0
        runtime_s = 1.0
        cycles = f_hz * runtime_s
        eff_macs = R * C * mac_per_pe_cycle * cycles
        sram_rd, sram_wr, dram_b = default_traffic(design, cycles)
    else:
        busy = activity_in.pe_busy_fraction
        cycles = activity_in.cycles
        runtime_s = cycles / f_hz
        eff_macs = activity_in.effective_macs
        sram_rd, sram_wr, dram_b = (
            activity_in.sram_read_bytes,
            activity_in.sram_write_bytes,
            activity_in.dram_bytes,
        )
    return Workload(mac_per_pe_cycle, busy, runtime_s, cycles, eff_macs, sram_rd, sram_wr, dram_b)


def _sram_power(
    p,
    design: DesignPoint,
    shape,
    macros,
    wl: Workload,
    activity_in: WorkloadActivity | None,
    notes: list[str],
) -> tuple[float, float]:
    """(SRAM access power, SRAM leakage at LEAKAGE_T_REF_C) of the power phase (W)."""
    R, C, cdf = design.rows, design.cols, design.cost_dataflow
    sram_rd, sram_wr, cycles, runtime_s = wl.sram_rd, wl.sram_wr, wl.cycles, wl.runtime_s
    if macros:
        costs = dict(macros)
        if "sram" in costs:
            sram_j = sram_rd * costs["sram"].read_pj_per_byte() + sram_wr * costs["sram"].write_pj_per_byte()
        else:
            # reads: activations from ifmap, weights from filter; writes: partial sums to ofmap. With
            # the default traffic the split is known; with a workload's totals the reads are split
            # between ifmap and filter by capacity [A].
            per_buffer = activity_in.sram_buffer_bytes if activity_in is not None else None
            if activity_in is None:
                # the default traffic above, split by what each buffer holds
                act_rd = cycles * (C if cdf == "os" else R) * shape.act_lanes * p.act_bits / 8
                rd = {"ifmap": act_rd, "filter": sram_rd - act_rd}
            elif per_buffer:
                rd = {k: rw[0] for k, rw in per_buffer.items()}
            else:
                cap = {k: c.kb for k, c in costs.items() if k in ("ifmap", "filter")}
                tot = sum(cap.values())
                rd = {k: sram_rd * kb / tot for k, kb in cap.items()} if tot else {}
            sram_j = sum(b * costs[k].read_pj_per_byte() for k, b in rd.items() if k in costs)
            if per_buffer:
                sram_j += sum(
                    rw[1] * costs[k].write_pj_per_byte() for k, rw in per_buffer.items() if k in costs
                )
                if any(k not in costs and rw[1] for k, rw in per_buffer.items()):
                    notes.append("an SRAM buffer of 0 KB gets traffic: that traffic is not costed")
            else:
                wr_buf = costs.get("ofmap") or costs.get("ifmap") or next(iter(costs.values()))
                sram_j += sram_wr * wr_buf.write_pj_per_byte()
            if any(k not in costs and b for k, b in rd.items()):
                notes.append("an SRAM buffer of 0 KB gets traffic: that traffic is not costed")
        sram_w = sram_j * 1e-12 / runtime_s
        sram_leak_ref = (
            sum(c.leakage_mw for _, c in macros) * 1e-3
        )  # CACTI HP leakage at 360 K = LEAKAGE_T_REF_C
    else:
        if sram_rd or sram_wr:
            notes.append("no SRAM configured (--sram-kb 0): SRAM traffic not costed")
        sram_w, sram_leak_ref = 0.0, 0.0
    return sram_w, sram_leak_ref


def power_of(
    p,
    design: DesignPoint,
    facts,
    shape,
    act,
    op: OperatingPoint,
    ar: AreaBreakdown,
    wl: Workload,
    activity_in: WorkloadActivity | None,
    notes: list[str],
    reasons: list[str],
    *,
    cache=None,
) -> Power:
    """The power phase of :func:`estimate`: switching, clock, vector, SRAM, DRAM and PHY power (notes and
    reasons appended in its order)."""
    R, C, cdf = design.rows, design.cols, design.cost_dataflow
    timing, clk, nd, f_hz = op.timing, op.clk, op.nd, op.f_hz
    vlane, macros, ph = ar.vlane, ar.macros, ar.ph
    busy, runtime_s, dram_b = wl.busy, wl.runtime_s, wl.dram_b
    e_vt = (
        op.flavour.energy
    )  # the cells' threshold-voltage flavour (ppa.references VT_FLAVOURS): logic, clock and vector
    e_t = nd.toggle_energy_pj * e_vt
    # a flip-flop output toggle: its net toggle, plus (with a Liberty library) the library's D- and
    # Q-pin internal energy in toggle-equivalents (ppa.liberty.energy); without one, the net alone
    lib_e = library_energy(design, timing, cache=cache)
    ff_tog = 1.0 + (lib_e.ff_extra_toggles if lib_e is not None else tech.FF_EXTRA_TOGGLES)
    # the PE's logic sized as the netlist the STA times (ppa.liberty.sizing); the generic path: as mapped for area
    sizing_factor, sizing_source = 1.0, "none: generic timing path (the netlist as mapped for area)"
    if lib_e is not None:
        lib = resolve_liberty(design)
        try:
            sizing_factor = activity.pe_sizing_factor(
                p, design.sparse, lib, cache=cache, dense_path=design.dense_path
            )
            sizing_source = f"{lib.library}: minimum-delay over area mapping, over the calibration pair's (ppa.liberty.sizing)"
        except _synth.SynthesisError as exc:
            sizing_source = f"none: the sizing mapping failed ({exc})"
            notes.append(
                f"switching energy: the PE's sizing factor was not measured ({exc}); costed as mapped for area"
            )
    pe_cycles_per_s = R * C * busy * f_hz
    # registers outside the PE cells (facts.edge_terms): each toggles at the rate of what it
    # carries, measured on the same trace at the PE's ports [D]: activation bits at in_act's rate
    # per bit, OS weight-bundle bits at in_w/in_meta's rate per bit, WS psum-deskew bits at the PE
    # flip-flops' rate per bit (the accumulator's); they move only while the array is busy
    edges = facts.edge_terms(p, R, C)
    act_bit = act.act_input_toggles / (shape.act_lanes * p.act_bits)
    w_port_bits = shape.w_lanes * p.weight_bits + shape.meta_groups * p.meta_bits
    edge_toggles = (
        (edges["act_forward"] + edges["act_skew"]) * act_bit
        + (edges["weight_forward"] + edges["weight_skew"]) * act.w_input_toggles / w_port_bits
        + edges["psum_deskew"] * act.ff_toggles / max(act.flip_flops, 1)
    ) * ff_tog  # per busy array-cycle
    # the PE's own nets: each toggle at its net's energy (ppa.liberty.gates, toggle-equivalents), a
    # flip-flop output toggle also its D- and Q-pin internal energy
    pe_dyn_w = (
        pe_cycles_per_s
        * (act.gate_energy * sizing_factor + act.ff_net_energy + act.ff_toggles * (ff_tog - 1.0))
        * e_t
        * 1e-12
    )
    edge_dyn_w = busy * f_hz * edge_toggles * e_t * 1e-12
    # WS weight loading: a tile shifts R words down R rows, so R*R*C*B register bits are written
    # (B = weights + codes per PE, + the dense path's mode bit); a written bit toggles with the
    # probability that two independent weight words differ there (measured on the trace), and
    # so does the load-enable multiplexer in front of it (2 toggles per changed bit) [D]
    load_w = 0.0
    tiles_per_s = 0.0
    if cdf == "ws":
        if activity_in is not None and activity_in.weight_tiles is not None:
            tiles_per_s = activity_in.weight_tiles / runtime_s
        else:
            tiles_per_s = busy * f_hz / activity.W_HOLD
            if activity_in is not None:
                notes.append(
                    f"weight loads: one tile per {activity.W_HOLD} busy cycles (no weight_tiles given)"
                )
        # (double-buffered: the shadow shifts and the swap's copies behind multiplexers, the column
        # skew's plain registers: ArrayFacts.load_bit_writes)
        muxed, plain = facts.load_bit_writes(p, R, C)
        load_w = tiles_per_s * muxed * (1 + ff_tog) * activity.weight_bit_change(p) * e_t * 1e-12
        load_w += tiles_per_s * plain * ff_tog * activity.weight_bit_change(p) * e_t * 1e-12
    dyn_w = pe_dyn_w + edge_dyn_w + load_w
    # the vector unit: its operations x the lane's measured energy per operation class
    vec_ops = activity_in.vector_ops if activity_in is not None else None
    vec_w = vlane.energy_j(vec_ops) / runtime_s * e_vt if (vlane is not None and vec_ops) else 0.0
    ffs = facts.flip_flops(p, R, C)
    e_ff = clock_energy_per_ff_cycle_pj(nd, lib_e) * e_vt
    # WS stationary registers (hw.array: reset-less, enabled by w_load): gated while held, clocked on
    # the R load edges of each tile; double-buffered, the active set (weights and codes) is enabled
    # by the swap, one edge a tile, and the shadow set (with its reset) is not counted as gated
    if cdf == "ws":
        gated_bits = R * C * w_port_bits + (0 if design.double_buffer else R * shape.mode_bit)
        load_edges_per_s = tiles_per_s * (1 if design.double_buffer else R)
    else:
        gated_bits, load_edges_per_s = 0, 0.0
    gate = clock_gating(
        ffs,
        gated_bits,
        R * C * ICGS_PER_PE if gated_bits else 0,
        min(1.0, load_edges_per_s / f_hz),
        design.clock_gating,
    )
    clk_w = gate.ff_cycles * e_ff * 1e-12 * f_hz
    sram_w, sram_leak_ref = _sram_power(p, design, shape, macros, wl, activity_in, notes)
    dd = dram.dram(design.dram)
    dram_w = dram_b * 8 * dd.pj_per_bit * 1e-12 / runtime_s
    dram_bw = dram_b / runtime_s / 1e9
    if dram_bw > dd.gb_per_s * design.dram_units:
        reasons.append(
            f"DRAM traffic {dram_bw:.1f} GB/s exceeds {design.dram_units} x {dd.name} {dd.unit} ({dd.gb_per_s * design.dram_units:.1f} GB/s)"
        )
    slowest = max((c for _, c in macros), key=lambda c: c.cycle_ns, default=None)
    largest = max((c for _, c in macros), key=lambda c: c.kb, default=None)
    if slowest and slowest.cycle_ns * 1e3 > 1e6 / clk:
        notes.append(
            f"SRAM cycle {slowest.cycle_ns:.2f} ns is longer than the clock period {1e3 / clk:.2f} ns: bank it (--sram-banks)"
        )
    phy_w = dram_b * 8 * ph.pj_per_bit * 1e-12 / runtime_s + ph.static_w * design.dram_units

    return Power(
        e_t,
        lib_e,
        sizing_factor,
        sizing_source,
        pe_dyn_w,
        edge_dyn_w,
        load_w,
        dyn_w,
        vec_w,
        ffs,
        e_ff,
        gate,
        clk_w,
        sram_w,
        sram_leak_ref,
        dd,
        dram_w,
        dram_bw,
        phy_w,
        largest,
    )


def thermal_of(
    design: DesignPoint, op: OperatingPoint, ar: AreaBreakdown, wl: Workload, pw: Power, reasons: list[str]
) -> Thermal:
    """The thermal phase of :func:`estimate`: leakage at the junction temperature it sets, total power,
    density and energy per MAC (None on thermal runaway; reasons appended in its order)."""
    nd, area, tr_total, vec_tr, ctrl_tr = op.nd, ar.area, ar.tr_total, ar.vec_tr, ar.ctrl_tr
    dyn_w, clk_w, sram_w, phy_w, vec_w, dram_w, sram_leak_ref = (
        pw.dyn_w,
        pw.clk_w,
        pw.sram_w,
        pw.phy_w,
        pw.vec_w,
        pw.dram_w,
        pw.sram_leak_ref,
    )
    runtime_s, eff_macs = wl.runtime_s, wl.eff_macs
    # thermal + leakage (on-die power only; DRAM dissipates off die)
    logic_leak_ref = (
        nd.leakage_w(tr_total + vec_tr + ctrl_tr, tech.LEAKAGE_T_REF_C) * op.flavour.leakage
    )  # ppa.references VT_FLAVOURS
    leak_ref = logic_leak_ref + sram_leak_ref
    on_die_dyn = dyn_w + clk_w + sram_w + phy_w + vec_w
    theta = design.theta_ja if design.theta_ja is not None else thermal.theta_ja(design.cooling, area)
    th = thermal.solve_tj(on_die_dyn, leak_ref, theta, design.t_ambient_c)
    if th.runaway:
        reasons.append(
            f"thermal runaway: no stable junction temperature with theta_ja {theta:.3g} K/W "
            f"(dynamic {on_die_dyn:.3g} W, leakage {leak_ref:.3g} W at {tech.LEAKAGE_T_REF_C:.0f} C)"
        )
        leak_w = None
        total = None
        density = None
        epm = None
    else:
        leak_w = th.leakage_w
        total = on_die_dyn + leak_w + dram_w
        density = (on_die_dyn + leak_w) / area
        epm = total * runtime_s / eff_macs * 1e12 if eff_macs else None
        if th.tj_c > design.tj_max_c:
            reasons.append(f"junction temperature {th.tj_c:.1f} C above the {design.tj_max_c:g} C limit")
        limit = thermal.COOLING_LIMIT_W_PER_MM2[design.cooling]
        if density > limit:
            reasons.append(
                f"power density {density:.2f} W/mm^2 above the {design.cooling} cooling limit {limit:g} W/mm^2"
            )
    return Thermal(logic_leak_ref, leak_ref, on_die_dyn, theta, th, leak_w, total, density, epm)


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
    """The PPAResult of :func:`estimate` from its phases, with the details explore/ and ppa.recost read."""
    R, C, kind, cdf = design.rows, design.cols, design.kind, design.cost_dataflow
    timing, v, clk, f_at_v, f_top, silicon_mhz, nd, f_hz = fields_of(op)[:8]
    (
        tr_total,
        a_t,
        pe_mm2,
        dec_mm2,
        v_sram,
        macros,
        sram_mm2,
        lanes,
        vlane,
        vec_tr,
        vec_mm2,
        ctrl_tr,
        ctrl_mm2,
        ph,
        phy_mm2,
        other_mm2,
        area,
        min_die,
        die_phy_limited,
    ) = fields_of(ar)
    mac_per_pe_cycle, runtime_s, eff_macs, dram_b = wl.mac_per_pe_cycle, wl.runtime_s, wl.eff_macs, wl.dram_b
    (
        e_t,
        lib_e,
        sizing_factor,
        sizing_source,
        pe_dyn_w,
        edge_dyn_w,
        load_w,
        dyn_w,
        vec_w,
        ffs,
        e_ff,
        gate,
        clk_w,
        sram_w,
        sram_leak_ref,
        dd,
        dram_w,
        dram_bw,
        phy_w,
        largest,
    ) = fields_of(pw)
    logic_leak_ref, theta, th, leak_w, total, density, epm = (
        tm.logic_leak_ref,
        tm.theta,
        tm.th,
        tm.leak_w,
        tm.total,
        tm.density,
        tm.epm,
    )
    peak_tops = 2 * R * C * mac_per_pe_cycle * f_hz / 1e12
    return PPAResult(
        design=design,
        area_mm2=area,
        area_breakdown_mm2={
            "pe_array": pe_mm2,
            "decoders": dec_mm2,
            "sram": sram_mm2,
            "vector": vec_mm2,
            "phy": phy_mm2,
            "other": other_mm2,
        },
        fmax_mhz=f_top,
        fmax_at_voltage_mhz=f_at_v,
        voltage_v=v,
        clock_mhz=clk,
        power_w=total,
        power_breakdown_w={
            "dynamic": dyn_w,
            "clock": clk_w,
            "leakage": leak_w,
            "sram": sram_w,
            "vector": vec_w,
            "phy": phy_w,
            "dram": dram_w,
        },
        energy_per_mac_pj=epm,
        peak_tops=peak_tops,
        tj_c=th.tj_c,
        power_density_w_mm2=density,
        feasible=not reasons,
        infeasible_reasons=reasons,
        notes=notes,
        details={
            "node_nm": design.node_nm,
            "sparse": design.sparse,
            "pe": (f"{p.n}:{p.m}" + ("+dense" if design.dense_path else "")) if design.sparse else "dense",
            "kind": kind,
            "dataflow": design.dataflow,
            "cost_dataflow": cdf,
            "dense_path": design.dense_path,
            "double_buffer": design.double_buffer,
            "effective_macs_per_pe_cycle": mac_per_pe_cycle,
            "multipliers_per_pe": shape.multipliers,
            "dynamic_breakdown_w": {"pe": pe_dyn_w, "edge_registers": edge_dyn_w, "weight_load": load_w},
            "vector_unit": {
                "lanes": lanes,
                "width_bits": design.effective_vector_bits,
                "lane_transistors": vlane.transistors if vlane else 0,
                "energy_pj_per_op": dict(vlane.energy_pj) if vlane else {},
                "method": "synthesised hw.vector.VectorLane (ppa.vector_cost)",
            },
            "edge_register_bits": facts.edge_bits(p, R, C),
            "logic_depth": depth,
            "array_transistors": tr_total,
            "array_flip_flops": ffs,
            "pe_transistors": facts.pe_transistors,
            "gate_delay_ps": nd.gate_delay_ps,
            "toggle_energy_fj": e_t * 1e3,
            "toggles_per_pe_cycle": act.toggles,
            "toggle_eq_per_pe_cycle": act.gate_energy + act.ff_net_energy,
            "switching_energy": {
                "method": "zero-delay toggles of the generic netlist at their nets' osu018 cell "
                "energies (ppa.liberty.gates)",
                "sizing_factor": sizing_factor,
                "sizing_source": sizing_source,
            },
            "theta_ja_k_per_w": theta,
            "dram": dd.name,
            "dram_gb_per_s": dram_bw,
            "dram_pj_per_bit": dd.pj_per_bit,
            "dram_energy_source": dd.energy_source,
            "dram_total_pj_per_bit": dd.pj_per_bit + ph.pj_per_bit,
            "sram_model": design.sram_model,
            "sram_read_pj_per_64b": largest.read_pj * 64 / largest.word_bits if largest is not None else None,
            "activity_trace": activity.trace_label(trace),
            "timing_source": ("liberty+sta" if timing.source == "sta" else "generic"),
            "sram_in_range": all(c.in_range for _, c in macros) if macros else None,
            "effective_macs_per_s": eff_macs / runtime_s,
            "vmin_v": tech.vmin_v(design.node_nm),
            "sram_vmin_v": tech.sram_vmin_v(design.node_nm),
            "sram_voltage_v": v_sram,
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
                "source": "ppa.references VT_FLAVOURS: ASAP7 TT 0.7 V LVT / SLVT against RVT cells, every logic cell in the flavour",
            },
            "phy": {
                "type": ph.name,
                "units": design.dram_units,
                "area_mm2_each": ph.area_mm2,
                "pj_per_bit": ph.pj_per_bit,
                "static_w_each": ph.static_w,
                "source": ph.source,
            },
            "min_die_mm2": min_die,
            "die_phy_limited": die_phy_limited,
            # what ppa.recost re-composes this estimate from under other assumption values: the parts
            # that scale with an assumption, at the values in force here (ppa.override)
            "terms": {
                "overrides": in_force(),
                "node_nm": design.node_nm,
                "clock_mhz": clk,
                "clock_given": design.clock_mhz is not None,
                "voltage_v": v,
                "voltage_forced": design.voltage_v is not None,
                "cycle_fo4": timing.cycle_fo4,
                "vt_delay": op.flavour.delay,
                "sram_voltage_v": v_sram,
                "sram_voltage_forced": design.sram_voltage_v is not None,
                "logic_mm2": pe_mm2 + dec_mm2 + vec_mm2,
                "mm2_per_transistor": a_t,
                "logic_transistors": tr_total + vec_tr,
                "sram_mm2": sram_mm2,
                "dram": design.dram,
                "dram_units": design.dram_units,
                "min_die_mm2": min_die,
                "dyn_w": dyn_w,
                "vec_w": vec_w,
                "clk_w": clk_w,
                "sram_w": sram_w,
                "sram_leak_ref_w": sram_leak_ref,
                "logic_leak_ref_w": logic_leak_ref,
                "dram_bytes_per_s": dram_b / runtime_s,
                "theta_ja": design.theta_ja,
                "cooling": design.cooling,
                "t_ambient_c": design.t_ambient_c,
                "tj_max_c": design.tj_max_c,
                "bandwidth_infeasible": dram_bw > dd.gb_per_s * design.dram_units,
            },
            "control_allowance": phy.CONTROL_ALLOWANCE,
            "control_fixed": {"transistors": ctrl_tr, "area_mm2": ctrl_mm2},
            "sta": None if timing.sta is None else timing.sta.details() | {"stage": timing.stage},
            "clock_gating": design.clock_gating,
            "clock_gating_detail": gate.details() | {"clock_w_ungated": ffs * e_ff * 1e-12 * f_hz},
            "clock_energy": (
                {
                    "source": "liberty",
                    "library": lib_e.library,
                    "toggles_per_ff_cycle": lib_e.clock_toggles_per_ff_cycle,
                    "ff_extra_toggles": lib_e.ff_extra_toggles,
                    "pj_per_ff_cycle": clock_energy_per_ff_cycle_pj(nd, lib_e),
                    "library_figures": lib_e.details(),
                }
                if lib_e is not None
                else {
                    "source": "osu018 figures (no library used)",
                    "toggles_per_ff_cycle": tech.CLOCK_TOGGLES_PER_FF_CYCLE,
                    "ff_extra_toggles": tech.FF_EXTRA_TOGGLES,
                    "pj_per_ff_cycle": clock_energy_per_ff_cycle_pj(nd),
                }
            ),
            "timing": {
                "source": timing.source,
                "stage": timing.stage,
                "cycle_fo4": timing.cycle_fo4,
                "fo4_ps_at_point": nd.gate_delay_ps * op.flavour.delay,
                "cycle_time_ps_at_fmax": 1e6 / f_at_v,
                "silicon_limit_mhz": silicon_mhz,
                "wire_allowance": WIRE_ALLOWANCE,
                "clock_uncertainty_fraction": CLOCK_UNCERTAINTY_FRACTION,
            },
        },
    )


def estimate(
    design: DesignPoint, activity_in: WorkloadActivity | None = None, trace=None, *, cache=None
) -> PPAResult:
    """Area, operating point, power and thermal feasibility of one design point.

    ``trace``: real data for the PE (else the default synthetic trace): an activity.PETrace, an
    activity.TraceRecipe (built only if its activity is not cached), or an activity.TraceMix (a
    sparse design's N:M layers and dense layers, each on its trace, mixed by the PE-cycles the
    workload's MACs take on each path: activity.pe_cycle_shares).
    Fast after the first call for a PE configuration (synthesis and activity are cached)."""
    p = design.validate()
    notes: list[str] = []
    reasons: list[str] = []
    kind, cdf = design.kind, design.cost_dataflow
    facts = array_facts(
        p,
        design.sparse,
        _synth.cache_key(cache),
        rows=design.rows,
        kind=kind,
        dataflow=cdf,
        double_buffer=design.double_buffer,
    )
    depth = facts.depth(design.rows)
    if facts.note and design.rows > len(facts.row_transistors):
        notes.append(facts.note)
    if design.dataflow == "is":
        notes.append(
            "dataflow is: costed as the weight-stationary array (hw/ has no input-stationary array RTL)"
        )
    # OS streams a new weight group every cycle; WS holds weights (activity.W_HOLD)
    act = activity.pe_activity(
        p,
        design.sparse,
        trace,
        cache=cache,
        dense_path=design.dense_path,
        w_hold=1 if cdf == "os" else activity.W_HOLD,
    )
    shape = array_shape(p, kind)
    op = operating_point_of(p, design, facts, depth, notes, reasons, cache=cache)
    ar = area_of(p, design, facts, op, notes, cache=cache)
    wl = activity_of(p, design, shape, op, activity_in, notes)
    pw = power_of(p, design, facts, shape, act, op, ar, wl, activity_in, notes, reasons, cache=cache)
    tm = thermal_of(design, op, ar, wl, pw, reasons)
    return result_of(design, p, facts, shape, act, trace, depth, op, ar, wl, pw, tm, notes, reasons)
