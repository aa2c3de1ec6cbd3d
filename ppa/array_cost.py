"""What an R x C array of PEs costs in transistors, flip-flops and logic depth: one method for
every PE kind (sparse, dense, dense-path) and dataflow (WS, OS), each from its own array RTL
(hw.array.SparseArray(..., dataflow=, kind=)).

Weight-stationary: row-resolved, from synthesised columns of the array itself:
    T(R, C) = t0 + C sum_{r<R} t_r + s [L A R (C-1) + L A R (R-1)/2 + P_{R-1} C (C-1)/2 + (R+C-2) + D R]
t_r: one PE cell of row r (weights/metadata held, decode, muxes, multipliers, the partial-sum
adder and register of row r); t0: what is shared; s: one register bit (D flip-flop +
synchronous-reset gate, synthesised: 22 transistors); the bracket counts activation-forwarding,
row-skew and column-deskew register bits and the valid chain; P_r is the partial-sum width row r
keeps. L = activations per row and step (M; M*M/N for the dense path), D = 1 for the dense path
(its per-row mode bit), 0 otherwise. Row r's partial sum is declared ACC bits wide in
hw/array.py, but its value is a sign-extended sum of r + 1 products, and Yosys keeps only part of
it: for INT8 2:4, ACC 32 the rows keep 17, 18, 19, 28, 32, 32, ... bits (it trims the first rows
by width propagation, then stops), so a cell costs more the deeper its row until it reaches the
steady state (ACC bits in and out). t_r and P_r are measured per kind, not assumed: t0 and t_0
from the 1 x 1 and 1 x 2 arrays, t_r (r >= 1) as the increment from an r-row to an (r+1)-row
single column less the skew/valid register bits it adds, P_r from the same increment's
flip-flops (every cell holds the same weight and metadata registers, the rest is partial sum).
Columns are synthesised until the steady-state row appears (6 rows for INT8 2:4, about 20 s once
per PE configuration, cached on disk); every deeper row costs as that row. Flip-flops follow the
same sum (exact against whole-array synthesis at 2x2, 4x4, 8x8), and so do leakage (per
transistor) and clock power (per flip-flop). The dense array has no metadata decoders, the
dense-path array M/N per PE. Checked against whole-array synthesis in tests/bench: 2x2 0.969, 4x4
0.996, 8x8 1.009, 16x16 1.025. The residual is ABC's per-row noise: single-column increments of
identical steady rows scatter by about +-5 % (9.1k to 10.5k transistors for INT8 2:4), and the
16x16 array implies about 9.2k per steady cell against the 9.6k measured, so large arrays come
out up to about 4 % high.

Output-stationary: every cell is alike (a full-width accumulator each, no partial-sum chain),
except that only the last column keeps the row's error flag (t_end per row):
    T(R, C) = t0 + R C t_cell + R t_end + s [L A C (C-1)/2 + B R (R-1)/2 + B R (C-1) + L A C (R-1) + (1+K)(R+C-2)]
B = data bits of the row bundle that travels right with the weights (weights, codes, their error
bits); the terms are the column skew of the activations, the row skew of the bundle, the bundle
forwarding and the activation forwarding, and the done chain; the bundle's K control bits
(valid, clear, and the dense path's mode bit) are alike in every row, so Yosys merges them into
one delay line: K (R + C - 2) more bits. t0, t_cell and
t_end come from the 1 x 1, 1 x 2 and 2 x 2 OS arrays of that kind.

Both are checked against whole-array synthesis at 2x2, 4x4 and 8x8 for every kind
(tests/ppa/test_array_cost.py, bench/bench_ppa_array.py).

Double-buffered WS arrays (``double_buffer=True``, hw.array.SparseArray(double_buffer=True)) are
costed from their own RTL: every cell term is the single-buffered one plus the shadow set (its
registers, the swap multiplexers, the PE's error bit), measured as the difference between the K-row
double- and single-buffered columns (K = the characterised depth) less their edge registers, over
K rows (ABC scatters single-row increments by 5-10 % of a cell, as much as the shadow set costs;
the whole-column difference averages that out). The edge registers they add are counted in the
bracket: the column-skewed load words, B (C-1) C/2 bits (B = the PE's weight and code bits; the
dense path's mode bit, C - 1, its mode now held in every PE instead of one per row), the
per-column row enables, R (C - 1), the tile's load-edge counter, R - 1, the swap delay line,
R + C - 2, and the error bits' deskew, C (C - 1)/2 (with metadata codes, N > 1).
"""

