"""Amaranth RTL of the N:M metadata decoder, the sparse PE and its dense baseline.

``SparsePE`` (module ``sparse_pe``), for N:M with A-bit activations, W-bit weights, ACC-bit
accumulator (2:4 shown in brackets)::

    clk, rst           synchronous, active-high reset; clears the accumulator and out_valid
    in_valid   [0:0]   a group is consumed at each rising edge where it is high
    in_clear   [0:0]   start a new sum with this group
    in_act     [M*A-1:0]   lane i at [i*A +: A], signed            ([4A-1:0])
    in_w       [N*W-1:0]   kept weight j at [j*W +: W], signed     ([2W-1:0])
    in_meta    [N*log2(M)-1:0]  index of weight j at [j*b +: b]    ([3:0])
    out_valid  [0:0]   one pulse per consumed group, in order, ``latency`` edges later
    out_acc    [ACC-1:0]  signed, (in_clear ? 0 : acc) + sum_j act[idx_j]*w[j], modulo 2**ACC
    out_meta_err [0:0] the group's code was illegal: its product was dropped (clear still applies)

``DensePE`` (module ``dense_pe``) has the same ports with ``in_w`` [M*W-1:0] (one weight per
lane), no ``in_meta``, and ``out_meta_err`` kept but tied to 0, so both PEs are drop-in
replacements for each other in a testbench or a synthesis script.

Pipeline (``PEParams.pipeline`` = p register stages, ``latency == p``): the accumulator is
always the last stage. p >= 2 adds a register on the summed products (multipliers | adder),
p >= 3 one on the selected operands (decode + mux | multipliers); every further stage is a
register on the raw inputs. Out-of-order or stalled outputs never happen: ``out_valid``
follows ``in_valid`` exactly ``latency`` edges later.

Dense fallback: a dense group of M runs on ``SparsePE`` as M/N consecutive groups with
metadata (0..N-1), (N..2N-1), ... (``hw.golden.dense_to_sparse_stream``); no special mode.
"""

from __future__ import annotations

from amaranth.hdl import Cat, Const, Module, Mux, Signal, signed, unsigned
from amaranth.lib import data, wiring
from amaranth.lib.wiring import In, Out

from hw.errors import InputError
from hw.nm import check_nm, meta_bits_per_weight
from hw.params import PEParams

__all__ = ["MetadataDecoder", "SparsePE", "DensePE", "decode_fields", "select_lane"]


class MetadataDecoder(wiring.Component):
    """Combinational N:M metadata decoder for ``groups`` packed groups.

    Ports: ``meta`` In(groups*N*b) with group g at bits [g*N*b +: N*b]; ``sel``
    Out(ArrayLayout(ArrayLayout(unsigned(b), N), groups)), the mux select (activation index)
    of kept weight j of group g; ``err`` Out(groups), bit g set iff group g's indices are not
    strictly increasing. b = log2(M). ``groups=8`` decodes PTX ``mma.sp``'s 32-bit register.
    """

    def __init__(self, n: int = 2, m: int = 4, groups: int = 1):
        try:
            check_nm(n, m)
            if int(groups) < 1:
                raise InputError(f"must be >= 1, got {groups}", where="groups")
        except InputError:
            self._MustUse__silence = True   # never elaborated: no UnusedElaboratable warning
            raise
        self.n, self.m, self.groups = n, m, int(groups)
        self.index_bits = meta_bits_per_weight(m)
        sel_layout = data.ArrayLayout(data.ArrayLayout(unsigned(self.index_bits), n), self.groups)
        super().__init__({
            "meta": In(self.groups * n * self.index_bits),
            "sel": Out(sel_layout),
            "err": Out(self.groups),
        })

    def elaborate(self, platform):
        m = Module()
        w = self.n * self.index_bits
        for g in range(self.groups):
            sel, err = decode_fields(m, self.meta[g * w:(g + 1) * w], self.n, self.m, prefix=f"g{g}_")
            m.d.comb += [self.sel[g][j].eq(sel[j]) for j in range(self.n)]
            m.d.comb += self.err[g].eq(err)
        return m


def decode_fields(m: Module, code, n: int, mm: int, prefix: str = ""):
    """Inline decode of one group's code (a Value of N*log2(M) bits) inside module ``m``:
    returns (list of N index Values, err Value). Shared by the decoder, the PE and the array
    so their Verilog stays one flat module."""
    b = meta_bits_per_weight(mm)
    fields = [code[j * b:(j + 1) * b] for j in range(n)]
    if n == 1:                      # a single index is always legal (1:M)
        return fields, Const(0, 1)
    err = Signal(name=f"{prefix}meta_err")
    m.d.comb += err.eq(~Cat(*[fields[j] < fields[j + 1] for j in range(n - 1)]).all())
    return fields, err


def select_lane(m: Module, lanes, index, shape, name: str):
    """A case-statement mux: lanes[index] into a new signal (no shift, so no width warnings)."""
    out = Signal(shape, name=name)
    with m.Switch(index):
        for i in range(len(lanes)):
            with m.Case(i):
                m.d.comb += out.eq(lanes[i])
    return out


