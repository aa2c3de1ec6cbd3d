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

Frequency (ppa.timing.stage, ppa.operating :func:`operating_point`): the deepest register-to-register stage of
the design, in FO4 delays, from static timing analysis on a Liberty library (ppa.timing.sta:
Yosys maps to the library, timing-driven; OpenSTA times it; FO4 measured on the library): the
R-row column of the design's own array. cycle time = stage FO4 x FO4 of the target node and
voltage (ppa.tech gate_delay_ps) x (1 + wire allowance) / (1 - clock skew + jitter), both stated
assumptions in ppa.timing.stage. Without OpenSTA or a library, the generic path: the same
column's generic netlist, delay-mapped, timed by logical effort (ppa.timing.effort, one scale
fitted on one STA result), with a note. A requested clock selects the lowest voltage in the node's
modelled range that meets it; above fmax at the top of the range the design is infeasible (more
--pipeline stages are the remedy). Without a clock, the design runs at fmax at nominal voltage.

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
  would drop them for the ICG: about 2 % of a cell's transistors, not credited). With a Liberty
  library: the library's clock-pin internal energy, pin + wiring capacitance and clock-buffer tree
  per flip-flop, in its own toggle-equivalents
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

from hw.params import PEParams
from ppa import activity, phy, sram, synth as _synth, tech, thermal, vector_cost
from ppa.array_cost import ArrayFacts, array_facts, array_shape
from ppa.design import (
    AreaBreakdown,
    DesignPoint,
    OperatingPoint,
    Power,
    PPAResult,
    Thermal,
    Workload,
    WorkloadActivity,
)

# the phases of estimate in their modules (the ``as`` names re-exported: ppa.model.<name> as before)
from ppa.operating import (
    fmax_mhz as fmax_mhz,
    operating_point as operating_point,
    operating_point_of,
)
from ppa.override import assumed
from ppa.power import (
    clock_energy_per_ff_cycle_pj as clock_energy_per_ff_cycle_pj,
    library_energy as library_energy,
    power_of,
)
from ppa.result import result_of
from ppa.timing import sta
from ppa.timing.stage import resolve_liberty

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
# the estimate
# ------------------------------------------------------------------------------------------------


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
            for name, kb in zip(("ifmap", "filter", "ofmap"), design.sram_buffers_kb, strict=True)
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
    act_bits, weight_bits, acc_bits = p.act_bits, p.weight_bits, p.acc_bits
    assert act_bits is not None and weight_bits is not None and acc_bits is not None  # PEParams fills them
    pe_w_bytes = (shape.w_lanes * weight_bits + shape.meta_groups * p.meta_bits) / 8
    if design.cost_dataflow == "os":  # weights stream in every cycle from the left, activations from the top
        sram_rd = busy_cycles * (C * shape.act_lanes * act_bits / 8 + R * pe_w_bytes)
        sram_wr = busy_cycles * R * C * acc_bits / 8 / activity.ACC_LEN
    else:
        sram_rd = busy_cycles * (R * shape.act_lanes * act_bits / 8 + R * C * pe_w_bytes / activity.W_HOLD)
        sram_wr = busy_cycles * C * acc_bits / 8
    return sram_rd, sram_wr, (sram_rd + sram_wr) / DEFAULT_DRAM_REUSE


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
        leak_w, tj_c = th.leakage_w, th.tj_c
        assert leak_w is not None and tj_c is not None  # solve_tj gives both unless it runs away
        total = on_die_dyn + leak_w + dram_w
        density = (on_die_dyn + leak_w) / area
        epm = total * runtime_s / eff_macs * 1e12 if eff_macs else None
        if tj_c > design.tj_max_c:
            reasons.append(f"junction temperature {th.tj_c:.1f} C above the {design.tj_max_c:g} C limit")
        limit = thermal.COOLING_LIMIT_W_PER_MM2[design.cooling]
        if density > limit:
            reasons.append(
                f"power density {density:.2f} W/mm^2 above the {design.cooling} cooling limit {limit:g} W/mm^2"
            )
    return Thermal(logic_leak_ref, leak_ref, on_die_dyn, theta, th, leak_w, total, density, epm)


def array_facts_of(p: PEParams, design: DesignPoint, notes: list[str], *, cache=None) -> ArrayFacts:
    """The array facts of :func:`estimate` (ppa.array_cost: transistors, flip-flops, depth per row;
    notes appended in its order)."""
    facts = array_facts(
        p,
        design.sparse,
        _synth.cache_key(cache),
        rows=design.rows,
        kind=design.kind,
        dataflow=design.cost_dataflow,
        double_buffer=design.double_buffer,
    )
    if facts.note and design.rows > len(facts.row_transistors):
        notes.append(facts.note)
    if design.dataflow == "is":
        notes.append(
            "dataflow is: costed as the weight-stationary array (hw/ has no input-stationary array RTL)"
        )
    return facts


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
    facts = array_facts_of(p, design, notes, cache=cache)
    depth = facts.depth(design.rows)
    # OS streams a new weight group every cycle; WS holds weights (activity.W_HOLD)
    act = activity.pe_activity(
        p,
        design.sparse,
        trace,
        cache=cache,
        dense_path=design.dense_path,
        w_hold=1 if design.cost_dataflow == "os" else activity.W_HOLD,
    )
    shape = array_shape(p, design.kind)
    op = operating_point_of(p, design, facts, depth, notes, reasons, cache=cache)
    ar = area_of(p, design, facts, op, notes, cache=cache)
    wl = activity_of(p, design, shape, op, activity_in, notes)
    pw = power_of(p, design, facts, shape, act, op, ar, wl, activity_in, notes, reasons, cache=cache)
    tm = thermal_of(design, op, ar, wl, pw, reasons)
    return result_of(design, p, facts, shape, act, trace, depth, op, ar, wl, pw, tm, notes, reasons)
