"""``SparseArray``: an R x C array of N:M sparse PEs (or dense, or dense-path PEs: ``kind``),
weight-stationary (default) or output-stationary.

Weight-stationary (``dataflow="ws"``, module ``sparse_array``; SCALE-Sim / TPU style). PE(r, c)
holds the N kept weights and the metadata of group r (reduction elements r*M .. r*M+M-1) of
output channel c. Activations flow right along rows, partial sums down columns; each row has
one metadata decoder per stationary code (decoding row r's packed meta word). The array computes
one tile ``out[c, t] = sum_k W[c, k] x[k, t]`` for K = R*M, C output channels and T vectors.

    clk, rst          synchronous, active-high reset (clears valid flags and partial sums; the
                      stationary weights are reset-less, loaded only by w_load: load before use)
    w_load     [0:0]  shift the stationary weights down one row: row 0 <- w_in, row r <- row r-1;
                      after R load edges row r holds the word loaded at step R-1-r (load the
                      bottom row first). Keep low while vectors are in flight.
    w_in       [C*N*W-1:0]   column c, kept weight j at [(c*N+j)*W +: W], signed
    w_meta_in  [C*N*b-1:0]   column c's code at [c*N*b +: N*b], b = log2(M)
    in_valid   [0:0]  one activation vector consumed per edge where high (gaps allowed)
    in_act     [R*M*A-1:0]   row r's group at [r*M*A +: M*A], lane i at [(r*M+i)*A +: A]; the
                      array skews rows internally (row r waits r cycles), the host does not
    out_valid  [0:0]  one pulse per consumed vector, in order, ``latency`` edges after it
    out_acc    [C*ACC-1:0]   column c's sum at [c*ACC +: ACC], signed, wrapped modulo 2**ACC
                      (outputs deskewed internally: all columns of one vector together)
    out_meta_err [C-1:0]     bit c: some stationary code of column c is illegal (its products are
                      dropped); static while the weights are held

Timing (WS), p = PE pipeline depth: vector sampled at edge e is registered on ``out_*`` at edge
e + latency - 1 with ``latency = R + C + p - 2`` (row skew R-1, column hop C-1, PE stages p).
One tile = R load edges, then T vectors back to back, then the drain::

    tile_cycles(R, C, T, "ws", pipeline=p) = R + (T + R + C - 2) + (p - 1)

counted from the first ``w_load`` edge through the edge that registers the last output vector
(it is visible on ``out_*`` in the next cycle). For p = 1 this is SCALE-Sim's weight-stationary
per-fold count 2R + C + T - 2 (weights preloaded over R cycles, T rows streamed with skew R-1,
drain C-1). It includes the weight load, the fill and the drain; it excludes SRAM/DRAM stalls
and folding (tiles run back to back, no double-buffered weights: fold cycles add).

Double-buffered weights (WS only, ``double_buffer=True``, modules ``<name>_db``): every PE holds
two weight sets (its weights, its codes and, for the dense path, its mode bit): the active set the
multipliers read, and a shadow set the next tile is loaded into while the array computes on the
active one (TPU v1 holds "one tile of weights plus one for double buffering", Jouppi et al., ISCA
2017). The ports are those above plus one::

    w_swap     [0:0]  the vector sampled at this edge (if any) is the last one of the active tile:
                      each PE copies its shadow set into its active set as that vector leaves it,
                      so every vector sampled at a later edge uses the new tile
    w_load, w_in, w_meta_in, w_dense_in   load the shadow set, R words a tile, bottom row first
                      (as above); the array numbers a tile's load edges k = 0..R-1 (gaps allowed)
    out_meta_err      bit c: the tile the output beside it was computed with has an illegal code
                      in column c (each vector's error bit travels with its partial sum, since the
                      active codes change while earlier outputs drain)

Inside, column c's load word (and mode bit) and its row enables are delayed by c edges (the weight
side's skew, as the activations' row skew), and the word numbered k shifts shadow rows 0..k only
(row r's enable is ``w_load and k >= r``). Row r of column c so keeps its shadow word until the
tile's first word reaches it, at edge L + c + r for a load starting at edge L, and holds its new
word after the column's last load edge + c. ``w_swap`` travels along the anti-diagonals (a delay
line of R + C - 2 registers): PE(r, c) swaps at edge s + r + c, when the vector sampled with it
passes. The host's rules, for a swap at edge s:

    the swapped-in tile's last load edge is at or before s - 1;
    the next tile's first load edge is at or after s (the swap edge itself is fine);
    no vector of the old tile follows s.

Running F tiles of T vectors back to back: tile 0 loads at edges 0..R-1 and swaps in at edge R;
tile f streams from the edge after its swap s_f, tile f+1 loads from s_f, and swaps in with tile
f's last vector, or on the first edge its load is done: s_{f+1} = s_f + max(T, R) (the stream and
the next load overlap; the swap waits for the later). From the first load edge through the edge
that registers the last output::

    run_cycles(R, C, T, F, double_buffer=True) = (R + 1) + (F - 1) max(T, R) + T + (R + C - 2) + (p - 1)

the first load and its swap edge; F - 1 folds at max(load, stream); the last fold's stream; the
fill (R - 1) and drain (C - 1) once; the PE pipeline once. Single-buffered the folds add,
F x tile_cycles = F (2R + C + T - 2 + p - 1), so double buffering saves
(F - 1)(min(T, R) + (R + C - 2) + (p - 1)) - 1 edges: one tile costs one edge more (its swap
edge), and every further tile saves its load (or its stream when T < R), its fill and drain and
its pipeline drain.

Output-stationary (``dataflow="os"``, same module name). PE(i, j) accumulates
``out[i, j] = sum_k W[i, k] x[k, j]`` for R output channels x C vectors over t groups of M
along K. Row i receives W's row i one compressed group per edge from the left; its metadata is
decoded once at the row entrance and the selects travel with the weights; column j receives
x's column j one group per edge from the top (both skewed internally).

    clk, rst; in_valid, in_clear (first group of a tile), in_last (last group of a tile)
    in_w       [R*N*W-1:0]   row i's kept weights at [(i*N+j)*W +: W]
    in_meta    [R*N*b-1:0]   row i's code at [i*N*b +: N*b]
    in_act     [C*M*A-1:0]   column j's group at [j*M*A +: M*A]
    out_valid  [0:0]  pulses once per tile, when the last group has reached every PE
    out_acc    [R*C*ACC-1:0] PE(i, j) at [(i*C+j)*ACC +: ACC]
    out_meta_err [R-1:0]     bit i: row i saw an illegal code in this tile (products dropped)

    tile_cycles(R, C, t, "os", pipeline=p) = t + R + C - 2 + (p - 1)

from the edge sampling the first group through the edge registering the last PE's sum (no
weight load: weights stream; no drain shift: all sums are read in parallel). The next tile may
start (``in_clear``) at the edge after ``out_valid`` has been seen.

Cell kinds (``kind=``; same skew, forwarding, partial-sum and deskew logic, same timing and
tile_cycles). Per PE: w = weights, g = metadata codes, L = activations per row (WS) or column
(OS) and step:

    "sparse"      module sparse_array     w = N, g = 1,   L = M      (the ports above)
    "dense"       module dense_array      w = M, g = 0,   L = M      no w_meta_in / in_meta;
                                          out_meta_err tied to 0
    "dense_path"  module sparse_array_dp  w = M, g = M/N, L = M*M/N  PE group k's code at
                  [k*N*b +: N*b] of the PE's meta field; WS: ``w_dense_in`` [0:0] is loaded
                  with each weight word and shifts down with it (the row's mode); OS:
                  ``in_dense`` [0:0] travels with the weights. Dense mode: lane i of the PE's
                  first activation group times weight i (the other groups and the codes are
                  ignored, K = R*M per WS tile); N:M mode: K = R*M*M/N per WS tile, an illegal
                  code drops its own group's products only.

Port widths follow: WS ``w_in`` [C*w*W], ``w_meta_in`` [C*g*N*b], ``in_act`` [R*L*A]; OS
``in_w`` [R*w*W], ``in_meta`` [R*g*N*b], ``in_act`` [C*L*A].
"""

