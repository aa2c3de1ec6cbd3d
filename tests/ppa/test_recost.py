"""ppa.recost (the batch path) against ppa.model.estimate run under ppa.override.overriding (the
model itself): each varied assumption of the registry at its low and high end, joint random samples,
a design whose voltage has to move, a forced-theta design that runs away; and the registry's
values against the constants of the modules that own them."""

from __future__ import annotations

import dataclasses
import math

import numpy as np
import pytest

from hw.errors import InputError
from ppa import activity, clock_gating, dram, phy, tech, thermal
from ppa.assumptions import REGISTRY, assumptions, varied, with_ranges
from ppa.design import DesignPoint, WorkloadActivity
from ppa.model import estimate
from ppa.override import overriding
from ppa.recost import recost
from ppa.timing import stage
from sim.perf import ArrayConfig

pytestmark = pytest.mark.yosys

ACT = WorkloadActivity(
    cycles=3e6,
    effective_macs=2e9,
    performed_multiplies=1e9,
    pe_busy_fraction=0.6,
    sram_read_bytes=5e8,
    sram_write_bytes=1e8,
    dram_bytes=4e7,
    weight_tiles=1000.0,
    sram_buffer_bytes={"ifmap": (2e8, 1e7), "filter": (2e8, 2e7), "ofmap": (1e8, 1e8)},
)
#: a 7 nm design at the voltage floor, and a 16 nm one whose clock needs more than the floor
DESIGNS = {
    "7nm-os-lpddr5": DesignPoint(
        rows=32,
        cols=32,
        sram_kb=1024,
        clock_mhz=1200,
        node_nm=7,
        n=2,
        m=4,
        sparse=True,
        dataflow="os",
        pipeline=1,
        dram="lpddr5",
        dram_units=4,
        sram_buffers_kb=(341.0, 341.0, 342.0),
    ),
    "16nm-ws-hbm2-fast": DesignPoint(
        rows=16,
        cols=16,
        sram_kb=256,
        clock_mhz=1500,
        node_nm=16,
        n=2,
        m=4,
        sparse=False,
        dataflow="ws",
        pipeline=1,
        dram="hbm2",
        dram_units=1,
    ),
}
METRICS = (
    "area_mm2",
    "power_w",
    "tj_c",
    "fmax_mhz",
    "voltage_v",
    "fmax_at_voltage_mhz",
    "power_density_w_mm2",
)


def _check(r, out, i):
    """Sample ``i`` of ``out`` equals the estimate ``r``."""
    assert bool(out["runaway"][i]) == (r.tj_c is None)
    for k in METRICS:
        want = getattr(r, k)
        if want is None:
            assert math.isnan(out[k][i])
        else:
            assert out[k][i] == pytest.approx(want, rel=1e-7), k
    for part, want in r.power_breakdown_w.items():
        if want is not None:
            assert out[f"power_{part}_w"][i] == pytest.approx(want, rel=1e-7, abs=1e-12), part
    for flag, start in (
        ("timing_violated", "clock "),
        ("tj_violated", "junction temperature "),
        ("density_violated", "power density "),
        ("bandwidth_violated", "DRAM traffic "),
    ):
        assert bool(out[flag][i]) == any(x.startswith(start) for x in r.infeasible_reasons), flag


@pytest.fixture(scope="module", params=sorted(DESIGNS))
def design(request):
    d = DESIGNS[request.param]
    return d, estimate(d, ACT)


def test_nominal_sample_is_the_estimate(design):
    _, r = design
    _check(r, recost(r.details["terms"], {}, 1), 0)


def test_each_assumption_at_its_ends_equals_the_model_under_that_override(design):
    d, r = design
    names = varied()
    cols = {a.name: np.full(2 * len(names), a.value) for a in names}
    for j, a in enumerate(names):
        cols[a.name][2 * j], cols[a.name][2 * j + 1] = a.low, a.high
    out = recost(r.details["terms"], cols, 2 * len(names))
    for j, a in enumerate(names):
        for e, val in enumerate((a.low, a.high)):
            with overriding({a.name: val}):
                _check(estimate(d, ACT), out, 2 * j + e)


def test_joint_samples_equal_the_model_under_all_overrides(design):
    d, r = design
    rng = np.random.default_rng(7)
    names = varied()
    n = 6
    cols = {a.name: np.exp(rng.uniform(math.log(a.low), math.log(a.high), n)) for a in names}
    out = recost(r.details["terms"], cols, n)
    for i in range(n):
        with overriding({k: float(v[i]) for k, v in cols.items()}):
            _check(estimate(d, ACT), out, i)


@pytest.mark.parametrize("anchor", ["fo4_45nm_ps", "fo4_7nm_ps"])
def test_a_slower_fo4_moves_the_voltage_and_a_much_slower_one_misses_the_clock(anchor):
    # 16 nm lies between the FO4 anchors: both move its FO4 (ppa.tech.fo4_nominal_ps)
    d = dataclasses.replace(DESIGNS["16nm-ws-hbm2-fast"], clock_mhz=600)
    r = estimate(d, ACT)
    g = REGISTRY[anchor]
    vals = np.array([g.value, g.value * 1.1, g.value * 3.0])
    out = recost(r.details["terms"], {anchor: vals}, 3)
    assert out["voltage_v"][1] > out["voltage_v"][0]  # a slower gate needs more voltage for the same clock
    assert out["timing_violated"][2] and not out["timing_violated"][0]
    # the design keeps the cells the estimate chose (a full estimate would move to faster cells)
    fixed = dataclasses.replace(d, vt=r.details["vt"]["flavour"])
    for i, v in enumerate(vals):
        with overriding({anchor: float(v)}):
            _check(estimate(fixed, ACT), out, i)


