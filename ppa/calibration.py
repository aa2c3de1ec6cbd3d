"""Calibration of the per-toggle energy and area per transistor on published anchors, and the
held-out check against the rest of the Horowitz and Jouppi tables.

Anchors: Horowitz, ISSCC 2014, 45 nm / 0.9 V: energy on the geometric mean of the 8-bit integer
multiply (0.2 pJ) and the 32-bit add (0.1 pJ), the two operators of a MAC. Held out: 8-bit add
(0.03 pJ), 32-bit multiply (3.1 pJ); figures via Kim et al. 2023 Fig. 15 and H&P 6e Fig. 1.13
(published-figures.md section 3). At 7 nm the same two operators against Jouppi et al. ISCA 2021
Table 2 set ppa.tech's node correction.

Area is not calibrated on Horowitz: it is transistors x ppa.tech's area per
transistor, from published logic densities and a realised-density factor. Horowitz's four operator
areas (8-bit multiply 282 um^2, 8-bit add 36, 32-bit add 137, 32-bit multiply 3495) are a check:
``held_out_table`` reports the model's placed-block area and its peak cell area against each.

Energy per operation = average circuit toggles per operation on uniformly random operands (every
cycle a new random operand pair, 64-lane bit-parallel gate simulation of the synthesised netlist),
each weighted by its net's energy as a cell of the default library (ppa.liberty.gates), x energy
per toggle-equivalent. No per-operator tuning.
"""

from __future__ import annotations

import math
from dataclasses import dataclass

import numpy as np

from ppa import tech
from ppa.netlist import GateNetlist
from ppa.operators import operator_verilog
from ppa.synth import synthesize
from ppa.tech import CAL_CYCLES, CAL_INSTANCES, CAL_SEED  # the random operands (re-exported)

#: Horowitz ISSCC 2014, 45 nm (pJ, um^2), via Kim et al. 2023 Fig. 15 / H&P 6e Fig. 1.13
HOROWITZ_45NM = {
    ("mul", 8): (tech.HOROWITZ_MUL8_PJ, tech.HOROWITZ_MUL8_UM2),  # the anchor, one definition in ppa.tech
    ("add", 8): (0.03, 36.0),
    ("add", 32): (0.1, 137.0),
    ("mul", 32): (3.1, 3495.0),
}
ANCHOR = (
    "mul",
    8,
)  # the 8-bit multiply: its area is the check of horowitz_area_check below; energy anchors: ENERGY_ANCHORS
ENERGY_ANCHORS = (("mul", 8), ("add", 32))


@dataclass
class OperatorCost:
    kind: str
    width: int
    transistors: int
    toggles_per_op: float  # gate-output toggles
    logic_depth: int
    energy_per_op: (
        float  # those toggles weighted by their nets' energies (ppa.liberty.gates), toggle-equivalents
    )

    @property
    def name(self) -> str:
        return f"{self.width}-bit {'multiply' if self.kind == 'mul' else 'add'}"


def measure_operator(
    kind: str,
    width: int,
    *,
    cache=None,
    seed: int = CAL_SEED,
    cycles: int = CAL_CYCLES,
    instances: int = CAL_INSTANCES,
) -> OperatorCost:
    """Synthesise one operator and measure its toggles per operation on random operands."""
    verilog, top = operator_verilog(kind, width)
    res = synthesize(verilog, top, cache=cache)
    net = GateNetlist(res.netlist(), top)
    rng = np.random.default_rng(seed)
    hi = 1 << width
    a = rng.integers(0, hi, (cycles, instances), dtype=np.uint64, endpoint=False)
    b = rng.integers(0, hi, (cycles, instances), dtype=np.uint64, endpoint=False)
    tc, _ = net.simulate({"a": a, "b": b})
    n = cycles * instances
    return OperatorCost(
        kind,
        width,
        res.transistors,
        tc.circuit_toggles / n,
        res.logic_depth,
        (tc.gate_energy + tc.ff_net_energy) / n,
    )


def calibrate(*, cache=None) -> dict[str, float]:
    """Re-derive the calibrated constants from the anchors (what tech.py hard-codes). The area per
    transistor at 45 nm is re-derived from the density law's inputs (Intel 22 nm density and the
    45/22 nm pitch products, the realised-density factor); Horowitz's 282 um^2 / transistors is
    returned beside it as ``horowitz_area_per_transistor_45_um2`` (a check, not an anchor)."""
    m = measure_operator(*ANCHOR, cache=cache)
    a32 = measure_operator("add", 32, cache=cache)
    e_pj, a_um2 = HOROWITZ_45NM[ANCHOR]
    e32 = HOROWITZ_45NM[("add", 32)][0]
    return {
        "transistors": m.transistors,
        "toggles_per_op": m.toggles_per_op,
        "add32_toggles_per_op": a32.toggles_per_op,
        "energy_per_op": m.energy_per_op,
        "add32_energy_per_op": a32.energy_per_op,
        "e_toggle_45_pj": (e_pj / m.energy_per_op * e32 / a32.energy_per_op) ** 0.5,
        "area_per_transistor_45_um2": 1.0
        / (
            tech.INTEL_22NM_DENSITY_MTR_MM2
            * math.prod(tech.INTEL_GP_M1P_NM[22])
            / math.prod(tech.INTEL_GP_M1P_NM[45])
            * tech.PLACEMENT_UTILISATION
            / tech.POST_LAYOUT_CELL_GROWTH
        ),
        "horowitz_area_per_transistor_45_um2": a_um2 / m.transistors,
    }


