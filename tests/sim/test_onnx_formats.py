"""ONNX graph preparation and quantized formats: the export patterns of issue 36 built with onnx.helper.

Each graph reproduces what an exporter writes (torch's TorchScript exporter's shape arithmetic,
onnxruntime's QDQ / QOperator / quantize_dynamic output, transformers' batched_mm experts); the
expected GEMM shapes and MACs are computed here from the graph's own dimensions."""

import numpy as np
import pytest

onnx = pytest.importorskip("onnx")
from onnx import TensorProto, helper, numpy_helper  # noqa: E402

from hw.errors import InputError  # noqa: E402
from sim.importers.onnx import load_onnx  # noqa: E402
from sim.perf import ArrayConfig, simulate  # noqa: E402

F, I64 = TensorProto.FLOAT, TensorProto.INT64


def _arr(name, a):
    return numpy_helper.from_array(np.asarray(a), name)


def _save(path, nodes, inputs, inits=(), *, opset=17, outputs=None, domains=()):
    outs = outputs or [helper.make_tensor_value_info(nodes[-1].output[0], TensorProto.UNDEFINED, None)]
    graph = helper.make_graph(nodes, path.stem, inputs, outs, list(inits))
    ops = [helper.make_opsetid("", opset)] + [helper.make_opsetid(d, 1) for d in domains]
    onnx.save(helper.make_model(graph, opset_imports=ops), str(path))
    return path


def _macs(w):
    return sum(layer.dense_macs for layer in w.layers)


def _n(op, ins, outs, name=None, **kw):
    return helper.make_node(op, ins, outs, name=name or outs[0], **kw)


def test_shape_gather_range_positions_fold(tmp_path):
    """position_ids = arange(input_ids.size(1)): Shape -> Gather -> Range -> Unsqueeze -> Gather(pos_emb),
    as the TorchScript exporter writes it, with dynamic axes. ONNX shape inference alone leaves the
    Range output's length unknown; folded, the MatMul is (B*S) x 48 x 32."""
    B, S, D, N = 2, 16, 32, 48
    ids = helper.make_tensor_value_info("ids", I64, ["batch", "seq"])
    inits = [
        _arr("tok", np.zeros((100, D), np.float32)),
        _arr("pos", np.zeros((64, D), np.float32)),
        _arr("one", np.array(1, np.int64)),
        _arr("zero", np.array(0, np.int64)),
        _arr("ax0", np.array([0], np.int64)),
        _arr("w", np.zeros((D, N), np.float32)),
    ]
    nodes = [
        _n("Shape", ["ids"], ["s"]),
        _n("Gather", ["s", "one"], ["n"], axis=0),
        _n("Range", ["zero", "n", "one"], ["r"]),
        _n("Unsqueeze", ["r", "ax0"], ["pid"]),
        _n("Gather", ["pos", "pid"], ["pe"]),
        _n("Gather", ["tok", "ids"], ["te"]),
        _n("Add", ["te", "pe"], ["e"]),
        _n("MatMul", ["e", "w"], ["y"], name="proj"),
    ]
    path = _save(tmp_path / "range.onnx", nodes, [ids], inits)
    w = load_onnx(path, {"ids": (B, S)})
    (L,) = w.layers
    assert (L.M, L.N, L.K) == (B * S, N, D) and _macs(w) == B * S * D * N
    # shape inference without the folding does not resolve it (the failure of issue 36)
    m = onnx.load(str(path))
    for d, v in zip(m.graph.input[0].type.tensor_type.shape.dim, (B, S), strict=True):
        d.dim_value = v
    inf = onnx.shape_inference.infer_shapes(m, data_prop=False)
    r = next(vi for vi in inf.graph.value_info if vi.name == "r")
    assert not r.type.tensor_type.shape.dim[0].HasField("dim_value")


