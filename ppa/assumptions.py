"""The assumptions registry: every labelled constant the verdict rests on, with its plausible range.

Each :class:`Assumption` names a constant that enters the model ([A] assumption, [D] derived, or an
[S]/[P] figure whose sources spread), its value (the model's own constant, read from the module
that owns it), a plausible range (low, high) and the reason for that range: the spread of its
sources where there is one, else a stated factor for a pure assumption. ``sparsepe assumptions``
lists them; ``[assumptions]`` in a sweep config narrows or widens a range.

How a value reaches the model: the model reads each constant through :func:`ppa.override.assumed`
where it uses it, so ``ppa.override.overriding({name: value})`` changes what ``ppa.model.estimate``
computes. The robustness of a verdict (explore.robustness) varies the constants marked ``varied``
over numpy arrays of samples with :mod:`ppa.recost`, which re-composes one estimate's
assumption-free terms (transistor and flip-flop counts, toggles, bytes, the stage in FO4) without
synthesis, STA or activity simulation; tests/ppa/test_recost.py holds the two paths equal. The
others (``varied`` False) are listed with their range and why the batch cannot vary them.

Ranges are sampled log-uniformly (explore.robustness), so every bound is positive.
"""

from __future__ import annotations

import math
from dataclasses import asdict, dataclass

from hw.errors import InputError
from ppa import activity, clock_gating, dram, model, phy, tech, thermal
from ppa.timing import stage


@dataclass(frozen=True)
class Assumption:
    """One constant of the model with its plausible range."""

    name: str
    value: float
    low: float
    high: float
    unit: str
    tag: str  # A (assumption), D (derived), S (secondary source), P (primary source), T (tool output)
    reason: str  # why the range is what it is
    used_by: str  # where the model reads it
    varied: bool = True  # the robustness step varies it (ppa.recost); else ``reason`` says why not

    def as_row(self) -> dict:
        return asdict(self)


def _phy_rows() -> list[Assumption]:
    rows = []
    lp, dd, hb = phy.PHY_TYPES["lpddr5"], phy.PHY_TYPES["ddr4"], phy.PHY_TYPES["hbm2"]
    rows.append(
        Assumption(
            "lpddr5_phy_area_mm2",
            lp.area_mm2,
            lp.area_mm2 / 2,
            lp.area_mm2 * 2,
            "mm^2",
            "A",
            "pad-slice estimate (40 pads x 25,000 um^2, ppa.phy); no published LPDDR5 PHY area was found "
            "(published-figures §7): a stated factor of 2 either way",
            "ppa.phy.phy -> ppa.model area (phy), the area limit",
        )
    )
    rows.append(
        Assumption(
            "ddr4_phy_area_mm2",
            dd.area_mm2,
            dd.area_mm2 / 2,
            dd.area_mm2 * 2,
            "mm^2",
            "A",
            "pad-slice estimate (120 pads x 25,000 um^2, ppa.phy); no published figure: a stated factor of 2 "
            "either way",
            "ppa.phy.phy -> ppa.model area (phy)",
        )
    )
    bumps = hb.area_mm2 / 55.0**2  # the bump count behind ppa.phy's 55 um figure (mm^2 / um^2 x 1e6)
    rows.append(
        Assumption(
            "hbm_phy_area_mm2",
            hb.area_mm2,
            bumps * 40.0**2,
            hb.area_mm2 * 1.25,
            "mm^2",
            "D",
            "[D] the JEDEC HBM2 bump field (3,658 bumps) x pitch^2: 40 um microbumps at the low end, 55 um "
            "plus 25 % of PHY outside the bump field at the high end [A]",
            "ppa.phy.phy (HBM2/2E/3) -> ppa.model area (phy)",
        )
    )
    for fam, p, why in (
        ("lpddr5", lp, "one end of the link: read-only to write-only traffic (Kim et al. 2018 x VDDQ^2)"),
        ("ddr4", dd, "one end of the link: read-only to write-only traffic (Kim et al. 2018 x VDDQ^2)"),
        ("hbm", hb, "4 nm HBM3 interface 0.29 pJ/bit (JSSC 2024) to a 40 nm PAM-4 HBM interface 0.41"),
    ):
        lo, hi = p.pj_per_bit_range
        rows.append(
            Assumption(
                f"{fam}_phy_pj_per_bit",
                p.pj_per_bit,
                lo,
                hi,
                "pJ/bit",
                "D" if fam != "hbm" else "P",
                f"source spread: {why}",
                "ppa.phy.phy -> ppa.model power (phy)",
            )
        )
    for fam, p in (("lpddr5", lp), ("ddr4", dd), ("hbm", hb)):
        rows.append(
            Assumption(
                f"{fam}_phy_static_w",
                p.static_w,
                p.static_w / 2,
                p.static_w * 2,
                "W",
                "A",
                "DLL/PLL and receiver bias of a PHY while the link is up, not cited (ppa.phy): a stated "
                "factor of 2 either way",
                "ppa.phy.phy -> ppa.model power (phy)",
            )
        )
    return rows


