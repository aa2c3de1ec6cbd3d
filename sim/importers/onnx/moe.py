"""Mixture-of-experts exports: expert weights reached through ``Gather(expert_stack, expert_ids)``
(the dynamo exporter writes ``GatherND`` by (S, 1) indices, the same rows).

transformers' ``batched_mm`` experts path (the one that exports) stacks every expert's matrix in one
initializer of shape (E, out, in) (or (E, in, out)), gathers the matrix of each token-expert pair with
the router's ids and multiplies with a batched MatMul. A compiler keeps the experts as E weight
matrices and routes the rows to them; so here:

* a ``Gather`` along axis 0 (or a ``GatherND`` whose indices address axis 0 alone) of an initializer of
  rank >= 3 by activation indices is an *expert gather*;
  it and the Transpose / Reshape / Cast / Squeeze / Unsqueeze / QuantizeLinear / DequantizeLinear of
  its output are not costed (the GEMM reads the expert's weight where it is stored);
* a MatMul (or MatMulInteger, QLinearMatMul) with an expert-gathered operand is a weight GEMM of the
  per-expert matrix, its rows (the S token-expert pairs) spread over the experts the batch touches,
  as :func:`sim.networks.moe_block` does for ``--hf-config``: round(:func:`sim.networks.expected_experts`)
  instances, q or q + 1 rows each, so the MACs are exact and each matrix is a 2:4 target under the
  ASP rules;
* top-k is read from the graph's ``TopK`` nodes (their constant ``k``); the import report names the
  expert tensors, E and top-k.
"""

from __future__ import annotations

import math
from collections import Counter
from dataclasses import dataclass, field

from hw.errors import InputError
from sim.asp_rules import WEIGHT_GEMM
from sim.layers import make_layer
from sim.networks import expected_experts

#: Operators through which an expert-gathered tensor stays one (their other inputs are constants).
#: QuantizeLinear is one too: onnxruntime's QDQ format gives the gathered matrices a QuantizeLinear ->
#: DequantizeLinear pair (Gather shares its input's quantization), the stored INT8 weight's load.
PASS_THROUGH = {
    "Transpose",
    "Reshape",
    "Cast",
    "Squeeze",
    "Unsqueeze",
    "QuantizeLinear",
    "DequantizeLinear",
    "Identity",
}
#: The batched matrix products over a gathered expert stack: the float one, quantize_dynamic's
#: (MatMulInteger) and QOperator's (QLinearMatMul of the quantized stack)
BATCHED_PRODUCTS = {"MatMul", "MatMulInteger", "QLinearMatMul"}


@dataclass
class ExpertWeights:
    """The expert gathers of a graph: tensor -> (stacked initializer, experts), and top-k."""

    gathered: dict[str, tuple[str, int]] = field(default_factory=dict)
    nodes: set[int] = field(default_factory=set)
    top_k: int | None = None
    gemms: list[str] = field(default_factory=list)

    @property
    def found(self) -> bool:
        return bool(self.gathered)

    def source(self, tensor: str) -> tuple[str, int] | None:
        return self.gathered.get(tensor)

    def summary(self) -> dict:
        stacks = sorted({s for s, _ in self.gathered.values()})
        experts = sorted({e for _, e in self.gathered.values()})
        return {
            "experts": experts[0] if len(experts) == 1 else experts,
            "top_k": self.top_k,
            "expert_tensors": stacks,
            "expert_gemms": list(self.gemms),
        }


def _const_ints(onnx, g, name: str) -> list[int] | None:
    for t in g.initializer:
        if t.name == name:
            return (
                [int(x) for x in onnx.numpy_helper.to_array(t).reshape(-1)] if not t.external_data else None
            )
    for n in g.node:
        if n.op_type == "Constant" and n.output and n.output[0] == name:
            for a in n.attribute:
                if a.name == "value":
                    return [int(x) for x in onnx.numpy_helper.to_array(a.t).reshape(-1)]
    return None


