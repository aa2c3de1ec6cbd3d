"""Switching activity of the synthesised PEs on data traces, and the cached energy per PE-cycle.

A PE netlist (hw.pe SparsePE / DensePE through hw.verilog.to_verilog and ppa.synth) is simulated
bit-parallel (ppa.netlist) on 64 x k independent PE instances, each fed its own stream.

Default trace (used when no workload data is given), seeded and stated:
- activations: post-ReLU, N(0, 2^(A-3)) rounded and clipped to the signed A-bit range, negatives
  set to 0 (about half the activations are zero);
- weights: N(0, 2^(W-3)) rounded and clipped. The sparse PE gets them pruned N:M by magnitude
  with hw.golden.compress_nm (kept values + metadata). The dense PE, by default, gets them unpruned:
  a dense design runs the dense baseline model, as the cycle model and the quality delta assume.
  With ``dense_model="pruned"`` it gets the pruned dense group, zeros included (the same pruned
  model on dense hardware: the zero-operand saving a dense array gets for free);
- weight-stationary reuse: each PE's weights change every ``w_hold`` = 64 cycles;
- a new accumulation (in_clear) every ``acc_len`` = 16 groups; in_valid every cycle (full rate).

Real-data traces (explore passes them in, sim.quality.family_traces makes the streams): a
:class:`PETrace` built from arrays, a :class:`TraceRecipe` (a trace built only when its activity is
simulated, its activity cached by the recipe's key, so a cached or shipped result needs no
model trained), or a :class:`TraceMix`: a sparse design's N:M layers on its PE and its dense layers
on the path they run on (the sparse PE's dense fallback, :func:`dense_groups_trace`, or the dense
path's dense mode), mixed by the PE-cycles each takes (:func:`pe_cycle_shares`).
"""

from __future__ import annotations

import hashlib
import json
from collections.abc import Callable
from dataclasses import asdict, dataclass, fields
from functools import lru_cache

import numpy as np

from hw.errors import InputError
from hw.fp_golden import encode
from hw.golden import compress_nm, decompress_nm, dense_to_sparse_stream, fallback_clears
from hw.params import PEParams
from ppa import characterisation, rtl, synth, synth_memo
from ppa.liberty import sizing
from ppa.liberty.library import LibertyLibrary
from ppa.netlist import GateNetlist, ToggleCounts
from ppa.timing.mapping import MAP_SCRIPT, TIMING_ABC_SCRIPT

# Default synthetic trace (module docstring): sizes and seed, and two stated assumptions [A].
DEFAULT_CYCLES = 128
DEFAULT_INSTANCES = 512
DEFAULT_SEED = 2017
W_HOLD = 64  # [A] cycles a PE holds its weights (weight-stationary reuse)
ACC_LEN = 16  # [A] groups per accumulation (in_clear period)


@dataclass
class PETrace:
    """Per-cycle PE inputs for I instances: acts (T, I, M); weights (T, I, N) for the sparse PE
    or (T, I, M) for the dense PE; meta (T, I) codes (sparse only); clear, valid (T, I)."""

    acts: np.ndarray
    weights: np.ndarray
    meta: np.ndarray | None
    clear: np.ndarray
    valid: np.ndarray
    label: str = ""  # where the data comes from (PPAResult.details["activity_trace"])
    dense: np.ndarray | None = None  # (T, I) in_dense of the dense-path PE (None: N:M mode throughout)

    @property
    def cycles(self) -> int:
        return self.acts.shape[0]

    @property
    def instances(self) -> int:
        return self.acts.shape[1]

    def digest(self) -> str:
        if getattr(self, "_digest", None) is None:
            self._digest = self._compute_digest()
        return self._digest

    def _compute_digest(self) -> str:
        h = hashlib.sha256()
        for a in (self.acts, self.weights, self.meta, self.clear, self.valid, self.dense):
            if a is not None:
                h.update(np.ascontiguousarray(a, dtype=np.int64).tobytes())
                h.update(str(a.shape).encode())
        return h.hexdigest()[:24]


