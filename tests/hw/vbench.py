"""Icarus Verilog harness for the generated PE modules: a $readmemh testbench, run with vvp."""

from __future__ import annotations

import subprocess
from pathlib import Path

import numpy as np

from hw.array import array_module_name
from hw.params import PEParams
from hw.simulate import pack_lanes


def _write_vectors(work: Path, words, width: int) -> None:
    """The stimulus words as a $readmemh file, one zero-padded hex word per line."""
    (work / "vectors.hex").write_text("\n".join(f"{w:0{(width + 3) // 4}x}" for w in words) + "\n")


def _run_tb(work: Path, tb: str, vfile: Path) -> str:
    """Compile the testbench with the generated module (Verilog-2005) and run it; its stdout."""
    (work / "tb.v").write_text(tb)
    subprocess.run(
        ["iverilog", "-g2005", "-o", "sim.vvp", "tb.v", str(vfile)],
        cwd=work,
        check=True,
        capture_output=True,
        text=True,
    )
    return subprocess.run(
        ["vvp", "-n", "sim.vvp"], cwd=work, check=True, capture_output=True, text=True
    ).stdout


def _unpack_signed(word: int, lanes: int, bits: int) -> list[int]:
    """Split a packed word into ``lanes`` two's-complement fields of ``bits`` (lane 0 lowest)."""
    mask, sign = (1 << bits) - 1, 1 << (bits - 1)
    vals = [(word >> (i * bits)) & mask for i in range(lanes)]
    return [v - (1 << bits) if v & sign else v for v in vals]


def run_pe_iverilog(
    vfile: Path, module: str, p: PEParams, acts, w, metas, clears, valid, work: Path, dense=None
):
    """Drive ``module`` (sparse_pe, dense_pe or sparse_pe_dp) cycle by cycle; return (acc, err,
    out_cycle) lists. For sparse_pe_dp: acts (T, G*M), w (T, M), metas (T, G) per-group codes
    (packed group g at [g*N*b +: N*b]) and ``dense`` (T,) the in_dense bit."""
    has_meta = metas is not None
    has_dense = dense is not None
    metas = None if not has_meta else np.asarray(metas)
    groups = metas.shape[1] if has_meta and metas.ndim == 2 else 1
    w_lanes = np.asarray(w).shape[1]
    a_lanes = np.asarray(acts).shape[1]
    aw, ww, mw = a_lanes * p.act_bits, w_lanes * p.weight_bits, p.meta_bits * groups if has_meta else 0
    dw = 1 if has_dense else 0
    width = 2 + dw + mw + ww + aw
    words = []
    for k in range(len(acts)):
        word = pack_lanes(acts[k], p.act_bits) | (pack_lanes(w[k], p.weight_bits) << aw)
        if has_meta:
            codes = metas[k] if metas.ndim == 2 else [metas[k]]
            word |= sum(int(c) << (g * p.meta_bits) for g, c in enumerate(codes)) << (aw + ww)
        if has_dense:
            word |= int(bool(dense[k])) << (aw + ww + mw)
        word |= (int(clears[k]) << (aw + ww + mw + dw)) | (int(valid[k]) << (aw + ww + mw + dw + 1))
        words.append(word)
    _write_vectors(work, words, width)
    t = len(acts)
    meta_decl = f"  reg [{mw - 1}:0] in_meta = 0;\n" if has_meta else ""
    meta_conn = "    .in_meta(in_meta),\n" if has_meta else ""
    meta_lhs = "in_meta, " if has_meta else ""
    dense_decl = "  reg in_dense = 0;\n" if has_dense else ""
    dense_conn = "    .in_dense(in_dense),\n" if has_dense else ""
    dense_lhs = "in_dense, " if has_dense else ""
    tb = f"""`timescale 1ns/1ps
module tb;
  reg clk = 0;
  reg rst = 1;
  reg in_valid = 0;
  reg in_clear = 0;
  reg [{aw - 1}:0] in_act = 0;
  reg [{ww - 1}:0] in_w = 0;
{meta_decl}{dense_decl}  wire out_valid;
  wire signed [{p.acc_bits - 1}:0] out_acc;
  wire out_meta_err;
  reg [{width - 1}:0] vec [0:{t - 1}];
  integer k;
  {module} dut (
    .clk(clk), .rst(rst), .in_valid(in_valid), .in_clear(in_clear),
    .in_act(in_act), .in_w(in_w),
{meta_conn}{dense_conn}    .out_valid(out_valid), .out_acc(out_acc), .out_meta_err(out_meta_err)
  );
  always #5 clk = ~clk;
  initial begin
    $readmemh("vectors.hex", vec);
    @(posedge clk); #1 rst = 0;
    for (k = 0; k < {t + p.latency + 2}; k = k + 1) begin
      if (k < {t}) {{in_valid, in_clear, {dense_lhs}{meta_lhs}in_w, in_act}} = vec[k];
      else in_valid = 0;
      @(posedge clk); #1;
      if (out_valid) $display("OUT %0d %0d %0d", k, out_acc, out_meta_err);
    end
    $finish;
  end
endmodule
"""
    out = _run_tb(work, tb, vfile)
    rows = [ln.split()[1:] for ln in out.splitlines() if ln.startswith("OUT ")]
    return [int(r[1]) for r in rows], [bool(int(r[2])) for r in rows], [int(r[0]) for r in rows]


