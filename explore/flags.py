"""Checks of one flag's value, run by the command-line parser while it reads the flags.

Each function returns a Typer ``callback`` for ``typer.Option(..., callback=...)`` /
``typer.Argument``. The parser processes the flags in the order the user gave them (then the
defaults), so when several inputs are wrong the first wrong one in argument order is the one
reported: one line ``sparsepe: error: <flag>: <what>``, exit 2 (explore.cli). Checks that relate
several flags run in the command's body, after every single flag has passed. A default value (None)
is not checked.
"""

from __future__ import annotations

import math
from collections.abc import Callable, Iterable
from typing import Any

from explore.safety import check_study_name
from hw.errors import InputError
from hw.host import printable

__all__ = ["finite", "in_range", "one_of", "study_name"]


def _callback(flag: str, test: Callable[[Any], str | None]) -> Callable[[Any], Any]:
    def callback(value: Any) -> Any:
        if value is not None:
            msg = test(value)
            if msg:
                raise InputError(msg, where=flag)
        return value

    return callback


def finite(flag: str) -> Callable[[Any], Any]:
    """A finite number (not nan, not +-inf)."""
    return _callback(flag, lambda v: None if math.isfinite(v) else f"must be a finite number, got {v}")


def in_range(flag: str, lo: float, hi: float) -> Callable[[Any], Any]:
    """A finite number in ``lo..hi``."""

    def test(v: Any) -> str | None:
        if not math.isfinite(v):
            return f"must be a finite number, got {v}"
        return None if lo <= v <= hi else f"must be in {lo:g}..{hi:g}, got {v:g}"

    return _callback(flag, test)


def one_of(flag: str, choices: Iterable[str]) -> Callable[[Any], Any]:
    """One of ``choices``."""
    allowed = tuple(choices)
    return _callback(
        flag, lambda v: None if v in allowed else f"unknown value {printable(repr(v))} ({', '.join(allowed)})"
    )


def study_name(flag: str = "--study") -> Callable[[Any], Any]:
    """A study name (explore.safety.check_study_name)."""
    return _callback(flag, lambda v: check_study_name(v, where=flag) and None)
