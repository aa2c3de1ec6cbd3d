"""Published figures the PPA model is checked against (``sparsepe validate``), each with its source.

The figures the model is FITTED to stay with the constants they set (ppa.tech, ppa.sram, ppa.dram,
ppa.phy); this module holds the figures that check them, and the published V-f tables together
(MT8195's, with its curve fit, sets ppa.tech's 7 nm Vth). Tags: [P] primary text read (abstract,
paper, vendor file); [S] a secondary copy naming the primary; [D] derived, formula shown.
A reference given as a range has ``low`` and ``high`` (its ``value`` is their geometric mean).
"""

from __future__ import annotations

import math
from dataclasses import dataclass

from hw.errors import InputError


@dataclass(frozen=True)
class Reference:
    value: float
    unit: str
    source: str
    low: float | None = None
    high: float | None = None


def _range(low: float, high: float, unit: str, source: str) -> Reference:
    return Reference(math.sqrt(low * high), unit, source, low, high)


# --- operator energy (a MAC = multiply + accumulate add) -----------------------------------------
#: [S] Horowitz ISSCC 2014, 45 nm, 0.9 V (published-figures §3): 16-bit FP multiply 1.1 pJ + 32-bit
#: FP add 0.9 pJ. The table has no bf16: its fp16 multiplier (11-bit significand) is the nearest.
HOROWITZ_FP16MUL_FP32ADD_PJ = Reference(
    1.1 + 0.9,
    "pJ",
    "[S] Horowitz ISSCC 2014 (45 nm, 0.9 V): fp16 multiply 1.1 + "
    "fp32 add 0.9 pJ (no bf16 in the table; fp16's 11-bit significand multiplier is larger "
    "than bf16's 8-bit one)",
)
#: [S] Jouppi et al. ISCA 2021 Table 2 (7 nm): bf16 multiply 0.21 + fp32 add 0.38 pJ
JOUPPI_BF16_MAC_PJ = Reference(
    0.21 + 0.38, "pJ", "[S] Jouppi et al. ISCA 2021 Table 2 (7 nm): bf16 multiply 0.21 + fp32 add 0.38 pJ"
)

# --- SRAM ------------------------------------------------------------------------------------------
#: [S] Keckler et al., IEEE Micro 2011, Table 1 (published-figures §3): 64-bit read from an 8 KB SRAM,
#: 14 pJ at 40 nm, projected 2.4 / 1.8 pJ at 10 nm
KECKLER_8KB_40NM_PJ = Reference(
    14.0,
    "pJ per 64-bit read",
    "[S] Keckler et al. IEEE Micro 2011 Table 1: 8 KB SRAM, 40 nm (voltage not given)",
)
KECKLER_8KB_10NM_PJ = _range(
    1.8,
    2.4,
    "pJ per 64-bit read",
    "[S] Keckler et al. IEEE Micro 2011 Table 1: 8 KB SRAM, "
    "projected for 10 nm (2011 projection, not silicon)",
)

