"""ppa.liberty.sizing: the switching energy of a netlist sized for minimum delay against its area
mapping, and how ppa.model charges it.

References: the mapped netlists' energies come from ppa.liberty.switching (its transitions match
Icarus net by net, tests/ppa/test_liberty_switching.py); here the ratio is rebuilt from two
independent mappings of the operator, and the model's PE power from the factor and the activity
figures it reports."""

from __future__ import annotations

import math

import pytest

from hw.params import PEParams
from ppa import activity, rtl
from ppa.design import DesignPoint
from ppa.liberty import sizing
from ppa.liberty.library import default_liberty
from ppa.model import estimate

pytestmark = [pytest.mark.yosys, pytest.mark.sta]


def test_operator_ratio_is_the_two_mappings_energies():
    lib = default_liberty()
    v, top = rtl.operator_verilog("mul", 8)
    inputs = sizing.operator_inputs(8)
    speed = sizing.switching_pj(v, top, lib, inputs, speed=True)
    area = sizing.switching_pj(v, top, lib, inputs, speed=False)
    # sizing for speed switches more: buffers and up-sized cells (bench_ppa_glitch: 19.9 against 12.8 pJ
    # per operation at 1.8 V)
    assert 1.3 < speed / area < 1.8
    assert sizing.operator_ratio("mul", 8, lib) == pytest.approx(speed / area, rel=1e-9)
    # the calibration pair's factors multiply to 1: the toggle energy fitted on them keeps its meaning
    f = sizing.operator_sizing_factor("mul", 8, lib) * sizing.operator_sizing_factor("add", 32, lib)
    assert f == pytest.approx(1.0, rel=1e-9)
    assert sizing.anchor_ratio(lib) == pytest.approx(
        math.sqrt(sizing.operator_ratio("mul", 8, lib) * sizing.operator_ratio("add", 32, lib)), rel=1e-12
    )


def test_the_model_charges_the_pes_gates_at_its_sizing_factor():
    """The INT8 dense PE sized for speed costs about what its area mapping does (measured 1.005
    over the anchors: a shallow netlist), and the model's PE power is the activity figures with
    the gates at that factor."""
    p = PEParams()
    lib = default_liberty()
    s = activity.pe_sizing_factor(p, False, lib)
    assert 0.95 < s < 1.1
    d = DesignPoint(rows=4, cols=4, sparse=False, pipeline=1, node_nm=7, sram_kb=0, vector_lanes=0)
    res = estimate(d)
    sw = res.details["switching_energy"]
    assert sw["sizing_factor"] == pytest.approx(s, rel=1e-12) and "osu018" in sw["sizing_source"]
    act = activity.pe_activity(p, False)
    ff_extra = res.details["clock_energy"]["ff_extra_toggles"]
    per_pe_cycle = act.gate_energy * s + act.ff_net_energy + act.ff_toggles * ff_extra
    pe_cycles = 16 * res.clock_mhz * 1e6  # every PE busy without a workload
    want = pe_cycles * per_pe_cycle * res.details["toggle_energy_fj"] * 1e-15
    assert res.details["dynamic_breakdown_w"]["pe"] == pytest.approx(want, rel=1e-9)


@pytest.mark.slow
def test_a_float_pe_sized_for_speed_switches_more():
    """The BF16 dense PE's float adders are deep: sized for minimum delay its switching grows well
    beyond the anchors' (bench_ppa_glitch: 2.05x its area mapping against the anchors' 1.50x)."""
    s = activity.pe_sizing_factor(PEParams(precision="bf16"), False, default_liberty())
    assert 1.2 < s < 1.6
