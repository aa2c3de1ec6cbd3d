"""One estimate re-costed under many values of the assumptions at once (numpy batches).

``ppa.model.estimate`` records in ``details["terms"]`` the parts of its result that an assumption of
the registry (ppa.assumptions, ``varied``) scales, at the values in force when it ran: logic and
SRAM area, dynamic / clock / vector / SRAM power, the logic and SRAM leakage at the reference
temperature, DRAM bytes per second, the stage in FO4, the operating point. :func:`recost` takes
those terms and arrays of assumption values (one element per sample) and composes what the
estimate composes, without synthesis, STA or activity simulation:

* timing: the stage's fmax on the node's voltage grid (ppa.operating.fmax_mhz, at the estimate's
  values) before the silicon clock cap, scaled by FO4 x (1 + wire) / (1 - uncertainty) (the node's
  FO4 by the two anchors as ppa.tech.fo4_nominal_ps weighs them) and by the cells' threshold-voltage
  flavour (the one the estimate chose: the design's cells stay what they are), then capped; the
  lowest grid voltage that meets the clock, as ppa.operating.operating_point chooses it; above the
  top of the range, the clock is not met;
* area: logic (with the fixed control block's transistors) x (growth / utilisation), SRAM, PHYs x
  their area, the allowances, the PHY-edge minimum die; the logic leakage in proportion to the
  logic transistors;
* power at the chosen voltage: switching energy x toggle energy x (V/V0)^2 (the clock also x the
  clock scale), SRAM energy x its scale x (V_sram/V_sram0)^2, leakage x its scale x the voltage
  factor x exp((k - k0)(T_ref - 25 C)) (the logic anchors are 25 C figures), DRAM and PHY bits x
  their energies per bit, PHY static power; the junction temperature solved per sample
  (ppa.thermal.solve_tj_batch) with theta_ja from the area;
* the reasons ppa.model gives: clock above fmax, T_j above its limit, power density above the
  cooling limit, thermal runaway, DRAM traffic above the memory's bandwidth (unchanged).

A sample at the estimate's own values gives the estimate back; tests/ppa/test_recost.py checks
that, and that a sample equals a full ``estimate`` run under ``ppa.override.overriding`` for each
assumption at its low and high end.
"""

from __future__ import annotations

import math
from dataclasses import dataclass
from functools import lru_cache

import numpy as np

from ppa import silicon_clock, tech, thermal
from ppa.assumptions import REGISTRY
from ppa.override import overriding
from ppa.phy import PHY_FAMILY
from ppa.timing import stage

#: The 25 C of the logic leakage anchors (ppa.tech LOGIC_LEAK_45_C, LOGIC_LEAK_7_C): a change of the
#: temperature coefficient moves their value at the reference temperature by exp(dk (T_ref - 25)).
_ANCHOR_C = tech.LOGIC_LEAK_45_C
assert tech.LOGIC_LEAK_7_C == _ANCHOR_C


def _values(
    terms: dict, samples: dict[str, np.ndarray], n: int
) -> tuple[dict[str, float], dict[str, np.ndarray]]:
    """(values at the estimate, values per sample) of every varied assumption."""
    used = {a.name: terms["overrides"].get(a.name, a.value) for a in REGISTRY.values() if a.varied}
    per = {k: np.broadcast_to(np.asarray(samples.get(k, v), float), (n,)) for k, v in used.items()}
    return used, per


@lru_cache(maxsize=4096)
def _fmax_grid(node_nm: int, cycle_fo4: float, overrides: tuple) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
    """(voltage grid, fmax of the stage at each grid voltage before the silicon clock cap, the cap
    there (inf where none)) at the node, at the values ``overrides``."""
    with overriding(dict(overrides)):
        grid = np.array(tech.voltage_grid(node_nm))
        f = np.array([_stage_mhz(node_nm, v, cycle_fo4) for v in grid])
    return grid, f, np.array([_cap_mhz(node_nm, v) for v in grid])


def _stage_mhz(node_nm: int, v: float, cycle_fo4: float) -> float:
    """fmax of the stage at the node and voltage before the silicon clock cap (ppa.operating.fmax_mhz)."""
    return 1e6 / stage.cycle_time_ps(cycle_fo4, tech.node(node_nm, v).gate_delay_ps)


def _cap_mhz(node_nm: int, v: float) -> float:
    """The silicon clock cap ppa.operating.fmax_mhz applies (ppa.silicon_clock), inf where there is none."""
    cap = silicon_clock.silicon_limit_mhz(node_nm, v)
    return math.inf if cap is None else cap


