"""One cost class for every operator of the ai.onnx domain (opsets 1-21; tested against ``onnx.defs``).

Classes: ``gemm`` (the array; the mapping builds the layer), ``movement`` (data movement only, or
shape bookkeeping), ``elementwise`` and ``transcendental`` (per output element), ``reduction`` (per
input element), ``pool`` (per window element), ``control`` (a subgraph operator: its outputs moved
once; the subgraph's own work is not costed, and the operator's entry says so).

An operator :mod:`sim.vector` already has a recipe for keeps that recipe (:func:`sim.vector.known_op`);
:data:`OP_CLASSES` gives the class of every operator and the per-element work of those it does not
know: ``(class, alu, exp, div, red)``. An operator of an unknown *domain* is the only kind costed by
:data:`sim.vector.FALLBACK_RULE` as unsupported, and its entry names the operator and the domain.

Sources: [D] each operator's defining formula in the ONNX operator specification; transcendental
functions count one special-function op (``exp``) like exp, log and the trigonometric functions of
NVIDIA's special-function units [P] CUDA C++ Programming Guide, "Arithmetic Instructions"
(compute capability 8.0: 16 results per clock per SM for exp2, log2, sin, cos, rsqrt).
"""

from __future__ import annotations

from sim.vector import VectorOp, known_op, make_op

_G, _M, _E, _T, _R, _C, _P = (
    "gemm",
    "movement",
    "elementwise",
    "transcendental",
    "reduction",
    "control",
    "pool",
)

