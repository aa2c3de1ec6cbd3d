"""Timing from static timing analysis of a real standard-cell library (Liberty + OpenSTA), cached.

Flow, for one Verilog design and one Liberty library L (:func:`time_verilog`)::

    Yosys (ppa.timing.mapping): map the design to L, timing-driven when a clock is given.
    Buffer trees (ppa.timing.buffer): ABC buffers only inside combinational logic, so a net driven
             by a flip-flop or a primary input stays one wire; those whose load exceeds 16 x C_in
             of the minimum inverter get a balanced tree of the strongest data buffer (BUFX4),
             each buffer driving <= 16 x its input capacitance (stage effort ~4), before timing.
             The trees' buffers are added to ``cells`` and ``cell_area_um2``.
    OpenSTA (ppa.timing.opensta): the mapped module inside a wrapper that registers every port
             bit with the library's D flip-flop, one ideal clock with the slew of the library's
             FO4 stage, the worst setup path.

What is read back (:class:`StaResult`): the worst setup path's data arrival time (clock-to-Q of
the launching flop included), the capturing flop's library setup time, start and end points, the
mapped cell area (``stat -liberty``), the flip-flops and their clock-pin energy, and the library's
FO4 (ppa.timing.opensta.measure_fo4_ps). The path in FO4 delays,
``cycle_fo4 = (arrival + setup) / FO4``, is what moves to another node and voltage: ppa.timing.stage
multiplies it by the FO4 of the target node (ppa.tech ``gate_delay_ps``).

Not modelled by this flow (stated): placement and routing (wire capacitance), buffering and
cell sizing beyond ABC's and the flip-flop / input trees above (no placement-aware repair), clock
skew and jitter (the clock is ideal; ppa.timing.stage adds a margin), on-chip variation.

Caching: every mapping + timing result is kept on disk under ``<synth cache>/sta/<key>``, keyed by
the tools that produced it (Yosys native or wheel and its version, the OpenSTA version), the
Liberty file's SHA-256, the Verilog's SHA-256, the top module, the clock and the flow version; the
stored result names those tools. :func:`time_generated` also memoises which result a generator
call gives (like ppa.synth_memo.synthesize_generated), so a warm process does not elaborate Amaranth.
"""

from __future__ import annotations

import hashlib
import json
import os
import re
from collections.abc import Callable
from dataclasses import asdict, dataclass, field
from pathlib import Path
from typing import TypedDict

from hw.errors import InputError
from hw.host import json_text, write_file
from ppa import synth as _synth, synth_memo, yosys
from ppa.liberty.library import LibertyLibrary
from ppa.timing import buffer as _buffer
from ppa.timing.mapping import MAP_SCRIPT, TIMING_ABC_SCRIPT, Mapped, map_to_liberty
from ppa.timing.opensta import DEFAULT_PERIOD_NS, find_sta, measure_fo4, time_mapped

#: Bump when the flow or the parsing changes, so old cache entries are not reused.
STA_FLOW_VERSION = (
    "3"  # 2: buffer trees on flip-flop / input nets (ppa.timing.buffer); 3: cell counts of either stat layout
)


def tools(lib: LibertyLibrary) -> dict:
    """The tools a timing result depends on (what the cache is keyed by and what results name)."""
    sta = find_sta()
    if sta is None:
        raise InputError("OpenSTA (sta) is not on PATH", where="ppa.timing.sta")
    return {
        "yosys": yosys.yosys_id(),
        "opensta": f"OpenSTA {sta[1]}",
        "liberty": lib.library,
        "liberty_sha256": lib.sha256,
    }


