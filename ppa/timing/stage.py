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
from ppa.array_cost import ArrayFacts, array_memo, check_double_buffer, check_kind, synth_array
from ppa.liberty import asap7
from ppa.liberty.library import OSU018_NODE_NM, LibertyLibrary, default_liberty_path, load_liberty
from ppa.override import assumed
from ppa.synth import cache_key
from ppa.timing.effort import generic_stage_fo4
from ppa.timing.mapping import FASTEST_CLOCK_PS
from ppa.timing.opensta import find_sta
from ppa.timing.sta import StaResult

GENERIC_TIMING_NOTE = "timing: generic netlist timed by logical effort (no OpenSTA/Liberty)"

#: Wire allowance [D/A]: the STA has no wire capacitance (no placement). Measured on ASAP7 (7 nm,
#: RVT TT): OpenSTA wire-load models built from ORFS's ASAP7 signal-wire RC (setRC.tcl: 0.173 fF/um,
#: 32 ohm/um) with a net length of (0.5 + 0.75 x fan-out) um, about a 13 x 13 um PE, lengthen the
#: timing-mapped INT8 2:4 PE's register-to-register path by 23 % (1,141 -> 1,404 ps) and the dense
#: PE's by 21 % (1,090 -> 1,322 ps); twice that length, by 49 % and 47 %. Those netlists are ABC's,
#: mostly fractional-drive cells and unsized for wires; a placed flow's repair (upsizing, buffering)
#: wins part of it back. We charge 15 %: below the unsized 21-23 %, above the 10 % assumed before
#: (the middle of the 5-15 % post-route excess commonly quoted). The same fraction at every node [A]
#: (wires matter less at 180 nm, so it is conservative there).
WIRE_ALLOWANCE = 0.15
#: Clock skew + jitter margin [A], as a fraction of the clock period: a balanced clock tree with
#: a few % skew and ~1-2 % period jitter; 5 % in all. The clock in OpenSTA is ideal.
CLOCK_UNCERTAINTY_FRACTION = 0.05


def cycle_time_ps(cycle_fo4: float, fo4_ps: float) -> float:
    """Clock period at a node and voltage whose FO4 is ``fo4_ps``, for a register-to-register
    stage of ``cycle_fo4`` FO4 (arrival incl. clock-to-Q, plus setup):
    ``T = cycle_fo4 x FO4 x (1 + WIRE_ALLOWANCE) / (1 - CLOCK_UNCERTAINTY_FRACTION)``."""
    wire = assumed("wire_allowance", WIRE_ALLOWANCE)
    return (
        cycle_fo4
        * fo4_ps
        * (1.0 + wire)
        / (1.0 - assumed("clock_uncertainty_fraction", CLOCK_UNCERTAINTY_FRACTION))
    )


# ------------------------------------------------------------------------------------------------
# which library
# ------------------------------------------------------------------------------------------------


@lru_cache(maxsize=32)
def _load_liberty(path: str, node_nm: int | None, mtime_ns: int, size: int) -> LibertyLibrary:
    return load_liberty(path, node_nm)


def resolve_liberty(design) -> LibertyLibrary | None:
    """The Liberty library ``design`` (a ppa.design.DesignPoint) is timed with, or None for the
    generic path: ``design.liberty`` when given (its node from the file or ``liberty_node_nm``;
    ``"asap7"``: the ASAP7 7 nm library, ppa.liberty.asap7; OpenSTA required), else the default
    osu018 library when OpenSTA and the file are installed.
    ``SPARSEPE_STA=off`` forces the generic path for the default (not for an explicit file)."""
    if design.liberty is not None:
        if not isinstance(design.liberty, str) or not design.liberty:
            raise InputError(f"must be a Liberty file path, got {design.liberty!r}", where="--liberty")
        path = asap7.resolve_path(design.liberty)
        try:
            st = os.stat(path)
            stamp = (st.st_mtime_ns, st.st_size)
        except OSError:
            stamp = (0, 0)  # load_liberty reports the unreadable file
        lib = _load_liberty(path, design.liberty_node_nm, *stamp)
        if lib.node_nm is None:
            raise InputError(
                "the Liberty file does not state its process node: give --liberty-node NM",
                where=design.liberty,
            )
        if find_sta() is None:
            raise InputError("timing with a Liberty file needs OpenSTA (sta) on PATH", where="--liberty")
        return lib
    if design.liberty_node_nm is not None:
        raise InputError(
            "is the node of a Liberty file that does not state its own: give it with --liberty FILE",
            where="--liberty-node",
        )
    if os.environ.get("SPARSEPE_STA", "").strip().lower() in ("off", "0", "no", "generic"):
        return None
    default = default_liberty_path()
    if default is None or find_sta() is None:
        return None
    st = os.stat(default)
    return _load_liberty(default, OSU018_NODE_NM, st.st_mtime_ns, st.st_size)


