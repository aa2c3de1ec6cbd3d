"""The mapping of a prepared ONNX graph's nodes to GEMM layers (the array) and vector-unit operators.

See :mod:`sim.importers.onnx` for the rules; this module applies them node by node over the graph
that :mod:`sim.importers.onnx.prepare` folded and typed, after the lowering decisions of
:mod:`sim.importers.onnx.quant` and the expert weights of :mod:`sim.importers.onnx.moe`.
"""

from __future__ import annotations

import math
from collections.abc import Callable
from dataclasses import dataclass, field, replace
from typing import Any

from hw.errors import InputError
from sim.asp_rules import ACT_GEMM, CONV, DEPTHWISE, WEIGHT_GEMM
from sim.importers.einsum import EinsumGemm, parse_einsum
from sim.importers.onnx.contrib import ELEMENTWISE, QLINEAR_VECTOR, qlinear_data_inputs
from sim.importers.onnx.moe import ExpertWeights, expert_layers, find_experts
from sim.importers.onnx.opclasses import OP_CLASSES, vector_op
from sim.importers.onnx.prepare import unresolved_message
from sim.importers.onnx.quant import QUANTIZED_TYPES, fold_weights, lower
from sim.layers import Workload, make_layer
from sim.vector import FALLBACK_RULE, make_op

#: The GEMM-family operators: input index of the activation, the weight and the bias (None: no bias).
MATMUL_OPS = {
    "MatMul": (0, 1, None),
    "Gemm": (0, 1, 2),
    "MatMulInteger": (0, 1, None),
    "QLinearMatMul": (0, 3, None),
    "QGemm": (0, 3, 6),
}
CONV_OPS = {
    "Conv": (0, 1, 2),
    "ConvInteger": (0, 1, None),
    "QLinearConv": (0, 3, 8),
    "ConvTranspose": (0, 1, 2),
    "DeformConv": (0, 1, 3),
}
INTEGER_OPS = {"ConvInteger", "QLinearConv", "MatMulInteger", "QLinearMatMul", "QGemm"}
#: The recurrent operators: gates per step (the W and R matrices hold gates x hidden rows). [P] ONNX RNN/GRU/LSTM.
RECURRENT = {"RNN": 1, "GRU": 3, "LSTM": 4}
STANDARD = ("", "ai.onnx")


def _domain(node) -> str:
    return node.domain or "ai.onnx"


