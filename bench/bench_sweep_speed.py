"""Speed of ``sparsepe sweep`` on the embedded default storage (a journal file).

Runs N trials (default 1000) of examples/default.toml with TPE, one worker and then two workers
(each a fresh study in a temporary directory), and prints wall time, trials per second, the time
spent in the evaluator and in Optuna + storage, next to the target (1000 trials < 120 s on 2 cores).
Then, on the one-worker study, the steps the export adds: every trial's dense twins (explore.compare
.study_twin_metrics: iso-array twins in one batch, iso-area twins from the study's feasible dense
designs) and the robustness of the verdict (explore.robustness: 20 designs x (256 joint samples + a
33-point grid per assumption)), next to their targets (1000 trials with twins <= 30 s on one worker;
robustness <= 30 s). The hardware characterisation before the first trial (explore.prewarm, a
process pool) is timed apart: it is the same for any number of trials.

    python bench/bench_sweep_speed.py [--trials 1000] [--config examples/default.toml] [--workers 1 2]
                                      [--dir DIR]   # where the study journal goes (default: the system's temp dir)
"""

from __future__ import annotations

import argparse
import os
import tempfile
import time
from pathlib import Path

import optuna
from optuna.trial import TrialState

import explore.study as study_module
from explore.compare import study_twin_metrics
from explore.config import load_config
from explore.prewarm import prewarm
from explore.results import Evaluator
from explore.robustness import robustness
from explore.sampler import suggest_point
from explore.storage import resolve_storage
from explore.study import SweepOptions, run_study
from explore.trials import study_records

REPO = Path(__file__).resolve().parents[1]
TARGET_S = 120.0  # target: 1000 trials in under 2 minutes on 2 cores
TARGET_TWINS_S = 30.0  # target: 1000 trials with their twins in 30 s on one worker
TARGET_ROBUST_S = 30.0  # target: the robustness step adds at most 30 s


def _evaluator_ms(ev: Evaluator, n: int = 50) -> float:
    """Mean evaluator time per point (ms) over n random points of the space."""
    study = optuna.create_study(
        sampler=optuna.samplers.RandomSampler(seed=0), directions=ev.cfg.objectives.directions()
    )
    pts = [suggest_point(study.ask(), ev.cfg) for _ in range(2 * n)]
    for p in pts[:n]:  # warm the per-PE-configuration caches (synthesis, activity) first
        ev.evaluate(p)
    t = time.perf_counter()
    for p in pts[n:]:
        ev.evaluate(p)
    return (time.perf_counter() - t) / n * 1e3


def main() -> None:
    ap = argparse.ArgumentParser()
    ap.add_argument("--trials", type=int, default=1000)
    ap.add_argument("--config", default=str(REPO / "examples" / "default.toml"))
    ap.add_argument("--workers", type=int, nargs="+", default=[1, 2])
    ap.add_argument(
        "--dir", default=None, help="directory for the study journals (default: the system temp dir)"
    )
    args = ap.parse_args()
    optuna.logging.set_verbosity(optuna.logging.WARNING)
    cfg = load_config(args.config)
    t = time.perf_counter()
    prewarm(cfg)
    warm_s = time.perf_counter() - t
    study_module.prewarm = lambda cfg: 0  # characterised once, above: the studies below time their trials
    ev = Evaluator("explore.evaluator", cfg, where=None)
    ev_ms = _evaluator_ms(ev)
    print(
        f"config: {args.config}; cores: {os.cpu_count()}; evaluator: {ev_ms:.1f} ms per point (mean of 50); "
        f"hardware characterisation (prewarm, warm caches): {warm_s:.1f} s"
    )
    print(
        f"{'workers':>7} {'trials':>7} {'wall s':>8} {'trials/s':>9} {'eval share':>10} {'target s':>9} {'ratio':>6}"
    )
    steps = None
    if args.dir is not None:
        Path(args.dir).mkdir(parents=True, exist_ok=True)  # the journal's parent directory
    for w in args.workers:
        with tempfile.TemporaryDirectory(dir=args.dir) as d:
            spec = resolve_storage(None, Path(d))
            opts = SweepOptions(
                config_path=args.config,
                storage=spec,
                study_name="speed",
                trials=args.trials,
                seed=0,
                sampler="tpe",
                workers=w,
                progress=False,
            )
            t = time.perf_counter()
            study = run_study(opts, cfg)
            wall = time.perf_counter() - t
            n = len(study.get_trials(deepcopy=False, states=(TrialState.COMPLETE,)))
            share = n * ev_ms / 1e3 / (wall * w)
            print(
                f"{w:>7} {n:>7} {wall:>8.1f} {n / wall:>9.1f} {share:>10.0%} {TARGET_S:>9.0f} {wall / TARGET_S:>6.2f}"
            )
            if w == 1:
                recs = study_records(study, cfg)
                t = time.perf_counter()
                study_twin_metrics(recs, recs, ev.evaluate_many)
                twins_s = time.perf_counter() - t
                t = time.perf_counter()
                rob = robustness(recs, cfg, ev)
                steps = (wall, twins_s, time.perf_counter() - t, len(recs), rob)
    if steps is not None:
        wall, twins_s, rob_s, n_rec, rob = steps
        print(
            f"one worker: {args.trials} trials {wall:.1f} s + twins of {n_rec} designs {twins_s:.1f} s = "
            f"{wall + twins_s:.1f} s (target {TARGET_TWINS_S:.0f} s, ratio {(wall + twins_s) / TARGET_TWINS_S:.2f}); "
            f"robustness {rob_s:.1f} s (target {TARGET_ROBUST_S:.0f} s, ratio {rob_s / TARGET_ROBUST_S:.2f})"
        )
        if rob is not None:
            print(f"verdict over the assumptions' ranges: {rob['line']}")


if __name__ == "__main__":
    main()
