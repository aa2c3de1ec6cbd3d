"""Hugging Face ``config.json`` import: the whole model as GEMM layers and vector-unit operators.

``load_hf_config(path_or_dict, seq=None, batch=1, phase="prefill", context=None)`` supports the
``model_type``\\ s llama, mistral, qwen2 (RMSNorm, RoPE, SwiGLU, grouped-query attention from
``num_key_value_heads``), gpt2, opt and bert (LayerNorm, learned positions, GELU/ReLU MLP, biases).

Every operator is in the workload: token (and position / token-type) embeddings; the Q/K/V/O
projections (K and V at ``num_key_value_heads x head_dim``); the attention score and value products
(activation x activation, never pruned); scale, mask and softmax; the norms; the MLP (gate, up, down
with SiLU and the gate multiply, or two GEMMs with GELU/ReLU); biases; residual adds; the final norm
and the LM head (BERT: its masked-LM head when ``architectures`` names one, and the pooler).

Attention maps one GEMM per KV head and sequence: the ``heads / kv_heads`` query heads that share
a KV head stack along M (M = group x query tokens), so each cached K and V is read once: in
**decode** (one new token per sequence, ``M = batch``) the score and value GEMMs' second operand is
the KV cache of ``context`` tokens, which the cycle model fetches from DRAM (``kv_cache_elements``
= 2 x layers x kv_heads x head_dim x context x batch), and each step appends its K and V
(``KVCacheWrite``). Prefill computes the full seq x seq scores [A] (a dense kernel masks the upper
triangle rather than skipping it) and the LM head at every position (what a forward pass returns).

Nothing is downloaded: the config file (or dict) is all that is read.
"""

from __future__ import annotations

import json
from pathlib import Path

from hw.errors import InputError
from sim.asp_rules import ACT_GEMM, WEIGHT_GEMM
from sim.layers import Workload, make_layer
from sim.networks import transformer_ops
from sim.vector import make_op

MODEL_TYPES = ("llama", "mistral", "qwen2", "gpt2", "bert", "opt")
PHASES = ("prefill", "decode")


def _get(cfg: dict, where: str, *keys, default=None, required=True):
    for k in keys:
        if k in cfg and cfg[k] is not None:
            v = cfg[k]
            if isinstance(v, bool) or not isinstance(v, int) or v <= 0:
                raise InputError(f"{k} must be a positive integer, got {v!r}", where=where)
            return v
    if required and default is None:
        raise InputError(f"missing {' / '.join(keys)}", where=where)
    return default


def _pos(name: str, v, where: str) -> int:
    if isinstance(v, bool) or not isinstance(v, int) or v <= 0:
        raise InputError(f"{name} must be a positive integer, got {v!r}", where=where)
    return v


