"""ppa.liberty.library: the buffer a net is driven with, on hand-written libraries (no osu018 needed)."""

from __future__ import annotations

import pytest

from hw.errors import InputError
from ppa.liberty.library import load_liberty


def _buffer_cell(name: str, area: float, cap: float) -> str:
    return (
        f"cell({name}) {{ area : {area}; pin(A) {{ direction : input; capacitance : {cap}; }}\n"
        f' pin(Y) {{ direction : output; function : "A"; }} }}\n'
    )


@pytest.mark.parametrize(
    "cells, want",
    [
        # the strongest data buffer, clock buffers excluded even when larger
        ([("BUFX1", 2, 0.01), ("BUFX4", 4, 0.02), ("CLKBUF3", 9, 0.05)], "BUFX4"),
        # a library with clock buffers only: the strongest of them, not None
        ([("CLKBUF1", 3, 0.01), ("CLKBUF2", 5, 0.03)], "CLKBUF2"),
    ],
)
def test_drive_buffer_of_a_hand_written_library(tmp_path, cells, want):
    p = tmp_path / "x.lib"
    body = "".join(_buffer_cell(*c) for c in cells)
    p.write_text(
        'library(x) { nom_voltage : 1.1; time_unit : "1ps"; capacitive_load_unit (1, pf);\n' + body + "}\n"
    )
    cell, a, y, cap, area = load_liberty(p, node_nm=28).drive_buffer()
    spec = {c[0]: c for c in cells}[want]
    assert (cell, a, y, area) == (want, "A", "Y", spec[1]) and cap == pytest.approx(spec[2])


def test_drive_buffer_of_a_library_without_buffers_names_the_file(tmp_path):

    p = tmp_path / "x.lib"
    p.write_text(
        'library(x) { nom_voltage : 1.1; time_unit : "1ps"; capacitive_load_unit (1, pf);\n'
        " cell(INV) { area : 1; } }\n"
    )
    with pytest.raises(InputError) as e:
        load_liberty(p, node_nm=28).drive_buffer()
    assert e.value.where == str(p) and "no buffer" in str(e.value)
