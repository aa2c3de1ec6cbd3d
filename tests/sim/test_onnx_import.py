"""ONNX import: a graph built here with onnx.helper, its GEMM shapes and MACs computed independently."""

import json
import subprocess
import sys
from pathlib import Path

import pytest

onnx = pytest.importorskip("onnx")
import numpy as np  # noqa: E402
from onnx import TensorProto, helper, numpy_helper  # noqa: E402

from hw.errors import InputError  # noqa: E402
from sim.importers.onnx import QUANTIZED_TYPES, load_onnx  # noqa: E402
from sim.perf import ArrayConfig, simulate  # noqa: E402

ROOT = Path(__file__).resolve().parents[2]


def _init(name, shape):
    return numpy_helper.from_array(np.zeros(shape, np.float32), name)


def build_model(path: Path, *, symbolic_seq: bool = False, typed_custom: bool = True) -> Path:
    """x[batch,3,32,32] -> dilated Conv -> grouped strided Conv -> Relu -> custom op -> Reshape -> Transpose
    -> MatMul(weight) -> q; q @ q^T (activation x activation) -> Softmax -> @ q -> Add(q) -> LayerNorm
    -> ReduceMean -> Gemm(transB, bias). The custom op's output shape is in the model's value_info
    (``typed_custom``; symbolic batch), as an exporter or onnxruntime's symbolic shape inference writes it."""
    in_dims = ["batch", 3, "height" if symbolic_seq else 32, 32]
    x = helper.make_tensor_value_info("x", TensorProto.FLOAT, in_dims)
    y = helper.make_tensor_value_info("logits", TensorProto.FLOAT, None)
    inits = [
        _init("w1", (32, 3, 3, 3)),
        _init("b1", (32,)),
        _init("w2", (32, 16, 3, 3)),
        _init("wq", (32, 64)),
        _init("ln_s", (64,)),
        _init("ln_b", (64,)),
        _init("wfc", (10, 64)),
        _init("bfc", (10,)),
        numpy_helper.from_array(np.array([0, 32, 225], np.int64), "shape"),
    ]
    nodes = [
        helper.make_node(
            "Conv", ["x", "w1", "b1"], ["c1"], name="conv1", dilations=[2, 2], pads=[1, 1, 1, 1]
        ),
        helper.make_node(
            "Conv", ["c1", "w2"], ["c2"], name="conv2", group=2, strides=[2, 2], pads=[1, 1, 1, 1]
        ),
        helper.make_node("Relu", ["c2"], ["r"], name="relu"),
        helper.make_node("MyFancyOp", ["r"], ["z"], name="custom", domain="com.example"),
        helper.make_node("Reshape", ["z", "shape"], ["z2"], name="reshape"),
        helper.make_node("Transpose", ["z2"], ["z3"], name="tr", perm=[0, 2, 1]),
        helper.make_node("MatMul", ["z3", "wq"], ["q"], name="proj"),
        helper.make_node("Transpose", ["q"], ["qt"], name="qt", perm=[0, 2, 1]),
        helper.make_node("MatMul", ["q", "qt"], ["s"], name="scores"),
        helper.make_node("Softmax", ["s"], ["p"], name="softmax", axis=-1),
        helper.make_node("MatMul", ["p", "q"], ["ctx"], name="context"),
        helper.make_node("Add", ["ctx", "q"], ["res"], name="residual"),
        helper.make_node("LayerNormalization", ["res", "ln_s", "ln_b"], ["ln"], name="ln", axis=-1),
        helper.make_node("ReduceMean", ["ln"], ["pool"], name="pool", axes=[1], keepdims=0),
        helper.make_node("Gemm", ["pool", "wfc", "bfc"], ["logits"], name="fc", transB=1),
    ]
    vi = (
        [helper.make_tensor_value_info("z", TensorProto.FLOAT, ["batch", 32, 15, 15])] if typed_custom else []
    )
    graph = helper.make_graph(nodes, "tiny", [x], [y], inits, value_info=vi)
    model = helper.make_model(
        graph, opset_imports=[helper.make_opsetid("", 17), helper.make_opsetid("com.example", 1)]
    )
    onnx.save(model, str(path))
    return path