def test_constant_of_shape_where_expand_folds(tmp_path):
    """buffered_token_type_ids.expand(batch, -1): Concat(batch, -1) -> Where(Equal(shape,
    ConstantOfShape * -1), ConstantOfShape, shape) -> Expand, then Gather of the type embedding."""
    B, S, D, N = 3, 16, 32, 8
    ids = helper.make_tensor_value_info("ids", I64, ["batch", S])
    inits = [
        _arr("buf", np.zeros((1, S), np.int64)),
        _arr("types", np.zeros((2, D), np.float32)),
        _arr("zero", np.array(0, np.int64)),
        _arr("ax0", np.array([0], np.int64)),
        _arr("minus1", np.array([-1], np.int64)),
        _arr("two", np.array([2], np.int64)),
        _arr("neg", np.array(-1, np.int64)),
        _arr("w", np.zeros((D, N), np.float32)),
    ]
    nodes = [
        _n("Shape", ["ids"], ["s"]),
        _n("Gather", ["s", "zero"], ["b"], axis=0),
        _n("Unsqueeze", ["b", "ax0"], ["b1"]),
        _n("Concat", ["b1", "minus1"], ["shp"], axis=0),
        _n("ConstantOfShape", ["two"], ["ones"], value=_arr("v", np.array([1], np.int64))),
        _n("Mul", ["ones", "neg"], ["m"]),
        _n("Equal", ["shp", "m"], ["eq"]),
        _n("Where", ["eq", "ones", "shp"], ["target"]),
        _n("Expand", ["buf", "target"], ["tt"]),
        _n("Gather", ["types", "tt"], ["te"]),
        _n("Gather", ["types", "ids"], ["ie"]),
        _n("Add", ["te", "ie"], ["e"]),
        _n("MatMul", ["e", "w"], ["y"], name="proj"),
    ]
    w = load_onnx(_save(tmp_path / "expand.onnx", nodes, [ids], inits), {"ids": (B, S)})
    (L,) = w.layers
    assert (L.M, L.N, L.K) == (B * S, N, D) and _macs(w) == B * S * D * N
    # the expanded token types are a constant (folded); the ids' Gather and the Add remain
    ops = {o.name: o for o in w.vector_ops}
    assert set(ops) == {"ie", "e"} and ops["e"].elements == B * S * D


def test_expand_of_computed_shape(tmp_path):
    """A bias broadcast to Shape(x) with Expand: [B, S, D] after folding."""
    B, S, D = 2, 8, 32
    x = helper.make_tensor_value_info("x", F, ["b", "s", D])
    nodes = [
        _n("Shape", ["x"], ["sx"]),
        _n("Expand", ["bias", "sx"], ["e"]),
        _n("Add", ["x", "e"], ["a"]),
        _n("MatMul", ["a", "w"], ["y"], name="proj"),
    ]
    w = load_onnx(
        _save(
            tmp_path / "ex.onnx",
            nodes,
            [x],
            [_arr("bias", np.zeros(D, np.float32)), _arr("w", np.zeros((D, 16), np.float32))],
        ),
        {"x": (B, S, D)},
    )
    assert [(layer.M, layer.N, layer.K) for layer in w.layers] == [(B * S, 16, D)]
    assert {o.name: o.elements for o in w.vector_ops}["a"] == B * S * D


def test_unresolved_dims_name_the_chain_and_never_ask_for_a_given_input(tmp_path):
    """A length computed from the input's *values* (data-dependent: no folding can know it)."""
    x = helper.make_tensor_value_info("x", F, [1, 16])
    nodes = [
        _n("ReduceMax", ["x"], ["mx"], keepdims=0),
        _n("Cast", ["mx"], ["n"], to=I64),
        _n("Range", ["zero", "n", "one"], ["r"]),
        _n("Cast", ["r"], ["rf"], to=F),
        _n("Unsqueeze", ["rf", "ax"], ["u"]),
        _n("MatMul", ["u", "w"], ["y"], name="proj"),
    ]
    inits = [
        _arr("zero", np.array(0, np.int64)),
        _arr("one", np.array(1, np.int64)),
        _arr("ax", np.array([1], np.int64)),
        _arr("w", np.zeros((1, 8), np.float32)),
    ]
    path = _save(tmp_path / "dd.onnx", nodes, [x], inits)
    with pytest.raises(InputError) as e:
        load_onnx(path, {"x": (1, 16)})
    msg = str(e.value)
    assert "graph input 'x'" in msg and "ReduceMax 'mx' -> Cast 'n' -> Range 'r'" in msg
    assert "first unresolved value is the output of Range 'r'" in msg
    assert "was given as 1x16" in msg and "give --input-shape" not in msg


def _q(name, x, s, z, out):
    return _n("QuantizeLinear", [x, s, z], [out], name=name)


def _dq(name, x, s, z, out):
    return _n("DequantizeLinear", [x, s, z], [out], name=name)


