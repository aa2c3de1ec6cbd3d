"""The double-buffered WS cycle model (sim.perf, ``double_buffer=True``): against the simulated RTL
fold for fold, on a 512x1024x1024 GEMM against the single-buffered count and the compute-only
bound, and against ZigZag 3.x's tpu_like."""

import numpy as np
import pytest

from hw.array import SparseArray, run_cycles
from hw.errors import InputError
from hw.golden import compress_nm, gemm_nm, sum_folds, ws_folds
from hw.params import PEParams
from hw.simulate import run_array_ws_tiles
from sim.perf import ArrayConfig, simulate, simulate_grid
from sim.workloads import Workload, make_layer

#: compute isolated: no DRAM bound (1e6 GB/s) and no SRAM port limit
FREE = dict(dram_gbps=1e6, sram_port_bytes=None)


def _gemm(M, N, K, **kw):
    return Workload("gemm", (make_layer("gemm", "gemm", M, N, K, **kw),))


def _cycles(w, **arch):
    r = simulate(w, ArrayConfig(**FREE, **arch))
    assert r.layers["stall_cycles"][0] == 0
    return int(r.layers["cycles"][0]) + 1, int(r.layers["folds"][0])


@pytest.mark.parametrize(
    "rows,cols,t,n,m,pipeline,rfolds,cfolds",
    [
        (3, 2, 5, 2, 4, 1, 2, 2),  # T > R: the load hides behind the stream
        (3, 2, 2, 2, 4, 2, 2, 1),  # T < R: the stream waits for the next load
        (2, 3, 2, 1, 4, 3, 1, 3),  # T = R, column folds only
    ],
)
def test_model_equals_the_double_buffered_rtl(rows, cols, t, n, m, pipeline, rfolds, cfolds):
    """The model's layer (K = rfolds x R x M, N = cfolds x C, M = t vectors) against the RTL running
    the same GEMM fold after fold: same edges from the first load to the last output."""
    p = PEParams(n=n, m=m, pipeline=pipeline)
    rng = np.random.default_rng(rows + 10 * t)
    w = rng.integers(-128, 128, size=(cfolds * cols, rfolds * rows * m))
    x = rng.integers(-128, 128, size=(rfolds * rows * m, t))
    values, meta = compress_nm(w, n, m)
    folds = ws_folds(values, meta, x, rows, cols, rfolds * rows)
    run = run_array_ws_tiles(SparseArray(rows, cols, p, double_buffer=True), [f[:3] for f in folds])
    assert (
        sum_folds(run.outs, folds, p.acc_bits).tolist() == gemm_nm(values, meta, x, n, m, p.acc_bits).tolist()
    )
    layer = _gemm(t, cfolds * cols, rfolds * rows * m, sparsifiable=True, n=n, m=m)
    for db in (False, True):
        model, f = _cycles(layer, rows=rows, cols=cols, n=n, m=m, pe_k=n, pipeline=pipeline, double_buffer=db)
        assert f == len(folds)
        assert model == run_cycles(rows, cols, t, len(folds), pipeline=pipeline, double_buffer=db)
    assert model == run.cycles


# ---- a WS 512x1024x1024 GEMM on a 128 x 128 array -----------------------------------------------


def _derived(R, C, T, F, p=1):
    """The derivation in sim.perf's docstring, written out again: (single, double, compute-only)."""
    single = F * (2 * R + C + T - 2 + p - 1)
    double = (R + 1) + (F - 1) * max(T, R) + T + (R + C - 2) + (p - 1)
    return single, double, F * T


@pytest.mark.parametrize("design", ["sparse_2of4", "dense", "scalar_pe"])
def test_512x1024x1024_on_128x128_gets_shorter_and_respects_the_bound(design):
    arch = {"sparse_2of4": dict(), "dense": dict(sparse=False), "scalar_pe": dict(sparse=False, pe_k=1)}[
        design
    ]
    w = _gemm(512, 1024, 1024)
    single, folds = _cycles(w, rows=128, cols=128, **arch)
    double, folds_db = _cycles(w, rows=128, cols=128, double_buffer=True, **arch)
    assert folds == folds_db
    want_single, want_double, bound = _derived(128, 128, 512, folds)
    assert (single, double) == (want_single, want_double)
    # the compute-only bound: every PE busy every cycle on the weights it stores
    r = simulate(w, ArrayConfig(rows=128, cols=128, double_buffer=True, **FREE, **arch))
    mac_bound = r.layers["performed_mults"][0] / (128 * 128 * ArrayConfig(**arch).effective_pe_k)
    assert mac_bound == bound
    assert bound < double < single
    # measured: 2:4 sparse 16 folds, 14,304 -> 8,575 (bound 8,192); dense (pe_k = M) 16 folds, the same;
    # scalar PE 64 folds, 57,216 -> 33,151 (bound 32,768)
    assert (folds, single, double) == {
        "sparse_2of4": (16, 14304, 8575),
        "dense": (16, 14304, 8575),
        "scalar_pe": (64, 57216, 33151),
    }[design]