def test_gemm_shapes_macs_vector_layers_and_unsupported(tmp_path):
    B = 2
    w = load_onnx(build_model(tmp_path / "tiny.onnx"), batch=B)
    L = {layer.name: layer for layer in w.layers}
    # independent: dilated 3x3 (effective 5x5), pad 1, stride 1 on 32x32 -> 30x30
    oh1 = (32 + 2 - (2 * (3 - 1) + 1)) // 1 + 1
    oh2 = (oh1 + 2 - 3) // 2 + 1  # 3x3 stride 2 pad 1 -> 15
    assert (oh1, oh2) == (30, 15)
    expect = {
        "conv1": (B * oh1 * oh1, 32, 3 * 9, 1, "conv"),
        "conv2": (B * oh2 * oh2, 16, 16 * 9, 2, "conv"),  # 2 groups of 16 filters over 16 channels each
        "proj": (B * 225, 64, 32, 1, "gemm"),
        "scores": (225, 225, 64, B, "act_gemm"),
        "context": (225, 64, 225, B, "act_gemm"),
        "fc": (B, 10, 64, 1, "gemm"),
    }
    assert set(L) == set(expect)
    for name, (M, N, K, count, kind) in expect.items():
        assert (L[name].M, L[name].N, L[name].K, L[name].count, L[name].kind) == (M, N, K, count, kind), name
    macs = (
        B * 30 * 30 * 32 * 27
        + B * 15 * 15 * 32 * 144
        + B * 225 * 64 * 32
        + 2 * B * 225 * 225 * 64
        + B * 10 * 64
    )
    assert sum(layer.dense_macs for layer in w.layers) == macs
    # ASP verdicts from the real initializer shapes: conv1 has Cin = 3 (3 % 16 != 0), the rest pass
    assert not L["conv1"].sparsifiable and "input dim 3" in L["conv1"].reason
    assert L["conv2"].sparsifiable and L["proj"].sparsifiable
    assert not L["fc"].sparsifiable and "output dim 10" in L["fc"].reason  # (10, 64): 10 % 8 != 0
    assert not L["scores"].sparsifiable and "activation x activation" in L["scores"].reason
    ops = {o.name: o for o in w.vector_ops}
    for name, t in (
        ("softmax", "Softmax"),
        ("ln", "LayerNormalization"),
        ("residual", "Add"),
        ("relu", "Relu"),
        ("reshape", "Reshape"),
        ("tr", "Transpose"),
        ("pool", "ReduceMean"),
    ):
        assert ops[name].op_type == t and ops[name].supported
    assert ops["reshape"].movement_only and ops["reshape"].alu == 0 and ops["reshape"].read == B * 32 * 225
    assert ops["softmax"].elements == B * 225 * 225 and ops["softmax"].exp == B * 225 * 225
    assert ops["conv1.bias"].op_type == "Add" and ops["fc.bias"].params == 10
    un = w.unsupported_ops
    assert len(un) == 1 and un[0]["op_type"] == "MyFancyOp" and un[0]["count"] == 1
    assert "[2, 32, 15, 15]" in un[0]["shapes"][0] and "element-wise" in un[0]["reason"]
    # weight_params: every initializer element
    assert w.weight_params == 32 * 27 + 32 + 32 * 144 + 32 * 64 + 64 + 64 + 640 + 10 + 3
    r = simulate(w, ArrayConfig())
    d = r.to_dict()
    assert d["unsupported_ops"][0]["op_type"] == "MyFancyOp" and d["vector_cycles"] > 0
    assert d["dense_macs"] == macs and {row["unit"] for row in d["vector_layers"]} == {"vector"}


