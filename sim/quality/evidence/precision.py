"""Quality gates per precision: the digits reference MLP (sim.quality.references.reference) evaluated at each
operand precision, combined with N:M pruning, against the dense FP32 model of the same seed.

Quantisation recipes:

* ``int8`` / ``int4``: symmetric per-output-channel weights (scale = max|W[c]| / (2**(b-1) - 1), round
  to nearest, clip) and symmetric per-tensor activations calibrated on held-out data (the last
  ``CALIB_FRACTION`` of the training split, never the test set): scale = max|a| / (2**(b-1) - 1).
  Products accumulate exactly (integer accumulator), rescaled to float.
* ``fp8-e4m3`` / ``fp8-e5m2``: one per-tensor scale for the weights and one for each layer's input,
  mapping the tensor's max |value| (activations: on the calibration data) to the format's largest
  finite value; values are rounded to the nearest FP8 value (hw.fp_golden.encode, ties to even).
* ``fp16`` / ``bf16``: weights and activations rounded to the format (RNE), no scale (as FP16 and
  BF16 inference is deployed: a cast).

FP accumulation is modelled with numpy float32 matrix products (binary32 sums; the hardware's
index-order RNE/FTZ sums are bit-exact in hw.fp_golden, the order difference is far below the
accuracy resolution of a 450-image test set). Biases stay FP32; the logits' argmax decides.

The delta is the accuracy lost against the dense FP32 model, with a paired percentile-bootstrap
interval over seeds and test images (sim.quality.evidence.stats.paired_interval). Gate: the interval's upper
end is at most ``max_delta`` (default sim.quality.references.reference.DEFAULT_MAX_QUALITY_DELTA).
"""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np

from hw.errors import InputError
from hw.fp_golden import decode, encode
from hw.precision import FORMATS, INT_BITS, check_precision
from sim.quality.evidence.stats import Interval, loss_of, paired_interval
from sim.quality.references.mlp import MLP
from sim.quality.references.reference import DEFAULT_MAX_QUALITY_DELTA, parse_nm, reference_experiment

__all__ = [
    "quantized_forward",
    "precision_quality",
    "PrecisionQuality",
    "CALIB_FRACTION",
    "check_gate_args",
    "quant_weights",
    "act_scale",
    "quant_acts",
]

#: the float formats used without a scale (a cast), as FP16 and BF16 inference is run
UNSCALED = ("fp16", "bf16")
#: [A] fraction of the training split held out for activation calibration (never the test set)
CALIB_FRACTION = 0.2


def _fp_round(x: np.ndarray, precision: str) -> np.ndarray:
    """Round to the nearest value of a float format (values, float64)."""
    f = FORMATS[precision]
    bits = encode(x, f)
    s, sig, exp, _, _ = decode(bits, f)
    return np.where(s == 1, -1.0, 1.0) * sig * np.exp2(exp.astype(np.float64))


def quant_weights(w: np.ndarray, precision: str) -> np.ndarray:
    """``w`` (out, in) quantised to ``precision`` (float64 values): INT per output row, FP8 per
    tensor, FP16 and BF16 cast."""
    if precision in INT_BITS:
        q = (1 << (INT_BITS[precision] - 1)) - 1
        scale = np.abs(w).max(axis=1, keepdims=True) / q
        scale = np.where(scale > 0, scale, 1.0)
        return np.clip(np.rint(w / scale), -q, q) * scale
    if precision in UNSCALED:
        return _fp_round(w, precision)
    amax = np.abs(w).max()
    scale = amax / FORMATS[precision].max_finite if amax > 0 else 1.0
    return _fp_round(w / scale, precision) * scale


def act_scale(a_calib: np.ndarray, precision: str) -> float:
    """Per-tensor activation scale calibrated on ``a_calib`` (max |a| to the format's largest value)."""
    amax = float(np.abs(a_calib).max())
    if amax == 0:
        return 1.0
    if precision in INT_BITS:
        return amax / ((1 << (INT_BITS[precision] - 1)) - 1)
    return amax / FORMATS[precision].max_finite


def quant_acts(a: np.ndarray, precision: str, scale: float) -> np.ndarray:
    """Activations ``a`` quantised to ``precision`` with ``scale`` (float64 values)."""
    if precision in INT_BITS:
        q = (1 << (INT_BITS[precision] - 1)) - 1
        return np.clip(np.rint(a / scale), -q, q) * scale
    if precision in UNSCALED:
        return _fp_round(a, precision)
    return _fp_round(a / scale, precision) * scale


