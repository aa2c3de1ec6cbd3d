"""Serving latency: Poisson request arrivals, dynamic batching, one accelerator.

Requests arrive at ``rate_rps`` (exponential inter-arrival times from a seeded numpy Generator).
The server takes a batch when it is free and either ``max_batch`` requests are waiting or the oldest
waiting request has waited ``timeout_ms``; a batch of b requests occupies the server for
``latency(b)`` seconds (from the cycle model: :func:`latency_table`). Latency of a request =
completion - arrival. This is the "equal latency budget" yardstick: compare designs by the load
at which p99 still meets the SLA.
"""

from __future__ import annotations

import math
from dataclasses import dataclass
from typing import Callable, Sequence

import numpy as np

from hw.errors import InputError


@dataclass(frozen=True)
class ServingResult:
    p50_ms: float
    p95_ms: float
    p99_ms: float
    mean_ms: float
    throughput_rps: float
    mean_batch: float
    busy_fraction: float
    latencies_ms: np.ndarray

    # short aliases used by the issue text
    @property
    def p50(self) -> float:
        return self.p50_ms

    @property
    def p95(self) -> float:
        return self.p95_ms

    @property
    def p99(self) -> float:
        return self.p99_ms

    @property
    def throughput(self) -> float:
        return self.throughput_rps

    def sla_ok(self, budget_ms: float, percentile: float = 99.0) -> bool:
        """True when the given latency percentile is within the budget."""
        if not 0 < percentile <= 100:
            raise InputError(f"percentile must be in (0, 100], got {percentile}", where="sla_ok")
        return float(np.percentile(self.latencies_ms, percentile)) <= budget_ms


#: Most requests of one serving simulation. [A] one Python loop step per batch: 100,000 requests
#: take ~0.2 s and resolve p99 with ~1,000 samples above it (n_requests = 1e9 hung the sweep).
MAX_REQUESTS = 100_000
#: Largest batch. [A] as explore.config's [serving] max_batch (one latency table entry per size).
MAX_BATCH = 256


def serve(latency: Callable[[int], float] | Sequence[float] | np.ndarray, rate_rps: float, n_requests: int = 2000,
          max_batch: int = 8, timeout_ms: float = 2.0, seed: int = 0) -> ServingResult:
    """Simulate the queue. ``latency`` is a function batch_size -> seconds, or a table whose entry
    ``b - 1`` is the latency in seconds of a batch of b (length >= max_batch)."""
    if not rate_rps > 0:
        raise InputError(f"rate must be positive, got {rate_rps}", where="parameter rate_rps")
    if not math.isfinite(rate_rps):
        raise InputError(f"rate must be finite, got {rate_rps}", where="parameter rate_rps")
    if not isinstance(n_requests, int) or not 1 <= n_requests <= MAX_REQUESTS:
        raise InputError(f"n_requests must be an integer in 1..{MAX_REQUESTS}, got {n_requests!r}",
                         where="parameter n_requests")
    if not isinstance(max_batch, int) or not 1 <= max_batch <= MAX_BATCH:
        raise InputError(f"max_batch must be an integer in 1..{MAX_BATCH}, got {max_batch!r}", where="parameter max_batch")
    if not (math.isfinite(timeout_ms) and timeout_ms >= 0):
        raise InputError(f"timeout must be >= 0, got {timeout_ms}", where="parameter timeout_ms")
    if callable(latency):
        table = np.array([float(latency(b)) for b in range(1, max_batch + 1)])
    else:
        table = np.asarray(latency, dtype=float)
        if table.ndim != 1 or table.size < max_batch:
            raise InputError(f"latency table needs {max_batch} entries (batch 1..{max_batch}), got {table.size}",
                             where="parameter latency")
        table = table[:max_batch]
    if np.any(~np.isfinite(table)) or np.any(table <= 0):
        raise InputError("batch latencies must be positive and finite", where="parameter latency")

    rng = np.random.default_rng(seed)
    arrivals = np.cumsum(rng.exponential(1.0 / rate_rps, size=n_requests))
    timeout = timeout_ms / 1e3
    done = np.empty(n_requests)
    t_free = 0.0
    busy = 0.0
    i = 0
    batches = 0
    while i < n_requests:
        ready = arrivals[i] + timeout
        if i + max_batch - 1 < n_requests:
            ready = min(ready, arrivals[i + max_batch - 1])
        start = max(t_free, ready)
        # everyone who has arrived by the start joins (up to max_batch)
        j = int(np.searchsorted(arrivals, start, side="right"))
        b = max(1, min(max_batch, j - i))
        svc = table[b - 1]
        t_free = start + svc
        busy += svc
        done[i:i + b] = t_free
        i += b
        batches += 1
    lat_ms = (done - arrivals) * 1e3
    span = done[-1] - arrivals[0]
    p50, p95, p99 = np.percentile(lat_ms, [50, 95, 99])
    return ServingResult(float(p50), float(p95), float(p99), float(lat_ms.mean()), n_requests / span,
                         n_requests / batches, busy / span, lat_ms)


def latency_table(workload_factory: Callable[[int], object], arch, max_batch: int) -> np.ndarray:
    """Seconds per batch of 1..max_batch on ``arch``: ``workload_factory(b)`` builds the workload at
    batch b (e.g. ``lambda b: get_workload("bert-base", batch=b)``)."""
    from sim.perf import simulate

    return np.array([simulate(workload_factory(b), arch).latency_s() for b in range(1, max_batch + 1)])