def test_input_shape_resolves_symbols_and_unresolved_is_one_clear_error(tmp_path):
    path = build_model(tmp_path / "sym.onnx", symbolic_seq=True)
    with pytest.raises(InputError, match="'height' of input 'x' is unresolved"):
        load_onnx(path, batch=1)
    w = load_onnx(path, input_shapes={"x": "1x3x32x32"})
    assert {layer.name: layer.M for layer in w.layers}["conv1"] == 900
    with pytest.raises(InputError, match="no graph input named 'y'"):
        load_onnx(path, input_shapes={"y": (1, 3, 32, 32)})


def _cli(*args):
    return subprocess.run(
        [sys.executable, "-m", "explore.cli", "simulate", *args],
        capture_output=True,
        text=True,
        cwd=ROOT,
        env={"PYTHONPATH": str(ROOT), "PATH": "/usr/bin:/bin"},
    )


def test_cli_onnx_json_and_errors(tmp_path):
    path = build_model(tmp_path / "sym.onnx", symbolic_seq=True)
    p = _cli("--onnx", str(path), "--input-shape", "x=2x3x32x32", "--json")
    assert p.returncode == 0, p.stderr
    d = json.loads(p.stdout)
    assert d["unsupported_ops"] == [
        {
            "op_type": "MyFancyOp",
            "count": 1,
            "reason": d["unsupported_ops"][0]["reason"],
            "shapes": ["in[2, 32, 15, 15] out[2, 32, 15, 15]"],
        }
    ]
    assert 0 < d["vector_fraction"] < 1 and d["weight_params"] > 0
    bad = tmp_path / "bad.onnx"
    bad.write_bytes(b"this is not a protobuf \x00\xff\x13")
    for args in (("--onnx", str(bad)), ("--onnx", str(path), "--batch", "1")):
        p = _cli(*args)
        lines = p.stderr.strip().splitlines()
        assert p.returncode == 2 and len(lines) == 1 and lines[0].startswith("sparsepe: error:"), p.stderr


def _save(path: Path, nodes, inputs, inits=(), *, opset: int = 21, value_info=()) -> Path:
    """One graph, outputs untyped (shape inference fills them in)."""
    outs = [helper.make_tensor_value_info(nodes[-1].output[0], TensorProto.UNDEFINED, None)]
    graph = helper.make_graph(nodes, path.stem, inputs, outs, list(inits), value_info=list(value_info))
    onnx.save(helper.make_model(graph, opset_imports=[helper.make_opsetid("", opset)]), str(path))
    return path


def _arr(name, a):
    return numpy_helper.from_array(np.asarray(a), name)


def _vi(name, elem, shape):
    return helper.make_tensor_value_info(name, elem, shape)


def _macs(w):
    return sum(layer.dense_macs for layer in w.layers)


def test_qdq_matmul_is_an_int8_gemm(tmp_path):
    """A QDQ model: the weight is int8 behind DequantizeLinear and a Transpose (folded); the activation's
    Q -> DQ pair feeds the MatMul, so the DequantizeLinear is fused into the int8 GEMM and only the
    QuantizeLinear of the float input stays on the vector unit."""
    x = _vi("x", TensorProto.FLOAT, [4, 64])
    inits = [
        _arr("wq", np.zeros((32, 64), np.int8)),
        _arr("ws", np.array(0.1, np.float32)),
        _arr("wz", np.array(0, np.int8)),
    ]
    nodes = [
        helper.make_node("DequantizeLinear", ["wq", "ws", "wz"], ["wf"], name="dq_w"),
        helper.make_node("Transpose", ["wf"], ["wt"], name="tw", perm=[1, 0]),
        helper.make_node("QuantizeLinear", ["x", "ws", "wz"], ["xq"], name="q_x"),
        helper.make_node("DequantizeLinear", ["xq", "ws", "wz"], ["xf"], name="dq_x"),
        helper.make_node("MatMul", ["xf", "wt"], ["y"], name="fc"),
    ]
    w = load_onnx(_save(tmp_path / "qdq.onnx", nodes, [x], inits, opset=17))
    (fc,) = w.layers
    assert (fc.kind, fc.M, fc.N, fc.K, fc.weight_shape, fc.sparsifiable) == (
        "gemm",
        4,
        32,
        64,
        (32, 64),
        True,
    )
    assert fc.precision == "int8" and _macs(w) == 4 * 32 * 64
    assert [o.name for o in w.vector_ops] == ["q_x"]
    assert w.weight_params == 32 * 64 + 2


