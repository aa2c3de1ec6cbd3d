"""Characterise a sweep's hardware before its first trial, on every core.

A cold first run spends nearly all its time in Yosys, ABC and OpenSTA: for every PE kind and
pipeline depth of the space (and the dense kind of the dense twins) the array model synthesises the
PE and its 1 x 1 ... 6 x 1 columns (ppa.array_cost), the OS cells where the space has OS, and
OpenSTA times the column (ppa.model.stage_timing). The trials would do this one configuration after
another on one core as they first meet it. This module does it up front in a process pool, one job
per (PE kind, pipeline, dataflow), so a 2-core laptop runs two syntheses at a time. Every result
lands in the on-disk caches (written atomically), where the trials find it; nothing else is shared.

Each job is ``ppa.model.estimate`` of the configuration at the space's deepest array (the array
model characterises rows up to that depth or its steady state) with the trials' activity trace: it
touches exactly the syntheses, STA runs and activity simulations a trial of that configuration
would. A warm cache makes every job a few cache reads, and the pool is not started at all when
there is one job or one core.
"""

from __future__ import annotations

import logging
import os
import signal
import time
from concurrent.futures import ProcessPoolExecutor, as_completed, wait
from typing import Any

from explore.config import SweepConfig
from explore.evaluator import activity_trace, make_context
from explore.space import axis_choices, has_dense_path, parse_sparsity
from hw.precision import operand_bits
from ppa.design import DesignPoint
from ppa.model import estimate

__all__ = ["hardware_jobs", "prewarm"]

_log = logging.getLogger("sparsepe.prewarm")
#: seconds within which a warm cache has answered every job (then nothing is logged)
QUIET_S = 3.0


def _values(cfg: SweepConfig, name: str, fixed: Any) -> list:
    ch = axis_choices(cfg.space, name)
    if ch is not None:
        return list(ch)
    try:
        r = cfg.space.axis(name)
    except Exception:
        r = None
    if r is None:
        return [fixed]
    if name == "rows":
        return [int(r.max)]
    step = int(r.step) if r.step else 1
    return list(range(int(r.min), int(r.max) + 1, step))


def hardware_jobs(cfg: SweepConfig) -> list[dict[str, Any]]:
    """One ``ppa.model.DesignPoint`` keyword dict per (PE kind, N:M, pipeline, dataflow) that the
    sweep (and its dense twins) can meet, at the space's deepest array; dense kinds first, since
    every sparse design's twins need them too."""
    f = cfg.fixed
    rows = max(int(v) for v in _values(cfg, "rows", 8))
    sparsities = _values(cfg, "sparsity", "2:4")
    pipelines = sorted({int(v) for v in _values(cfg, "pipeline", 1)})
    dataflows = sorted({str(v) for v in _values(cfg, "dataflow", "ws")})
    node = min(int(v) for v in _values(cfg, "node_nm", 7))
    precisions = sorted({str(v) for v in _values(cfg, "precision", "int8")}) if cfg.space.precision is not None else ["int8"]
    kinds = set()
    for s in sparsities:
        n, m, sparse = parse_sparsity(str(s))
        kinds.add((n, m, sparse, bool(sparse and has_dense_path(str(s)))))
        kinds.add((n, m, False, False))  # the dense twins
    jobs = []
    for n, m, sparse, dp in sorted(kinds, key=lambda k: (k[2], k[3], k[0], k[1])):
        for prec in precisions:  # operand widths as the evaluator sets them (explore.evaluator.design_columns)
            ab = f.act_bits if prec == "int8" else operand_bits(prec)
            wb = f.weight_bits if prec == "int8" else operand_bits(prec)
            for p in pipelines:
                for df in dataflows:
                    jobs.append(dict(rows=rows, cols=1, node_nm=node, act_bits=ab, weight_bits=wb,
                                     acc_bits=f.acc_bits, n=n, m=m, sparse=sparse, dense_path=dp, dataflow=df,
                                     pipeline=p, precision=prec, liberty=f.liberty, liberty_node_nm=f.liberty_node))
    # the dense jobs repeat across N:M (a dense PE has no N): keep one of each
    seen, out = set(), []
    for j in jobs:
        key = tuple(sorted((k, v) for k, v in j.items() if not (k in ("n",) and not j["sparse"])))
        if key not in seen:
            seen.add(key)
            out.append(j)
    return out


def _quiet_sigint() -> None:
    """Pool workers ignore Ctrl-C: the parent handles it (one line, exit 130) and ends the pool,
    so no worker prints a KeyboardInterrupt traceback."""
    signal.signal(signal.SIGINT, signal.SIG_IGN)


def _run_job(cfg: SweepConfig, kw: dict[str, Any]) -> str:
    """One job: ppa.model.estimate of the configuration ``kw`` with the trials' activity trace."""
    t = time.time()
    design = DesignPoint(**kw)
    trace = None
    if cfg.fixed.activity_trace == "reference" and design.precision == "int8":  # the real-data trace the trials use (disk-cached activity)
        trace = activity_trace(make_context(cfg), design)
    estimate(design, trace=trace)
    kind = "dense" if not kw["sparse"] else ("dense-path" if kw["dense_path"] else f"{kw['n']}:{kw['m']}")
    return f"{kind} {kw['precision']} PE, pipeline {kw['pipeline']}, {kw['dataflow']} ({time.time() - t:.0f} s)"


def prewarm(cfg: SweepConfig, workers: int | None = None) -> int:
    """Run :func:`hardware_jobs` on ``workers`` processes (default: the machine's cores); returns
    the number of jobs. Errors in a job are not raised here: the trial that meets the configuration
    raises them in the usual way (one line, exit 2, for bad input)."""
    jobs = hardware_jobs(cfg)
    workers = max(1, min(workers or os.cpu_count() or 1, len(jobs)))
    if workers == 1:
        return len(jobs)
    t0 = time.time()
    pool = ProcessPoolExecutor(max_workers=workers, initializer=_quiet_sigint)
    try:
        futs = [pool.submit(_run_job, cfg, j) for j in jobs]
        # a warm cache answers every job within a second or two: then say nothing
        _, pending = wait(futs, timeout=QUIET_S)
        if not pending:
            return len(jobs)
        _log.info("characterising %d hardware configurations (PE kind x pipeline x dataflow) on %d processes",
                  len(jobs), workers)
        done = 0
        for fut in as_completed(futs):
            done += 1
            try:
                _log.info("characterised %d/%d: %s", done, len(jobs), fut.result())
            except Exception as exc:  # the trial meeting it reports it properly
                _log.info("characterisation %d/%d deferred to the trials: %s", done, len(jobs),
                          str(exc).splitlines()[0] if str(exc) else type(exc).__name__)
    except BaseException:  # Ctrl-C (or any failure here): end the workers now, not after their jobs
        for proc in list((getattr(pool, "_processes", None) or {}).values()):
            proc.terminate()
        pool.shutdown(wait=False, cancel_futures=True)
        raise
    pool.shutdown(wait=True)
    _log.info("hardware characterised in %.0f s", time.time() - t0)
    return len(jobs)
