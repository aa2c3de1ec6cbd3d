"""The evaluator: one design point -> every metric, joining sim/ (cycles, stalls, traffic, serving
latency, quality) and ppa/ (area, fmax / voltage, power, junction temperature).

Interface (used by explore.study and explore.grid, through explore.results.Evaluator):

* :func:`make_context(cfg)` loads the workloads once and holds the caches;
* :func:`evaluate(point, ctx) -> dict` for one point (a dict with one value per axis);
* :func:`evaluate_detail(point, ctx) -> dict` for one point with what its metrics were computed
  from (the ppa.model estimate and the sim.perf per-layer results of each workload, the quality
  evidence), for reports;
* :func:`evaluate_batch(columns, ctx) -> dict[str, ndarray]` for many points (grid mode). The cycle
  model runs vectorised over all points (``sim.perf.simulate_grid``); the PPA model runs per point
  (its synthesis and switching activity are cached per PE configuration, so each call is cheap).
  :func:`evaluate` is ``evaluate_batch`` on one point, so search and grid agree exactly.

No hidden defaults: every input comes from the config ([space], [fixed], [[workload]], [limits],
[serving]) or is one of the documented model constants below / in sim/ and ppa/.

Per workload w (weight a_w from the config), from sim.perf:
  cycles_w (incl. memory stalls), dense-equivalent MACs, SRAM and DRAM bytes, stall fraction.
ppa.model.estimate(design, WorkloadActivity(cycles_w, MACs_w, ...)) gives power_w on w, T_j, power
density, area, fmax, the voltage that meets the clock.

Aggregates over the workload mix:
  perf_per_watt  = sum a_w ops_w / sum a_w E_w / 1e12   (effective TOPS/W: dense-equivalent
                   operations, 2 per MAC, per joule of energy incl. DRAM; the primary objective)
  effective_tops = sum a_w ops_w / sum a_w t_w / 1e12
  latency_ms     = sum a_w t_w / sum a_w                (weighted mean single-inference latency)
  power_w        = sum a_w E_w / sum a_w t_w            (average power over the mix)
  stall_fraction, tj_c, power_density_w_mm2, p99_latency_ms: the worst workload (a limit holds
                   for every workload of the mix)
"""

from __future__ import annotations

import math
from dataclasses import dataclass, field
from typing import Any, cast

import numpy as np

from explore.activity_traces import workload_trace
from explore.config import SweepConfig, quality_evidence_kind
from explore.costing import RUNAWAY_TJ_C, aggregate, ppa_columns, ppa_only_reasons, recost_columns
from explore.space import axis_choices, has_dense_path, parse_sparsity
from hw.errors import InputError
from hw.precision import operand_bits
from ppa import thermal
from ppa.design import DesignPoint, WorkloadActivity
from ppa.dram import dram
from ppa.model import estimate
from ppa.vector_cost import workload_vector_ops
from sim.perf import ArrayConfig, simulate, simulate_grid
from sim.quality.evidence.evidence import (
    digits_evidence,
    guardrail_verdict,
    mix_evidence,
    reference_families,
    transformer_evidence,
)
from sim.quality.team.user_eval import model_evidence
from sim.serving import serve_llm, serve_seeds
from sim.workloads import get_workload, list_workloads

__all__ = [
    "EvalContext",
    "make_context",
    "evaluate",
    "evaluate_batch",
    "evaluate_detail",
    "evaluate_under",
    "design_columns",
    "point_columns",
    "serving_stats",
    "ppa_only_reasons",
    "dram_gbps_of",
    "llm_request_workloads",
    "RUNAWAY_TJ_C",
]

#: Seed of the quality reference experiment (sim.quality): one fixed model constant.
QUALITY_SEED = 0


@dataclass
class _Wl:
    name: str
    weight: float
    params: dict[str, Any]
    workload: Any  # sim.workloads.Workload
    serving_tables: dict[int, Any] = field(default_factory=dict)  # batch -> Workload


