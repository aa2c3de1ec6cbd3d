"""``sparsepe diff A B``: compare two runs and find the first layer where they diverge.

A run is one of:

* a stored **study**: ``STORAGE#STUDY`` (a journal file, ``sqlite:///...`` or ``postgresql://...``,
  then ``#`` and the study name; a storage holding a single study may omit ``#STUDY``). Its chosen
  design (best feasible, else the closest) is re-evaluated with the study's evaluator, per layer;
  every design the two studies both evaluated is compared on its stored metrics too (read by
  :mod:`explore.diff_study`, which only a study run loads);
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

A JSON input is validated against a schema (pydantic: :class:`SimulateFile`, :class:`BestFile`)
before it is read: a field of the wrong type, a number no float can hold (an integer of 400 digits)
or a layer that is not an object is one line naming the file and the field. NaN and Infinity in an
input are numbers (Python writes them); ``--json`` writes them as null and states why (hw.host.json_text).
A storage URL is printed with its password masked.
"""

from __future__ import annotations

import math
import sys
from dataclasses import dataclass, field
from pathlib import Path
from typing import Annotated, Any

from pydantic import BaseModel, BeforeValidator, ConfigDict, ValidationError

from explore.metrics import DIFF_METRICS
from explore.space import design_key
from hw.errors import InputError
from hw.host import json_text, mask_passwords, printable
from sim.inputs import MAX_INPUT_FILE_BYTES, read_json

#: Per-layer metrics compared, aligned by (workload, layer).
LAYER_METRICS = ("cycles", "stall_cycles", "utilization", "sparse", "dram_bytes")