def _qdq_chain(tmp_path, quantized: bool):
    """x -> MatMul(W1) -> Relu -> MatMul(W2), float or QDQ (onnxruntime's QDQ format)."""
    M, K, H, N = 64, 64, 1024, 1024
    x = helper.make_tensor_value_info("x", F, [M, K])
    sc = [
        _arr("s", np.float32(0.05)),
        _arr("z", np.uint8(128)),
        _arr("ws", np.float32(0.01)),
        _arr("wz", np.int8(0)),
    ]
    if not quantized:
        nodes = [
            _n("MatMul", ["x", "w1"], ["h"], name="fc1"),
            _n("Relu", ["h"], ["r"], name="relu"),
            _n("MatMul", ["r", "w2"], ["y"], name="fc2"),
        ]
        inits = [_arr("w1", np.zeros((K, H), np.float32)), _arr("w2", np.zeros((H, N), np.float32))]
        return _save(tmp_path / "float.onnx", nodes, [x], inits)
    inits = sc + [_arr("w1q", np.zeros((K, H), np.int8)), _arr("w2q", np.zeros((H, N), np.int8))]
    nodes = [
        _q("q_x", "x", "s", "z", "xq"),
        _dq("dq_x", "xq", "s", "z", "xd"),
        _dq("dq_w1", "w1q", "ws", "wz", "w1"),
        _n("MatMul", ["xd", "w1"], ["h"], name="fc1"),
        _q("q_h", "h", "s", "z", "hq"),
        _dq("dq_h", "hq", "s", "z", "hd"),
        _n("Relu", ["hd"], ["r"], name="relu"),
        _q("q_r", "r", "s", "z", "rq"),
        _dq("dq_r", "rq", "s", "z", "rd"),
        _dq("dq_w2", "w2q", "ws", "wz", "w2"),
        _n("MatMul", ["rd", "w2"], ["y"], name="fc2"),
        _q("q_y", "y", "s", "z", "yq"),
        _dq("dq_y", "yq", "s", "z", "out"),
    ]
    return _save(tmp_path / "qdq.onnx", nodes, [x], inits)


def test_qdq_gemm_chain_fuses_into_the_int8_array_path(tmp_path):
    fl, qd = load_onnx(_qdq_chain(tmp_path, False)), load_onnx(_qdq_chain(tmp_path, True))

    def shape(w):
        return [(layer.name, layer.M, layer.N, layer.K, layer.sparsifiable) for layer in w.layers]

    assert shape(fl) == shape(qd) and _macs(fl) == _macs(qd) == 64 * 64 * 1024 + 64 * 1024 * 1024
    assert {layer.precision for layer in qd.layers} == {"int8"} and {
        layer.precision for layer in fl.layers
    } == {None}
    rep = qd.import_report["fused_qdq"]
    # every activation Q/DQ but the input's quantization is fused (the last Q -> DQ pair into fc2's store)
    assert (
        sorted(rep["names"]) == sorted(["dq_x", "q_h", "dq_h", "q_r", "dq_r", "q_y", "dq_y"])
        and rep["count"] == 7
    )
    assert sorted(o.name for o in qd.vector_ops) == ["q_x", "relu"]
    arch = ArrayConfig()
    rf, rq = simulate(fl, arch), simulate(qd, arch)
    assert rq.total_cycles <= 1.25 * rf.total_cycles
    assert abs(rq.effective_speedup - rf.effective_speedup) <= 0.05
    d = rq.to_dict()
    assert d["fused_qdq"]["count"] == 7 and {r["precision"] for r in d["layers"]} == {"int8"}


def test_dynamic_quantize_linear_is_a_reduction_and_a_scale_pass_on_load(tmp_path):
    """quantize_dynamic's MatMul: DynamicQuantizeLinear -> MatMulInteger -> Cast -> Mul(scales) -> Add(bias)."""
    M, K, N = 32, 64, 96
    x = helper.make_tensor_value_info("x", F, [M, K])
    inits = [
        _arr("wq", np.zeros((K, N), np.int8)),
        _arr("wz", np.int8(0)),
        _arr("ws", np.float32(0.01)),
        _arr("b", np.zeros(N, np.float32)),
    ]
    nodes = [
        _n("DynamicQuantizeLinear", ["x"], ["xq", "xs", "xz"], name="dql"),
        _n("MatMulInteger", ["xq", "wq", "xz", "wz"], ["acc"], name="mmi"),
        _n("Mul", ["xs", "ws"], ["scale"], name="scale"),
        _n("Cast", ["acc"], ["accf"], name="cast", to=F),
        _n("Mul", ["accf", "scale"], ["yf"], name="rescale"),
        _n("Add", ["yf", "b"], ["y"], name="bias"),
    ]
    w = load_onnx(_save(tmp_path / "dyn.onnx", nodes, [x], inits))
    (L,) = w.layers
    assert (L.M, L.N, L.K, L.precision) == (M, N, K, "int8") and _macs(w) == M * N * K
    assert w.import_report["fused_epilogue"]["names"] == ["cast", "rescale"]
    ops = {o.name: o for o in w.vector_ops}
    assert set(ops) == {"dql", "scale", "bias"} and not w.unsupported_ops
    d = ops["dql"]
    # [D] a min and a max over all M*K inputs; its only reader is an integer GEMM, so the scale pass
    # (multiply, round, add, clip) is that GEMM's operand load: 4 scalar ALU ops (scale, zero point) remain
    assert (d.red, d.alu, d.elements) == (2 * M * K, 4, M * K) and d.supported
    assert w.import_report["quantize_on_load"] == {"count": 1, "names": ["dql"]}
    # read by something other than an integer GEMM (here also the graph's output), the pass stays
    alone = load_onnx(_save(tmp_path / "dql_alone.onnx", nodes[:1], [x]))
    (da,) = alone.vector_ops
    assert (da.red, da.alu) == (2 * M * K, 4 * M * K + 4) and alone.import_report["quantize_on_load"][
        "count"
    ] == 0
    q = {
        o.name: o
        for o in load_onnx(
            _save(
                tmp_path / "q.onnx",
                [_n("QuantizeLinear", ["x", "ws", "wz"], ["y"], name="q")],
                [x],
                inits[:3],
            )
        ).vector_ops
    }["q"]
    r = simulate(w, ArrayConfig())
    cyc = dict(zip([o.name for o in r.vector_ops], r.vector["vector_op_cycles"], strict=True))
    # standalone it is more work than a QuantizeLinear of a known scale (which has no reductions)
    assert da.ops > q.ops and cyc["dql"] > 0


