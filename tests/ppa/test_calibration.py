"""The 45 nm calibration (energy: 8-bit multiply and 32-bit add; area: 8-bit multiply) and the
held-out Horowitz operators."""

import pytest

from ppa import tech
from ppa.calibration import calibrate, held_out_table

pytestmark = pytest.mark.yosys


@pytest.mark.yosys_calibration
def test_calibration_reproduces_the_hard_coded_constants(synth_cache):
    c = calibrate(cache=synth_cache)
    assert c["transistors"] == tech.CAL_MUL8_TRANSISTORS
    assert c["energy_per_op"] == pytest.approx(tech.CAL_MUL8_TOGGLE_EQ_PER_OP, rel=1e-4)
    assert c["add32_energy_per_op"] == pytest.approx(tech.CAL_ADD32_TOGGLE_EQ_PER_OP, rel=1e-4)
    assert (c["toggles_per_op"], c["add32_toggles_per_op"]) == pytest.approx((123.196, 87.958), rel=1e-4)
    assert c["e_toggle_45_pj"] == pytest.approx(tech.E_TOGGLE_45_PJ, rel=1e-4)
    assert c["area_per_transistor_45_um2"] == pytest.approx(tech.AREA_PER_TRANSISTOR_45_UM2, rel=1e-12)
    assert c["horowitz_area_per_transistor_45_um2"] == pytest.approx(282.0 / 2176, rel=1e-12)


# Horowitz ISSCC 2014, 45 nm (pJ, um^2), typed from published-figures.md section 3, independently of ppa/
HOROWITZ = {
    "8-bit multiply": (0.2, 282.0),
    "8-bit add": (0.03, 36.0),
    "32-bit add": (0.1, 137.0),
    "32-bit multiply": (3.1, 3495.0),
}


#: 45 nm placed-block area per transistor, typed independently of ppa/: Intel 22 nm 15.3 MTr/mm^2
#: x (90 x 80) / (160 x 160) = 4.303 MTr/mm^2 peak, x 0.70 utilisation / 1.25 cell growth
A45_BLOCK_UM2 = 1.0 / (15.3 * 7200 / 25600 * 0.70 / 1.25)


@pytest.mark.yosys_calibration
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
    # area: the density law, not Horowitz, sets it (issue 10). The 8-bit multiply (2176 transistors)
    # comes out 3.20x Horowitz's 282 um^2 as a placed block and 1.79x at the 45 nm library's peak
    # cell density: Horowitz's figure is a cell-area figure (no utilisation) and implies 7.7 MTr/mm^2,
    # above the 45 nm peak of 4.3.
    mul8 = next(r for r in rows if r["anchor"])
    assert mul8["area_ratio"] == pytest.approx(2176 * A45_BLOCK_UM2 / 282.0, rel=1e-9)
    assert mul8["area_ratio"] == pytest.approx(3.20, abs=0.01)
    assert mul8["cell_area_ratio"] == pytest.approx(mul8["area_ratio"] * 0.56, rel=1e-9)
    for r in rows:
        # the shape across operators is held out: each within 1.5x of the multiply's ratio
        assert 1 / 1.5 <= r["area_ratio"] / mul8["area_ratio"] <= 1.5, r
        # and even at peak cell density every operator is larger than Horowitz's cell area, by < 3x
        assert 1.0 < r["cell_area_ratio"] < 3.0, r
