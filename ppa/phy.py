"""What a chip needs besides the array: DRAM PHY + controller, and the control/sequencer and I/O
allowance; the minimum die a set of PHYs forces.

Tags: [S] secondary source naming the primary; [D] derived, formula shown; [A] assumption, with why.

DRAM PHY + controller, per unit (HBM stack / LPDDR5 x16 channel / DDR4 64-bit channel):
- area: a DRAM PHY is bump- or pad-limited, so its area is set by its signal count and the bump or
  pad pitch, not by the logic node (it does not shrink with the node) [D]:
  * HBM2/2E/3: the JEDEC HBM2 ballout has 1904 signal and 1754 power (VDDC, VDDQ, VPP) microbumps
    (JEDEC HBM ballout via ascii.jp's Vega 20 article) [S]; the PHY sits under that bump field,
    at a 55 um microbump pitch [A: the common HBM2 microbump pitch]: (1904 + 1754) x 55^2 um^2 =
    11.1 mm^2, controller included [A].
  * LPDDR5 x16 channel: about 40 signal pads (16 DQ, 2 DMI, 2 DQS pairs, 7 CA, CK pair, CS, reset)
    x 25,000 um^2 per pad slice (driver, receiver, ESD, 50 um pitch x 500 um) [A] = 1.0 mm^2;
    DDR4 64-bit channel: about 120 signal pads, 3.0 mm^2 [A, same pad slice].
- edge: a PHY must sit on the die edge facing its DRAM. HBM: the stack's 7.75 mm side (HBM2
  KGSD footprint 7.75 x 11.87 mm [S: Samsung/SK hynix HBM2 package outline]); LPDDR5 x16: 40 x
  50 um = 2.0 mm; DDR4: 6.0 mm [D from the pad counts above].
- energy: the SoC side of the interface (PHY + controller), on top of the DRAM device energy in
  ppa.dram (which includes the DRAM's own I/O):
  * HBM: 0.29 pJ/bit [P, abstract]: "A 4-nm 1.15 TB/s HBM3 interface with resistor-tuned offset
    calibration and in situ margin detection", IEEE JSSC 59(1), 2024 ("energy efficiency of the
    HBM3 interface, 0.29 pJ/bit"). Range 0.29-0.41: a 40 nm PAM-4 HBM controller interface reaches
    0.41 pJ/b ("A 68.7 fJ/b/mm 375 GB/s/mm single-ended PAM-4 interface ... for the next-generation
    HBM controller") -- the held-out check (``sparsepe validate``). Jouppi's 250 pJ per 64 b ("only the I/O
    energy") is not added on top of O'Connor's device energy, which already holds the I/O.
  * LPDDR5 / DDR4: one end of the link, ppa.dram.link_end_pj_per_bit at the standard's VDDQ (the
    65 nm LPDDR4 interface measurement of Kim et al. 2018 scaled by VDDQ^2) [D]: 0.78 pJ/bit at
    0.5 V, 4.47 at 1.2 V; range read-only .. write-only traffic.
- static power: PHYs keep DLLs/PLLs and receivers biased while the link is up: [A] 0.2 W per HBM
  PHY, 0.02 W per LPDDR5 channel, 0.05 W per DDR4 channel (not cited; labelled).

Minimum die: the PHYs' edges must fit on the die perimeter, so the die is at least the square
whose perimeter is their summed edge length: A_min = (sum of edges / 4)^2 [D]. ppa.model reports
when that binds (a note and ``details.die_phy_limited``); it does not pad silently.

Control / sequencer / host I/O: [A] 5 % of the core (array + decoders + SRAM) area, on top of the
10 % wiring/clock allowance of ppa.model. Its power is not modelled (stated in the notes).
"""

from __future__ import annotations

from dataclasses import dataclass, replace

from hw.errors import InputError
from ppa import dram as _dram
from ppa.override import assumed

_HBM_BUMP_PITCH_UM = 55.0  # [A]
_HBM_SIGNAL_BUMPS = 1904  # [S] JEDEC HBM2 ballout
_HBM_POWER_BUMPS = 1754  # [S] JEDEC HBM2 ballout (VDDC + VDDQ + VPP)
_PAD_SLICE_UM2 = 25_000.0  # [A] 50 um pitch x 500 um deep: driver, receiver, ESD
_PAD_PITCH_MM = 0.050  # [A]

CONTROL_ALLOWANCE = 0.05  # [A] control / sequencer / host I/O, fraction of the core area