def held_out_table(*, cache=None, sizing=None) -> list[dict]:
    """Each operator costed at 45 nm / 0.9 V (Horowitz's voltage) with the hard-coded calibration,
    against Horowitz. Area: ``area_um2`` is the placed block (realised density), ``cell_area_um2``
    the peak-density cell area; ``area_ratio`` / ``cell_area_ratio`` against Horowitz's figure.
    ``sizing``: (kind, width) -> the operator's sizing factor (ppa.liberty.sizing), as ppa.model
    charges a PE on the STA path; None: as mapped for area."""
    n45 = tech.node(45, tech.HOROWITZ_V)
    rows = []
    for (kind, width), (e_ref, a_ref) in HOROWITZ_45NM.items():
        m = measure_operator(kind, width, cache=cache)
        e = m.energy_per_op * n45.toggle_energy_pj * (sizing(kind, width) if sizing else 1.0)
        a = m.transistors * n45.area_per_transistor_um2
        a_cell = m.transistors * n45.cell_area_per_transistor_um2
        rows.append(
            {
                "operator": m.name,
                "anchor": (kind, width) == ANCHOR,
                "energy_anchor": (kind, width) in ENERGY_ANCHORS,
                "transistors": m.transistors,
                "toggles_per_op": m.toggles_per_op,
                "energy_per_op": m.energy_per_op,
                "logic_depth": m.logic_depth,
                "energy_pj": e,
                "energy_ref_pj": e_ref,
                "energy_ratio": e / e_ref,
                "area_um2": a,
                "area_ref_um2": a_ref,
                "area_ratio": a / a_ref,
                "cell_area_um2": a_cell,
                "cell_area_ratio": a_cell / a_ref,
            }
        )
    return rows


#: Jouppi et al., ISCA 2021 ("Ten Lessons ... TPUv4i"), Table 2, 7 nm energy per op (pJ), via
#: published-figures.md section 3. The 8-bit multiply is the 7 nm calibration anchor (ppa.tech
#: JOUPPI_MUL8_7NM_PJ); the other three are held out.
JOUPPI_7NM_PJ = {("mul", 8): 0.07, ("add", 8): 0.007, ("add", 32): 0.03, ("mul", 32): 1.48}


def node_scaling_crosscheck(*, cache=None, sizing=None) -> list[dict]:
    """Each operator costed at 7 nm, nominal voltage, with the toggle energy of ppa.tech (Horowitz
    at 45 nm, Stillmaker's shape, the node correction that puts the geometric mean of the 8-bit
    multiply and the 32-bit add on Jouppi's), against Jouppi's 7 nm table: those two are the
    anchors (their ratios multiply to 1), the 8-bit add and the 32-bit multiply are held out.
    ``sizing``: as for :func:`held_out_table`."""
    n7 = tech.node(7)
    rows = []
    for (kind, width), e_ref in JOUPPI_7NM_PJ.items():
        m = measure_operator(kind, width, cache=cache)
        e = m.energy_per_op * n7.toggle_energy_pj * (sizing(kind, width) if sizing else 1.0)
        rows.append(
            {
                "operator": m.name,
                "energy_pj": e,
                "energy_ref_pj": e_ref,
                "energy_ratio": e / e_ref,
                "voltage_v": n7.voltage_v,
                "energy_anchor": (kind, width) in ENERGY_ANCHORS,
            }
        )
    return rows


def horowitz_area_check(transistors: int = tech.CAL_MUL8_TRANSISTORS) -> dict:
    """Our 8-bit multiplier (``transistors`` from ppa.synth) at 45 nm under the density law, against
    Horowitz's 282 um^2: block area (realised density) and cell area (peak density, no utilisation).
    Horowitz's figure is a cell-area figure, so the block ratio is expected above 1 by about
    1 / tech.REALISED_DENSITY_FRACTION times the cell ratio."""
    block = transistors * tech.area_per_transistor_um2(45)
    cell = transistors * tech.cell_area_per_transistor_um2(45)
    return {
        "transistors": transistors,
        "model_block_um2": block,
        "model_cell_um2": cell,
        "horowitz_um2": tech.HOROWITZ_MUL8_UM2,
        "block_ratio": block / tech.HOROWITZ_MUL8_UM2,
        "cell_ratio": cell / tech.HOROWITZ_MUL8_UM2,
        "horowitz_density_mtr_mm2": transistors / tech.HOROWITZ_MUL8_UM2,
    }