def run_array_ws_iverilog(
    vfile: Path,
    p: PEParams,
    rows: int,
    cols: int,
    values,
    meta,
    x,
    work: Path,
    kind: str = "sparse",
    dense: bool = False,
):
    """Same schedule as ``hw.simulate.run_array_ws`` (load R rows bottom-first, then stream x's
    columns back to back) on the generated WS array of ``kind`` (``sparse_array``, ``dense_array``
    or ``sparse_array_dp``; ``dense``: the dense-path array's mode); returns (out (C, T), last_edge).
    The packing follows the port list in hw/array.py's docstring, written out here again."""
    from hw.array import array_module_name

    values, x = np.asarray(values), np.asarray(x)
    meta = None if meta is None else np.asarray(meta)
    T = x.shape[1]
    g = p.m // p.n
    wl = p.n if kind == "sparse" else p.m
    mg = {"sparse": 1, "dense": 0, "dense_path": g}[kind]
    al = p.m * g if kind == "dense_path" else p.m
    k_step = p.m if (kind != "dense_path" or dense) else p.m * g
    aw, ww, mw = rows * al * p.act_bits, cols * wl * p.weight_bits, cols * mg * p.meta_bits
    dw = 1 if kind == "dense_path" else 0
    width = 2 + dw + mw + ww + aw
    words = []
    for s in range(rows):
        r = rows - 1 - s
        wv = sum(
            pack_lanes(values[c, r * wl : (r + 1) * wl], p.weight_bits) << (c * wl * p.weight_bits)
            for c in range(cols)
        )
        mv = sum(
            int(meta[c, r * mg + k]) << ((c * mg + k) * p.meta_bits) for c in range(cols) for k in range(mg)
        )
        words.append(
            (1 << (width - 1)) | (int(dense) << (mw + ww + aw) if dw else 0) | (mv << (aw + ww)) | (wv << aw)
        )
    for t in range(T):
        words.append(
            (1 << (width - 2))
            | sum(
                pack_lanes(x[r * k_step : (r + 1) * k_step, t], p.act_bits) << (r * al * p.act_bits)
                for r in range(rows)
            )
        )
    _write_vectors(work, words, width)
    n = len(words)
    latency = rows + cols + p.pipeline - 2
    module = array_module_name(kind)
    meta_decl = f"  reg [{mw - 1}:0] w_meta_in = 0;\n" if mw else ""
    meta_conn = ".w_meta_in(w_meta_in), " if mw else ""
    dense_decl = "  reg w_dense_in = 0;\n" if dw else ""
    dense_conn = ".w_dense_in(w_dense_in), " if dw else ""
    lhs = (
        "w_load, in_valid, " + ("w_dense_in, " if dw else "") + ("w_meta_in, " if mw else "") + "w_in, in_act"
    )
    tb = f"""`timescale 1ns/1ps
module tb;
  reg clk = 0;
  reg rst = 1;
  reg w_load = 0;
  reg in_valid = 0;
  reg [{ww - 1}:0] w_in = 0;
{meta_decl}{dense_decl}  reg [{aw - 1}:0] in_act = 0;
  wire out_valid;
  wire [{cols * p.acc_bits - 1}:0] out_acc;
  wire [{cols - 1}:0] out_meta_err;
  reg [{width - 1}:0] vec [0:{n - 1}];
  integer k;
  {module} dut (.clk(clk), .rst(rst), .w_load(w_load), .w_in(w_in), {meta_conn}{dense_conn}
    .in_valid(in_valid), .in_act(in_act), .out_valid(out_valid), .out_acc(out_acc),
    .out_meta_err(out_meta_err));
  always #5 clk = ~clk;
  initial begin
    $readmemh("vectors.hex", vec);
    @(posedge clk); #1 rst = 0;
    for (k = 0; k < {n + latency + 2}; k = k + 1) begin
      if (k < {n}) {{{lhs}}} = vec[k];
      else begin w_load = 0; in_valid = 0; end
      @(posedge clk); #1;
      if (out_valid) $display("OUT %0d %h", k, out_acc);
    end
    $finish;
  end
endmodule
"""
    rows_out, last = [], -1
    for ln in _run_tb(work, tb, vfile).splitlines():
        if ln.startswith("OUT "):
            _, k, word = ln.split()
            last = int(k)
            rows_out.append(_unpack_signed(int(word, 16), cols, p.acc_bits))
    return np.array(rows_out, dtype=np.int64).T, last


