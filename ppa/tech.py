"""Technology nodes: voltage, delay, energy, area and leakage scaling, and the calibrated
per-transistor / per-toggle constants; one :class:`NodeSpec` row per node (``NODE_SPECS``).

Which law is used where (each section below gives its sources and checks):
- Node to node at nominal voltage: Stillmaker & Baas, Integration 58 (2017) 74-81, HP delay and
  energy fits (as transcribed in UCLA NanoCAD ``nodeScale.py``, published-figures.md section 4),
  used AT NOMINAL voltage only (the cubic delay fits are not physical away from it).
- Node FO4 at nominal (``node_fo4_nominal_ps``, ``Node.fo4_ps``, ppa ``details.fo4_ps``): the 45 nm value x
  the node's delay ratio (``node_delay_ratio``: Stillmaker at every row, 5 nm from TSMC N5's speed gain),
  strictly falling from 180 to 5 nm. The timing FO4 a design's stage is clocked in (``fo4_nominal_ps``,
  ``Node.gate_delay_ps``): the 45 nm value and ASAP7's measured 7 nm FO4, log-linear in log(node) between;
  their ratio at 7 nm is ``REALISED_PATH_FACTOR_7NM`` (see there). Held out: TSMC's 7 nm Cortex-A72
  chiplet; 7 nm designs are capped at published 7 nm silicon's clock (ppa.silicon_clock).
- Delay versus voltage, Vmin..Vnom: the alpha-power law (Sakurai & Newton, JSSC 1990), alpha 1.3,
  per-node Vth; the 7 nm Vth fitted to MT8195's GPU V-f table, checked on MT8192 and RK3399.
- Switching energy versus voltage: C V^2. Between nodes: calibrated at both ends on the 8-bit
  multiply and 32-bit add (Horowitz ISSCC 2014 at 45 nm; Jouppi et al. ISCA 2021 at 7 nm, taken at
  0.7 V [A]), Stillmaker's shape times a node correction K(nm) in between (``node_correction``).
- Leakage: per node, voltage and temperature (``Node.leakage_w``). Logic area per transistor:
  published peak logic densities (Bohr's metric) over a realised-density factor
  (``REALISED_DENSITY_FRACTION``); Stillmaker's area factors scale the SRAM only (ppa.sram).

Voltage range of a node: [Vmin, Vnom]; the SRAM has its own minimum and rail (``sram_voltage``). Nothing
runs below Vmin (``node`` raises InputError); above Vnom the model does not extrapolate.
"""

from __future__ import annotations

import math
from collections.abc import Callable, Iterator
from contextlib import contextmanager
from dataclasses import dataclass
from typing import TYPE_CHECKING, overload

from hw.errors import InputError

# the registry's rows and the per-node figures they are built from (the ``as`` names re-exported:
# ppa.tech.<name> as before the rows moved to ppa.nodes)
from ppa.nodes import (
    ALPHA,
    N5_DENSITY_GAIN as N5_DENSITY_GAIN,
    N5_POWER_FACTOR as N5_POWER_FACTOR,
    N5_SPEED_GAIN as N5_SPEED_GAIN,
    NODE_ROWS,
    VTH_7NM_V as VTH_7NM_V,
    NodeSpec,
)
from ppa.override import assumed
from ppa.references import (  # re-exported: the 7 nm Vth's fit (ppa.nodes) as ppa.tech.<name> before
    MT8195_GPU_OPP as MT8195_GPU_OPP,
    fit_vth as fit_vth,
    vf_curve as vf_curve,
)

if TYPE_CHECKING:  # leakage_voltage_factor also takes the numpy arrays of ppa.recost
    import numpy as np
    from numpy.typing import NDArray

