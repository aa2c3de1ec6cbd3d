"""Calibration inputs for the calibrated pruning methods (wanda, sparsegpt).

A calibration source gives, for weight tensors by name, that layer's inputs: an array
``(samples, in_features)`` (for a convolution the im2col rows, ``in_features = Cin*kh*kw`` in
PyTorch's flattening order; for stacked experts either one array shared by every expert or
``(E, samples, in)``, one per expert). A key names the weight tensor (``h.0.attn.c_attn.weight``)
or its module (``h.0.attn.c_attn``, as forward hooks see it).

Sources:

* a file (``.npz`` / ``.safetensors``) with those arrays: inputs of the dense model;
* ``MODULE:FUNCTION`` (the team's code, run in a child process with a time limit:
  sim.quality.team.hooks). A function without parameters, ``fn()``, returns the dense model's inputs.
  A function with one parameter, ``fn(weights)``, gets the current weights (a dict like the
  checkpoint's) and returns the inputs *that* model produces: pruning then runs in SparseGPT's
  sequential mode (Frantar & Alistarh 2023, sec. 3.5 / the reference code's ``llama_sequential``):
  tensors are pruned block by block (a block = the tensor names up to their first numeric part,
  ``transformer.h.3``, in the order the function returns them), and each block's inputs come from
  the model whose earlier blocks are already pruned;
* the built-in references bring their own (sim.quality.references.transformer).

Checks, each an InputError naming the source and the tensor, made on the first inputs before any
weight is pruned: a key that matches no tensor, a non-float or wrongly shaped array, a width that is
not the tensor's input width, no rows, NaN or infinity.
"""

from __future__ import annotations

import re
from collections.abc import Callable
from dataclasses import dataclass
from pathlib import Path

import numpy as np

from hw.errors import InputError
from sim.quality.prune.layouts import Layout
from sim.quality.team.hooks import HookTimeout, Opaque, TeamHook
from sim.quality.team.team_code import takes_weights
from sim.quality.team.weights import load_tensors

__all__ = [
    "Calibration",
    "calibration_from_spec",
    "calibration_from_arrays",
    "calibration_from_function",
    "calibration_from_hook",
    "is_function_spec",
    "match_keys",
    "check_inputs",
    "block_of",
    "DENSE_INPUTS",
    "SEQUENTIAL_INPUTS",
]

DENSE_INPUTS = "dense model"
SEQUENTIAL_INPUTS = "pruned prefix (sequential, block by block)"
_FILE_SUFFIXES = (".npz", ".safetensors")


def _nothing() -> None:
    pass


@dataclass(frozen=True)
class Calibration:
    """Where the inputs come from and how to get them: ``fetch(weights)`` -> {key: array};
    ``close()`` stops the team's child process (a no-op for fixed arrays). A context manager."""

    source: str
    sequential: bool
    fetch: Callable[[dict[str, np.ndarray]], dict]
    close: Callable[[], None] = _nothing

    @property
    def inputs(self) -> str:
        return SEQUENTIAL_INPUTS if self.sequential else DENSE_INPUTS

    def __enter__(self) -> Calibration:
        return self

    def __exit__(self, *exc) -> None:
        self.close()


def calibration_from_arrays(arrays: dict[str, np.ndarray], source: str) -> Calibration:
    """Fixed inputs of the dense model (a file's arrays, or a built-in set)."""
    return Calibration(source, False, lambda _weights: arrays)


def calibration_from_function(fn: Callable, source: str) -> Calibration:
    """The tool's own function (the built-in references), called in this process: ``fn(weights)``
    (sequential) or ``fn()`` (dense inputs). The team's code goes through
    :func:`calibration_from_hook`."""
    sequential = takes_weights(fn)
    return Calibration(source, sequential, lambda weights: fn(weights) if sequential else fn())


def calibration_from_hook(
    spec: str, base_dir: str | Path | None = None, *, timeout: HookTimeout | None = None
) -> Calibration:
    """The team's ``MODULE:FUNCTION`` in a child process (sim.quality.team.hooks): ``fn(weights)``
    (sequential) or ``fn()`` (dense inputs); ``close()`` the result when done."""
    source = f"function {spec}"
    hook = TeamHook(spec, base_dir, what="calibration", timeout=timeout)

    def fetch(weights: dict[str, np.ndarray]) -> dict:
        out = hook.call(weights if hook.takes_weights else None, where=f"calibration {source}")
        if not isinstance(out, dict):
            kind = out.type_name if isinstance(out, Opaque) else type(out).__name__
            raise InputError(
                f"returned {kind}; expected a dict of tensor name -> array (samples, in_features)",
                where=f"calibration {source}",
            )
        return out

    return Calibration(source, hook.takes_weights, fetch, hook.close)