@dataclass
class EvalContext:
    """Everything the evaluator needs besides the point: the config, loaded workloads, caches."""

    cfg: SweepConfig
    workloads: list[_Wl]
    quality: dict[tuple[int, int], float] = field(default_factory=dict)  # (n, m) -> quality_delta
    quality_results: dict[tuple[int, int], Any] = field(
        default_factory=dict
    )  # (n, m) -> sim.quality.ReferenceResult
    quality_evidence: dict[tuple[int, int], dict] = field(
        default_factory=dict
    )  # (n, m) -> sim.quality.evidence.evidence dict


_CONTEXTS: dict[str, EvalContext] = {}


def make_context(cfg: SweepConfig) -> EvalContext:
    """Load the workloads (and, with a serving SLA, the batched variants; with a quality limit,
    the quality delta of each sparsity mode of the space). One context per config content and
    process: the prewarm, the trials and the report of one sweep share it (and its traces)."""
    key = cfg.model_dump_json()
    if key in _CONTEXTS:
        return _CONTEXTS[key]
    wls = []
    for i, w in enumerate(cfg.workload):
        try:
            wl = w.build()
        except InputError as exc:
            raise InputError(str(exc), where=f"{cfg.source}: workload[{i}]") from None
        name = cast(str, w.name)  # set by the workload's validator (from its source when not given)
        item = _Wl(name, float(w.weight), dict(w.params), wl)
        if cfg.limits.p99_latency_ms is not None:
            llm = llm_request_workloads(name, w.params, cfg.serving.output_tokens)
            for b in range(1, cfg.serving.max_batch + 1):
                try:
                    if llm is None:
                        item.serving_tables[b] = w.build(batch=b)
                    else:  # an LLM request: its prefill and one decode step at the mean context
                        item.serving_tables[b] = tuple(get_workload(n, **{**p, "batch": b}) for n, p in llm)
                except InputError as exc:
                    raise InputError(
                        f"serving needs the workload at batch {b}: {exc}",
                        where=f"{cfg.source}: workload[{i}]",
                    ) from None
        wls.append(item)
    ctx = EvalContext(cfg, wls)
    if cfg.limits.max_quality_delta is not None:
        for s in axis_choices(cfg.space, "sparsity") or []:
            n, m, sparse = parse_sparsity(s)
            if sparse:
                _quality_evidence(ctx, n, m)
    _CONTEXTS[key] = ctx
    return ctx


def _quality_evidence(ctx: EvalContext, n: int, m: int) -> dict[str, Any]:
    """The quality evidence for N:M (sim.quality.evidence.evidence), computed once per pattern and kept in
    the context; sets ``ctx.quality[(n, m)]`` (the point loss, the ``quality_delta`` metric).

    * [quality] weights + eval: the team's model scored by the team's eval (``"model"``): dense vs
      one-shot / fine-tuned N:M (sim.quality.team.user_eval.model_evidence), pruned by [quality] method
      with [quality] calibration (relative to the config file), each call of the team's code
      limited to [quality] hook_timeout. A failing eval is an InputError here, at context
      creation, before any trial runs;
    * otherwise the reference of each workload family in the mix (``"proxy"``), told by the
      workload's structure (sim.quality.evidence.evidence.reference_family: attention layers -> the
      char-level transformer, else the digits MLP; ``workloads`` gives each workload's why), each over
      sim.quality.evidence.evidence.REFERENCE_SEEDS seeds, equal latency on sim.perf (the 16x16 WS
      reference array with N:M sparse PEs against the same array with dense PEs, as
      ``sparsepe quality``). With several families (sim.quality.evidence.evidence.mix_evidence) the limit
      is tested on each family's own metric, never on one family's delta against another's; the
      per-family evidence and verdicts are in ``families``, the binding family's at the top.
    """
    if (n, m) in ctx.quality_evidence:
        return ctx.quality_evidence[(n, m)]
    cfg = ctx.cfg
    if quality_evidence_kind(cfg) == "model":
        q = cfg.quality
        # "model" evidence means a [quality] table with weights and eval (they go together)
        assert q is not None and q.weights is not None and q.eval is not None
        try:
            ev = model_evidence(
                q.path(q.weights, cfg.source),
                q.eval,
                finetuned_path=None if q.finetuned is None else q.path(q.finetuned, cfg.source),
                n=n,
                m=m,
                seed=QUALITY_SEED,
                base_dir=q.base_dir(cfg.source),
                metric_name=q.metric,
                method=q.method,
                calibration=q.calibration,
                hook_timeout=q.timeout(),
                prune_lm_head=q.prune_lm_head,
            )
        except InputError as exc:
            raise InputError(str(exc), where=f"{cfg.source}: [quality]") from None
    else:
        found = []
        families = reference_families((w.name, w.workload) for w in ctx.workloads)
        for fam in families:
            if fam == "transformer":
                found.append(transformer_evidence(n, m, seed=QUALITY_SEED)[0])
            else:
                e, results = digits_evidence(n, m, seed=QUALITY_SEED)
                ctx.quality_results.setdefault((n, m), results[0])
                found.append(e)
        found = [{**e, "workloads": families[fam]} for fam, e in zip(families, found, strict=True)]
        limit = cfg.limits.max_quality_delta
        assert limit is not None  # quality evidence is gathered only under a quality limit
        ev = mix_evidence(found, limit)
    ctx.quality_evidence[(n, m)] = ev
    ctx.quality[(n, m)] = float(ev["quality_delta"])
    return ev


