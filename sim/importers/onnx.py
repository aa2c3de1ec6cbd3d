"""ONNX import: a model file -> a workload of GEMM layers (the array) and vector-unit operators.

``load_onnx(path, input_shapes={"x": (1, 3, 224, 224)}, batch=None)`` reads the graph with the
``onnx`` package (weights left on disk: only tensor shapes are read), fixes the graph inputs' shapes
(``input_shapes`` per input; ``batch`` for a symbolic leading dimension), runs ONNX shape inference
and maps every node:

* ``Conv`` (groups, dilation and strides from the attributes; output size from shape inference):
  per group M = batch x output pixels, N = Cout/groups, K = Cin/groups x kernel elements, count =
  groups; groups = Cin = Cout is a depthwise convolution (N = 1, K = kernel, count = channels);
* ``ConvTranspose``: the scatter form, one GEMM per group: M = batch x input pixels, N = Cout/groups x
  kernel elements, K = Cin/groups (the true MAC count), then the overlap-add of the columns
  (``Col2Im``) on the vector unit;
* ``MatMul`` / ``Gemm`` with a weight (an initializer or a ``Constant``) as one operand: a weight GEMM
  whose leading dimensions fold into M; with two activations: an activation x activation GEMM
  (``act_gemm``, never pruned), one per broadcast batch index; the bias of a ``Gemm`` is a vector ``Add``;
* an operator whose inputs are all weights (``DequantizeLinear`` of a QDQ model, a ``Transpose`` or
  ``Cast`` of an initializer) is folded: its output is a weight and it costs nothing per inference;
* every other operator: a vector-unit operator (:mod:`sim.vector`), reshape-like ones data movement
  only; an operator type the vector model does not know is kept as *unsupported*, with its count
  and tensor sizes, and costed by :data:`sim.vector.FALLBACK_RULE`. Its outputs, when shape
  inference cannot give them, take the shape of its first input [A] (stated in the entry).

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
from sim.layers import Workload, make_layer
from sim.vector import VectorOp, known_op, make_op


def parse_shape(text: str, where: str = "--input-shape") -> tuple[str, tuple[int, ...]]:
    """``"NAME=1x3x224x224"`` -> ("NAME", (1, 3, 224, 224))."""
    name, sep, dims = str(text).partition("=")
    if not sep or not name.strip():
        raise InputError(f"expected NAME=D1xD2x..., got {text!r}", where=where)
    return name.strip(), _dims(dims, where, name.strip())


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
        from onnx import shape_inference  # noqa: F401 (availability check) - onnx loads on use, as above
    except ImportError as exc:  # pragma: no cover - onnx is a dependency
        raise InputError("the onnx package is not installed (pip install onnx)", where="--onnx") from exc
    return onnx


def _shape_of(vi) -> list:
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


def _attrs(node) -> dict:
    from onnx import helper  # onnx loads on use (heavy optional dependency, see _onnx)

    return {a.name: helper.get_attribute_value(a) for a in node.attribute}


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
    consts = {}
    for node in g.node:
        if node.op_type == "Constant" and node.output:
            a = _attrs(node)
            if "value" in a:
                consts[node.output[0]] = tuple(int(d) for d in a["value"].dims)
    weights = {**inits, **consts}
    graph_inputs = [vi for vi in g.input if vi.name not in inits]
    names = {vi.name for vi in graph_inputs}
    for k in shapes_in:
        if k not in names:
            raise InputError(f"no graph input named {k!r} (inputs: {', '.join(sorted(names)) or 'none'})",
                             where="--input-shape")
    # resolve every graph input's dimensions: --input-shape, then symbolic names seen there, then --batch
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
    shapes = _infer(onnx, model, where)
    for name, shp in inits.items():
        shapes[name] = list(shp)
    for name, shp in consts.items():
        shapes[name] = list(shp)

    # weights that pass through a constant-foldable op (a QDQ model's DequantizeLinear, a Transpose or
    # Cast of an initializer) stay weights: the op is folded at load time and costs nothing per inference
    folded: set[int] = set()
    for idx, node in enumerate(g.node):
        ins = [x for x in node.input if x]
        if node.op_type in _FOLDABLE and ins and all(x in weights for x in ins):
            folded.add(idx)
            for o in node.output:
                if o and shapes.get(o) is not None and all(isinstance(x, int) for x in shapes[o]):
                    weights[o] = tuple(shapes[o])

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
        if s is None or any(not (isinstance(x, int) and x >= 0) for x in s):
            bad = [x for x in (s or []) if not isinstance(x, int)]
            raise InputError(f"tensor {name!r} (output of {node.op_type} {node.name!r}) has unresolved dimensions "
                             f"{bad or 'unknown'} after shape inference: give --input-shape for the inputs it depends on",
                             where=where)
        return s

    for idx, node in enumerate(g.node):
        if idx in folded:
            continue
        op = node.op_type
        nm = uniq(node.name or f"{op}_{idx}")
        a = _attrs(node)
        ins = [x for x in node.input if x]
        if op in ("Conv", "ConvTranspose"):
            X, W = ins[0], ins[1]
            if W not in weights:
                raise InputError(f"{op} {node.name!r}: the weight {W!r} is not an initializer (dynamic weights are "
                                 "not modelled)", where=where)
            xs, ws, ys = shape(X, node), list(weights[W]), shape(node.output[0], node)
            grp = int(a.get("group", 1))
            B, cin = xs[0], xs[1]
            kern = math.prod(ws[2:])
            if op == "Conv":
                cout = ws[0]
                M = B * math.prod(ys[2:])
                if grp > 1 and grp == cin and ws[1] == 1:
                    L = make_layer(nm, DEPTHWISE, M, 1, kern, weight_shape=tuple(ws), count=grp, groups=grp, n=n, m=m,
                                   where=f"{where}: node {node.name!r}")
                else:
                    L = make_layer(nm, CONV, M, cout // grp, (cin // grp) * kern, weight_shape=tuple(ws), count=grp,
                                   groups=grp, n=n, m=m, where=f"{where}: node {node.name!r}")
                layers.append(L)
            else:
                cout = ws[1] * grp
                M = B * math.prod(xs[2:])
                L = make_layer(nm, WEIGHT_GEMM, M, (cout // grp) * kern, cin // grp,
                               weight_shape=((cout // grp) * kern, cin // grp), count=grp, groups=1, n=n, m=m,
                               where=f"{where}: node {node.name!r}")
                # ASP's default whitelist (Linear, Conv1d/2d/3d, MultiheadAttention) has no ConvTranspose
                L = replace(L, sparsifiable=False, reason="ConvTranspose is not in ASP's default whitelist "
                                                          "(Linear, Conv1d/2d/3d, MultiheadAttention): kept dense",
                            weight_shape=tuple(ws), groups=grp)
                layers.append(L)
                ops.append(make_op(f"{nm}.col2im", "Col2Im", ys, [(M, (cout // grp) * kern * grp)]))
            if len(ins) > 2:
                ops.append(make_op(f"{nm}.bias", "Add", ys, [ys], params=math.prod(weights.get(ins[2], (0,)))))
            continue
        if op in ("MatMul", "Gemm"):
            A, Bn = ins[0], ins[1]
            ys = shape(node.output[0], node)
            if op == "Gemm":
                sa, sb = list(shape(A, node)), list(shape(Bn, node))
                if a.get("transA", 0):
                    sa = sa[::-1]
                if a.get("transB", 0):
                    sb = sb[::-1]
            else:
                sa, sb = list(shape(A, node)), list(shape(Bn, node))
                if len(sa) == 1:
                    sa = [1] + sa
                if len(sb) == 1:
                    sb = sb + [1]
            Mi, K, N = sa[-2], sa[-1], sb[-1]
            if sb[-2] != K:
                raise InputError(f"{op} {node.name!r}: inner dimensions differ ({sa} x {sb})", where=where)
            wa, wb = A in weights, Bn in weights
            if wb and not wa:
                bat = math.prod(sa[:-2])
                cnt = math.prod(sb[:-2])
                # torch layout (out, in): ONNX MatMul stores (K, N), Gemm with transB=1 stores (N, K)
                layers.append(make_layer(nm, WEIGHT_GEMM, bat * Mi, N, K, weight_shape=(N, K), count=max(cnt, 1),
                                         n=n, m=m, where=f"{where}: node {node.name!r}"))
            elif wa and not wb:
                bat = math.prod(sb[:-2])
                cnt = math.prod(sa[:-2])
                # Y = W X: Y^T = X^T W^T, a weight GEMM with the roles swapped (M = N of X, N = rows of W)
                layers.append(make_layer(nm, WEIGHT_GEMM, bat * N, Mi, K, weight_shape=(Mi, K), count=max(cnt, 1),
                                         n=n, m=m, where=f"{where}: node {node.name!r}"))
            else:
                cnt = math.prod(ys[:-2]) if len(ys) > 2 else 1
                kind = ACT_GEMM if not (wa and wb) else WEIGHT_GEMM
                layers.append(make_layer(nm, kind, Mi, N, K, count=max(cnt, 1), n=n, m=m,
                                         where=f"{where}: node {node.name!r}"))
            if op == "Gemm" and len(ins) > 2:
                ops.append(make_op(f"{nm}.bias", "Add", ys, [ys], params=math.prod(weights.get(ins[2], (0,)))))
            continue
        # every other operator: the vector unit
        act_in = [tuple(shapes[x]) for x in ins if x not in weights and shapes.get(x) is not None]
        params = sum(math.prod(weights[x]) for x in ins if x in inits)
        outs = [o for o in node.output if o]
        out_shape = tuple(shape(outs[0], node)) if outs else ()
        window = math.prod(a["kernel_shape"]) if "kernel_shape" in a else None
        row = None
        if op in ("Softmax", "LogSoftmax") and out_shape:
            row = out_shape[int(a.get("axis", -1))]
        elif op == "LayerNormalization" and out_shape:
            ax = int(a.get("axis", -1))
            row = math.prod(out_shape[ax:])
        v = make_op(nm, op, out_shape, act_in, params=params, window=window, row=row, attrs=a)
        if not v.supported:
            if outs and f"__assumed__{outs[0]}" in shapes:
                v = replace(v, reason=f"{v.reason}; output shape assumed equal to its first input's")
            v = replace(v, reason=f"{v.reason} (domain {node.domain or 'ai.onnx'})")
        ops.append(v)
    if not layers and not ops:
        raise InputError("no operators found", where=where)
    total_params = sum(math.prod(s) for s in inits.values()) + sum(math.prod(s) for s in consts.values())
    return Workload(p.stem, tuple(layers), tuple(ops), stored_weight_params=int(total_params))


#: Operators whose output is a weight when every input is one (folded before inference runs).
_FOLDABLE = {"DequantizeLinear", "Cast", "Transpose", "Reshape", "Identity", "Squeeze", "Unsqueeze", "Flatten",
             "QuantizeLinear"}


def _infer(onnx, model, where: str) -> dict[str, list]:
    """Shape inference; a node whose outputs it cannot type (an unknown op) gets its first input's
    shape [A] and inference runs again, so the graph below it is still typed."""
    from onnx import helper, shape_inference  # onnx loads on use (heavy optional dependency, see _onnx)

    assumed: set[str] = set()
    for _ in range(64):
        try:
            inferred = shape_inference.infer_shapes(model, strict_mode=False, data_prop=True)
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
                elem[vi.name] = vi.type.tensor_type.elem_type
        for t in g.initializer:
            shapes[t.name] = [int(d) for d in t.dims]
        fixed = False
        for node in g.node:
            outs = [o for o in node.output if o]
            if not outs or all(o in shapes for o in outs) or known_op(node.op_type) or node.op_type in (
                    "Conv", "ConvTranspose", "MatMul", "Gemm"):
                continue
            first = next((x for x in node.input if x and x in shapes), None)
            if first is None:
                continue
            for o in outs:
                if o not in shapes:
                    model.graph.value_info.append(helper.make_tensor_value_info(o, elem.get(first, 1), shapes[first]))
                    assumed.add(o)
                    fixed = True
        if not fixed:
            for o in assumed:
                shapes[f"__assumed__{o}"] = [1]
            return shapes
    raise InputError("shape inference did not converge", where=where)  # pragma: no cover
