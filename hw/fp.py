"""Amaranth floating-point blocks of the float PEs (rules in hw.precision; golden model hw.fp_golden).

``FPMul(fmt)`` (module ``fp_mul_<fmt>``): combinational ``a`` x ``b`` of operand format ``fmt`` ->
``out`` binary32 (exact significand product; RNE to binary32 is exact because the product has at
most 22 significant bits (fp16; bf16 16, FP8 8); exponent overflow -> inf, a binary32-subnormal
result -> signed zero; NaN/inf rules). Overflow/underflow logic is generated only when the format's
exponent range can reach it (bf16), so FP8 and fp16 multipliers carry none.

``F32Add`` (module ``f32_add``): combinational binary32 ``a`` + ``b`` -> ``out`` with RNE and FTZ
(inputs with a zero exponent field read as zero). Classic datapath: magnitude swap, alignment with
guard/round/sticky, add/subtract, leading-one normalisation, round to nearest even.
"""

from __future__ import annotations

from amaranth.hdl import Cat, Const, Module, Mux, Signal
from amaranth.lib import wiring
from amaranth.lib.wiring import In, Out

from hw.precision import CANONICAL_NAN, FPFormat

__all__ = ["FPMul", "F32Add", "fp_products", "fp_chain", "plus_zero"]

_INF = 0x7F800000


def _leading_one(m: Module, value, name: str):
    """Index of the most significant set bit of ``value`` (0 when value == 0), a priority mux."""
    width = len(value)
    pos = Signal(range(width), name=name)
    for i in range(width):  # later statements win: the highest set bit
        with m.If(value[i]):
            m.d.comb += pos.eq(i)
    return pos


class FPMul(wiring.Component):
    def __init__(self, fmt: FPFormat):
        self.fmt = fmt
        super().__init__({"a": In(fmt.bits), "b": In(fmt.bits), "out": Out(32)})

    def _decode(self, m: Module, x, tag: str):
        f = self.fmt
        sign = x[f.bits - 1]
        e = x[f.man_bits : f.man_bits + f.exp_bits]
        frac = x[: f.man_bits]
        top = e == f.exp_max_field
        if f.ieee_specials:
            nan, inf = top & frac.any(), top & ~frac.any()
        else:
            # no infinity (E4M3): no inf term at all, so no constant-0 logic is generated
            nan, inf = top & (frac == (1 << f.man_bits) - 1), None
        normal = e.any()
        sig = Mux(normal, Cat(frac, Const(1, 1)), 0 if f.daz else frac)
        # biased exponent of the LSB, offset so that it is never negative: max(e, 1)
        ex = Mux(normal, e, 1)
        return sign, sig, ex, nan, inf

    def elaborate(self, platform):
        f = self.fmt
        m = Module()
        sa, ga, ea, na, ia = self._decode(m, self.a, "a")
        sb, gb, eb, nb, ib = self._decode(m, self.b, "b")
        s = sa ^ sb
        if ia is None:  # format without infinity
            nan, inf = na | nb, None
        else:
            za, zb = ~ga.any() & ~ia & ~na, ~gb.any() & ~ib & ~nb
            nan = na | nb | (ia & zb) | (ib & za)
            inf = ia | ib
        sig = Signal(2 * f.sig_bits, name="sig")  # read by the priority mux
        m.d.comb += sig.eq(ga * gb)
        top = _leading_one(m, sig, "top")
        # binary32 exponent field: top + (ea - bias - man) + (eb - bias - man) + 127
        off = 127 - 2 * (f.bias + f.man_bits)
        lo = 0 + 2 * 1 + off  # smallest reachable field
        hi = (2 * f.sig_bits - 1) + 2 * f.exp_max_field + off  # largest reachable field
        ef = top + ea + eb + off
        mant = ((sig << 23) >> top)[:23]  # the leading one drops off
        m.d.comb += self.out.eq(Cat(mant, ef[:8], s))
        zero = ~sig.any()
        if lo <= 0:  # binary32 subnormal: FTZ
            zero = zero | (ef <= 0)
        with m.If(zero):
            m.d.comb += self.out.eq(Cat(Const(0, 31), s))
        if hi >= 255:  # |p| >= 2**128: inf
            with m.If(ef >= 255):
                m.d.comb += self.out.eq(Cat(Const(_INF, 31), s))
        if inf is not None:
            with m.If(inf):
                m.d.comb += self.out.eq(Cat(Const(_INF, 31), s))
        with m.If(nan):
            m.d.comb += self.out.eq(CANONICAL_NAN)
        return m


