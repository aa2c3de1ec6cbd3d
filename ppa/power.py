"""The power phase of :func:`ppa.model.estimate`: switching (the PE's nets, the registers outside the
cells, the WS weight loading), the vector unit, the clock (with clock gating), SRAM, DRAM and PHY power
at the operating point; ppa.model's docstring gives each term and its source.
"""

from __future__ import annotations

from ppa import activity, dram, synth as _synth, tech
from ppa.clock_gating import ICGS_PER_PE, ClockGating, clock_gating
from ppa.design import AreaBreakdown, DesignPoint, OperatingPoint, Power, Workload, WorkloadActivity
from ppa.liberty import energy as liberty_energy
from ppa.override import assumed
from ppa.phy import PhyType
from ppa.timing.stage import StageTiming, resolve_liberty
from ppa.vector_cost import VectorLaneCost


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


def _pe_sizing(p, design: DesignPoint, lib_e, notes: list[str], *, cache=None) -> tuple[float, str]:
    """(sizing factor, its source): the PE's logic sized as the netlist the STA times
    (ppa.liberty.sizing); the generic path: as mapped for area."""
    if lib_e is None:
        return 1.0, "none: generic timing path (the netlist as mapped for area)"
    lib = resolve_liberty(design)
    assert lib is not None  # library_energy found the library (lib_e is its energies)
    try:
        sizing_factor = activity.pe_sizing_factor(
            p, design.sparse, lib, cache=cache, dense_path=design.dense_path
        )
        return sizing_factor, (
            f"{lib.library}: minimum-delay over area mapping, over the calibration pair's (ppa.liberty.sizing)"
        )
    except _synth.SynthesisError as exc:
        notes.append(
            f"switching energy: the PE's sizing factor was not measured ({exc}); costed as mapped for area"
        )
        return 1.0, f"none: the sizing mapping failed ({exc})"


def _array_switching_w(
    p,
    design: DesignPoint,
    facts,
    shape,
    act,
    wl: Workload,
    f_hz: float,
    ff_tog: float,
    sizing_factor: float,
    e_t: float,
) -> tuple[float, float]:
    """(the PE cells' switching power, the edge registers' switching power) while busy (W)."""
    R, C, busy = design.rows, design.cols, wl.busy
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
    return pe_dyn_w, edge_dyn_w


def _weight_load_w(
    p,
    design: DesignPoint,
    facts,
    wl: Workload,
    activity_in: WorkloadActivity | None,
    f_hz: float,
    ff_tog: float,
    e_t: float,
    notes: list[str],
) -> tuple[float, float]:
    """(WS weight-loading power (W), weight tiles per second; both 0 for OS)."""
    # WS weight loading: a tile shifts R words down R rows, so R*R*C*B register bits are written
    # (B = weights + codes per PE, + the dense path's mode bit); a written bit toggles with the
    # probability that two independent weight words differ there (measured on the trace), and
    # so does the load-enable multiplexer in front of it (2 toggles per changed bit) [D]
    R, C, busy, runtime_s = design.rows, design.cols, wl.busy, wl.runtime_s
    load_w = 0.0
    tiles_per_s = 0.0
    if design.cost_dataflow == "ws":
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
    return load_w, tiles_per_s


def _clock_gating_of(p, design: DesignPoint, shape, ffs, tiles_per_s: float, f_hz: float) -> ClockGating:
    """The array's clock gating: which flip-flops are gated and how often they are clocked."""
    R, C = design.rows, design.cols
    w_port_bits = shape.w_lanes * p.weight_bits + shape.meta_groups * p.meta_bits
    # WS stationary registers (hw.array: reset-less, enabled by w_load): gated while held, clocked on
    # the R load edges of each tile; double-buffered, the active set (weights and codes) is enabled
    # by the swap, one edge a tile, and the shadow set (with its reset) is not counted as gated
    if design.cost_dataflow == "ws":
        gated_bits = R * C * w_port_bits + (0 if design.double_buffer else R * shape.mode_bit)
        load_edges_per_s = tiles_per_s * (1 if design.double_buffer else R)
    else:
        gated_bits, load_edges_per_s = 0, 0.0
    return clock_gating(
        ffs,
        gated_bits,
        R * C * ICGS_PER_PE if gated_bits else 0,
        min(1.0, load_edges_per_s / f_hz),
        design.clock_gating,
    )


