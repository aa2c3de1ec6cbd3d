"""The data a design's PE is simulated on for switching activity ([fixed] activity_trace).

* ``"reference"`` (the default): real data of the workload's family (sim.quality.traces.family_traces:
  a transformer workload -> the char-level transformer LM, a CNN -> the digits CNN, an MLP -> the
  digits MLP). A dense design runs the family's dense model on the dense PE. A sparse design runs
  the ASP fine-tuned model: its pruned layers on the sparse PE, and the layers ASP leaves dense on
  the path they take (the sparse PE's dense fallback, or the dense path's dense mode), mixed by
  the workload's own MACs on each (sim.perf ``fallback_macs``; ppa.activity.pe_cycle_shares).
  Float precisions run the same models' float values encoded to the PE's format.
* ``"synthetic"``: ppa.activity's seeded synthetic trace.

The traces are ppa.activity.TraceRecipe's: built (the reference model trained, its streams cut
into :data:`TRACE_LANES` bit-lanes) only when their activity is simulated; the activity is cached
by the recipe's key (the sim.quality code digest and every parameter of the stream), on disk and
in the shipped characterisation, so a run that finds it trains and simulates nothing.
"""

from __future__ import annotations

import hashlib
import json
from functools import lru_cache
from typing import Any

from hw.errors import InputError
from hw.params import PEParams
from ppa.activity import ACC_LEN, TraceMix, TraceRecipe, dense_groups_trace, trace_from_arrays
from ppa.design import DesignPoint
from sim.quality.evidence.evidence import reference_size
from sim.quality.traces.family_traces import (
    FAMILIES,
    MODEL_NAMES,
    TRACE_CYCLES,
    activity_family,
    code_digest,
    family_models,
    family_streams,
)

__all__ = [
    "TRACE_LANES",
    "TRACE_CHOICES",
    "family_recipe",
    "workload_trace",
    "design_traces",
    "check_trace_choice",
    "warm_models",
]

#: Bit-lanes (parallel PE instances) of a real-data activity trace.
TRACE_LANES = 512
#: the N:M run of a reference whose dense model a dense PE's trace comes from (a dense design has no N:M)
DENSE_MODEL_NM = (2, 4)
#: the values of [fixed] activity_trace
TRACE_CHOICES = ("reference", "synthetic")


#: the streams' code digest, read once per process (the files do not change under a running sweep)
_code_digest = lru_cache(maxsize=1)(code_digest)


def check_trace_choice(name: str, where: str = "activity_trace") -> str:
    if name not in TRACE_CHOICES:
        raise InputError(f"unknown activity trace {name!r} (known: {', '.join(TRACE_CHOICES)})", where=where)
    return name


def _numbers(p: PEParams) -> str:
    return (
        f"float values encoded to {p.precision} (RNE)"
        if p.is_float
        else f"int{p.weight_bits} weights / int{p.act_bits} activations, symmetric quantisation"
    )


