"""Graph preparation before costing: what a deployment compiler does to an exported graph first.

1. The file is checked: an ``ir_version`` or an ai.onnx opset newer than the installed ``onnx``
   package knows, an ai.onnx opset older than :data:`MIN_OPSET`, two graph outputs of one name,
   an external-data entry whose offset or length is not a non-negative integer: each an input error
   naming the key and the value.
2. The given input shapes are bound (:mod:`sim.importers.onnx.shapes`).
3. Constants are folded with the onnxscript optimizer's constant folding over ``onnx-ir``
   (:func:`fold`; docs/onnx.md says why that library): the exporter's shape arithmetic
   (``Shape -> Gather -> Range/Slice``, ``ConstantOfShape -> Mul -> Equal -> Where``, ``Expand`` of a
   computed shape) becomes constants, as TensorRT, TVM or onnxruntime fold it. Quantize/dequantize
   nodes and every node that reads a weight larger than :data:`FOLD_INPUT_LIMIT` elements are kept
   (the weights stay in their stored, possibly quantized, format and are never read).
4. ONNX shape inference (with data propagation) runs over the folded graph, with the com.microsoft
   operators typed from their schemas (:mod:`sim.importers.onnx.contrib`).

The folding's own per-node inference knows no com.microsoft schema, so in a QOperator graph
exported with dynamic axes the shape arithmetic downstream of a QLinear operator (``Shape`` of the
``LayerNormalization`` after a ``QLinearAdd`` -> ``Gather`` -> ``Range``) stays unfolded.
:func:`fold_contrib` therefore alternates: infer over the typing surrogate, write the concrete
shapes of the com.microsoft outputs into the graph's ``value_info`` (:func:`annotate_contrib`), fold
again, until a round resolves nothing new (at most :data:`CONTRIB_ROUNDS`).

A dimension still unresolved after that is an input error (:func:`unresolved_message`) naming the
chain of nodes from the graph input it depends on, and the first node whose output the folding
could not resolve; it asks for ``--input-shape`` only for an input that was not given.
"""

from __future__ import annotations

import logging
import math
from pathlib import Path
from typing import TypeGuard

from hw.errors import InputError
from sim.importers.onnx.contrib import typing_surrogate
from sim.importers.onnx.shapes import shape_of

#: The oldest ai.onnx opset read: opset 7 (ONNX 1.2) brought numpy broadcasting to the element-wise
#: operators; before it, ``Add``'s ``broadcast``/``axis`` attributes gave other shapes.
#: [P] the ONNX operator changelog, Add-7.
MIN_OPSET = 7
#: Nodes reading a constant larger than this (elements) are not folded: a weight stays a weight.
#: [A] onnxscript's own default input_size_limit (8,192); shape tensors are a few elements.
FOLD_INPUT_LIMIT = 8192
#: Operators never folded: quantization stays explicit, so its format is read (lowering, quant.py).
KEEP = {"QuantizeLinear", "DequantizeLinear", "DynamicQuantizeLinear"}
#: Inputs whose *values* (not only shapes) shape inference reads: op type -> input indices.
#: [P] the ONNX operator specification of each (target shape, bounds, axes, pads, repeats, k, sizes).
VALUE_INPUTS = {
    "Reshape": (1,),
    "Expand": (1,),
    "Tile": (1,),
    "Slice": (1, 2, 3, 4),
    "Pad": (1, 3),
    "ConstantOfShape": (0,),
    "Resize": (1, 2, 3),
    "Upsample": (1,),
    "Squeeze": (1,),
    "Unsqueeze": (1,),
    "TopK": (1,),
    "Range": (0, 1, 2),
    "Split": (1,),
    "OneHot": (1,),
    "CenterCropPad": (1,),
    "Col2Im": (1, 2),
    **{
        f"Reduce{r}": (1,)
        for r in ("Mean", "Sum", "Max", "Min", "Prod", "L1", "L2", "LogSum", "LogSumExp", "SumSquare")
    },
}
#: Rounds of contrib annotation and folding (each resolves the shape arithmetic behind one more layer
#: of com.microsoft outputs; [A] two sufficed for every onnxruntime QOperator export measured).
CONTRIB_ROUNDS = 8
#: Small integer initializers are read from external data too when present (shape arithmetic may need
#: them); [A] 1,024 elements bounds a shape tensor with room to spare.
SMALL_INT_ELEMENTS = 1024


