"""ONNX import: a model file -> a workload of GEMM layers (the array) and vector-unit operators.

``load_onnx(path, input_shapes={"x": (1, 3, 224, 224)}, batch=None)`` reads the graph with the
``onnx`` package without its tensors (``load_external_data=False``: a model whose weights sit in
external files of any size, over 2 GB included, costs only its graph to read), prepares it as a
deployment compiler would (:mod:`sim.importers.onnx.prepare`: checks, bound input shapes, constant
and shape-arithmetic folding with onnxscript, shape inference with the com.microsoft operators
typed from their schemas), lowers its quantization (:mod:`sim.importers.onnx.quant`) and maps every
node (:mod:`sim.importers.onnx.mapping`):

* ``Conv``, ``ConvInteger``, ``QLinearConv``, ``DeformConv`` (groups, dilation and strides from the
  attributes; output size from shape inference): per group M = batch x output pixels, N =
  Cout/groups, K = Cin/groups x kernel elements, count = groups. The group count must divide the
  input and output channels. groups = Cin with one input channel per filter is a depthwise
  convolution: N = the channel multiplier Cout/Cin, K = kernel elements, count = channels;
* ``ConvTranspose``: the scatter form, one GEMM per group: M = batch x input pixels, N = Cout/groups x
  kernel elements, K = Cin/groups (the true MAC count), then the overlap-add (``Col2Im``) on the
  vector unit;
* ``MatMul``, ``Gemm``, ``MatMulInteger``, ``QLinearMatMul``, com.microsoft ``QGemm`` with a weight
  (an initializer or a ``Constant``) as one operand: a weight GEMM. The batch dimensions broadcast as
  in numpy and are counted once: one GEMM per weight matrix, its M the rows of every batch index that
  uses it (X(2,4,16,64) x W(4,64,32): 4 GEMMs of M = 32). With two activations: an activation x
  activation GEMM (``act_gemm``, never pruned), one per broadcast batch index; with an operand
  gathered from a stack of expert matrices: the experts' weight GEMMs (:mod:`sim.importers.onnx.moe`).
  A rank-0 operand is an error. The bias of a ``Gemm`` is a vector ``Add``;
* ``RNN``, ``GRU``, ``LSTM``: the input and recurrent products as weight GEMMs over every step;
* ``Einsum``: a two-operand contraction is a GEMM (:mod:`sim.importers.einsum`); any other equation
  an unsupported operator whose entry names the equation; one that does not parse an input error;
* quantized GEMMs are GEMM layers whose ``precision`` is the quantized operand format (the weight's,
  else the activation's: int8 for INT8/UINT8, int4, fp8-e4m3, fp8-e5m2); Q/DQ nodes fused into their
  neighbours are listed in :attr:`sim.layers.Workload.import_report` (``fused_qdq``);
* an operator whose inputs are all weights (``DequantizeLinear`` of a QDQ weight, a ``Transpose`` or
  ``Cast`` of an initializer) is folded: its output is a weight and it costs nothing per inference;
* every other ai.onnx operator: a vector-unit operator of its cost class
  (:data:`sim.importers.onnx.opclasses.OP_CLASSES`, every ai.onnx operator has one); the com.microsoft
  QLinear operators are their float counterparts; an operator of another domain is kept as
  *unsupported*, its entry naming the operator and the domain, costed by
  :data:`sim.vector.FALLBACK_RULE`.

No shape is guessed: a tensor whose shape neither preparation nor the model's ``value_info`` gives is
an input error naming the tensor, the node that makes it and the chain back to the graph input it
depends on. External data is read only where a value is needed (a ``Reshape`` target, ``Slice``
bounds and the like); a missing external file is reported then, naming the tensor and the node.

The ASP verdict of each weight GEMM comes from the initializer's real shape (torch layout: (out,
in) for a linear layer, (Cout, Cin/groups, kh, kw) for a convolution). ``weight_params`` is the
element count of every initializer and ``Constant`` of the file as stored (before folding).
"""

from __future__ import annotations

import math
from dataclasses import replace
from pathlib import Path

from hw.errors import InputError
from sim.importers.onnx.mapping import map_nodes
from sim.importers.onnx.prepare import check_model, fold_contrib, infer, read_needed_external
from sim.importers.onnx.quant import QUANTIZED_TYPES
from sim.importers.onnx.shapes import bind_inputs, dims_of, parse_shape, parse_shapes
from sim.layers import Workload

__all__ = ["QUANTIZED_TYPES", "load_onnx", "parse_shape", "parse_shapes"]


def _onnx():
    try:
        import onnx  # heavy optional dependency, loaded on use so a missing package is a one-line error
        import onnx.shape_inference  # noqa: F401 - the submodule, loaded with onnx on use (same reason)
    except ImportError as exc:  # pragma: no cover - onnx is a dependency
        raise InputError("the onnx package is not installed (pip install onnx)", where="--onnx") from exc
    return onnx


def _constants(onnx, g) -> tuple[dict, dict]:
    consts, const_type = {}, {}
    for node in g.node:
        if node.op_type == "Constant" and node.output:
            for a in node.attribute:
                if a.name == "value":
                    consts[node.output[0]] = tuple(int(d) for d in a.t.dims)
                    const_type[node.output[0]] = int(a.t.data_type)
    return consts, const_type


def _read(onnx, p: Path, where: str):
    if not p.is_file():
        raise InputError("ONNX file not found", where=where)
    try:
        model = onnx.load(str(p), load_external_data=False)
    except Exception as exc:  # protobuf DecodeError and friends: not an ONNX model
        raise InputError(
            f"not a readable ONNX model ({type(exc).__name__}: {str(exc).splitlines()[0] if str(exc) else ''})",
            where=where,
        ) from None
    if not len(model.graph.node):
        raise InputError("the ONNX graph has no nodes (not an ONNX model?)", where=where)
    check_model(onnx, model, where)
    return model


def load_onnx(
    path: str | Path,
    input_shapes: dict[str, tuple[int, ...] | str] | None = None,
    batch: int | None = None,
    *,
    n: int = 2,
    m: int = 4,
) -> Workload:
    onnx = _onnx()
    p = Path(path)
    where = str(p)
    model = _read(onnx, p, where)
    if batch is not None and (not isinstance(batch, int) or isinstance(batch, bool) or batch <= 0):
        raise InputError(f"batch must be a positive integer, got {batch!r}", where="--batch")
    shapes_in = {k: dims_of(v, "--input-shape", k) for k, v in (input_shapes or {}).items()}
    stored = {t.name: tuple(int(d) for d in t.dims) for t in model.graph.initializer}
    stored_params = sum(math.prod(s) for s in stored.values()) + sum(
        math.prod(s) for s in _constants(onnx, model.graph)[0].values()
    )
    bind_inputs(model.graph, stored, shapes_in, batch, where)
    missing_ext = read_needed_external(onnx, model, p.parent, where)
    model = fold_contrib(onnx, model, where)
    g = model.graph
    inits = {t.name: tuple(int(d) for d in t.dims) for t in g.initializer}
    consts, const_type = _constants(onnx, g)
    shapes, elem = infer(onnx, model, where)
    elem.update(const_type)
    for name, shp in {**inits, **consts}.items():
        shapes[name] = list(shp)
    w, report = map_nodes(
        onnx, model, p.stem, where, shapes, elem, inits, consts, missing_ext, shapes_in, stored_params, n, m
    )
    return replace(w, import_report=report)