# --- Calibrated at TWO nodes --------------------------------------------------------------------
# 45 nm: Horowitz ISSCC 2014, "45 nm, 0.9 V" (published-figures §3, via Kim et al. 2023 Fig. 15 / H&P 6e
# Fig. 1.13): 8-bit multiply 0.2 pJ, 282 um^2; 32-bit add 0.1 pJ. ppa.operators' 8x8->16 multiplier maps to
# 2176 transistors and toggles 123.196 gate outputs per operation on random operands (CAL_*), 131.582
# toggle-equivalents (each at its net's osu018 energy, ppa.liberty.gates); the 32-bit adder 87.958 and
# 72.081 (ppa.calibration.calibrate() re-derives them, a test pins them).
CAL_SEED, CAL_CYCLES, CAL_INSTANCES = 2014, 256, 1024
CAL_MUL8_TRANSISTORS = 2176
CAL_MUL8_TOGGLE_EQ_PER_OP = 131.582
CAL_ADD32_TOGGLE_EQ_PER_OP = 72.081
HOROWITZ_MUL8_PJ = 0.2  # Horowitz ISSCC 2014, 45 nm, 0.9 V
HOROWITZ_ADD32_PJ = 0.1  # Horowitz ISSCC 2014, 45 nm, 0.9 V
HOROWITZ_MUL8_UM2 = 282.0  # Horowitz ISSCC 2014, 45 nm (area via Kim et al. 2023 / H&P 6e)
HOROWITZ_V = 0.9  # [S] the voltage of Horowitz's table (published-figures §3)
#: one toggle-equivalent at 45 nm, 0.9 V (pJ) [D]: sqrt(0.2 / 131.582 x 0.1 / 72.081), multiply 1.52 / add 1.39 fJ
E_TOGGLE_45_PJ = math.sqrt(
    HOROWITZ_MUL8_PJ / CAL_MUL8_TOGGLE_EQ_PER_OP * HOROWITZ_ADD32_PJ / CAL_ADD32_TOGGLE_EQ_PER_OP
)
#: what Horowitz's 8-bit multiplier implies per transistor of our netlist (um^2) [D] = 282 / 2176:
#: a CHECK of the logic area law, not its anchor (``ppa.calibration.horowitz_area_check``)
HOROWITZ_AREA_PER_TRANSISTOR_45_UM2 = HOROWITZ_MUL8_UM2 / CAL_MUL8_TRANSISTORS
# 7 nm: Jouppi et al. ISCA 2021 Table 2: 8-bit multiply 0.07 pJ, 32-bit add 0.03 pJ
# (published-figures §3), at our 7 nm nominal 0.7 V [A]. The same operators and toggle-equivalents
# as at 45 nm, so the node correction K7 = sqrt(0.07/131.582 x 0.03/72.081) / (E_TOGGLE_45_PJ x
# [E_S(7, 0.7) / E_S(45, 1.0)] / 0.9^2) = 4.73 [D] is the factor by which Stillmaker's device-level
# 45 -> 7 nm energy scaling (about 18x at nominal) overshoots Jouppi's.
JOUPPI_MUL8_7NM_PJ = 0.07
JOUPPI_ADD32_7NM_PJ = 0.03
JOUPPI_V = 0.7  # [A] Jouppi's Table 2 states no voltage; our 7 nm nominal

# --- Gate delay (FO4) ----------------------------------------------------------------------------
# 45 nm, 1.0 V: NOT FOUND in an authoritative source (published-figures §4). Derived [D] from the
# two weak mentions there, each moved to 45 nm / 1.0 V with the Stillmaker delay factor: 32 nm FO4
# 8.7 ps / 0.6686 = 13.0 ps; 90 nm FO4 45 ps / 1.887 (90 nm at 1.2 V) = 23.8 ps. Geometric mean:
# 17.6 ps. Nodes above 45 nm: times Stillmaker's nominal delay ratio. Checked against published
# clock rates (``silicon_clock.fo4_check``): IBM POWER6 (65 nm SOI, a 13-FO4 FPU pipeline, "over 5 GHz", logic
# supply 0.9-1.2 V: EE Times / ISSCC 2006 and Friedrich et al. ISSCC 2007) and the IBM Cell SPE
# (90 nm SOI, 5.6 GHz at 1.4 V, Flachs et al. ISSCC 2005 via IBM Research; 11 FO4 per cycle [S,
# widely quoted, not re-read]).
GATE_DELAY_45_PS = math.sqrt(13.01 * 23.84)
#: 7 nm, 0.7 V [D]: the FO4 of the ASAP7 7 nm library, RVT TT corner (0.7 V, 25 C): OpenSTA times
#: the project's FO4 chain (ppa.timing.sta ``measure_fo4``: 7 INVx1_ASAP7_75t_R stages, each loaded
#: by four copies of itself, the middle stage, mean of rise 20.16 and fall 18.80 ps; 26.2 ps with
#: INVxp33, 18.3 ps with INVx2) on asap7sc7p5t_INVBUF_RVT_TT_nldm_220122
#: (../shared/reference/asap7: The-OpenROAD-Project/asap7sc7p5t_28 @ f970bd3c, BSD-3). PDK:
#: Clark et al., "ASAP7: A 7-nm finFET predictive process design kit", Microelectronics Journal 53
#: (2016) 105-115. Stillmaker's 45 -> 7 nm delay ratio (0.259) from the 45 nm value gave 4.56 ps,
#: 4.3x less; the ASAP7 library is the 7 nm data the model's 7 nm timing is held to.
FO4_7NM_PS = 19.48
FO4_7NM_V = 0.7
#: The TIMING FO4 (the unit a stage's cycle_fo4 is multiplied by) between 45 and 7 nm [D]: log-linear in
#: log(node) between the two anchors (17.6 ps at 45 nm, 1.0 V .. 19.48 at 7 nm, 0.7 V); below 7 nm times
#: the node-delay ratio to 7 nm. The NODE FO4 (``node_fo4_nominal_ps``) is 45 nm's x ``node_delay_ratio``:
#: 4.56 ps at 7 nm. Their ratio, ``REALISED_PATH_FACTOR_7NM`` = 19.48 / 4.56 = 4.27 [D], is what a real
#: 7 nm path costs per device FO4 that Stillmaker's PTM-MG device fits leave out: the cells' own
#: extracted parasitics (ASAP7's FO4 is timed from its extracted cell views) and 7 nm finFET middle-of-line
#: capacitance. A production 7 nm design differs from this unsized RVT INVx1 corner by threshold flavour,
#: sizing and voltage (ppa.silicon_clock.PRODUCTION_7NM_BOUNDS: TSMC's N7 A72 chiplet, production silicon,
#: bounds that difference to 0.94-1.88x of this corner's FO4, so the production 7 nm corner is taken
#: as this one [D]); the STA of a design already maps for delay (timing-driven sizing in ABC). The
#: difference applies to the timing FO4 only, never to a user's Liberty file, which STA times at its own
#: corner. Between the nodes the factor is 1 at 45 nm and log-linear in log(node) to 7 nm.
FO4_ANCHORS_NM = (45, 7)