def _dram_rows() -> list[Assumption]:
    rows = []
    for key, d in dram.DRAM_TYPES.items():
        lo, hi = d.pj_per_bit_range
        why = {
            "ddr4": "Horowitz's 1.3-2.6 nJ per 64 b less the SoC-side PHY share",
            "hbm2": "O'Connor's HBM2 3.97 to SK hynix's HBM2E 4.3 pJ/bit",
            "hbm2e": "O'Connor's HBM2 3.97 to SK hynix's HBM2E 4.3 pJ/bit",
            "hbm3": "the derived 2.93 to HBM2E's 4.3, which JEDEC says HBM3 improves on",
        }.get(key, "")
        tag = "S" if key in ("ddr4", "hbm2", "hbm2e") else "D"
        if key == "lpddr5":
            # the core taken as HBM2's [A] carries a stated +-25 %, on top of the traffic mix's I/O spread
            lo = dram.HBM2_CORE_PJ * 0.75 + dram.link_end_pj_per_bit(dram.LPDDR5_VDDQ, "read")
            hi = dram.HBM2_CORE_PJ * 1.25 + dram.link_end_pj_per_bit(dram.LPDDR5_VDDQ, "write")
            why = (
                "no published LPDDR5 device figure (published-figures §7.2): the DRAM core taken as HBM2's 3.45 "
                "[A, +-25 % stated] plus the DRAM-side I/O from read-only to write-only traffic"
            )
        rows.append(
            Assumption(
                f"{key}_dram_pj_per_bit",
                d.pj_per_bit,
                lo,
                hi,
                "pJ/bit",
                tag,
                f"source spread: {why}",
                "ppa.dram.dram -> ppa.model power (dram)",
            )
        )
    return rows


def _logic_rows() -> list[Assumption]:
    """The logic's assumptions: its area, its energy and leakage, its timing and voltages."""
    return [*_logic_area_rows(), *_logic_energy_rows(), *_logic_timing_rows()]


def _logic_area_rows() -> list[Assumption]:
    return [
        Assumption(
            "other_allowance",
            model.OTHER_ALLOWANCE,
            0.05,
            0.20,
            "fraction of core area",
            "A",
            "global wiring, clock tree and I/O periphery: a stated factor of 2 either way",
            "ppa.model area (other)",
        ),
        Assumption(
            "control_allowance",
            phy.CONTROL_ALLOWANCE,
            0.025,
            0.10,
            "fraction of core area",
            "A",
            "control, sequencer and host I/O: a stated factor of 2 either way",
            "ppa.model area (other)",
        ),
        Assumption(
            "control_fixed_transistors",
            model.CONTROL_FIXED_TRANSISTORS,
            model.CONTROL_FIXED_TRANSISTORS / 2,
            model.CONTROL_FIXED_TRANSISTORS * 2,
            "transistors",
            "D",
            "fitted on one chip (NVDLA nv_small's published area less the model's array, CBUF, lanes and "
            "allowances): a stated factor of 2 either way for a design with other DMA, sequencing and "
            "configuration needs",
            "ppa.model area (other) and logic leakage",
        ),
        Assumption(
            "placement_utilisation",
            tech.PLACEMENT_UTILISATION,
            0.60,
            0.80,
            "fraction",
            "S",
            "60-80 % is the usual final density of timing-driven blocks; the ASAP7 reference block closes at "
            "70.1-70.4 % (ppa.tech)",
            "ppa.tech.realised_density_fraction -> logic area",
        ),
        Assumption(
            "post_layout_cell_growth",
            tech.POST_LAYOUT_CELL_GROWTH,
            1.10,
            1.50,
            "x",
            "A",
            "buffering, upsizing, clock tree, hold fixing, tap cells over the pre-layout netlist: 10-50 %, "
            "a stated range around the quarter taken (ppa.tech)",
            "ppa.tech.realised_density_fraction and Node.leakage_w -> logic area and leakage",
        ),
    ]


