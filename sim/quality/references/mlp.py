"""A small numpy MLP classifier and its training loops (dense, fixed-mask, gradual N:M).

Everything is float64 numpy with one seeded ``numpy.random.Generator`` per training run, so a
run is bit-for-bit repeatable. Weights use the PyTorch layout ``(out, in)`` (``y = x W^T + b``),
the layout ``sim.asp_rules`` and ``hw.golden.compress_nm`` reason about: the reduction dimension
is the last axis.

Optimiser: Adam (Kingma & Ba 2015) with its published defaults beta1 = 0.9, beta2 = 0.999,
eps = 1e-8, on softmax cross-entropy; ReLU hidden layers; He-normal initialisation.
"""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np

from sim.quality.prune.pruning import cubic_sparsity, gradual_nm_mask, prune_layer

__all__ = [
    "MLP",
    "TrainConfig",
    "init_mlp",
    "train",
    "accuracy",
    "asp_masks",
    "train_gradual",
    "load_digits_split",
]


@dataclass
class MLP:
    """Layers ``[(W (out, in), b (out,)), ...]``; ReLU between layers, logits out."""

    weights: list[np.ndarray]
    biases: list[np.ndarray]

    @property
    def widths(self) -> list[int]:
        return [self.weights[0].shape[1]] + [w.shape[0] for w in self.weights]

    @property
    def parameter_count(self) -> int:
        return int(sum(w.size + b.size for w, b in zip(self.weights, self.biases, strict=True)))

    def nonzero_parameter_count(self) -> int:
        return int(sum(np.count_nonzero(w) + b.size for w, b in zip(self.weights, self.biases, strict=True)))

    def copy(self) -> MLP:
        return MLP([w.copy() for w in self.weights], [b.copy() for b in self.biases])

    def forward(self, x: np.ndarray, *, keep: bool = False):
        """Logits; with ``keep`` also the list of each layer's input activations."""
        acts = []
        h = x
        last = len(self.weights) - 1
        for i, (w, b) in enumerate(zip(self.weights, self.biases, strict=True)):
            acts.append(h)
            h = h @ w.T + b
            if i < last:
                h = np.maximum(h, 0.0)
        return (h, acts) if keep else h


@dataclass(frozen=True)
class TrainConfig:
    """One training session; the ASP recipe re-runs exactly this for fine-tuning."""

    epochs: int = 30
    batch: int = 32
    lr: float = 1e-3
    # Adam defaults, Kingma & Ba, ICLR 2015, Algorithm 1.
    beta1: float = 0.9
    beta2: float = 0.999
    eps: float = 1e-8


def init_mlp(widths: list[int], rng: np.random.Generator) -> MLP:
    """He-normal weights (He et al. 2015, std = sqrt(2 / fan_in)), zero biases."""
    ws, bs = [], []
    for fan_in, fan_out in zip(widths[:-1], widths[1:], strict=True):
        ws.append(rng.normal(0.0, np.sqrt(2.0 / fan_in), size=(fan_out, fan_in)))
        bs.append(np.zeros(fan_out))
    return MLP(ws, bs)


def accuracy(model: MLP, x: np.ndarray, y: np.ndarray) -> float:
    return float(np.mean(np.argmax(model.forward(x), axis=1) == y))


def _grads(model: MLP, x: np.ndarray, y: np.ndarray):
    logits, acts = model.forward(x, keep=True)
    z = logits - logits.max(axis=1, keepdims=True)
    p = np.exp(z)
    p /= p.sum(axis=1, keepdims=True)
    p[np.arange(len(y)), y] -= 1.0
    delta = p / len(y)
    gw, gb = [None] * len(model.weights), [None] * len(model.weights)
    for i in range(len(model.weights) - 1, -1, -1):
        gw[i] = delta.T @ acts[i]
        gb[i] = delta.sum(axis=0)
        if i:
            delta = (delta @ model.weights[i]) * (acts[i] > 0)
    return gw, gb


class _Adam:
    def __init__(self, model: MLP, cfg: TrainConfig):
        self.cfg = cfg
        self.t = 0
        self.m = [np.zeros_like(p) for p in model.weights + model.biases]
        self.v = [np.zeros_like(p) for p in model.weights + model.biases]

    def step(self, params: list[np.ndarray], grads: list[np.ndarray]) -> None:
        c = self.cfg
        self.t += 1
        corr1, corr2 = 1.0 - c.beta1**self.t, 1.0 - c.beta2**self.t
        for p, g, m, v in zip(params, grads, self.m, self.v, strict=True):
            m *= c.beta1
            m += (1.0 - c.beta1) * g
            v *= c.beta2
            v += (1.0 - c.beta2) * g * g
            p -= c.lr * (m / corr1) / (np.sqrt(v / corr2) + c.eps)


