"""TEST-ONLY evaluators for the hostile-input tests (not hardware models, never used by the
product): ``tests.explore._analytic`` wrapped so that evaluation fails.

* ``SPARSEPE_TEST_FAIL = "all"``: every evaluation raises InputError (a study that cannot make
  progress);
* ``SPARSEPE_TEST_FAIL = "nan"``: every evaluation returns a NaN objective;
* ``SPARSEPE_TEST_FAIL = "rows8"``: designs with rows == 8 raise (a bad corner of the space).
"""

from __future__ import annotations

import os

from hw.errors import InputError
from tests.explore import _analytic


def make_context(cfg):
    return _analytic.make_context(cfg)


def evaluate(point, ctx):
    mode = os.environ.get("SPARSEPE_TEST_FAIL", "")
    if mode == "all" or (mode == "rows8" and point["rows"] == 8):
        raise InputError("the model refuses this design", where="--t-ambient")
    out = _analytic.evaluate(point, ctx)
    if mode == "nan":
        out["perf_per_watt"] = float("nan")
    return out
