"""The transformer reference: a small character-level transformer LM trained here, pruned N:M.

Reference for transformer workloads (bert, gpt, llama); the digits MLP (sim.quality.reference)
stays the reference for MLP/CNN workloads.

* **Corpus**: the English reference text of Python's own ``pydoc_data.topics`` module (every
  CPython install has it; no download), topics joined in key order. Its sha256 is recorded in the
  result. Characters outside printable ASCII + newline (0.12 % of the text) map to one OOV id.
  Split: the first 90 % trains, the last 10 % is held out; the held-out text is cut into
  non-overlapping windows of ``ctx`` characters, the *samples* of the bootstrap.
* **Model**: decoder-only, pre-LayerNorm (GPT-2 layout, Radford et al. 2019): token + learned
  position embeddings, ``layers`` blocks of causal multi-head attention and a ReLU FFN
  (``4 d``), final LayerNorm, untied output head. Weights in PyTorch layout ``(out, in)``, named
  like a PyTorch state dict, so the pruning is exactly the one the team's own weights get
  (:func:`sim.quality.user_eval.prune_for_eval`: QKV, output and FFN projections are N:M; the
  embeddings, the ``vocab``-row head (fails ASP's size(0) % 8) and the LayerNorms stay dense).
* **Training**: Adam (Kingma & Ba 2015 defaults), linear learning-rate decay to 10 %, gradients by
  ``autograd`` (reverse-mode automatic differentiation on numpy; no hand-written backward pass).
* **Runs**, each seed: dense; one-shot N:M (magnitude, ASP ``m4n2_1d``); ASP fine-tune with the
  mask fixed (the NVIDIA ASP recipe: re-run the optimiser from the pruned weights; here for
  ``finetune_steps`` steps); gradual pruning from the dense model, Zhu & Gupta (2017) cubic ramp
  over 75 % of the same steps; the dense model of equal latency (the largest width of the family,
  step 8, whose latency on the *dense* design does not exceed the sparse model's on the sparse
  design, ``sim.perf``), trained like the dense baseline.
* **Metric**: perplexity (and bits per character) on the held-out split; the quality loss is the
  relative perplexity increase ``ppl_sparse / ppl_dense - 1`` (sim.quality.stats), with a 95 %
  interval from the seeds x a bootstrap over the held-out windows.

Cached on disk (``$SPARSEPE_CACHE_DIR`` or ``~/.cache/sparsepe``, ``quality/``), keyed by the
digest of this file and the modules the training uses, the seed, N:M, the config and the
equal-latency width; the latencies themselves are recomputed (sim.perf) on every call.
"""

from __future__ import annotations

import hashlib
import json
import os
import time
from collections.abc import Callable, Sequence
from dataclasses import asdict, dataclass, field, replace
from pathlib import Path

import numpy as np

from hw.errors import InputError
from hw.nm import check_nm

__all__ = ["LMConfig", "TINY", "corpus", "init_lm", "lm_loss", "train_lm", "eval_lm", "lm_gemms",
           "unigram_baseline", "TransformerResult", "transformer_experiment", "cache_dir",
           "TRANSFORMER_WORKLOADS"]

#: Workload name prefixes whose quality the transformer reference stands for.
TRANSFORMER_WORKLOADS = ("bert", "gpt", "llama")

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
TINY = LMConfig(d_model=32, layers=1, heads=2, ctx=32, batch=16, steps=120, finetune_steps=60,
                eval_windows=64, seeds=1)


# ---------------------------------------------------------------------------------------------
# corpus
# ---------------------------------------------------------------------------------------------

def corpus() -> tuple[np.ndarray, np.ndarray, str, int]:
    """(train ids, held-out ids, sha256 of the text, characters) of ``pydoc_data.topics``."""
    import pydoc_data.topics as topics

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
    p = {"tok_embed.weight": rng.normal(0, std, (VOCAB, d)), "pos_embed.weight": rng.normal(0, std, (cfg.ctx, d))}
    for i in range(cfg.layers):
        b = f"blocks.{i}."
        p.update({
            b + "ln1.weight": np.ones(d), b + "ln1.bias": np.zeros(d),
            b + "attn.qkv.weight": rng.normal(0, std, (3 * d, d)), b + "attn.qkv.bias": np.zeros(3 * d),
            b + "attn.out.weight": rng.normal(0, rstd, (d, d)), b + "attn.out.bias": np.zeros(d),
            b + "ln2.weight": np.ones(d), b + "ln2.bias": np.zeros(d),
            b + "ffn.fc1.weight": rng.normal(0, std, (f, d)), b + "ffn.fc1.bias": np.zeros(f),
            b + "ffn.fc2.weight": rng.normal(0, rstd, (d, f)), b + "ffn.fc2.bias": np.zeros(d),
        })
    p.update({"ln_f.weight": np.ones(d), "ln_f.bias": np.zeros(d),
              "head.weight": rng.normal(0, std, (VOCAB, d)), "head.bias": np.zeros(VOCAB)})
    return {k: v.astype(DTYPE) for k, v in p.items()}


