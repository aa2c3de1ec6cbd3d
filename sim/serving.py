"""Serving latency: Poisson request arrivals, dynamic batching, one accelerator.

Requests arrive at ``rate_rps`` (exponential inter-arrival times from a seeded numpy Generator).
The server takes a batch when it is free and either ``max_batch`` requests are waiting or the oldest
waiting request has waited ``timeout_ms``; a batch of b requests occupies the server for
``latency(b)`` seconds (from the cycle model: :func:`latency_table`). Latency of a request =
completion - arrival. This is the "equal latency budget" yardstick: compare designs by the load
at which p99 still meets the SLA.

Evidence a serving owner can sign (:func:`serve_seeds`, :func:`serve_llm`):

* warm-up: a run's start is not the steady state. The queue starts empty (the first requests
  wait less), and a server that starts cold (``cold_start_ms``: model load, kernel compilation,
  caches filled before the first batch can run) makes the first requests queue behind it (they
  wait more). The first ``warmup`` requests of every run are discarded before p50/p95/p99;
* arrival seeds: p95 and p99 are the means over several arrival seeds, each with a 95 % Student-t
  interval across the seeds (one seed gives no interval, and the result says so);
* LLM requests: a request is a whole inference, its prefill then ``output_tokens - 1`` decode steps
  (the prefill emits the first token). A batch of b requests runs prefill(b) and then the decode
  steps at batch b (static batching: the batch finishes together). Time to first token (TTFT) =
  end of the prefill - arrival; time per output token (TPOT) = (completion - first token) /
  (output_tokens - 1); both reported apart from the end-to-end latency.
"""

from __future__ import annotations

import math
from collections.abc import Callable, Sequence
from dataclasses import dataclass

import numpy as np
from scipy.special import stdtrit  # the Student-t quantile without importing scipy.stats (~1.4 s)

from hw.errors import InputError
from sim.asp_rules import ACT_GEMM
from sim.layers import Workload
from sim.perf import simulate


@dataclass(frozen=True)
class ServingResult:
    p50_ms: float
    p95_ms: float
    p99_ms: float
    mean_ms: float
    throughput_rps: float
    mean_batch: float
    busy_fraction: float
    latencies_ms: np.ndarray  # the requests the percentiles are taken over (after the warm-up)
    warmup: int = 0  # requests discarded at the start of the run

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


def serve(
    latency: Callable[[int], float] | Sequence[float] | np.ndarray,
    rate_rps: float,
    n_requests: int = 2000,
    max_batch: int = 8,
    timeout_ms: float = 2.0,
    seed: int = 0,
    warmup: int = 0,
    cold_start_ms: float = 0.0,
) -> ServingResult:
    """Simulate the queue. ``latency`` is a function batch_size -> seconds, or a table whose entry
    ``b - 1`` is the latency in seconds of a batch of b (length >= max_batch). The first ``warmup``
    requests are discarded before the percentiles (0: every request counts). ``cold_start_ms``:
    the server can start its first batch only after this long (0: ready at once)."""
    if not rate_rps > 0:
        raise InputError(f"rate must be positive, got {rate_rps}", where="parameter rate_rps")
    if not math.isfinite(rate_rps):
        raise InputError(f"rate must be finite, got {rate_rps}", where="parameter rate_rps")
    if not isinstance(n_requests, int) or not 1 <= n_requests <= MAX_REQUESTS:
        raise InputError(
            f"n_requests must be an integer in 1..{MAX_REQUESTS}, got {n_requests!r}",
            where="parameter n_requests",
        )
    if not isinstance(max_batch, int) or not 1 <= max_batch <= MAX_BATCH:
        raise InputError(
            f"max_batch must be an integer in 1..{MAX_BATCH}, got {max_batch!r}", where="parameter max_batch"
        )
    if not (math.isfinite(timeout_ms) and timeout_ms >= 0):
        raise InputError(f"timeout must be >= 0, got {timeout_ms}", where="parameter timeout_ms")
    if not cold_start_ms >= 0:
        raise InputError(f"cold start must be >= 0 ms, got {cold_start_ms}", where="parameter cold_start_ms")
    table = _table(latency, max_batch, "parameter latency")

    rng = np.random.default_rng(seed)
    arrivals = np.cumsum(rng.exponential(1.0 / rate_rps, size=n_requests))
    _check_warmup(warmup, n_requests)
    start, done, batches, busy = _run_queue(arrivals, table, max_batch, timeout_ms / 1e3, cold_start_ms / 1e3)
    return _result(arrivals, done, batches, busy, warmup)