def run_array_ws_tiles_iverilog(
    vfile: Path,
    p: PEParams,
    rows: int,
    cols: int,
    tiles,
    work: Path,
    kind: str = "sparse",
    dense=False,
    double_buffer: bool = False,
):
    """WS tiles back to back on the generated (double-buffered) array, on the schedule of the
    hw/array.py docstring, written out here again: single-buffered, each tile loads R words (bottom
    row first) and streams its vectors, tile_cycles apart; double-buffered, tile 0 loads at edges
    0..R-1 and swaps in at edge R, tile f streams from the edge after its swap s_f, tile f+1 loads
    from s_f and swaps in at s_f + max(T, R). ``tiles``: [(values, meta, x)] as
    :func:`run_array_ws_iverilog` takes one; ``dense``: one mode or one per tile. Returns (outputs
    per tile, each (C, T), last_edge)."""
    g = p.m // p.n
    wl = p.n if kind == "sparse" else p.m
    mg = {"sparse": 1, "dense": 0, "dense_path": g}[kind]
    al = p.m * g if kind == "dense_path" else p.m
    modes = [dense] * len(tiles) if isinstance(dense, bool) else list(dense)
    aw, ww, mw = rows * al * p.act_bits, cols * wl * p.weight_bits, cols * mg * p.meta_bits
    dw = 1 if kind == "dense_path" else 0
    sw = 1 if double_buffer else 0
    # word: {w_load, w_swap?, in_valid, w_dense_in?, w_meta_in, w_in, in_act}
    width = 2 + sw + dw + mw + ww + aw
    edges: dict[int, int] = {}
    ts = [np.asarray(x).shape[1] for _, _, x in tiles]
    load, swap = 0, rows
    for (values, meta, x), mode in zip(tiles, modes, strict=True):
        values, x = np.asarray(values), np.asarray(x)
        if double_buffer:
            first = swap + 1
            edges[swap] = edges.get(swap, 0) | (1 << (width - 2))
        else:
            first = load + rows
        k_step = p.m if (kind != "dense_path" or mode) else p.m * g
        for s in range(rows):
            r = rows - 1 - s
            wv = sum(
                pack_lanes(values[c, r * wl : (r + 1) * wl], p.weight_bits) << (c * wl * p.weight_bits)
                for c in range(cols)
            )
            mv = sum(
                int(meta[c, r * mg + k]) << ((c * mg + k) * p.meta_bits)
                for c in range(cols)
                for k in range(mg)
            )
            word = (
                (1 << (width - 1))
                | (int(mode) << (mw + ww + aw) if dw else 0)
                | (mv << (aw + ww))
                | (wv << aw)
            )
            edges[load + s] = edges.get(load + s, 0) | word
        for t in range(x.shape[1]):
            av = sum(
                pack_lanes(x[r * k_step : (r + 1) * k_step, t], p.act_bits) << (r * al * p.act_bits)
                for r in range(rows)
            )
            edges[first + t] = edges.get(first + t, 0) | (1 << (width - 2 - sw)) | av
        if double_buffer:
            load, swap = swap, swap + max(x.shape[1], rows)
        else:
            load += 2 * rows + cols + x.shape[1] - 2 + p.pipeline - 1
    n = max(edges) + 1
    _write_vectors(work, [edges.get(k, 0) for k in range(n)], width)
    latency = rows + cols + p.pipeline - 2
    module = array_module_name(kind, double_buffer)
    meta_decl = f"  reg [{mw - 1}:0] w_meta_in = 0;\n" if mw else ""
    meta_conn = ".w_meta_in(w_meta_in), " if mw else ""
    dense_decl = "  reg w_dense_in = 0;\n" if dw else ""
    dense_conn = ".w_dense_in(w_dense_in), " if dw else ""
    swap_decl = "  reg w_swap = 0;\n" if sw else ""
    swap_conn = ".w_swap(w_swap), " if sw else ""
    lhs = (
        "w_load, "
        + ("w_swap, " if sw else "")
        + "in_valid, "
        + ("w_dense_in, " if dw else "")
        + ("w_meta_in, " if mw else "")
        + "w_in, in_act"
    )
    tb = f"""`timescale 1ns/1ps
module tb;
  reg clk = 0;
  reg rst = 1;
  reg w_load = 0;
  reg in_valid = 0;
  reg [{ww - 1}:0] w_in = 0;
{meta_decl}{dense_decl}{swap_decl}  reg [{aw - 1}:0] in_act = 0;
  wire out_valid;
  wire [{cols * p.acc_bits - 1}:0] out_acc;
  wire [{cols - 1}:0] out_meta_err;
  reg [{width - 1}:0] vec [0:{n - 1}];
  integer k;
  {module} dut (.clk(clk), .rst(rst), .w_load(w_load), {swap_conn}.w_in(w_in), {meta_conn}{dense_conn}
    .in_valid(in_valid), .in_act(in_act), .out_valid(out_valid), .out_acc(out_acc),
    .out_meta_err(out_meta_err));
  always #5 clk = ~clk;
  initial begin
    $readmemh("vectors.hex", vec);
    @(posedge clk); #1 rst = 0;
    for (k = 0; k < {n + latency + 2}; k = k + 1) begin
      if (k < {n}) {{{lhs}}} = vec[k];
      else begin w_load = 0; in_valid = 0;{" w_swap = 0;" if sw else ""} end
      @(posedge clk); #1;
      if (out_valid) $display("OUT %0d %h", k, out_acc);
    end
    $finish;
  end
endmodule
"""
    rows_out, last = [], -1
    for ln in _run_tb(work, tb, vfile).splitlines():
        if ln.startswith("OUT "):
            _, k, word = ln.split()
            last = int(k)
            rows_out.append(_unpack_signed(int(word, 16), cols, p.acc_bits))
    out = np.array(rows_out, dtype=np.int64).T.reshape(cols, -1)
    bounds = np.cumsum([0] + ts)
    return [out[:, bounds[f] : bounds[f + 1]] for f in range(len(ts))], last


