"""Timing from static timing analysis of a real standard-cell library (Liberty + OpenSTA).

Flow, for one Verilog design and one Liberty library L::

    Yosys:   read_verilog; synth -top T -flatten -noalumacc; dfflibmap -liberty L;
             abc -liberty L [-D period_ps when a clock is given]; opt_clean -purge;
             stat -liberty L; insbuf; write_verilog -noattr mapped.v
    Buffer trees (ppa.timing.buffer): ABC buffers only inside combinational logic, so a net driven
             by a flip-flop or a primary input stays one wire; those whose load exceeds 16 x C_in
             of the minimum inverter get a balanced tree of the strongest data buffer (BUFX4),
             each buffer driving <= 16 x its input capacitance (stage effort ~4), before timing.
             The trees' buffers are added to ``cells`` and ``cell_area_um2``.
             Without a clock ABC maps for area (Yosys's default script). With a clock the ABC
             script is TIMING_ABC_SCRIPT: delay-oriented mapping to the period, buffering of
             high-fan-out nets, up/down-sizing. ppa.model asks for FASTEST_CLOCK_PS (1 ps: map
             for minimum delay, the netlist one would close timing on at fmax).
    OpenSTA: the mapped module inside a wrapper that registers every input and output bit with
             the library's D flip-flop (so every path is flop to flop, as inside an array where a
             PE's inputs come from its neighbours' registers), one ideal clock whose edges have
             the slew of the library's own FO4 stage, report_checks -path_delay max.

What is read back (:class:`StaResult`): the worst setup path's data arrival time (clock-to-Q of
the launching flop included), the capturing flop's library setup time, start and end points, the
mapped cell area (``stat -liberty``), and the library's FO4 (:func:`measure_fo4_ps`). The path in
FO4 delays, ``cycle_fo4 = (arrival + setup) / FO4``, is what moves to another node and voltage:
ppa.model multiplies it by the FO4 of the target node (ppa.tech ``gate_delay_ps``).

FO4 (:func:`measure_fo4_ps`): OpenSTA times a chain of 7 minimum inverters of the library (the
smallest-area cell whose function is the inverse of its one input, INVX1 in osu018), every stage
loaded by the next stage and three more copies of the inverter (fan-out 4), driven by an ideal
input. FO4 is the delay of the middle stage (stage 3, by when the slew has settled to the FO4
slew), mean of its rising and falling output. No wire load: the library has none, and OpenSTA
adds none.

Not modelled by this flow (stated): placement and routing (wire capacitance), buffering and
cell sizing beyond ABC's and the flip-flop / input trees above (no placement-aware repair), clock skew and jitter (the
clock is ideal; ppa.model adds a margin), on-chip variation.

Caching: every mapping + timing result is kept on disk under ``<synth cache>/sta/<key>``, keyed by
the tools that produced it (Yosys native or wheel and its version, the OpenSTA version), the
Liberty file's SHA-256, the Verilog's SHA-256, the top module, the clock and the flow version; the
stored result names those tools. :func:`time_generated` also memoises which result a generator
call gives (like ppa.synth.synthesize_generated), so a warm process does not elaborate Amaranth.
"""

from __future__ import annotations

import hashlib
import json
import os
import re
import shutil
import subprocess
import tempfile
from collections.abc import Callable
from dataclasses import asdict, dataclass, field
from functools import lru_cache
from pathlib import Path

from hw.errors import InputError
from ppa.liberty import parse as _lib
from ppa.timing import buffer as _buffer
from ppa import synth as _synth

#: Bump when the flow or the parsing changes, so old cache entries are not reused.
STA_FLOW_VERSION = "2"  # 2: buffer trees on flip-flop / input nets (ppa.timing.buffer)

#: The Debian package ``qflow-tech-osu018``: OSU (Oklahoma State University) 0.18 um standard
#: cells for TSMC 0.18 um, 1.8 V (the file's nom_voltage) [P] osu018_stdcells.lib.
OSU018_PATH = "/usr/share/qflow/tech/osu018/osu018_stdcells.lib"
OSU018_NODE_NM = 180  # [P] "osu018" = OSU cells for the 0.18 um process (qflow-tech-osu018 package description)

#: FO4 chain: stages and the stage whose delay is FO4 (see the module docstring).
FO4_STAGES = 7
FO4_STAGE = 3
FO4_FANOUT = 4

#: Clock period given to OpenSTA when no clock is asked for: only slack depends on it.
_DEFAULT_PERIOD_NS = 100.0


# ------------------------------------------------------------------------------------------------
# the library
# ------------------------------------------------------------------------------------------------

@dataclass(frozen=True)
class Liberty:
    """One Liberty file, as its header states it."""

    path: str
    sha256: str
    library: str  # the library group's name
    nominal_voltage_v: float
    node_nm: int | None  # the process node: from the file, or --liberty-node; None if neither says
    time_unit_s: float  # e.g. 1e-9 for "1ns"
    cap_unit_f: float  # e.g. 1e-12 for (1, pf)
    cells: int

    @property
    def name(self) -> str:
        return self.library

    def describe(self) -> str:
        node = f"{self.node_nm} nm" if self.node_nm else "node unknown"
        return f"{self.library} ({Path(self.path).name}, {node}, {self.nominal_voltage_v:g} V)"

    def to_json(self) -> dict:
        return {"library": self.library, "path": self.path, "sha256": self.sha256, "node_nm": self.node_nm,
                "nominal_voltage_v": self.nominal_voltage_v}


_NODE_IN_TEXT = re.compile(r"(?<![0-9.])(\d{1,3})\s*nm\b|(?<![0-9.])(0?\.\d{2,3})\s*u(?:m|icron)\b", re.I)