@dataclass(frozen=True)
class _Samples:
    """The varied assumptions' values at the estimate (``used``) and per sample (``x``: arrays of n)."""

    used: dict[str, float]
    x: dict[str, np.ndarray]
    n: int

    def ratio(self, name: str) -> np.ndarray:
        return self.x[name] / self.used[name]


@dataclass(frozen=True)
class _Timing:
    """Per sample: the voltage, fmax at the top of the range and at that voltage, clock not met."""

    v: np.ndarray
    f_top: np.ndarray
    f_at_v: np.ndarray
    violated: np.ndarray


def _timing(terms: dict, s: _Samples) -> _Timing:
    """The stage's fmax per sample and the voltage chosen for the clock (as ppa.operating does)."""
    x, used, n = s.x, s.used, s.n
    nm = terms["node_nm"]
    v0, clk = terms["voltage_v"], terms["clock_mhz"]
    # timing: every grid fmax before the silicon cap scales by 1 / s; the node's FO4 moves with each
    # anchor's ratio to the power of its weight (ppa.tech.fo4_nominal_ps), then the cap applies
    w45, w7 = tech.fo4_anchor_weights(nm)
    scale = (
        s.ratio("fo4_45nm_ps") ** w45
        * s.ratio("fo4_7nm_ps") ** w7
        * terms.get("vt_delay", 1.0)  # the cells' flavour (ppa.references VT_FLAVOURS)
        * (1 + x["wire_allowance"])
        / (1 + used["wire_allowance"])
        * (1 - used["clock_uncertainty_fraction"])
        / (1 - x["clock_uncertainty_fraction"])
    )
    grid, f0, cap = _fmax_grid(nm, float(terms["cycle_fo4"]), tuple(sorted(terms["overrides"].items())))
    f = np.minimum(f0[None, :] / scale[:, None], cap[None, :])  # (n, grid)
    f_top = f.max(axis=1)
    if terms["voltage_forced"]:
        v = np.full(n, v0)
        with overriding(terms["overrides"]):
            f_at_v = np.minimum(_stage_mhz(nm, v0, float(terms["cycle_fo4"])) / scale, _cap_mhz(nm, v0))
        violated = clk > f_at_v * (1 + 1e-9)
    else:
        meets = f >= clk
        ok = meets.any(axis=1)
        idx = np.where(ok, meets.argmax(axis=1), len(grid) - 1)
        v = grid[idx]
        f_at_v = f[np.arange(n), idx]
        violated = ~ok
    return _Timing(v, f_top, f_at_v, violated)


def _area(terms: dict, s: _Samples) -> np.ndarray:
    """The die area per sample (mm^2)."""
    x = s.x
    ctrl_tr = x["control_fixed_transistors"]  # the fixed control block, priced like the rest of the logic
    logic = (
        (terms["logic_mm2"] + ctrl_tr * terms["mm2_per_transistor"])
        * s.ratio("post_layout_cell_growth")
        / s.ratio("placement_utilisation")
    )
    core = logic + terms["sram_mm2"]
    fam = PHY_FAMILY[str(terms["dram"]).lower()]
    phy_mm2 = x[f"{fam}_phy_area_mm2"] * terms["dram_units"]
    other = (x["other_allowance"] + x["control_allowance"]) * core
    return np.maximum(core + phy_mm2 + other, terms["min_die_mm2"])


