"""Switching energy of a design on its netlist mapped to a Liberty library.

Each net of the mapped netlist is charged the library's energy per transition of that net
(:func:`ppa.liberty.energy.net_energies`: 1/2 C V^2 of the pins it drives plus its driver's output
internal energy); its transitions are counted by ppa.netlist's zero-delay simulation of the mapped
netlist itself, which Yosys turns into generic gates by reading the library's cell functions
(``read_liberty``) and flattening the cells. Nets inside a cell (its function's gates) and the
design's input ports carry no energy here: a cell's internal energy is its output pin's, and the
inputs are driven from outside.

This is the gate-level power of a sign-off flow at zero delay (no glitches). ppa.model costs
switching on the generic netlist instead, one energy per gate toggle; bench/bench_ppa_glitch.py
and docs/validation.md ("Energy per operation") compare the two against the published operator
tables.
"""

from __future__ import annotations

import json
import tempfile
from dataclasses import dataclass
from pathlib import Path

import numpy as np

from hw.errors import InputError
from hw.host import write_file
from ppa import yosys
from ppa.liberty.energy import net_energies
from ppa.liberty.library import LibertyLibrary
from ppa.netlist import GateNetlist

#: Yosys: the library's cells as their functions, the mapped netlist flattened onto them
FLATTEN_SCRIPT = (
    "read_liberty -overwrite {lib}; read_verilog {src}; hierarchy -top {top}; flatten; simplemap; "
    "write_json {json}"
)


def flat_name(net: str) -> str:
    """A net of the mapped Verilog as Yosys's JSON of the flattened netlist names it: an escaped
    identifier loses its backslash and terminating space (``\\u0.y [3]`` -> ``u0.y[3]``: the names
    ``synth -flatten`` gives a submodule's ports); a plain name is unchanged."""
    if net.startswith("\\"):
        ident, _, rest = net[1:].partition(" ")
        return ident + rest.strip()
    return net


@dataclass
class MappedSwitching:
    """A mapped netlist ready to simulate, with each net's library energy per transition."""

    top: str
    library: str
    netlist: GateNetlist  # the mapped netlist flattened onto its cells' functions
    energy_pj: np.ndarray  # per net of ``netlist``: the library's energy per transition (0: not charged)
    mapped_nets: np.ndarray  # per net of ``netlist``: how many cell-driven nets of the mapped netlist it is
    net_energy_pj: dict[
        str, float
    ]  # each cell-driven net of the mapped netlist, by name: its energy per transition

    def energy_per_cycle_pj(
        self, inputs: dict[str, np.ndarray], *, count_from: int = 0
    ) -> tuple[float, np.ndarray]:
        """Mean switching energy per cycle and instance (pJ) on ``inputs`` ((cycles, instances)
        arrays per input port, as :meth:`GateNetlist.simulate` takes them; the cycles before
        ``count_from`` only settle the netlist), and the transitions per net per counted cycle and
        instance."""
        tc, _ = self.netlist.simulate(inputs, count_from=count_from)
        per = tc.per_net / max(1, tc.cycles * tc.instances)
        return float(per @ self.energy_pj), per


def mapped_switching(
    mapped_verilog: str, top: str, lib: LibertyLibrary, *, slew_ns: float, output_load_pf: float
) -> MappedSwitching:
    """The mapped netlist ``top`` (ppa.timing.mapping.map_to_liberty's Verilog) flattened onto the
    functions of ``lib``'s cells, each cell-driven net charged its library energy at input slew
    ``slew_ns``; an output port also drives ``output_load_pf``."""
    energy = {
        net: sw + internal
        for net, sw, internal in net_energies(
            lib, mapped_verilog, top, slew_ns=slew_ns, output_load_pf=output_load_pf
        )
    }
    with tempfile.TemporaryDirectory(prefix="sparsepe-switching-") as tmp:
        d = Path(tmp)
        write_file(d / "mapped.v", mapped_verilog)
        write_file(d / "cells.lib", Path(lib.path).read_bytes())  # the yowasp Yosys sees only its directory
        run = yosys.yosys_process(
            FLATTEN_SCRIPT.format(lib="cells.lib", src="mapped.v", top=top, json="flat.json"), d
        )
        if run.returncode != 0:
            yosys.raise_failure(run, f"flattening {top} onto the cells of {lib.library}", d)
        flat = json.loads((d / "flat.json").read_text())
        netlist = GateNetlist(flat, top)
    # a net the cells' functions tie to a constant (an output bit no input reaches) never switches
    constant = set()
    for name, info in flat["modules"][top]["netnames"].items():
        for i, bit in enumerate(info["bits"]):
            if isinstance(bit, str):
                constant.add(f"{name}[{i}]" if len(info["bits"]) > 1 else name)
    # a buffer cell's function joins its input and output nets into one: each transition of that
    # net is charged both mapped nets' energies (the buffer's input load and its own output)
    weights = np.zeros(netlist.n_nets)
    nets = np.zeros(netlist.n_nets, dtype=np.int64)
    by_flat = {flat_name(net): net for net in energy}
    found = set()
    for idx, names in netlist.names.items():
        for name in {n.lstrip("\\") for n in names} & by_flat.keys():
            weights[idx] += energy[by_flat[name]]
            nets[idx] += 1
            found.add(by_flat[name])
    missing = sorted(net for net in energy if net not in found and flat_name(net) not in constant)
    if missing:
        raise InputError(
            f"{len(missing)} nets of {top} not found after flattening onto {lib.library}, e.g. {missing[0]}",
            where="ppa.liberty.switching",
        )
    weights[netlist.input_nets] = 0.0
    nets[netlist.input_nets] = 0
    return MappedSwitching(top, lib.library, netlist, weights, nets, energy)
