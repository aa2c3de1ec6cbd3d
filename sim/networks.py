"""Built-in networks as workloads: BERT, GPT-2, Llama (prefill and decode) and ResNet-50.

Shapes from /work/shared/reference/published-figures.md section 8; each network's GEMM layers
(:mod:`sim.layers`) and its non-GEMM operators (:mod:`sim.vector`). :func:`transformer_ops` lists
the operators of any transformer stack and :func:`moe_block` the layers of a mixture-of-experts MLP
(both also used by the Hugging Face importer).
"""

from __future__ import annotations

from dataclasses import dataclass, replace

from hw.errors import InputError
from sim.asp_rules import ACT_GEMM, WEIGHT_GEMM
from sim.layers import ConvGeometry, Layer, Workload, conv_layer, make_layer
from sim.vector import VectorOp, make_op

# BERT configs: [P] NVIDIA TensorRT demo/BERT README (layers, hidden d, heads, FFN = 4d).
BERT_CONFIGS = {"bert-base": (12, 768, 12), "bert-large": (24, 1024, 16)}
# GPT-2: [S] OpenAI hparams.json via renenyffenegger.ch GPT-2 notes (layers, d, heads), FFN = 4d, ctx 1024.
GPT2_CONFIGS = {
    "gpt2-small": (12, 768, 12),
    "gpt2-medium": (24, 1024, 16),
    "gpt2-large": (36, 1280, 20),
    "gpt2-xl": (48, 1600, 25),
}
# Llama: [S] HF configs (layers, d, heads, kv heads, FFN): Llama-2-7B 32/4096/32/32/11008,
# Llama-3-8B 32/4096/32/8/14336 (published-figures.md 8.1).
LLAMA_CONFIGS = {"llama2-7b": (32, 4096, 32, 32, 11008), "llama3-8b": (32, 4096, 32, 8, 14336)}
# [S] HF configs: vocab_size 32000 (Llama-2), 128256 (Llama-3)
LLAMA_VOCAB = {"llama2-7b": 32000, "llama3-8b": 128256}
# Mixture-of-experts LLMs, as the Hugging Face config.json the importer (sim.importers.hf) reads:
# [P] mistralai/Mixtral-8x7B-v0.1 config.json (46.7B parameters, 12.9B per token: Mistral AI, "Mixtral of
# experts", 2023)
MOE_CONFIGS = {
    "mixtral-8x7b": {
        "model_type": "mixtral",
        "hidden_size": 4096,
        "intermediate_size": 14336,
        "num_hidden_layers": 32,
        "num_attention_heads": 32,
        "num_key_value_heads": 8,
        "vocab_size": 32000,
        "max_position_embeddings": 32768,
        "num_local_experts": 8,
        "num_experts_per_tok": 2,
        "sliding_window": None,
        "hidden_act": "silu",
        "tie_word_embeddings": False,
    }
}