# --- DRAM and PHY ----------------------------------------------------------------------------------
#: [S] Jouppi et al. ISCA 2021 Table 2: HBM2, 250-450 pJ per 64-bit access (published-figures §3, §13)
JOUPPI_HBM2_PJ_PER_BIT = _range(
    250 / 64,
    450 / 64,
    "pJ/bit",
    "[S] Jouppi et al. ISCA 2021 Table 2: HBM2 250-450 pJ per 64 b (footnoted as I/O energy)",
)
#: [S] SK hynix, via Moon et al. IEDM 2023 (published-figures §7.2): HBM2E about 4.3 pJ/bit
HYNIX_HBM2E_PJ_PER_BIT = Reference(
    4.3, "pJ/bit", "[S] SK hynix via Moon et al. IEDM 2023: HBM2E about 4.3 pJ/bit"
)
#: [S] LPDDR4, 13-14 pJ/bit: DramDSE simulation of a 32 Gb single-die and a 4 x 8 Gb package at
#: 3.2 Gb/s/pin, H. Ha, Stanford PhD thesis (as collected in the Dongyunkam/DRAM_info repository, README §4)
HA_LPDDR4_PJ_PER_BIT = _range(
    13.0,
    14.0,
    "pJ/bit",
    "[S] H. Ha, Stanford PhD thesis, DramDSE simulation of LPDDR4 at "
    "3.2 Gb/s/pin: 13-14 pJ/bit (via the DRAM_info collection)",
)
#: [P] "A 7.5 Gb/s/pin 8-Gb LPDDR5 SDRAM with various high-speed and low-power techniques" (Samsung,
#: IEEE JSSC, abstract): "Read and write power decrease by 21% and 33% compared to LPDDR4X at 4.266 Gb/s"
SAMSUNG_LPDDR5_OVER_LPDDR4X = _range(
    1 - 0.33,
    1 - 0.21,
    "ratio",
    "[P] Samsung 7.5 Gb/s LPDDR5, JSSC (abstract): read -21 %, write -33 % power vs LPDDR4X at 4.266 Gb/s",
)
#: [S] Horowitz ISSCC 2014: DRAM, 1.3-2.6 nJ per 64-bit access (published-figures §3)
HOROWITZ_DRAM_PJ_PER_BIT = _range(
    1300 / 64,
    2600 / 64,
    "pJ/bit",
    "[S] Horowitz ISSCC 2014: DRAM 1.3-2.6 nJ per 64 b "
    "(Jouppi's 1300 pJ is its lower end: not fully independent)",
)
#: [P] "A 68.7 fJ/b/mm 375 GB/s/mm single-ended PAM-4 interface with per-pin training sequence for the
#: next-generation HBM controller" (40 nm, abstract): 0.41 pJ/b
PAM4_HBM_PHY_PJ_PER_BIT = Reference(
    0.41, "pJ/bit", "[P] 40 nm PAM-4 next-generation HBM controller interface (abstract): 0.41 pJ/b"
)

# --- timing and voltage ----------------------------------------------------------------------------
#: the clock bound of the 7 nm pipeline-1 INT8 PE at nominal voltage, from shipped 7 nm
#: silicon: TPU v4i 1.05 GHz, A100 1.41 GHz (published-figures §8b), MediaTek MT8192's Cortex-A76 cores
#: 2.171 GHz (Linux mt8192.dtsi clock-frequency) [P]
PE_7NM_FMAX_BOUND_MHZ = Reference(
    2500.0,
    "MHz",
    "bound for a 7 nm pipeline-1 PE: shipped 7 nm silicon clocks at 1.05 "
    "(TPU v4i), 1.41 (A100), 2.17 GHz (MT8192 Cortex-A76)",
)
#: [P] 7 nm-family silicon the 7 nm Vth is fitted to: MediaTek MT8195 (TSMC N6) Mali-G57 GPU operating
#: points, Linux arch/arm64/boot/dts/mediatek/mt8195.dtsi gpu_opp_table (patch "arm64: dts: mt8195:
#: Add panfrost node for Mali-G57 Valhall Natt GPU", Collabora, LKML 2023-02-23): (V, MHz).
MT8195_GPU_OPP = (
    (0.625, 390.0),
    (0.63125, 410.0),
    (0.63125, 431.0),
    (0.6375, 473.0),
    (0.6375, 515.0),
    (0.64375, 556.0),
    (0.65, 598.0),
    (0.65, 640.0),
    (0.6625, 670.0),
    (0.675, 700.0),
    (0.6875, 730.0),
    (0.7, 760.0),
    (0.7125, 790.0),
    (0.725, 820.0),
    (0.7375, 850.0),
    (0.75, 880.0),
)


def vf_curve(opp) -> list[tuple[float, float]]:
    """The (V, MHz) points of an OPP table where the voltage sets the frequency: above its floor, i.e.
    above the highest voltage two operating points share (where frequency is lowered below the
    curve), plus that voltage's highest frequency."""
    volts = [v for v, _ in opp]
    floor = max((v for v in volts if volts.count(v) > 1), default=min(volts))
    return sorted((v, max(f for w, f in opp if w == v)) for v in set(volts) if v >= floor)


