"""SparseArray (WS and OS) against the GEMM golden model; cycle counts against tile_cycles."""

from __future__ import annotations

import numpy as np
import pytest

from hw.array import SparseArray, tile_cycles
from hw.errors import InputError
from hw.golden import compress_nm, decode_meta, decompress_nm, encode_meta, gemm_dense, gemm_nm, wrap_signed
from hw.params import PEParams
from hw.simulate import run_array_os, run_array_ws
from hw.verilog import write_bundle
from tests.hw.vbench import run_array_os_iverilog, run_array_ws_iverilog


def _ws_case(rows, cols, t, p, seed):
    """W (cols output channels, K = rows*M) dense -> N:M compressed; x (K, T); extremes included."""
    rng = np.random.default_rng(seed)
    lo_a, lo_w = -(1 << (p.act_bits - 1)), -(1 << (p.weight_bits - 1))
    k = rows * p.m
    dense = rng.integers(lo_w, -lo_w, size=(cols, k))
    dense[0, :] = lo_w  # most negative weights in channel 0
    x = rng.integers(lo_a, -lo_a, size=(k, t))
    x[:, 0] = lo_a  # most negative activations in vector 0
    values, meta = compress_nm(dense, p.n, p.m)
    return values, meta, x


def test_tile_cycles_formula_matches_scalesim_ws():
    # SCALE-Sim WS per fold: 2R + C + T - 2 (weights preloaded over R cycles, skewed stream, drain)
    for r, c, t in [(4, 4, 6), (32, 32, 256), (8, 16, 1)]:
        assert tile_cycles(r, c, t, "ws") == 2 * r + c + t - 2
    assert tile_cycles(4, 4, 6, "ws", pipeline=3) == 2 * 4 + 4 + 6 - 2 + 2
    assert tile_cycles(4, 4, 6, "os") == 6 + 4 + 4 - 2
    with pytest.raises(InputError):
        tile_cycles(0, 4, 1)
    with pytest.raises(InputError):
        tile_cycles(4, 4, 1, "rs")


@pytest.mark.parametrize(
    "rows,cols,t,p",
    [
        (4, 4, 6, PEParams(acc_bits=20)),  # 4x4 2:4 tile; acc 20 bits so channel 0 wraps
        (3, 2, 5, PEParams(pipeline=2)),
        (2, 3, 4, PEParams(n=2, m=8, pipeline=3)),
        (2, 2, 3, PEParams(n=1, m=4, act_bits=4, weight_bits=4, acc_bits=8)),
    ],
    ids=["4x4_2of4", "3x2_p2", "2x3_2of8_p3", "2x2_1of4_narrow"],
)
def test_ws_array_gemm_tile(rows, cols, t, p):
    values, meta, x = _ws_case(rows, cols, t, p, seed=rows * 10 + cols)
    run = run_array_ws(SparseArray(rows, cols, p), values, meta, x)
    ref = gemm_nm(values, meta, x, p.n, p.m, p.acc_bits)
    assert run.out.tolist() == ref.tolist()
    assert run.cycles == tile_cycles(rows, cols, t, "ws", pipeline=p.pipeline)
    assert not run.err.any()


def test_ws_array_wraps():
    p = PEParams(acc_bits=16)
    values, meta, x = _ws_case(4, 4, 3, p, seed=1)
    values[0], x[:, 0] = -128, -128  # 8 products of 16384 per column 0 output: wraps in 16 bits
    run = run_array_ws(SparseArray(4, 4, p), values, meta, x)
    assert run.out[0, 0] == wrap_signed(8 * 16384, 16) == 0
    assert run.out.tolist() == gemm_nm(values, meta, x, acc_bits=16).tolist()


def test_ws_array_gaps_in_valid():
    p = PEParams()
    values, meta, x = _ws_case(4, 4, 5, p, seed=2)
    sched = [True, False, False, True, True, False, True, True]
    run = run_array_ws(SparseArray(4, 4, p), values, meta, x, valid=sched)
    assert run.out.tolist() == gemm_nm(values, meta, x).tolist()
    assert run.cycles == tile_cycles(4, 4, 5, "ws") + sched.count(False)


def test_ws_array_illegal_metadata_drops_products():
    p = PEParams()
    values, meta, x = _ws_case(3, 3, 3, p, seed=4)
    meta = meta.copy()
    meta[1, 2] = encode_meta((2, 2))  # column 1, row 2: illegal
    run = run_array_ws(SparseArray(3, 3, p), values, meta, x)
    legal_meta = meta.copy()
    legal_meta[1, 2] = encode_meta((0, 1))
    w = decompress_nm(values, legal_meta)
    w[1, 8:12] = 0  # the dropped group
    ref = wrap_signed(w.astype(np.uint64) @ x.astype(np.uint64), 32)
    assert run.out.tolist() == ref.tolist()
    assert run.err.tolist() == [0b010] * 3
    assert not decode_meta(int(meta[1, 2]))[1]