def _transformer(
    name: str,
    n_layers: int,
    d: int,
    heads: int,
    seq: int,
    batch: int,
    *,
    ffn: int | None = None,
    kv_heads: int | None = None,
    gated: bool = False,
    decode: bool = False,
    context: int | None = None,
    fused_qkv: bool = True,
) -> Workload:
    """Per-block GEMMs of a transformer (published-figures.md 8.2), each with count = n_layers.

    Prefill: M = batch*seq tokens, attention (seq x seq) per head. Decode: one new token per
    sequence (M = batch), attention of 1 query against ``context`` cached keys per head."""
    ffn = ffn or 4 * d
    kv_heads = kv_heads or heads
    hd = d // heads
    kv = kv_heads * hd
    M = batch if decode else batch * seq
    q_len = 1 if decode else seq
    ctx = (context or seq) if decode else seq
    L = []
    if fused_qkv and kv == d:
        L.append(make_layer("qkv_proj", WEIGHT_GEMM, M, 3 * d, d, weight_shape=(3 * d, d), count=n_layers))
    else:
        L.append(make_layer("q_proj", WEIGHT_GEMM, M, d, d, weight_shape=(d, d), count=n_layers))
        L.append(make_layer("k_proj", WEIGHT_GEMM, M, kv, d, weight_shape=(kv, d), count=n_layers))
        L.append(make_layer("v_proj", WEIGHT_GEMM, M, kv, d, weight_shape=(kv, d), count=n_layers))
    # Attention scores Q K^T (M=L, N=L, K=d/h) and context P V (M=L, N=d/h, K=L), per head and sequence.
    L.append(make_layer("attn_scores", ACT_GEMM, q_len, ctx, hd, count=n_layers * heads * batch))
    L.append(make_layer("attn_context", ACT_GEMM, q_len, hd, ctx, count=n_layers * heads * batch))
    L.append(make_layer("attn_out", WEIGHT_GEMM, M, d, d, weight_shape=(d, d), count=n_layers))
    if gated:
        L.append(make_layer("ffn_gate", WEIGHT_GEMM, M, ffn, d, weight_shape=(ffn, d), count=n_layers))
        L.append(make_layer("ffn_up", WEIGHT_GEMM, M, ffn, d, weight_shape=(ffn, d), count=n_layers))
    else:
        L.append(make_layer("ffn1", WEIGHT_GEMM, M, ffn, d, weight_shape=(ffn, d), count=n_layers))
    L.append(
        make_layer(
            "ffn2" if not gated else "ffn_down", WEIGHT_GEMM, M, d, ffn, weight_shape=(d, ffn), count=n_layers
        )
    )
    return Workload(name, tuple(L))


def transformer_ops(
    *,
    n_layers: int,
    d: int,
    heads: int,
    kv_heads: int,
    head_dim: int,
    ffn: int,
    batch: int,
    q_len: int,
    ctx: int,
    vocab: int,
    norm: str = "layer",
    act: str = "gelu",
    gated: bool = False,
    pre_norm: bool = True,
    qkv_bias: bool = False,
    o_bias: bool = False,
    mlp_bias: bool = False,
    rope: bool = False,
    positions: int = 0,
    token_types: int = 0,
    embed_norm: bool = False,
    final_norm: bool = True,
    own_embedding: bool = True,
    decode: bool = False,
    mlp_layers: int | None = None,
    window: tuple[int, int] | None = None,
) -> list[VectorOp]:
    """Every non-GEMM operator of a transformer stack, in the order it runs (each block's with count = n_layers).

    ``norm`` "layer" (LayerNorm: scale and shift, 2d params) or "rms" (RMSNorm: scale, d params);
    ``act`` the MLP activation (gelu, silu, relu); ``gated`` a SwiGLU MLP (act(gate) * up);
    ``pre_norm`` norms before attention/MLP (GPT-2, Llama) or after the residual add (BERT);
    ``positions``/``token_types`` learned position/type embedding rows (0: none); ``own_embedding``
    False when the token table is the (tied) LM head's weight, counted there. Decode appends the
    new token's K and V to the KV cache in DRAM (``KVCacheWrite``). ``mlp_layers``: the blocks with
    a dense MLP (default all; a mixture of experts has its own operators, :func:`moe_block`);
    ``window`` = (layers, keys): that many blocks attend over only that many keys (sliding window),
    the others over ``ctx``."""
    M = batch * q_len
    q_dim, kv = heads * head_dim, kv_heads * head_dim
    nparam = 2 * d if norm == "layer" else d
    norm_op = "LayerNormalization" if norm == "layer" else "RMSNormalization"
    act_op = {
        "gelu": "Gelu",
        "silu": "Silu",
        "relu": "Relu",
        "gelu_new": "Gelu",
        "gelu_pytorch_tanh": "Gelu",
        "swish": "Silu",
    }.get(act)
    if act_op is None:
        raise InputError(f"unknown MLP activation {act!r} (gelu, silu, relu)", where="workload")
    tok, L = (M, d), n_layers
    ops = _embedding_ops(
        M=M,
        d=d,
        vocab=vocab,
        own_embedding=own_embedding,
        positions=positions,
        token_types=token_types,
        norm=(norm_op, nparam) if embed_norm else None,
    )
    if pre_norm:
        ops.append(make_op("attn_norm", norm_op, tok, [tok], count=L, params=nparam))
    ops += _attention_ops(
        n_layers=L,
        d=d,
        heads=heads,
        q_dim=q_dim,
        kv=kv,
        batch=batch,
        q_len=q_len,
        ctx=ctx,
        qkv_bias=qkv_bias,
        o_bias=o_bias,
        rope=rope,
        decode=decode,
        window=window,
    )
    if not pre_norm:
        ops.append(make_op("attn_norm", norm_op, tok, [tok], count=L, params=nparam))
    else:
        ops.append(make_op("mlp_norm", norm_op, tok, [tok], count=L, params=nparam))
    Lm = L if mlp_layers is None else mlp_layers
    ops += _mlp_ops(M=M, d=d, ffn=ffn, act_op=act_op, gated=gated, mlp_bias=mlp_bias, n_layers=Lm)
    ops.append(make_op("mlp_residual", "Add", tok, [tok, tok], count=L))
    if not pre_norm:
        ops.append(make_op("mlp_norm", norm_op, tok, [tok], count=L, params=nparam))
    if final_norm:
        ops.append(make_op("final_norm", norm_op, tok, [tok], params=nparam))
    return ops


