"""The cycle model against the Amaranth SparseArray simulation (hw.array), tile by tile.

The model's ``cycles`` follow SCALE-Sim's convention (index of the last demand line), so the
tile's length in cycles is ``cycles + 1``; the RTL counts edges from the first weight load (WS) or
first group (OS) through the edge registering the last output (hw.array docstring). With
``pipeline`` p the PEs register their products p-1 more times: the model charges p-1 per fold."""

import numpy as np
import pytest

from hw.array import SparseArray, tile_cycles
from hw.golden import compress_nm, gemm_nm
from hw.params import PEParams
from hw.simulate import run_array_os, run_array_ws
from sim.perf import ArrayConfig, simulate
from sim.workloads import Workload, make_layer


def _model_tile(rows, cols, t, n, m, dataflow, pipeline=1):
    # one fold: K = rows * M (WS: one group of M per PE row), N = cols channels, M = t vectors;
    # OS: t groups of M along K, rows x cols outputs. Sparse PE: pe_k = N kept weights per cycle.
    if dataflow == "ws":
        layer = make_layer("tile", "gemm", t, cols, rows * m, sparsifiable=True, n=n, m=m)
    else:
        layer = make_layer("tile", "gemm", rows, cols, t * m, sparsifiable=True, n=n, m=m)
    arch = ArrayConfig(
        rows=rows,
        cols=cols,
        n=n,
        m=m,
        pe_k=n,
        dataflow=dataflow,
        dram_gbps=1e6,
        pipeline=pipeline,
        sram_port_bytes=None,
    )
    r = simulate(Workload("tile", (layer,)), arch)
    assert r.layers["stall_cycles"][0] == 0 and bool(r.layers["sparse"][0])
    return int(r.layers["cycles"][0]) + 1


@pytest.mark.parametrize(
    "rows,cols,t,n,m,pipeline",
    [
        (3, 2, 4, 2, 4, 1),
        (2, 3, 5, 1, 4, 1),
        (2, 2, 3, 2, 8, 1),
        (3, 2, 4, 2, 4, 2),
        (2, 3, 5, 1, 4, 3),
        (2, 2, 3, 2, 8, 3),
    ],
)
def test_ws_tile_cycles_equal_rtl(rows, cols, t, n, m, pipeline):
    p = PEParams(n=n, m=m, pipeline=pipeline)
    rng = np.random.default_rng(rows * 7 + cols)
    dense = rng.integers(-128, 128, size=(cols, rows * m))
    x = rng.integers(-128, 128, size=(rows * m, t))
    values, meta = compress_nm(dense, n, m)
    run = run_array_ws(SparseArray(rows, cols, p), values, meta, x)
    assert run.out.tolist() == gemm_nm(values, meta, x, n, m, p.acc_bits).tolist()
    assert (
        _model_tile(rows, cols, t, n, m, "ws", pipeline)
        == run.cycles
        == tile_cycles(rows, cols, t, "ws", pipeline=pipeline)
    )


@pytest.mark.parametrize(
    "rows,cols,groups,pipeline", [(2, 3, 4, 1), (3, 2, 2, 1), (2, 3, 4, 2), (3, 2, 2, 3)]
)
def test_os_tile_cycles_equal_rtl(rows, cols, groups, pipeline):
    p = PEParams(pipeline=pipeline)
    rng = np.random.default_rng(rows + 5 * cols)
    dense = rng.integers(-128, 128, size=(rows, groups * p.m))
    x = rng.integers(-128, 128, size=(groups * p.m, cols))
    values, meta = compress_nm(dense, p.n, p.m)
    run = run_array_os(SparseArray(rows, cols, p, dataflow="os"), values, meta, x)
    assert run.out.tolist() == gemm_nm(values, meta, x, p.n, p.m, p.acc_bits).tolist()
    assert (
        _model_tile(rows, cols, groups, p.n, p.m, "os", pipeline)
        == run.cycles
        == tile_cycles(rows, cols, groups, "os", pipeline=pipeline)
    )
