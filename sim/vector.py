"""The vector unit: the SIMD unit beside the array that runs every operator that is not a GEMM.

A workload's non-GEMM operators (softmax, normalisation, activations, element-wise arithmetic,
pooling, data movement, embedding lookups) are :class:`VectorOp` entries. Each carries the work of
one instance split into four operator classes, counted per element by the recipes below:

* ``alu``: add, subtract, multiply, compare/select (one per lane per cycle);
* ``exp``: exponential / transcendental (exp, log, tanh via exp);
* ``div``: divide, reciprocal, reciprocal square root;
* ``red``: one step of a reduction (max or sum along a row).

and the elements it reads and writes. Reshape-like operators (Reshape, Flatten, Transpose,
Concat, Slice, Gather ...) are data movement only: no arithmetic, the tensor read and written once
through the vector unit's SRAM port. An operator type the catalogue does not know is kept as an
*unsupported* entry with its count and tensor sizes and costed by :data:`FALLBACK_RULE`.

Timing of one instance (cycles; lanes = L, rates r_c ops per lane per cycle of class c)::

    compute = sum_c ops_c / (L * r_c)  +  ceil(log2 L) if the op reduces (the cross-lane tree, pipelined)
    sram    = (read + write elements) * act_bytes / vector_sram_bytes_per_cycle
    dram    = (dram elements, plus the whole tensor when it does not fit the ofmap buffer) * act_bytes / DRAM B/cycle
    cycles  = ceil(max(compute, sram, dram))

Defaults (see :class:`sim.perf.ArrayConfig`): ``vector_lanes`` = the array's columns, so the unit
takes one output row of the array per cycle [A] (Google's TPUs size the vector unit to the
matrix unit's width: 128 lanes beside a 128 x 128 MXU [S] Norrie et al., "The Design Process for
Google's Training Chips: TPUv2 and TPUv3", IEEE Micro 41(2) 2021); ALU and reduction 1 op per lane
per cycle; exp and divide 1/4 op per lane per cycle [P] NVIDIA CUDA C++ Programming Guide,
"Arithmetic Instructions" throughput table, compute capability 8.0: 64 fp32 add/multiply/FMA but
16 reciprocal / rsqrt / exp2 / log2 results per clock per SM (the special-function units);
the SRAM port is the ofmap buffer's (``sram_banks x sram_port_bytes``) [A]: the vector unit reads
the array's outputs where the array writes them.
"""

from __future__ import annotations

import math
from dataclasses import dataclass
from typing import Any

from hw.errors import InputError

CLASSES = ("alu", "exp", "div", "red")

#: How an operator the catalogue does not know is costed (stated in every unsupported entry).
FALLBACK_RULE = (
    "costed as one element-wise ALU op per output element, every input read and every output "
    "written once through the vector unit"
)


@dataclass(frozen=True)
class VectorOp:
    """One non-GEMM operator (or ``count`` identical ones) on the vector unit.

    Work is per instance: ``alu``/``exp``/``div``/``red`` operations, ``read``/``write`` elements
    through the SRAM port, ``dram`` elements that must come from (or go to) DRAM whatever fits on
    chip (embedding-table rows, KV-cache appends). ``params`` = weight elements this operator owns
    (norm scales, biases, embedding tables), counted in the workload's ``weight_params``."""

    name: str
    op_type: str
    elements: int  # output elements of one instance
    alu: float = 0.0
    exp: float = 0.0
    div: float = 0.0
    red: float = 0.0
    read: int = 0
    write: int = 0
    dram: int = 0
    count: int = 1
    params: int = 0
    movement_only: bool = False
    supported: bool = True
    reason: str | None = None
    shapes: str = ""

    @property
    def reduces(self) -> bool:
        return self.red > 0

    @property
    def ops(self) -> float:
        return self.alu + self.exp + self.div + self.red


def _elems(shape) -> int:
    return int(math.prod(int(x) for x in shape)) if shape is not None else 0


