"""Area and energy of the vector unit, from the synthesised lane (``hw.vector.VectorLane``).

Same method as the array and ppa.calibration's operators (no per-operator tuning):

* the lane at the workload's activation width is synthesised by ppa's Yosys flow
  (:func:`ppa.characterisation.synthesis`, cached);
* area per lane = netlist transistors x :attr:`ppa.tech.Node.area_per_transistor_um2`;
* energy per operation of each class = average circuit toggles per operation on uniformly random
  operands (gate-level simulation of the mapped netlist, :class:`ppa.netlist.GateNetlist`, every
  cycle a new operand pair, op select held at the class's code), each weighted by its net's
  energy as a cell of the default library (ppa.liberty.gates: toggle-equivalents), x
  :attr:`ppa.tech.Node.toggle_energy_pj` (the toggles computed once per netlist and cached,
  ppa.characterisation.cached). The classes of ``sim.vector`` map to the lane's
  operations: ``alu`` = the mean of add, multiply and max, ``red`` = add, ``exp`` = exp2,
  ``div`` = reciprocal.

What is not in it [A]: the lane's operand/result registers and the unit's control and
cross-lane reduction tree (a lane is a datapath; a register file would add to it), and its SRAM
traffic, which ppa charges on the ofmap buffer like the array's.
"""

from __future__ import annotations

from dataclasses import dataclass
from functools import lru_cache

import numpy as np

from hw.vector_golden import OP_CODES
from ppa import characterisation, rtl, tech
from ppa.netlist import GateNetlist
from ppa.synth_memo import portable_key

CLASSES = ("alu", "exp", "div", "red")
_SEED, _CYCLES, _INSTANCES = 14, 128, 256


@dataclass(frozen=True)
class VectorLaneCost:
    width: int
    transistors: int
    logic_depth: int
    toggles_per_op: dict  # lane op -> toggle-equivalents per operation (ppa.liberty.gates)
    area_um2: float  # one lane at the node
    energy_pj: dict  # sim.vector class -> pJ per operation at the node and voltage
    node_nm: int
    voltage_v: float
    method: str = "synthesis"

    def unit_area_mm2(self, lanes: int) -> float:
        return lanes * self.area_um2 * 1e-6

    def energy_j(self, ops: dict) -> float:
        """Energy (J) of ``ops`` {class: operation count}."""
        return sum(float(ops.get(c, 0.0)) * self.energy_pj[c] for c in CLASSES) * 1e-12


#: the lane figures' own version (part of their cache key): bump when what they mean changes
LANE_VERSION = "2"  # 2: toggle-equivalents


@lru_cache(maxsize=16)
def _measure(width: int, cache: str | None) -> tuple[int, int, tuple]:
    """(transistors, logic depth, toggle-equivalents per operation) of the ``width``-bit lane; they are
    computed once per netlist (ppa.characterisation.cached)."""
    res = characterisation.synthesis(
        "hw.vector.VectorLane",
        width,
        f"vector_lane{width}",
        lambda: rtl.vector_lane_verilog(width)[0],
        cache=cache,
    )

    def compute() -> dict:
        net = GateNetlist(res.netlist(), res.top)
        rng = np.random.default_rng(_SEED)
        hi = 1 << width
        tog = {}
        for op, code in OP_CODES.items():
            a = rng.integers(0, hi, (_CYCLES, _INSTANCES), dtype=np.uint64)
            b = rng.integers(0, hi, (_CYCLES, _INSTANCES), dtype=np.uint64)
            sel = np.full((_CYCLES, _INSTANCES), code, dtype=np.uint64)
            tc, _ = net.simulate({"a": a, "b": b, "op": sel}, count_from=1)
            tog[op] = (tc.gate_energy + tc.ff_net_energy) / ((_CYCLES - 1) * _INSTANCES)
        return {"toggle_eq_per_op": tog}

    key = portable_key(
        "vector-lane",
        res.key,
        LANE_VERSION,
        repr((_SEED, _CYCLES, _INSTANCES)),
        repr(sorted(OP_CODES.items())),
    )
    tog = characterisation.cached("vector-lane", key, compute, cache=cache, what=f"the toggles of {res.top}")[
        "toggle_eq_per_op"
    ]
    return res.transistors, res.logic_depth, tuple(sorted((k, float(v)) for k, v in tog.items()))


def vector_lane_cost(
    width: int, node_nm: int, voltage_v: float | None = None, *, cache=None
) -> VectorLaneCost:
    """One lane of ``width`` bits at ``node_nm`` (and ``voltage_v``, default nominal)."""
    tr, depth, tog_items = _measure(int(width), None if cache is None else str(cache))
    tog = dict(tog_items)
    v = tech.nominal_voltage(node_nm) if voltage_v is None else voltage_v
    nd = tech.node(node_nm, v)
    e = nd.toggle_energy_pj
    energy = {
        "alu": e * (tog["add"] + tog["mul"] + tog["max"]) / 3.0,
        "red": e * tog["add"],
        "exp": e * tog["exp2"],
        "div": e * tog["recip"],
    }
    return VectorLaneCost(
        int(width), int(tr), int(depth), tog, tr * nd.area_per_transistor_um2, energy, int(node_nm), float(v)
    )


def workload_vector_ops(w) -> dict:
    """{class: operation count} of a workload's vector-unit operators (``sim.workloads.Workload``)."""
    out = {c: 0.0 for c in CLASSES}
    for op in getattr(w, "vector_ops", ()):
        for c in CLASSES:
            out[c] += float(getattr(op, c)) * op.count
    return out


def vector_energy_j(w, cost: VectorLaneCost) -> float:
    return cost.energy_j(workload_vector_ops(w))


__all__ = ["VectorLaneCost", "vector_lane_cost", "workload_vector_ops", "vector_energy_j", "CLASSES"]
