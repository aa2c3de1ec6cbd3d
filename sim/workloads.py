"""Workload library: layers as GEMMs with a type and an N:M-sparsifiable verdict.

GEMM convention (published-figures.md section 8): ``C[M x N] = A[M x K] . B[K x N]`` with M the
tokens (batch x sequence) or output pixels, N the output features / channels and K the reduction.
N:M sparsity applies along K of the weight operand. A layer with ``count > 1`` stands for that many
identical GEMMs (e.g. the 12 encoder blocks of BERT-base, or one GEMM per attention head).

Every layer carries the ASP verdict (:func:`sim.asp_rules.weight_verdict`) with its reason; a user
may override it per layer (``overrides={"name": True/False}`` or the ``sparsifiable`` column of a
native workload file, or the ``Sparsity`` column of a SCALE-Sim topology).
"""

from __future__ import annotations

import csv
import math
import tomllib
from dataclasses import dataclass, field, replace
from pathlib import Path

from hw.errors import InputError
from sim.asp_rules import ACT_GEMM, CONV, DEPTHWISE, KINDS, WEIGHT_GEMM, weight_verdict
from sim.vector import VectorOp, make_op, unsupported_summary


@dataclass(frozen=True)
class ConvGeometry:
    """Convolution geometry (SCALE-Sim convention: no padding unless ``pad`` is given)."""

    ifmap_h: int
    ifmap_w: int
    filt_h: int
    filt_w: int
    channels: int
    num_filters: int
    stride: int = 1
    pad: int = 0
    #: SCALE-Sim rounds output dims up (topology_utils: ceil((H - R + S) / S)); PyTorch rounds down.
    ceil_mode: bool = True

    def _out(self, size: int, k: int) -> int:
        span = size + 2 * self.pad - k
        return (-(-span // self.stride) if self.ceil_mode else span // self.stride) + 1

    @property
    def ofmap_h(self) -> int:
        return self._out(self.ifmap_h, self.filt_h)

    @property
    def ofmap_w(self) -> int:
        return self._out(self.ifmap_w, self.filt_w)

    @property
    def ifmap_elems(self) -> int:
        """Unique input activations (what a DRAM fetch needs when the ifmap fits on chip)."""
        return self.ifmap_h * self.ifmap_w * self.channels


@dataclass(frozen=True)
class Layer:
    """One GEMM-shaped layer (or ``count`` identical ones)."""

    name: str
    kind: str
    M: int
    N: int
    K: int
    weight_shape: tuple[int, ...] | None
    sparsifiable: bool
    reason: str
    count: int = 1
    conv: ConvGeometry | None = None
    #: N:M pattern declared for this layer's weights (e.g. a SCALE-Sim ``Sparsity`` column); None = the array's.
    nm: tuple[int, int] | None = None
    #: convolution groups the ``count`` instances come from (``weight_shape`` is the whole tensor, shared by them)
    groups: int = 1

    @property
    def dense_macs(self) -> int:
        return self.M * self.N * self.K * self.count

    @property
    def unit(self) -> str:
        """The unit that runs the layer: every GEMM (activation x activation included) runs on the array."""
        return "array"

    @property
    def weight_params(self) -> int:
        """Weight elements of this layer's ``count`` instances (0 for activation x activation): the
        instances of one grouped/depthwise convolution share one ``weight_shape`` tensor."""
        if self.weight_shape is None or self.kind == ACT_GEMM:
            return 0
        return math.prod(self.weight_shape) * self.count // self.groups


@dataclass(frozen=True)
class Workload:
    """GEMM layers (the array) and non-GEMM operators (the vector unit, :mod:`sim.vector`).

    ``stored_weight_params``: the parameters of the weight tensors a model file stores (ONNX
    initializers), when known; otherwise :attr:`weight_params` adds up the layers' and operators' own."""

    name: str
    layers: tuple[Layer, ...] = field(default_factory=tuple)
    vector_ops: tuple[VectorOp, ...] = field(default_factory=tuple)
    stored_weight_params: int | None = None
    #: KV-cache elements a decode step reads from DRAM (0 outside decode); informative, the
    #: attention layers' second operand carries the traffic in the cycle model
    kv_cache_elements: int = 0

    def __len__(self) -> int:
        return len(self.layers)

    @property
    def weight_params(self) -> int:
        """Parameters in the workload's weight tensors (GEMM weights, embedding tables, norm scales, biases)."""
        if self.stored_weight_params is not None:
            return int(self.stored_weight_params)
        return sum(l.weight_params for l in self.layers) + sum(op.params * op.count for op in self.vector_ops)

    @property
    def unsupported_ops(self) -> list[dict]:
        return unsupported_summary(self.vector_ops)

    def with_overrides(self, overrides: dict[str, bool], *, where: str = "overrides") -> "Workload":
        """Force the sparsifiable verdict of named layers (user decision, recorded in the reason)."""
        names = {l.name for l in self.layers}
        for key in overrides:
            if key not in names:
                raise InputError(f"no layer named {key!r} in workload {self.name!r}", where=where)
        layers = tuple(
            replace(l, sparsifiable=bool(overrides[l.name]),
                    reason=f"user override: {'sparse' if overrides[l.name] else 'dense'} (ASP default: {l.reason})")
            if l.name in overrides else l
            for l in self.layers
        )
        return replace(self, layers=layers)


def make_layer(name: str, kind: str, M: int, N: int, K: int, *, weight_shape: tuple[int, ...] | None = None,
               count: int = 1, conv: ConvGeometry | None = None, sparsifiable: bool | None = None,
               n: int = 2, m: int = 4, where: str | None = None, groups: int = 1) -> Layer:
    """Build a validated layer; the verdict defaults to ASP's rules, ``sparsifiable`` overrides it."""
    loc = where or f"layer {name!r}"
    if kind not in KINDS:
        raise InputError(f"unknown layer kind {kind!r} (known: {', '.join(KINDS)})", where=loc)
    for label, v in (("M", M), ("N", N), ("K", K), ("count", count)):
        if not isinstance(v, int) or isinstance(v, bool) or v <= 0:
            raise InputError(f"{label} must be a positive integer, got {v!r} (zero-sized layer)", where=loc)
    from sim.inputs import check_layer_dims

    check_layer_dims(loc, count, M=M, N=N, K=K)
    if weight_shape is None and kind != ACT_GEMM:
        weight_shape = (N, K) if kind == WEIGHT_GEMM else (N, K)
    verdict = weight_verdict(kind, weight_shape, n, m)
    reason = verdict.reason
    sp = verdict.sparsifiable
    if sparsifiable is not None and bool(sparsifiable) != sp:
        reason = f"user override: {'sparse' if sparsifiable else 'dense'} (ASP default: {verdict.reason})"
        sp = bool(sparsifiable)
    return Layer(name, kind, M, N, K, tuple(weight_shape) if weight_shape else None, sp, reason, count, conv,
                 groups=groups)


def conv_layer(name: str, geom: ConvGeometry, *, count: int = 1, sparsifiable: bool | None = None,
               depthwise: bool = False, where: str | None = None) -> Layer:
    """Convolution lowered to GEMM: M = OH*OW, N = Cout, K = Cin*R*S (depthwise: N=1, K=R*S, count x C)."""
    if min(geom.ifmap_h, geom.ifmap_w, geom.filt_h, geom.filt_w, geom.channels, geom.num_filters, geom.stride) <= 0:
        raise InputError("convolution dimensions must be positive (zero-sized layer)", where=where or f"layer {name!r}")
    from sim.inputs import check_layer_dims

    check_layer_dims(where or f"layer {name!r}", count, ifmap_h=geom.ifmap_h, ifmap_w=geom.ifmap_w,
                     channels=geom.channels, num_filters=geom.num_filters)
    if geom.filt_h > geom.ifmap_h + 2 * geom.pad or geom.filt_w > geom.ifmap_w + 2 * geom.pad:
        raise InputError("filter larger than the input feature map", where=where or f"layer {name!r}")
    M = geom.ofmap_h * geom.ofmap_w
    if depthwise:
        return make_layer(name, DEPTHWISE, M, 1, geom.filt_h * geom.filt_w,
                          weight_shape=(geom.channels, 1, geom.filt_h, geom.filt_w),
                          count=count * geom.channels, conv=geom, sparsifiable=sparsifiable, where=where,
                          groups=geom.channels)
    return make_layer(name, CONV, M, geom.num_filters, geom.channels * geom.filt_h * geom.filt_w,
                      weight_shape=(geom.num_filters, geom.channels, geom.filt_h, geom.filt_w),
                      count=count, conv=geom, sparsifiable=sparsifiable, where=where)


# --------------------------------------------------------------------------------------------
# Built-in networks. Shapes from /work/shared/reference/published-figures.md section 8.
# --------------------------------------------------------------------------------------------

# BERT configs: [P] NVIDIA TensorRT demo/BERT README (layers, hidden d, heads, FFN = 4d).
_BERT = {"bert-base": (12, 768, 12), "bert-large": (24, 1024, 16)}
# GPT-2: [S] OpenAI hparams.json via renenyffenegger.ch GPT-2 notes (layers, d, heads), FFN = 4d, ctx 1024.
_GPT2 = {"gpt2-small": (12, 768, 12), "gpt2-medium": (24, 1024, 16), "gpt2-large": (36, 1280, 20),
         "gpt2-xl": (48, 1600, 25)}
# Llama: [S] HF configs (layers, d, heads, kv heads, FFN): Llama-2-7B 32/4096/32/32/11008,
# Llama-3-8B 32/4096/32/8/14336 (published-figures.md 8.1).
_LLAMA = {"llama2-7b": (32, 4096, 32, 32, 11008), "llama3-8b": (32, 4096, 32, 8, 14336)}
# [S] HF configs: vocab_size 32000 (Llama-2), 128256 (Llama-3)
_LLAMA_VOCAB = {"llama2-7b": 32000, "llama3-8b": 128256}


def _transformer(name: str, n_layers: int, d: int, heads: int, seq: int, batch: int, *, ffn: int | None = None,
                 kv_heads: int | None = None, gated: bool = False, decode: bool = False, context: int | None = None,
                 fused_qkv: bool = True) -> Workload:
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
    L.append(make_layer("ffn2" if not gated else "ffn_down", WEIGHT_GEMM, M, d, ffn, weight_shape=(d, ffn),
                        count=n_layers))
    return Workload(name, tuple(L))


def transformer_ops(*, n_layers: int, d: int, heads: int, kv_heads: int, head_dim: int, ffn: int, batch: int, q_len: int,
                    ctx: int, vocab: int, norm: str = "layer", act: str = "gelu", gated: bool = False,
                    pre_norm: bool = True, qkv_bias: bool = False, o_bias: bool = False, mlp_bias: bool = False,
                    rope: bool = False, positions: int = 0, token_types: int = 0, embed_norm: bool = False,
                    final_norm: bool = True, own_embedding: bool = True, decode: bool = False) -> list[VectorOp]:
    """Every non-GEMM operator of a transformer stack, in the order it runs (each block's with count = n_layers).

    ``norm`` "layer" (LayerNorm: scale and shift, 2d params) or "rms" (RMSNorm: scale, d params);
    ``act`` the MLP activation (gelu, silu, relu); ``gated`` a SwiGLU MLP (act(gate) * up);
    ``pre_norm`` norms before attention/MLP (GPT-2, Llama) or after the residual add (BERT);
    ``positions``/``token_types`` learned position/type embedding rows (0: none); ``own_embedding``
    False when the token table is the (tied) LM head's weight, counted there. Decode appends the
    new token's K and V to the KV cache in DRAM (``KVCacheWrite``)."""
    M = batch * q_len
    q_dim, kv = heads * head_dim, kv_heads * head_dim
    nparam = 2 * d if norm == "layer" else d
    norm_op = "LayerNormalization" if norm == "layer" else "RMSNormalization"
    act_op = {"gelu": "Gelu", "silu": "Silu", "relu": "Relu", "gelu_new": "Gelu", "gelu_pytorch_tanh": "Gelu",
              "swish": "Silu"}.get(act)
    if act_op is None:
        raise InputError(f"unknown MLP activation {act!r} (gelu, silu, relu)", where="workload")
    tok, L = (M, d), n_layers
    ops = [make_op("embed_tokens", "Gather", tok, [(M,)], params=vocab * d if own_embedding else 0, dram=M * d)]
    if positions:
        ops += [make_op("embed_positions", "Gather", tok, [(M,)], params=positions * d, dram=M * d),
                make_op("embed_add_positions", "Add", tok, [tok, tok])]
    if token_types:
        ops += [make_op("embed_token_types", "Gather", tok, [(M,)], params=token_types * d),
                make_op("embed_add_token_types", "Add", tok, [tok, tok])]
    if embed_norm:
        ops.append(make_op("embed_norm", norm_op, tok, [tok], params=nparam))
    if pre_norm:
        ops.append(make_op("attn_norm", norm_op, tok, [tok], count=L, params=nparam))
    if qkv_bias:
        ops.append(make_op("qkv_bias", "Add", (M, q_dim + 2 * kv), [(M, q_dim + 2 * kv)], count=L,
                           params=q_dim + 2 * kv))
    if rope:
        ops.append(make_op("rope", "RotaryEmbedding", (M, q_dim + kv), [(M, q_dim + kv)], count=L))
    if decode:
        ops.append(make_op("kv_cache_write", "KVCacheWrite", (batch, 2 * kv), [(batch, 2 * kv)], count=L,
                           dram=batch * 2 * kv))
    scores = (batch * heads * q_len, ctx)
    ops += [make_op("attn_scale", "Mul", scores, [scores], count=L),
            make_op("attn_mask", "Add", scores, [scores], count=L),
            make_op("softmax", "Softmax", scores, [scores], count=L)]
    if o_bias:
        ops.append(make_op("o_bias", "Add", tok, [tok], count=L, params=d))
    ops.append(make_op("attn_residual", "Add", tok, [tok, tok], count=L))
    if not pre_norm:
        ops.append(make_op("attn_norm", norm_op, tok, [tok], count=L, params=nparam))
    else:
        ops.append(make_op("mlp_norm", norm_op, tok, [tok], count=L, params=nparam))
    hid = (M, ffn)
    if gated:
        ops += [make_op("mlp_act", act_op, hid, [hid], count=L), make_op("mlp_gate_mul", "Mul", hid, [hid, hid], count=L)]
        if mlp_bias:
            ops.append(make_op("mlp_bias", "Add", tok, [tok], count=L, params=2 * ffn + d))
    else:
        if mlp_bias:
            ops.append(make_op("ffn1_bias", "Add", hid, [hid], count=L, params=ffn))
        ops.append(make_op("mlp_act", act_op, hid, [hid], count=L))
        if mlp_bias:
            ops.append(make_op("ffn2_bias", "Add", tok, [tok], count=L, params=d))
    ops.append(make_op("mlp_residual", "Add", tok, [tok, tok], count=L))
    if not pre_norm:
        ops.append(make_op("mlp_norm", norm_op, tok, [tok], count=L, params=nparam))
    if final_norm:
        ops.append(make_op("final_norm", norm_op, tok, [tok], params=nparam))
    return ops


def bert(variant: str = "base", seq: int = 128, batch: int = 1) -> Workload:
    """BERT encoder plus the SQuAD QA head (d -> 2 logits, left dense: 2 % 8 != 0 under ASP)."""
    key = f"bert-{variant}"
    if key not in _BERT:
        raise InputError(f"unknown BERT variant {variant!r} (base, large)", where="workload")
    n_layers, d, heads = _BERT[key]
    _check_pos(seq=seq, batch=batch)
    wl = _transformer(f"{key}(seq={seq},batch={batch})", n_layers, d, heads, seq, batch)
    head = make_layer("qa_head", WEIGHT_GEMM, batch * seq, 2, d, weight_shape=(2, d))
    # [P] bert-base-uncased config.json: vocab 30522, 512 positions, 2 token types, post-LN, GELU, biases
    ops = transformer_ops(n_layers=n_layers, d=d, heads=heads, kv_heads=heads, head_dim=d // heads, ffn=4 * d,
                          batch=batch, q_len=seq, ctx=seq, vocab=30522, norm="layer", act="gelu", pre_norm=False,
                          qkv_bias=True, o_bias=True, mlp_bias=True, positions=512, token_types=2, embed_norm=True,
                          final_norm=False)
    ops.append(make_op("qa_head_bias", "Add", (batch * seq, 2), [(batch * seq, 2)], params=2))
    return Workload(wl.name, wl.layers + (head,), tuple(ops))


def gpt2(size: str = "small", seq: int = 1024, batch: int = 1) -> Workload:
    key = f"gpt2-{size}"
    if key not in _GPT2:
        raise InputError(f"unknown GPT-2 size {size!r} (small, medium, large, xl)", where="workload")
    _check_pos(seq=seq, batch=batch)
    n_layers, d, heads = _GPT2[key]
    wl = _transformer(f"{key}(seq={seq},batch={batch})", n_layers, d, heads, seq, batch)
    # [P] openai-community/gpt2 config.json: vocab 50257, 1024 positions, pre-LN, gelu_new, biases, tied LM head
    ops = transformer_ops(n_layers=n_layers, d=d, heads=heads, kv_heads=heads, head_dim=d // heads, ffn=4 * d,
                          batch=batch, q_len=seq, ctx=seq, vocab=50257, norm="layer", act="gelu", pre_norm=True,
                          qkv_bias=True, o_bias=True, mlp_bias=True, positions=1024)
    return replace(wl, vector_ops=tuple(ops))


def llama(model: str = "llama2-7b", phase: str = "prefill", seq: int = 2048, batch: int = 1,
          context: int | None = None) -> Workload:
    if model not in _LLAMA:
        raise InputError(f"unknown Llama model {model!r} ({', '.join(_LLAMA)})", where="workload")
    if phase not in ("prefill", "decode"):
        raise InputError(f"phase must be prefill or decode, got {phase!r}", where="workload")
    _check_pos(seq=seq, batch=batch)
    n_layers, d, heads, kvh, ffn = _LLAMA[model]
    wl = _transformer(f"{model}-{phase}(seq={seq},batch={batch})", n_layers, d, heads, seq, batch, ffn=ffn,
                      kv_heads=kvh, gated=True, decode=phase == "decode", context=context, fused_qkv=False)
    decode = phase == "decode"
    ops = transformer_ops(n_layers=n_layers, d=d, heads=heads, kv_heads=kvh, head_dim=d // heads, ffn=ffn,
                          batch=batch, q_len=1 if decode else seq, ctx=(context or seq) if decode else seq,
                          vocab=_LLAMA_VOCAB[model], norm="rms", act="silu", gated=True, rope=True, decode=decode)
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
    for stage, (width, blocks, stride) in enumerate(((64, 3, 1), (128, 4, 2), (256, 6, 2), (512, 3, 2)), start=2):
        for b in range(blocks):
            s = stride if b == 0 else 1
            p = f"layer{stage - 1}.{b}"
            conv(f"{p}.conv1", h, cin, width, 1, 1)
            h2 = conv(f"{p}.conv2", h, width, width, 3, s)
            conv(f"{p}.conv3", h2, width, 4 * width, 1, 1, relu=False)
            if b == 0:
                conv(f"{p}.downsample", h, cin, 4 * width, 1, s, relu=False)
            out = (batch, 4 * width, h2, h2)
            ops += [make_op(f"{p}.residual", "Add", out, [out, out]), make_op(f"{p}.relu", "Relu", out, [out])]
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


_REGISTRY = {
    "bert-base": lambda **p: bert("base", **p),
    "bert-large": lambda **p: bert("large", **p),
    "resnet50": lambda **p: resnet50(**p),
    **{k: (lambda k=k, **p: gpt2(k.split("-")[1], **p)) for k in _GPT2},
    **{f"{k}-{ph}": (lambda k=k, ph=ph, **p: llama(k, ph, **p)) for k in _LLAMA for ph in ("prefill", "decode")},
}


def list_workloads() -> list[str]:
    return sorted(_REGISTRY)


def get_workload(name: str, **params) -> Workload:
    """A built-in network by name (see :func:`list_workloads`); params e.g. ``seq=384, batch=8``."""
    if name not in _REGISTRY:
        raise InputError(f"unknown workload {name!r} (built-in: {', '.join(list_workloads())})", where="--workload")
    try:
        return _REGISTRY[name](**params)
    except (TypeError, ValueError, ArithmeticError) as exc:
        if isinstance(exc, InputError):
            raise
        raise InputError(f"bad parameters {params} for workload {name!r}: {exc}", where="--workload") from None


# --------------------------------------------------------------------------------------------
# Native workload format: TOML ([[layer]] tables) or CSV (header below).
# --------------------------------------------------------------------------------------------

NATIVE_CSV_COLUMNS = ("name", "kind", "M", "N", "K", "count", "sparsifiable")
_NATIVE_KEYS = {"name", "kind", "M", "N", "K", "count", "sparsifiable", "weight_shape"}


def _parse_bool(v, where: str) -> bool | None:
    if v is None or (isinstance(v, str) and v.strip() == ""):
        return None
    if isinstance(v, bool):
        return v
    s = str(v).strip().lower()
    if s in ("true", "1", "yes", "sparse"):
        return True
    if s in ("false", "0", "no", "dense"):
        return False
    raise InputError(f"sparsifiable must be true/false or empty, got {v!r}", where=where)


def _parse_int(v, label: str, where: str) -> int:
    try:
        if isinstance(v, bool):
            raise ValueError
        iv = int(str(v).strip())
    except (TypeError, ValueError):
        raise InputError(f"{label} must be an integer, got {v!r}", where=where) from None
    return iv


def load_workload(path: str | Path) -> Workload:
    """Native workload file: ``.toml`` with ``name = ...`` and ``[[layer]]`` tables
    (keys name, kind, M, N, K, optional count, sparsifiable, weight_shape) or ``.csv`` with the header
    ``name,kind,M,N,K,count,sparsifiable`` (count and sparsifiable may be empty)."""
    p = Path(path)
    if not p.is_file():
        raise InputError("workload file not found", where=str(p))
    rows: list[tuple[str, dict]] = []
    wl_name = p.stem
    from sim.inputs import read_text

    if p.suffix == ".toml":
        try:
            data = tomllib.loads(read_text(p, "workload file"))
        except tomllib.TOMLDecodeError as exc:
            raise InputError(f"TOML syntax: {exc}", where=str(p)) from None
        except RecursionError:
            raise InputError("TOML syntax: nested too deeply", where=str(p)) from None
        extra = set(data) - {"name", "layer"}
        if extra:
            raise InputError(f"unknown key(s) {sorted(extra)} (allowed: name, layer)", where=str(p))
        if not isinstance(data.get("name", ""), str):
            raise InputError(f"name must be a string, got {data['name']!r}", where=f"{p}: name")
        wl_name = str(data.get("name", wl_name))
        layer_list = data.get("layer", [])
        if not isinstance(layer_list, list):
            raise InputError("layer must be an array of tables ([[layer]])", where=f"{p}: layer")
        for i, t in enumerate(layer_list, start=1):
            if not isinstance(t, dict):
                raise InputError(f"a layer must be a table ([[layer]]), got {type(t).__name__}", where=f"{p}: layer {i}")
            for key in ("name", "kind"):
                if key in t and not isinstance(t[key], str):
                    raise InputError(f"{key} must be a string, got {t[key]!r}", where=f"{p}: layer {i}")
            rows.append((f"{p}: layer {i}", t))
    elif p.suffix == ".csv":
        import io

        with io.StringIO(read_text(p, "workload file", encoding="utf-8-sig"), newline="") as fh:
            reader = csv.reader(fh)
            try:
                header = [h.strip() for h in next(reader, [])]
                if tuple(header[:5]) != NATIVE_CSV_COLUMNS[:5]:
                    raise InputError(f"header must start with {','.join(NATIVE_CSV_COLUMNS)}, got {header[:8]}",
                                     where=f"{p}: row 1")
                for i, rec in enumerate(reader, start=2):
                    if not rec or all(not c.strip() for c in rec):
                        continue
                    if len(rec) > len(header):
                        raise InputError(f"{len(rec)} fields but the header has {len(header)}", where=f"{p}: row {i}")
                    rows.append((f"{p}: row {i}", dict(zip(header, rec))))
            except csv.Error as exc:
                raise InputError(f"not a readable CSV ({exc})", where=f"{p}: row {reader.line_num}") from None
    else:
        raise InputError("workload file must be .toml or .csv", where=str(p))
    if not rows:
        raise InputError("no layers", where=str(p))
    layers = []
    seen = set()
    for where, t in rows:
        unknown = set(t) - _NATIVE_KEYS
        if unknown:
            raise InputError(f"unknown key(s) {sorted(unknown)}", where=where)
        for key in ("name", "kind", "M", "N", "K"):
            if key not in t or str(t[key]).strip() == "":
                raise InputError(f"missing {key}", where=where)
        name = str(t["name"]).strip()
        if name in seen:
            raise InputError(f"duplicate layer name {name!r}", where=where)
        seen.add(name)
        count = t.get("count")
        count = 1 if count is None or str(count).strip() == "" else _parse_int(count, "count", where)
        ws = t.get("weight_shape")
        if ws is not None:
            from sim.inputs import MAX_LAYER_DIM

            if (not isinstance(ws, list) or not 1 <= len(ws) <= 8
                    or not all(isinstance(x, int) and not isinstance(x, bool) and 1 <= x <= MAX_LAYER_DIM for x in ws)):
                raise InputError(f"weight_shape must be a list of 1 to 8 positive integers <= {MAX_LAYER_DIM}, "
                                 f"got {ws!r}", where=where)
        layers.append(make_layer(name, str(t["kind"]).strip(), _parse_int(t["M"], "M", where),
                                 _parse_int(t["N"], "N", where), _parse_int(t["K"], "K", where),
                                 weight_shape=tuple(ws) if ws else None, count=count,
                                 sparsifiable=_parse_bool(t.get("sparsifiable"), where), where=where))
    return Workload(wl_name, tuple(layers))


def total_dense_macs(w: Workload) -> int:
    return sum(l.dense_macs for l in w.layers)


# Re-export the SCALE-Sim importers so `sim.workloads` is the one place to load any workload.
from sim.importers import load_scalesim_config, load_scalesim_topology  # noqa: E402,F401

__all__ = [
    "ConvGeometry", "Layer", "Workload", "make_layer", "conv_layer", "bert", "gpt2", "llama", "resnet50",
    "get_workload", "list_workloads", "load_workload", "load_scalesim_topology", "load_scalesim_config",
    "total_dense_macs",
]