from __future__ import annotations

from dataclasses import dataclass, replace
from functools import lru_cache

from hw.errors import InputError
from hw.kinds import kind_names, kind_of, pe_kind as registered_kind
from hw.params import PEParams
from ppa import activity, characterisation, rtl, synth as _synth

__all__ = [
    "ArrayFacts",
    "array_facts",
    "synth_array",
    "array_transistors",
    "contrib_bits",
    "pe_kind",
    "array_shape",
    "array_memo",
    "check_kind",
    "check_double_buffer",
    "decoder_transistors",
    "MAX_CHARACTERISED_ROWS",
    "KINDS",
]

#: The shipped PE kinds (hw.kinds); every registered kind is costed the same way.
KINDS = kind_names()

#: Deepest column characterised when looking for the steady-state row (psum at the full
#: accumulator width in and out). Yosys reached it by row 5 for every configuration tried
#: (INT4/INT8, 1:4 and 2:4, ACC 16..64, pipeline 1..2), i.e. a 6 x 1 column.
MAX_CHARACTERISED_ROWS = 12


def pe_kind(sparse: bool = True, dense_path: bool = False) -> str:
    """``"dense"`` (sparse False), ``"dense_path"`` (sparse and dense_path) or ``"sparse"``
    (hw.kinds.kind_of)."""
    return kind_of(sparse, dense_path).name


def check_kind(kind: str, dataflow: str) -> None:
    """InputError unless ``kind`` is a PE kind and ``dataflow`` an array RTL (ws or os)."""
    registered_kind(kind)
    if dataflow not in ("ws", "os"):
        raise InputError(
            f"must be 'ws' or 'os' (ppa costs the IS array as WS), got {dataflow!r}", where="dataflow"
        )


@dataclass(frozen=True)
class ArrayShape:
    """Per-kind operand counts of one array cell (as hw.array.SparseArray declares them)."""

    act_lanes: int  # activations per row (WS) / column (OS) per step
    w_lanes: int  # weights per PE
    meta_groups: int  # metadata codes per PE
    multipliers: int
    mode_bit: int  # 1 for the dense path (its dense-mode bit), else 0


def array_shape(p: PEParams, kind: str) -> ArrayShape:
    spec = registered_kind(kind)
    w = spec.weights(p.n, p.m)
    return ArrayShape(spec.acts(p.n, p.m), w, spec.groups(p.n, p.m), w, int(spec.dense_mode))


def contrib_bits(p: PEParams, kind: str = "sparse") -> int:
    """Width of one PE's masked product sum as hw.array registers it (row 0's partial sum); a float
    array registers binary32 partial sums from row 0 on (so its column is steady from row 1)."""
    if p.is_float:
        return p.acc_bits
    mult = array_shape(p, kind).multipliers
    return min(p.product_bits + max(mult - 1, 0).bit_length(), p.acc_bits)


def os_bundle_bits(p: PEParams, kind: str) -> int:
    """Bits of the OS row bundle (weights, codes, error bits when N > 1, valid/clear[/dense])."""
    sh = array_shape(p, kind)
    meta = sh.meta_groups * p.meta_bits
    err = sh.meta_groups if (sh.meta_groups and p.n > 1) else 0
    return sh.w_lanes * p.weight_bits + meta + err + 2 + sh.mode_bit


