"""Cycle model: SCALE-Sim parity (frozen measured results), physics of stalls, sparse speedup."""

import dataclasses

import numpy as np
import pytest

from hw.errors import InputError
from sim.perf import ArrayConfig, simulate, simulate_grid
from sim.workloads import ConvGeometry, Workload, conv_layer, get_workload, make_layer

# SCALE-Sim 3.0.0 (PyPI scalesim==3.0.0, numpy 2.3.5), InterfaceBandwidth CALC, 64 KB SRAMs,
# layout-test.csv, read from COMPUTE_REPORT.csv column "Total Cycles". Measured here with
# bench/bench_sim_scalesim.py; the 32x32 rows are from /work/shared/reference/tooling-facts.md.
# (kind, shape, rows, cols, dataflow, sparse 2:4 (SparsitySupport+OptimizedMapping, BlockSize 4)) -> cycles
SCALESIM_FROZEN = [
    ("gemm", (256, 256, 256), 32, 32, "ws", False, 22399),
    ("gemm", (256, 256, 256), 32, 32, "ws", True, 11199),
    ("gemm", (256, 256, 256), 8, 32, "ws", False, 77311),
    ("gemm", (100, 37, 70), 8, 32, "ws", False, 2627),
    ("gemm", (128, 64, 128), 8, 32, "ws", False, 5567),
    ("gemm", (196, 1176, 64), 8, 32, "ws", False, 71631),
    ("gemm", (256, 128, 256), 8, 32, "os", False, 37631),
    ("gemm", (196, 1176, 64), 8, 32, "os", False, 94349),
    ("gemm", (128, 64, 128), 8, 32, "is", False, 7039),
    ("gemm", (196, 1176, 64), 8, 32, "is", False, 68431),
    # conv: (H, W, R, S, C, F, stride); SCALE-Sim's ceil output dims
    ("conv", (5, 5, 3, 3, 2, 6, 1), 8, 32, "ws", False, 164),
    ("conv", (28, 28, 3, 3, 128, 2, 1), 8, 32, "ws", False, 103967),
    ("conv", (56, 56, 1, 1, 256, 8, 2), 8, 32, "ws", False, 28383),
    ("conv", (56, 56, 1, 1, 256, 8, 2), 8, 32, "os", False, 31163),
    ("conv", (7, 7, 1, 1, 512, 32, 1), 8, 32, "os", False, 3849),
    ("conv", (28, 28, 3, 3, 128, 2, 1), 8, 32, "is", False, 152063),
    ("conv", (56, 56, 3, 3, 1, 1, 2), 8, 32, "is", False, 2349),
    # WS with 2:4 (SparsitySupport true, OptimizedMapping true, BlockSize 4), 8x32
    ("gemm", (128, 64, 128), 8, 32, "ws", True, 2783),
    ("gemm", (196, 1176, 64), 8, 32, "ws", True, 35815),
    ("conv", (5, 5, 3, 3, 2, 6, 1), 8, 32, "ws", True, 109),
    ("conv", (28, 28, 3, 3, 128, 2, 1), 8, 32, "ws", True, 51983),
    ("conv", (56, 56, 3, 3, 1, 1, 2), 8, 32, "ws", True, 829),
]


def _one(kind, shape, sparse):
    if kind == "gemm":
        M, N, K = shape
        return make_layer("l", "gemm", M, N, K, sparsifiable=sparse)
    return conv_layer("l", ConvGeometry(*shape), sparsifiable=sparse)


@pytest.mark.parametrize("kind,shape,rows,cols,df,sparse,ref", SCALESIM_FROZEN)
def test_scalesim_frozen_parity(kind, shape, rows, cols, df, sparse, ref):
    arch = ArrayConfig(rows=rows, cols=cols, dataflow=df, mode="scalesim", sparse=sparse, n=2, m=4)
    res = simulate(Workload("t", (_one(kind, shape, sparse),)), arch)
    assert int(res.layers["cycles"][0]) == ref
    assert int(res.layers["stall_cycles"][0]) == 0  # CALC mode: no stalls
    # the SRAM port limit is on by default (2 banks x 64 B) but SCALE-Sim has none: parity stays exact
    assert arch.sram_port_bytes == 64.0 and int(res.layers["sram_stall_cycles"][0]) == 0


