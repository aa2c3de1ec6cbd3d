"""The workload data model: layers as GEMMs with a type and an N:M-sparsifiable verdict.

GEMM convention (published-figures.md section 8): ``C[M x N] = A[M x K] . B[K x N]`` with M the
tokens (batch x sequence) or output pixels, N the output features / channels and K the reduction.
N:M sparsity applies along K of the weight operand. A layer with ``count > 1`` stands for that many
identical GEMMs (e.g. the 12 encoder blocks of BERT-base, or one GEMM per attention head).

Every layer carries the ASP verdict (:func:`sim.asp_rules.weight_verdict`) with its reason; a user
may override it per layer (``overrides={"name": True/False}`` or the ``sparsifiable`` column of a
native workload file, or the ``Sparsity`` column of a SCALE-Sim topology).

Every source of workloads builds on this module: the built-in networks (:mod:`sim.networks`), the
importers (:mod:`sim.importers`) and the registry and native file format (:mod:`sim.workloads`).
"""

from __future__ import annotations

import math
from dataclasses import dataclass, field, replace

from hw.errors import InputError
from sim.asp_rules import ACT_GEMM, CONV, DEPTHWISE, KINDS, WEIGHT_GEMM, weight_verdict
from sim.inputs import check_layer_dims
from sim.vector import VectorOp, unsupported_summary


