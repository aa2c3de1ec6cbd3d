"""Serving queue: percentiles ordered, rising with load, deterministic per seed."""

import numpy as np
import pytest

from hw.errors import InputError
from sim.perf import ArrayConfig
from sim.serving import latency_table, serve, serve_llm, serve_seeds
from sim.workloads import get_workload

TABLE = np.array([2.0, 2.6, 3.2, 3.8, 4.4, 5.0, 5.6, 6.2]) * 1e-3  # seconds per batch of 1..8


def test_percentiles_ordered_and_rise_with_load():
    res = [
        serve(TABLE, rate_rps=r, n_requests=3000, max_batch=8, timeout_ms=2.0, seed=3)
        for r in (100, 400, 900, 1200)
    ]
    for r in res:
        assert r.p99 >= r.p95 >= r.p50 > 0
    p99 = [r.p99 for r in res]
    assert all(b > a for a, b in zip(p99, p99[1:], strict=False))
    assert res[-1].mean_batch > res[0].mean_batch  # batching grows with load
    # at light load a request waits at most the timeout before running alone
    assert res[0].p50 <= 2.0 + 2.0 + 1e-9
    assert res[0].throughput == pytest.approx(100, rel=0.1)
    assert res[0].sla_ok(10.0) and not res[-1].sla_ok(res[-1].p50, percentile=99)


def test_deterministic_for_seed_and_callable_latency():
    a = serve(TABLE, 500, n_requests=1000, seed=7)
    b = serve(lambda bsz: TABLE[bsz - 1], 500, n_requests=1000, seed=7)
    c = serve(TABLE, 500, n_requests=1000, seed=8)
    assert (a.p50, a.p95, a.p99) == (b.p50, b.p95, b.p99)
    assert (a.p50, a.p99) != (c.p50, c.p99)


def test_latency_table_from_model_and_bad_input():
    t = latency_table(lambda b: get_workload("bert-base", seq=32, batch=b), ArrayConfig(rows=64, cols=64), 3)
    assert t.shape == (3,) and np.all(np.diff(t) > 0)
    with pytest.raises(InputError, match="rate"):
        serve(TABLE, 0.0)
    with pytest.raises(InputError, match="8 entries"):
        serve(TABLE[:4], 100.0, max_batch=8)


# ---- warm-up discard, arrival-seed intervals, LLM requests (issue 15) ----------------------------


def _long_run_p99(table, rate, max_batch=8):
    """The steady-state p99: one long run (40,000 requests) with its first 5,000 discarded."""
    return serve(table, rate, n_requests=40_000, max_batch=max_batch, seed=99, warmup=5_000).p99


def test_warmup_discard_removes_a_cold_start_bias_from_p99():
    # a server that needs 100 ms before its first batch (model load, caches): ~50 requests queue
    # behind it and the backlog drains at (capacity - load), so the first ~150 requests of each run
    # wait far longer than in the steady state, and the p99 over every request is biased high
    table = np.array([8.0, 8.5, 9.0, 9.5, 10.0, 10.5, 11.0, 11.5]) * 1e-3
    rate = 500.0  # batch-8 capacity 8 / 11.5 ms = 696 req/s: 72 % load
    steady = _long_run_p99(table, rate)
    cold = serve_seeds(table, rate, n_requests=2000, n_seeds=6, warmup=0, cold_start_ms=100.0)
    warm = serve_seeds(table, rate, n_requests=2000, n_seeds=6, warmup=200, cold_start_ms=100.0)
    assert cold.p99_interval_ms[0] > 2 * steady  # biased: the whole interval is far above the steady state
    lo, hi = warm.p99_interval_ms
    assert lo <= steady <= hi  # the 10 % warm-up discard (200 of 2000) removes the bias
    assert warm.p99_ms < cold.p99_interval_ms[0]
    # the same runs without a cold start agree with the discarded ones: the discard, not luck
    none = serve_seeds(table, rate, n_requests=2000, n_seeds=6, warmup=200)
    assert none.p99_ms == pytest.approx(warm.p99_ms, rel=0.05)
    with pytest.raises(InputError, match="cold start"):
        serve(table, rate, cold_start_ms=-1.0)


def test_serve_seeds_interval_covers_the_seed_values_and_the_steady_state():
    table = np.array([2.0, 2.6, 3.2, 3.8, 4.4, 5.0, 5.6, 6.2]) * 1e-3
    st = serve_seeds(table, 900.0, n_requests=3000, seed=0, n_seeds=6, warmup=300)
    per_seed = [r.p99 for r in st.runs]
    assert st.seeds == tuple(range(6)) and st.warmup == 300
    assert st.p99_ms == pytest.approx(np.mean(per_seed))
    lo, hi = st.p99_interval_ms
    assert lo < st.p99_ms < hi and lo > 0
    assert st.p95_ms < st.p99_ms
    assert lo - 0.5 * (hi - lo) < _long_run_p99(table, 900.0) < hi + 0.5 * (hi - lo)
    one = serve_seeds(table, 900.0, n_requests=3000, seed=0, n_seeds=1, warmup=300)
    assert one.p99_interval_ms == (one.p99_ms, one.p99_ms)
    with pytest.raises(InputError, match="warmup"):
        serve_seeds(table, 900.0, n_requests=300, warmup=300)


def test_llm_request_is_prefill_plus_decode_with_ttft_and_tpot_apart():
    pre = np.array([20.0, 36.0, 52.0, 68.0]) * 1e-3  # prefill of a batch of 1..4
    dec = np.array([1.0, 1.05, 1.1, 1.15]) * 1e-3  # one decode step of a batch of 1..4
    T = 64
    # light load: requests run alone: TTFT = timeout wait + prefill, TPOT = one decode step,
    # end to end = TTFT + (T - 1) decode steps
    st = serve_llm(
        pre, dec, 0.5, T, n_requests=300, max_batch=4, timeout_ms=0.0, seed=1, n_seeds=2, warmup=20
    )
    assert st.ttft_p50_ms == pytest.approx(20.0, rel=1e-6)
    assert st.tpot_p50_ms == pytest.approx(1.0, rel=1e-6)
    assert st.runs[0].p50 == pytest.approx(20.0 + (T - 1) * 1.0, rel=1e-6)
    # heavier load: batching and queueing raise TTFT; TPOT rises only with the batch's step time
    hv = serve_llm(
        pre, dec, 20.0, T, n_requests=600, max_batch=4, timeout_ms=5.0, seed=1, n_seeds=3, warmup=60
    )
    assert hv.ttft_p99_ms > st.ttft_p99_ms
    assert 1.0 <= hv.tpot_p99_ms <= 1.15 + 1e-9
    assert hv.p99_ms >= hv.ttft_p99_ms
    with pytest.raises(InputError, match="output_tokens"):
        serve_llm(pre, dec, 1.0, 0, max_batch=4)
