"""The character-level transformer LM of the transformer reference (sim.quality.references.transformer): its
corpus, model, training and evaluation, in numpy with ``autograd`` (one cohesive model, kept
apart from the experiment that runs it).

* **Corpus**: the English reference text of Python's own ``pydoc_data.topics`` module (every
  CPython install has it; no download), topics joined in key order. Characters outside printable
  ASCII + newline (0.12 % of the text) map to one OOV id. Split: the first 90 % trains, the last
  10 % is held out; the held-out text is cut into non-overlapping windows of ``ctx`` characters,
  the *samples* of the bootstrap.
* **Model**: decoder-only, pre-LayerNorm (GPT-2 layout, Radford et al. 2019): token + learned
  position embeddings, ``layers`` blocks of causal multi-head attention and a ReLU FFN
  (``4 d``), final LayerNorm, untied output head. Weights in PyTorch layout ``(out, in)``, named
  like a PyTorch state dict, so the pruning is exactly the one the team's own weights get
  (sim.quality.prune.oneshot: QKV, output and FFN projections are N:M; the embeddings, the
  ``vocab``-row head (fails ASP's size(0) % 8) and the LayerNorms stay dense).
* **Training**: Adam (Kingma & Ba 2015 defaults), linear learning-rate decay to 10 %, gradients by
  ``autograd`` (reverse-mode automatic differentiation on numpy; no hand-written backward pass).
* **Plain numpy forward** (:func:`numpy_nll`): the same network with every weight GEMM through a
  callback, used to quantise the GEMMs (sim.quality.evidence.transformer_precision) and to collect each
  projection's inputs (:func:`layer_inputs`, the calibration inputs of wanda and sparsegpt).
"""

from __future__ import annotations

import hashlib
import pydoc_data.topics as topics
from collections.abc import Callable
from dataclasses import dataclass

import autograd.numpy as anp
import numpy as np
from autograd import value_and_grad
from autograd.tracer import getval
from threadpoolctl import threadpool_limits

from sim.quality.prune.pruning import cubic_sparsity, gradual_nm_mask, reduction_axis
from sim.quality.team.user_eval import prune_for_eval

__all__ = [
    "VOCAB",
    "DTYPE",
    "LMConfig",
    "TINY",
    "corpus",
    "unigram_baseline",
    "init_lm",
    "layers_of",
    "lm_loss",
    "train_lm",
    "eval_windows",
    "eval_lm",
    "numpy_nll",
    "layer_inputs",
    "GEMM_WEIGHTS",
]

_VOCAB_CHARS = "\n" + "".join(chr(c) for c in range(32, 127))
_OOV = len(_VOCAB_CHARS)
VOCAB = _OOV + 1  # 97: not a multiple of 8, so the output head stays dense under ASP
#: Training precision [A]: float32, as deep-learning frameworks train; half the time of float64.
DTYPE = np.float32


@dataclass(frozen=True)
class LMConfig:
    """Model and training recipe. Sizes [A]: chosen so that dense + fine-tune + gradual + the
    equal-latency model for 3 seeds train in about a minute on one core of this class of machine."""

    d_model: int = 32
    layers: int = 2
    heads: int = 2
    ctx: int = 32
    batch: int = 32
    steps: int = 200
    finetune_steps: int = 64
    lr: float = 3e-3
    beta1: float = 0.9
    beta2: float = 0.999
    eps: float = 1e-8
    eval_windows: int = 256
    seeds: int = 3
    width_step: int = 8
    tokens_per_inference: int = 256  # GEMM M of one inference batch when timing the model

    @property
    def d_ff(self) -> int:
        return 4 * self.d_model


#: A tiny configuration for tests (seconds).
TINY = LMConfig(
    d_model=32, layers=1, heads=2, ctx=32, batch=16, steps=120, finetune_steps=60, eval_windows=64, seeds=1
)


# ---------------------------------------------------------------------------------------------
# corpus
# ---------------------------------------------------------------------------------------------


def corpus() -> tuple[np.ndarray, np.ndarray, str, int]:
    """(train ids, held-out ids, sha256 of the text, characters) of ``pydoc_data.topics``."""
    text = "".join(topics.topics[k] for k in sorted(topics.topics))
    digest = hashlib.sha256(text.encode("utf-8")).hexdigest()
    lut = {c: i for i, c in enumerate(_VOCAB_CHARS)}
    ids = np.fromiter((lut.get(c, _OOV) for c in text), dtype=np.int64, count=len(text))
    cut = int(0.9 * len(ids))
    return ids[:cut], ids[cut:], digest, len(text)