# Per-element recipes: op_type -> (alu, exp, div, red) per output element, plus per-row extras for
# row-wise operators (row = the last axis). [D] from each operator's defining formula:
#   Softmax   y = exp(x - max) / sum(exp(x - max)): max-reduce, subtract, exp, sum-reduce, multiply by
#             the row's reciprocal -> alu 2, exp 1, red 2 per element, div 1 per row
#   LayerNorm (x - mean) * rstd * g + b: mean-reduce, subtract, square, sum-reduce, multiply, scale, shift
#             -> alu 5, red 2 per element, div (rsqrt) 1 per row
#   RMSNorm   x * rsqrt(mean(x^2)) * g: square, sum-reduce, multiply, scale -> alu 3, red 1, div 1 per row
#   GELU      tanh form 0.5 x (1 + tanh(c (x + 0.044715 x^3))), tanh(u) = 1 - 2 / (1 + exp(2u)):
#             alu 8 (x^2, x^3, fma, scale, 2u, 1+e, 1-, 0.5 x (1+t)), exp 1, div 1
#   Sigmoid   1 / (1 + exp(-x)): alu 1, exp 1, div 1;   SiLU x * sigmoid(x): alu 2, exp 1, div 1
#   Tanh      1 - 2 / (1 + exp(2x)): alu 3, exp 1, div 1
#   Erf       Abramowitz-Stegun 7.1.26 (t = 1/(1+p x), 5-term Horner, exp(-x^2)): alu 12, exp 1, div 1
_ELEMENTWISE = {
    # op_type: (alu, exp, div)
    "Add": (1, 0, 0),
    "Sub": (1, 0, 0),
    "Mul": (1, 0, 0),
    "Div": (0, 0, 1),
    "Neg": (1, 0, 0),
    "Abs": (1, 0, 0),
    "Relu": (1, 0, 0),
    "LeakyRelu": (2, 0, 0),
    "PRelu": (2, 0, 0),
    "Clip": (2, 0, 0),
    "Max": (1, 0, 0),
    "Min": (1, 0, 0),
    "Where": (1, 0, 0),
    "Equal": (1, 0, 0),
    "Less": (1, 0, 0),
    "Greater": (1, 0, 0),
    "Not": (1, 0, 0),
    "And": (1, 0, 0),
    "Or": (1, 0, 0),
    "Cast": (1, 0, 0),
    "Floor": (1, 0, 0),
    "Ceil": (1, 0, 0),
    "Round": (1, 0, 0),
    "Sign": (1, 0, 0),
    "BatchNormalization": (2, 0, 0),
    "HardSigmoid": (3, 0, 0),
    "HardSwish": (4, 0, 0),
    "Exp": (0, 1, 0),
    "Log": (0, 1, 0),
    "Pow": (1, 2, 0),
    "Sqrt": (0, 0, 1),
    "Reciprocal": (0, 0, 1),
    "Sigmoid": (1, 1, 1),
    "Tanh": (3, 1, 1),
    "Erf": (12, 1, 1),
    "Gelu": (8, 1, 1),
    "FastGelu": (8, 1, 1),
    "Silu": (2, 1, 1),
    "Swish": (2, 1, 1),
    "Softplus": (1, 2, 0),
    "Elu": (2, 1, 0),
    "Selu": (3, 1, 0),
    "Mish": (4, 3, 1),
    "QuickGelu": (2, 1, 1),
    "Rope": (3, 0, 0),
    "RotaryEmbedding": (3, 0, 0),
    "DequantizeLinear": (2, 0, 0),
    "QuantizeLinear": (3, 0, 1),
    "Col2Im": (1, 0, 0),
}
#: Row-wise operators: op_type -> (alu, exp, red per element, div per row).
_ROWWISE = {
    "Softmax": (2, 1, 2, 1),
    "LogSoftmax": (2, 1, 2, 1),
    "LayerNormalization": (5, 0, 2, 1),
    "SimplifiedLayerNormalization": (3, 0, 1, 1),
    "RMSNormalization": (3, 0, 1, 1),
    "SkipLayerNormalization": (6, 0, 2, 1),
    "InstanceNormalization": (5, 0, 2, 1),
    "GroupNormalization": (5, 0, 2, 1),
    "LpNormalization": (2, 0, 1, 1),
}
#: Reductions: every input element is one reduction step; mean adds one multiply per output.
_REDUCE = {
    "ReduceMean",
    "ReduceSum",
    "ReduceMax",
    "ReduceMin",
    "ReduceL2",
    "ReduceSumSquare",
    "ReduceProd",
    "ReduceLogSumExp",
    "GlobalAveragePool",
    "GlobalMaxPool",
    "ArgMax",
    "ArgMin",
    "TopK",
    "CumSum",
}
#: Pooling windows: every window element but the first is one ALU op (compare or add); average adds a multiply.
_POOL = {"MaxPool", "AveragePool", "LpPool"}
#: Data movement only (reshape-like): the tensor is read and written once, no arithmetic.
_MOVEMENT = {
    "Reshape",
    "Flatten",
    "Squeeze",
    "Unsqueeze",
    "Transpose",
    "Concat",
    "Slice",
    "Split",
    "Gather",
    "GatherElements",
    "GatherND",
    "Expand",
    "Tile",
    "Pad",
    "Identity",
    "Dropout",
    "DepthToSpace",
    "SpaceToDepth",
    "ScatterND",
    "ScatterElements",
    "Resize",
    "Upsample",
    "Compress",
    "OneHot",
    "Trilu",
    "ReverseSequence",
    "KVCacheWrite",
}
#: Shape bookkeeping on tiny int64 tensors, folded at compile time: no cost (counted, not timed).
_FREE = {"Shape", "Constant", "ConstantOfShape", "Size", "Range", "NonZero", "EyeLike"}


