"""Per-layer report of pruning a user weight file (``sparsepe quality --weights FILE`` without an eval).

Every weight (sim.quality.team.weights.classify) is pruned one-shot N:M (sim.quality.prune.oneshot: the
ASP rules, the tensor's layout, the method), and each layer gets the retained magnitude share
``sum|W_p| / sum|W|``, the relative output error ``||X W^T - X W_p^T||_F / ||X W^T||_F`` and the
output SNR ``10 log10(||X W^T||^2 / ||X (W - W_p)^T||^2)`` dB, with W in ``(out, in)`` form (per
expert, summed) on inputs X: the calibration inputs of that layer when given, else the stated
distribution ``X ~ N(0, 1)`` i.i.d., ``CALIB_SAMPLES`` rows, ``numpy.random.default_rng([seed,
layer index])``.
"""

from __future__ import annotations

import functools
from dataclasses import asdict, dataclass
from pathlib import Path

import numpy as np

from hw.errors import InputError
from sim.quality.prune.calibration import Calibration, calibration_from_arrays, calibration_from_spec
from sim.quality.prune.layouts import Layout, LayoutRule
from sim.quality.prune.oneshot import OneShot, prune_tensors
from sim.quality.prune.pruning import kind_for_shape
from sim.quality.prune.tied import config_tie
from sim.quality.team.hooks import HookTimeout
from sim.quality.team.weights import classify, load_tensors

__all__ = ["LayerQuality", "layer_quality", "weights_report", "CALIB_SAMPLES"]

#: Rows of seeded inputs per layer when the calibration gives none (measurement only).
CALIB_SAMPLES = 256


@dataclass(frozen=True)
class LayerQuality:
    """One row of the per-layer report."""

    name: str
    shape: list[int]
    kind: str
    pruned: bool
    reason: str
    nonzero_fraction: float
    retained_magnitude_share: float
    relative_output_error: float
    snr_db: float | None  # None when the output is unchanged (infinite SNR)
    calibration: str
    layout: str | None = None
    reduction_axis: int | None = None
    method: str | None = None

    def to_json(self) -> dict:
        return asdict(self)


def _measure(
    w: np.ndarray, wp: np.ndarray, lay: Layout, x: np.ndarray | None, rng: np.random.Generator
) -> tuple[float, float, float | None, str]:
    """(retained share, relative output error, SNR dB or None, inputs used) of one pruned tensor."""
    a, b = lay.to_matrices(w), lay.to_matrices(wp)
    total = float(np.abs(a).sum())
    share = float(np.abs(b).sum()) / total if total else 1.0
    ny = ne = 0.0
    for e in range(a.shape[0]):
        if x is None:
            xe = rng.standard_normal((CALIB_SAMPLES, a.shape[2]))
        else:
            xe = lay.calibration_columns(x[e] if x.ndim == 3 else x, w.shape)
        y, err = xe @ a[e].T, xe @ (a[e] - b[e]).T
        ny += float(np.sum(y * y))
        ne += float(np.sum(err * err))
    rel = float(np.sqrt(ne / ny)) if ny else (0.0 if ne == 0 else float("inf"))
    snr = None if ne == 0 else (float(10.0 * np.log10(ny / ne)) if ny else float("-inf"))
    rows = CALIB_SAMPLES if x is None else x.shape[-2]
    src = f"seeded N(0,1), {CALIB_SAMPLES} samples" if x is None else f"user, {rows} samples"
    return share, rel, snr, src


def _row(
    name: str, w: np.ndarray, shot: OneShot, x: np.ndarray | None, rng: np.random.Generator
) -> LayerQuality:
    shape = [int(d) for d in w.shape]
    if name not in shot.masks:
        return LayerQuality(
            name,
            shape,
            kind_for_shape(tuple(shape)),
            False,
            shot.skipped.get(name, "not pruned"),
            float(np.count_nonzero(w) / w.size),
            1.0,
            0.0,
            None,
            "none (not pruned)",
        )
    lay = shot.layouts[name]
    wp = shot.tensors[name]
    share, rel, snr, src = _measure(np.asarray(w, np.float64), np.asarray(wp, np.float64), lay, x, rng)
    canon = lay.canonical_shape(tuple(shape))
    return LayerQuality(
        name,
        shape,
        kind_for_shape(canon),
        True,
        f"{lay.name} ({lay.how}); groups along axis {lay.reduction_axis(w.ndim)}",
        float(np.count_nonzero(wp) / wp.size),
        share,
        rel,
        snr,
        src,
        lay.name,
        lay.reduction_axis(w.ndim),
        shot.methods[name],
    )


