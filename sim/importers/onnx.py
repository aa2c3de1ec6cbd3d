"""ONNX import: a model file -> a workload of GEMM layers (the array) and vector-unit operators.

``load_onnx(path, input_shapes={"x": (1, 3, 224, 224)}, batch=None)`` reads the graph with the
``onnx`` package without its tensors (``load_external_data=False``: a model whose weights sit in
external files of any size, over 2 GB included, costs only its graph to read), fixes the graph
inputs' shapes (``input_shapes`` per input; ``batch`` for a symbolic leading dimension; a symbol
resolved there is resolved wherever the model's ``value_info`` uses it), runs ONNX shape inference
and maps every node:

* ``Conv``, ``ConvInteger``, ``QLinearConv`` (groups, dilation and strides from the attributes;
  output size from shape inference): per group M = batch x output pixels, N = Cout/groups, K =
  Cin/groups x kernel elements, count = groups. The group count must divide the input and output
  channels. groups = Cin with one input channel per filter is a depthwise convolution: N = the
  channel multiplier Cout/Cin, K = kernel elements, count = channels (every filter counted);
* ``ConvTranspose``: the scatter form, one GEMM per group: M = batch x input pixels, N = Cout/groups x
  kernel elements, K = Cin/groups (the true MAC count), then the overlap-add of the columns
  (``Col2Im``) on the vector unit;
* ``MatMul``, ``Gemm``, ``MatMulInteger``, ``QLinearMatMul`` with a weight (an initializer or a
  ``Constant``) as one operand: a weight GEMM. The batch dimensions broadcast as in numpy and are
  counted once: one GEMM per weight matrix, its M the rows of every batch index that uses it
  (X(2,4,16,64) x W(4,64,32): 4 GEMMs of M = 32). With two activations: an activation x activation
  GEMM (``act_gemm``, never pruned), one per broadcast batch index. A rank-0 operand is an error.
  The bias of a ``Gemm`` is a vector ``Add``;
* ``Einsum``: a two-operand contraction is a GEMM (:mod:`sim.importers.einsum`): a weight GEMM when
  one operand is a weight, else ``act_gemm``; any other equation is an unsupported operator whose
  entry names the equation; an equation that does not parse is an input error;
* quantized GEMMs (the four integer / QLinear operators, and a QDQ pair: ``DequantizeLinear`` ->
  ``MatMul`` / ``Gemm`` / ``Conv`` / ``Einsum``) are GEMM layers whose ``precision`` is the
  quantized operand format (the weight's, else the activation's: int8 for INT8/UINT8, int4,
  fp8-e4m3, fp8-e5m2); a ``DequantizeLinear`` whose every consumer is such a GEMM is fused into it
  (the integer GEMM reads the quantized tensor), not a vector operator;
* an operator whose inputs are all weights (``DequantizeLinear`` of a QDQ weight, a ``Transpose`` or
  ``Cast`` of an initializer) is folded: its output is a weight and it costs nothing per inference;
* every other operator: a vector-unit operator (:mod:`sim.vector`), reshape-like ones data movement
  only; an operator type the vector model does not know is kept as *unsupported*, with its count
  and tensor sizes, and costed by :data:`sim.vector.FALLBACK_RULE`.

No shape is guessed: a tensor whose shape neither shape inference nor the model's ``value_info``
gives is an input error naming the tensor and the node that makes it. External data is read only
where shape inference needs a value (a ``Reshape`` target, ``Slice`` bounds and the like); a missing
external file is reported then, naming the tensor and the node.

The ASP verdict of each weight GEMM comes from the initializer's real shape (torch layout: (out,
in) for a linear layer, (Cout, Cin/groups, kh, kw) for a convolution). ``weight_params`` is the
element count of every initializer (the weights the file stores).
"""

from __future__ import annotations

import math
from dataclasses import replace
from pathlib import Path

from hw.errors import InputError
from sim.asp_rules import ACT_GEMM, CONV, DEPTHWISE, WEIGHT_GEMM
from sim.importers.einsum import EinsumGemm, parse_einsum
from sim.layers import Workload, make_layer
from sim.vector import FALLBACK_RULE, VectorOp, make_op