def _logic_energy_rows() -> list[Assumption]:
    e_mul = tech.HOROWITZ_MUL8_PJ / tech.CAL_MUL8_TOGGLE_EQ_PER_OP
    e_add = tech.HOROWITZ_ADD32_PJ / tech.CAL_ADD32_TOGGLE_EQ_PER_OP
    return [
        Assumption(
            "toggle_energy_45nm_pj",
            tech.E_TOGGLE_45_PJ,
            min(e_mul, e_add),
            max(e_mul, e_add),
            "pJ",
            "D",
            "source spread: Horowitz's 45 nm 8-bit multiply implies 1.62 fJ per toggle of our netlist, his "
            "32-bit add 1.14 fJ (the value is their geometric mean; Jouppi's 7 nm operators spread alike, "
            "0.78-1.29x); every node's toggle energy scales with it",
            "ppa.tech.Node.toggle_energy_pj -> dynamic, clock, vector power",
        ),
        Assumption(
            "clock_energy_scale",
            1.0,
            0.5,
            1.5,
            "x",
            "A",
            "the clock energy per flip-flop (4.02 toggle-equivalents) comes from osu018's 180 nm clock-pin "
            "energy and buffer tree and is applied at every node: a stated factor of 1.5 either way",
            "ppa.model.clock_energy_per_ff_cycle_pj -> clock power",
        ),
        Assumption(
            "logic_leakage_scale",
            1.0,
            0.5,
            3.0,
            "x",
            "A",
            "the anchors are RVT inverters at the typical corner; a timing-closed block mixes in LVT cells "
            "(10-100x the leakage, used on few paths) and runs off-typical: a stated x3 up, x2 down",
            "ppa.tech.leakage_density_w_mm2 -> logic leakage",
        ),
        Assumption(
            "leakage_temp_coeff_per_k",
            tech.LEAKAGE_TEMP_COEFF_PER_K,
            math.log(2.0) / 40,
            math.log(3.0) / 40,
            "1/K",
            "S",
            "Liao et al. ISLPED 2003: leakage 'up to 2.5x' between 90 and 130 C; a stated 2x-3x "
            "over the same 40 K",
            "ppa.tech leakage at T, ppa.thermal.solve_tj",
        ),
    ]


def _logic_timing_rows() -> list[Assumption]:
    return [
        Assumption(
            "wire_allowance",
            stage.WIRE_ALLOWANCE,
            0.10,
            0.23,
            "fraction of the stage",
            "A",
            "around the 15 % charged (ppa.timing.stage): from the 10 % middle of the 5-15 % post-route excess "
            "commonly quoted to the 21-23 % ASAP7 wire-load models add to the unsized timing-mapped PE paths",
            "ppa.timing.stage.cycle_time_ps -> fmax, voltage",
        ),
        Assumption(
            "clock_uncertainty_fraction",
            stage.CLOCK_UNCERTAINTY_FRACTION,
            0.03,
            0.08,
            "fraction of the period",
            "A",
            "skew of a balanced tree (a few %) plus 1-2 % jitter: 3-8 % stated",
            "ppa.timing.stage.cycle_time_ps -> fmax, voltage",
        ),
        Assumption(
            "fo4_45nm_ps",
            tech.GATE_DELAY_45_PS,
            13.01,
            23.84,
            "ps",
            "D",
            "source spread: the two weak mentions behind it, moved to 45 nm / 1.0 V, give 13.0 ps (32 nm, "
            "8.7 ps) and 23.8 ps (90 nm, 45 ps); the value is their geometric mean. It sets the FO4 of 45 nm "
            "and above and, log-linearly, of the nodes between 45 and 7 nm; not 7 nm's",
            "ppa.tech.fo4_nominal_ps -> Node.gate_delay_ps -> fmax, voltage",
        ),
        Assumption(
            "fo4_7nm_ps",
            tech.FO4_7NM_PS,
            18.3,
            26.2,
            "ps",
            "D",
            "source spread: the ASAP7 RVT TT FO4 chain timed by OpenSTA is 19.48 ps with INVx1, 18.3 ps with "
            "INVx2 and 26.2 ps with INVxp33 (ppa.tech): the drive strength a block's paths use. It sets the "
            "FO4 of 7 nm and, log-linearly, of the nodes between 45 and 7 nm",
            "ppa.tech.fo4_nominal_ps -> Node.gate_delay_ps -> fmax, voltage",
        ),
        Assumption(
            "sram_vmin_offset_v",
            tech.SRAM_VMIN_OFFSET_V,
            0.10,
            0.20,
            "V",
            "S",
            "IBM POWER6's SRAM rail 'about 150 mV higher' than logic (EE Times, ISSCC 2006): a stated "
            "+-50 mV",
            "ppa.tech.sram_vmin_v -> SRAM voltage, energy, leakage",
        ),
    ]


