"""One sweep worker process: ``python -m explore.worker INDEX`` with the SweepOptions as JSON on
stdin. Started by :func:`explore.study.run_study` for ``--workers K``; runs until the study holds
the target number of COMPLETE trials. Bad input: one line on stderr, exit code 2."""

from __future__ import annotations

import sys

from explore.study import options_from_json, run_worker
from hw.errors import InputError


def main() -> None:
    index = int(sys.argv[1])
    opts = options_from_json(sys.stdin.read())
    try:
        run_worker(opts, index)
    except InputError as exc:
        print(f"sparsepe: error: worker {index}: {exc}", file=sys.stderr)
        sys.exit(2)


if __name__ == "__main__":
    main()
