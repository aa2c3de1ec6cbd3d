"""The 45 nm calibration (energy: 8-bit multiply and 32-bit add; area: 8-bit multiply) and the
held-out Horowitz operators."""

import pytest

from ppa import tech
from ppa.calibration import calibrate, held_out_table

pytestmark = pytest.mark.yosys


def test_calibration_reproduces_the_hard_coded_constants(synth_cache):
    c = calibrate(cache=synth_cache)
    assert c["transistors"] == tech.CAL_MUL8_TRANSISTORS
    assert c["toggles_per_op"] == pytest.approx(tech.CAL_MUL8_TOGGLES_PER_OP, rel=1e-4)
    assert c["add32_toggles_per_op"] == pytest.approx(tech.CAL_ADD32_TOGGLES_PER_OP, rel=1e-4)
    assert c["e_toggle_45_pj"] == pytest.approx(tech.E_TOGGLE_45_PJ, rel=1e-4)


# Horowitz ISSCC 2014, 45 nm (pJ, um^2), typed from published-figures.md section 3, independently of ppa/
HOROWITZ = {"8-bit multiply": (0.2, 282.0), "8-bit add": (0.03, 36.0), "32-bit add": (0.1, 137.0),
            "32-bit multiply": (3.1, 3495.0)}


def test_held_out_operators_within_1_5x_of_horowitz(synth_cache):
    rows = held_out_table(cache=synth_cache)
    assert {r["operator"]: (r["energy_ref_pj"], r["area_ref_um2"]) for r in rows} == HOROWITZ
    assert [r["operator"] for r in rows if r["anchor"]] == ["8-bit multiply"]
    assert [r["operator"] for r in rows if r["energy_anchor"]] == ["8-bit multiply", "32-bit add"]
    # the energy anchors: geometric mean of the two ratios is 1 (measured 0.845 and 1.183)
    e = [r["energy_ratio"] for r in rows if r["energy_anchor"]]
    assert e[0] * e[1] == pytest.approx(1.0, rel=1e-3)
    for r in rows:
        assert 1 / 1.5 <= r["energy_ratio"] <= 1.5, r  # anchors and held out alike
        if r["anchor"]:
            assert r["area_ratio"] == pytest.approx(1.0, rel=1e-3)
            continue
        assert 1 / 1.5 <= r["area_ratio"] <= 1.5, r