def _node_from_file(top: _lib.Group) -> int | None:
    """A node the file itself states, in the library's ``comment``, ``technology`` or
    ``revision``-like free text attributes (e.g. "45nm", "0.18um"); None if none says."""
    texts = []
    for k in ("comment", "technology", "revision", "process"):
        for v in top.attrs.get(k, []):
            texts.append(" ".join(v) if isinstance(v, list) else str(v))
    for t in texts:
        m = _NODE_IN_TEXT.search(t)
        if m:
            return int(m.group(1)) if m.group(1) else int(round(float(m.group(2)) * 1000))
    return None


@lru_cache(maxsize=16)
def _parse_cached(path: str, digest: str) -> _lib.Group:
    text = Path(path).read_bytes().decode("utf-8")
    return _lib.parse(text, where=path)


def _library_group(path: str, digest: str) -> _lib.Group:
    root = _parse_cached(path, digest)
    libs = root.sub("library")
    if not libs:
        raise InputError("no library( ... ) group: not a Liberty file", where=path)
    return libs[0]


#: Largest Liberty file read. [A] 2 GiB: PDK libraries with NLDM tables are tens to hundreds of MB.
MAX_LIBERTY_BYTES = 2 * 2**30


def load_liberty(path: str | os.PathLike, node_nm: int | None = None) -> Liberty:
    """Read a Liberty file's header: library name, nom_voltage, time and capacitance units, the
    node when the file states it (``node_nm`` overrides, e.g. from ``--liberty-node``).

    A missing, unreadable, non-UTF-8 or malformed file (no ``library(`` group, no cells, no
    nom_voltage, unreadable units) raises InputError naming the path."""
    p = str(path)
    where = p
    if node_nm is not None and (isinstance(node_nm, bool) or not isinstance(node_nm, int) or not 1 <= node_nm <= 1000):
        raise InputError(f"must be a node in nm (1..1000), got {node_nm!r}", where="--liberty-node")
    try:
        if Path(p).exists() and not Path(p).is_file():  # a FIFO or a device (/dev/zero) would never end
            raise InputError("not a regular file", where=where)
        if Path(p).exists() and Path(p).stat().st_size > MAX_LIBERTY_BYTES:
            raise InputError(f"larger than {MAX_LIBERTY_BYTES // 2**30} GiB", where=where)
        raw = Path(p).read_bytes()
    except OSError as exc:
        raise InputError(f"cannot read Liberty file: {exc.strerror or exc}", where=where) from None
    try:
        raw.decode("utf-8")
    except UnicodeDecodeError as exc:
        raise InputError(f"not a UTF-8 text file ({exc.reason} at byte {exc.start})", where=where) from None
    digest = hashlib.sha256(raw).hexdigest()
    lib = _library_group(p, digest)
    cells = lib.sub("cell")
    if not cells:
        raise InputError("the library has no cell groups", where=where)
    nv = lib.attr("nom_voltage")
    if nv is None:
        raise InputError("no nom_voltage in the library header", where=where)
    try:
        v = float(nv)
    except ValueError:
        raise InputError(f"nom_voltage {nv!r} is not a number", where=where) from None
    if not 0.1 <= v <= 10:
        raise InputError(f"nom_voltage {v:g} V is not a plausible supply", where=where)
    tu = lib.attr("time_unit")
    if tu is None:
        raise InputError("no time_unit in the library header", where=where)
    t_s = _lib.unit_scale(str(tu), "s", where)
    cu = lib.attr("capacitive_load_unit")
    if not isinstance(cu, list) or len(cu) != 2:
        raise InputError("no capacitive_load_unit (value, unit) in the library header", where=where)
    try:
        c_f = float(cu[0]) * _lib.unit_scale(cu[1], "f", where)
    except ValueError:
        raise InputError(f"capacitive_load_unit {cu!r} unreadable", where=where) from None
    node = node_nm if node_nm is not None else _node_from_file(lib)
    return Liberty(path=str(Path(p).resolve()), sha256=digest, library=lib.name, nominal_voltage_v=v,
                   node_nm=node, time_unit_s=t_s, cap_unit_f=c_f, cells=len(cells))


def default_liberty_path() -> str | None:
    """Where the Debian ``qflow-tech-osu018`` package put osu018_stdcells.lib, or None."""
    if os.path.isfile(OSU018_PATH):
        return OSU018_PATH
    dpkg = shutil.which("dpkg")
    if dpkg:
        try:
            out = subprocess.run([dpkg, "-L", "qflow-tech-osu018"], capture_output=True, text=True, timeout=20).stdout
        except (OSError, subprocess.SubprocessError):
            return None
        for line in out.splitlines():
            if line.endswith("/osu018_stdcells.lib") and os.path.isfile(line):
                return line
    return None


def default_liberty() -> Liberty | None:
    """The OSU 0.18 um library (180 nm, 1.8 V) when the qflow-tech-osu018 package is installed."""
    p = default_liberty_path()
    return load_liberty(p, OSU018_NODE_NM) if p else None


@lru_cache(maxsize=4)
def _find_sta_cached(path_env: str) -> tuple[str, str] | None:
    exe = shutil.which("sta")
    if not exe:
        return None
    try:
        out = subprocess.run([exe, "-version"], capture_output=True, text=True, timeout=30)
    except (OSError, subprocess.SubprocessError):
        return None
    ver = (out.stdout or out.stderr).strip().splitlines()
    if out.returncode != 0 or not ver or not re.match(r"^\d+(\.\d+)+", ver[0]):
        return None  # some other program called "sta"
    return exe, ver[0].strip()


def find_sta() -> tuple[str, str] | None:
    """OpenSTA on PATH: (executable, version, e.g. "2.0.17"), or None."""
    return _find_sta_cached(os.environ.get("PATH", ""))


def timing_available(lib: Liberty | None = None) -> bool:
    """OpenSTA and a library (``lib``, else the default) are both present."""
    return find_sta() is not None and (lib is not None or default_liberty_path() is not None)