# ------------------------------------------------------------------------------------------------
# the shipped hardware, timed by OpenSTA
# ------------------------------------------------------------------------------------------------


def sta_pe(
    params: PEParams, sparse: bool, lib: LibertyLibrary, *, clock_ps: float | None = None, cache=None
) -> StaResult:
    """STA of the standalone PE (hw.pe.SparsePE or DensePE) at its pipeline depth."""
    gen = "hw.pe.SparsePE" if sparse else "hw.pe.DensePE"
    return characterisation.sta(
        gen,
        params,
        rtl.pe_name(sparse),
        lambda: rtl.pe_verilog(params, sparse),
        lib,
        clock_ps=clock_ps,
        cache=cache,
    )


def sta_array_column(
    params: PEParams,
    rows: int,
    lib: LibertyLibrary,
    *,
    clock_ps: float | None = None,
    cache=None,
    kind: str = "sparse",
    dataflow: str = "ws",
    double_buffer: bool = False,
) -> StaResult:
    """STA of an ``rows`` x 1 column of hw.array.SparseArray with ``kind`` cells (sparse, dense,
    dense_path), ``dataflow`` (ws, os) and ``double_buffer`` (the double-buffered WS array), the stage
    the array model characterises (ppa.array_cost.ArrayFacts). In the weight-stationary column the
    ``out_meta_err`` OR chain is static while the weights are held and is excluded as a false path,
    as ppa.model treats it (double-buffered, the error bits are registered beside the partial sums);
    in the output-stationary one it follows each tile's codes and is timed."""
    if isinstance(rows, bool) or not isinstance(rows, int) or rows < 1:
        raise InputError(f"must be a positive integer, got {rows!r}", where="rows")
    check_kind(kind, dataflow)
    check_double_buffer(double_buffer, dataflow)
    # the sparse single-buffered WS column keeps its original memo parameters, so its cached results stay valid
    return characterisation.sta(
        "hw.array.SparseArray",
        array_memo(rows, 1, params, kind, dataflow, double_buffer),
        rtl.array_module(kind, double_buffer),
        lambda: rtl.array_verilog(params, rows, 1, kind, dataflow, double_buffer),
        lib,
        clock_ps=clock_ps,
        false_path_ports=("out_meta_err",) if dataflow == "ws" else (),
        cache=cache,
    )


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
    column of the design's own array (any PE kind, its own dataflow: a weight-stationary column's
    partial sums chain down the rows, so rows up to the characterised steady-state row, as
    ArrayFacts.depth; an output-stationary array's cells are alike, each accumulating its own sum,
    so its one-cell column), from OpenSTA on the Liberty library (timing-driven mapping,
    FASTEST_CLOCK_PS), else the generic path."""
    R = design.rows
    lib = resolve_liberty(design)
    depth = facts.depth(R)
    df = design.cost_dataflow
    db = " double-buffered" if design.double_buffer else ""
    rows = min(R, len(facts.row_depth))
    what = f"{rows} x 1 {design.kind}{db} {'output-stationary ' if df == 'os' else ''}array column"
    if (
        lib is None
    ):  # the same column's generic netlist, delay-mapped, timed by logical effort (ppa.timing.effort)
        res = synth_array(
            p,
            rows,
            1,
            cache=cache_key(cache),
            kind=design.kind,
            dataflow=df,
            mapping="delay",
            double_buffer=design.double_buffer,
        )
        return StageTiming(
            generic_stage_fo4(res, cache=cache_key(cache)),
            "generic",
            None,
            f"{what}, logical effort on its delay-mapped netlist "
            f"(depth {res.logic_depth} gates; area-mapped {depth})",
        )
    r = sta_array_column(
        p,
        rows,
        lib,
        clock_ps=FASTEST_CLOCK_PS,
        cache=cache_key(cache),
        kind=design.kind,
        dataflow=df,
        double_buffer=design.double_buffer,
    )
    return StageTiming(r.cycle_fo4, "sta", r, what)