def unigram_baseline(train: np.ndarray, test: np.ndarray) -> dict:
    """Perplexity / bits per character of the unigram model of the training text (add-one
    smoothing) on the held-out text: the floor any language model must clearly beat."""
    counts = np.bincount(train, minlength=VOCAB).astype(np.float64) + 1.0
    p = counts / counts.sum()
    nll = -np.mean(np.log(p[test]))
    return {"perplexity": float(np.exp(nll)), "bpc": float(nll / np.log(2))}


# ---------------------------------------------------------------------------------------------
# model (autograd)
# ---------------------------------------------------------------------------------------------


def init_lm(cfg: LMConfig, rng: np.random.Generator, d_model: int | None = None) -> dict[str, np.ndarray]:
    """GPT-2 initialisation (Radford et al. 2019): N(0, 0.02), residual projections scaled by
    1/sqrt(2 layers), zero biases, unit LayerNorm gains."""
    d = d_model or cfg.d_model
    f = 4 * d
    std, rstd = 0.02, 0.02 / np.sqrt(2 * cfg.layers)
    p = {
        "tok_embed.weight": rng.normal(0, std, (VOCAB, d)),
        "pos_embed.weight": rng.normal(0, std, (cfg.ctx, d)),
    }
    for i in range(cfg.layers):
        b = f"blocks.{i}."
        p.update(
            {
                b + "ln1.weight": np.ones(d),
                b + "ln1.bias": np.zeros(d),
                b + "attn.qkv.weight": rng.normal(0, std, (3 * d, d)),
                b + "attn.qkv.bias": np.zeros(3 * d),
                b + "attn.out.weight": rng.normal(0, rstd, (d, d)),
                b + "attn.out.bias": np.zeros(d),
                b + "ln2.weight": np.ones(d),
                b + "ln2.bias": np.zeros(d),
                b + "ffn.fc1.weight": rng.normal(0, std, (f, d)),
                b + "ffn.fc1.bias": np.zeros(f),
                b + "ffn.fc2.weight": rng.normal(0, rstd, (d, f)),
                b + "ffn.fc2.bias": np.zeros(d),
            }
        )
    p.update(
        {
            "ln_f.weight": np.ones(d),
            "ln_f.bias": np.zeros(d),
            "head.weight": rng.normal(0, std, (VOCAB, d)),
            "head.bias": np.zeros(VOCAB),
        }
    )
    return {k: v.astype(DTYPE) for k, v in p.items()}


def layers_of(p: dict) -> int:
    """Transformer blocks in the parameters ``p``."""
    return sum(1 for k in p if k.endswith("ln1.weight"))


def _forward_nll(p: dict, x: np.ndarray, y: np.ndarray, heads: int):
    """Per-token negative log-likelihood (nats), shape (B, T). ``autograd.numpy`` throughout."""

    def ln(h, g, b):
        mu = anp.mean(h, axis=-1, keepdims=True)
        var = anp.mean((h - mu) ** 2, axis=-1, keepdims=True)
        return (h - mu) / anp.sqrt(var + 1e-5) * g + b

    B, T = x.shape
    d = p["tok_embed.weight"].shape[1]
    hd = d // heads
    # the embedding lookup as a one-hot product: its gradient is a GEMM, not a scatter-add
    h = anp.dot(np.eye(VOCAB, dtype=DTYPE)[x], p["tok_embed.weight"]) + p["pos_embed.weight"][:T]
    causal = np.triu(np.full((T, T), -1e9, dtype=DTYPE), 1)
    for i in range(layers_of(p)):
        b = f"blocks.{i}."
        a = ln(h, p[b + "ln1.weight"], p[b + "ln1.bias"])
        qkv = anp.dot(a, p[b + "attn.qkv.weight"].T) + p[b + "attn.qkv.bias"]
        qkv = anp.reshape(qkv, (B, T, 3, heads, hd))
        qkv = anp.transpose(qkv, (2, 0, 3, 1, 4))  # (3, B, H, T, hd)
        q, k, v = qkv[0], qkv[1], qkv[2]
        s = anp.matmul(q, anp.swapaxes(k, -1, -2)) * (1.0 / np.sqrt(hd)) + causal
        s = s - getval(s).max(axis=-1, keepdims=True)  # a constant shift: no gradient needed
        w = anp.exp(s)
        w = w / anp.sum(w, axis=-1, keepdims=True)
        o = anp.reshape(anp.transpose(anp.matmul(w, v), (0, 2, 1, 3)), (B, T, d))
        h = h + anp.dot(o, p[b + "attn.out.weight"].T) + p[b + "attn.out.bias"]
        a = ln(h, p[b + "ln2.weight"], p[b + "ln2.bias"])
        a = anp.maximum(anp.dot(a, p[b + "ffn.fc1.weight"].T) + p[b + "ffn.fc1.bias"], 0.0)
        h = h + anp.dot(a, p[b + "ffn.fc2.weight"].T) + p[b + "ffn.fc2.bias"]
    h = ln(h, p["ln_f.weight"], p["ln_f.bias"])
    logits = anp.dot(h, p["head.weight"].T) + p["head.bias"]
    z = logits - getval(logits).max(axis=-1, keepdims=True)
    logz = anp.log(anp.sum(anp.exp(z), axis=-1))
    picked = anp.sum(z * np.eye(VOCAB, dtype=z.dtype)[y], axis=-1)
    return logz - picked


