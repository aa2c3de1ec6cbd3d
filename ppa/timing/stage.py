"""The stage ppa.model clocks a design by, and its cycle time at a node and voltage.

- Which library times a design (:func:`resolve_liberty`): the design's own Liberty file, else
  osu018 when OpenSTA and the file are installed, else none (the generic path).
- The stage (:func:`stage_timing`): the R-row column of the design's own weight-stationary array
  (hw.array.SparseArray of its PE kind; R up to the characterised steady-state row, as
  ppa.array_cost.ArrayFacts.depth: the partial-sum adder widens with the row, so deep arrays are
  slower), timed by OpenSTA on the library (ppa.timing.sta, timing-driven mapping to
  FASTEST_CLOCK_PS). The column's ``out_meta_err`` OR chain is static while the weights are held:
  a false path (a multi-cycle path). Without a library, the same column's generic netlist,
  delay-mapped, timed by logical effort (ppa.timing.effort.generic_stage_fo4), with a note.
  Both are computed once per netlist and cached (ppa.characterisation).
- Its cycle time (:func:`cycle_time_ps`): the stage in FO4 delays x the FO4 of the target node and
  voltage (ppa.tech ``gate_delay_ps``), with a wire allowance and a clock-uncertainty margin.
"""

from __future__ import annotations

import os
from dataclasses import dataclass
from functools import lru_cache

from hw.errors import InputError
from hw.params import PEParams
from ppa import characterisation, rtl, tech
from ppa.array_cost import ArrayFacts, check_kind, synth_array
from ppa.liberty.library import OSU018_NODE_NM, LibertyLibrary, default_liberty_path, load_liberty
from ppa.synth import cache_key
from ppa.timing.effort import generic_stage_fo4
from ppa.timing.mapping import FASTEST_CLOCK_PS
from ppa.timing.opensta import find_sta
from ppa.timing.sta import StaResult

GENERIC_TIMING_NOTE = "timing: generic netlist timed by logical effort (no OpenSTA/Liberty)"

#: Wire allowance [A]: the STA above has no wire capacitance (no placement). Intra-PE nets of a
#: compact datapath block are short (a PE is ~50-100 um across at 7 nm to ~200-300 um at 180 nm:
#: sqrt of its cell area) and add a modest share to each stage's load; we charge 10 % of the
#: logic path, the middle of the 5-15 % by which post-route paths of such blocks commonly exceed a
#: zero-wire-load pre-layout estimate. Not a fit; not checked against a published figure.
WIRE_ALLOWANCE = 0.10
#: Clock skew + jitter margin [A], as a fraction of the clock period: a balanced clock tree with
#: a few % skew and ~1-2 % period jitter; 5 % in all. The clock in OpenSTA is ideal.
CLOCK_UNCERTAINTY_FRACTION = 0.05


def cycle_time_ps(cycle_fo4: float, fo4_ps: float) -> float:
    """Clock period at a node and voltage whose FO4 is ``fo4_ps``, for a register-to-register
    stage of ``cycle_fo4`` FO4 (arrival incl. clock-to-Q, plus setup):
    ``T = cycle_fo4 x FO4 x (1 + WIRE_ALLOWANCE) / (1 - CLOCK_UNCERTAINTY_FRACTION)``."""
    return cycle_fo4 * fo4_ps * (1.0 + WIRE_ALLOWANCE) / (1.0 - CLOCK_UNCERTAINTY_FRACTION)


# ------------------------------------------------------------------------------------------------
# which library
# ------------------------------------------------------------------------------------------------

@lru_cache(maxsize=32)
def _load_liberty(path: str, node_nm: int | None, mtime_ns: int, size: int) -> LibertyLibrary:
    return load_liberty(path, node_nm)


def resolve_liberty(design) -> LibertyLibrary | None:
    """The Liberty library ``design`` (a ppa.design.DesignPoint) is timed with, or None for the
    generic path: ``design.liberty`` when given (its node from the file or ``liberty_node_nm``;
    OpenSTA required), else the default osu018 library when OpenSTA and the file are installed.
    ``SPARSEPE_STA=off`` forces the generic path for the default (not for an explicit file)."""
    if design.liberty is not None:
        if not isinstance(design.liberty, str) or not design.liberty:
            raise InputError(f"must be a Liberty file path, got {design.liberty!r}", where="--liberty")
        try:
            st = os.stat(design.liberty)
            stamp = (st.st_mtime_ns, st.st_size)
        except OSError:
            stamp = (0, 0)  # load_liberty reports the unreadable file
        lib = _load_liberty(design.liberty, design.liberty_node_nm, *stamp)
        if lib.node_nm is None:
            raise InputError("the Liberty file does not state its process node: give --liberty-node NM",
                             where=design.liberty)
        if find_sta() is None:
            raise InputError("timing with a Liberty file needs OpenSTA (sta) on PATH", where="--liberty")
        return lib
    if design.liberty_node_nm is not None:
        raise InputError("--liberty-node needs --liberty FILE", where="--liberty-node")
    if os.environ.get("SPARSEPE_STA", "").strip().lower() in ("off", "0", "no", "generic"):
        return None
    path = default_liberty_path()
    if path is None or find_sta() is None:
        return None
    st = os.stat(path)
    return _load_liberty(path, OSU018_NODE_NM, st.st_mtime_ns, st.st_size)