def fit_vth(points, alpha: float) -> float:
    """[D] Least-squares Vth of the alpha-power law on log frequency relative to the top point of
    ``points`` ((V, MHz)); golden-section search over 0 < Vth < the lowest voltage."""
    (vt_top, ft_top), lo, hi = max(points), 0.0, min(v for v, _ in points) - 1e-3

    def sse(vt: float) -> float:
        top = vt_top / (vt_top - vt) ** alpha
        return sum((math.log(top * (v - vt) ** alpha / v) - math.log(f / ft_top)) ** 2 for v, f in points)

    g = (math.sqrt(5) - 1) / 2
    while hi - lo > 1e-7:
        a, b = hi - g * (hi - lo), lo + g * (hi - lo)
        lo, hi = (lo, b) if sse(a) < sse(b) else (a, hi)
    return (lo + hi) / 2


#: [P] MediaTek MT8192 (TSMC 7 nm, per MediaTek's product brief [S, not re-read]) Mali-G57 GPU operating
#: points, Linux arch/arm64/boot/dts/mediatek/mt8192.dtsi gpu_opp_table: (V, MHz)
MT8192_GPU_OPP = (
    (0.60625, 358.0),
    (0.618750, 399.0),
    (0.631250, 440.0),
    (0.643750, 482.0),
    (0.656250, 523.0),
    (0.668750, 564.0),
    (0.681250, 605.0),
    (0.693750, 647.0),
    (0.706250, 688.0),
    (0.725, 724.0),
    (0.7375, 748.0),
    (0.75, 772.0),
    (0.7625, 795.0),
    (0.775, 819.0),
    (0.7875, 843.0),
    (0.8, 866.0),
)
MT8192_SOURCE = "[P] MT8192 (7 nm) Mali-G57 GPU OPP table, Linux mt8192.dtsi"
#: [P] Rockchip RK3399 (28 nm) Cortex-A72 cluster, default bin, Linux rk3399-opp.dtsi cluster1_opp (V, MHz)
RK3399_A72_OPP = (
    (0.825, 816.0),
    (0.875, 1008.0),
    (0.95, 1200.0),
    (1.025, 1416.0),
    (1.10, 1608.0),
    (1.20, 1800.0),
)
RK3399_SOURCE = "[P] RK3399 (28 nm) Cortex-A72 OPP table, Linux rk3399-opp.dtsi"

# --- power shares ----------------------------------------------------------------------------------
#: [P] Duarte, Vijaykrishnan, Irwin, "A clock power model to evaluate impact of architectural and
#: technology optimizations", IEEE TVLSI 10(6), 2002 (abstract): the clock "is known to consume at
#: least a quarter of the power budget of existing microprocessors"
DUARTE_CLOCK_SHARE = Reference(
    0.25,
    "share",
    "[P] Duarte et al. IEEE TVLSI 2002: clock >= 1/4 of microprocessor power (clock-gated designs)",
)
#: [S] Antepara et al. SC'25 (published-figures §3): A100 SXM4 40 GB constant power 54 W, against its
#: 400 W TDP: an upper bound on its leakage share (constant power also holds idle clocks, HBM refresh, I/O)
A100_CONSTANT_POWER_SHARE = Reference(
    54.0 / 400.0,
    "share",
    "[S] Antepara et al. SC'25: A100 constant power 54 W of 400 W TDP (upper bound on the leakage share)",
)


# --- clock wiring -----------------------------------------------------------------------------------
#: [P] OpenROAD-flow-scripts, flow/platforms/asap7/setRC.tcl: ``set_wire_rc -clock -resistance
#: 5.13971E-02 -capacitance 1.44549E-01`` (Liberty units: fF per um), the ASAP7 platform's clock-net
#: wire capacitance per um
ASAP7_CLOCK_WIRE_FF_PER_UM = 0.144549


