"""Threshold-voltage flavours (ppa.references VT_FLAVOURS): each factor reaches the figure it belongs
to once, the automatic choice is the lowest-leakage flavour that meets the clock, and ppa.recost
keeps the chosen flavour."""

from __future__ import annotations

import dataclasses

import numpy as np
import pytest

from hw.errors import InputError
from ppa.design import DesignPoint
from ppa.model import estimate
from ppa.recost import recost
from ppa.references import VT_CHOICES, VT_FLAVOURS as FLAVOURS

pytestmark = pytest.mark.yosys

#: a dense 7 nm array at its nominal voltage: pipeline 2 times well below the silicon clock cap
BASE = DesignPoint(rows=16, cols=8, node_nm=7, sparse=False, pipeline=2, sram_kb=64, voltage_v=0.7)


def _at(vt, **kw):
    return estimate(dataclasses.replace(BASE, vt=vt, **kw))


def test_each_factor_reaches_its_figure_once():
    r = {vt: _at(vt) for vt in VT_CHOICES}
    for vt in ("lvt", "slvt"):
        f = FLAVOURS[vt]
        assert r[vt].fmax_at_voltage_mhz / r["rvt"].fmax_at_voltage_mhz == pytest.approx(
            1 / f.delay, rel=1e-9
        )
        t, t0 = r[vt].details["terms"], r["rvt"].details["terms"]
        assert t["logic_leak_ref_w"] / t0["logic_leak_ref_w"] == pytest.approx(f.leakage, rel=1e-9)
        # at the same clock (fmax of each: the switching power goes with f, so compare per clock cycle)
        per_cycle = lambda res: res.details["terms"]["dyn_w"] / res.clock_mhz  # noqa: E731
        assert per_cycle(r[vt]) / per_cycle(r["rvt"]) == pytest.approx(f.energy, rel=1e-9)
        assert r[vt].area_mm2 == pytest.approx(
            r["rvt"].area_mm2, rel=1e-12
        )  # the same cells, another implant
        assert r[vt].details["vt"] | {} == {**r[vt].details["vt"], "flavour": vt, "choice": "given"}


def test_the_automatic_choice_is_the_lowest_leakage_flavour_that_meets_the_clock():
    f = {vt: _at(vt).fmax_at_voltage_mhz for vt in VT_CHOICES}
    assert f["rvt"] < f["lvt"] < f["slvt"]
    cases = [
        (0.9 * f["rvt"], "rvt"),
        ((f["rvt"] + f["lvt"]) / 2, "lvt"),
        ((f["lvt"] + f["slvt"]) / 2, "slvt"),
    ]
    for clock, want in cases:
        r = _at(None, clock_mhz=clock)
        assert r.feasible and r.details["vt"]["flavour"] == want, (clock, r.details["vt"])
        assert r.details["vt"]["choice"] == "the lowest-leakage flavour that meets the clock"
    r = _at(None, clock_mhz=1.1 * f["slvt"])  # no flavour meets it: infeasible, with the fastest tried
    assert not r.feasible and r.details["vt"]["flavour"] == "slvt"
    assert "slvt cells" in r.infeasible_reasons[0]
    assert _at(None).details["vt"]["flavour"] == "rvt"  # no clock asked
    assert _at("rvt", clock_mhz=(f["rvt"] + f["lvt"]) / 2).feasible is False  # a given flavour is kept


def test_recost_keeps_the_chosen_flavour():
    f = _at("rvt").fmax_at_voltage_mhz
    d = dataclasses.replace(BASE, clock_mhz=1.1 * f, voltage_v=None)
    r = estimate(d)
    assert r.feasible and r.details["vt"]["flavour"] == "lvt"
    out = recost(r.details["terms"], {}, 1)
    for k, want in (
        ("fmax_at_voltage_mhz", r.fmax_at_voltage_mhz),
        ("voltage_v", r.voltage_v),
        ("power_w", r.power_w),
        ("tj_c", r.tj_c),
    ):
        assert out[k][0] == pytest.approx(want, rel=1e-9), k
    assert not bool(np.asarray(out["timing_violated"])[0])


def test_an_unknown_flavour_is_an_input_error():
    with pytest.raises(InputError, match="rvt, lvt or slvt"):
        DesignPoint(vt="ulvt").validate()
