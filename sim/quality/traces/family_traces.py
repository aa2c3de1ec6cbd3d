"""Real-data PE input streams per workload family, for activity-based power (ppa.activity).

A workload's family is read from its structure, with the quality references' own mapping
(sim.quality.evidence.evidence.reference_family): attention (activation x activation) layers ->
``transformer``; otherwise convolution layers -> ``cnn``; otherwise ``mlp``. Each family has a
reference model trained here, whose layers give the streams:

* ``transformer``: the char-level LM of sim.quality.references.transformer (seed 0 of its recipe): the
  sparse design's streams come from its ASP fine-tuned model (magnitude 2:4 mask, fixed-mask
  fine-tune), the dense design's from the dense pre-trained model; activations are each
  projection's real inputs on held-out windows; the attention products (scores, context: always
  dense) of :data:`ATTENTION_WINDOWS` windows join the layers run dense;
* ``cnn``: the digits CNN of sim.quality.references.cnn (ASP fine-tuned / dense), its im2col activations;
* ``mlp``: the digits MLP of sim.quality.references.reference (ASP fine-tuned / dense baseline).

Three parts (:data:`PARTS`): ``sparse`` (the layers ASP prunes, kept values + metadata, as the
sparse PE takes them), ``fallback`` (the layers ASP leaves dense in the same fine-tuned model, as
dense groups of M: they run on the sparse design's dense fallback or dense path) and ``dense``
(every layer of the dense model, dense groups, for the dense PE).

Numbers: integer precisions quantise as sim.quality.traces.traces does (symmetric, per output row for
weights, per tensor for activations, after pruning); float precisions take the float values
before any quantisation, encoded to the PE's format by hw.fp_golden.encode (round to nearest
even). Each layer's stream is in its dataflow's order (``os``: sim.quality.traces.traces.LayerTrace.pe_stream's,
a dot product's K/M groups in order, a clear on its first; ``ws``: one weight group held while the
samples stream past). Samples (images, tokens) are taken evenly over the
held-out data so that a part has about ``cycles`` PE-cycles; a reduction not a multiple of M (the
CNN's first convolution, K = 9) is zero-padded to one, as an array pads a partial group.
"""

from __future__ import annotations

import hashlib
import io
import json
from dataclasses import asdict
from pathlib import Path

import numpy as np

from hw.errors import InputError
from hw.fp_golden import encode
from hw.golden import compress_nm
from hw.host import cache_root, write_file
from hw.precision import fp_format, is_float
from sim.asp_rules import ACT_GEMM, CONV, DEPTHWISE
from sim.quality.digest import modules_digest
from sim.quality.evidence.evidence import reference_family, reference_size, transformer_config
from sim.quality.prune.pruning import prune_layer
from sim.quality.references.charlm import corpus, eval_windows, init_lm, layer_inputs, numpy_nll, train_lm
from sim.quality.references.cnn import CNN_EPOCHS, TINY_EPOCHS, cnn_experiment, layer_gemms
from sim.quality.references.reference import reference_experiment
from sim.quality.team.user_eval import prune_for_eval
from sim.quality.traces.traces import quantize_symmetric

__all__ = [
    "FAMILIES",
    "PARTS",
    "TRACE_CYCLES",
    "activity_family",
    "family_models",
    "family_streams",
    "code_digest",
    "MODEL_NAMES",
    "ORDERS",
]

FAMILIES = ("mlp", "cnn", "transformer")
PARTS = ("sparse", "fallback", "dense")
#: stream orders: output-stationary (weights streamed every cycle) and weight-stationary (held)
ORDERS = ("os", "ws")
#: PE-cycles of one part's stream [A]: 2^18, 512 bit-lanes x 512 cycles of ppa's simulation
TRACE_CYCLES = 1 << 18
#: what each family's reference model is called in a trace's label
MODEL_NAMES = {
    "mlp": "digits MLP (sim.quality.references.reference)",
    "cnn": "digits CNN (sim.quality.references.cnn)",
    "transformer": "char-level transformer LM (sim.quality.references.transformer)",
}
#: seed of the reference models the streams come from
SEED = 0


def activity_family(workload) -> tuple[str, str]:
    """(family, why) of a ``sim.workloads.Workload``: sim.quality.evidence.evidence.reference_family's
    ``transformer``; else ``cnn`` when it has convolution layers, else ``mlp``."""
    fam, why = reference_family(workload)
    if fam == "transformer":
        return fam, why
    conv = [layer for layer in workload.layers if layer.kind in (CONV, DEPTHWISE)]
    if conv:
        return "cnn", f"{len(conv)} convolution layer(s): the digits CNN reference"
    return "mlp", "no attention or convolution layers: the digits MLP reference"