from __future__ import annotations

from amaranth.hdl import Cat, Const, Module, Mux, Signal, signed
from amaranth.lib import data, wiring
from amaranth.lib.wiring import In, Out

from hw.errors import InputError
from hw.fp import fp_chain, fp_products
from hw.kinds import kind_names, pe_kind
from hw.params import DEFAULT_PE_PARAMS, MAX_DIM, PEParams
from hw.pe import decode_fields, lane_shapes, select_lane, sum_tree

__all__ = ["SparseArray", "tile_cycles", "run_cycles", "MAX_DIM", "KINDS", "array_module_name"]

#: The shipped PE kinds an array can be built of (hw.kinds: the N:M sparse PE, the dense PE, the
#: sparse PE with a full-rate dense path); a registered kind is built the same way.
KINDS = kind_names()


def array_module_name(kind: str = "sparse", double_buffer: bool = False) -> str:
    """Verilog module name of an array of ``kind`` cells (the same for WS and OS); ``_db`` appended
    for the double-buffered WS array."""
    return pe_kind(kind).array_module + ("_db" if double_buffer else "")


def tile_cycles(rows: int, cols: int, t: int, dataflow: str = "ws", *, pipeline: int = 1) -> int:
    """Cycles of one tile on the array, as simulated (see the module docstring for what counts).

    ws: rows (weight load) + t + rows + cols - 2 (stream with skew, drain) + pipeline - 1;
        t = activation vectors streamed. With pipeline 1 it equals SCALE-Sim's WS fold count
        2R + C + T - 2.
    os: t + rows + cols - 2 + pipeline - 1; t = groups of M streamed along K.
    """
    for name, v in (("rows", rows), ("cols", cols), ("t", t), ("pipeline", pipeline)):
        if not isinstance(v, int) or isinstance(v, bool) or v < 1:
            raise InputError(f"must be an integer >= 1, got {v!r}", where=name)
    if dataflow == "ws":
        return rows + (t + rows + cols - 2) + (pipeline - 1)
    if dataflow == "os":
        return t + rows + cols - 2 + (pipeline - 1)
    raise InputError(f"must be 'ws' or 'os', got {dataflow!r}", where="dataflow")


