"""Quality gates per precision for the char-level transformer reference (sim.quality.references.transformer),
the transformer counterpart of sim.quality.evidence.precision (digits MLP).

Models: for each seed, the dense control and the N:M ASP fine-tune of sim.quality.references.transformer's
recipe (same seeds, same random streams as its ``_seed_run``), trained in FP32 and kept in memory
and on disk (``cache_dir()/transformer-weights-<key>.npz``, keyed by the code digest, the config,
the seed and N:M), so that each precision is only a quantisation at inference.

Quantisation (the recipes of sim.quality.evidence.precision, applied to every GEMM with a weight operand:
attention qkv and output projections, FFN fc1/fc2 and the LM head): INT8/INT4 symmetric
per-output-channel weights and symmetric per-tensor activations calibrated on held-out training
text (the last ``CALIB_FRACTION`` of the training split, never the test split) layer by layer
through the quantised network; FP8 per-tensor scales; BF16 RNE. [A] The embedding lookup, layer
norms, the softmax and the two activation-by-activation attention products (QK^T, PV) stay FP32:
the PE array computes weight GEMMs; these small per-token operations run in the vector unit.

Score: per-window mean NLL (nats/char) on the held-out windows of sim.quality.references.transformer; the
delta is the relative NLL increase against the dense FP32 model of the same seed
(sim.quality.evidence.stats.loss_of(dense, q, False)), with a paired percentile-bootstrap interval over seeds
and windows. Gate: the interval's upper end is at most ``max_delta``.
"""

from __future__ import annotations

import hashlib
import io
import json
from dataclasses import asdict

import numpy as np
from threadpoolctl import threadpool_limits

from hw.host import write_file
from hw.precision import check_precision
from sim.quality.evidence.precision import (
    CALIB_FRACTION,
    PrecisionQuality,
    act_scale,
    check_gate_args,
    quant_acts,
    quant_weights,
)
from sim.quality.evidence.stats import loss_of, paired_interval
from sim.quality.references.charlm import (
    GEMM_WEIGHTS,
    LMConfig,
    corpus,
    eval_windows,
    init_lm,
    numpy_nll,
    train_lm,
)
from sim.quality.references.reference import parse_nm
from sim.quality.references.transformer import cache_dir, code_digest
from sim.quality.team.user_eval import prune_for_eval

__all__ = ["transformer_precision_quality", "quantized_nll", "trained_models", "GEMM_WEIGHTS"]


def _weights_key(cfg, seed: int, n: int, m: int) -> str:
    blob = json.dumps({"code": code_digest(), "cfg": asdict(cfg), "seed": seed, "nm": [n, m]}, sort_keys=True)
    return hashlib.sha256(blob.encode()).hexdigest()[:24]


def trained_models(seed: int, n: int, m: int, cfg=None, *, use_cache: bool = True) -> dict[str, dict]:
    """{"dense": params, "finetuned": params}: sim.quality.references.transformer's dense control and N:M ASP
    fine-tune of ``seed`` (same recipe and random streams), FP32."""
    cfg = LMConfig() if cfg is None else cfg
    path = cache_dir() / f"transformer-weights-{_weights_key(cfg, seed, n, m)}.npz"
    if use_cache and path.exists():
        z = np.load(path)
        out: dict[str, dict] = {"dense": {}, "finetuned": {}}
        for k in z.files:
            run, name = k.split("/", 1)
            out[run][name] = z[k]
        return out
    train_ids = corpus()[0]
    rng = [np.random.default_rng(x) for x in np.random.SeedSequence([seed, n, m]).spawn(7)]
    with threadpool_limits(1):
        pre, _ = train_lm(init_lm(cfg, rng[0]), train_ids, cfg, rng[1], cfg.steps)
        oneshot, masks, _ = prune_for_eval(pre, n, m)
        dense, _ = train_lm(pre, train_ids, cfg, rng[2], cfg.finetune_steps)
        ft, _ = train_lm(oneshot, train_ids, cfg, rng[2], cfg.finetune_steps, masks=masks)
    out = {
        "dense": {k: np.asarray(v) for k, v in dense.items()},
        "finetuned": {k: np.asarray(v) for k, v in ft.items()},
    }
    if use_cache:
        buf = io.BytesIO()
        np.savez(buf, **{f"{r}/{k}": v for r, d in out.items() for k, v in d.items()})
        write_file(path, buf.getvalue(), parents=True)  # atomic: the cache is shared
    return out