_CODE = (
    "traces/family_traces.py",
    "traces/traces.py",
    "references/cnn.py",
    "references/mlp.py",
    "references/reference.py",
    "references/charlm.py",
    "prune/pruning.py",
    "team/user_eval.py",
    "prune/oneshot.py",
    "prune/tied.py",
    "prune/methods.py",
    "prune/layouts.py",
    "prune/calibration.py",
)


#: the code the transformer trace models' training depends on, and the version of the recipe
#: :func:`_transformer_models` runs (bump it when that function changes)
_LM_CODE = (
    "references/charlm.py",
    "prune/pruning.py",
    "team/user_eval.py",
    "prune/oneshot.py",
    "prune/tied.py",
    "prune/methods.py",
    "prune/layouts.py",
    "prune/calibration.py",
)
_LM_RECIPE = 1


def code_digest() -> str:
    """Digest of the code the streams depend on (the models' training and pruning, the stream
    layout, the encoding): part of an activity result's cache key."""
    hw = Path(__file__).resolve().parents[3] / "hw"
    return modules_digest(_CODE, hw / "golden.py", hw / "fp_golden.py", hw / "precision.py")


def _transformer_models(n: int, m: int) -> dict:
    """Seed SEED of sim.quality.references.transformer's recipe (its _seed_run): dense pre-training, the
    magnitude (ASP) one-shot mask, the dense control (run for its random stream), the fixed-mask
    fine-tune; the held-out windows. Both models are cached on disk
    (``<sparsepe cache>/quality/lm-trace-<key>.npz``, keyed by the training code's digest,
    :data:`_LM_RECIPE`, N:M and the config)."""
    cfg = transformer_config()
    train_ids, test_ids, _, _ = corpus()
    x = eval_windows(test_ids, cfg)[0]
    key = hashlib.sha256(
        json.dumps(
            {
                "code": modules_digest(_LM_CODE),
                "recipe": _LM_RECIPE,
                "n": n,
                "m": m,
                "seed": SEED,
                "cfg": asdict(cfg),
            },
            sort_keys=True,
        ).encode()
    ).hexdigest()[:24]
    path = cache_root() / "quality" / f"lm-trace-{key}.npz"
    try:
        with np.load(path) as z:
            runs: dict = {"dense": {}, "finetuned": {}}
            for k in z.files:
                run, name = k.split("/", 1)
                runs[run][name] = z[k]
        return {**runs, "windows": x, "heads": cfg.heads}
    except (OSError, ValueError, KeyError):
        pass  # absent or damaged: trained below
    rng = [np.random.default_rng(x) for x in np.random.SeedSequence([SEED, n, m]).spawn(7)]
    pre, _ = train_lm(init_lm(cfg, rng[0]), train_ids, cfg, rng[1], cfg.steps)
    oneshot, masks, _ = prune_for_eval(pre, n, m)
    train_lm(pre, train_ids, cfg, rng[2], cfg.finetune_steps)  # the dense control (advances rng[2])
    ft, _ = train_lm(oneshot, train_ids, cfg, rng[2], cfg.finetune_steps, masks=masks)
    buf = io.BytesIO()
    np.savez(buf, **{f"{run}/{k}": v for run, p in (("dense", pre), ("finetuned", ft)) for k, v in p.items()})
    try:
        write_file(path, buf.getvalue(), parents=True)
    except InputError:
        pass  # no writable cache: the models are still returned
    return {"dense": pre, "finetuned": ft, "windows": x, "heads": cfg.heads}


#: one layer of a family's model: (name, float weight (out, K), float inputs (samples, K)[, kind])
ModelLayer = tuple[str, np.ndarray, np.ndarray] | tuple[str, np.ndarray, np.ndarray, str]

_MODELS: dict[tuple[str, int, int], dict] = {}


def family_models(family: str, n: int, m: int) -> dict[str, list[ModelLayer]]:
    """{``finetuned``, ``dense``: [(layer, float weight (out, K), float inputs (samples, K)[, kind])]}
    of the family's reference model (see the module docstring; ``kind`` ACT_GEMM marks an
    activation x activation product, its "weight" the stationary operand); kept for the process."""
    if (family, n, m) not in _MODELS:
        _MODELS[(family, n, m)] = _family_models(family, n, m)
    return _MODELS[(family, n, m)]