def run_cycles(
    rows: int, cols: int, t: int, tiles: int, *, pipeline: int = 1, double_buffer: bool = False
) -> int:
    """Cycles of ``tiles`` WS tiles of ``t`` vectors each, run back to back, from the first load
    edge through the edge registering the last output (module docstring): single-buffered
    ``tiles x tile_cycles``; double-buffered
    ``(R + 1) + (tiles - 1) max(t, R) + t + (R + C - 2) + (pipeline - 1)``."""
    if not isinstance(tiles, int) or isinstance(tiles, bool) or tiles < 1:
        raise InputError(f"must be an integer >= 1, got {tiles!r}", where="tiles")
    one = tile_cycles(rows, cols, t, "ws", pipeline=pipeline)
    if not double_buffer:
        return tiles * one
    return (rows + 1) + (tiles - 1) * max(t, rows) + t + (rows + cols - 2) + (pipeline - 1)


def _taps(m: Module, value, stages: int, name: str) -> list:
    """[value, value delayed 1, ..., value delayed ``stages``] (registers reset to 0)."""
    out = [value]
    for k in range(stages):
        reg = Signal(value.shape(), name=f"{name}_d{k}")
        m.d.sync += reg.eq(out[-1])
        out.append(reg)
    return out


def _delay(m: Module, value, stages: int, name: str):
    for k in range(stages):
        reg = Signal(value.shape(), name=f"{name}_d{k}")
        m.d.sync += reg.eq(value)
        value = reg
    return value


