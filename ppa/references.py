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
HOROWITZ_FP16MUL_FP32ADD_PJ = Reference(1.1 + 0.9, "pJ", "[S] Horowitz ISSCC 2014 (45 nm, 0.9 V): fp16 multiply 1.1 + "
                                        "fp32 add 0.9 pJ (no bf16 in the table; fp16's 11-bit significand multiplier is larger "
                                        "than bf16's 8-bit one)")
#: [S] Jouppi et al. ISCA 2021 Table 2 (7 nm): bf16 multiply 0.21 + fp32 add 0.38 pJ
JOUPPI_BF16_MAC_PJ = Reference(0.21 + 0.38, "pJ", "[S] Jouppi et al. ISCA 2021 Table 2 (7 nm): bf16 multiply 0.21 + fp32 "
                               "add 0.38 pJ")

# --- SRAM ------------------------------------------------------------------------------------------
#: [S] Keckler et al., IEEE Micro 2011, Table 1 (published-figures §3): 64-bit read from an 8 KB SRAM,
#: 14 pJ at 40 nm, projected 2.4 / 1.8 pJ at 10 nm
KECKLER_8KB_40NM_PJ = Reference(14.0, "pJ per 64-bit read", "[S] Keckler et al. IEEE Micro 2011 Table 1: 8 KB SRAM, "
                                "40 nm (voltage not given)")
KECKLER_8KB_10NM_PJ = _range(1.8, 2.4, "pJ per 64-bit read", "[S] Keckler et al. IEEE Micro 2011 Table 1: 8 KB SRAM, "
                             "projected for 10 nm (2011 projection, not silicon)")

# --- DRAM and PHY ----------------------------------------------------------------------------------
#: [S] Jouppi et al. ISCA 2021 Table 2: HBM2, 250-450 pJ per 64-bit access (published-figures §3, §13)
JOUPPI_HBM2_PJ_PER_BIT = _range(250 / 64, 450 / 64, "pJ/bit", "[S] Jouppi et al. ISCA 2021 Table 2: HBM2 250-450 pJ "
                                "per 64 b (footnoted as I/O energy)")
#: [S] SK hynix, via Moon et al. IEDM 2023 (published-figures §7.2): HBM2E about 4.3 pJ/bit
HYNIX_HBM2E_PJ_PER_BIT = Reference(4.3, "pJ/bit", "[S] SK hynix via Moon et al. IEDM 2023: HBM2E about 4.3 pJ/bit")
#: [S] LPDDR4, 13-14 pJ/bit: DramDSE simulation of a 32 Gb single-die and a 4 x 8 Gb package at
#: 3.2 Gb/s/pin, H. Ha, Stanford PhD thesis (as collected in the Dongyunkam/DRAM_info repository, README §4)
HA_LPDDR4_PJ_PER_BIT = _range(13.0, 14.0, "pJ/bit", "[S] H. Ha, Stanford PhD thesis, DramDSE simulation of LPDDR4 at "
                              "3.2 Gb/s/pin: 13-14 pJ/bit (via the DRAM_info collection)")
#: [P] "A 7.5 Gb/s/pin 8-Gb LPDDR5 SDRAM with various high-speed and low-power techniques" (Samsung,
#: IEEE JSSC, abstract): "Read and write power decrease by 21% and 33% compared to LPDDR4X at 4.266 Gb/s"
SAMSUNG_LPDDR5_OVER_LPDDR4X = _range(1 - 0.33, 1 - 0.21, "ratio", "[P] Samsung 7.5 Gb/s LPDDR5, JSSC (abstract): read "
                                     "-21 %, write -33 % power vs LPDDR4X at 4.266 Gb/s")
#: [S] Horowitz ISSCC 2014: DRAM, 1.3-2.6 nJ per 64-bit access (published-figures §3)
HOROWITZ_DRAM_PJ_PER_BIT = _range(1300 / 64, 2600 / 64, "pJ/bit", "[S] Horowitz ISSCC 2014: DRAM 1.3-2.6 nJ per 64 b "
                                  "(Jouppi's 1300 pJ is its lower end: not fully independent)")
#: [P] "A 68.7 fJ/b/mm 375 GB/s/mm single-ended PAM-4 interface with per-pin training sequence for the
#: next-generation HBM controller" (40 nm, abstract): 0.41 pJ/b
PAM4_HBM_PHY_PJ_PER_BIT = Reference(0.41, "pJ/bit", "[P] 40 nm PAM-4 next-generation HBM controller interface (abstract): "
                                    "0.41 pJ/b")