@dataclass(frozen=True)
class ConvGeometry:
    """Convolution geometry (SCALE-Sim convention: no padding unless ``pad`` is given)."""

    ifmap_h: int
    ifmap_w: int
    filt_h: int
    filt_w: int
    channels: int
    num_filters: int
    stride: int = 1
    pad: int = 0
    #: SCALE-Sim rounds output dims up (topology_utils: ceil((H - R + S) / S)); PyTorch rounds down.
    ceil_mode: bool = True

    def _out(self, size: int, k: int) -> int:
        span = size + 2 * self.pad - k
        return (-(-span // self.stride) if self.ceil_mode else span // self.stride) + 1

    @property
    def ofmap_h(self) -> int:
        return self._out(self.ifmap_h, self.filt_h)

    @property
    def ofmap_w(self) -> int:
        return self._out(self.ifmap_w, self.filt_w)

    @property
    def ifmap_elems(self) -> int:
        """Unique input activations (what a DRAM fetch needs when the ifmap fits on chip)."""
        return self.ifmap_h * self.ifmap_w * self.channels


@dataclass(frozen=True)
class Layer:
    """One GEMM-shaped layer (or ``count`` identical ones)."""

    name: str
    kind: str
    M: int
    N: int
    K: int
    weight_shape: tuple[int, ...] | None
    sparsifiable: bool
    reason: str
    count: int = 1
    conv: ConvGeometry | None = None
    #: N:M pattern declared for this layer's weights (e.g. a SCALE-Sim ``Sparsity`` column); None = the array's.
    nm: tuple[int, int] | None = None
    #: convolution groups the ``count`` instances come from (``weight_shape`` is the whole tensor, shared by them)
    groups: int = 1
    #: operand format of a quantized model's GEMM (hw.precision names: int8, int4, fp8-e4m3, fp8-e5m2);
    #: None = the array's precision
    precision: str | None = None

    @property
    def dense_macs(self) -> int:
        return self.M * self.N * self.K * self.count

    @property
    def unit(self) -> str:
        """The unit that runs the layer: every GEMM (activation x activation included) runs on the array."""
        return "array"

    @property
    def weight_params(self) -> int:
        """Weight elements of this layer's ``count`` instances (0 for activation x activation): the
        instances of one grouped/depthwise convolution share one ``weight_shape`` tensor."""
        if self.weight_shape is None or self.kind == ACT_GEMM:
            return 0
        return math.prod(self.weight_shape) * self.count // self.groups


@dataclass(frozen=True)
class Workload:
    """GEMM layers (the array) and non-GEMM operators (the vector unit, :mod:`sim.vector`).

    ``stored_weight_params``: the parameters of the weight tensors a model file stores (ONNX
    initializers, or a Hugging Face model's whole set of experts), when known; otherwise
    :attr:`weight_params` adds up the layers' and operators' own. ``active_param_count``: the
    parameters one token uses, when they differ from the total (a mixture of experts)."""

    name: str
    layers: tuple[Layer, ...] = field(default_factory=tuple)
    vector_ops: tuple[VectorOp, ...] = field(default_factory=tuple)
    stored_weight_params: int | None = None
    #: KV-cache elements a decode step reads from DRAM (0 outside decode); informative, the
    #: attention layers' second operand carries the traffic in the cycle model
    kv_cache_elements: int = 0
    active_param_count: int | None = None
    #: what an importer found beyond the layers (ONNX: the Q/DQ nodes fused, the experts), for
    #: ``simulate --json``; not part of the workload's identity
    import_report: dict = field(default_factory=dict, compare=False, hash=False)

    def __len__(self) -> int:
        return len(self.layers)

    @property
    def weight_params(self) -> int:
        """Parameters in the workload's weight tensors (GEMM weights, embedding tables, norm scales, biases)."""
        if self.stored_weight_params is not None:
            return int(self.stored_weight_params)
        return sum(layer.weight_params for layer in self.layers) + sum(
            op.params * op.count for op in self.vector_ops
        )

    @property
    def active_params(self) -> int:
        """Parameters one token uses: the total, less the experts a mixture-of-experts router does not pick."""
        return int(self.active_param_count) if self.active_param_count is not None else self.weight_params

    @property
    def unsupported_ops(self) -> list[dict]:
        return unsupported_summary(self.vector_ops)

    def with_overrides(self, overrides: dict[str, bool], *, where: str = "overrides") -> Workload:
        """Force the sparsifiable verdict of named layers (user decision, recorded in the reason)."""
        names = {layer.name for layer in self.layers}
        for key in overrides:
            if key not in names:
                raise InputError(f"no layer named {key!r} in workload {self.name!r}", where=where)
        layers = tuple(
            replace(
                layer,
                sparsifiable=bool(overrides[layer.name]),
                reason=f"user override: {'sparse' if overrides[layer.name] else 'dense'} "
                f"(ASP default: {layer.reason})",
            )
            if layer.name in overrides
            else layer
            for layer in self.layers
        )
        return replace(self, layers=layers)


def make_layer(
    name: str,
    kind: str,
    M: int,
    N: int,
    K: int,
    *,
    weight_shape: tuple[int, ...] | None = None,
    count: int = 1,
    conv: ConvGeometry | None = None,
    sparsifiable: bool | None = None,
    n: int = 2,
    m: int = 4,
    where: str | None = None,
    groups: int = 1,
) -> Layer:
    """Build a validated layer; the verdict defaults to ASP's rules, ``sparsifiable`` overrides it."""
    loc = where or f"layer {name!r}"
    if kind not in KINDS:
        raise InputError(f"unknown layer kind {kind!r} (known: {', '.join(KINDS)})", where=loc)
    for label, v in (("M", M), ("N", N), ("K", K), ("count", count)):
        if not isinstance(v, int) or isinstance(v, bool) or v <= 0:
            raise InputError(f"{label} must be a positive integer, got {v!r} (zero-sized layer)", where=loc)
    check_layer_dims(loc, count, M=M, N=N, K=K)
    if weight_shape is None and kind != ACT_GEMM:
        weight_shape = (N, K) if kind == WEIGHT_GEMM else (N, K)
    verdict = weight_verdict(kind, weight_shape, n, m)
    reason = verdict.reason
    sp = verdict.sparsifiable
    if sparsifiable is not None and bool(sparsifiable) != sp:
        reason = f"user override: {'sparse' if sparsifiable else 'dense'} (ASP default: {verdict.reason})"
        sp = bool(sparsifiable)
    return Layer(
        name,
        kind,
        M,
        N,
        K,
        tuple(weight_shape) if weight_shape else None,
        sp,
        reason,
        count,
        conv,
        groups=groups,
    )


def conv_layer(
    name: str,
    geom: ConvGeometry,
    *,
    count: int = 1,
    sparsifiable: bool | None = None,
    depthwise: bool = False,
    where: str | None = None,
) -> Layer:
    """Convolution lowered to GEMM: M = OH*OW, N = Cout, K = Cin*R*S (depthwise: N=1, K=R*S, count x C)."""
    if (
        min(
            geom.ifmap_h, geom.ifmap_w, geom.filt_h, geom.filt_w, geom.channels, geom.num_filters, geom.stride
        )
        <= 0
    ):
        raise InputError(
            "convolution dimensions must be positive (zero-sized layer)", where=where or f"layer {name!r}"
        )
    check_layer_dims(
        where or f"layer {name!r}",
        count,
        ifmap_h=geom.ifmap_h,
        ifmap_w=geom.ifmap_w,
        channels=geom.channels,
        num_filters=geom.num_filters,
    )
    if geom.filt_h > geom.ifmap_h + 2 * geom.pad or geom.filt_w > geom.ifmap_w + 2 * geom.pad:
        raise InputError("filter larger than the input feature map", where=where or f"layer {name!r}")
    M = geom.ofmap_h * geom.ofmap_w
    if depthwise:
        return make_layer(
            name,
            DEPTHWISE,
            M,
            1,
            geom.filt_h * geom.filt_w,
            weight_shape=(geom.channels, 1, geom.filt_h, geom.filt_w),
            count=count * geom.channels,
            conv=geom,
            sparsifiable=sparsifiable,
            where=where,
            groups=geom.channels,
        )
    return make_layer(
        name,
        CONV,
        M,
        geom.num_filters,
        geom.channels * geom.filt_h * geom.filt_w,
        weight_shape=(geom.num_filters, geom.channels, geom.filt_h, geom.filt_w),
        count=count,
        conv=geom,
        sparsifiable=sparsifiable,
        where=where,
    )


def total_dense_macs(w: Workload) -> int:
    return sum(layer.dense_macs for layer in w.layers)