def _check_warmup(warmup: int, n_requests: int) -> None:
    if not isinstance(warmup, int) or isinstance(warmup, bool) or not 0 <= warmup < n_requests:
        raise InputError(
            f"warmup must be an integer in [0, n_requests) = [0, {n_requests}), got {warmup!r}",
            where="parameter warmup",
        )


def _run_queue(
    arrivals: np.ndarray, table: np.ndarray, max_batch: int, timeout: float, cold_start: float = 0.0
) -> tuple[np.ndarray, np.ndarray, int, float]:
    """The batching queue: (start time of each request's batch, its completion, number of batches,
    busy seconds). ``table[b - 1]``: seconds the server is busy with a batch of b; the server is
    free from ``cold_start`` seconds on."""
    n_requests = len(arrivals)
    done = np.empty(n_requests)
    start_of = np.empty(n_requests)
    t_free = cold_start
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
        done[i : i + b] = t_free
        start_of[i : i + b] = start
        i += b
        batches += 1
    return start_of, done, batches, busy


def _result(arrivals: np.ndarray, done: np.ndarray, batches: int, busy: float, warmup: int) -> ServingResult:
    n_requests = len(arrivals)
    lat_ms = (done - arrivals) * 1e3
    kept = lat_ms[warmup:]
    span = done[-1] - arrivals[0]
    p50, p95, p99 = np.percentile(kept, [50, 95, 99])
    return ServingResult(
        float(p50),
        float(p95),
        float(p99),
        float(kept.mean()),
        n_requests / span,
        n_requests / batches,
        busy / span,
        kept,
        warmup,
    )


def _table(latency, max_batch: int, where: str) -> np.ndarray:
    if callable(latency):
        table = np.array([float(latency(b)) for b in range(1, max_batch + 1)])
    else:
        table = np.asarray(latency, dtype=float)
        if table.ndim != 1 or table.size < max_batch:
            raise InputError(
                f"latency table needs {max_batch} entries (batch 1..{max_batch}), got {table.size}",
                where=where,
            )
        table = table[:max_batch]
    if np.any(~np.isfinite(table)) or np.any(table <= 0):
        raise InputError("batch latencies must be positive and finite", where=where)
    return table


def t_interval(values: Sequence[float]) -> tuple[float, float, float]:
    """(mean, low, high): the 95 % Student-t interval of the mean of ``values`` (independent runs,
    e.g. arrival seeds; non-negative quantities, so the low end is clipped at 0); with one value the
    interval is that value (no spread to estimate)."""
    v = np.asarray(values, float)
    mean = float(v.mean())
    if v.size < 2:
        return mean, mean, mean
    half = float(stdtrit(v.size - 1, 0.975) * v.std(ddof=1) / np.sqrt(v.size))  # Student-t 97.5 % quantile
    return mean, max(0.0, mean - half), mean + half  # latencies are positive: the low end stops at 0


@dataclass(frozen=True)
class ServingStats:
    """p95/p99 over several arrival seeds, each run after its warm-up is discarded: the means and
    their 95 % intervals (:func:`t_interval`). For LLM requests also TTFT and TPOT (p50/p99)."""

    p95_ms: float
    p95_interval_ms: tuple[float, float]
    p99_ms: float
    p99_interval_ms: tuple[float, float]
    seeds: tuple[int, ...]
    warmup: int
    n_requests: int
    runs: tuple[ServingResult, ...]
    ttft_p50_ms: float | None = None
    ttft_p99_ms: float | None = None
    ttft_p99_interval_ms: tuple[float, float] | None = None
    tpot_p50_ms: float | None = None
    tpot_p99_ms: float | None = None
    tpot_p99_interval_ms: tuple[float, float] | None = None
    output_tokens: int | None = None
    ttft_p95_ms: float | None = None
    tpot_p95_ms: float | None = None

    def as_dict(self) -> dict:
        d = {
            "p95_ms": self.p95_ms,
            "p95_interval_ms": list(self.p95_interval_ms),
            "p99_ms": self.p99_ms,
            "p99_interval_ms": list(self.p99_interval_ms),
            "seeds": list(self.seeds),
            "warmup": self.warmup,
            "n_requests": self.n_requests,
            "p99_per_seed_ms": [r.p99_ms for r in self.runs],
        }
        if self.ttft_p99_ms is not None:
            d.update(
                ttft_p50_ms=self.ttft_p50_ms,
                ttft_p95_ms=self.ttft_p95_ms,
                ttft_p99_ms=self.ttft_p99_ms,
                ttft_p99_interval_ms=list(self.ttft_p99_interval_ms or ()),
                tpot_p50_ms=self.tpot_p50_ms,
                tpot_p95_ms=self.tpot_p95_ms,
                tpot_p99_ms=self.tpot_p99_ms,
                tpot_p99_interval_ms=list(self.tpot_p99_interval_ms or ()),
                output_tokens=self.output_tokens,
            )
        return d


