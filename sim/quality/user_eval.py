"""The team's own model and evaluation: quality evidence on the deployed model (``"model"``).

``FUNCTION(weights: dict[str, numpy.ndarray]) -> float | dict`` scores one set of weights with
the team's own evaluation. A dict carries ``{"metric": float, "per_sample": [...],
"higher_is_better": bool}`` (``per_sample`` and ``higher_is_better`` optional; a float means
higher is better); per-sample scores give the delta a 95 % bootstrap interval.

Which tensors are pruned (stated rule, NVIDIA ASP's whitelist of Linear/Conv weights):

* floating-point tensors with two or more axes, whose name does not mark an embedding table
  (``embed``, ``wte``, ``wpe``: ASP does not prune ``nn.Embedding``), and whose shape passes the
  shared ASP verdict (``sim.asp_rules.weight_verdict``: size(0) % 8, size(1) % 16, K % M), are
  N:M-pruned along the reduction axis (``sim.quality.pruning.prune_layer``);
* every other tensor is passed to the eval unchanged and listed in ``skipped_tensors`` with the
  reason.

The eval sees the dense weights, the one-shot pruned weights and (when given) the team's own
fine-tuned pruned weights, which must keep N:M on every tensor the one-shot pass prunes.
"""

from __future__ import annotations

import hashlib
import importlib
import importlib.machinery
import importlib.util
import math
import re
import sys
from collections.abc import Callable
from dataclasses import dataclass
from pathlib import Path

import numpy as np

from hw.errors import InputError
from hw.nm import check_nm
from sim.quality.pruning import is_nm, prune_layer, reduction_axis
from sim.quality.stats import loss_of, paired_interval

__all__ = ["Score", "load_eval", "run_eval", "prune_for_eval", "model_evidence"]

_EMBEDDING = re.compile(r"embed|(^|[._/])(wte|wpe)($|[._/])", re.IGNORECASE)


@dataclass(frozen=True)
class Score:
    """One evaluation: the metric, its per-sample scores (or None) and its direction."""

    metric: float
    per_sample: np.ndarray | None
    higher_is_better: bool


def load_eval(spec: str, base_dir: str | Path | None = None) -> Callable:
    """``"module:function"`` (an importable module, or a ``.py`` file path relative to
    ``base_dir``) -> the function. Any failure is one InputError naming the eval."""
    where = f"eval {spec!r}"
    if not isinstance(spec, str) or spec.count(":") < 1:
        raise InputError("expected MODULE:FUNCTION, e.g. my_eval:score", where=where)
    mod_name, _, fn_name = spec.rpartition(":")
    if not mod_name or not fn_name.isidentifier():
        raise InputError("expected MODULE:FUNCTION, e.g. my_eval:score", where=where)
    base = Path(base_dir) if base_dir is not None else Path.cwd()
    try:
        path = None
        if mod_name.endswith(".py"):
            path = Path(mod_name)
            path = path if path.is_absolute() else base / path
            if not path.is_file():
                raise InputError(f"no such file {path}", where=where)
        elif "." not in mod_name:
            # a module file next to the config (or in the working directory) is loaded from there,
            # afresh: two configs with the same module name in different directories never mix
            found = importlib.machinery.PathFinder.find_spec(mod_name, [str(base.resolve())])
            if found is not None and found.origin and found.origin.endswith(".py"):
                path = Path(found.origin)
        if path is not None:
            name = f"_sparsepe_eval_{hashlib.sha256(str(path.resolve()).encode()).hexdigest()[:16]}"
            sp = importlib.util.spec_from_file_location(name, path)
            module = importlib.util.module_from_spec(sp)
            sys.modules[name] = module
            sp.loader.exec_module(module)
        else:
            added = str(base.resolve())
            sys.path.insert(0, added)
            try:
                module = importlib.import_module(mod_name)
            finally:
                if added in sys.path:
                    sys.path.remove(added)
    except InputError:
        raise
    except BaseException as exc:  # noqa: BLE001 - whatever the team's module raises, one line
        if isinstance(exc, KeyboardInterrupt):
            raise
        raise InputError(f"import failed: {type(exc).__name__}: {_first_line(exc)}", where=where) from None
    fn = getattr(module, fn_name, None)
    if not callable(fn):
        raise InputError(f"module {mod_name!r} has no function {fn_name!r}", where=where)
    fn.__sparsepe_spec__ = spec  # type: ignore[attr-defined]
    return fn


def _first_line(exc: BaseException) -> str:
    s = str(exc).strip()
    return s.splitlines()[0] if s else "(no message)"


def _number(v, where: str, what: str) -> float:
    if isinstance(v, bool) or not isinstance(v, (int, float, np.integer, np.floating)) or not math.isfinite(float(v)):
        raise InputError(f"returned a non-numeric {what} {v!r} (expected a finite float)", where=where)
    return float(v)


