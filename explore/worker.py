"""One sweep worker process: ``python -m explore.worker INDEX PARENT_PID`` with the SweepOptions as
JSON on stdin. Started by :func:`explore.study.run_study` for ``--workers K``; runs until the study
holds the target number of COMPLETE trials. It asks the kernel to kill it when its parent dies
(hw.host.die_with_parent), so a killed sweep leaves no worker behind. Bad input: one line on
stderr, exit code 2; Ctrl-C: exit code 130 without a line (the parent prints it once)."""

from __future__ import annotations

import os
import sys

from explore.study import options_from_json, run_worker
from hw.errors import InputError
from hw.host import die_with_parent


def main() -> None:
    index = int(sys.argv[1])
    if len(sys.argv) > 2:
        die_with_parent(int(sys.argv[2]))
    try:
        opts = options_from_json(sys.stdin.read())
        run_worker(opts, index)
    except InputError as exc:
        print(f"sparsepe: error: worker {index}: {exc}", file=sys.stderr)
        sys.exit(2)
    except KeyboardInterrupt:
        sys.stderr.flush()
        os._exit(130)


if __name__ == "__main__":
    main()