def _memory_rows() -> list[Assumption]:
    return [
        Assumption(
            "sram_energy_scale",
            1.0,
            1 / 1.4,
            1.4,
            "x",
            "S",
            "source spread: the 64-bit read from 8 KB is 10 pJ at 45 nm (Horowitz 2014) and 14 pJ at 40 nm "
            "(Keckler et al. 2011), 1.4x between two published silicon figures of one access",
            "ppa.sram.sram -> SRAM power",
        ),
        Assumption(
            "sram_leakage_scale",
            1.0,
            0.1,
            1.0,
            "x",
            "T",
            "CACTI's ITRS-HP cells at 360 K are the top; its LSTP cells leak 3-4 orders less and foundry "
            "macros sit in between (published-figures §9.4): down to a tenth",
            "ppa.sram.sram -> SRAM leakage",
        ),
        Assumption(
            "air_convection_k_per_w",
            thermal.AIR_CONVECTION_K_PER_W,
            0.05,
            0.2,
            "K/W",
            "A",
            "HotSpot 6.0's default r_convec is a tool default, not a measured cooler: a stated factor of 2 "
            "either way",
            "ppa.thermal.theta_ja (air) -> junction temperature",
        ),
    ]


#: Constants the batch cannot vary: listed with their range; each reason says why.
_NOT_VARIED = (
    Assumption(
        "w_hold_cycles",
        float(activity.W_HOLD),
        16.0,
        256.0,
        "cycles",
        "A",
        "weight-stationary reuse of the synthetic trace, a stated factor of 4; not varied: it enters only the "
        "synthetic trace's gate-level activity (a new value is a new simulation) and the no-workload default",
        "ppa.activity.synthetic_trace, ppa.model default activity",
        varied=False,
    ),
    Assumption(
        "acc_len_groups",
        float(activity.ACC_LEN),
        4.0,
        64.0,
        "groups",
        "A",
        "accumulation length of the synthetic trace, a stated factor of 4; not varied: a new value is a new "
        "gate-level simulation",
        "ppa.activity.synthetic_trace",
        varied=False,
    ),
    Assumption(
        "default_dram_reuse",
        model.DEFAULT_DRAM_REUSE,
        4.0,
        64.0,
        "SRAM bytes per DRAM byte",
        "A",
        "a stated factor of 4; not varied: used only without a workload (a sweep always has one)",
        "ppa.model default activity",
        varied=False,
    ),
    Assumption(
        "logic_vmin_fraction",
        tech.LOGIC_VMIN_FRACTION,
        0.61,
        0.80,
        "x nominal",
        "S",
        "Chen et al. ISLPED 2013: 0.61 (retention) to 0.73 (hold) x nominal at 22 nm, applied at every node "
        "[A], up to 0.80; not varied: it moves the voltage grid the batch re-selects on",
        "ppa.tech.vmin_v -> voltage range",
        varied=False,
    ),
    Assumption(
        "leakage_decades_per_v",
        tech.LEAKAGE_DECADES_PER_V,
        0.5,
        2.0,
        "decades/V",
        "A",
        "DIBL 50-150 mV/V over a 70-100 mV/decade swing; not varied: it also moves the leakage anchors' "
        "conversion to each node's nominal voltage",
        "ppa.tech.leakage_voltage_factor",
        varied=False,
    ),
    Assumption(
        "alpha_power_index",
        tech.ALPHA,
        1.2,
        1.5,
        "",
        "S",
        "Sakurai & Newton's short-channel index 1.3; 1.2-1.5 across short-channel processes; not varied: it "
        "reshapes fmax over the whole voltage grid",
        "ppa.tech.alpha_power_delay -> fmax(V)",
        varied=False,
    ),
    Assumption(
        "jouppi_voltage_v",
        tech.JOUPPI_V,
        0.65,
        0.75,
        "V",
        "A",
        "Jouppi's Table 2 states no voltage; 7 nm nominal 0.7 V +-50 mV; not varied: it sets the 7 nm node "
        "correction at import",
        "ppa.tech.NODE_CORRECTION_7NM, ppa.sram 7 nm anchor",
        varied=False,
    ),
    Assumption(
        "icg_gated_ff_cycles",
        clock_gating.ICG_GATED_FF_CYCLES,
        clock_gating.ICG_GATED_FF_CYCLES / 1.5,
        clock_gating.ICG_GATED_FF_CYCLES * 1.5,
        "held flip-flop clock-cycles",
        "D",
        "[D] the ASAP7 ICGx1's gated clock energy over a held DFFHQNx1's (Liberty tables at 0.7 V, 20 ps "
        "slew; ppa.clock_gating), used for every library [A]: a stated factor of 1.5 either way for the "
        "slew, the cell size and other libraries; not varied: the estimate records the clock power as one "
        "term, flip-flops and ICGs together",
        "ppa.clock_gating.ClockGating.ff_cycles -> clock power",
        varied=False,
    ),
    Assumption(
        "icg_enabled_ff_cycles",
        clock_gating.ICG_ENABLED_FF_CYCLES,
        clock_gating.ICG_ENABLED_FF_CYCLES / 1.5,
        clock_gating.ICG_ENABLED_FF_CYCLES * 1.5,
        "held flip-flop clock-cycles",
        "D",
        "[D] the ASAP7 ICGx1's enabled clock energy (CLK and GCLK) over a held DFFHQNx1's (ppa.clock_gating), "
        "used for every library [A]: a stated factor of 1.5 either way; not varied: the estimate records the "
        "clock power as one term, flip-flops and ICGs together",
        "ppa.clock_gating.ClockGating.ff_cycles -> clock power",
        varied=False,
    ),
    Assumption(
        "vector_alu_ops_per_lane_cycle",
        1.0,
        0.5,
        2.0,
        "ops/cycle",
        "A",
        "one pipelined adder/comparator per lane (sim.perf.ArrayConfig.vector_alu_rate), a stated factor of "
        "2; not varied: it enters the cycle model (a new value is a new simulation of every layer)",
        "sim.perf vector unit timing",
        varied=False,
    ),
)

