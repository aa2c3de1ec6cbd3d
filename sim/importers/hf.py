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
from dataclasses import dataclass, replace
from pathlib import Path

from hw.errors import InputError
from sim.asp_rules import ACT_GEMM, WEIGHT_GEMM
from sim.importers.hf_keys import (
    BERT_NO_POOLER,
    Quantization,
    activation,
    check_dim,
    check_int,
    check_repeats,
    head_kind,
    int_key,
    key_of,
    layer_types,
    num_labels,
    quantization,
)
from sim.importers.mla import mla_attention
from sim.inputs import MAX_LAYER_COUNT, read_json
from sim.layers import Layer, Workload, make_layer
from sim.networks import MoEBlock, moe_block, transformer_ops
from sim.vector import VectorOp, make_op

MODEL_TYPES = (
    "llama",
    "mistral",
    "mixtral",
    "qwen2",
    "qwen2_moe",
    "qwen3",
    "qwen3_moe",
    "deepseek_v2",
    "deepseek_v3",
    "gpt2",
    "bert",
    "opt",
)
#: RMSNorm + RoPE + SwiGLU decoders (grouped-query attention)
LLAMA_LIKE = ("llama", "mistral", "mixtral", "qwen2", "qwen2_moe", "qwen3", "qwen3_moe")
QWEN = ("qwen2", "qwen2_moe", "qwen3", "qwen3_moe")
DEEPSEEK = ("deepseek_v2", "deepseek_v3")
PHASES = ("prefill", "decode")
#: [P] transformers Qwen2Config / Qwen2MoeConfig default max_window_layers (28)
QWEN_MAX_WINDOW_LAYERS = 28
#: Largest max_position_embeddings. [A] 2**31: only the learned position table's size depends on it
MAX_POSITIONS = 2**31
#: Largest --seq / --batch / --context before the layers' own limits are checked (so the error names
#: the range the layers allow). [A] 2**62: any integer a user types, well inside int64
MAX_FLAG = 2**62
#: Which convention the published active-parameter figures of a family use: whether they count the
#: input embedding table (one row of it is read per token). [P] DeepSeek-V2 paper (arXiv 2405.04434)
#: and DeepSeek-V3 report: 21 B / 37 B activated, DeepSeek-V2-Lite model card 2.4 B, without the
#: embedding; Mistral AI "Mixtral of experts" 12.9 B and the Qwen MoE cards (A2.7B, A3B) with it.
PUBLISHED_ACTIVE = {
    "deepseek_v2": "DeepSeek's published activated parameters leave the input embedding out (DeepSeek-V2 21 B, "
    "V2-Lite 2.4 B): compare active_params_excluding_embeddings",
    "deepseek_v3": "DeepSeek's published activated parameters leave the input embedding out (DeepSeek-V3 37 B): "
    "compare active_params_excluding_embeddings",
    "mixtral": "Mistral AI's published active parameters count the embeddings (Mixtral 8x7B 12.9 B): compare "
    "active_params",
    "qwen2_moe": "Qwen's published activated parameters count the embeddings (Qwen1.5-MoE-A2.7B 2.7 B): compare "
    "active_params",
    "qwen3_moe": "Qwen's published activated parameters count the embeddings (Qwen3-30B-A3B 3.3 B): compare "
    "active_params",
}


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


def _sliding(cfg: dict, mt: str, L: int, types: list[str] | None, where: str) -> tuple[int | None, int]:
    """(window, number of windowed layers) of the config."""
    sw = cfg.get("sliding_window")
    windowed = mt in ("mistral", "mixtral") or (mt in QWEN and cfg.get("use_sliding_window", False))
    if sw is None or not windowed:
        # a value the model does not use is not read (transformers' Qwen2MoeConfig() writes
        # sliding_window 0 beside use_sliding_window false)
        return None, 0
    if isinstance(sw, bool) or not isinstance(sw, int) or sw <= 0:
        raise InputError(f"sliding_window must be a positive integer or null, got {sw!r}", where=where)
    if mt in ("mistral", "mixtral"):
        return sw, L
    if mt in QWEN:
        if types is not None:
            return sw, sum(t == "sliding_attention" for t in types)
        first = cfg.get("max_window_layers", QWEN_MAX_WINDOW_LAYERS)
        if isinstance(first, bool) or not isinstance(first, int) or first < 0:
            raise InputError(f"max_window_layers must be a non-negative integer, got {first!r}", where=where)
        return sw, max(0, L - first)
    return None, 0


