"""DeepSeek-V2/V3 multi-head latent attention (MLA) as GEMM layers and vector-unit operators.

[P] the Hugging Face ``DeepseekV3Attention`` (and V2's): queries ``q_proj`` (d -> heads x (nope +
rope)), or ``q_a_proj`` (d -> q_lora_rank), its RMSNorm and ``q_b_proj`` when ``q_lora_rank`` is
set; keys and values from one latent: ``kv_a_proj_with_mqa`` (d -> kv_lora_rank + rope), its
RMSNorm, ``kv_b_proj`` (kv_lora_rank -> heads x (nope + v)); ``o_proj`` (heads x v -> d). RoPE acts
on the ``qk_rope_head_dim`` part of each query head and on the one shared rope key.

* **Prefill** runs the expanded form: ``kv_b_proj`` on every token, then per head and sequence the
  scores (q_len x keys x (nope + rope)) and the context (q_len x v x keys).
* **Decode** runs the absorbed form of the DeepSeek-V2 paper (Section 2.1.2, "W^UK can be absorbed
  into W^Q, and W^UV into W^O") [A], as serving stacks do: the KV cache holds only the latent and
  the rope key, kv_lora_rank + qk_rope_head_dim elements per token and layer; each query head's
  nope part is mapped into the latent by its slice of ``kv_b_proj`` (``kv_b_absorb_k``), every head
  scores against the shared cache (one GEMM per sequence, the heads stacked along M, K =
  kv_lora_rank + rope), the context is taken in the latent (K = keys) and each head's slice of
  ``kv_b_proj`` maps it to v (``kv_b_absorb_v``). The two slices together are ``kv_b_proj``'s
  weights, counted once. ``kv_b_absorb_k`` reduces along the stored tensor's output axis, so an N:M
  pattern along its input axis does not apply: it runs dense. The cycle model reads the latent
  cache once as keys and once as values [A] (a kernel that fuses both reads, such as FlashMLA,
  reads it once).
"""

from __future__ import annotations

from dataclasses import dataclass, replace
from typing import Literal, overload

from hw.errors import InputError
from sim.asp_rules import ACT_GEMM, WEIGHT_GEMM
from sim.vector import VectorOp, make_op

#: config keys of the latent attention
MLA_KEYS = ("kv_lora_rank", "qk_nope_head_dim", "qk_rope_head_dim", "v_head_dim")


@dataclass(frozen=True)
class MLA:
    layers: tuple
    ops: tuple[VectorOp, ...]
    kv_cache_elements: int


@overload
def _dim(cfg: dict, key: str, where: str, optional: Literal[False] = False) -> int: ...
@overload
def _dim(cfg: dict, key: str, where: str, optional: bool) -> int | None: ...
def _dim(cfg: dict, key: str, where: str, optional: bool = False) -> int | None:
    v = cfg.get(key)
    if v is None and optional:
        return None
    if isinstance(v, bool) or not isinstance(v, int) or v <= 0:
        raise InputError(f"{key} must be a positive integer, got {v!r}", where=where)
    return v


def mla_attention(
    cfg: dict,
    where: str,
    *,
    n_layers: int,
    d: int,
    heads: int,
    batch: int,
    q_len: int,
    ctx: int,
    decode: bool,
    mk,
) -> MLA:
    """The attention of ``n_layers`` MLA blocks; ``mk(name, kind, M, N, K, weight_shape, count)``
    makes a layer (the importer's, with its N:M and location)."""
    kv_lora, nope, rope, v = (_dim(cfg, k, where) for k in MLA_KEYS)
    q_lora = _dim(cfg, "q_lora_rank", where, optional=True)
    L, H = n_layers, heads
    M = batch * q_len
    qk = nope + rope
    layers = []
    if q_lora:
        layers += [
            mk("q_a_proj", WEIGHT_GEMM, M, q_lora, d, (q_lora, d)),
            mk("q_b_proj", WEIGHT_GEMM, M, H * qk, q_lora, (H * qk, q_lora)),
        ]
    else:
        layers.append(mk("q_proj", WEIGHT_GEMM, M, H * qk, d, (H * qk, d)))
    layers.append(mk("kv_a_proj_with_mqa", WEIGHT_GEMM, M, kv_lora + rope, d, (kv_lora + rope, d)))
    if decode:
        absorb_k = mk("kv_b_absorb_k", WEIGHT_GEMM, M, kv_lora, nope, (kv_lora, nope), count=L * H)
        layers += [
            replace(
                absorb_k,
                sparsifiable=False,
                reason="absorbed slice of kv_b_proj: it reduces along the stored tensor's output axis, "
                "where no N:M pattern lies",
            ),
            mk("attn_scores", ACT_GEMM, H * q_len, ctx, kv_lora + rope, count=L * batch),
            mk("attn_context", ACT_GEMM, H * q_len, kv_lora, ctx, count=L * batch),
            mk("kv_b_absorb_v", WEIGHT_GEMM, M, v, kv_lora, (v, kv_lora), count=L * H),
        ]
        kv_elems = L * (kv_lora + rope) * ctx * batch
    else:
        layers += [
            mk("kv_b_proj", WEIGHT_GEMM, M, H * (nope + v), kv_lora, (H * (nope + v), kv_lora)),
            mk("attn_scores", ACT_GEMM, q_len, ctx, qk, count=L * H * batch),
            mk("attn_context", ACT_GEMM, q_len, v, ctx, count=L * H * batch),
        ]
        kv_elems = 0
    layers.append(mk("o_proj", WEIGHT_GEMM, M, d, H * v, (d, H * v)))
    ops = []
    if q_lora:
        ops.append(
            make_op("q_a_norm", "RMSNormalization", (M, q_lora), [(M, q_lora)], count=L, params=q_lora)
        )
    ops += [
        make_op("kv_a_norm", "RMSNormalization", (M, kv_lora), [(M, kv_lora)], count=L, params=kv_lora),
        make_op("rope", "RotaryEmbedding", (M, H * rope + rope), [(M, H * rope + rope)], count=L),
    ]
    if cfg.get("attention_bias"):  # q_a_proj (or q_proj), kv_a_proj_with_mqa and o_proj carry biases
        nb = (q_lora or H * qk) + kv_lora + rope + d
        ops.append(make_op("attn_bias", "Add", (M, nb), [(M, nb)], count=L, params=nb))
    if decode:
        ops.append(
            make_op(
                "kv_cache_write",
                "KVCacheWrite",
                (batch, kv_lora + rope),
                [(batch, kv_lora + rope)],
                count=L,
                dram=batch * (kv_lora + rope),
            )
        )
    return MLA(tuple(layers), tuple(ops), kv_elems)