@dataclass
class Mapper:
    """The state of one graph's mapping: the shapes and types inference gave, the weights, the result."""

    g: object
    attrs: Callable[[Any], dict]  # node -> {attribute: value}
    where: str
    shapes: dict
    elem: dict
    weights: dict
    inits: dict
    wq: dict
    aq: dict
    given: dict
    missing_ext: list
    experts: ExpertWeights
    n: int = 2
    m: int = 4
    layers: list = field(default_factory=list)
    ops: list = field(default_factory=list)
    used: dict = field(default_factory=dict)
    #: names of the DynamicQuantizeLinear nodes whose scale pass is an integer GEMM's operand load
    on_load: set = field(default_factory=set)

    def uniq(self, base: str) -> str:
        base = base or "node"
        k = self.used.get(base, 0)
        self.used[base] = k + 1
        return base if k == 0 else f"{base}#{k}"

    def shape(self, name: str, node) -> list[int]:
        s = self.shapes.get(name)
        label = f"{node.op_type} node {node.name!r}" + (f" (domain {node.domain})" if node.domain else "")
        if s is None:
            hint = f"; external data files missing: {', '.join(self.missing_ext)}" if self.missing_ext else ""
            raise InputError(
                f"the shape of tensor {name!r} ({'input' if name in node.input else 'output'} of "
                f"{label}) cannot be inferred and is not guessed: give it in the model's value_info "
                f"(e.g. onnxruntime's symbolic_shape_infer) or --input-shape for the inputs it depends "
                f"on{hint}",
                where=self.where,
            )
        if any(not (isinstance(x, int) and x >= 0) for x in s):
            raise InputError(
                unresolved_message(self.g, name, label, self.shapes, self.given, self.missing_ext),
                where=self.where,
            )
        return s

    def precision(self, *names: str, integer: bool = False) -> str | None:
        """The quantized format of a GEMM: its weight's, else its activation's (behind a DequantizeLinear,
        or, for the integer / QLinear operators, the operand's own element type)."""
        for table in (self.wq, self.aq):
            for x in names:
                if x in table:
                    return table[x]
        if integer:
            for x in names:
                if self.elem.get(x) in QUANTIZED_TYPES:
                    return QUANTIZED_TYPES[self.elem[x]]
        return None

    def add(self, layer, prec) -> None:
        self.layers.append(replace(layer, precision=prec) if prec else layer)

    def bias(self, nm: str, ins: list, i, ys) -> None:
        if i is not None and i < len(ins) and ins[i]:
            self.ops.append(
                make_op(f"{nm}.bias", "Add", ys, [ys], params=math.prod(self.weights.get(ins[i], (0,))))
            )

    def loc(self, node) -> str:
        return f"{self.where}: node {node.name!r}"

    def act_in(self, names) -> list[tuple]:
        return [
            tuple(self.shapes[x])
            for x in names
            if x and x not in self.weights and self.shapes.get(x) is not None
        ]

    # ---- the node kinds -------------------------------------------------------------------------

    def conv(self, node, nm: str, a: dict) -> None:
        op, ins = node.op_type, list(node.input)
        xi, wi, bi = CONV_OPS[op]
        X, W = ins[xi], ins[wi]
        if W not in self.weights:
            raise InputError(
                f"{op} {node.name!r}: the weight {W!r} is not an initializer (dynamic weights are "
                "not modelled)",
                where=self.where,
            )
        xs, ws = self.shape(X, node), list(self.weights[W])
        _check_groups(op, xs, ws, a.get("group", 1), node, self.where)
        ys = self.shape(node.output[0], node)
        layer, extra = _conv(op, nm, xs, ws, ys, a, node, self.where, self.loc(node), self.n, self.m)
        self.add(layer, self.precision(W, X, integer=op in INTEGER_OPS))
        self.ops.extend(extra)
        self.bias(nm, ins, bi, ys)

    def matmul(self, node, nm: str, a: dict) -> None:
        op, ins = node.op_type, list(node.input)
        ai, bi, ci = MATMUL_OPS[op]
        A, Bn = ins[ai], ins[bi]
        sa, sb = list(self.shape(A, node)), list(self.shape(Bn, node))
        for t, s in ((A, sa), (Bn, sb)):
            if not s:
                raise InputError(
                    f"{op} {node.name!r}: input {t!r} is a scalar (rank 0); a matrix product needs rank >= 1",
                    where=self.where,
                )
        ys = self.shape(node.output[0], node)
        prec = self.precision(Bn, A, integer=op in INTEGER_OPS)
        gathered = self.experts.source(A) or self.experts.source(Bn)
        if gathered is not None and not (A in self.weights or Bn in self.weights):
            for L in expert_layers(
                self.experts, gathered, nm, op, A, Bn, sa, sb, a, self.where, self.loc(node), self.n, self.m
            ):
                self.add(L, prec)
        else:
            self.add(
                _matmul(
                    op, nm, A, Bn, sa, sb, a, self.weights, node, self.where, self.loc(node), self.n, self.m
                ),
                prec,
            )
        self.bias(nm, ins, ci, ys)

    def einsum(self, node, nm: str, a: dict) -> None:
        eq = a.get("equation", b"")
        eq = eq.decode("utf-8", "replace") if isinstance(eq, bytes) else str(eq)
        operands = [x for x in node.input if x]
        try:
            res = parse_einsum(eq, [list(self.shape(x, node)) for x in operands])
        except ValueError as exc:
            raise InputError(f"Einsum equation {eq!r} does not parse: {exc}", where=self.loc(node)) from None
        if isinstance(res, EinsumGemm):
            wa, wb = operands[0] in self.weights, operands[1] in self.weights
            if wa != wb:  # one operand is a weight: activation rows x weight columns
                M, N = (res.N, res.M) if wa else (res.M, res.N)
                L = make_layer(
                    nm,
                    WEIGHT_GEMM,
                    M,
                    N,
                    res.K,
                    weight_shape=(N, res.K),
                    count=res.count,
                    n=self.n,
                    m=self.m,
                    where=self.loc(node),
                )
            else:
                L = make_layer(
                    nm,
                    WEIGHT_GEMM if wa else ACT_GEMM,
                    res.M,
                    res.N,
                    res.K,
                    count=res.count,
                    n=self.n,
                    m=self.m,
                    where=self.loc(node),
                )
            self.add(L, self.precision(*operands))
            return
        v = make_op(nm, "Einsum", tuple(self.shape(node.output[0], node)), self.act_in(operands))
        self.ops.append(
            replace(
                v,
                reason=f"Einsum equation {eq!r} is not a GEMM ({res}); {FALLBACK_RULE} "
                f"(domain {_domain(node)})",
            )
        )

    def recurrent(self, node, nm: str, a: dict) -> None:
        """RNN/GRU/LSTM: the input and the recurrent products as weight GEMMs over every step, the
        gates on the vector unit. X (seq, batch, in), W (dirs, gates*H, in), R (dirs, gates*H, H)."""
        op, ins = node.op_type, list(node.input)
        xs = self.shape(ins[0], node)
        if len(xs) != 3 or ins[1] not in self.weights or ins[2] not in self.weights:
            raise InputError(f"{op} {node.name!r}: needs X of rank 3 and W, R initializers", where=self.where)
        if int(a.get("layout", 0)):
            xs = [xs[1], xs[0], xs[2]]
        (d, gh, k_in), (_, _, hid) = self.weights[ins[1]], self.weights[ins[2]]
        rows = xs[0] * xs[1]
        for suffix, w, K in (("input", ins[1], k_in), ("recurrent", ins[2], hid)):
            self.add(
                make_layer(
                    f"{nm}.{suffix}",
                    WEIGHT_GEMM,
                    rows,
                    gh,
                    K,
                    weight_shape=(gh, K),
                    count=d,
                    n=self.n,
                    m=self.m,
                    where=self.loc(node),
                ),
                self.precision(w),
            )
        gates = (rows, d * gh)
        self.ops.append(make_op(f"{nm}.gates", "Sigmoid" if op != "RNN" else "Tanh", gates, [gates, gates]))
        self.bias(nm, ins, 3 if len(ins) > 3 and ins[3] else None, gates)

    def vector(self, node, nm: str, a: dict) -> None:
        op, ins = node.op_type, list(node.input)
        outs = [o for o in node.output if o]
        out_shape = tuple(self.shape(outs[0], node)) if outs else ()
        data = ins
        if node.domain == "com.microsoft" and op in QLINEAR_VECTOR:
            op, data = QLINEAR_VECTOR[op][0], qlinear_data_inputs(op, ins)
        elif node.domain == "com.microsoft" and op in ELEMENTWISE:
            op, data = "Gelu", ins[:1]
        elif node.domain not in STANDARD or op not in OP_CLASSES:
            v = make_op(nm, op, out_shape, self.act_in(ins))
            self.ops.append(
                replace(
                    v,
                    supported=False,
                    reason=f"operator {node.op_type!r} of domain {_domain(node)!r} is unknown to the "
                    f"vector-unit model; {FALLBACK_RULE}",
                )
            )
            return
        params = sum(math.prod(self.weights[x]) for x in data if x in self.inits)
        window = math.prod(a["kernel_shape"]) if "kernel_shape" in a else None
        row = None
        if op in ("Softmax", "LogSoftmax") and out_shape:
            row = out_shape[int(a.get("axis", -1))]
        elif op == "LayerNormalization" and out_shape:
            row = math.prod(out_shape[int(a.get("axis", -1)) :])
        self.ops.append(
            vector_op(
                nm,
                op,
                out_shape,
                self.act_in(data),
                params=params,
                window=window,
                row=row,
                attrs=a,
                on_load=(node.name or (outs[0] if outs else "")) in self.on_load,
            )
        )

    def node(self, idx: int, node) -> None:
        op = node.op_type
        nm = self.uniq(node.name or f"{op}_{idx}")
        a = self.attrs(node)
        std = node.domain in STANDARD or (node.domain == "com.microsoft" and op == "QGemm")
        if std and op in CONV_OPS:
            self.conv(node, nm, a)
        elif std and op in MATMUL_OPS:
            self.matmul(node, nm, a)
        elif std and op == "Einsum":
            self.einsum(node, nm, a)
        elif std and op in RECURRENT:
            self.recurrent(node, nm, a)
        else:
            self.vector(node, nm, a)


