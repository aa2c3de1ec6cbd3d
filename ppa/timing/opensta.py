"""OpenSTA on a netlist of Liberty cells: the worst setup path, and the library's FO4.

Timing a mapped design (:func:`time_mapped`): the mapped module inside a wrapper that registers
every input and output bit with the library's D flip-flop (so every path is flop to flop, as
inside an array where a PE's inputs come from its neighbours' registers), one ideal clock whose
edges have the slew of the library's own FO4 stage, ``report_checks -path_delay max``. What is
read back (:class:`StaPath`): the worst setup path's data arrival time (clock-to-Q of the
launching flop included), the capturing flop's library setup time, start and end points and
every stage of the path.

FO4 (:func:`measure_fo4_ps`): OpenSTA times a chain of 7 minimum inverters of the library (the
smallest-area cell whose function is the inverse of its one input, INVX1 in osu018), every stage
loaded by the next stage and three more copies of the inverter (fan-out 4), driven by an ideal
input. FO4 is the delay of the middle stage (stage 3, by when the slew has settled to the FO4
slew), mean of its rising and falling output. No wire load: the library has none, and OpenSTA
adds none.

OpenSTA runs in a temporary directory with no standard input (:func:`run_sta`, :func:`find_sta`):
run interactively it saves ``.history_sta`` into its working directory, which is never the
directory the command was started from.
"""

from __future__ import annotations

import os
import re
import shutil
import subprocess
import tempfile
from dataclasses import dataclass
from functools import lru_cache
from pathlib import Path

from hw.errors import InputError
from hw.host import tool_env, write_file
from ppa.liberty.library import LibertyLibrary, load_liberty
from ppa.liberty.mapped import module_ports

#: FO4 chain: stages and the stage whose delay is FO4 (see the module docstring).
FO4_STAGES = 7
FO4_STAGE = 3
FO4_FANOUT = 4

#: Clock period given to OpenSTA when no clock is asked for: only slack depends on it.
DEFAULT_PERIOD_NS = 100.0


@lru_cache(maxsize=4)
def _find_sta_cached(path_env: str) -> tuple[str, str] | None:
    exe = shutil.which("sta")
    if not exe:
        return None
    try:
        with tempfile.TemporaryDirectory(prefix="sparsepe-opensta-") as tmp:  # nothing written where we run
            out = subprocess.run(
                [exe, "-version"],
                capture_output=True,
                text=True,
                timeout=30,
                cwd=tmp,
                stdin=subprocess.DEVNULL,
            )
    except (OSError, subprocess.SubprocessError):
        return None
    ver = (out.stdout or out.stderr).strip().splitlines()
    if out.returncode != 0 or not ver or not re.match(r"^\d+(\.\d+)+", ver[0]):
        return None  # some other program called "sta"
    return exe, ver[0].strip()


def find_sta() -> tuple[str, str] | None:
    """OpenSTA on PATH: (executable, version, e.g. "2.0.17"), or None."""
    return _find_sta_cached(os.environ.get("PATH", ""))


def register_wrapper(mapped: str, top: str, lib: LibertyLibrary, clock_port: str | None) -> str:
    """A module ``sta_wrap`` that instantiates ``top`` and registers each of its input and output
    bits with the library's D flip-flop, on clock port ``clk`` (joined to ``clock_port``)."""
    cell, cp, dp, qp = lib.register()
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
    return (
        f"module sta_wrap({', '.join(names)});\n"
        + "\n".join(decl)
        + "\n"
        + f"{top} dut ({', '.join(conns)});\n"
        + "\n".join(body)
        + "\nendmodule\n"
    )


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


def run_sta(files: dict[str, str], script: str) -> str:
    """Run OpenSTA on ``script`` (``exit`` appended) with ``files`` beside it, in a temporary
    directory with no standard input; its output, or InputError naming the first errors."""
    sta = find_sta()
    if sta is None:
        raise InputError("OpenSTA (sta) is not on PATH", where="ppa.timing.sta")
    with tempfile.TemporaryDirectory(prefix="sparsepe-opensta-") as tmp:
        d = Path(tmp)
        for name, text in files.items():
            write_file(d / name, text)
        write_file(d / "run.tcl", script + "\nexit\n")
        proc = subprocess.run(
            [sta[0], "-no_init", "-no_splash", "-exit", "run.tcl"],
            capture_output=True,
            text=True,
            cwd=d,
            timeout=600,
            stdin=subprocess.DEVNULL,
            env=tool_env(d),
        )
    out = proc.stdout + proc.stderr
    errs = [ln for ln in out.splitlines() if ln.startswith("Error")]
    if proc.returncode != 0 or errs:
        raise InputError(
            f"OpenSTA failed: {' | '.join((errs or out.strip().splitlines())[-3:])}", where="ppa.timing.sta"
        )
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
    return StaPath(
        start, ep.group(1), float(arr.group(1)), -float(setup.group(1)) if setup else 0.0, c2q, stages, report
    )


def _sta_header(lib_file: str = "cells.lib") -> str:
    return f"read_liberty {lib_file}\nset_cmd_units -time ns -capacitance pF -digits 6\n"


