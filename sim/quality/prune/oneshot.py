"""One-shot N:M pruning of a whole checkpoint: which tensors, along which axis, by which method.

Which tensors are pruned (stated rule, NVIDIA ASP's whitelist of Linear/Conv weights):

* floating-point tensors with two or more axes, whose name does not mark an embedding table
  (``embed``, ``wte``, ``wpe``: ASP does not prune ``nn.Embedding``), whose layout is known
  (sim.quality.prune.layouts; an unknown layout is skipped with its reason, never guessed) and whose
  PyTorch-layout shape ``(out, in, ...)`` (per expert for stacked experts) passes the shared ASP
  verdict (sim.asp_rules.weight_verdict: size(0) % 8, size(1) % 16, K % M), are N:M-pruned in
  groups of M along their reduction axis;
* an LM head tied to the input embedding table (sim.quality.prune.tied) is kept dense unless
  ``prune_lm_head``, the rule of ``simulate --hf-config``; pruned, its tied copy follows it;
* every other tensor is kept unchanged and listed in ``skipped`` with the reason.

Methods (sim.quality.prune.methods): ``magnitude``, ``wanda``, ``sparsegpt``. The default is
``sparsegpt`` when calibration inputs exist, else ``magnitude``. A calibrated method prunes a
tensor for which the calibration gives no inputs by magnitude, and says so in ``methods``.

Order of work: the weights, the layouts, the method and the first calibration inputs are all
checked before any tensor is pruned (every bad input is an InputError first).
"""

from __future__ import annotations

import re
from dataclasses import dataclass, field

import numpy as np

from hw.errors import InputError
from hw.nm import check_nm
from sim.asp_rules import weight_verdict
from sim.quality.prune.calibration import Calibration, block_of, check_inputs, match_keys
from sim.quality.prune.layouts import Layout, LayoutRule, resolve_layouts
from sim.quality.prune.methods import CALIBRATED, METHODS, PERCDAMP, prune_matrix
from sim.quality.prune.pruning import kind_for_shape
from sim.quality.prune.tied import tied_heads

__all__ = ["OneShot", "prune_tensors", "choose_method", "EMBEDDING_NAME"]

#: Names of embedding tables (ASP leaves ``nn.Embedding`` dense).
EMBEDDING_NAME = re.compile(r"embed|(^|[._/])(wte|wpe)($|[._/])", re.IGNORECASE)


@dataclass
class OneShot:
    """A pruned checkpoint: every tensor (pruned ones replaced, dtypes kept), the keep masks of the
    pruned ones (in the tensor's own layout), the skipped ones with reasons, the layout and method of
    each pruned tensor, and where the calibration inputs came from."""

    tensors: dict[str, np.ndarray]
    masks: dict[str, np.ndarray]
    skipped: dict[str, str]
    layouts: dict[str, Layout]
    methods: dict[str, str]
    method: str
    n: int
    m: int
    calibration: dict = field(default_factory=dict)
    inputs: dict[str, np.ndarray] = field(default_factory=dict, repr=False)  # the dense model's, checked
    tied: dict[str, str] = field(default_factory=dict)  # LM head -> how it is tied and what was done

    def tied_json(self) -> list[dict]:
        return [{"name": k, "tie": v} for k, v in self.tied.items()]

    def layouts_json(self) -> dict[str, int]:
        """{tensor: reduction axis} of the pruned tensors."""
        return {k: lay.reduction_axis(self.tensors[k].ndim) for k, lay in self.layouts.items()}

    def pruned_json(self) -> list[dict]:
        return [
            {
                "name": k,
                "shape": [int(d) for d in self.tensors[k].shape],
                "layout": self.layouts[k].name,
                "reduction_axis": self.layouts[k].reduction_axis(self.tensors[k].ndim),
                "method": self.methods[k],
            }
            for k in self.masks
        ]

    def schedule(self) -> str:
        """One line: how the tensors were pruned."""
        counts: dict[str, int] = {}
        for v in self.methods.values():
            counts[v] = counts.get(v, 0) + 1
        how = ", ".join(f"{c} by {k}" for k, c in counts.items()) or "none"
        cal = self.calibration
        src = (
            f"; calibration {cal['source']}, {cal['samples']} rows per tensor, inputs from the {cal['inputs']}"
            if cal.get("source")
            else "; no calibration inputs"
        )
        return f"one-shot {self.n}:{self.m} {self.method} pruning of {len(self.masks)} tensor(s) ({how}){src}"