@dataclass(frozen=True)
class ArrayFacts:
    """Array model terms (transistors, flip-flops, depth), see the module docstring.

    Weight-stationary: ``row_transistors[r]`` / ``row_flip_flops[r]``: one PE cell of row r with
    its share of the column (weight/metadata holding registers, decode, multiplexers,
    multipliers, the psum adder and register of row r, one OR of the column's error chain),
    measured as the increment from an r-row to an (r+1)-row column less the row-skew, valid-chain
    (and mode-bit) register bits that increment adds. ``row_psum_bits[r]``: the partial-sum bits
    row r keeps after synthesis. ``row_depth[r]``: logic depth of the (r+1)-row column. When
    ``steady`` the last entry is the steady-state row and stands for every row below it; rows
    beyond a non-steady characterisation are not modelled (ValueError).

    Output-stationary: one entry each (the uniform cell), ``steady`` True."""

    t0: float
    f0: float
    row_transistors: tuple[float, ...]
    row_flip_flops: tuple[float, ...]
    row_psum_bits: tuple[int, ...]
    row_depth: tuple[int, ...]
    steady: bool
    reg_bit_transistors: float
    decoder_transistors: int  # one metadata decoder
    pe_transistors: int  # the standalone PE of this kind, for reference
    pe_flip_flops: int
    note: str = ""  # set when the steady state was assumed rather than reached
    kind: str = "sparse"
    dataflow: str = "ws"
    decoders_per_pe: int = 1  # metadata decoders per PE (0 dense, M/N dense path)
    row_end_transistors: float = 0.0  # OS: per row, what only the last column's cell has (its error flag)
    row_end_flip_flops: float = 0.0
    double_buffer: bool = False  # WS with a shadow weight set per PE (hw.array double_buffer)

    # -- compatibility views of the row terms -------------------------------------------------
    @property
    def t_first(self) -> float:
        return self.row_transistors[0]

    @property
    def t_cell(self) -> float:
        """The deepest characterised row (the steady-state cell when ``steady``)."""
        return self.row_transistors[-1]

    @property
    def f_first(self) -> float:
        return self.row_flip_flops[0]

    @property
    def f_cell(self) -> float:
        return self.row_flip_flops[-1]

    @property
    def logic_depth(self) -> int:
        """Deepest stage of any characterised row (the steady-state row when ``steady``)."""
        return max(self.row_depth)

    # -- the model --------------------------------------------------------------------------
    def _rows(self, R: int) -> int:
        k = len(self.row_transistors)
        if R > k and not self.steady:
            raise ValueError(
                f"array facts characterise {k} rows without reaching the steady state; "
                f"ask array_facts(..., rows={R})"
            )
        return k

    def _column_sum(self, seq: tuple, R: int) -> float:
        k = self._rows(R)
        if R <= k:
            return float(sum(seq[:R]))
        return float(sum(seq)) + (R - k) * seq[-1]

    def psum_bits(self, r: int) -> int:
        """Partial-sum bits carried out of row r (the accumulator width for OS)."""
        k = self._rows(r + 1)
        return self.row_psum_bits[min(r, k - 1)]

    def edge_terms(self, p: PEParams, R: int, C: int) -> dict[str, float]:
        """Register bits outside the PE cells, by what they carry (see the module docstring)."""
        sh = array_shape(p, self.kind)
        la = sh.act_lanes * p.act_bits
        if self.dataflow == "os":
            # the bundle's control bits (valid, clear[, dense]) are the same in every row: Yosys
            # merges their skew/forward registers into one delay line of R + C - 2 stages
            ctl = 2 + sh.mode_bit
            b = os_bundle_bits(p, self.kind) - ctl
            return {
                "act_forward": la * C * (R - 1),
                "act_skew": la * C * (C - 1) / 2,
                "weight_forward": b * R * (C - 1),
                "weight_skew": b * R * (R - 1) / 2,
                "psum_deskew": 0.0,
                "control": (R + C - 2) * (1 + ctl),
            }
        if self.double_buffer:
            # the load words skewed by column, the dense path's mode bit likewise; valid, swap delay
            # lines, per-column row enables and load-edge counter; the error bits' deskew (with codes)
            word = sh.w_lanes * p.weight_bits + sh.meta_groups * p.meta_bits
            err = 1 if (sh.meta_groups and p.n > 1) else 0
            return {
                "act_forward": la * R * (C - 1),
                "act_skew": la * R * (R - 1) / 2,
                "weight_forward": 0.0,
                "weight_skew": word * C * (C - 1) / 2 + sh.mode_bit * (C - 1),
                "psum_deskew": self.psum_bits(R - 1) * C * (C - 1) / 2,
                "control": 2 * (R + C - 2) + R * (C - 1) + (R - 1) + err * C * (C - 1) / 2,
            }
        return {
            "act_forward": la * R * (C - 1),
            "act_skew": la * R * (R - 1) / 2,
            "weight_forward": 0.0,
            "weight_skew": 0.0,
            "psum_deskew": self.psum_bits(R - 1) * C * (C - 1) / 2,
            "control": (R + C - 2) + sh.mode_bit * R,
        }

    def load_bit_writes(self, p: PEParams, R: int, C: int) -> tuple[float, float]:
        """Register bits written when one WS weight tile is loaded (and, double-buffered, swapped
        in): (behind a load-enable multiplexer, plain registers). Single-buffered the tile shifts R
        words down all R rows: R R C words. Double-buffered shadow row r shifts from the tile's word
        r on, C R (R + 1)/2 words, the swap copies R C words into the active set, and the column
        skew passes R words through c plain registers in column c (and the dense path's mode bit
        likewise). Checked against the gate-level simulation of the synthesised arrays
        (tests/ppa/test_double_buffer_cost.py). OS: (0, 0), weights stream."""
        if self.dataflow == "os":
            return 0.0, 0.0
        sh = array_shape(p, self.kind)
        word = sh.w_lanes * p.weight_bits + sh.meta_groups * p.meta_bits
        if not self.double_buffer:
            return float(R * R * C * (word + sh.mode_bit)), 0.0
        muxed = (C * R * (R + 1) / 2 + R * C) * (word + sh.mode_bit)
        return muxed, R * (word * C * (C - 1) / 2 + sh.mode_bit * (C - 1))

    def edge_bits(self, p: PEParams, R: int, C: int) -> float:
        """Register bits outside the PE cells (sum of :meth:`edge_terms`)."""
        return float(sum(self.edge_terms(p, R, C).values()))

    def _cells(self, seq: tuple, end: float, R: int, C: int) -> float:
        if self.dataflow == "os":
            return R * C * seq[0] + R * end
        return C * self._column_sum(seq, R)

    def transistors(self, p: PEParams, R: int, C: int) -> float:
        return (
            self.t0
            + self._cells(self.row_transistors, self.row_end_transistors, R, C)
            + self.reg_bit_transistors * self.edge_bits(p, R, C)
        )

    def flip_flops(self, p: PEParams, R: int, C: int) -> float:
        return (
            self.f0
            + self._cells(self.row_flip_flops, self.row_end_flip_flops, R, C)
            + self.edge_bits(p, R, C)
        )

    def decoders(self, R: int, C: int) -> int:
        """Metadata decoders in the array: one per stationary code (WS, R x C x codes per PE) or,
        for OS, one per row entrance per code."""
        return (R if self.dataflow == "os" else R * C) * self.decoders_per_pe

    def depth(self, R: int) -> int:
        """Logic depth of an R-row array: its deepest row stage (the column's widest psum adder)."""
        if self.dataflow == "os":
            return self.row_depth[0]
        k = self._rows(R)
        return max(self.row_depth[: min(R, k)])


