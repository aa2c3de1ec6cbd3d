"""The team's own model and evaluation: quality evidence on the deployed model (``"model"``).

``FUNCTION(weights: dict[str, numpy.ndarray]) -> float | dict`` scores one set of weights with
the team's own evaluation. A dict carries ``{"metric": float, "per_sample": [...],
"higher_is_better": bool}`` (``per_sample`` and ``higher_is_better`` optional; a float means
higher is better); per-sample scores give the delta a 95 % bootstrap interval.

Which tensors are pruned, along which axis and by which method (magnitude, wanda, sparsegpt;
sparsegpt by default when calibration inputs are given): sim.quality.prune.oneshot. Tensors that are not
pruned are passed to the eval unchanged and listed in ``skipped_tensors`` with the reason.

The eval sees the dense weights, the one-shot pruned weights and (when given) the team's own
fine-tuned pruned weights, which must keep N:M on every tensor the one-shot pass prunes, along the
same axis. It runs in a child process with a time limit (sim.quality.team.hooks): whatever it does
(hang, exit, raise, print to stdout, return a wrong value) is one InputError naming it. Scores
must be finite and at most :data:`MAX_SCORE` in magnitude.
"""

from __future__ import annotations

import functools
import math
from dataclasses import dataclass
from pathlib import Path

import numpy as np

from hw.errors import InputError
from sim.quality.evidence.stats import loss_of, paired_interval
from sim.quality.prune.calibration import Calibration, calibration_from_spec
from sim.quality.prune.layouts import LayoutRule
from sim.quality.prune.oneshot import OneShot, prune_tensors
from sim.quality.prune.pruning import is_nm
from sim.quality.prune.tied import config_tie
from sim.quality.team.hooks import HookTimeout, TeamHook
from sim.quality.team.weights import check_save_path, load_tensors, save_tensors

__all__ = [
    "Score",
    "load_eval",
    "run_eval",
    "prune_for_eval",
    "model_evidence",
    "load_and_prune",
    "MAX_SCORE",
    "check_finite_loss",
]

#: Largest score magnitude accepted from an eval [A]: means, differences and ratios of scores up
#: to 1e100 stay far inside float64 (max 1.8e308), so no delta or interval overflows.
MAX_SCORE = 1e100


@dataclass(frozen=True)
class Score:
    """One evaluation: the metric, its per-sample scores (or None) and its direction."""

    metric: float
    per_sample: np.ndarray | None
    higher_is_better: bool


def load_eval(spec: str, base_dir: str | Path | None = None, timeout: HookTimeout | None = None) -> TeamHook:
    """The team's eval ``"module:function"`` in its child process (sim.quality.team.hooks); close it
    (or use it as a context manager) when done."""
    return TeamHook(spec, base_dir, what="eval", timeout=timeout)


def _number(v, where: str, what: str) -> float:
    if (
        isinstance(v, bool)
        or not isinstance(v, (int, float, np.integer, np.floating))
        or not math.isfinite(float(v))
    ):
        raise InputError(f"returned a non-numeric {what} {v!r} (expected a finite float)", where=where)
    if abs(float(v)) > MAX_SCORE:
        raise InputError(
            f"returned a {what} of {float(v):g} (scores must be at most {MAX_SCORE:g} in magnitude)",
            where=where,
        )
    return float(v)


def run_eval(hook: TeamHook, weights: dict[str, np.ndarray], label: str) -> Score:
    """Call the team's eval on ``weights`` (a copy, in its child process); validate what it returns."""
    where = f"eval {hook.spec!r} on the {label} weights"
    out = hook.call(weights, where)
    if isinstance(out, dict):
        unknown = set(out) - {"metric", "per_sample", "higher_is_better"}
        if "metric" not in out or unknown:
            raise InputError(
                f"returned a dict with keys {sorted(map(str, out))}; expected 'metric' and optionally "
                "'per_sample', 'higher_is_better'",
                where=where,
            )
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
            if np.max(np.abs(arr)) > MAX_SCORE:
                raise InputError(
                    f"returned per_sample scores up to {np.max(np.abs(arr)):g} in magnitude (scores must "
                    f"be at most {MAX_SCORE:g})",
                    where=where,
                )
            ps = arr
        return Score(metric, ps, hib)
    return Score(_number(out, where, "result"), None, True)


def check_finite_loss(value: float, dense: Score, sparse: Score, where: str) -> float:
    """``value`` (a loss, a delta, an interval end) when finite, else one InputError blaming the
    eval (a lower-is-better dense metric of 0 makes the relative loss undefined)."""
    if math.isfinite(value):
        return value
    why = (
        " (lower is better and the dense metric is 0: the relative loss sparse / dense - 1 is undefined)"
        if not dense.higher_is_better and dense.metric == 0
        else ""
    )
    raise InputError(
        f"its scores give a non-finite quality loss: dense {dense.metric:g}, sparse {sparse.metric:g}{why}",
        where=where,
    )


