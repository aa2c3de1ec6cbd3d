"""ppa.model.estimate pinned bit for bit: the full PPAResult (every field, the
details dict included) of varied design points, recorded once from the estimate before it was split
into its phases (tests/ppa/estimate_pins.json, generated from commit d6e396b; the threshold-voltage
flavour's keys and the auto_vt_slvt point added with it, every earlier figure unchanged).

Issue 37 changed two details keys only, every other figure bit for bit as before: ``fo4_ps`` is now the
NODE FO4 (ppa.tech.node_fo4_ps: 7 nm 19.48 -> 4.5635, 16 nm 23.745 -> 11.488 at 0.63 V, 28 nm 41.807 ->
34.631 at 0.66 V; 45 nm unchanged) and ``realised_path_factor`` (timing FO4 / node FO4) is new; fmax is
unchanged, clocked in the timing FO4 ``gate_delay_ps``."""

from __future__ import annotations

import dataclasses
import json
from pathlib import Path

import pytest

from ppa import model
from ppa.design import DesignPoint, WorkloadActivity

PINS = Path(__file__).with_name("estimate_pins.json")

_WORKLOAD = {
    "cycles": 2.0e6,
    "effective_macs": 1.5e8,
    "pe_busy_fraction": 0.7,
    "sram_read_bytes": 3.0e7,
    "sram_write_bytes": 4.0e6,
    "dram_bytes": 5.0e6,
    "weight_tiles": 900.0,
    "vector_ops": {"alu": 2.0e5, "exp": 1.0e4},
}

#: name -> (DesignPoint keywords, WorkloadActivity keywords or None)
POINTS: dict[str, tuple[dict, dict | None]] = {
    "sparse_ws_7nm_fmax": ({"rows": 4, "cols": 4, "node_nm": 7, "sram_kb": 64}, None),
    "dense_ws_45nm_clock": (
        {"rows": 4, "cols": 4, "sparse": False, "node_nm": 45, "sram_kb": 32, "clock_mhz": 200.0},
        None,
    ),
    "sparse_os_16nm_workload": (
        {
            "rows": 4,
            "cols": 4,
            "node_nm": 16,
            "dataflow": "os",
            "sram_kb": 64,
            "clock_mhz": 500.0,
            "vector_lanes": 4,
        },
        _WORKLOAD,
    ),
    "sparse_ws_pipe2_dbuf_3buf": (
        {
            "rows": 4,
            "cols": 4,
            "node_nm": 7,
            "pipeline": 2,
            "double_buffer": True,
            "sram_buffers_kb": (64.0, 64.0, 32.0),
            "dram": "lpddr5",
        },
        _WORKLOAD,
    ),
    "dense_path_ws_28nm_no_gating": (
        {
            "rows": 2,
            "cols": 2,
            "node_nm": 28,
            "dense_path": True,
            "sram_kb": 16,
            "clock_gating": False,
            "clock_mhz": 300.0,
        },
        None,
    ),
    "thermal_runaway": ({"rows": 64, "cols": 64, "node_nm": 7, "sram_kb": 4096, "theta_ja": 500.0}, None),
    "hot_phy_limited": (
        {
            "rows": 8,
            "cols": 8,
            "node_nm": 7,
            "sram_kb": 64,
            "dram": "hbm2",
            "dram_units": 4,
            "theta_ja": 40.0,
            "clock_mhz": 1000.0,
            "vt": "rvt",
        },
        None,
    ),
    # the clock rvt cells miss: the automatic threshold-voltage choice (ppa.references VT_FLAVOURS) takes slvt
    "auto_vt_slvt": ({"rows": 8, "cols": 8, "node_nm": 7, "sram_kb": 64, "clock_mhz": 1000.0}, None),
}


def _plain(x):
    """``x`` as JSON values: dataclasses as dicts, tuples as lists; anything else JSON cannot
    hold exactly is an error, not a string."""
    if dataclasses.is_dataclass(x) and not isinstance(x, type):
        return {f.name: _plain(getattr(x, f.name)) for f in dataclasses.fields(x)}
    if isinstance(x, dict):
        if not all(isinstance(k, str) for k in x):
            raise TypeError(f"a non-string key in {x!r}")
        return {k: _plain(v) for k, v in x.items()}
    if isinstance(x, (list, tuple)):
        return [_plain(v) for v in x]
    if x is None or isinstance(x, (bool, int, float, str)):
        return x
    raise TypeError(f"cannot pin {type(x).__name__}: {x!r}")


def result_of(name: str, cache) -> dict:
    """The full PPAResult of pinned point ``name`` as JSON values (round-tripped through JSON, as
    the pins are stored)."""
    design_kw, workload_kw = POINTS[name]
    design = DesignPoint(**design_kw)
    workload = WorkloadActivity(**workload_kw) if workload_kw is not None else None
    return json.loads(json.dumps(_plain(model.estimate(design, workload, cache=cache))))


@pytest.mark.yosys
@pytest.mark.sta
@pytest.mark.parametrize("name", sorted(POINTS))
def test_estimate_is_pinned_bit_for_bit(name, synth_cache):
    pinned = json.loads(PINS.read_text())[name]
    got = result_of(name, synth_cache)
    assert got == pinned  # floats compared with ==: every figure to the last bit


def test_the_pins_cover_the_phases_branches():
    pinned = json.loads(PINS.read_text())
    assert sorted(pinned) == sorted(POINTS)
    assert {r["details"]["cost_dataflow"] for r in pinned.values()} == {"ws", "os"}
    assert {r["details"]["sparse"] for r in pinned.values()} == {True, False}
    assert any(r["power_w"] is None for r in pinned.values())  # thermal runaway
    assert any(r["details"]["die_phy_limited"] for r in pinned.values())
    assert len({r["details"]["node_nm"] for r in pinned.values()}) >= 4
    assert {r["details"]["vt"]["flavour"] for r in pinned.values()} >= {"rvt", "slvt"}  # the automatic choice