def test_clock_raises_stalls_and_throughput_saturates():
    # the array alone (the vector unit's operators dropped; tests/sim/test_vector.py covers them)
    w = dataclasses.replace(get_workload("bert-base", seq=128), vector_ops=())
    clocks = [100, 200, 400, 800, 1600, 3200, 6400]
    res = [simulate(w, ArrayConfig(clock_mhz=f, dram_gbps=64.0)) for f in clocks]
    stall = [r.stall_fraction for r in res]
    thr = [1.0 / r.latency_s() for r in res]  # inferences per second
    assert all(b >= a for a, b in zip(stall, stall[1:], strict=False)) and stall[-1] > stall[0] + 0.3
    assert all(b >= a * 0.999 for a, b in zip(thr, thr[1:], strict=False))
    assert thr[1] / thr[0] > 1.5  # compute-bound: doubling the clock helps
    assert thr[-1] / thr[-2] < 1.1  # memory-bound: it no longer does
    # at the memory-bound end the time is the DRAM bytes over the bandwidth
    assert res[-1].latency_s() == pytest.approx(res[-1].totals["dram_bytes"] / 64e9, rel=0.05)


def test_speedup_bounded_and_falls_with_fallback_and_stalls():
    w = get_workload("bert-base", seq=128)
    fast = simulate(w, ArrayConfig(dram_gbps=10_000.0))
    assert (
        1.0 < fast.effective_speedup <= 2.0 and fast.effective_speedup <= fast.totals["ideal_speedup"] + 1e-9
    )
    # more fallback: leave the FFN dense
    fb = simulate(w.with_overrides({"ffn1": False, "ffn2": False}), ArrayConfig(dram_gbps=10_000.0))
    assert (
        fb.effective_speedup < fast.effective_speedup
        and fb.totals["fallback_fraction"] > fast.totals["fallback_fraction"]
    )
    slow = simulate(w, ArrayConfig(dram_gbps=8.0))
    assert slow.stall_fraction > fast.stall_fraction and slow.effective_speedup < fast.effective_speedup
    # which layers fall back and why
    reasons = dict(zip(fast.names, fast.fallback_reasons, strict=True))
    assert (
        "activation x activation" in reasons["attn_scores"]
        and "activation x activation" in reasons["attn_context"]
    )
    assert reasons["ffn1"] is None and fast.layers["sparse"].tolist() == [
        True,
        False,
        False,
        True,
        True,
        True,
        False,
    ]
    # sparse-only PE: a dense layer costs M/N passes; a dense path restores full rate
    att = Workload("a", (make_layer("s", "act_gemm", 256, 256, 256),))
    so = simulate(att, ArrayConfig(dram_gbps=1e4)).layers["cycles"][0]
    dp = simulate(att, ArrayConfig(dram_gbps=1e4, dense_path=True)).layers["cycles"][0]
    assert so > 1.8 * dp
    # the dense-path PE has M multipliers: a sparsifiable layer runs M/N groups a cycle, 2x the
    # sparse-only PE (hw.pe.SparsePE(dense_path=True); tests/hw/test_dense_path_rate.py pins the RTL)
    lin = Workload("l", (make_layer("f", "gemm", 256, 256, 1024),))
    s_only = simulate(lin, ArrayConfig(dram_gbps=1e4)).layers["cycles"][0]
    s_dp = simulate(lin, ArrayConfig(dram_gbps=1e4, dense_path=True)).layers["cycles"][0]
    s_dense = simulate(lin, ArrayConfig(dram_gbps=1e4, sparse=False)).layers["cycles"][0]
    assert s_dp < 0.6 * s_only and s_dp < 0.6 * s_dense
    assert (
        s_dp == simulate(lin, ArrayConfig(dram_gbps=1e4, pe_k=4)).layers["cycles"][0]
    )  # the RTL's rate, pe_k = M