def _embedding_ops(
    *,
    M: int,
    d: int,
    vocab: int,
    own_embedding: bool,
    positions: int,
    token_types: int,
    norm: tuple[str, int] | None,
) -> list[VectorOp]:
    """The token (and position / token-type) embedding lookups, their adds, and the embedding norm
    (``norm``: its operator and parameters, None without one)."""
    tok = (M, d)
    ops = [
        make_op("embed_tokens", "Gather", tok, [(M,)], params=vocab * d if own_embedding else 0, dram=M * d)
    ]
    if positions:
        ops += [
            make_op("embed_positions", "Gather", tok, [(M,)], params=positions * d, dram=M * d),
            make_op("embed_add_positions", "Add", tok, [tok, tok]),
        ]
    if token_types:
        ops += [
            make_op("embed_token_types", "Gather", tok, [(M,)], params=token_types * d),
            make_op("embed_add_token_types", "Add", tok, [tok, tok]),
        ]
    if norm is not None:
        ops.append(make_op("embed_norm", norm[0], tok, [tok], params=norm[1]))
    return ops


def _attention_ops(
    *,
    n_layers: int,
    d: int,
    heads: int,
    q_dim: int,
    kv: int,
    batch: int,
    q_len: int,
    ctx: int,
    qkv_bias: bool,
    o_bias: bool,
    rope: bool,
    decode: bool,
    window: tuple[int, int] | None,
) -> list[VectorOp]:
    """One attention block's operators (count = ``n_layers``): the Q/K/V biases, RoPE, the KV cache
    write of a decode step, scale, mask and softmax of the scores (full and windowed layers), the
    output bias and the residual add."""
    M = batch * q_len
    tok, L = (M, d), n_layers
    ops: list[VectorOp] = []
    if qkv_bias:
        ops.append(
            make_op(
                "qkv_bias", "Add", (M, q_dim + 2 * kv), [(M, q_dim + 2 * kv)], count=L, params=q_dim + 2 * kv
            )
        )
    if rope:
        ops.append(make_op("rope", "RotaryEmbedding", (M, q_dim + kv), [(M, q_dim + kv)], count=L))
    if decode:
        ops.append(
            make_op(
                "kv_cache_write",
                "KVCacheWrite",
                (batch, 2 * kv),
                [(batch, 2 * kv)],
                count=L,
                dram=batch * 2 * kv,
            )
        )
    groups = [("", L - (window[0] if window else 0), ctx)]
    if window and window[0]:
        groups.append(("_window", window[0], window[1]))
    for suffix, n_l, keys in groups:
        if not n_l:
            continue
        scores = (batch * heads * q_len, keys)
        ops += [
            make_op(f"attn_scale{suffix}", "Mul", scores, [scores], count=n_l),
            make_op(f"attn_mask{suffix}", "Add", scores, [scores], count=n_l),
            make_op(f"softmax{suffix}", "Softmax", scores, [scores], count=n_l),
        ]
    if o_bias:
        ops.append(make_op("o_bias", "Add", tok, [tok], count=L, params=d))
    ops.append(make_op("attn_residual", "Add", tok, [tok, tok], count=L))
    return ops


