"""TEST-ONLY: ``sparsepe`` (explore.cli.main) with the sweep's evaluator replaced by the TEST-ONLY
analytic objective (tests/explore/_analytic.py) in the sweep's own process and in its workers.

``python -m tests.explore._signal_sweep sweep CONFIG --out DIR ...`` (the arguments of ``sparsepe``).
"""

from __future__ import annotations

from explore import interrupt

interrupt.install()  # as the sparsepe entry does before its imports: a signal during them is answered too

import functools  # noqa: E402 - after the handlers, on purpose

import explore.study as study_module  # noqa: E402
from explore.cli import main  # noqa: E402
from explore.study import SweepOptions  # noqa: E402

if __name__ == "__main__":
    # the sweep command imports SweepOptions from explore.study when it runs
    study_module.SweepOptions = functools.partial(SweepOptions, evaluator="tests.explore._analytic")
    main()  # as the console script: argv from sys.argv, the handlers kept to the end