def _seeds(seed: int, n_seeds: int) -> tuple[int, ...]:
    if not isinstance(n_seeds, int) or n_seeds < 1:
        raise InputError(f"n_seeds must be a positive integer, got {n_seeds!r}", where="parameter n_seeds")
    return tuple(range(seed, seed + n_seeds))


def serve_seeds(
    latency: Callable[[int], float] | Sequence[float] | np.ndarray,
    rate_rps: float,
    n_requests: int = 2000,
    max_batch: int = 8,
    timeout_ms: float = 2.0,
    seed: int = 0,
    n_seeds: int = 5,
    warmup: int = 200,
    cold_start_ms: float = 0.0,
) -> ServingStats:
    """:func:`serve` at arrival seeds ``seed .. seed + n_seeds - 1``, each after discarding its first
    ``warmup`` requests; p95/p99 are the means over the seeds with their 95 % intervals."""
    runs = tuple(
        serve(
            latency,
            rate_rps,
            n_requests,
            max_batch,
            timeout_ms,
            s,
            warmup=warmup,
            cold_start_ms=cold_start_ms,
        )
        for s in _seeds(seed, n_seeds)
    )
    p95, lo95, hi95 = t_interval([r.p95_ms for r in runs])
    p99, lo99, hi99 = t_interval([r.p99_ms for r in runs])
    return ServingStats(
        p95, (lo95, hi95), p99, (lo99, hi99), tuple(_seeds(seed, n_seeds)), warmup, n_requests, runs
    )


