"""Overrides of the model's assumed values: how a value of ppa.assumptions reaches the model.

Every constant of the registry (:mod:`ppa.assumptions`) is read by the model where it is used,
through :func:`assumed` (``assumed("wire_allowance", WIRE_ALLOWANCE)``): the model's own constant
unless an override is in force. :func:`overriding` puts overrides in force for a block, so one
call of ``ppa.model.estimate`` inside it is costed with those values; the batch path
(:mod:`ppa.recost`) varies the same names over numpy arrays of samples without calling the model
again. This module imports nothing of the model, so every model module can read through it.
"""

from __future__ import annotations

from collections.abc import Iterator
from contextlib import contextmanager

_OVERRIDES: dict[str, float] = {}


def assumed(name: str, nominal: float) -> float:
    """The value the model uses for ``name``: the override in force, else ``nominal`` (the model's constant)."""
    return _OVERRIDES.get(name, nominal)


def in_force() -> dict[str, float]:
    """The overrides in force now (name -> value)."""
    return dict(_OVERRIDES)


@contextmanager
def overriding(values: dict[str, float]) -> Iterator[None]:
    """Cost with ``values`` (assumption name -> value) in place of the model's constants inside the
    block; the previous overrides come back afterwards (blocks nest)."""
    before = dict(_OVERRIDES)
    _OVERRIDES.update({k: float(v) for k, v in values.items()})
    try:
        yield
    finally:
        _OVERRIDES.clear()
        _OVERRIDES.update(before)
