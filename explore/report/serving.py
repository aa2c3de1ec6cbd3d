"""The LLM serving section of the report: for a study whose workloads are LLM requests (prefill then
decode, with a serving SLA), the design's time to first token and time per output token at
p50 / p95 / p99, sparse against its dense twin, with and without double-buffered weights.

Every row is the design re-evaluated with the study's evaluator (``Evaluator.detail``): the same
array, SRAM, clock, node, pipeline and memory, with

* its sparsity or the dense twin's (explore.space.dense_twin_sparsity; a dense design is set
  against the first sparse value of the space), and
* single- or double-buffered weights (``double_buffer``). Double buffering needs stationary
  weights: for an OS design the rows are the OS design itself and the same array in WS, single- and
  double-buffered.

Each sparse row states its decode step's speedup over the dense row with the same dataflow and
buffering, next to the memory-bound limit dense weight bytes / (sparse weight bytes + metadata
bytes) (sim.serving.weight_traffic; the KV cache is left out), both of the config's decode workload.
"""

from __future__ import annotations

from typing import Any

from explore.report.document import Section, Table
from explore.report.format import fmt
from explore.results import Detail, point_sparsity
from explore.space import axis_choices, dense_twin_sparsity, parse_sparsity
from sim.serving import weight_traffic

__all__ = ["serving_variants", "section_llm_serving"]

#: the percentiles the table shows, of TTFT and TPOT
QUANTILES = (50, 95, 99)


def _sparse_value(data, point: dict[str, Any]) -> str | None:
    """The design's sparsity when sparse, else the first sparse value of the space (None: none)."""
    if point_sparsity(point)[2]:
        return str(point["sparsity"])
    for s in axis_choices(data.cfg.space, "sparsity") or []:
        if parse_sparsity(s)[2]:
            return str(s)
    return None


def serving_variants(data, point: dict[str, Any]) -> list[tuple[str, dict[str, Any]]]:
    """(label, point) of each row: sparse and dense, each single- and double-buffered (module
    docstring), the sparse row of each pair first."""
    sparse = _sparse_value(data, point)
    sides = [(sparse, "sparse " + sparse)] if sparse is not None else []
    dense = dense_twin_sparsity(sparse) if sparse is not None else str(point["sparsity"])
    sides.append((dense, "dense"))
    df = str(point.get("dataflow", "ws"))
    buffers = [(df, False), (df, True)] if df != "os" else [("os", False), ("ws", False), ("ws", True)]
    out = []
    for flow, db in buffers:
        for value, label in sides:
            p = {**point, "sparsity": value, "dataflow": flow}
            if "double_buffer" in point or db:
                p["double_buffer"] = db
            out.append((f"{label}, {flow.upper()}, {'double' if db else 'single'}-buffered", p))
    return out


def _decode_net(det: Detail):
    """The sim.perf result of the design's decode workload (an LLM ``*-decode``), or None."""
    for name, _, net in det.networks:
        if name.endswith("-decode"):
            return net
    return None


def _llm_stats(det: Detail) -> dict[str, Any] | None:
    for st in (det.serving or {}).values():
        if st.get("ttft_p99_ms") is not None:
            return st
    return None


def section_llm_serving(data, ev, det: Detail | None) -> Section | None:
    """The section (module docstring), or None when the study serves no LLM request."""
    if det is None or _llm_stats(det) is None:
        return None
    s = Section(
        0,
        "llm_serving",
        "LLM serving: TTFT and TPOT, sparse against dense, with and without double-buffered weights",
        "sparsity",
    )
    rows = serving_variants(data, det.point)
    dets = [(label, det if p == det.point else ev.detail(p)) for label, p in rows]
    t = Table(
        "TTFT and TPOT percentiles (ms) of one LLM request",
        [
            "design",
            *[f"TTFT p{q}" for q in QUANTILES],
            *[f"TPOT p{q}" for q in QUANTILES],
            "decode step (ms)",
            "decode speedup vs dense",
            "memory-bound limit",
        ],
        [],
        name="llm_serving",
    )
    by_label = dict(dets)
    for label, d in dets:
        st = _llm_stats(d) or {}
        net = _decode_net(d)
        step = net.latency_s() * 1e3 if net is not None else None
        speed = limit = "-"
        dense_label = "dense, " + label.split(", ", 1)[1]
        if not label.startswith("dense") and dense_label in by_label and net is not None:
            dn = _decode_net(by_label[dense_label])
            if dn is not None:
                speed = f"{dn.latency_s() / net.latency_s():.3f}x"
                sw, meta = weight_traffic(net)
                limit = f"{weight_traffic(dn)[0] / (sw + meta):.3f}x"
        t.rows.append(
            [
                label,
                *[fmt(st.get(f"ttft_p{q}_ms")) for q in QUANTILES],
                *[fmt(st.get(f"tpot_p{q}_ms")) for q in QUANTILES],
                fmt(step),
                speed,
                limit,
            ]
        )
    s.tables.append(t)
    cfg = data.cfg
    srv = cfg.serving
    s.paras.append(
        f"One request is its prefill and {srv.output_tokens - 1} decode steps, arriving at "
        f"{fmt(cfg.limits.request_rate_hz)} requests/s and batched up to {srv.max_batch} (sim.serving); TTFT and "
        f"TPOT percentiles are the means over {srv.seeds} arrival seeds, the first {srv.warmup_fraction:.0%} of each "
        "run discarded. Each row is the design re-evaluated with its sparsity or the dense twin's and with single- "
        "or double-buffered weights (a shadow weight set per PE: a weight-stationary fold costs max(weight load, "
        "stream), sim.perf); everything else is the design's. The decode speedup is the config's decode step on "
        "the sparse design against the dense design of the same dataflow and buffering; its memory-bound limit is "
        "dense weight bytes / (sparse weight bytes + metadata bytes), the KV cache left out."
    )
    if str(det.point.get("dataflow")) == "os":
        s.paras.append(
            "The design is output-stationary: it streams its weights, so it has nothing to double-buffer; "
            "the WS rows are the same array weight-stationary."
        )
    return s