def _family_models(family: str, n: int, m: int) -> dict[str, list[ModelLayer]]:
    out: dict[str, list[ModelLayer]] = {}
    if family == "mlp":
        r = reference_experiment(SEED, n, m)
        xte = r.models["data"][2]
        for run in ("finetuned", "dense"):
            model = r.models[run]
            _, acts = model.forward(xte, keep=True)
            out[run] = [
                (f"fc{i}", np.asarray(w), np.asarray(a))
                for i, (w, a) in enumerate(zip(model.weights, acts, strict=True))
            ]
        return out
    if family == "cnn":
        cnn = cnn_experiment(SEED, n, m, epochs=TINY_EPOCHS if reference_size() == "tiny" else CNN_EPOCHS)
        xte = cnn.models["data"][2]
        return {run: list[ModelLayer](layer_gemms(cnn.models[run], xte)) for run in ("finetuned", "dense")}
    if family == "transformer":
        t = _transformer_models(n, m)
        for run in ("finetuned", "dense"):
            p = t[run]
            ins = layer_inputs(p, t["windows"], t["heads"])
            out[run] = [
                (k.removesuffix(".weight"), np.asarray(p[k], dtype=np.float64), v) for k, v in ins.items()
            ]
            out[run] += _attention_products(p, t["windows"][:ATTENTION_WINDOWS], t["heads"])
        return out
    raise InputError(
        f"unknown workload family {family!r} (known: {', '.join(FAMILIES)})", where="activity trace"
    )


#: held-out windows whose attention products join the transformer's layers run dense [A]: 4 (of
#: 2 blocks x 2 heads each: 32 score and 32 context products, about 8 K PE-cycles per query row)
ATTENTION_WINDOWS = 4


def _attention_products(p: dict, x: np.ndarray, heads: int) -> list[tuple[str, np.ndarray, np.ndarray, str]]:
    """The activation x activation GEMMs of the LM on the windows ``x``, as (name, "weight",
    inputs, ACT_GEMM) layers: per block, window and head the scores ``q k^T`` (the keys (T, hd) as
    the stationary operand, the queries (T, hd) streaming) and the context ``P v`` (v^T (hd, T)
    stationary, the causal softmax probabilities P (T, T) streaming). ASP never prunes them: they
    run on a sparse design's dense fallback / dense path."""
    seen: list[np.ndarray] = []

    def lin(a, name):
        y = a @ p[name + ".weight"].T + p[name + ".bias"]
        if name.endswith("attn.qkv"):
            seen.append(np.asarray(y, dtype=np.float64))
        return y

    numpy_nll(p, x, np.zeros_like(x), heads, lin)
    out = []
    for i, qkv in enumerate(seen):
        b, t, d3 = qkv.shape
        hd = d3 // 3 // heads
        parts = qkv.reshape(b, t, 3, heads, hd)
        causal = np.triu(np.full((t, t), -np.inf), 1)
        for w in range(b):
            for h in range(heads):
                q, k, v = parts[w, :, 0, h], parts[w, :, 1, h], parts[w, :, 2, h]
                s = q @ k.T / np.sqrt(hd) + causal
                prob = np.exp(s - s.max(axis=1, keepdims=True))
                prob /= prob.sum(axis=1, keepdims=True)
                out.append((f"blocks.{i}.attn.scores", k, q, ACT_GEMM))
                out.append((f"blocks.{i}.attn.context", v.T, prob, ACT_GEMM))
    return out


def _pad(a: np.ndarray, m: int) -> np.ndarray:
    k = a.shape[1]
    return a if k % m == 0 else np.pad(a, ((0, 0), (0, m - k % m)))