#: flip-flop overhead (clock-to-Q + setup) in gate delays [A]: textbook pipelining's 3-4 FO4; we take 3.
REGISTER_OVERHEAD_GATES = 3.0

# --- Delay versus voltage: the alpha-power law (Sakurai & Newton 1990); its index ALPHA, each node's
# Vth (NodeSpec.vth_v) and the 7 nm Vth's fit to MT8195 (VTH_7NM_V) are in ppa.nodes with the rows. TSMC N5
# against N7 (N5_SPEED_GAIN, N5_POWER_FACTOR, N5_DENSITY_GAIN: the 5 nm row's delay, energy, density) too.

# --- Minimum voltages ---------------------------------------------------------------------------
#: [S] logic Vmin = 0.73 x nominal: the hold-time Vmin of flip-flops in Intel's 22 nm tri-gate
#: process under within-die variation (Chen, Bowman, Augustine, Zhang, Tschanz, "Minimum supply
#: voltage for sequential logic circuits in a 22nm technology", ISLPED 2013: "data-retention Vmin
#: of 0.61 Vnorm and a hold-time Vmin of 0.73 Vnorm"). Applied at every node [A], rounded up to
#: 10 mV. The alpha-power law keeps >= 90 mV of overdrive there at every node (checked in tests).
LOGIC_VMIN_FRACTION = 0.73
#: [S] SRAM minimum = logic minimum + 150 mV: IBM POWER6 "uses dual power supplies, a logic supply
#: in the 0.9-to-1.2 Volt range and an SRAM power supply at about 150-mV higher" (EE Times,
#: ISSCC 2006). Capped at nominal.
SRAM_VMIN_OFFSET_V = 0.15

# --- Leakage and logic area: the constants and their sources live in ppa.references ---------------
from ppa.references import (  # noqa: E402,F401  (re-exported: ppa.tech.<name> as before)
    INTEL_22NM_DENSITY_MTR_MM2,
    INTEL_GP_M1P_NM,
    LEAKAGE_DECADES_PER_V,
    LEAKAGE_T_REF_C,
    LEAKAGE_TEMP_COEFF_PER_K,
    LOGIC_LEAK_7_C,
    LOGIC_LEAK_7_V,
    LOGIC_LEAK_7_W_MM2,
    LOGIC_LEAK_45_C,
    LOGIC_LEAK_45_V,
    LOGIC_LEAK_45_W_MM2,
    PLACEMENT_UTILISATION,
    POST_LAYOUT_CELL_GROWTH,
    REALISED_DENSITY_FRACTION,
    pitch_scaled_density,
)

# --- The node registry: one row per process node (ppa.nodes.NODE_ROWS) ---------------------------
#: the registry: node name (nm) -> its row; ``registered`` adds rows for a block
NODE_SPECS: dict[int, NodeSpec] = {s.nm: s for s in NODE_ROWS}
NODE_ALIASES: dict[int, int] = {}  # node name -> the row it is another name for ("22/20 nm")
VTH_V: dict[int, float] = {}  # model node -> threshold voltage
LOGIC_DENSITY_MTR_MM2: dict[
    int, float
] = {}  # model node -> published peak logic density (rows that give one)
NODES_NM: tuple[int, ...] = ()  # the nodes offered, largest first


