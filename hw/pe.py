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

``SparsePE(params, dense_path=True)`` (module ``sparse_pe_dp``): the sparse PE with a full-rate
dense path, as NVIDIA's sparse tensor cores (A100: 2:4 at twice the dense rate). It has M
multipliers; with G = M/N (2 for 2:4)::

    clk, rst, in_valid, in_clear   as SparsePE
    in_dense   [0:0]   1: the cycle carries one dense group of M; 0: G N:M groups
    in_act     [G*M*A-1:0]  group g lane i at [(g*M+i)*A +: A], signed   ([8A-1:0]); dense
                       mode reads group 0 only (lanes 0..M-1), the rest is ignored
    in_w       [M*W-1:0]    N:M mode: group g's kept weight j at [(g*N+j)*W +: W]; dense mode:
                       the weight of lane i at [i*W +: W]                  ([4W-1:0])
    in_meta    [G*N*b-1:0]  group g's code at [g*N*b +: N*b]; ignored in dense mode ([7:0])
    out_valid  [0:0]   one pulse per consumed cycle (dense group or G N:M groups), ``latency``
                       edges later (latency == pipeline, the same stages as SparsePE)
    out_acc    [ACC-1:0]  (in_clear ? 0 : acc) + (in_dense ? sum_i act[0][i]*w[i]
                       : sum_g legal_g * sum_j act[g][idx_gj]*w[g*N+j]), modulo 2**ACC
    out_meta_err [0:0] N:M mode: some group's code was illegal; that group's products were
                       dropped, the other groups' counted (0 in dense mode)

