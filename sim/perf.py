"""Analytical cycle model of an R x C systolic array running N:M-sparse workloads.

One closed-form model, vectorised over (design points x layers) with numpy broadcasting: per-layer
arrays, folding, traffic, stalls, totals. The design point and its columns are
:mod:`sim.array_config` (:class:`ArrayConfig`); what :func:`simulate` returns is
:mod:`sim.network_result` (:class:`NetworkResult`).

Compute (stall-free) cycles follow SCALE-Sim v3's folding rules exactly (``scalesim/compute/
systolic_{ws,os,is}.py``: each fold is a block of demand-matrix lines; the reported count is the
last line's index, hence the ``- 1``), plus the RTL's pipeline latency. With ``steps`` =
reduction steps a PE row walks through and ``p`` = ``pipeline`` (PE register stages):

* WS: folds = ceil(steps/R) * ceil(N/C), lines per fold = 2R + C + M - 2 + (p - 1) (R to load
  weights, M activations, C-1 drain, R-1 skew, p-1 product registers)
* OS: folds = ceil(M/R) * ceil(N/C), lines per fold = steps + R + C - 2 + (p - 1)
* IS: folds = ceil(steps/R) * ceil(M/C), lines per fold = 2R + C + N - 2 + (p - 1)

The ``p - 1`` per fold is ``hw.array.tile_cycles`` (``R + (T+R+C-2) + (pipeline-1)`` for WS,
``T + R + C - 2 + (pipeline-1)`` for OS): the array runs tiles back to back and drains each one
(no double-buffered weights), so every fold pays its pipeline fill once (IS, not in the RTL, is
WS with the operands' roles swapped and is charged the same). ``pipeline=1`` is SCALE-Sim's count.

Double-buffered weights (``double_buffer=True``; WS, and IS charged as WS; the RTL is
``hw.array.SparseArray(double_buffer=True)``). Each PE holds a shadow weight set the next fold is
shifted into while the array streams the current one; a swap signal copies it into the active
set, travelling along the anti-diagonals with the last vector of the fold, so PE(r, c) changes
tile exactly between that vector and the next (both reach it r + c edges after entering). With
F folds of T vectors (F = folds, T = M for WS, N for IS), counting edges from the first load:

* fold 0's R load words shift in at edges 0..R-1; it swaps in at edge R (its own edge: the swap
  reads the shadow before that edge, so it cannot share the last load edge) and streams T vectors
  from edge R + 1;
* fold f+1 loads from fold f's swap edge s_f (the load wave reaches PE(r, c) at s_f + r + c,
  exactly when the swap has emptied its shadow, so the two never collide) and needs R load
  edges; it can swap in only after fold f's last vector (edge s_f + T) and after its own last load
  edge (s_f + R - 1): s_{f+1} = s_f + max(T, R). The weight load and the stream overlap, and the
  fill (R - 1 row skew) and drain (C - 1 columns) of consecutive folds overlap too: fold f+1's
  first vector enters one edge after fold f's last;
* what cannot overlap: fold 0's load and swap edge (R + 1) before anything streams, and after the
  last fold's T vectors its fill and drain, R + C - 2 edges, and the PE pipeline, p - 1.

  cycles = (R + 1) + (F - 1) max(T, R) + T + (R + C - 2) + (p - 1)     (hw.array.run_cycles)

against SCALE-Sim's F (2R + C + T - 2) (+ F (p - 1) here). It never goes below the compute-only
bound F T (each fold streams its T vectors through the PE row, and every term is >= 0), and it is
shorter for every F >= 2 (it saves (F - 1)(min(T, R) + R + C - 2 + p - 1) - 1 edges: one fold costs
one edge more, its swap). A fold is max(weight load, compute) once the pipeline is full: TPU v1
double-buffers its weight tile "to hide the 256 cycles it takes to shift a tile in" (Jouppi et
al., ISCA 2017). Each layer starts from an empty array (its first load is not hidden behind the
previous layer's last fold). The simulated RTL gives this count edge for edge
(tests/hw/test_array_double_buffer.py); tests/sim/test_double_buffer.py checks it against ZigZag
3.x's tpu_like. ``mode="scalesim"`` has no double buffering (SCALE-Sim's fold), and OS streams its
weights (nothing to double-buffer): both reject it.

``steps`` counts *stored* weights of a column divided by ``pe_k``, the stored-weight reduction
elements a PE consumes per cycle: 1 for SCALE-Sim's scalar PE; N for the sparsepe sparse PE (one
group of M activations + N kept weights per cycle, docs/design.md); M for a dense PE. A sparse
layer stores ceil(K/M)*N weights per column (SCALE-Sim's optimised mapping with BlockSize B stores
ceil(K/2B)*B, reproduced in ``mode="scalesim"``). A layer that cannot be pruned runs dense: on a
sparse-only PE each dense group takes M/N passes (rate N/M), on a PE with a dense path full rate.

Memory: double-buffered ifmap / filter / ofmap SRAMs (sizes: :func:`sim.array_config.split_sram_kb`). An operand
whose data fits the active half of its SRAM is fetched from DRAM once; otherwise it is re-streamed
per fold that revisits it (ifmap per column fold in WS/OS, filter per row fold in OS and per
column fold in IS). Weights move compressed, with log2(M) metadata bits per kept weight, counted
separately. Outputs: WS and IS split the reduction over ceil(steps/R) row folds; every fold but
the last writes partial sums, which are read back by the next fold, at accumulator width
(``acc_bits``, the RTL's ``out_acc``); only the final output is written at activation width (it
is requantised at the array edge). OS finishes the reduction inside the PEs: outputs only, at
activation width. Partial sums that do not fit the ofmap SRAM spill to DRAM and back, also at
accumulator width.

Stalls follow a roofline per layer: double buffering hides memory time behind compute until it
exceeds it. DRAM: one bus of ``dram_gbps`` shared by all operands, ``dram_stall = max(0,
ceil(dram_time - compute))``. SRAM: each buffer is ``sram_banks`` banks of one read/write port of
``sram_port_bytes`` bytes per cycle (the macro ppa costs: CACTI 7, 64 B block, 1 RW port,
/work/shared/reference/published-figures.md section 5), and everything that moves through a
buffer uses its ports: the array's reads and writes (partial sums both ways) and the DRAM side
(fills of ifmap/filter, drain of ofmap). A buffer needs ``bytes / (sram_banks *
sram_port_bytes)`` cycles; the layer takes ``max(compute, DRAM time, slowest buffer)`` and
``stall_cycles = dram_stall_cycles + sram_stall_cycles`` (the SRAM share is what the ports add on
top of the DRAM stall). This is SCALE-Sim 3's bank/port limit (``[layout] *SRAMBankNum`` banks
of ``*SRAMBankBandwidth/BankNum`` words, ``*SRAMBankPort`` ports each: at most ``BankPort x
BankBandwidth`` words per cycle; see :mod:`sim.scalesim_mode`) taken as a bandwidth, averaged
over the layer: a lower bound, since phases that burst (WS weight loads) are not resolved.
``sram_port_bytes=None`` removes the limit.

``mode="scalesim"`` reproduces SCALE-Sim 3.0.0's own numbers for parity checks: its DRAM ports,
no SRAM port limit, 1-byte words for every operand; the USER-bandwidth stall emulation lives in
:mod:`sim.scalesim_mode`.
"""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np