def dram_gbps_of(cfg: SweepConfig, dram_type: str) -> float:
    """Bandwidth of a named DRAM: fixed.dram_units[type] x the type's per-unit GB/s (ppa.dram)."""
    return cfg.fixed.dram_units[dram_type] * dram(dram_type).gb_per_s


def design_columns(cfg: SweepConfig, cols: dict[str, np.ndarray]) -> dict[str, np.ndarray]:
    """Point columns -> the physical columns both models take (n, m, sparse, dram_gbps, ...)."""
    P = len(next(iter(cols.values())))
    out = {k: np.asarray(v) for k, v in cols.items()}
    nms = [parse_sparsity(s) for s in out["sparsity"]]
    out["dense_path"] = np.array([has_dense_path(s) for s in out["sparsity"]], dtype=bool)
    out["n"] = np.array([x[0] for x in nms], dtype=np.int64)
    out["m"] = np.array([x[1] for x in nms], dtype=np.int64)
    out["sparse"] = np.array([x[2] for x in nms], dtype=bool)
    if "dram" in out:
        out["dram_gbps"] = np.array([dram_gbps_of(cfg, str(t)) for t in out["dram"]], dtype=float)
    else:
        out["dram"] = np.array([cfg.fixed.dram_type] * P, dtype=object)
    # precision (an axis, or the fixed integer widths): operand widths per point
    prec = [str(x) for x in out["precision"]] if "precision" in out else ["int8"] * P
    out["precision"] = np.array(prec, dtype=object)
    out["act_bits"] = np.array(
        [cfg.fixed.act_bits if q == "int8" else operand_bits(q) for q in prec], dtype=np.int64
    )
    out["weight_bits"] = np.array(
        [cfg.fixed.weight_bits if q == "int8" else operand_bits(q) for q in prec], dtype=np.int64
    )
    # double-buffered weights (the axis; false without it), on the stationary dataflows only
    db = out["double_buffer"].astype(bool) if "double_buffer" in out else np.zeros(P, dtype=bool)
    out["double_buffer"] = db & np.array([str(x) != "os" for x in out["dataflow"]], dtype=bool)
    for k in ("rows", "cols", "node_nm", "pipeline"):
        out[k] = out[k].astype(np.int64)
    if "vector_lanes" in out:
        out["vector_lanes"] = out["vector_lanes"].astype(np.int64)
    for k in ("sram_kb", "clock_mhz", "dram_gbps"):
        out[k] = out[k].astype(float)
    return out


