"""Double-buffered WS arrays (every PE kind, integer and float): GEMMs larger than the array, run
fold after fold, against the golden GEMM; the same folds on the single-buffered array; the cycle
counts against hw.array.run_cycles; Icarus on the generated Verilog; Verilator lint."""

from __future__ import annotations

import subprocess

import numpy as np
import pytest

from hw.array import SparseArray, array_module_name, run_cycles
from hw.errors import InputError
from hw.fp_golden import fp_gemm
from hw.golden import compress_nm, decompress_nm, gemm_dense, gemm_nm, sum_folds, ws_folds
from hw.params import PEParams
from hw.simulate import run_array_ws_tiles, ws_tile_schedule
from hw.verilog import VERILATOR_WAIVERS, to_verilog, verilator_waivers, write_bundle
from tests.hw.fp_vectors import operands
from tests.hw.vbench import run_array_ws_tiles_iverilog


def _gemm(kind, p, rows, cols, t, seed, dense=False, rfolds=2, cfolds=2):
    """(values, meta, x, steps, reference) of a GEMM of rfolds x cfolds WS folds on a ``kind`` array
    (dense: the dense-path array's dense mode); most negative weights and activations included."""
    rng = np.random.default_rng(seed)
    lo_a, lo_w = -(1 << (p.act_bits - 1)), -(1 << (p.weight_bits - 1))
    g = p.m // p.n
    steps = rows * rfolds
    k_step = p.m * g if kind == "dense_path" and not dense else p.m
    w = rng.integers(lo_w, -lo_w, size=(cols * cfolds, steps * k_step))
    w[0] = lo_w
    x = rng.integers(lo_a, -lo_a, size=(steps * k_step, t))
    x[:, 0] = lo_a
    if kind == "dense" or dense:
        # the dense-path array in dense mode ignores its codes: illegal ones (0000) prove it
        meta = None if kind == "dense" else np.zeros((w.shape[0], steps * g), dtype=np.int64)
        return w, meta, x, steps, gemm_dense(w, x, p.acc_bits)
    values, meta = compress_nm(w, p.n, p.m)
    return values, meta, x, steps, gemm_nm(values, meta, x, p.n, p.m, p.acc_bits)


def _fold_ref(kind, p, values, meta, x, dense=False):
    if kind == "dense" or dense:
        return gemm_dense(values, x, p.acc_bits)
    return gemm_nm(values, meta, x, p.n, p.m, p.acc_bits)


CASES = [
    ("sparse", PEParams(acc_bits=20), 3, 2),  # channel 0 wraps at 20 bits
    ("sparse", PEParams(n=2, m=8, pipeline=3), 2, 3),
    ("sparse", PEParams(n=1, m=4, act_bits=4, weight_bits=4, acc_bits=10, pipeline=2), 2, 2),
    ("dense", PEParams(pipeline=2), 3, 2),
    ("dense_path", PEParams(), 2, 3),
    ("dense_path", PEParams(n=2, m=8, pipeline=2), 3, 2),
]
IDS = [f"{k}_{r}x{c}_{p.n}of{p.m}_p{p.pipeline}" for k, p, r, c in CASES]


@pytest.mark.parametrize("kind,p,rows,cols", CASES, ids=IDS)
@pytest.mark.parametrize("t_of", ["t1", "t_eq_r", "t_gt_r"])
def test_double_buffered_gemm_matches_golden_and_run_cycles(kind, p, rows, cols, t_of):
    # T < R: the swap waits for the next load; T = R: load and stream match; T > R: the load hides
    t = {"t1": 1, "t_eq_r": rows, "t_gt_r": rows + 3}[t_of]
    values, meta, x, steps, ref = _gemm(kind, p, rows, cols, t, seed=rows * 10 + cols + t)
    folds = ws_folds(values, meta, x, rows, cols, steps)
    tiles = [f[:3] for f in folds]
    runs = {}
    for db in (False, True):
        run = run_array_ws_tiles(SparseArray(rows, cols, p, kind=kind, double_buffer=db), tiles)
        assert [o.tolist() for o in run.outs] == [_fold_ref(kind, p, *f[:3]).tolist() for f in folds]
        assert sum_folds(run.outs, folds, p.acc_bits).tolist() == ref.tolist()
        assert run.cycles == run_cycles(rows, cols, t, len(folds), pipeline=p.pipeline, double_buffer=db)
        assert not np.any(run.err)
        runs[db] = run
    assert runs[True].cycles < runs[False].cycles
    # the swaps ride on each tile's last vector once the load is hidden (T >= R)
    sched = ws_tile_schedule(rows, cols, [t] * len(folds), double_buffer=True)
    assert runs[True].swaps == [s for _, s, _ in sched]
    if t >= rows:
        assert all(s1 == f0 + t - 1 for (_, _, f0), (_, s1, _) in zip(sched, sched[1:], strict=False))