def check_model(onnx, model, where: str) -> None:
    """The file-level checks of step 1 (versions, duplicate outputs, external-data entries)."""
    ir_max = int(onnx.IR_VERSION)
    if model.ir_version > ir_max or model.ir_version < 1:
        raise InputError(
            f"ir_version {model.ir_version} is outside 1..{ir_max}, the versions onnx "
            f"{onnx.__version__} reads",
            where=where,
        )
    op_max = int(onnx.defs.onnx_opset_version())
    for imp in model.opset_import:
        if imp.domain in ("", "ai.onnx") and not MIN_OPSET <= imp.version <= op_max:
            raise InputError(
                f"opset_import ai.onnx version {imp.version} is outside {MIN_OPSET}..{op_max} (the "
                f"opsets onnx {onnx.__version__} defines, from numpy broadcasting on)",
                where=where,
            )
    seen: set[str] = set()
    for o in model.graph.output:
        if o.name in seen:
            raise InputError(
                f"graph output {o.name!r} is listed twice (output names must be unique)", where=where
            )
        seen.add(o.name)
    for t in model.graph.initializer:
        if t.data_location != onnx.TensorProto.EXTERNAL:
            continue
        for e in t.external_data:
            if e.key in ("offset", "length") and not (e.value.isascii() and e.value.isdigit()):
                raise InputError(
                    f"external data of tensor {t.name!r}: {e.key} {e.value!r} is not a non-negative integer",
                    where=where,
                )


def read_needed_external(onnx, model, base: Path, where: str) -> list[str]:
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
            raise InputError(
                f"external data of tensor {name!r} points outside the model's directory ({loc!r})",
                where=where,
            )
        itemsize = onnx.helper.tensor_dtype_to_np_dtype(t.data_type).itemsize
        offset, length = int(info.get("offset", 0)), int(info.get("length", n_el * itemsize))
        data = None
        if f.is_file():
            with f.open("rb") as fh:
                fh.seek(offset)
                data = fh.read(length)
            if len(data) != length:
                data = None
        if data is None:
            if name in needed:
                raise InputError(
                    f"external data of tensor {name!r} ({loc}, {length} bytes at offset {offset}) is "
                    f"missing or short, and {needed[name]} needs its values for shape inference",
                    where=where,
                )
            missing.append(loc)
            continue
        t.raw_data = data
        del t.external_data[:]
        t.data_location = onnx.TensorProto.DEFAULT
    return sorted(set(missing))


def _should_fold(node) -> bool | None:
    """onnxscript's fold hook: False keeps a node, True folds it, None leaves it to the default rules."""
    if node.op_type in KEEP:
        return False
    for v in node.inputs:
        if v is not None and v.const_value is not None and v.const_value.size > FOLD_INPUT_LIMIT:
            return False
    if node.op_type == "ConstantOfShape" and node.inputs and node.inputs[0] is not None:
        # the exporter's expand(n, -1) shape arithmetic: a small constant, folded (the default keeps it)
        c = node.inputs[0].const_value
        if c is not None and math.prod(int(x) for x in c.numpy().reshape(-1)) <= FOLD_INPUT_LIMIT:
            return True
    return None


def fold(onnx, model, where: str):
    """Step 3: the model with its constants and shape arithmetic folded (a new ModelProto)."""
    try:
        import onnx_ir as ir  # heavy optional part, loaded on use (the onnx importer only)
        from onnx_ir.passes.common import RemoveUnusedNodesPass  # same reason
        from onnxscript.optimizer import fold_constants  # same reason
    except ImportError:  # pragma: no cover - a pinned dependency
        raise InputError(
            "onnxscript is not installed (pip install onnxscript): sparsepe folds an ONNX graph's "
            "constants with it",
            where=where,
        ) from None
    quiet = [logging.getLogger(name) for name in ("onnxscript", "onnx_ir")]
    levels = [lg.level for lg in quiet]
    try:
        # a node the reference evaluator cannot fold is left as it is: not a warning to print
        for lg in quiet:
            lg.setLevel(logging.ERROR)
        m = ir.serde.deserialize_model(model)
        fold_constants(
            m, onnx_shape_inference=True, input_size_limit=FOLD_INPUT_LIMIT, should_fold=_should_fold
        )
        RemoveUnusedNodesPass()(m)
        return ir.serde.serialize_model(m)
    except Exception as exc:  # a graph the folding cannot read: the node it names, in one line
        cause = exc.__cause__ or exc
        raise InputError(
            f"constant folding failed: {str(exc).splitlines()[0] if str(exc) else type(exc).__name__}"
            f" ({type(cause).__name__}: {str(cause).splitlines()[0] if str(cause) else ''})",
            where=where,
        ) from None
    finally:
        for lg, lv in zip(quiet, levels, strict=True):
            lg.setLevel(lv)


def _concrete(s: list | None) -> TypeGuard[list[int]]:
    return s is not None and all(isinstance(x, int) and x >= 0 for x in s)