def _mlp_ops(
    *, M: int, d: int, ffn: int, act_op: str, gated: bool, mlp_bias: bool, n_layers: int
) -> list[VectorOp]:
    """The dense MLP's operators (count = ``n_layers``, none when 0): the activation and the gate
    multiply of a gated MLP, or the activation between two GEMMs; their biases."""
    tok, hid, Lm = (M, d), (M, ffn), n_layers
    ops: list[VectorOp] = []
    if not Lm:
        pass
    elif gated:
        ops += [
            make_op("mlp_act", act_op, hid, [hid], count=Lm),
            make_op("mlp_gate_mul", "Mul", hid, [hid, hid], count=Lm),
        ]
        if mlp_bias:
            ops.append(make_op("mlp_bias", "Add", tok, [tok], count=Lm, params=2 * ffn + d))
    else:
        if mlp_bias:
            ops.append(make_op("ffn1_bias", "Add", hid, [hid], count=Lm, params=ffn))
        ops.append(make_op("mlp_act", act_op, hid, [hid], count=Lm))
        if mlp_bias:
            ops.append(make_op("ffn2_bias", "Add", tok, [tok], count=Lm, params=d))
    return ops


def expected_experts(experts: int, top_k: int, tokens: int) -> float:
    """Expected number of distinct experts a batch of ``tokens`` tokens routes to under top-k routing:
    E (1 - (1 - k/E)^B).

    [A] Independence: each token's k experts are a uniformly random k-subset of the E experts,
    independent of every other token's (balanced, uncorrelated routing, what the load-balancing
    losses of Switch / Mixtral aim at). One token misses a given expert with probability 1 - k/E,
    all B tokens with (1 - k/E)^B. Tokens of one sequence that favour the same experts touch fewer
    (this expectation is then an upper bound on the weight traffic); one token touches exactly k."""
    if not (0 < top_k <= experts) or tokens < 1:
        raise InputError(f"top-k {top_k} of {experts} experts over {tokens} tokens", where="workload")
    return experts * (1.0 - (1.0 - top_k / experts) ** tokens)


@dataclass(frozen=True)
class MoEBlock:
    """The layers and operators of ``n_layers`` mixture-of-experts MLPs, with the expert parameter
    counts the layers alone cannot give (they carry the experts a batch touches, not all of them)."""

    layers: tuple[Layer, ...]
    ops: tuple[VectorOp, ...]
    #: routed-expert parameters in the model, those one token uses, those the ``layers`` carry
    expert_params: int
    active_expert_params: int
    touched_expert_params: int