def test_dense_path_modes_change_with_the_swap():
    """Tiles alternate dense and N:M mode: each PE's mode bit is swapped with its weights."""
    p, rows, cols, t = PEParams(), 2, 3, 3
    nm = ws_folds(*_gemm("dense_path", p, rows, cols, t, seed=1)[:3], rows, cols, 2 * rows)
    dn_v, dn_m, dn_x, dn_steps, _ = _gemm("dense_path", p, rows, cols, t, seed=2, dense=True)
    dn = ws_folds(dn_v, dn_m, dn_x, rows, cols, dn_steps)
    tiles, modes = [], []
    for a, b in zip(nm, dn, strict=True):
        tiles += [a[:3], b[:3]]
        modes += [False, True]
    run = run_array_ws_tiles(
        SparseArray(rows, cols, p, kind="dense_path", double_buffer=True), tiles, dense=modes
    )
    want = [_fold_ref("dense_path", p, *tile, dense=mode) for tile, mode in zip(tiles, modes, strict=True)]
    assert [o.tolist() for o in run.outs] == [w.tolist() for w in want]
    assert run.cycles == run_cycles(rows, cols, t, len(tiles), double_buffer=True)


def test_illegal_code_follows_the_active_tile():
    p, rows, cols, t = PEParams(), 2, 2, 3
    values, meta, x, steps, _ = _gemm("sparse", p, rows, cols, t, seed=3, cfolds=1)
    meta = meta.copy()
    meta[1, 0] = 0b0000  # channel 1, first step of fold 0: illegal
    folds = ws_folds(values, meta, x, rows, cols, steps)
    run = run_array_ws_tiles(SparseArray(rows, cols, p, double_buffer=True), [f[:3] for f in folds])
    legal = meta.copy()
    legal[1, 0] = 0b0100
    w = decompress_nm(values, legal)
    w[1, :4] = 0  # the dropped group
    assert run.outs[0].tolist() == gemm_dense(w[:, : rows * p.m], x[: rows * p.m]).tolist()
    assert run.outs[1].tolist() == gemm_nm(*folds[1][:3]).tolist()
    assert run.err.tolist() == [0b10] * t + [0] * t  # beside each output of tile 0 only


