"""``sparsepe diff A B``: compare two runs and find the first layer where they diverge.

A run is one of:

* a stored **study**: ``STORAGE#STUDY`` (a journal file, ``sqlite:///...`` or ``postgresql://...``,
  then ``#`` and the study name; a storage holding a single study may omit ``#STUDY``). Its chosen
  design (best feasible, else the closest) is re-evaluated with the study's evaluator, per layer;
  every design the two studies both evaluated is compared on its stored metrics too;
* a **best.json** (``sparsepe sweep``'s): the chosen design's metrics, and its per-layer profile from
  the closure artifact beside it (``closure/accelerator_architecture.csv``, written with best.json);
* a ``sparsepe simulate --json`` **file**: one workload on one array, per layer.

Alignment: the chosen designs are compared with each other (and any design both studies hold with
itself); layers are aligned by (workload, layer name), in A's execution order. A metric *moved*
when |B - A| > threshold x |A| (a move from 0 to non-zero always counts).

The first diverging layer is the first in execution order with a moved layer metric. The
mechanism (``MECHANISM_RULES``, printed with the result) is read off that layer, or, when no layer
moved, off the design-level metrics. Runs of different workloads cannot be compared: an
InputError (one line, exit 2).
"""

from __future__ import annotations

import json
import math
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import optuna
import pandas as pd

from explore.report.data import load_study_data
from explore.results import Evaluator, design_key
from explore.storage import open_storage, resolve_storage
from hw.errors import InputError

#: Design-level metrics compared (the issue's list: cycles, stalls, utilisation, fallback, energy,
#: area, fmax, T_j, p99, quality; and the objectives they make up).
DESIGN_METRICS = ("total_cycles", "latency_ms", "stall_fraction", "utilization", "fallback_fraction",
                  "effective_speedup", "energy_per_inference_mj", "power_w", "area_mm2", "fmax_mhz", "tj_c",
                  "power_density_w_mm2", "p99_latency_ms", "p95_latency_ms", "ttft_p99_ms", "tpot_p99_ms",
                  "quality_delta", "perf_per_watt", "effective_tops", "dram_bytes")
#: Per-layer metrics compared, aligned by (workload, layer).
LAYER_METRICS = ("cycles", "stall_cycles", "utilization", "sparse", "dram_bytes")

MECHANISM_RULES = (
    ("D1", "precision", "the first diverging layer changed between sparse and dense fallback; or, with no layer "
                        "moved, quality_delta or fallback_fraction moved"),
    ("D2", "memory", "the first diverging layer's stall cycles moved"),
    ("D3", "compute", "the first diverging layer's compute cycles moved (its stalls did not)"),
    ("D4", "scheduling", "the first diverging layer moved only in utilisation or traffic; or, with no layer moved, "
                         "p95/p99 (queueing, batching) moved"),
    ("D5", "thermal", "no layer moved and T_j or power density moved"),
    ("D6", "compute", "no layer moved and fmax, area, energy or power moved"),
)

#: The issue's default threshold (``--threshold 5%``): a move smaller than this is not reported.
DEFAULT_THRESHOLD = 0.05


def parse_threshold(text: str) -> float:
    """'5%' or '0.05' -> 0.05."""
    t = str(text).strip()
    try:
        v = float(t[:-1]) / 100.0 if t.endswith("%") else float(t)
    except ValueError:
        raise InputError(f"not a threshold: {text!r} (e.g. 5% or 0.05)", where="--threshold") from None
    if not (0 <= v < 10) or math.isnan(v):
        raise InputError(f"must be between 0 and 1000 %, got {text!r}", where="--threshold")
    return v


@dataclass
class Run:
    label: str
    kind: str  # study | best | simulate
    params: dict[str, Any]
    metrics: dict[str, Any]
    layers: list[dict[str, Any]] | None  # in execution order: workload, layer, LAYER_METRICS
    workloads: list[str]
    config: dict[str, Any] = field(default_factory=dict)  # flattened (dotted keys)
    tags: dict[str, Any] = field(default_factory=dict)
    designs: dict[str, dict[str, Any]] = field(default_factory=dict)  # design key -> stored metrics