def _derive() -> None:
    """Rebuild the tables above from NODE_SPECS (in place, so importers of the dicts see a change)."""
    global NODES_NM
    NODES_NM = tuple(sorted((nm for nm, s in NODE_SPECS.items() if s.offered), reverse=True))
    NODE_ALIASES.clear()
    NODE_ALIASES.update({nm: s.alias_of for nm, s in NODE_SPECS.items() if s.alias_of is not None})
    models = [s for s in NODE_SPECS.values() if s.alias_of is None]
    VTH_V.clear()
    VTH_V.update({s.nm: _interp_field(s.nm, "vth_v") for s in models})
    LOGIC_DENSITY_MTR_MM2.clear()
    LOGIC_DENSITY_MTR_MM2.update({s.nm: s.density_mtr_mm2 for s in models if s.density_mtr_mm2 is not None})


@contextmanager
def registered(*specs: NodeSpec) -> Iterator[None]:
    """The registry with the rows ``specs`` added for the block (a hypothetical node); the tables derived
    from it follow, and are restored on exit. Modules that copied NODES_NM at import do not see them."""
    known = dict(NODE_SPECS)
    clash = [s.nm for s in specs if s.nm in known]
    if clash:
        raise InputError(f"node {clash[0]} nm is already registered", where="ppa.tech.registered")
    try:
        NODE_SPECS.update({s.nm: s for s in specs})
        _derive()
        yield
    finally:
        NODE_SPECS.clear()
        NODE_SPECS.update(known)
        _derive()


def model_nm(nm: int) -> int:
    """The registry row a node name stands for (an alias's target, else the node itself)."""
    return NODE_SPECS[nm].alias_of or nm if nm in NODE_SPECS else nm


def node_spec(nm) -> NodeSpec:
    """The row of an offered node (``check_node``), its alias resolved."""
    return NODE_SPECS[model_nm(check_node(nm))]


def _between(nm: int) -> tuple[int, int]:
    """The (larger, smaller) rows an interpolated row lies between (a TypeError for another row, as
    unpacking its None did)."""
    between = NODE_SPECS[nm].between
    if between is None:
        raise TypeError(f"the {nm} nm row is not interpolated: it names no 'between' rows")
    return between


def _interp(nm: int, fn: Callable[[int], float]) -> float:
    """``fn`` of an interpolated row: log-linear in log(node) between its ``between`` rows."""
    lo, hi = _between(nm)
    t = math.log(lo / nm) / math.log(lo / hi)
    return math.exp((1 - t) * math.log(fn(lo)) + t * math.log(fn(hi)))


def _interp_field(nm: int, name: str) -> float:
    """A row's field (nominal_v, vth_v, density_mtr_mm2, area_factor), interpolated when the row leaves it
    out; equal neighbours give their value."""
    value = getattr(NODE_SPECS[nm], name)
    if value is not None:
        return value
    lo, hi = (getattr(NODE_SPECS[n], name) for n in _between(nm))
    return lo if lo == hi else _interp(nm, lambda n: getattr(NODE_SPECS[n], name))


def _delay(nm: int, v: float) -> float:
    """Stillmaker-Baas delay polynomial (Stillmaker rows only)."""
    fit = NODE_SPECS[nm].delay
    if fit is None:
        raise TypeError(f"the {nm} nm row has no Stillmaker delay fit")
    a, b, c, d = fit
    return ((a * v + b) * v + c) * v + d


def _energy(nm: int, v: float) -> float:
    """Stillmaker-Baas energy polynomial (Stillmaker rows only)."""
    fit = NODE_SPECS[nm].energy
    if fit is None:
        raise TypeError(f"the {nm} nm row has no Stillmaker energy fit")
    e, f, g = fit
    return (e * v + f) * v + g


def _vnom(nm: int) -> float:
    return _interp_field(nm, "nominal_v")


def _area(nm: int) -> float:
    return _interp_field(nm, "area_factor")


def _delay_nom(nm: int) -> float:
    return _interp(nm, _delay_nom) if NODE_SPECS[nm].delay is None else _delay(nm, _vnom(nm))


def _energy_nom(nm: int) -> float:
    return _interp(nm, _energy_nom) if NODE_SPECS[nm].energy is None else _energy(nm, _vnom(nm))


def logic_density_mtr_mm2(nm: int) -> float:
    """Published (peak, cell-area) logic density of the node, MTr/mm^2 (= transistors per um^2)."""
    return _interp_field(model_nm(nm), "density_mtr_mm2")


