"""Junction temperature with temperature-dependent leakage, solved by fixed-point iteration.

T_j = T_ambient + theta_ja x (P_dynamic + P_leakage(T_j)), P_leakage(T) = P_leak_ref x
exp(k (T - T_ref)) (k from ppa.tech: Liao et al. ISLPED 2003, 2.5x over 90-130 C).

Package / cooling (theta_ja in K/W), computed from the HotSpot 6.0 default package stack
(sywen-scut/HotSpot-6.0 ``hotspot.config`` [P]) for the die area: die 0.15 mm silicon (k 100 W/mK),
TIM 20 um (k 4 W/mK) over the die area, Cu spreader 30 x 30 x 1 mm and Cu heat sink 60 x 60 x
6.9 mm (k 400 W/mK, 1-D conduction through their area), then convection:
- ``air``: HotSpot's r_convec 0.1 K/W;
- ``liquid``: the heat sink and its convection replaced by a microchannel cold plate on the
  spreader with h = 10 MW/m^2 / 50 K = 2e5 W/m^2K (Kandlikar ASME ICMM 2005: 1 kW/cm^2 at 50 K
  junction-to-fluid), R = 1 / (h A_spreader).
1-D conduction ignores lateral spreading in the die and TIM, so small dies come out hot: a stated
simplification. Pass ``theta_ja`` directly to override.

Cooling limits on power density: air 1 W/mm^2 ("100 W/sq-cm air cooled limit", Nowka, IBM, Hot
Chips 2005 [S]); liquid 10 W/mm^2 (Kandlikar 2005, 1 kW/cm^2).
"""

from __future__ import annotations

import math
from dataclasses import dataclass

import numpy as np

from hw.errors import InputError
from ppa import tech
from ppa.override import assumed

COOLING_LIMIT_W_PER_MM2 = {"air": 1.0, "liquid": 10.0}
#: junction limit for "feasible": [A] between the GPU policy example (max operating 89 C,
#: slowdown 97.5 C; ADLINK MXM manual) and the 125 C reliability remark (Nowka 2005).
TJ_MAX_C_DEFAULT = 105.0
RUNAWAY_T_C = 500.0  # [A] beyond this the iteration has no physical fixed point: runaway
#: heat sink to air: HotSpot 6.0's default ``r_convec`` [P] (hotspot.config), K/W
AIR_CONVECTION_K_PER_W = 0.1


def theta_ja(cooling: str, die_area_mm2):
    """Junction-to-ambient thermal resistance (K/W) for the named cooling, see module docstring
    (``die_area_mm2`` a number, or a numpy array of areas for one theta each)."""
    if cooling not in COOLING_LIMIT_W_PER_MM2:
        raise InputError(f"unknown cooling {cooling!r}; known: air, liquid", where="cooling")
    if not np.all(np.asarray(die_area_mm2) > 0):
        raise InputError(f"die area must be positive, got {die_area_mm2}", where="die area")
    a = die_area_mm2 * 1e-6  # m^2
    r_die = 0.15e-3 / (100.0 * a)
    r_tim = 20e-6 / (4.0 * a)
    r_spreader = 1e-3 / (400.0 * 0.03 * 0.03)
    if cooling == "liquid":
        return r_die + r_tim + r_spreader + 1.0 / (2e5 * 0.03 * 0.03)
    r_sink = 6.9e-3 / (400.0 * 0.06 * 0.06)
    return r_die + r_tim + r_spreader + r_sink + assumed("air_convection_k_per_w", AIR_CONVECTION_K_PER_W)


@dataclass
class ThermalResult:
    tj_c: float | None  # None when runaway
    leakage_w: float | None
    total_w: float | None
    iterations: int
    runaway: bool