def layer_quality(
    name: str,
    w: np.ndarray,
    n: int = 2,
    m: int = 4,
    *,
    calib: np.ndarray | None = None,
    rng: np.random.Generator | None = None,
    method: str | None = None,
    layout_rules: list[LayoutRule] | None = None,
) -> LayerQuality:
    """Prune one layer (sim.quality.prune.oneshot) and measure what pruning did to its output."""
    w = np.asarray(w)
    cal = None if calib is None else calibration_from_arrays({name: calib}, "calib")
    shot = prune_tensors({name: w}, n, m, method=method, calibration=cal, layout_rules=layout_rules)
    return _row(name, w, shot, shot.inputs.get(name), rng or np.random.default_rng(0))


def weights_report(
    path: str | Path,
    n: int = 2,
    m: int = 4,
    *,
    seed: int = 0,
    calibration: Calibration | str | Path | None = None,
    method: str | None = None,
    layout_rules: list[LayoutRule] | None = None,
    hook_timeout: HookTimeout | None = None,
    prune_lm_head: bool = False,
) -> tuple[dict, OneShot]:
    """(the per-layer report of pruning every weight of a user file, the pruned checkpoint);
    ``hook_timeout``: the limit of each call of a calibration function (sim.quality.team.hooks); an
    LM head tied to the input embedding is kept dense unless ``prune_lm_head`` (sim.quality.prune.tied)."""
    tensors = load_tensors(path)
    weights, skipped = classify(path, tensors)
    prune = functools.partial(
        prune_tensors,
        tensors,
        n,
        m,
        method=method,
        layout_rules=layout_rules,
        prune_lm_head=prune_lm_head,
        tie=config_tie(path),
    )
    if isinstance(calibration, Calibration) or calibration is None:
        cal = calibration
        shot = prune(calibration=cal)
    else:
        with calibration_from_spec(calibration, timeout=hook_timeout) as cal:
            shot = prune(calibration=cal)
    rows = [
        _row(name, w, shot, shot.inputs.get(name), np.random.default_rng([seed, i]))
        for i, (name, w) in enumerate(weights.items())
    ]
    if not shot.masks and rows and all(r.name in shot.tied for r in rows):
        raise InputError(
            f"its only weight, {rows[0].name!r}, is an LM head tied to the input embedding, kept dense "
            "as simulate --hf-config keeps it: give --prune-lm-head to prune it (and the embedding "
            "with it)",
            where=str(path),
        )
    if not shot.masks:
        first = rows[0]
        raise InputError(
            f"shape {tuple(first.shape)} cannot be tiled by {n}:{m} groups under the ASP rules "
            f"({first.reason}); no tensor in the file can be pruned",
            where=f"{path}: tensor {first.name!r}",
        )
    pruned = [r for r in rows if r.pruned]
    note = (
        (f"inputs of each layer from {shot.calibration['source']} where given; " if cal is not None else "")
        + f"otherwise X ~ N(0, 1) i.i.d., {CALIB_SAMPLES} rows per layer, numpy default_rng([seed, layer index])"
    )
    return {
        "file": str(path),
        "nm": f"{n}:{m}",
        "seed": seed,
        "method": shot.method,
        "calibration": {**shot.calibration, "measured_on": note},
        "layouts": shot.layouts_json(),
        "layers": [r.to_json() for r in rows],
        "skipped": [{"name": k, "reason": v} for k, v in skipped.items()],
        "layers_pruned": len(pruned),
        "layers_dense": len(rows) - len(pruned),
        "tied_lm_head": shot.tied_json(),
    }, shot
