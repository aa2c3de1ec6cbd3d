"""Energy per transition of each net of a generic gate netlist, its gates costed as library cells.

The generic flow (ppa.synth: ``abc -g cmos``) builds every design from Yosys's internal gates, each
of which is a cell of the default library, osu018, at its smallest drive: ``$_NOT_`` INVX1,
``$_NAND_`` NAND2X1, ``$_NOR_`` NOR2X1, ``$_AOI3_`` AOI21X1, ``$_OAI3_`` OAI21X1, ``$_AOI4_``
AOI22X1, ``$_OAI4_`` OAI22X1, ``$_XOR_`` XOR2X1, ``$_XNOR_`` XNOR2X1, ``$_AND_`` AND2X2, ``$_OR_``
OR2X2, ``$_BUF_`` BUFX2 and ``$_MUX_`` / ``$_NMUX_`` MUX2X1 (osu018's multiplexer inverts: the
non-inverting one is costed as the inverting cell, its output inverter left out), flip-flops
DFFPOSX1. A net's energy per transition is what a gate-level power tool charges at zero delay
(as ppa.liberty.switching does on a mapped netlist):

- 1/2 C V^2 of the input pins it drives (an output port drives one flip-flop D pin [A: the result
  is registered], as in ppa.liberty.energy.net_energies);
- its driver's output internal energy (mean of the rise and fall tables at the library's FO4 slew
  and 20 fF; over 0-200 fF the tables move by less than 3 %, so one figure per cell).

A flip-flop's output net carries the first only: its Q- and D-pin internal energy is the model's
``ff_extra_toggles`` per output toggle (ppa.liberty.energy). The design's input ports are driven
from outside and carry none.

Energies are in toggle-equivalents: over osu018's energy per calibration toggle
(ppa.liberty.energy ``LibraryEnergy.toggle_pj``, 0.0985 pJ), the unit the clock and flip-flop
figures use, so ppa.tech's toggle energy (fitted on the calibration operators' weighted toggles,
ppa.calibration) turns all of them into joules at a node alike.

Why: one energy per toggle charges an XOR2 (81 fJ internal in osu018) like a NAND2 (25 fJ), and a net
driving eight gates like one driving one. With one energy per toggle the 8-bit multiply cost
1.40x the 32-bit add, against Horowitz's 2.0x and Jouppi's 2.33x; with these energies 1.82x
(bench/bench_ppa_glitch.py: 1.86x on the netlist mapped to osu018 by ABC itself).

The figures are osu018's, hard-coded so that every installation costs alike (with or without
Debian's qflow-tech-osu018); :func:`derive` reads them from the library, and
tests/ppa/test_liberty_gates.py compares the two when it is installed.
"""

from __future__ import annotations

from typing import TYPE_CHECKING

import numpy as np

if TYPE_CHECKING:
    from ppa.liberty.library import LibertyLibrary

#: generic gate -> (osu018 cell, generic pin -> cell pin, output pin). Yosys's $_MUX_ is
#: ``S ? B : A``; MUX2X1 is ``!(S ? A : B)``
GATE_CELLS: dict[str, tuple[str, dict[str, str], str]] = {
    "$_NOT_": ("INVX1", {"A": "A"}, "Y"),
    "$_BUF_": ("BUFX2", {"A": "A"}, "Y"),
    "$_NAND_": ("NAND2X1", {"A": "A", "B": "B"}, "Y"),
    "$_NOR_": ("NOR2X1", {"A": "A", "B": "B"}, "Y"),
    "$_AND_": ("AND2X2", {"A": "A", "B": "B"}, "Y"),
    "$_OR_": ("OR2X2", {"A": "A", "B": "B"}, "Y"),
    "$_XOR_": ("XOR2X1", {"A": "A", "B": "B"}, "Y"),
    "$_XNOR_": ("XNOR2X1", {"A": "A", "B": "B"}, "Y"),
    "$_ANDNOT_": ("AND2X2", {"A": "A", "B": "B"}, "Y"),  # [A] an AND with one input inverted: AND2X2
    "$_ORNOT_": ("OR2X2", {"A": "A", "B": "B"}, "Y"),  # [A] likewise OR2X2
    "$_MUX_": ("MUX2X1", {"A": "B", "B": "A", "S": "S"}, "Y"),
    "$_NMUX_": ("MUX2X1", {"A": "B", "B": "A", "S": "S"}, "Y"),
    "$_AOI3_": ("AOI21X1", {"A": "A", "B": "B", "C": "C"}, "Y"),
    "$_OAI3_": ("OAI21X1", {"A": "A", "B": "B", "C": "C"}, "Y"),
    "$_AOI4_": ("AOI22X1", {"A": "A", "B": "B", "C": "C", "D": "D"}, "Y"),
    "$_OAI4_": ("OAI22X1", {"A": "A", "B": "B", "C": "C", "D": "D"}, "Y"),
    "$_DFF_P_": ("DFFPOSX1", {"D": "D"}, "Q"),
}
#: the load at which each cell's internal energy is read (pF)
INTERNAL_AT_PF = 0.02