# ================================================================================================
# ppa.tech's leakage and logic-area constants (moved here from ppa.tech, which re-exports them)
# --- Leakage ---------------------------------------------------------------------------------
# Logic leakage per mm^2 of standard-cell area, from a logic library's drive-1 inverter at each anchor node
# (not CACTI's ITRS-HP SRAM-macro leakage density, 324-346 mW/mm^2 at 360 K, 17x to 70x these):
# [P] 45 nm: Nangate 45 nm Open Cell Library (FreePDK45), typical 1.1 V, 25 C: INV_X1 cell_leakage_power
#     14.353185 nW (NangateOpenCellLibrary_typical.lib) on 0.532 um^2 (1.4 um row x 0.38 um) = 26.98 mW/mm^2.
# [P] 7 nm: ASAP7 RVT TT (0.7 V, 25 C; ../shared/reference/asap7, asap7sc7p5t_INVBUF_RVT_TT_nldm_220122):
#     INVx1_ASAP7_75t_R leakage 51.1588 pW on 0.04374 um^2 = 1.170 mW/mm^2.
# Each taken to its node's nominal voltage (``leakage_voltage_factor``) and to LEAKAGE_T_REF_C [D]; other
# nodes log-linear in log(node) between the anchors; 65 nm takes 45 nm's [A: planar, same library family].
# Placed logic leaks as its cells; RVT at 7 nm (the library the 7 nm timing uses); LVT/SLVT cells leak
# 9.6x / 97x more (VT_FLAVOURS below). SRAM macros keep CACTI's leakage (ppa.sram).
LOGIC_LEAK_45_W_MM2, LOGIC_LEAK_45_V, LOGIC_LEAK_45_C = 14.353185e-9 / 0.532e-6, 1.1, 25.0
LOGIC_LEAK_7_W_MM2, LOGIC_LEAK_7_V, LOGIC_LEAK_7_C = 51.1588e-12 / 0.04374e-6, 0.7, 25.0
LEAKAGE_T_REF_C = 360.0 - 273.15
# Temperature dependence: exponential, 2.5x between 90 C and 130 C (Liao, Li, He, ISLPED 2003),
# i.e. k = ln(2.5) / 40 K = 0.0229 / K. Not the unsourced "doubles every 10 C" rule.
LEAKAGE_TEMP_COEFF_PER_K = math.log(2.5) / 40.0
#: Voltage dependence [A]: P_leak = V I_off, I_off ~ 10^(DIBL (V - Vnom) / SS) with DIBL 100 mV/V
#: and subthreshold swing 100 mV/decade, typical short-channel values (labelled, not cited): one
#: decade of I_off per volt of supply.
LEAKAGE_DECADES_PER_V = 0.100 / 0.100
# --- Logic area: published logic densities x a realised-density factor ----------------------------
# What our "transistors" are: ppa.synth counts the mapped generic-gate netlist with Yosys's
# ``stat -tech cmos`` table (NAND2/NOR2 4, INV 2, AOI3/OAI3 6, AOI4/OAI4 8, XOR/XNOR 12, MUX 12).
# That is the static-CMOS transistor count a foundry library cell of the same function has (NAND2 4
# transistors is exactly the cell Bohr's metric counts), except the flip-flop, which Yosys counts
# as 16: ppa.synth counts a library D flip-flop's 22 (osu018's DFFPOSX1, ppa.synth.FF_TRANSISTORS).
# A scan flip-flop has more; designs here have no scan chains [A].
#
#: Peak logic density (MTr/mm^2) per model node (``NodeSpec.density_mtr_mm2``) in Bohr's metric (Intel,
#: Technology and Manufacturing Day 2017: 0.6 x NAND2 + 0.4 x scan-flip-flop transistors per cell area;
#: minimum-size cells, no routing or utilisation). Sources (docs/published-silicon.md, "Logic density"):
#: [S] 20 (22/20 nm): Intel 22 nm 15.3; 14: Intel 14 nm 37.5 (both Intel 2017 via Ars Technica); 16: "around
#:     28" for foundry 14/16 nm (Intel's estimate; TSMC 16FF+ 28.9 per WikiChip); 10: "around 50" (Intel's
#:     estimate; TSMC 10FF 52.5 per WikiChip); 7: TSMC N7 high-density library 91.2 (WikiChip);
#: [D] 65, 45, 32 nm (planar, no published density): Intel 22 nm's 15.3 scaled by Intel's gate pitch x
#:     metal-1 pitch (``INTEL_GP_M1P_NM``): 2.38, 4.30, 8.70; checked: Nangate 45 nm NOR2_X1 / SDFF_X1 give
#:     5.10; 28 nm: log-node between 32 and 20 nm (10.2); checked: TSMC 28 nm pitches give 10.5.
#: Pitch-law check: 22 -> 14 nm predicts 30.3 against Intel's 37.5 (0.81x) -- tests/ppa/test_density.py.
INTEL_22NM_DENSITY_MTR_MM2 = 15.3
#: [S] Intel contacted gate pitch and metal-1 pitch (nm) of its 65/45/32/22/14/10 nm processes (Intel
#: IEDM/VLSI process papers via WikiChip (22, 32 nm), an IEDM 2007 summary (45 nm gate pitch),
#: S. Jones, SemiWiki 2014 (65 nm gate pitch), Intel 2017 via KitGuru / Electronics Weekly (14, 10 nm);
#: the 65 and 45 nm metal-1 pitches not re-read; docs/published-silicon.md)
INTEL_GP_M1P_NM = {
    65: (220.0, 210.0),
    45: (160.0, 160.0),
    32: (112.5, 112.5),
    22: (90.0, 80.0),
    14: (70.0, 52.0),
    10: (54.0, 36.0),
}