def _moe(cfg: dict, mt: str, L: int, lkey: str, ffn: int | None, where: str) -> dict | None:
    """The MoE parameters, or None for a dense model (or one whose every layer is dense): experts,
    top_k, expert_ffn, shared_ffn, shared_gate, scoring, score_bias and the indices of the MoE layers."""
    if mt == "mixtral":
        E = int_key(cfg, where, "num_local_experts", why="the router's outputs, one layer dimension")
        idx = list(range(L))
        f, shared, gate = ffn, 0, False
    elif mt in ("qwen2_moe", "qwen3_moe"):
        E = int_key(cfg, where, "num_experts", why="the router's outputs, one layer dimension")
        step = int_key(cfg, where, "decoder_sparse_step", default=1, required=False, hi=L, why=f"{lkey}")
        only = cfg.get("mlp_only_layers") or []
        if not isinstance(only, list) or not all(
            isinstance(i, int) and not isinstance(i, bool) and 0 <= i < L for i in only
        ):
            raise InputError(
                f"mlp_only_layers must be a list of layer indices in 0..{L - 1}, got {only!r}", where=where
            )
        idx = [i for i in range(L) if i not in only and (i + 1) % step == 0]
        f = int_key(cfg, where, "moe_intermediate_size")
        shared = (
            int_key(cfg, where, "shared_expert_intermediate_size", default=0, required=False)
            if mt == "qwen2_moe"
            else 0
        )
        gate = bool(shared)
    elif mt in DEEPSEEK:
        if cfg.get("n_routed_experts") is None:
            return None
        E = int_key(cfg, where, "n_routed_experts", why="the router's outputs, one layer dimension")
        first = int_key(
            cfg,
            where,
            "first_k_dense_replace",
            default=0,
            required=False,
            lo=0,
            hi=L,
            why=f"the dense layers before the first MoE layer, at most {lkey}",
        )
        freq = int_key(cfg, where, "moe_layer_freq", default=1, required=False, hi=L, why=lkey)
        idx = [i for i in range(L) if i >= first and i % freq == 0]
        f = int_key(cfg, where, "moe_intermediate_size")
        shared = (
            int_key(
                cfg,
                where,
                "n_shared_experts",
                default=0,
                required=False,
                hi=E,
                why="n_routed_experts at most",
            )
            * f
        )
        gate = False
    else:
        return None
    k = int_key(cfg, where, "num_experts_per_tok")
    if k > E:
        raise InputError(f"num_experts_per_tok {k} exceeds the number of experts {E}", where=where)
    scoring = cfg.get("scoring_func", "softmax") if mt in DEEPSEEK else "softmax"
    if scoring not in ("softmax", "sigmoid"):
        raise InputError(f"scoring_func {scoring!r} not supported (softmax, sigmoid)", where=where)
    if not idx:  # every layer dense (first_k_dense_replace = the layer count, mlp_only_layers all of them)
        return None
    return dict(
        experts=E,
        top_k=k,
        expert_ffn=f,
        shared_ffn=shared,
        shared_gate=gate,
        scoring=scoring,
        score_bias=mt == "deepseek_v3" and cfg.get("topk_method") == "noaux_tc",
        layers=idx,
    )


#: what a family reader returns: kv heads, head size, MLP width, the transformer_ops arch, tied LM head
Family = tuple[int, int, int | None, dict, bool]