def _qop_graph(tmp_path):
    """onnxruntime's QOperator output around a small CNN block: QLinearConv -> QLinearAdd (residual)
    -> QLinearSigmoid -> QLinearMul -> QLinearLeakyRelu -> QLinearAveragePool -> QLinearConcat ->
    QLinearGlobalAveragePool -> QGemm (transB) -> QLinearSoftmax; uint8 activations, int8 weights."""
    B, C, Hh, F_, NC = 2, 16, 8, 16, 10
    x = helper.make_tensor_value_info("x", TensorProto.UINT8, [B, C, Hh, Hh])
    s, z, ws, wz = "s", "z", "ws", "wz"
    inits = [
        _arr(s, np.float32(0.05)),
        _arr(z, np.uint8(128)),
        _arr(ws, np.float32(0.01)),
        _arr(wz, np.int8(0)),
        _arr("cw", np.zeros((F_, C, 3, 3), np.int8)),
        _arr("cb", np.zeros(F_, np.int32)),
        _arr("gw", np.zeros((NC, 2 * F_), np.int8)),
        _arr("gb", np.zeros(NC, np.int32)),
    ]
    ms = dict(domain="com.microsoft")
    nodes = [
        _n("QLinearConv", ["x", s, z, "cw", ws, wz, s, z, "cb"], ["c"], name="conv", pads=[1, 1, 1, 1]),
        _n("QLinearAdd", ["c", s, z, "x", s, z, s, z], ["res"], name="add", **ms),
        _n("QLinearSigmoid", ["res", s, z, s, z], ["sg"], name="sigmoid", **ms),
        _n("QLinearMul", ["res", s, z, "sg", s, z, s, z], ["sw"], name="mul", **ms),
        _n("QLinearLeakyRelu", ["sw", s, z, s, z], ["lr"], name="leaky", alpha=0.1, **ms),
        _n(
            "QLinearAveragePool",
            ["lr", s, z, s, z],
            ["ap"],
            name="avgpool",
            kernel_shape=[2, 2],
            strides=[2, 2],
            **ms,
        ),
        _n("QLinearConcat", [s, z, "ap", s, z, "ap", s, z], ["cat"], name="concat", axis=1, **ms),
        _n("QLinearGlobalAveragePool", ["cat", s, z, s, z], ["gap"], name="gap", channels_last=0, **ms),
        _n("Reshape", ["gap", "flat"], ["f"], name="flatten"),
        _n("QGemm", ["f", s, z, "gw", ws, wz, "gb", s, z], ["logits"], name="fc", transB=1, **ms),
        _n("QLinearSoftmax", ["logits", s, z, s, z], ["p"], name="softmax", axis=-1, opset=13, **ms),
    ]
    inits.append(_arr("flat", np.array([B, 2 * F_], np.int64)))
    path = _save(tmp_path / "qop.onnx", nodes, [x], inits, domains=("com.microsoft",))
    return path, (B, C, Hh, F_, NC)