def find_experts(onnx, g, weights: dict, shapes: dict, folded: set[int]) -> ExpertWeights:
    out = ExpertWeights()
    for idx, node in enumerate(g.node):
        if idx in folded or node.domain not in ("", "ai.onnx") or not node.output:
            continue
        ins = [x for x in node.input if x]
        if (
            node.op_type in ("Gather", "GatherND")
            and len(ins) == 2
            and ins[0] in weights
            and ins[1] not in weights
        ):
            attr = {a.name: onnx.helper.get_attribute_value(a) for a in node.attribute}
            if node.op_type == "Gather":
                first = int(attr.get("axis", 0)) == 0
            else:  # the dynamo exporter: GatherND by (S, 1) indices, i.e. rows of axis 0
                ids = shapes.get(ins[1])
                first = (
                    int(attr.get("batch_dims", 0)) == 0 and ids is not None and len(ids) > 0 and ids[-1] == 1
                )
            if len(weights[ins[0]]) >= 3 and first:
                out.gathered[node.output[0]] = (ins[0], int(weights[ins[0]][0]))
                out.nodes.add(idx)
        elif (
            node.op_type in PASS_THROUGH
            and ins
            and ins[0] in out.gathered
            and all(x in weights for x in ins[1:])
        ):
            out.gathered[node.output[0]] = out.gathered[ins[0]]
            out.nodes.add(idx)
    if out.gathered:
        ks = []
        for node in g.node:
            if node.op_type == "TopK" and len(node.input) > 1:
                k = _const_ints(onnx, g, node.input[1])
                if k and len(k) == 1:
                    ks.append(k[0])
        experts = max(e for _, e in out.gathered.values())
        ks = [k for k in ks if 0 < k <= experts]
        out.top_k = Counter(ks).most_common(1)[0][0] if ks else None
    return out


def expert_layers(
    ex: ExpertWeights,
    src: tuple[str, int],
    nm: str,
    op: str,
    A: str,
    Bn: str,
    sa: list,
    sb: list,
    a: dict,
    where: str,
    loc: str,
    n: int,
    m: int,
) -> list:
    """The weight GEMMs of a batched MatMul over gathered expert matrices (see the module docstring)."""
    if op not in BATCHED_PRODUCTS:
        raise InputError(
            f"{op} over the expert weights {src[0]!r} is not modelled (batched "
            f"{', '.join(sorted(BATCHED_PRODUCTS))} are)",
            where=where,
        )
    if len(sa) < 2 or len(sb) < 2 or sa[-1] != sb[-2]:
        raise InputError(f"{op} {nm!r}: inner dimensions differ ({sa} x {sb})", where=where)
    if Bn in ex.gathered:  # X (S, rows, K) @ W (S, K, N)
        K, N = sa[-1], sb[-1]
        pairs = math.prod(sa[:-1]) if len(sa) >= len(sb) else math.prod(sb[:-2]) * sa[-2]
    else:  # W (S, N, K) @ X (S, K, cols): Y^T = X^T W^T
        K, N = sa[-1], sa[-2]
        pairs = math.prod(sb[:-2]) * sb[-1] if len(sb) >= len(sa) else math.prod(sa[:-2]) * sb[-1]
    E, k = src[1], ex.top_k
    inst = max(1, round(expected_experts(E, k, max(1, pairs // k)))) if k else E
    inst = min(inst, pairs, E)
    q, r = divmod(pairs, inst)
    out = []
    if inst - r:
        out.append(
            make_layer(nm, WEIGHT_GEMM, q, N, K, weight_shape=(N, K), count=inst - r, n=n, m=m, where=loc)
        )
    if r:
        out.append(
            make_layer(f"{nm}+1", WEIGHT_GEMM, q + 1, N, K, weight_shape=(N, K), count=r, n=n, m=m, where=loc)
        )
    ex.gemms.extend(L.name for L in out)
    return out