def test_qlinear_matmul_and_matmul_integer_are_gemms(tmp_path):
    """The 128 x 768 x 3072 product of a dynamically quantized BERT FFN: 301,989,888 MACs on the array."""
    M, K, N = 128, 768, 3072
    a = _vi("a", TensorProto.UINT8, [1, M, K])
    q = [
        _arr("a_s", np.float32(0.02)),
        _arr("a_z", np.uint8(128)),
        _arr("w", np.zeros((K, N), np.int8)),
        _arr("w_s", np.float32(0.01)),
        _arr("w_z", np.int8(0)),
        _arr("y_s", np.float32(0.05)),
        _arr("y_z", np.uint8(128)),
    ]
    w = load_onnx(
        _save(
            tmp_path / "qlm.onnx",
            [
                helper.make_node(
                    "QLinearMatMul", ["a", "a_s", "a_z", "w", "w_s", "w_z", "y_s", "y_z"], ["y"], name="ffn1"
                )
            ],
            [a],
            q,
        )
    )
    (L,) = w.layers
    assert (L.kind, L.M, L.N, L.K, L.count, L.precision, L.weight_shape) == (
        "gemm",
        M,
        N,
        K,
        1,
        "int8",
        (N, K),
    )
    assert _macs(w) == M * K * N == 301_989_888 and not w.vector_ops
    a8 = _vi("a", TensorProto.INT8, [M, K])
    w = load_onnx(
        _save(
            tmp_path / "mmi.onnx",
            [helper.make_node("MatMulInteger", ["a", "w", "az", "wz"], ["y"], name="ffn1")],
            [a8],
            [_arr("w", np.zeros((K, N), np.int8)), _arr("az", np.int8(0)), _arr("wz", np.int8(0))],
        )
    )
    (L,) = w.layers
    assert (L.kind, L.M, L.N, L.K, L.precision) == ("gemm", M, N, K, "int8") and _macs(w) == 301_989_888
    r = simulate(w, ArrayConfig())
    assert r.totals["dense_macs"] == 301_989_888 and r.totals["vector_cycles"] == 0


def test_qlinear_conv_and_conv_integer(tmp_path):
    B, C, H, F = 2, 16, 14, 32
    x = _vi("x", TensorProto.UINT8, [B, C, H, H])
    inits = [
        _arr("x_s", np.float32(0.02)),
        _arr("x_z", np.uint8(128)),
        _arr("w", np.zeros((F, C, 3, 3), np.int8)),
        _arr("w_s", np.float32(0.01)),
        _arr("w_z", np.int8(0)),
        _arr("y_s", np.float32(0.05)),
        _arr("y_z", np.uint8(128)),
        _arr("b", np.zeros(F, np.int32)),
    ]
    w = load_onnx(
        _save(
            tmp_path / "qlc.onnx",
            [
                helper.make_node(
                    "QLinearConv",
                    ["x", "x_s", "x_z", "w", "w_s", "w_z", "y_s", "y_z", "b"],
                    ["y"],
                    name="conv",
                    pads=[1, 1, 1, 1],
                    strides=[2, 2],
                )
            ],
            [x],
            inits,
        )
    )
    (L,) = w.layers
    oh = (H + 2 - 3) // 2 + 1  # 7
    assert (L.kind, L.M, L.N, L.K, L.precision) == ("conv", B * oh * oh, F, C * 9, "int8")
    assert _macs(w) == B * oh * oh * F * C * 9 and L.sparsifiable
    assert [(o.name, o.op_type, o.params) for o in w.vector_ops] == [("conv.bias", "Add", F)]
    x8 = _vi("x", TensorProto.UINT8, [1, C, H, H])
    w = load_onnx(
        _save(
            tmp_path / "ci.onnx",
            [helper.make_node("ConvInteger", ["x", "w", "x_z"], ["y"], name="conv")],
            [x8],
            [_arr("w", np.zeros((F, C, 3, 3), np.uint8)), _arr("x_z", np.uint8(128))],
        )
    )
    assert _macs(w) == 12 * 12 * F * C * 9 and w.layers[0].precision == "int8"


