"""Timing of a generic-gate netlist by the method of logical effort: the fallback when no Liberty
library or no OpenSTA is at hand.

The netlist timed is the generic one mapped for delay (ppa.synth ``mapping="delay"``: Yosys
``abc -g cmos`` with a minimum-depth ABC script), as the STA flow maps for timing; the area-mapped
netlist that every cost uses keeps long ripple-carry chains that no timing-closed design has (its
path grows with the accumulator's width: 264 tau at 2 rows, 374 at 6 of the INT8 2:4 column, where
OpenSTA's stage grows by 14 %). Each gate is a unit-drive static CMOS gate. Its delay
in units of tau (the delay of an ideal inverter driving an identical one, no parasitics) is
``d = p + sum of the logical efforts g of the gate inputs it drives`` (Sutherland, Sproull & Harris,
*Logical Effort*, 1999, ch. 1: d = g h + p; for unit-drive gates g h equals the load in units of an
inverter's input capacitance, and a gate's input capacitance in those units is its g). An FO4
inverter is 1 + 4 = 5 tau, so path FO4 = path tau / 5.

- **Logical effort and parasitic delay per cell** (Sutherland et al. Table 1.1 and ch. 4 for
  gamma = 2): NOT g 1 p 1; NAND2 4/3, 2; NOR2 5/3, 2; AOI21/OAI21 (Yosys AOI3/OAI3) 2, 7/3;
  AOI22/OAI22 (AOI4/OAI4) 2, 4; XOR2/XNOR2 4, 4; MUX2 / inverting MUX 2, 4 [S]. AND/OR/ANDNOT/ORNOT
  (rare in this gate set) are costed as their inverting gate plus an inverter.
- **High fan-out** is buffered, as a mapper and a timing-driven flow do: a load L (tau) above
  BUFFER_FROM is driven through an optimal inverter chain of stage effort 4, so its load term is
  ``5 log4(L)`` instead of L (ch. 3: best stage effort about 4, each stage 4 + p_inv = 5 tau).
- **Ends**: flip-flop D pins and primary outputs; **starts**: flip-flop Q pins and primary inputs
  (arrival 0). Primary outputs carry an FO4 load (4); flip-flop D pins have g = 1.
- What it does not see: wires, slews, the cell sizing a real library offers. One scale factor of
  this path (EFFORT_SCALE) is fitted to OpenSTA (ppa.timing.sta) on one configuration, the others
  held out; with the flip-flop overhead it gives the register-to-register stage in FO4
  (:func:`generic_path_fo4`, :func:`generic_stage_fo4`).
"""

from __future__ import annotations

import math

from ppa import characterisation
from ppa.synth_memo import portable_key

__all__ = [
    "EFFORT",
    "path_tau",
    "netlist_tau",
    "BUFFER_FROM",
    "FLOP_OVERHEAD_FO4",
    "EFFORT_SCALE",
    "generic_path_fo4",
    "generic_stage_fo4",
]

#: (logical effort g per input, parasitic delay p) [S] Sutherland, Sproull & Harris 1999 (gamma 2)
EFFORT: dict[str, tuple[float, float]] = {
    "$_NOT_": (1.0, 1.0),
    "$_BUF_": (1.0, 2.0),  # two inverters, the second of unit load
    "$_NAND_": (4 / 3, 2.0),
    "$_NOR_": (5 / 3, 2.0),
    "$_AND_": (4 / 3, 2.0 + 1.0 + 1.0),  # NAND2 + inverter: p of both + the inverter's unit input load
    "$_OR_": (5 / 3, 2.0 + 1.0 + 1.0),
    "$_ANDNOT_": (4 / 3, 2.0 + 1.0 + 1.0),
    "$_ORNOT_": (5 / 3, 2.0 + 1.0 + 1.0),
    "$_AOI3_": (2.0, 7 / 3),
    "$_OAI3_": (2.0, 7 / 3),
    "$_AOI4_": (2.0, 4.0),
    "$_OAI4_": (2.0, 4.0),
    "$_XOR_": (4.0, 4.0),
    "$_XNOR_": (4.0, 4.0),
    "$_MUX_": (2.0, 4.0),
    "$_NMUX_": (2.0, 4.0),
}
_FF = ("$_DFF_P_", "$_DFF_N_")
#: load (tau) above which a net is driven through a buffer chain [A]: where 5 log4(L) < L - p_inv
BUFFER_FROM = 8.0
#: load on a primary output (tau): one FO4 [A]
OUTPUT_LOAD = 4.0


def _load_term(load: float) -> float:
    return load if load <= BUFFER_FROM else 5.0 * math.log(load, 4.0)


def path_tau(netlist: dict, top: str) -> float:
    """Delay (tau) of the slowest start-to-end path of the generic netlist's module ``top``."""
    mod = netlist["modules"][top]
    load: dict[int, float] = {}
    driver: dict[int, tuple[str, list]] = {}
    for cell in mod["cells"].values():
        t = cell["type"]
        dirs = cell["port_directions"]
        if t in _FF:
            for b in cell["connections"].get("D", []):
                if not isinstance(b, str):
                    load[b] = load.get(b, 0.0) + 1.0
            continue
        if t not in EFFORT:
            raise KeyError(f"no logical effort for cell type {t}")
        g, _ = EFFORT[t]
        ins = []
        for pin, bits in cell["connections"].items():
            if dirs[pin] == "input":
                for b in bits:
                    if not isinstance(b, str):
                        load[b] = load.get(b, 0.0) + g
                        ins.append(b)
            else:
                out = bits[0]
        driver[out] = (t, ins)
    for port in mod["ports"].values():
        if port["direction"] == "output":
            for b in port["bits"]:
                if not isinstance(b, str):
                    load[b] = load.get(b, 0.0) + OUTPUT_LOAD
    arrival: dict[int, float] = {}

    def arr(bit: int) -> float:
        if bit in arrival:
            return arrival[bit]
        stack = [bit]
        while stack:  # iterative DFS: netlists are deeper than the recursion limit
            b = stack[-1]
            d = driver.get(b)
            if d is None:  # a primary input or a flip-flop output
                arrival[b] = 0.0
                stack.pop()
                continue
            pending = [x for x in d[1] if x not in arrival]
            if pending:
                stack.extend(pending)
                continue
            _, p = EFFORT[d[0]]
            arrival[b] = max((arrival[x] for x in d[1]), default=0.0) + p + _load_term(load.get(b, 0.0))
            stack.pop()
        return arrival[bit]

    ends: list[int] = []
    for cell in mod["cells"].values():
        if cell["type"] in _FF:
            ends.extend(b for b in cell["connections"].get("D", []) if not isinstance(b, str))
    for port in mod["ports"].values():
        if port["direction"] == "output":
            ends.extend(b for b in port["bits"] if not isinstance(b, str))
    return max((arr(b) for b in ends), default=0.0)


