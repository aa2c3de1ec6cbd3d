"""The power rows of ``sparsepe validate`` (group ``power``): the clock-tree share of core power,
the clock energy per flip-flop against ASAP7, and the leakage share of an A100-sized array.
"""

from __future__ import annotations

import math

from explore.validation.physics.base import agrees, with_liberty
from explore.validation.row import Row
from hw.errors import InputError
from ppa import references
from ppa.design import DesignPoint, PPAResult
from ppa.liberty import asap7
from ppa.liberty.energy import clock_with_leaf_wire
from ppa.liberty.library import load_liberty
from ppa.model import estimate


def asap7_clock_row(res: PPAResult) -> Row:
    """The clock energy per flip-flop per cycle the model charges at 7 nm (``res``), in logic-toggle
    equivalents, against ASAP7's library with a leaf clock wire of one flip-flop pitch (the
    design's own cell area per flip-flop) at the ASAP7 platform's clock-wire capacitance. ASAP7 is a
    predictive library, not silicon: shown, never counted as a check."""
    quantity = "clock energy per flip-flop per cycle (7 nm, 16 x 16 2:4 array), logic-toggle equivalents"
    w = references.ASAP7_CLOCK_WIRE_FF_PER_UM
    source = (
        "[D] the ASAP7 7 nm library (../shared/reference/asap7) with a leaf clock wire of one flip-flop "
        f"pitch at {w:.3f} fF/um (OpenROAD-flow-scripts, platforms/asap7/setRC.tcl)"
    )
    model = res.details["clock_energy"]["toggles_per_ff_cycle"]
    why = asap7.why_unavailable()
    if why is not None:
        return Row("power", quantity, 7, model, None, "toggles", source, held_out=False, reason=why)
    pitch_um = math.sqrt(res.area_breakdown_mm2["pe_array"] * 1e6 / res.details["array_flip_flops"])
    try:  # reading the library's energies runs Yosys and OpenSTA once (then cached)
        _, ref = clock_with_leaf_wire(load_liberty(asap7.merged_liberty_path()), w * pitch_um * 1e-3)
    except InputError as e:
        return Row(
            "power",
            quantity,
            7,
            model,
            None,
            "toggles",
            source,
            held_out=False,
            reason=f"ASAP7's clock figure could not be read here: {e}",
        )
    return Row(
        "power",
        quantity,
        7,
        model,
        ref,
        "toggles",
        source,
        held_out=False,
        reason=(
            f"not a check: ASAP7 is a predictive library, not silicon, and the wire ({pitch_um:.1f} um per "
            "flip-flop) is an estimate; the model charges osu018's (180 nm) figure at every node"
        ),
    )


def core_power_w(res: PPAResult) -> float:
    """On-die power without the DRAM PHY: array dynamic, clock, leakage, SRAM and vector unit."""
    p = res.power_breakdown_w
    return p["dynamic"] + p["clock"] + (p["leakage"] or 0.0) + p["sram"] + p["vector"]


def power_rows(a100: DesignPoint, liberty: dict | None = None) -> list[Row]:
    rows = []
    res = estimate(with_liberty(DesignPoint(node_nm=7), liberty))
    core = core_power_w(res)
    share = res.power_breakdown_w["clock"] / core
    sram_share = res.power_breakdown_w["sram"] / core
    du = references.DUARTE_CLOCK_SHARE
    if agrees(share, du.value):
        why = ""
    elif share < du.value:
        why = (
            f"the SRAM takes {100 * sram_share:.0f} % of this design's core power (the default traffic at the "
            "silicon-derived SRAM energy), which leaves the clock a smaller share, and the stationary weight "
            "registers are clock-gated while they hold (the default); Duarte's quarter is of processors, "
            "whose power is mostly logic and register files. The clock per flip-flop is not cheap: see the "
            "next row, osu018's figure against ASAP7's 7 nm library with its clock wiring"
        )
    else:
        why = (
            "the clock's share is above Duarte's processor figure: every flip-flop outside the gated "
            "stationary weight registers is clocked every cycle"
        )
    rows.append(
        Row(
            "power",
            "clock-tree share of core power (7 nm, 16 x 16 2:4 array, every PE busy)",
            7,
            share,
            du.value,
            "share",
            du.source,
            held_out=True,
            reason=why,
        )
    )
    rows.append(asap7_clock_row(res))
    res = estimate(with_liberty(a100, liberty))
    on_die = res.power_w - res.power_breakdown_w["dram"]
    share = (res.power_breakdown_w["leakage"] or 0.0) / on_die
    a = references.A100_CONSTANT_POWER_SHARE
    rows.append(
        Row(
            "power",
            "leakage share of on-die power (A100-sized INT8 array, 40 MB SRAM, 7 nm)",
            7,
            share,
            a.value,
            "share",
            a.source,
            held_out=True,
            reason=""
            if agrees(share, a.value)
            else f"the model's logic leaks as ASAP7's {res.details['vt']['flavour'].upper()} cells "
            f"({res.details['vt']['choice']}; a GPU mixes flavours), "
            f"its INT8 array alone dissipates {on_die:.0f} W and leaks at its own junction temperature "
            f"({res.tj_c:.0f} C, liquid cooling), and the model has no idle GPU units; the reference is "
            "whole-GPU constant power (idle clocks, HBM refresh, I/O), an upper bound",
        )
    )
    return rows