def moe_block(
    *,
    n_layers: int,
    tokens: int,
    d: int,
    experts: int,
    top_k: int,
    expert_ffn: int,
    shared_ffn: int = 0,
    shared_gate: bool = False,
    act: str = "silu",
    scoring: str = "softmax",
    score_bias: bool = False,
    n: int = 2,
    m: int = 4,
    where: str = "workload",
) -> MoEBlock:
    """``n_layers`` MoE MLPs over ``tokens`` tokens (batch x query tokens): a router GEMM (d -> E) and
    its scoring (softmax or sigmoid, plus an optional per-expert score bias) and top-k; per token the
    k chosen experts' SwiGLU MLPs (gate, up: d -> expert_ffn; down: expert_ffn -> d), weighted and
    summed; optional shared experts (one SwiGLU MLP of ``shared_ffn`` that every token runs, with a
    sigmoid gate when ``shared_gate``, Qwen2-MoE).

    The routed experts run as GEMMs of the experts the batch touches: round(n_layers x
    :func:`expected_experts`) instances, the n_layers x tokens x k token-expert pairs spread evenly
    over them (two rows when they do not divide: some instances one token more). So the MACs are
    exactly k expert MLPs per token, and the weights read are those of the expected distinct experts."""
    for label, v in (
        ("n_layers", n_layers),
        ("tokens", tokens),
        ("experts", experts),
        ("top_k", top_k),
        ("expert_ffn", expert_ffn),
    ):
        if isinstance(v, bool) or not isinstance(v, int) or v <= 0:
            raise InputError(f"{label} must be a positive integer, got {v!r}", where=where)
    if top_k > experts:
        raise InputError(f"num_experts_per_tok {top_k} exceeds the {experts} experts", where=where)
    if scoring not in ("softmax", "sigmoid"):
        raise InputError(f"router scoring {scoring!r} is not softmax or sigmoid", where=where)
    T, L, E, k, f = tokens, n_layers, experts, top_k, expert_ffn
    mk = lambda name, kind, MM, N, K, ws, count=L: make_layer(  # noqa: E731
        name, kind, MM, N, K, weight_shape=ws, count=count, n=n, m=m, where=f"{where}: {name}"
    )
    layers = [mk("router", WEIGHT_GEMM, T, E, d, (E, d))]
    inst = max(1, round(L * expected_experts(E, k, T)))
    q, r = divmod(L * T * k, inst)
    for proj, N, K in (("gate_proj", f, d), ("up_proj", f, d), ("down_proj", d, f)):
        if inst - r:
            layers.append(mk(f"expert_{proj}", WEIGHT_GEMM, q, N, K, (N, K), count=inst - r))
        if r:
            layers.append(mk(f"expert_{proj}+1", WEIGHT_GEMM, q + 1, N, K, (N, K), count=r))
    per_expert = 3 * d * f
    score_op = "Softmax" if scoring == "softmax" else "Sigmoid"
    logits, hid = (T, E), (T * k, f)
    ops = [make_op("router_score", score_op, logits, [logits], count=L)]
    if score_bias:
        ops.append(make_op("router_score_bias", "Add", logits, [logits], count=L, params=E))
    ops += [
        make_op("router_topk", "TopK", (T, k), [logits], count=L),
        make_op("expert_act", "Silu" if act in ("silu", "swish") else "Gelu", hid, [hid], count=L),
        make_op("expert_gate_mul", "Mul", hid, [hid, hid], count=L),
        make_op("expert_weight_mul", "Mul", (T * k, d), [(T * k, d), (T * k, 1)], count=L),
        make_op("expert_sum", "ReduceSum", (T, d), [(T, k, d)], count=L),
    ]
    if shared_ffn:
        sh = (T, shared_ffn)
        layers += [
            mk("shared_gate_proj", WEIGHT_GEMM, T, shared_ffn, d, (shared_ffn, d)),
            mk("shared_up_proj", WEIGHT_GEMM, T, shared_ffn, d, (shared_ffn, d)),
            mk("shared_down_proj", WEIGHT_GEMM, T, d, shared_ffn, (d, shared_ffn)),
        ]
        ops += [
            make_op("shared_act", "Silu", sh, [sh], count=L),
            make_op("shared_gate_mul", "Mul", sh, [sh, sh], count=L),
        ]
        if shared_gate:
            layers.append(mk("shared_expert_gate", WEIGHT_GEMM, T, 1, d, (1, d)))
            ops += [
                make_op("shared_gate_sigmoid", "Sigmoid", (T, 1), [(T, 1)], count=L),
                make_op("shared_scale", "Mul", (T, d), [(T, d), (T, 1)], count=L),
            ]
        ops.append(make_op("shared_add", "Add", (T, d), [(T, d), (T, d)], count=L))
    return MoEBlock(tuple(layers), tuple(ops), L * E * per_expert, L * k * per_expert, inst * per_expert)


