"""Pruned, integer-quantised layers as the hardware sees them: N:M values + metadata from
``hw.golden.compress_nm`` and a calibration activation trace.

This is the data the ``hw/`` golden models and the activity-based power estimate in ``ppa/``
consume (explore/ passes it across as numpy arrays), so energy figures use real pruned weights
and real activations instead of random bits.

Quantisation (stated): symmetric, round-half-to-even, weights per output row with scale
``max|w_row| / (2**(bits-1) - 1)``, activations per tensor with scale ``max|x| / (2**(bits-1) - 1)``
over the calibration set. Post-ReLU activations are non-negative, so they use the upper half of
the signed range. Pruning happens in float *before* quantisation (the ASP order: prune,
fine-tune, then quantise).
"""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np

from hw.errors import InputError
from hw.golden import compress_nm, decompress_nm, gemm_nm, wrap_signed
from sim.quality.prune.pruning import prune_layer
from sim.quality.references.reference import reference_experiment

__all__ = ["LayerTrace", "quantize_symmetric", "layer_trace", "reference_traces"]


def _int_dtype(bits: int):
    return np.int8 if bits <= 8 else np.int16 if bits <= 16 else np.int32


def quantize_symmetric(x, bits: int = 8, axis: int | None = None) -> tuple[np.ndarray, np.ndarray]:
    """Symmetric integer quantisation: ``(q, scale)`` with ``x ~= q * scale``, q in
    [-(2**(bits-1)-1), 2**(bits-1)-1]. ``axis`` None: one scale; else one scale per index of
    ``axis`` (reduction over the other axes)."""
    if not 2 <= bits <= 32:
        raise InputError(f"must be between 2 and 32, got {bits}", where="bits")
    x = np.asarray(x, dtype=np.float64)
    qmax = (1 << (bits - 1)) - 1
    if axis is None:
        amax = np.array(np.abs(x).max() if x.size else 0.0)
    else:
        other = tuple(i for i in range(x.ndim) if i != axis % x.ndim)
        amax = np.abs(x).max(axis=other, keepdims=True)
    scale = np.where(amax > 0, amax / qmax, 1.0)
    q = np.clip(np.rint(x / scale), -qmax, qmax).astype(_int_dtype(bits))
    return q, scale.reshape(-1) if axis is not None else scale


@dataclass(frozen=True)
class LayerTrace:
    """One layer ready for the golden models / activity simulation.

    ``weights`` (out, K) pruned + quantised integers (dense layout); ``values`` (out, K*N/M) and
    ``meta`` (out, K/M) as from ``hw.golden.compress_nm`` (None when the ASP verdict keeps the
    layer dense: it then runs as dense fallback); ``activations`` (K, P) integer calibration
    trace, one column per sample, the ``x`` of ``hw.golden.gemm_nm``; real values are
    ``weights * weight_scale[:, None]`` and ``activations * act_scale``.
    """

    name: str
    n: int
    m: int
    pruned: bool
    reason: str
    weights: np.ndarray
    values: np.ndarray | None
    meta: np.ndarray | None
    activations: np.ndarray
    weight_scale: np.ndarray
    act_scale: float
    weight_bits: int
    act_bits: int

    def gemm(self, acc_bits: int = 32) -> np.ndarray:
        """Integer ``W @ x`` through ``hw.golden.gemm_nm`` (dense layers: plain int64 matmul)."""
        if self.pruned:
            return gemm_nm(self.values, self.meta, self.activations, self.n, self.m, acc_bits)
        return wrap_signed(self.weights.astype(np.int64) @ self.activations.astype(np.int64), acc_bits)

    def pe_stream(self, max_cycles: int | None = None):
        """The input stream of one PE computing the layer's dot products, one after the other.

        For each output row r and calibration sample p, the PE consumes the K/M groups of the
        reduction in order (row r's kept weights of group g: N values + one metadata code; dense
        layers: the M weights) and accumulates them: ``clear`` is set on the first group of each
        dot product only (once per K/M groups), so the accumulator and its adder toggle as a
        partial sum does over the layer's real reduction length. (The weights then change every
        cycle, as in an output-stationary array; in a weight-stationary array they are held and
        the same partial sums pass down a column instead.)
        Returns ``(acts (T, M), weights (T, N or M), meta (T,) or None, clear (T,))``, the
        arrays ``ppa.activity.trace_from_arrays`` and ``hw.golden.pe_reference`` take.
        """
        m, n = self.m, self.n
        k, p = self.activations.shape
        rows, groups = self.weights.shape[0], k // m
        xg = self.activations.reshape(groups, m, p).transpose(2, 0, 1)  # (P, G, M)
        acts = np.broadcast_to(xg, (rows, p, groups, m)).reshape(-1, m)
        if self.pruned:
            if self.values is None or self.meta is None:
                raise ValueError(f"{self.name}: a pruned layer trace needs its values and metadata")
            w = self.values.reshape(rows, 1, groups, n)
            meta = np.broadcast_to(self.meta.reshape(rows, 1, groups), (rows, p, groups)).reshape(-1)
        else:
            w = self.weights.reshape(rows, 1, groups, m)
            meta = None
        weights = np.broadcast_to(w, (rows, p, groups, w.shape[-1])).reshape(-1, w.shape[-1])
        clear = np.zeros((rows, p, groups), dtype=bool)
        clear[..., 0] = True
        clear = clear.reshape(-1)
        t = acts.shape[0] if max_cycles is None else min(max_cycles, acts.shape[0])
        return (
            acts[:t].astype(np.int64),
            weights[:t].astype(np.int64),
            None if meta is None else meta[:t].astype(np.int64),
            clear[:t],
        )


