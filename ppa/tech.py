"""Technology nodes: voltage, delay, energy, area and leakage scaling, and the calibrated
per-transistor / per-toggle constants.

Scaling: Stillmaker & Baas, "Scaling equations for the accurate prediction of CMOS device
performance from 180 nm to 7 nm", Integration 58 (2017) 74-81. Delay factor a V^3 + b V^2 + c V + d,
energy factor e V^2 + f V + g (HP models), area factors relative to 45 nm. Coefficients as
transcribed in UCLA NanoCAD ``nodeScale.py`` (published-figures.md section 4, which checks them
against the paper's corrigendum). Everything here is expressed relative to 45 nm at 1.0 V, the
node and voltage of the Horowitz (ISSCC 2014) calibration anchor.

Voltage range: each node is modelled from V_nom - 0.25 V up to V_nom (nominal voltages as listed
in published-figures section 4; 32 nm and 20 nm 0.9 V are PTM nominals, labelled there as
assumptions). The window is ours [D]: the cubic delay fits turn non-physical above nominal
(e.g. the 32 nm fit slows down above 0.85 V) and we do not extrapolate them; 0.25 V below nominal
stays well above threshold. Outside the window the model raises an InputError.
"""

from __future__ import annotations

import math
from dataclasses import dataclass

from hw.errors import InputError

# --- Stillmaker & Baas 2017 coefficients (HP models; nodeScale depCoeffDict / areaDict) ---------
# node: (delay a, b, c, d), (energy e, f, g), nominal V, area factor relative to 45 nm
_NODES: dict[int, tuple[tuple[float, float, float, float], tuple[float, float, float], float, float]] = {
    45: ((-501.6, 1567, -1619, 566.1), (1.018, -0.3107, 0.1539), 1.0, 1.0),  # 1.0 V: PTM nominal (published-figures §4)
    32: ((-1047, 2982, -2797, 873.5), (0.8367, -0.4341, 0.1701), 0.9, 0.46),  # 0.9 V: PTM nominal (assumed)
    20: ((0, 34.63, -66.37, 41.15), (0.373, -0.1582, 0.04104), 0.9, 0.21),  # 0.9 V: PTM nominal (assumed)
    16: ((0, 24.8, -47.52, 28.87), (0.2958, -0.1241, 0.03024), 0.85, 0.19),  # 0.85 V: fpga21-scaled-tech (PTM HP)
    14: ((-40.66, 109.2, -100.6, 35.92), (0.2363, -0.09675, 0.02239), 0.8, 0.17),  # 0.8 V: PTM nominal (published-figures §4)
    10: ((-34.95, 93.65, -85.99, 30.4), (0.2068, -0.09311, 0.02375), 0.75, 0.10),  # 0.75 V: PTM nominal (published-figures §4)
    7: ((-28.58, 76.6, -70.26, 24.69), (0.1776, -0.09097, 0.02447), 0.7, 0.059),  # 0.7 V: PTM nominal (published-figures §4)
}
#: node names accepted; 22 is the same Stillmaker model as 20 ("22/20 nm").
NODE_ALIASES = {22: 20}
NODES_NM = (45, 32, 22, 20, 16, 14, 10, 7)
VOLTAGE_WINDOW_V = 0.25  # [D] modelled range below nominal, see module docstring

# --- Calibrated on ONE anchor: Horowitz ISSCC 2014, 45 nm, 8-bit multiply 0.2 pJ, 282 um^2 -----
# The 8x8->16 unsigned multiplier of ppa.operators, through the ppa.synth flow, maps to 2210
# CMOS transistors and toggles 125.628 gate outputs per operation on uniformly random operands
# (seed 2014, 256 x 1024 operations; ppa.calibration.calibrate() re-derives both, a test pins
# them). Horowitz figures via Kim et al. 2023 Fig. 15 / H&P 6e Fig. 1.13 (published-figures §3).
CAL_MUL8_TRANSISTORS = 2210
CAL_MUL8_TOGGLES_PER_OP = 125.628
HOROWITZ_MUL8_PJ = 0.2  # Horowitz ISSCC 2014, 45 nm
HOROWITZ_MUL8_UM2 = 282.0  # Horowitz ISSCC 2014, 45 nm (area via Kim et al. 2023 / H&P 6e)
#: energy of one net toggle at 45 nm, 1.0 V (pJ) [D] = 0.2 pJ / 125.628
E_TOGGLE_45_PJ = HOROWITZ_MUL8_PJ / CAL_MUL8_TOGGLES_PER_OP
#: area per transistor at 45 nm (um^2), placement density of the anchor included [D] = 282 / 2210
AREA_PER_TRANSISTOR_45_UM2 = HOROWITZ_MUL8_UM2 / CAL_MUL8_TRANSISTORS

# --- Gate delay at 45 nm, 1.0 V ----------------------------------------------------------------
# FO4 delay per node: NOT FOUND in an authoritative source (published-figures §4). Derived [D]
# from the two weak mentions there, each moved to 45 nm / 1.0 V with the Stillmaker delay factor:
# 32 nm FO4 8.7 ps / 0.6686 = 13.0 ps; 90 nm FO4 45 ps / 1.887 (90 nm at 1.2 V) = 23.8 ps.
# Geometric mean: 17.6 ps. One mapped gate (NAND/NOR/AOI/XOR) is costed as one FO4.
GATE_DELAY_45_PS = math.sqrt(13.01 * 23.84)
#: flip-flop overhead (clock-to-Q + setup) in gate delays: a labelled assumption [A], the usual
#: 3-4 FO4 of textbook pipelining analyses; we take 3.
REGISTER_OVERHEAD_GATES = 3.0