def choose_method(method: str | None, calibration: Calibration | None) -> str:
    """The method that runs: ``method`` (checked), else sparsegpt with calibration, else magnitude."""
    if method is None:
        return "sparsegpt" if calibration is not None else "magnitude"
    if method not in METHODS:
        raise InputError(f"unknown pruning method {method!r} (known: {', '.join(METHODS)})", where="--method")
    if method in CALIBRATED and calibration is None:
        raise InputError(
            f"{method} needs calibration inputs (--calib FILE or MODULE:FUNCTION, [quality] "
            "calibration); without them use --method magnitude",
            where="--method",
        )
    return method


def _candidates(tensors: dict[str, np.ndarray]) -> tuple[dict[str, tuple[int, ...]], dict[str, str]]:
    """(candidate weight shapes, skipped name -> reason)."""
    cand, skipped = {}, {}
    for name, t in tensors.items():
        if t.dtype == bool or not np.issubdtype(t.dtype, np.floating):
            skipped[name] = f"dtype {t.dtype}: not a floating-point weight"
        elif t.ndim < 2:
            skipped[name] = (
                f"{t.ndim}-D tensor: bias/normalisation/scalar, not a weight matrix (ASP prunes weights only)"
            )
        elif EMBEDDING_NAME.search(name):
            skipped[name] = "embedding table: not a Linear/Conv weight (ASP's whitelist)"
        elif not np.all(np.isfinite(t)):
            raise InputError("holds NaN or infinity", where=f"tensor {name!r}")
        else:
            cand[name] = tuple(int(d) for d in t.shape)
    return cand, skipped


def _prune_one(
    w: np.ndarray, lay: Layout, method: str, n: int, m: int, x: np.ndarray | None, percdamp: float
) -> tuple[np.ndarray, np.ndarray]:
    """(pruned tensor in w's dtype, keep mask) of one tensor."""
    shape = w.shape
    mats = lay.to_matrices(w)
    out = np.empty_like(mats)
    keep = np.empty(mats.shape, dtype=bool)
    for e in range(mats.shape[0]):
        xe = None
        if x is not None:
            xe = lay.calibration_columns(x[e] if x.ndim == 3 else x, shape)
        out[e], keep[e] = prune_matrix(method, mats[e], n, m, xe, percdamp=percdamp)
    pruned = lay.from_matrices(out, shape)
    mask = lay.from_matrices(keep, shape)
    return np.where(mask, pruned, 0.0).astype(w.dtype), np.ascontiguousarray(mask)