def train(
    model: MLP,
    x: np.ndarray,
    y: np.ndarray,
    cfg: TrainConfig,
    rng: np.random.Generator,
    masks: list[np.ndarray | None] | None = None,
    *,
    on_epoch=None,
) -> MLP:
    """Train in place (and return) ``model``; ``masks`` (per layer, None = dense) stay fixed:
    gradients of pruned weights are zeroed and the mask is re-applied after every step."""
    masks = masks or [None] * len(model.weights)
    _apply(model, masks)
    opt = _Adam(model, cfg)
    for epoch in range(cfg.epochs):
        order = rng.permutation(len(y))
        for s in range(0, len(y), cfg.batch):
            idx = order[s : s + cfg.batch]
            gw, gb = _grads(model, x[idx], y[idx])
            gw = [g if mk is None else g * mk for g, mk in zip(gw, masks, strict=True)]
            opt.step(model.weights + model.biases, gw + gb)
            _apply(model, masks)
        if on_epoch:
            on_epoch(epoch)
    return model


def _apply(model: MLP, masks) -> None:
    for w, mk in zip(model.weights, masks, strict=True):
        if mk is not None:
            w *= mk


def asp_masks(model: MLP, n: int, m: int) -> list[np.ndarray | None]:
    """One-shot N:M magnitude masks per layer; layers failing the shared ASP verdict get None."""
    return [prune_layer(f"layer{i}", w, n, m).mask for i, w in enumerate(model.weights)]


def train_gradual(
    model: MLP,
    x: np.ndarray,
    y: np.ndarray,
    cfg: TrainConfig,
    rng: np.random.Generator,
    n: int,
    m: int,
    *,
    ramp_fraction: float = 0.75,
    on_epoch=None,
) -> MLP:
    """Gradual pruning from a trained dense model to N:M with the Zhu & Gupta (2017) cubic ramp.

    Sparsity of each prunable layer follows ``cubic_sparsity`` from 0 to 1 - N/M over the first
    ``ramp_fraction`` of the optimiser steps, with the mask recomputed every ``steps_per_epoch/4``
    steps (never un-pruning a weight); the rest of the session trains with the final N:M mask,
    which equals ``nm_mask`` of the weights at the end of the ramp.
    """
    final = 1.0 - n / m
    prunable = [mk is not None for mk in asp_masks(model, n, m)]
    steps_per_epoch = -(-len(y) // cfg.batch)
    total = cfg.epochs * steps_per_epoch
    ramp = max(1, int(total * ramp_fraction))
    every = max(1, steps_per_epoch // 4)
    masks: list[np.ndarray | None] = [
        np.ones_like(w, dtype=bool) if p else None for w, p in zip(model.weights, prunable, strict=True)
    ]
    opt = _Adam(model, cfg)
    step = 0
    for epoch in range(cfg.epochs):
        order = rng.permutation(len(y))
        for s in range(0, len(y), cfg.batch):
            if step <= ramp and (step % every == 0 or step == ramp):
                target = cubic_sparsity(step, ramp, final)
                for i, w in enumerate(model.weights):
                    if masks[i] is not None:
                        masks[i] = masks[i] & gradual_nm_mask(w, target, n, m)
                _apply(model, masks)
            idx = order[s : s + cfg.batch]
            gw, gb = _grads(model, x[idx], y[idx])
            gw = [g if mk is None else g * mk for g, mk in zip(gw, masks, strict=True)]
            opt.step(model.weights + model.biases, gw + gb)
            _apply(model, masks)
            step += 1
        if on_epoch:
            on_epoch(epoch)
    return model


def load_digits_split(seed: int, test_fraction: float = 0.25):
    """scikit-learn's bundled 8x8 digits (1,797 images, no download), pixels scaled to [0, 1],
    stratified train/test split seeded by ``seed``."""
    # scikit-learn takes about 1.2 s to import: loaded when the digits are, not by every command that
    # imports the quality references (a `quality` run on the team's own weights never trains them)
    from sklearn.datasets import load_digits  # reason: heavy import, only when the digits are loaded
    from sklearn.model_selection import train_test_split  # reason: as above

    data = load_digits()
    x = data.data.astype(np.float64) / 16.0
    y = data.target.astype(np.int64)
    xtr, xte, ytr, yte = train_test_split(x, y, test_size=test_fraction, stratify=y, random_state=seed)
    return xtr, ytr, xte, yte
