"""The team's own model (``[quality] weights + eval``, sim.quality.team.user_eval) scored per precision.

The team's eval is a black box that takes weights, so only the weights can be quantised here:
[A] weight-only quantisation with the recipes of sim.quality.evidence.precision (INT8/INT4 symmetric
per-output-channel, FP8 one per-tensor scale, BF16 RNE) on every tensor the one-shot pass prunes
(sim.quality.prune.oneshot; the output channels of its layout, sim.quality.prune.layouts). Activations stay in
the eval's own precision, so the delta is a lower bound on the deployed loss of a precision that
also quantises activations.
The delta is against the dense FP32 weights' score, with a paired bootstrap interval when the eval
returns per-sample scores (sim.quality.evidence.stats).
"""

from __future__ import annotations

from pathlib import Path

import numpy as np

from sim.quality.evidence.precision import check_gate_args, quant_weights
from sim.quality.evidence.stats import loss_of, paired_interval
from sim.quality.prune.layouts import Layout
from sim.quality.team.hooks import HookTimeout
from sim.quality.team.user_eval import check_finite_loss, load_and_prune, run_eval
from sim.quality.team.weights import load_tensors

__all__ = ["quantize_tensors", "model_precision_quality"]


def quantize_tensors(
    tensors: dict[str, np.ndarray], names, precision: str, layouts: dict[str, Layout] | None = None
) -> dict[str, np.ndarray]:
    """A copy of ``tensors`` with ``names`` quantised (weight-only) to ``precision`` (dtype kept).
    The output channels are those of the tensor's layout (sim.quality.prune.layouts: axis 0 of an
    ``(out, in, ...)`` tensor, axis 1 of a GPT-2 Conv1D ``(in, out)``, per expert); without
    ``layouts``, axis 0."""
    out = dict(tensors)
    if precision == "fp32":
        return out
    for k in names:
        t = tensors[k]
        lay = (layouts or {}).get(k)
        if lay is None:
            q = quant_weights(t.reshape(t.shape[0], -1).astype(np.float64), precision).reshape(t.shape)
        else:
            mats = lay.to_matrices(t)
            q = lay.from_matrices(np.stack([quant_weights(mt, precision) for mt in mats]), t.shape)
        out[k] = q.astype(t.dtype)
    return out


def model_precision_quality(
    weights_path: str | Path,
    eval_spec: str,
    precisions,
    *,
    finetuned_path: str | Path | None = None,
    n: int = 2,
    m: int = 4,
    seed: int = 0,
    base_dir: str | Path | None = None,
    max_delta: float | None = None,
    hook_timeout: HookTimeout | None = None,
) -> list[dict]:
    """One row per (precision, model): the dense weights and the N:M model (the team's fine-tuned
    weights when given, else one-shot pruned), weight-only quantised, scored by the team's eval
    (in its child process, each call within ``hook_timeout``: sim.quality.team.hooks):
    {"precision", "sparsity", "metric", "quality_delta", "quality_delta_interval", "pass", "max_delta"}."""
    max_delta = check_gate_args(precisions, (seed,), max_delta)
    hook, dense, oneshot, masks, _, shot = load_and_prune(
        weights_path, eval_spec, n, m, base_dir, hook_timeout=hook_timeout
    )
    where = f"eval {eval_spec!r}"
    rows = []
    with hook:
        sparse = load_tensors(finetuned_path) if finetuned_path is not None else oneshot
        names = sorted(masks)
        base = run_eval(hook, dense, "dense")
        for label, tensors in (("dense", dense), (f"{n}:{m}", sparse)):
            for p in precisions:
                s = run_eval(hook, quantize_tensors(tensors, names, p, shot.layouts), f"{label} {p}")
                with np.errstate(all="ignore"):  # a non-finite loss is reported, blaming the eval
                    loss = check_finite_loss(
                        float(loss_of(base.metric, s.metric, base.higher_is_better)), base, s, where
                    )
                    iv = None
                    if (
                        base.per_sample is not None
                        and s.per_sample is not None
                        and base.per_sample.shape == s.per_sample.shape
                    ):
                        i = paired_interval(
                            [base.per_sample],
                            [s.per_sample],
                            lambda d, q: loss_of(d, q, base.higher_is_better),
                            seed=seed,
                        )
                        iv = [check_finite_loss(v, base, s, where) for v in (i.low, i.high)]
                hi = loss if iv is None else iv[1]
                rows.append(
                    {
                        "precision": p,
                        "sparsity": label,
                        "metric": s.metric,
                        "quality_delta": loss,
                        "quality_delta_interval": iv,
                        "pass": hi <= max_delta,
                        "max_delta": max_delta,
                        "quantised": "weights only",
                    }
                )
    return rows
