"""The process-node registry (ppa.tech.NODE_SPECS): every figure a node yields is pinned, every row
meets the registry's contract, and a new node is one row.

``python -m tests.ppa.test_node_registry --write`` regenerates ``node_pins.json`` (only when a
number is meant to change; the pins were dumped before the registry replaced the per-figure tables).
"""

from __future__ import annotations

import json
import math
import sys
from dataclasses import fields
from pathlib import Path

import pytest

from hw.errors import InputError
from ppa import sram, tech

PINS = Path(__file__).with_name("node_pins.json")
#: bank sizes for the SRAM pins (KB): below, inside and above the CACTI fit, and a split bank
SRAM_KB = (8.0, 64.0, 1024.0, 8192.0)
#: supplies at which FO4 is pinned beyond the node's own range (the silicon checks use them)
EXTRA_V = (1.0, 1.2, 1.4)
_NODE_PROPS = ("model_nm", "nominal_v", "vmin_v", "sram_vmin_v", "delay_factor", "energy_factor",
               "node_correction", "area_factor", "gate_delay_ps", "fo4_ps", "toggle_energy_pj",
               "area_per_transistor_um2", "cell_area_per_transistor_um2", "leakage_density_w_mm2")


def _voltages(nm: int) -> list[float]:
    lo, hi = tech.voltage_range(nm)
    return [lo, round((lo + hi) / 2, 4), hi]


def _node_pins(nm: int) -> dict[str, str]:
    out: dict[str, str] = {}
    for name in ("nominal_voltage", "vmin_v", "sram_vmin_v", "voltage_range", "voltage_grid", "fo4_nominal_ps",
                 "fo4_anchor_weights", "stillmaker_delay_ratio", "node_correction", "leakage_density_w_mm2",
                 "logic_density_mtr_mm2", "realised_logic_density_mtr_mm2", "cell_area_per_transistor_um2",
                 "area_per_transistor_um2", "check_node"):
        out[name] = repr(getattr(tech, name)(nm))
    m = tech.NODE_ALIASES.get(nm, nm)
    out["model_nm"] = repr(m)
    out["vth"] = repr(tech.VTH_V[m])
    out["internal_nominals"] = repr((tech._vnom(m), tech._delay_nom(m), tech._energy_nom(m), tech._area(m)))
    for v in _voltages(nm) + list(EXTRA_V):
        out[f"fo4_ps@{v!r}"] = repr(tech.fo4_ps(nm, v))
        out[f"alpha_power_delay@{v!r}"] = repr(tech.alpha_power_delay(v, nm))
    for v in _voltages(nm):
        n = tech.node(nm, v)
        for p in _NODE_PROPS:
            out[f"Node@{v!r}.{p}"] = repr(getattr(n, p))
        out[f"Node@{v!r}.leakage_w"] = repr(n.leakage_w(1e6, 85.0))
        out[f"Node@{v!r}.cycle_time_ps"] = repr(n.cycle_time_ps(12))
        out[f"sram_voltage@{v!r}"] = repr(tech.sram_voltage(nm, v))
    for kb in SRAM_KB:
        out[f"silicon_read_pj_64b@{kb!r}"] = repr(sram.silicon_read_pj_64b(kb, nm))
        out[f"conflict@{kb!r}"] = repr(sram.conflict(kb, nm))
        for model in sram.SRAM_MODELS:
            for sv in (None, tech.sram_vmin_v(nm)):
                for word in (64, 512):
                    c = sram.sram(kb, nm, word_bits=word, banks=2 if kb > 1024 else 1, voltage_v=sv, model=model)
                    out[f"sram@{kb!r},{model},{sv!r},{word}"] = repr(vars(c))
    return out


def current_pins() -> dict[str, dict[str, str]]:
    """Every figure ppa.tech and ppa.sram give for each offered node, and the module-level ones, as repr."""
    from ppa import silicon_clock
    pins = {str(nm): _node_pins(nm) for nm in tech.NODES_NM}
    pins["90"] = {f"fo4_ps@{v!r}": repr(tech.fo4_ps(90, v)) for v in EXTRA_V}
    pins["90"]["vth"] = repr(tech.VTH_V[90])
    pins["90"]["stillmaker_delay_ratio"] = repr(tech.stillmaker_delay_ratio(90))
    pins["module"] = {
        "NODES_NM": repr(tech.NODES_NM), "NODE_ALIASES": repr(tech.NODE_ALIASES),
        "VTH_V": repr(sorted(tech.VTH_V.items())),
        "LOGIC_DENSITY_MTR_MM2": repr(sorted(tech.LOGIC_DENSITY_MTR_MM2.items())),
        "NODE_CORRECTION_7NM": repr(tech.NODE_CORRECTION_7NM),
        "AREA_PER_TRANSISTOR_45_UM2": repr(tech.AREA_PER_TRANSISTOR_45_UM2),
        "energy_32_0.9": repr(tech._energy(32, 0.9)), "delay_45_1.0": repr(tech._delay(45, 1.0)),
        "fo4_check": repr(silicon_clock.fo4_check()), "a72_7nm_check": repr(silicon_clock.a72_7nm_check()),
        "silicon_limit_mhz": repr([silicon_clock.silicon_limit_mhz(nm, tech.nominal_voltage(nm))
                                   for nm in tech.NODES_NM]),
    }
    return pins


def test_figures_equal_pins() -> None:
    pinned = json.loads(PINS.read_text())
    now = current_pins()
    assert now.keys() == pinned.keys()
    for group, values in pinned.items():
        assert now[group] == values, group


def test_unknown_node_message() -> None:
    with pytest.raises(InputError, match=r"unknown technology node 12 nm; known: 65, 45, 32, 28, 22, 20, 16, 14, 10, 7"):
        tech.check_node(12)


if __name__ == "__main__" and sys.argv[1:] == ["--write"]:
    PINS.write_text(json.dumps(current_pins(), indent=1, sort_keys=True) + "\n")
