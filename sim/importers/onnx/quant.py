"""Quantized formats lowered as a deployment compiler lowers them (docs/onnx.md).

* A weight's ``DequantizeLinear`` (and any Transpose/Cast/Reshape of a weight) is folded at load time:
  the array reads the stored INT8/INT4/FP8 weight (``fold_weights``).
* QDQ: an activation's ``DequantizeLinear`` is fused into the operators that read it (the GEMM's
  prologue reads the quantized tensor; a vector operator converts on load), and a ``QuantizeLinear``
  of a computed tensor into the operator that makes it (requantization in the GEMM's epilogue, or the
  vector operator's store). What stays: the ``QuantizeLinear`` of a graph input (the model's input
  conversion, one real pass) and a ``DequantizeLinear`` that is itself a graph output, unless it
  follows a fused ``QuantizeLinear`` (the pair is the producer's store writing float).
* ``quantize_dynamic``: ``MatMulInteger``/``ConvInteger`` are GEMMs; the ``Cast`` to float and the
  ``Mul`` by the scales that follow one of them, read nothing but its output and a per-channel
  scale, are the GEMM's epilogue. ``DynamicQuantizeLinear`` is a min/max reduction and a scale pass
  (:data:`sim.importers.onnx.opclasses.OP_CLASSES`). When every reader of its quantized output is an
  integer GEMM, the scale pass (multiply, round, add the zero point, clip) is that GEMM's operand
  load, as the float export's activations are converted entering the same INT8 array: only the
  min/max reduction and the scalar scale arithmetic, the work a static scale does not need, stay on
  the vector unit (``quantize_on_load``).
* QOperator: QLinearMatMul, QLinearConv and QGemm are GEMMs; the other QLinear operators are their
  float counterparts (:data:`sim.importers.onnx.contrib.QLINEAR_VECTOR`).
"""

from __future__ import annotations

import math
from dataclasses import dataclass, field

#: ONNX TensorProto element types of quantized operands -> the operand format (hw.precision names).
#: The numbers are the onnx.proto ``TensorProto.DataType`` enum values (INT8 3, UINT8 2, UINT4 21,
#: INT4 22, FLOAT8E4M3FN 17, FLOAT8E4M3FNUZ 18, FLOAT8E5M2 19, FLOAT8E5M2FNUZ 20).
QUANTIZED_TYPES = {
    3: "int8",
    2: "int8",
    22: "int4",
    21: "int4",
    17: "fp8-e4m3",
    18: "fp8-e4m3",
    19: "fp8-e5m2",
    20: "fp8-e5m2",
}
#: Operators whose output is a weight when every input is one (folded before inference runs).
FOLDABLE = {
    "DequantizeLinear",
    "Cast",
    "Transpose",
    "Reshape",
    "Identity",
    "Squeeze",
    "Unsqueeze",
    "Flatten",
    "QuantizeLinear",
}
#: Integer GEMMs whose float rescale (Cast, Mul by the scales) is their epilogue.
INTEGER_GEMMS = {"MatMulInteger", "ConvInteger"}
_EPILOGUE = {"Cast", "Mul"}


@dataclass
class Lowering:
    """What the lowering pass decided: node indices not costed, and what it found."""

    #: indices of nodes fused into a neighbour (not costed on their own)
    fused: set[int] = field(default_factory=set)
    #: activations behind a DequantizeLinear -> their quantized format
    aq: dict[str, str] = field(default_factory=dict)
    fused_qdq: list[str] = field(default_factory=list)
    fused_epilogue: list[str] = field(default_factory=list)
    #: DynamicQuantizeLinear nodes (by name) whose scale pass is their integer GEMMs' operand load
    quantize_on_load: list[str] = field(default_factory=list)


def fold_weights(g, weights: dict, wq: dict[str, str], shapes: dict) -> set[int]:
    """The nodes folded at load time; their outputs join ``weights`` (and ``wq``, their quantized format)."""
    folded: set[int] = set()
    for idx, node in enumerate(g.node):
        ins = [x for x in node.input if x]
        if (
            node.domain in ("", "ai.onnx", "com.microsoft")
            and node.op_type in FOLDABLE
            and ins
            and all(x in weights for x in ins)
        ):
            folded.add(idx)
            for o in node.output:
                if o and shapes.get(o) is not None and all(isinstance(x, int) for x in shapes[o]):
                    weights[o] = tuple(shapes[o])
                    if ins[0] in wq:
                        wq[o] = wq[ins[0]]
    return folded


def _small(shape, out_shape) -> bool:
    """A scale: a scalar, or a vector no longer than the output's channels (per-channel)."""
    if shape is None:
        return False
    n = math.prod(int(x) for x in shape if isinstance(x, int))
    return n <= max(1, max((int(x) for x in (out_shape or [1]) if isinstance(x, int)), default=1))


def lower(g, folded: set[int], elem: dict, weights: dict, shapes: dict) -> Lowering:
    """The fusion decisions over the nodes not folded (see the module docstring)."""
    out = Lowering()
    producer: dict[str, int] = {}
    consumers: dict[str, list[int]] = {}
    for idx, node in enumerate(g.node):
        if idx in folded:
            continue
        for o in node.output:
            if o:
                producer[o] = idx
        for x in node.input:
            if x:
                consumers.setdefault(x, []).append(idx)
    graph_out = {o.name for o in g.output}
    epilogue_of: set[str] = set()  # tensors made by an integer GEMM or its fused epilogue
    requantized: set[str] = set()  # outputs of the QuantizeLinear nodes fused into their producer
    for idx, node in enumerate(g.node):
        if idx in folded or node.domain not in ("", "ai.onnx", "com.microsoft"):
            continue
        op, o = node.op_type, (node.output[0] if node.output else "")
        if op == "DequantizeLinear" and o:
            t = QUANTIZED_TYPES.get(elem.get(node.input[0], 0))
            if t:
                out.aq[o] = t
            # into its consumers; or, a graph output behind a fused Q (a Q -> DQ pair after an operator),
            # into that operator's store, which then writes the float output
            if (consumers.get(o) and o not in graph_out) or node.input[0] in requantized:
                out.fused.add(idx)
                out.fused_qdq.append(node.name or o)
        elif op == "QuantizeLinear" and o:
            if node.input[0] in producer and node.input[0] not in weights:
                requantized.add(o)
                out.fused.add(idx)
                out.fused_qdq.append(node.name or o)
        elif op == "DynamicQuantizeLinear" and o:
            readers = [g.node[i] for i in consumers.get(o, [])]
            if (
                readers
                and o not in graph_out
                and all(r.op_type in INTEGER_GEMMS and r.input[0] == o for r in readers)
            ):
                out.quantize_on_load.append(node.name or o)
        elif op in INTEGER_GEMMS and o:
            epilogue_of.add(o)
        elif op in _EPILOGUE and o:
            acts = [x for x in node.input if x and x not in weights]
            fed = [x for x in acts if x in epilogue_of]
            rest = [x for x in node.input if x and x not in fed]
            single = all(len(consumers.get(x, [])) == 1 for x in fed)
            if len(fed) == 1 and single and all(_small(shapes.get(x), shapes.get(o)) for x in rest):
                out.fused.add(idx)
                out.fused_epilogue.append(node.name or o)
                epilogue_of.add(o)
    return out