Multiplier k = g*N + j takes ``in_dense ? act[0][k] : act[g][idx_gj]`` (one 2:1 mux after the
sparse select) and weight k in both modes. Rate: M dense MACs per cycle; M*M/N effective MACs per
cycle in N:M mode (2M for 2:4), i.e. pe_k = M stored weights per cycle in both modes.
"""

from __future__ import annotations

from amaranth.hdl import Cat, Const, Module, Mux, Signal, signed, unsigned
from amaranth.lib import data, wiring
from amaranth.lib.wiring import In, Out

from hw.errors import InputError
from hw.fp import fp_chain, fp_products
from hw.nm import check_nm, meta_bits_per_weight
from hw.params import DEFAULT_PE_PARAMS, PEParams

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
            self._MustUse__silence = True  # never elaborated: no UnusedElaboratable warning
            raise
        self.n, self.m, self.groups = n, m, int(groups)
        self.index_bits = meta_bits_per_weight(m)
        sel_layout = data.ArrayLayout(data.ArrayLayout(unsigned(self.index_bits), n), self.groups)
        super().__init__(
            {
                "meta": In(self.groups * n * self.index_bits),
                "sel": Out(sel_layout),
                "err": Out(self.groups),
            }
        )

    def elaborate(self, platform):
        m = Module()
        w = self.n * self.index_bits
        for g in range(self.groups):
            sel, err = decode_fields(m, self.meta[g * w : (g + 1) * w], self.n, self.m, prefix=f"g{g}_")
            m.d.comb += [self.sel[g][j].eq(sel[j]) for j in range(self.n)]
            m.d.comb += self.err[g].eq(err)
        return m


def decode_fields(m: Module, code, n: int, mm: int, prefix: str = ""):
    """Inline decode of one group's code (a Value of N*log2(M) bits) inside module ``m``:
    returns (list of N index Values, err Value). Shared by the decoder, the PE and the array
    so their Verilog stays one flat module."""
    b = meta_bits_per_weight(mm)
    fields = [code[j * b : (j + 1) * b] for j in range(n)]
    if n == 1:  # a single index is always legal (1:M)
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


def lane_shapes(p: PEParams):
    """(activation shape, weight shape, accumulator shape): signed integers, or unsigned bit patterns
    of the float format with a 32-bit binary32 accumulator."""
    if p.is_float:
        return unsigned(p.act_bits), unsigned(p.weight_bits), unsigned(p.acc_bits)
    return signed(p.act_bits), signed(p.weight_bits), signed(p.acc_bits)


def _pe_ports(
    p: PEParams, w_lanes: int, meta_groups: int, act_groups: int = 1, dense_bit: bool = False
) -> dict:
    a_shape, w_shape, acc_shape = lane_shapes(p)
    ports = {
        "in_valid": In(1),
        "in_clear": In(1),
    }
    if dense_bit:
        ports["in_dense"] = In(1)
    ports.update(
        {
            "in_act": In(data.ArrayLayout(a_shape, p.m * act_groups)),
            "in_w": In(data.ArrayLayout(w_shape, w_lanes)),
        }
    )
    if meta_groups:
        ports["in_meta"] = In(p.meta_bits * meta_groups)
    ports.update({"out_valid": Out(1), "out_acc": Out(acc_shape), "out_meta_err": Out(1)})
    return ports


def _delay(m: Module, value, stages: int, name: str):
    """``value`` delayed by ``stages`` registers (reset to 0)."""
    for k in range(stages):
        reg = (
            Signal.like(value, name=f"{name}_d{k}")
            if isinstance(value, Signal)
            else Signal(value.shape(), name=f"{name}_d{k}")
        )
        m.d.sync += reg.eq(value)
        value = reg
    return value


def sum_tree(terms):
    """Balanced adder tree (shorter critical path than a chain)."""
    terms = list(terms)
    while len(terms) > 1:
        terms = [terms[i] + terms[i + 1] if i + 1 < len(terms) else terms[i] for i in range(0, len(terms), 2)]
    return terms[0]


def _check_params(component, params) -> None:
    if not isinstance(params, PEParams):
        component._MustUse__silence = True  # never elaborated: no UnusedElaboratable warning
        raise InputError(f"expected PEParams, got {type(params).__name__}", where="params")


class _PEBase(wiring.Component):
    """Shared pipeline: input delay, operand register, product register, accumulator."""

    def __init__(
        self, params: PEParams, w_lanes: int, meta_groups: int, act_groups: int = 1, dense_bit: bool = False
    ):
        self.params = params
        super().__init__(_pe_ports(params, w_lanes, meta_groups, act_groups, dense_bit))

    @property
    def latency(self) -> int:
        return self.params.latency

    def _operands(self, m: Module, act, w, meta, dense):
        """Return a list of (list of (a, w) multiplier operand pairs, err) product groups from the
        (delayed) inputs; a group whose err is high contributes 0."""
        raise NotImplementedError

    def elaborate(self, platform):
        p = self.params
        m = Module()
        extra = max(p.pipeline - 3, 0)
        valid = _delay(m, self.in_valid, extra, "in_valid")
        clear = _delay(m, self.in_clear, extra, "in_clear")
        dense = _delay(m, self.in_dense, extra, "in_dense") if hasattr(self, "in_dense") else None
        act = _delay(m, self.in_act.as_value(), extra, "in_act")
        w = _delay(m, self.in_w.as_value(), extra, "in_w")
        meta = _delay(m, self.in_meta, extra, "in_meta") if hasattr(self, "in_meta") else None
        a_shape, w_shape, _ = lane_shapes(p)
        act = data.ArrayLayout(a_shape, len(self.in_act))(act) if extra else self.in_act
        w = data.ArrayLayout(w_shape, len(self.in_w))(w) if extra else self.in_w

        groups = self._operands(m, act, w, meta, dense)
        single = len(groups) == 1
        npairs = sum(len(pairs) for pairs, _ in groups)
        if p.pipeline >= 3:  # register after decode + mux
            regs, k = [], 0
            for pairs, _ in groups:
                rp = []
                for a, b in pairs:
                    ra, rb = Signal(a_shape, name=f"op_a{k}"), Signal(w_shape, name=f"op_w{k}")
                    m.d.sync += [ra.eq(a), rb.eq(b)]
                    rp.append((ra, rb))
                    k += 1
                regs.append(rp)
            valid, clear = (_delay(m, s, 1, nm) for s, nm in ((valid, "op_valid"), (clear, "op_clear")))
            groups = [
                (
                    rp,
                    err
                    if not single and isinstance(err, Const)
                    else _delay(m, err, 1, "op_err" if single else f"op_err{g}"),
                )
                for g, (rp, (_, err)) in enumerate(zip(regs, groups, strict=True))
            ]
        if p.is_float:
            return self._elaborate_float(m, groups, valid, clear)
        if single:
            ((pairs, err),) = groups
            total = sum_tree([a * b for a, b in pairs])
            contrib = Mux(err, 0, total)  # an expression: a named wire would be an unused alias
        else:  # each group's products masked by its own code
            contrib = sum_tree([Mux(e, 0, sum_tree([a * b for a, b in pairs])) for pairs, e in groups])
            errs = [e for _, e in groups if not isinstance(e, Const)]  # 1:M codes are always legal
            err = errs[0] if errs else Const(0, 1)
            for e in errs[1:]:
                err = err | e
        # bits above ACC cannot change a sum taken modulo 2**ACC: truncate before registering
        sum_bits = min(p.product_bits + max(npairs - 1, 0).bit_length(), p.acc_bits)
        if len(contrib) > sum_bits:
            contrib = contrib[:sum_bits].as_signed()
        if p.pipeline >= 2:  # register after multipliers
            preg = Signal(signed(sum_bits), name="prod")
            m.d.sync += preg.eq(contrib)
            contrib = preg
            valid, clear, err = (
                _delay(m, s, 1, nm) for s, nm in ((valid, "pr_valid"), (clear, "pr_clear"), (err, "pr_err"))
            )

        # the accumulator wraps modulo 2**ACC: the adder's carry-out is discarded by design
        ext = contrib
        base = Signal(signed(p.acc_bits), name="acc_base")
        m.d.comb += base.eq(Mux(clear, 0, self.out_acc))
        with m.If(valid):
            m.d.sync += self.out_acc.eq((base + ext)[: p.acc_bits])
        m.d.sync += [self.out_valid.eq(valid), self.out_meta_err.eq(valid & err)]
        return m

    def _elaborate_float(self, m: Module, groups, valid, clear):
        """Float datapath: one FPMul per pair, then the accumulator plus each product one binary32
        add at a time (group order, index order within a group); an illegal group adds nothing.
        pipeline >= 2 registers the binary32 products (and the groups' error bits)."""
        p = self.params
        single = len(groups) == 1
        prods = [
            (fp_products(m, pairs, p.fmt, "" if single else f"g{g}_"), err)
            for g, (pairs, err) in enumerate(groups)
        ]
        if p.pipeline >= 2:
            regs, k = [], 0
            for g, (outs, err) in enumerate(prods):
                rp = []
                for o in outs:
                    r = Signal(32, name=f"prod{k}")
                    m.d.sync += r.eq(o)
                    rp.append(r)
                    k += 1
                if not isinstance(err, Const):
                    err = _delay(m, err, 1, "pr_err" if single else f"pr_err{g}")
                regs.append((rp, err))
            prods = regs
            valid, clear = (_delay(m, s, 1, nm) for s, nm in ((valid, "pr_valid"), (clear, "pr_clear")))
        errs = [e for _, e in prods if not isinstance(e, Const)]
        err = errs[0] if errs else Const(0, 1)
        for e in errs[1:]:
            err = err | e
        base = Signal(32, name="acc_base")
        m.d.comb += base.eq(Mux(clear, 0, self.out_acc))
        total = fp_chain(m, base, prods, "")
        with m.If(valid):
            m.d.sync += self.out_acc.eq(total)
        m.d.sync += [self.out_valid.eq(valid), self.out_meta_err.eq(valid & err)]
        return m


class SparsePE(_PEBase):
    """N:M sparse PE: N multipliers fed by metadata-selected activations, one accumulator.

    ``dense_path=True``: M multipliers, one dense group or M/N N:M groups per cycle (module
    docstring, ``sparse_pe_dp``)."""

    def __init__(self, params: PEParams = DEFAULT_PE_PARAMS, dense_path: bool = False):
        _check_params(self, params)
        if not isinstance(dense_path, bool):
            self._MustUse__silence = True
            raise InputError(f"must be True or False, got {dense_path!r}", where="dense_path")
        self.dense_path = dense_path
        if dense_path:
            g = params.m // params.n
            super().__init__(params, params.m, meta_groups=g, act_groups=g, dense_bit=True)
        else:
            super().__init__(params, params.n, meta_groups=1)

    @property
    def groups_per_cycle(self) -> int:
        """N:M groups consumed per cycle: M/N with the dense path, else 1."""
        return self.params.m // self.params.n if self.dense_path else 1

    @property
    def multipliers(self) -> int:
        return self.params.m if self.dense_path else self.params.n

    def _operands(self, m, act, w, meta, dense):
        p = self.params
        if not self.dense_path:
            sel, err = decode_fields(m, meta, p.n, p.m)
            lanes = [act[i] for i in range(p.m)]
            return [
                (
                    [
                        (select_lane(m, lanes, sel[j], lane_shapes(p)[0], f"sel_act{j}"), w[j])
                        for j in range(p.n)
                    ],
                    err,
                )
            ]
        groups = []
        for g in range(self.groups_per_cycle):
            sel, err = decode_fields(
                m, meta[g * p.meta_bits : (g + 1) * p.meta_bits], p.n, p.m, prefix=f"g{g}_"
            )
            lanes = [act[g * p.m + i] for i in range(p.m)]
            pairs = []
            for j in range(p.n):
                k = g * p.n + j
                s = select_lane(m, lanes, sel[j], lane_shapes(p)[0], f"sel_act{k}")
                pairs.append((Mux(dense, act[k], s), w[k]))  # dense: lane k of group 0
            groups.append((pairs, err if isinstance(err, Const) else err & ~dense))  # 1:M: never illegal
        return groups


class DensePE(_PEBase):
    """Dense baseline: M multipliers, one per lane; ``out_meta_err`` tied to 0."""

    def __init__(self, params: PEParams = DEFAULT_PE_PARAMS):
        _check_params(self, params)
        super().__init__(params, params.m, meta_groups=0)

    def _operands(self, m, act, w, meta, dense):
        return [([(act[i], w[i]) for i in range(self.params.m)], Const(0, 1))]