def _flatten(d: Any, prefix: str = "") -> dict[str, Any]:
    out: dict[str, Any] = {}
    if isinstance(d, dict):
        for k, v in d.items():
            out.update(_flatten(v, f"{prefix}{k}."))
    else:
        out[prefix[:-1]] = d
    return out


def _num(v: Any) -> float | None:
    if isinstance(v, bool):
        return float(v)
    try:
        f = float(v)
    except (TypeError, ValueError):
        return None
    return f


# ---- loading -------------------------------------------------------------------------------------

def load_run(spec: str, label: str) -> Run:
    p = Path(spec)
    if p.suffix == ".json":
        if not p.is_file():
            raise InputError("file not found", where=f"{label} {spec}")
        try:
            obj = json.loads(p.read_text())
        except (json.JSONDecodeError, UnicodeDecodeError) as exc:
            raise InputError(f"not valid JSON: {exc}", where=f"{label} {spec}") from None
        if isinstance(obj, dict) and "layers" in obj and "arch" in obj and "workload" in obj:
            return _from_simulate(obj, f"{label}: {spec}")
        if isinstance(obj, dict) and "n_evaluated" in obj:
            return _from_best(obj, p, f"{label}: {spec}")
        raise InputError("neither a best.json (sparsepe sweep) nor a 'sparsepe simulate --json' file",
                         where=f"{label} {spec}")
    return _from_study(spec, label)


def _from_simulate(obj: dict[str, Any], label: str) -> Run:
    layers = []
    for r in obj["layers"]:
        layers.append({"workload": obj["workload"], "layer": r["name"], "count": r.get("count", 1),
                       **{k: r.get(k) for k in LAYER_METRICS}})
    m = {k: obj.get(k) for k in ("total_cycles", "stall_fraction", "utilization", "fallback_fraction",
                                 "effective_speedup", "dram_bytes") if k in obj}
    arch = obj.get("arch", {})
    return Run(label, "simulate", dict(arch), m, layers, [obj["workload"]], config=_flatten({"arch": arch}))


def _from_best(obj: dict[str, Any], path: Path, label: str) -> Run:
    chosen = obj.get("best") if obj.get("feasible") else obj.get("closest")
    if chosen is None:
        raise InputError("best.json holds no design (no trial finished)", where=f"{label} {path}")
    layers = None
    prof = path.parent / "closure" / "accelerator_architecture.csv"
    if prof.is_file():
        df = pd.read_csv(prof)
        cm = path.parent / "closure" / "compiler_sparsity.csv"
        sparse = None
        if cm.is_file():
            c = pd.read_csv(cm)
            sparse = {(w, n): bool(s) for w, n, s in zip(c["workload"], c["layer"], c["sparse"])}
        ids = list(df["workload_id"]) if "workload_id" in df else list(df["workload"])
        layers = [{"workload": wid, "layer": r.layer, "count": int(r.count), "cycles": int(r.compute_cycles),
                   "stall_cycles": int(r.stall_cycles), "utilization": float(r.utilization),
                   "dram_bytes": float(r.dram_bytes),
                   "sparse": None if sparse is None else sparse.get((r.workload, r.layer))}
                  for wid, r in zip(ids, df.itertuples())]
    wls = list(dict.fromkeys(r["workload"] for r in layers)) if layers else []
    tags = {k: obj.get(k) for k in ("study", "storage", "seed", "sampler", "quality_evidence", "mode",
                                    "config_fingerprint") if k in obj}
    cfg = _flatten(obj["config"]) if isinstance(obj.get("config"), dict) else _flatten(
        {"limits": obj.get("limits", {}), "objectives": obj.get("objectives", {})})
    return Run(label, "best", dict(chosen["params"]), dict(chosen["metrics"]), layers, wls, config=cfg, tags=tags,
               designs={design_key(chosen["params"]): dict(chosen["metrics"])})