def tools(lib: Liberty) -> dict:
    """The tools a timing result depends on (what the cache is keyed by and what results name)."""
    sta = find_sta()
    if sta is None:
        raise InputError("OpenSTA (sta) is not on PATH", where="ppa.timing.sta")
    return {"yosys": _synth.yosys_id(), "opensta": f"OpenSTA {sta[1]}", "liberty": lib.library,
            "liberty_sha256": lib.sha256}


# ------------------------------------------------------------------------------------------------
# cells the flow needs from the library
# ------------------------------------------------------------------------------------------------

def _pins(cell: _lib.Group) -> dict[str, _lib.Group]:
    out = {}
    for pg in cell.sub("pin"):
        for nm in pg.args:
            out[nm] = pg
    return out


def _cells(lib: Liberty) -> list[_lib.Group]:
    return _library_group(lib.path, lib.sha256).sub("cell")


def _cell(lib: Liberty, name: str) -> _lib.Group:
    for c in _cells(lib):
        if c.name == name:
            return c
    raise InputError(f"no cell {name} in the library", where=lib.path)


def _area(c: _lib.Group) -> float:
    try:
        return float(c.attr("area", "inf"))
    except ValueError:
        return float("inf")


def inverter_cell(lib: Liberty) -> tuple[str, str, str]:
    """(cell, input pin, output pin) of the smallest-area inverter of the library."""
    best = _one_in_one_out(lib, lambda a: (f"!{a}", f"(!{a})", f"{a}'", f"({a}')", f"!({a})"))
    if best is None:
        raise InputError("the library has no inverter (a cell whose function is !A of its one input)", where=lib.path)
    return best


def _one_in_one_out_cells(lib: Liberty, want) -> list[tuple[_lib.Group, str, str]]:
    """(cell group, input pin, output pin) of every usable one-input one-output cell whose
    function (spaces and quotes removed) is in ``want(input pin)``."""
    out = []
    for c in _cells(lib):
        if c.attr("dont_use") == "true":
            continue
        pins = _pins(c)
        ins = [n for n, g in pins.items() if g.attr("direction") == "input"]
        outs = [n for n, g in pins.items() if g.attr("direction") == "output"]
        if len(ins) != 1 or len(outs) != 1:
            continue
        fn = str(pins[outs[0]].attr("function", "")).replace(" ", "").replace('"', "")
        if fn in want(ins[0]):
            out.append((c, ins[0], outs[0]))
    return out


def _one_in_one_out(lib: Liberty, want) -> tuple[str, str, str] | None:
    """The smallest-area cell of :func:`_one_in_one_out_cells` (first of equals), or None."""
    best = None
    for c, a, y in _one_in_one_out_cells(lib, want):
        if best is None or _area(c) < best[0]:
            best = (_area(c), c.name, a, y)
    return None if best is None else best[1:]


def _is_buffer(a: str) -> tuple[str, str]:
    return a, f"({a})"


def buffer_cell(lib: Liberty) -> tuple[str, str, str]:
    """(cell, input pin, output pin) of the smallest-area non-inverting buffer of the library."""
    b = _one_in_one_out(lib, _is_buffer)
    if b is None:
        raise InputError("the library has no buffer (a cell whose function is its one input)", where=lib.path)
    return b


def buffer_cells(lib: Liberty) -> list[tuple[_lib.Group, str, str]]:
    """(cell group, input pin, output pin) of every usable non-inverting buffer of the library (a
    cell whose function is its one input); raises InputError when it has none."""
    out = _one_in_one_out_cells(lib, _is_buffer)
    if not out:
        buffer_cell(lib)  # raises the library's InputError
    return out


def flop_cells(lib: Liberty) -> dict[str, tuple[str, str, str]]:
    """Cells with an ``ff`` group: name -> (clock pin, data pin or "", output pin or "")."""
    out = {}
    for c in _cells(lib):
        ffs = c.sub("ff")
        if not ffs:
            continue
        ff = ffs[0]
        clk = str(ff.attr("clocked_on", "")).strip('"').strip()
        nxt = str(ff.attr("next_state", "")).strip('"').strip()
        state = set(ff.args)
        q = ""
        for n, g in _pins(c).items():
            if g.attr("direction") == "output" and str(g.attr("function", "")).strip('"').strip() in state:
                q = n
                break
        out[c.name] = (clk, nxt if re.fullmatch(r"\w+", nxt) else "", q)
    return out


def register_cell(lib: Liberty) -> tuple[str, str, str, str]:
    """(cell, clock pin, D pin, Q pin) of the smallest plain positive-edge D flip-flop (no set,
    reset or enable): the wrapper's input / output registers."""
    best = None
    for name, (clk, d, q) in flop_cells(lib).items():
        c = _cell(lib, name)
        ff = c.sub("ff")[0]
        if not d or not q or not re.fullmatch(r"\w+", clk) or ff.attr("clear") or ff.attr("preset"):
            continue
        if len([n for n, g in _pins(c).items() if g.attr("direction") == "input"]) != 2:
            continue
        if best is None or _area(c) < best[0]:
            best = (_area(c), name, clk, d, q)
    if best is None:
        raise InputError("the library has no plain D flip-flop", where=lib.path)
    return best[1:]


def clock_pin_energy_pj(lib: Liberty, cell: str, slew_ns: float) -> float:
    """Internal energy drawn at a flip-flop's clock pin per clock cycle (one rising + one falling
    edge), pJ, at input slew ``slew_ns``: ppa.liberty.energy.pin_internal_pj of the clock pin
    (several ``internal_power`` groups, e.g. ``when`` conditions, are averaged)."""
    from ppa.liberty.energy import pin_internal_pj

    clk = flop_cells(lib).get(cell, ("", "", ""))[0]
    if not clk:
        raise InputError(f"{cell} is not a flip-flop", where=lib.path)
    rise, fall = pin_internal_pj(lib, cell, clk, slew_ns=slew_ns)
    return rise + fall


