"""Off-chip DRAM: energy per bit (device side) and bandwidth, per DRAM type, each with its range.

The energy of a bit moved between the die and DRAM is split where it is spent:
- the DRAM device (this module, ``DramType.pj_per_bit``): row activation and on-die data movement
  (the "core") plus the DRAM's own I/O drivers and receivers;
- the SoC-side PHY and controller (ppa.phy): on the die, so it heats the die.
ppa.phy.total_pj_per_bit is the sum. Jouppi's 250 pJ per 64 bits on top of O'Connor's device energy,
which already includes the I/O, would count it twice (7.9 pJ/bit);
that figure is a held-out check of the sum (``sparsepe validate``).

Sources (tags: [S] secondary source naming the primary; [D] derived, formula shown; [A] assumption):
- HBM2 core: O'Connor et al., MICRO 2017 (Fine-Grained DRAM) Table 3 / Fig. 1 [S]: 3.97 pJ/bit, of
  which 1.21 activation + 2.24 on-die data movement (3.45 core) and 0.30 I/O (published-figures §7.2).
- HBM2E: SK hynix, about 4.3 pJ/bit, via Moon et al. IEDM 2023 [S].
- HBM3 [D]: O'Connor's HBM2 breakdown at JESD238's voltages: "low-swing (0.4V) signaling on the
  host interface and a lower (1.1V) operating voltage" (JEDEC's HBM3 announcement, Jan 2022) against
  HBM2/2E's 1.2 V core and 1.2 V I/O (Synopsys, "What is HBM3"): core 3.45 x (1.1/1.2)^2 + I/O
  0.30 x (0.4/1.2)^2 = 2.93 pJ/bit. No published HBM3 device figure was found; JEDEC states the
  energy fell, so HBM2E's 4.3 bounds it from above.
- LPDDR5 [D]: the DRAM array core as HBM2's (3.45, O'Connor) [A: the same DRAM array technology]
  plus the DRAM-side I/O. I/O energy per bit from a measured LPDDR4 controller interface: Kim et
  al., "A 4266 Mb/s/pin LPDDR4 interface with an asynchronous feedback CTLE ...", IEEE TCAS-II
  65(12), 2018 (65 nm, VDDQ 1.1 V): 5.68 pJ/bit burst write, 1.83 pJ/bit burst read [P, abstract];
  mean 3.755. Unterminated low-swing I/O energy goes as VDDQ^2 (C V^2 per transition) [D]:
  LPDDR5's VDDQ 0.5 V (JESD209-5) -> 3.755 x (0.5/1.1)^2 = 0.78 pJ/bit per side, the DRAM side
  here and the SoC side in ppa.phy [A: the two ends of the link alike]. Device: 3.45 + 0.78 = 4.23.
  Range: read-only to write-only traffic, 3.45 + 0.38 .. 3.45 + 1.17.
- DDR4 [S]: about 20 pJ/bit for the whole access (1300 pJ per 64 b; Horowitz ISSCC 2014 / Jouppi
  ISCA 2021 Table 2); the SoC-side share (ppa.phy: the LPDDR4 interface measurement at DDR4's
  VDDQ 1.2 V, 3.755 x (1.2/1.1)^2 = 4.47 pJ/bit) is moved to the PHY, the device keeps the rest
  (15.8). Range: Horowitz's 1.3-2.6 nJ per 64 b (20-40 pJ/bit) less the same PHY share.

``lpddr_total_pj_per_bit(vddq)``: the LPDDR family's model (core + both ends' I/O at that VDDQ),
for the held-out checks at LPDDR4's and LPDDR4X's VDDQ.
"""

from __future__ import annotations

from dataclasses import dataclass, replace

from hw.errors import InputError
from ppa.override import assumed


@dataclass(frozen=True)
class DramType:
    name: str
    pj_per_bit: float  # device side (core + DRAM I/O); the SoC-side PHY is in ppa.phy
    gb_per_s: float  # per unit (stack / channel / DIMM), see `unit`
    unit: str
    energy_source: str
    bandwidth_source: str
    pj_per_bit_range: tuple[float, float] = (0.0, 0.0)  # (low, high) of the device figure


# O'Connor et al., MICRO 2017, HBM2 [S]: activation 1.21 + on-die data movement 2.24 = core; I/O 0.30
HBM2_CORE_PJ = 1.21 + 2.24
HBM2_IO_PJ = 0.30
HBM2_PJ = 3.97
# SK hynix HBM2E via Moon et al. IEDM 2023 [S]
HBM2E_PJ = 4.3
# JESD238 (HBM3) voltages vs HBM2/2E (JEDEC announcement; Synopsys "What is HBM3") [S]
HBM2_CORE_V, HBM2_IO_V = 1.2, 1.2
HBM3_CORE_V, HBM3_IO_V = 1.1, 0.4
HBM3_PJ = HBM2_CORE_PJ * (HBM3_CORE_V / HBM2_CORE_V) ** 2 + HBM2_IO_PJ * (HBM3_IO_V / HBM2_IO_V) ** 2