def test_qoperator_contrib_ops_are_typed_and_costed_as_their_float_counterparts(tmp_path):
    path, (B, C, Hh, F_, NC) = _qop_graph(tmp_path)
    w = load_onnx(path)
    L = {layer.name: layer for layer in w.layers}
    assert (L["conv"].M, L["conv"].N, L["conv"].K) == (B * Hh * Hh, F_, C * 9)
    # QGemm is a GEMM (not an element-wise op): B x NC x 2F, its weight (NC, 2F) torch layout
    assert (L["fc"].kind, L["fc"].M, L["fc"].N, L["fc"].K, L["fc"].weight_shape) == (
        "gemm",
        B,
        NC,
        2 * F_,
        (NC, 2 * F_),
    )
    assert {layer.precision for layer in w.layers} == {"int8"}
    assert _macs(w) == B * Hh * Hh * F_ * C * 9 + B * NC * 2 * F_
    ops = {o.name: o for o in w.vector_ops}
    want = {
        "add": ("Add", B * F_ * Hh * Hh),
        "sigmoid": ("Sigmoid", B * F_ * Hh * Hh),
        "mul": ("Mul", B * F_ * Hh * Hh),
        "leaky": ("LeakyRelu", B * F_ * Hh * Hh),
        "avgpool": ("AveragePool", B * F_ * (Hh // 2) ** 2),
        "concat": ("Concat", B * 2 * F_ * (Hh // 2) ** 2),
        "gap": ("GlobalAveragePool", B * 2 * F_),
        "softmax": ("Softmax", B * NC),
    }
    for name, (op, elements) in want.items():
        assert (ops[name].op_type, ops[name].elements, ops[name].supported) == (op, elements, True), name
    assert ops["avgpool"].alu > 0 and ops["sigmoid"].exp == B * F_ * Hh * Hh and not w.unsupported_ops


def test_shape_arithmetic_after_a_qlinear_op_folds_with_dynamic_axes(tmp_path):
    """BERT's QOperator export with dynamic axes: positions = arange(seq) read off the LayerNorm after a
    QLinearAdd (Shape -> Gather -> Range), twice deep: a second QLinearMul after the first Range's
    consumer feeds another Shape -> Gather -> Range. The folding knows no com.microsoft schema, so the
    shapes behind them come from the typing surrogate, one round per layer of QLinear outputs."""
    B, S, D, N = 2, 16, 32, 48
    ids = helper.make_tensor_value_info("ids", I64, ["batch", "seq"])
    s, z = "s", "z"
    inits = [
        _arr("tok", np.zeros((100, D), np.uint8)),
        _arr("pos", np.zeros((64, D), np.float32)),
        _arr(s, np.float32(0.05)),
        _arr(z, np.uint8(128)),
        _arr("one", np.array(1, np.int64)),
        _arr("zero", np.array(0, np.int64)),
        _arr("ax0", np.array([0], np.int64)),
        _arr("g", np.ones(D, np.float32)),
        _arr("w", np.zeros((D, N), np.float32)),
    ]
    ms = dict(domain="com.microsoft")
    nodes = [
        _n("Gather", ["tok", "ids"], ["te"]),
        _n("QLinearAdd", ["te", s, z, "te", s, z, s, z], ["qa"], name="add", **ms),
        _dq("dq", "qa", s, z, "e"),
        _n("LayerNormalization", ["e", "g"], ["ln"], axis=-1),
        _n("Shape", ["ln"], ["sh"]),
        _n("Gather", ["sh", "one"], ["n"], axis=0),
        _n("Range", ["zero", "n", "one"], ["r"]),
        _n("Unsqueeze", ["r", "ax0"], ["pid"]),
        _n("Gather", ["pos", "pid"], ["pe"]),
        _n("Add", ["ln", "pe"], ["h"]),
        _q("q2", "h", s, z, "qh"),
        _n("QLinearMul", ["qh", s, z, "qh", s, z, s, z], ["qm"], name="mul", **ms),
        _dq("dq2", "qm", s, z, "m"),
        _n("Shape", ["m"], ["sh2"]),
        _n("Gather", ["sh2", "one"], ["n2"], axis=0),
        _n("Range", ["zero", "n2", "one"], ["r2"]),
        _n("Unsqueeze", ["r2", "ax0"], ["pid2"]),
        _n("Gather", ["pos", "pid2"], ["pe2"]),
        _n("Add", ["m", "pe2"], ["h2"]),
        _n("MatMul", ["h2", "w"], ["y"], name="proj"),
    ]
    path = _save(tmp_path / "qop_range.onnx", nodes, [ids], inits, domains=("com.microsoft",))
    w = load_onnx(path, {"ids": (B, S)})
    (L,) = w.layers
    assert (L.M, L.N, L.K) == (B * S, N, D) and _macs(w) == B * S * D * N
    ops = {o.name: o for o in w.vector_ops}
    assert (ops["add"].op_type, ops["add"].elements) == ("Add", B * S * D)
    assert (ops["mul"].op_type, ops["mul"].elements) == ("Mul", B * S * D)


def test_qgemm_alone_matches_gemm(tmp_path):
    M, K, N = 8, 64, 32
    a = helper.make_tensor_value_info("a", TensorProto.UINT8, [K, M])  # transA
    inits = [
        _arr("s", np.float32(0.1)),
        _arr("z", np.uint8(128)),
        _arr("b", np.zeros((K, N), np.int8)),
        _arr("bz", np.int8(0)),
    ]
    node = _n("QGemm", ["a", "s", "z", "b", "s", "bz"], ["y"], name="qg", transA=1, domain="com.microsoft")
    w = load_onnx(_save(tmp_path / "qg.onnx", [node], [a], inits, domains=("com.microsoft",)))
    (L,) = w.layers
    assert (L.M, L.N, L.K, L.weight_shape, L.precision) == (M, N, K, (N, K), "int8") and not w.vector_ops


def test_gathered_experts_with_batched_matmul_are_weight_gemms(tmp_path):
    """transformers' batched_mm experts: router -> TopK(k=2) -> ids; W[E, K, N][ids] -> batched MatMul
    over the S = T*k token-expert pairs. The experts are weights and 2:4 targets."""
    T, D, E, k, Fd = 16, 256, 8, 2, 128
    x = helper.make_tensor_value_info("x", F, [T, D])
    inits = [
        _arr("router", np.zeros((D, E), np.float32)),
        _arr("k", np.array([k], np.int64)),
        _arr("up", np.zeros((E, D, Fd), np.float32)),
        _arr("flat", np.array([-1], np.int64)),
        _arr("rows", np.array([T * k, 1, D], np.int64)),
        _arr("rep", np.array([T, k, D], np.int64)),
        _arr("ax1", np.array([1], np.int64)),
    ]
    nodes = [
        _n("MatMul", ["x", "router"], ["logits"], name="router"),
        _n("TopK", ["logits", "k"], ["vals", "idx"], name="topk"),
        _n("Reshape", ["idx", "flat"], ["ids"], name="ids"),
        _n("Gather", ["up", "ids"], ["wsel"], name="gather_up", axis=0),
        _n("Unsqueeze", ["x", "ax1"], ["xu"]),
        _n("Expand", ["xu", "rep"], ["xr"]),
        _n("Reshape", ["xr", "rows"], ["xs"]),
        _n("MatMul", ["xs", "wsel"], ["y"], name="up_proj"),
    ]
    w = load_onnx(_save(tmp_path / "moe.onnx", nodes, [x], inits))
    ups = [layer for layer in w.layers if layer.name.startswith("up_proj")]
    assert ups and all(
        layer.kind == "gemm" and layer.sparsifiable and layer.weight_shape == (Fd, D) for layer in ups
    )
    assert (
        sum(layer.M * layer.count for layer in ups) == T * k
        and sum(layer.dense_macs for layer in ups) == T * k * D * Fd
    )
    # the experts the 16 tokens touch: round(E (1 - (1 - k/E)^T)) = 8
    assert sum(layer.count for layer in ups) == round(E * (1 - (1 - k / E) ** T))
    moe = w.import_report["moe"]
    assert (moe["experts"], moe["top_k"], moe["expert_tensors"]) == (E, k, ["up"])
    assert "gather_up" not in {o.name for o in w.vector_ops}
    r = simulate(w, ArrayConfig())
    assert r.effective_speedup > 1.05  # the expert GEMMs are pruned


def _router(D: int, E: int, k: int, ids_shape: list[int]) -> tuple[list, list]:
    """The batched_mm experts' routing, as transformers exports it: router MatMul -> TopK(k) -> the ids
    reshaped to ``ids_shape`` (``ids``); returns (initializers, nodes)."""
    inits = [
        _arr("router", np.zeros((D, E), np.float32)),
        _arr("k", np.array([k], np.int64)),
        _arr("ids_shape", np.array(ids_shape, np.int64)),
    ]
    nodes = [
        _n("MatMul", ["x", "router"], ["logits"], name="router"),
        _n("TopK", ["logits", "k"], ["vals", "idx"], name="topk"),
        _n("Reshape", ["idx", "ids_shape"], ["ids"], name="ids"),
    ]
    return inits, nodes


def test_gathernd_of_the_expert_stack_is_an_expert_gather(tmp_path):
    """The dynamo exporter's batched_mm experts: GatherND(W[E, N, K], ids[S, 1]) -> W_sel (S, N, K) @ x (S, K, 1)
    (it was no expert found: 1,024 activation x activation GEMMs, effective speedup 1.001 on Mixtral)."""
    T, D, E, k, Fd = 16, 256, 8, 2, 128
    x = helper.make_tensor_value_info("x", F, [T, D])
    inits, nodes = _router(D, E, k, [T * k, 1])
    inits += [
        _arr("up", np.zeros((E, Fd, D), np.float32)),
        _arr("rows", np.array([T * k, D, 1], np.int64)),
        _arr("rep", np.array([T, k, D], np.int64)),
        _arr("ax1", np.array([1], np.int64)),
    ]
    nodes += [
        _n("GatherND", ["up", "ids"], ["wsel"], name="gather_up"),
        _n("Unsqueeze", ["x", "ax1"], ["xu"]),
        _n("Expand", ["xu", "rep"], ["xr"]),
        _n("Reshape", ["xr", "rows"], ["xs"]),
        _n("MatMul", ["wsel", "xs"], ["y"], name="up_proj"),
    ]
    w = load_onnx(_save(tmp_path / "moe_nd.onnx", nodes, [x], inits))
    ups = [layer for layer in w.layers if layer.name.startswith("up_proj")]
    assert ups and all(layer.sparsifiable and layer.weight_shape == (Fd, D) for layer in ups)
    assert sum(layer.dense_macs for layer in ups) == T * k * D * Fd
    assert w.import_report["moe"]["top_k"] == k and "gather_up" not in {o.name for o in w.vector_ops}


def test_qlinear_matmul_over_a_quantized_expert_stack_is_a_weight_gemm(tmp_path):
    """QOperator over the batched_mm experts: the stack is quantized to INT8, gathered by the router's
    ids, and multiplied by QLinearMatMul: still the expert weights (it was an error: "QLinearMatMul
    over the expert weights ... is not modelled")."""
    T, D, E, k, Fd = 16, 256, 8, 2, 128
    x = helper.make_tensor_value_info("x", F, [T, D])
    inits, nodes = _router(D, E, k, [-1])
    inits += [
        _arr("up_q", np.zeros((E, D, Fd), np.int8)),
        _arr("rows", np.array([T * k, 1, D], np.int64)),
        _arr("rep", np.array([T, k, D], np.int64)),
        _arr("ax1", np.array([1], np.int64)),
        _arr("s", np.float32(0.05)),
        _arr("z", np.uint8(128)),
        _arr("ws", np.float32(0.01)),
        _arr("wz", np.int8(0)),
    ]
    nodes += [
        _n("Gather", ["up_q", "ids"], ["wsel"], name="gather_up", axis=0),
        _n("QuantizeLinear", ["x", "s", "z"], ["xq"], name="xq"),
        _n("Unsqueeze", ["xq", "ax1"], ["xu"]),
        _n("Expand", ["xu", "rep"], ["xr"]),
        _n("Reshape", ["xr", "rows"], ["xs"]),
        _n("QLinearMatMul", ["xs", "s", "z", "wsel", "ws", "wz", "s", "z"], ["y"], name="up_proj"),
    ]
    w = load_onnx(_save(tmp_path / "moe_qop.onnx", nodes, [x], inits))
    ups = [layer for layer in w.layers if layer.name.startswith("up_proj")]
    assert ups and all(
        layer.sparsifiable and layer.weight_shape == (Fd, D) and layer.precision == "int8" for layer in ups
    )
    assert sum(layer.dense_macs for layer in ups) == T * k * D * Fd
    assert w.import_report["moe"]["top_k"] == k and w.import_report["moe"]["expert_tensors"] == ["up_q"]


def test_qdq_around_a_gathered_expert_stack_keeps_the_experts(tmp_path):
    """QDQ over the batched_mm experts: onnxruntime quantizes the stack (DequantizeLinear of an INT8
    initializer), Gather shares its input's quantization, and the gathered matrices get a
    QuantizeLinear -> DequantizeLinear pair before the MatMul. The pair is the expert weight's load,
    not two passes over every token's gathered matrices (it was 105x the float export's cycles on a
    Mixtral-style export, and no expert GEMM)."""
    T, D, E, k, Fd = 16, 256, 8, 2, 128
    x = helper.make_tensor_value_info("x", F, [T, D])
    inits, nodes = _router(D, E, k, [-1])
    inits += [
        _arr("up_q", np.zeros((E, D, Fd), np.int8)),
        _arr("rows", np.array([T * k, 1, D], np.int64)),
        _arr("rep", np.array([T, k, D], np.int64)),
        _arr("ax1", np.array([1], np.int64)),
        _arr("s", np.float32(0.05)),
        _arr("z", np.uint8(128)),
        _arr("ws", np.float32(0.01)),
        _arr("wz", np.int8(0)),
    ]
    nodes += [
        _n("DequantizeLinear", ["up_q", "ws", "wz"], ["up"], name="up_dq"),
        _n("Gather", ["up", "ids"], ["wsel"], name="gather_up", axis=0),
        _n("QuantizeLinear", ["wsel", "ws", "wz"], ["wsel_q"], name="wsel_q"),
        _n("DequantizeLinear", ["wsel_q", "ws", "wz"], ["wsel_dq"], name="wsel_dq"),
        _n("QuantizeLinear", ["x", "s", "z"], ["xq"], name="xq"),
        _n("DequantizeLinear", ["xq", "s", "z"], ["xdq"], name="xdq"),
        _n("Unsqueeze", ["xdq", "ax1"], ["xu"]),
        _n("Expand", ["xu", "rep"], ["xr"]),
        _n("Reshape", ["xr", "rows"], ["xs"]),
        _n("MatMul", ["xs", "wsel_dq"], ["y"], name="up_proj"),
    ]
    w = load_onnx(_save(tmp_path / "moe_qdq.onnx", nodes, [x], inits))
    ups = [layer for layer in w.layers if layer.name.startswith("up_proj")]
    assert ups and all(layer.sparsifiable and layer.weight_shape == (Fd, D) for layer in ups)
    assert sum(layer.dense_macs for layer in ups) == T * k * D * Fd
    assert not {"wsel_q", "wsel_dq", "gather_up"} & {o.name for o in w.vector_ops}
    assert w.import_report["moe"]["expert_gemms"] == [layer.name for layer in ups]


@pytest.mark.parametrize(
    "case,match",
    [
        ("ir99", "ir_version 99 is outside"),
        ("opset99", "opset_import ai.onnx version 99 is outside"),
        ("opset1", "opset_import ai.onnx version 1 is outside 7"),
        ("dupout", "graph output 'y' is listed twice"),
        ("negoffset", "offset '-16' is not a non-negative integer"),
    ],
)
def test_hostile_files_are_one_line_errors(tmp_path, case, match):
    x = helper.make_tensor_value_info("x", F, [2, 4])
    y = helper.make_tensor_value_info("y", F, [2, 4])
    w = _arr("w", np.zeros((4, 4), np.float32))
    if case == "negoffset":
        w = TensorProto(name="w", data_type=F, dims=[4, 4], data_location=TensorProto.EXTERNAL)
        for key, v in (("location", "w.bin"), ("offset", "-16"), ("length", "64")):
            e = w.external_data.add()
            e.key, e.value = key, v
    g = helper.make_graph(
        [_n("MatMul", ["x", "w"], ["y"])], "g", [x], [y, y] if case == "dupout" else [y], [w]
    )
    model = helper.make_model(
        g, opset_imports=[helper.make_opsetid("", {"opset99": 99, "opset1": 1}.get(case, 17))]
    )
    if case == "ir99":
        model.ir_version = 99
    path = tmp_path / f"{case}.onnx"
    path.write_bytes(model.SerializeToString())
    with pytest.raises(InputError, match=match) as e:
        load_onnx(path)
    assert str(path) in str(e.value) and "\n" not in str(e.value)


def test_full_width_digits_are_not_a_shape():
    from sim.importers.onnx import parse_shape

    with pytest.raises(InputError, match="positive integers") as e:
        parse_shape("x=1x４x16")
    assert "--input-shape" in str(e.value) and "1x４x16" in str(e.value)
    assert parse_shape("x=1x4x16") == ("x", (1, 4, 16))


def test_every_ai_onnx_operator_has_a_cost_class():
    from onnx import defs

    from sim.importers.onnx.opclasses import OP_CLASSES

    names = {
        s.name
        for s in defs.get_all_schemas_with_history()
        if s.domain in ("", "ai.onnx") and s.since_version <= 21
    }
    at_13_21 = {
        s.name
        for s in defs.get_all_schemas_with_history()
        if s.domain in ("", "ai.onnx") and s.since_version <= 21 and not s.deprecated
    }
    assert at_13_21 <= set(OP_CLASSES) and names <= set(OP_CLASSES), sorted(names - set(OP_CLASSES))
    assert {c for c, *_ in OP_CLASSES.values()} == {
        "gemm",
        "movement",
        "elementwise",
        "transcendental",
        "reduction",
        "pool",
        "control",
    }


@pytest.mark.parametrize(
    "op,domain,n_in",
    [
        ("GreaterOrEqual", "", 2),
        ("LessOrEqual", "", 2),
        ("IsNaN", "", 1),
        ("Cos", "", 1),
        ("Sin", "", 1),
        ("Mod", "", 2),
    ],
)
def test_standard_operators_are_supported(tmp_path, op, domain, n_in):
    x = helper.make_tensor_value_info("x", F, [4, 8])
    ins = ["x", "x"][:n_in]
    w = load_onnx(_save(tmp_path / "op.onnx", [_n(op, ins, ["y"], name="op")], [x], opset=21))
    (v,) = w.vector_ops
    assert v.supported and v.op_type == op and v.elements == 32 and v.ops > 0


def test_unknown_domain_is_the_only_unsupported_and_names_op_and_domain(tmp_path):
    x = helper.make_tensor_value_info("x", F, [4, 8])
    vi = helper.make_tensor_value_info("y", F, [4, 8])
    node = _n("Frobnicate", ["x"], ["y"], name="f", domain="com.example")
    g = helper.make_graph([node], "g", [x], [vi])
    path = tmp_path / "u.onnx"
    onnx.save(
        helper.make_model(
            g, opset_imports=[helper.make_opsetid("", 17), helper.make_opsetid("com.example", 1)]
        ),
        str(path),
    )
    (u,) = load_onnx(path).unsupported_ops
    assert u["op_type"] == "Frobnicate" and "'Frobnicate' of domain 'com.example'" in u["reason"]