MECHANISM_RULES = (
    (
        "D1",
        "precision",
        "the first diverging layer changed between sparse and dense fallback; or, with no layer "
        "moved, quality_delta or fallback_fraction moved",
    ),
    ("D2", "memory", "the first diverging layer's stall cycles moved"),
    ("D3", "compute", "the first diverging layer's compute cycles moved (its stalls did not)"),
    (
        "D4",
        "scheduling",
        "the first diverging layer moved only in utilisation or traffic; or, with no layer moved, "
        "p95/p99 (queueing, batching) moved",
    ),
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


def flatten(d: Any, prefix: str = "") -> dict[str, Any]:
    """Nested dicts as one dict of dotted keys (``{"a": {"b": 1}}`` -> ``{"a.b": 1}``)."""
    out: dict[str, Any] = {}
    if isinstance(d, dict):
        for k, v in d.items():
            out.update(flatten(v, f"{prefix}{k}."))
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


# ---- the input files' schema ---------------------------------------------------------------------


def _number(v: Any) -> Any:
    """A JSON number a float64 can hold (NaN and +-inf included), or null."""
    if v is None or isinstance(v, float):
        return v
    if isinstance(v, int) and not isinstance(v, bool):
        if abs(v) > sys.float_info.max:
            raise ValueError(f"a number of {len(str(abs(v)))} digits is beyond the float range (~1.8e308)")
        return v
    raise ValueError(f"must be a number, got {_shown(v)}")


def _scalar(v: Any) -> Any:
    """A metric value: a number as :func:`_number`, a string, a boolean, or null."""
    return v if isinstance(v, (str, bool)) else _number(v)


def _shown(v: Any) -> str:
    """A value as the JSON it was, shortened, control characters escaped."""
    text = printable(json_text(v))
    return text if len(text) <= 40 else text[:37] + "..."


Number = Annotated[Any, BeforeValidator(_number)]
Scalar = Annotated[Any, BeforeValidator(_scalar)]


class _Open(BaseModel):
    model_config = ConfigDict(extra="allow", strict=True)


class SimulateLayer(_Open):
    """One layer of a ``sparsepe simulate --json`` file."""

    name: str
    count: Annotated[int, BeforeValidator(lambda v: _count(v))] = 1
    cycles: Number = None
    stall_cycles: Number = None
    utilization: Number = None
    sparse: bool | None = None
    dram_bytes: Number = None


def _count(v: Any) -> int:
    if isinstance(v, bool) or not isinstance(v, int) or not 0 <= v <= 2**53:
        raise ValueError(f"must be a whole number of repeats (0..2**53), got {_shown(v)}")
    return v


class SimulateFile(_Open):
    """A ``sparsepe simulate --json`` file: the fields diff reads."""

    workload: str
    arch: dict[str, Any]
    layers: list[SimulateLayer]
    total_cycles: Number = None
    stall_fraction: Number = None
    utilization: Number = None
    fallback_fraction: Number = None
    effective_speedup: Number = None
    dram_bytes: Number = None


class Design(_Open):
    """A design of best.json: its parameters and metrics."""

    params: dict[str, Scalar]
    metrics: dict[str, Scalar]


class BestFile(_Open):
    """A ``sparsepe sweep`` best.json: the fields diff reads."""

    n_evaluated: Annotated[int, BeforeValidator(lambda v: _count(v))]
    feasible: bool = False
    best: Design | None = None
    closest: Design | None = None
    config: dict[str, Any] | None = None
    limits: dict[str, Any] | None = None
    objectives: dict[str, Any] | None = None


def _loc(loc: tuple) -> str:
    out = ""
    for part in loc:
        out += f"[{part}]" if isinstance(part, int) else (f".{part}" if out else str(part))
    return out or "the file"


def validated(model: type[BaseModel], obj: Any, where: str) -> Any:
    """``model`` validated from ``obj``; the first schema error as one InputError line."""
    try:
        return model.model_validate(obj)
    except ValidationError as exc:
        e = exc.errors(include_url=False)[0]
        msg = e["msg"].removeprefix("Value error, ")
        if e["type"] in ("model_type", "model_attributes_type", "dict_type"):
            msg = f"must be a JSON object, got {_shown(e.get('input'))}"
        elif e["type"] == "list_type":
            msg = f"must be a list, got {_shown(e.get('input'))}"
        elif e["type"] == "missing":
            msg = "is missing"
        elif "input" in e and e["type"] not in ("value_error",):
            msg = f"{msg} (got {_shown(e['input'])})"
        raise InputError(f"{_loc(tuple(e['loc']))}: {msg}", where=where) from None


# ---- loading -------------------------------------------------------------------------------------


def is_file_run(spec: str) -> bool:
    """Whether the run ``spec`` names a JSON file (best.json, simulate --json) rather than a
    stored study (``STORAGE#STUDY``, read by :mod:`explore.diff_study`)."""
    return Path(spec).suffix == ".json"


def load_run(spec: str, label: str) -> Run:
    """The run of a JSON file ``spec`` (:func:`is_file_run`): a best.json or a simulate --json file."""
    p = Path(spec)
    if p.suffix == ".json":
        where = f"{label} {printable(spec)}"
        if not p.is_file():
            raise InputError("file not found (or not a regular file)", where=where)
        try:
            obj = read_json(p, "run file")
        except InputError as exc:
            raise InputError(str(exc).removeprefix(f"{exc.where}: "), where=where) from None
        if isinstance(obj, dict) and "layers" in obj and "arch" in obj and "workload" in obj:
            return _from_simulate(validated(SimulateFile, obj, where), f"{label}: {printable(spec)}")
        if isinstance(obj, dict) and "n_evaluated" in obj:
            return _from_best(validated(BestFile, obj, where), p, f"{label}: {printable(spec)}")
        raise InputError(
            "neither a best.json (sparsepe sweep) nor a 'sparsepe simulate --json' file", where=where
        )
    raise InputError("not a .json file", where=f"{label} {printable(spec)}")


def _from_simulate(sim: SimulateFile, label: str) -> Run:
    layers = [
        {
            "workload": sim.workload,
            "layer": r.name,
            "count": r.count,
            **{k: getattr(r, k) for k in LAYER_METRICS},
        }
        for r in sim.layers
    ]
    given = sim.model_fields_set
    m: dict[str, Any] = {
        k: getattr(sim, k)
        for k in (
            "total_cycles",
            "stall_fraction",
            "utilization",
            "fallback_fraction",
            "effective_speedup",
            "dram_bytes",
        )
        if k in given
    }
    return Run(
        label, "simulate", dict(sim.arch), m, layers, [sim.workload], config=flatten({"arch": sim.arch})
    )


def _read_csv(path: Path, columns: tuple[str, ...], where: str) -> Any:
    """A closure CSV beside best.json (a pandas DataFrame), with ``columns``; one line naming it when
    it is not one."""
    import pandas as pd  # reason: pandas loads only for a best.json with closure CSVs beside it

    if path.stat().st_size > MAX_INPUT_FILE_BYTES:
        raise InputError(f"larger than {MAX_INPUT_FILE_BYTES // 2**20} MiB", where=f"{where} {path}")
    try:
        df = pd.read_csv(path)
    except (ValueError, UnicodeDecodeError, pd.errors.ParserError, pd.errors.EmptyDataError) as exc:
        raise InputError(
            f"not a readable CSV ({printable(str(exc).splitlines()[0] if str(exc) else type(exc).__name__)})",
            where=f"{where} {path}",
        ) from None
    missing = [c for c in columns if c not in df.columns]
    if missing:
        raise InputError(f"has no column {', '.join(missing)}", where=f"{where} {path}")
    return df


def _from_best(best: BestFile, path: Path, label: str) -> Run:
    chosen = best.best if best.feasible else best.closest
    if chosen is None:
        raise InputError("best.json holds no design (no trial finished)", where=f"{label} {path}")
    obj = best.model_dump()
    layers = None
    prof = path.parent / "closure" / "accelerator_architecture.csv"
    if prof.is_file():
        df = _read_csv(
            prof,
            ("workload", "layer", "count", "compute_cycles", "stall_cycles", "utilization", "dram_bytes"),
            label,
        )
        cm = path.parent / "closure" / "compiler_sparsity.csv"
        sparse = None
        if cm.is_file():
            c = _read_csv(cm, ("workload", "layer", "sparse"), label)
            sparse = {(w, n): bool(s) for w, n, s in zip(c["workload"], c["layer"], c["sparse"], strict=True)}
        ids = list(df["workload_id"]) if "workload_id" in df else list(df["workload"])
        try:
            layers = [
                {
                    "workload": wid,
                    "layer": r.layer,
                    "count": int(r.count),
                    "cycles": int(r.compute_cycles),
                    "stall_cycles": int(r.stall_cycles),
                    "utilization": float(r.utilization),
                    "dram_bytes": float(r.dram_bytes),
                    "sparse": None if sparse is None else sparse.get((r.workload, r.layer)),
                }
                for wid, r in zip(ids, df.itertuples(), strict=True)
            ]
        except (ValueError, TypeError, OverflowError) as exc:
            raise InputError(f"a value is not a number ({exc})", where=f"{label} {prof}") from None
    wls = list(dict.fromkeys(r["workload"] for r in layers)) if layers else []
    tags: dict[str, Any] = {
        k: obj.get(k)
        for k in ("study", "storage", "seed", "sampler", "quality_evidence", "mode", "config_fingerprint")
        if k in obj
    }
    if isinstance(tags.get("storage"), str):
        tags["storage"] = mask_passwords(tags["storage"])
    cfg = (
        flatten(obj["config"])
        if isinstance(obj.get("config"), dict)
        else flatten({"limits": obj.get("limits") or {}, "objectives": obj.get("objectives") or {}})
    )
    return Run(
        label,
        "best",
        dict(chosen.params),
        dict(chosen.metrics),
        layers,
        wls,
        config=cfg,
        tags=tags,
        designs={design_key(chosen.params): dict(chosen.metrics)},
    )


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
    return {
        "scope": scope,
        "metric": metric,
        "a": a,
        "b": b,
        "relative_change": None if rel is None or not math.isfinite(rel) else rel,
        **kw,
    }


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
            raise InputError(
                f"A and B ran different workloads (A: {', '.join(wa)}; B: {', '.join(wb)}): a diff "
                "compares two runs of the same workload",
                where="diff",
            )
    elif wa and wb and not set(wa) & set(wb):
        raise InputError(
            f"A and B share no workload (A: {', '.join(wa)}; B: {', '.join(wb)}): nothing to align",
            where="diff",
        )


def diff_runs(a: Run, b: Run, threshold: float = DEFAULT_THRESHOLD) -> dict[str, Any]:
    """The comparison as JSON-able data: first_divergence, mechanism, changes[], config_delta, ..."""
    _check_workloads(a, b)
    changes: list[dict[str, Any]] = []
    one_sided = []
    for k in DIFF_METRICS:
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
                layer_changes.append(
                    _change(
                        "layer",
                        k,
                        ra.get(k),
                        rb.get(k),
                        rel,
                        workload=ra["workload"],
                        layer=ra["layer"],
                        position=pos,
                    )
                )
        if moved and first is None:
            first = {
                "workload": ra["workload"],
                "layer": ra["layer"],
                "position": pos,
                "moved": {
                    k: {
                        "a": v[0],
                        "b": v[1],
                        "relative_change": v[2] if v[2] is None or math.isfinite(v[2]) else None,
                    }
                    for k, v in moved.items()
                },
            }
    changes += layer_changes
    # designs both studies evaluated, on their stored metrics
    shared = [k for k in a.designs if k in b.designs]
    shared_moved = 0
    for k in shared:
        if any(
            _moved(a.designs[k].get(m), b.designs[k].get(m), threshold)[0]
            for m in DIFF_METRICS
            if m in a.designs[k] or m in b.designs[k]
        ):
            shared_moved += 1
    mech, rule = _mechanism(first, changes)
    pdelta = {
        k: {"a": a.params.get(k), "b": b.params.get(k)}
        for k in sorted(set(a.params) | set(b.params))
        if a.params.get(k) != b.params.get(k)
    }
    cdelta = [
        {"key": k, "a": a.config.get(k), "b": b.config.get(k)}
        for k in sorted(set(a.config) | set(b.config))
        if a.config.get(k) != b.config.get(k) and not k.startswith(("study.name",))
    ]
    tdelta = [
        {"key": k, "a": a.tags.get(k), "b": b.tags.get(k)}
        for k in sorted(set(a.tags) & set(b.tags))
        if a.tags.get(k) != b.tags.get(k)
    ]  # tags both runs carry (the kinds of run record different ones)
    return {
        "a": a.label,
        "b": b.label,
        "kinds": [a.kind, b.kind],
        "threshold": threshold,
        "diverged": bool(changes),
        "first_divergence": first
        if first is not None
        else ("no divergence" if not changes else "no layer diverged (design-level metrics only)"),
        "mechanism": mech,
        "mechanism_rule": rule,
        "rules": [f"{rid} -> {m}: {txt}" for rid, m, txt in MECHANISM_RULES],
        "changes": changes,
        "config_delta": cdelta,
        "design_delta": pdelta,
        "tags_delta": tdelta,
        "aligned": {
            "chosen_designs_same": not pdelta,
            "layers_a": len(a.layers or []),
            "layers_b": len(b.layers or []),
            "layers_unmatched": unmatched,
            "shared_designs": len(shared),
            "shared_designs_moved": shared_moved,
            "metrics_in_one_run_only": one_sided,
            "layers_available": a.layers is not None and b.layers is not None,
        },
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
        L.append(
            f"first diverging layer: {fd['workload']}: {fd['layer']} (position {fd['position']} in execution "
            f"order): {mv}"
        )
    else:
        L.append(f"first divergence: {fd}")
    L.append(
        f"mechanism: {res['mechanism']}"
        + (f" (rule {res['mechanism_rule']})" if res["mechanism_rule"] else "")
    )
    al = res["aligned"]
    L.append(
        f"aligned: chosen designs {'identical' if al['chosen_designs_same'] else 'differ'}; "
        f"{al['layers_a']} / {al['layers_b']} layers"
        + (
            f"; {len(al['layers_unmatched'])} of A's layers have no match in B"
            if al["layers_unmatched"]
            else ""
        )
        + (
            f"; {al['shared_designs']} designs in both ({al['shared_designs_moved']} moved)"
            if al["shared_designs"]
            else ""
        )
        + ("" if al["layers_available"] else "; per-layer data missing in a run (no closure profile)")
    )
    if res["changes"]:
        rows = [["scope", "metric", "A", "B", "change"]]
        for c in res["changes"]:
            scope = c["scope"] if c["scope"] == "design" else f"{c['workload']}: {c['layer']}"
            rc = c["relative_change"]
            rows.append(
                [
                    scope,
                    c["metric"],
                    _fmt(c["a"]),
                    _fmt(c["b"]),
                    "n/a" if rc is None else f"{rc * 100:+.1f} %",
                ]
            )
        L.append("")
        L += _table(rows)
    for title, key in (("config differences", "config_delta"), ("tag differences", "tags_delta")):
        if res[key]:
            L.append("")
            L += _table(
                [["key", "A", "B"]] + [[d["key"], _fmt(d["a"]), _fmt(d["b"])] for d in res[key]], title
            )
    if res["design_delta"]:
        L.append("")
        L += _table(
            [["axis", "A", "B"]] + [[k, _fmt(v["a"]), _fmt(v["b"])] for k, v in res["design_delta"].items()],
            "chosen design differences",
        )
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
