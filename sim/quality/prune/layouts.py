"""Which axis of a checkpoint tensor is its reduction (input) axis: the layout of every weight.

N:M groups run along the reduction axis, the ``K`` of the GEMM the weight feeds (NVIDIA ASP
``m4n2_1d``; hw.golden.compress_nm). The layouts:

======================  ==================  ===============  ======================================
layout                  shape               reduction axis   recognised by
======================  ==================  ===============  ======================================
``linear``              (out, in)           1                any other 2-D weight (PyTorch
                                                             ``nn.Linear``)
``gpt2-conv1d``         (in, out)           0                HF GPT-2 ``Conv1D`` names: the last
                                                             module ``c_attn``, ``q_attn``, ``c_fc``
                                                             or ``c_proj`` (``transformer.h.0.attn.
                                                             c_attn.weight``), or ``--layout``
``conv``                (out, in, k...)     1 (Cin)          4-D and 5-D weights, and 3-D weights
                                                             whose name holds ``conv``
``experts-out-in``      (E, out, in)        2, per expert    3-D weights named ``expert``, when
``experts-in-out``      (E, in, out)        1, per expert    ``--layout`` or the calibration width
                                                             tells which
======================  ==================  ===============  ======================================

Cautions, stated rather than guessed:

* nanoGPT stores the same GPT-2 names as ``nn.Linear`` ``(out, in)``. The names alone are
  therefore checked against the checkpoint: when a tensor named ``c_attn`` has shape ``(3d, d)``
  (nn.Linear) rather than ``(d, 3d)`` (Conv1D), the GPT-2 names of that checkpoint are read as
  ``linear``.
* Stacked experts are stored both ways (HF Llama-4 and GPT-OSS ``experts.gate_up_proj`` are
  ``(E, in, out)``; other checkpoints use ``(E, out, in)``), so their layout is never taken from
  the name: ``--layout`` or a calibration array whose width matches exactly one of the two axes
  decides, and otherwise the tensor is skipped with that reason.
* A 3-D tensor that names neither a convolution nor experts is skipped (a 1-D convolution
  ``(out, in, k)`` and stacked experts look alike).

Each layout maps its tensor to matrices ``(E, out, K)`` whose last axis is the reduction axis with
every N:M group contiguous (a convolution's ``(out, Cin, kh, kw)`` becomes ``(out, kh*kw*Cin)``:
groups of M consecutive input channels at one kernel position, ASP's permutation), and maps the
calibration rows (PyTorch's im2col order ``(Cin, kh, kw)`` for a convolution) to the same column
order; :meth:`Layout.from_matrices` is the exact inverse.
"""

from __future__ import annotations

import fnmatch
import re
from dataclasses import dataclass

import numpy as np

from hw.errors import InputError

__all__ = [
    "LINEAR",
    "GPT2_CONV1D",
    "CONV",
    "EXPERTS_OUT_IN",
    "EXPERTS_IN_OUT",
    "LAYOUTS",
    "Layout",
    "LayoutRule",
    "parse_layout_rules",
    "resolve_layouts",
    "GPT2_CONV1D_NAME",
]

LINEAR, GPT2_CONV1D, CONV = "linear", "gpt2-conv1d", "conv"
EXPERTS_OUT_IN, EXPERTS_IN_OUT = "experts-out-in", "experts-in-out"
#: Layout name -> the ranks it describes.
LAYOUTS: dict[str, tuple[int, ...]] = {
    LINEAR: (2,),
    GPT2_CONV1D: (2,),
    CONV: (3, 4, 5),
    EXPERTS_OUT_IN: (3,),
    EXPERTS_IN_OUT: (3,),
}

#: HF GPT-2 ``Conv1D`` modules (transformers/models/gpt2/modeling_gpt2.py: ``c_attn``, ``q_attn``,
#: ``c_proj`` in GPT2Attention, ``c_fc``, ``c_proj`` in GPT2MLP).
GPT2_CONV1D_NAME = re.compile(r"(^|\.)(c_attn|q_attn|c_fc|c_proj)\.weight$")
_CONV_NAME = re.compile(r"conv", re.IGNORECASE)
_EXPERT_NAME = re.compile(r"expert", re.IGNORECASE)