# --- timing and voltage ----------------------------------------------------------------------------
#: the clock bound of the 7 nm pipeline-1 INT8 PE at nominal voltage, from shipped 7 nm
#: silicon: TPU v4i 1.05 GHz, A100 1.41 GHz (published-figures §8b), MediaTek MT8192's Cortex-A76 cores
#: 2.171 GHz (Linux mt8192.dtsi clock-frequency) [P]
PE_7NM_FMAX_BOUND_MHZ = Reference(2500.0, "MHz", "bound for a 7 nm pipeline-1 PE: shipped 7 nm silicon clocks at 1.05 "
                                  "(TPU v4i), 1.41 (A100), 2.17 GHz (MT8192 Cortex-A76)")
#: [P] 7 nm-family silicon the 7 nm Vth is fitted to: MediaTek MT8195 (TSMC N6) Mali-G57 GPU operating
#: points, Linux arch/arm64/boot/dts/mediatek/mt8195.dtsi gpu_opp_table (patch "arm64: dts: mt8195:
#: Add panfrost node for Mali-G57 Valhall Natt GPU", Collabora, LKML 2023-02-23): (V, MHz).
MT8195_GPU_OPP = ((0.625, 390.0), (0.63125, 410.0), (0.63125, 431.0), (0.6375, 473.0), (0.6375, 515.0),
                  (0.64375, 556.0), (0.65, 598.0), (0.65, 640.0), (0.6625, 670.0), (0.675, 700.0), (0.6875, 730.0),
                  (0.7, 760.0), (0.7125, 790.0), (0.725, 820.0), (0.7375, 850.0), (0.75, 880.0))


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
MT8192_GPU_OPP = ((0.60625, 358.0), (0.618750, 399.0), (0.631250, 440.0), (0.643750, 482.0), (0.656250, 523.0),
                  (0.668750, 564.0), (0.681250, 605.0), (0.693750, 647.0), (0.706250, 688.0), (0.725, 724.0),
                  (0.7375, 748.0), (0.75, 772.0), (0.7625, 795.0), (0.775, 819.0), (0.7875, 843.0), (0.8, 866.0))
MT8192_SOURCE = "[P] MT8192 (7 nm) Mali-G57 GPU OPP table, Linux mt8192.dtsi"
#: [P] Rockchip RK3399 (28 nm) Cortex-A72 cluster, default bin, Linux rk3399-opp.dtsi cluster1_opp (V, MHz)
RK3399_A72_OPP = ((0.825, 816.0), (0.875, 1008.0), (0.95, 1200.0), (1.025, 1416.0), (1.10, 1608.0), (1.20, 1800.0))
RK3399_SOURCE = "[P] RK3399 (28 nm) Cortex-A72 OPP table, Linux rk3399-opp.dtsi"

# --- power shares ----------------------------------------------------------------------------------
#: [P] Duarte, Vijaykrishnan, Irwin, "A clock power model to evaluate impact of architectural and
#: technology optimizations", IEEE TVLSI 10(6), 2002 (abstract): the clock "is known to consume at
#: least a quarter of the power budget of existing microprocessors"
DUARTE_CLOCK_SHARE = Reference(0.25, "share", "[P] Duarte et al. IEEE TVLSI 2002: clock >= 1/4 of microprocessor power "
                               "(clock-gated designs)")
#: [S] Antepara et al. SC'25 (published-figures §3): A100 SXM4 40 GB constant power 54 W, against its
#: 400 W TDP: an upper bound on its leakage share (constant power also holds idle clocks, HBM refresh, I/O)
A100_CONSTANT_POWER_SHARE = Reference(54.0 / 400.0, "share", "[S] Antepara et al. SC'25: A100 constant power 54 W of "
                                      "400 W TDP (upper bound on the leakage share)")


# --- clock wiring -----------------------------------------------------------------------------------
#: [P] OpenROAD-flow-scripts, flow/platforms/asap7/setRC.tcl: ``set_wire_rc -clock -resistance
#: 5.13971E-02 -capacitance 1.44549E-01`` (Liberty units: fF per um), the ASAP7 platform's clock-net
#: wire capacitance per um
ASAP7_CLOCK_WIRE_FF_PER_UM = 0.144549