def load_hf_config(config: str | Path | dict, seq: int | None = None, batch: int = 1, phase: str = "prefill",
                   context: int | None = None, *, n: int = 2, m: int = 4) -> Workload:
    """The workload of one forward pass: prefill of ``seq`` tokens, or one decode step against a
    KV cache of ``context`` tokens (default ``seq``), for ``batch`` sequences."""
    if isinstance(config, dict):
        cfg, where, stem = config, "hf-config", str(config.get("model_type", "hf"))
    else:
        p = Path(config)
        where = str(p)
        if not p.is_file():
            raise InputError("config file not found", where=where)
        try:
            cfg = json.loads(p.read_text(encoding="utf-8"))
        except (json.JSONDecodeError, UnicodeDecodeError) as exc:
            raise InputError(f"not valid JSON: {exc}", where=where) from None
        if not isinstance(cfg, dict):
            raise InputError("a Hugging Face config.json holds one JSON object", where=where)
        stem = p.parent.name if p.stem == "config" and p.parent.name else p.stem
    mt = cfg.get("model_type")
    if mt not in MODEL_TYPES:
        raise InputError(f"model_type {mt!r} not supported (supported: {', '.join(MODEL_TYPES)})", where=where)
    if phase not in PHASES:
        raise InputError(f"phase must be prefill or decode, got {phase!r}", where="--phase")
    batch = _pos("batch", batch, "--batch")
    gpt2 = mt == "gpt2"
    d = _get(cfg, where, "n_embd" if gpt2 else "hidden_size", "hidden_size")
    L = _get(cfg, where, "n_layer" if gpt2 else "num_hidden_layers", "num_hidden_layers")
    heads = _get(cfg, where, "n_head" if gpt2 else "num_attention_heads", "num_attention_heads")
    vocab = _get(cfg, where, "vocab_size")
    max_pos = _get(cfg, where, "n_positions" if gpt2 else "max_position_embeddings", "max_position_embeddings",
                   default=0, required=False)
    if mt in ("llama", "mistral", "qwen2"):
        kvh = _get(cfg, where, "num_key_value_heads", default=heads, required=False)
        hd = _get(cfg, where, "head_dim", default=d // heads, required=False)
        ffn = _get(cfg, where, "intermediate_size")
        arch = dict(norm="rms", act=str(cfg.get("hidden_act", "silu")), gated=True, pre_norm=True, rope=True,
                    qkv_bias=bool(cfg.get("attention_bias", mt == "qwen2")), o_bias=bool(cfg.get("attention_bias", False))
                    and mt != "qwen2", mlp_bias=bool(cfg.get("mlp_bias", False)), positions=0)
        tied = bool(cfg.get("tie_word_embeddings", False))
    elif mt == "gpt2":
        kvh, hd = heads, d // heads
        ffn = _get(cfg, where, "n_inner", default=4 * d, required=False)
        arch = dict(norm="layer", act=str(cfg.get("activation_function", "gelu_new")), gated=False, pre_norm=True,
                    qkv_bias=True, o_bias=True, mlp_bias=True, positions=max_pos or 1024)
        tied = bool(cfg.get("tie_word_embeddings", True))
    elif mt == "opt":
        kvh, hd = heads, d // heads
        ffn = _get(cfg, where, "ffn_dim")
        if cfg.get("word_embed_proj_dim", d) != d:
            raise InputError("word_embed_proj_dim != hidden_size (OPT-350m's projections) is not modelled", where=where)
        bias = bool(cfg.get("enable_bias", True))
        pre = bool(cfg.get("do_layer_norm_before", True))
        # OPT's learned positions have 2 extra rows (the offset of OPTLearnedPositionalEmbedding)
        arch = dict(norm="layer", act=str(cfg.get("activation_function", "relu")), gated=False, pre_norm=pre,
                    qkv_bias=bias, o_bias=bias, mlp_bias=bias, positions=(max_pos or 2048) + 2, final_norm=pre)
        tied = bool(cfg.get("tie_word_embeddings", True))
    else:  # bert
        kvh, hd = heads, d // heads
        ffn = _get(cfg, where, "intermediate_size")
        arch = dict(norm="layer", act=str(cfg.get("hidden_act", "gelu")), gated=False, pre_norm=False, qkv_bias=True,
                    o_bias=True, mlp_bias=True, positions=max_pos or 512,
                    token_types=_get(cfg, where, "type_vocab_size", default=2, required=False), embed_norm=True,
                    final_norm=False)
        tied = True
    if heads % kvh:
        raise InputError(f"num_attention_heads {heads} is not a multiple of num_key_value_heads {kvh}", where=where)
    if seq is None:
        seq = min(max_pos or 2048, 2048)
    seq = _pos("seq", seq, "--seq")
    decode = phase == "decode"
    if decode and mt == "bert":
        raise InputError("BERT is an encoder: no decode phase", where="--phase")
    ctx = _pos("context", context if context is not None else seq, "--context") if decode else seq
    if max_pos and (ctx if decode else seq) > max_pos and mt in ("gpt2", "bert", "opt"):
        raise InputError(f"{'context' if decode else 'seq'} {ctx if decode else seq} exceeds the model's "
                         f"{max_pos} learned positions", where="--context" if decode else "--seq")
    q_len = 1 if decode else seq
    M = batch * q_len
    qd, kv = heads * hd, kvh * hd
    group = heads // kvh
    mk = lambda name, kind, MM, N, K, ws=None, count=L: make_layer(  # noqa: E731
        name, kind, MM, N, K, weight_shape=ws, count=count, n=n, m=m, where=f"{where}: {name}")
    layers = []
    if gpt2:  # Conv1D c_attn: one fused (3d x d) weight
        layers.append(mk("qkv_proj", WEIGHT_GEMM, M, 3 * d, d, (3 * d, d)))
    else:
        layers += [mk("q_proj", WEIGHT_GEMM, M, qd, d, (qd, d)), mk("k_proj", WEIGHT_GEMM, M, kv, d, (kv, d)),
                   mk("v_proj", WEIGHT_GEMM, M, kv, d, (kv, d))]
    # one GEMM per KV head and sequence; the group's query heads stack along M
    layers += [mk("attn_scores", ACT_GEMM, group * q_len, ctx, hd, count=L * kvh * batch),
               mk("attn_context", ACT_GEMM, group * q_len, hd, ctx, count=L * kvh * batch),
               mk("o_proj", WEIGHT_GEMM, M, d, qd, (d, qd))]
    if arch["gated"]:
        layers += [mk("gate_proj", WEIGHT_GEMM, M, ffn, d, (ffn, d)), mk("up_proj", WEIGHT_GEMM, M, ffn, d, (ffn, d)),
                   mk("down_proj", WEIGHT_GEMM, M, d, ffn, (d, ffn))]
    else:
        layers += [mk("fc1", WEIGHT_GEMM, M, ffn, d, (ffn, d)), mk("fc2", WEIGHT_GEMM, M, d, ffn, (d, ffn))]
    extra_ops = []
    if mt == "bert":
        # pooler: dense + tanh on the [CLS] token of each sequence
        layers.append(mk("pooler", WEIGHT_GEMM, batch, d, d, (d, d), count=1))
        extra_ops += [make_op("pooler_bias", "Add", (batch, d), [(batch, d)], params=d),
                      make_op("pooler_tanh", "Tanh", (batch, d), [(batch, d)])]
        if any(str(a).endswith(("MaskedLM", "PreTraining")) for a in cfg.get("architectures") or []):
            layers += [mk("mlm_transform", WEIGHT_GEMM, M, d, d, (d, d), count=1),
                       mk("lm_head", WEIGHT_GEMM, M, vocab, d, (vocab, d), count=1)]
            extra_ops += [make_op("mlm_bias", "Add", (M, d), [(M, d)], params=d),
                          make_op("mlm_act", "Gelu", (M, d), [(M, d)]),
                          make_op("mlm_norm", "LayerNormalization", (M, d), [(M, d)], params=2 * d),
                          make_op("lm_head_bias", "Add", (M, vocab), [(M, vocab)], params=vocab)]
    else:
        layers.append(mk("lm_head", WEIGHT_GEMM, M, vocab, d, (vocab, d), count=1))
    ops = transformer_ops(n_layers=L, d=d, heads=heads, kv_heads=kvh, head_dim=hd, ffn=ffn, batch=batch, q_len=q_len,
                          ctx=ctx, vocab=vocab, decode=decode, own_embedding=True,
                          **{k: v for k, v in arch.items()})
    wl_name = f"{stem}-decode(context={ctx},batch={batch})" if decode else f"{stem}-prefill(seq={seq},batch={batch})"
    w = Workload(wl_name, tuple(layers), tuple(ops) + tuple(extra_ops),
                 kv_cache_elements=2 * L * kvh * hd * ctx * batch if decode else 0)
    if tied and any(l.name == "lm_head" for l in layers):
        # the table is the LM head's weight: count it once, with the embedding
        w = Workload(w.name, w.layers, w.vector_ops, stored_weight_params=w.weight_params - vocab * d,
                     kv_cache_elements=w.kv_cache_elements)
    return w
