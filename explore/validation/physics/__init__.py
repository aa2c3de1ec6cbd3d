"""The physics rows of ``sparsepe validate``: operator (MAC) energy (``operators``), SRAM and DRAM
energy and PHY energy and area (``memory``), the 7 nm stage timing and cell area of the PE
(``stage``), voltage-frequency points (``voltage``), and the clock and leakage shares of power
(``power``). Each row puts one model figure, computed through ppa's public functions, against one
published figure (ppa.references, or the fit source for fit anchors).
"""

from __future__ import annotations

from explore.validation.physics.base import ANCHOR_V, agrees, bounds, with_liberty
from explore.validation.physics.memory import PHY_AREA_LEADS, dram_rows, phy_rows, sram_rows
from explore.validation.physics.operators import MID_NODE_NM, compute_mac_pj, mac_rows, operator_rows
from explore.validation.physics.power import asap7_clock_row, core_power_w, power_rows
from explore.validation.physics.stage import asap7_area_rows, asap7_stage_row, timing_rows
from explore.validation.physics.voltage import voltage_rows

__all__ = [
    "ANCHOR_V",
    "MID_NODE_NM",
    "PHY_AREA_LEADS",
    "agrees",
    "asap7_area_rows",
    "asap7_clock_row",
    "asap7_stage_row",
    "bounds",
    "compute_mac_pj",
    "core_power_w",
    "dram_rows",
    "mac_rows",
    "operator_rows",
    "phy_rows",
    "power_rows",
    "sram_rows",
    "timing_rows",
    "voltage_rows",
    "with_liberty",
]
