"""How much more a netlist sized for speed switches than one mapped for area, on a Liberty library.

The model's switching energy is the generic netlist's toggles at its nets' energies as the default
library's smallest cells (ppa.liberty.gates): the energy of an area-mapped netlist. The netlist
the model times is another one: ppa.timing.sta maps, buffers and up-sizes the design for minimum
delay (ppa.timing.mapping.FASTEST_CLOCK_PS), and every design then runs at that netlist's fmax at
its voltage, or at the lowest voltage that meets its clock (ppa.model.operating_point), which is
the same netlist. Its buffers and larger cells switch more capacitance and internal energy.

:func:`speed_over_area` measures that on the library: the design mapped both ways
(ppa.timing.mapping.map_to_liberty), each mapped netlist simulated at zero delay on the same
inputs with each net's library energy (ppa.liberty.switching), the ratio of the two energies.
:func:`anchor_ratio` is the same ratio for the calibration pair (the 8-bit multiply and the 32-bit
add on ppa.calibration's operands), so that the toggle energy fitted on them keeps its meaning; a
design's *sizing factor* is its ratio over the anchors' (geometric mean). ppa.model multiplies the
PE's gate switching by it on the STA path; bench/bench_ppa_glitch.py prints the same energies.

What it leaves out, stated: the netlist is sized for minimum delay whatever the clock (a design
clocked well below fmax at its voltage floor could be sized down: the factor is then high), the
ratio is taken on the default trace and applied to the workload's, and flip-flop output nets are
inside the measured ratio.
"""

from __future__ import annotations

import math

import numpy as np

from ppa import characterisation, rtl, synth_memo, yosys
from ppa.liberty.library import LibertyLibrary
from ppa.liberty.switching import mapped_switching
from ppa.tech import CAL_CYCLES, CAL_SEED
from ppa.timing.mapping import FASTEST_CLOCK_PS, MAP_SCRIPT, TIMING_ABC_SCRIPT, map_to_liberty
from ppa.timing.opensta import measure_fo4

#: bump when the figures this module computes change meaning
SIZING_VERSION = "1"
#: operand pairs per cycle of a calibration operator (ppa.calibration uses 1024; the ratio settles
#: well before: 64 and 1024 agree within 0.1 % for the 8-bit multiply and the 32-bit add)
ANCHOR_INSTANCES = 64


def switching_pj(verilog: str, top: str, lib: LibertyLibrary, inputs: dict, *, speed: bool) -> float:
    """Mean switching energy per cycle (pJ, at the library's voltage) of ``top`` mapped to ``lib``
    for minimum delay (``speed``) or for area, on ``inputs`` (ppa.netlist.GateNetlist.simulate's)."""
    mapped = map_to_liberty(verilog, top, lib, clock_ps=FASTEST_CLOCK_PS if speed else None)
    ff, _, d_pin, _ = lib.register()
    ms = mapped_switching(
        mapped.verilog, top, lib, slew_ns=measure_fo4(lib).slew_ns, output_load_pf=lib.pin_cap_pf(ff, d_pin)
    )
    return ms.energy_per_cycle_pj(inputs)[0]


def speed_over_area(verilog: str, top: str, lib: LibertyLibrary, inputs: dict) -> float:
    """Switching energy of ``top`` sized for minimum delay over its area mapping, on ``inputs``."""
    return switching_pj(verilog, top, lib, inputs, speed=True) / switching_pj(
        verilog, top, lib, inputs, speed=False
    )


def operator_inputs(width: int, instances: int = ANCHOR_INSTANCES) -> dict:
    """ppa.calibration's random operands (its seed and cycles) for a ``width``-bit operator."""
    rng = np.random.default_rng(CAL_SEED)
    return {p: rng.integers(0, 1 << width, (CAL_CYCLES, instances), dtype=np.uint64) for p in ("a", "b")}


def operator_ratio(kind: str, width: int, lib: LibertyLibrary, *, cache=None) -> float:
    """:func:`speed_over_area` of a ppa.operators operator on ppa.calibration's operands, computed
    once per operator, library, Yosys and model code (ppa.characterisation.cached; the operator's
    Verilog is generated only then)."""
    key = synth_memo.portable_key(
        "sizing-operator",
        kind,
        repr(width),
        characterisation.code_version(),
        lib.sha256,
        yosys.yosys_id(),
        SIZING_VERSION,
        MAP_SCRIPT,
        TIMING_ABC_SCRIPT,
        repr(FASTEST_CLOCK_PS),
        repr((CAL_SEED, CAL_CYCLES, ANCHOR_INSTANCES)),
    )
    d = characterisation.cached(
        "sizing",
        key,
        lambda: {
            "speed_over_area": speed_over_area(
                *rtl.operator_verilog(kind, width), lib, operator_inputs(width)
            )
        },
        cache=cache,
        what=f"the sizing ratio of the {width}-bit {kind} on {lib.library}",
    )
    return d["speed_over_area"]


def anchor_ratio(lib: LibertyLibrary, *, cache=None) -> float:
    """The calibration pair's speed-over-area ratio: the geometric mean of the 8-bit multiply's and
    the 32-bit add's."""
    return math.sqrt(operator_ratio("mul", 8, lib, cache=cache) * operator_ratio("add", 32, lib, cache=cache))


def operator_sizing_factor(kind: str, width: int, lib: LibertyLibrary, *, cache=None) -> float:
    """An operator's sizing factor: its ratio over the calibration pair's."""
    return operator_ratio(kind, width, lib, cache=cache) / anchor_ratio(lib, cache=cache)