def _einsum_macs(eq, shapes):
    """Independent: a contraction does one multiply-add per combination of all its distinct indices."""
    sizes = {}
    for term, shp in zip(eq.split("->")[0].split(","), shapes, strict=True):
        sizes.update(zip(term, shp, strict=True))
    return int(np.prod(list(sizes.values())))


@pytest.mark.parametrize(
    "eq,sa,sb,weight,kind,mnk",
    [
        ("bij,jk->bik", (2, 128, 768), (768, 3072), True, "gemm", (256, 3072, 768, 1)),
        ("bhqd,bhkd->bhqk", (2, 12, 128, 64), (2, 12, 128, 64), False, "act_gemm", (128, 128, 64, 24)),
        ("bhqk,bhkd->bhqd", (2, 12, 128, 128), (2, 12, 128, 64), False, "act_gemm", (128, 64, 128, 24)),
        ("bij,bjk->bik", (4, 32, 48), (4, 48, 16), False, "act_gemm", (32, 16, 48, 4)),
    ],
    ids=["projection", "attention-scores", "attention-context", "batched-matmul"],
)
def test_einsum_transformer_equations(tmp_path, eq, sa, sb, weight, kind, mnk):
    inputs = [_vi("a", TensorProto.FLOAT, list(sa))]
    inits = []
    if weight:
        inits.append(_arr("b", np.zeros(sb, np.float32)))
    else:
        inputs.append(_vi("b", TensorProto.FLOAT, list(sb)))
    w = load_onnx(
        _save(
            tmp_path / "e.onnx",
            [helper.make_node("Einsum", ["a", "b"], ["y"], name="e", equation=eq)],
            inputs,
            inits,
        )
    )
    (L,) = w.layers
    assert (L.kind, (L.M, L.N, L.K, L.count)) == (kind, mnk)
    assert _macs(w) == _einsum_macs(eq, [sa, sb]) and not w.vector_ops
    if weight:
        assert L.weight_shape == (3072, 768) and L.weight_params == 768 * 3072


def test_einsum_other_equations_are_unsupported_and_bad_ones_exit_2(tmp_path):
    x = _vi("x", TensorProto.FLOAT, [8, 8])
    w = load_onnx(
        _save(
            tmp_path / "t.onnx", [helper.make_node("Einsum", ["x"], ["y"], name="tr", equation="ij->ji")], [x]
        )
    )
    assert not w.layers
    (u,) = w.unsupported_ops
    assert u["op_type"] == "Einsum" and "'ij->ji'" in u["reason"] and "not a GEMM" in u["reason"]
    y = _vi("y", TensorProto.FLOAT, [8, 8])
    w = load_onnx(
        _save(
            tmp_path / "o.onnx",
            [helper.make_node("Einsum", ["x", "y"], ["z"], name="outer", equation="ij,ij->ij")],
            [x, y],
        )
    )
    assert not w.layers and "'ij,ij->ij'" in w.unsupported_ops[0]["reason"]
    for eq in ("ij,jk->i-k", "ij,jk->iz", "ijk,jk->ik", "i1,jk->ik"):
        path = _save(
            tmp_path / "bad.onnx",
            [helper.make_node("Einsum", ["x", "y"], ["z"], name="bad", equation=eq)],
            [x, y],
        )
        with pytest.raises(InputError, match="does not parse"):
            load_onnx(path)
    p = _cli("--onnx", str(path), "--json")
    lines = p.stderr.strip().splitlines()
    assert (
        p.returncode == 2
        and len(lines) == 1
        and lines[0].startswith("sparsepe: error:")
        and "'i1,jk->ik'" in lines[0]
    )