def prune_for_eval(
    tensors: dict[str, np.ndarray], n: int, m: int, **kw
) -> tuple[dict[str, np.ndarray], dict[str, np.ndarray], dict[str, str]]:
    """(one-shot pruned tensors, masks of the pruned ones, skipped name -> reason); keywords as
    sim.quality.prune.oneshot.prune_tensors (magnitude without calibration)."""
    shot = prune_tensors(tensors, n, m, **kw)
    return shot.tensors, shot.masks, shot.skipped


def _check_finetuned(path, dense: dict[str, np.ndarray], ft: dict[str, np.ndarray], shot: OneShot) -> None:
    n, m = shot.n, shot.m
    missing = sorted(set(dense) - set(ft))
    extra = sorted(set(ft) - set(dense))
    if missing or extra:
        raise InputError(
            f"tensors differ from the dense weights (missing {missing[:3]}, extra {extra[:3]})",
            where=str(path),
        )
    for name in dense:
        if ft[name].shape != dense[name].shape:
            raise InputError(
                f"shape {ft[name].shape} differs from the dense weights' {dense[name].shape}",
                where=f"{path}: tensor {name!r}",
            )
    for name in shot.masks:
        w = ft[name]
        axis = shot.layouts[name].reduction_axis(w.ndim)
        if not is_nm(w, n, m, axis):
            g = np.moveaxis(w, axis, -1)
            g = g.reshape(*g.shape[:-1], g.shape[-1] // m, m)
            bad = np.argwhere(np.count_nonzero(g, axis=-1) > n)
            raise InputError(
                f"not {n}:{m} sparse: {len(bad)} group(s) of {m} keep more than {n} nonzeros along "
                f"axis {axis} (first at index {tuple(int(i) for i in bad[0])}); fine-tuned weights must "
                f"keep the {n}:{m} pattern",
                where=f"{path}: tensor {name!r}",
            )


def load_and_prune(
    weights_path: str | Path,
    eval_spec: str,
    n: int,
    m: int,
    base_dir: str | Path | None = None,
    *,
    method: str | None = None,
    calibration: Calibration | str | Path | None = None,
    layout_rules: list[LayoutRule] | None = None,
    hook_timeout: HookTimeout | None = None,
    prune_lm_head: bool = False,
):
    """(the eval's TeamHook, dense tensors, one-shot N:M tensors, masks, skipped tensors with
    reasons, OneShot) of the team's weights file; one InputError when the file holds no tensor or
    none can be pruned N:M. Every input is checked before any tensor is pruned. An LM head tied to
    the input embedding (``config.json`` beside the weights, or the checkpoint's tensors:
    sim.quality.prune.tied) is kept dense unless ``prune_lm_head``. The caller closes
    the hook (``with hook:``); a calibration function given by name is closed here."""
    hook = load_eval(eval_spec, base_dir, hook_timeout)
    try:
        dense = load_tensors(weights_path)
        if not dense:
            raise InputError("no tensors in the file", where=str(weights_path))
        prune = functools.partial(
            prune_tensors,
            dense,
            n,
            m,
            method=method,
            layout_rules=layout_rules,
            prune_lm_head=prune_lm_head,
            tie=config_tie(weights_path),
        )
        if isinstance(calibration, Calibration) or calibration is None:
            shot = prune(calibration=calibration)
        else:
            with calibration_from_spec(calibration, base_dir, timeout=hook_timeout) as cal:
                shot = prune(calibration=cal)
        if not shot.masks:
            raise InputError(
                f"no tensor can be pruned {n}:{m} under the ASP rules "
                f"({'; '.join(f'{k}: {v}' for k, v in list(shot.skipped.items())[:3])})",
                where=str(weights_path),
            )
    except BaseException:
        hook.close()
        raise
    return hook, dense, shot.tensors, shot.masks, shot.skipped, shot


def model_evidence(
    weights_path: str | Path,
    eval_spec: str,
    *,
    finetuned_path: str | Path | None = None,
    n: int = 2,
    m: int = 4,
    seed: int = 0,
    base_dir: str | Path | None = None,
    metric_name: str | None = None,
    method: str | None = None,
    calibration: Calibration | str | Path | None = None,
    layout_rules: list[LayoutRule] | None = None,
    save_pruned: str | Path | None = None,
    hook_timeout: HookTimeout | None = None,
    prune_lm_head: bool = False,
) -> dict:
    """Score dense, one-shot N:M and (given) fine-tuned weights with the team's eval.

    ``method``, ``calibration`` (a Calibration, a file or ``MODULE:FUNCTION`` relative to
    ``base_dir``) and ``layout_rules``: how the one-shot model is pruned (sim.quality.prune.oneshot);
    ``save_pruned``: a ``.safetensors`` path the one-shot weights are written to (same names, dtypes
    and layouts as the dense file); ``hook_timeout``: the time limit of each call of the eval and
    of the calibration function (sim.quality.team.hooks).

    Returns the JSON of ``sparsepe quality --weights --eval``: ``dense_metric``,
    ``oneshot_metric``, ``finetuned_metric`` (None without fine-tuned weights), ``delta`` (the
    sparse model's metric minus the dense one's, the sparse model being the fine-tuned one when
    given, else the one-shot one), ``delta_ci`` ([low, high], 95 %, paired bootstrap over the
    per-sample scores; None when the eval gives none), ``pruned_tensors``, ``skipped_tensors``,
    ``evidence`` ("model"), and the loss the sweep bounds (``quality_delta``, with its pessimistic
    end ``quality_delta_ci``; see sim.quality.evidence.stats); ``method``, ``calibration`` (``source``,
    ``samples``, ``inputs``), ``layouts`` (tensor -> reduction axis), ``pruned_file`` and
    ``tied_lm_head`` (each LM head tied to the input embedding: name, how it is tied, what was done;
    ``prune_lm_head`` prunes it, else it is kept dense)."""
    if save_pruned is not None:
        check_save_path(save_pruned)
    hook, dense, oneshot, masks, skipped, shot = load_and_prune(
        weights_path,
        eval_spec,
        n,
        m,
        base_dir,
        method=method,
        calibration=calibration,
        layout_rules=layout_rules,
        hook_timeout=hook_timeout,
        prune_lm_head=prune_lm_head,
    )
    with hook:
        ft = None
        if finetuned_path is not None:
            ft = load_tensors(finetuned_path)
            _check_finetuned(finetuned_path, dense, ft, shot)
        if save_pruned is not None:
            save_tensors(save_pruned, oneshot, source=weights_path, note=shot.schedule())
        s_dense = run_eval(hook, dense, "dense")
        s_one = run_eval(hook, oneshot, f"one-shot {n}:{m}")
        s_ft = run_eval(hook, ft, "fine-tuned") if ft is not None else None
    for s, label in ((s_one, "one-shot"), (s_ft, "fine-tuned")):
        if s is not None and s.higher_is_better != s_dense.higher_is_better:
            raise InputError(
                "higher_is_better differs between the dense and the sparse evaluation",
                where=f"eval {eval_spec!r} on the {label} weights",
            )
    sparse = s_ft or s_one
    hib = s_dense.higher_is_better
    where = f"eval {eval_spec!r}"
    delta_ci = loss_ci = None
    ci_note = "the eval returned no per_sample scores: no interval; the guardrail tests the point estimate"
    with np.errstate(all="ignore"):  # a non-finite result is reported below, blaming the eval
        delta = check_finite_loss(sparse.metric - s_dense.metric, s_dense, sparse, where)
        loss = check_finite_loss(float(loss_of(s_dense.metric, sparse.metric, hib)), s_dense, sparse, where)
        if s_dense.per_sample is not None and sparse.per_sample is not None:
            if s_dense.per_sample.shape != sparse.per_sample.shape:
                raise InputError(
                    f"per_sample lengths differ between dense ({s_dense.per_sample.size}) and sparse "
                    f"({sparse.per_sample.size}) evaluations",
                    where=where,
                )
            iv = paired_interval([s_dense.per_sample], [sparse.per_sample], lambda d, s: s - d, seed=seed)
            delta_ci = [check_finite_loss(v, s_dense, sparse, where) for v in (iv.low, iv.high)]
            li = paired_interval(
                [s_dense.per_sample], [sparse.per_sample], lambda d, s: loss_of(d, s, hib), seed=seed
            )
            loss_ci = [check_finite_loss(v, s_dense, sparse, where) for v in (li.low, li.high)]
            ci_note = li.method
    return {
        "evidence": "model",
        "eval": eval_spec,
        "metric": metric_name or "metric",
        "higher_is_better": hib,
        "weights_file": str(weights_path),
        "finetuned_file": None if finetuned_path is None else str(finetuned_path),
        "nm": f"{n}:{m}",
        "seed": seed,
        "dense_metric": s_dense.metric,
        "oneshot_metric": s_one.metric,
        "finetuned_metric": None if s_ft is None else s_ft.metric,
        "sparse_model": "fine-tuned" if s_ft is not None else "one-shot",
        "delta": delta,
        "delta_ci": delta_ci,
        "quality_delta": loss,
        "quality_delta_interval": loss_ci,
        "quality_delta_ci": loss if loss_ci is None else loss_ci[1],
        "interval_method": ci_note,
        "pruned_tensors": shot.pruned_json(),
        "skipped_tensors": [{"name": k, "reason": v} for k, v in skipped.items()],
        "method": shot.method,
        "calibration": shot.calibration,
        "layouts": shot.layouts_json(),
        "pruned_file": None if save_pruned is None else str(save_pruned),
        "tied_lm_head": shot.tied_json(),
        "pruning_schedule": shot.schedule()
        + (
            "; fine-tuned by the team (weights given, checked to keep N:M)"
            if s_ft is not None
            else "; no fine-tuning (no --finetuned weights given)"
        ),
    }