def layer_trace(
    name: str,
    w,
    calib,
    n: int = 2,
    m: int = 4,
    *,
    weight_bits: int = 8,
    act_bits: int = 8,
    kind: str | None = None,
) -> LayerTrace:
    """Prune ``w`` (out, K) per the ASP verdict, quantise it and ``calib`` (samples, K), and
    compress it with ``hw.golden.compress_nm``; the compression is checked to be exact."""
    w = np.asarray(w, dtype=np.float64)
    calib = np.asarray(calib, dtype=np.float64)
    if w.ndim != 2:
        raise InputError(f"weights must be a matrix (out, K), got shape {w.shape}", where=name)
    if calib.ndim != 2 or calib.shape[1] != w.shape[1]:
        raise InputError(
            f"calibration activations of shape {calib.shape} do not match K={w.shape[1]}", where=name
        )
    layer = prune_layer(name, w, n, m, kind)
    wq, wscale = quantize_symmetric(layer.weights, weight_bits, axis=0)
    xq, xscale = quantize_symmetric(calib, act_bits)
    values = meta = None
    if layer.pruned:
        values, meta = compress_nm(wq, n, m)
        if not np.array_equal(decompress_nm(values, meta, n, m), wq):  # cannot happen: wq is N:M
            raise AssertionError(f"{name}: compress_nm does not reproduce the pruned weights")
    return LayerTrace(
        name=name,
        n=n,
        m=m,
        pruned=layer.pruned,
        reason=layer.verdict.reason,
        weights=wq,
        values=values,
        meta=meta,
        activations=np.ascontiguousarray(xq.T),
        weight_scale=wscale,
        act_scale=float(xscale),
        weight_bits=weight_bits,
        act_bits=act_bits,
    )


def reference_traces(
    seed: int = 0,
    n: int = 2,
    m: int = 4,
    *,
    samples: int = 256,
    result=None,
    weight_bits: int = 8,
    act_bits: int = 8,
) -> list[LayerTrace]:
    """Layer traces of the reference experiment's fine-tuned N:M MLP, with each layer's real
    input activations on the first ``samples`` test images as the calibration trace."""
    result = result or reference_experiment(seed, n, m)
    model = result.models["finetuned"]
    xte = result.models["data"][2][:samples]
    _, acts = model.forward(xte, keep=True)
    return [
        layer_trace(f"fc{i}", w, a, n, m, weight_bits=weight_bits, act_bits=act_bits)
        for i, (w, a) in enumerate(zip(model.weights, acts, strict=True))
    ]


def reference_pe_stream(result, *, sparse: bool, samples: int = 256, weight_bits: int = 8, act_bits: int = 8):
    """One PE input stream of real data from the reference experiment (``result``: a
    sim.quality.ReferenceResult), for activity-based power:

    * ``sparse=True``: the ASP fine-tuned N:M model; the layers that ASP prunes, as the sparse PE
      sees them (kept int values + metadata from ``hw.golden.compress_nm``);
    * ``sparse=False``: the dense baseline model, every layer unpruned, as the dense PE sees it.

    Activations are each layer's real inputs on the first ``samples`` test images. Returns
    ``(acts (T, M), weights (T, N or M), meta (T,) or None, clear (T,))`` (see LayerTrace.pe_stream).
    """
    n, m = result.n, result.m
    model = result.models["finetuned" if sparse else "dense"]
    xte = result.models["data"][2][:samples]
    _, acts = model.forward(xte, keep=True)
    parts = []
    for i, (w, a) in enumerate(zip(model.weights, acts, strict=True)):
        if sparse:
            tr = layer_trace(f"fc{i}", w, a, n, m, weight_bits=weight_bits, act_bits=act_bits)
            if not tr.pruned:
                continue
        else:
            wq, ws = quantize_symmetric(np.asarray(w, dtype=np.float64), weight_bits, axis=0)
            xq, xs = quantize_symmetric(np.asarray(a, dtype=np.float64), act_bits)
            if wq.shape[1] % m:
                continue
            tr = LayerTrace(
                name=f"fc{i}",
                n=n,
                m=m,
                pruned=False,
                reason="dense baseline model",
                weights=wq,
                values=None,
                meta=None,
                activations=np.ascontiguousarray(xq.T),
                weight_scale=ws,
                act_scale=float(xs),
                weight_bits=weight_bits,
                act_bits=act_bits,
            )
        parts.append(tr.pe_stream())
    if not parts:
        raise InputError(f"the reference model has no layer the {'sparse' if sparse else 'dense'} PE can run")
    acts_s = np.concatenate([p[0] for p in parts])
    w_s = np.concatenate([p[1] for p in parts])
    meta_s = np.concatenate([p[2] for p in parts]) if sparse else None
    clear_s = np.concatenate([p[3] for p in parts])
    return acts_s, w_s, meta_s, clear_s
