"""ppa.liberty.gates: each net of a generic netlist at its energy as an osu018 cell.

Three references, none the module's own code: a netlist costed by hand from figures typed from the
osu018 Liberty file; the library's own tables read at every net's actual load by
ppa.liberty.energy.net_energies (the lookup bench_ppa_glitch and the clock figures use); and, when
Debian's qflow-tech-osu018 is installed, the built-in figures re-read from it."""

from __future__ import annotations

import numpy as np
import pytest

from ppa import synth
from ppa.liberty import gates
from ppa.liberty.library import default_liberty_path, load_liberty
from ppa.netlist import GateNetlist
from ppa.operators import operator_verilog

# typed from /usr/share/qflow/tech/osu018/osu018_stdcells.lib (1.8 V, pF): input pin capacitances,
# and the output internal energy (fJ, mean of rise and fall) at 0.0978 ns slew and 0.02 pF
NAND2X1_A, NAND2X1_B, DFFPOSX1_D = 12.5, 12.9035, 8.82947
XOR2X1_Y_FJ, NAND2X1_Y_FJ = 81.0856, 24.7934
UNIT_FJ = 98.5114  # osu018's energy per calibration toggle (ppa.liberty.energy LibraryEnergy.toggle_pj)


def _netlist() -> dict:
    """x = a ^ b; o1 = !(x & b); o2 = !(x & a); q <= o1 (a flip-flop, its output a port)."""
    cells = {
        "xor": {"type": "$_XOR_", "connections": {"A": [2], "B": [3], "Y": [4]}},
        "n1": {"type": "$_NAND_", "connections": {"A": [4], "B": [3], "Y": [5]}},
        "n2": {"type": "$_NAND_", "connections": {"A": [4], "B": [2], "Y": [6]}},
        "ff": {"type": "$_DFF_P_", "connections": {"C": [7], "D": [5], "Q": [8]}},
    }
    ports = {
        "a": {"direction": "input", "bits": [2]},
        "b": {"direction": "input", "bits": [3]},
        "clk": {"direction": "input", "bits": [7]},
        "o2": {"direction": "output", "bits": [6]},
        "q": {"direction": "output", "bits": [8]},
    }
    names = {
        "a": {"bits": [2]},
        "b": {"bits": [3]},
        "clk": {"bits": [7]},
        "x": {"bits": [4]},
        "o1": {"bits": [5]},
        "o2": {"bits": [6]},
        "q": {"bits": [8]},
    }
    return {"modules": {"t": {"ports": ports, "cells": cells, "netnames": names}}}


def test_a_netlist_costed_by_hand():
    gn = GateNetlist(_netlist(), "t")
    net = {n: gn.bit_ids[b] for n, b in (("a", 2), ("b", 3), ("x", 4), ("o1", 5), ("o2", 6), ("q", 8))}

    def half_cv2(c_pf):
        return 0.5 * c_pf * 1e3 * 1.8**2  # fJ

    want = {
        "x": half_cv2((NAND2X1_A + NAND2X1_A) / 1e3) + XOR2X1_Y_FJ,  # drives both NANDs' A pins
        "o1": half_cv2(DFFPOSX1_D / 1e3) + NAND2X1_Y_FJ,  # the flip-flop's D pin
        "o2": half_cv2(DFFPOSX1_D / 1e3) + NAND2X1_Y_FJ,  # an output port: one D pin
        "q": half_cv2(DFFPOSX1_D / 1e3),  # a flip-flop output: its load only
        "a": 0.0,
        "b": 0.0,  # driven from outside
    }
    for name, fj in want.items():
        assert gn.net_energy[net[name]] == pytest.approx(fj / UNIT_FJ, rel=1e-5), name
    assert gn.ff_nets[net["q"]] and not gn.ff_nets[net["o1"]]
    # a run charges each net's transitions at its energy
    rng = np.random.default_rng(5)
    a, b = (rng.integers(0, 2, (40, 64)).astype(np.uint64) for _ in "ab")
    tc, _ = gn.simulate({"a": a, "b": b})
    per = tc.per_net
    assert tc.gate_energy == pytest.approx(
        sum(per[net[n]] * want[n] / UNIT_FJ for n in ("x", "o1", "o2")), rel=1e-9
    )
    assert tc.ff_net_energy == pytest.approx(per[net["q"]] * want["q"] / UNIT_FJ, rel=1e-9)
    assert tc.gate_energy > 0 and tc.ff_net_energy > 0


