"""The keys of a Hugging Face ``config.json`` that :mod:`sim.importers.hf` reads, each checked where
it is read: its type (strict: no string for a number, no bool for an integer), its range, and the
limits the layers it makes must stay within (:mod:`sim.inputs`). An error names the file, the key
(or the command-line flag) exactly as written, the value and the allowed range, never a quantity
derived from it.

Also here: the MLP activation (``hidden_act`` / ``activation_function``), ``layer_types``, the head
that ``architectures`` names, and ``quantization_config`` read as the operand precision.
"""

from __future__ import annotations

import math
from dataclasses import dataclass
from typing import Literal, overload

from hw.errors import InputError
from sim.inputs import MAX_LAYER_COUNT, MAX_LAYER_DIM

#: [P] transformers' ACT2FN names (transformers/activations.py) that the vector unit costs, and
#: the operator each is costed as (every GELU approximation as Gelu; SiLU = Swish)
HF_ACTIVATIONS = {
    "silu": "silu",
    "swish": "silu",
    "gelu": "gelu",
    "gelu_new": "gelu",
    "gelu_fast": "gelu",
    "gelu_pytorch_tanh": "gelu",
    "gelu_python": "gelu",
    "gelu_accurate": "gelu",
    "quick_gelu": "gelu",
    "relu": "relu",
}
#: [P] the layer kinds transformers' ``layer_types`` takes for the model types read here
LAYER_TYPES = ("full_attention", "sliding_attention")
#: the end of a transformers class name in ``architectures`` -> the head it puts on the stack;
#: checked in this order (``DoubleHeadsModel`` before ``Model``)
HEAD_SUFFIXES = (
    ("DoubleHeadsModel", None),
    ("ForMaskedLM", "mlm"),
    ("LMHeadModel", "lm"),
    ("ForCausalLM", "lm"),
    ("ForPreTraining", "pretraining"),
    ("ForSequenceClassification", "seq_cls"),
    ("ForTokenClassification", "token_cls"),
    ("ForQuestionAnswering", "qa"),
    ("ForMultipleChoice", "multiple_choice"),
    ("ForNextSentencePrediction", "nsp"),
    ("Model", "base"),
)
#: the heads modelled per family: [P] transformers' modeling_bert.py (BertModel, BertForPreTraining,
#: BertLMHeadModel, BertForMaskedLM, BertForNextSentencePrediction, BertForSequenceClassification,
#: BertForMultipleChoice, BertForTokenClassification, BertForQuestionAnswering) and the decoders'
#: *Model, *ForCausalLM / GPT2LMHeadModel and *ForSequenceClassification
BERT_HEADS = ("base", "mlm", "lm", "pretraining", "seq_cls", "token_cls", "qa", "multiple_choice", "nsp")
DECODER_HEADS = ("base", "lm", "seq_cls")
#: [P] BertModel(add_pooling_layer=...) in each BERT head class: the heads without the pooler
BERT_NO_POOLER = ("mlm", "lm", "token_cls", "qa")


def key_of(cfg: dict, *keys: str) -> str:
    """The first of ``keys`` the config gives (not null), else the first: how messages name it."""
    return next((k for k in keys if cfg.get(k) is not None), keys[0])


@overload
def int_key(
    cfg: dict,
    where: str,
    *keys: str,
    default: int,
    required: bool = True,
    lo: int = 1,
    hi: int = MAX_LAYER_DIM,
    why: str = "one layer dimension",
) -> int: ...
@overload
def int_key(
    cfg: dict,
    where: str,
    *keys: str,
    default: None = None,
    required: Literal[True] = True,
    lo: int = 1,
    hi: int = MAX_LAYER_DIM,
    why: str = "one layer dimension",
) -> int: ...
@overload
def int_key(
    cfg: dict,
    where: str,
    *keys: str,
    default: int | None = None,
    required: bool = True,
    lo: int = 1,
    hi: int = MAX_LAYER_DIM,
    why: str = "one layer dimension",
) -> int | None: ...
def int_key(
    cfg: dict,
    where: str,
    *keys: str,
    default: int | None = None,
    required: bool = True,
    lo: int = 1,
    hi: int = MAX_LAYER_DIM,
    why: str = "one layer dimension",
) -> int | None:
    """The integer value of the first of ``keys`` the config gives, in ``lo..hi``."""
    for k in keys:
        if k in cfg and cfg[k] is not None:
            return check_int(k, cfg[k], where, lo=lo, hi=hi, why=why)
    if required and default is None:
        raise InputError(f"missing {' / '.join(keys)}", where=where)
    return default