#: ONNX TensorProto element types of quantized operands -> the operand format (hw.precision names).
#: The numbers are the onnx.proto ``TensorProto.DataType`` enum values (INT8 3, UINT8 2, UINT4 21,
#: INT4 22, FLOAT8E4M3FN 17, FLOAT8E4M3FNUZ 18, FLOAT8E5M2 19, FLOAT8E5M2FNUZ 20).
QUANTIZED_TYPES = {3: "int8", 2: "int8", 22: "int4", 21: "int4", 17: "fp8-e4m3", 18: "fp8-e4m3",
                   19: "fp8-e5m2", 20: "fp8-e5m2"}
#: The GEMM-family operators: input index of the activation, the weight and the bias (None: no bias).
MATMUL_OPS = {"MatMul": (0, 1, None), "Gemm": (0, 1, 2), "MatMulInteger": (0, 1, None), "QLinearMatMul": (0, 3, None)}
CONV_OPS = {"Conv": (0, 1, 2), "ConvInteger": (0, 1, None), "QLinearConv": (0, 3, 8), "ConvTranspose": (0, 1, 2)}
#: Consumers into which a DequantizeLinear of an activation is fused (QDQ pairs).
QDQ_CONSUMERS = {"MatMul", "Gemm", "Conv", "ConvTranspose", "Einsum"}
#: Operators whose output is a weight when every input is one (folded before inference runs).
FOLDABLE = {"DequantizeLinear", "Cast", "Transpose", "Reshape", "Identity", "Squeeze", "Unsqueeze", "Flatten",
            "QuantizeLinear"}
#: Inputs whose *values* (not only shapes) shape inference reads: op type -> input indices.
#: [P] the ONNX operator specification of each (target shape, bounds, axes, pads, repeats, k, sizes).
VALUE_INPUTS = {"Reshape": (1,), "Expand": (1,), "Tile": (1,), "Slice": (1, 2, 3, 4), "Pad": (1, 3),
                "ConstantOfShape": (0,), "Resize": (1, 2, 3), "Upsample": (1,), "Squeeze": (1,), "Unsqueeze": (1,),
                "TopK": (1,), "Range": (0, 1, 2), "Split": (1,), "OneHot": (1,), "CenterCropPad": (1,),
                "Col2Im": (1, 2), **{f"Reduce{r}": (1,) for r in ("Mean", "Sum", "Max", "Min", "Prod", "L1", "L2",
                                                                    "LogSum", "LogSumExp", "SumSquare")}}
#: Small integer initializers are read from external data too when present (data propagation through
#: shape arithmetic may need them); [A] 1,024 elements bounds a shape tensor with room to spare.
SMALL_INT_ELEMENTS = 1024


def parse_shape(text: str, where: str = "--input-shape") -> tuple[str, tuple[int, ...]]:
    """``"NAME=1x3x224x224"`` -> ("NAME", (1, 3, 224, 224))."""
    name, sep, dims = str(text).partition("=")
    if not sep or not name.strip():
        raise InputError(f"expected NAME=D1xD2x..., got {text!r}", where=where)
    return name.strip(), _dims(dims, where, name.strip())


def parse_shapes(texts: list[str] | None, where: str = "--input-shape") -> dict[str, tuple[int, ...]]:
    """Every ``NAME=...`` of a repeated flag; the same NAME twice is an error."""
    out: dict[str, tuple[int, ...]] = {}
    for text in texts or []:
        name, dims = parse_shape(text, where)
        if name in out:
            raise InputError(f"input {name!r} is given twice", where=where)
        out[name] = dims
    return out