def serve_llm(
    prefill: Callable[[int], float] | Sequence[float] | np.ndarray,
    decode_step: Callable[[int], float] | Sequence[float] | np.ndarray,
    rate_rps: float,
    output_tokens: int,
    n_requests: int = 2000,
    max_batch: int = 8,
    timeout_ms: float = 2.0,
    seed: int = 0,
    n_seeds: int = 5,
    warmup: int = 200,
    cold_start_ms: float = 0.0,
) -> ServingStats:
    """LLM serving: a request is its prefill plus ``output_tokens - 1`` decode steps (module
    docstring). ``prefill[b - 1]`` / ``decode_step[b - 1]``: seconds of the prefill / of one decode
    step of a batch of b. p95/p99 are of the whole request; TTFT and TPOT are reported apart."""
    if not isinstance(output_tokens, int) or isinstance(output_tokens, bool) or output_tokens < 1:
        raise InputError(
            f"output_tokens must be a positive integer, got {output_tokens!r}",
            where="parameter output_tokens",
        )
    if not rate_rps > 0:
        raise InputError(f"rate must be positive, got {rate_rps}", where="parameter rate_rps")
    if not isinstance(n_requests, int) or n_requests < 1:
        raise InputError(
            f"n_requests must be a positive integer, got {n_requests!r}", where="parameter n_requests"
        )
    if not isinstance(max_batch, int) or max_batch < 1:
        raise InputError(
            f"max_batch must be a positive integer, got {max_batch!r}", where="parameter max_batch"
        )
    _check_warmup(warmup, n_requests)
    if not cold_start_ms >= 0:
        raise InputError(f"cold start must be >= 0 ms, got {cold_start_ms}", where="parameter cold_start_ms")
    pre = _table(prefill, max_batch, "parameter prefill")
    dec = _table(decode_step, max_batch, "parameter decode_step")
    whole = pre + (output_tokens - 1) * dec
    runs: list[ServingResult] = []
    # per seed: the percentiles of time to first token and time per output token
    ttft99: list[float] = []
    tpot99: list[float] = []
    ttft50: list[float] = []
    tpot50: list[float] = []
    ttft95: list[float] = []
    tpot95: list[float] = []
    for s in _seeds(seed, n_seeds):
        rng = np.random.default_rng(s)
        arrivals = np.cumsum(rng.exponential(1.0 / rate_rps, size=n_requests))
        start, done, batches, busy = _run_queue(
            arrivals, whole, max_batch, timeout_ms / 1e3, cold_start_ms / 1e3
        )
        runs.append(_result(arrivals, done, batches, busy, warmup))
        # the batch size each request ran at: requests sharing a start time share a batch
        _, inv, cnt = np.unique(start, return_inverse=True, return_counts=True)
        b = cnt[inv]
        first = start + pre[b - 1]
        ttft = ((first - arrivals) * 1e3)[warmup:]
        tpot = (((done - first) / (output_tokens - 1)) * 1e3 if output_tokens > 1 else np.zeros(n_requests))[
            warmup:
        ]
        for out, x, q in (
            (ttft50, ttft, 50),
            (ttft95, ttft, 95),
            (ttft99, ttft, 99),
            (tpot50, tpot, 50),
            (tpot95, tpot, 95),
            (tpot99, tpot, 99),
        ):
            out.append(float(np.percentile(x, q)))
    p95, lo95, hi95 = t_interval([r.p95_ms for r in runs])
    p99, lo99, hi99 = t_interval([r.p99_ms for r in runs])
    t99, tlo, thi = t_interval(ttft99)
    o99, olo, ohi = t_interval(tpot99)
    return ServingStats(
        p95,
        (lo95, hi95),
        p99,
        (lo99, hi99),
        _seeds(seed, n_seeds),
        warmup,
        n_requests,
        tuple(runs),
        ttft_p50_ms=float(np.mean(ttft50)),
        ttft_p99_ms=t99,
        ttft_p99_interval_ms=(tlo, thi),
        tpot_p50_ms=float(np.mean(tpot50)),
        tpot_p99_ms=o99,
        tpot_p99_interval_ms=(olo, ohi),
        output_tokens=output_tokens,
        ttft_p95_ms=float(np.mean(ttft95)),
        tpot_p95_ms=float(np.mean(tpot95)),
    )


def latency_table(workload_factory: Callable[[int], Workload], arch, max_batch: int) -> np.ndarray:
    """Seconds per batch of 1..max_batch on ``arch``: ``workload_factory(b)`` builds the workload at
    batch b (e.g. ``lambda b: get_workload("bert-base", batch=b)``)."""
    return np.array([simulate(workload_factory(b), arch).latency_s() for b in range(1, max_batch + 1)])


def weight_traffic(res) -> tuple[float, float]:
    """(weight bytes, metadata bytes) a run moves from DRAM for its weight layers: the activation x
    activation layers (attention, whose second operand is the KV cache) are left out."""
    keep = np.array([k != ACT_GEMM for k in res.kinds])
    cnt = np.asarray(res.counts, float)
    return (
        float((res.layers["dram_weight_bytes"] * cnt * keep).sum()),
        float((res.layers["metadata_bytes"] * cnt * keep).sum()),
    )


@dataclass(frozen=True)
class DecodeSpeedup:
    """One decode step on a sparse design against its dense counterpart: the speedup, and the bound
    weight traffic puts on it when decode is memory bound: dense weight bytes / (sparse weight bytes
    + metadata bytes). The KV cache and the vector unit's work do not shrink, so the speedup stays
    below the bound."""

    batch: int
    sparse_ms: float
    dense_ms: float
    dense_weight_bytes: float
    sparse_weight_bytes: float
    metadata_bytes: float

    @property
    def speedup(self) -> float:
        return self.dense_ms / self.sparse_ms

    @property
    def memory_bound_limit(self) -> float:
        return self.dense_weight_bytes / (self.sparse_weight_bytes + self.metadata_bytes)

    def as_dict(self) -> dict:
        return {
            "batch": self.batch,
            "sparse_ms": self.sparse_ms,
            "dense_ms": self.dense_ms,
            "speedup": self.speedup,
            "memory_bound_limit": self.memory_bound_limit,
            "dense_weight_bytes": self.dense_weight_bytes,
            "sparse_weight_bytes": self.sparse_weight_bytes,
            "metadata_bytes": self.metadata_bytes,
        }