def check_int(
    name: str, v, where: str, *, lo: int = 1, hi: int = MAX_LAYER_DIM, why: str = "one layer dimension"
) -> int:
    """``v`` as an integer in ``lo..hi`` (``name`` the key or flag as written)."""
    named = "" if name == where else f"{name} "  # a flag is the message's location already
    if isinstance(v, bool) or not isinstance(v, int):
        kind = "a string" if isinstance(v, str) else type(v).__name__
        span = f"in {lo}..{hi:,}" if hi < 2**40 else f">= {lo}"
        raise InputError(f"{named}must be an integer {span}, got {v!r} ({kind})", where=where)
    if not lo <= v <= hi:
        raise InputError(f"{name + ' = ' if named else ''}{v} is outside {lo}..{hi:,} ({why})", where=where)
    return v


#: one factor of a product the layers are limited in: (key or flag as written, value, where)
Term = tuple[str, int, str]


def check_product(terms: list[Term], limit: int, what: str) -> None:
    """The product of ``terms`` is at most ``limit``; otherwise an error blames one term, with the
    range it may take given the others: a command-line flag above 1 first (what a run changes),
    else the largest key that alone can bring the product within the limit."""
    prod = math.prod(v for _, v, _ in terms)
    if prod <= limit:
        return
    flags = [t for t in terms if t[0].startswith("--") and t[1] > 1]
    keys = sorted((t for t in terms if not t[0].startswith("--")), key=lambda t: -t[1])
    names = " x ".join(n for n, _, _ in terms)
    for name, v, where in flags + keys:
        rest = prod // v
        if rest <= limit:
            of = f": {names} ({what}) is at most {limit:,}" if len(terms) > 1 else f" ({what})"
            named = "" if name == where else f"{name} = "
            raise InputError(f"{named}{v} is outside 1..{limit // rest:,}{of}", where=where)
    name, v, where = (flags + keys)[0]
    values = " x ".join(f"{n} = {x}" for n, x, _ in terms)
    raise InputError(f"{values} = {prod:,} is above {limit:,} ({what})", where=where)


def check_repeats(terms: list[Term]) -> None:
    """The repeats of one layer (its count) are at most sim.inputs.MAX_LAYER_COUNT."""
    check_product(terms, MAX_LAYER_COUNT, "the repeats of one layer")


def check_dim(terms: list[Term], what: str) -> None:
    """One GEMM dimension is at most sim.inputs.MAX_LAYER_DIM."""
    check_product(terms, MAX_LAYER_DIM, what)


def activation(cfg: dict, key: str, default: str, where: str) -> str:
    """The MLP activation the config names under ``key``, as the operator the vector unit costs."""
    v = cfg.get(key)
    v = default if v is None else v
    if not isinstance(v, str) or v not in HF_ACTIVATIONS:
        raise InputError(
            f"{key} = {v!r} is not an activation sparsepe costs (one of: {', '.join(HF_ACTIVATIONS)})",
            where=where,
        )
    return HF_ACTIVATIONS[v]


def layer_types(cfg: dict, n_layers: int, layers_key: str, where: str) -> list[str] | None:
    """``layer_types``: one of LAYER_TYPES per layer (None when the config has none)."""
    types = cfg.get("layer_types")
    if types is None:
        return None
    if not isinstance(types, list) or not all(isinstance(t, str) for t in types):
        raise InputError(
            f"layer_types must be a list of strings ({', '.join(LAYER_TYPES)}), got {types!r}", where=where
        )
    if len(types) != n_layers:
        raise InputError(
            f"layer_types has {len(types)} entries, but {layers_key} = {n_layers}: one per layer", where=where
        )
    bad = next((t for t in types if t not in LAYER_TYPES), None)
    if bad is not None:
        raise InputError(
            f"layer_types[{types.index(bad)}] = {bad!r} is not one of {', '.join(LAYER_TYPES)}", where=where
        )
    return types


def head_kind(cfg: dict, mt: str, where: str) -> str:
    """The head on the stack, from the first class ``architectures`` names (transformers builds
    that class): one of BERT_HEADS / DECODER_HEADS. No ``architectures``: BertModel for BERT, the
    causal LM for a decoder."""
    archs = cfg.get("architectures")
    if archs is None:
        return "base" if mt == "bert" else "lm"
    if not isinstance(archs, list) or not archs or not all(isinstance(a, str) for a in archs):
        raise InputError(f"architectures must be a non-empty list of class names, got {archs!r}", where=where)
    allowed = BERT_HEADS if mt == "bert" else DECODER_HEADS
    kind = next((k for suffix, k in HEAD_SUFFIXES if archs[0].endswith(suffix)), None)
    if kind is None or kind not in allowed:  # None: no suffix matched (never among the allowed)
        ends = [s for s, k in HEAD_SUFFIXES if k in allowed]
        raise InputError(
            f"architectures[0] = {archs[0]!r} is not a head modelled for model_type {mt!r} "
            f"(class names ending in {', '.join(ends)})",
            where=where,
        )
    return kind