def _dims(dims, where: str, name: str) -> tuple[int, ...]:
    if isinstance(dims, (list, tuple)):
        parts = list(dims)
    else:
        parts = [p for p in str(dims).strip().lower().split("x")]
    try:
        out = tuple(int(str(p).strip()) for p in parts)
    except ValueError:
        raise InputError(f"shape of {name!r} must be positive integers like 1x3x224x224, got {dims!r}",
                         where=where) from None
    if not out or min(out) <= 0:
        raise InputError(f"shape of {name!r} must be positive integers like 1x3x224x224, got {dims!r}", where=where)
    return out


def _onnx():
    try:
        import onnx  # heavy optional dependency, loaded on use so a missing package is a one-line error
        import onnx.shape_inference  # noqa: F401 - the submodule, loaded with onnx on use (same reason)
    except ImportError as exc:  # pragma: no cover - onnx is a dependency
        raise InputError("the onnx package is not installed (pip install onnx)", where="--onnx") from exc
    return onnx


def _shape_of(vi) -> list | None:
    t = vi.type
    if not t.HasField("tensor_type") or not t.tensor_type.HasField("shape"):
        return None
    out = []
    for dim in t.tensor_type.shape.dim:
        if dim.HasField("dim_value"):
            out.append(int(dim.dim_value))
        elif dim.HasField("dim_param"):
            out.append(str(dim.dim_param))
        else:
            out.append(None)
    return out


def _attrs(onnx, node) -> dict:
    return {a.name: onnx.helper.get_attribute_value(a) for a in node.attribute}


def _broadcast(a: list[int], b: list[int]) -> list[int] | None:
    """numpy broadcasting of two batch shapes (None: they do not broadcast)."""
    out = []
    for i in range(max(len(a), len(b))):
        x = a[len(a) - 1 - i] if i < len(a) else 1
        y = b[len(b) - 1 - i] if i < len(b) else 1
        if x != y and 1 not in (x, y):
            return None
        out.append(max(x, y))
    return out[::-1]


def _resolve_inputs(g, inits, shapes_in: dict, batch: int | None, where: str) -> dict[str, int]:
    """Give every graph input concrete dimensions (--input-shape, then its symbols, then --batch);
    returns the symbol values used, for the model's value_info."""
    graph_inputs = [vi for vi in g.input if vi.name not in inits]
    names = {vi.name for vi in graph_inputs}
    for k in shapes_in:
        if k not in names:
            raise InputError(f"no graph input named {k!r} (inputs: {', '.join(sorted(names)) or 'none'})",
                             where="--input-shape")
    symbol: dict[str, int] = {}
    for vi in graph_inputs:
        if vi.name in shapes_in:
            cur = _shape_of(vi) or []
            given = shapes_in[vi.name]
            if cur and len(cur) != len(given):
                raise InputError(f"input {vi.name!r} has rank {len(cur)}, --input-shape gives {len(given)} dims",
                                 where="--input-shape")
            for c, v in zip(cur, given):
                if isinstance(c, str):
                    symbol.setdefault(c, v)
                elif isinstance(c, int) and c != v and c > 0:
                    raise InputError(f"input {vi.name!r} has fixed size {c} where --input-shape gives {v}",
                                     where="--input-shape")
    for vi in graph_inputs:
        shp = _shape_of(vi)
        if shp is None:
            if vi.name not in shapes_in:
                raise InputError(f"graph input {vi.name!r} has no shape: give --input-shape {vi.name}=...", where=where)
            shp = [None] * len(shapes_in[vi.name])
        new = []
        for i, c in enumerate(shp):
            if vi.name in shapes_in:
                v = shapes_in[vi.name][i]
            elif isinstance(c, int) and c > 0:
                v = c
                if i == 0 and batch is not None and c != batch:
                    raise InputError(f"input {vi.name!r} has a fixed leading dimension {c}; --batch {batch} cannot "
                                     "change it (export the model with a dynamic batch axis)", where="--batch")
            elif isinstance(c, str) and c in symbol:
                v = symbol[c]
            elif i == 0 and batch is not None:
                v = batch
                if isinstance(c, str):
                    symbol.setdefault(c, batch)
            else:
                label = repr(c) if isinstance(c, str) else f"#{i}"
                raise InputError(f"dimension {label} of input {vi.name!r} is unresolved: give --input-shape "
                                 f"{vi.name}=" + "x".join(str(x) if isinstance(x, int) and x > 0 else "N" for x in shp),
                                 where=where)
            new.append(v)
        dims = vi.type.tensor_type.shape.dim
        del dims[:]
        for v in new:
            dims.add().dim_value = int(v)
    # the same symbol means the same size in the model's own value_info and outputs
    for vi in list(g.value_info) + list(g.output):
        if vi.type.HasField("tensor_type") and vi.type.tensor_type.HasField("shape"):
            for dim in vi.type.tensor_type.shape.dim:
                if dim.HasField("dim_param") and dim.dim_param in symbol:
                    dim.dim_value = int(symbol[dim.dim_param])
    return symbol


