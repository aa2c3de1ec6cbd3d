"""The dense-path array's rate, from its RTL facts, in the cycle model's vocabulary.

hw.array.SparseArray(kind="dense_path") covers k_per_step = M*M/N reduction elements per row and
step in N:M mode and M in dense mode, with the same tile cycle count as the sparse array. In
sim.perf's terms that is ``pe_k = M`` stored weights (or dense elements) per PE-cycle in both
modes: ArrayConfig(pe_k=M) reproduces it fold for fold. (ArrayConfig(dense_path=True) with the
default pe_k = N models a different PE: dense at M per cycle but N:M at one group per cycle.)
"""

import math

import pytest

from hw.array import SparseArray
from hw.params import PEParams
from sim.perf import ArrayConfig, simulate
from sim.workloads import Workload, make_layer


@pytest.mark.parametrize("R,C", [(32, 32), (16, 8)])
def test_sim_pe_k_equal_m_is_the_dense_path_array(R, C):
    p = PEParams()
    rows_t, n_out, k = 256, 256, 1024  # T vectors streamed per fold, output channels, reduction
    w = Workload(
        "w", (make_layer("s", "gemm", rows_t, n_out, k), make_layer("d", "act_gemm", rows_t, n_out, k))
    )
    sim = simulate(w, ArrayConfig(rows=R, cols=C, dram_gbps=1e6, pe_k=p.m))
    assert sim.layers["sparse"].tolist() == [True, False]
    arr = SparseArray(R, C, p, kind="dense_path")
    arr._MustUse__silence = True
    for layer, k_step in ((0, arr.k_per_step), (1, p.m)):  # N:M mode, dense mode
        folds = math.ceil(k / (R * k_step)) * math.ceil(n_out / C)
        assert sim.layers["cycles"][layer] + 1 == folds * arr.tile_cycles(rows_t)
    # N:M at twice the dense rate on the same array
    assert sim.layers["cycles"][1] + 1 == pytest.approx(2 * (sim.layers["cycles"][0] + 1), rel=0.05)