def family_recipe(
    family: str, params: PEParams, part: str, *, dense_path: bool = False, dataflow: str = "ws"
) -> TraceRecipe:
    """The trace of one part (sim.quality.traces.family_traces.PARTS) of a family's reference model for
    the PE ``params`` (``part="fallback"``: on the sparse PE's dense fallback, or with
    ``dense_path`` in the dense path's dense mode), in the stream order of the array's costed
    ``dataflow`` (``os``: weights streamed every cycle; ``ws``: held while the samples pass, a new
    accumulation every ppa.activity.ACC_LEN cycles, as the synthetic trace)."""
    order = "os" if dataflow == "os" else "ws"
    dense = part == "dense"
    if family not in FAMILIES:
        raise InputError(
            f"unknown workload family {family!r} (known: {', '.join(FAMILIES)})", where="activity trace"
        )
    p = params
    key_obj = {
        "code": _code_digest(),
        "family": family,
        "part": part,
        "n": None if dense else p.n,
        "m": p.m,
        "precision": p.precision,
        "act_bits": p.act_bits,
        "weight_bits": p.weight_bits,
        "dense_path": bool(dense_path and part == "fallback"),
        "lanes": TRACE_LANES,
        "cycles": TRACE_CYCLES,
        "order": order,
        "acc_len": ACC_LEN,
        "size": reference_size(),
        "v": 1,
    }
    key = "family-" + hashlib.sha256(json.dumps(key_obj, sort_keys=True).encode()).hexdigest()[:24]
    model = MODEL_NAMES[family] + (" at its tiny test size" if reference_size() == "tiny" else "")
    where = {
        "sparse": f"ASP fine-tuned {p.n}:{p.m} model, its pruned layers on the sparse PE",
        "fallback": f"ASP fine-tuned {p.n}:{p.m} model, the layers ASP leaves dense on the "
        + ("dense path (dense mode)" if dense_path else "sparse PE's dense fallback"),
        "dense": "dense model, every layer, on the dense PE",
    }[part]
    label = f"{family} trace: {model}, {where}; {_numbers(p)}; {order.upper()} stream order"

    def build():
        # the dense model does not depend on an N:M: the one trained in the reference's DENSE_MODEL_NM run
        models = family_models(family, *DENSE_MODEL_NM) if dense else None
        s = family_streams(
            family,
            p.n,
            p.m,
            part,
            precision=p.precision,
            weight_bits=p.weight_bits,
            act_bits=p.act_bits,
            order=order,
            acc_len=ACC_LEN,
            models=models,
        )
        if s is None:
            raise InputError(f"the {family} reference model has no {part} layer", where="activity trace")
        acts, w, meta, clear, layers = s
        text = f"{label} ({', '.join(layers)})"
        if part == "sparse":
            return trace_from_arrays(p, True, acts, w, meta, clear, instances=TRACE_LANES, label=text)
        return dense_groups_trace(
            p, part == "fallback", acts, w, clear, dense_path=dense_path, instances=TRACE_LANES, label=text
        )

    return TraceRecipe(key, label, build)


def _mix(
    family: str, p: PEParams, dense_path: bool, dataflow: str, sparse_macs: float, fallback_macs: float
) -> TraceMix:
    s = family_recipe(family, p, "sparse", dataflow=dataflow)
    f = family_recipe(family, p, "fallback", dense_path=dense_path, dataflow=dataflow)
    tot = sparse_macs + fallback_macs
    share = fallback_macs / tot if tot > 0 else 0.0
    label = (
        f"{family} trace: {MODEL_NAMES[family]}, ASP fine-tuned {p.n}:{p.m} model: pruned layers on the "
        f"sparse PE, layers left dense on the {'dense path' if dense_path else 'dense fallback'} "
        f"({share:.1%} of the workload's MACs run dense); {_numbers(p)}; "
        f"{'OS' if dataflow == 'os' else 'WS'} stream order"
    )
    return TraceMix(s, f, sparse_macs, fallback_macs, label)


def workload_trace(choice: str, design: DesignPoint, workload, sparse_macs: float, fallback_macs: float):
    """The trace a design's PE is costed on for ``workload`` (a sim.workloads.Workload) whose
    dense-equivalent MACs split into ``sparse_macs`` (N:M layers) and ``fallback_macs`` (layers
    run dense) on this design; None for the synthetic default."""
    if check_trace_choice(choice) == "synthetic":
        return None
    family, _ = activity_family(workload)
    p = design.validate()
    if not design.sparse:
        return family_recipe(family, p, "dense", dataflow=design.cost_dataflow)
    return _mix(family, p, design.dense_path, design.cost_dataflow, sparse_macs, fallback_macs)


def design_traces(choice: str, design: DesignPoint, workloads: list[Any]) -> list:
    """Every trace the trials may cost ``design``'s PE configuration on, over the workloads of a
    mix (for prewarm and ``sparsepe characterise``: a sparse design's mix with both parts, so that
    each part's activity is looked up); [None] for the synthetic default."""
    if check_trace_choice(choice) == "synthetic":
        return [None]
    families = sorted({activity_family(w)[0] for w in workloads})
    p = design.validate()
    if not design.sparse:
        return [family_recipe(f, p, "dense", dataflow=design.cost_dataflow) for f in families]
    return [_mix(f, p, design.dense_path, design.cost_dataflow, 1.0, 1.0) for f in families]


def warm_models(choice: str, designs: list[DesignPoint], workloads: list[Any]) -> None:
    """Train (or load) the reference models the designs' traces would be built from, here: forked
    workers then share them instead of each training its own."""
    if check_trace_choice(choice) == "synthetic":
        return
    for fam in sorted({activity_family(w)[0] for w in workloads}):
        for n, m in sorted({(d.n, d.m) if d.sparse else DENSE_MODEL_NM for d in designs}):
            family_models(fam, n, m)
