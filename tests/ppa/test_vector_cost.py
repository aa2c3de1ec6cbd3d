"""The vector unit's cost: the synthesised lane (hw.vector.VectorLane) through ppa's flow, its
netlist checked against the golden model, its energy against Horowitz's published operators."""

import numpy as np
import pytest

from hw.vector import OP_CODES, lane_golden
from ppa import tech
from ppa.calibration import HOROWITZ_45NM
from ppa.netlist import GateNetlist
from ppa.synth_memo import synthesize_generated
from ppa.vector_cost import vector_lane_cost, workload_vector_ops

pytestmark = pytest.mark.yosys


def test_synthesised_lane_computes_the_golden_model():
    from hw.vector import vector_lane_verilog

    res = synthesize_generated("hw.vector.VectorLane", 8, "vector_lane8", lambda: vector_lane_verilog(8)[0])
    net = GateNetlist(res.netlist(), res.top)
    rng = np.random.default_rng(3)
    a = rng.integers(0, 256, (4, 64), dtype=np.uint64)
    b = rng.integers(0, 256, (4, 64), dtype=np.uint64)
    for op, code in OP_CODES.items():
        _, out = net.simulate({"a": a, "b": b, "op": np.full((4, 64), code, dtype=np.uint64)}, outputs=("y",))
        assert np.array_equal(out["y"], lane_golden(op, a, b, 8)), op


def test_lane_energy_and_area_against_published_operators():
    c = vector_lane_cost(8, 45, 0.9)  # Horowitz's node and voltage
    mul8_pj, mul8_um2 = HOROWITZ_45NM[("mul", 8)]
    add32_pj = HOROWITZ_45NM[("add", 32)][0]
    # a lane op toggles the whole lane (add, multiply, compare, exp2 and reciprocal side by side, no operand
    # isolation): at least an 8-bit multiply's energy, well under a 32-bit multiply's (3.1 pJ)
    for cls, e in c.energy_pj.items():
        assert mul8_pj <= e <= 3.1 / 2, (cls, e)
    assert c.energy_pj["alu"] < mul8_pj + add32_pj * 4
    # area: more than the 8-bit multiplier it contains, priced like every other block of ppa
    from ppa.calibration import measure_operator

    assert c.transistors > measure_operator("mul", 8).transistors and c.area_um2 == pytest.approx(
        c.transistors * tech.node(45, 0.9).area_per_transistor_um2
    )
    assert c.area_um2 > mul8_um2
    c7 = vector_lane_cost(8, 7)
    assert c7.energy_pj["alu"] < c.energy_pj["alu"] / 2 and c7.area_um2 < c.area_um2 / 5


def test_workload_vector_ops_counts_classes():
    from sim.workloads import get_workload

    ops = workload_vector_ops(get_workload("bert-base", seq=128))
    # softmax alone has 12 layers x 12 heads x 128 x 128 exps; GELU one per FFN element
    assert ops["exp"] == 12 * (12 * 128 * 128 + 128 * 3072) and ops["div"] > 0 and ops["red"] > 0


def test_vector_bits_sets_the_lane_width():
    """DesignPoint.vector_bits: the vector lanes' width (default act_bits), priced as that lane."""
    from hw.errors import InputError
    from ppa.design import DesignPoint
    from ppa.model import estimate

    base = dict(rows=2, cols=2, node_nm=7, sram_kb=64, vector_lanes=3)
    default = estimate(DesignPoint(**base))
    wide = estimate(DesignPoint(**base, vector_bits=16))
    a_t = tech.node(7, wide.voltage_v).area_per_transistor_um2
    for r, w in ((default, 8), (wide, 16)):
        vu = r.details["vector_unit"]
        assert vu["width_bits"] == w and vu["lanes"] == 3
        assert vu["lane_transistors"] == vector_lane_cost(w, 7).transistors
        assert r.area_breakdown_mm2["vector"] == pytest.approx(
            3 * vu["lane_transistors"] * a_t * 1e-6, rel=1e-9
        )
    assert wide.area_breakdown_mm2["vector"] > 2 * default.area_breakdown_mm2["vector"]  # a 16x16 multiplier
    # the array is untouched by the lane width
    assert wide.area_breakdown_mm2["pe_array"] == default.area_breakdown_mm2["pe_array"]
    for bad in (3, 33, True, 8.0):
        with pytest.raises(InputError, match="vector_bits"):
            DesignPoint(**base, vector_bits=bad).validate()