def _template(lib: Liberty, name: str) -> _lib.Group:
    top = _library_group(lib.path, lib.sha256)
    for kind in ("power_lut_template", "lu_table_template"):
        for g in top.sub(kind):
            if g.name == name:
                return g
    raise InputError(f"no table template {name}", where=lib.path)


# ------------------------------------------------------------------------------------------------
# Yosys: map to the library
# ------------------------------------------------------------------------------------------------

MAP_SCRIPT = ("read_verilog {src}; synth -top {top} -flatten -noalumacc; dfflibmap -liberty {lib}; abc -liberty {lib}{D}; "
              "opt_clean -purge; tee -o {stat} stat -liberty {lib}; insbuf -buf {buf}; write_verilog -noattr {out}")
# ``insbuf`` (after ``stat``, so the area is the mapped logic's) turns the netlist's remaining
# wire-to-wire assignments (sign-extension bits of an output driven by another output bit) into
# buffer cells: OpenSTA 2.0's Verilog reader rejects ``assign {a, b} = ...``.

#: The ABC script of the timing-driven mapping (a clock given): delay-oriented mapping to the
#: target, then ABC's buffering of high-fan-out nets and gate up/down-sizing to the target.
#: Yosys 0.23's own ``abc -D`` script passes the target to ``&nf`` only: it neither buffers nor
#: sizes, so an unbuffered net (e.g. a metadata bit selecting 32 multiplexer inputs, 0.7 pF on a
#: NAND2X1) dominates its paths; ABC's ``buffer`` fails after ``&nf`` here, so ``map`` is used.
TIMING_ABC_SCRIPT = "+strash;dch;map,-D,{D};buffer;upsize,-D,{D};dnsize,-D,{D}"
#: The same without ``dch`` (choice computation): Yosys 0.23's ABC crashes (no output.blif) on the
#: float arrays' columns (hw/fp.py adders, e.g. the 2 x 1 FP8 column) with ``dch`` and then
#: ``buffer``; without it the mapping, buffering and sizing succeed. Used only after that crash.
TIMING_ABC_SCRIPT_NO_DCH = "+strash;map,-D,{D};buffer;upsize,-D,{D};dnsize,-D,{D}"
#: Yosys 0.23's ABC also crashes in ``buffer`` (and ``upsize``) without ``dch`` on some float
#: columns (the 2 x 1 FP8 E4M3 sparse column and the BF16 dense column, session 4); with ``buffer
#: -p`` (primary inputs, i.e. the flip-flop outputs and ports ABC sees, buffered too) after
#: ``topo`` it succeeds, and sizing runs as in TIMING_ABC_SCRIPT.
TIMING_ABC_SCRIPT_BUFFER_PI = "+strash;map,-D,{D};topo;buffer,-p;upsize,-D,{D};dnsize,-D,{D}"
#: The last resort: delay-oriented mapping alone (unbuffered, unsized inside the logic; the
#: flip-flop / input trees of ppa.timing.buffer are still added), so its STA path is pessimistic.
#: ``StaResult.abc_script`` records which script mapped a result.
TIMING_ABC_SCRIPT_MAP_ONLY = "+strash;map,-D,{D}"

#: The clock ppa.model asks the mapper for [A]: 1 ps is unreachable, so ABC maps, buffers and
#: sizes for minimum delay -- the netlist a team would close timing on at fmax. Measured on the
#: INT8 2:4 sparse PE (osu018): targets 1 to 4000 ps give the same netlist (5.0 ns arrival from
#: its ports, area 71,140 um^2 against 47,588 area-mapped with an 8.5 ns arrival).
FASTEST_CLOCK_PS = 1.0


@dataclass
class Mapped:
    verilog: str  # the mapped netlist (write_verilog -noattr)
    cells: dict[str, int]
    area_um2: float  # stat -liberty "Chip area" (the library's area unit, um^2 for osu018)
    abc_script: str = ""  # the ABC script that mapped it ("" = Yosys's default area mapping)


def map_to_liberty(verilog: str, top: str, lib: Liberty, *, clock_ps: float | None = None) -> Mapped:
    """Yosys maps ``verilog`` to ``lib`` (see the module docstring). Not cached: see time_verilog."""
    if not re.fullmatch(r"[A-Za-z_][A-Za-z0-9_$]*", top):
        raise InputError(f"not a Verilog module name: {top!r}", where="ppa.timing.sta top")
    argv, _tool = _synth.find_yosys()
    with tempfile.TemporaryDirectory(prefix="sparsepe-sta-") as tmp:
        d = Path(tmp)
        (d / "design.v").write_text(verilog)
        shutil.copyfile(lib.path, d / "cells.lib")  # the yowasp Yosys sees only its working directory
        buf, a, y = buffer_cell(lib)
        for abc_script in (TIMING_ABC_SCRIPT, TIMING_ABC_SCRIPT_NO_DCH, TIMING_ABC_SCRIPT_BUFFER_PI,
                           TIMING_ABC_SCRIPT_MAP_ONLY):
            D = ""
            if clock_ps:
                d_ps = f"{clock_ps:.6g}"
                D = f" -D {d_ps} -script {abc_script.format(D=d_ps)}"
            script = MAP_SCRIPT.format(src="design.v", top=top, lib="cells.lib", D=D, stat="stat.txt", out="mapped.v",
                                       buf=f"{buf} {a} {y}")
            proc = subprocess.run([*argv, "-q", "-p", script], capture_output=True, text=True, cwd=d)
            if not (proc.returncode != 0 and clock_ps and "output.blif" in (proc.stderr + proc.stdout)):
                break
        if proc.returncode != 0:
            tail = (proc.stderr or proc.stdout).strip().splitlines()[-3:]
            raise InputError(f"Yosys failed mapping {top} to {lib.library}: {' | '.join(tail)}", where="ppa.timing.sta")
        stat = (d / "stat.txt").read_text()
        mapped = (d / "mapped.v").read_text()
    area = re.findall(r"Chip area for (?:module|top module) '\\?\S+?':\s+([0-9.]+)", stat)
    cells: dict[str, int] = {}
    sect = stat.split("Number of cells:")[-1]
    for m in re.finditer(r"^\s+(\S+)\s+(\d+)\s*$", sect, re.M):
        cells[m.group(1)] = int(m.group(2))
    return Mapped(mapped, dict(sorted(cells.items())), float(area[-1]) if area else 0.0,
                  abc_script.format(D="D") if clock_ps else "")