class F32Add(wiring.Component):
    def __init__(self):
        super().__init__({"a": In(32), "b": In(32), "out": Out(32)})

    def elaborate(self, platform):
        m = Module()
        a, b = self.a, self.b
        sa, ea, fa = a[31], a[23:31], a[:23]
        sb, eb, fb = b[31], b[23:31], b[:23]
        nan_a, nan_b = ea.all() & fa.any(), eb.all() & fb.any()
        inf_a, inf_b = ea.all() & ~fa.any(), eb.all() & ~fb.any()
        zero_a, zero_b = ~ea.any(), ~eb.any()
        a_big = a[:31] >= b[:31]
        s1, e1, f1 = Mux(a_big, sa, sb), Mux(a_big, ea, eb), Mux(a_big, fa, fb)
        s2, e2, f2 = Mux(a_big, sb, sa), Mux(a_big, eb, ea), Mux(a_big, fb, fa)
        m1 = Cat(Const(0, 3), f1, Const(1, 1))  # 24 bits + guard, round, sticky
        m2 = Cat(Const(0, 3), f2, Const(1, 1))
        diff = (e1 - e2)[:8]
        d = Mux(diff > 27, 27, diff)[:5]
        shifted = m2 >> d
        sticky = (shifted << d)[:27] != m2
        m2s = shifted | sticky
        total = Mux(s1 != s2, m1 - m2s, m1 + m2s)[:28]
        carry = total[27]
        t1 = Signal(27, name="t1")  # read by the priority mux
        m.d.comb += t1.eq(Mux(carry, Cat(total[1] | total[0], total[2:28]), total[:27]))
        top = _leading_one(m, t1, "lead")
        lz = (26 - top)[:5]
        norm = (t1 << lz)[:27]
        e = e1 + carry - lz
        g, rs = norm[2], norm[0] | norm[1]
        keep = (norm[3:27] + (g & (rs | norm[3])))[:25]
        over = keep[24]
        e_r = e + over
        mant = Mux(over, keep[1:24], keep[:23])
        m.d.comb += self.out.eq(Cat(mant, e_r[:8], s1))
        with m.If(e_r >= 255):
            m.d.comb += self.out.eq(Cat(Const(_INF, 31), s1))
        with m.If(e_r <= 0):  # FTZ
            m.d.comb += self.out.eq(Cat(Const(0, 31), s1))
        with m.If(~total.any()):  # exact cancellation: +0
            m.d.comb += self.out.eq(0)
        with m.If(zero_b):
            m.d.comb += self.out.eq(a)
        with m.If(zero_a):
            m.d.comb += self.out.eq(b)
        with m.If(zero_a & zero_b):
            m.d.comb += self.out.eq(Cat(Const(0, 31), sa & sb))
        with m.If(inf_b):
            m.d.comb += self.out.eq(b)
        with m.If(inf_a):
            m.d.comb += self.out.eq(a)
        with m.If(nan_a | nan_b | (inf_a & inf_b & (sa != sb))):
            m.d.comb += self.out.eq(CANONICAL_NAN)
        return m


def fp_products(m: Module, pairs, fmt: FPFormat, tag: str) -> list:
    """One FPMul submodule per (a, w) pair; returns their binary32 outputs."""
    outs = []
    for k, (a, w) in enumerate(pairs):
        mul = FPMul(fmt)
        m.submodules[f"{tag}mul{k}"] = mul
        m.d.comb += [mul.a.eq(a), mul.b.eq(w)]
        outs.append(mul.out)
    return outs


def plus_zero(b):
    """+0 + b exactly as F32Add computes it, without an adder: a zero or (DAZ) subnormal b gives +0,
    a NaN gives the canonical NaN, anything else passes through unchanged."""
    eb = b[23:31]
    nan = eb.all() & b[:23].any()
    return Mux(eb.any(), Mux(nan, CANONICAL_NAN, b), 0)


def fp_chain(m: Module, base, groups, tag: str):
    """base + the products of each group, one F32Add at a time in order; ``groups`` is a list of
    (products, err): a group whose err is high adds nothing (the sum passes through). A constant +0
    base (the top row of a weight-stationary array) takes no adder for its first addition
    (``plus_zero``), so no constant-folded adder is left in the RTL."""
    x = base
    zero_base = isinstance(base, Const) and base.value == 0
    k = 0
    for products, err in groups:
        before = x
        for p in products:
            if zero_base:
                x, zero_base = plus_zero(p), False
                continue
            add = F32Add()
            m.submodules[f"{tag}add{k}"] = add
            m.d.comb += [add.a.eq(x), add.b.eq(p)]
            x = add.out
            k += 1
        if not (isinstance(err, Const) and err.value == 0):
            x = Mux(err, before, x)
    return x