def annotate_contrib(onnx, model, where: str) -> int:
    """Write into ``model``'s ``value_info`` the shapes that inference over the typing surrogate gives
    the com.microsoft operators' outputs, where the graph does not hold them concretely already.
    Returns how many outputs it resolved (0: nothing new)."""
    g = model.graph
    outs = {o for n in g.node if n.domain == "com.microsoft" for o in n.output if o}
    if not outs:
        return 0
    shapes, elem = infer(onnx, model, where)
    have = {vi.name: vi for vi in g.value_info}
    resolved = 0
    for o in sorted(outs):
        s = shapes.get(o)
        if not _concrete(s) or o not in elem or (o in have and _concrete(shape_of(have[o]))):
            continue
        vi = onnx.helper.make_tensor_value_info(o, elem[o], [int(x) for x in s])
        if o in have:
            have[o].CopyFrom(vi)
        else:
            g.value_info.append(vi)
        resolved += 1
    return resolved


def fold_contrib(onnx, model, where: str):
    """Steps 3-4 for a graph with com.microsoft operators: fold, annotate their outputs, fold again
    until nothing new resolves (the module docstring). A graph without them is folded once."""
    model = fold(onnx, model, where)
    for _ in range(CONTRIB_ROUNDS):
        if not annotate_contrib(onnx, model, where):
            break
        model = fold(onnx, model, where)
    return model


def infer(onnx, model, where: str) -> tuple[dict[str, list], dict[str, int]]:
    """Step 4, over the contrib operators' typing surrogate: tensor -> shape, tensor -> element type."""
    try:
        inferred = onnx.shape_inference.infer_shapes(
            typing_surrogate(onnx, model), strict_mode=False, data_prop=True
        )
    except Exception as exc:
        raise InputError(
            f"ONNX shape inference failed: {str(exc).splitlines()[0] if str(exc) else type(exc).__name__}",
            where=where,
        ) from None
    g = inferred.graph
    shapes: dict[str, list] = {}
    elem: dict[str, int] = {}
    for vi in list(g.input) + list(g.value_info) + list(g.output):
        s = shape_of(vi)
        if s is not None:
            shapes[vi.name] = s
        if vi.type.HasField("tensor_type"):
            elem[vi.name] = int(vi.type.tensor_type.elem_type)
    for t in g.initializer:
        shapes[t.name] = [int(d) for d in t.dims]
        elem[t.name] = int(t.data_type)
    return shapes, elem


def _resolved(shapes: dict, name: str) -> bool:
    s = shapes.get(name)
    return s is not None and all(isinstance(x, int) and x >= 0 for x in s)


def unresolved_message(g, name: str, label: str, shapes: dict, given: dict, missing_ext: list[str]) -> str:
    """Why tensor ``name`` has no concrete shape: the chain of nodes from the graph input it depends on,
    the first node on it whose output folding and inference left unresolved, and what to do."""
    producer = {o: n for n in g.node for o in n.output if o}
    inputs = {vi.name for vi in g.input}
    # breadth-first back to the graph inputs: the shortest chain
    back: dict[str, str | None] = {name: None}
    frontier, found = [name], None
    while frontier and found is None:
        nxt = []
        for t in frontier:
            if t in inputs:
                found = t
                break
            node = producer.get(t)
            for x in node.input if node is not None else ():
                if x and x not in back:
                    back[x] = t
                    nxt.append(x)
        frontier = nxt
    bad = [x for x in (shapes.get(name) or []) if not (isinstance(x, int) and x >= 0)]
    head = (
        f"tensor {name!r} ({label}) has unresolved dimensions {bad} after binding the input shapes and folding "
        "constants"
    )
    if found is None:
        hint = f"; external data files missing: {', '.join(missing_ext)}" if missing_ext else ""
        return f"{head}; it depends on no graph input (a value the file does not hold){hint}"
    chain = []
    tensor: str | None = found
    while tensor is not None:
        if tensor in producer:
            chain.append(producer[tensor])
        tensor = back[tensor]
    first = next((n for n in chain if not all(_resolved(shapes, o) for o in n.output if o)), None)
    path = " -> ".join(f"{n.op_type} {n.name!r}" for n in chain[:8]) + (" -> ..." if len(chain) > 8 else "")
    msg = f"{head}; it depends on graph input {found!r} through {path}"
    if first is not None:
        msg += f"; the first unresolved value is the output of {first.op_type} {first.name!r}"
    if found in given:
        return (
            msg + f" (input {found!r} was given as {'x'.join(map(str, given[found]))}: the graph computes "
            "this size from something other than its input shapes)"
        )
    return msg + f": give --input-shape {found}=..."