def check_double_buffer(double_buffer, dataflow: str) -> None:
    """InputError unless ``double_buffer`` is a bool, True only with the WS array RTL."""
    if not isinstance(double_buffer, bool):
        raise InputError(f"must be True or False, got {double_buffer!r}", where="double_buffer")
    if double_buffer and dataflow != "ws":
        raise InputError(
            "double-buffered weights are a weight-stationary array's (ppa costs IS as WS)",
            where="double_buffer",
        )


def array_memo(R: int, C: int, p: PEParams, kind: str, dataflow: str, double_buffer: bool = False) -> tuple:
    """The memo parameters of an array's synthesis and timing caches: the sparse single-buffered WS
    array keeps its original (R, C, p), so its cache entries stay valid; the double-buffered array
    adds the option."""
    if double_buffer:
        return (R, C, p, kind, dataflow, "double_buffer")
    return (R, C, p) if (kind, dataflow) == ("sparse", "ws") else (R, C, p, kind, dataflow)


def synth_array(
    p: PEParams,
    R: int,
    C: int,
    *,
    cache=None,
    kind: str = "sparse",
    dataflow: str = "ws",
    mapping: str = "area",
    double_buffer: bool = False,
) -> _synth.SynthResult:
    """Whole-array synthesis (hw SparseArray of ``kind`` cells, ``dataflow``, ``double_buffer``); with
    a warm cache or the shipped characterisation, without elaborating it
    (ppa.characterisation.synthesis). ``mapping="delay"``: the
    netlist the generic timing path times (ppa.synth.ABC_STEP)."""
    check_kind(kind, dataflow)
    check_double_buffer(double_buffer, dataflow)
    name = rtl.array_module(kind, double_buffer)  # as hw.array.array_module_name, without importing Amaranth
    return characterisation.synthesis(
        "hw.array.SparseArray",
        array_memo(R, C, p, kind, dataflow, double_buffer),
        name,
        lambda: rtl.array_verilog(p, R, C, kind, dataflow, double_buffer),
        cache=cache,
        mapping=mapping,
    )


