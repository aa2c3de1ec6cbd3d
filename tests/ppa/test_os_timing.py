"""Output-stationary arrays are timed on an output-stationary column (ppa.timing.stage)."""

import pytest

from hw.params import PEParams
from ppa.design import DesignPoint
from ppa.model import estimate
from ppa.timing import stage
from ppa.timing.mapping import FASTEST_CLOCK_PS


@pytest.mark.yosys
@pytest.mark.sta
def test_os_design_is_timed_on_its_own_column(synth_cache):
    lib = stage.resolve_liberty(DesignPoint())
    p = PEParams()
    os_col = stage.sta_array_column(p, 1, lib, clock_ps=FASTEST_CLOCK_PS, cache=synth_cache, dataflow="os")
    ws_col = stage.sta_array_column(p, 1, lib, clock_ps=FASTEST_CLOCK_PS, cache=synth_cache, dataflow="ws")
    assert os_col.top == ws_col.top == "sparse_array"
    # the OS cell accumulates its own ACC-bit sum (clear multiplexer included); the WS row-0 cell adds
    # a 17-bit product sum: the OS stage is the longer one
    assert os_col.cycle_fo4 > ws_col.cycle_fo4
    r = estimate(
        DesignPoint(rows=4, cols=4, node_nm=7, dataflow="os", sram_kb=0, vector_lanes=0), cache=synth_cache
    )
    t = r.details["timing"]
    assert "output-stationary" in t["stage"] and t["cycle_fo4"] == pytest.approx(os_col.cycle_fo4)
    ws = estimate(
        DesignPoint(rows=4, cols=4, node_nm=7, dataflow="ws", sram_kb=0, vector_lanes=0), cache=synth_cache
    )
    assert "output-stationary" not in ws.details["timing"]["stage"]


@pytest.mark.yosys
def test_os_generic_path_uses_the_os_column(synth_cache, monkeypatch):
    monkeypatch.setenv("SPARSEPE_STA", "off")
    r = estimate(
        DesignPoint(rows=4, cols=4, node_nm=7, dataflow="os", sram_kb=0, vector_lanes=0), cache=synth_cache
    )
    assert r.details["timing"]["source"] == "generic" and "output-stationary" in r.details["timing"]["stage"]
