"""Characterise a sweep's hardware before its first trial, on every core.

A cold first run spends nearly all its time in Yosys, ABC and OpenSTA: for every PE kind and
pipeline depth of the space (and the dense kind of the dense twins) the array model synthesises the
PE and its 1 x 1 ... 6 x 1 columns (ppa.array_cost), the OS cells where the space has OS, and
OpenSTA times the column (ppa.model.stage_timing). The trials would do this one configuration after
another on one core as they first meet it. This module does it up front, one job per (PE kind,
pipeline, dataflow).

Each job is ``ppa.model.estimate`` of the configuration at the space's deepest array (the array
model characterises rows up to that depth or its steady state) with the trials' activity traces
(explore.activity_traces.design_traces: each workload family's, both parts of a sparse design's): it
touches exactly the syntheses, STA runs and activity simulations a trial of that configuration
would. First every job is probed in this process (ppa.characterisation.probing: milliseconds each)
against the caches and the characterisation shipped with the package; a job they answer needs
nothing more, and its lookups are already in this process's memory for the trials. The jobs left
run in a process pool (so a 2-core laptop runs two syntheses at a time), or here when there is
one job or one core. A job that fails in the pool is run once more, serially, here (a parallel
run can fail for want of memory); a failure that remains is logged with its cause, and every
trial of that configuration fails with the same one-line reason (ppa.characterisation keeps the
failure: the tool is not run again). Nothing is deferred silently.
"""

from __future__ import annotations

import logging
import os
import signal
import time
from concurrent.futures import ProcessPoolExecutor, as_completed
from typing import Any

from explore.activity_traces import design_traces, warm_models
from explore.config import SweepConfig
from explore.evaluator import make_context
from explore.space import axis_choices, has_dense_path, parse_sparsity
from hw.host import die_with_parent
from hw.precision import operand_bits
from ppa import characterisation
from ppa.design import DesignPoint
from ppa.model import estimate

__all__ = ["hardware_jobs", "prewarm", "probe", "job_name"]

_log = logging.getLogger("sparsepe.prewarm")


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
    precisions = (
        sorted({str(v) for v in _values(cfg, "precision", "int8")})
        if cfg.space.precision is not None
        else ["int8"]
    )
    buffers = [False]
    if cfg.space.double_buffer is not None:  # the double-buffered arrays too (OS: none, below)
        buffers = sorted({bool(v) for v in _values(cfg, "double_buffer", False)})
    kinds = set()
    for s in sparsities:
        n, m, sparse = parse_sparsity(str(s))
        kinds.add((n, m, sparse, bool(sparse and has_dense_path(str(s)))))
        kinds.add((n, m, False, False))  # the dense twins
    jobs = []
    for n, m, sparse, dp in sorted(kinds, key=lambda k: (k[2], k[3], k[0], k[1])):
        for (
            prec
        ) in precisions:  # operand widths as the evaluator sets them (explore.evaluator.design_columns)
            ab = f.act_bits if prec == "int8" else operand_bits(prec)
            wb = f.weight_bits if prec == "int8" else operand_bits(prec)
            for p in pipelines:
                for df in dataflows:
                    for db in buffers if df != "os" else [False]:  # OS streams its weights
                        jobs.append(
                            dict(
                                rows=rows,
                                cols=1,
                                node_nm=node,
                                act_bits=ab,
                                weight_bits=wb,
                                acc_bits=f.acc_bits,
                                n=n,
                                m=m,
                                sparse=sparse,
                                dense_path=dp,
                                dataflow=df,
                                pipeline=p,
                                precision=prec,
                                liberty=f.liberty,
                                liberty_node_nm=f.liberty_node,
                                double_buffer=db,
                            )
                        )
    # the dense jobs repeat across N:M (a dense PE has no N): keep one of each
    seen, out = set(), []
    for j in jobs:
        key = tuple(sorted((k, v) for k, v in j.items() if not (k in ("n",) and not j["sparse"])))
        if key not in seen:
            seen.add(key)
            out.append(j)
    return out


def _quiet_sigint(parent_pid: int) -> None:
    """Pool workers ignore Ctrl-C: the parent handles it (one line, exit 130) and ends the pool,
    so no worker prints a KeyboardInterrupt traceback. They die with the parent (a SIGKILLed
    sweep would otherwise leave them blocked on the pool's pipe forever)."""
    signal.signal(signal.SIGINT, signal.SIG_IGN)
    die_with_parent(parent_pid)


