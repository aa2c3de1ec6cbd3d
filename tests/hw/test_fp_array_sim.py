"""Float arrays (WS and OS, sparse / dense / dense-path cells) in Amaranth simulation against
hw.fp_golden.fp_gemm (products added from +0 in increasing reduction order)."""

from __future__ import annotations

import numpy as np
import pytest

from hw.array import SparseArray
from hw.fp_golden import fp_gemm
from hw.golden import compress_nm, decompress_nm
from hw.params import PEParams
from hw.simulate import run_array_os, run_array_ws
from tests.hw.fp_vectors import operands


def _case(p: PEParams, k: int, cols: int, t: int, seed: int, sparse: bool = True):
    rng = np.random.default_rng(seed)
    w = operands(rng, p.precision, (cols, k), mix=(0.3, 0.6, 0.1))
    x = operands(rng, p.precision, (k, t), mix=(0.3, 0.6, 0.1))
    if not sparse:
        return w, None, x, fp_gemm(w, x, p)
    # prune by magnitude of the bit pattern without the sign bit (monotone in |value| for finite encodings)
    mag = w & ((1 << (p.weight_bits - 1)) - 1)
    _, meta = compress_nm(mag, p.n, p.m)
    keep = decompress_nm(np.ones((cols, k * p.n // p.m), dtype=np.int64), meta, p.n, p.m).astype(bool)
    values = w.reshape(cols, -1, p.m)[keep.reshape(cols, -1, p.m)].reshape(cols, -1)
    return values, meta, x, fp_gemm(w, x, p, keep)


@pytest.mark.parametrize("precision,pipeline", [("bf16", 1), ("fp8-e4m3", 2), ("fp8-e5m2", 1)])
def test_ws_sparse_fp_array(precision, pipeline):
    p = PEParams(precision=precision, pipeline=pipeline)
    values, meta, x, want = _case(p, 2 * p.m, 2, 6, seed=pipeline)
    run = run_array_ws(SparseArray(2, 2, p), values, meta, x)
    assert run.out.tolist() == want.tolist()


def test_os_sparse_and_dense_fp_arrays():
    p = PEParams(precision="bf16")
    values, meta, x, want = _case(p, 3 * p.m, 2, 2, seed=4)
    run = run_array_os(SparseArray(2, 2, p, dataflow="os"), values, meta, x)
    assert run.out.reshape(2, 2).tolist() == want.tolist()
    w, _, x, want = _case(p, 2 * p.m, 2, 3, seed=5, sparse=False)
    run = run_array_ws(SparseArray(2, 2, p, kind="dense"), w, None, x)
    assert run.out.tolist() == want.tolist()


@pytest.mark.parametrize("dense", [False, True])
def test_ws_dense_path_fp_array(dense):
    p = PEParams(precision="fp8-e5m2")
    g = p.m // p.n
    k = 2 * (p.m if dense else p.m * g)
    values, meta, x, want = _case(p, k, 2, 3, seed=11 + dense, sparse=not dense)
    if dense:  # dense mode: every weight, codes ignored (any legal code)
        meta = np.full((2, 2 * g), 0b0100)
    run = run_array_ws(SparseArray(2, 2, p, kind="dense_path"), values, meta, x, dense=dense)
    assert run.out.tolist() == want.tolist()
