"""Drive the Amaranth PEs in Amaranth's Python simulator (async testbench API).

The reference for correctness, not a fast path (thousands of PE-cycles/s, measured by
``bench/bench_hw_sim.py``). Used by the tests and that bench; vectors are the same arrays the
golden models take.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any

import numpy as np
from amaranth.sim import Simulator

from hw.errors import InputError

__all__ = [
    "pack_lanes",
    "PERun",
    "run_pe",
    "ArrayRun",
    "run_array_ws",
    "run_array_os",
    "TilesRun",
    "ws_tile_schedule",
    "run_array_ws_tiles",
]


def pack_lanes(values, bits: int) -> int:
    """Pack signed lane values into one int, lane i at bits [i*bits +: bits]."""
    mask, word = (1 << bits) - 1, 0
    for i, v in enumerate(values):
        word |= (int(v) & mask) << (i * bits)
    return word


@dataclass
class PERun:
    acc: np.ndarray  # out_acc at each out_valid pulse
    err: np.ndarray  # out_meta_err at each pulse
    out_cycle: np.ndarray  # edge index after which each pulse was visible
    in_cycle: np.ndarray  # edge index at which each consumed group was sampled
    cycles: int  # edges simulated


def run_pe(dut, acts, weights, metas=None, clears=None, valid=None, *, dense=None, vcd=None) -> PERun:
    """Run one stream through a ``SparsePE`` / ``DensePE`` and collect every ``out_valid`` pulse.

    Row k of the inputs is presented before edge k (``valid[k]`` False leaves ``in_valid`` low
    but still drives the data, to prove idle cycles change nothing). After the stream, the
    inputs go idle for ``latency + 2`` edges to drain the pipeline.

    The dense-path PE (``SparsePE(p, dense_path=True)``): acts (T, G*M), weights (T, M), metas
    (T, G) codes (packed into in_meta here) or (T,) packed words, ``dense`` (T,) the in_dense bit.
    """
    p = dut.params
    acts, weights = np.asarray(acts), np.asarray(weights)
    t = acts.shape[0]
    clears = np.zeros(t, dtype=bool) if clears is None else np.asarray(clears, dtype=bool)
    valid = np.ones(t, dtype=bool) if valid is None else np.asarray(valid, dtype=bool)
    act_words = [pack_lanes(r, p.act_bits) for r in acts]
    w_words = [pack_lanes(r, p.weight_bits) for r in weights]
    if metas is not None and np.ndim(metas) == 2:  # per-group codes: pack group g at [g*N*b +: N*b]
        metas = [sum(int(c) << (g * p.meta_bits) for g, c in enumerate(row)) for row in np.asarray(metas)]
    meta_list = None if metas is None else [int(x) for x in metas]
    dense_list = None if dense is None else [int(bool(x)) for x in dense]
    res: dict[str, Any] = {"acc": [], "err": [], "out": [], "in": []}
    total = t + p.latency + 2

    async def bench(ctx):
        act_port, w_port = dut.in_act.as_value(), dut.in_w.as_value()
        for k in range(total):
            if k < t:
                ctx.set(act_port, act_words[k])
                ctx.set(w_port, w_words[k])
                if meta_list is not None:
                    ctx.set(dut.in_meta, meta_list[k])
                if dense_list is not None:
                    ctx.set(dut.in_dense, dense_list[k])
                ctx.set(dut.in_clear, int(clears[k]))
                ctx.set(dut.in_valid, int(valid[k]))
                if valid[k]:
                    res["in"].append(k)
            else:
                ctx.set(dut.in_valid, 0)
            await ctx.tick()
            if ctx.get(dut.out_valid):
                res["acc"].append(ctx.get(dut.out_acc))
                res["err"].append(ctx.get(dut.out_meta_err))
                res["out"].append(k)

    _run(dut, bench, vcd)
    return PERun(
        np.array(res["acc"], dtype=np.int64),
        np.array(res["err"], dtype=bool),
        np.array(res["out"], dtype=np.int64),
        np.array(res["in"], dtype=np.int64),
        total,
    )


@dataclass
class ArrayRun:
    out: np.ndarray  # (C, T) for WS / (R, C) for OS: the tile result
    err: np.ndarray  # out_meta_err bits at each output
    last_edge: int  # edge index (first load / first group = 0) registering the last output
    cycles: int  # last_edge + 1: the tile's cycle count, comparable to tile_cycles


def _array_common(dut, values, meta):
    p = dut.params
    values = np.asarray(values)
    meta = None if meta is None else np.asarray(meta)
    if dut.meta_groups and meta is None:
        raise InputError(f"a {dut.kind} array needs metadata codes", where="meta")
    return p, values, meta


def _pe_words(dut, values, meta, idx: int, step: int):
    """(weight word, metadata word) of the PE at row/column ``idx`` of W for step ``step``:
    ``w_lanes`` values from ``values[idx]`` and ``meta_groups`` codes from ``meta[idx]``."""
    p, wl, mg = dut.params, dut.w_lanes, dut.meta_groups
    w_word = pack_lanes(values[idx, step * wl : (step + 1) * wl], p.weight_bits)
    m_word = 0 if not mg else sum(int(meta[idx, step * mg + g]) << (g * p.meta_bits) for g in range(mg))
    return w_word, m_word


def _act_word(dut, x, step: int, col: int, dense: bool) -> int:
    """The activations of one row (WS) / column (OS) for one step: ``k_per_step`` elements of x's
    column ``col`` from ``step * k``; a dense-path array in dense mode takes M and pads the rest."""
    p = dut.params
    k = p.m if dense else dut.k_per_step
    return pack_lanes(x[step * k : (step + 1) * k, col], p.act_bits)


def run_array_ws(dut, values, meta, x, valid=None, *, dense: bool = False, vcd=None) -> ArrayRun:
    """One WS tile: W (C output channels, K) as ``values`` (C, R * w_lanes) and ``meta``
    (C, R * meta_groups) (None for a dense array; for 2:4 sparse values (C, R*N), meta (C, R));
    x (K, T) with K = R * k_per_step (R * M for a dense-path array in ``dense`` mode). Loads R
    weight rows (bottom row first) at edges 0..R-1, then streams the T vectors from edge R on;
    ``valid`` (length >= T, bool) inserts idle edges where False."""
    p, values, meta = _array_common(dut, values, meta)
    R, C = dut.rows, dut.cols
    x = np.asarray(x)
    T = x.shape[1]
    sched = [True] * T if valid is None else [bool(v) for v in valid]
    if sum(sched) < T:
        raise InputError(f"has {sum(sched)} active edges, fewer than T={T} vectors", where="valid")
    res: dict[str, Any] = {"out": [], "err": [], "last": -1}
    wl, mb = dut.w_lanes, dut.meta_groups * p.meta_bits
    loads = []
    for s in range(R):
        r = R - 1 - s
        words = [_pe_words(dut, values, meta, c, r) for c in range(C)]
        loads.append(
            (
                sum(w << (c * wl * p.weight_bits) for c, (w, _) in enumerate(words)),
                sum(mw << (c * mb) for c, (_, mw) in enumerate(words)),
            )
        )
    al = dut.act_lanes * p.act_bits
    vecs = [sum(_act_word(dut, x, r, t, dense) << (r * al) for r in range(R)) for t in range(T)]
    stream = []
    t = 0
    for v in sched:
        if t == T:
            break
        stream.append(vecs[t] if v else None)
        t += v
    total = R + len(stream) + dut.latency + 2

    async def bench(ctx):
        w_port, a_port, acc_port = dut.w_in.as_value(), dut.in_act.as_value(), dut.out_acc
        for k in range(total):
            if k < R:
                ctx.set(dut.w_load, 1)
                ctx.set(w_port, loads[k][0])
                if mb:
                    ctx.set(dut.w_meta_in, loads[k][1])
                if dut.spec.dense_mode:
                    ctx.set(dut.w_dense_in, int(dense))
            else:
                ctx.set(dut.w_load, 0)
                j = k - R
                item = stream[j] if j < len(stream) else None
                ctx.set(dut.in_valid, int(item is not None))
                if item is not None:
                    ctx.set(a_port, item)
            await ctx.tick()
            if ctx.get(dut.out_valid):
                res["out"].append([ctx.get(acc_port[c]) for c in range(C)])
                res["err"].append(ctx.get(dut.out_meta_err))
                res["last"] = k

    _run(dut, bench, vcd)
    return ArrayRun(
        np.array(res["out"], dtype=np.int64).T.reshape(C, -1),
        np.array(res["err"]),
        res["last"],
        res["last"] + 1,
    )


@dataclass
class TilesRun:
    outs: list  # per tile, (C, T_f): the tile's outputs
    err: np.ndarray  # out_meta_err bits at each output
    last_edge: int  # edge index (first load = 0) registering the last output
    cycles: int  # last_edge + 1, comparable to hw.array.run_cycles
    swaps: list  # the edges ``w_swap`` was high (double-buffered arrays)


def ws_tile_schedule(rows: int, cols: int, ts, *, pipeline: int = 1, double_buffer: bool = False):
    """When each WS tile loads, swaps in and streams, as (load_start, swap_edge, first_vector_edge)
    per tile, for tiles of ``ts[f]`` vectors run back to back (hw.array module docstring).

    Single-buffered (swap None): tile f loads at R edges from the edge after tile f-1's last output
    (``tile_cycles`` apart) and streams right after its load. Double-buffered: tile 0 loads at
    edges 0..R-1 and swaps in at edge R; tile f+1 loads from tile f's swap edge, and swaps in
    with tile f's last vector or, when its load is not done yet, at the first edge it is (R edges
    after its load started); tile f streams from the edge after its swap."""
    out: list[tuple[int, int | None, int]] = []
    if not double_buffer:
        start = 0
        for t in ts:
            out.append((start, None, start + rows))
            start += rows + (t + rows + cols - 2) + (pipeline - 1)
        return out
    load, swap = 0, rows
    for t in ts:
        out.append((load, swap, swap + 1))
        load, swap = swap, swap + max(t, rows)
    return out


def run_array_ws_tiles(dut, tiles, *, dense=False, schedule=None, vcd=None) -> TilesRun:
    """WS tiles back to back on a single- or double-buffered array (``dut.double_buffer``), on the
    schedule of :func:`ws_tile_schedule` (or ``schedule``, in its form, to try others).
    ``tiles``: [(values, meta, x)], each one tile as :func:`run_array_ws` takes it (x (K, T_f)
    may differ in T_f); ``dense``: the dense-path array's mode, one bool or one per tile."""
    p, R, C = dut.params, dut.rows, dut.cols
    modes = [bool(dense)] * len(tiles) if isinstance(dense, (bool, np.bool_)) else [bool(d) for d in dense]
    if len(modes) != len(tiles) or not tiles:
        raise InputError(
            f"needs one mode per tile and at least one tile, got {len(modes)} for {len(tiles)}", where="dense"
        )
    wl, mb, al = dut.w_lanes, dut.meta_groups * p.meta_bits, dut.act_lanes * p.act_bits
    ts = [np.asarray(x).shape[1] for _, _, x in tiles]
    sched = schedule or ws_tile_schedule(R, C, ts, pipeline=p.pipeline, double_buffer=dut.double_buffer)
    edges: dict[int, dict] = {}
    for (values, meta, x), mode, (load, swap, first) in zip(tiles, modes, sched, strict=True):
        _, values, meta = _array_common(dut, values, meta)
        x = np.asarray(x)
        for s in range(R):
            r = R - 1 - s
            words = [_pe_words(dut, values, meta, c, r) for c in range(C)]
            e = edges.setdefault(load + s, {})
            e.update(
                w_load=1,
                w=sum(w << (c * wl * p.weight_bits) for c, (w, _) in enumerate(words)),
                meta=sum(mw << (c * mb) for c, (_, mw) in enumerate(words)),
                mode=int(mode),
            )
        if swap is not None:
            edges.setdefault(swap, {})["swap"] = 1
        for t in range(x.shape[1]):
            edges.setdefault(first + t, {}).update(
                valid=1, act=sum(_act_word(dut, x, r, t, mode) << (r * al) for r in range(R))
            )
    total = max(edges) + dut.latency + 2
    res: dict[str, Any] = {
        "out": [],
        "err": [],
        "last": -1,
        "swaps": sorted(k for k, e in edges.items() if e.get("swap")),
    }

    async def bench(ctx):
        w_port, a_port = dut.w_in.as_value(), dut.in_act.as_value()
        for k in range(total):
            e = edges.get(k, {})
            ctx.set(dut.w_load, e.get("w_load", 0))
            if e.get("w_load"):
                ctx.set(w_port, e["w"])
                if mb:
                    ctx.set(dut.w_meta_in, e["meta"])
                if dut.spec.dense_mode:
                    ctx.set(dut.w_dense_in, e["mode"])
            if dut.double_buffer:
                ctx.set(dut.w_swap, e.get("swap", 0))
            ctx.set(dut.in_valid, e.get("valid", 0))
            if e.get("valid"):
                ctx.set(a_port, e["act"])
            await ctx.tick()
            if ctx.get(dut.out_valid):
                res["out"].append([ctx.get(dut.out_acc[c]) for c in range(C)])
                res["err"].append(ctx.get(dut.out_meta_err))
                res["last"] = k

    _run(dut, bench, vcd)
    out = np.array(res["out"], dtype=np.int64).T.reshape(C, -1)
    bounds = np.cumsum([0] + ts)
    return TilesRun(
        [out[:, bounds[f] : bounds[f + 1]] for f in range(len(ts))],
        np.array(res["err"]),
        res["last"],
        res["last"] + 1,
        res["swaps"],
    )