def _layers_of(p: dict) -> int:
    return sum(1 for k in p if k.endswith("ln1.weight"))


def _forward_nll(p: dict, x: np.ndarray, y: np.ndarray, heads: int):
    """Per-token negative log-likelihood (nats), shape (B, T). ``autograd.numpy`` throughout."""
    import autograd.numpy as anp
    from autograd.tracer import getval

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
    for i in range(_layers_of(p)):
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
    import autograd.numpy as anp

    return anp.mean(_forward_nll(p, x, y, heads))


def _batch(ids: np.ndarray, cfg: LMConfig, rng: np.random.Generator) -> tuple[np.ndarray, np.ndarray]:
    start = rng.integers(0, len(ids) - cfg.ctx - 1, size=cfg.batch)
    idx = start[:, None] + np.arange(cfg.ctx + 1)
    w = ids[idx]
    return w[:, :-1], w[:, 1:]


def train_lm(p: dict, ids: np.ndarray, cfg: LMConfig, rng: np.random.Generator, steps: int, *,
             masks: dict[str, np.ndarray] | None = None,
             gradual: tuple[int, int] | None = None, ramp_fraction: float = 0.75,
             on_step: Callable[[int, float], None] | None = None) -> tuple[dict, list[float]]:
    """Adam on the LM loss for ``steps`` steps. ``masks`` (name -> keep) stay fixed: pruned
    weights get no update and are re-zeroed after every step (ASP). ``gradual=(n, m)``: prune the
    ASP-prunable weights from dense to N:M along the Zhu & Gupta cubic ramp over the first
    ``ramp_fraction`` of the steps (mask refreshed every steps/40, never un-pruning), then train
    with the final N:M mask. Returns (params, per-step training losses)."""
    from threadpoolctl import threadpool_limits

    with threadpool_limits(1):  # small GEMMs: one BLAS thread is fastest (and fair on a shared machine)
        return _train_lm(p, ids, cfg, rng, steps, masks, gradual, ramp_fraction, on_step)


def _train_lm(p, ids, cfg, rng, steps, masks, gradual, ramp_fraction, on_step):
    from autograd import value_and_grad

    from sim.quality.pruning import cubic_sparsity, gradual_nm_mask, reduction_axis

    p = {k: np.array(v, dtype=DTYPE) for k, v in p.items()}
    masks = dict(masks or {})
    ramp = every = 0
    if gradual is not None:
        from sim.quality.user_eval import prune_for_eval

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
        c1, c2 = 1.0 - cfg.beta1 ** t, 1.0 - cfg.beta2 ** t
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
        out.append(np.asarray(_forward_nll(p, x[s:s + 64], y[s:s + 64], heads)).mean(axis=1))
    return np.concatenate(out)


# ---------------------------------------------------------------------------------------------
# latency: the model's GEMMs on a design (sim.perf)
# ---------------------------------------------------------------------------------------------