from hw.errors import InputError
from sim.array_config import ArrayConfig, design_arrays, grid_design_arrays
from sim.layers import Workload
from sim.network_result import PER_LAYER_SUM, NetworkResult, fallback_reasons
from sim.scalesim_mode import port_time

# ------------------------------------------------------------------------------------------------
# Layer arrays and the model
# ------------------------------------------------------------------------------------------------


def layer_arrays(w: Workload) -> dict[str, np.ndarray]:
    """Per-layer columns (shape (L,)) for the vectorised model."""
    L = w.layers
    if not L:
        raise InputError("workload has no layers", where=f"workload {w.name!r}")
    i64 = np.int64
    return {
        "M": np.array([layer.M for layer in L], i64),
        "N": np.array([layer.N for layer in L], i64),
        "K": np.array([layer.K for layer in L], i64),
        "count": np.array([layer.count for layer in L], i64),
        "sparsifiable": np.array([layer.sparsifiable for layer in L], bool),
        "layer_n": np.array([layer.nm[0] if layer.nm else 0 for layer in L], i64),
        "layer_m": np.array([layer.nm[1] if layer.nm else 0 for layer in L], i64),
        "ifmap_unique": np.array(
            [layer.conv.ifmap_elems if layer.conv else layer.M * layer.K for layer in L], i64
        ),
    }