# ------------------------------------------------------------------------------------------------
# OpenSTA
# ------------------------------------------------------------------------------------------------

_PORT_DECL = re.compile(r"^\s*(input|output|inout)\s+(?:\[(\d+):(\d+)\]\s*)?([A-Za-z_][A-Za-z0-9_$]*)\s*;", re.M)


def module_ports(verilog: str, top: str) -> list[tuple[str, str, int, int]]:
    """(direction, name, msb, lsb) of ``top``'s ports in a Yosys-written netlist."""
    m = re.search(rf"^module\s+{re.escape(top)}\s*\(.*?\);(.*?)^endmodule", verilog, re.M | re.S)
    if not m:
        raise InputError(f"module {top} not found in the mapped netlist", where="ppa.timing.sta")
    out = []
    for d, msb, lsb, name in _PORT_DECL.findall(m.group(1)):
        out.append((d, name, int(msb) if msb else 0, int(lsb) if lsb else 0))
    return out


def register_wrapper(mapped: str, top: str, lib: Liberty, clock_port: str | None) -> str:
    """A module ``sta_wrap`` that instantiates ``top`` and registers each of its input and output
    bits with the library's D flip-flop, on clock port ``clk`` (joined to ``clock_port``)."""
    cell, cp, dp, qp = register_cell(lib)
    ports = module_ports(mapped, top)
    if clock_port is not None and not any(n == clock_port and d == "input" for d, n, *_ in ports):
        raise InputError(f"module {top} has no input {clock_port}", where="ppa.timing.sta")
    decl, body, conns = ["input sta_clk;"], [], []
    names = ["sta_clk"]
    k = 0
    for d, n, msb, lsb in ports:
        if d == "inout":
            raise InputError(f"inout port {n} is not timed", where="ppa.timing.sta")
        if n == clock_port:
            conns.append(f".{n}(sta_clk)")
            continue
        w = abs(msb - lsb) + 1
        rng = f"[{msb}:{lsb}] " if (msb, lsb) != (0, 0) else ""
        names.append(f"p_{n}")
        decl.append(f"{d} {rng}p_{n};")
        decl.append(f"wire {rng}w_{n};")
        conns.append(f".{n}(w_{n})")
        lo = min(msb, lsb)
        for b in range(lo, lo + w):
            sel = f"[{b}]" if rng else ""
            src, dst = (f"p_{n}{sel}", f"w_{n}{sel}") if d == "input" else (f"w_{n}{sel}", f"p_{n}{sel}")
            body.append(f"{cell} sta_r{k} (.{cp}(sta_clk), .{dp}({src}), .{qp}({dst}));")
            k += 1
    return (f"module sta_wrap({', '.join(names)});\n" + "\n".join(decl) + "\n"
            + f"{top} dut ({', '.join(conns)});\n" + "\n".join(body) + "\nendmodule\n")


_ROW = re.compile(r"^\s*((?:-?[0-9.]+\s+)+)([\^v])\s+(\S+)\s+\((\S+)\)\s*$")


@dataclass
class PathStage:
    pin: str  # instance/pin or port
    cell: str  # library cell, or "in"/"out" for ports
    edge: str  # "^" rise, "v" fall
    cap_pf: float | None  # load on an output pin
    slew_ns: float
    delay_ns: float  # incremental
    arrival_ns: float


@dataclass
class StaPath:
    startpoint: str
    endpoint: str
    arrival_ns: float
    setup_ns: float  # library setup time of the capturing flop (0 when the end is a port)
    clk_to_q_ns: float | None
    stages: list[PathStage]
    report: str


def _run_sta(files: dict[str, str], script: str) -> str:
    sta = find_sta()
    if sta is None:
        raise InputError("OpenSTA (sta) is not on PATH", where="ppa.timing.sta")
    with tempfile.TemporaryDirectory(prefix="sparsepe-opensta-") as tmp:
        d = Path(tmp)
        for name, text in files.items():
            (d / name).write_text(text)
        (d / "run.tcl").write_text(script + "\nexit\n")
        proc = subprocess.run([sta[0], "-no_init", "-no_splash", "-exit", "run.tcl"], capture_output=True,
                              text=True, cwd=d, timeout=600)
    out = proc.stdout + proc.stderr
    errs = [ln for ln in out.splitlines() if ln.startswith("Error")]
    if proc.returncode != 0 or errs:
        raise InputError(f"OpenSTA failed: {' | '.join((errs or out.strip().splitlines())[-3:])}", where="ppa.timing.sta")
    return out


def parse_path(report: str) -> StaPath:
    """One ``report_checks -fields {slew cap input_pins} -digits N`` path (times in ns, caps in pF)."""
    sp = re.search(r"^Startpoint:\s+(\S+)", report, re.M)
    ep = re.search(r"^Endpoint:\s+(\S+)", report, re.M)
    arr = re.search(r"^\s*(-?[0-9.]+)\s+data arrival time", report, re.M)
    if not (sp and ep and arr):
        raise InputError("OpenSTA reported no timing path", where="ppa.timing.sta")
    setup = re.search(r"^\s*(-?[0-9.]+)\s+(-?[0-9.]+)\s+library setup time", report, re.M)
    stages = []
    data_part = report[: arr.start()]
    for line in data_part.splitlines():
        m = _ROW.match(line)
        if not m:
            continue
        nums = [float(x) for x in m.group(1).split()]
        if len(nums) == 4:
            cap, slew, delay, t = nums
        elif len(nums) == 3:
            cap, (slew, delay, t) = None, nums
        else:
            continue
        stages.append(PathStage(m.group(3), m.group(4), m.group(2), cap, slew, delay, t))
    start = sp.group(1)
    c2q = None
    for s in stages:
        if s.pin.startswith(start + "/") and s.cap_pf is not None:
            c2q = s.delay_ns
            break
    return StaPath(start, ep.group(1), float(arr.group(1)), -float(setup.group(1)) if setup else 0.0, c2q, stages,
                   report)


