"""The ASAP7 7 nm library in the timing flow (``--liberty asap7``): the Liberty reader's tolerance of
ASAP7's files, the merge into the cache, and the 7 nm figures the model is held to. Tests that read
the libraries skip, with the reason, when ../shared/reference/asap7 (or 7z) is absent."""

from pathlib import Path

import pytest

from ppa import clock_gating as cg, tech
from ppa.liberty import asap7, parse as lp
from ppa.liberty.library import load_liberty
from ppa.timing.opensta import find_sta, measure_fo4

needs_asap7 = pytest.mark.skipif(not asap7.available(), reason=f"asap7: {asap7.why_unavailable()}")

# A cell as ASAP7's INVBUF file writes it: "area : X" ended by its line, no ';'.
_CELL = """library (x) {
  time_unit : "1ps";
  cell (INVx1_ASAP7_75t_R) {
    area : 0.04374
    cell_leakage_power : 51.1588;
    pin (A) { direction : input; capacitance : 0.62; }
  }
  cell (B) { area : 1.5 ; dont_touch : true ; }
}
"""


def test_parser_accepts_a_simple_attribute_ended_by_its_line():
    lib = lp.parse(_CELL).sub("library")[0]
    inv, b = lib.sub("cell")
    assert inv.attr("area") == "0.04374" and inv.attr("cell_leakage_power") == "51.1588"
    assert inv.sub("pin")[0].attr("capacitance") == "0.62"
    assert b.attr("area") == "1.5" and b.attr("dont_touch") == "true"
    # a backslash continuation still joins lines; two values on one line stay one attribute
    g = lp.parse("library (y) {\n  comment : a \\\n b;\n  f : c d;\n}\n").sub("library")[0]
    assert g.attr("comment") == "a b" and g.attr("f") == "c d"


def test_merge_keeps_the_first_header_adds_new_templates_and_all_cells():
    a = (
        'library (first) {\n  time_unit : "1ps";\n  lu_table_template (t_x1) {\n    variable_1 : x;\n  }\n'
        "  cell (A1) {\n    area : 1\n  }\n}\n"
    )
    b = (
        'library (second) {\n  time_unit : "1ns";\n  lu_table_template (t_x1) {\n    variable_1 : y;\n  }\n'
        "  power_lut_template (p_7x7) {\n    variable_1 : z;\n  }\n  cell (B1) {\n    area : 2;\n  }\n}\n"
    )
    lib = lp.parse(asap7.merge([a, b])).sub("library")[0]
    assert lib.name == asap7.MERGED_NAME and "7nm" in lib.attr("comment")
    assert lib.attr("time_unit") == "1ps"
    assert [c.name for c in lib.sub("cell")] == ["A1", "B1"]
    assert [t.name for t in lib.sub("lu_table_template")] == ["t_x1"] and lib.sub("lu_table_template")[
        0
    ].attr("variable_1") == "x"
    assert [t.name for t in lib.sub("power_lut_template")] == ["p_7x7"]


@needs_asap7
def test_merged_library_loads_from_the_cache(tmp_path, monkeypatch):
    monkeypatch.setenv("SPARSEPE_CACHE_DIR", str(tmp_path))
    path = asap7.merged_liberty_path()
    assert path.startswith(str(tmp_path)) and (tmp_path / "asap7").is_dir()
    assert (Path(path).parent / "LICENSE").is_file()
    lib = load_liberty(path)
    assert lib.node_nm == 7 and lib.nominal_voltage_v == 0.7 and lib.cells == 202
    assert lib.time_unit_s == 1e-12 and lib.cap_unit_f == 1e-15
    assert asap7.merged_liberty_path() == path  # the second call reuses the cached file


def _asap7():
    return load_liberty(asap7.merged_liberty_path())


@needs_asap7
def test_cells_the_flows_pick_on_asap7():
    lib = _asap7()
    assert lib.inverter()[0] == "INVx1_ASAP7_75t_R"  # the unit drive, not INVxp33 of the same area
    assert lib.buffer()[0] == "BUFx2_ASAP7_75t_R"  # not the hold buffer HB1xp67
    assert not any(c.name.startswith("HB") for c, _, _ in lib.buffers())
    # the flip-flop and ICG clock pins use Liberty's built-in "scalar" template: one value
    assert lib.clock_pin_energy_pj("DFFHQNx1_ASAP7_75t_R", 0.02) > 0


def _internal_fj(lib, cell, pin, when, load_pf=0.0):
    """rise + fall internal energy (fJ) of the VDD group of ``cell``/``pin`` whose ``when`` is
    ``when``, at a 20 ps input slew (ASAP7's units: fF x V = fJ)."""
    for ip in lib.pins(lib.cell(cell))[pin].sub("internal_power"):
        if (
            str(ip.attr("related_pg_pin", "")).strip('"') == "VDD"
            and str(ip.attr("when", "")).strip('"') == when
        ):
            return sum(
                lib.table_value(t, slew_ns=0.02, load_pf=load_pf)
                for k in ("rise_power", "fall_power")
                for t in ip.sub(k)
            )
    raise AssertionError(f"{cell}/{pin}: no VDD group when {when}")


def _rise_cap_ff(lib, cell, pin):
    return float(lib.pins(lib.cell(cell))[pin].attr("rise_capacitance"))


@needs_asap7
def test_clock_gating_ratios_are_the_asap7_tables():
    lib, v2 = _asap7(), 0.7**2
    dff, icg = "DFFHQNx1_ASAP7_75t_R", "ICGx1_ASAP7_75t_R"
    held = (_internal_fj(lib, dff, "CLK", "(D * !QN)") + _internal_fj(lib, dff, "CLK", "(!D * QN)")) / 2
    ff = held + _rise_cap_ff(lib, dff, "CLK") * v2
    pin = _rise_cap_ff(lib, icg, "CLK") * v2
    gated = _internal_fj(lib, icg, "CLK", "(!ENA * !SE * !GCLK)") + pin
    enabled = (
        _internal_fj(lib, icg, "CLK", "(ENA * !GCLK) + (!ENA * SE * !GCLK)")
        + _internal_fj(lib, icg, "GCLK", "(ENA) + (!ENA * SE)", load_pf=0.010)
        + pin
    )
    assert ff == pytest.approx(0.819, abs=0.005) and gated == pytest.approx(1.217, abs=0.005)
    assert cg.ICG_GATED_FF_CYCLES == pytest.approx(gated / ff, rel=0.01)
    assert cg.ICG_ENABLED_FF_CYCLES == pytest.approx(enabled / ff, rel=0.02)


@needs_asap7
@pytest.mark.skipif(find_sta() is None, reason="sta: OpenSTA (sta) is not installed")
def test_the_7nm_fo4_is_the_asap7_library_fo4():
    f = measure_fo4(_asap7())
    assert f.cell == "INVx1_ASAP7_75t_R"
    assert f.fo4_ps == pytest.approx(tech.FO4_7NM_PS, abs=0.05)
    # issue 37: the timing FO4 (gate_delay_ps; Node.fo4_ps is now the node FO4, 4.56 ps)
    assert tech.node(7).gate_delay_ps == pytest.approx(f.fo4_ps, abs=0.05)
