"""The PE kinds: one registry row per kind of processing element, read by hw/, ppa/ and sim/.

A row says what one PE of the kind is, in the terms every room needs:

- its RTL (``build(params)``, an Amaranth component; its standalone Verilog module ``pe_module``) and
  the module of an array of it (``array_module``, hw.array.SparseArray(kind=name));
- its bit-exact golden model (``golden``, integer PEs; float PEs: hw.fp_golden);
- its operands per PE and step, functions of the pattern's N and M (numbers or numpy arrays):
  ``weights(n, m)`` multipliers (= stored weights consumed a cycle, the simulator's pe_k),
  ``groups(n, m)`` N:M metadata codes (decoders; 0: the PE holds dense weights), ``acts(n, m)``
  activations; ``dense_mode``: a dense-mode bit selects a full-rate dense group (the
  dense path), the array carries it with the weights;
- which design it is: ``sparse`` and ``dense_mode`` are the ``sparse`` and ``dense_path`` flags of a
  design (ppa.design.Design, sim.array_config.ArrayConfig, the sweep's ``sparsity`` and
  ``dense_path`` axes); :func:`kind_of` maps the flags to the row.

The array's cells are built from the operand counts alone (hw.array), ppa costs every kind from
its own synthesised array and PE (ppa.array_cost, ppa.activity), and sim/ reads ``weights`` for the
rate. Adding a kind is a row here (:func:`register_pe_kind`) when its cell is the shared one (G
groups of N selected activations times N weights each, or M lane-wise products), plus its PE RTL
and golden model; docs/design.md, "Extending sparsepe". The contract test
(tests/test_pe_kinds.py) runs over every row.

No Amaranth is imported here: ppa reads the names and counts on a warm cache without it
(ppa.rtl); ``build`` imports hw.pe when it is called.
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass
from typing import Any

import numpy as np

from hw import golden
from hw.errors import InputError
from hw.params import PEParams

__all__ = [
    "PEKind",
    "PE_KINDS",
    "register_pe_kind",
    "unregister_pe_kind",
    "pe_kind",
    "kind_names",
    "kind_of",
]


@dataclass(frozen=True)
class PEKind:
    """One PE kind (module docstring)."""

    name: str
    summary: str
    pe_module: str
    array_module: str
    sparse: bool  # holds N:M-compressed weights and their metadata codes
    dense_mode: bool  # a per-step dense-mode bit (full-rate dense groups on the sparse PE)
    weights: Callable[[Any, Any], Any]  # (n, m) -> multipliers = stored weights consumed per step
    groups: Callable[[Any, Any], Any]  # (n, m) -> metadata codes (decoders) per PE; 0 for dense weights
    acts: Callable[[Any, Any], Any]  # (n, m) -> activations per PE and step
    build: Callable[[PEParams], Any]  # the PE's Amaranth component
    golden: Callable[..., tuple[np.ndarray, np.ndarray]]  # (acc, err) per consumed step, integer PEs

    def dense_macs_per_cycle(self, p: PEParams) -> int:
        """MACs of dense work a cycle: dense groups on the dense PE and the dense path, the M/N-pass
        fallback (N a cycle) on the sparse-only PE; equal to ``weights``."""
        return self.weights(p.n, p.m)

    def nm_macs_per_cycle(self, p: PEParams) -> int:
        """Effective (dense-equivalent) MACs a cycle on N:M-pruned weights: every activation the
        PE takes stands for one MAC of the dense layer."""
        return self.acts(p.n, p.m)


def _sparse_pe(p: PEParams):
    from hw.pe import SparsePE  # Amaranth when an RTL is built (module docstring)

    return SparsePE(p)


def _dense_pe(p: PEParams):
    from hw.pe import DensePE  # Amaranth when an RTL is built (module docstring)

    return DensePE(p)


def _dense_path_pe(p: PEParams):
    from hw.pe import SparsePE  # Amaranth when an RTL is built (module docstring)

    return SparsePE(p, dense_path=True)


def _sparse_golden(acts, weights, metas, clears, params, *, dense=None, valid=None):
    return golden.pe_reference(acts, weights, metas, clears, params, valid)


def _dense_golden(acts, weights, metas, clears, params, *, dense=None, valid=None):
    return golden.dense_pe_reference(acts, weights, clears, params, valid)


def _dense_path_golden(acts, weights, metas, clears, params, *, dense=None, valid=None):
    dense = np.zeros(len(clears), dtype=bool) if dense is None else dense
    return golden.dense_path_pe_reference(acts, weights, metas, dense, clears, params, valid)


#: name -> row, in registration order (the order kinds are listed, swept and written).
PE_KINDS: dict[str, PEKind] = {}


def register_pe_kind(kind: PEKind) -> PEKind:
    """Add ``kind``; its name and both module names must be new."""
    if not isinstance(kind, PEKind):
        raise InputError(f"expected a PEKind, got {type(kind).__name__}", where="register_pe_kind")
    taken = {k.name for k in PE_KINDS.values()} | {
        m for k in PE_KINDS.values() for m in (k.pe_module, k.array_module)
    }
    for what in (kind.name, kind.pe_module, kind.array_module):
        if what in taken:
            raise InputError(f"{what!r} is already a registered PE kind or module", where="register_pe_kind")
    if kind.dense_mode and not kind.sparse:
        raise InputError("a dense mode is a mode of a sparse PE", where=f"PE kind {kind.name}")
    PE_KINDS[kind.name] = kind
    return kind


def unregister_pe_kind(name: str) -> None:
    """Remove a kind added by :func:`register_pe_kind` (a test's toy kind); the shipped kinds stay."""
    if name in _SHIPPED:
        raise InputError(f"{name!r} is a shipped PE kind", where="unregister_pe_kind")
    PE_KINDS.pop(name, None)


def kind_names() -> tuple[str, ...]:
    return tuple(PE_KINDS)


def pe_kind(name: str) -> PEKind:
    """The row of ``name``; InputError naming the registered kinds otherwise."""
    if not isinstance(name, str) or name not in PE_KINDS:
        raise InputError(f"must be one of {', '.join(PE_KINDS)}, got {name!r}", where="kind")
    return PE_KINDS[name]


def kind_of(sparse: bool = True, dense_path: bool = False) -> PEKind:
    """The kind a design's ``sparse`` and ``dense_path`` flags name: the first registered row with
    those flags (the shipped rows come first; a later row with the same flags is reached by name)."""
    if dense_path and not sparse:
        raise InputError(
            "the dense path is a mode of the sparse PE: not with a dense design", where="dense_path"
        )
    for k in PE_KINDS.values():
        if k.sparse == bool(sparse) and k.dense_mode == bool(dense_path):
            return k
    raise InputError(f"no PE kind has sparse={sparse}, dense_path={dense_path}", where="kind")


register_pe_kind(
    PEKind(
        "sparse",
        "the N:M sparse PE: N multipliers fed by metadata-selected activations, one group a cycle",
        "sparse_pe",
        "sparse_array",
        sparse=True,
        dense_mode=False,
        weights=lambda n, m: n,
        groups=lambda n, m: 1,
        acts=lambda n, m: m,
        build=_sparse_pe,
        golden=_sparse_golden,
    )
)
register_pe_kind(
    PEKind(
        "dense",
        "the dense baseline: M multipliers, one per lane, no metadata",
        "dense_pe",
        "dense_array",
        sparse=False,
        dense_mode=False,
        weights=lambda n, m: m,
        groups=lambda n, m: 0,
        acts=lambda n, m: m,
        build=_dense_pe,
        golden=_dense_golden,
    )
)
register_pe_kind(
    PEKind(
        "dense_path",
        "the sparse PE with a full-rate dense path: M multipliers, M/N N:M groups or one dense group",
        "sparse_pe_dp",
        "sparse_array_dp",
        sparse=True,
        dense_mode=True,
        weights=lambda n, m: m,
        groups=lambda n, m: m // n,
        acts=lambda n, m: m * (m // n),
        build=_dense_path_pe,
        golden=_dense_path_golden,
    )
)
_SHIPPED = frozenset(PE_KINDS)