def test_grid_speedup_bounded():
    w = get_workload("resnet50")
    rng = np.random.default_rng(1)
    P = 300
    g = simulate_grid(
        w,
        {
            "rows": rng.choice([4, 8, 16, 32, 64], P),
            "cols": rng.choice([4, 8, 16, 32, 64], P),
            "clock_mhz": rng.uniform(200, 3000, P),
            "dram_gbps": rng.uniform(4, 400, P),
            "sram_kb": rng.choice([24, 96, 384, 1536], P),
            "dataflow": rng.choice(["ws", "os", "is"], P),
        },
    )
    assert g["cycles"].shape == (P, len(w.layers))
    assert np.all(g["effective_speedup"] >= 0.99)
    assert np.all(g["effective_speedup"] <= g["ideal_speedup"] * (1 + 1e-12))
    # above M/N only through partial sums (the sparse run needs half the K folds, partial sums move at
    # 32 bits): never on OS, where the reduction completes inside the PEs
    g_os = simulate_grid(
        w,
        {
            "rows": rng.choice([4, 8, 16, 32, 64], P),
            "cols": rng.choice([4, 8, 16, 32, 64], P),
            "dram_gbps": rng.uniform(4, 400, P),
            "sram_kb": rng.choice([24, 96, 384, 1536], P),
            "dataflow": np.full(P, "os"),
        },
    )
    assert np.all(g_os["effective_speedup"] <= 2.0 + 1e-9) and np.all(g_os["ideal_speedup"] <= 2.0 + 1e-9)


def test_grid_matches_single_points():
    w = get_workload("bert-base", seq=64)
    rows, cols, df = np.array([8, 16, 32]), np.array([32, 16, 8]), np.array(["ws", "os", "is"])
    g = simulate_grid(
        w, {"rows": rows, "cols": cols, "dataflow": df, "dram_gbps": np.array([8.0, 16.0, 1e4])}
    )
    for i in range(3):
        r = simulate(
            w,
            ArrayConfig(
                rows=int(rows[i]), cols=int(cols[i]), dataflow=str(df[i]), dram_gbps=[8.0, 16.0, 1e4][i]
            ),
        )
        assert g["cycles"][i].tolist() == r.layers["cycles"].tolist()
        assert g["total_cycles"][i] == r.total_cycles
        assert g["effective_speedup"][i] == pytest.approx(r.effective_speedup)


def test_traffic_and_metadata():
    w = Workload("g", (make_layer("g", "gemm", 64, 256, 512),))
    sp = simulate(w, ArrayConfig(dram_gbps=1e4))
    de = simulate(w, ArrayConfig(dram_gbps=1e4, sparse=False))
    assert sp.totals["dram_weight_bytes"] == 256 * 512 / 2  # INT8 values, half kept
    assert sp.totals["metadata_bytes"] == 256 * 256 * 2 / 8  # 2 bits per kept weight
    assert de.totals["metadata_bytes"] == 0 and de.totals["dram_weight_bytes"] == 256 * 512
    assert sp.totals["metadata_overhead"] == pytest.approx(0.25)  # Mishra 2021: 25 % for 8-bit values
    assert sp.totals["dense_macs"] == 64 * 256 * 512 and sp.totals["performed_mults"] == 64 * 256 * 256
    assert 0 < sp.layers["utilization"][0] <= 1