def _as_osu018_cells(netlist: dict, top: str) -> str:
    """The generic netlist written as osu018 instances (each gate its GATE_CELLS cell), in the
    form ppa.liberty.mapped reads."""
    mod = netlist["modules"][top]
    port_of = {}
    lines = [f"module {top}({', '.join(mod['ports'])});"]
    for name, port in mod["ports"].items():
        w = len(port["bits"])
        lines.append(f"  {port['direction']} {f'[{w - 1}:0] ' if w > 1 else ''}{name};")
        for i, b in enumerate(port["bits"]):
            port_of[b] = f"{name}[{i}]" if w > 1 else name
    for k, cell in enumerate(mod["cells"].values()):
        lib_cell, pins, out = gates.GATE_CELLS[cell["type"]]
        conns = [(pins[p], cell["connections"][p][0]) for p in pins]
        conns.append((out, cell["connections"]["Q" if cell["type"] == "$_DFF_P_" else "Y"][0]))
        lines.append(f"  {lib_cell} g{k} (")
        lines.append(",\n".join(f"    .{p}({port_of.get(b, f'n{b}')})" for p, b in conns))
        lines.append("  );")
    lines.append("endmodule")
    return "\n".join(lines) + "\n"


@pytest.mark.yosys
def test_the_library_tables_at_each_nets_load_agree_within_1_percent():
    path = default_liberty_path()
    if path is None:
        pytest.skip("needs Debian's qflow-tech-osu018 (the Liberty file)")
    from ppa.liberty.energy import net_energies

    lib = load_liberty(path)
    v, top = operator_verilog("mul", 8)
    netlist = synth.synthesize(v, top).netlist()
    gn = GateNetlist(netlist, top)
    looked_up = net_energies(
        lib, _as_osu018_cells(netlist, top), top, slew_ns=0.0978365, output_load_pf=DFFPOSX1_D / 1e3
    )
    assert len(looked_up) > 300
    index = {}
    for name, info in netlist["modules"][top]["netnames"].items():
        for i, b in enumerate(info["bits"]):
            if not isinstance(b, str):
                index[f"{name}[{i}]" if len(info["bits"]) > 1 else name] = gn.bit_ids[b]
    for b, idx in gn.bit_ids.items():
        index.setdefault(f"n{b}", idx)
    total_lib = total_ours = 0.0
    for net, sw, internal in looked_up:
        ours = gn.net_energy[index[net]] * UNIT_FJ / 1e3
        assert ours == pytest.approx(sw + internal, rel=0.01), net  # measured: within 0.6 %
        total_lib += sw + internal
        total_ours += ours
    assert total_ours == pytest.approx(total_lib, rel=0.01)


def test_the_built_in_figures_are_osu018s():
    path = default_liberty_path()
    if path is None:
        pytest.skip("needs Debian's qflow-tech-osu018 (the Liberty file)")
    caps, internal, v = gates.derive(load_liberty(path))
    assert v == gates.OSU018_VOLTAGE_V == 1.8
    assert caps == gates.INPUT_CAP_FF
    assert internal == gates.INTERNAL_FJ
    assert (caps["$_NAND_"]["A"], caps["$_DFF_P_"]["D"], internal["$_XOR_"]) == (
        NAND2X1_A,
        DFFPOSX1_D,
        XOR2X1_Y_FJ,
    )


@pytest.mark.sta
def test_the_unit_and_slew_are_the_librarys():
    from ppa.liberty.energy import library_energy
    from ppa.timing.opensta import measure_fo4

    lib = load_liberty(default_liberty_path())
    assert library_energy(lib).toggle_pj * 1e3 == pytest.approx(UNIT_FJ, rel=1e-6)
    assert gates.OSU018_TOGGLE_PJ * 1e3 == pytest.approx(UNIT_FJ, rel=1e-6)
    assert measure_fo4(lib).slew_ns == pytest.approx(gates.OSU018_FO4_SLEW_NS, rel=1e-6)
