import math

import pytest

from ppa import tech, thermal


def test_tj_monotonic_in_theta_and_power():
    tjs = [thermal.solve_tj(2.0, 0.2, th, 25.0).tj_c for th in (0.5, 1, 2, 4, 8)]
    assert all(a < b for a, b in zip(tjs, tjs[1:], strict=False))
    tjs = [thermal.solve_tj(p, 0.2, 4.0, 25.0).tj_c for p in (0.5, 1, 2, 4)]
    assert all(a < b for a, b in zip(tjs, tjs[1:], strict=False))


def test_fixed_point_satisfies_the_equation():
    r = thermal.solve_tj(3.0, 0.5, 6.0, 30.0)
    leak = 0.5 * math.exp(tech.LEAKAGE_TEMP_COEFF_PER_K * (r.tj_c - tech.LEAKAGE_T_REF_C))
    assert r.tj_c == pytest.approx(30.0 + 6.0 * (3.0 + leak), abs=1e-3)
    assert not r.runaway


def test_runaway_is_detected_not_a_number():
    r = thermal.solve_tj(1.0, 5.0, 40.0, 25.0)
    assert r.runaway and r.tj_c is None and r.total_w is None


def test_theta_from_cooling_and_area():
    assert thermal.theta_ja("liquid", 10) < thermal.theta_ja("air", 10)
    assert thermal.theta_ja("air", 100) < thermal.theta_ja("air", 10)