def test_json_shape():
    d = simulate(get_workload("bert-base"), ArrayConfig()).to_dict()
    for key in (
        "layers",
        "total_cycles",
        "effective_speedup",
        "stall_fraction",
        "sram_stall_cycles",
        "dram_stall_cycles",
        "sram_stall_fraction",
        "sram_split_kb",
        "sram_bytes_per_cycle_per_buffer",
    ):
        assert key in d
    assert d["sram_split_kb"] == {"ifmap_kb": 64.0, "filter_kb": 64.0, "ofmap_kb": 64.0}
    assert d["sram_bytes_per_cycle_per_buffer"] == 128.0  # 2 banks x 64 B
    assert d["stall_cycles"] == d["sram_stall_cycles"] + d["dram_stall_cycles"]
    for key in (
        "name",
        "cycles",
        "stall_cycles",
        "dram_stall_cycles",
        "sram_stall_cycles",
        "utilization",
        "sparse",
        "fallback_reason",
        "dram_bytes",
        "metadata_bytes",
        "sram_ifmap_port_bytes",
        "sram_filter_port_bytes",
        "sram_ofmap_port_bytes",
    ):
        assert key in d["layers"][0]
    for lay in d["layers"]:
        assert lay["stall_cycles"] == lay["sram_stall_cycles"] + lay["dram_stall_cycles"]


@pytest.mark.parametrize(
    "kw,where",
    [
        ({"dataflow": "rs"}, "dataflow"),
        ({"n": 3, "m": 4}, "n:m"),
        ({"rows": 0}, "rows"),
        ({"dram_gbps": -1.0}, "dram_gbps"),
        ({"acc_bits": 8}, "acc_bits"),
        ({"acc_bits": 65}, "acc_bits"),
        ({"pipeline": 0}, "pipeline"),
        ({"pipeline": 9}, "pipeline"),
        ({"sram_banks": 0}, "sram_banks"),
        ({"sram_port_bytes": -1.0}, "sram_port_bytes"),
        ({"sram_kb": 96, "ifmap_kb": 100}, "sram_kb"),
        ({"sram_kb": 96, "ifmap_kb": 30, "filter_kb": 30, "ofmap_kb": 30}, "sram_kb"),
    ],
)
def test_bad_parameters(kw, where):
    with pytest.raises(InputError, match=where):
        ArrayConfig(**kw)


# SCALE-Sim 3.0.0, InterfaceBandwidth USER (Bandwidth = IfmapSRAMBankBandwidth = FilterSRAMBankBandwidth =
# bw words/cycle), Ifmap/Filter/OfmapSramSzkB = kb, layout-test.csv, dense; COMPUTE_REPORT.csv "Total Cycles"
# (stalls included), measured here with the USER cases of bench/bench_sim_scalesim.py.
# (rows, cols, dataflow, kb, bw) -> Total Cycles for the GEMMs (M, N, K) in SCALESIM_USER_GEMMS
SCALESIM_USER_GEMMS = ((128, 64, 128), (100, 37, 70), (64, 256, 64))
SCALESIM_USER_FROZEN = {
    (16, 16, "ws", 1, 2): (78139, 24335, 358792),
    (16, 16, "ws", 4, 4): (131337, 10599, 34986),
    (8, 32, "ws", 2, 8): (18410, 4709, 39902),
    (16, 16, "os", 1, 2): (122257, 27869, 448099),
    (16, 16, "os", 4, 4): (131337, 10575, 205437),
    (8, 32, "os", 2, 8): (33015, 5611, 131683),
    (16, 16, "is", 1, 2): (358792, 87100, 49447),
    (16, 16, "is", 4, 4): (65673, 15264, 66127),
    (8, 32, "is", 2, 8): (39902, 10169, 17775),
}


def _user_errors():
    w = Workload("u", tuple(make_layer(f"g{i}", "gemm", *s) for i, s in enumerate(SCALESIM_USER_GEMMS)))
    errs, stalls = [], []
    for (rows, cols, df, kb, bw), refs in SCALESIM_USER_FROZEN.items():
        arch = ArrayConfig(
            rows=rows,
            cols=cols,
            dataflow=df,
            mode="scalesim",
            sparse=False,
            ifmap_kb=kb,
            filter_kb=kb,
            ofmap_kb=kb,
            port_words=(bw, bw, bw),
        )
        r = simulate(w, arch)
        tot = r.layers["cycles"] + r.layers["stall_cycles"]
        errs += [abs(t - ref) / ref for t, ref in zip(tot.tolist(), refs, strict=True)]
        stalls += r.layers["stall_cycles"].tolist()
    return np.array(errs), np.array(stalls)