def bert(variant: str = "base", seq: int = 128, batch: int = 1) -> Workload:
    """BERT encoder plus the SQuAD QA head (d -> 2 logits, left dense: 2 % 8 != 0 under ASP)."""
    key = f"bert-{variant}"
    if key not in BERT_CONFIGS:
        raise InputError(f"unknown BERT variant {variant!r} (base, large)", where="workload")
    n_layers, d, heads = BERT_CONFIGS[key]
    _check_pos(seq=seq, batch=batch)
    wl = _transformer(f"{key}(seq={seq},batch={batch})", n_layers, d, heads, seq, batch)
    head = make_layer("qa_head", WEIGHT_GEMM, batch * seq, 2, d, weight_shape=(2, d))
    # [P] bert-base-uncased config.json: vocab 30522, 512 positions, 2 token types, post-LN, GELU, biases
    ops = transformer_ops(
        n_layers=n_layers,
        d=d,
        heads=heads,
        kv_heads=heads,
        head_dim=d // heads,
        ffn=4 * d,
        batch=batch,
        q_len=seq,
        ctx=seq,
        vocab=30522,
        norm="layer",
        act="gelu",
        pre_norm=False,
        qkv_bias=True,
        o_bias=True,
        mlp_bias=True,
        positions=512,
        token_types=2,
        embed_norm=True,
        final_norm=False,
    )
    ops.append(make_op("qa_head_bias", "Add", (batch * seq, 2), [(batch * seq, 2)], params=2))
    return Workload(wl.name, wl.layers + (head,), tuple(ops))


def gpt2(size: str = "small", seq: int = 1024, batch: int = 1) -> Workload:
    key = f"gpt2-{size}"
    if key not in GPT2_CONFIGS:
        raise InputError(f"unknown GPT-2 size {size!r} (small, medium, large, xl)", where="workload")
    _check_pos(seq=seq, batch=batch)
    n_layers, d, heads = GPT2_CONFIGS[key]
    wl = _transformer(f"{key}(seq={seq},batch={batch})", n_layers, d, heads, seq, batch)
    # [P] openai-community/gpt2 config.json: vocab 50257, 1024 positions, pre-LN, gelu_new, biases, tied LM head
    ops = transformer_ops(
        n_layers=n_layers,
        d=d,
        heads=heads,
        kv_heads=heads,
        head_dim=d // heads,
        ffn=4 * d,
        batch=batch,
        q_len=seq,
        ctx=seq,
        vocab=50257,
        norm="layer",
        act="gelu",
        pre_norm=True,
        qkv_bias=True,
        o_bias=True,
        mlp_bias=True,
        positions=1024,
    )
    return replace(wl, vector_ops=tuple(ops))