def run_eval(fn: Callable, weights: dict[str, np.ndarray], label: str) -> Score:
    """Call the team's eval on a copy of ``weights``; validate what it returns."""
    spec = getattr(fn, "__sparsepe_spec__", getattr(fn, "__name__", "eval"))
    where = f"eval {spec!r} on the {label} weights"
    try:
        out = fn({k: v.copy() for k, v in weights.items()})
    except KeyboardInterrupt:
        raise
    except BaseException as exc:  # noqa: BLE001 - the team's code may raise anything
        raise InputError(f"raised {type(exc).__name__}: {_first_line(exc)}", where=where) from None
    if isinstance(out, dict):
        unknown = set(out) - {"metric", "per_sample", "higher_is_better"}
        if "metric" not in out or unknown:
            raise InputError(f"returned a dict with keys {sorted(out)}; expected 'metric' and optionally "
                             "'per_sample', 'higher_is_better'", where=where)
        metric = _number(out["metric"], where, "metric")
        hib = out.get("higher_is_better", True)
        if not isinstance(hib, bool):
            raise InputError(f"returned higher_is_better={hib!r} (expected true or false)", where=where)
        ps = out.get("per_sample")
        if ps is not None:
            try:
                arr = np.asarray(ps, dtype=np.float64).reshape(-1)
            except (TypeError, ValueError):
                raise InputError("returned non-numeric per_sample scores", where=where) from None
            if arr.size == 0 or not np.all(np.isfinite(arr)):
                raise InputError("returned empty or non-finite per_sample scores", where=where)
            ps = arr
        return Score(metric, ps, hib)
    return Score(_number(out, where, "result"), None, True)


def prune_for_eval(tensors: dict[str, np.ndarray], n: int, m: int
                   ) -> tuple[dict[str, np.ndarray], dict[str, np.ndarray], dict[str, str]]:
    """(one-shot pruned tensors, masks of the pruned ones, skipped name -> reason)."""
    check_nm(n, m)
    out, masks, skipped = {}, {}, {}
    for name, t in tensors.items():
        out[name] = t
        if not np.issubdtype(t.dtype, np.floating):
            skipped[name] = f"dtype {t.dtype}: not a floating-point weight"
        elif t.ndim < 2:
            skipped[name] = f"{t.ndim}-D tensor: bias/normalisation/scalar, not a weight matrix (ASP prunes weights only)"
        elif _EMBEDDING.search(name):
            skipped[name] = "embedding table: not a Linear/Conv weight (ASP's whitelist)"
        elif not np.all(np.isfinite(t)):
            raise InputError("holds NaN or infinity", where=f"tensor {name!r}")
        else:
            layer = prune_layer(name, t, n, m)
            if layer.pruned:
                out[name] = layer.weights
                masks[name] = layer.mask
            else:
                skipped[name] = layer.verdict.reason
    return out, masks, skipped