def pitch_scaled_density(intel_nm: int) -> float:
    """[D] Intel 22 nm density x (GP x M1P at 22 nm) / (GP x M1P at ``intel_nm``)."""
    g22, m22 = INTEL_GP_M1P_NM[22]
    g, m = INTEL_GP_M1P_NM[intel_nm]
    return INTEL_22NM_DENSITY_MTR_MM2 * (g22 * m22) / (g * m)


#: Realised density of a placed-and-routed block relative to the library's peak:
#: [S] placement utilisation 0.70: the ASAP7 7 nm reference block closed in Cadence Innovus
#:     (17.1-21.1) at 70.1-70.4 % final density (Centre-for-Hardware-Security/asap7_reference_design);
#:     60-80 % is the usual range for timing-driven blocks.
#: [A] post-layout cell growth 1.25: buffering and upsizing for timing, the clock tree, hold fixing,
#:     tap and tie cells, none of which the pre-layout generic netlist holds, add about a quarter to
#:     its cell area; and real netlists use cells above the minimum size Bohr's metric counts.
#: [D] fraction = 0.70 / 1.25 = 0.56. Checked (not fitted) against whole-chip densities, which are
#: upper bounds for logic because they include SRAM (a 6T bitcell of 0.027 um^2 at N7 packs 222
#: transistors per um^2, published-figures §5.2): NVIDIA A100 54.2 B transistors / 826 mm^2 = 65.6
#: MTr/mm^2 = 0.72 of N7's 91.2 (docs/published-silicon.md).
PLACEMENT_UTILISATION = 0.70
POST_LAYOUT_CELL_GROWTH = 1.25
REALISED_DENSITY_FRACTION = PLACEMENT_UTILISATION / POST_LAYOUT_CELL_GROWTH