def map_nodes(
    onnx,
    model,
    stem: str,
    where: str,
    shapes: dict,
    elem: dict,
    inits: dict,
    consts: dict,
    missing_ext: list[str],
    given: dict,
    stored_params: int,
    n: int,
    m: int,
) -> tuple[Workload, dict]:
    """The workload of a prepared graph, and the import report (fused Q/DQ nodes, experts found)."""
    g = model.graph
    weights = {**inits, **consts}
    # the quantized format of a weight (its initializer's type), carried through folded ops
    wq = {k: QUANTIZED_TYPES[t] for k, t in elem.items() if k in weights and t in QUANTIZED_TYPES}
    folded = fold_weights(g, weights, wq, shapes)
    experts = find_experts(onnx, g, weights, shapes, folded)
    low = lower(g, folded | experts.nodes, elem, weights, shapes)
    mp = Mapper(
        g,
        lambda node: {x.name: onnx.helper.get_attribute_value(x) for x in node.attribute},
        where,
        shapes,
        elem,
        weights,
        inits,
        wq,
        low.aq,
        given,
        missing_ext,
        experts,
        n,
        m,
    )
    mp.on_load = set(low.quantize_on_load)
    skip = folded | low.fused | experts.nodes
    for idx, node in enumerate(g.node):
        if idx not in skip:
            mp.node(idx, node)
    if not mp.layers and not mp.ops:
        raise InputError("no operators found", where=where)
    report = {
        "fused_qdq": {"count": len(low.fused_qdq), "names": low.fused_qdq},
        "fused_epilogue": {"count": len(low.fused_epilogue), "names": low.fused_epilogue},
        "quantize_on_load": {"count": len(low.quantize_on_load), "names": low.quantize_on_load},
    }
    if experts.found:
        report["moe"] = experts.summary()
    return Workload(stem, tuple(mp.layers), tuple(mp.ops), stored_weight_params=int(stored_params)), report