def synth_pe(
    params: PEParams, sparse: bool, *, cache=None, dense_path: bool = False, mapping: str = "area"
) -> synth.SynthResult:
    """The synthesised PE; with a warm cache, without elaborating it (ppa.synth_memo.synthesize_generated).
    ``mapping="delay"``: the netlist the generic timing path times (ppa.synth.ABC_STEP)."""
    if dense_path and sparse:
        return characterisation.synthesis(
            "hw.pe.SparsePE(dense_path)",
            params,
            rtl.pe_name(True, True),
            lambda: rtl.pe_verilog(params, True, True),
            cache=cache,
            mapping=mapping,
        )
    gen = "hw.pe.SparsePE" if sparse else "hw.pe.DensePE"
    return characterisation.synthesis(
        gen, params, rtl.pe_name(sparse), lambda: rtl.pe_verilog(params, sparse), cache=cache, mapping=mapping
    )


def _clip(x: np.ndarray, bits: int) -> np.ndarray:
    return np.clip(np.rint(x), -(1 << (bits - 1)), (1 << (bits - 1)) - 1).astype(np.int64)


def synthetic_trace(
    params: PEParams,
    sparse: bool,
    *,
    cycles: int = DEFAULT_CYCLES,
    instances: int = DEFAULT_INSTANCES,
    seed: int = DEFAULT_SEED,
    kind: str = "relu",
    w_hold: int = W_HOLD,
    acc_len: int = ACC_LEN,
    dense_model: str = "dense",
) -> PETrace:
    """A seeded synthetic trace (see module docstring). ``kind``: ``relu`` (default), ``random``
    (uniform full-range activations), ``zeros`` (all activations 0) or ``constant`` (every input
    held at one random value per instance). ``dense_model`` (dense PE only): ``dense`` (unpruned
    weights, the default) or ``pruned`` (the N:M-pruned weights with their zeros)."""
    if kind not in ("relu", "random", "zeros", "constant"):
        raise InputError(f"unknown trace kind {kind!r}", where="trace kind")
    if dense_model not in ("dense", "pruned"):
        raise InputError(f"unknown dense model {dense_model!r} (dense or pruned)", where="trace dense_model")
    rng = np.random.default_rng(seed)
    p = params
    T, n_inst = cycles, instances
    lo, hi = -(1 << (p.act_bits - 1)), (1 << (p.act_bits - 1))
    if kind == "random":
        acts = rng.integers(lo, hi, (T, n_inst, p.m), dtype=np.int64)
    else:
        acts = _clip(rng.normal(0, 2.0 ** (p.act_bits - 3), (T, n_inst, p.m)), p.act_bits)
        acts = np.maximum(acts, 0)
    if kind == "zeros":
        acts[:] = 0
    n_w = -(-T // w_hold)
    dense_w = _clip(rng.normal(0, 2.0 ** (p.weight_bits - 3), (n_w, n_inst, p.m)), p.weight_bits)
    if kind == "constant":
        acts[:] = acts[:1]
        dense_w[:] = dense_w[:1]
    if p.is_float:  # float PEs: the same distributions, scaled to unit spread and encoded [A] (RNE)
        acts = (
            encode(acts * 2.0 ** -(p.act_bits - 3), p.fmt)
            if kind != "random"
            else rng.integers(0, 1 << p.act_bits, acts.shape, dtype=np.int64)
        )
        wf = dense_w * 2.0 ** -(p.weight_bits - 3)
        vals, meta = compress_nm(wf, p.n, p.m)
        vals, dense_w = encode(vals, p.fmt), encode(wf, p.fmt)
    else:
        vals, meta = compress_nm(dense_w, p.n, p.m)  # over the last axis: one group of M
    meta = meta[..., 0]
    rep = np.repeat(np.arange(n_w), w_hold)[:T]
    clear = np.zeros((T, n_inst), dtype=np.int64)
    if kind != "constant":
        clear[::acc_len] = 1
    valid = np.ones((T, n_inst), dtype=np.int64)
    if sparse:
        return PETrace(acts, vals[rep], meta[rep], clear, valid)
    if dense_model == "dense":
        return PETrace(acts, dense_w[rep], None, clear, valid)
    dense_pruned = decompress_nm(vals, meta[..., None], p.n, p.m)
    return PETrace(acts, dense_pruned[rep], None, clear, valid)


def trace_from_arrays(
    params: PEParams,
    sparse: bool,
    acts,
    weights,
    meta=None,
    clear=None,
    valid=None,
    *,
    instances: int = 64,
    label: str = "",
) -> PETrace:
    """A trace from one real PE input stream (acts (T, M), weights (T, N|M), meta (T,), clear (T,)),
    cut into ``instances`` parallel chunks (the bit lanes). T must be at least ``instances``.
    ``label`` says where the stream comes from."""
    acts = np.asarray(acts, dtype=np.int64)
    weights = np.asarray(weights, dtype=np.int64)
    T = acts.shape[0]
    lanes_w = params.n if sparse else params.m
    if acts.ndim != 2 or acts.shape[1] != params.m:
        raise InputError(f"acts must be (T, {params.m}), got {acts.shape}", where="trace acts")
    if weights.shape != (T, lanes_w):
        raise InputError(f"weights must be ({T}, {lanes_w}), got {weights.shape}", where="trace weights")
    if sparse and meta is None:
        raise InputError("a sparse-PE trace needs metadata codes", where="trace meta")
    if instances % 64 or T < instances:
        raise InputError(
            f"need T >= instances (multiple of 64), got T={T}, instances={instances}", where="trace"
        )
    L = T // instances

    def cut(a, default=0):
        a = np.full(T, default, dtype=np.int64) if a is None else np.asarray(a, dtype=np.int64)
        a = a[: L * instances]
        return a.reshape(instances, L, *a.shape[1:]).swapaxes(0, 1)

    return PETrace(cut(acts), cut(weights), cut(meta) if sparse else None, cut(clear), cut(valid, 1), label)


def dense_groups_trace(
    params: PEParams,
    sparse: bool,
    acts,
    weights,
    clear,
    *,
    dense_path: bool = False,
    instances: int = 64,
    label: str = "",
) -> PETrace:
    """A trace of dense groups (acts (T, M), weights (T, M), clear (T,)) as the PE runs them:
    the dense PE directly; the sparse PE by its dense fallback (each group as M/N N:M groups,
    hw.golden.dense_to_sparse_stream); the dense-path PE in dense mode (in_dense = 1, the group in
    lanes 0..M-1, the other lanes and the metadata held at 0)."""
    acts = np.asarray(acts, dtype=np.int64)
    weights = np.asarray(weights, dtype=np.int64)
    clear = np.asarray(clear, dtype=np.int64)
    if not sparse:
        return trace_from_arrays(params, False, acts, weights, None, clear, instances=instances, label=label)
    if not dense_path:
        a, w, meta = dense_to_sparse_stream(acts, weights, params.n, params.m)
        c = fallback_clears(clear, params.n, params.m)
        return trace_from_arrays(params, True, a, w, meta, c, instances=instances, label=label)
    g = params.m // params.n
    tr = trace_from_arrays(params, False, acts, weights, None, clear, instances=instances, label=label)
    t, i = tr.acts.shape[:2]
    a = np.zeros((t, i, g * params.m), dtype=np.int64)
    a[..., : params.m] = tr.acts
    return PETrace(
        a,
        tr.weights,
        np.zeros((t, i, g), dtype=np.int64),
        tr.clear,
        tr.valid,
        label,
        np.ones((t, i), dtype=np.int64),
    )


@dataclass
class TraceRecipe:
    """A trace made only when its activity has to be simulated: ``key`` names everything it
    depends on (its activity's cache key in place of the trace's digest), ``build`` makes it."""

    key: str
    label: str
    build: Callable[[], PETrace]

    def digest(self) -> str:
        return self.key


@dataclass
class TraceMix:
    """A sparse design's PE on a workload: ``sparse`` (its N:M layers' trace on the sparse PE)
    and ``fallback`` (its dense layers' trace on the path they run on), weighted by the
    workload's dense-equivalent MACs of each (``sparse_macs``, ``fallback_macs``)."""

    sparse: PETrace | TraceRecipe
    fallback: PETrace | TraceRecipe | None
    sparse_macs: float
    fallback_macs: float
    label: str = ""


def pe_cycle_shares(
    params: PEParams, sparse_macs: float, fallback_macs: float, dense_path: bool
) -> tuple[float, float]:
    """Shares of the PE's busy cycles of a sparse design's N:M layers and dense layers, from their
    dense-equivalent MACs and each path's rate per PE-cycle: N:M groups M MACs (the dense path's
    N:M mode M*M/N), dense groups N (the fallback: M/N cycles a group; the dense path's dense
    mode M). Energy per MAC is then the MAC-weighted mix of each path's energy per MAC."""
    m, n = params.m, params.n
    rate_s, rate_d = (m * m / n, m) if dense_path else (m, n)
    cs, cd = max(sparse_macs, 0.0) / rate_s, max(fallback_macs, 0.0) / rate_d
    if cs + cd <= 0:
        return 1.0, 0.0
    return cs / (cs + cd), cd / (cs + cd)


#: what ``trace_label`` says of the default trace
SYNTHETIC_TRACE_LABEL = (
    "synthetic: ppa.activity.synthetic_trace (seeded N:M-pruned uniform weights, post-ReLU activations)"
)


def trace_label(trace: PETrace | TraceRecipe | TraceMix | None) -> str:
    """Which trace a PPA result's activity comes from: the synthetic default, the trace's label,
    or (unlabelled) its digest."""
    if trace is None:
        return SYNTHETIC_TRACE_LABEL
    if isinstance(trace, TraceMix):
        return trace.label or f"{trace_label(trace.sparse)}; dense layers: {trace_label(trace.fallback)}"
    return trace.label or f"caller-supplied trace (digest {trace.digest()})"


def dense_path_trace(params: PEParams, trace: PETrace) -> PETrace:
    """A sparse-PE trace (acts (T, I, M), weights (T, I, N), meta (T, I)) as the dense-path PE
    consumes it in N:M mode: G = M/N consecutive groups per cycle (acts (T/G, I, G*M), weights
    (T/G, I, M), meta (T/G, I, G)); a cycle clears when its first group does, is valid when any
    of its groups is. T is cut to a multiple of G. A trace already in that shape is returned."""
    g = params.m // params.n
    if trace.acts.shape[-1] == g * params.m and trace.weights.shape[-1] == params.m and g > 1:
        return trace
    if trace.meta is None or trace.weights.shape[-1] != params.n:
        raise InputError(
            "the dense-path PE's N:M trace is built from a sparse-PE trace (N weights + metadata)",
            where="trace",
        )
    T, n_inst = trace.acts.shape[:2]
    t = (T // g) * g
    if t == 0:
        raise InputError(f"need at least {g} cycles, got {T}", where="trace")

    def fold(a, lanes):
        return np.ascontiguousarray(
            a[:t].reshape(t // g, g, n_inst, lanes).transpose(0, 2, 1, 3).reshape(t // g, n_inst, g * lanes)
        )

    meta = np.ascontiguousarray(trace.meta[:t].reshape(t // g, g, n_inst).transpose(0, 2, 1))
    clear = trace.clear[:t].reshape(t // g, g, n_inst)[:, 0]
    valid = trace.valid[:t].reshape(t // g, g, n_inst).max(axis=1)
    return PETrace(fold(trace.acts, params.m), fold(trace.weights, params.n), meta, clear, valid)


def pe_inputs(params: PEParams, sparse: bool, trace: PETrace, *, dense_path: bool = False) -> dict:
    """The PE's input ports per cycle and instance (ppa.netlist.GateNetlist.simulate's ``inputs``)
    on ``trace`` (a sparse-PE trace is folded for the dense-path PE)."""
    if dense_path:
        trace = dense_path_trace(params, trace)
    inputs: dict[str, np.ndarray | None] = {
        "in_act": trace.acts,
        "in_w": trace.weights,
        "in_clear": trace.clear,
        "in_valid": trace.valid,
    }
    if sparse:
        inputs["in_meta"] = trace.meta
    if dense_path:  # N:M mode unless the trace says otherwise (dense_groups_trace)
        inputs["in_dense"] = np.zeros_like(trace.clear) if trace.dense is None else trace.dense
    return {k: np.ascontiguousarray(v) for k, v in inputs.items()}


def simulate_pe(
    params: PEParams,
    sparse: bool,
    trace: PETrace,
    *,
    cache=None,
    outputs: tuple[str, ...] = (),
    dense_path: bool = False,
) -> tuple[ToggleCounts, dict, synth.SynthResult]:
    res = synth_pe(params, sparse, cache=cache, dense_path=dense_path)
    net = _netlist(str(res.netlist_file()), rtl.pe_name(sparse, dense_path))
    tc, outs = net.simulate(pe_inputs(params, sparse, trace, dense_path=dense_path), outputs=outputs)
    return tc, outs, res


@lru_cache(maxsize=32)
def _netlist(path: str, top: str) -> GateNetlist:
    return GateNetlist(json.loads(open(path).read()), top)


@dataclass(frozen=True)
class PEActivity:
    """Per PE-cycle switching facts of one PE configuration on one trace (node independent)."""

    gate_toggles: float  # gate-output toggles per PE-cycle
    ff_toggles: float  # flip-flop output toggles per PE-cycle
    act_input_toggles: float  # toggles on in_act per PE-cycle (what an array's forwarding registers carry)
    flip_flops: int
    transistors: int
    logic_depth: int
    gates: int
    trace: str
    w_input_toggles: float  # toggles on in_w (+ in_meta) per PE-cycle (the OS weight bundle carries them)
    # gate-output toggles per PE-cycle, each weighted by its net's energy (ppa.liberty.gates):
    # toggle-equivalents
    gate_energy: float
    ff_net_energy: float  # flip-flop output toggles per PE-cycle so weighted (the load each output drives)

    @property
    def toggles(self) -> float:
        return self.gate_toggles + self.ff_toggles


#: the activity figures' own version (part of their cache key): bump when what they mean changes
ACTIVITY_VERSION = "v4"  # v4: gate_energy, ff_net_energy

_MEM: dict[tuple, PEActivity] = {}


def pe_activity(
    params: PEParams,
    sparse: bool,
    trace: PETrace | None = None,
    *,
    cache=None,
    dense_path: bool = False,
    w_hold: int = W_HOLD,
) -> PEActivity:
    """Toggles per PE-cycle, computed once per netlist and trace (ppa.characterisation.cached:
    memory, disk, the shipped characterisation; keyed by the netlist's synthesis key, the trace
    and :data:`ACTIVITY_VERSION`).

    ``dense_path``: the dense-path PE in N:M mode (a sparse-PE ``trace`` is folded by
    :func:`dense_path_trace`). ``w_hold``: the default trace's weight hold (W_HOLD for
    weight-stationary arrays; 1 for output-stationary ones, where weights stream every cycle).
    A :class:`TraceRecipe` is built only when simulated; a :class:`TraceMix` gives the mix of its
    parts' activities by :func:`pe_cycle_shares` (:func:`mix_activities`)."""
    if isinstance(trace, TraceMix):
        ws, wd = pe_cycle_shares(params, trace.sparse_macs, trace.fallback_macs, dense_path)
        parts = [(pe_activity(params, sparse, trace.sparse, cache=cache, dense_path=dense_path), ws)]
        if trace.fallback is not None and wd > 0:
            parts.append(
                (pe_activity(params, sparse, trace.fallback, cache=cache, dense_path=dense_path), wd)
            )
        return mix_activities(parts, label=trace_label(trace))
    if trace is None:
        label = "default-v4" if w_hold == W_HOLD else f"default-v4-hold{int(w_hold)}"  # v4: w_input_toggles
    else:
        label = trace.digest()
    key = (params, sparse, dense_path, label, str(synth.cache_dir(cache)))
    if key in _MEM:
        return _MEM[key]
    res = synth_pe(params, sparse, cache=cache, dense_path=dense_path)

    def compute() -> dict:
        if trace is None:  # built only when simulated
            tr = synthetic_trace(params, sparse, w_hold=w_hold)
        else:
            tr = trace.build() if isinstance(trace, TraceRecipe) else trace
        tc, _, r = simulate_pe(params, sparse, tr, cache=cache, dense_path=dense_path)
        n = tc.cycles * tc.instances
        w_tog = (tc.port_toggles.get("in_w", 0) + tc.port_toggles.get("in_meta", 0)) / n
        return asdict(
            PEActivity(
                tc.gate_output_toggles / n,
                tc.ff_output_toggles / n,
                tc.port_toggles["in_act"] / n,
                r.flip_flops,
                r.transistors,
                r.logic_depth,
                r.gates,
                label,
                w_tog,
                tc.gate_energy / n,
                tc.ff_net_energy / n,
            )
        )

    d = characterisation.cached(
        "activity",
        synth_memo.portable_key("activity", res.key, label, ACTIVITY_VERSION),
        compute,
        cache=cache,
        what=f"the switching activity of {res.top}",
    )
    try:
        act = PEActivity(**d)
    except TypeError:  # an entry of another layout
        act = PEActivity(**compute())
    _MEM[key] = act
    return act


#: the per PE-cycle figures of a PEActivity that a mix averages (the rest is the netlist's)
_RATES = (
    "gate_toggles",
    "ff_toggles",
    "act_input_toggles",
    "w_input_toggles",
    "gate_energy",
    "ff_net_energy",
)


def mix_activities(parts: list[tuple[PEActivity, float]], *, label: str = "") -> PEActivity:
    """The activity of a PE that spends the share ``w`` of its busy cycles on each part's trace:
    each per PE-cycle figure the ``w``-weighted mean (the shares are normalised); the netlist's
    figures (flip-flops, transistors, depth, gates) must agree."""
    total = sum(w for _, w in parts)
    if not parts or total <= 0:
        raise InputError("a mix needs at least one part with a positive share", where="activity mix")
    first = parts[0][0]
    for a, _ in parts[1:]:
        if (a.flip_flops, a.transistors, a.gates) != (first.flip_flops, first.transistors, first.gates):
            raise InputError("the parts of a mix must be activities of one netlist", where="activity mix")
    vals = {f.name: getattr(first, f.name) for f in fields(PEActivity)}
    for name in _RATES:
        vals[name] = sum(getattr(a, name) * w for a, w in parts) / total
    vals["trace"] = label or " + ".join(f"{w / total:.3f} x {a.trace}" for a, w in parts)
    return PEActivity(**vals)


def pe_sizing_factor(
    params: PEParams, sparse: bool, lib: LibertyLibrary, *, cache=None, dense_path: bool = False
) -> float:
    """The PE's sizing factor on ``lib`` (ppa.liberty.sizing): its switching energy mapped for
    minimum delay over its area mapping, on the default trace, over the calibration pair's same
    ratio. Computed once per netlist and library (ppa.characterisation.cached; memoised here)."""
    memo = (params, sparse, dense_path, lib.sha256, str(synth.cache_dir(cache)))
    if memo in _SIZING:
        return _SIZING[memo]
    res = synth_pe(params, sparse, cache=cache, dense_path=dense_path)
    top = rtl.pe_name(sparse, dense_path)
    key = synth_memo.portable_key(
        "sizing",
        res.key,
        lib.sha256,
        sizing.SIZING_VERSION,
        MAP_SCRIPT,
        TIMING_ABC_SCRIPT,
        repr(sizing.FASTEST_CLOCK_PS),
        repr(sizing.ANCHOR_INSTANCES),
        "default-v4",
    )

    def compute() -> dict:
        inputs = pe_inputs(params, sparse, synthetic_trace(params, sparse), dense_path=dense_path)
        return {
            "pe_speed_over_area": sizing.speed_over_area(
                rtl.pe_verilog(params, sparse, dense_path), top, lib, inputs
            )
        }

    d = characterisation.cached(
        "sizing", key, compute, cache=cache, what=f"the sizing factor of {top} on {lib.library}"
    )
    _SIZING[memo] = d["pe_speed_over_area"] / sizing.anchor_ratio(lib, cache=cache)
    return _SIZING[memo]


_SIZING: dict[tuple, float] = {}


@lru_cache(maxsize=64)
def weight_bit_change(params: PEParams, sparse: bool = True) -> float:
    """Probability that a weight bit differs between two independent weight words of the default
    trace (the kept N:M weights for a sparse PE, the unpruned ones for a dense PE): what a bit of
    a weight-stationary array's shift register does when the next row's word moves in [D,
    measured on the seeded synthetic distribution]. Metadata bits are taken to change alike [A]."""
    tr = synthetic_trace(params, sparse, cycles=1, instances=DEFAULT_INSTANCES)
    w = tr.weights[0].astype(np.int64) & ((1 << params.weight_bits) - 1)  # (I, lanes), two's complement
    diff = np.bitwise_xor(w[1:], w[:-1]).astype(np.uint64)
    return float(np.bitwise_count(diff).sum()) / (diff.size * params.weight_bits)