def test_scalesim_user_bandwidth_stalls():
    errs, stalls = _user_errors()
    assert np.all(stalls > 0)  # every frozen case is DRAM-bound in SCALE-Sim
    # exact window tracking (sim.scalesim_mode.slides_one) + port timing. Measured on these 27: median 1.1 %,
    # 24 of 27 within 10 %, worst 21 % (OS 8x32 100x37x70, 8x32 WS cases bound by the ofmap drain).
    assert np.median(errs) <= 0.02
    assert np.mean(errs <= 0.10) >= 0.85
    assert np.max(errs) <= 0.25


# SCALE-Sim 3.0.0's own count of read_buffer.new_prefetch() calls (ifmap, filter), read by
# instrumenting a USER-bandwidth run (bench/bench_sim_scalesim.py configs).
# (dataflow, rows, cols, sram KiB, kind, shape) -> (ifmap, filter) slides;
# conv shape (H, W, R, S, C, F, stride) -> GEMM M x N x K with SCALE-Sim's output dims.
SCALESIM_SLIDES = [
    ("ws", 16, 16, 1, "gemm", (128, 64, 128), (285, 300)),
    ("ws", 16, 16, 1, "gemm", (64, 256, 64), (198, 1394)),
    ("ws", 16, 16, 4, "gemm", (100, 37, 70), (20, 1)),
    ("ws", 8, 32, 2, "gemm", (64, 256, 64), (127, 302)),
    ("ws", 16, 16, 1, "conv", (7, 7, 1, 1, 512, 32, 1), (2717, 1394)),
    ("ws", 16, 16, 1, "conv", (14, 14, 3, 3, 16, 24, 1), (441, 93)),
    ("os", 16, 16, 1, "gemm", (128, 64, 128), (285, 475)),
    ("os", 16, 16, 4, "gemm", (64, 256, 64), (63, 399)),
    ("os", 8, 32, 2, "gemm", (100, 37, 70), (34, 32)),
    ("os", 16, 16, 1, "conv", (14, 14, 3, 3, 16, 24, 1), (441, 120)),
    ("is", 16, 16, 1, "gemm", (128, 64, 128), (1394, 253)),
    ("is", 16, 16, 4, "gemm", (100, 37, 70), (20, 29)),
    ("is", 8, 32, 2, "gemm", (64, 256, 64), (15, 47)),
    ("is", 16, 16, 1, "conv", (7, 7, 1, 1, 512, 32, 1), (4076, 285)),
    ("is", 16, 16, 1, "conv", (14, 14, 3, 3, 16, 24, 1), (5858, 254)),
]


@pytest.mark.parametrize("df,rows,cols,kb,kind,shape,ref", SCALESIM_SLIDES)
def test_scalesim_window_slides_match_instrumented_scalesim(df, rows, cols, kb, kind, shape, ref):
    from sim.scalesim_mode import slides_one

    layer = _one(kind, shape, False)
    got = slides_one(
        ("ws", "os", "is").index(df), layer.M, layer.N, layer.K, rows, cols, kb * 1024, kb * 1024
    )
    assert got == ref


def test_scalesim_window_runs_match_cell_walk():
    # the per-fold run endpoints (closed form) against walking every demanded cell of SCALE-Sim's layouts
    from sim.scalesim_mode import slides_cells, slides_one, window_params

    rng = np.random.default_rng(7)
    for _ in range(60):
        M, N, K = (int(x) for x in rng.integers(1, 70, 3))
        R, C = (int(x) for x in rng.choice([2, 4, 8, 16], 2))
        words, df = int(rng.choice([128, 256, 512, 1024])), int(rng.integers(0, 3))
        ref = []
        for op, E in ((0, M * K), (1, K * N)):
            eps, S, A, P = window_params(E, words)
            ref.append(slides_cells(df, op, M, N, K, R, C, eps, S, A, P) if P > 0 else 0)
        assert list(slides_one(df, M, N, K, R, C, words, words)) == ref, (df, M, N, K, R, C, words)