def lm_gemms(cfg: LMConfig, d_model: int, n: int, m: int, *, sparse: bool):
    """The GEMMs of one inference batch (``tokens_per_inference`` tokens in windows of ``ctx``):
    per block QKV, attention scores and context (activation x activation, always dense), output
    projection, FFN; then the output head. ``sparse``: weights that pass the ASP verdict are N:M."""
    from sim.asp_rules import ACT_GEMM, WEIGHT_GEMM, weight_verdict
    from sim.quality.reference import GemmShape

    tok = cfg.tokens_per_inference
    seqs = max(1, tok // cfg.ctx)
    hd = d_model // cfg.heads
    out = []

    def w(name, nout, k):
        ok = sparse and weight_verdict(WEIGHT_GEMM, (nout, k), n, m).sparsifiable
        out.append(GemmShape(name, tok, nout, k, (n, m) if ok else None))

    for i in range(cfg.layers):
        w(f"b{i}.qkv", 3 * d_model, d_model)
        for h in range(seqs * cfg.heads):
            out.append(GemmShape(f"b{i}.scores{h}", cfg.ctx, cfg.ctx, hd, None, kind=ACT_GEMM))
            out.append(GemmShape(f"b{i}.context{h}", cfg.ctx, hd, cfg.ctx, None, kind=ACT_GEMM))
        w(f"b{i}.out", d_model, d_model)
        w(f"b{i}.fc1", 4 * d_model, d_model)
        w(f"b{i}.fc2", d_model, 4 * d_model)
    w("head", VOCAB, d_model)
    return out


def _params(p: dict) -> tuple[int, int]:
    total = sum(int(v.size) for v in p.values())
    nonzero = sum(int(np.count_nonzero(v)) for v in p.values())
    return total, nonzero


# ---------------------------------------------------------------------------------------------
# the experiment
# ---------------------------------------------------------------------------------------------

@dataclass
class TransformerResult:
    """Everything the transformer experiment measured (perplexities on the held-out split;
    lists run over the seeds)."""

    n: int
    m: int
    seeds: list[int]
    config: dict
    corpus: dict
    unigram: dict
    dense_perplexity: list[float]
    oneshot_perplexity: list[float]
    finetuned_perplexity: list[float]
    gradual_perplexity: list[float]
    dense_equal_latency_perplexity: list[float]
    sparse_d_model: int
    dense_equal_latency_d_model: int
    sparse_params: int
    sparse_nonzero_params: int
    dense_equal_latency_params: int
    sparse_latency: float
    dense_equal_latency_latency: float
    latency_model: str
    dense_latency_model: str
    pruned_tensors: list[str]
    skipped_tensors: list[dict]
    train_loss: dict
    seconds: float
    cpu_seconds: float  # CPU time of this process and its seed processes (the cost on an idle machine)
    cached: bool = False
    per_sample: dict = field(default_factory=dict, repr=False)  # run -> list (per seed) of per-window NLL

    def to_json(self) -> dict:
        d = asdict(self)
        d.pop("per_sample")
        return d

    @staticmethod
    def from_json(d: dict, per_sample: dict) -> "TransformerResult":
        return TransformerResult(**d, per_sample=per_sample)


def cache_dir() -> Path:
    """``$SPARSEPE_CACHE_DIR`` or ``~/.cache/sparsepe`` (the project's shared cache), ``quality/``."""
    base = os.environ.get("SPARSEPE_CACHE_DIR")
    return (Path(base) if base else Path.home() / ".cache" / "sparsepe") / "quality"


def _code_digest() -> str:
    here = Path(__file__).resolve().parent
    h = hashlib.sha256()
    for name in ("transformer.py", "pruning.py", "user_eval.py"):
        h.update((here / name).read_bytes())
    h.update((here.parent / "asp_rules.py").read_bytes())
    return h.hexdigest()[:16]


def equal_latency_dense_width(cfg: LMConfig, n: int, m: int, sparse_latency_fn, dense_latency_fn
                              ) -> tuple[int, float, float, dict[int, float]]:
    """Largest d_model (multiple of ``width_step`` and of ``heads``) whose dense model's latency on
    the dense design does not exceed the N:M model's latency on the sparse design."""
    ls = sparse_latency_fn(lm_gemms(cfg, cfg.d_model, n, m, sparse=True))
    step = cfg.width_step * cfg.heads // np.gcd(cfg.width_step, cfg.heads)
    cands = {d: dense_latency_fn(lm_gemms(cfg, d, n, m, sparse=False)) for d in range(step, 2 * cfg.d_model + 1, step)}
    fit = [d for d, lat in cands.items() if lat <= ls * (1 + 1e-12)]
    if not fit:
        raise InputError(f"no dense width >= {step} runs within the sparse model's latency {ls:g}",
                         where="equal latency")
    best = max(fit)
    return best, ls, cands[best], cands


#: Processes the seeds run in [A]: the 2 cores of the target machine (one BLAS thread each).
_WORKERS = max(1, min(2, os.cpu_count() or 1))


def _seed_run(job, progress: Callable[[str], None] | None = None) -> dict:
    """One seed of the experiment: dense pre-training, then from the same pre-trained weights a
    dense control, the one-shot N:M model, its ASP fine-tune and gradual pruning, each for
    ``finetune_steps`` more steps; the dense model of equal latency when its width differs."""
    from threadpoolctl import threadpool_limits

    from sim.quality.user_eval import prune_for_eval

    s, n, m, cfg, d_eq = job
    train_ids, test_ids, _, _ = corpus()
    windows = eval_windows(test_ids, cfg)
    rng = [np.random.default_rng(x) for x in np.random.SeedSequence([s, n, m]).spawn(7)]

    def say(msg):
        if progress:
            progress(f"transformer seed {s}: {msg}")

    with threadpool_limits(1):  # small GEMMs: one BLAS thread per process is fastest
        say("dense pre-training")
        pre, l_p = train_lm(init_lm(cfg, rng[0]), train_ids, cfg, rng[1], cfg.steps)
        oneshot, masks, skip = prune_for_eval(pre, n, m)
        say("dense control")
        dense, l_d = train_lm(pre, train_ids, cfg, rng[2], cfg.finetune_steps)
        say("ASP fine-tune")
        ft, l_f = train_lm(oneshot, train_ids, cfg, rng[2], cfg.finetune_steps, masks=masks)
        say("gradual")
        gr, l_g = train_lm(pre, train_ids, cfg, rng[3], cfg.finetune_steps, gradual=(n, m))
        if d_eq == cfg.d_model:
            deq, l_e = dense, l_p + l_d
        else:
            say(f"dense d={d_eq} (equal latency)")
            deq, l_e = train_lm(init_lm(cfg, rng[4], d_eq), train_ids, cfg, rng[5], cfg.steps + cfg.finetune_steps)
        runs = ("dense", "oneshot", "finetuned", "gradual", "dense_equal_latency")
        per_sample = {r: eval_lm(mod, windows, cfg.heads).tolist() for r, mod in zip(runs, (dense, oneshot, ft, gr, deq))}

    def marks(lo):  # training loss (20-step mean) at the start, the middle and the end
        return [float(np.mean(lo[max(0, i - 20):i + 1])) for i in (0, len(lo) // 2, len(lo) - 1)]

    return {"per_sample": per_sample,
            "losses": {"dense": marks(l_p + l_d), "finetuned": marks(l_f), "gradual": marks(l_g),
                       "dense_equal_latency": marks(l_e)},
            "pruned": list(masks), "skipped": [{"name": k, "reason": v} for k, v in skip.items()],
            "sizes": (_params(ft), _params(deq)[0])}


def transformer_experiment(n: int = 2, m: int = 4, *, seed: int = 0, cfg: LMConfig | None = None,
                           sparse_arch=None, dense_arch=None, use_cache: bool = True,
                           progress: Callable[[str], None] | None = None) -> TransformerResult:
    """Run (or load from the cache) the transformer experiment for N:M over ``cfg.seeds`` seeds
    starting at ``seed``. ``sparse_arch`` / ``dense_arch``: the ``sim.perf.ArrayConfig`` the
    sparse model and the equal-latency dense model run on (default: sim.quality.DEFAULT_DESIGN
    with N:M sparse PEs, and the same array with dense PEs)."""
    from sim.perf import ArrayConfig
    from sim.quality.reference import DEFAULT_DESIGN, perf_latency_fn

    check_nm(n, m)
    cfg = cfg or LMConfig()
    if seed < 0:
        raise InputError(f"must be >= 0, got {seed}", where="--seed")
    if cfg.d_model % cfg.heads or cfg.d_model % 16:
        raise InputError(f"d_model {cfg.d_model} must be a multiple of 16 and of heads {cfg.heads}", where="LMConfig")
    sparse_arch = sparse_arch or ArrayConfig(**DEFAULT_DESIGN, n=n, m=m)
    dense_arch = dense_arch or replace(sparse_arch, sparse=False)
    if dense_arch.sparse:
        raise InputError("the equal-latency dense model must run on a design with dense PEs", where="dense_arch")
    lat_s, lat_d = perf_latency_fn(sparse_arch), perf_latency_fn(dense_arch)
    # the latencies are recomputed on every call (sim.perf, milliseconds); the training depends on
    # the designs only through the equal-latency width, which is therefore what the cache is keyed by
    d_eq, ls, ld, _ = equal_latency_dense_width(cfg, n, m, lat_s, lat_d)
    timing = {"sparse_latency": ls, "dense_equal_latency_latency": ld,
              "latency_model": lat_s.description, "dense_latency_model": lat_d.description}  # type: ignore[attr-defined]
    key_obj = {"code": _code_digest(), "n": n, "m": m, "seed": seed, "cfg": asdict(cfg), "dense_d_model": d_eq}
    key = hashlib.sha256(json.dumps(key_obj, sort_keys=True).encode()).hexdigest()[:24]
    path = cache_dir() / f"transformer-{key}.json"
    if not use_cache:
        return _experiment(n, m, seed, cfg, d_eq, timing, progress)
    hit = _load(path, timing)
    if hit is not None:
        return hit
    import fcntl

    path.parent.mkdir(parents=True, exist_ok=True)
    # one process trains, the others (sweep workers starting together) wait and load its result
    with open(path.with_suffix(".lock"), "w") as lock:
        fcntl.flock(lock, fcntl.LOCK_EX)
        try:
            hit = _load(path, timing)
            if hit is not None:
                return hit
            res = _experiment(n, m, seed, cfg, d_eq, timing, progress)
            try:
                tmp = path.with_suffix(f".tmp{os.getpid()}")
                tmp.write_text(json.dumps({"key": key_obj, "result": res.to_json(), "per_sample": res.per_sample}))
                os.replace(tmp, path)
            except OSError:
                pass  # no writable cache: the result is still returned
            return res
        finally:
            fcntl.flock(lock, fcntl.LOCK_UN)


def _load(path: Path, timing: dict) -> TransformerResult | None:
    if not path.is_file():
        return None
    try:
        blob = json.loads(path.read_text())
        res = TransformerResult.from_json({**blob["result"], **timing}, blob["per_sample"])
    except (OSError, ValueError, KeyError, TypeError):
        return None  # a damaged or older cache entry is recomputed
    res.cached = True
    return res


def _experiment(n, m, seed, cfg, d_eq: int, timing: dict, progress) -> TransformerResult:
    t0 = time.perf_counter()
    import resource

    def _cpu() -> float:
        return sum(resource.getrusage(w).ru_utime + resource.getrusage(w).ru_stime
                   for w in (resource.RUSAGE_SELF, resource.RUSAGE_CHILDREN))

    c0 = _cpu()
    train_ids, test_ids, digest, chars = corpus()
    windows = eval_windows(test_ids, cfg)
    runs = ("dense", "oneshot", "finetuned", "gradual", "dense_equal_latency")
    ps: dict[str, list[list[float]]] = {r: [] for r in runs}
    losses: dict[str, list[list[float]]] = {"dense": [], "finetuned": [], "gradual": [], "dense_equal_latency": []}

    def say(msg):
        if progress:
            progress(msg)

    seeds = list(range(seed, seed + cfg.seeds))
    jobs = [(s, n, m, cfg, d_eq) for s in seeds]
    say(f"transformer reference: {len(seeds)} seed(s), {min(_WORKERS, len(seeds))} process(es)")
    if len(jobs) > 1 and _WORKERS > 1:
        import concurrent.futures as cf
        import multiprocessing as mp

        with cf.ProcessPoolExecutor(max_workers=min(_WORKERS, len(jobs)), mp_context=mp.get_context("spawn")) as ex:
            outs = list(ex.map(_seed_run, jobs))
    else:
        outs = [_seed_run(j, progress) for j in jobs]
    for o in outs:
        for r in runs:
            ps[r].append(o["per_sample"][r])
        for r in losses:
            losses[r].append(o["losses"][r])
    pruned, skipped, sizes = outs[0]["pruned"], outs[0]["skipped"], outs[0]["sizes"]

    def ppl(r):
        return [float(np.exp(np.mean(x))) for x in ps[r]]

    res = TransformerResult(
        n=n, m=m, seeds=list(range(seed, seed + cfg.seeds)), config={**asdict(cfg), "d_ff": cfg.d_ff},
        corpus={"source": "pydoc_data.topics (CPython's bundled English reference text), topics in key order",
                "sha256": digest, "characters": chars, "train_characters": int(len(train_ids)),
                "heldout_characters": int(len(test_ids)), "heldout_windows": int(len(windows[0])),
                "window": cfg.ctx, "vocab": VOCAB},
        unigram=unigram_baseline(train_ids, windows[1].reshape(-1)),
        dense_perplexity=ppl("dense"), oneshot_perplexity=ppl("oneshot"), finetuned_perplexity=ppl("finetuned"),
        gradual_perplexity=ppl("gradual"), dense_equal_latency_perplexity=ppl("dense_equal_latency"),
        sparse_d_model=cfg.d_model, dense_equal_latency_d_model=d_eq,
        sparse_params=sizes[0][0], sparse_nonzero_params=sizes[0][1], dense_equal_latency_params=sizes[1],
        **timing,
        pruned_tensors=pruned, skipped_tensors=skipped,
        train_loss={r: v for r, v in losses.items()},
        seconds=time.perf_counter() - t0, cpu_seconds=_cpu() - c0, per_sample=ps,
    )
    return res