def quantized_nll(
    p: dict, precision: str, windows, calib_windows: tuple[np.ndarray, np.ndarray], heads: int
) -> np.ndarray:
    """Per-window mean NLL of the model ``p`` with its weight GEMMs at ``precision`` (``fp32``: none
    quantised); activation scales calibrated on ``calib_windows`` (x, y)."""
    if precision != "fp32":
        check_precision(precision, where="--precision")
    names = sorted(
        {
            k[: -len(".weight")]
            for k in p
            if k.endswith(".weight") and (k.startswith("head") or any(g in k for g in GEMM_WEIGHTS))
        }
    )
    wq = {
        nm: (
            p[nm + ".weight"]
            if precision == "fp32"
            else quant_weights(p[nm + ".weight"].astype(np.float64), precision)
        ).astype(np.float32)
        for nm in names
    }
    scales: dict[str, float] = {}

    def lin(a, name):
        if precision != "fp32":
            if name not in scales:  # the calibration pass meets the layers in order
                scales[name] = act_scale(a, precision)
            a = quant_acts(a.astype(np.float64), precision, scales[name])
        return a.astype(np.float32) @ wq[name].T + p[name + ".bias"]

    if precision != "fp32":
        numpy_nll(p, *calib_windows, heads, lin)
    x, y = windows
    return np.concatenate(
        [numpy_nll(p, x[s : s + 64], y[s : s + 64], heads, lin) for s in range(0, len(x), 64)]
    )


def transformer_precision_quality(
    precisions,
    sparsities=("2:4", "dense"),
    seeds=(0, 1, 2),
    *,
    max_delta: float | None = None,
    cfg=None,
    use_cache: bool = True,
) -> list[PrecisionQuality]:
    """One row per (precision, sparsity), like sim.quality.evidence.precision.precision_quality, on the
    char-level transformer: ``accuracy`` holds the mean NLL (nats/char, lower is better), ``delta`` the
    relative NLL increase against the dense FP32 model of the same seed."""
    cfg = LMConfig() if cfg is None else cfg
    max_delta = check_gate_args(precisions, seeds, max_delta)
    train_ids, test_ids, _, _ = corpus()
    windows = eval_windows(test_ids, cfg)
    held = train_ids[int(len(train_ids) * (1 - CALIB_FRACTION)) :]
    cx, cy = eval_windows(held, cfg)
    calib = (cx[:64], cy[:64])
    rows = []
    for s in sparsities:
        n, m = (2, 4) if s == "dense" else parse_nm(s)
        base: list[np.ndarray] = []
        scores: dict[str, list[np.ndarray]] = {pr: [] for pr in precisions}
        for seed in seeds:
            models = trained_models(seed, n, m, cfg, use_cache=use_cache)
            base.append(quantized_nll(models["dense"], "fp32", windows, calib, cfg.heads))
            model = models["dense" if s == "dense" else "finetuned"]
            for pr in precisions:
                scores[pr].append(quantized_nll(model, pr, windows, calib, cfg.heads))
        for pr in precisions:
            iv = paired_interval(base, scores[pr], lambda d, q: loss_of(d, q, False))
            rows.append(
                PrecisionQuality(
                    pr, s, float(np.mean([x.mean() for x in scores[pr]])), iv, iv.high <= max_delta, max_delta
                )
            )
    return rows