def quantized_forward(model: MLP, precision: str, x_calib: np.ndarray):
    """A function x -> logits of ``model`` at ``precision`` (weights quantised once; activation
    scales calibrated on ``x_calib``). ``fp32`` returns the model's own forward."""
    if precision == "fp32":
        return model.forward
    check_precision(precision)
    wq = [quant_weights(w, precision) for w in model.weights]
    # calibrate each layer's input scale on the calibration data, layer by layer through the
    # quantised network (what a deployment calibrator sees)
    scales = []
    h = x_calib
    last = len(wq) - 1
    for i, (w, b) in enumerate(zip(wq, model.biases, strict=True)):
        s = act_scale(h, precision)
        scales.append(s)
        h = (quant_acts(h, precision, s).astype(np.float32) @ w.T.astype(np.float32)).astype(np.float64) + b
        if i < last:
            h = np.maximum(h, 0.0)

    def forward(x: np.ndarray) -> np.ndarray:
        h = x
        for i, (w, b) in enumerate(zip(wq, model.biases, strict=True)):
            h = (quant_acts(h, precision, scales[i]).astype(np.float32) @ w.T.astype(np.float32)).astype(
                np.float64
            ) + b
            if i < last:
                h = np.maximum(h, 0.0)
        return h

    return forward


@dataclass
class PrecisionQuality:
    precision: str
    sparsity: str
    accuracy: float  # mean over seeds
    delta: Interval  # accuracy lost against the dense FP32 model
    passed: bool
    max_delta: float

    def to_json(self) -> dict:
        return {
            "precision": self.precision,
            "sparsity": self.sparsity,
            "accuracy": self.accuracy,
            "delta": self.delta.to_json(),
            "pass": self.passed,
            "max_delta": self.max_delta,
        }


def check_gate_args(precisions, seeds, max_delta: float | None) -> float:
    """Validate a per-precision quality run's arguments (fp32 or a hw.precision format; at least one
    seed); returns the gate's limit (sim.quality.references.reference's default when None)."""
    for p in precisions:
        if p != "fp32":
            check_precision(p, where="--precision")
    if not seeds:
        raise InputError("need at least one seed", where="seeds")
    return DEFAULT_MAX_QUALITY_DELTA if max_delta is None else float(max_delta)


def precision_quality(
    precisions,
    sparsities=("2:4", "dense"),
    seeds=(0, 1, 2),
    *,
    max_delta: float | None = None,
    experiments: dict | None = None,
) -> list[PrecisionQuality]:
    """One row per (precision, sparsity): the reference MLP (dense, or N:M pruned and fine-tuned by the
    ASP recipe) at that precision against the dense FP32 model of the same seed. ``experiments``:
    {(seed, n, m): ReferenceResult} to reuse (computed here when absent)."""
    max_delta = check_gate_args(precisions, seeds, max_delta)
    experiments = {} if experiments is None else experiments
    nm_of = {s: ((2, 4) if s == "dense" else parse_nm(s)) for s in sparsities}
    rows = []
    for s in sparsities:
        n, m = nm_of[s]
        base_scores: list[np.ndarray] = []
        scores: dict[str, list[np.ndarray]] = {p: [] for p in precisions}
        for seed in seeds:
            key = (seed, n, m)
            if key not in experiments:
                experiments[key] = reference_experiment(seed, n, m)
            r = experiments[key]
            xtr, ytr, xte, yte = r.models["data"]
            calib = xtr[int(len(xtr) * (1 - CALIB_FRACTION)) :]
            dense = r.models["dense"]
            model = dense if s == "dense" else r.models["finetuned"]
            base_scores.append((np.argmax(dense.forward(xte), axis=1) == yte).astype(float))
            for p in precisions:
                scores[p].append(
                    (np.argmax(quantized_forward(model, p, calib)(xte), axis=1) == yte).astype(float)
                )
        for p in precisions:
            iv = paired_interval(base_scores, scores[p], lambda d, q: loss_of(d, q, True))
            rows.append(
                PrecisionQuality(
                    p, s, float(np.mean([x.mean() for x in scores[p]])), iv, iv.high <= max_delta, max_delta
                )
            )
    return rows