def _conv(op, nm, xs, ws, ys, a, node, where, loc, n, m):
    """One convolution-family node: (layer, extra vector ops)."""
    grp = int(a.get("group", 1))
    B, cin = xs[0], xs[1]
    kern = math.prod(ws[2:])
    if op != "ConvTranspose":
        cout = ws[0]
        M = B * math.prod(ys[2:])
        if grp > 1 and grp == cin and ws[1] == 1:  # depthwise, channel multiplier cout / cin
            return make_layer(
                nm,
                DEPTHWISE,
                M,
                cout // grp,
                kern,
                weight_shape=tuple(ws),
                count=grp,
                groups=grp,
                n=n,
                m=m,
                where=loc,
            ), []
        return make_layer(
            nm,
            CONV,
            M,
            cout // grp,
            (cin // grp) * kern,
            weight_shape=tuple(ws),
            count=grp,
            groups=grp,
            n=n,
            m=m,
            where=loc,
        ), []
    cout = ws[1] * grp
    M = B * math.prod(xs[2:])
    L = make_layer(
        nm,
        WEIGHT_GEMM,
        M,
        (cout // grp) * kern,
        cin // grp,
        weight_shape=((cout // grp) * kern, cin // grp),
        count=grp,
        groups=1,
        n=n,
        m=m,
        where=loc,
    )
    # ASP's default whitelist (Linear, Conv1d/2d/3d, MultiheadAttention) has no ConvTranspose
    L = replace(
        L,
        sparsifiable=False,
        reason="ConvTranspose is not in ASP's default whitelist "
        "(Linear, Conv1d/2d/3d, MultiheadAttention): kept dense",
        weight_shape=tuple(ws),
        groups=grp,
    )
    return L, [make_op(f"{nm}.col2im", "Col2Im", ys, [(M, (cout // grp) * kern * grp)])]


def _check_groups(op: str, xs: list[int], ws: list[int], grp, node, where: str) -> None:
    """The group count divides the channels, and the weight fits the input (before any output shape is read)."""
    if len(xs) < 3 or len(ws) != len(xs):
        raise InputError(
            f"{op} {node.name!r}: input of rank {len(xs)} and weight of rank {len(ws)} do not make a "
            "convolution",
            where=where,
        )
    cin = xs[1]
    if isinstance(grp, bool) or not isinstance(grp, int) or grp < 1 or cin % grp:
        raise InputError(
            f"{op} {node.name!r}: group {grp} does not divide the {cin} input channels", where=where
        )
    if op == "ConvTranspose":
        if ws[0] != cin:
            raise InputError(
                f"{op} {node.name!r}: weight {tuple(ws)} expects {ws[0]} input channels, the input has {cin}",
                where=where,
            )
        return
    if ws[0] % grp:
        raise InputError(
            f"{op} {node.name!r}: group {grp} does not divide the {ws[0]} output channels", where=where
        )
    if ws[1] * grp != cin:
        raise InputError(
            f"{op} {node.name!r}: weight {tuple(ws)} expects {ws[1] * grp} input channels "
            f"({ws[1]} per group x {grp} groups), the input has {cin}",
            where=where,
        )


def _matmul(op, nm, A, Bn, sa, sb, a, weights, node, where, loc, n, m):
    """One matrix-product node as a layer (numpy broadcasting of the batch dimensions, counted once)."""
    if op in ("Gemm", "QGemm"):
        if len(sa) != 2 or len(sb) != 2:
            raise InputError(
                f"{op} {node.name!r}: operands must be matrices, got ranks {len(sa)} and {len(sb)}",
                where=where,
            )
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
        raise InputError(
            f"{op} {node.name!r}: batch dimensions {sa[:-2]} and {sb[:-2]} do not broadcast", where=where
        )
    total = math.prod(bat)
    wa, wb = A in weights, Bn in weights
    if wb and not wa:
        # one GEMM per weight matrix; the batch indices that share it stack along M
        cnt = math.prod(sb[:-2])
        # torch layout (out, in): ONNX MatMul stores (K, N), Gemm with transB=1 stores (N, K)
        return make_layer(
            nm, WEIGHT_GEMM, Mi * (total // cnt), N, K, weight_shape=(N, K), count=cnt, n=n, m=m, where=loc
        )
    if wa and not wb:
        cnt = math.prod(sa[:-2])
        # Y = W X: Y^T = X^T W^T, a weight GEMM with the roles swapped (M = N of X, N = rows of W)
        return make_layer(
            nm, WEIGHT_GEMM, N * (total // cnt), Mi, K, weight_shape=(Mi, K), count=cnt, n=n, m=m, where=loc
        )
    return make_layer(
        nm, ACT_GEMM if not (wa and wb) else WEIGHT_GEMM, Mi, N, K, count=total, n=n, m=m, where=loc
    )


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
