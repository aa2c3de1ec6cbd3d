"""The ASAP7 7 nm library in the timing flow (``--liberty asap7``): the Liberty reader's tolerance of
ASAP7's files, the merge into the cache, and the 7 nm figures the model is held to. Tests that read
the libraries skip, with the reason, when ../shared/reference/asap7 (or 7z) is absent."""

from pathlib import Path

import pytest

from ppa.liberty import asap7
from ppa.liberty import parse as lp

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
    g = lp.parse('library (y) {\n  comment : a \\\n b;\n  f : c d;\n}\n').sub("library")[0]
    assert g.attr("comment") == "a b" and g.attr("f") == "c d"


def test_merge_keeps_the_first_header_adds_new_templates_and_all_cells():
    a = ("library (first) {\n  time_unit : \"1ps\";\n  lu_table_template (t_x1) {\n    variable_1 : x;\n  }\n"
         "  cell (A1) {\n    area : 1\n  }\n}\n")
    b = ("library (second) {\n  time_unit : \"1ns\";\n  lu_table_template (t_x1) {\n    variable_1 : y;\n  }\n"
         "  power_lut_template (p_7x7) {\n    variable_1 : z;\n  }\n  cell (B1) {\n    area : 2;\n  }\n}\n")
    lib = lp.parse(asap7.merge([a, b])).sub("library")[0]
    assert lib.name == asap7.MERGED_NAME and "7nm" in lib.attr("comment")
    assert lib.attr("time_unit") == "1ps"
    assert [c.name for c in lib.sub("cell")] == ["A1", "B1"]
    assert [t.name for t in lib.sub("lu_table_template")] == ["t_x1"] and lib.sub("lu_table_template")[0].attr("variable_1") == "x"
    assert [t.name for t in lib.sub("power_lut_template")] == ["p_7x7"]


@needs_asap7
def test_merged_library_loads_from_the_cache(tmp_path, monkeypatch):
    from ppa.timing import sta

    monkeypatch.setenv("SPARSEPE_CACHE_DIR", str(tmp_path))
    path = asap7.merged_liberty_path()
    assert path.startswith(str(tmp_path)) and (tmp_path / "asap7").is_dir()
    assert (Path(path).parent / "LICENSE").is_file()
    lib = sta.load_liberty(path)
    assert lib.node_nm == 7 and lib.nominal_voltage_v == 0.7 and lib.cells == 202
    assert lib.time_unit_s == 1e-12 and lib.cap_unit_f == 1e-15
    assert asap7.merged_liberty_path() == path  # the second call reuses the cached file
