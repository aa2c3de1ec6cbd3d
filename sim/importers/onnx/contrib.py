"""The com.microsoft operators onnxruntime's quantizer emits, typed from their schemas.

ONNX shape inference has no schema for the com.microsoft domain, so the outputs of a QOperator
model's QLinearAdd, QGemm, QLinearSoftmax ... would stay untyped and every shape after them
unknown. :func:`typing_surrogate` gives shape inference a copy of the graph in which each such
node is replaced by standard operators with the same output shape and element type, read off the
operator's schema in onnxruntime's ``docs/ContribOperators.md`` [P]:

* ``QLinearAdd``/``QLinearMul`` (A, A_scale, A_zp, B, B_scale, B_zp, C_scale, C_zp): numpy broadcast of
  A and B, C_zp's type;
* ``QLinearSigmoid``/``QLinearLeakyRelu``/``QLinearSoftmax`` (X, X_scale, X_zp, Y_scale, Y_zp): X's
  shape, Y_zp's type;
* ``QLinearConcat`` (Y_scale, Y_zp, then (X, X_scale, X_zp) per input; ``axis``): Concat of the Xs;
* ``QLinearGlobalAveragePool`` / ``QLinearAveragePool`` (X, X_scale, X_zp, Y_scale, Y_zp;
  ``channels_last``, the pooling attributes): GlobalAveragePool / AveragePool of X, Y_zp's type;
* ``QGemm`` (A, A_scale, A_zp, B, B_scale, B_zp, C, Y_scale, Y_zp; ``transA``, ``transB``): the
  (M, N) product, Y_zp's type (float when there is no Y_scale);
* ``QuantizeLinear``/``DequantizeLinear`` of the com.microsoft domain: the ai.onnx ones;
* ``Gelu``, ``FastGelu``, ``BiasGelu``, ``QuickGelu``: element-wise, X's shape and type.

Where a zero point is absent, the type is uint8, the quantizer's default activation type [P]
onnxruntime.quantization ``quantize_static(activation_type=QuantType.QUInt8)``.
"""

from __future__ import annotations

#: com.microsoft operator -> the float operator it costs as on the vector unit (quant.py and the
#: mapping read this), and the indices of its data inputs (the rest are scales and zero points).
QLINEAR_VECTOR = {
    "QLinearAdd": ("Add", (0, 3)),
    "QLinearMul": ("Mul", (0, 3)),
    "QLinearSigmoid": ("Sigmoid", (0,)),
    "QLinearLeakyRelu": ("LeakyRelu", (0,)),
    "QLinearSoftmax": ("Softmax", (0,)),
    "QLinearGlobalAveragePool": ("GlobalAveragePool", (0,)),
    "QLinearAveragePool": ("AveragePool", (0,)),
    "QLinearConcat": ("Concat", None),  # None: every third input from index 2
}
#: com.microsoft element-wise float operators (onnxruntime's fused transformer ops): shape of input 0.
ELEMENTWISE = {"Gelu", "FastGelu", "BiasGelu", "QuickGelu"}
_FLOAT, _UINT8 = 1, 2


def qlinear_data_inputs(op: str, inputs: list[str]) -> list[str]:
    """The data (not scale / zero-point) inputs of a QLinear vector operator."""
    idx = QLINEAR_VECTOR[op][1]
    if idx is None:
        return [x for i, x in enumerate(inputs) if i >= 2 and (i - 2) % 3 == 0 and x]
    return [inputs[i] for i in idx if i < len(inputs) and inputs[i]]


def _zp_types(onnx, g) -> dict[str, int]:
    out = {t.name: int(t.data_type) for t in g.initializer}
    for n in g.node:
        if n.op_type == "Constant" and n.output:
            for a in n.attribute:
                if a.name == "value":
                    out[n.output[0]] = int(a.t.data_type)
    return out