_derive()


def realised_density_fraction() -> float:
    """PLACEMENT_UTILISATION / POST_LAYOUT_CELL_GROWTH as the model uses them (ppa.override:
    ``placement_utilisation`` and ``post_layout_cell_growth`` when overridden)."""
    return assumed("placement_utilisation", PLACEMENT_UTILISATION) / assumed(
        "post_layout_cell_growth", POST_LAYOUT_CELL_GROWTH
    )


def realised_logic_density_mtr_mm2(nm: int) -> float:
    """Logic density a placed-and-routed block reaches: peak x REALISED_DENSITY_FRACTION."""
    return logic_density_mtr_mm2(nm) * realised_density_fraction()


def cell_area_per_transistor_um2(nm: int) -> float:
    """Standard-cell area per transistor at the library's peak density (um^2), no utilisation."""
    return 1.0 / logic_density_mtr_mm2(nm)


def area_per_transistor_um2(nm: int) -> float:
    """Placed-and-routed block area per netlist transistor (um^2): 1 / realised density."""
    return 1.0 / realised_logic_density_mtr_mm2(nm)


#: the law's block area per transistor at 45 nm (um^2), the name kept from when it
#: was Horowitz's 282 / 2210 before the flow's -noalumacc, 282 / 2176 now); ppa.calibration.calibrate() re-derives it
AREA_PER_TRANSISTOR_45_UM2 = area_per_transistor_um2(45)


@dataclass(frozen=True)
class Node:
    """One technology node at one supply voltage (construct with ``node``, which checks Vmin)."""

    nm: int
    voltage_v: float

    @property
    def model_nm(self) -> int:
        return NODE_ALIASES.get(self.nm, self.nm)

    @property
    def nominal_v(self) -> float:
        return _vnom(self.model_nm)

    @property
    def vmin_v(self) -> float:
        return vmin_v(self.nm)

    @property
    def sram_vmin_v(self) -> float:
        return sram_vmin_v(self.nm)

    # relative factors (45 nm, 1.0 V = 1)
    @property
    def delay_factor(self) -> float:
        """Gate delay relative to 45 nm at 1.0 V: ``gate_delay_ps / GATE_DELAY_45_PS``."""
        return self.gate_delay_ps / GATE_DELAY_45_PS

    @property
    def energy_factor(self) -> float:
        """Stillmaker's nominal-voltage switching-energy ratio x (V / Vnom)^2 (no node correction)."""
        nm, vn = self.model_nm, self.nominal_v
        return (_energy_nom(nm) / _energy(45, 1.0)) * (self.voltage_v / vn) ** 2

    @property
    def node_correction(self) -> float:
        return node_correction(self.model_nm)

    @property
    def area_factor(self) -> float:
        """Stillmaker's area factor relative to 45 nm: used for the SRAM's node scaling only
        (ppa.sram); logic area comes from ``area_per_transistor_um2``."""
        return _area(self.model_nm)

    # absolute figures
    @property
    def gate_delay_ps(self) -> float:
        """FO4 inverter delay at this node and voltage (ps): ``fo4_ps``."""
        return fo4_ps(self.model_nm, self.voltage_v)

    @property
    def fo4_ps(self) -> float:
        """The node's FO4 at this voltage (ps): ``node_fo4_ps`` (falls with the node; not the timing unit)."""
        return node_fo4_ps(self.model_nm, self.voltage_v)

    @property
    def toggle_energy_pj(self) -> float:
        """Energy of one net toggle: Horowitz at 45 nm / 0.9 V, Stillmaker's node shape, C V^2,
        and the node correction that makes 7 nm match Jouppi."""
        return (
            assumed("toggle_energy_45nm_pj", E_TOGGLE_45_PJ)
            * self.energy_factor
            / _E45_AT_HOROWITZ_V
            * self.node_correction
        )

    @property
    def area_per_transistor_um2(self) -> float:
        """Logic block area per netlist transistor (um^2): the node's published logic density x
        the realised-density factor (module function ``area_per_transistor_um2``)."""
        return area_per_transistor_um2(self.model_nm)

    @property
    def cell_area_per_transistor_um2(self) -> float:
        """Standard-cell area per transistor at the library's peak density (um^2)."""
        return cell_area_per_transistor_um2(self.model_nm)

    @property
    def leakage_density_w_mm2(self) -> float:
        """Logic leakage per mm^2 of cell area at this voltage and LEAKAGE_T_REF_C."""
        return leakage_density_w_mm2(self.nm) * leakage_voltage_factor(self.voltage_v, self.nominal_v)

    def leakage_w(self, transistors: float, temp_c: float) -> float:
        """Leakage of ``transistors`` logic transistors at this voltage and junction temperature ``temp_c``.

        The leakage density applies to the area the transistors' cells occupy (peak cell area per
        transistor x POST_LAYOUT_CELL_GROWTH, the buffers and clock tree leak too), not to the
        placement whitespace, which holds no transistors."""
        growth = assumed("post_layout_cell_growth", POST_LAYOUT_CELL_GROWTH)
        area_mm2 = transistors * self.cell_area_per_transistor_um2 * growth * 1e-6
        k = assumed("leakage_temp_coeff_per_k", LEAKAGE_TEMP_COEFF_PER_K)
        return area_mm2 * self.leakage_density_w_mm2 * math.exp(k * (temp_c - LEAKAGE_T_REF_C))

    def cycle_time_ps(self, logic_depth: int) -> float:
        """Critical path: logic depth x gate delay + register overhead."""
        return (logic_depth + REGISTER_OVERHEAD_GATES) * self.gate_delay_ps


