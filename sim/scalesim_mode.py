"""SCALE-Sim 3.0.0 emulation for parity runs only (``ArrayConfig(mode="scalesim")``).

:mod:`sim.perf` is the physical model; this module holds what it needs to reproduce SCALE-Sim's
own numbers instead of physics, used only by the parity tests (tests/sim/test_perf.py,
tests/sim/test_scalesim_live.py) and bench/bench_sim_scalesim.py:

* the compute side stays in :func:`sim.perf.evaluate` (SCALE-Sim's fold rules are the model's own;
  ``mode="scalesim"`` only switches to a scalar PE, 1-byte words, SCALE-Sim's optimised 2:4
  mapping ``ceil(K/2B)*B`` stored weights and uncompressed OS/IS reductions);
* the memory side is here: in SCALE-Sim's USER bandwidth mode every operand has its own DRAM port
  of ``port_words`` words/cycle (``ArrayConfig.port_words``; ``None`` = CALC mode, no stalls), and
  the stall follows SCALE-Sim's prefetch mechanism rather than physics: a circular window of half
  the SRAM that only moves forward, so out-of-order demand costs whole laps of the operand
  (:func:`port_time`). It charges several times the physical traffic, which the default mode
  does not.

SCALE-Sim 3.0.0 has no on-chip SRAM port limit in the runs we compare with. Its bank/port model
(``[layout] IfmapSRAMBankBandwidth / IfmapSRAMBankNum / IfmapSRAMBankPort``, same for Filter;
``memory/read_buffer.py`` with ``enable_layout_evaluation``) is switched on only by
``IfmapCustomLayout`` / ``FilterCustomLayout: True`` in USER mode (``single_layer_sim.py`` passes
``using_*_custom_layout`` through ``double_buffered_scratchpad.set_params``); CALC mode uses
``read_buffer_estimate_bw``, which has none. There a line of ``BankBandwidth`` words is spread
over ``BankNum`` banks of ``BankBandwidth/BankNum`` words, and each demand row costs
``ceil(max distinct lines in one bank / BankPort)`` cycles, i.e. at most ``BankPort x
BankBandwidth`` words per cycle; ofmap writes are not limited. :mod:`sim.perf` models the same
limit as a bandwidth (``ArrayConfig.sram_banks`` x ``sram_port_bytes`` per buffer). Parity runs set
``CustomLayout: False``, so ``mode="scalesim"`` has no SRAM stalls, and the other physical
refinements of :mod:`sim.perf` are off too: 1-byte words for every operand (partial sums
included) and SCALE-Sim's fold count with no extra pipeline stages.
"""

from __future__ import annotations

import numpy as np

__all__ = ["port_time", "slides_one", "slides_cells", "window_params"]


def _cdiv(a, b):
    return -(-a // b)


def port_time(M, N, K, k_st, steps, R, C, df, d, folds_r, folds_c, per_fold, exact=None):
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
    exact window tracking (:func:`slides_one`; matches instrumented SCALE-Sim on 88 of 90
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
        b = np.broadcast_arrays(
            df, M, N, K, R, C, np.floor(d["ifmap_kb"] * 1024.0), np.floor(d["filter_kb"] * 1024.0), exact
        )
        for idx in zip(*np.nonzero(b[-1]), strict=True):
            exact_if[idx], exact_f[idx] = slides_one(*(int(a[idx]) for a in b[:-1]))

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
    t_if = port(
        E_if,
        d["ifmap_kb"],
        d["port_if"],
        np.where(is_is, 1, Fc),
        [(np.where(is_is, 0, Fc * (Fr - 1)), diag), (np.where(is_is, Fr * Fc, 0), rev)],
        np.where(is_is, per_fold - R, C - 1),
        exact_if,
    )
    t_f = port(
        E_f,
        d["filter_kb"],
        d["port_f"],
        np.where(is_is, Fc, 1),
        [
            (np.where(is_ws, Fr * Fc, 0), rev),
            (np.where(is_is, Fc * (Fr - 1), 0), diag),
            (np.where(is_os, Fc * (Fr - 1), 0), K * C + C * (C - 1)),
            (np.where(is_os, Fc - 1, 0), C * (C - 1)),
        ],
        np.where(is_ws, per_fold - R, np.where(is_os, R - 1, C - 1)),
        exact_f,
    )
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


def window_params(E: int, words: int) -> tuple[int, int, int, int]:
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
    for s, e in zip(first, last, strict=True):
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
    for top, nr, w in zip(tops, nrows, widths, strict=True):
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
    ends = _diag_rank(
        H, W, r0, w_last, np.concatenate((b * T, b * T + T - 1)), np.concatenate((0 * b, wb - 1))
    )
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


def slides_one(
    df: int, M: int, N: int, K: int, R: int, C: int, words_if: int, words_f: int
) -> tuple[int, int]:
    """Exact new_prefetch() counts of SCALE-Sim's ifmap and filter read buffers for one dense layer."""
    out = []
    for op, words in ((0, words_if), (1, words_f)):
        E = M * K if op == 0 else K * N
        eps, S, A, P = window_params(E, words)
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
            out.append(slides_cells(df, op, M, N, K, R, C, eps, S, A, P))
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


def slides_cells(df, op, M, N, K, R, C, eps, S, A, P) -> int:
    """Window slides walking every demanded cell (runs split wherever the set falls or jumps by
    S - A or more)."""
    pf, dm = _scalesim_orders(df, op, M, N, K, R, C)
    pf = pf[pf >= 0]
    rank = np.empty(pf.size, np.int64)
    rank[pf] = np.arange(pf.size)
    s = rank[dm[dm >= 0]] // eps
    cut = np.flatnonzero((np.diff(s) < 0) | (np.diff(s) >= S - A)) + 1
    return _slides_runs(
        s[np.concatenate(([0], cut))].tolist(), s[np.concatenate((cut - 1, [s.size - 1]))].tolist(), S, A, P
    )