@pytest.mark.parametrize(
    "precision,kind,pipeline",
    [("bf16", "sparse", 1), ("fp8-e4m3", "dense_path", 2), ("fp8-e5m2", "dense", 1)],
)
def test_double_buffered_fp_array(precision, kind, pipeline):
    p = PEParams(precision=precision, pipeline=pipeline)
    rows, cols, t = 2, 2, 3
    rng = np.random.default_rng(pipeline)
    g = p.m // p.n
    k_step = p.m * g if kind == "dense_path" else p.m
    tiles, want = [], []
    for _ in range(3):
        w = operands(rng, precision, (cols, rows * k_step), mix=(0.3, 0.6, 0.1))
        x = operands(rng, precision, (rows * k_step, t), mix=(0.3, 0.6, 0.1))
        if kind == "dense":
            tiles.append((w, None, x))
            want.append(fp_gemm(w, x, p))
            continue
        _, meta = compress_nm(w & ((1 << (p.weight_bits - 1)) - 1), p.n, p.m)  # prune by magnitude
        keep = decompress_nm(
            np.ones((cols, rows * k_step * p.n // p.m), dtype=np.int64), meta, p.n, p.m
        ).astype(bool)
        tiles.append((w.reshape(cols, -1, p.m)[keep.reshape(cols, -1, p.m)].reshape(cols, -1), meta, x))
        want.append(fp_gemm(w, x, p, keep))
    run = run_array_ws_tiles(SparseArray(rows, cols, p, kind=kind, double_buffer=True), tiles)
    assert [o.tolist() for o in run.outs] == [w.tolist() for w in want]


def test_the_host_rules_are_tight():
    """A swap one edge early (the old tile's last vector then meets the new weights) breaks the
    result, and so does a load that starts one edge before the swap it follows."""
    p, rows, cols, t = PEParams(), 2, 2, 4
    values, meta, x, steps, _ = _gemm("sparse", p, rows, cols, t, seed=5, cfolds=1)
    tiles = [f[:3] for f in ws_folds(values, meta, x, rows, cols, steps)]
    want = [gemm_nm(*tile).tolist() for tile in tiles]
    arr = SparseArray(rows, cols, p, double_buffer=True)
    good = ws_tile_schedule(rows, cols, [t, t], double_buffer=True)
    assert [o.tolist() for o in run_array_ws_tiles(arr, tiles, schedule=good).outs] == want
    (l0, s0, f0), (l1, s1, f1) = good
    early_swap = [(l0, s0, f0), (l1, s1 - 1, f1)]
    assert run_array_ws_tiles(arr, tiles, schedule=early_swap).outs[0].tolist() != want[0]
    # tile 0 swapped in one edge later: tile 1 may load from that swap edge on, not from the edge before
    legal = [(l0, s0 + 1, f0 + 1), (s0 + 1, s1 + 1, f1 + 1)]
    assert [o.tolist() for o in run_array_ws_tiles(arr, tiles, schedule=legal).outs] == want
    too_early = [(l0, s0 + 1, f0 + 1), (s0, s1 + 1, f1 + 1)]
    assert run_array_ws_tiles(arr, tiles, schedule=too_early).outs[0].tolist() != want[0]


def test_run_cycles_formula_and_inputs():
    # single-buffered: the folds add (SCALE-Sim's 2R + C + T - 2 each at pipeline 1)
    assert run_cycles(4, 4, 6, 3) == 3 * (2 * 4 + 4 + 6 - 2)
    # double-buffered: (R + 1) + (F - 1) max(T, R) + T + (R + C - 2) + (p - 1)
    assert run_cycles(4, 4, 6, 3, double_buffer=True) == 5 + 2 * 6 + 6 + 6
    assert run_cycles(4, 4, 2, 3, double_buffer=True, pipeline=2) == 5 + 2 * 4 + 2 + 6 + 1
    assert run_cycles(4, 4, 6, 1, double_buffer=True) == run_cycles(4, 4, 6, 1) + 1  # the swap edge
    with pytest.raises(InputError):
        run_cycles(4, 4, 6, 0)
    with pytest.raises(InputError):
        SparseArray(2, 2, PEParams(), dataflow="os", double_buffer=True)
    with pytest.raises(InputError):
        SparseArray(2, 2, PEParams(), double_buffer=1)
    with pytest.raises(InputError):
        write_bundle("unused", PEParams(), double_buffer=True)  # no rows/cols: no array


def test_off_adds_nothing_and_on_names_its_modules(tmp_path):
    p = PEParams()
    for kind in ("sparse", "dense", "dense_path"):
        single = SparseArray(2, 2, p, kind=kind)
        assert to_verilog(single, single.module_name) == to_verilog(
            SparseArray(2, 2, p, kind=kind, double_buffer=False), single.module_name
        )
        assert "w_swap" not in single.signature.members
        db = SparseArray(2, 2, p, kind=kind, double_buffer=True)
        assert db.module_name == array_module_name(kind) + "_db" and "w_swap" in db.signature.members
        assert "input w_swap;" in to_verilog(db, db.module_name)
    paths = write_bundle(tmp_path, p, rows=2, cols=2, dense_path=True, double_buffer=True)
    assert {"sparse_array_db", "dense_array_db", "sparse_array_dp_db"} <= set(paths)
    assert "sparse_array" not in paths


@pytest.mark.iverilog
@pytest.mark.parametrize(
    "kind,p,rows,cols", [CASES[0], CASES[1], CASES[3], CASES[4]], ids=[IDS[0], IDS[1], IDS[3], IDS[4]]
)
@pytest.mark.parametrize("double_buffer", [False, True], ids=["single", "double"])
def test_iverilog_runs_the_same_folds(tmp_path, kind, p, rows, cols, double_buffer):
    t = rows + 1
    values, meta, x, steps, ref = _gemm(
        kind, p, rows, cols, t, seed=rows * 10 + cols + t
    )  # as the Amaranth test
    folds = ws_folds(values, meta, x, rows, cols, steps)
    paths = write_bundle(
        tmp_path / "rtl",
        p,
        rows=rows,
        cols=cols,
        dense_path=kind == "dense_path",
        double_buffer=double_buffer,
    )
    name = array_module_name(kind, double_buffer)
    outs, last = run_array_ws_tiles_iverilog(
        paths[name], p, rows, cols, [f[:3] for f in folds], tmp_path, kind=kind, double_buffer=double_buffer
    )
    assert [o.tolist() for o in outs] == [_fold_ref(kind, p, *f[:3]).tolist() for f in folds]
    assert sum_folds(outs, folds, p.acc_bits).tolist() == ref.tolist()
    assert last + 1 == run_cycles(rows, cols, t, len(folds), pipeline=p.pipeline, double_buffer=double_buffer)


@pytest.mark.iverilog
def test_iverilog_dense_path_modes(tmp_path):
    p, rows, cols, t = PEParams(pipeline=2), 2, 2, 1
    nm = ws_folds(*_gemm("dense_path", p, rows, cols, t, seed=7)[:3], rows, cols, 2 * rows)
    dn_v, dn_m, dn_x, dn_steps, _ = _gemm("dense_path", p, rows, cols, t, seed=8, dense=True)
    dn = ws_folds(dn_v, dn_m, dn_x, rows, cols, dn_steps)
    tiles = [f[:3] for pair in zip(dn, nm, strict=True) for f in pair]
    modes = [True, False] * len(nm)
    paths = write_bundle(tmp_path / "rtl", p, rows=rows, cols=cols, dense_path=True, double_buffer=True)
    outs, _ = run_array_ws_tiles_iverilog(
        paths["sparse_array_dp_db"],
        p,
        rows,
        cols,
        tiles,
        tmp_path,
        kind="dense_path",
        dense=modes,
        double_buffer=True,
    )
    assert [o.tolist() for o in outs] == [
        _fold_ref("dense_path", p, *tile, dense=m).tolist() for tile, m in zip(tiles, modes, strict=True)
    ]


#: The non-square shapes (rows != cols, both orders) are the integer cases'; the float case lints at
#: 2x2, which already has a top row, a neighbour to the right and below (2x3 adds no other kind of
#: connection, and took 29 s of processor time against 21 s, mostly Amaranth elaborating float PEs).
LINT = [
    (PEParams(), (2, 3)),
    (PEParams(), (5, 4)),
    (PEParams(pipeline=4, n=4, m=8, acc_bits=16), (2, 3)),
    (PEParams(n=1, m=4, act_bits=3, weight_bits=5, acc_bits=8), (5, 4)),
    # the BF16 array takes Verilator 30-90 s: the slow tier (the BF16 PE lints in the default tier)
    pytest.param(PEParams(precision="bf16", pipeline=2), (2, 2), marks=pytest.mark.slow),
]


@pytest.mark.verilator
@pytest.mark.parametrize(
    "p,shape", LINT, ids=["default_2x3", "default_5x4", "4of8_p4_acc16_2x3", "1of4_narrow_5x4", "bf16_p2_2x2"]
)
def test_verilator_lint_clean(tmp_path, p, shape):
    # the same waivers as the single-buffered modules (hw/verilog.py), nothing added
    waivers = verilator_waivers(p.precision)
    assert waivers.startswith(VERILATOR_WAIVERS)
    (tmp_path / "waivers.vlt").write_text(waivers)
    paths = write_bundle(
        tmp_path / "rtl", p, rows=shape[0], cols=shape[1], dense_path=True, double_buffer=True
    )
    for module in ("sparse_array_db", "dense_array_db", "sparse_array_dp_db"):
        r = subprocess.run(
            ["verilator", "--lint-only", "-Wall", "waivers.vlt", str(paths[module]), "--top-module", module],
            cwd=tmp_path,
            capture_output=True,
            text=True,
        )
        assert r.returncode == 0, f"{module}:\n{r.stderr}"
