"""Model quality under N:M pruning: the built-in reference experiment, the equal-latency
comparison and the quality guardrail.

Reference experiment (fast, deterministic, float64 numpy, no download): an MLP ``64-h-h-10`` on
scikit-learn's bundled digits dataset.

1. dense baseline (Adam, :class:`TrainConfig`);
2. one-shot N:M magnitude pruning of every layer the shared ASP verdict allows
   (``sim.asp_rules``: the 10-class head fails ASP's ``size(0) % 8`` rule and stays dense, the
   realistic ASP outcome);
3. fine-tuning with the mask fixed, re-running the same optimiser, hyper-parameters and epoch
   count as the dense training (NVIDIA ASP recipe, apex ``contrib/sparsity/README.md``);
4. gradual pruning instead (Zhu & Gupta 2017 cubic ramp ending at N:M), same session length;
5. equal latency: the dense width ``h_d`` (multiple of 16) of the same family whose latency on
   the dense design (by default the same array with dense PEs, ``sim.perf``) is the largest not
   exceeding the sparse model's on the sparse design, trained with the same recipe;
   ``delta_at_equal_latency = acc_sparse - acc_dense(h_d)`` (positive: sparse wins).

Accuracies are fractions of the test split (450 of 1,797 images, stratified, seeded).
"""

from __future__ import annotations

import math
import time
from collections.abc import Callable, Sequence
from dataclasses import asdict, dataclass, field
from typing import TypedDict

import numpy as np

from hw.errors import InputError
from hw.nm import check_nm
from sim.asp_rules import ACT_GEMM, WEIGHT_GEMM, weight_verdict
from sim.perf import ArrayConfig, simulate
from sim.quality.references.mlp import (
    TrainConfig,
    accuracy,
    asp_masks,
    init_mlp,
    load_digits_split,
    train,
    train_gradual,
)
from sim.workloads import Workload, make_layer

__all__ = [
    "GemmShape",
    "LatencyFn",
    "DescribedLatency",
    "mlp_gemms",
    "analytic_latency_fn",
    "perf_latency_fn",
    "default_latency_fn",
    "default_dense_latency_fn",
    "DEFAULT_DESIGN",
    "EqualLatency",
    "equal_latency_width",
    "ReferenceResult",
    "reference_experiment",
    "check_guardrail",
    "quality_loss",
    "DEFAULT_MAX_QUALITY_DELTA",
    "parse_nm",
    "REFERENCE_HIDDEN",
    "REFERENCE_BATCH",
]

#: Hidden width of the reference sparse model (64-64-64-10; 64 % 16 == 0 passes ASP rules).
REFERENCE_HIDDEN = 64
#: Samples per inference batch when timing the MLP on a design (GEMM M dimension).
REFERENCE_BATCH = 256
#: Default guardrail [A]: the acceptance bound of the reference experiment (1.5 points).
DEFAULT_MAX_QUALITY_DELTA = 0.015


def parse_nm(text: str) -> tuple[int, int]:
    """``"2:4"`` -> (2, 4), validated by ``hw.nm.check_nm``."""
    parts = str(text).split(":")
    try:
        n, m = (int(p) for p in parts)
    except ValueError:
        raise InputError(f"expected N:M such as 2:4, got {text!r}", where="--nm") from None
    try:
        check_nm(n, m)
    except InputError as exc:
        raise InputError(str(exc), where="--nm") from None
    return n, m


# ---------------------------------------------------------------------------------------------
# latency of an MLP on a design
# ---------------------------------------------------------------------------------------------


@dataclass(frozen=True)
class GemmShape:
    """One weight GEMM ``C[M x N] = A[M x K] . W^T``: M samples, N outputs, K reduction.
    ``nm`` is the weight's N:M pattern, or None when it runs dense; ``kind`` a sim.asp_rules
    layer kind (``act_gemm`` for activation x activation products such as attention scores)."""

    name: str
    m: int
    n: int
    k: int
    nm: tuple[int, int] | None
    kind: str = WEIGHT_GEMM

    @property
    def macs(self) -> int:
        return self.m * self.n * self.k


#: A latency model: GEMMs of one inference batch -> latency (any fixed unit, e.g. cycles).
LatencyFn = Callable[[Sequence[GemmShape]], float]


@dataclass(frozen=True)
class DescribedLatency:
    """A latency model (called like a :data:`LatencyFn`) with the words that name it in the
    results (``latency_model``)."""

    fn: LatencyFn
    description: str

    def __call__(self, gemms: Sequence[GemmShape]) -> float:
        return self.fn(gemms)