def _os_case(rows, cols, groups, p):
    """W (rows output channels, K = groups*M) dense -> N:M compressed; x (K, cols); extremes included."""
    rng = np.random.default_rng(rows + 7 * cols)
    lo_a, lo_w = -(1 << (p.act_bits - 1)), -(1 << (p.weight_bits - 1))
    k = groups * p.m
    dense = rng.integers(lo_w, -lo_w, size=(rows, k))
    dense[0] = lo_w
    x = rng.integers(lo_a, -lo_a, size=(k, cols))
    x[:, 0] = lo_a
    values, meta = compress_nm(dense, p.n, p.m)
    return values, meta, x


OS_CASES = [
    (4, 4, 5, PEParams()),
    (3, 2, 4, PEParams(pipeline=2, acc_bits=18)),
    (2, 3, 3, PEParams(n=4, m=8, pipeline=3)),
]
OS_IDS = ["4x4", "3x2_p2", "2x3_4of8_p3"]


@pytest.mark.parametrize("rows,cols,groups,p", OS_CASES, ids=OS_IDS)
def test_os_array_gemm_tile(rows, cols, groups, p):
    values, meta, x = _os_case(rows, cols, groups, p)
    run = run_array_os(SparseArray(rows, cols, p, dataflow="os"), values, meta, x)
    assert run.out.tolist() == gemm_nm(values, meta, x, p.n, p.m, p.acc_bits).tolist()
    assert run.cycles == tile_cycles(rows, cols, groups, "os", pipeline=p.pipeline)
    assert run.err == 0


@pytest.mark.parametrize(
    "kwargs",
    [
        dict(rows=0, cols=4),
        dict(rows=4, cols=True),
        dict(rows=2, cols=2, dataflow="rs"),
        dict(rows=2, cols=2, params={"n": 2}),
    ],
)
def test_array_rejects_bad_parameters(kwargs):
    kwargs.setdefault("params", PEParams())
    with pytest.raises(InputError):
        SparseArray(**kwargs)


@pytest.mark.iverilog
@pytest.mark.parametrize(
    "rows,cols,t,p",
    [(4, 4, 6, PEParams(acc_bits=20)), (3, 2, 5, PEParams(pipeline=2))],
    ids=["4x4_2of4", "3x2_p2"],
)
def test_iverilog_ws_array_matches_golden(tmp_path, rows, cols, t, p):
    values, meta, x = _ws_case(rows, cols, t, p, seed=rows * 10 + cols)  # as the Amaranth test
    paths = write_bundle(tmp_path / "rtl", p, rows=rows, cols=cols)
    out, last = run_array_ws_iverilog(paths["sparse_array"], p, rows, cols, values, meta, x, tmp_path)
    assert out.tolist() == gemm_nm(values, meta, x, p.n, p.m, p.acc_bits).tolist()
    assert last + 1 == tile_cycles(rows, cols, t, "ws", pipeline=p.pipeline)


@pytest.mark.iverilog
@pytest.mark.parametrize("rows,cols,groups,p", OS_CASES, ids=OS_IDS)
def test_iverilog_os_array_matches_golden(tmp_path, rows, cols, groups, p):
    values, meta, x = _os_case(rows, cols, groups, p)  # as the Amaranth test
    paths = write_bundle(tmp_path / "rtl", p, rows=rows, cols=cols, dataflow="os")
    out, err, last = run_array_os_iverilog(paths["sparse_array"], p, rows, cols, values, meta, x, tmp_path)
    assert out.tolist() == gemm_nm(values, meta, x, p.n, p.m, p.acc_bits).tolist()
    assert last + 1 == tile_cycles(rows, cols, groups, "os", pipeline=p.pipeline)
    assert err == 0


# ---- arrays of dense and dense-path cells (one SparseArray, kind=...) ---------------------------


def _kind_case(kind, dataflow, rows, cols, t, p, seed, dense=False):
    """(values, meta, x, reference) for one tile of a ``kind`` array. W has ``outc`` output
    channels (C for WS, R for OS) and K = steps x (reduction per PE step); extremes included."""
    rng = np.random.default_rng(seed)
    lo_a, lo_w = -(1 << (p.act_bits - 1)), -(1 << (p.weight_bits - 1))
    g = p.m // p.n
    k_step = p.m * g if kind == "dense_path" and not dense else p.m
    steps = rows if dataflow == "ws" else t
    outc, vecs = (cols, t) if dataflow == "ws" else (rows, cols)
    w = rng.integers(lo_w, -lo_w, size=(outc, steps * k_step))
    w[0] = lo_w
    x = rng.integers(lo_a, -lo_a, size=(steps * k_step, vecs))
    x[:, 0] = lo_a
    if kind == "dense" or dense:
        # the dense-path array in dense mode ignores its codes: give it illegal ones (0000) to prove it
        meta = None if kind == "dense" else np.zeros((outc, steps * g), dtype=np.int64)
        return w, meta, x, gemm_dense(w, x, p.acc_bits)
    values, meta = compress_nm(w, p.n, p.m)
    return values, meta, x, gemm_nm(values, meta, x, p.n, p.m, p.acc_bits)