def _check_finetuned(path, dense: dict[str, np.ndarray], ft: dict[str, np.ndarray], masks: dict[str, np.ndarray],
                     n: int, m: int) -> None:
    missing = sorted(set(dense) - set(ft))
    extra = sorted(set(ft) - set(dense))
    if missing or extra:
        raise InputError(f"tensors differ from the dense weights (missing {missing[:3]}, extra {extra[:3]})",
                         where=str(path))
    for name in dense:
        if ft[name].shape != dense[name].shape:
            raise InputError(f"shape {ft[name].shape} differs from the dense weights' {dense[name].shape}",
                             where=f"{path}: tensor {name!r}")
    for name in masks:
        w = ft[name]
        if not is_nm(w, n, m, reduction_axis(w.shape)):
            g = np.moveaxis(w, reduction_axis(w.shape) % w.ndim, -1)
            g = g.reshape(*g.shape[:-1], g.shape[-1] // m, m)
            bad = np.argwhere(np.count_nonzero(g, axis=-1) > n)
            raise InputError(f"not {n}:{m} sparse: {len(bad)} group(s) of {m} keep more than {n} nonzeros "
                             f"(first at index {tuple(int(i) for i in bad[0])}); fine-tuned weights must keep "
                             f"the {n}:{m} pattern", where=f"{path}: tensor {name!r}")


def load_and_prune(weights_path: str | Path, eval_spec: str, n: int, m: int, base_dir: str | Path | None = None):
    """(eval function, dense tensors, one-shot N:M tensors, masks, skipped tensors with reasons) of the
    team's weights file; one InputError when the file holds no tensor or none can be pruned N:M."""
    from sim.quality.weights import load_tensors

    fn = load_eval(eval_spec, base_dir)
    dense = load_tensors(weights_path)
    if not dense:
        raise InputError("no tensors in the file", where=str(weights_path))
    oneshot, masks, skipped = prune_for_eval(dense, n, m)
    if not masks:
        raise InputError(f"no tensor can be pruned {n}:{m} under the ASP rules "
                         f"({'; '.join(f'{k}: {v}' for k, v in list(skipped.items())[:3])})", where=str(weights_path))
    return fn, dense, oneshot, masks, skipped


def model_evidence(weights_path: str | Path, eval_spec: str, *, finetuned_path: str | Path | None = None,
                   n: int = 2, m: int = 4, seed: int = 0, base_dir: str | Path | None = None,
                   metric_name: str | None = None) -> dict:
    """Score dense, one-shot N:M and (given) fine-tuned weights with the team's eval.

    Returns the JSON of ``sparsepe quality --weights --eval``: ``dense_metric``,
    ``oneshot_metric``, ``finetuned_metric`` (None without fine-tuned weights), ``delta`` (the
    sparse model's metric minus the dense one's, the sparse model being the fine-tuned one when
    given, else the one-shot one), ``delta_ci`` ([low, high], 95 %, paired bootstrap over the
    per-sample scores; None when the eval gives none), ``pruned_tensors``, ``skipped_tensors``,
    ``evidence`` ("model"), and the loss the sweep bounds (``quality_delta``, with its pessimistic
    end ``quality_delta_ci``; see sim.quality.stats)."""
    from sim.quality.weights import load_tensors

    fn, dense, oneshot, masks, skipped = load_and_prune(weights_path, eval_spec, n, m, base_dir)
    ft = None
    if finetuned_path is not None:
        ft = load_tensors(finetuned_path)
        _check_finetuned(finetuned_path, dense, ft, masks, n, m)
    s_dense = run_eval(fn, dense, "dense")
    s_one = run_eval(fn, oneshot, f"one-shot {n}:{m}")
    s_ft = run_eval(fn, ft, "fine-tuned") if ft is not None else None
    for s, label in ((s_one, "one-shot"), (s_ft, "fine-tuned")):
        if s is not None and s.higher_is_better != s_dense.higher_is_better:
            raise InputError("higher_is_better differs between the dense and the sparse evaluation",
                             where=f"eval {eval_spec!r} on the {label} weights")
    sparse = s_ft or s_one
    hib = s_dense.higher_is_better
    delta = sparse.metric - s_dense.metric
    loss = float(loss_of(s_dense.metric, sparse.metric, hib))
    delta_ci = loss_ci = None
    ci_note = "the eval returned no per_sample scores: no interval; the guardrail tests the point estimate"
    if s_dense.per_sample is not None and sparse.per_sample is not None:
        if s_dense.per_sample.shape != sparse.per_sample.shape:
            raise InputError(f"per_sample lengths differ between dense ({s_dense.per_sample.size}) and sparse "
                             f"({sparse.per_sample.size}) evaluations", where=f"eval {eval_spec!r}")
        iv = paired_interval([s_dense.per_sample], [sparse.per_sample], lambda d, s: s - d, seed=seed)
        delta_ci = [iv.low, iv.high]
        li = paired_interval([s_dense.per_sample], [sparse.per_sample], lambda d, s: loss_of(d, s, hib), seed=seed)
        loss_ci = [li.low, li.high]
        ci_note = li.method
    return {
        "evidence": "model",
        "eval": eval_spec, "metric": metric_name or "metric", "higher_is_better": hib,
        "weights_file": str(weights_path), "finetuned_file": None if finetuned_path is None else str(finetuned_path),
        "nm": f"{n}:{m}", "seed": seed,
        "dense_metric": s_dense.metric, "oneshot_metric": s_one.metric,
        "finetuned_metric": None if s_ft is None else s_ft.metric,
        "sparse_model": "fine-tuned" if s_ft is not None else "one-shot",
        "delta": delta, "delta_ci": delta_ci,
        "quality_delta": loss, "quality_delta_interval": loss_ci,
        "quality_delta_ci": loss if loss_ci is None else loss_ci[1],
        "interval_method": ci_note,
        "pruned_tensors": [{"name": k, "shape": [int(d) for d in dense[k].shape]} for k in masks],
        "skipped_tensors": [{"name": k, "reason": v} for k, v in skipped.items()],
        "pruning_schedule": (f"one-shot {n}:{m} magnitude pruning (ASP m4n2_1d rule) of {len(masks)} tensor(s)"
                             + ("; fine-tuned by the team (weights given, checked to keep N:M)" if s_ft is not None
                                else "; no fine-tuning (no --finetuned weights given)")),
    }