def _cdiv(a, b):
    return -(-a // b)


@dataclass(frozen=True)
class _Folds:
    """How each layer folds onto each design's array (per (P, L)): whether it runs sparse, the stored
    weights per output column (``k_st``) and the rate a PE consumes them, the reduction steps of the
    dataflow, the row and column folds, the lines per fold and the stall-free compute cycles (the
    last cycle's index)."""

    run_sparse: np.ndarray
    k_st: np.ndarray
    rate: np.ndarray
    steps_df: np.ndarray
    folds_r: np.ndarray
    folds_c: np.ndarray
    per_fold: np.ndarray
    folds: np.ndarray
    compute: np.ndarray


@dataclass(frozen=True)
class _Traffic:
    """Bytes per layer instance (per (P, L)): the operands' sizes, the partial-sum rounds per output,
    and what each operand moves to and from DRAM."""

    w_values: np.ndarray
    w_meta: np.ndarray
    ifmap_stream: np.ndarray
    ofmap: np.ndarray
    psum: np.ndarray
    partial: np.ndarray
    dram_if: np.ndarray
    dram_w: np.ndarray
    dram_meta: np.ndarray
    dram_of: np.ndarray
    dram_total: np.ndarray


@dataclass(frozen=True)
class _SramTraffic:
    """The array side's SRAM reads and writes, and every byte through each buffer's ports (array
    side and DRAM side), per (P, L)."""

    if_rd: np.ndarray
    f_rd: np.ndarray
    meta_rd: np.ndarray
    of_wr: np.ndarray
    of_rd: np.ndarray
    port_if: np.ndarray
    port_f: np.ndarray
    port_of: np.ndarray


def evaluate(
    la: dict[str, np.ndarray], d: dict[str, np.ndarray], *, force_dense: bool = False
) -> dict[str, np.ndarray]:
    """The model: layer columns (L,) x design columns (P, 1) -> per (P, L) arrays (per layer
    *instance*; multiply by ``count`` for totals, done in :func:`_totals`)."""
    f = _folds(la, d, force_dense)
    t = _dram_traffic(la, d, f)
    dram_stall = _dram_stall(la, d, f, t)
    s = _sram_traffic(la, d, t)
    sram_bw = np.where(d["scalesim"], np.inf, d["sram_banks"] * d["sram_port_bytes"])
    t_sram = np.maximum(np.maximum(s.port_if, s.port_f), s.port_of) / sram_bw
    # the layer takes max(compute, DRAM, SRAM) cycles; the SRAM share is what it adds beyond the DRAM stall
    stall = np.maximum(dram_stall, np.ceil(t_sram) - (f.compute + 1))
    return _layer_results(la, d, f, t, s, stall, dram_stall)


def _folds(la: dict[str, np.ndarray], d: dict[str, np.ndarray], force_dense: bool) -> _Folds:
    """What runs sparse, the stored weights and reduction steps, the folds and the compute cycles
    (SCALE-Sim's fold rules, the pipeline, double-buffered weights: the module docstring)."""
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
    rate = pe_k  # stored weights a PE consumes a cycle, in either mode (effective_pe_k)
    steps = _cdiv(k_st, rate)
    # SCALE-Sim applies sparsity to the WS mapping only (OS/IS keep the uncompressed ifmap K).
    steps_osis = np.where(ss, K, steps)
    is_ws, is_os = df == 0, df == 1
    steps_df = np.where(is_ws, steps, steps_osis)
    folds_r = np.where(is_os, _cdiv(M, R), _cdiv(steps_df, R))
    folds_c = np.where(df == 2, _cdiv(M, C), _cdiv(N, C))
    per_fold = np.where(is_os, steps_df + R + C - 2, 2 * R + C + np.where(df == 2, N, M) - 2)
    folds = folds_r * folds_c
    # hw.array.tile_cycles: every fold (tile) pays pipeline - 1 more cycles to drain its PE registers
    compute = folds * (per_fold + d["pipeline"] - 1) - 1
    # double-buffered weights (module docstring, hw.array.run_cycles): folds at max(load, stream), the
    # first load, fill, drain and pipeline once; never in SCALE-Sim mode or OS (ArrayConfig rejects both)
    t_fold = np.where(df == 2, N, M)
    db_compute = (
        (R + 1) + (folds - 1) * np.maximum(t_fold, R) + t_fold + (R + C - 2) + (d["pipeline"] - 1) - 1
    )
    compute = np.where(d["double_buffer"] & ~ss & ~is_os, db_compute, compute)
    return _Folds(run_sparse, k_st, rate, steps_df, folds_r, folds_c, per_fold, folds, compute)


def _dram_traffic(la: dict[str, np.ndarray], d: dict[str, np.ndarray], f: _Folds) -> _Traffic:
    """The operands' bytes and how often each is streamed from DRAM (once when it stays resident in
    the active half of its buffer), partial sums spilled to DRAM and back when their tile does not fit."""
    M, N, K = la["M"], la["N"], la["K"]
    R, C = d["rows"], d["cols"]
    m = d["m"]
    ss = d["scalesim"]
    df = d["dataflow"]
    is_ws, is_os = df == 0, df == 1
    k_st = f.k_st
    ab, wb = d["act_bits"] / 8.0, d["weight_bits"] / 8.0
    # partial sums leave the array at accumulator width; SCALE-Sim has one 1-byte word for everything
    accb = np.where(ss, ab, d["acc_bits"] / 8.0)
    meta_bits = np.log2(m)
    w_values = (N * k_st) * wb
    w_meta = np.where(f.run_sparse, N * k_st * meta_bits / 8.0, 0.0)
    ifmap_stream = (M * K) * ab
    ifmap_unique = np.minimum(la["ifmap_unique"], M * K) * ab
    ofmap = (M * N) * ab
    psum = (M * N) * accb
    cap_if, cap_f, cap_of = (d[k] * 1024.0 / 2 for k in ("ifmap_kb", "filter_kb", "ofmap_kb"))  # active half
    # how often each operand is streamed from DRAM (1 when it stays resident on chip)
    fold_k = _cdiv(f.steps_df, R)
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
    # partial sums (WS / IS accumulate across K folds) spill to DRAM and back when their tile does not fit
    partial = np.where(is_os, 0, fold_k - 1)  # partial-sum writes (and read-backs) per output
    psum_tile = np.where(df == 2, C * N, M * np.minimum(N, C)) * accb
    spill = np.where((partial > 0) & (psum_tile > cap_of), 2 * psum * partial, 0.0)
    dram_of = ofmap + spill
    dram_total = dram_if + dram_w + dram_meta + dram_of
    return _Traffic(
        w_values, w_meta, ifmap_stream, ofmap, psum, partial, dram_if, dram_w, dram_meta, dram_of, dram_total
    )


def _dram_stall(la: dict[str, np.ndarray], d: dict[str, np.ndarray], f: _Folds, t: _Traffic) -> np.ndarray:
    """DRAM stall cycles: the memory time beyond compute (one shared bus; SCALE-Sim's own ports in
    its USER-bandwidth parity mode, :func:`sim.scalesim_mode.port_time`)."""
    M, N, K = la["M"], la["N"], la["K"]
    R, C = d["rows"], d["cols"]
    ss = d["scalesim"]
    df = d["dataflow"]
    bpc = d["dram_gbps"] * 1e9 / (d["clock_mhz"] * 1e6)
    t_shared = t.dram_total / bpc
    use_ports = ss & d["has_ports"]
    if np.any(use_ports):  # SCALE-Sim USER-bandwidth parity only; skipped otherwise (it is most of the cost)
        t_ports = port_time(
            M,
            N,
            K,
            f.k_st,
            f.steps_df,
            R,
            C,
            df,
            d,
            f.folds_r,
            f.folds_c,
            f.per_fold,
            use_ports & ~f.run_sparse,
        )
        mem_time = np.where(ss, np.where(use_ports, t_ports, 0.0), t_shared)
    else:
        mem_time = np.where(ss, 0.0, t_shared)
    return np.maximum(0.0, np.ceil(mem_time - f.compute))


def _sram_traffic(la: dict[str, np.ndarray], d: dict[str, np.ndarray], t: _Traffic) -> _SramTraffic:
    """SRAM traffic of the array side, and every byte through each buffer's ports."""
    M, N = la["M"], la["N"]
    R, C = d["rows"], d["cols"]
    df = d["dataflow"]
    is_ws, is_os = df == 0, df == 1
    sram_if_rd = t.ifmap_stream * np.where(df == 2, 1, _cdiv(N, C))
    sram_f_rd = (t.w_values) * np.where(is_ws, 1, np.where(is_os, _cdiv(M, R), _cdiv(M, C)))
    sram_meta_rd = t.w_meta * np.where(is_ws, 1, np.where(is_os, _cdiv(M, R), _cdiv(M, C)))
    sram_of_wr = (
        t.ofmap + t.psum * t.partial
    )  # partial sums at accumulator width, the final output at activation width
    sram_of_rd = t.psum * t.partial
    # SRAM port stalls: every byte through a buffer's ports (array side and DRAM side) at banks x port width
    port_if = sram_if_rd + t.dram_if
    port_f = sram_f_rd + sram_meta_rd + t.dram_w + t.dram_meta
    port_of = (
        sram_of_wr + sram_of_rd + t.dram_of
    )  # dram_of: final outputs out, spilled partial sums out and back in
    return _SramTraffic(sram_if_rd, sram_f_rd, sram_meta_rd, sram_of_wr, sram_of_rd, port_if, port_f, port_of)


def _layer_results(
    la: dict[str, np.ndarray],
    d: dict[str, np.ndarray],
    f: _Folds,
    t: _Traffic,
    s: _SramTraffic,
    stall: np.ndarray,
    dram_stall: np.ndarray,
) -> dict[str, np.ndarray]:
    """The per (P, L) arrays :func:`evaluate` returns, by name."""
    M, N, K = la["M"], la["N"], la["K"]
    R, C = d["rows"], d["cols"]
    sram_stall = stall - dram_stall
    performed = (M * N * f.k_st).astype(np.float64)
    capacity = (R * C * f.rate).astype(np.float64)
    util = performed / (capacity * (f.compute + 1 + stall))
    names = (
        "cycles",
        "stall_cycles",
        "dram_stall_cycles",
        "sram_stall_cycles",
        "utilization",
        "sparse",
        "dense_macs",
        "performed_mults",
        "dram_bytes",
        "dram_ifmap_bytes",
        "dram_weight_bytes",
        "metadata_bytes",
        "dram_ofmap_bytes",
        "sram_ifmap_read_bytes",
        "sram_filter_read_bytes",
        "sram_metadata_read_bytes",
        "sram_ofmap_write_bytes",
        "sram_ofmap_read_bytes",
        "sram_fill_bytes",
        "sram_ifmap_port_bytes",
        "sram_filter_port_bytes",
        "sram_ofmap_port_bytes",
        "folds",
    )
    vals = (
        f.compute.astype(np.int64),
        stall.astype(np.int64),
        dram_stall.astype(np.int64),
        sram_stall.astype(np.int64),
        util,
        f.run_sparse,
        (M * N * K).astype(np.float64),
        performed,
        t.dram_total,
        t.dram_if,
        t.dram_w,
        t.dram_meta,
        t.dram_of,
        s.if_rd,
        s.f_rd,
        s.meta_rd,
        s.of_wr,
        s.of_rd,
        t.dram_if + t.dram_w + t.dram_meta,
        s.port_if,
        s.port_f,
        s.port_of,
        f.folds.astype(np.float64),
    )
    return dict(zip(names, np.broadcast_arrays(*vals), strict=True))


def vector_arrays(w: Workload) -> dict[str, np.ndarray]:
    """Per-operator columns (shape (V,)) of the workload's vector-unit operators (V may be 0)."""
    ops = w.vector_ops
    f = lambda k: np.array([float(getattr(o, k)) for o in ops], np.float64)  # noqa: E731
    return {
        "alu": f("alu"),
        "exp": f("exp"),
        "div": f("div"),
        "red": f("red"),
        "read": f("read"),
        "write": f("write"),
        "dram": f("dram"),
        "count": np.array([o.count for o in ops], np.int64),
        "reduces": np.array([o.reduces for o in ops], bool),
        "movement": np.array([o.movement_only for o in ops], bool),
    }


def evaluate_vector(va: dict[str, np.ndarray], d: dict[str, np.ndarray]) -> dict[str, np.ndarray]:
    """The vector unit (sim.vector): operator columns (V,) x design columns (P, 1) -> per-instance (P, V)
    cycles, SRAM and DRAM bytes. cycles = ceil(max(compute, SRAM port time, DRAM time))."""
    C = d["cols"]
    lanes = np.where(d["vector_lanes"] > 0, d["vector_lanes"], C).astype(np.float64)
    compute = (
        va["alu"] / (lanes * d["vector_alu_rate"])
        + va["exp"] / (lanes * d["vector_exp_rate"])
        + va["div"] / (lanes * d["vector_div_rate"])
        + va["red"] / (lanes * d["vector_red_rate"])
        + np.where(va["reduces"], np.ceil(np.log2(np.maximum(lanes, 1.0))), 0.0)
    )
    ab = d["act_bits"] / 8.0
    moved = (va["read"] + va["write"]) * ab
    port = np.where(d["scalesim"], np.inf, d["sram_banks"] * d["sram_port_bytes"])
    bw = np.where(d["vector_sram_bytes"] > 0, d["vector_sram_bytes"], port)
    t_sram = moved / bw
    # a tensor larger than the active half of the ofmap buffer streams from DRAM and back
    cap_of = d["ofmap_kb"] * 1024.0 / 2
    dram = va["dram"] * ab + np.where(moved <= cap_of, 0.0, moved)
    t_dram = dram / (d["dram_gbps"] * 1e9 / (d["clock_mhz"] * 1e6))
    cycles = np.ceil(np.maximum(np.maximum(compute, t_sram), t_dram))
    # stalls: what the SRAM port and then DRAM add on top of the arithmetic (a data-movement operator's
    # time is its work: its moves are not stalls)
    c_comp = np.where(va["movement"], cycles, np.ceil(compute))
    c_sram = np.maximum(c_comp, np.ceil(t_sram))
    names = (
        "vector_op_cycles",
        "vector_compute_cycles",
        "vector_sram_stall_cycles",
        "vector_dram_stall_cycles",
        "vector_sram_bytes",
        "vector_dram_bytes",
    )
    return dict(
        zip(
            names,
            np.broadcast_arrays(
                cycles, c_comp, c_sram - c_comp, cycles - c_sram, moved + 0 * cycles, dram + 0 * cycles
            ),
            strict=True,
        )
    )


# ------------------------------------------------------------------------------------------------
# Network totals and the entry points
# ------------------------------------------------------------------------------------------------


def _totals(
    r: dict[str, np.ndarray],
    dense: dict[str, np.ndarray],
    count: np.ndarray,
    sparsifiable: np.ndarray,
    n: np.ndarray,
    m: np.ndarray,
    hw_sparse: np.ndarray,
    vec: dict[str, np.ndarray] | None = None,
    vcount: np.ndarray | None = None,
    overlap: np.ndarray | bool = False,
) -> dict[str, np.ndarray]:
    """Network totals along the layer axis (last axis). The vector unit's cycles (``vec``, per
    operator instance, ``vcount`` instances each) add to the array's (serial) or, with ``overlap``,
    the network takes the longer of the two."""
    busy = (r["cycles"] + 1 + r["stall_cycles"]) * count  # +1: cycles is the last-cycle index
    array_total = busy.sum(-1)
    if vec is not None and vcount is not None and vcount.size:
        vtot = (vec["vector_op_cycles"] * vcount).sum(-1)
        vsram = (vec["vector_sram_bytes"] * vcount).sum(-1)
        vdram = (vec["vector_dram_bytes"] * vcount).sum(-1)
        vs_sram = (vec["vector_sram_stall_cycles"] * vcount).sum(-1)
        vs_dram = (vec["vector_dram_stall_cycles"] * vcount).sum(-1)
    else:
        vtot = vsram = vdram = vs_sram = vs_dram = np.zeros_like(array_total, dtype=np.float64)
    overlap = np.asarray(overlap, bool).reshape(np.shape(array_total)) if np.ndim(overlap) else bool(overlap)

    def joint(a):
        return np.where(overlap, np.maximum(a, vtot), a + vtot)

    total = joint(array_total)
    out = {k: (r[k] * count).sum(-1) for k in PER_LAYER_SUM}
    out["total_cycles"] = total
    out["array_cycles"] = array_total
    out["vector_cycles"] = vtot
    out["vector_fraction"] = vtot / total
    out["vector_sram_bytes"] = vsram
    out["vector_dram_bytes"] = vdram
    out["compute_cycles"] = ((r["cycles"] + 1) * count).sum(-1)
    for k in ("stall_cycles", "dram_stall_cycles", "sram_stall_cycles"):
        out[k] = (r[k] * count).sum(-1)
    # the vector unit's memory waits are stalls too (serial mode: they add to the network's time)
    out["vector_stall_cycles"] = vs_sram + vs_dram
    out["stall_cycles"] = out["stall_cycles"] + vs_sram + vs_dram
    out["dram_stall_cycles"] = out["dram_stall_cycles"] + vs_dram
    out["sram_stall_cycles"] = out["sram_stall_cycles"] + vs_sram
    out["stall_fraction"] = out["stall_cycles"] / total  # DRAM and SRAM stalls
    out["sram_stall_fraction"] = out["sram_stall_cycles"] / total
    dense_busy = joint(((dense["cycles"] + 1 + dense["stall_cycles"]) * count).sum(-1))
    out["dense_total_cycles"] = dense_busy
    out["effective_speedup"] = dense_busy / total
    fb = (~r["sparse"]) & hw_sparse
    out["fallback_fraction"] = (busy * fb).sum(-1) / total
    # dense-equivalent MACs of the layers a sparse design runs dense (its fallback / dense path)
    out["fallback_macs"] = (r["dense_macs"] * count * fb).sum(-1)
    # ideal bound: Amdahl over the dense run's time (stalls included, as in effective_speedup),
    # sparsifiable layers shrunk by N/M, fallback layers unchanged. Compute folds at best halve and
    # weight traffic at best halves (metadata adds to it), but a layer can beat N/M when its dense
    # run is bound by partial-sum traffic: the sparse run needs half the K folds, and partial sums
    # move at accumulator width while the final output moves at activation width, so (f-1) partial
    # rounds replace (2f-1). Such a layer counts at its achieved time, so that always
    # effective_speedup <= ideal_speedup; ideal_speedup <= M/N unless some layer beats N/M.
    dc = (dense["cycles"] + 1 + dense["stall_cycles"]) * count
    can = sparsifiable & hw_sparse
    # the vector unit's work is the same in both runs: it bounds the speedup like a fallback layer does
    out["ideal_speedup"] = joint(dc.sum(-1)) / joint(
        np.where(can, np.minimum(dc * (n / m), busy), dc).sum(-1)
    )
    out["metadata_overhead"] = out["metadata_bytes"] / np.maximum(out["dram_weight_bytes"], 1e-30)
    out["utilization"] = (r["utilization"] * busy).sum(-1) / total
    return out


def simulate(workload: Workload, arch: ArrayConfig | None = None) -> NetworkResult:
    """Evaluate one design point on every layer of a workload."""
    arch = arch or ArrayConfig()
    la = layer_arrays(workload)
    d = design_arrays([arch])
    r = evaluate(la, d)
    # the dense baseline pass differs only where a layer ran sparse; otherwise it is the same evaluation
    dn = evaluate(la, d, force_dense=True) if r["sparse"].any() else r
    va = vector_arrays(workload)
    vr = evaluate_vector(va, d)
    tot = _totals(
        r,
        dn,
        la["count"],
        la["sparsifiable"],
        d["n"][:, 0],
        d["m"][:, 0],
        d["sparse"][:, 0],
        vr,
        va["count"],
        d["vector_overlap"][:, 0],
    )
    layers = {k: np.asarray(v[0]) for k, v in r.items()}
    return NetworkResult(
        workload.name,
        arch,
        [layer.name for layer in workload.layers],
        [layer.kind for layer in workload.layers],
        la["count"],
        fallback_reasons(workload, arch, layers["sparse"]),
        layers,
        {k: float(np.asarray(v).reshape(-1)[0]) for k, v in tot.items()},
        list(workload.vector_ops),
        {k: np.asarray(v[0]) for k, v in vr.items()},
        workload.weight_params,
        workload.unsupported_ops,
        [layer.precision for layer in workload.layers],
        dict(workload.import_report),
    )


def simulate_grid(
    workload: Workload, params: dict[str, np.ndarray | list], base: ArrayConfig | None = None
) -> dict[str, np.ndarray]:
    """Many design points x all layers in one numpy evaluation.

    ``params`` maps ArrayConfig field names (rows, cols, ifmap_kb, filter_kb, ofmap_kb, sram_kb,
    clock_mhz, dram_gbps, dataflow, n, m, sparse, pe_k, dense_path, act_bits, weight_bits, acc_bits,
    pipeline, sram_banks, sram_port_bytes) to arrays of equal length P; fields not given come from
    ``base``. ``sram_port_bytes`` may hold ``inf`` (or None) for no SRAM port limit. The SRAM split
    follows :func:`sim.array_config.split_sram_kb` (with ``sram_kb`` given, the buffers not given
    share what is left of it equally). Returns per-layer arrays of shape (P, L) under their names and
    network totals of shape (P,) under ``total_*`` / speedup names, plus the split used,
    ``sram_ifmap_kb``, ``sram_filter_kb``, ``sram_ofmap_kb`` (P,), the sizes ppa should cost."""
    d, P = grid_design_arrays(params, base)
    la = layer_arrays(workload)
    r = evaluate(la, d)
    dn = evaluate(la, d, force_dense=True)
    va = vector_arrays(workload)
    vr = evaluate_vector(va, d)
    tot = _totals(
        r,
        dn,
        la["count"],
        la["sparsifiable"],
        d["n"][:, 0:1],
        d["m"][:, 0:1],
        d["sparse"][:, 0:1],
        vr,
        va["count"],
        d["vector_overlap"][:, 0:1],
    )
    out = dict(r)
    out.update({k: np.asarray(v).reshape(P) for k, v in tot.items()})
    out.update(
        {
            f"sram_{k}": np.broadcast_to(d[k][:, 0], (P,)).astype(float)
            for k in ("ifmap_kb", "filter_kb", "ofmap_kb")
        }
    )
    return out