KIND_CASES = [
    ("dense", False, 4, 4, 6, PEParams(acc_bits=20)),
    ("dense", False, 3, 2, 5, PEParams(pipeline=3, n=2, m=8)),
    ("dense_path", False, 4, 4, 6, PEParams(acc_bits=20)),
    ("dense_path", True, 4, 4, 6, PEParams(acc_bits=20)),
    ("dense_path", False, 3, 2, 4, PEParams(n=2, m=8, pipeline=2)),
    ("dense_path", True, 2, 3, 4, PEParams(n=1, m=4, act_bits=4, weight_bits=4, acc_bits=10, pipeline=3)),
]
KIND_IDS = [
    f"{k}{'_densemode' if d else ''}_{r}x{c}_{p.n}of{p.m}_p{p.pipeline}" for k, d, r, c, _, p in KIND_CASES
]


@pytest.mark.parametrize("kind,dense,rows,cols,t,p", KIND_CASES, ids=KIND_IDS)
@pytest.mark.parametrize("dataflow", ["ws", "os"])
def test_kind_array_gemm_tile(kind, dense, rows, cols, t, p, dataflow):
    values, meta, x, ref = _kind_case(kind, dataflow, rows, cols, t, p, seed=rows * 10 + cols, dense=dense)
    arr = SparseArray(rows, cols, p, dataflow=dataflow, kind=kind)
    assert arr.module_name == {"dense": "dense_array", "dense_path": "sparse_array_dp"}[kind]
    if dataflow == "ws":
        run = run_array_ws(arr, values, meta, x, dense=dense)
    else:
        run = run_array_os(arr, values, meta, x, dense=dense)
    assert run.out.tolist() == ref.tolist()
    assert run.cycles == tile_cycles(rows, cols, t, dataflow, pipeline=p.pipeline)
    assert not np.any(run.err)


def test_dense_path_array_covers_twice_the_reduction():
    """A 2:4 dense-path WS tile covers K = R*2M per pass, the sparse array's K = R*M: same cycles."""
    p = PEParams()
    dp, sp = SparseArray(4, 4, p, kind="dense_path"), SparseArray(4, 4, p)
    assert dp.k_per_step == 2 * sp.k_per_step == 8 and dp.multipliers == 2 * sp.multipliers == 4
    assert dp.tile_cycles(6) == sp.tile_cycles(6)


@pytest.mark.parametrize("dataflow", ["ws", "os"])
def test_dense_path_array_illegal_code_drops_one_group(dataflow):
    p = PEParams()
    values, meta, x, _ = _kind_case("dense_path", dataflow, 3, 2, 3, p, seed=5)
    meta = meta.copy()
    meta[1, 3] = encode_meta((2, 2))  # channel 1, reduction group 3: illegal
    arr = SparseArray(3, 2, p, dataflow=dataflow, kind="dense_path")
    run = (run_array_ws if dataflow == "ws" else run_array_os)(arr, values, meta, x)
    legal = meta.copy()
    legal[1, 3] = encode_meta((0, 1))
    w = decompress_nm(values, legal)
    w[1, 12:16] = 0  # only that group's products are dropped
    assert run.out.tolist() == wrap_signed(w.astype(np.uint64) @ x.astype(np.uint64), 32).tolist()
    err = run.err.tolist()
    assert (err == [0b10] * len(err)) if dataflow == "ws" else err == 0b10


def test_array_rejects_unknown_kind():
    with pytest.raises(InputError):
        SparseArray(2, 2, PEParams(), kind="systolic")


@pytest.mark.iverilog
@pytest.mark.parametrize(
    "kind,dense,rows,cols,t,p", [KIND_CASES[0], KIND_CASES[1], KIND_CASES[2], KIND_CASES[3]], ids=KIND_IDS[:4]
)
def test_iverilog_kind_ws_array_matches_golden(tmp_path, kind, dense, rows, cols, t, p):
    values, meta, x, ref = _kind_case(kind, "ws", rows, cols, t, p, seed=rows * 10 + cols, dense=dense)
    paths = write_bundle(tmp_path / "rtl", p, rows=rows, cols=cols, dense_path=kind == "dense_path")
    from hw.array import array_module_name

    name = array_module_name(kind)
    out, last = run_array_ws_iverilog(
        paths[name], p, rows, cols, values, meta, x, tmp_path, kind=kind, dense=dense
    )
    assert out.tolist() == ref.tolist()
    assert last + 1 == tile_cycles(rows, cols, t, "ws", pipeline=p.pipeline)