def _layer_stream(
    w,
    x,
    n: int,
    m: int,
    *,
    compressed: bool,
    precision: str,
    weight_bits: int,
    act_bits: int,
    order: str,
    acc_len: int,
):
    """One layer's PE stream: (acts (T, M), weights (T, N or M), meta (T,) or None, clear (T,));
    ``w`` pruned already when compressed. ``order`` (:data:`ORDERS`): ``os``, one dot product after
    the other (a row's K/M groups in order, a clear on its first; the weights change every cycle,
    sim.quality.traces.traces.LayerTrace.pe_stream's order); ``ws``, a PE holds one weight group while
    the samples' activations stream past (the weights change once per group of samples) and a new
    accumulation starts every ``acc_len`` cycles (ppa.activity's stated ACC_LEN)."""
    w, x = _pad(w, m), _pad(x, m)
    if is_float(precision):
        fmt = fp_format(precision)
        wq, xq = w, x
    else:
        wq, _ = quantize_symmetric(w, weight_bits, axis=0)
        xq, _ = quantize_symmetric(x, act_bits)
    rows, k = wq.shape
    groups, p = k // m, xq.shape[0]
    lanes = n if compressed else m
    if compressed:
        vals, meta = compress_nm(wq, n, m)
        wg, mg = vals.reshape(rows, groups, lanes), meta.reshape(rows, groups)
    else:
        wg, mg = wq.reshape(rows, groups, m), None
    xg = xq.reshape(p, groups, m)
    if order == "os":  # (rows, samples, groups)
        acts = np.broadcast_to(xg, (rows, p, groups, m))
        weights = np.broadcast_to(wg[:, None], (rows, p, groups, lanes))
        meta_s = None if mg is None else np.broadcast_to(mg[:, None], (rows, p, groups))
        clear = np.zeros((rows, p, groups), dtype=np.int64)
        clear[..., 0] = 1
    else:  # (rows, groups, samples)
        acts = np.broadcast_to(xg.transpose(1, 0, 2), (rows, groups, p, m))
        weights = np.broadcast_to(wg[:, :, None], (rows, groups, p, lanes))
        meta_s = None if mg is None else np.broadcast_to(mg[:, :, None], (rows, groups, p))
        clear = (np.arange(rows * groups * p) % acc_len == 0).astype(np.int64)
    acts, weights = acts.reshape(-1, m), weights.reshape(-1, lanes)
    if is_float(precision):
        acts, weights = encode(acts, fmt), encode(weights, fmt)
    return (
        acts.astype(np.int64),
        weights.astype(np.int64),
        None if meta_s is None else meta_s.reshape(-1).astype(np.int64),
        clear.reshape(-1),
    )


def family_streams(
    family: str,
    n: int,
    m: int,
    part: str,
    *,
    precision: str = "int8",
    weight_bits: int = 8,
    act_bits: int = 8,
    cycles: int = TRACE_CYCLES,
    order: str = "os",
    acc_len: int = 16,
    models=None,
):
    """The PE input stream of one part (:data:`PARTS`) of a family's reference model:
    ``(acts (T, M), weights (T, N or M), meta (T,) or None, clear (T,), layers)``; ``layers`` names
    the layers it holds. None when the part has no layer (a model ASP prunes entirely has no
    ``fallback``). ``order``, ``acc_len``: the dataflow's stream order (:func:`_layer_stream`).
    ``models``: :func:`family_models`'s result, when at hand."""
    if order not in ORDERS:
        raise InputError(
            f"unknown stream order {order!r} (known: {', '.join(ORDERS)})", where="activity trace"
        )
    if part not in PARTS:
        raise InputError(f"unknown trace part {part!r} (known: {', '.join(PARTS)})", where="activity trace")
    models = models or family_models(family, n, m)
    chosen = []
    for name, w, x, *kind in models["dense" if part == "dense" else "finetuned"]:
        if part == "dense" or kind == [ACT_GEMM]:  # activation x activation products never prune
            if part != "sparse":
                chosen.append((name, w, x, False))
            continue
        layer = prune_layer(name, w.reshape(w.shape[0], -1), n, m, "gemm")
        if layer.pruned == (part == "sparse"):
            chosen.append((name, layer.weights, x, part == "sparse"))
    if not chosen:
        return None
    per_sample = sum(w.shape[0] * (-(-w.shape[1] // m)) for _, w, _, _ in chosen)
    named = list(dict.fromkeys(c[0] for c in chosen))
    parts = []
    for _name, w, x, comp in chosen:
        take = max(1, min(x.shape[0], cycles // per_sample))
        idx = np.linspace(0, x.shape[0] - 1, take).round().astype(np.int64)
        parts.append(
            _layer_stream(
                w,
                x[idx],
                n,
                m,
                compressed=comp,
                precision=precision,
                weight_bits=weight_bits,
                act_bits=act_bits,
                order=order,
                acc_len=acc_len,
            )
        )
    acts = np.concatenate([q[0] for q in parts])
    weights = np.concatenate([q[1] for q in parts])
    meta = np.concatenate([q[2] for q in parts]) if part == "sparse" else None
    clear = np.concatenate([q[3] for q in parts])
    return acts, weights, meta, clear, named