def llama(
    model: str = "llama2-7b",
    phase: str = "prefill",
    seq: int = 2048,
    batch: int = 1,
    context: int | None = None,
) -> Workload:
    if model not in LLAMA_CONFIGS:
        raise InputError(f"unknown Llama model {model!r} ({', '.join(LLAMA_CONFIGS)})", where="workload")
    if phase not in ("prefill", "decode"):
        raise InputError(f"phase must be prefill or decode, got {phase!r}", where="workload")
    _check_pos(seq=seq, batch=batch)
    n_layers, d, heads, kvh, ffn = LLAMA_CONFIGS[model]
    wl = _transformer(
        f"{model}-{phase}(seq={seq},batch={batch})",
        n_layers,
        d,
        heads,
        seq,
        batch,
        ffn=ffn,
        kv_heads=kvh,
        gated=True,
        decode=phase == "decode",
        context=context,
        fused_qkv=False,
    )
    decode = phase == "decode"
    ops = transformer_ops(
        n_layers=n_layers,
        d=d,
        heads=heads,
        kv_heads=kvh,
        head_dim=d // heads,
        ffn=ffn,
        batch=batch,
        q_len=1 if decode else seq,
        ctx=(context or seq) if decode else seq,
        vocab=LLAMA_VOCAB[model],
        norm="rms",
        act="silu",
        gated=True,
        rope=True,
        decode=decode,
    )
    kv_elems = 2 * n_layers * kvh * (d // heads) * (context or seq) * batch if decode else 0
    return replace(wl, vector_ops=tuple(ops), kv_cache_elements=kv_elems)


def resnet50(batch: int = 1, image: int = 224) -> Workload:
    """torchvision ResNet-50 v1.5 (stride on the 3x3 conv), padded convs, 53 convolutions + fc.

    The GEMM shapes match published-figures.md 8.3 (sum 4.09 GMAC at 224x224, batch 1)."""
    _check_pos(batch=batch, image=image)
    layers: list[Layer] = []
    ops: list[VectorOp] = []
    h = image

    def conv(name, hin, cin, cout, k, s, relu=True):
        pad = k // 2
        g = ConvGeometry(hin, hin, k, k, cin, cout, s, pad, ceil_mode=False)
        L = conv_layer(name, g)
        # batch folds into M (output pixels of every image)
        layers.append(replace(L, M=L.M * batch))
        # BatchNorm folded into the conv weights and bias (inference); the bias add and ReLU on the vector unit
        out = (batch, cout, g.ofmap_h, g.ofmap_w)
        ops.append(make_op(f"{name}.bias", "Add", out, [out], params=cout))
        if relu:
            ops.append(make_op(f"{name}.relu", "Relu", out, [out]))
        return g.ofmap_h

    h0 = conv("conv1", h, 3, 64, 7, 2)
    h = (h0 + 2 - 3) // 2 + 1  # 3x3/2 max-pool, pad 1: 112 -> 56
    ops.append(make_op("maxpool", "MaxPool", (batch, 64, h, h), [(batch, 64, h0, h0)], window=9))
    cin = 64
    for stage, (width, blocks, stride) in enumerate(
        ((64, 3, 1), (128, 4, 2), (256, 6, 2), (512, 3, 2)), start=2
    ):
        for b in range(blocks):
            s = stride if b == 0 else 1
            p = f"layer{stage - 1}.{b}"
            conv(f"{p}.conv1", h, cin, width, 1, 1)
            h2 = conv(f"{p}.conv2", h, width, width, 3, s)
            conv(f"{p}.conv3", h2, width, 4 * width, 1, 1, relu=False)
            if b == 0:
                conv(f"{p}.downsample", h, cin, 4 * width, 1, s, relu=False)
            out = (batch, 4 * width, h2, h2)
            ops += [
                make_op(f"{p}.residual", "Add", out, [out, out]),
                make_op(f"{p}.relu", "Relu", out, [out]),
            ]
            h, cin = h2, 4 * width
    ops.append(make_op("avgpool", "GlobalAveragePool", (batch, 2048, 1, 1), [(batch, 2048, h, h)]))
    ops.append(make_op("flatten", "Flatten", (batch, 2048), [(batch, 2048, 1, 1)]))
    layers.append(make_layer("fc", WEIGHT_GEMM, batch, 1000, 2048, weight_shape=(1000, 2048)))
    ops.append(make_op("fc.bias", "Add", (batch, 1000), [(batch, 1000)], params=1000))
    return Workload(f"resnet50(batch={batch})", tuple(layers), tuple(ops))


def _check_pos(**kw: int) -> None:
    for k, v in kw.items():
        if not isinstance(v, int) or isinstance(v, bool) or v <= 0:
            raise InputError(f"{k} must be a positive integer, got {v!r}", where="workload")
