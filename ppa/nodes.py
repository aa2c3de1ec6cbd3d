"""The process-node registry's rows: one :class:`NodeSpec` per node (``NODE_ROWS``), each field group
with its source, and the per-node figures the rows are built from (the alpha-power law's index and the
per-node threshold voltages, TSMC N5's gains over N7). ppa.tech indexes the rows (``NODE_SPECS``) and
derives every node figure the model reads from them; a new node is one row here (docs/design.md,
"Extending sparsepe").
"""

from __future__ import annotations

from dataclasses import dataclass

from ppa.references import (
    INTEL_22NM_DENSITY_MTR_MM2,
    MT8195_GPU_OPP,
    fit_vth,  # the 7 nm Vth's fit
    pitch_scaled_density,
    vf_curve,
)

#: [S] TSMC N5 against N7: "15% faster speed at the same power" (Yeap et al., "5nm CMOS Production
#: Technology Platform featuring full-fledged EUV, and High Mobility Channel FinFETs with densest
#: 0.021um2 SRAM cells for Mobile SoC and High Performance Computing Applications", IEDM 2019, 36.7),
#: also "30% power reduction" at the same speed and 1.84x logic density: the 5 nm row's delay, energy, density.
N5_SPEED_GAIN, N5_POWER_FACTOR, N5_DENSITY_GAIN = 1.15, 0.70, 1.84

# --- Delay versus voltage: alpha-power law ------------------------------------------------------
#: [S] velocity-saturation index of the alpha-power law, the short-channel value of Sakurai &
#: Newton (IEEE JSSC 25(2), 1990).
ALPHA = 1.3
#: Threshold voltage per node (V) for the alpha-power law (``NodeSpec.vth_v``; 90 nm as 65 nm):
#: [P] 45 nm 0.469 and 22/20 nm 0.503: PTM HP NMOS ``vth0`` (45nm.pm "PTM High Performance 45nm
#:     Metal Gate / High-K / Strained-Si", 22nm.pm, copies in verilog-to-routing vtr_flow/tech).
#: [D] 32 and 28 nm: log-node interpolation between those two.
#: [D] 7 nm 0.418: fitted to MT8195's table (``MT8195_GPU_OPP``) above its floor, 0.65-0.75 V (``vf_curve``;
#:     alpha kept at 1.3, log rms 0.3 %; below 0.65 V OPPs share voltages and step 6.25 mV while frequency
#:     falls 6-15 %: the floor, not the curve; with it 0.482 V, rms 9 %). Held out: MT8192 (ppa.references).
#: [D] 65, 16, 14, 10 nm: the Vth at which the alpha-power law has the same d ln(delay)/dV at nominal
#:     voltage as Stillmaker's fit there (Vth = Vn - alpha / (1/Vn - s), s = D'(Vn)/D(Vn)); 65 nm 0.443 V
#:     sits next to PTM's 45 nm 0.469 V. The same slope gave 7 nm 0.264 V (1.78x MT8192's frequency at
#:     0.61 V): the 16-10 nm values (0.19-0.23 V) likely fall as gently; no silicon of theirs was fitted.
VTH_7NM_V = fit_vth(vf_curve(MT8195_GPU_OPP), ALPHA)


# --- The node registry: one row per process node ---------------------------------------------------
@dataclass(frozen=True)
class NodeSpec:
    """One process node: every per-node figure the model reads, each field group with its source. An
    interpolated row names ``between`` = (larger, smaller) Stillmaker rows instead of delay / energy, and
    every figure it leaves out is log-linear in log(node) between theirs. ``alias_of``: another name for
    that row. ``offered``: False for a node only a check uses. ``sram_fit_nm``: the node ppa.sram's CACTI
    fit is evaluated at; ``sram_scaled_from``: below CACTI's nodes, the row that SRAM is scaled from."""

    nm: int
    delay: tuple[float, float, float, float] | None = None  # Stillmaker a, b, c, d: a V^3 + b V^2 + c V + d
    energy: tuple[float, float, float] | None = None  # Stillmaker e, f, g: e V^2 + f V + g
    nominal_v: float | None = None
    area_factor: float | None = None  # Stillmaker area relative to 45 nm (the SRAM's node scaling only)
    vth_v: float | None = None
    density_mtr_mm2: float | None = None  # peak logic density, Bohr's metric
    sram_fit_nm: int | None = None
    sram_scaled_from: int | None = None
    between: tuple[int, int] | None = None
    alias_of: int | None = None
    offered: bool = True
    fo4_between: tuple[int, int] | None = None  # node FO4 log-node between these rows, not the row's own fit
    model_source: str = ""  # delay, energy, area factor (or the interpolation / alias)
    voltage_source: str = ""
    vth_source: str = ""
    density_source: str = ""
    sram_source: str = ""