#: Stillmaker energy factor of 45 nm at Horowitz's 0.9 V relative to 45 nm / 1.0 V, under C V^2
_E45_AT_HOROWITZ_V = HOROWITZ_V**2


def alpha_power_delay(v: float, nm: int, vth: float | None = None, alpha: float = ALPHA) -> float:
    """Alpha-power-law gate delay up to a constant: V / (V - Vth)^alpha (Sakurai & Newton 1990)."""
    vt = VTH_V[NODE_ALIASES.get(nm, nm)] if vth is None else vth
    if v <= vt:
        raise InputError(f"{v:g} V is at or below the threshold voltage {vt:g} V", where="--voltage")
    return v / (v - vt) ** alpha


def stillmaker_delay_ratio(nm: int) -> float:
    """Stillmaker's nominal-voltage delay of ``nm`` relative to 45 nm at 1.0 V (the published table;
    sets FO4 above 45 nm only)."""
    nm = NODE_ALIASES.get(nm, nm)
    return _delay_nom(nm) / _delay(45, 1.0)


def fo4_nominal_ps(nm: int) -> float:
    """TIMING FO4 at the node's nominal voltage (ps): the 45 nm and ASAP7 7 nm anchors, log-linear in
    log(node) between them; above 45 nm the 45 nm value times Stillmaker's nominal delay ratio, below 7 nm
    the 7 nm value times ``node_delay_ratio`` relative to 7 nm."""
    nm = NODE_ALIASES.get(nm, nm)
    w45, w7 = fo4_anchor_weights(nm)
    f45 = assumed("fo4_45nm_ps", GATE_DELAY_45_PS) * (
        stillmaker_delay_ratio(nm) if nm >= FO4_ANCHORS_NM[0] else 1.0
    )
    below = node_delay_ratio(nm) / node_delay_ratio(FO4_ANCHORS_NM[1]) if nm < FO4_ANCHORS_NM[1] else 1.0
    return f45**w45 * assumed("fo4_7nm_ps", FO4_7NM_PS) ** w7 * below


def node_delay_ratio(nm: int) -> float:
    """The node's FO4 at nominal voltage relative to 45 nm at 1.0 V: Stillmaker's nominal delay ratio
    (a row's ``fo4_between``, or an interpolated row: log-linear in log(node) between two rows)."""
    nm = NODE_ALIASES.get(nm, nm)
    spec = NODE_SPECS[nm]
    if spec.fo4_between is not None:
        lo, hi = spec.fo4_between
        t = math.log(lo / nm) / math.log(lo / hi)
        return node_delay_ratio(lo) ** (1 - t) * node_delay_ratio(hi) ** t
    return _interp(nm, node_delay_ratio) if spec.delay is None else stillmaker_delay_ratio(nm)


def node_fo4_nominal_ps(nm: int) -> float:
    """The NODE FO4 at nominal voltage (ps): 45 nm's x ``node_delay_ratio``; strictly falls 180 -> 5 nm."""
    return assumed("fo4_45nm_ps", GATE_DELAY_45_PS) * node_delay_ratio(nm)


def node_fo4_ps(nm: int, v: float) -> float:
    """``node_fo4_nominal_ps`` moved to supply ``v`` by the alpha-power law."""
    nm = NODE_ALIASES.get(nm, nm)
    return node_fo4_nominal_ps(nm) * alpha_power_delay(v, nm) / alpha_power_delay(_vnom(nm), nm)