# ------------------------------------------------------------------------------------------------
# the shipped hardware, timed by OpenSTA
# ------------------------------------------------------------------------------------------------

def sta_pe(params: PEParams, sparse: bool, lib: LibertyLibrary, *, clock_ps: float | None = None,
           cache=None) -> StaResult:
    """STA of the standalone PE (hw.pe.SparsePE or DensePE) at its pipeline depth."""
    gen = "hw.pe.SparsePE" if sparse else "hw.pe.DensePE"
    return characterisation.sta(gen, params, rtl.pe_name(sparse), lambda: rtl.pe_verilog(params, sparse), lib,
                                clock_ps=clock_ps, cache=cache)


def sta_array_column(params: PEParams, rows: int, lib: LibertyLibrary, *, clock_ps: float | None = None, cache=None,
                     kind: str = "sparse") -> StaResult:
    """STA of an ``rows`` x 1 column of hw.array.SparseArray (weight-stationary) with ``kind`` cells
    (sparse, dense, dense_path), the stage the array model characterises (ppa.array_cost.ArrayFacts).
    The ``out_meta_err`` OR chain is static while the weights are held and is excluded as a false
    path, as ppa.model treats it."""
    if isinstance(rows, bool) or not isinstance(rows, int) or rows < 1:
        raise InputError(f"must be a positive integer, got {rows!r}", where="rows")
    check_kind(kind, "ws")
    # the sparse column keeps its original memo parameters, so its cached results stay valid
    memo = (rows, 1, params) if kind == "sparse" else (rows, 1, params, kind, "ws")
    return characterisation.sta("hw.array.SparseArray", memo, rtl.ARRAY_MODULES[kind],
                                lambda: rtl.array_verilog(params, rows, 1, kind, "ws"), lib,
                                clock_ps=clock_ps, false_path_ports=("out_meta_err",), cache=cache)


# ------------------------------------------------------------------------------------------------
# the stage
# ------------------------------------------------------------------------------------------------

@dataclass(frozen=True)
class StageTiming:
    """The deepest register-to-register stage of a design, in FO4 delays of its timing library.

    ``cycle_fo4``: (data arrival incl. clock-to-Q + setup) / FO4 from OpenSTA (``source == "sta"``),
    or ppa.timing.effort.generic_path_fo4 of the generic logic depth (``source == "generic"``)."""

    cycle_fo4: float
    source: str
    sta: StaResult | None = None
    stage: str = ""

    def cycle_time_ps(self, node_nm: int, voltage_v: float) -> float:
        return cycle_time_ps(self.cycle_fo4, tech.node(node_nm, voltage_v).gate_delay_ps)


def stage_timing(p: PEParams, design, facts: ArrayFacts, *, cache=None) -> StageTiming:
    """Timing of the stage the model clocks for ``design`` (a ppa.design.DesignPoint): the R-row
    column of the design's own array (any PE kind; rows up to the characterised steady-state row,
    as ArrayFacts.depth), from OpenSTA on the Liberty library (timing-driven mapping,
    FASTEST_CLOCK_PS), else the generic path."""
    R = design.rows
    lib = resolve_liberty(design)
    depth = facts.depth(R)
    if lib is None:  # the same column's generic netlist, delay-mapped, timed by logical effort (ppa.timing.effort)
        rows = min(R, len(facts.row_depth))
        res = synth_array(p, rows, 1, cache=cache_key(cache), kind=design.kind, dataflow="ws", mapping="delay")
        return StageTiming(generic_stage_fo4(res, cache=cache_key(cache)), "generic", None,
                           f"{rows} x 1 {design.kind} array column, logical effort on its delay-mapped netlist "
                           f"(depth {res.logic_depth} gates; area-mapped {depth})")
    # every PE kind is timed the same way: the R-row column of its own weight-stationary array
    rows = min(R, len(facts.row_depth))
    r = sta_array_column(p, rows, lib, clock_ps=FASTEST_CLOCK_PS, cache=cache_key(cache), kind=design.kind)
    return StageTiming(r.cycle_fo4, "sta", r, f"{rows} x 1 {design.kind} array column")
