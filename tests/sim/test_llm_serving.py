"""LLM serving, sparse against dense: TTFT/TPOT percentiles, and the decode speedup next to its
memory-bound limit computed here from the layer shapes."""

from dataclasses import replace

import pytest

from hw.errors import InputError
from sim.layers import Workload, make_layer
from sim.perf import ArrayConfig, simulate
from sim.serving import compare_llm_serving, decode_speedup, serve_llm, weight_traffic
from sim.workloads import get_workload

TABLE_PRE = [0.05 * b for b in range(1, 9)]
TABLE_DEC = [0.010 + 0.001 * b for b in range(1, 9)]


def test_ttft_and_tpot_percentiles_are_ordered():
    st = serve_llm(
        TABLE_PRE, TABLE_DEC, rate_rps=3.0, output_tokens=16, n_requests=1000, warmup=100, n_seeds=3
    )
    assert 0 < st.ttft_p50_ms <= st.ttft_p95_ms <= st.ttft_p99_ms
    assert 0 < st.tpot_p50_ms <= st.tpot_p95_ms <= st.tpot_p99_ms
    d = st.as_dict()
    assert d["ttft_p95_ms"] == st.ttft_p95_ms and d["tpot_p95_ms"] == st.tpot_p95_ms
    # TPOT lies between the decode step of a batch of 1 and of 8
    assert TABLE_DEC[0] * 1e3 <= st.tpot_p50_ms <= TABLE_DEC[-1] * 1e3 + 1e-9


def test_memory_bound_limit_of_a_weight_streaming_decode():
    """One 4096 x 4096 INT8 GEMV: dense moves N K bytes; 2:4 moves N K / 2 values and N (K / 2) x 2 bits
    of metadata = N K / 8 bytes: the limit is 1 / (1/2 + 1/8) = 1.6. With DRAM the bottleneck the speedup
    approaches it and never passes it."""
    N = K = 4096
    w = Workload("gemv", (make_layer("fc", "gemm", 1, N, K, weight_shape=(N, K)),))
    sparse = ArrayConfig(rows=32, cols=32, dram_gbps=4.0, sram_kb=96)
    s = decode_speedup(w, sparse, replace(sparse, sparse=False))
    assert (
        s.dense_weight_bytes == N * K and s.sparse_weight_bytes == N * K / 2 and s.metadata_bytes == N * K / 8
    )
    assert s.memory_bound_limit == pytest.approx(1.6)
    assert 1.5 < s.speedup <= s.memory_bound_limit + 1e-9


def test_weight_traffic_leaves_the_kv_cache_out():
    w = get_workload("llama2-7b-decode", seq=512, batch=2, context=1000)
    r = simulate(w, ArrayConfig(sparse=False))
    wb, meta = weight_traffic(r)
    # independent: every weight GEMM of Llama-2-7B's 32 blocks read once (INT8, WS), no metadata when dense
    d, ffn, L = 4096, 11008, 32
    assert wb == L * (4 * d * d + 3 * d * ffn) and meta == 0
    assert r.totals["dram_weight_bytes"] > wb  # the attention's KV operand is in the total, not in wb


def test_mixtral_serving_sparse_beats_dense_and_stays_under_the_limit():
    a = ArrayConfig(rows=64, cols=64, sram_kb=2048, clock_mhz=2000.0, dram_gbps=4914.0)
    designs = {"sparse": a, "dense": replace(a, sparse=False)}
    t = compare_llm_serving(
        lambda b: get_workload("mixtral-8x7b-prefill", seq=128, batch=b),
        lambda b: get_workload("mixtral-8x7b-decode", seq=128, batch=b, context=160),
        designs,
        rate_rps=0.02,
        output_tokens=16,
        baseline="dense",
        max_batch=4,
        n_requests=300,
        warmup=30,
        n_seeds=2,
    )
    assert t["sparse"]["tpot_p50_ms"] < t["dense"]["tpot_p50_ms"]
    assert "decode_speedup" not in t["dense"]
    for s in t["sparse"]["decode_speedup"]:
        assert 1.0 < s["speedup"] <= s["memory_bound_limit"] + 1e-9
    b1, b4 = t["sparse"]["decode_speedup"]
    # independent: attention, router and LM head once, plus the experts the batch touches: 2 of 8 per layer
    # at batch 1, E (1 - (1 - k/E)^4) = 5.47 at batch 4 (32 layers: 175 expert MLPs of 3 x 4096 x 14336)
    d, f, L = 4096, 14336, 32
    rest = L * (2 * d * d + 2 * d * 1024 + 8 * d) + 32000 * d
    assert b1["dense_weight_bytes"] == rest + L * 2 * 3 * d * f
    assert b4["dense_weight_bytes"] == rest + round(L * 8 * (1 - 0.75**4)) * 3 * d * f


def test_double_buffered_designs_against_their_own_dense_design():
    """Each sparse design against the dense design with the same weight buffering (a dict of
    baselines): double buffering shortens the compute-bound prefill (TTFT) on both sides, never
    lengthens the memory-bound decode step, and the speedup stays under the 1.6x weight-byte limit."""
    N = K = 1024

    def gemm(m):
        return Workload("lm", (make_layer("fc", "gemm", m, N, K, weight_shape=(N, K)),))

    a = ArrayConfig(
        rows=32, cols=32, sram_kb=3072, dram_gbps=64.0, sram_port_bytes=None
    )  # no SRAM port limit
    designs = {
        "dense": replace(a, sparse=False),
        "sparse": a,
        "dense db": replace(a, sparse=False, double_buffer=True),
        "sparse db": replace(a, double_buffer=True),
    }
    t = compare_llm_serving(
        lambda b: gemm(256 * b),
        lambda b: gemm(b),
        designs,
        rate_rps=0.5,
        output_tokens=8,
        baseline={"sparse": "dense", "sparse db": "dense db"},
        max_batch=2,
        n_requests=200,
        warmup=20,
        n_seeds=2,
    )
    assert t["sparse"]["baseline"] == "dense" and t["sparse db"]["baseline"] == "dense db"
    assert "decode_speedup" not in t["dense"] and "decode_speedup" not in t["dense db"]
    for side in ("dense", "sparse"):
        assert t[f"{side} db"]["ttft_p50_ms"] < t[side]["ttft_p50_ms"]
        assert t[f"{side} db"]["tpot_p50_ms"] <= t[side]["tpot_p50_ms"] + 1e-9
    for s in t["sparse db"]["decode_speedup"]:
        assert s["memory_bound_limit"] == pytest.approx(1.6) and 1.0 < s["speedup"] <= 1.6 + 1e-9
    with pytest.raises(InputError, match="baseline"):
        compare_llm_serving(
            lambda b: gemm(b),
            lambda b: gemm(b),
            designs,
            rate_rps=0.5,
            output_tokens=8,
            baseline={"sparse": "dense, double-buffered"},
            max_batch=1,
        )