def decode_speedup(decode_workload, sparse_arch, dense_arch, batch: int = 1) -> DecodeSpeedup:
    """:class:`DecodeSpeedup` of one decode step (``decode_workload`` at ``batch``)."""
    s, d = simulate(decode_workload, sparse_arch), simulate(decode_workload, dense_arch)
    sw, meta = weight_traffic(s)
    dw, _ = weight_traffic(d)
    return DecodeSpeedup(batch, s.latency_s() * 1e3, d.latency_s() * 1e3, dw, sw, meta)


def compare_llm_serving(
    prefill: Callable[[int], Workload],
    decode: Callable[[int], Workload],
    designs: dict,
    rate_rps: float,
    output_tokens: int,
    *,
    baseline: str | dict[str, str],
    max_batch: int = 8,
    **serve_kw,
) -> dict:
    """LLM serving of each named design (``designs``: label -> ``sim.perf.ArrayConfig``), each
    against its dense design: ``baseline``, one label for every design, or a dict {design label:
    its dense design's label} (e.g. a double-buffered sparse design against the double-buffered
    dense one); ``prefill(b)`` / ``decode(b)`` build the workloads of a batch of b. Returns, per
    design, TTFT and TPOT p50/p95/p99 (ms, :func:`serve_llm`; ``serve_kw`` go to it) and, for every
    design with a baseline other than itself, the baseline's label (``baseline``) and the decode
    speedup at batch 1 and at ``max_batch`` next to its memory-bound limit (:func:`decode_speedup`)."""
    bases = {label: baseline for label in designs} if isinstance(baseline, str) else dict(baseline)
    for label, base in bases.items():
        if label not in designs or base not in designs:
            raise InputError(
                f"baseline {base!r} of {label!r}: both must be designs of {sorted(designs)}",
                where="parameter baseline",
            )
    pre = {b: prefill(b) for b in range(1, max_batch + 1)}
    dec = {b: decode(b) for b in range(1, max_batch + 1)}
    out = {}
    for label, arch in designs.items():
        st = serve_llm(
            latency_table(pre.__getitem__, arch, max_batch),
            latency_table(dec.__getitem__, arch, max_batch),
            rate_rps,
            output_tokens,
            max_batch=max_batch,
            **serve_kw,
        )
        row = {
            k: getattr(st, k)
            for k in (
                "ttft_p50_ms",
                "ttft_p95_ms",
                "ttft_p99_ms",
                "tpot_p50_ms",
                "tpot_p95_ms",
                "tpot_p99_ms",
            )
        }
        base = bases.get(label, label)
        if base != label:
            row["baseline"] = base
            row["decode_speedup"] = [
                decode_speedup(dec[b], arch, designs[base], b).as_dict() for b in sorted({1, max_batch})
            ]
        out[label] = row
    return out


def format_llm_serving(title: str, table: dict) -> str:
    """The :func:`compare_llm_serving` table as text lines."""
    lines = [title, f"{'design':<30} {'TTFT p50/p95/p99 ms':>28} {'TPOT p50/p95/p99 ms':>28}"]
    for label, r in table.items():
        ttft = "/".join(f"{r[f'ttft_p{q}_ms']:.2f}" for q in (50, 95, 99))
        tpot = "/".join(f"{r[f'tpot_p{q}_ms']:.3f}" for q in (50, 95, 99))
        lines.append(f"{label:<30} {ttft:>28} {tpot:>28}")
        for s in r.get("decode_speedup", []):
            lines.append(
                f"  decode step at batch {s['batch']} vs {r['baseline']}: speedup {s['speedup']:.3f}x, "
                f"memory-bound limit "
                f"{s['memory_bound_limit']:.3f}x (dense weights {s['dense_weight_bytes'] / 1e9:.2f} GB / "
                f"(sparse {s['sparse_weight_bytes'] / 1e9:.2f} + metadata "
                f"{s['metadata_bytes'] / 1e9:.2f} GB))"
            )
    return "\n".join(lines)
