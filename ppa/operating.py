"""The operating point of a design: the fmax of its critical stage at a node and voltage, and the
voltage, clock and threshold-voltage flavour :func:`ppa.model.estimate` runs it at.

fmax (:func:`fmax_mhz`): 1 / ppa.timing.stage.cycle_time_ps(stage FO4, FO4 of the node at the voltage,
times the cells' threshold-voltage flavour), capped at the clock published silicon of the node reaches
(ppa.silicon_clock). A requested clock selects the lowest voltage of the node's modelled range that
meets it (:func:`operating_point`); without a clock, the design runs at fmax at nominal voltage.
"""

from __future__ import annotations

from ppa import silicon_clock, tech
from ppa.design import DesignPoint, OperatingPoint
from ppa.references import VT_CHOICES, vt_flavour
from ppa.timing.stage import GENERIC_TIMING_NOTE, cycle_time_ps, stage_timing


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
    ``vt``: the cells' threshold-voltage flavour (ppa.references VT_FLAVOURS), a factor on the FO4; the
    silicon cap stays."""
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


def operating_point_of(
    p, design: DesignPoint, facts, depth: int, notes: list[str], reasons: list[str], *, cache=None
) -> OperatingPoint:
    """The operating point phase of :func:`estimate` (notes and reasons appended in its order)."""
    timing = stage_timing(p, design, facts, cache=cache)
    if timing.source == "generic":
        notes.append(GENERIC_TIMING_NOTE)
    # the threshold-voltage flavour (ppa.references VT_FLAVOURS): as given, else the lowest-leakage one
    # that meets the clock
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
        model_nm = tech.NODE_ALIASES.get(design.node_nm, design.node_nm)
        notes.append(
            f"fmax capped at {silicon_mhz:.0f} MHz at {v:g} V: the clock published {design.node_nm} nm silicon "
            f"reaches at that voltage ({silicon_clock.SILICON_LIMIT_FO4_PER_CYCLE[model_nm]:.1f} "
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