#: Every assumption, by name.
REGISTRY: dict[str, Assumption] = {
    a.name: a for a in (*_phy_rows(), *_dram_rows(), *_logic_rows(), *_memory_rows(), *_NOT_VARIED)
}


def assumptions() -> list[Assumption]:
    """Every assumption of the registry, in registry order."""
    return list(REGISTRY.values())


def varied() -> list[Assumption]:
    """The assumptions the robustness step varies."""
    return [a for a in REGISTRY.values() if a.varied]


def get(name: str, where: str | None = None) -> Assumption:
    """The assumption ``name``; an unknown name is an InputError naming ``where``."""
    if name not in REGISTRY:
        raise InputError(
            f"unknown assumption {name!r} (`sparsepe assumptions` lists them: {', '.join(REGISTRY)})",
            where=where,
        )
    return REGISTRY[name]


def with_ranges(ranges: dict[str, tuple[float, float]], where: str | None = None) -> dict[str, Assumption]:
    """The registry with some ranges replaced (name -> (low, high)), each checked: a known name, finite
    positive bounds, low <= high."""
    out = dict(REGISTRY)
    for name, (lo, hi) in ranges.items():
        here = f"{where}.{name}" if where else name
        a = get(name, here)
        if not (math.isfinite(lo) and math.isfinite(hi)) or lo <= 0 or hi <= 0:
            raise InputError(
                f"bounds must be finite and positive (ranges are sampled log-uniformly), got low {lo:g}, "
                f"high {hi:g}",
                where=here,
            )
        if lo > hi:
            raise InputError(f"low {lo:g} is above high {hi:g}", where=here)
        out[name] = Assumption(
            **{
                **asdict(a),
                "low": float(lo),
                "high": float(hi),
                "reason": a.reason + f" (range set by the config: {lo:g}-{hi:g})",
            }
        )
    return out
