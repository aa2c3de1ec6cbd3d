"""Off-chip DRAM: energy per bit and bandwidth (published-figures.md section 7).

Tags: [S] secondary source naming the primary; [D] derived, formula shown.
"""

from __future__ import annotations

from dataclasses import dataclass

from hw.errors import InputError


@dataclass(frozen=True)
class DramType:
    name: str
    pj_per_bit: float
    gb_per_s: float  # per unit (stack / channel / DIMM), see `unit`
    unit: str
    energy_source: str
    bandwidth_source: str


# O'Connor et al., MICRO 2017 (Fine-Grained DRAM), HBM2: 3.97 pJ/bit, of which 1.21 activation +
# 2.24 on-die data movement = 3.45 pJ/bit array core and 0.30 I/O (Table 3, Fig. 1) [S]
_HBM2_CORE_PJ = 1.21 + 2.24
# DDR3/4: about 20 pJ/bit (1300 pJ per 64 b; Horowitz ISSCC 2014 / Jouppi ISCA 2021 Table 2) [S]
_DDR4_PJ = 20.0
# LPDDR5 pJ/bit: NOT FOUND in a primary source. Derived [D]: DRAM core as HBM2 (O'Connor) plus the
# DDR4 I/O share scaled by the square of the I/O voltage (CV^2 per bit, same channel capacitance):
# I/O(DDR4) = 20 - 3.45 = 16.55 pJ/bit at VDDQ 1.2 V; LPDDR5 VDDQ 0.5 V (JEDEC JESD209-5 [A: from
# the standard, not in published-figures]) -> 16.55 * (0.5/1.2)^2 = 2.87; total 3.45 + 2.87 = 6.3.
_LPDDR5_PJ = _HBM2_CORE_PJ + (_DDR4_PJ - _HBM2_CORE_PJ) * (0.5 / 1.2) ** 2

DRAM_TYPES: dict[str, DramType] = {
    "ddr4": DramType("DDR4", _DDR4_PJ, 3200e6 * 8 / 1e9, "64-bit channel",
                     "[S] Horowitz 2014 / Jouppi ISCA 2021 Table 2: 1300 pJ per 64 b",
                     "[D] DDR4-3200: 3200 MT/s x 8 B = 25.6 GB/s (JEDEC top speed grade, assumed)"),
    "lpddr5": DramType("LPDDR5", _LPDDR5_PJ, 12.8, "x16 channel",
                       "[D] NOT FOUND in a primary source; derived: HBM2 core (O'Connor 2017) + DDR4 I/O x (0.5/1.2)^2",
                       "[S] 6400 MT/s x 2 B = 12.8 GB/s per x16 channel"),
    "hbm2": DramType("HBM2", 3.97, 307.0, "stack",
                     "[S] O'Connor et al. MICRO 2017: 3.97 pJ/bit", "[S] JESD235B 2.4 Gb/s x 1024 b = 307 GB/s"),
    "hbm2e": DramType("HBM2E", 4.3, 410.0, "stack",
                      "[S] SK hynix via Moon et al. IEDM 2023: about 4.3 pJ/bit", "[S] JESD235C 3.2 Gb/s x 1024 b = 410 GB/s"),
    # HBM3 pJ/bit is not in published-figures: [D] taken as HBM2E's 4.3 pJ/bit (no better than the
    # previous generation: an upper bound, labelled).
    "hbm3": DramType("HBM3", 4.3, 819.0, "stack",
                     "[D] not published in our sources; assumed equal to HBM2E (4.3 pJ/bit)",
                     "[S] JESD238 6.4 Gb/s x 1024 b = 819 GB/s"),
}


def dram(kind: str) -> DramType:
    key = str(kind).lower()
    if key not in DRAM_TYPES:
        raise InputError(f"unknown DRAM type {kind!r}; known: {', '.join(DRAM_TYPES)}", where="--dram")
    return DRAM_TYPES[key]
