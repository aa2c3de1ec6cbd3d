"""A TEST-ONLY evaluator: ``tests/explore/_analytic.py`` whose first evaluation in a process
reports that it had to characterise a design (ppa.characterisation.note_computed), as a trial
does when neither the prewarm, the caches nor the shipped characterisation covered its hardware."""

from __future__ import annotations

from ppa import characterisation
from tests.explore import _analytic


def make_context(cfg):
    return {"inner": _analytic.make_context(cfg), "calls": 0}


def evaluate(point, ctx):
    ctx["calls"] += 1
    if ctx["calls"] == 1:
        characterisation.note_computed("module sparse_array")
    return _analytic.evaluate(point, ctx["inner"])
