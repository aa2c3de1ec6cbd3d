"""TEST-ONLY: ``sparsepe`` (explore.cli.main) with the sweep's evaluator replaced by the TEST-ONLY
analytic objective (tests/explore/_analytic.py) in the sweep's own process and in its workers.

``python -m tests.explore._signal_sweep sweep CONFIG --out DIR ...`` (the arguments of ``sparsepe``).
"""

from __future__ import annotations

import functools
import sys

import explore.commands.sweep as sweep_command
from explore.cli import main
from explore.study import SweepOptions

if __name__ == "__main__":
    sweep_command.SweepOptions = functools.partial(SweepOptions, evaluator="tests.explore._analytic")
    main(sys.argv[1:])