def _sim_totals(wl_workload, d: dict[str, np.ndarray], cfg: SweepConfig) -> dict[str, np.ndarray]:
    """sim.perf.simulate_grid's per-point totals of one workload on the design columns ``d``."""
    params: dict[str, np.ndarray | list[Any]] = {
        "rows": d["rows"],
        "cols": d["cols"],
        "sram_kb": d["sram_kb"],
        "clock_mhz": d["clock_mhz"],
        "dram_gbps": d["dram_gbps"],
        "dataflow": np.asarray([str(x) for x in d["dataflow"]]),
        "n": d["n"],
        "m": d["m"],
        "sparse": d["sparse"],
        "dense_path": d["dense_path"],
        "act_bits": d.get("act_bits", np.full(len(d["rows"]), cfg.fixed.act_bits)),
        "weight_bits": d.get("weight_bits", np.full(len(d["rows"]), cfg.fixed.weight_bits)),
        "acc_bits": np.full(len(d["rows"]), cfg.fixed.acc_bits),
        "pipeline": d["pipeline"],
        "sram_banks": np.full(len(d["rows"]), cfg.fixed.sram_banks),
        "double_buffer": d["double_buffer"],
    }
    if "vector_lanes" in d:
        params["vector_lanes"] = d["vector_lanes"]
    r = simulate_grid(wl_workload, params)
    return {k: np.asarray(v) for k, v in r.items() if np.ndim(v) == 1}


def _ppa(ctx: EvalContext, d: dict[str, np.ndarray], i: int, sim: dict[str, np.ndarray], workload=None):
    """ppa.model.estimate of point ``i`` of the design columns ``d`` on one workload's activity ``sim``."""
    cfg = ctx.cfg
    f = cfg.fixed
    dram_type = str(d["dram"][i])
    if cfg.space.dram is not None:
        units = int(f.dram_units.get(dram_type, 1))
    else:  # a bandwidth axis: as many units of fixed.dram_type as that bandwidth needs
        units = max(1, math.ceil(float(d["dram_gbps"][i]) / dram(dram_type).gb_per_s - 1e-9))
    design = DesignPoint(
        rows=int(d["rows"][i]),
        cols=int(d["cols"][i]),
        sram_kb=float(d["sram_kb"][i]),
        clock_mhz=float(d["clock_mhz"][i]),
        node_nm=int(d["node_nm"][i]),
        act_bits=int(d["act_bits"][i]) if "act_bits" in d else f.act_bits,
        weight_bits=int(d["weight_bits"][i]) if "weight_bits" in d else f.weight_bits,
        acc_bits=f.acc_bits,
        n=int(d["n"][i]),
        m=int(d["m"][i]),
        precision=str(d["precision"][i]) if "precision" in d else "int8",
        sparse=bool(d["sparse"][i]),
        dense_path=bool(d["dense_path"][i]),
        dataflow=str(d["dataflow"][i]),
        pipeline=int(d["pipeline"][i]),
        dram=dram_type,
        dram_units=units,
        cooling=f.cooling,
        theta_ja=f.theta_ja_c_per_w,
        t_ambient_c=f.ambient_c,
        sram_banks=f.sram_banks,
        liberty=f.liberty,
        liberty_node_nm=f.liberty_node,
        clock_gating=f.clock_gating,
        vt=f.vt,
        sram_buffers_kb=(
            float(sim["sram_ifmap_kb"][i]),
            float(sim["sram_filter_kb"][i]),
            float(sim["sram_ofmap_kb"][i]),
        ),
        tj_max_c=cfg.limits.max_tj_c if cfg.limits.max_tj_c is not None else thermal.TJ_MAX_C_DEFAULT,
        vector_lanes=int(d["vector_lanes"][i]) if "vector_lanes" in d else None,
        double_buffer=bool(d["double_buffer"][i]),
    )
    sram_rd = (
        sim["sram_ifmap_read_bytes"][i]
        + sim["sram_filter_read_bytes"][i]
        + sim["sram_metadata_read_bytes"][i]
        + sim["sram_ofmap_read_bytes"][i]
    )
    sram_wr = sim["sram_ofmap_write_bytes"][i] + sim["sram_fill_bytes"][i]
    buffers = {  # (read, write) bytes per buffer: DRAM fills are the writes of ifmap and filter
        "ifmap": (float(sim["sram_ifmap_read_bytes"][i]), float(sim["dram_ifmap_bytes"][i])),
        "filter": (
            float(sim["sram_filter_read_bytes"][i] + sim["sram_metadata_read_bytes"][i]),
            float(sim["dram_weight_bytes"][i] + sim["metadata_bytes"][i]),
        ),
        "ofmap": (float(sim["sram_ofmap_read_bytes"][i]), float(sim["sram_ofmap_write_bytes"][i])),
    }
    # the vector unit reads its operands from and writes its results to the ofmap buffer (sim.vector);
    # its DRAM traffic (embedding rows, KV-cache appends, tensors that do not fit) joins the array's
    v_sram = float(sim["vector_sram_bytes"][i]) if "vector_sram_bytes" in sim else 0.0
    v_dram = float(sim["vector_dram_bytes"][i]) if "vector_dram_bytes" in sim else 0.0
    rd, wr = buffers["ofmap"]
    buffers["ofmap"] = (rd + v_sram / 2, wr + v_sram / 2)
    act = WorkloadActivity(
        sram_buffer_bytes=buffers,
        weight_tiles=float(sim["folds"][i]),
        cycles=float(sim["total_cycles"][i]),
        effective_macs=float(sim["dense_macs"][i]),
        performed_multiplies=float(sim["performed_mults"][i]),
        pe_busy_fraction=float(min(1.0, max(0.0, sim["utilization"][i]))),
        sram_read_bytes=float(sram_rd + v_sram / 2),
        sram_write_bytes=float(sram_wr + v_sram / 2),
        dram_bytes=float(sim["dram_bytes"][i]) + v_dram,
        vector_ops=workload_vector_ops(workload) if workload is not None else None,
    )
    # the PE's switching activity: the workload family's real data (explore.activity_traces), the
    # N:M layers and the layers run dense mixed by the workload's own MACs on each
    fb = float(sim["fallback_macs"][i]) if "fallback_macs" in sim else 0.0
    trace = (
        workload_trace(cfg.fixed.activity_trace, design, workload, max(0.0, act.effective_macs - fb), fb)
        if workload is not None
        else None
    )
    return estimate(design, act, trace=trace)