def prune_tensors(
    tensors: dict[str, np.ndarray],
    n: int,
    m: int,
    *,
    method: str | None = None,
    calibration: Calibration | None = None,
    layout_rules: list[LayoutRule] | None = None,
    percdamp: float = PERCDAMP,
    prune_lm_head: bool = False,
    tie: bool | None = None,
) -> OneShot:
    """One-shot N:M pruning of a checkpoint (see the module docstring); ``tie``: the config's
    ``tie_word_embeddings`` when known (sim.quality.prune.tied.config_tie)."""
    check_nm(n, m)
    method = choose_method(method, calibration)
    cand, skipped = _candidates(tensors)
    heads = tied_heads(tensors, EMBEDDING_NAME, tie)
    tied: dict[str, str] = {}
    for head, (_, why) in heads.items():
        if prune_lm_head:
            tied[head] = (
                f"tied to the input embedding ({why}): pruned (--prune-lm-head), the embedding with it"
            )
        elif head in cand:
            del cand[head]
            skipped[head] = tied[head] = (
                f"LM head tied to the input embedding ({why}): kept dense, as simulate "
                "--hf-config keeps it (--prune-lm-head prunes it and the embedding with it)"
            )
    raw, keys = {}, {}
    if calibration is not None:
        raw = calibration.fetch(dict(tensors))
        keys = match_keys(raw, tensors, calibration.source)
    widths = {keys[k]: np.shape(raw[k])[-1] for k in keys if np.ndim(raw[k]) >= 2}
    layouts, unknown = resolve_layouts(cand, layout_rules, widths)
    skipped.update(unknown)
    inputs = (
        check_inputs(raw, keys, tensors_shapes(tensors), layouts, calibration.source) if calibration else {}
    )
    dense_inputs = inputs
    prunable: dict[str, Layout] = {}
    for name, lay in layouts.items():
        canon = lay.canonical_shape(cand[name])
        verdict = weight_verdict(kind_for_shape(canon), canon, n, m)
        if verdict.sparsifiable:
            prunable[name] = lay
        else:
            skipped[name] = verdict.reason + (
                f" (layout {lay.name}, per expert)"
                if lay.experts
                else f" (layout {lay.name})"
                if lay.name != "linear"
                else ""
            )
    methods = {k: (method if (method == "magnitude" or k in inputs) else "magnitude") for k in prunable}
    out = dict(tensors)
    masks: dict[str, np.ndarray] = {}
    if calibration is not None and calibration.sequential and method in CALIBRATED:
        stages: dict[str, list[str]] = {}
        for key in raw:  # blocks in the order the team's function returns their inputs
            name = keys[key]
            if name in prunable:
                stages.setdefault(block_of(name), []).append(name)
        rest = [k for k in prunable if not any(k in s for s in stages.values())]
        for i, stage in enumerate(stages.values()):
            if i:
                fresh = calibration.fetch(out)
                fresh_keys = match_keys(fresh, tensors, calibration.source)
                inputs = check_inputs(fresh, fresh_keys, tensors_shapes(tensors), layouts, calibration.source)
            for name in stage:
                if name not in inputs:
                    raise InputError(
                        f"the inputs of tensor {name!r} are missing from a later call (the "
                        "function must return the same keys for every weights it gets)",
                        where=f"calibration {calibration.source}",
                    )
                out[name], masks[name] = _prune_one(
                    tensors[name], prunable[name], method, n, m, inputs[name], percdamp
                )
        for name in rest:
            out[name], masks[name] = _prune_one(
                tensors[name], prunable[name], "magnitude", n, m, None, percdamp
            )
        stage_count = len(stages)
    else:
        for name, lay in prunable.items():
            x = inputs.get(name) if methods[name] != "magnitude" else None
            out[name], masks[name] = _prune_one(tensors[name], lay, methods[name], n, m, x, percdamp)
        stage_count = 0
    for head, (
        table,
        _,
    ) in heads.items():  # --prune-lm-head: a stored copy of the table stays equal to the head
        if prune_lm_head and table is not None and head in masks:
            out[table], masks[table], prunable[table], methods[table] = (
                out[head],
                masks[head],
                prunable[head],
                methods[head],
            )
            skipped.pop(table, None)
    masks = {k: masks[k] for k in prunable if k in masks}  # the checkpoint's order
    cal: dict = {"source": None, "samples": 0, "inputs": None}
    if calibration is not None:
        rows = [int(np.shape(raw[k])[-2]) for k in keys if keys[k] in prunable]
        cal = {
            "source": calibration.source,
            "samples": min(rows) if rows else 0,
            "inputs": calibration.inputs,
            "tensors_with_inputs": len(rows),
        }
        if calibration.sequential:
            cal["calls"] = max(1, stage_count)
        if rows and min(rows) != max(rows):
            cal["samples_max"] = max(rows)
    return OneShot(
        out, masks, skipped, {k: prunable[k] for k in masks}, methods, method, n, m, cal, dense_inputs, tied
    )


def tensors_shapes(tensors: dict[str, np.ndarray]) -> dict[str, tuple[int, ...]]:
    return {k: tuple(int(d) for d in v.shape) for k, v in tensors.items()}