def _pe_ports(p: PEParams, w_lanes: int, meta: bool) -> dict:
    ports = {
        "in_valid": In(1),
        "in_clear": In(1),
        "in_act": In(data.ArrayLayout(signed(p.act_bits), p.m)),
        "in_w": In(data.ArrayLayout(signed(p.weight_bits), w_lanes)),
    }
    if meta:
        ports["in_meta"] = In(p.meta_bits)
    ports.update({"out_valid": Out(1), "out_acc": Out(signed(p.acc_bits)), "out_meta_err": Out(1)})
    return ports


def _delay(m: Module, value, stages: int, name: str):
    """``value`` delayed by ``stages`` registers (reset to 0)."""
    for k in range(stages):
        reg = Signal.like(value, name=f"{name}_d{k}") if isinstance(value, Signal) else \
            Signal(value.shape(), name=f"{name}_d{k}")
        m.d.sync += reg.eq(value)
        value = reg
    return value


def _sum_tree(terms):
    """Balanced adder tree (shorter critical path than a chain)."""
    terms = list(terms)
    while len(terms) > 1:
        terms = [terms[i] + terms[i + 1] if i + 1 < len(terms) else terms[i] for i in range(0, len(terms), 2)]
    return terms[0]


def _check_params(component, params) -> None:
    if not isinstance(params, PEParams):
        component._MustUse__silence = True   # never elaborated: no UnusedElaboratable warning
        raise InputError(f"expected PEParams, got {type(params).__name__}", where="params")


class _PEBase(wiring.Component):
    """Shared pipeline: input delay, operand register, product register, accumulator."""

    def __init__(self, params: PEParams, w_lanes: int, meta: bool):
        self.params = params
        super().__init__(_pe_ports(params, w_lanes, meta))

    @property
    def latency(self) -> int:
        return self.params.latency

    def _operands(self, m: Module, act, w, meta):
        """Return (list of (a, w) multiplier operand pairs, err) from (delayed) inputs."""
        raise NotImplementedError

    def elaborate(self, platform):
        p = self.params
        m = Module()
        extra = max(p.pipeline - 3, 0)
        valid = _delay(m, self.in_valid, extra, "in_valid")
        clear = _delay(m, self.in_clear, extra, "in_clear")
        act = _delay(m, self.in_act.as_value(), extra, "in_act")
        w = _delay(m, self.in_w.as_value(), extra, "in_w")
        meta = _delay(m, self.in_meta, extra, "in_meta") if hasattr(self, "in_meta") else None
        act = data.ArrayLayout(signed(p.act_bits), p.m)(act) if extra else self.in_act
        w = data.ArrayLayout(signed(p.weight_bits), len(self.in_w))(w) if extra else self.in_w

        pairs, err = self._operands(m, act, w, meta)
        if p.pipeline >= 3:                                   # register after decode + mux
            regs = []
            for k, (a, b) in enumerate(pairs):
                ra, rb = Signal(signed(p.act_bits), name=f"op_a{k}"), Signal(signed(p.weight_bits), name=f"op_w{k}")
                m.d.sync += [ra.eq(a), rb.eq(b)]
                regs.append((ra, rb))
            pairs = regs
            valid, clear, err = (_delay(m, s, 1, nm) for s, nm in ((valid, "op_valid"), (clear, "op_clear"), (err, "op_err")))
        total = _sum_tree([a * b for a, b in pairs])
        # bits above ACC cannot change a sum taken modulo 2**ACC: truncate before registering
        sum_bits = min(p.product_bits + max(len(pairs) - 1, 0).bit_length(), p.acc_bits)
        contrib = Mux(err, 0, total)     # an expression: a named wire would be an unused alias
        if len(contrib) > sum_bits:
            contrib = contrib[:sum_bits].as_signed()
        if p.pipeline >= 2:                                   # register after multipliers
            preg = Signal(signed(sum_bits), name="prod")
            m.d.sync += preg.eq(contrib)
            contrib = preg
            valid, clear, err = (_delay(m, s, 1, nm) for s, nm in ((valid, "pr_valid"), (clear, "pr_clear"), (err, "pr_err")))

        # the accumulator wraps modulo 2**ACC: the adder's carry-out is discarded by design
        ext = contrib
        base = Signal(signed(p.acc_bits), name="acc_base")
        m.d.comb += base.eq(Mux(clear, 0, self.out_acc))
        with m.If(valid):
            m.d.sync += self.out_acc.eq((base + ext)[:p.acc_bits])
        m.d.sync += [self.out_valid.eq(valid), self.out_meta_err.eq(valid & err)]
        return m


class SparsePE(_PEBase):
    """N:M sparse PE: N multipliers fed by metadata-selected activations, one accumulator."""

    def __init__(self, params: PEParams = PEParams()):
        _check_params(self, params)
        super().__init__(params, params.n, meta=True)

    def _operands(self, m, act, w, meta):
        p = self.params
        sel, err = decode_fields(m, meta, p.n, p.m)
        lanes = [act[i] for i in range(p.m)]
        return [(select_lane(m, lanes, sel[j], signed(p.act_bits), f"sel_act{j}"), w[j]) for j in range(p.n)], err


class DensePE(_PEBase):
    """Dense baseline: M multipliers, one per lane; ``out_meta_err`` tied to 0."""

    def __init__(self, params: PEParams = PEParams()):
        _check_params(self, params)
        super().__init__(params, params.m, meta=False)

    def _operands(self, m, act, w, meta):
        return [(act[i], w[i]) for i in range(self.params.m)], Const(0, 1)
