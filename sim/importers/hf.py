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
from sim.importers.hf_keys import BERT_NO_POOLER, check_int, num_labels, quantization
from sim.importers.hf_model import (
    DEEPSEEK,
    MAX_FLAG,
    MODEL_TYPES,
    PHASES,
    HFModel,
    check_limits,
    read_config,
    read_model,
)
from sim.importers.mla import mla_attention
from sim.layers import Layer, Workload, make_layer
from sim.networks import MoEBlock, moe_block, transformer_ops
from sim.vector import VectorOp, make_op

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
    cfg, where, stem = read_config(config)
    stem = name or stem
    mt = cfg.get("model_type")
    if mt not in MODEL_TYPES:
        raise InputError(
            f"model_type {mt!r} not supported (supported: {', '.join(MODEL_TYPES)})", where=where
        )
    if phase not in PHASES:
        raise InputError(f"phase must be prefill or decode, got {phase!r}", where="--phase")
    batch = check_int("--batch", batch, "--batch", hi=MAX_FLAG, why="checked against the layers below")
    md = read_model(cfg, mt, where)
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
    check_limits(md, batch=batch, seq=seq, ctx=ctx, decode=decode)
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
    md: HFModel,
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
    mt, where, L, n_win = md.mt, md.where, md.L, md.n_win
    q_len = 1 if decode else seq
    M = batch * q_len
    mk = lambda name, kind, MM, N, K, ws=None, count=L: make_layer(  # noqa: E731
        name, kind, MM, N, K, weight_shape=ws, count=count, n=n, m=m, where=f"{where}: {name}"
    )
    keys_w = min(ctx, md.window) if md.window else ctx
    layers, extra_ops, kv_elems = _attention(
        cfg, md, mk, batch=batch, q_len=q_len, ctx=ctx, keys_w=keys_w, decode=decode
    )
    n_dense, block = _mlp(md, mk, layers, extra_ops, M=M, n=n, m=m)
    head_layers, head_ops = _heads(cfg, md, mk, batch=batch, M=M)
    layers += head_layers
    extra_ops += head_ops
    tied_head = md.tied and any(layer.name == "lm_head" for layer in layers)
    layers = _head_and_precision(layers, md, untie_head=tied_head and not prune_lm_head)
    win = (n_win, keys_w) if 0 < n_win < L else None
    # a tied table is the LM head's weight (counted with that layer), not a second embedding table
    ops = transformer_ops(
        n_layers=L,
        d=md.d,
        heads=md.heads,
        kv_heads=md.heads if mt in DEEPSEEK else md.kvh,
        head_dim=md.hd,
        ffn=md.ffn or 1,
        batch=batch,
        q_len=q_len,
        ctx=keys_w if n_win == L else ctx,
        vocab=md.vocab,
        decode=decode and mt not in DEEPSEEK,
        own_embedding=not tied_head,
        mlp_layers=n_dense,
        window=win,
        **md.arch,
    )
    wl_name = (
        f"{stem}-decode(context={ctx},batch={batch})"
        if decode
        else f"{stem}-prefill(seq={seq},batch={batch})"
    )
    w = Workload(wl_name, tuple(layers), tuple(ops) + tuple(extra_ops), kv_cache_elements=kv_elems)
    return _with_param_counts(w, block)


def _attention(
    cfg: dict,
    md: HFModel,
    mk: Callable[..., Layer],
    *,
    batch: int,
    q_len: int,
    ctx: int,
    keys_w: int,
    decode: bool,
) -> tuple[list[Layer], list[VectorOp], int]:
    """The attention layers and operators of every layer (DeepSeek's latent attention, or
    grouped-query attention over the full and the windowed layers), and the KV cache elements one
    decode step reads."""
    L, n_win = md.L, md.n_win
    if md.mt in DEEPSEEK:
        mla = mla_attention(
            cfg,
            md.where,
            n_layers=L,
            d=md.d,
            heads=md.heads,
            batch=batch,
            q_len=q_len,
            ctx=ctx,
            decode=decode,
            mk=mk,
        )
        layers: list[Layer] = []
        extra_ops: list[VectorOp] = []
        layers += mla.layers
        extra_ops += mla.ops
        return layers, extra_ops, mla.kv_cache_elements
    # attention: (name suffix, layers, keys each query is scored against)
    if n_win == L:
        groups = [("", L, keys_w)]
    else:
        groups = [("", L - n_win, ctx)] + ([("_window", n_win, keys_w)] if n_win else [])
    return _gqa_attention(
        md.mt,
        mk,
        L=L,
        M=batch * q_len,
        d=md.d,
        heads=md.heads,
        kvh=md.kvh,
        hd=md.hd,
        q_len=q_len,
        batch=batch,
        groups=groups,
        decode=decode,
    )


def _mlp(
    md: HFModel,
    mk: Callable[..., Layer],
    layers: list[Layer],
    extra_ops: list[VectorOp],
    *,
    M: int,
    n: int,
    m: int,
) -> tuple[int, MoEBlock | None]:
    """Append the MLP of the dense layers and the MoE block of the others to ``layers`` and
    ``extra_ops``; return the dense layer count and the MoE block (None without one)."""
    d, ffn, arch, moe = md.d, md.ffn, md.arch, md.moe
    n_moe = len(moe["layers"]) if moe else 0
    n_dense = md.L - n_moe
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
            where=md.where,
        )
        layers += block.layers
        extra_ops += block.ops
    return n_dense, block


def _head_and_precision(layers: list[Layer], md: HFModel, *, untie_head: bool) -> list[Layer]:
    """``layers`` with a tied LM head taken out of the 2:4 targets (``untie_head``) and the
    weight GEMMs at the precision the config's quantisation gives them."""
    if untie_head:
        layers = [
            replace(
                layer,
                sparsifiable=False,
                reason="LM head tied to the embedding table: not a 2:4 target "
                "(the embeddings are not pruned; --prune-lm-head prunes it)",
            )
            if layer.name == "lm_head"
            else layer
            for layer in layers
        ]
    if md.quant is not None and md.quant.precision is not None:
        layers = [
            replace(layer, precision=md.quant.precision)
            if layer.kind == WEIGHT_GEMM and layer.name not in md.quant.skip
            else layer
            for layer in layers
        ]
    return layers


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
    cfg: dict, md: HFModel, mk: Callable[..., Layer], *, batch: int, M: int
) -> tuple[list[Layer], list[VectorOp]]:
    """The head ``architectures`` names (sim.importers.hf_keys.head_kind). [P] transformers: a decoder's
    LM head (vocab x d, no bias) or sequence-classification ``score`` (num_labels x d, no bias, on
    every position); BERT's pooler (dense + tanh on each sequence's [CLS]) where its class keeps it
    (BertModel(add_pooling_layer=True)), the masked-LM head (transform dense + act + LayerNorm, the
    decoder and its bias), the NSP head (2 x d), and the classifiers (num_labels x d, 1 x d for
    multiple choice; with biases)."""
    d, vocab, kind = md.d, md.vocab, md.head
    layers: list[Layer] = []
    ops: list[VectorOp] = []
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
        rows, fixed_labels, name = out
        labels = fixed_labels or num_labels(cfg, md.where)
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
    cfg, where, _ = read_config(config)
    return {"params": param_summary(w, cfg.get("model_type")), "quantization": quantization(cfg, where)}