# ------------------------------------------------------------------------------------------------
# the register-to-register stage in FO4, calibrated on STA
# ------------------------------------------------------------------------------------------------

#: Flip-flop overhead on the generic path (clock-to-Q + setup), FO4 [D]: OpenSTA's DFFPOSX1 of
#: osu018 on the fitted stage below, (clk-to-Q + setup) / FO4 = (175.561 + 203.934) ps / 99.02 ps
#: = 3.833. With the buffer trees (ppa.timing.buffer) every flop on a timed path drives one BUFX4
#: (clock-to-Q 1.77 FO4 on every stage timed); the tree behind it counts as path logic.
FLOP_OVERHEAD_FO4 = 3.833
#: FO4 of STA per logical-effort FO4 of the generic netlist (ppa.timing.effort: path tau / 5) [D], fitted on
#: ONE configuration: the steady-state stage of the INT8 2:4 weight-stationary array (a 6 x 1 column
#: of hw.array.SparseArray, pipeline 1; the stage every sparse array of 6 or more rows is clocked
#: by), STA on osu018 with the timing-driven mapping and the flip-flop / input buffer trees
#: (STA_FLOW_VERSION 2): cycle (5423.459 + 203.934) ps / 99.02 ps = 56.831 FO4; generic path of the
#: delay-mapped netlist (ppa.synth ``mapping="delay"``, ABC_STEP) 313.79 tau:
#: (56.831 - 3.833) / (313.79 / 5) = 0.845. Below 1, we take it, because ABC sizes the library's
#: cells (X2-X8 drives on the path) where logical effort assumes unit-drive gates with gamma = 2
#: parasitics (not separated by measurement). Held out
#: (tests/ppa/test_sta.py): the other pipeline depths, row counts, the dense and dense-path columns
#: and the standalone PEs, all within 8 % at INT8; the INT4 2 x 1 column +10 %.
#: (Fitted before on the area-mapped netlist, 373.72 tau, the scale was 0.709 and the 2 x 1 column
#: missed by -17 %: that mapping ripples the accumulator's carry through every bit of its width,
#: so its path grew from 264 tau at 2 rows to 374 at 6 (+42 %), where the timing-driven netlist
#: STA times grows 50.0 -> 56.8 FO4 (+14 %); the scale fitted on the widest carry chain then
#: under-estimated every shorter one. The delay mapping grows 274 -> 314 tau, as STA does.)
EFFORT_SCALE = (56.831 - FLOP_OVERHEAD_FO4) / (313.79 / 5.0)


def generic_path_fo4(tau: float) -> float:
    """The register-to-register stage in FO4 from the generic netlist's logical-effort path (the
    fallback when OpenSTA or a Liberty file is absent):
    ``EFFORT_SCALE x tau / 5 + FLOP_OVERHEAD_FO4`` for a path of ``tau`` (an FO4 inverter is 5 tau)."""
    return EFFORT_SCALE * float(tau) / 5.0 + FLOP_OVERHEAD_FO4


#: the path figure's own version (part of its cache key): bump when :func:`path_tau` changes meaning
PATH_TAU_VERSION = "1"


def netlist_tau(res, *, cache=None) -> float:
    """:func:`path_tau` of a ppa.synth.SynthResult's netlist, computed once per netlist
    (ppa.characterisation.cached: memory, disk, the shipped characterisation; keyed by the
    netlist's synthesis key, :data:`PATH_TAU_VERSION` and the effort table)."""
    key = portable_key(
        "generic-tau",
        res.key,
        PATH_TAU_VERSION,
        repr(sorted(EFFORT.items())),
        repr(BUFFER_FROM),
        repr(OUTPUT_LOAD),
    )
    return float(
        characterisation.cached(
            "generic-tau",
            key,
            lambda: {"tau": path_tau(res.netlist(), res.top)},
            cache=cache,
            what=f"the logical-effort path of {res.top}",
        )["tau"]
    )


def generic_stage_fo4(res, *, cache=None) -> float:
    """:func:`generic_path_fo4` of a ppa.synth.SynthResult's netlist (:func:`netlist_tau`). The
    result must be delay-mapped (``mapping="delay"``, e.g. ppa.array_cost.synth_array(...,
    mapping="delay")): EFFORT_SCALE is fitted on that netlist, and the area mapping's carry chains
    are not what a design is clocked by."""
    if getattr(res, "mapping", "area") != "delay":
        raise ValueError(
            f"the generic timing path needs the delay-mapped netlist (mapping='delay'), "
            f"got mapping={getattr(res, 'mapping', 'area')!r} for {res.top}"
        )
    return generic_path_fo4(netlist_tau(res, cache=cache))