def test_batched_matmul_broadcasts_and_counts_once(tmp_path):
    """X(2,4,16,64) x W(4,64,32): 2 x 4 x 16 x 64 x 32 = 262,144 MACs (4 weight matrices, each used twice)."""
    x = _vi("x", TensorProto.FLOAT, [2, 4, 16, 64])
    w = load_onnx(
        _save(
            tmp_path / "bm.onnx",
            [helper.make_node("MatMul", ["x", "w"], ["y"], name="bmm")],
            [x],
            [_arr("w", np.zeros((4, 64, 32), np.float32))],
        )
    )
    (L,) = w.layers
    assert (L.kind, L.M, L.N, L.K, L.count) == ("gemm", 32, 32, 64, 4) and _macs(w) == 262_144
    assert L.weight_params == 4 * 64 * 32
    # two activations: (2, 1, 16, 64) x (3, 64, 8) broadcast to (2, 3) batch GEMMs
    a, b = _vi("a", TensorProto.FLOAT, [2, 1, 16, 64]), _vi("b", TensorProto.FLOAT, [3, 64, 8])
    w = load_onnx(
        _save(tmp_path / "aa.onnx", [helper.make_node("MatMul", ["a", "b"], ["y"], name="mm")], [a, b])
    )
    (L,) = w.layers
    assert (L.kind, L.M, L.N, L.K, L.count) == ("act_gemm", 16, 8, 64, 6) and _macs(w) == 6 * 16 * 64 * 8


def test_depthwise_with_channel_multiplier_counts_every_filter(tmp_path):
    C, H = 16, 10
    x = _vi("x", TensorProto.FLOAT, [1, C, H, H])
    w = load_onnx(
        _save(
            tmp_path / "dw.onnx",
            [helper.make_node("Conv", ["x", "w"], ["y"], name="dw", group=C, pads=[1, 1, 1, 1])],
            [x],
            [_arr("w", np.zeros((2 * C, 1, 3, 3), np.float32))],
        )
    )
    (L,) = w.layers
    # independent: 2C output channels, each one 3x3 filter over one input channel, at every one of H x H pixels
    assert _macs(w) == H * H * (2 * C) * 9
    assert (L.kind, L.N, L.K, L.count, L.weight_params) == ("depthwise", 2, 9, C, 2 * C * 9)


def test_bad_graphs_are_one_line_errors(tmp_path):
    # a Conv whose group does not divide its channels
    x = _vi("x", TensorProto.FLOAT, [1, 6, 8, 8])
    path = _save(
        tmp_path / "g.onnx",
        [helper.make_node("Conv", ["x", "w"], ["y"], name="c", group=4)],
        [x],
        [_arr("w", np.zeros((8, 1, 3, 3), np.float32))],
    )
    with pytest.raises(InputError, match="group 4 does not divide the 6 input channels"):
        load_onnx(path)
    # a rank-0 MatMul operand
    s = _vi("s", TensorProto.FLOAT, [])
    path = _save(
        tmp_path / "r0.onnx",
        [helper.make_node("MatMul", ["s", "w"], ["y"], name="mm")],
        [s],
        [_arr("w", np.zeros((4, 4), np.float32))],
    )
    with pytest.raises(InputError, match="input 's' is a scalar"):
        load_onnx(path)
    # an output no shape inference can give: named, never guessed
    path = build_model(tmp_path / "untyped.onnx", typed_custom=False)
    with pytest.raises(InputError, match="tensor 'z' .*MyFancyOp node 'custom'.* cannot be inferred"):
        load_onnx(path, batch=1)
    p = _cli(
        "--onnx",
        str(build_model(tmp_path / "sym.onnx", symbolic_seq=True)),
        "--input-shape",
        "x=1x3x32x32",
        "--input-shape",
        "x=2x3x32x32",
    )
    lines = p.stderr.strip().splitlines()
    assert (
        p.returncode == 2
        and len(lines) == 1
        and "'x' is given twice" in lines[0]
        and "--input-shape" in lines[0]
    )