def solve_tj(
    dynamic_w: float,
    leak_ref_w: float,
    theta: float,
    t_ambient_c: float = 25.0,
    *,
    max_iter: int = 200,
    tol_c: float = 1e-4,
) -> ThermalResult:
    """Fixed point of T = Ta + theta (P_dyn + P_leak_ref exp(k (T - T_ref))).

    ``leak_ref_w`` is the leakage at tech.LEAKAGE_T_REF_C. Runaway (no fixed point: the leakage
    curve outgrows the cooling line) is reported as such, never as a temperature."""
    for name, v in (("dynamic power", dynamic_w), ("leakage", leak_ref_w), ("theta_ja", theta)):
        if not (isinstance(v, (int, float)) and math.isfinite(v) and v >= 0):
            raise InputError(f"{name} must be a non-negative number, got {v!r}", where="thermal")
    k, tref = assumed("leakage_temp_coeff_per_k", tech.LEAKAGE_TEMP_COEFF_PER_K), tech.LEAKAGE_T_REF_C

    def leak(t):
        return leak_ref_w * math.exp(min(k * (t - tref), 700.0))

    # Existence test: g(T) = Ta + theta (Pd + leak(T)) - T is convex; its minimum is where
    # theta * k * leak(T) = 1. If g(T*) > 0 there is no fixed point (runaway).
    if leak_ref_w > 0 and theta > 0:
        t_star = tref + math.log(1.0 / (theta * k * leak_ref_w)) / k
        t_star = max(t_star, t_ambient_c)
        if t_ambient_c + theta * (dynamic_w + leak(t_star)) - t_star > 0:
            return ThermalResult(None, None, None, 0, True)
    t = t_ambient_c
    for i in range(1, max_iter + 1):
        t_new = t_ambient_c + theta * (dynamic_w + leak(t))
        if t_new > RUNAWAY_T_C:
            return ThermalResult(None, None, None, i, True)
        if abs(t_new - t) < tol_c:
            t = t_new
            return ThermalResult(t, leak(t), dynamic_w + leak(t), i, False)
        t = t_new
    return ThermalResult(None, None, None, max_iter, True)


def solve_tj_batch(
    dynamic_w: np.ndarray,
    leak_ref_w: np.ndarray,
    theta: np.ndarray,
    t_ambient_c: float,
    k_per_k: np.ndarray,
    *,
    max_iter: int = 200,
    tol_c: float = 1e-4,
) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
    """:func:`solve_tj` on arrays (one fixed point per element, each with its own leakage temperature
    coefficient ``k_per_k``): (T_j, leakage at T_j, runaway); T_j and leakage are NaN where it runs
    away. The same existence test and iteration, each element stopping where the scalar one stops."""
    pd, lr, th, k = np.broadcast_arrays(
        *(np.asarray(x, float) for x in (dynamic_w, leak_ref_w, theta, k_per_k))
    )
    tref = tech.LEAKAGE_T_REF_C

    def leak(t):
        return lr * np.exp(np.minimum(k * (t - tref), 700.0))

    runaway = np.zeros(pd.shape, bool)
    test = (lr > 0) & (th > 0)
    with np.errstate(divide="ignore", invalid="ignore"):
        t_star = np.where(test, tref + np.log(1.0 / np.where(test, th * k * lr, 1.0)) / k, t_ambient_c)
    t_star = np.maximum(t_star, t_ambient_c)
    runaway |= test & (t_ambient_c + th * (pd + leak(t_star)) - t_star > 0)
    t = np.full(pd.shape, float(t_ambient_c))
    done = runaway.copy()
    for _ in range(max_iter):
        if done.all():
            break
        t_new = t_ambient_c + th * (pd + leak(t))
        hot = ~done & (t_new > RUNAWAY_T_C)
        runaway |= hot
        conv = ~done & ~hot & (np.abs(t_new - t) < tol_c)
        t = np.where(~done & ~hot, t_new, t)
        done |= hot | conv
    runaway |= ~done
    tj = np.where(runaway, np.nan, t)
    return tj, np.where(runaway, np.nan, leak(t)), runaway