# Kim et al., IEEE TCAS-II 65(12) 2018: 65 nm LPDDR4 controller interface at VDDQ 1.1 V [P]
LPDDR4_IF_WRITE_PJ = 5.68
LPDDR4_IF_READ_PJ = 1.83
LPDDR4_IF_VDDQ = 1.1
#: VDDQ of the LPDDR generations (JESD209-4 / -4-1 / -5) [S: JEDEC figures as tabulated for LPDDR]
LPDDR4_VDDQ, LPDDR4X_VDDQ, LPDDR5_VDDQ = 1.1, 0.6, 0.5
DDR4_VDDQ = 1.2  # JESD79-4 [S]


def link_end_pj_per_bit(vddq: float, traffic: str = "mixed") -> float:
    """I/O energy per bit of one end of a DDR-type link at ``vddq`` [D]: the LPDDR4 interface
    measurement (Kim et al. 2018) scaled by (vddq / 1.1 V)^2; ``traffic``: "read", "write" or
    "mixed" (their mean)."""
    base = {
        "read": LPDDR4_IF_READ_PJ,
        "write": LPDDR4_IF_WRITE_PJ,
        "mixed": (LPDDR4_IF_READ_PJ + LPDDR4_IF_WRITE_PJ) / 2,
    }[traffic]
    return base * (vddq / LPDDR4_IF_VDDQ) ** 2


def lpddr_total_pj_per_bit(vddq: float, traffic: str = "mixed") -> float:
    """The LPDDR family's energy per bit, device + SoC-side PHY, at ``vddq`` [D]: the DRAM core
    (HBM2_CORE_PJ) plus both ends' I/O (``link_end_pj_per_bit``)."""
    return HBM2_CORE_PJ + 2 * link_end_pj_per_bit(vddq, traffic)


# DDR3/4: about 20 pJ/bit for the whole access (1300 pJ per 64 b; Horowitz ISSCC 2014 / Jouppi
# ISCA 2021 Table 2) [S]; the SoC-side share goes to ppa.phy
DDR4_TOTAL_PJ = 1300.0 / 64
DDR4_PJ = DDR4_TOTAL_PJ - link_end_pj_per_bit(DDR4_VDDQ)
LPDDR5_PJ = HBM2_CORE_PJ + link_end_pj_per_bit(LPDDR5_VDDQ)

DRAM_TYPES: dict[str, DramType] = {
    "ddr4": DramType(
        "DDR4",
        DDR4_PJ,
        3200e6 * 8 / 1e9,
        "64-bit channel",
        "[S] Horowitz 2014 / Jouppi ISCA 2021 Table 2: 1300 pJ per 64 b for the access, less the SoC-side "
        "PHY share (ppa.phy)",
        "[D] DDR4-3200: 3200 MT/s x 8 B = 25.6 GB/s (JEDEC top speed grade, assumed)",
        (DDR4_PJ, 2600.0 / 64 - link_end_pj_per_bit(DDR4_VDDQ)),
    ),
    "lpddr5": DramType(
        "LPDDR5",
        LPDDR5_PJ,
        12.8,
        "x16 channel",
        "[D] DRAM core as HBM2 (O'Connor 2017) + DRAM-side I/O: the 65 nm LPDDR4 interface measurement "
        "(Kim et al. TCAS-II 2018) x (0.5/1.1)^2",
        "[S] 6400 MT/s x 2 B = 12.8 GB/s per x16 channel",
        (
            HBM2_CORE_PJ + link_end_pj_per_bit(LPDDR5_VDDQ, "read"),
            HBM2_CORE_PJ + link_end_pj_per_bit(LPDDR5_VDDQ, "write"),
        ),
    ),
    "hbm2": DramType(
        "HBM2",
        HBM2_PJ,
        307.0,
        "stack",
        "[S] O'Connor et al. MICRO 2017: 3.97 pJ/bit",
        "[S] JESD235B 2.4 Gb/s x 1024 b = 307 GB/s",
        (HBM2_PJ, HBM2E_PJ),
    ),
    "hbm2e": DramType(
        "HBM2E",
        HBM2E_PJ,
        410.0,
        "stack",
        "[S] SK hynix via Moon et al. IEDM 2023: about 4.3 pJ/bit",
        "[S] JESD235C 3.2 Gb/s x 1024 b = 410 GB/s",
        (HBM2_PJ, HBM2E_PJ),
    ),
    "hbm3": DramType(
        "HBM3",
        HBM3_PJ,
        819.0,
        "stack",
        "[D] O'Connor's HBM2 breakdown at JESD238's 1.1 V core and 0.4 V I/O: 3.45 x (1.1/1.2)^2 + "
        "0.30 x (0.4/1.2)^2",
        "[S] JESD238 6.4 Gb/s x 1024 b = 819 GB/s",
        (HBM3_PJ, HBM2E_PJ),
    ),
}


def dram(kind: str) -> DramType:
    """A DRAM type with its energy per bit as the model uses it (ppa.override: the registry's
    ``<type>_dram_pj_per_bit`` when overridden, else the figure above)."""
    key = str(kind).lower()
    if key not in DRAM_TYPES:
        raise InputError(f"unknown DRAM type {kind!r}; known: {', '.join(DRAM_TYPES)}", where="--dram")
    d = DRAM_TYPES[key]
    return replace(d, pj_per_bit=assumed(f"{key}_dram_pj_per_bit", d.pj_per_bit))
