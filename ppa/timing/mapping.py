"""Yosys maps a design to a Liberty library: the first step of the STA flow (ppa.timing.sta).

    read_verilog; synth -top T -flatten -noalumacc; dfflibmap -liberty L;
    abc -liberty L [-D period_ps -script TIMING_ABC_SCRIPT when a clock is given]; opt_clean -purge;
    stat -liberty L; insbuf; write_verilog -noattr mapped.v

Without a clock ABC maps for area (Yosys's default script). With a clock the ABC script is
TIMING_ABC_SCRIPT: delay-oriented mapping to the period, buffering of high-fan-out nets,
up/down-sizing. ppa.model asks for FASTEST_CLOCK_PS (1 ps: map for minimum delay, the netlist one
would close timing on at fmax). What is read back (:class:`Mapped`): the netlist, its cells and
the mapped cell area (``stat -liberty``).
"""

from __future__ import annotations

import re
import tempfile
from dataclasses import dataclass
from pathlib import Path

from hw.errors import InputError
from hw.host import write_file
from ppa import yosys
from ppa.liberty.library import LibertyLibrary

MAP_SCRIPT = (
    "read_verilog {src}; synth -top {top} -flatten -noalumacc; dfflibmap -liberty {lib}; abc -liberty {lib}{D}; "
    "opt_clean -purge; tee -o {stat} stat -liberty {lib}; insbuf -buf {buf}; write_verilog -noattr {out}"
)
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
#: columns (the 2 x 1 FP8 E4M3 sparse column and the BF16 dense column); with ``buffer
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


def map_to_liberty(verilog: str, top: str, lib: LibertyLibrary, *, clock_ps: float | None = None) -> Mapped:
    """Yosys maps ``verilog`` to ``lib`` (see the module docstring). Not cached: see ppa.timing.sta.time_verilog."""
    if not re.fullmatch(r"[A-Za-z_][A-Za-z0-9_$]*", top):
        raise InputError(f"not a Verilog module name: {top!r}", where="ppa.timing.sta top")
    with tempfile.TemporaryDirectory(prefix="sparsepe-sta-") as tmp:
        d = Path(tmp)
        write_file(d / "design.v", verilog)
        write_file(
            d / "cells.lib", Path(lib.path).read_bytes()
        )  # the yowasp Yosys sees only its working directory
        buf, a, y = lib.buffer()
        for abc_script in (
            TIMING_ABC_SCRIPT,
            TIMING_ABC_SCRIPT_NO_DCH,
            TIMING_ABC_SCRIPT_BUFFER_PI,
            TIMING_ABC_SCRIPT_MAP_ONLY,
        ):
            D = ""
            if clock_ps:
                d_ps = f"{clock_ps:.6g}"
                D = f" -D {d_ps} -script {abc_script.format(D=d_ps)}"
            script = MAP_SCRIPT.format(
                src="design.v",
                top=top,
                lib="cells.lib",
                D=D,
                stat="stat.txt",
                out="mapped.v",
                buf=f"{buf} {a} {y}",
            )
            run = yosys.yosys_process(script, d)
            if not (
                run.returncode != 0 and clock_ps and "output.blif" in (run.stderr + run.stdout + run.log)
            ):
                break
        if run.returncode != 0:
            yosys.raise_failure(run, f"mapping {top} to {lib.library}", d)
        stat = (d / "stat.txt").read_text()
        mapped = (d / "mapped.v").read_text()
    area = re.findall(r"Chip area for (?:module|top module) '\\?\S+?':\s+([0-9.]+)", stat)
    return Mapped(
        mapped,
        stat_cells(stat),
        float(area[-1]) if area else 0.0,
        abc_script.format(D="D") if clock_ps else "",
    )


def stat_cells(stat: str) -> dict[str, int]:
    """Cell type -> count from the last module of a ``stat -liberty`` report, in either layout:
    Yosys 0.23's (``Number of cells: N`` then ``CELL count`` lines) or the later one (``N area
    cells`` then ``count area CELL`` lines)."""
    cells: dict[str, int] = {}
    if "Number of cells:" in stat:
        for m in re.finditer(r"^\s+(\S+)\s+(\d+)\s*$", stat.split("Number of cells:")[-1], re.M):
            cells[m.group(1)] = int(m.group(2))
    else:
        sect = re.split(r"^\s*\d+\s+[0-9.]+\s+cells\s*$", stat, flags=re.M)[-1]
        for m in re.finditer(r"^\s+(\d+)\s+[0-9.]+\s+(\S+)\s*$", sect, re.M):
            cells[m.group(2)] = int(m.group(1))
    return dict(sorted(cells.items()))
