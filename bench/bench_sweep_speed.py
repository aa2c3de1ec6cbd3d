"""Speed of ``sparsepe sweep`` on the embedded default storage (a journal file).

Runs N trials (default 1000) of examples/default.toml with TPE, one worker and then two workers
(each a fresh study in a temporary directory), and prints wall time, trials per second, the time
spent in the evaluator and in Optuna + storage, next to the target (1000 trials < 120 s on 2 cores).

    python bench/bench_sweep_speed.py [--trials 1000] [--config examples/default.toml] [--workers 1 2]
"""

from __future__ import annotations

import argparse
import os
import tempfile
import time
from pathlib import Path

import optuna
from optuna.trial import TrialState

REPO = Path(__file__).resolve().parents[1]
TARGET_S = 120.0  # target: 1000 trials in under 2 minutes on 2 cores


def _evaluator_ms(cfg, n: int = 50) -> float:
    """Mean evaluator time per point (ms) over n random points of the space."""
    import explore.evaluator as ev

    ctx = ev.make_context(cfg)
    study = optuna.create_study(sampler=optuna.samplers.RandomSampler(seed=0), directions=cfg.objectives.directions())
    from explore.sampler import suggest_point

    pts = [suggest_point(study.ask(), cfg) for _ in range(2 * n)]
    for p in pts[:n]:  # warm the per-PE-configuration caches (synthesis, activity) first
        ev.evaluate(p, ctx)
    t = time.perf_counter()
    for p in pts[n:]:
        ev.evaluate(p, ctx)
    return (time.perf_counter() - t) / n * 1e3


def main() -> None:
    ap = argparse.ArgumentParser()
    ap.add_argument("--trials", type=int, default=1000)
    ap.add_argument("--config", default=str(REPO / "examples" / "default.toml"))
    ap.add_argument("--workers", type=int, nargs="+", default=[1, 2])
    args = ap.parse_args()
    optuna.logging.set_verbosity(optuna.logging.WARNING)
    from explore.config import load_config
    from explore.storage import resolve_storage
    from explore.study import SweepOptions, run_study

    cfg = load_config(args.config)
    ev_ms = _evaluator_ms(cfg)
    print(f"config: {args.config}; cores: {os.cpu_count()}; evaluator: {ev_ms:.1f} ms per point (mean of 50)")
    print(f"{'workers':>7} {'trials':>7} {'wall s':>8} {'trials/s':>9} {'eval share':>10} {'target s':>9} {'ratio':>6}")
    for w in args.workers:
        with tempfile.TemporaryDirectory() as d:
            spec = resolve_storage(None, Path(d))
            opts = SweepOptions(config_path=args.config, storage=spec, study_name="speed", trials=args.trials, seed=0,
                                sampler="tpe", workers=w, progress=False)
            t = time.perf_counter()
            study = run_study(opts, cfg)
            wall = time.perf_counter() - t
            n = len(study.get_trials(deepcopy=False, states=(TrialState.COMPLETE,)))
            share = n * ev_ms / 1e3 / (wall * w)
            print(f"{w:>7} {n:>7} {wall:>8.1f} {n / wall:>9.1f} {share:>10.0%} {TARGET_S:>9.0f} {wall / TARGET_S:>6.2f}")


if __name__ == "__main__":
    main()