def num_labels(cfg: dict, where: str) -> int:
    """[P] transformers PretrainedConfig: ``num_labels``, else the size of ``id2label``, else 2."""
    if cfg.get("num_labels") is not None:
        return check_int("num_labels", cfg["num_labels"], where)
    labels = cfg.get("id2label")
    if labels is not None:
        if not isinstance(labels, dict) or not labels:
            raise InputError(f"id2label must be a non-empty object, got {labels!r}", where=where)
        return check_int("id2label (its size)", len(labels), where)
    return 2


@dataclass(frozen=True)
class Quantization:
    """What ``quantization_config`` says about the operands: ``precision`` the format of both
    operands of the weight GEMMs it covers (a hw.precision name), or None with ``note`` saying why
    the array's precision is used instead; ``skip`` the layers it leaves in the original precision."""

    method: str | None
    precision: str | None
    note: str
    weight_block: tuple[int, int] | None = None
    skip: tuple[str, ...] = ()

    def to_dict(self) -> dict:
        return {
            "method": self.method,
            "precision": self.precision,
            "weight_block": self.weight_block,
            "not_quantized": list(self.skip),
            "note": self.note,
        }


#: [P] DeepSeek-V3 Technical Report (arXiv 2412.19437) Section 3.3.1: FP8 GEMMs for the linear layers;
#: "the embedding module, the output head, MoE gating modules, normalization operators, and attention
#: operators" stay in BF16/FP32 (here: lm_head, router, the activation x activation attention GEMMs)
FP8_NOT_QUANTIZED = ("lm_head", "router")


def quantization(cfg: dict, where: str) -> Quantization | None:
    """``quantization_config`` (None when the config has none).

    * ``quant_method`` fp8 (DeepSeek-V3's, transformers' FineGrainedFP8Config): weights in ``fmt``
      (e4m3, e5m2) with one scale per ``weight_block_size`` block, activations in the same format with
      dynamic per-group scales: both operands FP8, the PE format fp8-e4m3 / fp8-e5m2.
    * gptq, awq (``bits``): weight-only; the activations stay 16-bit, and the array's PEs multiply
      two operands of one format, so no PE format is W4A16 / W8A16: the array's precision is used,
      and the note says so.
    * any other method: named in the note, not read."""
    q = cfg.get("quantization_config")
    if q is None:
        return None
    if not isinstance(q, dict):
        raise InputError(f"quantization_config must be an object, got {q!r}", where=where)
    method = q.get("quant_method")
    if method == "fp8":
        fmt = q.get("fmt", "e4m3")
        prec = {"e4m3": "fp8-e4m3", "e5m2": "fp8-e5m2"}.get(fmt) if isinstance(fmt, str) else None
        if prec is None:
            raise InputError(f"quantization_config.fmt = {fmt!r} is not e4m3 or e5m2", where=where)
        block = q.get("weight_block_size")
        if block is not None and not (
            isinstance(block, list)
            and len(block) == 2
            and all(isinstance(b, int) and not isinstance(b, bool) and b > 0 for b in block)
        ):
            raise InputError(
                f"quantization_config.weight_block_size must be two positive integers, got {block!r}",
                where=where,
            )
        skip = q.get("modules_to_not_convert") or []
        if not isinstance(skip, list) or not all(isinstance(s, str) for s in skip):
            raise InputError(
                f"quantization_config.modules_to_not_convert must be a list of names, got {skip!r}",
                where=where,
            )
        blocks = f"{block[0]}x{block[1]}-block" if block else "per-tensor"
        note = (
            f"quantization_config: fp8 {fmt}, {blocks} weight scales, {q.get('activation_scheme', 'dynamic')} "
            f"activation scales: the weight GEMMs' operands are {prec} (lm_head, the router and attention "
            f"products stay at the array's precision)"
        )
        return Quantization(
            "fp8",
            prec,
            note,
            tuple(block) if block else None,
            tuple(dict.fromkeys([*FP8_NOT_QUANTIZED, *skip])),
        )
    if method in ("gptq", "awq"):
        bits = q.get("bits", q.get("w_bit"))
        if isinstance(bits, bool) or not isinstance(bits, int) or bits not in (2, 3, 4, 8):
            raise InputError(f"quantization_config.bits = {bits!r} is not 2, 3, 4 or 8", where=where)
        note = (
            f"quantization_config: {method} {bits}-bit weights with 16-bit activations (weight-only) is not a PE "
            f"format (a PE multiplies two operands of one format): costed at the array's precision "
            f"(--precision int{4 if bits <= 4 else 8} costs both operands at {4 if bits <= 4 else 8} bits)"
        )
        return Quantization(method, None, note)
    return Quantization(
        None if not isinstance(method, str) else method,
        None,
        f"quantization_config: quant_method {method!r} is not read (fp8, gptq, awq are): costed at "
        f"the array's precision",
    )