@dataclass
class StaResult:
    """Timing of one design mapped to one library (times at the library's own voltage)."""

    top: str
    library: str
    critical_path_ps: float  # data arrival at the worst endpoint, clock-to-Q of the launching flop included
    setup_ps: float  # library setup time of the capturing flop
    clk_to_q_ps: float | None
    startpoint: str
    endpoint: str
    fo4_ps: float  # the library's own FO4 (ppa.timing.opensta.measure_fo4_ps)
    cell_area_um2: float
    cells: dict[str, int]
    flip_flops: int  # mapped flip-flops of the design (the wrapper's registers excluded)
    clock_pin_energy_pj: float  # Liberty internal energy at the flops' clock pins per cycle, all flops
    clock_ps: float | None  # the clock abc mapped for (-D), None: area-oriented mapping
    path_cells: tuple[str, ...]  # library cells along the critical path, in order
    tools: dict
    buffered_nets: int = 0  # flip-flop / input nets given a buffer tree (ppa.timing.buffer)
    tree_buffers: int = 0  # buffers those trees added (in cells and cell_area_um2)
    abc_script: str = ""  # the ABC script that mapped it (TIMING_ABC_SCRIPT unless ABC crashed on it)
    key: str = ""
    cached: bool = field(default=False, compare=False)

    @property
    def path_fo4(self) -> float:
        """The critical path (data arrival) in FO4 delays of the library."""
        return self.critical_path_ps / self.fo4_ps

    @property
    def cycle_fo4(self) -> float:
        """Minimum register-to-register cycle in FO4: (arrival + setup) / FO4."""
        return (self.critical_path_ps + self.setup_ps) / self.fo4_ps

    @property
    def logic_cells_on_path(self) -> int:
        """Combinational cells on the critical path (the launching flop excluded)."""
        return max(0, len(self.path_cells) - (1 if self.clk_to_q_ps is not None else 0))

    def to_json(self) -> dict:
        d = asdict(self)
        d.pop("cached", None)
        d["path_fo4"] = self.path_fo4
        d["cycle_fo4"] = self.cycle_fo4
        d["path_cells"] = list(self.path_cells)
        return d

    @classmethod
    def from_json(cls, d: dict, *, cached: bool = False) -> StaResult:
        kw = {k: d[k] for k in cls.__dataclass_fields__ if k in d and k != "cached"}
        kw["path_cells"] = tuple(kw.get("path_cells", ()))
        return cls(**kw, cached=cached)

    def details(self) -> dict:
        """The ``details.sta`` block of ``sparsepe ppa --json``."""
        return {
            "library": self.library,
            "critical_path_ps": self.critical_path_ps,
            "setup_ps": self.setup_ps,
            "critical_path_fo4": self.path_fo4,
            "cycle_fo4": self.cycle_fo4,
            "fo4_ps": self.fo4_ps,
            "startpoint": self.startpoint,
            "endpoint": self.endpoint,
            "top": self.top,
            "cell_area_um2": self.cell_area_um2,
            "flip_flops": self.flip_flops,
            "clock_pin_energy_pj": self.clock_pin_energy_pj,
            "clk_to_q_ps": self.clk_to_q_ps,
            "buffered_nets": self.buffered_nets,
            "tree_buffers": self.tree_buffers,
            "abc_script": self.abc_script,
            "tools": dict(self.tools),
        }


def sta_cache_dir(cache: str | os.PathLike | None = None) -> Path:
    """``<ppa.synth cache dir>/sta``."""
    return _synth.cache_dir(cache) / "sta"


def _sha(text: str) -> str:
    return hashlib.sha256(text.encode()).hexdigest()


def _result_key(
    verilog_sha: str,
    top: str,
    lib: LibertyLibrary,
    clock_ps: float | None,
    tl: dict,
    false_path_ports: tuple[str, ...],
) -> str:
    h = hashlib.sha256()
    for part in (
        STA_FLOW_VERSION,
        MAP_SCRIPT,
        TIMING_ABC_SCRIPT,
        _buffer.key(),
        json.dumps(tl, sort_keys=True),
        lib.sha256,
        verilog_sha,
        top,
        repr(clock_ps),
        repr(tuple(false_path_ports)),
    ):
        h.update(part.encode())
        h.update(b"\0")
    return h.hexdigest()[:32]


def time_verilog(
    verilog: str,
    top: str,
    lib: LibertyLibrary,
    *,
    clock_ps: float | None = None,
    clock_port: str | None = "clk",
    false_path_ports: tuple[str, ...] = (),
    cache: str | os.PathLike | None = None,
    use_cache: bool = True,
) -> StaResult:
    """Map ``verilog`` to ``lib`` and time it (see the module docstring), or the cached result."""
    if clock_ps is not None and not (clock_ps > 0):
        raise InputError(f"clock period must be positive, got {clock_ps!r} ps", where="ppa.timing.sta")
    tl = tools(lib)
    key = _result_key(_sha(verilog), top, lib, clock_ps, tl, tuple(false_path_ports))
    path = sta_cache_dir(cache) / f"{key}.json"
    if use_cache and path.exists():
        try:
            return StaResult.from_json(json.loads(path.read_text()), cached=True)
        except (OSError, ValueError, KeyError, TypeError):
            pass  # a damaged entry is rebuilt
    fo4 = measure_fo4(lib)
    m = map_to_liberty(verilog, top, lib, clock_ps=clock_ps)
    bt = _buffer.buffer_high_fanout(m.verilog, top, lib, clock_port=clock_port)
    if bt.nets:
        cells = dict(m.cells)
        cells[bt.cell] = cells.get(bt.cell, 0) + bt.buffers
        m = Mapped(bt.verilog, dict(sorted(cells.items())), m.area_um2 + bt.added_area, m.abc_script)
    period = max(DEFAULT_PERIOD_NS, (clock_ps or 0) / 1e3)
    sp = time_mapped(
        m.verilog,
        top,
        lib,
        clock_port=clock_port,
        clock_slew_ns=fo4.slew_ns,
        false_path_ports=tuple(false_path_ports),
        period_ns=period,
    )
    flops = lib.flops()
    n_ff = sum(n for c, n in m.cells.items() if c in flops)
    e_clk = sum(n * lib.clock_pin_energy_pj(c, fo4.slew_ns) for c, n in m.cells.items() if c in flops)
    path_cells = tuple(s.cell for s in sp.stages if s.cap_pf is not None and s.cell not in ("in", "out"))
    res = StaResult(
        top=top,
        library=lib.library,
        critical_path_ps=sp.arrival_ns * 1e3,
        setup_ps=sp.setup_ns * 1e3,
        clk_to_q_ps=None if sp.clk_to_q_ns is None else sp.clk_to_q_ns * 1e3,
        startpoint=_dut_name(sp.startpoint),
        endpoint=_dut_name(sp.endpoint),
        fo4_ps=fo4.fo4_ps,
        cell_area_um2=m.area_um2,
        cells=m.cells,
        flip_flops=n_ff,
        clock_pin_energy_pj=e_clk,
        clock_ps=clock_ps,
        path_cells=path_cells,
        tools=tl,
        buffered_nets=len(bt.nets),
        tree_buffers=bt.buffers,
        abc_script=m.abc_script,
        key=key,
    )
    write_file(path, json_text(res.to_json(), indent=1), parents=True)
    write_file(path.parent / f"{key}.mapped.v", m.verilog)  # the netlist that was timed, for inspection
    return res