def mlp_gemms(
    widths: Sequence[int], n: int, m: int, *, sparse: bool, batch: int = REFERENCE_BATCH
) -> list[GemmShape]:
    """The GEMMs of an MLP with the given widths; with ``sparse`` every layer that passes the
    shared ASP verdict is N:M, the others dense (exactly the layers the pruning prunes)."""
    out = []
    for i, (k, nout) in enumerate(zip(widths[:-1], widths[1:], strict=True)):
        ok = sparse and weight_verdict(WEIGHT_GEMM, (nout, k), n, m).sparsifiable
        out.append(GemmShape(f"fc{i}", batch, nout, k, (n, m) if ok else None))
    return out


def analytic_latency_fn(rows: int = 16, cols: int = 16, n: int = 2, m: int = 4) -> DescribedLatency:
    """An analytic latency model independent of ``sim.perf``: ``cycles = MACs / (PEs * rate)``.

    Per the PE vocabulary of docs/design.md, a sparse PE does N multiplies per cycle and covers
    M reduction elements of an N:M weight (rate M MACs/cycle) and runs a dense group as M/N
    sparse groups (rate N MACs/cycle). No fill/drain, tiling or memory stalls.
    """
    check_nm(n, m)
    pes = rows * cols

    def latency(gemms: Sequence[GemmShape]) -> float:
        return float(sum(g.macs / (pes * (m if g.nm is not None else n)) for g in gemms))

    return DescribedLatency(latency, f"analytic MACs/(PEs*rate), {rows}x{cols} {n}:{m} sparse PEs")


class ArrayDesign(TypedDict):
    """The ``sim.perf.ArrayConfig`` fields of :data:`DEFAULT_DESIGN`."""

    rows: int
    cols: int
    dataflow: str


#: Design the CLI times the MLPs on: a 16x16 weight-stationary array of sparsepe N:M PEs, the
#: other parameters at ``sim.perf.ArrayConfig``'s defaults.
DEFAULT_DESIGN: ArrayDesign = {"rows": 16, "cols": 16, "dataflow": "ws"}


def perf_latency_fn(arch=None, *, n: int = 2, m: int = 4) -> DescribedLatency:
    """Latency from ``sim.perf``'s cycle model (total cycles incl. memory stalls) on ``arch``
    (a ``sim.perf.ArrayConfig``; default :data:`DEFAULT_DESIGN` with the given N:M)."""
    arch = arch or ArrayConfig(**DEFAULT_DESIGN, n=n, m=m)

    def latency(gemms: Sequence[GemmShape]) -> float:
        layers = tuple(
            make_layer(
                g.name,
                g.kind,
                g.m,
                g.n,
                g.k,
                weight_shape=None if g.kind == ACT_GEMM else (g.n, g.k),
                sparsifiable=g.nm is not None,
                n=arch.n,
                m=arch.m,
            )
            for g in gemms
        )
        return float(simulate(Workload("mlp", layers), arch).total_cycles)

    return DescribedLatency(
        latency,
        f"sim.perf cycles, {arch.rows}x{arch.cols} {arch.dataflow.upper()} "
        f"{arch.n}:{arch.m} {'sparse' if arch.sparse else 'dense'} PEs",
    )


def default_latency_fn(n: int = 2, m: int = 4) -> DescribedLatency:
    """Latency model of the sparse model: ``sim.perf`` on :data:`DEFAULT_DESIGN` (N:M sparse PEs)."""
    return perf_latency_fn(n=n, m=m)


def default_dense_latency_fn(n: int = 2, m: int = 4) -> DescribedLatency:
    """Latency model of the dense model of equal latency: ``sim.perf`` on the same array as
    :data:`DEFAULT_DESIGN` with dense PEs (``ArrayConfig.sparse = False``)."""
    return perf_latency_fn(ArrayConfig(**DEFAULT_DESIGN, n=n, m=m, sparse=False))


@dataclass(frozen=True)
class EqualLatency:
    """The dense width matched to a sparse model's latency on one design."""

    sparse_hidden: int
    dense_hidden: int
    sparse_latency: float
    dense_latency: float
    candidates: dict[int, float] = field(default_factory=dict)