def is_function_spec(spec: str | Path) -> bool:
    """True when ``--calib`` / ``[quality] calibration`` names the team's function, not a file."""
    text = str(spec)
    return Path(text).suffix.lower() not in _FILE_SUFFIXES and ":" in text


def calibration_from_spec(
    spec: str | Path, base_dir: str | Path | None = None, *, timeout: HookTimeout | None = None
) -> Calibration:
    """``--calib`` / ``[quality] calibration``: a ``.npz`` / ``.safetensors`` file, else
    ``MODULE:FUNCTION`` (``timeout``: the limit of each call, sim.quality.team.hooks)."""
    text = str(spec)
    if Path(text).suffix.lower() in _FILE_SUFFIXES:
        p = Path(text)
        if not p.is_absolute() and base_dir is not None:
            p = Path(base_dir) / p
        return calibration_from_arrays(load_tensors(p), f"file {p}")
    if is_function_spec(text):
        return calibration_from_hook(text, base_dir, timeout=timeout)
    raise InputError(
        "expected a .npz or .safetensors file, or MODULE:FUNCTION", where=f"calibration {text!r}"
    )


def match_keys(raw: dict, names, source: str) -> dict[str, str]:
    """{calibration key: tensor name}; a key matches ``name`` or ``name + ".weight"``; a key that
    matches no tensor is an InputError."""
    names = list(names)
    known = set(names)
    out = {}
    for key in raw:
        if not isinstance(key, str):
            raise InputError(f"key {key!r} is not a tensor name", where=f"calibration {source}")
        name = key if key in known else (key + ".weight" if key + ".weight" in known else None)
        if name is None:
            shown = ", ".join(names[:4]) + (", ..." if len(names) > 4 else "")
            raise InputError(
                f"key {key!r} matches no tensor of the weights ({shown})", where=f"calibration {source}"
            )
        out[key] = name
    return out


def check_inputs(
    raw: dict,
    keys: dict[str, str],
    shapes: dict[str, tuple[int, ...]],
    layouts: dict[str, Layout],
    source: str,
) -> dict[str, np.ndarray]:
    """{tensor name: float64 inputs} with every check of the module docstring. Tensors without a
    known layout are checked for dtype, rank and finiteness only."""
    out = {}
    for key, name in keys.items():
        where = f"calibration {source}: tensor {key!r}"
        try:
            a = np.asarray(raw[key])
        except (TypeError, ValueError):
            raise InputError(f"not an array ({type(raw[key]).__name__})", where=where) from None
        if a.dtype == bool or not np.issubdtype(a.dtype, np.floating):
            raise InputError(f"dtype {a.dtype}: calibration inputs must be floating point", where=where)
        shape = shapes[name]
        lay = layouts.get(name)
        experts = shape[0] if lay is not None and lay.experts else None
        if not (a.ndim == 2 or (experts is not None and a.ndim == 3 and a.shape[0] == experts)):
            want = "(samples, in_features)" + (f" or ({experts}, samples, in_features)" if experts else "")
            raise InputError(f"shape {a.shape}; expected {want}", where=where)
        if a.shape[-2] == 0:
            raise InputError("no samples (0 rows)", where=where)
        if lay is not None:
            k = lay.in_features(shape)
            if a.shape[-1] != k:
                hint = ""
                if lay.name in ("linear", "gpt2-conv1d") and a.shape[-1] == shape[1 - lay.reduction_axis(2)]:
                    hint = (
                        f"; the width matches the other axis of {tuple(shape)}: is the tensor stored "
                        f"{'(in, out)' if lay.name == 'linear' else '(out, in)'}? (--layout)"
                    )
                raise InputError(
                    f"width {a.shape[-1]}, but tensor {name!r} {tuple(shape)} (layout {lay.name}) "
                    f"takes {k} input features{hint}",
                    where=where,
                )
        a = a.astype(np.float64, copy=False)
        if not np.isfinite(a.sum()) and not np.all(np.isfinite(a)):
            raise InputError("holds NaN or infinity", where=where)
        out[name] = a
    return out


_BLOCK = re.compile(r"^(.*?\.\d+)(\.|$)")


def block_of(name: str) -> str:
    """The block a tensor belongs to: its name up to the first numeric part (``transformer.h.3``),
    else the name itself."""
    hit = _BLOCK.match(name)
    return hit.group(1) if hit else name