def _read_needed_external(onnx, model, base: Path, where: str) -> list[str]:
    """Put into the model the external tensors shape inference reads (``VALUE_INPUTS``, and small
    integer tensors when their file is there); a missing file of a needed tensor is an input error.
    Returns the external files that are missing (named when a shape then cannot be inferred)."""
    g = model.graph
    ext = {t.name: t for t in g.initializer if t.data_location == onnx.TensorProto.EXTERNAL}
    if not ext:
        return []
    needed: dict[str, str] = {}
    for node in g.node:
        for i in VALUE_INPUTS.get(node.op_type, ()):
            if i < len(node.input) and node.input[i] in ext:
                needed.setdefault(node.input[i], f"{node.op_type} {node.name!r}")
    missing: list[str] = []
    root = base.resolve()
    for name, t in ext.items():
        info = {e.key: e.value for e in t.external_data}
        n_el = math.prod(int(d) for d in t.dims)
        small_int = t.data_type in (6, 7) and n_el <= SMALL_INT_ELEMENTS  # INT32, INT64
        if name not in needed and not small_int:
            continue
        loc = info.get("location", "")
        f = (base / loc).resolve()
        if not loc or root not in f.parents:
            raise InputError(f"external data of tensor {name!r} points outside the model's directory ({loc!r})",
                             where=where)
        itemsize = onnx.helper.tensor_dtype_to_np_dtype(t.data_type).itemsize
        try:
            offset, length = int(info.get("offset", 0)), int(info.get("length", n_el * itemsize))
        except ValueError:
            raise InputError(f"external data of tensor {name!r} has a bad offset or length", where=where) from None
        data = None
        if f.is_file():
            with f.open("rb") as fh:
                fh.seek(offset)
                data = fh.read(length)
            if len(data) != length:
                data = None
        if data is None:
            if name in needed:
                raise InputError(f"external data of tensor {name!r} ({loc}, {length} bytes at offset {offset}) is "
                                 f"missing or short, and {needed[name]} needs its values for shape inference",
                                 where=where)
            missing.append(loc)
            continue
        t.raw_data = data
        del t.external_data[:]
        t.data_location = onnx.TensorProto.DEFAULT
    return sorted(set(missing))


def _infer(onnx, model, where: str) -> tuple[dict[str, list], dict[str, int]]:
    """Shape inference (with data propagation): tensor -> shape, tensor -> element type. Nothing is assumed."""
    try:
        inferred = onnx.shape_inference.infer_shapes(model, strict_mode=False, data_prop=True)
    except Exception as exc:
        raise InputError(f"ONNX shape inference failed: {str(exc).splitlines()[0] if str(exc) else type(exc).__name__}",
                         where=where) from None
    g = inferred.graph
    shapes: dict[str, list] = {}
    elem: dict[str, int] = {}
    for vi in list(g.input) + list(g.value_info) + list(g.output):
        s = _shape_of(vi)
        if s is not None:
            shapes[vi.name] = s
        if vi.type.HasField("tensor_type"):
            elem[vi.name] = int(vi.type.tensor_type.elem_type)
    for t in g.initializer:
        shapes[t.name] = [int(d) for d in t.dims]
        elem[t.name] = int(t.data_type)
    return shapes, elem