# --- threshold-voltage flavours of the logic cells (DesignPoint.vt, ppa --vt) --------------------------
# Threshold-voltage flavours of the logic cells: ``rvt`` (regular), ``lvt`` (low), ``slvt`` (super-low).
#
# A product team meets a fast clock with faster cells before it adds pipeline stages: the same cells
# with a lower threshold voltage switch faster, leak more and take a little more energy per toggle.
# The choice is a design parameter (``DesignPoint.vt``; ``sparsepe ppa --vt``). Left unset, the model
# picks what a team would for the clock asked: the lowest-leakage flavour, in the order rvt, lvt,
# slvt, that meets the clock in the node's voltage range (``ppa.model.operating_point_of``); with no
# clock asked, rvt. ``ppa --json`` reports the flavour and how it was chosen in ``details.vt``.
#
# The factors multiply the timing FO4 (every stage of the critical path), the logic's leakage density
# and its toggle energy (logic, flip-flops and clock, and the vector unit). The whole logic is taken in
# the one flavour: a multi-Vt flow that swaps only the critical paths gets most of the speed for a
# fraction of the leakage, so the leakage here is an upper bound of a design at that speed. SRAM
# macros keep their own cells (ppa.sram). Area is unchanged: the flavours are the same cells with
# another implant (identical areas in the library).
#
# Source [P]: ASAP7 7 nm predictive PDK, TT corner, 0.7 V, 25 C, NLDM libraries of the same releases
# (asap7sc7p5t INVBUF 220122, SIMPLE 211120, SEQ 220123); RVT in ../shared/reference/asap7, LVT and SLVT
# from The-OpenROAD-Project/OpenROAD-flow-scripts ``flow/platforms/asap7/lib``. Read with bilinear NLDM
# interpolation (as OpenSTA does), each stage at its self-consistent FO4 slew; the RVT INVx1 FO4 read so is
# 19.55 ps against OpenSTA's 19.48 ps on the same library (ppa.tech FO4_7NM_PS). Per cell, LVT / RVT and
# SLVT / RVT:
#
# ========================================  ============  ============
#                                           LVT / RVT     SLVT / RVT
# ========================================  ============  ============
# INVx1 FO4 (19.55 / 15.72 / 13.42 ps)      0.804         0.686
# NAND2x1 A->Y at 4 INVx1 loads             0.788         0.663
# NOR2x1 B->Y FO4                           0.792         0.667
# FAx1 A->CON at 4 INVx1 loads              0.793         0.668
# DFFHQNx1 CLK->QN at 4 INVx1 loads         0.775         0.640
# leakage INVx1/x2, NAND2, FA, DFF          9.35-9.83     93.6-99.8
# FO4 stage energy (4 Cin V^2 + internal)   1.051         1.140
# DFF clock-pin energy per cycle            1.04          1.17
# cell area                                 1.00          1.00
# ========================================  ============  ============
#
# Taken: delay 0.79 / 0.66 (the geometric mean of the five delay rows, 0.790 and 0.664), leakage 9.6 / 97
# (the middle of the rows), toggle energy 1.05 / 1.14 (the FO4 stage's; the clock pins' 1.04 / 1.17 are
# within 3 %). The ratios are ASAP7's at 0.7 V; the model applies them at every node and voltage [A]: the
# alpha-power law keeps one threshold per node (ppa.tech VTH_V), so the flavour moves delay by the same
# factor at every voltage, which overstates the gain at low voltage a little (a lower threshold also
# flattens the delay-voltage curve).


@dataclass(frozen=True)
class VtFlavour:
    name: str
    delay: float  # x the timing FO4
    leakage: float  # x the logic leakage density
    energy: float  # x the logic toggle energy


#: In order of leakage: the automatic choice tries them in this order.
VT_FLAVOURS = {
    "rvt": VtFlavour("rvt", 1.0, 1.0, 1.0),
    "lvt": VtFlavour("lvt", 0.79, 9.6, 1.05),
    "slvt": VtFlavour("slvt", 0.66, 97.0, 1.14),
}
VT_CHOICES = tuple(VT_FLAVOURS)


def vt_flavour(name: str | None) -> VtFlavour:
    """The flavour ``name`` (None: rvt)."""
    if name is None:
        return VT_FLAVOURS["rvt"]
    try:
        return VT_FLAVOURS[str(name).lower()]
    except KeyError:
        raise InputError(
            f"unknown threshold-voltage flavour {name!r}; choose one of {', '.join(VT_CHOICES)}", where="--vt"
        ) from None