def _power(terms: dict, s: _Samples, v: np.ndarray) -> dict[str, np.ndarray]:
    """The power parts per sample at the voltages ``v`` (W): dynamic, vector, clock, SRAM, SRAM and logic
    leakage at the reference temperature, DRAM, PHY."""
    x, used, n = s.x, s.used, s.n
    nm = terms["node_nm"]
    vnom = tech.nominal_voltage(nm)
    v0 = terms["voltage_v"]
    ev = (v / v0) ** 2 * s.ratio("toggle_energy_45nm_pj")
    if terms["sram_voltage_forced"]:
        vs = np.full(n, terms["sram_voltage_v"])
    else:
        vs = np.maximum(np.round(np.minimum(vnom, tech.vmin_v(nm) + x["sram_vmin_offset_v"]), 4), v)
    vs0 = terms["sram_voltage_v"]
    dk = x["leakage_temp_coeff_per_k"] - used["leakage_temp_coeff_per_k"]
    fam = PHY_FAMILY[str(terms["dram"]).lower()]
    bits = terms["dram_bytes_per_s"] * 8
    return {
        "dynamic": terms["dyn_w"] * ev,
        "vector": terms["vec_w"] * ev,
        "clock": terms["clk_w"] * ev * s.ratio("clock_energy_scale"),
        "sram": terms["sram_w"] * s.ratio("sram_energy_scale") * (vs / vs0) ** 2,
        "sram_leak": (
            terms["sram_leak_ref_w"]
            * s.ratio("sram_leakage_scale")
            * tech.leakage_voltage_factor(vs, vnom)
            / tech.leakage_voltage_factor(vs0, vnom)
        ),
        "logic_leak": (
            terms["logic_leak_ref_w"]
            * s.ratio("logic_leakage_scale")
            * s.ratio("post_layout_cell_growth")
            * (terms["logic_transistors"] + x["control_fixed_transistors"])
            / (terms["logic_transistors"] + used["control_fixed_transistors"])
            * tech.leakage_voltage_factor(v, vnom)
            / tech.leakage_voltage_factor(v0, vnom)
            * np.exp(dk * (tech.LEAKAGE_T_REF_C - _ANCHOR_C))
        ),
        "dram": bits * x[f"{str(terms['dram']).lower()}_dram_pj_per_bit"] * 1e-12,
        "phy": bits * x[f"{fam}_phy_pj_per_bit"] * 1e-12 + x[f"{fam}_phy_static_w"] * terms["dram_units"],
    }


def _theta(terms: dict, s: _Samples, area: np.ndarray) -> np.ndarray:
    """theta_ja per sample (K/W): the design's, else from the cooling and the area."""
    if terms["theta_ja"] is not None:
        return np.full(s.n, float(terms["theta_ja"]))
    with overriding(terms["overrides"]):
        theta = np.asarray(thermal.theta_ja(terms["cooling"], area), float)
    if terms["cooling"] == "air":  # theta is the sum of the stack's resistances and the convection
        theta = theta + s.x["air_convection_k_per_w"] - s.used["air_convection_k_per_w"]
    return theta


def recost(terms: dict, samples: dict[str, np.ndarray], n: int) -> dict[str, np.ndarray]:
    """The estimate of ``terms`` (``PPAResult.details["terms"]``) under ``n`` samples of the
    assumptions (name -> array of n values; a name left out keeps the estimate's value). Returns
    arrays of n: area_mm2, fmax_mhz (top of the voltage range), fmax_at_voltage_mhz, voltage_v,
    power_w (NaN on runaway), power_<part>_w (dynamic, clock, leakage, sram, vector, phy, dram;
    leakage NaN on runaway), tj_c, power_density_w_mm2 (NaN on runaway), and the reasons as
    booleans: timing_violated, tj_violated, density_violated, runaway, bandwidth_violated."""
    if not terms["clock_given"]:
        raise ValueError("recost needs an estimate at a given clock (the evaluator always gives one)")
    s = _Samples(*_values(terms, samples, n), n)
    tm = _timing(terms, s)
    area = _area(terms, s)
    pw = _power(terms, s, tm.v)
    on_die = pw["dynamic"] + pw["clock"] + pw["sram"] + pw["phy"] + pw["vector"]
    tj, leak, runaway = thermal.solve_tj_batch(
        on_die,
        pw["logic_leak"] + pw["sram_leak"],
        _theta(terms, s, area),
        terms["t_ambient_c"],
        s.x["leakage_temp_coeff_per_k"],
    )
    density = (on_die + leak) / area
    limit = thermal.COOLING_LIMIT_W_PER_MM2[terms["cooling"]]
    with np.errstate(invalid="ignore"):
        tj_bad = ~runaway & (tj > terms["tj_max_c"])
        dens_bad = ~runaway & (density > limit)
    return {
        "area_mm2": area,
        "fmax_mhz": tm.f_top,
        "fmax_at_voltage_mhz": tm.f_at_v,
        "voltage_v": tm.v,
        "power_w": on_die + leak + pw["dram"],
        "power_dynamic_w": pw["dynamic"],
        "power_clock_w": pw["clock"],
        "power_leakage_w": leak,
        "power_sram_w": pw["sram"],
        "power_vector_w": pw["vector"],
        "power_phy_w": pw["phy"],
        "power_dram_w": pw["dram"],
        "tj_c": tj,
        "power_density_w_mm2": density,
        "timing_violated": tm.violated,
        "tj_violated": tj_bad,
        "density_violated": dens_bad,
        "runaway": runaway,
        "bandwidth_violated": np.full(n, bool(terms["bandwidth_infeasible"])),
    }