class SparseArray(wiring.Component):
    """R x C array of PEs of one ``kind`` (``"sparse"``, ``"dense"``, ``"dense_path"``); see the
    module docstring for ports and timing. The skew, forwarding, partial-sum and deskew logic is
    shared; only the cell's operands differ (``w_lanes`` weights, ``meta_groups`` codes and
    ``act_lanes`` activations per PE and step)."""

    def __init__(
        self,
        rows: int,
        cols: int,
        params: PEParams = DEFAULT_PE_PARAMS,
        dataflow: str = "ws",
        kind: str = "sparse",
        double_buffer: bool = False,
    ):
        try:
            for name, v in (("rows", rows), ("cols", cols)):
                if not isinstance(v, int) or isinstance(v, bool) or not 1 <= v <= MAX_DIM:
                    raise InputError(f"must be an integer between 1 and {MAX_DIM}, got {v!r}", where=name)
            if not isinstance(params, PEParams):
                raise InputError(f"expected PEParams, got {type(params).__name__}", where="params")
            if dataflow not in ("ws", "os"):
                raise InputError(f"must be 'ws' or 'os', got {dataflow!r}", where="dataflow")
            array_module_name(kind)
            if not isinstance(double_buffer, bool):
                raise InputError(f"must be True or False, got {double_buffer!r}", where="double_buffer")
            if double_buffer and dataflow != "ws":
                raise InputError(
                    "double-buffered weights need stationary weights: dataflow ws", where="double_buffer"
                )
        except InputError:
            self._MustUse__silence = True
            raise
        self.rows, self.cols, self.params, self.dataflow, self.kind = rows, cols, params, dataflow, kind
        self.double_buffer = double_buffer
        p = params
        a_shape, w_shape, acc_shape = lane_shapes(p)
        act = data.ArrayLayout(a_shape, self.act_lanes)
        kept = data.ArrayLayout(w_shape, self.w_lanes)
        mb = self.meta_groups * p.meta_bits
        dp = self.spec.dense_mode
        if dataflow == "ws":
            ports = {"w_load": In(1)}
            if double_buffer:
                ports["w_swap"] = In(1)
            ports["w_in"] = In(data.ArrayLayout(kept, cols))
            if mb:
                ports["w_meta_in"] = In(cols * mb)
            if dp:
                ports["w_dense_in"] = In(1)
            ports.update(
                {
                    "in_valid": In(1),
                    "in_act": In(data.ArrayLayout(act, rows)),
                    "out_valid": Out(1),
                    "out_acc": Out(data.ArrayLayout(acc_shape, cols)),
                    "out_meta_err": Out(cols),
                }
            )
        else:
            ports = {"in_valid": In(1), "in_clear": In(1), "in_last": In(1)}
            if dp:
                ports["in_dense"] = In(1)
            ports["in_w"] = In(data.ArrayLayout(kept, rows))
            if mb:
                ports["in_meta"] = In(rows * mb)
            ports.update(
                {
                    "in_act": In(data.ArrayLayout(act, cols)),
                    "out_valid": Out(1),
                    "out_acc": Out(data.ArrayLayout(acc_shape, rows * cols)),
                    "out_meta_err": Out(rows),
                }
            )
        super().__init__(ports)

    # -- the cell kind ------------------------------------------------------------------------
    @property
    def spec(self):
        """The kind's registry row (hw.kinds.PEKind)."""
        return pe_kind(self.kind)

    @property
    def module_name(self) -> str:
        return array_module_name(self.kind, self.double_buffer)

    @property
    def w_lanes(self) -> int:
        """Weights one PE holds (WS) or takes per step (OS): N sparse, M dense and dense-path."""
        return self.spec.weights(self.params.n, self.params.m)

    @property
    def meta_groups(self) -> int:
        """Metadata codes per PE: 1 sparse, 0 dense, M/N dense-path."""
        return self.spec.groups(self.params.n, self.params.m)

    @property
    def act_lanes(self) -> int:
        """Activations per row (WS) or column (OS) per step: M, or M*M/N for the dense path."""
        return self.spec.acts(self.params.n, self.params.m)

    @property
    def k_per_step(self) -> int:
        """Reduction elements one PE covers per step: M; M*M/N for the dense path in N:M mode
        (M in its dense mode)."""
        return self.act_lanes

    @property
    def multipliers(self) -> int:
        return self.w_lanes

    @property
    def latency(self) -> int:
        """WS: edges from a vector's sample to its output (R + C + p - 2, see the docstring);
        OS: edges from the last group's sample to ``out_valid`` (same expression)."""
        return self.rows + self.cols + self.params.pipeline - 2

    @property
    def load_cycles(self) -> int:
        """Weight-load edges per tile (R for WS, 0 for OS)."""
        return self.rows if self.dataflow == "ws" else 0

    @property
    def tile_cycles_formula(self) -> str:
        return (
            "R + (T + R + C - 2) + (pipeline - 1)"
            if self.dataflow == "ws"
            else "T + R + C - 2 + (pipeline - 1)  (T = groups along K)"
        )

    @property
    def run_cycles_formula(self) -> str:
        """F tiles of T vectors back to back (WS; :func:`run_cycles`)."""
        return (
            "(R + 1) + (F - 1) max(T, R) + T + (R + C - 2) + (pipeline - 1)"
            if self.double_buffer
            else "F (R + (T + R + C - 2) + (pipeline - 1))"
        )

    def tile_cycles(self, t: int) -> int:
        return tile_cycles(self.rows, self.cols, t, self.dataflow, pipeline=self.params.pipeline)

    def run_cycles(self, t: int, tiles: int) -> int:
        if self.dataflow != "ws":
            raise InputError("run_cycles counts weight-stationary tiles", where="dataflow")
        return run_cycles(
            self.rows, self.cols, t, tiles, pipeline=self.params.pipeline, double_buffer=self.double_buffer
        )

    # -- shared PE datapath ---------------------------------------------------------------
    def _decode(self, m: Module, code, tag: str):
        """[(sel fields, err)] of the cell's ``meta_groups`` codes packed in ``code``."""
        p = self.params
        if self.meta_groups == 1:
            return [decode_fields(m, code, p.n, p.m, prefix=f"{tag}_")]
        return [
            decode_fields(m, code[g * p.meta_bits : (g + 1) * p.meta_bits], p.n, p.m, prefix=f"{tag}_g{g}_")
            for g in range(self.meta_groups)
        ]

    def _cell_err(self, dec, dense):
        """The cell's error bit: any group's illegal code (never in dense mode); 0 for dense cells."""
        if not dec:
            return Const(0, 1)
        if all(isinstance(err, Const) for _, err in dec):  # 1:M codes are always legal
            return Const(0, 1)
        e = dec[0][1]
        for _, b in dec[1:]:
            e = e | b
        return e if dense is None else e & ~dense

    def _contrib(self, m: Module, act_lanes, weights, dec, dense, tag: str):
        """The cell's masked product sum, delayed by pipeline-1 registers. ``dec``: [(sel, err)]
        per metadata group (empty for dense cells); ``dense``: the dense-path mode bit or None."""
        p = self.params
        if not self.meta_groups:
            terms = [sum_tree([act_lanes[i] * weights[i] for i in range(self.w_lanes)])]
        else:
            terms = []
            for g, (sel, err) in enumerate(dec):
                prods = []
                for j in range(p.n):
                    k = g * p.n + j
                    a = select_lane(
                        m, act_lanes[g * p.m : (g + 1) * p.m], sel[j], signed(p.act_bits), f"{tag}_a{k}"
                    )
                    if dense is not None:
                        a = Mux(dense, act_lanes[k], a)  # dense mode: lane k of group 0
                    prods.append(a * weights[k])
                masked = err if dense is None or isinstance(err, Const) else err & ~dense
                terms.append(Mux(masked, 0, sum_tree(prods)))
        # products above ACC bits cannot change a sum taken modulo 2**ACC: truncate before registering
        width = min(p.product_bits + max(self.multipliers - 1, 0).bit_length(), p.acc_bits)
        contrib = sum_tree(terms)
        if len(contrib) > width:
            contrib = contrib[:width].as_signed()
        return _delay(m, contrib, p.pipeline - 1, f"{tag}_prod")

    def _fp_groups(self, m: Module, act_lanes, weights, dec, dense, tag: str):
        """Float cells: [(binary32 products, err)] per product group in addition order (lane order
        for dense cells, metadata group then index order otherwise), each delayed by pipeline-1."""
        p = self.params
        if not self.meta_groups:
            groups = [([(act_lanes[i], weights[i]) for i in range(self.w_lanes)], Const(0, 1))]
        else:
            groups = []
            for g, (sel, err) in enumerate(dec):
                pairs = []
                for j in range(p.n):
                    k = g * p.n + j
                    a = select_lane(
                        m, act_lanes[g * p.m : (g + 1) * p.m], sel[j], lane_shapes(p)[0], f"{tag}_a{k}"
                    )
                    if dense is not None:
                        a = Mux(dense, act_lanes[k], a)
                    pairs.append((a, weights[k]))
                groups.append((pairs, err if dense is None or isinstance(err, Const) else err & ~dense))
        out = []
        for g, (pairs, err) in enumerate(groups):
            prods = [
                _delay(m, x, p.pipeline - 1, f"{tag}_prod{g}_{j}")
                for j, x in enumerate(fp_products(m, pairs, p.fmt, f"{tag}_g{g}_"))
            ]
            if not isinstance(err, Const):
                err = _delay(m, err, p.pipeline - 1, f"{tag}_err{g}")
            out.append((prods, err))
        return out

    def elaborate(self, platform):
        return self._elaborate_ws() if self.dataflow == "ws" else self._elaborate_os()

    def _elaborate_ws(self):
        p, R, C = self.params, self.rows, self.cols
        m = Module()
        mb = self.meta_groups * p.meta_bits
        wkept = data.ArrayLayout(lane_shapes(p)[1], self.w_lanes)
        # the stationary registers are reset-less: ``w_load`` (``w_swap`` when double-buffered) alone
        # enables them, so synthesis maps them to enable flip-flops (Yosys $_DFFE_), which a
        # clock-gating pass turns into one gated clock per enable (a reset with priority over the
        # enable, $_SDFFE_, blocks it)
        wreg = [[Signal(wkept, name=f"w_r{r}_c{c}", reset_less=True) for c in range(C)] for r in range(R)]
        mreg = (
            [[Signal(mb, name=f"meta_r{r}_c{c}", reset_less=True) for c in range(C)] for r in range(R)]
            if mb
            else None
        )
        if self.double_buffer:
            # the dense path's mode bit is per PE here: the swap reaches a row's PEs one edge apart
            dmode = self._ws_weight_sets(m, wreg, mreg)
        else:
            dreg = (
                [Signal(name=f"dense_r{r}", reset_less=True) for r in range(R)]
                if self.spec.dense_mode
                else None
            )
            with m.If(self.w_load):
                for c in range(C):
                    m.d.sync += wreg[0][c].eq(self.w_in[c])
                    if mb:
                        m.d.sync += mreg[0][c].eq(self.w_meta_in[c * mb : (c + 1) * mb])
                    for r in range(1, R):
                        m.d.sync += wreg[r][c].eq(wreg[r - 1][c])
                        if mb:
                            m.d.sync += mreg[r][c].eq(mreg[r - 1][c])
                if dreg:
                    m.d.sync += dreg[0].eq(self.w_dense_in)
                    for r in range(1, R):
                        m.d.sync += dreg[r].eq(dreg[r - 1])
            dmode = [[dreg[r]] * C for r in range(R)] if dreg else None
        # metadata decoding per row: the row's C stationary codes
        dec = [[self._decode(m, mreg[r][c], f"r{r}_c{c}") if mb else [] for c in range(C)] for r in range(R)]
        col_err = [0] * C
        for c in range(C):
            bits = [self._cell_err(dec[r][c], dmode[r][c] if dmode else None) for r in range(R)]
            e = bits[0]
            for b in bits[1:]:
                e = e | b
            col_err[c] = e
        # double-buffered: the active codes change while earlier outputs drain, so each vector's error
        # bit travels down the column with its partial sum (1:M and dense cells have no error)
        err_in = [None] * C if self.double_buffer and mb and p.n > 1 else None
        psum_in = [None] * C
        for r in range(R):
            act = _delay(m, self.in_act[r].as_value(), r, f"skew_r{r}")
            for c in range(C):
                lanes_view = data.ArrayLayout(lane_shapes(p)[0], self.act_lanes)(act)
                lanes = [lanes_view[i] for i in range(self.act_lanes)]
                psum = Signal(lane_shapes(p)[2], name=f"psum_r{r}_c{c}")
                if p.is_float:  # psum_in + this cell's products, one binary32 add at a time
                    groups = self._fp_groups(
                        m, lanes, wreg[r][c], dec[r][c], dmode[r][c] if dmode else None, f"pe_r{r}_c{c}"
                    )
                    base = Const(0, 32) if psum_in[c] is None else psum_in[c]
                    m.d.sync += psum.eq(fp_chain(m, base, groups, f"pe_r{r}_c{c}_"))
                    contrib = None
                else:
                    contrib = self._contrib(
                        m, lanes, wreg[r][c], dec[r][c], dmode[r][c] if dmode else None, f"pe_r{r}_c{c}"
                    )
                if contrib is None:
                    pass
                elif psum_in[c] is None:
                    m.d.sync += psum.eq(contrib)
                else:
                    m.d.sync += psum.eq((psum_in[c] + contrib)[: p.acc_bits])
                psum_in[c] = psum
                if err_in is not None:
                    e = _delay(
                        m,
                        self._cell_err(dec[r][c], dmode[r][c] if dmode else None),
                        p.pipeline - 1,
                        f"pe_r{r}_c{c}_err",
                    )
                    reg = Signal(name=f"perr_r{r}_c{c}")
                    m.d.sync += reg.eq(e if err_in[c] is None else err_in[c] | e)
                    err_in[c] = reg
                if c + 1 < C:
                    nxt = Signal(act.shape(), name=f"act_r{r}_c{c}")
                    m.d.sync += nxt.eq(act)
                    act = nxt
        for c in range(C):
            m.d.comb += self.out_acc[c].eq(_delay(m, psum_in[c], C - 1 - c, f"deskew_c{c}"))
            if not self.double_buffer:
                m.d.comb += self.out_meta_err[c].eq(col_err[c])
            elif err_in is not None:
                m.d.comb += self.out_meta_err[c].eq(_delay(m, err_in[c], C - 1 - c, f"deskew_err_c{c}"))
        m.d.sync += self.out_valid.eq(_delay(m, self.in_valid, self.latency - 1, "valid"))
        return m

    def _ws_weight_sets(self, m: Module, wreg, mreg):
        """The double-buffered load path into the active registers ``wreg`` / ``mreg`` (module
        docstring): column-skewed load words and enables, shadow registers that shift down behind
        the load wave, the swap along the anti-diagonals. Returns the per-PE active mode bits of a
        dense-path array (else None)."""
        p, R, C = self.params, self.rows, self.cols
        mb = self.meta_groups * p.meta_bits
        dp = self.spec.dense_mode
        wkept = data.ArrayLayout(lane_shapes(p)[1], self.w_lanes)
        # row r's load enable: w_load for the tile's words k >= r, k = 0..R-1 counting the tile's
        # load edges in a thermometer code (bit r-1 set when k >= r)
        if R > 1:
            k_ge = Signal(R - 1, name="w_load_k")
            with m.If(self.w_load):
                m.d.sync += k_ge.eq(Mux(k_ge[R - 2], 0, Cat(Const(1, 1), k_ge[: R - 2])))
            rows_en = [self.w_load] + [self.w_load & k_ge[r - 1] for r in range(1, R)]
        else:
            rows_en = [self.w_load]
        # column c: the enables c edges late (column 0 reads the expressions themselves)
        load = [rows_en] + _taps(m, Cat(*rows_en), C - 1, "w_load_rows")[1:]
        swap = _taps(m, self.w_swap, R + C - 2, "w_swap")  # PE(r, c) swaps on swap[r + c]
        mode_in = _taps(m, self.w_dense_in, C - 1, "w_dense_in") if dp else None
        sw = [[Signal(wkept, name=f"wsh_r{r}_c{c}") for c in range(C)] for r in range(R)]
        sm = [[Signal(mb, name=f"metash_r{r}_c{c}") for c in range(C)] for r in range(R)] if mb else None
        sd = [[Signal(name=f"densesh_r{r}_c{c}") for c in range(C)] for r in range(R)] if dp else None
        dmode = [[Signal(name=f"dense_r{r}_c{c}") for c in range(C)] for r in range(R)] if dp else None
        for c in range(C):
            word = _delay(m, self.w_in[c].as_value(), c, f"w_skew_c{c}")
            code = _delay(m, self.w_meta_in[c * mb : (c + 1) * mb], c, f"meta_skew_c{c}") if mb else None
            for r in range(R):
                # row 0 takes the column's (skewed) load word; row r shifts once the wave has reached it
                # (sm is not None exactly when mb; sd, mode_in and dmode exactly when dp)
                with m.If(load[c][r]):
                    m.d.sync += sw[r][c].eq(word if r == 0 else sw[r - 1][c])
                    if sm is not None:
                        m.d.sync += sm[r][c].eq(code if r == 0 else sm[r - 1][c])
                    if sd is not None and mode_in is not None:
                        m.d.sync += sd[r][c].eq(mode_in[c] if r == 0 else sd[r - 1][c])
                with m.If(swap[r + c]):
                    m.d.sync += wreg[r][c].eq(sw[r][c])
                    if sm is not None:
                        m.d.sync += mreg[r][c].eq(sm[r][c])
                    if sd is not None and dmode is not None:
                        m.d.sync += dmode[r][c].eq(sd[r][c])
        return dmode

    def _elaborate_os(self):
        p, R, C = self.params, self.rows, self.cols
        m = Module()
        mb = self.meta_groups * p.meta_bits
        dp = self.spec.dense_mode
        # column inputs: activation groups, skewed by column
        acts = [_delay(m, self.in_act[j].as_value(), j, f"skew_c{j}") for j in range(C)]
        # valid and clear (and the dense-path mode bit) travel with the weights
        ctl = Cat(self.in_valid, self.in_clear, self.in_dense) if dp else Cat(self.in_valid, self.in_clear)
        fields = {"w": data.ArrayLayout(lane_shapes(p)[1], self.w_lanes)}
        carry_err = mb and p.n > 1  # 1:M codes are always legal: no error bits to carry
        if mb:
            fields["sel"] = mb
        if carry_err:
            fields["err"] = self.meta_groups
        fields["ctl"] = len(ctl)
        layout = data.StructLayout(fields)
        row_err = []
        for i in range(R):
            parts = [self.in_w[i].as_value()]
            if mb:
                code = self.in_meta[i * mb : (i + 1) * mb]
                dec = self._decode(m, code, f"row{i}")  # decoded once per row
                parts += [code, Cat(*[e for _, e in dec])] if carry_err else [code]
            b = _delay(m, Cat(*parts, ctl), i, f"skew_r{i}")
            for j in range(C):
                bv = layout(b)
                act = acts[j]
                lanes_view = data.ArrayLayout(lane_shapes(p)[0], self.act_lanes)(act)
                lanes = [lanes_view[k] for k in range(self.act_lanes)]
                dense = bv.ctl[2] if dp else None
                if mb:
                    b_idx = p.index_bits
                    cdec = [
                        (
                            [bv.sel[(g * p.n + k) * b_idx : (g * p.n + k + 1) * b_idx] for k in range(p.n)],
                            bv.err[g] if carry_err else Const(0, 1),
                        )
                        for g in range(self.meta_groups)
                    ]
                else:
                    cdec = []
                if p.is_float:
                    fgroups = self._fp_groups(m, lanes, bv.w, cdec, dense, f"pe_r{i}_c{j}")
                else:
                    contrib = self._contrib(m, lanes, bv.w, cdec, dense, f"pe_r{i}_c{j}")
                c_ctl = _delay(m, bv.ctl[:2], p.pipeline - 1, f"pe_r{i}_c{j}_ctl")
                acc = Signal(lane_shapes(p)[2], name=f"acc_r{i}_c{j}")
                if mb:
                    c_err = _delay(m, self._cell_err(cdec, dense), p.pipeline - 1, f"pe_r{i}_c{j}_err")
                    errs = Signal(name=f"err_r{i}_c{j}")
                with m.If(c_ctl[0]):
                    if p.is_float:
                        m.d.sync += acc.eq(fp_chain(m, Mux(c_ctl[1], 0, acc), fgroups, f"pe_r{i}_c{j}_"))
                    else:
                        m.d.sync += acc.eq((Mux(c_ctl[1], 0, acc) + contrib)[: p.acc_bits])
                    if mb:
                        m.d.sync += errs.eq(Mux(c_ctl[1], 0, errs) | c_err)
                m.d.comb += self.out_acc[i * C + j].eq(acc)
                if j == C - 1:
                    row_err.append(errs if mb else Const(0, 1))
                # pass weights right and activations down
                if j + 1 < C:
                    nb = Signal(b.shape(), name=f"w_r{i}_c{j}")
                    m.d.sync += nb.eq(b)
                    b = nb
                if i + 1 < R:
                    na = Signal(act.shape(), name=f"act_r{i}_c{j}")
                    m.d.sync += na.eq(act)
                    acts[j] = na
        for i in range(R):
            m.d.comb += self.out_meta_err[i].eq(row_err[i])
        m.d.sync += self.out_valid.eq(_delay(m, self.in_valid & self.in_last, self.latency - 1, "done"))
        return m