@lru_cache(maxsize=512)
def _array_cost(
    p: PEParams,
    R: int,
    C: int,
    cache_key: str | None,
    kind: str = "sparse",
    dataflow: str = "ws",
    double_buffer: bool = False,
) -> tuple[int, int, int]:
    """(transistors, flip-flops, logic depth) of a small synthesised array, kept in memory."""
    r = synth_array(p, R, C, cache=cache_key, kind=kind, dataflow=dataflow, double_buffer=double_buffer)
    return r.transistors, r.flip_flops, r.logic_depth


@lru_cache(maxsize=64)
def _reg_bit(cache_key: str | None) -> float:
    return (
        characterisation.synthesis(
            "ppa.operators.Register", 32, "reg32", lambda: rtl.register_verilog(32)[0], cache=cache_key
        ).transistors
        / 32
    )


@lru_cache(maxsize=64)
def decoder_transistors(n: int, m: int, cache_key: str | None) -> int:
    """Transistors of one synthesised N:M metadata decoder (hw.pe.MetadataDecoder); ``cache_key``:
    ppa.synth.cache_key of the synthesis cache."""
    return characterisation.synthesis(
        "hw.pe.MetadataDecoder", (n, m), "meta_decoder", lambda: rtl.decoder_verilog(n, m), cache=cache_key
    ).transistors


def array_facts(
    p: PEParams,
    sparse: bool = True,
    cache: str | None = None,
    *,
    rows: int | None = None,
    kind: str | None = None,
    dataflow: str = "ws",
    double_buffer: bool = False,
) -> ArrayFacts:
    """Synthesise what the array model needs and return its terms.

    ``kind`` (default: ``"sparse"`` if ``sparse`` else ``"dense"``) and ``dataflow`` select the
    array RTL. WS: the 1 x 1 and 1 x 2 arrays (shared logic, first row, column edge), then columns
    of 2, 3, ... rows until the steady-state row is reached (or ``rows`` rows are characterised,
    if fewer suffice for the array asked about). OS: the 1 x 1 and 2 x 2 arrays. Both: one
    register bit and the metadata decoder. Each synthesis is cached on disk by ppa.synth and in
    memory here, so after the first call for a configuration an estimate costs microseconds."""
    kind = kind if kind is not None else ("sparse" if sparse else "dense")
    check_kind(kind, dataflow)
    check_double_buffer(double_buffer, dataflow)
    need = MAX_CHARACTERISED_ROWS if rows is None else max(1, min(int(rows), MAX_CHARACTERISED_ROWS))
    if dataflow == "os":
        need = 0
    return _array_facts(p, kind, cache, need, dataflow, double_buffer)


