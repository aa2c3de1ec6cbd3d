"""Hugging Face ``config.json`` import: the whole model as GEMM layers and vector-unit operators.

``load_hf_config(path_or_dict, seq=None, batch=1, phase="prefill", context=None)`` supports the
``model_type``\\ s llama, mistral, qwen2, qwen3 (RMSNorm, RoPE, SwiGLU, grouped-query attention from
``num_key_value_heads``; Qwen3's per-head Q/K norms), the mixtures of experts mixtral, qwen2_moe,
qwen3_moe, deepseek_v2 and deepseek_v3 (:func:`sim.networks.moe_block`; DeepSeek's multi-head
latent attention, :mod:`sim.importers.mla`), and gpt2, opt and bert (LayerNorm, learned
positions, GELU/ReLU MLP, biases).

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

**Sliding window** (``sliding_window``: Mistral and Mixtral on every layer; Qwen2/Qwen3 only with
``use_sliding_window``, on the layers from ``max_window_layers`` on, or as ``layer_types`` says): a
windowed layer attends over at most ``sliding_window`` keys, and its KV cache holds that many tokens
(Mistral's rolling buffer). In prefill each query is scored against ``min(seq, window)`` keys [A]
(a banded kernel, e.g. flash-attention's ``window_size``, skips the blocks outside the band).

**Mixture of experts**: per token the router (d -> experts) and the ``num_experts_per_tok`` chosen
experts; shared experts run for every token. The weights read are those of the experts the batch
touches (:func:`sim.networks.expected_experts`, independence assumption stated there).
``weight_params`` is every parameter of the model and ``active_params`` those one token uses.

**Head count**: the hidden size must be a multiple of the head count whenever the head size is
derived from it (every model type; a config that states ``head_dim``, or DeepSeek's latent-attention
head sizes, fixes the head size itself).

**LM head**: a head tied to the embedding table (``tie_word_embeddings``) is not a 2:4 target: the
table is the embeddings, which are not pruned; ``prune_lm_head=True`` (``--prune-lm-head``) makes it
one (its ASP verdict then applies).

Nothing is downloaded: the config file (or dict) is all that is read.
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import replace
from pathlib import Path

from hw.errors import InputError
from sim.asp_rules import ACT_GEMM, WEIGHT_GEMM
from sim.importers.mla import mla_attention
from sim.inputs import read_json
from sim.layers import Layer, Workload, make_layer
from sim.networks import MoEBlock, moe_block, transformer_ops
from sim.vector import VectorOp, make_op

MODEL_TYPES = ("llama", "mistral", "mixtral", "qwen2", "qwen2_moe", "qwen3", "qwen3_moe", "deepseek_v2",
               "deepseek_v3", "gpt2", "bert", "opt")
#: RMSNorm + RoPE + SwiGLU decoders (grouped-query attention)
LLAMA_LIKE = ("llama", "mistral", "mixtral", "qwen2", "qwen2_moe", "qwen3", "qwen3_moe")
QWEN = ("qwen2", "qwen2_moe", "qwen3", "qwen3_moe")
DEEPSEEK = ("deepseek_v2", "deepseek_v3")
PHASES = ("prefill", "decode")
#: [P] transformers Qwen2Config / Qwen2MoeConfig default max_window_layers (28)
QWEN_MAX_WINDOW_LAYERS = 28


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


def _read(config: str | Path | dict) -> tuple[dict, str, str]:
    if isinstance(config, dict):
        return config, "hf-config", str(config.get("model_type", "hf"))
    p = Path(config)
    where = str(p)
    if not p.is_file():
        raise InputError("config file not found", where=where)
    cfg = read_json(p, "config file")
    if not isinstance(cfg, dict):
        raise InputError("a Hugging Face config.json holds one JSON object", where=where)
    return cfg, where, p.parent.name if p.stem == "config" and p.parent.name else p.stem


def _sliding(cfg: dict, mt: str, L: int, where: str) -> tuple[int | None, int]:
    """(window, number of windowed layers) of the config."""
    sw = cfg.get("sliding_window")
    if sw is None:
        return None, 0
    if isinstance(sw, bool) or not isinstance(sw, int) or sw <= 0:
        raise InputError(f"sliding_window must be a positive integer or null, got {sw!r}", where=where)
    if mt in ("mistral", "mixtral"):
        return sw, L
    if mt in QWEN and cfg.get("use_sliding_window", False):
        types = cfg.get("layer_types")
        if isinstance(types, list) and len(types) == L:
            return sw, sum(t == "sliding_attention" for t in types)
        first = cfg.get("max_window_layers", QWEN_MAX_WINDOW_LAYERS)
        if isinstance(first, bool) or not isinstance(first, int) or first < 0:
            raise InputError(f"max_window_layers must be a non-negative integer, got {first!r}", where=where)
        return sw, max(0, L - first)
    return None, 0  # llama, gpt2, opt, bert, deepseek: no sliding window in the model


def _moe(cfg: dict, mt: str, L: int, ffn: int | None, where: str) -> dict | None:
    """The MoE parameters, or None for a dense model: experts, top_k, expert_ffn, shared_ffn,
    shared_gate, scoring, score_bias and the indices of the MoE layers."""
    if mt == "mixtral":
        E = _get(cfg, where, "num_local_experts")
        idx = list(range(L))
        f, shared, gate = ffn, 0, False
    elif mt in ("qwen2_moe", "qwen3_moe"):
        E = _get(cfg, where, "num_experts")
        step = _get(cfg, where, "decoder_sparse_step", default=1, required=False)
        only = cfg.get("mlp_only_layers") or []
        if not isinstance(only, list) or not all(isinstance(i, int) and not isinstance(i, bool) for i in only):
            raise InputError(f"mlp_only_layers must be a list of layer indices, got {only!r}", where=where)
        idx = [i for i in range(L) if i not in only and (i + 1) % step == 0]
        f = _get(cfg, where, "moe_intermediate_size")
        shared = _get(cfg, where, "shared_expert_intermediate_size", default=0, required=False) \
            if mt == "qwen2_moe" else 0
        gate = bool(shared)
    elif mt in DEEPSEEK:
        if cfg.get("n_routed_experts") is None:
            return None
        E = _get(cfg, where, "n_routed_experts")
        first = cfg.get("first_k_dense_replace", 0)
        if isinstance(first, bool) or not isinstance(first, int) or first < 0:
            raise InputError(f"first_k_dense_replace must be a non-negative integer, got {first!r}", where=where)
        freq = _get(cfg, where, "moe_layer_freq", default=1, required=False)
        idx = [i for i in range(L) if i >= first and i % freq == 0]
        f = _get(cfg, where, "moe_intermediate_size")
        shared = _get(cfg, where, "n_shared_experts", default=0, required=False) * f
        gate = False
    else:
        return None
    k = _get(cfg, where, "num_experts_per_tok")
    if k > E:
        raise InputError(f"num_experts_per_tok {k} exceeds the number of experts {E}", where=where)
    scoring = str(cfg.get("scoring_func", "softmax")) if mt in DEEPSEEK else "softmax"
    if scoring not in ("softmax", "sigmoid"):
        raise InputError(f"scoring_func {scoring!r} not supported (softmax, sigmoid)", where=where)
    return dict(experts=E, top_k=k, expert_ffn=f, shared_ffn=shared, shared_gate=gate, scoring=scoring,
                score_bias=mt == "deepseek_v3" and cfg.get("topk_method") == "noaux_tc", layers=idx)


#: what a family reader returns: kv heads, head size, MLP width, the transformer_ops arch, tied LM head
Family = tuple[int, int, int | None, dict, bool]


def _llama_like(cfg: dict, mt: str, where: str, d: int, heads: int, max_pos: int) -> Family:
    """RMSNorm + RoPE + SwiGLU decoders (LLAMA_LIKE) and DeepSeek (its attention is sim.importers.mla's)."""
    kvh = _get(cfg, where, "num_key_value_heads", default=heads, required=False)
    hd = _get(cfg, where, "head_dim", default=d // heads, required=False)
    dense_ffn = mt not in ("qwen2_moe", "qwen3_moe") or bool(cfg.get("mlp_only_layers")) or \
        cfg.get("decoder_sparse_step", 1) != 1
    ffn = _get(cfg, where, "intermediate_size", required=dense_ffn, default=None if dense_ffn else 0)
    qwen2 = mt in ("qwen2", "qwen2_moe")
    arch = dict(norm="rms", act=str(cfg.get("hidden_act", "silu")), gated=True, pre_norm=True, rope=True,
                qkv_bias=bool(cfg.get("attention_bias", qwen2)), o_bias=bool(cfg.get("attention_bias", False))
                and not qwen2, mlp_bias=bool(cfg.get("mlp_bias", False)), positions=0)
    if mt in DEEPSEEK:  # latent attention: its projections, biases and RoPE are sim.importers.mla's
        arch.update(rope=False, qkv_bias=False, o_bias=False)
    return kvh, hd, ffn, arch, bool(cfg.get("tie_word_embeddings", False))


def _gpt2(cfg: dict, mt: str, where: str, d: int, heads: int, max_pos: int) -> Family:
    ffn = _get(cfg, where, "n_inner", default=4 * d, required=False)
    arch = dict(norm="layer", act=str(cfg.get("activation_function", "gelu_new")), gated=False, pre_norm=True,
                qkv_bias=True, o_bias=True, mlp_bias=True, positions=max_pos or 1024)
    return heads, d // heads, ffn, arch, bool(cfg.get("tie_word_embeddings", True))


def _opt(cfg: dict, mt: str, where: str, d: int, heads: int, max_pos: int) -> Family:
    ffn = _get(cfg, where, "ffn_dim")
    if cfg.get("word_embed_proj_dim", d) != d:
        raise InputError("word_embed_proj_dim != hidden_size (OPT-350m's projections) is not modelled", where=where)
    bias = bool(cfg.get("enable_bias", True))
    pre = bool(cfg.get("do_layer_norm_before", True))
    # OPT's learned positions have 2 extra rows (the offset of OPTLearnedPositionalEmbedding)
    arch = dict(norm="layer", act=str(cfg.get("activation_function", "relu")), gated=False, pre_norm=pre,
                qkv_bias=bias, o_bias=bias, mlp_bias=bias, positions=(max_pos or 2048) + 2, final_norm=pre)
    return heads, d // heads, ffn, arch, bool(cfg.get("tie_word_embeddings", True))


def _bert(cfg: dict, mt: str, where: str, d: int, heads: int, max_pos: int) -> Family:
    ffn = _get(cfg, where, "intermediate_size")
    arch = dict(norm="layer", act=str(cfg.get("hidden_act", "gelu")), gated=False, pre_norm=False, qkv_bias=True,
                o_bias=True, mlp_bias=True, positions=max_pos or 512,
                token_types=_get(cfg, where, "type_vocab_size", default=2, required=False), embed_norm=True,
                final_norm=False)
    return heads, d // heads, ffn, arch, True


#: model_type -> the reader of its family's sizes and architecture
_FAMILY_READERS = {**{mt: _llama_like for mt in LLAMA_LIKE + DEEPSEEK}, "gpt2": _gpt2, "opt": _opt, "bert": _bert}


def load_hf_config(config: str | Path | dict, seq: int | None = None, batch: int = 1, phase: str = "prefill",
                   context: int | None = None, *, n: int = 2, m: int = 4, prune_lm_head: bool = False,
                   name: str | None = None) -> Workload:
    """The workload of one forward pass: prefill of ``seq`` tokens, or one decode step against a
    KV cache of ``context`` tokens (default ``seq``), for ``batch`` sequences. ``name`` replaces the
    model name taken from the file."""
    cfg, where, stem = _read(config)
    stem = name or stem
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
    explicit_hd = (mt in LLAMA_LIKE and cfg.get("head_dim") is not None) or mt in DEEPSEEK
    if not explicit_hd and d % heads:
        raise InputError(f"the hidden size {d} is not a multiple of the {heads} attention heads", where=where)
    kvh, hd, ffn, arch, tied = _FAMILY_READERS[mt](cfg, mt, where, d, heads, max_pos)
    if heads % kvh:
        raise InputError(f"num_attention_heads {heads} is not a multiple of num_key_value_heads {kvh}", where=where)
    window, n_win = _sliding(cfg, mt, L, where)
    moe = _moe(cfg, mt, L, ffn, where)
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
    mk = lambda name, kind, MM, N, K, ws=None, count=L: make_layer(  # noqa: E731
        name, kind, MM, N, K, weight_shape=ws, count=count, n=n, m=m, where=f"{where}: {name}")
    # attention: (name suffix, layers, keys each query is scored against)
    keys_w = min(ctx, window) if window else ctx
    if n_win == L:
        groups = [("", L, keys_w)]
    else:
        groups = [("", L - n_win, ctx)] + ([("_window", n_win, keys_w)] if n_win else [])
    layers, extra_ops = [], []
    if mt in DEEPSEEK:
        mla = mla_attention(cfg, where, n_layers=L, d=d, heads=heads, batch=batch, q_len=q_len, ctx=ctx,
                            decode=decode, mk=mk)
        layers += mla.layers
        extra_ops += mla.ops
        kv_elems = mla.kv_cache_elements
        score_heads, score_kvh = heads, heads
    else:
        layers, extra_ops, kv_elems = _gqa_attention(mt, mk, L=L, M=M, d=d, heads=heads, kvh=kvh, hd=hd, q_len=q_len,
                                                     batch=batch, groups=groups, decode=decode)
        score_heads, score_kvh = heads, kvh
    n_moe = len(moe["layers"]) if moe else 0
    n_dense = L - n_moe
    block = None
    if n_dense:
        mkd = lambda name, MM, N, K: mk(name, WEIGHT_GEMM, MM, N, K, (N, K), count=n_dense)  # noqa: E731
        if arch["gated"]:
            layers += [mkd("gate_proj", M, ffn, d), mkd("up_proj", M, ffn, d), mkd("down_proj", M, d, ffn)]
        else:
            layers += [mkd("fc1", M, ffn, d), mkd("fc2", M, d, ffn)]
    if moe:
        block = moe_block(n_layers=n_moe, tokens=M, d=d, experts=moe["experts"], top_k=moe["top_k"],
                          expert_ffn=moe["expert_ffn"], shared_ffn=moe["shared_ffn"], shared_gate=moe["shared_gate"],
                          act=arch["act"], scoring=moe["scoring"], score_bias=moe["score_bias"], n=n, m=m,
                          where=where)
        layers += block.layers
        extra_ops += block.ops
    if mt == "bert":
        bert_layers, bert_ops = _bert_heads(cfg, mk, batch=batch, M=M, d=d, vocab=vocab)
        layers += bert_layers
        extra_ops += bert_ops
    else:
        layers.append(mk("lm_head", WEIGHT_GEMM, M, vocab, d, (vocab, d), count=1))
    if tied and not prune_lm_head:
        layers = [replace(l, sparsifiable=False, reason="LM head tied to the embedding table: not a 2:4 target "
                                                        "(the embeddings are not pruned; --prune-lm-head prunes it)")
                  if l.name == "lm_head" else l for l in layers]
    win = (n_win, keys_w) if 0 < n_win < L else None
    ops = transformer_ops(n_layers=L, d=d, heads=score_heads, kv_heads=score_kvh, head_dim=hd, ffn=ffn or 1,
                          batch=batch, q_len=q_len, ctx=keys_w if n_win == L else ctx, vocab=vocab,
                          decode=decode and mt not in DEEPSEEK, own_embedding=True, mlp_layers=n_dense, window=win,
                          **arch)
    wl_name = f"{stem}-decode(context={ctx},batch={batch})" if decode else f"{stem}-prefill(seq={seq},batch={batch})"
    w = Workload(wl_name, tuple(layers), tuple(ops) + tuple(extra_ops), kv_cache_elements=kv_elems)
    return _with_param_counts(w, block, tied, vocab * d)


def _gqa_attention(mt: str, mk: Callable[..., Layer], *, L: int, M: int, d: int, heads: int, kvh: int, hd: int,
                   q_len: int, batch: int, groups: list[tuple[str, int, int]],
                   decode: bool) -> tuple[list[Layer], list[VectorOp], int]:
    """Grouped-query attention: the projections, one score and one value GEMM per KV head and sequence
    (``groups``: name suffix, layers, keys each query is scored against), Qwen3's head norms; and the
    KV cache elements one decode step reads."""
    qd, kv = heads * hd, kvh * hd
    group = heads // kvh
    layers, extra_ops = [], []
    if mt == "gpt2":  # Conv1D c_attn: one fused (3d x d) weight
        layers.append(mk("qkv_proj", WEIGHT_GEMM, M, 3 * d, d, (3 * d, d)))
    else:
        layers += [mk("q_proj", WEIGHT_GEMM, M, qd, d, (qd, d)), mk("k_proj", WEIGHT_GEMM, M, kv, d, (kv, d)),
                   mk("v_proj", WEIGHT_GEMM, M, kv, d, (kv, d))]
    # one GEMM per KV head and sequence; the group's query heads stack along M
    for suffix, n_l, keys in groups:
        layers += [mk(f"attn_scores{suffix}", ACT_GEMM, group * q_len, keys, hd, count=n_l * kvh * batch),
                   mk(f"attn_context{suffix}", ACT_GEMM, group * q_len, hd, keys, count=n_l * kvh * batch)]
    layers.append(mk("o_proj", WEIGHT_GEMM, M, d, qd, (d, qd)))
    kv_elems = 2 * kvh * hd * batch * sum(n_l * keys for _, n_l, keys in groups) if decode else 0
    if mt in ("qwen3", "qwen3_moe"):  # RMSNorm of each query and key head (head_dim scale each)
        extra_ops += [make_op("q_norm", "RMSNormalization", (M * heads, hd), [(M * heads, hd)], count=L, params=hd),
                      make_op("k_norm", "RMSNormalization", (M * kvh, hd), [(M * kvh, hd)], count=L, params=hd)]
    return layers, extra_ops, kv_elems


def _bert_heads(cfg: dict, mk: Callable[..., Layer], *, batch: int, M: int, d: int,
                vocab: int) -> tuple[list[Layer], list[VectorOp]]:
    """BERT's pooler (dense + tanh on each sequence's [CLS] token) and, when ``architectures`` names
    one, its masked-LM head."""
    layers = [mk("pooler", WEIGHT_GEMM, batch, d, d, (d, d), count=1)]
    ops = [make_op("pooler_bias", "Add", (batch, d), [(batch, d)], params=d),
           make_op("pooler_tanh", "Tanh", (batch, d), [(batch, d)])]
    if any(str(a).endswith(("MaskedLM", "PreTraining")) for a in cfg.get("architectures") or []):
        layers += [mk("mlm_transform", WEIGHT_GEMM, M, d, d, (d, d), count=1),
                   mk("lm_head", WEIGHT_GEMM, M, vocab, d, (vocab, d), count=1)]
        ops += [make_op("mlm_bias", "Add", (M, d), [(M, d)], params=d),
                make_op("mlm_act", "Gelu", (M, d), [(M, d)]),
                make_op("mlm_norm", "LayerNormalization", (M, d), [(M, d)], params=2 * d),
                make_op("lm_head_bias", "Add", (M, vocab), [(M, vocab)], params=vocab)]
    return layers, ops


def _with_param_counts(w: Workload, block: MoEBlock | None, tied: bool, table: int) -> Workload:
    """``w`` with the parameters the model stores and one token uses, where they differ from its layers'."""
    total, active = w.weight_params, None
    if block is not None:  # the layers carry the experts the batch touches; the model has them all
        total = total - block.touched_expert_params + block.expert_params
        active = total - (block.expert_params - block.active_expert_params)
    if tied and any(l.name == "lm_head" for l in w.layers):
        # the table is the LM head's weight: count it once, with the embedding
        total -= table
        active = None if active is None else active - table
    if total != w.weight_params or active is not None:
        w = replace(w, stored_weight_params=total, active_param_count=active)
    return w
