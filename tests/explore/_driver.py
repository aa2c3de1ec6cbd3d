"""TEST-ONLY driver: run a sweep with the analytic test objective in a separate process.

``python -m tests.explore._driver CONFIG STORAGE STUDY TRIALS WORKERS SEED SAMPLER OUT``
(STORAGE "-" = the default journal in OUT). Used by the resume / SIGKILL and PostgreSQL tests.
"""

from __future__ import annotations

import sys
from pathlib import Path

from explore.config import load_config
from explore.runner import export_study
from explore.storage import resolve_storage
from explore.study import SweepOptions, run_study
from hw.errors import InputError


def main(argv: list[str]) -> int:
    config, storage, study, trials, workers, seed, sampler, out = argv
    cfg = load_config(config)
    spec = resolve_storage(None if storage == "-" else storage, Path(out))
    opts = SweepOptions(
        config_path=config,
        storage=spec,
        study_name=study,
        trials=int(trials),
        seed=int(seed),
        sampler=sampler,
        workers=int(workers),
        evaluator="tests.explore._analytic",
        out_dir=out,
        progress=False,
    )
    try:
        st = run_study(opts, cfg)
        export_study(st, cfg, Path(out))
    except InputError as exc:
        print(f"sparsepe: error: {exc}", file=sys.stderr)
        return 2
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