def run_array_os_iverilog(vfile: Path, p: PEParams, rows: int, cols: int, values, meta, x, work: Path):
    """Same schedule as ``hw.simulate.run_array_os`` (the K/M groups back to back from edge 0, in_clear
    on the first, in_last on the last) on the generated output-stationary ``sparse_array``; returns
    (out (R, C), err bits, last_edge) from the single ``out_valid`` pulse."""
    values, meta, x = np.asarray(values), np.asarray(meta), np.asarray(x)
    G = meta.shape[1]
    aw, ww, mw = cols * p.m * p.act_bits, rows * p.n * p.weight_bits, rows * p.meta_bits
    width = 3 + mw + ww + aw
    words = []
    for g in range(G):
        wv = sum(
            pack_lanes(values[i, g * p.n : (g + 1) * p.n], p.weight_bits) << (i * p.n * p.weight_bits)
            for i in range(rows)
        )
        mv = sum(int(meta[i, g]) << (i * p.meta_bits) for i in range(rows))
        av = sum(
            pack_lanes(x[g * p.m : (g + 1) * p.m, j], p.act_bits) << (j * p.m * p.act_bits)
            for j in range(cols)
        )
        ctl = 0b100 | (0b010 if g == 0 else 0) | (0b001 if g == G - 1 else 0)  # valid, clear, last
        words.append((ctl << (mw + ww + aw)) | (mv << (ww + aw)) | (wv << aw) | av)
    _write_vectors(work, words, width)
    latency = rows + cols + p.pipeline - 2
    tb = f"""`timescale 1ns/1ps
module tb;
  reg clk = 0;
  reg rst = 1;
  reg in_valid = 0;
  reg in_clear = 0;
  reg in_last = 0;
  reg [{ww - 1}:0] in_w = 0;
  reg [{mw - 1}:0] in_meta = 0;
  reg [{aw - 1}:0] in_act = 0;
  wire out_valid;
  wire [{rows * cols * p.acc_bits - 1}:0] out_acc;
  wire [{rows - 1}:0] out_meta_err;
  reg [{width - 1}:0] vec [0:{G - 1}];
  integer k;
  sparse_array dut (.clk(clk), .rst(rst), .in_valid(in_valid), .in_clear(in_clear), .in_last(in_last),
    .in_w(in_w), .in_meta(in_meta), .in_act(in_act), .out_valid(out_valid), .out_acc(out_acc),
    .out_meta_err(out_meta_err));
  always #5 clk = ~clk;
  initial begin
    $readmemh("vectors.hex", vec);
    @(posedge clk); #1 rst = 0;
    for (k = 0; k < {G + latency + 2}; k = k + 1) begin
      if (k < {G}) {{in_valid, in_clear, in_last, in_meta, in_w, in_act}} = vec[k];
      else begin in_valid = 0; in_clear = 0; in_last = 0; end
      @(posedge clk); #1;
      if (out_valid) $display("OUT %0d %h %b", k, out_acc, out_meta_err);
    end
    $finish;
  end
endmodule
"""
    stdout = _run_tb(work, tb, vfile)
    pulses = [ln.split()[1:] for ln in stdout.splitlines() if ln.startswith("OUT ")]
    if len(pulses) != 1:
        raise AssertionError(f"expected one out_valid pulse per tile, got {len(pulses)}:\n{stdout}")
    k, word, err = int(pulses[0][0]), int(pulses[0][1], 16), int(pulses[0][2], 2)
    out = np.array(_unpack_signed(word, rows * cols, p.acc_bits), dtype=np.int64).reshape(rows, cols)
    return out, err, k