_SB = "[S] Stillmaker & Baas 2017 HP fit (nodeScale.py, published-figures §4)"
_PTM4 = "PTM nominal (published-figures §4)"
_VTH_PTM, _VTH_SLOPE = "[P] PTM HP NMOS vth0", "[D] alpha-power slope at nominal = Stillmaker's"
_PITCH, _CACTI = "[D] Intel 22 nm 15.3 x Intel GP x M1P pitch law", "[T] CACTI 7 run at this node"
_BELOW = "[D] CACTI's 22 nm fit x ppa.tech's factors relative to 20 nm"
#: Stillmaker's 7 nm delay and energy fits (the 7 nm row's; the 5 nm row scales them)
_SB7_DELAY = (-28.58, 76.6, -70.26, 24.69)
_SB7_ENERGY = (0.1776, -0.09097, 0.02447)


def _delay_fit_over(fit: tuple[float, float, float, float], k: float) -> tuple[float, float, float, float]:
    """A delay fit with every coefficient divided by ``k`` (a node ``k`` x faster)."""
    a, b, c, d = fit
    return a / k, b / k, c / k, d / k


def _energy_fit_times(fit: tuple[float, float, float], k: float) -> tuple[float, float, float]:
    """An energy fit with every coefficient multiplied by ``k``."""
    e, f, g = fit
    return e * k, f * k, g * k