_REPORT = "report_checks -path_delay max -digits 6 -fields {slew cap input_pins}"


def time_mapped(
    mapped: str,
    top: str,
    lib: LibertyLibrary,
    *,
    clock_port: str | None = "clk",
    clock_slew_ns: float,
    false_path_ports: tuple[str, ...] = (),
    period_ns: float = DEFAULT_PERIOD_NS,
) -> StaPath:
    """OpenSTA's worst setup path of a mapped netlist inside the register wrapper."""
    wrap = register_wrapper(mapped, top, lib, clock_port)
    lines = [
        _sta_header(),
        "read_verilog mapped.v",
        "read_verilog wrap.v",
        "link_design sta_wrap",
        f"create_clock -name clk -period {period_ns:.6f} [get_ports sta_clk]",
        f"set_clock_transition {clock_slew_ns:.6f} [get_clocks clk]",
        "set_input_delay 0 -clock clk [delete_from_list [all_inputs] [get_ports sta_clk]]",
        "set_output_delay 0 -clock clk [all_outputs]",
    ]
    cell, cp, dp, qp = lib.register()
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
    out = run_sta(
        {"cells.lib": Path(lib.path).read_text(), "mapped.v": mapped, "wrap.v": wrap}, "\n".join(lines)
    )
    sp = parse_path(out)
    reg_names = _wrapper_register_names(mapped, top, clock_port)
    sp.startpoint, sp.endpoint = (
        reg_names.get(sp.startpoint, sp.startpoint),
        reg_names.get(sp.endpoint, sp.endpoint),
    )
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


def time_netlist(
    netlist: str, top: str, lib: LibertyLibrary, *, input_slew_ns: float, output_load_pf: float
) -> StaPath:
    """OpenSTA's worst path through a structural netlist of library cells, port to port: every
    input arrives at 0 with slew ``input_slew_ns``, every output carries ``output_load_pf``
    (a virtual clock, no wrapper registers). For checking OpenSTA against hand calculation."""
    script = [
        _sta_header(),
        "read_verilog netlist.v",
        f"link_design {top}",
        "create_clock -name vclk -period 100",
        "set_input_delay 0 -clock vclk [all_inputs]",
        "set_output_delay 0 -clock vclk [all_outputs]",
        f"set_input_transition {input_slew_ns:.6f} [all_inputs]",
        f"set_load {output_load_pf:.6f} [all_outputs]",
        _REPORT,
    ]
    return parse_path(
        run_sta({"cells.lib": Path(lib.path).read_text(), "netlist.v": netlist}, "\n".join(script))
    )


@dataclass(frozen=True)
class Fo4:
    fo4_ps: float
    rise_ps: float
    fall_ps: float
    slew_ns: float  # mean output slew of the measured stage
    cell: str


def fo4_netlist(lib: LibertyLibrary, stages: int = FO4_STAGES, fanout: int = FO4_FANOUT) -> str:
    inv, a, y = lib.inverter()
    body = ["module fo4_chain(in, out);", "input in;", "output out;"]
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
    inv = lib.inverter()[0]
    script = [
        _sta_header(),
        "read_verilog fo4.v",
        "link_design fo4_chain",
        "create_clock -name vclk -period 100",
        "set_input_delay 0 -clock vclk [get_ports in]",
        "set_output_delay 0 -clock vclk [get_ports out]",
        'puts "== rise"',
        _REPORT + " -rise_to [get_ports out]",
        'puts "== fall"',
        _REPORT + " -fall_to [get_ports out]",
    ]
    out = run_sta({"cells.lib": Path(path).read_text(), "fo4.v": fo4_netlist(lib)}, "\n".join(script))
    delays, slews = {}, []
    for part in out.split("== ")[1:]:
        path_ = parse_path(part)
        st = [s for s in path_.stages if s.pin == f"s{FO4_STAGE}/" + lib.inverter()[2]]
        if len(st) != 1:
            raise InputError("FO4 chain: middle stage not on the reported path", where="ppa.timing.sta")
        delays["rise" if st[0].edge == "^" else "fall"] = st[0].delay_ns * 1e3
        slews.append(st[0].slew_ns)
    if set(delays) != {"rise", "fall"}:
        raise InputError(
            "FO4 chain: rising and falling stage delays not both reported", where="ppa.timing.sta"
        )
    return Fo4(
        (delays["rise"] + delays["fall"]) / 2, delays["rise"], delays["fall"], sum(slews) / len(slews), inv
    )


def measure_fo4(lib: LibertyLibrary) -> Fo4:
    """The library's FO4 as OpenSTA times it (see the module docstring); memoised per file digest."""
    return _fo4(lib.path, lib.sha256)


def measure_fo4_ps(lib: LibertyLibrary) -> float:
    """FO4 delay of ``lib`` in ps: the middle stage of a 7-stage chain of the library's smallest
    inverter, each stage loaded by four copies of itself, mean of rise and fall (OpenSTA)."""
    return measure_fo4(lib).fo4_ps