def _sta_header(lib_file: str = "cells.lib") -> str:
    return f"read_liberty {lib_file}\nset_cmd_units -time ns -capacitance pF -digits 6\n"


_REPORT = "report_checks -path_delay max -digits 6 -fields {slew cap input_pins}"


def time_mapped(mapped: str, top: str, lib: Liberty, *, clock_port: str | None = "clk",
                clock_slew_ns: float, false_path_ports: tuple[str, ...] = (),
                period_ns: float = _DEFAULT_PERIOD_NS) -> StaPath:
    """OpenSTA's worst setup path of a mapped netlist inside the register wrapper."""
    wrap = register_wrapper(mapped, top, lib, clock_port)
    lines = [_sta_header(), "read_verilog mapped.v", "read_verilog wrap.v", "link_design sta_wrap",
             f"create_clock -name clk -period {period_ns:.6f} [get_ports sta_clk]",
             f"set_clock_transition {clock_slew_ns:.6f} [get_clocks clk]",
             "set_input_delay 0 -clock clk [delete_from_list [all_inputs] [get_ports sta_clk]]",
             "set_output_delay 0 -clock clk [all_outputs]"]
    cell, cp, dp, qp = register_cell(lib)
    ports = {n: (d, msb, lsb) for d, n, msb, lsb in module_ports(mapped, top)}
    k = 0
    fp_regs = []
    for d, n, msb, lsb in module_ports(mapped, top):
        if n == clock_port:
            continue
        for _ in range(abs(msb - lsb) + 1):
            if n in false_path_ports and d == "output":
                fp_regs.append(f"sta_r{k}/{dp}")
            k += 1
    for n in false_path_ports:
        if n not in ports:
            raise InputError(f"module {top} has no port {n}", where="ppa.timing.sta")
    if fp_regs:
        lines.append(f"set_false_path -to [get_pins {{{' '.join(fp_regs)}}}]")
    lines.append(_REPORT)
    out = _run_sta({"cells.lib": Path(lib.path).read_text(), "mapped.v": mapped, "wrap.v": wrap}, "\n".join(lines))
    sp = parse_path(out)
    reg_names = _wrapper_register_names(mapped, top, clock_port)
    sp.startpoint, sp.endpoint = reg_names.get(sp.startpoint, sp.startpoint), reg_names.get(sp.endpoint, sp.endpoint)
    return sp


def _wrapper_register_names(mapped: str, top: str, clock_port: str | None) -> dict[str, str]:
    """``sta_rK`` -> ``"in_act[3] (input register)"`` for the wrapper's registers, ``dut/x`` -> ``x``."""
    names, k = {}, 0
    for d, n, msb, lsb in module_ports(mapped, top):
        if n == clock_port:
            continue
        lo = min(msb, lsb)
        for b in range(lo, lo + abs(msb - lsb) + 1):
            bit = f"{n}[{b}]" if (msb, lsb) != (0, 0) else n
            names[f"sta_r{k}"] = f"{bit} ({d} register)"
            k += 1
    return names


def time_netlist(netlist: str, top: str, lib: Liberty, *, input_slew_ns: float, output_load_pf: float) -> StaPath:
    """OpenSTA's worst path through a structural netlist of library cells, port to port: every
    input arrives at 0 with slew ``input_slew_ns``, every output carries ``output_load_pf``
    (a virtual clock, no wrapper registers). For checking OpenSTA against hand calculation."""
    script = [_sta_header(), "read_verilog netlist.v", f"link_design {top}", "create_clock -name vclk -period 100",
              "set_input_delay 0 -clock vclk [all_inputs]", "set_output_delay 0 -clock vclk [all_outputs]",
              f"set_input_transition {input_slew_ns:.6f} [all_inputs]", f"set_load {output_load_pf:.6f} [all_outputs]",
              _REPORT]
    return parse_path(_run_sta({"cells.lib": Path(lib.path).read_text(), "netlist.v": netlist}, "\n".join(script)))


@dataclass(frozen=True)
class Fo4:
    fo4_ps: float
    rise_ps: float
    fall_ps: float
    slew_ns: float  # mean output slew of the measured stage
    cell: str


def fo4_netlist(lib: Liberty, stages: int = FO4_STAGES, fanout: int = FO4_FANOUT) -> str:
    inv, a, y = inverter_cell(lib)
    body = [f"module fo4_chain(in, out);", "input in;", "output out;"]
    body.append("wire " + ", ".join(f"n{i}" for i in range(1, stages + 1)) + ";")
    body.append("wire " + ", ".join(f"d{i}_{j}" for i in range(stages) for j in range(fanout - 1)) + ";")
    prev = "in"
    for i in range(stages):
        body.append(f"{inv} s{i} (.{a}({prev}), .{y}(n{i + 1}));")
        for j in range(fanout - 1):
            body.append(f"{inv} l{i}_{j} (.{a}(n{i + 1}), .{y}(d{i}_{j}));")
        prev = f"n{i + 1}"
    body.append(f"assign out = n{stages};")
    body.append("endmodule")
    return "\n".join(body) + "\n"