def load_onnx(path: str | Path, input_shapes: dict[str, tuple[int, ...] | str] | None = None,
              batch: int | None = None, *, n: int = 2, m: int = 4) -> Workload:
    onnx = _onnx()
    p = Path(path)
    where = str(p)
    if not p.is_file():
        raise InputError("ONNX file not found", where=where)
    try:
        model = onnx.load(str(p), load_external_data=False)
    except Exception as exc:  # protobuf DecodeError and friends: not an ONNX model
        raise InputError(f"not a readable ONNX model ({type(exc).__name__}: {str(exc).splitlines()[0] if str(exc) else ''})",
                         where=where) from None
    g = model.graph
    if not len(g.node):
        raise InputError("the ONNX graph has no nodes (not an ONNX model?)", where=where)
    if batch is not None and (not isinstance(batch, int) or isinstance(batch, bool) or batch <= 0):
        raise InputError(f"batch must be a positive integer, got {batch!r}", where="--batch")
    shapes_in = {k: _dims(v, "--input-shape", k) for k, v in (input_shapes or {}).items()}
    inits = {t.name: tuple(int(d) for d in t.dims) for t in g.initializer}
    consts, const_type = {}, {}
    for node in g.node:
        if node.op_type == "Constant" and node.output:
            a = _attrs(onnx, node)
            if "value" in a:
                consts[node.output[0]] = tuple(int(d) for d in a["value"].dims)
                const_type[node.output[0]] = int(a["value"].data_type)
    _resolve_inputs(g, inits, shapes_in, batch, where)
    missing_ext = _read_needed_external(onnx, model, p.parent, where)
    shapes, elem = _infer(onnx, model, where)
    elem.update(const_type)
    for name, shp in {**inits, **consts}.items():
        shapes[name] = list(shp)
    return _map_nodes(onnx, model, p.stem, where, shapes, elem, inits, consts, missing_ext, n, m)


def _fold_weights(g, weights: dict, wq: dict[str, str], shapes: dict) -> set[int]:
    """The nodes folded at load time; their outputs join ``weights`` (and ``wq``, their quantized format)."""
    # weights that pass through a constant-foldable op (a QDQ model's DequantizeLinear, a Transpose or
    # Cast of an initializer) stay weights: the op is folded at load time and costs nothing per inference
    folded: set[int] = set()
    for idx, node in enumerate(g.node):
        ins = [x for x in node.input if x]
        if node.op_type in FOLDABLE and ins and all(x in weights for x in ins):
            folded.add(idx)
            for o in node.output:
                if o and shapes.get(o) is not None and all(isinstance(x, int) for x in shapes[o]):
                    weights[o] = tuple(shapes[o])
                    if ins[0] in wq:
                        wq[o] = wq[ins[0]]
    return folded


def _qdq_activations(g, folded: set[int], elem: dict) -> tuple[dict[str, str], set[int]]:
    """The activations behind a DequantizeLinear with their quantized format, and the DequantizeLinear
    nodes fused into the GEMMs that consume them."""
    consumers: dict[str, list] = {}
    for idx, node in enumerate(g.node):
        if idx in folded:
            continue
        for x in node.input:
            if x:
                consumers.setdefault(x, []).append(node)
    # activations behind a DequantizeLinear: their quantized format (the QDQ pair's precision)
    aq: dict[str, str] = {}
    fused: set[int] = set()
    for idx, node in enumerate(g.node):
        if idx in folded or node.op_type != "DequantizeLinear" or not node.output or not node.output[0]:
            continue
        t = QUANTIZED_TYPES.get(elem.get(node.input[0], 0))
        if t:
            aq[node.output[0]] = t
            cons = consumers.get(node.output[0], [])
            outs_of_graph = {o.name for o in g.output}
            if cons and node.output[0] not in outs_of_graph and all(c.op_type in QDQ_CONSUMERS for c in cons):
                fused.add(idx)
    return aq, fused