def lm_loss(p: dict, x: np.ndarray, y: np.ndarray, heads: int):
    """Mean next-character cross-entropy (nats)."""
    return anp.mean(_forward_nll(p, x, y, heads))


def _batch(ids: np.ndarray, cfg: LMConfig, rng: np.random.Generator) -> tuple[np.ndarray, np.ndarray]:
    start = rng.integers(0, len(ids) - cfg.ctx - 1, size=cfg.batch)
    idx = start[:, None] + np.arange(cfg.ctx + 1)
    w = ids[idx]
    return w[:, :-1], w[:, 1:]


def train_lm(
    p: dict,
    ids: np.ndarray,
    cfg: LMConfig,
    rng: np.random.Generator,
    steps: int,
    *,
    masks: dict[str, np.ndarray] | None = None,
    gradual: tuple[int, int] | None = None,
    ramp_fraction: float = 0.75,
    on_step: Callable[[int, float], None] | None = None,
) -> tuple[dict, list[float]]:
    """Adam on the LM loss for ``steps`` steps. ``masks`` (name -> keep) stay fixed: pruned
    weights get no update and are re-zeroed after every step (ASP). ``gradual=(n, m)``: prune the
    ASP-prunable weights from dense to N:M along the Zhu & Gupta cubic ramp over the first
    ``ramp_fraction`` of the steps (mask refreshed every steps/40, never un-pruning), then train
    with the final N:M mask. Returns (params, per-step training losses)."""
    with threadpool_limits(1):  # small GEMMs: one BLAS thread is fastest (and fair on a shared machine)
        return _train_lm(p, ids, cfg, rng, steps, masks, gradual, ramp_fraction, on_step)