def test_the_7nm_fo4_anchor_alone_moves_7nm():
    # fo4_45nm_ps no longer moves 7 nm; the ASAP7 anchor moves it one for one, 45 nm not at all
    f7, f45 = tech.fo4_nominal_ps(7), tech.fo4_nominal_ps(45)
    with overriding({"fo4_45nm_ps": REGISTRY["fo4_45nm_ps"].value * 1.3}):
        assert tech.fo4_nominal_ps(7) == f7
        assert tech.fo4_nominal_ps(45) == pytest.approx(1.3 * f45, rel=1e-12)
    with overriding({"fo4_7nm_ps": REGISTRY["fo4_7nm_ps"].value * 1.3}):
        assert tech.fo4_nominal_ps(7) == pytest.approx(1.3 * f7, rel=1e-12)
        assert tech.fo4_nominal_ps(45) == f45


def test_runaway_is_found_per_sample():
    d = DesignPoint(
        rows=32,
        cols=32,
        sram_kb=4096,
        clock_mhz=1000,
        node_nm=7,
        n=2,
        m=4,
        sparse=True,
        dataflow="ws",
        pipeline=1,
        dram="lpddr5",
        dram_units=4,
        theta_ja=80.0,
    )
    r = estimate(d, ACT)  # runs away with CACTI's HP SRAM leakage, not with a tenth of it
    vals = np.array([0.1, 0.5, 1.0])
    out = recost(r.details["terms"], {"sram_leakage_scale": vals}, 3)
    for i, v in enumerate(vals):
        with overriding({"sram_leakage_scale": float(v)}):
            _check(estimate(d, ACT), out, i)
    assert out["runaway"].any() and not out["runaway"].all()


def test_solve_tj_batch_equals_the_scalar_solver():
    pd = np.array([0.5, 2.0, 5.0, 0.0])
    lr = np.array([0.05, 0.5, 5.0, 0.0])
    th = np.array([10.0, 20.0, 30.0, 10.0])
    k = np.full(4, tech.LEAKAGE_TEMP_COEFF_PER_K)
    tj, leak, run = thermal.solve_tj_batch(pd, lr, th, 45.0, k)
    for i in range(4):
        s = thermal.solve_tj(float(pd[i]), float(lr[i]), float(th[i]), 45.0)
        assert run[i] == s.runaway
        if not s.runaway:
            assert tj[i] == pytest.approx(s.tj_c, abs=1e-9) and leak[i] == pytest.approx(
                s.leakage_w, rel=1e-12
            )


def test_registry_values_are_the_model_constants_and_inside_their_ranges():
    assert REGISTRY["lpddr5_phy_area_mm2"].value == phy.PHY_TYPES["lpddr5"].area_mm2 == 1.0
    assert REGISTRY["lpddr5_dram_pj_per_bit"].value == dram.DRAM_TYPES["lpddr5"].pj_per_bit
    assert REGISTRY["fo4_45nm_ps"].value == tech.GATE_DELAY_45_PS
    assert REGISTRY["w_hold_cycles"].value == activity.W_HOLD
    # the FO4 range is the spread of its two sources (ppa.tech): 8.7 ps at 32 nm and 45 ps at 90 nm moved to 45 nm
    assert (REGISTRY["fo4_45nm_ps"].low, REGISTRY["fo4_45nm_ps"].high) == (13.01, 23.84)
    # the 7 nm anchor: ASAP7's INVx1 FO4, between its INVx2 and INVxp33 chains (ppa.tech)
    assert (REGISTRY["fo4_7nm_ps"].low, REGISTRY["fo4_7nm_ps"].value, REGISTRY["fo4_7nm_ps"].high) == (
        18.3,
        tech.FO4_7NM_PS,
        26.2,
    )
    wa = REGISTRY["wire_allowance"]
    assert wa.value == stage.WIRE_ALLOWANCE == 0.15 and wa.low < 0.15 < wa.high
    assert math.sqrt(wa.low * wa.high) == pytest.approx(0.15, rel=0.02)  # centred for log-uniform sampling
    assert REGISTRY["icg_gated_ff_cycles"].value == clock_gating.ICG_GATED_FF_CYCLES
    assert REGISTRY["icg_enabled_ff_cycles"].value == clock_gating.ICG_ENABLED_FF_CYCLES
    assert REGISTRY["icg_gated_ff_cycles"].tag == REGISTRY["icg_enabled_ff_cycles"].tag == "D"
    for a in assumptions():
        assert 0 < a.low <= a.value <= a.high, a.name
        assert a.reason and a.used_by and a.tag in "ADSPT", a.name


def test_vector_alu_rate_is_the_cycle_models():
    # the registry (ppa) cannot import sim: its copy of the figure is checked here
    assert REGISTRY["vector_alu_ops_per_lane_cycle"].value == ArrayConfig().vector_alu_rate


def test_bad_ranges_are_one_line_errors():
    with pytest.raises(InputError, match=r"assumptions\.wire_allowance: low 0\.2 is above high 0\.1"):
        with_ranges({"wire_allowance": (0.2, 0.1)}, where="assumptions")
    with pytest.raises(InputError, match=r"assumptions\.nope: unknown assumption"):
        with_ranges({"nope": (1.0, 2.0)}, where="assumptions")
    with pytest.raises(InputError, match="positive"):
        with_ranges({"wire_allowance": (0.0, 0.1)}, where="assumptions")