def _from_study(spec: str, label: str) -> Run:
    storage, _, name = spec.partition("#")
    if not name:
        st = open_storage(resolve_storage(storage, Path(".")), create=False)
        names = [s.study_name for s in optuna.get_all_study_summaries(storage=st, include_best_trial=False)]
        if len(names) != 1:
            raise InputError(f"the storage holds {len(names)} studies ({', '.join(names) or 'none'}): name one as "
                             "STORAGE#STUDY", where=label)
        name = names[0]
    try:
        data = load_study_data(storage, name)
    except InputError as exc:
        raise InputError(str(exc), where=f"{label} {spec}") from None
    rec = data.best.get("best") if data.best.get("feasible") else data.best.get("closest")
    if rec is None:
        raise InputError("the study has no finished trial", where=f"{label} {spec}")
    ev = Evaluator(data.evaluator, data.cfg)
    det = ev.detail(rec["params"])
    layers = []
    for _, _, net in det.networks:  # workloads by the cycle model's name, with their parameters
        lay = net.layers
        for i, n in enumerate(net.names):
            layers.append({"workload": net.workload, "layer": n, "count": int(net.counts[i]),
                           "cycles": int(lay["cycles"][i]) + 1, "stall_cycles": int(lay["stall_cycles"][i]),
                           "utilization": float(lay["utilization"][i]), "sparse": bool(lay["sparse"][i]),
                           "dram_bytes": float(lay["dram_bytes"][i])})
    m = dict(det.metrics)
    m["total_cycles"] = sum(float(net.totals["total_cycles"]) * w for _, w, net in det.networks)
    m["fallback_fraction"] = max(float(net.totals["fallback_fraction"]) for _, _, net in det.networks)
    cfgj = {k: v for k, v in data.config_json.items()}
    tags = {"config_fingerprint": data.fingerprint, "evaluator": data.evaluator,
            "sweep": data.sweep, "tools": data.user_attrs.get("tools") or {}}
    designs = {design_key(r["params"]): r["metrics"] for r in data.records}
    return Run(f"{label}: {storage}#{name}", "study", dict(rec["params"]), m, layers, [n.workload for _, _, n in det.networks],
               config=_flatten(cfgj), tags=_flatten(tags), designs=designs)


# ---- comparing -----------------------------------------------------------------------------------

def _moved(a: Any, b: Any, thr: float) -> tuple[bool, float | None]:
    """(moved beyond the threshold, relative change B/A - 1 or None)."""
    fa, fb = _num(a), _num(b)
    if fa is None and fb is None:
        return (a != b), None
    if fa is None or fb is None:
        return True, None
    if not (math.isfinite(fa) and math.isfinite(fb)):
        return (fa != fb) and not (math.isnan(fa) and math.isnan(fb)), None
    if fa == fb:
        return False, 0.0
    if fa == 0:
        return True, math.inf if fb > 0 else -math.inf
    rel = fb / fa - 1.0
    return abs(fb - fa) > thr * abs(fa), rel


def _change(scope: str, metric: str, a: Any, b: Any, rel: float | None, **kw: Any) -> dict[str, Any]:
    return {"scope": scope, "metric": metric, "a": a, "b": b,
            "relative_change": None if rel is None or not math.isfinite(rel) else rel, **kw}


def _align(a: Run, b: Run) -> list[tuple[dict[str, Any], dict[str, Any] | None]]:
    """A's layers in execution order with B's layer of the same (workload, name, occurrence)."""
    def keyed(layers):
        seen: dict[tuple[str, str], int] = {}
        out = {}
        for r in layers:
            k = (r["workload"], r["layer"])
            seen[k] = seen.get(k, 0) + 1
            out[(*k, seen[k])] = r
        return out

    kb = keyed(b.layers or [])
    seen: dict[tuple[str, str], int] = {}
    pairs = []
    for r in a.layers or []:
        k = (r["workload"], r["layer"])
        seen[k] = seen.get(k, 0) + 1
        pairs.append((r, kb.get((*k, seen[k]))))
    return pairs