def job_name(kw: dict[str, Any]) -> str:
    kind = "dense" if not kw["sparse"] else ("dense-path" if kw["dense_path"] else f"{kw['n']}:{kw['m']}")
    db = ", double-buffered" if kw.get("double_buffer") else ""
    return f"{kind} {kw['precision']} PE, pipeline {kw['pipeline']}, {kw['dataflow']}{db}"


def _run_job(cfg: SweepConfig, kw: dict[str, Any]) -> str:
    """One job: ppa.model.estimate of the configuration ``kw`` with the trials' activity trace."""
    t = time.time()
    design = DesignPoint(**kw)
    for trace in design_traces(
        cfg.fixed.activity_trace, design, [w.workload for w in make_context(cfg).workloads]
    ):
        estimate(design, trace=trace)  # the trials' traces (their activity disk-cached by the recipe's key)
    return f"{job_name(kw)} ({time.time() - t:.0f} s)"


def _first_line(exc: BaseException) -> str:
    return str(exc).splitlines()[0] if str(exc).strip() else type(exc).__name__


def probe(cfg: SweepConfig, jobs: list[dict[str, Any]]) -> list[dict[str, Any]]:
    """The jobs the caches and the shipped characterisation do not answer (each probed here)."""
    left = []
    with characterisation.probing():
        for j in jobs:
            try:
                _run_job(cfg, j)
            except characterisation.NotCharacterised:
                left.append(j)
    return left


def prewarm(cfg: SweepConfig, workers: int | None = None) -> int:
    """Characterise what :func:`hardware_jobs` needs and the caches do not hold, on ``workers``
    processes (default: the machine's cores); returns the number of jobs run. A job that fails is
    retried once here; one that fails again is logged with its cause (the trials meeting that
    configuration fail with it)."""
    jobs = probe(cfg, hardware_jobs(cfg))
    if not jobs:
        return 0
    t0 = time.time()
    st = characterisation.status()
    why = f" (shipped characterisation not used: {st.why})" if st.entries is None else ""
    workers = max(1, min(workers or os.cpu_count() or 1, len(jobs)))
    _log.info(
        "characterising %d hardware configurations (PE kind x pipeline x dataflow) on %d process%s%s",
        len(jobs),
        workers,
        "es" if workers > 1 else "",
        why,
    )
    failed: list[tuple[dict[str, Any], BaseException]] = []
    if workers > 1:  # the trace models, trained once here: the forked workers share them
        warm_models(
            cfg.fixed.activity_trace,
            [DesignPoint(**j) for j in jobs],
            [w.workload for w in make_context(cfg).workloads],
        )
    if workers == 1:
        for k, j in enumerate(jobs, 1):
            try:
                _log.info("characterised %d/%d: %s", k, len(jobs), _run_job(cfg, j))
            except Exception as exc:  # an error of this configuration: its trials report it
                failed.append((j, exc))
    else:
        failed = _pool(cfg, jobs, workers)
        retried: list[tuple[dict[str, Any], BaseException]] = []
        for j, error in failed:  # once more, alone: a parallel run can fail for want of memory
            _log.info(
                "characterisation of %s failed in a parallel run (%s); retrying it alone",
                job_name(j),
                _first_line(error),
            )
            try:
                _log.info("characterised on retry: %s", _run_job(cfg, j))
            except Exception as exc2:
                retried.append((j, exc2))
        failed = retried
    for j, error in failed:
        _log.error(
            "characterisation of %s failed: %s; trials of this configuration fail with this reason",
            job_name(j),
            _first_line(error),
        )
    _log.info("hardware characterised in %.0f s", time.time() - t0)
    return len(jobs)


def _pool(
    cfg: SweepConfig, jobs: list[dict[str, Any]], workers: int
) -> list[tuple[dict[str, Any], BaseException]]:
    """Run ``jobs`` in a process pool; the (job, exception) of each that failed."""
    pool = ProcessPoolExecutor(max_workers=workers, initializer=_quiet_sigint, initargs=(os.getpid(),))
    failed: list[tuple[dict[str, Any], BaseException]] = []
    try:
        futs = {pool.submit(_run_job, cfg, j): j for j in jobs}
        for k, fut in enumerate(as_completed(futs), 1):
            try:
                _log.info("characterised %d/%d: %s", k, len(jobs), fut.result())
            except Exception as exc:  # retried serially by prewarm
                failed.append((futs[fut], exc))
    except BaseException:  # Ctrl-C (or any failure here): end the workers now, not after their jobs
        for proc in list((getattr(pool, "_processes", None) or {}).values()):
            proc.terminate()
        pool.shutdown(wait=False, cancel_futures=True)
        raise
    pool.shutdown(wait=True)
    return failed