def _train_lm(p, ids, cfg, rng, steps, masks, gradual, ramp_fraction, on_step):
    p = {k: np.array(v, dtype=DTYPE) for k, v in p.items()}
    masks = dict(masks or {})
    ramp = every = 0
    if gradual is not None:
        gn, gm = gradual
        _, final_masks, _ = prune_for_eval(p, gn, gm)
        masks = {k: np.ones_like(p[k], dtype=bool) for k in final_masks}
        ramp = max(1, int(steps * ramp_fraction))
        every = max(1, steps // 40)
    heads = cfg.heads
    vg = value_and_grad(lm_loss)
    mom = {k: np.zeros_like(v) for k, v in p.items()}
    vel = {k: np.zeros_like(v) for k, v in p.items()}
    losses = []
    for k, mk in masks.items():
        p[k] *= mk
    for t in range(1, steps + 1):
        if gradual is not None and (t - 1) <= ramp and ((t - 1) % every == 0 or t - 1 == ramp):
            target = cubic_sparsity(t - 1, ramp, 1.0 - gn / gm)
            for k in masks:
                masks[k] = masks[k] & gradual_nm_mask(p[k], target, gn, gm, reduction_axis(p[k].shape))
                p[k] *= masks[k]
        x, y = _batch(ids, cfg, rng)
        loss, g = vg(p, x, y, heads)
        lr = cfg.lr * (1.0 - 0.9 * (t - 1) / max(1, steps - 1))
        c1, c2 = 1.0 - cfg.beta1**t, 1.0 - cfg.beta2**t
        for k in p:
            gk = g[k] * masks[k] if k in masks else g[k]
            mom[k] = cfg.beta1 * mom[k] + (1 - cfg.beta1) * gk
            vel[k] = cfg.beta2 * vel[k] + (1 - cfg.beta2) * gk * gk
            p[k] -= (lr * (mom[k] / c1) / (np.sqrt(vel[k] / c2) + cfg.eps)).astype(DTYPE)
            if k in masks:
                p[k] *= masks[k]
        losses.append(float(loss))
        if on_step is not None:
            on_step(t, float(loss))
    return p, losses


def eval_windows(test: np.ndarray, cfg: LMConfig) -> tuple[np.ndarray, np.ndarray]:
    """The held-out samples: the first ``eval_windows`` non-overlapping windows of ``ctx``."""
    n = min(cfg.eval_windows, (len(test) - 1) // cfg.ctx)
    idx = np.arange(n)[:, None] * cfg.ctx + np.arange(cfg.ctx + 1)
    w = test[idx]
    return w[:, :-1], w[:, 1:]


def eval_lm(p: dict, windows: tuple[np.ndarray, np.ndarray], heads: int) -> np.ndarray:
    """Mean NLL (nats per character) of each held-out window: the per-sample scores."""
    x, y = windows
    out = []
    for s in range(0, len(x), 64):
        out.append(np.asarray(_forward_nll(p, x[s : s + 64], y[s : s + 64], heads)).mean(axis=1))
    return np.concatenate(out)


#: The weight GEMMs of a block (plus the ``head``), by parameter name prefix.
GEMM_WEIGHTS = ("attn.qkv", "attn.out", "ffn.fc1", "ffn.fc2")


def numpy_nll(p: dict, x: np.ndarray, y: np.ndarray, heads: int, lin) -> np.ndarray:
    """Per-window mean NLL of the network of :func:`lm_loss` in plain numpy; ``lin(a, name)``
    computes ``a @ W[name].T + b[name]`` for every weight GEMM (``blocks.i.attn.qkv``, ...,
    ``head``), quantised, recorded or as is."""

    def ln(h, g, b):
        mu = h.mean(axis=-1, keepdims=True)
        var = ((h - mu) ** 2).mean(axis=-1, keepdims=True)
        return (h - mu) / np.sqrt(var + 1e-5) * g + b

    B, T = x.shape
    d = p["tok_embed.weight"].shape[1]
    hd = d // heads
    h = p["tok_embed.weight"][x] + p["pos_embed.weight"][:T]
    causal = np.triu(np.full((T, T), -1e9, dtype=np.float32), 1)
    for i in range(layers_of(p)):
        b = f"blocks.{i}."
        a = ln(h, p[b + "ln1.weight"], p[b + "ln1.bias"])
        qkv = lin(a, b + "attn.qkv").reshape(B, T, 3, heads, hd).transpose(2, 0, 3, 1, 4)
        q, k, v = qkv[0], qkv[1], qkv[2]
        s = q @ np.swapaxes(k, -1, -2) * (1.0 / np.sqrt(hd)) + causal
        w = np.exp(s - s.max(axis=-1, keepdims=True))
        w = w / w.sum(axis=-1, keepdims=True)
        o = (w @ v).transpose(0, 2, 1, 3).reshape(B, T, d)
        h = h + lin(o, b + "attn.out")
        a = ln(h, p[b + "ln2.weight"], p[b + "ln2.bias"])
        h = h + lin(np.maximum(lin(a, b + "ffn.fc1"), 0.0), b + "ffn.fc2")
    logits = lin(ln(h, p["ln_f.weight"], p["ln_f.bias"]), "head")
    z = logits - logits.max(axis=-1, keepdims=True)
    nll = np.log(np.exp(z).sum(axis=-1)) - np.take_along_axis(z, y[..., None], axis=-1)[..., 0]
    return nll.mean(axis=1)


def layer_inputs(p: dict, x: np.ndarray, heads: int) -> dict[str, np.ndarray]:
    """{``blocks.i.<gemm>.weight``: its inputs (windows * ctx, in)} of the model ``p`` on the
    windows ``x``, in the order the forward pass meets them (the head's inputs too)."""
    seen: dict[str, list[np.ndarray]] = {}

    def lin(a, name):
        seen.setdefault(name + ".weight", []).append(a.reshape(-1, a.shape[-1]).astype(np.float64))
        return a @ p[name + ".weight"].T + p[name + ".bias"]

    for s in range(0, len(x), 64):
        numpy_nll(p, x[s : s + 64], np.zeros_like(x[s : s + 64]), heads, lin)
    return {k: np.concatenate(v) for k, v in seen.items()}