def run_array_os(dut, values, meta, x, *, dense: bool = False, vcd=None) -> ArrayRun:
    """One OS tile: W (R output channels, K) as ``values`` (R, steps * w_lanes), ``meta``
    (R, steps * meta_groups) (None for a dense array); x (K, C), K = steps * k_per_step (steps * M
    for a dense-path array in ``dense`` mode). Streams the steps at edges 0.. with in_clear on the
    first and in_last on the last."""
    p, values, meta = _array_common(dut, values, meta)
    R, C = dut.rows, dut.cols
    x = np.asarray(x)
    G = values.shape[1] // dut.w_lanes
    wl, mb, al = dut.w_lanes, dut.meta_groups * p.meta_bits, dut.act_lanes * p.act_bits
    res: dict[str, Any] = {"out": None, "err": None, "last": -1}
    groups = []
    for g in range(G):
        words = [_pe_words(dut, values, meta, i, g) for i in range(R)]
        w_word = sum(w << (i * wl * p.weight_bits) for i, (w, _) in enumerate(words))
        m_word = sum(mw << (i * mb) for i, (_, mw) in enumerate(words))
        a_word = sum(_act_word(dut, x, g, j, dense) << (j * al) for j in range(C))
        groups.append((w_word, m_word, a_word))
    total = G + dut.latency + 2

    async def bench(ctx):
        for k in range(total):
            if k < G:
                w_word, m_word, a_word = groups[k]
                ctx.set(dut.in_w.as_value(), w_word)
                if mb:
                    ctx.set(dut.in_meta, m_word)
                if dut.spec.dense_mode:
                    ctx.set(dut.in_dense, int(dense))
                ctx.set(dut.in_act.as_value(), a_word)
                ctx.set(dut.in_valid, 1)
                ctx.set(dut.in_clear, int(k == 0))
                ctx.set(dut.in_last, int(k == G - 1))
            else:
                ctx.set(dut.in_valid, 0)
            await ctx.tick()
            if ctx.get(dut.out_valid):
                res["out"] = [[ctx.get(dut.out_acc[i * C + j]) for j in range(C)] for i in range(R)]
                res["err"] = ctx.get(dut.out_meta_err)
                res["last"] = k

    _run(dut, bench, vcd)
    return ArrayRun(np.array(res["out"], dtype=np.int64), np.array(res["err"]), res["last"], res["last"] + 1)


def _run(dut, bench, vcd):
    sim = Simulator(dut)
    sim.add_clock(1e-8)
    sim.add_testbench(bench)
    if vcd is not None:
        with sim.write_vcd(str(vcd)):
            sim.run()
    else:
        sim.run()