def _check_workloads(a: Run, b: Run) -> None:
    wa, wb = list(a.workloads), list(b.workloads)
    if a.kind == "simulate" or b.kind == "simulate":
        if wa and wb and set(wa) != set(wb):
            raise InputError(f"A and B ran different workloads (A: {', '.join(wa)}; B: {', '.join(wb)}): a diff "
                             "compares two runs of the same workload", where="diff")
    elif wa and wb and not set(wa) & set(wb):
        raise InputError(f"A and B share no workload (A: {', '.join(wa)}; B: {', '.join(wb)}): nothing to align",
                         where="diff")


def diff_runs(a: Run, b: Run, threshold: float = DEFAULT_THRESHOLD) -> dict[str, Any]:
    """The comparison as JSON-able data: first_divergence, mechanism, changes[], config_delta, ..."""
    _check_workloads(a, b)
    changes: list[dict[str, Any]] = []
    one_sided = []
    for k in DESIGN_METRICS:
        if k not in a.metrics and k not in b.metrics:
            continue
        if (k in a.metrics) != (k in b.metrics):  # one kind of run does not report it: not a change
            one_sided.append(k)
            continue
        mv, rel = _moved(a.metrics.get(k), b.metrics.get(k), threshold)
        if mv:
            changes.append(_change("design", k, a.metrics.get(k), b.metrics.get(k), rel))
    first = None
    layer_changes = []
    unmatched = []
    for pos, (ra, rb) in enumerate(_align(a, b)):
        if rb is None:
            unmatched.append(f"{ra['workload']}: {ra['layer']}")
            continue
        moved = {}
        for k in LAYER_METRICS:
            if ra.get(k) is None and rb.get(k) is None:
                continue
            mv, rel = _moved(ra.get(k), rb.get(k), threshold)
            if mv:
                moved[k] = (ra.get(k), rb.get(k), rel)
                layer_changes.append(_change("layer", k, ra.get(k), rb.get(k), rel, workload=ra["workload"],
                                             layer=ra["layer"], position=pos))
        if moved and first is None:
            first = {"workload": ra["workload"], "layer": ra["layer"], "position": pos,
                     "moved": {k: {"a": v[0], "b": v[1], "relative_change": v[2] if v[2] is None or math.isfinite(v[2]) else None}
                               for k, v in moved.items()}}
    changes += layer_changes
    # designs both studies evaluated, on their stored metrics
    shared = [k for k in a.designs if k in b.designs]
    shared_moved = 0
    for k in shared:
        if any(_moved(a.designs[k].get(m), b.designs[k].get(m), threshold)[0] for m in DESIGN_METRICS
               if m in a.designs[k] or m in b.designs[k]):
            shared_moved += 1
    mech, rule = _mechanism(first, changes)
    pdelta = {k: {"a": a.params.get(k), "b": b.params.get(k)} for k in sorted(set(a.params) | set(b.params))
              if a.params.get(k) != b.params.get(k)}
    cdelta = [{"key": k, "a": a.config.get(k), "b": b.config.get(k)} for k in sorted(set(a.config) | set(b.config))
              if a.config.get(k) != b.config.get(k) and not k.startswith(("study.name",))]
    tdelta = [{"key": k, "a": a.tags.get(k), "b": b.tags.get(k)} for k in sorted(set(a.tags) & set(b.tags))
              if a.tags.get(k) != b.tags.get(k)]  # tags both runs carry (the kinds of run record different ones)
    return {
        "a": a.label, "b": b.label, "kinds": [a.kind, b.kind], "threshold": threshold,
        "diverged": bool(changes),
        "first_divergence": first if first is not None else ("no divergence" if not changes else
                                                             "no layer diverged (design-level metrics only)"),
        "mechanism": mech, "mechanism_rule": rule,
        "rules": [f"{rid} -> {m}: {txt}" for rid, m, txt in MECHANISM_RULES],
        "changes": changes, "config_delta": cdelta, "design_delta": pdelta, "tags_delta": tdelta,
        "aligned": {"chosen_designs_same": not pdelta, "layers_a": len(a.layers or []), "layers_b": len(b.layers or []),
                    "layers_unmatched": unmatched, "shared_designs": len(shared), "shared_designs_moved": shared_moved,
                    "metrics_in_one_run_only": one_sided,
                    "layers_available": a.layers is not None and b.layers is not None},
    }