def test_scalesim_user_mode_stall_free_when_operands_fit():
    w = Workload("u", (make_layer("g", "gemm", 100, 37, 70),))
    big = ArrayConfig(
        rows=16,
        cols=16,
        dataflow="ws",
        mode="scalesim",
        sparse=False,
        ifmap_kb=64,
        filter_kb=64,
        ofmap_kb=64,
        port_words=(2, 2, 2),
    )
    r = simulate(w, big)
    assert int(r.layers["stall_cycles"][0]) == 0 and int(r.layers["cycles"][0]) == 2189


def test_effective_speedup_never_exceeds_the_ideal_bound_even_when_memory_bound():
    # Llama decode is memory bound: the dense baseline stalls on weight traffic, so the ideal
    # (Amdahl) bound must be taken over the dense run's time with its stalls, or a sparse design
    # that halves weight traffic would appear to beat it.
    from sim.perf import ArrayConfig, simulate
    from sim.workloads import get_workload

    wl = get_workload("llama2-7b-decode", seq=512, batch=8)
    for gbps in (25.0, 100.0, 400.0, 3200.0):
        r = simulate(wl, ArrayConfig(rows=64, cols=128, sram_kb=512, clock_mhz=1700, dram_gbps=gbps))
        t = r.totals
        assert t["effective_speedup"] <= t["ideal_speedup"] * (1 + 1e-12) <= 2.0 * (1 + 1e-12), (gbps, t)
    assert t["effective_speedup"] > 1.0


# ------------------------------------------------------------------------------------------------
# SRAM ports, partial-sum width, pipeline, SRAM split (issue 11 section 5)
# ------------------------------------------------------------------------------------------------


def test_sram_port_bound_layer_takes_bytes_over_port_bandwidth():
    # 16x16 WS 2:4 (pe_k 2): K = 64 -> 32 kept weights per column -> 16 steps = one row fold; N = 16 = one
    # column fold. Compute: 2R + C + M - 2 = 32 + 16 + 1022 = 1070 cycles. The ifmap (1024 x 64 INT8 =
    # 65536 B) does not fit the active half of its 64 KiB buffer, so it is streamed: the array reads it
    # once and DRAM fills it once, 2 x 65536 = 131072 B through one bank's 64 B/cycle port = 2048 cycles.
    w = Workload("s", (make_layer("x", "gemm", 1024, 16, 64),))
    arch = ArrayConfig(rows=16, cols=16, dram_gbps=1e6, sram_banks=1)
    r = simulate(w, arch)
    assert int(r.layers["cycles"][0]) + 1 == 1070
    assert r.layers["sram_ifmap_port_bytes"][0] == 2 * 1024 * 64
    assert r.total_cycles == 131072 // 64 == 2048
    assert int(r.layers["sram_stall_cycles"][0]) == 2048 - 1070 and int(r.layers["dram_stall_cycles"][0]) == 0
    assert r.totals["stall_fraction"] == pytest.approx((2048 - 1070) / 2048)
    # two banks (the default): 128 B/cycle -> 1024 cycles of port time, under the compute time: no stall
    r2 = simulate(w, ArrayConfig(rows=16, cols=16, dram_gbps=1e6))
    assert r2.total_cycles == 1070 and int(r2.layers["sram_stall_cycles"][0]) == 0
    # a 48 B port: 131072 / 48 = 2730.67 -> 2731 cycles; no limit: compute-bound
    assert (
        simulate(
            w, ArrayConfig(rows=16, cols=16, dram_gbps=1e6, sram_banks=1, sram_port_bytes=48)
        ).total_cycles
        == 2731
    )
    assert (
        simulate(w, ArrayConfig(rows=16, cols=16, dram_gbps=1e6, sram_port_bytes=None)).total_cycles == 1070
    )


