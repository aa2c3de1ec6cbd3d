"""Reading a netlist of library cells as Yosys writes it (``write_verilog -noattr`` after mapping
to a Liberty library): a module's body, its ports, its cell instances and their pin connections.

The form read (and nothing more general): one ``input`` / ``output`` / ``inout`` declaration per
line (``input [msb:lsb] name;``), each instance as ``CELL name (`` on one line, one
``.PIN(expr),`` per line, and ``);`` on a line of its own. ppa.timing.buffer edits such a netlist
in place (by the positions these patterns report), ppa.liberty.energy costs its nets and
ppa.timing.opensta wraps its ports in registers.
"""

from __future__ import annotations

import re

from hw.errors import InputError

#: One cell instance: (indent, cell, instance name, the connection lines).
INSTANCE = re.compile(
    r"^([ \t]*)([A-Za-z_][A-Za-z0-9_$]*)[ \t]+(\S+)[ \t]*\(\n(.*?)\n[ \t]*\);[ \t]*$", re.M | re.S
)
#: One pin connection line of an instance: (pin, net expression).
CONNECTION = re.compile(r"^[ \t]*\.([A-Za-z_][A-Za-z0-9_$]*)\((.*)\),?[ \t]*$")
#: One port declaration: (direction, msb or "", lsb or "", name).
PORT = re.compile(r"^\s*(input|output|inout)\s+(?:\[(\d+):(\d+)\]\s*)?([A-Za-z_][A-Za-z0-9_$]*)\s*;", re.M)


def net_name(expr: str) -> str:
    """A connection's net expression with its whitespace normalised (the key nets are matched by)."""
    return re.sub(r"\s+", " ", expr.strip())


def module_body(verilog: str, top: str, *, where: str) -> re.Match:
    """The match of module ``top``: group 1 is its body (after the port list, up to ``endmodule``).
    Raises InputError (at ``where``) when the netlist has no such module."""
    m = re.search(rf"^module\s+{re.escape(top)}\s*\(.*?\);\n(.*?)^endmodule", verilog, re.M | re.S)
    if not m:
        raise InputError(f"module {top} not found in the mapped netlist", where=where)
    return m


def port_bits(body: str, direction: str) -> list[tuple[str, str]]:
    """(port, bit net) of every bit of the ``direction`` ports declared in a module body, in
    declaration order (``name[b]`` for a vector, from its lowest bit; ``name`` for a scalar)."""
    out: list[tuple[str, str]] = []
    for d, msb, lsb, name in PORT.findall(body):
        if d != direction:
            continue
        if msb:
            out.extend(
                (name, f"{name}[{b}]") for b in range(min(int(msb), int(lsb)), max(int(msb), int(lsb)) + 1)
            )
        else:
            out.append((name, name))
    return out


def module_ports(verilog: str, top: str, *, where: str = "ppa.timing.sta") -> list[tuple[str, str, int, int]]:
    """(direction, name, msb, lsb) of ``top``'s ports in a Yosys-written netlist."""
    body = module_body(verilog, top, where=where).group(1)
    return [
        (d, name, int(msb) if msb else 0, int(lsb) if lsb else 0) for d, msb, lsb, name in PORT.findall(body)
    ]