# --- osu018 figures [D] (/usr/share/qflow/tech/osu018/osu018_stdcells.lib, Debian
# qflow-tech-osu018; 1.8 V; read by :func:`derive`) ----------------------------------------------
OSU018_VOLTAGE_V = 1.8
#: input pin capacitance (fF) per generic pin
INPUT_CAP_FF: dict[str, dict[str, float]] = {
    "$_NOT_": {"A": 9.32456},
    "$_BUF_": {"A": 9.33171},
    "$_NAND_": {"A": 12.5, "B": 12.9035},
    "$_NOR_": {"A": 14.4193, "B": 15.0643},
    "$_AND_": {"A": 12.9068, "B": 12.5119},
    "$_OR_": {"A": 15.065, "B": 14.3643},
    "$_XOR_": {"A": 29.6528, "B": 34.2661},
    "$_XNOR_": {"A": 29.6656, "B": 34.2715},
    "$_ANDNOT_": {"A": 12.9068, "B": 12.5119},
    "$_ORNOT_": {"A": 15.065, "B": 14.3643},
    "$_MUX_": {"A": 17.3537, "B": 17.3455, "S": 20.4132},
    "$_NMUX_": {"A": 17.3537, "B": 17.3455, "S": 20.4132},
    "$_AOI3_": {"A": 17.3593, "B": 17.9733, "C": 15.0799},
    "$_OAI3_": {"A": 17.346, "B": 18.2038, "C": 12.9138},
    "$_AOI4_": {"A": 17.3718, "B": 17.9972, "C": 18.2378, "D": 18.6552},
    "$_OAI4_": {"A": 17.3495, "B": 18.2258, "C": 17.9862, "D": 18.6431},
    "$_DFF_P_": {"D": 8.82947},
}
#: the driver's output internal energy per transition (fJ) at INTERNAL_AT_PF and the FO4 slew
INTERNAL_FJ: dict[str, float] = {
    "$_NOT_": 16.399,
    "$_BUF_": 52.6789,
    "$_NAND_": 24.7934,
    "$_NOR_": 35.9714,
    "$_AND_": 60.6814,
    "$_OR_": 62.8602,
    "$_XOR_": 81.0856,
    "$_XNOR_": 80.9628,
    "$_ANDNOT_": 60.6814,
    "$_ORNOT_": 62.8602,
    "$_MUX_": 56.233,
    "$_NMUX_": 56.233,
    "$_AOI3_": 45.5034,
    "$_OAI3_": 41.1836,
    "$_AOI4_": 54.47,
    "$_OAI4_": 54.0895,
}
#: osu018's energy per calibration toggle (pJ): ppa.liberty.energy ``LibraryEnergy.toggle_pj``
OSU018_TOGGLE_PJ = 0.0985114
#: the FO4 input slew of osu018 (ns) at which the internal energies are read (ppa.timing.opensta.measure_fo4)
OSU018_FO4_SLEW_NS = 0.0978365


def derive(lib: LibertyLibrary, *, slew_ns: float = OSU018_FO4_SLEW_NS) -> tuple[dict, dict, float]:
    """(INPUT_CAP_FF, INTERNAL_FJ, voltage) read from ``lib`` (osu018's cell names)."""
    caps, internal = {}, {}
    for gate, (cell, pins, out) in GATE_CELLS.items():
        caps[gate] = {p: round(lib.pin_cap_pf(cell, q) * 1e3, 6) for p, q in pins.items()}  # pF -> fF
        if gate != "$_DFF_P_":
            r, f = lib.pin_internal_pj(cell, out, slew_ns=slew_ns, load_pf=INTERNAL_AT_PF)
            internal[gate] = round((r + f) / 2 * 1e3, 4)
    return caps, internal, lib.nominal_voltage_v


def net_energies(module: dict, bit_ids: dict, n_nets: int) -> tuple[np.ndarray, np.ndarray]:
    """Per net of a GateNetlist (``bit_ids``: its Yosys bit -> net index, ``n_nets`` nets) built
    from the Yosys JSON ``module``: (energy per transition in toggle-equivalents, whether a
    flip-flop drives it). Nets no gate or flip-flop drives (inputs, constants) get 0."""
    load_ff = np.zeros(n_nets)
    driver: dict[int, str] = {}
    for cell in module["cells"].values():
        t = cell["type"]
        if t not in GATE_CELLS:
            continue  # ppa.netlist.GateNetlist rejects the netlist first
        conn = cell["connections"]
        for pin, cap in INPUT_CAP_FF[t].items():
            b = conn[pin][0]
            if not isinstance(b, str):
                load_ff[bit_ids[b]] += cap
        out = conn["Q" if t == "$_DFF_P_" else "Y"][0]
        if not isinstance(out, str):
            driver[bit_ids[out]] = t
    d_pin = INPUT_CAP_FF["$_DFF_P_"]["D"]
    for port in module["ports"].values():
        if port["direction"] == "output":
            for b in port["bits"]:
                if not isinstance(b, str):
                    load_ff[bit_ids[b]] += d_pin
    v2 = OSU018_VOLTAGE_V**2
    e_fj = np.zeros(n_nets)
    is_ff = np.zeros(n_nets, dtype=bool)
    for net, t in driver.items():
        e_fj[net] = 0.5 * load_ff[net] * v2 + (0.0 if t == "$_DFF_P_" else INTERNAL_FJ[t])
        is_ff[net] = t == "$_DFF_P_"
    return e_fj * 1e-3 / OSU018_TOGGLE_PJ, is_ff