def test_partial_sums_move_at_accumulator_width():
    # 8x8 WS 2:4: one row fold covers R * M = 32 reduction elements; K = 96 -> 48 kept -> 24 steps -> 3 row
    # folds. Each of the M x N = 10 x 8 outputs leaves the array 3 times: twice as a 32-bit partial sum
    # (read back by the next fold), once as the final INT8 output.
    w = Workload("p", (make_layer("x", "gemm", 10, 8, 96),))
    r = simulate(w, ArrayConfig(rows=8, cols=8, dram_gbps=1e6, sram_port_bytes=None))
    assert r.layers["sram_ofmap_write_bytes"][0] == 80 * 1 + 2 * 80 * 4 == 720
    assert r.layers["sram_ofmap_read_bytes"][0] == 2 * 80 * 4 == 640
    assert (
        r.layers["dram_ofmap_bytes"][0] == 80
    )  # the partial-sum tile (10 x 8 x 4 B) fits: only outputs go out
    r16 = simulate(w, ArrayConfig(rows=8, cols=8, dram_gbps=1e6, sram_port_bytes=None, acc_bits=16))
    assert (
        r16.layers["sram_ofmap_write_bytes"][0] == 80 + 2 * 80 * 2
        and r16.layers["sram_ofmap_read_bytes"][0] == 320
    )
    # an ofmap buffer of 0.5 KiB (active half 256 B < 320 B of partial sums): they spill to DRAM and back
    rs = simulate(
        w,
        ArrayConfig(
            rows=8, cols=8, dram_gbps=1e6, sram_port_bytes=None, ifmap_kb=64, filter_kb=64, ofmap_kb=0.5
        ),
    )
    assert rs.layers["dram_ofmap_bytes"][0] == 80 + 2 * 2 * 80 * 4 == 1360
    # OS completes the reduction inside the PEs: outputs only, at activation width
    ro = simulate(w, ArrayConfig(rows=8, cols=8, dram_gbps=1e6, sram_port_bytes=None, dataflow="os"))
    assert ro.layers["sram_ofmap_write_bytes"][0] == 80 and ro.layers["sram_ofmap_read_bytes"][0] == 0


def test_pipeline_charged_once_per_fold():
    # same layer: 3 row folds x 1 column fold, 2R + C + M - 2 = 32 lines per fold
    w = Workload("p", (make_layer("x", "gemm", 10, 8, 96),))
    for p in (1, 2, 3):
        r = simulate(w, ArrayConfig(rows=8, cols=8, dram_gbps=1e6, sram_port_bytes=None, pipeline=p))
        assert int(r.layers["cycles"][0]) + 1 == 3 * (32 + p - 1)
    # OS: ceil(M/R) x ceil(N/C) = 2 folds of steps + R + C - 2 = 24 + 14 = 38 lines
    r = simulate(
        w, ArrayConfig(rows=8, cols=8, dram_gbps=1e6, sram_port_bytes=None, pipeline=3, dataflow="os")
    )
    assert int(r.layers["cycles"][0]) + 1 == 2 * (38 + 2)


def test_sram_split_rule():
    from sim.array_config import split_sram_kb

    assert split_sram_kb() == (64.0, 64.0, 64.0)
    assert split_sram_kb(96) == (32.0, 32.0, 32.0)
    assert split_sram_kb(96, ifmap_kb=48) == (48.0, 24.0, 24.0)
    assert split_sram_kb(None, ifmap_kb=6) == (6.0, 64.0, 64.0)
    assert split_sram_kb(12, 6, 4, 2) == (6.0, 4.0, 2.0)
    assert sum(ArrayConfig(sram_kb=1024).sram_split_kb) == pytest.approx(1024)
    w = get_workload("bert-base", seq=64)
    g = simulate_grid(w, {"sram_kb": np.array([96.0, 1024.0]), "ifmap_kb": np.array([48.0, 512.0])})
    for i, (sk, ik) in enumerate(((96.0, 48.0), (1024.0, 512.0))):
        got = (g["sram_ifmap_kb"][i], g["sram_filter_kb"][i], g["sram_ofmap_kb"][i])
        assert got == ArrayConfig(sram_kb=sk, ifmap_kb=ik).sram_split_kb