def _mechanism(first: dict[str, Any] | None, changes: list[dict[str, Any]]) -> tuple[str, str | None]:
    if first is not None:
        mv = first["moved"]
        if "sparse" in mv:
            return "precision", "D1"
        if "stall_cycles" in mv:
            return "memory", "D2"
        if "cycles" in mv:
            return "compute", "D3"
        return "scheduling", "D4"
    moved = {c["metric"] for c in changes if c["scope"] == "design"}
    if not moved:
        return "no divergence", None
    if moved & {"quality_delta", "fallback_fraction"}:
        return "precision", "D1"
    if moved & {"p99_latency_ms", "p95_latency_ms", "ttft_p99_ms", "tpot_p99_ms"}:
        return "scheduling", "D4"
    if moved & {"tj_c", "power_density_w_mm2"}:
        return "thermal", "D5"
    return "compute", "D6"


def render_text(res: dict[str, Any]) -> str:
    """The comparison as a plain-text table (``sparsepe diff`` without --json)."""
    L = [f"sparsepe diff: A = {res['a']}; B = {res['b']}; threshold {res['threshold'] * 100:g} %"]
    fd = res["first_divergence"]
    if isinstance(fd, dict):
        mv = ", ".join(f"{k} {_fmt(v['a'])} -> {_fmt(v['b'])}" for k, v in fd["moved"].items())
        L.append(f"first diverging layer: {fd['workload']}: {fd['layer']} (position {fd['position']} in execution "
                 f"order): {mv}")
    else:
        L.append(f"first divergence: {fd}")
    L.append(f"mechanism: {res['mechanism']}" + (f" (rule {res['mechanism_rule']})" if res["mechanism_rule"] else ""))
    al = res["aligned"]
    L.append(f"aligned: chosen designs {'identical' if al['chosen_designs_same'] else 'differ'}; "
             f"{al['layers_a']} / {al['layers_b']} layers"
             + (f"; {len(al['layers_unmatched'])} of A's layers have no match in B" if al["layers_unmatched"] else "")
             + (f"; {al['shared_designs']} designs in both ({al['shared_designs_moved']} moved)"
                if al["shared_designs"] else "")
             + ("" if al["layers_available"] else "; per-layer data missing in a run (no closure profile)"))
    if res["changes"]:
        rows = [["scope", "metric", "A", "B", "change"]]
        for c in res["changes"]:
            scope = c["scope"] if c["scope"] == "design" else f"{c['workload']}: {c['layer']}"
            rc = c["relative_change"]
            rows.append([scope, c["metric"], _fmt(c["a"]), _fmt(c["b"]),
                         "n/a" if rc is None else f"{rc * 100:+.1f} %"])
        L.append("")
        L += _table(rows)
    for title, key in (("config differences", "config_delta"), ("tag differences", "tags_delta")):
        if res[key]:
            L.append("")
            L += _table([["key", "A", "B"]] + [[d["key"], _fmt(d["a"]), _fmt(d["b"])] for d in res[key]], title)
    if res["design_delta"]:
        L.append("")
        L += _table([["axis", "A", "B"]] + [[k, _fmt(v["a"]), _fmt(v["b"])] for k, v in res["design_delta"].items()],
                    "chosen design differences")
    L.append("")
    L.append("mechanism rules (the first that matches): " + "; ".join(res["rules"]))
    return "\n".join(L) + "\n"


def _fmt(v: Any) -> str:
    if isinstance(v, float):
        return f"{v:.6g}"
    return str(v)


def _table(rows: list[list[str]], title: str | None = None) -> list[str]:
    w = [max(len(str(r[i])) for r in rows) for i in range(len(rows[0]))]
    out = [title + ":"] if title else []
    for j, r in enumerate(rows):
        out.append("  ".join(str(c).ljust(w[i]) for i, c in enumerate(r)).rstrip())
        if j == 0:
            out.append("  ".join("-" * x for x in w))
    return out
