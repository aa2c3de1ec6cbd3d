"""Analytical cycle model of an R x C systolic array running N:M-sparse workloads.

One closed-form model, vectorised over (design points x layers) with numpy broadcasting.

Compute (stall-free) cycles follow SCALE-Sim v3's folding rules exactly (``scalesim/compute/
systolic_{ws,os,is}.py``: each fold is a block of demand-matrix lines; the reported count is the
last line's index, hence the ``- 1``). With ``steps`` = reduction steps a PE row walks through:

* WS: folds = ceil(steps/R) * ceil(N/C), lines per fold = 2R + C + M - 2 (R to load weights,
  M activations, C-1 drain, R-1 skew)
* OS: folds = ceil(M/R) * ceil(N/C), lines per fold = steps + R + C - 2
* IS: folds = ceil(steps/R) * ceil(M/C), lines per fold = 2R + C + N - 2

``steps`` counts *stored* weights of a column divided by ``pe_k``, the stored-weight reduction
elements a PE consumes per cycle: 1 for SCALE-Sim's scalar PE; N for the sparsepe sparse PE (one
group of M activations + N kept weights per cycle, docs/design.md); M for a dense PE. A sparse
layer stores ceil(K/M)*N weights per column (SCALE-Sim's optimised mapping with BlockSize B stores
ceil(K/2B)*B, reproduced in ``mode="scalesim"``). A layer that cannot be pruned runs dense: on a
sparse-only PE each dense group takes M/N passes (rate N/M), on a PE with a dense path full rate.

Memory: double-buffered ifmap / filter / ofmap SRAMs. An operand whose data fits the active half
of its SRAM is fetched from DRAM once; otherwise it is re-streamed per fold that revisits it
(ifmap per column fold in WS/OS, filter per row fold in OS and per column fold in IS). Weights
move compressed, with log2(M) metadata bits per kept weight, counted separately. Stalls follow a
roofline per layer: double buffering hides DRAM time behind compute until the DRAM time exceeds
it, ``stall = max(0, dram_time - compute)``. In ``mode="sparsepe"`` all operands share one DRAM
bus of ``dram_gbps``; in ``mode="scalesim"`` each operand has its own port of ``port_words``
words/cycle, as in SCALE-Sim's USER bandwidth mode (``port_words=None`` = CALC mode, no stalls),
and the stall follows SCALE-Sim's own prefetch mechanism instead of physics: a circular window of
half the SRAM that only moves forward, so out-of-order demand costs whole laps of the operand
(see :func:`_scalesim_port_time`). That mode is for parity runs only; it charges several times
the physical traffic, which the default mode does not.
"""

from __future__ import annotations

import json
import math
from dataclasses import asdict, dataclass, field, fields

import numpy as np

from hw.errors import InputError
from hw.nm import check_nm
from sim.workloads import Workload

DATAFLOWS = ("ws", "os", "is")
MODES = ("sparsepe", "scalesim")


@dataclass(frozen=True)
class ArrayConfig:
    """One design point. SRAM sizes in KiB; ``sram_kb`` (total) is split equally unless the three
    per-buffer sizes are given. Defaults describe the sparsepe sparse PE: 2:4, ``pe_k = N`` (two
    kept weights per PE per cycle), sparse-only PE (dense fallback at N/M of the rate), INT8."""

    rows: int = 32  # 32 x 32 and 3 x 64 KiB SRAM: SCALE-Sim's stock scale.cfg
    cols: int = 32
    sram_kb: float | None = None
    ifmap_kb: float | None = None
    filter_kb: float | None = None
    ofmap_kb: float | None = None
    clock_mhz: float = 1000.0  # [A] default operating point, not a published figure
    dram_gbps: float = 64.0  # [A] default DRAM bandwidth, not a published figure
    dataflow: str = "ws"
    n: int = 2
    m: int = 4
    sparse: bool = True
    pe_k: int | None = None
    dense_path: bool = False
    act_bits: int = 8
    weight_bits: int = 8
    mode: str = "sparsepe"
    port_words: tuple[float, float, float] | None = None

    def __post_init__(self):
        def bad(param, msg):
            raise InputError(msg, where=f"parameter {param}")

        for p in ("rows", "cols"):
            v = getattr(self, p)
            if not isinstance(v, (int, np.integer)) or isinstance(v, bool) or v <= 0:
                bad(p, f"must be a positive integer, got {v!r}")
        for p in ("clock_mhz", "dram_gbps"):
            v = getattr(self, p)
            if not (isinstance(v, (int, float)) and v > 0 and math.isfinite(v)):
                bad(p, f"must be a positive number, got {v!r}")
        for p in ("sram_kb", "ifmap_kb", "filter_kb", "ofmap_kb"):
            v = getattr(self, p)
            if v is not None and not (isinstance(v, (int, float)) and v > 0):
                bad(p, f"must be a positive number of KiB, got {v!r}")
        if self.dataflow not in DATAFLOWS:
            bad("dataflow", f"unknown dataflow {self.dataflow!r} (ws, os or is)")
        if self.mode not in MODES:
            bad("mode", f"unknown mode {self.mode!r} ({', '.join(MODES)})")
        try:
            check_nm(self.n, self.m)
        except InputError as exc:
            bad("n:m", str(exc))
        if self.pe_k is not None and (not isinstance(self.pe_k, (int, np.integer)) or self.pe_k <= 0):
            bad("pe_k", f"must be a positive integer, got {self.pe_k!r}")
        for p in ("act_bits", "weight_bits"):
            if getattr(self, p) not in (4, 8, 16, 32):
                bad(p, f"must be 4, 8, 16 or 32, got {getattr(self, p)!r}")
        if self.port_words is not None and (len(self.port_words) != 3 or min(self.port_words) <= 0):
            bad("port_words", f"must be three positive words/cycle (ifmap, filter, ofmap), got {self.port_words!r}")

    @property
    def effective_pe_k(self) -> int:
        if self.pe_k is not None:
            return int(self.pe_k)
        if self.mode == "scalesim":
            return 1
        return self.n if self.sparse else self.m

    @property
    def sram_split_kb(self) -> tuple[float, float, float]:
        total = self.sram_kb if self.sram_kb is not None else 192.0  # SCALE-Sim scale.cfg: 3 x 64 KiB
        parts = [self.ifmap_kb, self.filter_kb, self.ofmap_kb]
        return tuple(float(p) if p is not None else total / 3 for p in parts)

    @property
    def dram_bytes_per_cycle(self) -> float:
        return self.dram_gbps * 1e9 / (self.clock_mhz * 1e6)