@dataclass(frozen=True)
class Layout:
    """The layout of one tensor and how it was told (``how``)."""

    name: str
    how: str

    @property
    def experts(self) -> bool:
        return self.name in (EXPERTS_OUT_IN, EXPERTS_IN_OUT)

    def reduction_axis(self, ndim: int) -> int:
        """The axis the N:M groups run along (non-negative)."""
        return {LINEAR: 1, GPT2_CONV1D: 0, CONV: 1, EXPERTS_OUT_IN: 2, EXPERTS_IN_OUT: 1}[self.name]

    def canonical_shape(self, shape: tuple[int, ...]) -> tuple[int, ...]:
        """The PyTorch ``(out, in, ...)`` shape of one matrix (one expert), for the ASP verdict."""
        if self.name == GPT2_CONV1D:
            return (shape[1], shape[0])
        if self.name == EXPERTS_OUT_IN:
            return (shape[1], shape[2])
        if self.name == EXPERTS_IN_OUT:
            return (shape[2], shape[1])
        return tuple(shape)

    def in_features(self, shape: tuple[int, ...]) -> int:
        """Width of one calibration row: ``in`` (``Cin*kh*kw`` for a convolution, im2col)."""
        c = self.canonical_shape(shape)
        return int(np.prod(c[1:]))

    def to_matrices(self, w: np.ndarray) -> np.ndarray:
        """``(E, out, K)`` float64 (E = 1 unless experts), each N:M group contiguous along K."""
        w = np.asarray(w, dtype=np.float64)
        if self.name == LINEAR:
            return w[None]
        if self.name == GPT2_CONV1D:
            return w.T[None]
        if self.name == EXPERTS_OUT_IN:
            return w
        if self.name == EXPERTS_IN_OUT:
            return np.swapaxes(w, 1, 2)
        # conv (out, Cin, k...) -> (out, k..., Cin) -> (out, prod(k)*Cin)
        return np.moveaxis(w, 1, -1).reshape(w.shape[0], -1)[None]

    def from_matrices(self, mats: np.ndarray, shape: tuple[int, ...]) -> np.ndarray:
        """Inverse of :meth:`to_matrices` (float64, ``shape``)."""
        if self.name == LINEAR:
            return mats[0]
        if self.name == GPT2_CONV1D:
            return mats[0].T
        if self.name == EXPERTS_OUT_IN:
            return mats
        if self.name == EXPERTS_IN_OUT:
            return np.swapaxes(mats, 1, 2)
        moved = (shape[0], *shape[2:], shape[1])
        return np.moveaxis(mats[0].reshape(moved), -1, 1)

    def calibration_columns(self, x: np.ndarray, shape: tuple[int, ...]) -> np.ndarray:
        """Calibration rows ``(samples, in)`` (im2col in PyTorch's ``(Cin, kh, kw)`` order for a
        convolution) in the column order of :meth:`to_matrices`."""
        if self.name != CONV:
            return x
        cin, kern = shape[1], shape[2:]
        return np.moveaxis(x.reshape(x.shape[0], cin, *kern), 1, -1).reshape(x.shape[0], -1)


@dataclass(frozen=True)
class LayoutRule:
    """``--layout [PATTERN=]LAYOUT``: tensors whose name matches ``pattern`` (fnmatch; every
    candidate weight when None) have ``layout``."""

    pattern: str | None
    layout: str
    text: str


def parse_layout_rules(texts) -> list[LayoutRule]:
    """``--layout`` values -> rules (an unknown layout name is an InputError)."""
    rules = []
    for t in texts or ():
        pattern, _, name = str(t).rpartition("=")
        name = name.strip()
        if name not in LAYOUTS:
            raise InputError(
                f"unknown layout {name!r} (known: {', '.join(LAYOUTS)}); the form is [TENSOR-PATTERN=]LAYOUT",
                where=f"--layout {t}",
            )
        rules.append(LayoutRule(pattern.strip() or None, name, str(t)))
    return rules