def _llama_like(cfg: dict, mt: str, where: str, d: int, heads: int, max_pos: int) -> Family:
    """RMSNorm + RoPE + SwiGLU decoders (LLAMA_LIKE) and DeepSeek (its attention is sim.importers.mla's)."""
    kvh = int_key(
        cfg,
        where,
        "num_key_value_heads",
        default=heads,
        required=False,
        hi=heads,
        why="num_attention_heads at most",
    )
    hd = int_key(cfg, where, "head_dim", default=d // heads, required=False)
    dense_ffn = (
        mt not in ("qwen2_moe", "qwen3_moe")
        or bool(cfg.get("mlp_only_layers"))
        or cfg.get("decoder_sparse_step", 1) != 1
    )
    ffn = int_key(cfg, where, "intermediate_size", required=dense_ffn, default=None if dense_ffn else 0)
    qwen2 = mt in ("qwen2", "qwen2_moe")
    arch = dict(
        norm="rms",
        act=activation(cfg, "hidden_act", "silu", where),
        gated=True,
        pre_norm=True,
        rope=True,
        qkv_bias=bool(cfg.get("attention_bias", qwen2)),
        o_bias=bool(cfg.get("attention_bias", False)) and not qwen2,
        mlp_bias=bool(cfg.get("mlp_bias", False)),
        positions=0,
    )
    if mt in DEEPSEEK:  # latent attention: its projections, biases and RoPE are sim.importers.mla's
        arch.update(rope=False, qkv_bias=False, o_bias=False)
    return kvh, hd, ffn, arch, bool(cfg.get("tie_word_embeddings", False))


def _gpt2(cfg: dict, mt: str, where: str, d: int, heads: int, max_pos: int) -> Family:
    ffn = int_key(cfg, where, "n_inner", default=4 * d, required=False)
    arch = dict(
        norm="layer",
        act=activation(cfg, "activation_function", "gelu_new", where),
        gated=False,
        pre_norm=True,
        qkv_bias=True,
        o_bias=True,
        mlp_bias=True,
        positions=max_pos or 1024,
    )
    return heads, d // heads, ffn, arch, bool(cfg.get("tie_word_embeddings", True))


def _opt(cfg: dict, mt: str, where: str, d: int, heads: int, max_pos: int) -> Family:
    ffn = int_key(cfg, where, "ffn_dim")
    if cfg.get("word_embed_proj_dim", d) != d:
        raise InputError(
            "word_embed_proj_dim != hidden_size (OPT-350m's projections) is not modelled", where=where
        )
    bias = bool(cfg.get("enable_bias", True))
    pre = bool(cfg.get("do_layer_norm_before", True))
    # OPT's learned positions have 2 extra rows (the offset of OPTLearnedPositionalEmbedding)
    arch = dict(
        norm="layer",
        act=activation(cfg, "activation_function", "relu", where),
        gated=False,
        pre_norm=pre,
        qkv_bias=bias,
        o_bias=bias,
        mlp_bias=bias,
        positions=(max_pos or 2048) + 2,
        final_norm=pre,
    )
    return heads, d // heads, ffn, arch, bool(cfg.get("tie_word_embeddings", True))


def _bert(cfg: dict, mt: str, where: str, d: int, heads: int, max_pos: int) -> Family:
    ffn = int_key(cfg, where, "intermediate_size")
    arch = dict(
        norm="layer",
        act=activation(cfg, "hidden_act", "gelu", where),
        gated=False,
        pre_norm=False,
        qkv_bias=True,
        o_bias=True,
        mlp_bias=True,
        positions=max_pos or 512,
        token_types=int_key(cfg, where, "type_vocab_size", default=2, required=False),
        embed_norm=True,
        final_norm=False,
    )
    return heads, d // heads, ffn, arch, bool(cfg.get("tie_word_embeddings", True))


#: model_type -> the reader of its family's sizes and architecture
_FAMILY_READERS = {
    **{mt: _llama_like for mt in LLAMA_LIKE + DEEPSEEK},
    "gpt2": _gpt2,
    "opt": _opt,
    "bert": _bert,
}


@dataclass(frozen=True)
class _Model:
    """The sizes of the model a config describes, and the keys (as written) they come from."""

    mt: str
    where: str
    d: int
    L: int
    lkey: str
    heads: int
    hkey: str
    vocab: int
    max_pos: int
    kvh: int
    hd: int
    ffn: int | None
    arch: dict
    tied: bool
    head: str
    window: int | None
    n_win: int
    moe: dict | None
    quant: Quantization | None


def _model(cfg: dict, mt: str, where: str) -> _Model:
    """Every key the workload depends on, read and checked."""
    gpt2 = mt == "gpt2"
    d = int_key(cfg, where, "n_embd" if gpt2 else "hidden_size", "hidden_size")
    lkeys = ("n_layer" if gpt2 else "num_hidden_layers", "num_hidden_layers")
    L = int_key(cfg, where, *lkeys, hi=MAX_LAYER_COUNT, why="the repeats of one layer")
    hkeys = ("n_head" if gpt2 else "num_attention_heads", "num_attention_heads")
    heads = int_key(cfg, where, *hkeys)
    vocab = int_key(cfg, where, "vocab_size", why="the LM head's outputs, one layer dimension")
    max_pos = int_key(
        cfg,
        where,
        "n_positions" if gpt2 else "max_position_embeddings",
        "max_position_embeddings",
        default=0,
        required=False,
        hi=MAX_POSITIONS,
        why="learned positions",
    )
    explicit_hd = (mt in LLAMA_LIKE and cfg.get("head_dim") is not None) or mt in DEEPSEEK
    if not explicit_hd and d % heads:
        raise InputError(f"the hidden size {d} is not a multiple of the {heads} attention heads", where=where)
    kvh, hd, ffn, arch, tied = _FAMILY_READERS[mt](cfg, mt, where, d, heads, max_pos)
    if heads % kvh:
        raise InputError(
            f"num_attention_heads {heads} is not a multiple of num_key_value_heads {kvh}", where=where
        )
    lkey = key_of(cfg, *lkeys)
    types = layer_types(cfg, L, lkey, where)
    window, n_win = _sliding(cfg, mt, L, types, where)
    moe = _moe(cfg, mt, L, lkey, ffn, where)
    if moe is None and ffn == 0:  # a Qwen MoE config whose layers are all dense needs its dense width
        ffn = int_key(cfg, where, "intermediate_size")
    return _Model(
        mt,
        where,
        d,
        L,
        lkey,
        heads,
        key_of(cfg, *hkeys),
        vocab,
        max_pos,
        kvh,
        hd,
        ffn,
        arch,
        tied,
        head_kind(cfg, mt, where),
        window,
        n_win,
        moe,
        quantization(cfg, where),
    )


def _check_limits(md: _Model, *, batch: int, seq: int, ctx: int, decode: bool) -> None:
    """The layers stay within sim.inputs' limits; otherwise the error names the key or flag to change."""
    w = md.where
    seq_t = [] if decode else [("--seq", seq, "--seq")]
    keys_flag = "--context" if decode else "--seq"
    check_dim([("--batch", batch, "--batch"), *seq_t], "the tokens of one pass: one GEMM's M")
    check_dim([(keys_flag, ctx, keys_flag)], "the keys each query is scored against: one GEMM dimension")
    layers = (md.lkey, md.L, w)
    if md.mt in DEEPSEEK:
        heads = (md.hkey, md.heads, w)
        check_dim([heads, *seq_t] if decode else seq_t, "the query rows of one attention GEMM")
        check_repeats(
            [layers, ("--batch", batch, "--batch")]
            if decode
            else [layers, heads, ("--batch", batch, "--batch")]
        )
        if decode:
            check_repeats([layers, heads])
    else:
        group = (f"{md.hkey} / num_key_value_heads", md.heads // md.kvh, w)
        check_dim([group, *seq_t], "the query rows of one attention GEMM")
        check_repeats([layers, ("num_key_value_heads", md.kvh, w), ("--batch", batch, "--batch")])
        check_dim(
            [(md.hkey, md.heads, w), ("head_dim", md.hd, w)],
            "the query projection's outputs: one layer dimension",
        )


def load_hf_config(
    config: str | Path | dict,
    seq: int | None = None,
    batch: int = 1,
    phase: str = "prefill",
    context: int | None = None,
    *,
    n: int = 2,
    m: int = 4,
    prune_lm_head: bool = False,
    name: str | None = None,
) -> Workload:
    """The workload of one forward pass: prefill of ``seq`` tokens, or one decode step against a
    KV cache of ``context`` tokens (default ``seq``), for ``batch`` sequences. ``name`` replaces the
    model name taken from the file."""
    cfg, where, stem = _read(config)
    stem = name or stem
    mt = cfg.get("model_type")
    if mt not in MODEL_TYPES:
        raise InputError(
            f"model_type {mt!r} not supported (supported: {', '.join(MODEL_TYPES)})", where=where
        )
    if phase not in PHASES:
        raise InputError(f"phase must be prefill or decode, got {phase!r}", where="--phase")
    batch = check_int("--batch", batch, "--batch", hi=MAX_FLAG, why="checked against the layers below")
    md = _model(cfg, mt, where)
    if seq is None:
        seq = min(md.max_pos or 2048, 2048)
    seq = check_int("--seq", seq, "--seq", hi=MAX_FLAG, why="checked against the layers below")
    decode = phase == "decode"
    if decode and mt == "bert":
        raise InputError("BERT is an encoder: no decode phase", where="--phase")
    ctx = (
        check_int(
            "--context",
            context if context is not None else seq,
            "--context",
            hi=MAX_FLAG,
            why="checked against the layers below",
        )
        if decode
        else seq
    )
    if md.max_pos and ctx > md.max_pos and mt in ("gpt2", "bert", "opt"):
        raise InputError(
            f"{'context' if decode else 'seq'} {ctx} exceeds the model's {md.max_pos} learned positions",
            where="--context" if decode else "--seq",
        )
    _check_limits(md, batch=batch, seq=seq, ctx=ctx, decode=decode)
    try:
        w = _workload(
            cfg, md, stem, batch=batch, seq=seq, ctx=ctx, decode=decode, n=n, m=m, prune_lm_head=prune_lm_head
        )
    except InputError as exc:
        if "above the limit" not in str(exc):
            raise
        raise InputError(
            f"{exc}: the model ({md.lkey} = {md.L}, hidden size {md.d}, vocab_size {md.vocab}) at "
            f"--seq {seq}, --batch {batch}{f', --context {ctx}' if decode else ''} is too large to "
            f"cost",
            where=None,
        ) from None
    return w


def _workload(
    cfg: dict,
    md: _Model,
    stem: str,
    *,
    batch: int,
    seq: int,
    ctx: int,
    decode: bool,
    n: int,
    m: int,
    prune_lm_head: bool,
) -> Workload:
    """The layers and operators of the checked model ``md``."""
    mt, where, d, L, heads, kvh, hd, ffn, arch, moe = (
        md.mt,
        md.where,
        md.d,
        md.L,
        md.heads,
        md.kvh,
        md.hd,
        md.ffn,
        md.arch,
        md.moe,
    )
    window, n_win = md.window, md.n_win
    q_len = 1 if decode else seq
    M = batch * q_len
    mk = lambda name, kind, MM, N, K, ws=None, count=L: make_layer(  # noqa: E731
        name, kind, MM, N, K, weight_shape=ws, count=count, n=n, m=m, where=f"{where}: {name}"
    )
    # attention: (name suffix, layers, keys each query is scored against)
    keys_w = min(ctx, window) if window else ctx
    if n_win == L:
        groups = [("", L, keys_w)]
    else:
        groups = [("", L - n_win, ctx)] + ([("_window", n_win, keys_w)] if n_win else [])
    layers, extra_ops = [], []
    if mt in DEEPSEEK:
        mla = mla_attention(
            cfg, where, n_layers=L, d=d, heads=heads, batch=batch, q_len=q_len, ctx=ctx, decode=decode, mk=mk
        )
        layers += mla.layers
        extra_ops += mla.ops
        kv_elems = mla.kv_cache_elements
    else:
        layers, extra_ops, kv_elems = _gqa_attention(
            mt,
            mk,
            L=L,
            M=M,
            d=d,
            heads=heads,
            kvh=kvh,
            hd=hd,
            q_len=q_len,
            batch=batch,
            groups=groups,
            decode=decode,
        )
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
        block = moe_block(
            n_layers=n_moe,
            tokens=M,
            d=d,
            experts=moe["experts"],
            top_k=moe["top_k"],
            expert_ffn=moe["expert_ffn"],
            shared_ffn=moe["shared_ffn"],
            shared_gate=moe["shared_gate"],
            act=arch["act"],
            scoring=moe["scoring"],
            score_bias=moe["score_bias"],
            n=n,
            m=m,
            where=where,
        )
        layers += block.layers
        extra_ops += block.ops
    head_layers, head_ops = _heads(cfg, md, mk, batch=batch, M=M)
    layers += head_layers
    extra_ops += head_ops
    tied_head = md.tied and any(l.name == "lm_head" for l in layers)
    if tied_head and not prune_lm_head:
        layers = [
            replace(
                l,
                sparsifiable=False,
                reason="LM head tied to the embedding table: not a 2:4 target "
                "(the embeddings are not pruned; --prune-lm-head prunes it)",
            )
            if l.name == "lm_head"
            else l
            for l in layers
        ]
    if md.quant is not None and md.quant.precision is not None:
        layers = [
            replace(l, precision=md.quant.precision)
            if l.kind == WEIGHT_GEMM and l.name not in md.quant.skip
            else l
            for l in layers
        ]
    win = (n_win, keys_w) if 0 < n_win < L else None
    # a tied table is the LM head's weight (counted with that layer), not a second embedding table
    ops = transformer_ops(
        n_layers=L,
        d=d,
        heads=heads,
        kv_heads=heads if mt in DEEPSEEK else kvh,
        head_dim=hd,
        ffn=ffn or 1,
        batch=batch,
        q_len=q_len,
        ctx=keys_w if n_win == L else ctx,
        vocab=md.vocab,
        decode=decode and mt not in DEEPSEEK,
        own_embedding=not tied_head,
        mlp_layers=n_dense,
        window=win,
        **arch,
    )
    wl_name = (
        f"{stem}-decode(context={ctx},batch={batch})"
        if decode
        else f"{stem}-prefill(seq={seq},batch={batch})"
    )
    w = Workload(wl_name, tuple(layers), tuple(ops) + tuple(extra_ops), kv_cache_elements=kv_elems)
    return _with_param_counts(w, block)


def _gqa_attention(
    mt: str,
    mk: Callable[..., Layer],
    *,
    L: int,
    M: int,
    d: int,
    heads: int,
    kvh: int,
    hd: int,
    q_len: int,
    batch: int,
    groups: list[tuple[str, int, int]],
    decode: bool,
) -> tuple[list[Layer], list[VectorOp], int]:
    """Grouped-query attention: the projections, one score and one value GEMM per KV head and sequence
    (``groups``: name suffix, layers, keys each query is scored against), Qwen3's head norms; and the
    KV cache elements one decode step reads."""
    qd, kv = heads * hd, kvh * hd
    group = heads // kvh
    layers, extra_ops = [], []
    if mt == "gpt2":  # Conv1D c_attn: one fused (3d x d) weight
        layers.append(mk("qkv_proj", WEIGHT_GEMM, M, 3 * d, d, (3 * d, d)))
    else:
        layers += [
            mk("q_proj", WEIGHT_GEMM, M, qd, d, (qd, d)),
            mk("k_proj", WEIGHT_GEMM, M, kv, d, (kv, d)),
            mk("v_proj", WEIGHT_GEMM, M, kv, d, (kv, d)),
        ]
    # one GEMM per KV head and sequence; the group's query heads stack along M
    for suffix, n_l, keys in groups:
        layers += [
            mk(f"attn_scores{suffix}", ACT_GEMM, group * q_len, keys, hd, count=n_l * kvh * batch),
            mk(f"attn_context{suffix}", ACT_GEMM, group * q_len, hd, keys, count=n_l * kvh * batch),
        ]
    layers.append(mk("o_proj", WEIGHT_GEMM, M, d, qd, (d, qd)))
    kv_elems = 2 * kvh * hd * batch * sum(n_l * keys for _, n_l, keys in groups) if decode else 0
    if mt in ("qwen3", "qwen3_moe"):  # RMSNorm of each query and key head (head_dim scale each)
        extra_ops += [
            make_op("q_norm", "RMSNormalization", (M * heads, hd), [(M * heads, hd)], count=L, params=hd),
            make_op("k_norm", "RMSNormalization", (M * kvh, hd), [(M * kvh, hd)], count=L, params=hd),
        ]
    return layers, extra_ops, kv_elems


def _heads(
    cfg: dict, md: _Model, mk: Callable[..., Layer], *, batch: int, M: int
) -> tuple[list[Layer], list[VectorOp]]:
    """The head ``architectures`` names (sim.importers.hf_keys.head_kind). [P] transformers: a decoder's
    LM head (vocab x d, no bias) or sequence-classification ``score`` (num_labels x d, no bias, on
    every position); BERT's pooler (dense + tanh on each sequence's [CLS]) where its class keeps it
    (BertModel(add_pooling_layer=True)), the masked-LM head (transform dense + act + LayerNorm, the
    decoder and its bias), the NSP head (2 x d), and the classifiers (num_labels x d, 1 x d for
    multiple choice; with biases)."""
    d, vocab, kind = md.d, md.vocab, md.head
    layers, ops = [], []
    if md.mt != "bert":
        if kind == "lm":
            layers.append(mk("lm_head", WEIGHT_GEMM, M, vocab, d, (vocab, d), count=1))
        elif kind == "seq_cls":
            labels = num_labels(cfg, md.where)
            layers.append(mk("score", WEIGHT_GEMM, M, labels, d, (labels, d), count=1))
        return layers, ops
    if kind not in BERT_NO_POOLER:
        layers.append(mk("pooler", WEIGHT_GEMM, batch, d, d, (d, d), count=1))
        ops += [
            make_op("pooler_bias", "Add", (batch, d), [(batch, d)], params=d),
            make_op("pooler_tanh", "Tanh", (batch, d), [(batch, d)]),
        ]
    if kind in ("mlm", "lm", "pretraining"):
        layers += [
            mk("mlm_transform", WEIGHT_GEMM, M, d, d, (d, d), count=1),
            mk("lm_head", WEIGHT_GEMM, M, vocab, d, (vocab, d), count=1),
        ]
        ops += [
            make_op("mlm_bias", "Add", (M, d), [(M, d)], params=d),
            make_op(
                "mlm_act",
                "Gelu" if md.arch["act"] == "gelu" else md.arch["act"].capitalize(),
                (M, d),
                [(M, d)],
            ),
            make_op("mlm_norm", "LayerNormalization", (M, d), [(M, d)], params=2 * d),
            make_op("lm_head_bias", "Add", (M, vocab), [(M, vocab)], params=vocab),
        ]
    out = {
        "pretraining": (batch, 2, "seq_relationship"),
        "nsp": (batch, 2, "seq_relationship"),
        "seq_cls": (batch, None, "classifier"),
        "multiple_choice": (batch, 1, "classifier"),
        "token_cls": (M, None, "classifier"),
        "qa": (M, None, "qa_outputs"),
    }.get(kind)
    if out is not None:
        rows, labels, name = out
        labels = labels or num_labels(cfg, md.where)
        layers.append(mk(name, WEIGHT_GEMM, rows, labels, d, (labels, d), count=1))
        ops.append(make_op(f"{name}_bias", "Add", (rows, labels), [(rows, labels)], params=labels))
    return layers, ops


def _with_param_counts(w: Workload, block: MoEBlock | None) -> Workload:
    """``w`` with the parameters the model stores and one token uses, where they differ from its layers'."""
    if block is None:
        return w
    # the layers carry the experts the batch touches; the model has them all
    total = w.weight_params - block.touched_expert_params + block.expert_params
    active = total - (block.expert_params - block.active_expert_params)
    return replace(w, stored_weight_params=total, active_param_count=active)


def embedding_params(w: Workload) -> int:
    """The parameters of the input embedding tables (token, position, token-type) of a workload of
    this importer: the tables a token reads one row of. A table tied to the LM head is that layer's
    weight (every token multiplies by all of it) and is not among them."""
    return sum(
        op.params * op.count for op in w.vector_ops if op.op_type == "Gather" and op.name.startswith("embed_")
    )


def param_summary(w: Workload, model_type: str | None) -> dict:
    """weight_params and active_params with and without the input embedding tables, and which of the
    two a published figure of the family counts (PUBLISHED_ACTIVE)."""
    emb = embedding_params(w)
    return {
        "weight_params": w.weight_params,
        "weight_params_excluding_embeddings": w.weight_params - emb,
        "active_params": w.active_params,
        "active_params_excluding_embeddings": w.active_params - emb,
        "embedding_params": emb,
        "published_convention": PUBLISHED_ACTIVE.get(
            model_type or "", "published totals count the embeddings: compare weight_params"
        ),
    }


def hf_summary(config: str | Path | dict, w: Workload) -> dict:
    """What ``sparsepe simulate`` reports beside the layers of an HF workload ``w`` made from
    ``config``: :func:`param_summary` and the ``quantization_config`` read (None when absent)."""
    cfg, where, _ = _read(config)
    return {"params": param_summary(w, cfg.get("model_type")), "quantization": quantization(cfg, where)}