# ------------------------------------------------------------------------------------------------
# Layer and design-point arrays
# ------------------------------------------------------------------------------------------------

def layer_arrays(w: Workload) -> dict[str, np.ndarray]:
    """Per-layer columns (shape (L,)) for the vectorised model."""
    L = w.layers
    if not L:
        raise InputError("workload has no layers", where=f"workload {w.name!r}")
    i64 = np.int64
    return {
        "M": np.array([l.M for l in L], i64), "N": np.array([l.N for l in L], i64),
        "K": np.array([l.K for l in L], i64), "count": np.array([l.count for l in L], i64),
        "sparsifiable": np.array([l.sparsifiable for l in L], bool),
        "layer_n": np.array([l.nm[0] if l.nm else 0 for l in L], i64),
        "layer_m": np.array([l.nm[1] if l.nm else 0 for l in L], i64),
        "ifmap_unique": np.array([l.conv.ifmap_elems if l.conv else l.M * l.K for l in L], i64),
    }


_DESIGN_KEYS = ("rows", "cols", "ifmap_kb", "filter_kb", "ofmap_kb", "clock_mhz", "dram_gbps", "dataflow", "n",
                "m", "sparse", "pe_k", "dense_path", "act_bits", "weight_bits", "scalesim", "port_if", "port_f",
                "port_of", "has_ports")


def design_arrays(archs: list[ArrayConfig]) -> dict[str, np.ndarray]:
    """Design-point columns (shape (P, 1)) from a list of configs."""
    cols: dict[str, list] = {k: [] for k in _DESIGN_KEYS}
    for a in archs:
        fi, ff, fo = a.sram_split_kb
        pw = a.port_words or (1.0, 1.0, 1.0)
        vals = dict(rows=a.rows, cols=a.cols, ifmap_kb=fi, filter_kb=ff, ofmap_kb=fo, clock_mhz=a.clock_mhz,
                    dram_gbps=a.dram_gbps, dataflow=DATAFLOWS.index(a.dataflow), n=a.n, m=a.m, sparse=a.sparse,
                    pe_k=a.effective_pe_k, dense_path=a.dense_path, act_bits=a.act_bits, weight_bits=a.weight_bits,
                    scalesim=a.mode == "scalesim", port_if=pw[0], port_f=pw[1], port_of=pw[2],
                    has_ports=a.port_words is not None)
        for k in _DESIGN_KEYS:
            cols[k].append(vals[k])
    return {k: np.asarray(v)[:, None] for k, v in cols.items()}