NODE_ROWS = (
    NodeSpec(
        65,
        (-53.3, 230.4, -333.9, 178.6),
        (3.755, -4.398, 1.975),
        1.1,
        1.0 / 0.66,
        0.443,
        pitch_scaled_density(65),
        65,
        model_source=_SB + "; area 1 / (65->45 0.66)",
        voltage_source="[A] PTM 65 nm nominal",
        vth_source=_VTH_SLOPE,
        density_source=_PITCH,
        sram_source="[D] CACTI fit extrapolated in ln(node)",
    ),
    NodeSpec(
        45,
        (-501.6, 1567, -1619, 566.1),
        (1.018, -0.3107, 0.1539),
        1.0,
        1.0,
        0.469,
        pitch_scaled_density(45),
        45,
        model_source=_SB,
        voltage_source="[S] " + _PTM4,
        vth_source=_VTH_PTM + " (45nm.pm)",
        density_source=_PITCH,
        sram_source=_CACTI,
    ),
    NodeSpec(
        32,
        (-1047, 2982, -2797, 873.5),
        (0.8367, -0.4341, 0.1701),
        0.9,
        0.46,
        0.485,
        pitch_scaled_density(32),
        32,
        fo4_between=(45, 20),
        model_source=_SB + "; node FO4 log-node between 45 and 20 nm (HP32's 0.669 is faster "
        "than HP20's 0.757; 0.889 lies in Stillmaker's HP..LP range 0.669..4.70)",
        voltage_source="[A] PTM nominal",
        vth_source="[D] log-node between 45 and 20 nm",
        density_source=_PITCH,
        sram_source=_CACTI,
    ),
    NodeSpec(
        28,
        vth_v=0.491,
        sram_fit_nm=28,
        between=(32, 20),
        model_source="[D] log-node between 32 and 20 nm",
        voltage_source="[A] both neighbours' 0.9 V; TSMC 28HP/HPM core 0.9 V",
        vth_source="[D] log-node between 45 and 20 nm",
        density_source="[D] log-node between 32 and 20 nm",
        sram_source="[D] inside the CACTI fit's ln(node) range",
    ),
    NodeSpec(
        22,
        alias_of=20,
        model_source="[S] Stillmaker's '22/20 nm' is one model",
        voltage_source="as 20 nm",
        vth_source="as 20 nm",
        density_source="as 20 nm",
        sram_source="as 20 nm",
    ),
    NodeSpec(
        20,
        (0, 34.63, -66.37, 41.15),
        (0.373, -0.1582, 0.04104),
        0.9,
        0.21,
        0.503,
        INTEL_22NM_DENSITY_MTR_MM2,
        22,
        model_source=_SB,
        voltage_source="[A] PTM nominal",
        vth_source=_VTH_PTM + " (22nm.pm)",
        density_source="[S] Intel 22 nm (Intel 2017)",
        sram_source="[T] CACTI 7 run at 22 nm",
    ),
    NodeSpec(
        16,
        (0, 24.8, -47.52, 28.87),
        (0.2958, -0.1241, 0.03024),
        0.85,
        0.19,
        0.205,
        28.0,
        22,
        20,
        model_source=_SB,
        voltage_source="[S] fpga21-scaled-tech (PTM HP)",
        vth_source=_VTH_SLOPE,
        density_source="[S] foundry 14/16 nm, Intel's estimate (TSMC 16FF+ 28.9)",
        sram_source=_BELOW,
    ),
    NodeSpec(
        14,
        (-40.66, 109.2, -100.6, 35.92),
        (0.2363, -0.09675, 0.02239),
        0.8,
        0.17,
        0.188,
        37.5,
        22,
        20,
        model_source=_SB,
        voltage_source="[S] " + _PTM4,
        vth_source=_VTH_SLOPE,
        density_source="[S] Intel 14 nm (Intel 2017)",
        sram_source=_BELOW,
    ),
    NodeSpec(
        10,
        (-34.95, 93.65, -85.99, 30.4),
        (0.2068, -0.09311, 0.02375),
        0.75,
        0.10,
        0.231,
        50.0,
        22,
        20,
        model_source=_SB,
        voltage_source="[S] " + _PTM4,
        vth_source=_VTH_SLOPE,
        density_source="[S] foundry 10 nm, Intel's estimate (TSMC 10FF 52.5)",
        sram_source=_BELOW,
    ),
    NodeSpec(
        7,
        _SB7_DELAY,
        _SB7_ENERGY,
        0.7,
        0.059,
        VTH_7NM_V,
        91.2,
        22,
        20,
        model_source=_SB,
        voltage_source="[S] " + _PTM4,
        vth_source="[D] fitted to MT8195's GPU OPP table",
        density_source="[S] TSMC N7 HD (WikiChip)",
        sram_source=_BELOW,
    ),
    NodeSpec(
        5,
        _delay_fit_over(_SB7_DELAY, N5_SPEED_GAIN),
        _energy_fit_times(_SB7_ENERGY, N5_POWER_FACTOR),
        0.7,
        0.059 / N5_DENSITY_GAIN,
        VTH_7NM_V,
        91.2 * N5_DENSITY_GAIN,
        22,
        20,
        model_source="[S] 7 nm's Stillmaker fit / 1.15 (delay), x 0.70 (energy), "
        "area / 1.84: TSMC N5 vs N7 (Yeap et al., IEDM 2019)",
        voltage_source="[A] as 7 nm",
        vth_source="[A] as 7 nm",
        density_source="[D] TSMC N7 HD x 1.84 (Yeap et al.)",
        sram_source=_BELOW,
    ),
    NodeSpec(
        180,
        (0, 97.09, -356.7, 406.5),
        (0, 24.64, -17.98),
        1.8,
        40 / 2.2,
        0.45,
        offered=False,
        model_source=_SB + " (only the node-FO4 law; nodeScale.py '180')",
        voltage_source="[A] 0.18 um nominal",
        vth_source="[A] typical 0.18 um NMOS; only nominal FO4 is used",
    ),
    NodeSpec(
        130,
        (-76.65, 334.9, -493.4, 275.8),
        (7.171, -6.709, 2.904),
        1.3,
        1.0 / 0.16,
        0.4,
        offered=False,
        model_source=_SB + " (only the node-FO4 law)",
        voltage_source="[A] 130 nm nominal",
        vth_source="[A] only nominal FO4 is used",
    ),
    NodeSpec(
        90,
        (-60.34, 262.5, -384.2, 210.9),
        (4.762, -4.781, 2.092),
        1.2,
        1.0 / 0.35,
        0.312,
        offered=False,
        model_source=_SB + " (only ppa.silicon_clock.fo4_check, IBM's Cell SPE)",
        voltage_source="[A] 90 nm bulk nominal",
        vth_source=_VTH_SLOPE,
    ),
)