@lru_cache(maxsize=16)
def _fo4(path: str, digest: str) -> Fo4:
    lib = load_liberty(path)
    inv = inverter_cell(lib)[0]
    script = [_sta_header(), "read_verilog fo4.v", "link_design fo4_chain",
              "create_clock -name vclk -period 100",
              "set_input_delay 0 -clock vclk [get_ports in]", "set_output_delay 0 -clock vclk [get_ports out]",
              "puts \"== rise\"", _REPORT + " -rise_to [get_ports out]",
              "puts \"== fall\"", _REPORT + " -fall_to [get_ports out]"]
    out = _run_sta({"cells.lib": Path(path).read_text(), "fo4.v": fo4_netlist(lib)}, "\n".join(script))
    delays, slews = {}, []
    for part in out.split("== ")[1:]:
        path_ = parse_path(part)
        st = [s for s in path_.stages if s.pin == f"s{FO4_STAGE}/" + inverter_cell(lib)[2]]
        if len(st) != 1:
            raise InputError("FO4 chain: middle stage not on the reported path", where="ppa.timing.sta")
        delays["rise" if st[0].edge == "^" else "fall"] = st[0].delay_ns * 1e3
        slews.append(st[0].slew_ns)
    if set(delays) != {"rise", "fall"}:
        raise InputError("FO4 chain: rising and falling stage delays not both reported", where="ppa.timing.sta")
    return Fo4((delays["rise"] + delays["fall"]) / 2, delays["rise"], delays["fall"], sum(slews) / len(slews), inv)


def measure_fo4(lib: Liberty) -> Fo4:
    """The library's FO4 as OpenSTA times it (see the module docstring); memoised per file digest."""
    return _fo4(lib.path, lib.sha256)


def measure_fo4_ps(lib: Liberty) -> float:
    """FO4 delay of ``lib`` in ps: the middle stage of a 7-stage chain of the library's smallest
    inverter, each stage loaded by four copies of itself, mean of rise and fall (OpenSTA)."""
    return measure_fo4(lib).fo4_ps


# ------------------------------------------------------------------------------------------------
# the result and its cache
# ------------------------------------------------------------------------------------------------

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
    fo4_ps: float  # the library's own FO4 (measure_fo4_ps)
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
    def from_json(cls, d: dict, *, cached: bool = False) -> "StaResult":
        kw = {k: d[k] for k in cls.__dataclass_fields__ if k in d and k != "cached"}
        kw["path_cells"] = tuple(kw.get("path_cells", ()))
        return cls(**kw, cached=cached)

    def details(self) -> dict:
        """The ``details.sta`` block of ``sparsepe ppa --json``."""
        return {"library": self.library, "critical_path_ps": self.critical_path_ps, "setup_ps": self.setup_ps,
                "critical_path_fo4": self.path_fo4, "cycle_fo4": self.cycle_fo4, "fo4_ps": self.fo4_ps,
                "startpoint": self.startpoint, "endpoint": self.endpoint, "top": self.top,
                "cell_area_um2": self.cell_area_um2, "flip_flops": self.flip_flops,
                "clock_pin_energy_pj": self.clock_pin_energy_pj, "clk_to_q_ps": self.clk_to_q_ps,
                "buffered_nets": self.buffered_nets, "tree_buffers": self.tree_buffers, "abc_script": self.abc_script,
                "tools": dict(self.tools)}


def sta_cache_dir(cache: str | os.PathLike | None = None) -> Path:
    """``<ppa.synth cache dir>/sta``."""
    return _synth.cache_dir(cache) / "sta"


def _sha(text: str) -> str:
    return hashlib.sha256(text.encode()).hexdigest()


def _result_key(verilog_sha: str, top: str, lib: Liberty, clock_ps: float | None, tl: dict,
                 false_path_ports: tuple[str, ...]) -> str:
    h = hashlib.sha256()
    for part in (STA_FLOW_VERSION, MAP_SCRIPT, TIMING_ABC_SCRIPT, _buffer.key(), json.dumps(tl, sort_keys=True), lib.sha256, verilog_sha, top,
                 repr(clock_ps), repr(tuple(false_path_ports))):
        h.update(part.encode())
        h.update(b"\0")
    return h.hexdigest()[:32]


def time_verilog(verilog: str, top: str, lib: Liberty, *, clock_ps: float | None = None,
                 clock_port: str | None = "clk", false_path_ports: tuple[str, ...] = (),
                 cache: str | os.PathLike | None = None, use_cache: bool = True) -> StaResult:
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
    period = max(_DEFAULT_PERIOD_NS, (clock_ps or 0) / 1e3)
    sp = time_mapped(m.verilog, top, lib, clock_port=clock_port, clock_slew_ns=fo4.slew_ns,
                     false_path_ports=tuple(false_path_ports), period_ns=period)
    flops = flop_cells(lib)
    n_ff = sum(n for c, n in m.cells.items() if c in flops)
    e_clk = sum(n * clock_pin_energy_pj(lib, c, fo4.slew_ns) for c, n in m.cells.items() if c in flops)
    path_cells = tuple(s.cell for s in sp.stages if s.cap_pf is not None and s.cell not in ("in", "out"))
    res = StaResult(
        top=top, library=lib.library, critical_path_ps=sp.arrival_ns * 1e3, setup_ps=sp.setup_ns * 1e3,
        clk_to_q_ps=None if sp.clk_to_q_ns is None else sp.clk_to_q_ns * 1e3,
        startpoint=_dut_name(sp.startpoint), endpoint=_dut_name(sp.endpoint), fo4_ps=fo4.fo4_ps,
        cell_area_um2=m.area_um2, cells=m.cells, flip_flops=n_ff, clock_pin_energy_pj=e_clk, clock_ps=clock_ps,
        path_cells=path_cells, tools=tl, buffered_nets=len(bt.nets), tree_buffers=bt.buffers, abc_script=m.abc_script, key=key,
    )
    path.parent.mkdir(parents=True, exist_ok=True)
    _synth._write_atomic(path, json.dumps(res.to_json(), indent=1))
    _synth._write_atomic(path.parent / f"{key}.mapped.v", m.verilog)  # the netlist that was timed, for inspection
    return res


