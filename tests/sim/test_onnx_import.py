"""ONNX import: a graph built here with onnx.helper, its GEMM shapes and MACs computed independently."""

import json
import subprocess
import sys
from pathlib import Path

import pytest

onnx = pytest.importorskip("onnx")
from onnx import TensorProto, helper, numpy_helper  # noqa: E402
import numpy as np  # noqa: E402

from hw.errors import InputError  # noqa: E402
from sim.importers.onnx import load_onnx  # noqa: E402
from sim.perf import ArrayConfig, simulate  # noqa: E402

ROOT = Path(__file__).resolve().parents[2]


def _init(name, shape):
    return numpy_helper.from_array(np.zeros(shape, np.float32), name)


def build_model(path: Path, *, symbolic_seq: bool = False) -> Path:
    """x[batch,3,32,32] -> dilated Conv -> grouped strided Conv -> Relu -> custom op -> Reshape -> Transpose
    -> MatMul(weight) -> q; q @ q^T (activation x activation) -> Softmax -> @ q -> Add(q) -> LayerNorm
    -> ReduceMean -> Gemm(transB, bias)."""
    in_dims = ["batch", 3, "height" if symbolic_seq else 32, 32]
    x = helper.make_tensor_value_info("x", TensorProto.FLOAT, in_dims)
    y = helper.make_tensor_value_info("logits", TensorProto.FLOAT, None)
    inits = [_init("w1", (32, 3, 3, 3)), _init("b1", (32,)), _init("w2", (32, 16, 3, 3)), _init("wq", (32, 64)),
             _init("ln_s", (64,)), _init("ln_b", (64,)), _init("wfc", (10, 64)), _init("bfc", (10,)),
             numpy_helper.from_array(np.array([0, 32, 225], np.int64), "shape")]
    nodes = [
        helper.make_node("Conv", ["x", "w1", "b1"], ["c1"], name="conv1", dilations=[2, 2], pads=[1, 1, 1, 1]),
        helper.make_node("Conv", ["c1", "w2"], ["c2"], name="conv2", group=2, strides=[2, 2], pads=[1, 1, 1, 1]),
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
    graph = helper.make_graph(nodes, "tiny", [x], [y], inits)
    model = helper.make_model(graph, opset_imports=[helper.make_opsetid("", 17), helper.make_opsetid("com.example", 1)])
    onnx.save(model, str(path))
    return path


def test_gemm_shapes_macs_vector_layers_and_unsupported(tmp_path):
    B = 2
    w = load_onnx(build_model(tmp_path / "tiny.onnx"), batch=B)
    L = {l.name: l for l in w.layers}
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
    macs = (B * 30 * 30 * 32 * 27 + B * 15 * 15 * 32 * 144 + B * 225 * 64 * 32 + 2 * B * 225 * 225 * 64 + B * 10 * 64)
    assert sum(l.dense_macs for l in w.layers) == macs
    # ASP verdicts from the real initializer shapes: conv1 has Cin = 3 (3 % 16 != 0), the rest pass
    assert not L["conv1"].sparsifiable and "input dim 3" in L["conv1"].reason
    assert L["conv2"].sparsifiable and L["proj"].sparsifiable
    assert not L["fc"].sparsifiable and "output dim 10" in L["fc"].reason  # (10, 64): 10 % 8 != 0
    assert not L["scores"].sparsifiable and "activation x activation" in L["scores"].reason
    ops = {o.name: o for o in w.vector_ops}
    for name, t in (("softmax", "Softmax"), ("ln", "LayerNormalization"), ("residual", "Add"), ("relu", "Relu"),
                    ("reshape", "Reshape"), ("tr", "Transpose"), ("pool", "ReduceMean")):
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
    assert {l.name: l.M for l in w.layers}["conv1"] == 900
    with pytest.raises(InputError, match="no graph input named 'y'"):
        load_onnx(path, input_shapes={"y": (1, 3, 32, 32)})


def _cli(*args):
    return subprocess.run([sys.executable, "-m", "explore.cli", "simulate", *args], capture_output=True, text=True,
                          cwd=ROOT, env={"PYTHONPATH": str(ROOT), "PATH": "/usr/bin:/bin"})


def test_cli_onnx_json_and_errors(tmp_path):
    path = build_model(tmp_path / "sym.onnx", symbolic_seq=True)
    p = _cli("--onnx", str(path), "--input-shape", "x=2x3x32x32", "--json")
    assert p.returncode == 0, p.stderr
    d = json.loads(p.stdout)
    assert d["unsupported_ops"] == [{"op_type": "MyFancyOp", "count": 1, "reason": d["unsupported_ops"][0]["reason"],
                                     "shapes": ["in[2, 32, 15, 15] out[2, 32, 15, 15]"]}]
    assert 0 < d["vector_fraction"] < 1 and d["weight_params"] > 0
    bad = tmp_path / "bad.onnx"
    bad.write_bytes(b"this is not a protobuf \x00\xff\x13")
    for args in (("--onnx", str(bad)), ("--onnx", str(path), "--batch", "1")):
        p = _cli(*args)
        lines = p.stderr.strip().splitlines()
        assert p.returncode == 2 and len(lines) == 1 and lines[0].startswith("sparsepe: error:"), p.stderr


def test_qdq_weights_stay_weights(tmp_path):
    """A quantised (QDQ) model: the weight is int8 behind DequantizeLinear and a Transpose; the MatMul is a
    weight GEMM (ASP verdict from its shape), the dequantisation is folded, the activation's is not."""
    x = helper.make_tensor_value_info("x", TensorProto.FLOAT, [4, 64])
    y = helper.make_tensor_value_info("y", TensorProto.FLOAT, None)
    inits = [numpy_helper.from_array(np.zeros((32, 64), np.int8), "wq"),
             numpy_helper.from_array(np.array(0.1, np.float32), "ws"),
             numpy_helper.from_array(np.array(0, np.int8), "wz")]
    nodes = [helper.make_node("DequantizeLinear", ["wq", "ws", "wz"], ["wf"], name="dq_w"),
             helper.make_node("Transpose", ["wf"], ["wt"], name="tw", perm=[1, 0]),
             helper.make_node("QuantizeLinear", ["x", "ws", "wz"], ["xq"], name="q_x"),
             helper.make_node("DequantizeLinear", ["xq", "ws", "wz"], ["xf"], name="dq_x"),
             helper.make_node("MatMul", ["xf", "wt"], ["y"], name="fc")]
    model = helper.make_model(helper.make_graph(nodes, "qdq", [x], [y], inits),
                              opset_imports=[helper.make_opsetid("", 17)])
    onnx.save(model, str(tmp_path / "qdq.onnx"))
    w = load_onnx(tmp_path / "qdq.onnx")
    (fc,) = w.layers
    assert (fc.kind, fc.M, fc.N, fc.K, fc.weight_shape, fc.sparsifiable) == ("gemm", 4, 32, 64, (32, 64), True)
    assert sorted(o.name for o in w.vector_ops) == ["dq_x", "q_x"]
    assert w.weight_params == 32 * 64 + 2