def _dut_name(name: str) -> str:
    """Wrapper instance names back to the design: ``dut/x`` -> ``x``."""
    return name[4:] if name.startswith("dut/") else name


def _generated_memo(
    generator: str,
    params: object,
    top: str,
    lib: LibertyLibrary,
    *,
    clock_ps,
    clock_port,
    false_path_ports,
    cache,
) -> Path:
    h = hashlib.sha256()
    for part in (
        STA_FLOW_VERSION,
        MAP_SCRIPT,
        TIMING_ABC_SCRIPT,
        _buffer.key(),
        generator,
        repr(params),
        top,
        synth_memo.sources_digest(),
        synth_memo.toolchain_id(),
        json.dumps(tools(lib), sort_keys=True),
        lib.sha256,
        repr(clock_ps),
        repr(clock_port),
        repr(tuple(false_path_ports)),
    ):
        h.update(part.encode())
        h.update(b"\0")
    return sta_cache_dir(cache) / "elab" / f"{h.hexdigest()[:32]}.json"


def cached_timing(
    generator: str,
    params: object,
    top: str,
    lib: LibertyLibrary,
    *,
    clock_ps: float | None = None,
    clock_port: str | None = "clk",
    false_path_ports: tuple[str, ...] = (),
    cache: str | os.PathLike | None = None,
) -> StaResult | None:
    """The cached result of a :func:`time_generated` call, or None (nothing is run)."""
    memo = _generated_memo(
        generator,
        params,
        top,
        lib,
        clock_ps=clock_ps,
        clock_port=clock_port,
        false_path_ports=false_path_ports,
        cache=cache,
    )
    try:
        key = json.loads(memo.read_text())["key"]
        if re.fullmatch(r"[0-9a-f]{32}", key):
            return StaResult.from_json(
                json.loads((sta_cache_dir(cache) / f"{key}.json").read_text()), cached=True
            )
    except (OSError, ValueError, KeyError, TypeError):
        pass
    return None


class _TimingOptions(TypedDict):
    """The keyword arguments a :func:`time_generated` call's memo is keyed by."""

    clock_ps: float | None
    clock_port: str | None
    false_path_ports: tuple[str, ...]
    cache: str | os.PathLike | None


def time_generated(
    generator: str,
    params: object,
    top: str,
    make_verilog: Callable[[], str],
    lib: LibertyLibrary,
    *,
    clock_ps: float | None = None,
    clock_port: str | None = "clk",
    false_path_ports: tuple[str, ...] = (),
    cache: str | os.PathLike | None = None,
    use_cache: bool = True,
) -> StaResult:
    """``time_verilog(make_verilog(), top, lib, ...)`` without calling ``make_verilog`` when an
    earlier call with the same generator, parameters, generator sources, Amaranth toolchain,
    tools and library left its result in the cache (cf. ppa.synth_memo.synthesize_generated)."""
    kw = _TimingOptions(
        clock_ps=clock_ps, clock_port=clock_port, false_path_ports=tuple(false_path_ports), cache=cache
    )
    if use_cache:
        hit = cached_timing(generator, params, top, lib, **kw)
        if hit is not None:
            return hit
    memo = _generated_memo(generator, params, top, lib, **kw)
    res = time_verilog(
        make_verilog(),
        top,
        lib,
        clock_ps=clock_ps,
        clock_port=clock_port,
        false_path_ports=false_path_ports,
        cache=cache,
        use_cache=use_cache,
    )
    write_file(
        memo,
        json_text({"key": res.key, "generator": generator, "params": repr(params), "top": top}),
        parents=True,
    )
    return res