def realised_path_factor(nm: int) -> float:
    """Timing FO4 over node FO4 at nominal (1 at and above 45 nm; REALISED_PATH_FACTOR_7NM at and below 7 nm)."""
    return fo4_nominal_ps(nm) / node_fo4_nominal_ps(nm)


def fo4_anchor_weights(nm: int) -> tuple[float, float]:
    """(w45, w7): the node's nominal FO4 is (45 nm anchor)^w45 x (7 nm anchor)^w7 (times Stillmaker's
    ratio above 45 nm), log-linear in log(node) between the anchors; each anchor moves the node's FO4
    by its ratio to this power (ppa.recost)."""
    nm = NODE_ALIASES.get(nm, nm)
    hi, lo = FO4_ANCHORS_NM
    if nm >= hi:
        return 1.0, 0.0
    if nm <= lo:
        return 0.0, 1.0
    t = math.log(hi / nm) / math.log(hi / lo)
    return 1.0 - t, t


def fo4_ps(nm: int, v: float) -> float:
    """FO4 of node ``nm`` at supply ``v`` (ps): ``fo4_nominal_ps`` moved by the alpha-power law.
    Any voltage above the threshold, also above nominal (for the silicon checks; ``node`` keeps a
    design inside the modelled range)."""
    nm = NODE_ALIASES.get(nm, nm)
    return fo4_nominal_ps(nm) * alpha_power_delay(v, nm) / alpha_power_delay(_vnom(nm), nm)


#: the toggle energy at 7 nm / Jouppi's voltage without correction, relative to the 45 nm anchor
def _k7() -> float:
    e7 = (
        E_TOGGLE_45_PJ * (_energy_nom(7) / _energy(45, 1.0)) * (JOUPPI_V / _vnom(7)) ** 2 / _E45_AT_HOROWITZ_V
    )
    target = math.sqrt(
        JOUPPI_MUL8_7NM_PJ / CAL_MUL8_TOGGLE_EQ_PER_OP * JOUPPI_ADD32_7NM_PJ / CAL_ADD32_TOGGLE_EQ_PER_OP
    )
    return target / e7


NODE_CORRECTION_7NM = _k7()
#: [D] timing FO4 over node FO4 at 7 nm, 0.7 V: 19.48 / 4.56 = 4.27 (see FO4_ANCHORS_NM)
REALISED_PATH_FACTOR_7NM = FO4_7NM_PS / (GATE_DELAY_45_PS * _delay(7, 0.7) / _delay(45, 1.0))


def node_correction(nm: int) -> float:
    """K(nm): 1 at and above 45 nm, NODE_CORRECTION_7NM at 7 nm, log-linear in log(node) between [D]."""
    nm = NODE_ALIASES.get(nm, nm)
    if nm >= 45:
        return 1.0
    t = min(1.0, math.log(45 / nm) / math.log(45 / 7))  # [A] below 7 nm as 7 nm
    return NODE_CORRECTION_7NM**t


def leakage_density_w_mm2(nm: int) -> float:
    """Logic leakage per mm^2 of cell area at the node's nominal voltage and LEAKAGE_T_REF_C
    (see the leakage constants: a logic library's inverter at 45 and 7 nm, log-node between)."""
    m = NODE_ALIASES.get(nm, nm)
    k = assumed("leakage_temp_coeff_per_k", LEAKAGE_TEMP_COEFF_PER_K)
    scale = assumed("logic_leakage_scale", 1.0)  # ppa.assumptions: the cell library's corner and Vt mix

    def at_ref(w_mm2: float, v: float, c: float, anchor_nm: int) -> float:
        return (
            scale * w_mm2 * leakage_voltage_factor(_vnom(anchor_nm), v) * math.exp(k * (LEAKAGE_T_REF_C - c))
        )

    d45 = at_ref(LOGIC_LEAK_45_W_MM2, LOGIC_LEAK_45_V, LOGIC_LEAK_45_C, 45)
    d7 = at_ref(LOGIC_LEAK_7_W_MM2, LOGIC_LEAK_7_V, LOGIC_LEAK_7_C, 7)
    if m >= 45:
        return d45
    t = min(1.0, math.log(45 / m) / math.log(45 / 7))  # [A] below 7 nm as 7 nm
    return math.exp((1 - t) * math.log(d45) + t * math.log(d7))


@overload
def leakage_voltage_factor(v: float, vnom: float) -> float: ...
@overload
def leakage_voltage_factor(v: NDArray[np.floating], vnom: float) -> NDArray[np.floating]: ...
def leakage_voltage_factor(v: float | NDArray[np.floating], vnom: float) -> float | NDArray[np.floating]:
    """P_leak(V) / P_leak(Vnom) = (V / Vnom) x 10^(LEAKAGE_DECADES_PER_V (V - Vnom)) [A]."""
    return (v / vnom) * 10.0 ** (LEAKAGE_DECADES_PER_V * (v - vnom))