#: op -> (class, alu, exp, div, red): per output element (red: per input element).
OP_CLASSES: dict[str, tuple[str, float, float, float, float]] = {
    # the array: the mapping makes these GEMM layers
    **{
        op: (_G, 0, 0, 0, 0)
        for op in (
            "Conv",
            "ConvInteger",
            "ConvTranspose",
            "DeformConv",
            "Einsum",
            "Gemm",
            "MatMul",
            "MatMulInteger",
            "QLinearConv",
            "QLinearMatMul",
            "RNN",
            "GRU",
            "LSTM",
        )
    },
    # element-wise arithmetic, comparison, logic and bit operations: [D] one op, or the formula's count
    **{
        op: (_E, 1, 0, 0, 0)
        for op in (
            "Add",
            "Sub",
            "Mul",
            "Neg",
            "Abs",
            "Relu",
            "Max",
            "Min",
            "Where",
            "Equal",
            "Less",
            "Greater",
            "GreaterOrEqual",
            "LessOrEqual",
            "Not",
            "And",
            "Or",
            "Xor",
            "BitShift",
            "BitwiseAnd",
            "BitwiseNot",
            "BitwiseOr",
            "BitwiseXor",
            "Cast",
            "CastLike",
            "Floor",
            "Ceil",
            "Round",
            "Sign",
            "IsInf",
            "IsNaN",
            "Sum",
        )
    },
    "Mean": (_E, 2, 0, 0, 0),  # sum, then one multiply by 1/n
    "Mod": (_E, 3, 0, 1, 0),  # a - b * floor(a / b)
    "Div": (_E, 0, 0, 1, 0),
    "Reciprocal": (_E, 0, 0, 1, 0),
    "Sqrt": (_E, 0, 0, 1, 0),
    "LeakyRelu": (_E, 2, 0, 0, 0),
    "PRelu": (_E, 2, 0, 0, 0),
    "Clip": (_E, 2, 0, 0, 0),
    "ThresholdedRelu": (_E, 2, 0, 0, 0),
    "Shrink": (_E, 3, 0, 0, 0),
    "HardSigmoid": (_E, 3, 0, 0, 0),
    "HardSwish": (_E, 4, 0, 0, 0),
    "Softsign": (_E, 2, 0, 1, 0),  # x / (1 + |x|)
    "BatchNormalization": (_E, 2, 0, 0, 0),
    "DequantizeLinear": (_E, 2, 0, 0, 0),
    # y = saturate(round(x / scale) + zp) with the scale a constant: x * (1 / scale) folded at compile
    # time, round, add, clip (4 ALU, no divide; sim.vector's generic recipe divides)
    "QuantizeLinear": (_E, 4, 0, 0, 0),
    "Col2Im": (_E, 1, 0, 0, 0),
    # [A] a counter-based generator (Philox-style): a few integer ops per sample, then a scale
    **{
        op: (_E, 4, 0, 0, 0)
        for op in ("RandomNormal", "RandomNormalLike", "RandomUniform", "RandomUniformLike", "Bernoulli")
    },
    # transcendental: one special-function op plus the formula's arithmetic [D]
    "Exp": (_T, 0, 1, 0, 0),
    "Log": (_T, 0, 1, 0, 0),
    "Pow": (_T, 1, 2, 0, 0),
    "Sigmoid": (_T, 1, 1, 1, 0),
    "Tanh": (_T, 3, 1, 1, 0),
    "Erf": (_T, 12, 1, 1, 0),
    "Gelu": (_T, 8, 1, 1, 0),
    "Softplus": (_T, 1, 2, 0, 0),
    "Elu": (_T, 2, 1, 0, 0),
    "Selu": (_T, 3, 1, 0, 0),
    "Celu": (_T, 3, 1, 1, 0),
    "Mish": (_T, 4, 3, 1, 0),
    "Sin": (_T, 0, 1, 0, 0),
    "Cos": (_T, 0, 1, 0, 0),
    "Tan": (_T, 0, 2, 1, 0),  # sin / cos
    "Sinh": (_T, 1, 1, 1, 0),
    "Cosh": (_T, 1, 1, 1, 0),  # (e^x -+ e^-x) / 2: one exp, one reciprocal
    "Asinh": (_T, 3, 1, 1, 0),
    "Acosh": (_T, 3, 1, 1, 0),
    "Atanh": (_T, 3, 1, 1, 0),  # log(x + sqrt(x^2 +- 1))
    "Asin": (_T, 3, 1, 1, 0),
    "Acos": (_T, 3, 1, 1, 0),
    "Atan": (_T, 3, 1, 1, 0),  # atan2 of a sqrt form
    **{op: (_T, 2, 1, 0, 0) for op in ("HannWindow", "HammingWindow", "BlackmanWindow")},  # a cos per sample
    "MelWeightMatrix": (_T, 6, 1, 1, 0),  # Hz <-> mel (a log) and a triangle per bin
    "DFT": (_T, 10, 1, 0, 0),
    "STFT": (_T, 10, 1, 0, 0),  # [A] radix-2 FFT ~5 log2 N flops per point, N ~ 4
    "Det": (_T, 8, 0, 1, 0),  # [A] LU of a small matrix, amortised per input element
    # row-wise and reductions
    **{op: (_R, 2, 1, 1, 2) for op in ("Softmax", "LogSoftmax", "Hardmax")},
    **{
        op: (_R, 5, 0, 1, 2)
        for op in (
            "LayerNormalization",
            "InstanceNormalization",
            "GroupNormalization",
            "MeanVarianceNormalization",
        )
    },
    "LpNormalization": (_R, 2, 0, 1, 1),
    "LRN": (_R, 3, 1, 1, 1),
    **{
        op: (_R, 0, 0, 0, 1)
        for op in (
            "ReduceMax",
            "ReduceMin",
            "ReduceSum",
            "ReduceProd",
            "ArgMax",
            "ArgMin",
            "TopK",
            "CumSum",
            "GlobalMaxPool",
            "Unique",
            "NonMaxSuppression",
        )
    },
    **{
        op: (_R, 1, 0, 0, 1)
        for op in (
            "ReduceMean",
            "GlobalAveragePool",
            "ReduceL1",
            "ReduceL2",
            "ReduceSumSquare",
            "GlobalLpPool",
        )
    },
    **{op: (_R, 0, 1, 0, 1) for op in ("ReduceLogSum", "ReduceLogSumExp")},
    **{op: (_R, 2, 1, 1, 2) for op in ("NegativeLogLikelihoodLoss", "SoftmaxCrossEntropyLoss")},
    # DynamicQuantizeLinear: a min and a max reduction over the tensor, then the scale pass
    # y = saturate(round(x / scale) + zp): one scale per tensor, so x * (1 / scale), round, add, clip (4 ALU)
    "DynamicQuantizeLinear": (_R, 4, 0, 0, 2),
    **{
        op: (_P, 0, 0, 0, 0)
        for op in ("MaxPool", "AveragePool", "LpPool", "MaxRoiPool", "RoiAlign", "MaxUnpool")
    },
    # sampling: [D] bilinear interpolation, 3 lerps per output element
    **{op: (_E, 6, 0, 0, 0) for op in ("GridSample", "AffineGrid")},
    # data movement and shape bookkeeping
    **{
        op: (_M, 0, 0, 0, 0)
        for op in (
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
            "Scatter",
            "Resize",
            "Upsample",
            "Compress",
            "OneHot",
            "Trilu",
            "ReverseSequence",
            "CenterCropPad",
            "Shape",
            "Size",
            "Constant",
            "ConstantOfShape",
            "Range",
            "NonZero",
            "EyeLike",
            "Multinomial",
            "ImageDecoder",
            "RegexFullMatch",
            "StringConcat",
            "StringNormalizer",
            "StringSplit",
            "TfIdfVectorizer",
        )
    },
    # control flow and sequences: the operator moves its outputs; a subgraph is not costed
    **{
        op: (_C, 0, 0, 0, 0)
        for op in (
            "If",
            "Loop",
            "Scan",
            "SequenceMap",
            "SequenceAt",
            "SequenceConstruct",
            "SequenceEmpty",
            "SequenceErase",
            "SequenceInsert",
            "SequenceLength",
            "ConcatFromSequence",
            "SplitToSequence",
            "Optional",
            "OptionalGetElement",
            "OptionalHasElement",
        )
    },
}
#: Operators whose entry here replaces sim.vector's recipe (a compiler's lowering is cheaper).
OVERRIDE = {"QuantizeLinear"}
#: Tensor-level extra work of DynamicQuantizeLinear: scale = (max - min) / 255 and the zero point
#: round(-min / scale) clipped to [0, 255], and the reciprocal of the scale: [D] onnx
#: DynamicQuantizeLinear-11, 4 ALU ops and 2 divides.
DQL_SCALAR = (4.0, 2.0)


