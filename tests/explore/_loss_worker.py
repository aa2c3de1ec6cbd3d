"""TEST-ONLY worker for the worker-loss test: one sweep worker (explore.study.run_worker, the
product's worker loop) on the TEST-ONLY analytic objective, with a short heartbeat.

``python -m tests.explore._loss_worker CONFIG STORAGE STUDY TRIALS INDEX MODE``

MODE ``heartbeat``: the worker treats every other worker as if it ran on another machine (no process
table to look at), so a dead worker's trial is found only by Optuna's heartbeat (RDB storages) --
the path a worker on another host relies on. MODE ``local``: the product as it is (a journal file:
a dead local worker's trial is found by its process tag). The heartbeat is 1 s with a 3 s grace
period (the product's 10 s / 30 s would make the test wait minutes).
"""

from __future__ import annotations

import sys
from pathlib import Path

import explore.storage as storage
import explore.study as study
from explore.storage import resolve_storage
from explore.study import SweepOptions, run_worker
from hw.errors import InputError

#: Heartbeat of the test workers (s), and the grace after which a silent trial is stale.
HEARTBEAT_S, GRACE_S = 1, 3


def main(argv: list[str]) -> int:
    config, where, name, trials, index, mode = argv
    storage.HEARTBEAT_INTERVAL_S, storage.HEARTBEAT_GRACE_S = HEARTBEAT_S, GRACE_S
    if mode == "heartbeat":
        storage.tag_alive = study.tag_alive = lambda tag: None  # every worker is "elsewhere"
    opts = SweepOptions(
        config_path=config,
        storage=resolve_storage(where, Path(config).parent),
        study_name=name,
        trials=int(trials),
        seed=int(index),
        sampler="random",
        workers=4,
        evaluator="tests.explore._analytic",
        progress=False,
    )
    try:
        run_worker(opts, int(index))
    except InputError as exc:
        print(f"sparsepe: error: {exc}", file=sys.stderr)
        return 2
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