def known_op(op_type: str) -> bool:
    return (
        op_type in _ELEMENTWISE
        or op_type in _ROWWISE
        or op_type in _REDUCE
        or op_type in _POOL
        or op_type in _MOVEMENT
        or op_type in _FREE
    )


def make_op(
    name: str,
    op_type: str,
    out_shape,
    in_shapes=(),
    *,
    count: int = 1,
    params: int = 0,
    dram: int = 0,
    row: int | None = None,
    window: int | None = None,
    attrs: dict | None = None,
) -> VectorOp:
    """A :class:`VectorOp` from its output and (activation) input shapes by the recipes above.

    ``row`` is the length of the normalised/softmaxed axis (default: the last axis of the output);
    ``window`` the pooling window size (elements); ``attrs`` ONNX attributes that change the
    recipe (Resize ``mode``). Unknown op types give an unsupported entry costed by
    :data:`FALLBACK_RULE`."""
    if not isinstance(count, int) or count <= 0:
        raise InputError(f"count must be a positive integer, got {count!r}", where=f"vector op {name!r}")
    E = _elems(out_shape)
    reads = sum(_elems(s) for s in in_shapes) if in_shapes else E
    sizes = " ".join(f"in{list(map(int, s))}" for s in in_shapes) + f" out{list(map(int, out_shape))}"
    base: dict[str, Any] = dict(
        name=name,
        op_type=op_type,
        elements=E,
        read=reads,
        write=E,
        count=count,
        params=params,
        dram=dram,
        shapes=sizes.strip(),
    )
    attrs = attrs or {}
    if op_type in _FREE:
        return VectorOp(**{**base, "read": 0, "write": 0}, movement_only=True)
    if op_type in _MOVEMENT:
        if op_type in ("Resize", "Upsample") and str(attrs.get("mode", "nearest")) not in ("nearest",):
            # [D] bilinear: 3 lerps (a + t (b - a): sub, fma) per output element = 6 ALU ops
            return VectorOp(**base, alu=6.0 * E)
        return VectorOp(**base, movement_only=True)
    if op_type in _ELEMENTWISE:
        a, e, dv = _ELEMENTWISE[op_type]
        return VectorOp(**base, alu=float(a * E), exp=float(e * E), div=float(dv * E))
    if op_type in _ROWWISE:
        a, e, r, dv = _ROWWISE[op_type]
        n = int(row or (int(out_shape[-1]) if len(out_shape) else 1))
        rows = max(1, E // max(n, 1))
        return VectorOp(**base, alu=float(a * E), exp=float(e * E), red=float(r * E), div=float(dv * rows))
    if op_type in _REDUCE:
        red = float(reads)
        alu = (
            float(E) if op_type in ("ReduceMean", "GlobalAveragePool", "ReduceL2", "ReduceSumSquare") else 0.0
        )
        ex = float(reads) if op_type == "ReduceLogSumExp" else 0.0
        return VectorOp(**base, red=red, alu=alu, exp=ex)
    if op_type in _POOL:
        w = int(window or 1)
        alu = float(E * max(w - 1, 0) + (E if op_type == "AveragePool" else 0))
        return VectorOp(**base, alu=alu)
    return VectorOp(
        **base,
        alu=float(E),
        supported=False,
        reason=f"operator {op_type!r} unknown to the vector-unit model; {FALLBACK_RULE}",
    )


def unsupported_summary(ops) -> list[dict]:
    """``[{op_type, count, reason, shapes}]``: one entry per unsupported operator type (instances summed)."""
    out: dict[str, dict] = {}
    for op in ops:
        if op.supported:
            continue
        e = out.setdefault(op.op_type, {"op_type": op.op_type, "count": 0, "reason": op.reason, "shapes": []})
        e["count"] += op.count
        if op.shapes not in e["shapes"]:
            e["shapes"].append(op.shapes)
    return list(out.values())
