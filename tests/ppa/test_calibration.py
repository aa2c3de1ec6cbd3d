"""The one-anchor calibration and the held-out Horowitz operators (45 nm)."""

import pytest

from ppa import tech
from ppa.calibration import calibrate, held_out_table

pytestmark = pytest.mark.yosys


def test_calibration_reproduces_the_hard_coded_constants(synth_cache):
    c = calibrate(cache=synth_cache)
    assert c["transistors"] == tech.CAL_MUL8_TRANSISTORS
    assert c["toggles_per_op"] == pytest.approx(tech.CAL_MUL8_TOGGLES_PER_OP, rel=1e-4)


def test_held_out_operators_within_1_5x_of_horowitz(synth_cache):
    rows = held_out_table(cache=synth_cache)
    for r in rows:
        if r["anchor"]:
            assert r["energy_ratio"] == pytest.approx(1.0, rel=1e-3)
            assert r["area_ratio"] == pytest.approx(1.0, rel=1e-3)
            continue
        assert 1 / 1.5 <= r["energy_ratio"] <= 1.5, r
        assert 1 / 1.5 <= r["area_ratio"] <= 1.5, r