def _dut_name(name: str) -> str:
    """Wrapper instance names back to the design: ``dut/x`` -> ``x``."""
    return name[4:] if name.startswith("dut/") else name


def time_generated(generator: str, params: object, top: str, make_verilog: Callable[[], str], lib: Liberty, *,
                   clock_ps: float | None = None, clock_port: str | None = "clk",
                   false_path_ports: tuple[str, ...] = (), cache: str | os.PathLike | None = None,
                   use_cache: bool = True) -> StaResult:
    """``time_verilog(make_verilog(), top, lib, ...)`` without calling ``make_verilog`` when an
    earlier call with the same generator, parameters, generator sources, Amaranth toolchain,
    tools and library left its result in the cache (cf. ppa.synth.synthesize_generated)."""
    tl = tools(lib)
    h = hashlib.sha256()
    for part in (STA_FLOW_VERSION, MAP_SCRIPT, TIMING_ABC_SCRIPT, _buffer.key(), generator, repr(params), top, _synth.sources_digest(),
                 _synth._toolchain_id(), json.dumps(tl, sort_keys=True), lib.sha256, repr(clock_ps),
                 repr(clock_port), repr(tuple(false_path_ports))):
        h.update(part.encode())
        h.update(b"\0")
    memo = sta_cache_dir(cache) / "elab" / f"{h.hexdigest()[:32]}.json"
    if use_cache and memo.exists():
        try:
            key = json.loads(memo.read_text())["key"]
            if re.fullmatch(r"[0-9a-f]{32}", key):
                return StaResult.from_json(json.loads((sta_cache_dir(cache) / f"{key}.json").read_text()), cached=True)
        except (OSError, ValueError, KeyError, TypeError):
            pass
    res = time_verilog(make_verilog(), top, lib, clock_ps=clock_ps, clock_port=clock_port,
                       false_path_ports=false_path_ports, cache=cache, use_cache=use_cache)
    memo.parent.mkdir(parents=True, exist_ok=True)
    _synth._write_atomic(memo, json.dumps({"key": res.key, "generator": generator, "params": repr(params), "top": top}))
    return res


# ------------------------------------------------------------------------------------------------
# the shipped hardware
# ------------------------------------------------------------------------------------------------

def sta_pe(params, sparse: bool, lib: Liberty, *, clock_ps: float | None = None, cache=None) -> StaResult:
    """STA of the standalone PE (hw.pe.SparsePE or DensePE) at its pipeline depth."""
    from ppa import activity

    gen = "hw.pe.SparsePE" if sparse else "hw.pe.DensePE"
    return time_generated(gen, params, activity.pe_name(sparse), lambda: activity.pe_verilog(params, sparse), lib,
                          clock_ps=clock_ps, cache=cache)


def sta_array_column(params, rows: int, lib: Liberty, *, clock_ps: float | None = None, cache=None,
                     kind: str = "sparse", double_buffer: bool = False) -> StaResult:
    """STA of an ``rows`` x 1 column of hw.array.SparseArray (weight-stationary) with ``kind`` cells
    (sparse, dense, dense_path; ``double_buffer``: the double-buffered array), the stage the array
    model characterises (ppa.array_cost.ArrayFacts). The ``out_meta_err`` OR chain is static while
    the weights are held and is excluded as a false path, as ppa.model treats it (double-buffered,
    the error bits are registered beside the partial sums)."""
    from ppa.array_cost import _MODULE, _check

    if isinstance(rows, bool) or not isinstance(rows, int) or rows < 1:
        raise InputError(f"must be a positive integer, got {rows!r}", where="rows")
    _check(kind, "ws")
    top = _MODULE[kind] + ("_db" if double_buffer else "")

    def verilog() -> str:
        from hw.array import SparseArray
        from hw.verilog import to_verilog

        return to_verilog(SparseArray(rows, 1, params, kind=kind, double_buffer=double_buffer), top)

    # the sparse column keeps its original memo parameters, so its cached results stay valid
    memo = (rows, 1, params) if kind == "sparse" else (rows, 1, params, kind, "ws")
    if double_buffer:
        memo = (rows, 1, params, kind, "ws", "double_buffer")
    return time_generated("hw.array.SparseArray", memo, top, verilog, lib,
                          clock_ps=clock_ps, false_path_ports=("out_meta_err",), cache=cache)


# ------------------------------------------------------------------------------------------------
# moving a path to another node and voltage
# ------------------------------------------------------------------------------------------------

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
# the generic logical-effort path, calibrated on STA
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


def generic_path_fo4(path_tau: float) -> float:
    """The register-to-register stage in FO4 from the generic netlist's logical-effort path (the
    fallback when OpenSTA or a Liberty file is absent):
    ``EFFORT_SCALE x path_tau / 5 + FLOP_OVERHEAD_FO4`` (an FO4 inverter is 5 tau)."""
    return EFFORT_SCALE * float(path_tau) / 5.0 + FLOP_OVERHEAD_FO4


def generic_stage_fo4(res) -> float:
    """:func:`generic_path_fo4` of a ppa.synth.SynthResult's netlist (ppa.timing.effort.path_tau). The
    result must be delay-mapped (``mapping="delay"``, e.g. ppa.array_cost.synth_array(...,
    mapping="delay")): EFFORT_SCALE is fitted on that netlist, and the area mapping's carry chains
    are not what a design is clocked by."""
    from ppa.timing.effort import path_tau

    if getattr(res, "mapping", "area") != "delay":
        raise ValueError(f"the generic timing path needs the delay-mapped netlist (mapping='delay'), "
                         f"got mapping={getattr(res, 'mapping', 'area')!r} for {res.top}")
    return generic_path_fo4(path_tau(res.netlist(), res.top))
