"""A Hugging Face ``config.json`` read and checked: the model type, sizes, architecture, sliding
window, mixture of experts and quantisation (:class:`HFModel`), the file itself (:func:`read_config`)
and the layer limits (:func:`check_limits`). :mod:`sim.importers.hf` builds the workload from them.
"""

from __future__ import annotations

from dataclasses import dataclass
from pathlib import Path

from hw.errors import InputError
from sim.importers.hf_keys import (
    Quantization,
    activation,
    check_dim,
    check_repeats,
    head_kind,
    int_key,
    key_of,
    layer_types,
    quantization,
)
from sim.inputs import MAX_LAYER_COUNT, read_json

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


def read_config(config: str | Path | dict) -> tuple[dict, str, str]:
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
class HFModel:
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


def read_model(cfg: dict, mt: str, where: str) -> HFModel:
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
    return HFModel(
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


def check_limits(md: HFModel, *, batch: int, seq: int, ctx: int, decode: bool) -> None:
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
