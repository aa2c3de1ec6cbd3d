"""Small arithmetic operators built with Amaranth, synthesised with the same flow as the PEs.

They exist to calibrate the technology constants on one published anchor and to check the
calibration on held-out operators (Horowitz, ISSCC 2014, 45 nm; see :mod:`ppa.calibration`).
Both are purely combinational, unsigned, and keep the full result width (w+1 bits for the adder,
2w bits for the multiplier), as the datapath operators in the PE do.
"""

from __future__ import annotations

import operator

from amaranth import Module
from amaranth.lib import wiring
from amaranth.lib.wiring import In, Out

from hw.errors import InputError
from hw.verilog import convert


class Adder(wiring.Component):
    """``y = a + b`` for unsigned w-bit a and b, w+1-bit y."""

    def __init__(self, width: int):
        self.width = _check_width(width)
        super().__init__({"a": In(self.width), "b": In(self.width), "y": Out(self.width + 1)})

    def elaborate(self, platform):
        m = Module()
        m.d.comb += self.y.eq(self.a + self.b)
        return m


class Multiplier(wiring.Component):
    """``y = a * b`` for unsigned w-bit a and b, 2w-bit y."""

    def __init__(self, width: int):
        self.width = _check_width(width)
        super().__init__({"a": In(self.width), "b": In(self.width), "y": Out(2 * self.width)})

    def elaborate(self, platform):
        m = Module()
        m.d.comb += self.y.eq(self.a * self.b)
        return m


def _check_width(width) -> int:
    w = operator.index(width)
    if not 1 <= w <= 64:
        raise InputError(f"operator width must be 1..64, got {w}", where="ppa.operators width")
    return w


def operator_verilog(kind: str, width: int) -> tuple[str, str]:
    """Verilog text and top name of an ``add`` or ``mul`` operator of the given width."""
    cls = {"add": Adder, "mul": Multiplier}.get(kind)
    if cls is None:
        raise InputError(f"unknown operator {kind!r} (add, mul)", where="ppa.operators kind")
    name = f"{kind}{width}"
    return convert(cls(width), name), name


class Register(wiring.Component):
    """``q <= d`` every clock, with Amaranth's synchronous reset: one pipeline/skew register
    stage of ``width`` bits, as the array's skew, forwarding and deskew registers are built."""

    def __init__(self, width: int):
        self.width = _check_width(width)
        super().__init__({"d": In(self.width), "q": Out(self.width)})

    def elaborate(self, platform):
        m = Module()
        m.d.sync += self.q.eq(self.d)
        return m


def register_verilog(width: int) -> tuple[str, str]:
    name = f"reg{width}"
    return convert(Register(width), name), name
