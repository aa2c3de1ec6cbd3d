import math

import pytest

from hw.errors import InputError
from ppa import tech


def test_stillmaker_corrigendum_energy_values():
    # published-figures §4: E(32nm HP @ 0.9 V) = 0.4571 (checked against the paper's corrigendum)
    assert tech._energy(32, 0.9) == pytest.approx(0.4571, abs=5e-5)


@pytest.mark.parametrize(
    "nm,delay,energy,area",
    [
        (32, 0.669, 0.531, 0.46),
        (20, 0.757, 0.233, 0.21),
        (16, 0.512, 0.161, 0.19),
        (14, 0.361, 0.112, 0.17),
        (10, 0.307, 0.082, 0.10),
        (7, 0.259, 0.056, 0.059),
    ],
)
def test_nominal_factors_match_published_table(nm, delay, energy, area):
    n = tech.node(nm)
    assert tech.stillmaker_delay_ratio(nm) == pytest.approx(delay, abs=2e-3)
    assert n.energy_factor == pytest.approx(energy, abs=2e-3)
    assert n.area_factor == pytest.approx(area)


def test_22_is_the_20nm_model_and_delay_falls_with_voltage():
    assert tech.node(22, 0.8).delay_factor == tech.node(20, 0.8).delay_factor
    for nm in tech.NODES_NM:
        grid = tech.voltage_grid(nm)
        d = [tech.node(nm, v).gate_delay_ps for v in grid[: len(grid) // 2]]
        assert all(a > b for a, b in zip(d, d[1:], strict=False)), nm


def test_calibration_constants_follow_from_the_anchors():
    # Horowitz: 45 nm, 0.9 V, 8-bit multiply 0.2 pJ / 282 um^2; Jouppi: 7 nm 0.07 pJ
    # energy: geometric mean of what the 8-bit multiply and the 32-bit add imply, at each anchor
    e45 = tech.node(45, 0.9).toggle_energy_pj
    assert e45 == tech.E_TOGGLE_45_PJ
    # the operators' toggle-equivalents per operation (toggles weighted by their nets' osu018 energies;
    # tests/ppa/test_calibration.py re-derives them from the netlists)
    assert (e45 * 131.582 / 0.2) * (e45 * 72.081 / 0.1) == pytest.approx(1.0, rel=1e-4)
    e7 = tech.node(7, 0.7).toggle_energy_pj
    assert (e7 * 131.582 / 0.07) * (e7 * 72.081 / 0.03) == pytest.approx(1.0, rel=1e-4)
    # area: Horowitz's 282 um^2 / 2210 is a check now; the 45 nm law value is Intel 22 nm 15.3 MTr/mm^2
    # scaled by the gate x metal-1 pitch product to 45 nm, x the realised fraction 0.70 / 1.25
    assert tech.HOROWITZ_AREA_PER_TRANSISTOR_45_UM2 * tech.CAL_MUL8_TRANSISTORS == pytest.approx(282.0)
    assert tech.AREA_PER_TRANSISTOR_45_UM2 == pytest.approx(1.0 / (15.3 * 7200 / 25600 * 0.56), rel=1e-12)
    assert tech.node(45, 0.9).area_per_transistor_um2 == tech.AREA_PER_TRANSISTOR_45_UM2


def test_leakage_temperature_coefficient_is_liao():
    n = tech.node(45)
    ratio = n.leakage_w(1e6, 130.0) / n.leakage_w(1e6, 90.0)
    assert ratio == pytest.approx(2.5)


@pytest.mark.parametrize("nm", [3, 90, "7", 7.5, True])  # issue 37: 5 nm is a node now (was 5)
def test_unknown_node(nm):
    with pytest.raises(InputError, match="node"):
        tech.node(nm)


def test_voltage_outside_range():
    with pytest.raises(InputError, match="outside the modelled range"):
        tech.node(7, 0.9)
    lo, hi = tech.voltage_range(45)
    assert (lo, hi) == (0.73, 1.0)  # Vmin = 0.73 Vnom (Chen/Bowman ISLPED 2013), nominal 1.0 V
    assert math.isfinite(tech.node(45, lo).gate_delay_ps)
