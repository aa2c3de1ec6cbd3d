"""Equal search effort for the two sides of the verdict: how many trials does each side need?

The verdict compares the best sparse design with the best dense design found by one sweep. That is
fair only if the sweep finds each side's optimum about as reliably. For three spaces this bench

1. evaluates the discretised space exhaustively (explore.grid.evaluate_grid: the product's
   evaluator, every point) and takes each side's feasible optimum of the primary objective;
2. runs the product's search (explore.sampler.make_sampler with the config's space: one sampler per
   side under SideBalancedSampler, the same kind and seed; explore.study.make_objective, so
   duplicate designs are reused as in a sweep) for ``--seeds`` seeds, in memory;
3. counts, per side, the side's own trials until its best feasible value is within 1 % of that
   side's exhaustive optimum.

Spaces: the default example's (examples/default.toml), a 7 nm space up to 2 GHz (the default
example's axes on 7 nm only, 400-2000 MHz in 100 MHz steps), and the LLM example's
(examples/llama.toml).

Target (issue 38 item 3): on each space the dense side's p90 is at most 1.25x the sparse side's.
A seed that does not reach 1 % within the run counts as the run's length + 1 (a lower bound),
and the table says how many did not.

    python bench/bench_search_balance.py [--seeds 20] [--trials 300] [--spaces default,7nm,llm]
"""

from __future__ import annotations

import argparse
import math
import time
import tomllib
from pathlib import Path

import numpy as np
import optuna

REPO = Path(__file__).resolve().parents[1]
TARGET_P90_RATIO = 1.25
WITHIN = 0.01


def _configs() -> dict[str, object]:
    from explore.config import load_config, parse_config

    seven = tomllib.loads((REPO / "examples" / "default.toml").read_text())
    seven["study"]["name"] = "bench-7nm-2ghz"
    seven["space"].update(node_nm=[7], clock_mhz={"min": 400, "max": 2000, "step": 100})
    return {
        "default": lambda: load_config(str(REPO / "examples" / "default.toml")),
        "7nm": lambda: parse_config(seven, str(REPO / "examples" / "default.toml")),
        "llm": lambda: load_config(str(REPO / "examples" / "llama.toml")),
    }


def _side_optima(cfg, cols, metrics, cons) -> dict[str, float]:
    from explore.sampler import sparsity_sides

    feasible = np.all(np.stack([c <= 0 for c in cons.values()]), axis=0)
    primary = cfg.objectives.primary
    sign = 1.0 if cfg.objectives.directions()[0] == "maximize" else -1.0
    out = {}
    for side, opts in sparsity_sides(cfg.space).items():
        mask = feasible & np.isin(cols["sparsity"].astype(str), [str(o) for o in opts])
        out[side] = float(sign * np.max(sign * np.asarray(metrics[primary], float)[mask])) if mask.any() else math.nan
    return out


def _run(cfg, ctx, seed: int, n: int, optima: dict[str, float]) -> dict[str, float]:
    """Each side's own-trial count at which it first comes within 1 % of its optimum (inf: never)."""
    import explore.evaluator as ev
    from explore.sampler import make_sampler, trial_side
    from explore.study import make_objective

    primary = cfg.objectives.primary
    maximize = cfg.objectives.directions()[0] == "maximize"
    study = optuna.create_study(directions=cfg.objectives.directions(),
                                sampler=make_sampler(cfg.study.sampler, seed, len(cfg.objectives.names()), cfg.space))
    objective = make_objective(cfg, ctx, ev.evaluate, n)
    count = dict.fromkeys(optima, 0)
    hit = dict.fromkeys(optima, math.inf)

    def record(study, trial):
        side = trial_side(trial)
        if side not in count:
            return
        count[side] += 1
        if trial.state != optuna.trial.TrialState.COMPLETE or math.isfinite(hit[side]):
            return
        if not all(v <= 0 for v in trial.constraints.values()):
            return
        v, opt = float(trial.user_attrs[primary]), optima[side]
        if (v >= (1 - WITHIN) * opt) if maximize else (v <= (1 + WITHIN) * opt):
            hit[side] = count[side]

    study.optimize(objective, n_trials=n, callbacks=[record])
    return {s: (hit[s] if math.isfinite(hit[s]) else count[s] + 1.0) for s in optima} | {
        f"{s}_missed": float(math.isinf(hit[s])) for s in optima}


def main() -> None:
    ap = argparse.ArgumentParser()
    ap.add_argument("--seeds", type=int, default=20)
    ap.add_argument("--trials", type=int, default=300, help="total trials per run (both sides)")
    ap.add_argument("--spaces", default="default,7nm,llm")
    args = ap.parse_args()
    optuna.logging.set_verbosity(optuna.logging.WARNING)
    import explore.evaluator as ev
    from explore.grid import evaluate_grid

    configs = _configs()
    rows = []
    for name in args.spaces.split(","):
        cfg = configs[name]()
        ctx = ev.make_context(cfg)
        t = time.perf_counter()
        cols, metrics, cons = evaluate_grid(cfg, ctx)
        t_grid = time.perf_counter() - t
        optima = _side_optima(cfg, cols, metrics, cons)
        P = len(next(iter(cols.values())))
        print(f"\n{name}: {P:,} points, exhaustive in {t_grid:.1f} s; optimum {cfg.objectives.primary}: "
              + ", ".join(f"{s} {v:.4g}" for s, v in optima.items()))
        t = time.perf_counter()
        runs = [_run(cfg, ctx, s, args.trials, optima) for s in range(args.seeds)]
        t_runs = time.perf_counter() - t
        stats = {}
        for side in optima:
            v = np.array([r[side] for r in runs])
            missed = int(sum(r[f"{side}_missed"] for r in runs))
            stats[side] = (float(np.median(v)), float(np.percentile(v, 90)), missed)
            print(f"  {side:>6}: trials of its own to within 1 %: median {stats[side][0]:g}, p90 {stats[side][1]:g}"
                  f"  (not reached in {missed} of {args.seeds}; per seed {[int(x) for x in v]})")
        ratio = stats["dense"][1] / stats["sparse"][1]
        print(f"  dense p90 / sparse p90 = {ratio:.2f} (target <= {TARGET_P90_RATIO}); {args.seeds} runs in {t_runs:.0f} s")
        rows.append((name, P, stats, ratio))

    print("\n| space | points | sparse median | sparse p90 | dense median | dense p90 | dense/sparse p90 | target |")
    print("|---|---|---|---|---|---|---|---|")
    for name, P, st, ratio in rows:
        s, d = st["sparse"], st["dense"]
        ok = "met" if ratio <= TARGET_P90_RATIO and not s[2] and not d[2] else "NOT MET"
        print(f"| {name} | {P:,} | {s[0]:g} | {s[1]:g} | {d[0]:g} | {d[1]:g} | {ratio:.2f} | <= {TARGET_P90_RATIO} ({ok}) |")


if __name__ == "__main__":
    main()