def _rule_for(name: str, rules: list[LayoutRule]) -> LayoutRule | None:
    """The last rule matching ``name`` (later rules override earlier ones)."""
    hit = None
    for r in rules:
        if r.pattern is None or fnmatch.fnmatchcase(name, r.pattern):
            hit = r
    return hit


def _gpt2_names_are_linear(shapes: dict[str, tuple[int, ...]]) -> bool:
    """True when a GPT-2-named ``c_attn`` weight is stored ``(3d, d)`` (nanoGPT's nn.Linear)."""
    for name, s in shapes.items():
        if len(s) == 2 and re.search(r"(^|\.)c_attn\.weight$", name):
            if s[0] == 3 * s[1]:
                return True
    return False


def resolve_layouts(
    shapes: dict[str, tuple[int, ...]],
    rules: list[LayoutRule] | None = None,
    widths: dict[str, int] | None = None,
) -> tuple[dict[str, Layout], dict[str, str]]:
    """(name -> Layout, name -> reason the layout cannot be told) for candidate weights ``shapes``
    (floating, two or more axes). ``widths``: calibration row widths by tensor name, used to tell
    the orientation of stacked experts. A rule naming a layout of another rank is an InputError."""
    rules = rules or []
    widths = widths or {}
    gpt2_linear = _gpt2_names_are_linear(shapes)
    for r in rules:
        if r.pattern is not None and not any(fnmatch.fnmatchcase(n, r.pattern) for n in shapes):
            raise InputError(f"pattern {r.pattern!r} matches no weight tensor", where=f"--layout {r.text}")
    out, unknown = {}, {}
    for name, shape in shapes.items():
        nd = len(shape)
        rule = _rule_for(name, rules)
        if rule is not None:
            if nd not in LAYOUTS[rule.layout]:
                raise InputError(
                    f"tensor {name!r} has shape {tuple(shape)} ({nd} axes); layout {rule.layout} "
                    f"describes {' or '.join(map(str, LAYOUTS[rule.layout]))}-axis tensors",
                    where=f"--layout {rule.text}",
                )
            out[name] = Layout(rule.layout, f"--layout {rule.text}")
        elif nd == 2:
            if GPT2_CONV1D_NAME.search(name) and not gpt2_linear:
                out[name] = Layout(GPT2_CONV1D, "HF GPT-2 Conv1D name")
            elif GPT2_CONV1D_NAME.search(name):
                out[name] = Layout(
                    LINEAR, "GPT-2 name stored (out, in): c_attn is (3d, d), nn.Linear as in nanoGPT"
                )
            else:
                out[name] = Layout(LINEAR, "2-D weight: nn.Linear (out, in)")
        elif nd in (4, 5) or (nd == 3 and _CONV_NAME.search(name) and not _EXPERT_NAME.search(name)):
            out[name] = Layout(CONV, f"{nd}-D convolution weight (out, in, k...)")
        elif nd == 3 and _EXPERT_NAME.search(name):
            k = widths.get(name)
            if k is not None and (k == shape[1]) != (k == shape[2]):
                lay = EXPERTS_IN_OUT if k == shape[1] else EXPERTS_OUT_IN
                out[name] = Layout(lay, f"calibration width {k}")
            else:
                unknown[name] = (
                    f"stacked experts {tuple(shape)}: (E, out, in) and (E, in, out) both occur in "
                    "checkpoints; give --layout experts-out-in or experts-in-out (or calibration rows "
                    "whose width tells)"
                )
        elif nd == 3:
            unknown[name] = (
                f"3-D tensor {tuple(shape)} whose name names neither a convolution nor experts: "
                "cannot tell a 1-D convolution (out, in, k) from stacked experts; give --layout"
            )
        else:
            unknown[name] = f"{nd}-D tensor: no known weight layout"
    return out, unknown