def llm_request_workloads(
    name: str, params: dict[str, Any], output_tokens: int
) -> tuple[tuple[str, dict[str, Any]], tuple[str, dict[str, Any]]] | None:
    """For an LLM workload of the library (``<model>-prefill`` / ``<model>-decode``): the two
    workloads one request runs, (prefill at ``seq``, one decode step); else None.

    The decode step is timed at the mean context of the request's decode steps,
    seq + output_tokens / 2 [D]: the attention GEMMs are linear in the context (the weight GEMMs
    do not depend on it), so the mean context gives the mean step's work."""
    for phase in ("-prefill", "-decode"):
        if name.endswith(phase):
            model = name[: -len(phase)]
            if f"{model}-prefill" in list_workloads() and f"{model}-decode" in list_workloads():
                p = {k: v for k, v in params.items() if k not in ("batch", "context")}
                seq = int(p.get("seq", 2048))
                return (
                    (f"{model}-prefill", p),
                    (f"{model}-decode", {**p, "context": seq + max(1, output_tokens // 2)}),
                )
    return None


#: Serving metrics of each point: p99 (mean over arrival seeds), its 95 % interval, p95; for LLM
#: workloads also TTFT and TPOT p50/p95/p99 (NaN for the other workloads).
LLM_SERVING_METRICS = tuple(f"{k}_p{q}_ms" for k in ("ttft", "tpot") for q in (50, 95, 99))
SERVING_METRICS = (
    "p99_latency_ms",
    "p99_latency_lo_ms",
    "p99_latency_hi_ms",
    "p95_latency_ms",
    *LLM_SERVING_METRICS,
)


def serving_stats(ctx: EvalContext, wl: _Wl, d: dict[str, np.ndarray], i: int | None = None) -> list[Any]:
    """sim.serving statistics (ServingStats) of each point (or of point ``i``) serving ``wl`` at
    limits.request_rate_hz: [serving] seeds arrival seeds, the first warmup_fraction of each run
    discarded; an LLM workload's request is its prefill plus output_tokens - 1 decode steps."""
    cfg = ctx.cfg
    s = cfg.serving
    P = len(d["rows"])
    idx = range(P) if i is None else [i]
    llm = isinstance(wl.serving_tables[1], tuple)
    tables = np.empty((2 if llm else 1, P, s.max_batch))
    for b in range(1, s.max_batch + 1):
        wls = wl.serving_tables[b] if llm else (wl.serving_tables[b],)
        for k, w in enumerate(wls):
            t = _sim_totals(w, d, cfg)
            tables[k, :, b - 1] = t["total_cycles"] / (d["clock_mhz"] * 1e6)
    warm = int(s.warmup_fraction * s.n_requests)
    rate = cfg.limits.request_rate_hz
    assert rate is not None  # set with p99_latency_ms, which asks for the serving statistics
    out = []
    for j in idx:
        kw: dict[str, Any] = dict(
            n_requests=s.n_requests,
            max_batch=s.max_batch,
            timeout_ms=s.timeout_ms,
            seed=s.seed,
            n_seeds=s.seeds,
            warmup=warm,
            cold_start_ms=s.cold_start_ms,
        )
        if llm:
            out.append(serve_llm(tables[0, j], tables[1, j], rate, s.output_tokens, **kw))
        else:
            out.append(serve_seeds(tables[0, j], rate, **kw))
    return out


def _serving_metrics(ctx: EvalContext, d: dict[str, np.ndarray]) -> dict[str, np.ndarray]:
    """SERVING_METRICS of each point: those of the workload with the worst p99 (a limit holds for
    every workload of the mix)."""
    P = len(d["rows"])
    per_wl = [serving_stats(ctx, w, d) for w in ctx.workloads]
    out = {k: np.full(P, np.nan) for k in SERVING_METRICS}
    for i in range(P):
        st = max((stats[i] for stats in per_wl), key=lambda x: x.p99_ms)
        out["p99_latency_ms"][i] = st.p99_ms
        out["p99_latency_lo_ms"][i], out["p99_latency_hi_ms"][i] = st.p99_interval_ms
        out["p95_latency_ms"][i] = st.p95_ms
        if st.ttft_p99_ms is not None:
            for k in LLM_SERVING_METRICS:
                out[k][i] = getattr(st, k)
    if not any(isinstance(w.serving_tables[1], tuple) for w in ctx.workloads):  # no LLM workload
        for k in LLM_SERVING_METRICS:
            del out[k]
    return out


def evaluate_batch(columns: dict[str, np.ndarray], ctx: EvalContext) -> dict[str, np.ndarray]:
    """Every metric for P points (columns: one array of length P per axis). The dense twins'
    comparison metrics (explore.twins) are the study's, computed once after its trials."""
    return _evaluate_columns(columns, ctx)


def _evaluate_columns(
    columns: dict[str, np.ndarray],
    ctx: EvalContext,
    ppa_out: list[dict[str, Any]] | None = None,
    sims_out: list[dict[str, np.ndarray]] | None = None,
) -> dict[str, np.ndarray]:
    """evaluate_batch; with ``ppa_out`` (a list), also appends per point {workload name:
    ppa.model.PPAResult} of the estimates the metrics were computed from; with ``sims_out``, each
    workload's sim.perf totals."""
    cfg = ctx.cfg
    d = design_columns(cfg, columns)
    P = len(d["rows"])
    sims = [_sim_totals(w.workload, d, cfg) for w in ctx.workloads]
    if sims_out is not None:
        sims_out.extend(sims)
    weights = np.array([w.weight for w in ctx.workloads])

    per_wl = []
    by_point: list[dict[str, Any]] = [{} for _ in range(P)]
    for w, sim in zip(ctx.workloads, sims, strict=True):
        results = [_ppa(ctx, d, i, sim, w.workload) for i in range(P)]
        for i, r in enumerate(results):
            by_point[i][w.name] = r
        per_wl.append(ppa_columns(results))
    if ppa_out is not None:
        ppa_out.extend(by_point)
    out = aggregate(per_wl, sims, weights, d["clock_mhz"].astype(float))
    # Aggregated like effective_speedup (time-weighted): the mix's dense time over the mix's time
    # at each workload's ideal bound.
    dense_t = [s["dense_total_cycles"] for s in sims]
    ideal = sum(a * t for a, t in zip(weights, dense_t, strict=True)) / sum(
        a * t / s["ideal_speedup"] for a, t, s in zip(weights, dense_t, sims, strict=True)
    )
    out["ideal_speedup"] = np.asarray(ideal, float)
    if cfg.limits.p99_latency_ms is not None:
        out.update(_serving_metrics(ctx, d))
    kind = quality_evidence_kind(cfg)
    if kind != "none":
        evs = [
            _quality_evidence(ctx, int(n), int(m)) if sp else None
            for n, m, sp in zip(d["n"], d["m"], d["sparse"], strict=True)
        ]
        out["quality_delta"] = np.array([e["quality_delta"] if e else 0.0 for e in evs])
        # the pessimistic end of the 95 % interval: what the max_quality_delta constraint tests
        out["quality_delta_ci"] = np.array([e["quality_delta_ci"] if e else 0.0 for e in evs])
    out["quality_evidence"] = np.array([kind] * P, dtype=object)
    # the operating point the constraints need, echoed as metrics
    out["clock_mhz"] = d["clock_mhz"].astype(float)
    out["dram_gbps"] = d["dram_gbps"].astype(float)
    return out


def _scalar(v: Any) -> Any:
    """One metric of one point: a float, or a label (e.g. quality_evidence)."""
    return v if isinstance(v, str) else float(v)


def point_columns(point: dict[str, Any]) -> dict[str, np.ndarray]:
    """One design point as columns of length 1 (the form evaluate_batch and design_columns take)."""
    return {k: np.array([v], dtype=object if isinstance(v, str) else None) for k, v in point.items()}


def evaluate(point: dict[str, Any], ctx: EvalContext) -> dict[str, float]:
    """Every metric of one design point (see the module docstring)."""
    res = evaluate_batch(point_columns(point), ctx)
    return {k: _scalar(v[0]) for k, v in res.items()}


def evaluate_under(
    points: list[dict[str, Any]], ctx: EvalContext, samples: dict[str, np.ndarray], n: int
) -> list[dict[str, np.ndarray]]:
    """Each design point's metrics under ``n`` samples of the assumptions (ppa.assumptions name ->
    array of n values; a name left out keeps the model's value): one dict of arrays of n per point.
    What rests on ppa (area, power and its parts, perf_per_watt, energy, T_j, power density, fmax,
    voltage, ppa_infeasible) is re-costed per sample from the point's own estimates
    (explore.costing.recost_columns, no synthesis or STA) and combined over the workload mix as
    :func:`evaluate` combines it; cycles, latency, stalls, quality and p99 do not depend on these
    assumptions and keep their evaluated values."""
    cols = {
        a: np.array([p[a] for p in points], dtype=object if isinstance(points[0][a], str) else None)
        for a in points[0]
    }
    ppas: list[dict[str, Any]] = []
    sims: list[dict[str, np.ndarray]] = []
    nominal = _evaluate_columns(cols, ctx, ppas, sims)
    weights = np.array([w.weight for w in ctx.workloads])
    used = ("total_cycles", "dense_macs", "dense_total_cycles", "stall_fraction", "utilization", "dram_bytes")
    out = []
    for i in range(len(points)):
        per_wl = [recost_columns(ppas[i][w.name], samples, n) for w in ctx.workloads]
        sim_i = [{k: np.full(n, float(s[k][i])) for k in used} for s in sims]
        m = {k: np.full(n, float(v[i])) for k, v in nominal.items() if v.dtype != object}
        m.update(aggregate(per_wl, sim_i, weights, np.full(n, float(nominal["clock_mhz"][i]))))
        out.append(m)
    return out


def evaluate_detail(point: dict[str, Any], ctx: EvalContext) -> dict[str, Any]:
    """One design point with what its metrics were computed from, for reports:

    * ``metrics``: exactly what :func:`evaluate` returns (the same computation);
    * ``ppa``: {workload name: ppa.model.PPAResult}, the estimates behind the metrics;
    * ``networks``: [(workload name, weight, sim.perf.NetworkResult)], the per-layer cycle model
      of each workload on this design (sim.perf.simulate; its totals are simulate_grid's);
    * ``workloads``: {workload name: sim.workloads.Workload};
    * ``quality``: None when the config sets no max_quality_delta; else, for a sparse design,
      the quality evidence of its N:M (sim.quality.evidence.evidence: ``evidence`` "proxy"/"model",
      ``quality_delta``, ``quality_delta_interval`` (95 %), ``quality_delta_ci`` (its pessimistic
      end), the pruning schedule and fine-tune recipe, both models' sizes and latencies) and the
      guardrail verdict on the pessimistic end (``guardrail_ok``, ``guardrail``,
      ``max_quality_delta``); for a dense design ``{"dense": True, "quality_delta": 0.0,
      "quality_delta_ci": 0.0, "evidence": kind}``;
    * ``serving``: None when the config sets no p99 SLA; else {workload name: sim.serving
      statistics of the design serving it (:func:`serving_stats`, ``ServingStats.as_dict``)}.
    """
    cfg = ctx.cfg
    cols = point_columns(point)
    ppas: list[dict[str, Any]] = []
    res = _evaluate_columns(cols, ctx, ppas)
    metrics = {k: _scalar(v[0]) for k, v in res.items()}
    d = design_columns(cfg, cols)
    n, m, sparse = int(d["n"][0]), int(d["m"][0]), bool(d["sparse"][0])
    arch = ArrayConfig(
        rows=int(d["rows"][0]),
        cols=int(d["cols"][0]),
        sram_kb=float(d["sram_kb"][0]),
        clock_mhz=float(d["clock_mhz"][0]),
        dram_gbps=float(d["dram_gbps"][0]),
        dataflow=str(d["dataflow"][0]),
        n=n,
        m=m,
        sparse=sparse,
        dense_path=bool(d["dense_path"][0]),
        act_bits=int(d["act_bits"][0]),
        weight_bits=int(d["weight_bits"][0]),
        acc_bits=cfg.fixed.acc_bits,
        pipeline=int(d["pipeline"][0]),
        sram_banks=cfg.fixed.sram_banks,
        vector_lanes=int(d["vector_lanes"][0]) if "vector_lanes" in d else None,
        double_buffer=bool(d["double_buffer"][0]),
    )
    networks = [(w.name, w.weight, simulate(w.workload, arch)) for w in ctx.workloads]
    quality = None
    limit = cfg.limits.max_quality_delta
    if limit is not None:
        if sparse:
            ev = _quality_evidence(ctx, n, m)
            ok, msg = guardrail_verdict(ev, limit)
            quality = {**ev, "guardrail_ok": ok, "guardrail": msg, "max_quality_delta": limit}
        else:
            quality = {
                "dense": True,
                "quality_delta": metrics["quality_delta"],
                "quality_delta_ci": metrics["quality_delta_ci"],
                "evidence": metrics["quality_evidence"],
            }
    serving = None
    if cfg.limits.p99_latency_ms is not None:
        serving = {}
        for w in ctx.workloads:
            st = serving_stats(ctx, w, d)[0]
            serving[w.name] = {
                k: (float(v) if isinstance(v, (float, np.floating)) else v) for k, v in st.as_dict().items()
            }
    return {
        "metrics": metrics,
        "ppa": ppas[0],
        "networks": networks,
        "workloads": {w.name: w.workload for w in ctx.workloads},
        "quality": quality,
        "serving": serving,
    }