def _cdiv(a, b):
    return -(-a // b)


def evaluate(la: dict[str, np.ndarray], d: dict[str, np.ndarray], *, force_dense: bool = False) -> dict[str, np.ndarray]:
    """The model: layer columns (L,) x design columns (P, 1) -> per (P, L) arrays (per layer
    *instance*; multiply by ``count`` for totals, done in :func:`_totals`)."""
    M, N, K = la["M"], la["N"], la["K"]
    R, C = d["rows"], d["cols"]
    n, m = d["n"], d["m"]
    ss = d["scalesim"]
    df = d["dataflow"]
    lm, ln = la["layer_m"], la["layer_n"]
    pattern_ok = (lm == 0) | ((lm == m) & (ln <= n))
    run_sparse = la["sparsifiable"] & pattern_ok & d["sparse"]
    if force_dense:
        run_sparse = np.zeros_like(run_sparse)
    pe_k = d["pe_k"]
    # stored weights per output column
    k_sparse = np.where(ss, _cdiv(K, 2 * m) * m, _cdiv(K, m) * n)
    k_dense = np.where(pe_k > 1, _cdiv(K, m) * m, K)
    k_st = np.where(run_sparse, k_sparse, k_dense)
    rate = np.where(~run_sparse & d["sparse"] & d["dense_path"], pe_k * m // n, pe_k)
    steps = _cdiv(k_st, rate)
    # SCALE-Sim applies sparsity to the WS mapping only (OS/IS keep the uncompressed ifmap K).
    steps_osis = np.where(ss, K, steps)
    is_ws, is_os = df == 0, df == 1
    steps_df = np.where(is_ws, steps, steps_osis)
    folds_r = np.where(is_os, _cdiv(M, R), _cdiv(steps_df, R))
    folds_c = np.where(df == 2, _cdiv(M, C), _cdiv(N, C))
    per_fold = np.where(is_os, steps_df + R + C - 2, 2 * R + C + np.where(df == 2, N, M) - 2)
    folds = folds_r * folds_c
    compute = folds * per_fold - 1

    ab, wb = d["act_bits"] / 8.0, d["weight_bits"] / 8.0
    meta_bits = np.log2(m)
    w_values = (N * k_st) * wb
    w_meta = np.where(run_sparse, N * k_st * meta_bits / 8.0, 0.0)
    ifmap_stream = (M * K) * ab
    ifmap_unique = np.minimum(la["ifmap_unique"], M * K) * ab
    ofmap = (M * N) * ab
    cap_if, cap_f, cap_of = (d[k] * 1024.0 / 2 for k in ("ifmap_kb", "filter_kb", "ofmap_kb"))  # active half
    # how often each operand is streamed from DRAM (1 when it stays resident on chip)
    fold_k = _cdiv(steps_df, R)
    if_fit = ifmap_unique <= cap_if
    if_refetch = np.where(df == 2, 1, _cdiv(N, C))
    dram_if = np.where(if_fit, ifmap_unique, ifmap_stream * if_refetch)
    # The loop schedule (which operand is re-streamed) is chosen from the dense footprint, so the
    # sparse and the dense run of a layer use the same schedule and the speedup isolates N:M.
    f_fit = (N * K) * wb <= cap_f
    tile_fit = (K * np.minimum(N, C)) * wb <= cap_f
    f_refetch = np.where(is_ws | f_fit, 1, np.where(is_os, np.where(tile_fit, 1, _cdiv(M, R)), _cdiv(M, C)))
    dram_w = w_values * f_refetch
    dram_meta = w_meta * f_refetch
    # partial sums spill when the output tile does not fit (WS / IS accumulate across K folds)
    psum_tile = np.where(df == 2, C * N, M * np.minimum(N, C)) * ab
    spill = np.where(~is_os & (fold_k > 1) & (psum_tile > cap_of), 2 * ofmap * (fold_k - 1), 0.0)
    dram_of = ofmap + spill
    dram_total = dram_if + dram_w + dram_meta + dram_of

    # stalls
    bpc = d["dram_gbps"] * 1e9 / (d["clock_mhz"] * 1e6)
    t_shared = dram_total / bpc
    use_ports = ss & d["has_ports"]
    if np.any(use_ports):  # SCALE-Sim USER-bandwidth parity only; skipped otherwise (it is most of the cost)
        t_ports = _scalesim_port_time(M, N, K, k_st, steps_df, R, C, df, la, d, ab, wb, folds_r, folds_c, per_fold,
                                      use_ports & ~run_sparse)
        mem_time = np.where(ss, np.where(use_ports, t_ports, 0.0), t_shared)
    else:
        mem_time = np.where(ss, 0.0, t_shared)
    stall = np.maximum(0.0, np.ceil(mem_time - compute))

    # SRAM traffic (array side) and MACs
    sram_if_rd = ifmap_stream * np.where(df == 2, 1, _cdiv(N, C))
    sram_f_rd = (w_values) * np.where(is_ws, 1, np.where(is_os, _cdiv(M, R), _cdiv(M, C)))
    sram_meta_rd = w_meta * np.where(is_ws, 1, np.where(is_os, _cdiv(M, R), _cdiv(M, C)))
    sram_of_wr = ofmap * np.where(is_os, 1, fold_k)
    sram_of_rd = ofmap * np.where(is_os, 0, fold_k - 1)
    performed = (M * N * k_st).astype(np.float64)
    capacity = (R * C * rate).astype(np.float64)
    util = performed / (capacity * (compute + 1 + stall))
    names = ("cycles", "stall_cycles", "utilization", "sparse", "dense_macs", "performed_mults", "dram_bytes",
             "dram_ifmap_bytes", "dram_weight_bytes", "metadata_bytes", "dram_ofmap_bytes", "sram_ifmap_read_bytes",
             "sram_filter_read_bytes", "sram_metadata_read_bytes", "sram_ofmap_write_bytes", "sram_ofmap_read_bytes",
             "sram_fill_bytes")
    vals = (compute.astype(np.int64), stall.astype(np.int64), util, run_sparse, (M * N * K).astype(np.float64), performed,
            dram_total, dram_if, dram_w, dram_meta, dram_of, sram_if_rd, sram_f_rd, sram_meta_rd, sram_of_wr, sram_of_rd,
            dram_if + dram_w + dram_meta)
    return dict(zip(names, np.broadcast_arrays(*vals)))


def _scalesim_port_time(M, N, K, k_st, steps, R, C, df, la, d, ab, wb, folds_r, folds_c, per_fold, exact=None):
    """Time (cycles, stalls included) by which SCALE-Sim's slowest DRAM port has served the layer,
    after SCALE-Sim 3.0.0's USER-bandwidth memory system (memory/read_buffer.py,
    write_buffer.py, read_port.py; word size 1 byte, active fraction 0.5).

    Read buffer: the prefetch matrix (E addresses) is cut into ``S = E // eps + 1`` sets of
    ``eps = ceil(words/100)`` addresses. A circular window of ``A = ceil(words/2 / eps)`` sets is
    loaded before the layer (free). A demand outside the window slides it forward by
    ``P = ceil(words/2 / eps)`` sets (``min(., S - A)``), one slide = ``ceil(words/2 / bw) + 1`` port
    cycles, chained on the previous slide (the port clock never waits for real time, so slack
    earned while compute-bound is spent later). The window only moves forward, so a demand that
    jumps back behind the window start costs a whole lap of ~S sets. The backward jumps come from
    the demand order: each pass over a re-streamed operand (WS/OS ifmap per column fold, IS filter
    per row fold) is one lap; a stacked, diagonal-rolled prefetch interleaves the first W-1
    diagonals of block f+1 with the tail of block f, so the start of every new fold is W(W-1)
    addresses behind the frontier; WS filter / IS ifmap rows are demanded in reverse order inside
    each fold ((R-1)*C back); OS re-demands the filter block of a column fold once per row fold
    (K*C + C(C-1) back). For dense layouts (``exact`` True) the slide count is SCALE-Sim's own, from
    exact window tracking (:func:`_scalesim_slides_one`; matches instrumented SCALE-Sim on 88 of 90
    operand counts, the rest are im2col duplicates in IS conv ifmaps). For the 2:4 optimised-mapping
    layout, not tracked, a jump of j addresses laps with probability min(1, j / (P*eps)) (boundaries
    every P*eps addresses). Given the slide count, this timing reproduces SCALE-Sim's Total Cycles
    to 0.8 % (median, 45 layers, bench/bench_sim_scalesim.py).

    The array then finishes the layer ``tail`` lines after an operand's last demand. Write buffer:
    every half buffer of ofmap words drains in ``ceil(half / bw) + 1`` cycles; drains of the words
    beyond the first full buffer bound the run (the final flush is not in SCALE-Sim's count).
    Returns the time at which the slowest port lets the layer end (compare with ``lines - 1``)."""
    is_ws, is_os, is_is = df == 0, df == 1, df == 2

    exact_if = exact_f = None
    if exact is not None and np.any(exact):
        # exact window tracking (dense layouts): SCALE-Sim's own count of new_prefetch() calls
        shape = np.broadcast_shapes(np.shape(M), np.shape(R), np.shape(exact))
        exact_if, exact_f = np.full(shape, np.nan), np.full(shape, np.nan)
        b = np.broadcast_arrays(df, M, N, K, R, C, np.floor(d["ifmap_kb"] * 1024.0), np.floor(d["filter_kb"] * 1024.0),
                                exact)
        for idx in zip(*np.nonzero(b[-1])):
            exact_if[idx], exact_f[idx] = _scalesim_slides_one(*(int(a[idx]) for a in b[:-1]))

    def port(E, kb, bw, passes, events, tail, exact_slides):
        words = np.floor(kb * 1024.0)
        eps = np.ceil(words / 100.0)
        act = np.ceil(words / 2.0)
        half = words - act
        S = np.floor(E / eps) + 1
        A = np.minimum(np.ceil(act / eps), S)
        P = np.minimum(np.ceil(half / eps), S - A)
        Pe = np.maximum(P, 1) * eps
        laps = sum(cnt * np.minimum(1.0, j / Pe) for cnt, j in events)
        slides = np.maximum(0.0, np.ceil(((passes + laps) * S - A) / np.maximum(P, 1)))
        if exact_slides is not None:
            slides = np.where(np.isnan(exact_slides), slides, exact_slides)
        t = slides * (np.ceil(half / bw) + 1) + tail
        return np.where(P > 0, t, 0.0)

    Fr, Fc = folds_r, folds_c
    E_if = (M * K).astype(np.float64)
    E_f = (N * np.where(is_ws, k_st, K)).astype(np.float64)
    diag = R * (R - 1)
    rev = (R - 1) * C
    t_if = port(E_if, d["ifmap_kb"], d["port_if"], np.where(is_is, 1, Fc),
                [(np.where(is_is, 0, Fc * (Fr - 1)), diag), (np.where(is_is, Fr * Fc, 0), rev)],
                np.where(is_is, per_fold - R, C - 1), exact_if)
    t_f = port(E_f, d["filter_kb"], d["port_f"], np.where(is_is, Fc, 1),
               [(np.where(is_ws, Fr * Fc, 0), rev), (np.where(is_is, Fc * (Fr - 1), 0), diag),
                (np.where(is_os, Fc * (Fr - 1), 0), K * C + C * (C - 1)), (np.where(is_os, Fc - 1, 0), C * (C - 1))],
               np.where(is_ws, per_fold - R, np.where(is_os, R - 1, C - 1)), exact_f)
    words_of = np.floor(d["ofmap_kb"] * 1024.0)
    drain = words_of - np.ceil(words_of / 2.0)
    of_writes = M * N * np.where(is_os, 1, _cdiv(steps, R))
    t_of = np.maximum(0.0, of_writes - words_of) / drain * (np.ceil(drain / d["port_of"]) + 1)
    return np.maximum(np.maximum(t_if, t_f), t_of)


# ------------------------------------------------------------------------------------------------
# SCALE-Sim USER-bandwidth read buffer: exact count of prefetch-window slides
# ------------------------------------------------------------------------------------------------
# SCALE-Sim 3.0.0 memory/read_buffer.py: the prefetch list (E addresses, after the compute module's
# stacking and diagonal ordering) is cut into S = E // eps + 1 sets of eps = ceil(words/100); the
# active window is A sets, starting at set 0; a demanded address outside it calls new_prefetch(),
# which moves the window start by P sets (mod S), until the address is inside. In absolute
# (unwrapped) set coordinates window k covers [kP, kP + A), A >= P, so a demand at set s served
# while the window starts at F lands at x = the first s + j*S >= F, and a miss (x >= F + A) moves
# the start to (floor((x - A) / P) + 1) * P. Along a run of demands whose sets rise by less than
# S - A at each step, only the run's first and last set matter. The runs are read off SCALE-Sim's
# layouts (compute/systolic_compute_{ws,os,is}.py): an operand whose prefetch list is the
# anti-diagonal order of stacked fold blocks (WS ifmap, OS both, IS filter) is demanded one block
# per fold in the same diagonal order (one rising run per fold); an operand prefetched row by row
# (WS filter, IS ifmap) is demanded block row by block row, rows in reverse (one run per row).
# Addresses are taken as distinct per operand-matrix cell; im2col duplicates (a conv ifmap address
# in several cells) can hit on another copy in SCALE-Sim, so IS conv ifmap counts may be high.

def _window_params(E: int, words: int) -> tuple[int, int, int, int]:
    eps = -(-words // 100)
    act = -(-words // 2)
    S = E // eps + 1
    A = min(-(-act // eps), S)
    P = min(-(-(words - act) // eps), S - A)
    return eps, S, A, P


def _diag_rank(H: int, W: int, r0: int, w_last: int, rows: np.ndarray, cols: np.ndarray) -> np.ndarray:
    """Rank among the valid cells, in anti-diagonal order (diagonal r + c ascending, row descending),
    of cells (rows, cols) of an H x W matrix whose rows >= r0 have valid columns < w_last only."""
    d = (rows + cols)[:, None]
    c = np.arange(W)[None, :]
    before = np.clip(np.minimum(H, d - c), 0, None).sum(1) + (np.minimum(d[:, 0], H - 1) - rows)
    pc = np.arange(w_last, W)[None, :]
    if pc.size and r0 < H:
        pads = np.clip(np.minimum(H, d - pc) - r0, 0, None).sum(1)
        r_same = d - pc
        pads += ((pc < cols[:, None]) & (r_same >= r0) & (r_same < H)).sum(1)
        before = before - pads
    return before


def _slides_runs(first, last, S: int, A: int, P: int) -> int:
    """Window slides over runs of rising sets (each run: first set, last set), in demand order."""
    F = 0
    for s, e in zip(first, last):
        x = s + S * (-(-(F - s) // S))
        if x >= F + A:
            F = ((x - A) // P + 1) * P
        x += e - s
        if x >= F + A:
            F = ((x - A) // P + 1) * P
    return F // P


def _slides_rows(tops, nrows, widths, eps: int, S: int, A: int, P: int) -> int:
    """Window slides for folds that demand ``nrows`` contiguous rows of ``width`` positions, top row
    (starting at position ``top``) first, then downwards; rows that cannot miss are skipped."""
    F = 0
    for top, nr, w in zip(tops, nrows, widths):
        j = 0
        while j < nr:
            p = top - j * w
            s, e = p // eps, (p + w - 1) // eps
            lap = -(-(F - s) // S)
            x = s + S * lap
            if x >= F + A:
                F = ((x - A) // P + 1) * P
            x += e - s
            if x >= F + A:
                F = ((x - A) // P + 1) * P
            # lower rows whose first set is still >= F in this lap are hits
            thr = F - lap * S
            j = nr if thr <= 0 else max(j + 1, (top - thr * eps) // w + 1)
    return F // P


def _block_runs(F_blk: int, T: int, W: int, n_valid: int, H_reps: tuple[int, int], outer_is_block: bool):
    """First/last prefetch ranks of each fold's block for an anti-diagonal-ordered operand: ``F_blk``
    blocks of T rows x W columns stacked (``n_valid`` valid columns in total, last block narrower),
    demanded in SCALE-Sim's loop order (for fc: for fr). ``H_reps`` = (outer count, inner count);
    the block index is the outer loop variable if ``outer_is_block`` else the inner one."""
    w_last = n_valid - (F_blk - 1) * W
    H = F_blk * T
    b = np.arange(F_blk)
    wb = np.where(b == F_blk - 1, w_last, W)
    r0 = (F_blk - 1) * T
    ends = _diag_rank(H, W, r0, w_last, np.concatenate((b * T, b * T + T - 1)), np.concatenate((0 * b, wb - 1)))
    first, last = ends[:F_blk], ends[F_blk:]
    n_out, n_in = H_reps
    if outer_is_block:
        return np.repeat(first, n_in), np.repeat(last, n_in)
    return np.tile(first, n_out), np.tile(last, n_out)


def _row_runs(K: int, Wt: int, R: int, C: int):
    """Fold tops for a row-major operand: blocks of K rows x C columns of a K x Wt matrix stacked
    (for fc), demanded (for fc: for fr) as rows fr*R .. fr*R+R'-1 in reverse."""
    Fc, Fr = -(-Wt // C), -(-K // R)
    fc = np.repeat(np.arange(Fc), Fr)
    fr = np.tile(np.arange(Fr), Fc)
    cw = np.minimum(C, Wt - fc * C)
    nr = np.minimum(R, K - fr * R)
    tops = fc * K * C + (fr * R + nr - 1) * cw
    return tops, nr, cw


def _scalesim_slides_one(df: int, M: int, N: int, K: int, R: int, C: int, words_if: int, words_f: int
                         ) -> tuple[int, int]:
    """Exact new_prefetch() counts of SCALE-Sim's ifmap and filter read buffers for one dense layer."""
    out = []
    for op, words in ((0, words_if), (1, words_f)):
        E = M * K if op == 0 else K * N
        eps, S, A, P = _window_params(E, words)
        if P <= 0:
            out.append(0)
            continue
        rows_kind = (df == 0 and op == 1) or (df == 2 and op == 0)
        if rows_kind:
            tops, nr, cw = _row_runs(K, N if op == 1 else M, R, C)
            out.append(_slides_rows(tops.tolist(), nr.tolist(), cw.tolist(), eps, S, A, P))
            continue
        if df == 0:  # WS ifmap: (M x K) split into K-column blocks of R; blocks fr, loop fc outer
            args = (-(-K // R), M, R, K, (-(-N // C), -(-K // R)), False)
        elif df == 1 and op == 0:  # OS ifmap: (K x M) split into M-blocks of R
            args = (-(-M // R), K, R, M, (-(-N // C), -(-M // R)), False)
        elif df == 1:  # OS filter: (K x N) split into N-blocks of C, block = outer fc
            args = (-(-N // C), K, C, N, (-(-N // C), -(-M // R)), True)
        else:  # IS filter: (N x K) split into K-blocks of R
            args = (-(-K // R), N, R, K, (-(-M // C), -(-K // R)), False)
        W = args[2]
        if (S - A - 1) * eps <= W + eps:  # a rank gap inside a run could skip a whole lap: walk every cell
            out.append(_slides_cells(df, op, M, N, K, R, C, eps, S, A, P))
            continue
        first, last = _block_runs(*args)
        out.append(_slides_runs((first // eps).tolist(), (last // eps).tolist(), S, A, P))
    return out[0], out[1]


def _diag_order(blocks: np.ndarray) -> np.ndarray:
    """(F, T, W) blocks -> (F, T*W) cells in anti-diagonal order (row descending within a diagonal)."""
    F, T, W = blocks.shape
    r, c = np.arange(T)[:, None], np.arange(W)[None, :]
    pos = _diag_rank(T, W, T, W, (r + 0 * c).ravel(), (c + 0 * r).ravel())
    out = np.empty((F, T * W), blocks.dtype)
    out[:, pos] = blocks.reshape(F, T * W)
    return out


def _split(a: np.ndarray, axis: int, w: int) -> np.ndarray:
    """Pad ``axis`` of a 2-D id matrix to a multiple of w with -1; return its (F, ., .) blocks."""
    F = -(-a.shape[axis] // w)
    pad = [(0, 0), (0, 0)]
    pad[axis] = (0, F * w - a.shape[axis])
    a = np.pad(a, pad, constant_values=-1)
    if axis == 1:
        return a.reshape(a.shape[0], F, w).transpose(1, 0, 2)
    return a.reshape(F, w, a.shape[1])


def _scalesim_orders(df: int, op: int, M: int, N: int, K: int, R: int, C: int):
    """SCALE-Sim's prefetch order and demand order of one operand, as operand-matrix cell ids
    (-1 = padding), built cell by cell after compute/systolic_compute_{ws,os,is}.py."""
    ifm = np.arange(M * K).reshape(M, K)
    fil = np.arange(K * N).reshape(K, N)
    Fr = -(-(M if df == 1 else K) // R)
    Fc = -(-(M if df == 2 else N) // C)

    def rows_reversed(mat):  # (K x W) blocks of C columns, per (fc, fr) rows fr*R.. reversed
        b = np.stack([_split(x, 1, C) for x in _split(mat, 0, R)], 1)
        return _split(mat, 1, C).ravel(), b[:, :, ::-1, :].ravel()

    if df == 0 and op == 0:
        b = _split(ifm, 1, R)
        return _diag_order(b.reshape(1, -1, R))[0], np.tile(_diag_order(b).ravel(), Fc)
    if df == 0:
        return rows_reversed(fil)
    if df == 1 and op == 0:
        b = _split(ifm.T, 1, R)
        return _diag_order(b.reshape(1, -1, R))[0], np.tile(_diag_order(b).ravel(), Fc)
    if df == 1:
        b = _split(fil, 1, C)
        return _diag_order(b.reshape(1, -1, C))[0], np.repeat(_diag_order(b), Fr, axis=0).ravel()
    if op == 0:
        return rows_reversed(ifm.T)
    b = _split(fil, 0, R).transpose(0, 2, 1)
    return _diag_order(b.reshape(1, -1, R))[0], np.tile(_diag_order(b).ravel(), Fc)


def _slides_cells(df, op, M, N, K, R, C, eps, S, A, P) -> int:
    """Window slides walking every demanded cell (runs split wherever the set falls or jumps by
    S - A or more)."""
    pf, dm = _scalesim_orders(df, op, M, N, K, R, C)
    pf = pf[pf >= 0]
    rank = np.empty(pf.size, np.int64)
    rank[pf] = np.arange(pf.size)
    s = rank[dm[dm >= 0]] // eps
    cut = np.flatnonzero((np.diff(s) < 0) | (np.diff(s) >= S - A)) + 1
    return _slides_runs(s[np.concatenate(([0], cut))].tolist(), s[np.concatenate((cut - 1, [s.size - 1]))].tolist(),
                        S, A, P)


# ------------------------------------------------------------------------------------------------
# Results
# ------------------------------------------------------------------------------------------------

_PER_LAYER_SUM = ("dense_macs", "performed_mults", "dram_bytes", "dram_ifmap_bytes", "dram_weight_bytes",
                  "metadata_bytes", "dram_ofmap_bytes", "sram_ifmap_read_bytes", "sram_filter_read_bytes",
                  "sram_metadata_read_bytes", "sram_ofmap_write_bytes", "sram_ofmap_read_bytes", "sram_fill_bytes")


def _totals(r: dict[str, np.ndarray], dense: dict[str, np.ndarray], count: np.ndarray,
            sparsifiable: np.ndarray, n: np.ndarray, m: np.ndarray, hw_sparse: np.ndarray) -> dict[str, np.ndarray]:
    """Network totals along the layer axis (last axis)."""
    busy = (r["cycles"] + 1 + r["stall_cycles"]) * count  # +1: cycles is the last-cycle index
    total = busy.sum(-1)
    out = {k: (r[k] * count).sum(-1) for k in _PER_LAYER_SUM}
    out["total_cycles"] = total
    out["compute_cycles"] = ((r["cycles"] + 1) * count).sum(-1)
    out["stall_cycles"] = (r["stall_cycles"] * count).sum(-1)
    out["stall_fraction"] = out["stall_cycles"] / total
    dense_busy = ((dense["cycles"] + 1 + dense["stall_cycles"]) * count).sum(-1)
    out["dense_total_cycles"] = dense_busy
    out["effective_speedup"] = dense_busy / total
    fb = (~r["sparse"]) & hw_sparse
    out["fallback_fraction"] = (busy * fb).sum(-1) / total
    # ideal bound: Amdahl over the dense run's time (stalls included, as in effective_speedup),
    # sparsifiable layers shrunk by N/M, fallback layers unchanged. A sparse layer cannot beat its
    # dense time x N/M (compute folds at best halve, weight traffic at best halves and metadata
    # adds to it), so effective_speedup <= ideal_speedup <= M/N.
    dc = (dense["cycles"] + 1 + dense["stall_cycles"]) * count
    can = sparsifiable & hw_sparse
    out["ideal_speedup"] = dc.sum(-1) / (dc * np.where(can, n / m, 1.0)).sum(-1)
    out["metadata_overhead"] = out["metadata_bytes"] / np.maximum(out["dram_weight_bytes"], 1e-30)
    out["utilization"] = (r["utilization"] * busy).sum(-1) / total
    return out


@dataclass
class NetworkResult:
    """Per-layer numpy arrays (length L, one entry per layer *instance*, ``count`` instances each)
    and network totals (layers weighted by count)."""

    workload: str
    arch: ArrayConfig
    names: list[str]
    kinds: list[str]
    counts: np.ndarray
    fallback_reasons: list[str | None]
    layers: dict[str, np.ndarray]
    totals: dict[str, float]

    @property
    def total_cycles(self) -> int:
        return int(self.totals["total_cycles"])

    @property
    def effective_speedup(self) -> float:
        return float(self.totals["effective_speedup"])

    @property
    def stall_fraction(self) -> float:
        return float(self.totals["stall_fraction"])

    def latency_s(self) -> float:
        return self.total_cycles / (self.arch.clock_mhz * 1e6)

    def to_dict(self) -> dict:
        lay = []
        for i, name in enumerate(self.names):
            row = {"name": name, "kind": self.kinds[i], "count": int(self.counts[i]),
                   "cycles": int(self.layers["cycles"][i]), "stall_cycles": int(self.layers["stall_cycles"][i]),
                   "utilization": round(float(self.layers["utilization"][i]), 6),
                   "sparse": bool(self.layers["sparse"][i]), "fallback_reason": self.fallback_reasons[i]}
            for k in _PER_LAYER_SUM:
                row[k] = float(self.layers[k][i])
            lay.append(row)
        tot = {k: (float(v) if not float(v).is_integer() else int(v)) for k, v in self.totals.items()}
        return {"workload": self.workload, "arch": asdict(self.arch), "layers": lay, **tot}

    def to_json(self, **kw) -> str:
        return json.dumps(self.to_dict(), **kw)


def _fallback_reasons(w: Workload, arch: ArrayConfig, sparse_run: np.ndarray) -> list[str | None]:
    out: list[str | None] = []
    for l, sp in zip(w.layers, sparse_run):
        if sp:
            out.append(None)
        elif not arch.sparse:
            out.append(None)  # dense hardware: nothing falls back
        elif not l.sparsifiable:
            out.append(l.reason)
        else:
            out.append(f"layer pattern {l.nm[0]}:{l.nm[1]} does not fit the hardware's {arch.n}:{arch.m}")
    return out


def simulate(workload: Workload, arch: ArrayConfig | None = None) -> NetworkResult:
    """Evaluate one design point on every layer of a workload."""
    arch = arch or ArrayConfig()
    la = layer_arrays(workload)
    d = design_arrays([arch])
    r = evaluate(la, d)
    # the dense baseline pass differs only where a layer ran sparse; otherwise it is the same evaluation
    dn = evaluate(la, d, force_dense=True) if r["sparse"].any() else r
    tot = _totals(r, dn, la["count"], la["sparsifiable"], d["n"][:, 0], d["m"][:, 0], d["sparse"][:, 0])
    layers = {k: np.asarray(v[0]) for k, v in r.items()}
    return NetworkResult(workload.name, arch, [l.name for l in workload.layers], [l.kind for l in workload.layers],
                         la["count"], _fallback_reasons(workload, arch, layers["sparse"]), layers,
                         {k: float(np.asarray(v).reshape(-1)[0]) for k, v in tot.items()})


def simulate_grid(workload: Workload, params: dict[str, np.ndarray | list], base: ArrayConfig | None = None
                  ) -> dict[str, np.ndarray]:
    """Many design points x all layers in one numpy evaluation.

    ``params`` maps ArrayConfig field names (rows, cols, ifmap_kb, filter_kb, ofmap_kb, sram_kb,
    clock_mhz, dram_gbps, dataflow, n, m, sparse, pe_k, dense_path, act_bits, weight_bits) to arrays
    of equal length P; fields not given come from ``base``. Returns per-layer arrays of shape (P, L)
    under their names and network totals of shape (P,) under ``total_*`` / speedup names."""
    base = base or ArrayConfig()
    if not params:
        raise InputError("no design parameters given", where="simulate_grid")
    arrs = {k: np.asarray(v) for k, v in params.items()}
    sizes = {a.shape[0] if a.ndim else 1 for a in arrs.values()}
    if len(sizes) != 1 or any(a.ndim != 1 for a in arrs.values()):
        raise InputError(f"all parameter arrays must be 1-D of equal length, got sizes {sorted(sizes)}",
                         where="simulate_grid")
    P = sizes.pop()
    allowed = {f.name for f in fields(ArrayConfig)} - {"mode", "port_words"}
    unknown = set(arrs) - allowed
    if unknown:
        raise InputError(f"unknown design parameter(s) {sorted(unknown)}", where="simulate_grid")
    d = design_arrays([base])
    d = {k: np.repeat(v, P, axis=0) for k, v in d.items()}
    if "sram_kb" in arrs:
        for k in ("ifmap_kb", "filter_kb", "ofmap_kb"):
            if k not in arrs:
                d[k] = arrs["sram_kb"][:, None] / 3.0
    for k, v in arrs.items():
        if k == "sram_kb":
            continue
        if k == "dataflow":
            bad = set(np.unique(v)) - set(DATAFLOWS)
            if bad:
                raise InputError(f"unknown dataflow(s) {sorted(bad)} (ws, os or is)", where="simulate_grid")
            v = np.array([DATAFLOWS.index(x) for x in v])
        d[k] = v[:, None]
    if "pe_k" not in arrs and base.pe_k is None and base.mode != "scalesim":
        d["pe_k"] = np.where(d["sparse"], d["n"], d["m"])
    if np.any(d["rows"] <= 0) or np.any(d["cols"] <= 0):
        raise InputError("rows and cols must be positive", where="simulate_grid")
    if np.any((d["m"] % d["n"]) != 0) or np.any(d["n"] >= d["m"]) or np.any(d["m"] & (d["m"] - 1)):
        raise InputError("every N:M must have M a power of two, 1 <= N < M and N | M", where="simulate_grid")
    la = layer_arrays(workload)
    r = evaluate(la, d)
    dn = evaluate(la, d, force_dense=True)
    tot = _totals(r, dn, la["count"], la["sparsifiable"], d["n"][:, 0:1], d["m"][:, 0:1], d["sparse"][:, 0:1])
    out = dict(r)
    out.update({k: np.asarray(v).reshape(P) for k, v in tot.items()})
    return out
