"""Buffer trees on the high-fan-out nets ABC leaves unbuffered (ppa.timing.sta's Liberty flow).

ABC (``buffer; upsize; dnsize`` in ppa.timing.mapping.TIMING_ABC_SCRIPT) buffers only inside the
combinational logic it maps: a net driven directly by a flip-flop's output or by a primary input
reaches ABC as a primary input and stays a single wire whatever its load. In the weight-stationary
column that is ``w_load``'s register, whose Q drives the weight-load enable of every weight
register: clock-to-Q alone was ~41 FO4. Every real implementation flow buffers such a net
(placement-driven repair, or register duplication), so :func:`buffer_high_fanout` does it on the
mapped netlist (Yosys ``write_verilog -noattr``) before OpenSTA times it.

The tree, for a net whose sinks' input capacitance exceeds the threshold:

* the sinks are split into balanced groups whose load is at most ``BUFFER_EFFORT`` x the input
  capacitance of the buffer (the library's strongest non-inverting buffer, BUFX4 in osu018), each
  group driven by one buffer; the buffers' inputs are split the same way, level by level, until
  one level's load fits one buffer; that level is driven by one root buffer, the only load left on
  the original net. Every sink sits at the same depth (a balanced tree).
* ``BUFFER_EFFORT = 16`` [A]: a buffer is two inverting stages; at the optimal stage effort of
  about 4 (Sutherland, Sproull, Harris, "Logical Effort", 1999, ch. 3: rho ~ 3.6, 4 the usual
  design value) its electrical effort is 4 x 4 = 16. A tree of such buffers adds about
  log4(load / C_in(buffer)) FO4 stages, the optimum for the load.
* ``THRESHOLD_EFFORT = 16`` [A]: a net is buffered when its load exceeds 16 x the input
  capacitance of the library's minimum inverter (the drive of a minimum flip-flop output): then the
  unbuffered driver's single stage has an electrical effort above 16 = two stages at effort 4, the
  point from which a two-stage buffer is no slower (same reference). Below it the net is left as
  mapped.

The clock port (ideal in the STA) and constant nets are never buffered. The netlist's function is
unchanged: only buffers (output = input) are inserted, and each original sink pin is reconnected
to a buffer output whose input chain ends at the original driver (tests/ppa/test_timing_buffer.py
simulates a design before and after in Icarus with the library's Verilog models).
"""

from __future__ import annotations

import math
import re
from dataclasses import dataclass

from ppa.liberty.library import LibertyLibrary
from ppa.liberty.mapped import CONNECTION, INSTANCE, module_body, net_name, port_bits

BUFFER_EFFORT = 16.0
THRESHOLD_EFFORT = 16.0


@dataclass(frozen=True)
class BufferedNet:
    net: str
    driver: str  # "Q of <instance> (<cell>)" or "input port"
    sinks: int
    load_pf: float
    buffers: int
    levels: int


@dataclass
class BufferResult:
    verilog: str
    nets: list[BufferedNet]
    cell: str
    added_area: float

    @property
    def buffers(self) -> int:
        return sum(n.buffers for n in self.nets)


def key() -> str:
    """The tree parameters, for the STA cache key."""
    return f"buffer_high_fanout effort={BUFFER_EFFORT!r} threshold={THRESHOLD_EFFORT!r}"


def _groups(loads: list[float], limit: float) -> list[list[int]]:
    """Indices split, in order, into ceil(total / limit) groups of about equal load, each at most
    ``limit`` (a group grows past the target only when a single sink exceeds it)."""
    total = sum(loads)
    k = max(1, math.ceil(total / limit - 1e-9))
    while True:
        target = total / k
        groups: list[list[int]] = []
        cur: list[int] = []
        acc = 0.0
        for i, c in enumerate(loads):
            if cur and acc + c > target * (1 + 1e-9) and len(groups) < k - 1:
                groups.append(cur)
                cur, acc = [], 0.0
            cur.append(i)
            acc += c
        groups.append(cur)
        if all(sum(loads[i] for i in g) <= limit * (1 + 1e-9) or len(g) == 1 for g in groups):
            return groups
        k += 1


