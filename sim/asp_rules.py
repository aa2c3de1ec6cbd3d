"""Which layers can be N:M-pruned: one rule set shared by the workload model and the pruning code.

The rules follow NVIDIA's ASP (``apex/contrib/sparsity``), the reference recipe for 2:4 sparsity
([P] apex ``asp.py``, see ``published-figures.md`` section 1.2):

* only *weight* tensors are pruned: ``nn.Linear``, ``Conv1d/2d/3d`` and the attention projection
  weights. Products of two activations (attention scores ``Q K^T`` and ``P V``) have no weight
  tensor and always stay dense;
* a weight whose ``size(0) % 8 != 0`` or ``size(1) % 16 != 0`` is skipped ("Auto skipping
  pruning"). For a linear layer ``size(0)`` is the output features and ``size(1)`` the input
  features; for a convolution they are output and input channels;
* the mask groups M consecutive weights along the reduction (input) dimension
  (``m4n2_1d`` for 2:4), so that dimension must also be divisible by M.

Depthwise convolutions have ``size(1) == 1`` and therefore stay dense under the same rule.
A user may override the verdict per layer; :func:`weight_verdict` only gives the default.
"""

from __future__ import annotations

from dataclasses import dataclass

from hw.errors import InputError
from hw.nm import check_nm

#: Layer kinds known to the workload model and the pruning code.
WEIGHT_GEMM = "gemm"  # activation x weight matrix (linear / projection / FFN)
CONV = "conv"  # convolution lowered to GEMM, weight (Cout, Cin, R, S)
ACT_GEMM = "act_gemm"  # activation x activation (attention scores, context)
DEPTHWISE = "depthwise"  # depthwise convolution, weight (C, 1, R, S)
KINDS = (WEIGHT_GEMM, CONV, ACT_GEMM, DEPTHWISE)

#: apex ASP auto-skip divisors for fp16/fp32 weights: size(0) % 8 and size(1) % 16
#: ([P] NVIDIA/apex ``apex/contrib/sparsity/asp.py``; published-figures.md 1.2).
ASP_DIV_OUT = 8
ASP_DIV_IN = 16


@dataclass(frozen=True)
class Verdict:
    """Whether a layer's weights may be N:M-pruned, and the reason in words."""

    sparsifiable: bool
    reason: str


def weight_verdict(kind: str, weight_shape: tuple[int, ...] | None, n: int = 2, m: int = 4) -> Verdict:
    """Default ASP verdict for one layer.

    ``weight_shape`` is the PyTorch weight shape: ``(out, in)`` for a linear layer,
    ``(Cout, Cin, R, S)`` (or ``(Cout, Cin, ...)``) for a convolution, ``None`` when the layer
    has no weight tensor (activation x activation products).
    """
    check_nm(n, m)
    if kind not in KINDS:
        raise InputError(f"unknown layer kind {kind!r} (known: {', '.join(KINDS)})")
    if kind == ACT_GEMM or weight_shape is None:
        return Verdict(
            False, "activation x activation product: no weight tensor to prune (ASP prunes weights only)"
        )
    if len(weight_shape) < 2:
        return Verdict(False, f"weight of shape {tuple(weight_shape)} is not a matrix")
    out_dim, in_dim = int(weight_shape[0]), int(weight_shape[1])
    if kind == DEPTHWISE or in_dim == 1:
        return Verdict(
            False,
            "depthwise convolution: one input channel per filter, size(1)=1 fails ASP's size(1) % 16 rule",
        )
    if out_dim % ASP_DIV_OUT:
        return Verdict(False, f"output dim {out_dim} not divisible by {ASP_DIV_OUT} (ASP auto-skip rule)")
    if in_dim % ASP_DIV_IN:
        return Verdict(False, f"input dim {in_dim} not divisible by {ASP_DIV_IN} (ASP auto-skip rule)")
    if in_dim % m:
        return Verdict(False, f"reduction dim {in_dim} not divisible by M={m}")
    return Verdict(True, f"weight {tuple(int(d) for d in weight_shape)} passes ASP shape rules for {n}:{m}")