def _map_nodes(onnx, model, stem: str, where: str, shapes: dict, elem: dict, inits: dict, consts: dict,
               missing_ext: list[str], n: int, m: int) -> Workload:
    g = model.graph
    weights = {**inits, **consts}
    # the quantized format of a weight (its initializer's type), carried through folded ops
    wq: dict[str, str] = {k: QUANTIZED_TYPES[t] for k, t in elem.items() if k in weights and t in QUANTIZED_TYPES}
    folded = _fold_weights(g, weights, wq, shapes)
    aq, fused = _qdq_activations(g, folded, elem)

    layers: list = []
    ops: list[VectorOp] = []
    used: dict[str, int] = {}

    def uniq(base: str) -> str:
        base = base or "node"
        k = used.get(base, 0)
        used[base] = k + 1
        return base if k == 0 else f"{base}#{k}"

    def shape(name: str, node) -> list[int]:
        s = shapes.get(name)
        label = f"{node.op_type} node {node.name!r}" + (f" (domain {node.domain})" if node.domain else "")
        if s is None:
            hint = (f"; external data files missing: {', '.join(missing_ext)}" if missing_ext else "")
            raise InputError(f"the shape of tensor {name!r} ({'input' if name in node.input else 'output'} of {label}) "
                             "cannot be inferred and is not guessed: give it in the model's value_info (e.g. "
                             f"onnxruntime's symbolic_shape_infer) or --input-shape for the inputs it depends on{hint}",
                             where=where)
        if any(not (isinstance(x, int) and x >= 0) for x in s):
            bad = [x for x in s if not (isinstance(x, int) and x >= 0)]
            raise InputError(f"tensor {name!r} ({label}) has unresolved dimensions {bad} after shape inference: "
                             "give --input-shape for the inputs it depends on", where=where)
        return s

    def precision(*names: str, integer: bool = False) -> str | None:
        """The quantized format of a GEMM: its weight's, else its activation's (behind a DequantizeLinear,
        or, for the integer / QLinear operators, the operand's own element type)."""
        for x in names:
            if x in wq:
                return wq[x]
        for x in names:
            if x in aq:
                return aq[x]
        if integer:
            for x in names:
                if elem.get(x) in QUANTIZED_TYPES:
                    return QUANTIZED_TYPES[elem[x]]
        return None

    def add(layer, prec):
        layers.append(replace(layer, precision=prec) if prec else layer)

    for idx, node in enumerate(g.node):
        if idx in folded or idx in fused:
            continue
        op = node.op_type
        nm = uniq(node.name or f"{op}_{idx}")
        a = _attrs(onnx, node)
        ins = list(node.input)
        loc = f"{where}: node {node.name!r}"
        if op in CONV_OPS:
            xi, wi, bi = CONV_OPS[op]
            X, W = ins[xi], ins[wi]
            if W not in weights:
                raise InputError(f"{op} {node.name!r}: the weight {W!r} is not an initializer (dynamic weights are "
                                 "not modelled)", where=where)
            xs, ws = shape(X, node), list(weights[W])
            _check_groups(op, xs, ws, a.get("group", 1), node, where)
            ys = shape(node.output[0], node)
            prec = precision(W, X, integer=op in ("ConvInteger", "QLinearConv"))
            layer, extra = _conv(op, nm, xs, ws, ys, a, node, where, loc, n, m)
            add(layer, prec)
            ops += extra
            if bi is not None and bi < len(ins) and ins[bi]:
                ops.append(make_op(f"{nm}.bias", "Add", ys, [ys], params=math.prod(weights.get(ins[bi], (0,)))))
            continue
        if op in MATMUL_OPS:
            ai, bi, ci = MATMUL_OPS[op]
            A, Bn = ins[ai], ins[bi]
            sa, sb = list(shape(A, node)), list(shape(Bn, node))
            for t, s in ((A, sa), (Bn, sb)):
                if not s:
                    raise InputError(f"{op} {node.name!r}: input {t!r} is a scalar (rank 0); a matrix product needs "
                                     "rank >= 1", where=where)
            ys = shape(node.output[0], node)
            layer = _matmul(op, nm, A, Bn, sa, sb, a, weights, node, where, loc, n, m)
            add(layer, precision(Bn, A, integer=op in ("MatMulInteger", "QLinearMatMul")))
            if ci is not None and ci < len(ins) and ins[ci]:
                ops.append(make_op(f"{nm}.bias", "Add", ys, [ys], params=math.prod(weights.get(ins[ci], (0,)))))
            continue
        act_in = [tuple(shapes[x]) for x in ins if x and x not in weights and shapes.get(x) is not None]
        outs = [o for o in node.output if o]
        if op == "Einsum":
            eq = a.get("equation", b"")
            eq = eq.decode("utf-8", "replace") if isinstance(eq, bytes) else str(eq)
            operands = [x for x in ins if x]
            try:
                res = parse_einsum(eq, [list(shape(x, node)) for x in operands])
            except ValueError as exc:
                raise InputError(f"Einsum equation {eq!r} does not parse: {exc}", where=loc) from None
            if isinstance(res, EinsumGemm):
                wa, wb = operands[0] in weights, operands[1] in weights
                if wa != wb:  # one operand is a weight: activation rows x weight columns
                    M, N = (res.N, res.M) if wa else (res.M, res.N)
                    L = make_layer(nm, WEIGHT_GEMM, M, N, res.K, weight_shape=(N, res.K), count=res.count, n=n, m=m,
                                   where=loc)
                else:
                    L = make_layer(nm, WEIGHT_GEMM if wa else ACT_GEMM, res.M, res.N, res.K, count=res.count, n=n,
                                   m=m, where=loc)
                add(L, precision(*operands))
                continue
            v = make_op(nm, op, tuple(shape(outs[0], node)), act_in)
            ops.append(replace(v, reason=f"Einsum equation {eq!r} is not a GEMM ({res}); {FALLBACK_RULE} "
                                         f"(domain {node.domain or 'ai.onnx'})"))
            continue
        out_shape = tuple(shape(outs[0], node)) if outs else ()
        params = sum(math.prod(weights[x]) for x in ins if x in inits)
        window = math.prod(a["kernel_shape"]) if "kernel_shape" in a else None
        row = None
        if op in ("Softmax", "LogSoftmax") and out_shape:
            row = out_shape[int(a.get("axis", -1))]
        elif op == "LayerNormalization" and out_shape:
            row = math.prod(out_shape[int(a.get("axis", -1)):])
        v = make_op(nm, op, out_shape, act_in, params=params, window=window, row=row, attrs=a)
        if not v.supported:
            v = replace(v, reason=f"{v.reason} (domain {node.domain or 'ai.onnx'})")
        ops.append(v)
    if not layers and not ops:
        raise InputError("no operators found", where=where)
    total_params = sum(math.prod(s) for s in inits.values()) + sum(math.prod(s) for s in consts.values())
    return Workload(stem, tuple(layers), tuple(ops), stored_weight_params=int(total_params))