def buffer_high_fanout(
    verilog: str,
    top: str,
    lib: LibertyLibrary,
    *,
    clock_port: str | None = "clk",
    buffer_effort: float = BUFFER_EFFORT,
    threshold_effort: float = THRESHOLD_EFFORT,
) -> BufferResult:
    """Insert balanced buffer trees on the nets of module ``top`` driven by a flip-flop output or
    a primary input whose sink load exceeds ``threshold_effort`` x C_in(minimum inverter); each
    buffer drives at most ``buffer_effort`` x its own input capacitance (see the module docstring)."""
    m = module_body(verilog, top, where="ppa.timing.buffer")
    body_start, body_end = m.start(1), m.end(1)
    body = m.group(1)
    buf, bin_, bout, c_buf, a_buf = lib.drive_buffer()
    inv = lib.inverter()
    pins = lib.pin_info()
    c_inv = pins[inv[0]][inv[1]][1]
    flops = lib.flops()
    limit = buffer_effort * c_buf
    threshold = threshold_effort * c_inv

    # drivers: flip-flop outputs and input-port bits
    drivers: dict[str, str] = {}
    for name, bit in port_bits(body, "input"):
        if name != clock_port:
            drivers[bit] = "input port"
    insts = list(INSTANCE.finditer(body))
    parsed = []  # (match, cell, name, [(pin, expr, line_span_in_body)])
    for im in insts:
        cell, name = im.group(2), im.group(3)
        conns = []
        off = im.start(4)
        for line in im.group(4).split("\n"):
            cm = CONNECTION.match(line)
            if cm:
                conns.append((cm.group(1), cm.group(2), off, off + len(line)))
            off += len(line) + 1
        parsed.append((cell, name, conns))
        if cell in flops:
            for p, e, *_ in conns:
                if pins.get(cell, {}).get(p, ("",))[0] == "output":
                    drivers.setdefault(net_name(e), f"{p} of {name} ({cell})")
    # sinks of those nets
    sinks: dict[str, list[tuple[int, int, str, float]]] = {}
    for cell, _name, conns in parsed:
        info = pins.get(cell, {})
        for p, e, s, t in conns:
            key = net_name(e)
            if key in drivers and info.get(p, ("",))[0] == "input":
                sinks.setdefault(key, []).append((s, t, p, info[p][1]))
    existing = set(re.findall(r"_sta_buf(\d+)_", body))
    n_id = (max(int(x) for x in existing) + 1) if existing else 0
    edits: list[tuple[int, int, str]] = []
    new_wires: list[str] = []
    new_cells: list[str] = []
    report: list[BufferedNet] = []
    for net, ss in sinks.items():
        load = sum(c for *_, c in ss)
        if load <= threshold:
            continue
        # level by level: the current loads (sink pins, then buffer inputs) grouped under buffers
        loads = [c for *_, c in ss]
        members: list = [("pin", i) for i in range(len(ss))]
        levels, nbuf = 0, 0
        while True:
            groups = _groups(loads, limit)
            new_members, new_loads = [], []
            for g in groups:
                out_net = f"_sta_buf{n_id}_"
                n_id += 1
                new_wires.append(out_net)
                inst = f"_sta_buf{n_id - 1}_inst"
                nbuf += 1
                for j in g:
                    kind, ref = members[j]
                    if kind == "pin":
                        s, t, p, _c = ss[ref]
                        edits.append((s, t, f"    .{p}({out_net}),"))
                    else:
                        new_cells[ref] = new_cells[ref].replace("@IN@", out_net)
                new_cells.append(f"  {buf} {inst} (\n    .{bin_}(@IN@),\n    .{bout}({out_net})\n  );")
                new_members.append(("buf", len(new_cells) - 1))
                new_loads.append(c_buf)
            levels += 1
            members, loads = new_members, new_loads
            if len(members) == 1:
                break
        new_cells[members[0][1]] = new_cells[members[0][1]].replace("@IN@", net)
        report.append(BufferedNet(net, drivers[net], len(ss), load, nbuf, levels))
    if not report:
        return BufferResult(verilog, [], buf, 0.0)
    # apply pin edits (the last connection of an instance has no trailing comma)
    out_body = body
    for s, t, text in sorted(edits, reverse=True):
        old = out_body[s:t]
        if not old.rstrip().endswith(","):
            text = text[:-1]
        out_body = out_body[:s] + text + out_body[t:]
    decl = "".join(f"  wire {w};\n" for w in new_wires)
    out_body = decl + out_body + "\n".join(new_cells) + "\n"
    return BufferResult(
        verilog[:body_start] + out_body + verilog[body_end:],
        report,
        buf,
        a_buf * sum(r.buffers for r in report),
    )