def _external(name, elem, dims, location, offset, length):
    """An initializer whose data sit in an external file (only its metadata in the model)."""
    t = TensorProto(name=name, data_type=elem, dims=dims)
    t.data_location = TensorProto.EXTERNAL
    for k, v in (("location", location), ("offset", str(offset)), ("length", str(length))):
        e = t.external_data.add()
        e.key, e.value = k, v
    return t


def test_external_data_over_2gb_is_not_read_and_missing_data_is_reported_when_needed(tmp_path):
    """A 50,000 x 16,384 fp32 weight (3.28 GB) in an external file: only its shape is read. A missing
    external file matters only where shape inference needs the values (a Reshape target)."""
    rows, cols = 16_384, 50_000
    t = _external("w", TensorProto.FLOAT, [rows, cols], "weights.bin", 0, rows * cols * 4)
    x = _vi("x", TensorProto.FLOAT, [8, rows])
    path = _save(
        tmp_path / "big.onnx", [helper.make_node("MatMul", ["x", "w"], ["y"], name="head")], [x], [t]
    )
    assert path.stat().st_size < 10_000
    with open(tmp_path / "weights.bin", "wb") as fh:  # a sparse 3.28 GB file: nothing is written to disk
        fh.truncate(rows * cols * 4)
    for present in (True, False):
        if not present:
            (tmp_path / "weights.bin").unlink()
        w = load_onnx(path)
        assert w.weight_params == rows * cols and _macs(w) == 8 * rows * cols
    # the Reshape target in external data: read when present, an error naming it when missing
    shp = _external("shape", TensorProto.INT64, [2], "shape.bin", 0, 16)
    (tmp_path / "shape.bin").write_bytes(np.array([4, 32], np.int64).tobytes())
    x = _vi("x", TensorProto.FLOAT, [2, 64])
    nodes = [
        helper.make_node("Reshape", ["x", "shape"], ["r"], name="rs"),
        helper.make_node("MatMul", ["r", "w2"], ["y"], name="mm"),
    ]
    path = _save(tmp_path / "rs.onnx", nodes, [x], [shp, _arr("w2", np.zeros((32, 8), np.float32))])
    w = load_onnx(path)
    assert [(layer.M, layer.N, layer.K) for layer in w.layers] == [(4, 8, 32)]
    (tmp_path / "shape.bin").unlink()
    with pytest.raises(InputError, match="external data of tensor 'shape' .*shape.bin.* Reshape 'rs' needs"):
        load_onnx(path)
    p = _cli("--onnx", str(path))
    assert p.returncode == 2 and len(p.stderr.strip().splitlines()) == 1 and "shape.bin" in p.stderr


def test_quantized_type_numbers_match_onnx():
    for name, prec in (
        ("INT8", "int8"),
        ("UINT8", "int8"),
        ("INT4", "int4"),
        ("UINT4", "int4"),
        ("FLOAT8E4M3FN", "fp8-e4m3"),
        ("FLOAT8E5M2", "fp8-e5m2"),
    ):
        assert QUANTIZED_TYPES[getattr(TensorProto, name)] == prec