def vector_op(
    name: str,
    op: str,
    out_shape,
    in_shapes,
    *,
    params: int = 0,
    window: int | None = None,
    row: int | None = None,
    attrs: dict | None = None,
    on_load: bool = False,
) -> VectorOp:
    """The vector-unit entry of an ai.onnx operator (any operator of :data:`OP_CLASSES` but the GEMMs).
    ``on_load``: a DynamicQuantizeLinear whose scale pass is its integer GEMMs' operand load
    (:mod:`sim.importers.onnx.quant`): its reductions and scalar work only."""
    if known_op(op) and op not in OVERRIDE:
        return make_op(name, op, out_shape, in_shapes, params=params, window=window, row=row, attrs=attrs)
    cls, alu, ex, dv, red = OP_CLASSES[op]
    base = make_op(name, "Identity", out_shape, in_shapes, params=params)
    E, reads = base.elements, base.read
    if cls == _M:
        return VectorOp(**{**_fields(base), "op_type": op})
    if cls == _C:
        return VectorOp(
            **{
                **_fields(base),
                "op_type": op,
                "reason": f"{op}: its subgraph is not costed, only its outputs moved once",
            }
        )
    if cls == _P:
        w = int(window or 1)
        return _with(base, op, alu=float(E * max(w - 1, 0)))
    if op == "DynamicQuantizeLinear":
        a0, d0 = DQL_SCALAR
        n_in = max(reads, E)
        return _with(base, op, alu=(0 if on_load else alu * n_in) + a0, div=dv * n_in + d0, red=red * n_in)
    if cls == _R:
        return _with(base, op, alu=alu * E, exp=ex * reads, div=dv * E, red=red * reads)
    k = max(1, len(in_shapes) - 1) if op in ("Sum", "Mean", "Max", "Min") else 1
    return _with(base, op, alu=alu * E * k, exp=ex * E, div=dv * E)


def _fields(v: VectorOp) -> dict:
    return {k: getattr(v, k) for k in VectorOp.__dataclass_fields__}


def _with(base: VectorOp, op: str, **work: float) -> VectorOp:
    return VectorOp(
        **{**_fields(base), "op_type": op, "movement_only": False, **{k: float(v) for k, v in work.items()}}
    )