def equal_latency_width(
    latency_fn: LatencyFn,
    sparse_hidden: int,
    n: int = 2,
    m: int = 4,
    *,
    inputs: int = 64,
    classes: int = 10,
    depth: int = 2,
    step: int = 16,
    max_hidden: int | None = None,
    batch: int = REFERENCE_BATCH,
    dense_latency_fn: LatencyFn | None = None,
) -> EqualLatency:
    """Dense hidden width (multiple of ``step``) of the ``inputs-h*depth-classes`` family whose
    latency is closest to, without exceeding, the N:M-sparse model of width ``sparse_hidden``.
    The sparse model is timed with ``latency_fn``, the dense candidates with ``dense_latency_fn``
    (the dense design; default: the same ``latency_fn``)."""
    dense_fn = dense_latency_fn or latency_fn

    def widths(h: int) -> list[int]:
        return [inputs] + [h] * depth + [classes]

    ls = latency_fn(mlp_gemms(widths(sparse_hidden), n, m, sparse=True, batch=batch))
    top = max_hidden or 4 * sparse_hidden
    cands = {
        h: dense_fn(mlp_gemms(widths(h), n, m, sparse=False, batch=batch)) for h in range(step, top + 1, step)
    }
    fit = [h for h, lat in cands.items() if lat <= ls * (1 + 1e-12)]
    if not fit:
        raise InputError(
            f"no dense width >= {step} runs within the sparse model's latency {ls:g}", where="equal latency"
        )
    best = max(fit, key=lambda h: (cands[h], h))
    return EqualLatency(sparse_hidden, best, ls, cands[best], cands)


# ---------------------------------------------------------------------------------------------
# guardrail
# ---------------------------------------------------------------------------------------------


def quality_loss(delta: float) -> float:
    """Accuracy lost by the sparse model (fraction): ``-delta``. This is the ``quality_delta``
    metric that the sweep's ``max_quality_delta`` limit bounds (feasible when <= the limit)."""
    return 0.0 - float(delta)  # 0.0 - x, not -x: no negative zero in reports


def check_guardrail(delta: float, max_delta: float = DEFAULT_MAX_QUALITY_DELTA) -> tuple[bool, str]:
    """Quality guardrail. ``delta = acc_sparse - acc_dense`` (fractions; negative = sparse
    loses); ``max_delta`` (>= 0, fraction: 0.01 = 1 point) is the largest loss tolerated.
    Returns ``(ok, message)``."""
    for name, v in (("delta", delta), ("max_quality_delta", max_delta)):
        if (
            isinstance(v, bool)
            or not isinstance(v, (int, float, np.floating, np.integer))
            or not math.isfinite(v)
        ):
            raise InputError(f"must be a finite number, got {v!r}", where=name)
    if max_delta < 0:
        raise InputError(
            f"must be >= 0 (a tolerated accuracy loss), got {max_delta:g}", where="max_quality_delta"
        )
    loss = quality_loss(delta)
    if loss <= max_delta + 1e-12:
        return True, (
            f"quality guardrail met: sparse {'gains' if delta >= 0 else 'loses'} "
            f"{abs(delta) * 100:.2f} points (limit: lose at most {max_delta * 100:.2f})"
        )
    return False, (
        f"quality guardrail violated: sparse loses {loss * 100:.2f} points, "
        f"more than the {max_delta * 100:.2f} allowed"
    )


# ---------------------------------------------------------------------------------------------
# reference experiment
# ---------------------------------------------------------------------------------------------


@dataclass
class ReferenceResult:
    """Everything the reference experiment measured (accuracies are fractions)."""

    seed: int
    n: int
    m: int
    widths: list[int]
    layers_pruned: list[bool]
    dense_accuracy: float
    oneshot_accuracy: float
    finetuned_accuracy: float
    gradual_accuracy: float
    sparse_hidden: int
    dense_equal_latency_hidden: int
    sparse_params: int
    sparse_nonzero_params: int
    dense_equal_latency_params: int
    sparse_latency: float
    dense_equal_latency_latency: float
    dense_equal_latency_accuracy: float
    delta_at_equal_latency: float
    latency_model: str
    dense_latency_model: str
    train: dict
    seconds: float
    models: dict = field(default_factory=dict, repr=False)

    def to_json(self) -> dict:
        d = asdict(self)
        d.pop("models")
        return d


def _rngs(seed: int, k: int) -> list[np.random.Generator]:
    return [np.random.default_rng(s) for s in np.random.SeedSequence(seed).spawn(k)]


def _asp_recipe(widths, data, cfg: TrainConfig, n: int, m: int, rngs, progress):
    """Dense training, one-shot pruning, fixed-mask fine-tuning. Returns models and accuracies."""
    xtr, ytr, xte, yte = data
    dense = train(init_mlp(widths, rngs[0]), xtr, ytr, cfg, rngs[1], on_epoch=progress)
    masks = asp_masks(dense, n, m)
    oneshot = dense.copy()
    for w, mk in zip(oneshot.weights, masks, strict=True):
        if mk is not None:
            w *= mk
    finetuned = train(oneshot.copy(), xtr, ytr, cfg, rngs[2], masks, on_epoch=progress)
    return dense, oneshot, finetuned, masks