def _off_die_memory_w(
    design: DesignPoint, ar: AreaBreakdown, wl: Workload, clk: float, notes: list[str], reasons: list[str]
):
    """(DRAM type, DRAM power, DRAM GB/s, PHY power, the largest SRAM macro or None) (notes and reasons
    appended in :func:`power_of`'s order)."""
    macros, ph = ar.macros, ar.ph
    assert isinstance(ph, PhyType)  # area_of's ppa.phy.phy (ppa.design types the field object)
    runtime_s, dram_b = wl.runtime_s, wl.dram_b
    dd = dram.dram(design.dram)
    dram_w = dram_b * 8 * dd.pj_per_bit * 1e-12 / runtime_s
    dram_bw = dram_b / runtime_s / 1e9
    if dram_bw > dd.gb_per_s * design.dram_units:
        reasons.append(
            f"DRAM traffic {dram_bw:.1f} GB/s exceeds {design.dram_units} x {dd.name} {dd.unit} "
            f"({dd.gb_per_s * design.dram_units:.1f} GB/s)"
        )
    slowest = max((c for _, c in macros), key=lambda c: c.cycle_ns, default=None)
    largest = max((c for _, c in macros), key=lambda c: c.kb, default=None)
    if slowest and slowest.cycle_ns * 1e3 > 1e6 / clk:
        notes.append(
            f"SRAM cycle {slowest.cycle_ns:.2f} ns is longer than the clock period {1e3 / clk:.2f} ns: "
            "bank it (--sram-banks)"
        )
    phy_w = dram_b * 8 * ph.pj_per_bit * 1e-12 / runtime_s + ph.static_w * design.dram_units
    return dd, dram_w, dram_bw, phy_w, largest


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
    """The power phase of :func:`ppa.model.estimate`: switching, clock, vector, SRAM, DRAM and PHY power
    (notes and reasons appended in its order)."""
    R, C = design.rows, design.cols
    timing, clk, nd, f_hz = op.timing, op.clk, op.nd, op.f_hz
    vlane = ar.vlane
    assert vlane is None or isinstance(vlane, VectorLaneCost)  # area_of's (ppa.design types it object)
    # the cells' threshold-voltage flavour (ppa.references VT_FLAVOURS): logic, clock and vector
    e_vt = op.flavour.energy
    e_t = nd.toggle_energy_pj * e_vt
    # a flip-flop output toggle: its net toggle, plus (with a Liberty library) the library's D- and
    # Q-pin internal energy in toggle-equivalents (ppa.liberty.energy); without one, the net alone
    lib_e = library_energy(design, timing, cache=cache)
    ff_tog = 1.0 + (lib_e.ff_extra_toggles if lib_e is not None else tech.FF_EXTRA_TOGGLES)
    sizing_factor, sizing_source = _pe_sizing(p, design, lib_e, notes, cache=cache)
    pe_dyn_w, edge_dyn_w = _array_switching_w(
        p, design, facts, shape, act, wl, f_hz, ff_tog, sizing_factor, e_t
    )
    load_w, tiles_per_s = _weight_load_w(p, design, facts, wl, activity_in, f_hz, ff_tog, e_t, notes)
    dyn_w = pe_dyn_w + edge_dyn_w + load_w
    # the vector unit: its operations x the lane's measured energy per operation class
    vec_ops = activity_in.vector_ops if activity_in is not None else None
    vec_w = vlane.energy_j(vec_ops) / wl.runtime_s * e_vt if (vlane is not None and vec_ops) else 0.0
    ffs = facts.flip_flops(p, R, C)
    e_ff = clock_energy_per_ff_cycle_pj(nd, lib_e) * e_vt
    gate = _clock_gating_of(p, design, shape, ffs, tiles_per_s, f_hz)
    clk_w = gate.ff_cycles * e_ff * 1e-12 * f_hz
    sram_w, sram_leak_ref = _sram_power(p, design, shape, ar.macros, wl, activity_in, notes)
    dd, dram_w, dram_bw, phy_w, largest = _off_die_memory_w(design, ar, wl, clk, notes, reasons)
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