def check_node(nm) -> int:
    if isinstance(nm, bool) or not isinstance(nm, (int, float)) or int(nm) != nm or int(nm) not in NODES_NM:
        raise InputError(
            f"unknown technology node {nm!r} nm; known: {', '.join(map(str, NODES_NM))}", where="--node"
        )
    return int(nm)


def nominal_voltage(nm: int) -> float:
    return _vnom(NODE_ALIASES.get(check_node(nm), nm))


def vmin_v(nm: int) -> float:
    """Minimum logic voltage of a node (V): LOGIC_VMIN_FRACTION x nominal, rounded up to 10 mV."""
    return math.ceil(round(LOGIC_VMIN_FRACTION * nominal_voltage(nm) * 100, 6)) / 100


def sram_vmin_v(nm: int) -> float:
    """Minimum SRAM voltage of a node (V): logic Vmin + SRAM_VMIN_OFFSET_V, at most nominal."""
    return round(min(nominal_voltage(nm), vmin_v(nm) + assumed("sram_vmin_offset_v", SRAM_VMIN_OFFSET_V)), 4)


def voltage_range(nm: int) -> tuple[float, float]:
    """(Vmin, Vnom) of the node: the modelled logic voltage range."""
    return vmin_v(nm), nominal_voltage(nm)


def node(nm, voltage_v: float | None = None) -> Node:
    """A node at ``voltage_v`` (default nominal); raises InputError below Vmin or above nominal."""
    nm = check_node(nm)
    lo, hi = voltage_range(nm)
    v = hi if voltage_v is None else float(voltage_v)
    if not math.isfinite(v) or v < lo - 1e-9:
        raise InputError(
            f"{v:g} V is below the {nm} nm node's minimum logic voltage Vmin {lo:g} V "
            f"(modelled range {lo:g}-{hi:g} V)",
            where="--voltage",
        )
    if v > hi + 1e-9:
        raise InputError(
            f"{v:g} V is outside the modelled range {lo:g}-{hi:g} V of the {nm} nm node (above nominal)",
            where="--voltage",
        )
    return Node(nm, v)


def voltage_grid(nm: int, step_v: float = 0.01) -> list[float]:
    lo, hi = voltage_range(nm)
    n = int(math.floor((hi - lo) / step_v + 1e-9))
    g = [round(lo + i * step_v, 4) for i in range(n + 1)]
    if g[-1] < hi - 1e-9:
        g.append(hi)
    return g


#: default SRAM rail policy: "separate" = its own rail at max(SRAM Vmin, logic V); "shared" = the
#: logic rail (then the logic voltage may not go below the SRAM Vmin).
SRAM_RAIL_DEFAULT = "separate"


def sram_voltage(nm: int, logic_v: float, sram_v: float | None = None) -> float:
    """Voltage the SRAM runs at: ``sram_v`` when given (checked against the SRAM Vmin and the
    nominal voltage), else max(SRAM Vmin, logic V) (SRAM_RAIL_DEFAULT)."""
    lo, hi = sram_vmin_v(nm), nominal_voltage(nm)
    if sram_v is None:
        return max(lo, float(logic_v))
    v = float(sram_v)
    if not math.isfinite(v) or v < lo - 1e-9 or v > hi + 1e-9:
        raise InputError(
            f"SRAM voltage {v:g} V outside {lo:g}-{hi:g} V (SRAM Vmin to nominal) of {nm} nm",
            where="--sram-voltage",
        )
    return v


# --- Clock and flip-flop energy on the generic path -------------------------------------------
#: Clock energy per flip-flop per cycle, in net-toggle equivalents, when no Liberty library is used
#: (the generic timing path). With a library, ppa.liberty.energy reads it from the library; these
#: are that module's figures for the default library, osu018 [D] (DFFPOSX1 clock-pin internal
#: energy + pin and wiring C V^2 + a CLKBUF1 tree, over the library's energy per calibration toggle:
#: 0.396 / 0.0985 pJ at 1.8 V), so both paths cost a flip-flop alike. tests/ppa/test_liberty_energy.py
#: re-derives them from the library when it is installed.
CLOCK_TOGGLES_PER_FF_CYCLE = 4.02
#: [D] the same for a flip-flop output toggle: the D- and Q-pin internal energy on top of its own net
#: toggle (osu018 DFFPOSX1: 0.122 / 0.0985 pJ).
FF_EXTRA_TOGGLES = 1.24
