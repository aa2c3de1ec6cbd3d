"""Amaranth RTL of one vector-unit lane, and its numpy golden model.

``VectorLane(width)`` (module ``vector_lane``) is the datapath of one SIMD lane of the vector unit
that runs the non-GEMM operators (``sim.vector``): purely combinational, unsigned ``width``-bit
operands ``a`` and ``b``, a 3-bit ``op`` select and a ``2*width``-bit result ``y``:

====  ========  ==============================================================================
op    name      y
====  ========  ==============================================================================
0     add       a + b
1     mul       a * b
2     max       max(a, b) (compare and select: ReLU, max-pooling, the running max of softmax)
3     exp2      2 ** (a / 2**F) x 2**F, F = width // 2 fraction bits: Mitchell's piecewise-linear
                form (1 + f) << i for a = i.f, saturated at 2**(2 width) - 1
4     recip     ~ 2**(2 width - 1) / a: leading-one detect p, m = a << (width - 1 - p) in
                [2**(width-1), 2**width), seed s = K - 2m + m/8 (the linear 48/17 - 32/17 m
                minimax seed with 32/17 ~ 15/8), y = (s << (width - 1)) >> (p + 1); a = 0 gives all ones
====  ========  ==============================================================================

Mitchell's exp2 is within 6.2 % of 2**x [P] J. N. Mitchell, "Computer multiplication and division
using binary logarithms", IRE Trans. Electronic Computers, 1962 (max error of the linear
approximation of 2**f on [0, 1): 1 - (1 + f*) / 2**f* = 6.15 %); the reciprocal seed is within
about 6 % over the normalised range (the test checks both against exact values). These are the
single-pass, low-precision forms an int8/int16 inference vector unit uses; ``ppa.vector_cost``
synthesises this lane through ppa's Yosys flow for its area and energy per operation class.
"""

from __future__ import annotations

from amaranth import Module, Mux, Signal
from amaranth.lib import wiring
from amaranth.lib.wiring import In, Out

from hw.vector_golden import OP_CODES, OPS, check_width, lane_golden, recip_k  # noqa: F401 (re-exported)
from hw.verilog import convert


class VectorLane(wiring.Component):
    """One lane: add, multiply, max, exp2 and reciprocal approximations on ``width``-bit operands."""

    def __init__(self, width: int = 8):
        self.width = check_width(width)
        super().__init__({"a": In(self.width), "b": In(self.width), "op": In(3), "y": Out(2 * self.width)})

    def elaborate(self, platform):
        m = Module()
        W = self.width
        F = W // 2
        top = (1 << (2 * W)) - 1
        # exp2: a = i.f (F fraction bits); (2**F + f) << i, saturated
        i = self.a[F:]
        f = self.a[:F]
        mant = Signal(F + 1)
        m.d.comb += mant.eq((1 << F) + f)
        # i >= 2W - F shifts the leading one past the top bit: saturate (and keep the shifter 2W + 1 bits wide)
        wide = Signal(2 * W + 1)
        m.d.comb += wide.eq(mant << i)
        exp2 = Signal(2 * W)
        m.d.comb += exp2.eq(Mux((i >= 2 * W - F) | (wide > top), top, wide))
        # recip: leading-one position p (the highest set bit wins: later assignments override)
        p = Signal(range(W))
        for k in range(W):
            with m.If(self.a[k]):
                m.d.comb += p.eq(k)
        lsh = Signal(range(W))
        m.d.comb += lsh.eq(W - 1 - p)
        norm = Signal(W)
        m.d.comb += norm.eq(self.a << lsh)
        seed = Signal(W + 2)
        m.d.comb += seed.eq(recip_k(W) - (norm << 1) + (norm >> 3))
        shifted = Signal(2 * W + 1)
        m.d.comb += shifted.eq((seed << (W - 1)) >> (p + 1))
        recip = Signal(2 * W)
        m.d.comb += recip.eq(Mux(self.a == 0, top, shifted))
        with m.Switch(self.op):
            with m.Case(OP_CODES["add"]):
                m.d.comb += self.y.eq(self.a + self.b)
            with m.Case(OP_CODES["mul"]):
                m.d.comb += self.y.eq(self.a * self.b)
            with m.Case(OP_CODES["max"]):
                m.d.comb += self.y.eq(Mux(self.a > self.b, self.a, self.b))
            with m.Case(OP_CODES["exp2"]):
                m.d.comb += self.y.eq(exp2)
            with m.Case(OP_CODES["recip"]):
                m.d.comb += self.y.eq(recip)
            with m.Default():
                m.d.comb += self.y.eq(0)
        return m


def vector_lane_verilog(width: int = 8) -> tuple[str, str]:
    """Verilog text and top name of one lane."""
    name = f"vector_lane{check_width(width)}"
    return convert(VectorLane(width), name), name
