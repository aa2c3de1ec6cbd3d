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
- energy: the SoC side of the interface, on top of the DRAM device energy in ppa.dram:
  * HBM: 3.9 pJ/bit [S] Jouppi et al. ISCA 2021 Table 2: HBM2 250-450 pJ per 64-bit access,
    footnoted "only the I/O energy", lower end 250 / 64; consistent with the A100 measurement of
    13.11 pJ/bit at the "HBM level" less the 3.97 pJ/bit device energy (Antepara et al. SC'25, an
    upper bound that includes on-chip transport) (published-figures §3, §7.2).
  * LPDDR5 / DDR4: the channel I/O energy is already in ppa.dram's per-bit figure (derived from
    the DDR4 20 pJ/bit total); the PHY/controller logic adds 1.0 pJ/bit [A].
- static power: PHYs keep DLLs/PLLs and receivers biased while the link is up: [A] 0.2 W per HBM
  PHY, 0.02 W per LPDDR5 channel, 0.05 W per DDR4 channel (not cited; labelled).

Minimum die: the PHYs' edges must fit on the die perimeter, so the die is at least the square
whose perimeter is their summed edge length: A_min = (sum of edges / 4)^2 [D]. ppa.model reports
when that binds (a note and ``details.die_phy_limited``); it does not pad silently.

Control / sequencer / host I/O: [A] 5 % of the core (array + decoders + SRAM) area, on top of the
10 % wiring/clock allowance of ppa.model. Its power is not modelled (stated in the notes).
"""

from __future__ import annotations

from dataclasses import dataclass

from hw.errors import InputError

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


_HBM_AREA = (_HBM_SIGNAL_BUMPS + _HBM_POWER_BUMPS) * _HBM_BUMP_PITCH_UM ** 2 * 1e-6
_HBM = dict(area_mm2=_HBM_AREA, edge_mm=7.75, pj_per_bit=250.0 / 64, static_w=0.2,
            source="[D] bump field of the JEDEC HBM2 ballout at 55 um; [S] Jouppi ISCA 2021 HBM2 I/O 250 pJ/64 b")

PHY_TYPES: dict[str, PhyType] = {
    "hbm2": PhyType("HBM2 PHY", **_HBM),
    "hbm2e": PhyType("HBM2E PHY", **_HBM),
    "hbm3": PhyType("HBM3 PHY", **_HBM),
    "lpddr5": PhyType("LPDDR5 x16 PHY", 40 * _PAD_SLICE_UM2 * 1e-6, 40 * _PAD_PITCH_MM, 1.0, 0.02,
                      "[A] 40 pads x 25,000 um^2; 1.0 pJ/bit controller/PHY logic"),
    "ddr4": PhyType("DDR4 64-bit PHY", 120 * _PAD_SLICE_UM2 * 1e-6, 120 * _PAD_PITCH_MM, 1.0, 0.05,
                    "[A] 120 pads x 25,000 um^2; 1.0 pJ/bit controller/PHY logic"),
}


def phy(kind: str) -> PhyType:
    key = str(kind).lower()
    if key not in PHY_TYPES:
        raise InputError(f"no PHY model for DRAM type {kind!r}; known: {', '.join(PHY_TYPES)}", where="--dram")
    return PHY_TYPES[key]


def min_die_mm2(kind: str, units: int) -> float:
    """Smallest square die whose perimeter holds ``units`` PHYs of ``kind`` side by side."""
    return (phy(kind).edge_mm * units / 4.0) ** 2
