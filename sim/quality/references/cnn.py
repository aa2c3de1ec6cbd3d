"""The CNN reference: a small convolutional network on the digits images the MLP reference uses,
trained here with ``autograd``, pruned N:M by the ASP recipe; the CNN workloads' activity trace
(sim.quality.traces.family_traces) takes its im2col activations and pruned weights.

* **Data**: scikit-learn's bundled 8x8 digits, the split of sim.quality.references.mlp.load_digits_split
  (seeded, stratified, 450 test images), pixels in [0, 1], one channel, NHWC.
* **Model** [A] (sizes chosen to train in seconds on one core): conv1 3x3, 1 -> 16 channels,
  ReLU; conv2 3x3, 16 -> 32, ReLU (both stride 1, zero padding 1); 2x2 average pooling; fc1
  512 -> 64, ReLU; fc2 64 -> 10 logits. Every convolution runs as a GEMM on its im2col patches
  (``(images * H * W, R * S * Cin)``, input channel fastest), so its weight matrix is
  ``(Cout, R * S * Cin)`` and an N:M group of the reduction is M input channels of one tap: the
  axis ASP groups a convolution's weight along (sim.quality.prune.pruning.reduction_axis).
* **Training**: Adam (Kingma & Ba 2015 defaults, :class:`sim.quality.references.mlp.TrainConfig`), softmax
  cross-entropy, He-normal initialisation, gradients by ``autograd``; ``CNN_EPOCHS`` epochs.
* **ASP recipe** (NVIDIA apex ``contrib/sparsity``, as the MLP reference): dense training, one-shot
  N:M magnitude pruning of every layer the shared ASP verdict allows (sim.quality.prune.pruning.prune_layer:
  conv1 has one input channel and fc2 ten outputs, both stay dense; conv2 and fc1 are pruned), then
  fine-tuning with the masks fixed, the same optimiser and epoch count.

Cached on disk (``<sparsepe cache>/quality/cnn-<key>.npz``: accuracies and both models' weights),
keyed by the digest of this file and the modules it trains and prunes with, the seed and N:M.
"""

from __future__ import annotations

import hashlib
import io
import json
import time
from dataclasses import asdict, dataclass, field
from pathlib import Path

import autograd.numpy as anp
import numpy as np
from autograd import grad
from threadpoolctl import threadpool_limits

from hw.errors import InputError
from hw.host import cache_root, exclusive_lock, write_file
from hw.nm import check_nm
from sim.quality.digest import modules_digest
from sim.quality.prune.pruning import prune_layer
from sim.quality.references.mlp import TrainConfig, load_digits_split

__all__ = [
    "CNN_EPOCHS",
    "TINY_EPOCHS",
    "CNNResult",
    "cnn_experiment",
    "im2col",
    "gemm_weight",
    "layer_gemms",
    "accuracy_of",
    "code_digest",
    "LAYERS",
]

#: Epochs of the dense training and of the fine-tuning [A]: the digits CNN converges in 10.
CNN_EPOCHS = 10
#: Epochs of the test-size run (``$SPARSEPE_QUALITY_REFERENCE=tiny``, as the transformer's TINY)
TINY_EPOCHS = 2
#: (name, kind, shape) of every weight layer: convolutions (Cout, Cin, R, S), linear (out, in)
LAYERS = (
    ("conv1", "conv", (16, 1, 3, 3)),
    ("conv2", "conv", (32, 16, 3, 3)),
    ("fc1", "gemm", (64, 512)),
    ("fc2", "gemm", (10, 64)),
)
_HW = 8  # digits images are 8 x 8


def _patch_index(h: int, w: int, r: int = 3, s: int = 3) -> np.ndarray:
    """Flat indices into a zero-padded (h+2, w+2) image of each output pixel's r x s taps: (h*w, r*s)."""
    rows = np.arange(h)[:, None, None, None] + np.arange(r)[None, None, :, None]
    cols = np.arange(w)[None, :, None, None] + np.arange(s)[None, None, None, :]
    return (rows * (w + 2) + cols).reshape(h * w, r * s)


_IDX = _patch_index(_HW, _HW)  # conv1 and conv2 both run at 8 x 8 (pooling follows conv2)