def _surrogate(onnx, node, types: dict, fresh) -> list | None:
    """Standard nodes with ``node``'s output names, shapes and types (None: leave the node)."""
    h, op, ins, out = onnx.helper, node.op_type, list(node.input), node.output[0]
    attrs = {a.name: onnx.helper.get_attribute_value(a) for a in node.attribute}

    def zp_type(i: int, default: int = _UINT8) -> int:
        return types.get(ins[i], default) if i < len(ins) and ins[i] else default

    def cast(x, to):
        y = fresh()
        return y, h.make_node("Cast", [x], [y], to=to)

    if op in ("QuantizeLinear", "DequantizeLinear"):
        return [h.make_node(op, ins, list(node.output), **{k: v for k, v in attrs.items() if k == "axis"})]
    if op in ELEMENTWISE:
        return [h.make_node("Identity", [ins[0]], [out])]
    if op in ("QLinearAdd", "QLinearMul"):
        (a, ca), (b, cb), s = cast(ins[0], _FLOAT), cast(ins[3], _FLOAT), fresh()
        return [ca, cb, h.make_node("Add", [a, b], [s]), h.make_node("Cast", [s], [out], to=zp_type(7))]
    if op in ("QLinearSigmoid", "QLinearLeakyRelu", "QLinearSoftmax"):
        return [h.make_node("Cast", [ins[0]], [out], to=zp_type(4))]
    if op == "QLinearConcat":
        return [h.make_node("Concat", qlinear_data_inputs(op, ins), [out], axis=int(attrs.get("axis", 0)))]
    if op in ("QLinearGlobalAveragePool", "QLinearAveragePool"):
        nodes, x = [], ins[0]
        x, c = cast(x, _FLOAT)
        nodes.append(c)
        last = int(attrs.get("channels_last", 0))
        if last:  # NHWC images
            t = fresh()
            nodes.append(h.make_node("Transpose", [x], [t], perm=[0, 3, 1, 2]))
            x = t
        p = fresh()
        keep = {
            k: v
            for k, v in attrs.items()
            if k in ("auto_pad", "ceil_mode", "count_include_pad", "kernel_shape", "pads", "strides")
        }
        nodes.append(
            h.make_node(
                "GlobalAveragePool" if op == "QLinearGlobalAveragePool" else "AveragePool", [x], [p], **keep
            )
        )
        if last:
            t = fresh()
            nodes.append(h.make_node("Transpose", [p], [t], perm=[0, 2, 3, 1]))
            p = t
        return nodes + [h.make_node("Cast", [p], [out], to=zp_type(4))]
    if op == "QGemm":
        nodes, a, b = [], ins[0], ins[3]
        for flag, name in (("transA", "a"), ("transB", "b")):
            if attrs.get(flag, 0):
                t = fresh()
                nodes.append(h.make_node("Transpose", [a if name == "a" else b], [t], perm=[1, 0]))
                a, b = (t, b) if name == "a" else (a, t)
        (ca, c1), (cb, c2), p = cast(a, _FLOAT), cast(b, _FLOAT), fresh()
        to = zp_type(8) if len(ins) > 7 and ins[7] else _FLOAT
        return nodes + [c1, c2, h.make_node("MatMul", [ca, cb], [p]), h.make_node("Cast", [p], [out], to=to)]
    return None


def typing_surrogate(onnx, model):
    """``model`` with its com.microsoft operators replaced by standard ones of the same output types
    (the model itself when it has none). For shape inference only: nothing is costed from it."""
    g = model.graph
    if not any(n.domain == "com.microsoft" for n in g.node):
        return model
    m = onnx.ModelProto()
    m.CopyFrom(model)
    types = _zp_types(onnx, m.graph)
    counter = [0]

    def fresh() -> str:
        counter[0] += 1
        return f"__sparsepe_typing_{counter[0]}"

    new = []
    for node in m.graph.node:
        rep = _surrogate(onnx, node, types, fresh) if node.domain == "com.microsoft" else None
        new.extend(rep if rep is not None else [node])
    del m.graph.node[:]
    m.graph.node.extend(new)
    return m