@lru_cache(maxsize=512)
def _array_facts(
    p: PEParams, kind, cache: str | None, need: int, dataflow: str = "ws", double_buffer: bool = False
) -> ArrayFacts:
    if isinstance(kind, bool):  # the former signature (p, sparse, cache, need)
        kind = "sparse" if kind else "dense"
    s = _reg_bit(cache)
    spec = registered_kind(kind)
    pe = activity.synth_pe(p, spec.sparse, cache=cache, dense_path=spec.dense_mode)
    sh = array_shape(p, kind)
    dec = decoder_transistors(p.n, p.m, cache) if sh.meta_groups else 0
    common = dict(
        reg_bit_transistors=s,
        decoder_transistors=dec,
        pe_transistors=pe.transistors,
        pe_flip_flops=pe.flip_flops,
        kind=kind,
        dataflow=dataflow,
        decoders_per_pe=sh.meta_groups,
        double_buffer=double_buffer,
    )
    probe = ArrayFacts(0.0, 0.0, (0.0,), (0.0,), (p.acc_bits,), (0,), True, **common)
    if dataflow == "os":
        # T(R, C) - s E(R, C) = t0 + R C t_cell + R t_end: three unknowns from 1x1, 1x2 and 2x2
        (t11, f11, d11), (t12, f12, d12), (t22, f22, d22) = (
            _array_cost(p, r, c, cache, kind, "os") for r, c in ((1, 1), (1, 2), (2, 2))
        )
        e11, e12, e22 = (probe.edge_bits(p, r, c) for r, c in ((1, 1), (1, 2), (2, 2)))

        def solve(a11, a12, a22, unit):
            x11, x12, x22 = a11 - unit * e11, a12 - unit * e12, a22 - unit * e22
            cell = x12 - x11  # one more cell in the row
            end = x22 - x11 - 3 * cell  # one more row: 3 more cells and its row end
            return x11 - cell - end, cell, end

        t0, t_cell, t_end = solve(t11, t12, t22, s)
        f0, f_cell, f_end = solve(f11, f12, f22, 1.0)
        return ArrayFacts(
            t0,
            f0,
            (t_cell,),
            (f_cell,),
            (p.acc_bits,),
            (max(d11, d12, d22),),
            True,
            row_end_transistors=t_end,
            row_end_flip_flops=f_end,
            **common,
        )
    if double_buffer:
        return _double_buffered(p, kind, cache, need, s)
    la = sh.act_lanes * p.act_bits
    w0 = contrib_bits(p, kind)
    t11, f11, d11 = _array_cost(p, 1, 1, cache, kind)
    t12, f12, _ = _array_cost(p, 1, 2, cache, kind)
    # T(1,2) - T(1,1) = t_row0 + s (L A forwarding + w0 deskew + 1 valid)
    t_rows = [t12 - t11 - s * (la + w0 + 1)]
    f_rows = [f12 - f11 - (la + w0 + 1)]
    widths, depths = [w0], [d11]
    t0, f0 = t11 - t_rows[0] - s * sh.mode_bit, f11 - f_rows[0] - sh.mode_bit
    prev_t, prev_f = t11, f11
    steady = False
    r = 1
    while r < need and not steady:
        t, f, d = _array_cost(p, r + 1, 1, cache, kind)
        # adding row r to an r-row column adds its cell, r row-skew stages of L A bits, 1 valid bit
        # (and the dense path's mode bit of the new row)
        extra = la * r + 1 + sh.mode_bit
        t_rows.append(t - prev_t - s * extra)
        f_rows.append(f - prev_f - extra)
        # every cell holds the same weight/metadata (and pipeline) registers: the rest is psum
        widths.append(int(min(max(w0 + f_rows[-1] - f_rows[0], w0), p.acc_bits)))
        depths.append(d)
        steady = widths[-1] == widths[-2] == p.acc_bits
        prev_t, prev_f = t, f
        r += 1
    note = ""
    if not steady and need >= MAX_CHARACTERISED_ROWS:
        steady = True
        note = (
            f"array model: partial sums still {widths[-1]} of {p.acc_bits} bits after {need} characterised "
            f"rows; deeper rows are costed as row {need - 1}"
        )
    return ArrayFacts(
        t0, f0, tuple(t_rows), tuple(f_rows), tuple(widths), tuple(depths), steady, note=note, **common
    )


def _double_buffered(p: PEParams, kind: str, cache: str | None, need: int, s: float) -> ArrayFacts:
    """The double-buffered WS array's terms (module docstring): the single-buffered array's, each
    cell plus the shadow set's cost, measured as the difference between the K-row double- and
    single-buffered columns (K = the characterised depth) less their edge registers, over K rows.
    Every row adds the same shadow registers and swap logic; the whole-column difference averages
    ABC's per-row scatter, which (+-5..10 % of a cell between single-row increments) is as large as
    the shadow set itself."""
    single = _array_facts(p, kind, cache, need, "ws", False)
    facts = replace(single, double_buffer=True)
    k = len(single.row_transistors)
    t_db, f_db, d_db = _array_cost(p, k, 1, cache, kind, "ws", True)
    t_sb, f_sb, _ = _array_cost(p, k, 1, cache, kind, "ws", False)
    e_db, e_sb = facts.edge_bits(p, k, 1), single.edge_bits(p, k, 1)
    dt = ((t_db - s * e_db) - (t_sb - s * e_sb)) / k
    df = ((f_db - e_db) - (f_sb - e_sb)) / k
    return replace(
        facts,
        row_transistors=tuple(t + dt for t in single.row_transistors),
        row_flip_flops=tuple(f + df for f in single.row_flip_flops),
        row_depth=single.row_depth[:-1] + (d_db,),
    )


def array_transistors(
    p: PEParams,
    R: int,
    C: int,
    *,
    sparse: bool = True,
    cache=None,
    kind: str | None = None,
    dataflow: str = "ws",
    double_buffer: bool = False,
) -> float:
    """Model transistor estimate of an R x C array (see the module docstring)."""
    return array_facts(
        p, sparse, _synth.cache_key(cache), rows=R, kind=kind, dataflow=dataflow, double_buffer=double_buffer
    ).transistors(p, R, C)