def im2col(x, xp=np):
    """NHWC images (B, 8, 8, C) -> im2col patches (B * 64, 9 * C), tap-major, channel fastest
    (3x3 kernel, stride 1, zero padding 1). ``xp``: numpy or autograd.numpy."""
    b, h, w, c = x.shape
    padded = xp.concatenate([xp.zeros((b, 1, w, c)), x, xp.zeros((b, 1, w, c))], axis=1)
    padded = xp.concatenate([xp.zeros((b, h + 2, 1, c)), padded, xp.zeros((b, h + 2, 1, c))], axis=2)
    flat = xp.reshape(padded, (b, (h + 2) * (w + 2), c))
    return xp.reshape(flat[:, _IDX, :], (b * h * w, 9 * c))


def gemm_weight(w, xp=np):
    """A convolution weight (Cout, Cin, R, S) as its GEMM matrix (Cout, R * S * Cin), the column
    order of :func:`im2col`; a linear weight as is."""
    if len(w.shape) == 2:
        return w
    co, ci, r, s = w.shape
    return xp.reshape(xp.transpose(w, (0, 2, 3, 1)), (co, r * s * ci))


def _pool(h, xp=np):
    b, hh, ww, c = h.shape
    return xp.mean(xp.reshape(h, (b, hh // 2, 2, ww // 2, 2, c)), axis=(2, 4))


def _forward(params, x, xp=np, keep=None):
    """Logits of the images ``x`` (B, 64); ``keep`` (a dict): each layer's GEMM input (rows, K)."""
    b = x.shape[0]
    h = xp.reshape(x, (b, _HW, _HW, 1))
    for name, cout in (("conv1", 16), ("conv2", 32)):
        cols = im2col(h, xp)
        if keep is not None:
            keep[name] = cols
        h = xp.maximum(xp.dot(cols, gemm_weight(params[name], xp).T) + params[name + ".b"], 0.0)
        h = xp.reshape(h, (b, _HW, _HW, cout))
    h = xp.reshape(_pool(h, xp), (b, -1))
    if keep is not None:
        keep["fc1"] = h
    h = xp.maximum(xp.dot(h, params["fc1"].T) + params["fc1.b"], 0.0)
    if keep is not None:
        keep["fc2"] = h
    return xp.dot(h, params["fc2"].T) + params["fc2.b"]


def _loss(params, x, y):
    logits = _forward(params, x, anp)
    z = logits - anp.max(logits, axis=1, keepdims=True)
    return anp.mean(anp.log(anp.sum(anp.exp(z), axis=1)) - anp.sum(z * np.eye(10)[y], axis=1))


def _init(rng: np.random.Generator) -> dict[str, np.ndarray]:
    """He-normal weights (std sqrt(2 / fan_in)), zero biases."""
    p = {}
    for name, _, shape in LAYERS:
        fan_in = int(np.prod(shape[1:]))
        p[name] = rng.normal(0.0, np.sqrt(2.0 / fan_in), shape)
        p[name + ".b"] = np.zeros(shape[0])
    return p


def _train(params, data, cfg: TrainConfig, rng, masks: dict[str, np.ndarray] | None = None):
    """Adam for ``cfg.epochs`` epochs; ``masks`` stay fixed (gradients masked, weights re-zeroed)."""
    xtr, ytr = data
    p = {k: v.copy() for k, v in params.items()}
    masks = masks or {}
    g_fn = grad(_loss)
    mom = {k: np.zeros_like(v) for k, v in p.items()}
    vel = {k: np.zeros_like(v) for k, v in p.items()}
    t = 0
    for _ in range(cfg.epochs):
        order = rng.permutation(len(ytr))
        for s in range(0, len(ytr), cfg.batch):
            idx = order[s : s + cfg.batch]
            g = g_fn(p, xtr[idx], ytr[idx])
            t += 1
            c1, c2 = 1.0 - cfg.beta1**t, 1.0 - cfg.beta2**t
            for k in p:
                gk = g[k] * masks[k] if k in masks else g[k]
                mom[k] = cfg.beta1 * mom[k] + (1 - cfg.beta1) * gk
                vel[k] = cfg.beta2 * vel[k] + (1 - cfg.beta2) * gk * gk
                p[k] = p[k] - cfg.lr * (mom[k] / c1) / (np.sqrt(vel[k] / c2) + cfg.eps)
                if k in masks:
                    p[k] = p[k] * masks[k]
    return p


def accuracy_of(params, x, y) -> float:
    return float(np.mean(np.argmax(_forward(params, x), axis=1) == y))


def layer_gemms(params, x) -> list[tuple[str, np.ndarray, np.ndarray]]:
    """(name, GEMM weight (out, K), GEMM input (rows, K)) of each layer on the images ``x``."""
    keep: dict[str, np.ndarray] = {}
    _forward(params, x, np, keep)
    return [(name, gemm_weight(params[name]), keep[name]) for name, _, _ in LAYERS]


@dataclass
class CNNResult:
    """The CNN reference's accuracies (fractions of the 450 test images) and models."""

    seed: int
    n: int
    m: int
    dense_accuracy: float
    oneshot_accuracy: float
    finetuned_accuracy: float
    layers_pruned: dict
    epochs: int
    seconds: float
    cached: bool = False
    models: dict = field(default_factory=dict, repr=False)  # dense, finetuned: {name: array}; data

    def to_json(self) -> dict:
        d = asdict(self)
        d.pop("models")
        return d


#: modules whose code decides the result (its cache key)
_CODE = ("references/cnn.py", "references/mlp.py", "prune/pruning.py")


def code_digest() -> str:
    """Digest of the code the reference's results depend on (its cache key)."""
    return modules_digest(_CODE)


def cnn_experiment(
    seed: int = 0, n: int = 2, m: int = 4, *, epochs: int = CNN_EPOCHS, use_cache: bool = True
) -> CNNResult:
    """Train (or load from the cache) the CNN reference: dense, one-shot N:M, ASP fine-tuned,
    ``epochs`` epochs each."""
    check_nm(n, m)
    if epochs < 1:
        raise InputError(f"must be >= 1, got {epochs}", where="epochs")
    if seed < 0:
        raise InputError(f"must be >= 0, got {seed}", where="--seed")
    data = load_digits_split(seed)
    key = hashlib.sha256(
        json.dumps({"code": code_digest(), "seed": seed, "n": n, "m": m, "epochs": epochs}).encode()
    ).hexdigest()[:24]
    path = cache_root() / "quality" / f"cnn-{key}.npz"
    if use_cache:
        hit = _load(path, data)
        if hit is not None:
            return hit
    with exclusive_lock(path.with_suffix(".lock")):
        hit = _load(path, data) if use_cache else None
        if hit is not None:
            return hit
        res = _experiment(seed, n, m, data, epochs)
        arrays = {f"{run}/{k}": v for run in ("dense", "finetuned") for k, v in res.models[run].items()}
        buf = io.BytesIO()
        np.savez(buf, meta=np.array(json.dumps(res.to_json())), **arrays)
        try:
            write_file(path, buf.getvalue())
        except InputError:
            pass  # no writable cache: the result is still returned
        return res


def _load(path: Path, data) -> CNNResult | None:
    if not path.is_file():
        return None
    try:
        with np.load(path) as z:
            meta = json.loads(str(z["meta"]))
            models: dict = {"dense": {}, "finetuned": {}}
            for k in z.files:
                if "/" in k:
                    run, name = k.split("/", 1)
                    models[run][name] = z[k]
    except (OSError, ValueError, KeyError):
        return None  # damaged: recomputed
    meta["cached"] = True
    return CNNResult(**meta, models={**models, "data": data})


def _experiment(seed: int, n: int, m: int, data, epochs: int) -> CNNResult:
    t0 = time.perf_counter()
    xtr, ytr, xte, yte = data
    rngs = [np.random.default_rng(s) for s in np.random.SeedSequence([seed, n, m]).spawn(3)]
    cfg = TrainConfig(epochs=epochs)
    with threadpool_limits(1):  # small GEMMs: one BLAS thread is fastest
        dense = _train(_init(rngs[0]), (xtr, ytr), cfg, rngs[1])
        masks, pruned = {}, {}
        for name, kind, _ in LAYERS:
            layer = prune_layer(name, dense[name], n, m, kind)
            pruned[name] = layer.verdict.reason if not layer.pruned else True
            if layer.mask is not None:  # the layer is pruned
                masks[name] = layer.mask.astype(np.float64)
        oneshot = {k: v * masks[k] if k in masks else v for k, v in dense.items()}
        ft = _train(oneshot, (xtr, ytr), cfg, rngs[2], masks)
    return CNNResult(
        seed=seed,
        n=n,
        m=m,
        dense_accuracy=accuracy_of(dense, xte, yte),
        oneshot_accuracy=accuracy_of(oneshot, xte, yte),
        finetuned_accuracy=accuracy_of(ft, xte, yte),
        layers_pruned=pruned,
        epochs=epochs,
        seconds=time.perf_counter() - t0,
        models={"dense": dense, "finetuned": ft, "data": data},
    )
