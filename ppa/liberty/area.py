"""The cell area of a design mapped to a Liberty library (ppa.timing.mapping), computed once.

Used by ``sparsepe validate --group area`` to hold the model's cell area (netlist transistors at a
published logic density, ppa.tech) to a real cell set.
"""

from __future__ import annotations

import hashlib

from ppa import characterisation, yosys
from ppa.liberty.library import LibertyLibrary
from ppa.timing.mapping import MAP_SCRIPT, TIMING_ABC_SCRIPT, map_to_liberty


def mapped_cell_area_um2(
    verilog: str, top: str, lib: LibertyLibrary, *, clock_ps: float | None = None, cache=None
) -> float:
    """The cell area of ``top`` mapped to ``lib`` (:func:`ppa.timing.mapping.map_to_liberty`: for
    area without ``clock_ps``, sized for that clock with it), in the library's area unit; computed
    once (ppa.characterisation.cached, keyed by the Verilog, the scripts, the Yosys build and the
    library's digest)."""
    h = hashlib.sha256()
    for part in (verilog, top, repr(clock_ps), MAP_SCRIPT, TIMING_ABC_SCRIPT, yosys.yosys_id(), lib.sha256):
        h.update(str(part).encode())
        h.update(b"\0")
    d = characterisation.cached(
        "liberty-area",
        h.hexdigest()[:32],
        lambda: {"area_um2": map_to_liberty(verilog, top, lib, clock_ps=clock_ps).area_um2},
        cache=cache,
        what=f"the cell area of {top} on {lib.library}",
    )
    return float(d["area_um2"])