# --- Leakage -----------------------------------------------------------------------------------
# [D] from the CACTI 7 runs (published-figures §5.1, itrs-hp cells and periphery, 360 K = 86.85 C):
# leakage per mm^2 of SRAM macro is nearly node-independent, 37.4 mW / 0.1155 mm^2 = 324 mW/mm^2
# (45 nm), 340 (32 nm), 346 (22 nm). We take the mean, 337 mW/mm^2, as the leakage density of
# high-performance logic at 86.85 C and apply it to the synthesised logic area, i.e. leakage is
# proportional to transistor count x area per transistor at the node. HP cells are the leaky end
# (LSTP is 3-4 orders lower); this is stated, not hidden.
LEAKAGE_W_PER_MM2_REF = (0.0374 / 0.115458 + 0.0199006 / 0.0584752 + 0.00957119 / 0.0276757) / 3
LEAKAGE_T_REF_C = 360.0 - 273.15
# Temperature dependence: exponential, 2.5x between 90 C and 130 C (Liao, Li, He, ISLPED 2003),
# i.e. k = ln(2.5) / 40 K = 0.0229 / K. Not the unsourced "doubles every 10 C" rule.
LEAKAGE_TEMP_COEFF_PER_K = math.log(2.5) / 40.0


@dataclass(frozen=True)
class Node:
    """One technology node at one supply voltage."""

    nm: int
    voltage_v: float

    @property
    def model_nm(self) -> int:
        return NODE_ALIASES.get(self.nm, self.nm)

    # relative factors (45 nm, 1.0 V = 1)
    @property
    def delay_factor(self) -> float:
        return _delay(self.model_nm, self.voltage_v) / _delay(45, 1.0)

    @property
    def energy_factor(self) -> float:
        return _energy(self.model_nm, self.voltage_v) / _energy(45, 1.0)

    @property
    def area_factor(self) -> float:
        return _NODES[self.model_nm][3]

    # absolute figures
    @property
    def gate_delay_ps(self) -> float:
        return GATE_DELAY_45_PS * self.delay_factor

    @property
    def toggle_energy_pj(self) -> float:
        return E_TOGGLE_45_PJ * self.energy_factor

    @property
    def area_per_transistor_um2(self) -> float:
        return AREA_PER_TRANSISTOR_45_UM2 * self.area_factor

    def leakage_w(self, transistors: float, temp_c: float) -> float:
        """Leakage of ``transistors`` logic transistors at junction temperature ``temp_c``."""
        area_mm2 = transistors * self.area_per_transistor_um2 * 1e-6
        return area_mm2 * LEAKAGE_W_PER_MM2_REF * math.exp(LEAKAGE_TEMP_COEFF_PER_K * (temp_c - LEAKAGE_T_REF_C))

    def cycle_time_ps(self, logic_depth: int) -> float:
        """Critical path: logic depth x gate delay + register overhead."""
        return (logic_depth + REGISTER_OVERHEAD_GATES) * self.gate_delay_ps


def _delay(nm: int, v: float) -> float:
    a, b, c, d = _NODES[nm][0]
    return ((a * v + b) * v + c) * v + d


def _energy(nm: int, v: float) -> float:
    e, f, g = _NODES[nm][1]
    return (e * v + f) * v + g


def check_node(nm) -> int:
    if isinstance(nm, bool) or not isinstance(nm, (int, float)) or int(nm) != nm or int(nm) not in NODES_NM:
        raise InputError(f"unknown technology node {nm!r} nm; known: {', '.join(map(str, NODES_NM))}", where="--node")
    return int(nm)


def nominal_voltage(nm: int) -> float:
    return _NODES[NODE_ALIASES.get(check_node(nm), nm)][2]


def voltage_range(nm: int) -> tuple[float, float]:
    vn = nominal_voltage(nm)
    return round(vn - VOLTAGE_WINDOW_V, 4), vn


def node(nm, voltage_v: float | None = None) -> Node:
    """A node at ``voltage_v`` (default nominal); raises InputError outside the modelled range."""
    nm = check_node(nm)
    lo, hi = voltage_range(nm)
    v = hi if voltage_v is None else float(voltage_v)
    if not (lo - 1e-9 <= v <= hi + 1e-9):
        raise InputError(f"{v:g} V is outside the modelled range {lo:g}-{hi:g} V of the {nm} nm node", where="--voltage")
    return Node(nm, v)


def voltage_grid(nm: int, step_v: float = 0.01) -> list[float]:
    lo, hi = voltage_range(nm)
    n = int(round((hi - lo) / step_v))
    return [round(lo + i * step_v, 4) for i in range(n + 1)]

# --- Clock energy ---------------------------------------------------------------------------------
#: Clock energy per flip-flop per cycle, in net-toggle equivalents: a labelled assumption [A].
#: The clock pin of a D flip-flop sees two transitions per cycle (rise and fall) on a load about
#: that of one gate-output net, and the clock tree that drives it adds about half again; 2 x 1.5
#: = 3 toggles. No clock gating is modelled.
CLOCK_TOGGLES_PER_FF_CYCLE = 3.0