def _conv(op, nm, xs, ws, ys, a, node, where, loc, n, m):
    """One convolution-family node: (layer, extra vector ops)."""
    grp = int(a.get("group", 1))
    B, cin = xs[0], xs[1]
    kern = math.prod(ws[2:])
    if op != "ConvTranspose":
        cout = ws[0]
        M = B * math.prod(ys[2:])
        if grp > 1 and grp == cin and ws[1] == 1:  # depthwise, channel multiplier cout / cin
            return make_layer(nm, DEPTHWISE, M, cout // grp, kern, weight_shape=tuple(ws), count=grp, groups=grp,
                              n=n, m=m, where=loc), []
        return make_layer(nm, CONV, M, cout // grp, (cin // grp) * kern, weight_shape=tuple(ws), count=grp,
                          groups=grp, n=n, m=m, where=loc), []
    cout = ws[1] * grp
    M = B * math.prod(xs[2:])
    L = make_layer(nm, WEIGHT_GEMM, M, (cout // grp) * kern, cin // grp,
                   weight_shape=((cout // grp) * kern, cin // grp), count=grp, groups=1, n=n, m=m, where=loc)
    # ASP's default whitelist (Linear, Conv1d/2d/3d, MultiheadAttention) has no ConvTranspose
    L = replace(L, sparsifiable=False, reason="ConvTranspose is not in ASP's default whitelist "
                                              "(Linear, Conv1d/2d/3d, MultiheadAttention): kept dense",
                weight_shape=tuple(ws), groups=grp)
    return L, [make_op(f"{nm}.col2im", "Col2Im", ys, [(M, (cout // grp) * kern * grp)])]


def _check_groups(op: str, xs: list[int], ws: list[int], grp, node, where: str) -> None:
    """The group count divides the channels, and the weight fits the input (before any output shape is read)."""
    if len(xs) < 3 or len(ws) != len(xs):
        raise InputError(f"{op} {node.name!r}: input of rank {len(xs)} and weight of rank {len(ws)} do not make a "
                         "convolution", where=where)
    cin = xs[1]
    if isinstance(grp, bool) or not isinstance(grp, int) or grp < 1 or cin % grp:
        raise InputError(f"{op} {node.name!r}: group {grp} does not divide the {cin} input channels", where=where)
    if op == "ConvTranspose":
        if ws[0] != cin:
            raise InputError(f"{op} {node.name!r}: weight {tuple(ws)} expects {ws[0]} input channels, the input has "
                             f"{cin}", where=where)
        return
    if ws[0] % grp:
        raise InputError(f"{op} {node.name!r}: group {grp} does not divide the {ws[0]} output channels", where=where)
    if ws[1] * grp != cin:
        raise InputError(f"{op} {node.name!r}: weight {tuple(ws)} expects {ws[1] * grp} input channels "
                         f"({ws[1]} per group x {grp} groups), the input has {cin}", where=where)


def _matmul(op, nm, A, Bn, sa, sb, a, weights, node, where, loc, n, m):
    """One matrix-product node as a layer (numpy broadcasting of the batch dimensions, counted once)."""
    if op == "Gemm":
        if len(sa) != 2 or len(sb) != 2:
            raise InputError(f"Gemm {node.name!r}: operands must be matrices, got ranks {len(sa)} and {len(sb)}",
                             where=where)
        if a.get("transA", 0):
            sa = sa[::-1]
        if a.get("transB", 0):
            sb = sb[::-1]
    else:
        if len(sa) == 1:
            sa = [1] + sa
        if len(sb) == 1:
            sb = sb + [1]
    Mi, K, N = sa[-2], sa[-1], sb[-1]
    if sb[-2] != K:
        raise InputError(f"{op} {node.name!r}: inner dimensions differ ({sa} x {sb})", where=where)
    bat = _broadcast(sa[:-2], sb[:-2])
    if bat is None:
        raise InputError(f"{op} {node.name!r}: batch dimensions {sa[:-2]} and {sb[:-2]} do not broadcast", where=where)
    total = math.prod(bat)
    wa, wb = A in weights, Bn in weights
    if wb and not wa:
        # one GEMM per weight matrix; the batch indices that share it stack along M
        cnt = math.prod(sb[:-2])
        # torch layout (out, in): ONNX MatMul stores (K, N), Gemm with transB=1 stores (N, K)
        return make_layer(nm, WEIGHT_GEMM, Mi * (total // cnt), N, K, weight_shape=(N, K), count=cnt, n=n, m=m,
                          where=loc)
    if wa and not wb:
        cnt = math.prod(sa[:-2])
        # Y = W X: Y^T = X^T W^T, a weight GEMM with the roles swapped (M = N of X, N = rows of W)
        return make_layer(nm, WEIGHT_GEMM, N * (total // cnt), Mi, K, weight_shape=(Mi, K), count=cnt, n=n, m=m,
                          where=loc)
    return make_layer(nm, ACT_GEMM if not (wa and wb) else WEIGHT_GEMM, Mi, N, K, count=total, n=n, m=m, where=loc)