def test_decode_shapes_gain_most():
    """One vector a fold (decode): a fold costs its R-edge load instead of 2R + C + T - 2."""
    w = _gemm(1, 4096, 4096)
    single, folds = _cycles(w, rows=128, cols=128)
    double, _ = _cycles(w, rows=128, cols=128, double_buffer=True)
    assert (single, double) == _derived(128, 128, 1, folds)[:2]
    assert single / double == pytest.approx((2 * 128 + 128 - 1) / 128, rel=0.02)


# ZigZag 3.9.1 (pip zigzag-dse 3.9.1), inputs/hardware/tpu_like.yaml (32 x 32 MACs, a 128 B weight
# register file per PE) with the tpu_like spatial mapping (D1: K 32, D2: C 32), a Gemm layer
# O[b][k] += I[b][c] * W[c][k] with B 512, C 1024, K 1024, 8-bit operands, opt=latency: its
# "computation" latency 524,288 (its ideal, no stall: the weight loads are hidden), plus data
# onloading 65,536 (the 512 KiB input over the 8 B/cycle DRAM port before computing) and offloading
# 64: 589,888 in all. SCALE-Sim's WS formula: 1024 folds x (2R + C + T - 2) = 620,544.
ZIGZAG_TPU_LIKE_COMPUTATION = 524_288
ZIGZAG_TPU_LIKE_TOTAL = 589_888


def test_against_zigzag_tpu_like():
    w = _gemm(512, 1024, 1024)
    arch = dict(rows=32, cols=32, sparse=False, pe_k=1)  # tpu_like: scalar MACs, dense
    single, folds = _cycles(w, **arch)
    double, _ = _cycles(w, double_buffer=True, **arch)
    assert folds == 1024 and single == 620_544  # SCALE-Sim's count
    # double-buffered: ZigZag's computation plus what the RTL cannot hide (first load and swap, the
    # last fold's fill and drain): 33 + 62 = 95 edges, 0.02 %
    assert double - ZIGZAG_TPU_LIKE_COMPUTATION == (32 + 1) + (32 + 32 - 2)
    assert double == pytest.approx(ZIGZAG_TPU_LIKE_COMPUTATION, rel=2e-4)
    assert single / ZIGZAG_TPU_LIKE_COMPUTATION == pytest.approx(1.1836, abs=1e-4)


def test_scalesim_mode_unchanged_and_bad_combinations_rejected():
    w = _gemm(64, 64, 64)
    a = simulate(w, ArrayConfig(mode="scalesim", sparse=False, **FREE)).layers["cycles"][0]
    b = simulate(w, ArrayConfig(mode="scalesim", sparse=False, double_buffer=False, **FREE)).layers["cycles"][
        0
    ]
    assert a == b == 4 * (2 * 32 + 32 + 64 - 2) - 1  # SCALE-Sim's folds, the last line's index
    for kw in (dict(mode="scalesim"), dict(dataflow="os"), dict(double_buffer=1)):
        with pytest.raises(InputError):
            ArrayConfig(**{"double_buffer": True, **kw})
    with pytest.raises(InputError):
        simulate_grid(w, {"dataflow": np.array(["ws", "os"]), "double_buffer": np.array([True, True])})


def test_grid_matches_single_points_and_is_charged_as_ws():
    w = _gemm(100, 300, 500)
    grid = simulate_grid(
        w,
        {
            "double_buffer": np.array([False, True, True]),
            "dataflow": np.array(["ws", "ws", "is"]),
            "rows": np.array([16, 16, 16]),
            "cols": np.array([16, 16, 16]),
        },
        base=ArrayConfig(**FREE),
    )
    for i, (db, df) in enumerate([(False, "ws"), (True, "ws"), (True, "is")]):
        one = simulate(w, ArrayConfig(rows=16, cols=16, dataflow=df, double_buffer=db, **FREE))
        assert grid["cycles"][i, 0] == one.layers["cycles"][0]
    # IS streams N = 300 vectors a fold over ceil(steps / R) x ceil(M / C) folds
    is_single = simulate(w, ArrayConfig(rows=16, cols=16, dataflow="is", **FREE)).layers
    folds = int(is_single["folds"][0])
    assert grid["cycles"][2, 0] + 1 == _derived(16, 16, 300, folds)[1]