def test_grid_accepts_pipeline_acc_and_sram_ports():
    w = get_workload("bert-base", seq=64)
    pts = [
        dict(rows=16, cols=16, pipeline=1, acc_bits=32, sram_banks=1, sram_port_bytes=64.0),
        dict(rows=32, cols=32, pipeline=3, acc_bits=24, sram_banks=2, sram_port_bytes=32.0),
        dict(rows=64, cols=64, pipeline=2, acc_bits=32, sram_banks=4, sram_port_bytes=None),
        dict(rows=64, cols=32, pipeline=1, acc_bits=16, sram_banks=1, sram_port_bytes=64.0, dense_path=True),
    ]
    cols = {
        k: [p.get(k, False) for p in pts]
        for k in ("rows", "cols", "pipeline", "acc_bits", "sram_banks", "sram_port_bytes", "dense_path")
    }
    g = simulate_grid(w, cols)
    for i, p in enumerate(pts):
        r = simulate(w, ArrayConfig(**p))
        assert g["cycles"][i].tolist() == r.layers["cycles"].tolist()
        for k in (
            "stall_cycles",
            "sram_stall_cycles",
            "dram_stall_cycles",
            "sram_ofmap_port_bytes",
        ):  # (P,) totals
            assert g[k][i] == r.totals[k], (i, k)
        assert g["total_cycles"][i] == r.total_cycles and g["stall_fraction"][i] == pytest.approx(
            r.stall_fraction
        )
        assert g["effective_speedup"][i] == pytest.approx(r.effective_speedup)
    assert g["sram_stall_cycles"][2] == 0 and g["sram_stall_cycles"][0] > 0
    with pytest.raises(InputError, match="pipeline"):
        simulate_grid(w, {"pipeline": np.array([0, 1])})
    with pytest.raises(InputError, match="sram_banks"):
        simulate_grid(w, {"sram_banks": np.array([0, 1])})


def test_sram_ports_make_a_wide_array_stall():
    # issue 11: the default study's winner (64x64 2:4 WS, 1 MiB) moved ~240 B/cycle through one 64 B/cycle port
    # without a stall. It stalls now: with the default 2 banks x 64 B per buffer, more with one bank; with the
    # limit lifted it does not. The array alone (the vector unit's operators dropped).
    w = dataclasses.replace(get_workload("bert-base", seq=128), vector_ops=())
    kw = dict(rows=64, cols=64, sram_kb=1024, clock_mhz=1000, dataflow="ws")
    dflt = simulate(w, ArrayConfig(**kw))
    lim = simulate(w, ArrayConfig(**kw, sram_banks=1))
    free = simulate(w, ArrayConfig(**kw, sram_port_bytes=None))
    assert (
        free.totals["sram_stall_cycles"] == 0 and dflt.totals["sram_stall_cycles"] > 0.05 * dflt.total_cycles
    )
    assert lim.totals["sram_stall_cycles"] > 0.2 * lim.total_cycles
    assert lim.total_cycles > dflt.total_cycles > free.total_cycles
    assert lim.total_cycles > free.total_cycles and lim.stall_fraction > free.stall_fraction
    # every buffer's traffic fits in its port time: bytes <= cycles x 64 B for the busiest buffer
    busy = lim.layers["cycles"] + 1 + lim.layers["stall_cycles"]
    peak = np.maximum.reduce(
        [lim.layers[k] for k in ("sram_ifmap_port_bytes", "sram_filter_port_bytes", "sram_ofmap_port_bytes")]
    )
    assert np.all(peak <= busy * 64.0 + 1e-6)
    peak = np.maximum.reduce(
        [dflt.layers[k] for k in ("sram_ifmap_port_bytes", "sram_filter_port_bytes", "sram_ofmap_port_bytes")]
    )
    assert np.all(peak <= (dflt.layers["cycles"] + 1 + dflt.layers["stall_cycles"]) * 128.0 + 1e-6)