def reference_experiment(
    seed: int = 0,
    n: int = 2,
    m: int = 4,
    *,
    hidden: int = REFERENCE_HIDDEN,
    cfg: TrainConfig | None = None,
    latency_fn: LatencyFn | None = None,
    batch: int = REFERENCE_BATCH,
    progress: Callable[[str], None] | None = None,
    dense_latency_fn: LatencyFn | None = None,
) -> ReferenceResult:
    """Run the built-in experiment (a few seconds on one core). Same seed, same result.

    Equal latency: the sparse model is timed with ``latency_fn`` (default: sim.perf on
    :data:`DEFAULT_DESIGN`, N:M sparse PEs), the dense candidates with ``dense_latency_fn``
    (default: the same array with dense PEs when ``latency_fn`` is not given, else ``latency_fn``)."""
    check_nm(n, m)
    if hidden <= 0 or hidden % 16:
        raise InputError(
            f"hidden width must be a positive multiple of 16 (ASP rules), got {hidden}", where="hidden"
        )
    if seed < 0:
        raise InputError(f"must be >= 0, got {seed}", where="--seed")
    cfg = cfg or TrainConfig()
    if latency_fn is None:
        latency_fn = default_latency_fn(n, m)
        dense_latency_fn = dense_latency_fn or default_dense_latency_fn(n, m)
    dense_latency_fn = dense_latency_fn or latency_fn
    t0 = time.perf_counter()
    data = load_digits_split(seed)
    xtr, ytr, xte, yte = data
    widths = [xtr.shape[1], hidden, hidden, 10]
    r = _rngs(seed, 8)

    def tick(stage: str):
        return (lambda epoch: progress(f"{stage}: epoch {epoch + 1}/{cfg.epochs}")) if progress else None

    dense, oneshot, finetuned, masks = _asp_recipe(
        widths, data, cfg, n, m, r[0:3], tick("dense + ASP fine-tune")
    )
    gradual = train_gradual(dense.copy(), xtr, ytr, cfg, r[3], n, m, on_epoch=tick("gradual"))

    eq = equal_latency_width(
        latency_fn,
        hidden,
        n,
        m,
        inputs=widths[0],
        classes=widths[-1],
        batch=batch,
        dense_latency_fn=dense_latency_fn,
    )
    if eq.dense_hidden == hidden:
        dense_eq = dense
    else:
        dense_eq = train(
            init_mlp([widths[0], eq.dense_hidden, eq.dense_hidden, 10], r[4]),
            xtr,
            ytr,
            cfg,
            r[5],
            on_epoch=tick(f"dense h={eq.dense_hidden}"),
        )
    acc_ft = accuracy(finetuned, xte, yte)
    acc_eq = accuracy(dense_eq, xte, yte)
    return ReferenceResult(
        seed=seed,
        n=n,
        m=m,
        widths=widths,
        layers_pruned=[mk is not None for mk in masks],
        dense_accuracy=accuracy(dense, xte, yte),
        oneshot_accuracy=accuracy(oneshot, xte, yte),
        finetuned_accuracy=acc_ft,
        gradual_accuracy=accuracy(gradual, xte, yte),
        sparse_hidden=hidden,
        dense_equal_latency_hidden=eq.dense_hidden,
        sparse_params=finetuned.parameter_count,
        sparse_nonzero_params=finetuned.nonzero_parameter_count(),
        dense_equal_latency_params=dense_eq.parameter_count,
        sparse_latency=eq.sparse_latency,
        dense_equal_latency_latency=eq.dense_latency,
        dense_equal_latency_accuracy=acc_eq,
        delta_at_equal_latency=acc_ft - acc_eq,
        latency_model=getattr(latency_fn, "description", getattr(latency_fn, "__name__", "custom")),
        dense_latency_model=getattr(
            dense_latency_fn, "description", getattr(dense_latency_fn, "__name__", "custom")
        ),
        train={
            **asdict(cfg),
            "optimizer": "adam",
            "train_samples": int(len(ytr)),
            "test_samples": int(len(yte)),
            "dataset": "sklearn.datasets.load_digits",
            "gradual": "Zhu & Gupta 2017 cubic ramp over 75% of steps",
        },
        seconds=time.perf_counter() - t0,
        models={
            "dense": dense,
            "oneshot": oneshot,
            "finetuned": finetuned,
            "gradual": gradual,
            "dense_equal_latency": dense_eq,
            "masks": masks,
            "data": data,
        },
    )
