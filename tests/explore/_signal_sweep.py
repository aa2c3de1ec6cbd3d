"""TEST-ONLY: ``sparsepe`` (explore.cli.main) with the sweep's evaluator replaced by the TEST-ONLY
analytic objective (tests/explore/_analytic.py) in the sweep's own process and in its workers.

``python -m tests.explore._signal_sweep sweep CONFIG --out DIR ...`` (the arguments of ``sparsepe``).
"""

from __future__ import annotations

import functools
import sys

import explore.study as study_module
from explore.cli import main
from explore.study import SweepOptions

if __name__ == "__main__":
    # the sweep command imports SweepOptions from explore.study when it runs
    study_module.SweepOptions = functools.partial(SweepOptions, evaluator="tests.explore._analytic")
    main(sys.argv[1:])