@dataclass(frozen=True)
class PhyType:
    name: str
    area_mm2: float  # per unit, controller included
    edge_mm: float  # die-edge length per unit
    pj_per_bit: float  # SoC-side energy per bit moved, on top of the DRAM device energy
    static_w: float  # per unit while the link is up
    source: str
    pj_per_bit_range: tuple[float, float] = (0.0, 0.0)


_HBM_AREA = (_HBM_SIGNAL_BUMPS + _HBM_POWER_BUMPS) * _HBM_BUMP_PITCH_UM**2 * 1e-6
#: [P] 4 nm HBM3 interface, JSSC 2024 (module docstring); the 40 nm PAM-4 HBM interface's 0.41 the upper end
HBM_PHY_PJ = 0.29
HBM_PHY_PJ_RANGE = (0.29, 0.41)


def _hbm_phy(name: str) -> PhyType:
    """An HBM PHY: the three generations share one (the same bump field and interface)."""
    return PhyType(
        name,
        area_mm2=_HBM_AREA,
        edge_mm=7.75,
        pj_per_bit=HBM_PHY_PJ,
        static_w=0.2,
        source="[D] bump field of the JEDEC HBM2 ballout at 55 um; [P] 4 nm HBM3 interface 0.29 pJ/bit (JSSC 2024)",
        pj_per_bit_range=HBM_PHY_PJ_RANGE,
    )


def _ddr_end(vddq: float) -> dict:
    return dict(
        pj_per_bit=_dram.link_end_pj_per_bit(vddq),
        pj_per_bit_range=(_dram.link_end_pj_per_bit(vddq, "read"), _dram.link_end_pj_per_bit(vddq, "write")),
    )


PHY_TYPES: dict[str, PhyType] = {
    "hbm2": _hbm_phy("HBM2 PHY"),
    "hbm2e": _hbm_phy("HBM2E PHY"),
    "hbm3": _hbm_phy("HBM3 PHY"),
    "lpddr5": PhyType(
        "LPDDR5 x16 PHY",
        40 * _PAD_SLICE_UM2 * 1e-6,
        40 * _PAD_PITCH_MM,
        static_w=0.02,
        source="[A] 40 pads x 25,000 um^2; [D] LPDDR4 interface (Kim et al. 2018) x (0.5/1.1)^2",
        **_ddr_end(_dram.LPDDR5_VDDQ),
    ),
    "ddr4": PhyType(
        "DDR4 64-bit PHY",
        120 * _PAD_SLICE_UM2 * 1e-6,
        120 * _PAD_PITCH_MM,
        static_w=0.05,
        source="[A] 120 pads x 25,000 um^2; [D] LPDDR4 interface (Kim et al. 2018) x (1.2/1.1)^2",
        **_ddr_end(_dram.DDR4_VDDQ),
    ),
}


#: The assumption names of each PHY type's area, energy and static power (ppa.assumptions): the three
#: HBM generations share one PHY (the same bump field and interface).
PHY_FAMILY = {"hbm2": "hbm", "hbm2e": "hbm", "hbm3": "hbm", "lpddr5": "lpddr5", "ddr4": "ddr4"}


def phy(kind: str) -> PhyType:
    """The PHY of a DRAM type, with its area, energy per bit and static power as the model uses them
    (ppa.override: the registry's overrides in force, else the figures above)."""
    key = str(kind).lower()
    if key not in PHY_TYPES:
        raise InputError(
            f"no PHY model for DRAM type {kind!r}; known: {', '.join(PHY_TYPES)}", where="--dram"
        )
    p, fam = PHY_TYPES[key], PHY_FAMILY[key]
    return replace(
        p,
        area_mm2=assumed(f"{fam}_phy_area_mm2", p.area_mm2),
        pj_per_bit=assumed(f"{fam}_phy_pj_per_bit", p.pj_per_bit),
        static_w=assumed(f"{fam}_phy_static_w", p.static_w),
    )


def total_pj_per_bit(kind: str) -> float:
    """Energy of one bit moved to or from DRAM of ``kind``: the device (ppa.dram) + the SoC-side PHY."""
    return _dram.dram(kind).pj_per_bit + phy(kind).pj_per_bit


def min_die_mm2(kind: str, units: int) -> float:
    """Smallest square die whose perimeter holds ``units`` PHYs of ``kind`` side by side."""
    return (phy(kind).edge_mm * units / 4.0) ** 2
