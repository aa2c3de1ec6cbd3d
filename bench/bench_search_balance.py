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
(examples/llama.toml) on 7 nm, HBM3 and single-buffered weights (its whole space takes hours).

Then, for ``--settle-seeds`` seeds, the verdict's advantage (best sparse / best dense on the primary
objective) after the config's budget and after settling (explore.settle, as the sweep runs it).

Targets (issue 38 item 3): on each space the dense side's p90 is at most 1.25x the sparse side's;
the settled advantage agrees within 2 points across seeds.
A seed that does not reach 1 % within the run counts as the run's length + 1 (a lower bound),
and the table says how many did not.

    python bench/bench_search_balance.py [--seeds 20] [--trials 300] [--spaces default,7nm,llm]
        [--settle-seeds 10] [--skip-balance] [--grid-cache DIR]
"""

from __future__ import annotations

import argparse
import math
import pickle
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
    # the LLM example's space on one node, DRAM and buffering (7,344 of its 44,064 points: each point
    # simulates serving, so the whole space would take about an hour)
    llm = tomllib.loads((REPO / "examples" / "llama.toml").read_text())
    llm["study"]["name"] = "bench-llm"
    llm["space"].update(node_nm=[7], dram=["hbm3"], double_buffer=[False])
    return {
        "default": lambda: load_config(str(REPO / "examples" / "default.toml")),
        "7nm": lambda: parse_config(seven, str(REPO / "examples" / "default.toml")),
        "llm": lambda: parse_config(llm, str(REPO / "examples" / "llama.toml")),
    }


def _side_optima(cfg, cols, metrics, cons) -> dict[str, float]:
    from explore.sampler import sparsity_sides

    feasible = np.all(np.stack([c <= 0 for c in cons.values()]), axis=0)
    primary = cfg.objectives.primary
    sign = 1.0 if cfg.objectives.directions()[0] == "maximize" else -1.0
    out = {}
    for side, opts in sparsity_sides(cfg.space).items():
        mask = feasible & np.isin(cols["sparsity"].astype(str), [str(o) for o in opts])
        out[side] = (
            float(sign * np.max(sign * np.asarray(metrics[primary], float)[mask])) if mask.any() else math.nan
        )
    return out


def _run(cfg, ctx, seed: int, n: int, optima: dict[str, float]) -> dict[str, float]:
    """Each side's own-trial count at which it first comes within 1 % of its optimum (inf: never)."""
    import explore.evaluator as ev
    from explore.objective import make_objective
    from explore.sampler import make_sampler, trial_side

    primary = cfg.objectives.primary
    maximize = cfg.objectives.directions()[0] == "maximize"
    study = optuna.create_study(
        directions=cfg.objectives.directions(),
        sampler=make_sampler(cfg.study.sampler, seed, len(cfg.objectives.names()), cfg.space),
    )
    objective = make_objective(cfg, ctx, ev.evaluate, n)
    count = dict.fromkeys(optima, 0)
    hit = dict.fromkeys(optima, math.inf)
    best = dict.fromkeys(optima, math.nan)  # each side's best feasible value so far
    at_budget = {}  # each side's best after its share of the config's trial budget
    share = max(cfg.study.trials // len(optima), 1)

    def record(study, trial):
        side = trial_side(trial)
        if side not in count:
            return
        count[side] += 1
        if trial.state == optuna.trial.TrialState.COMPLETE and all(
            v <= 0 for v in trial.constraints.values()
        ):
            v, opt = float(trial.user_attrs[primary]), optima[side]
            if math.isnan(best[side]) or (v > best[side] if maximize else v < best[side]):
                best[side] = v
            if math.isinf(hit[side]) and (
                (v >= (1 - WITHIN) * opt) if maximize else (v <= (1 + WITHIN) * opt)
            ):
                hit[side] = count[side]
        if count[side] == share:
            at_budget[side] = best[side]

    study.optimize(objective, n_trials=n, callbacks=[record])
    return (
        {s: (hit[s] if math.isfinite(hit[s]) else count[s] + 1.0) for s in optima}
        | {f"{s}_missed": float(math.isinf(hit[s])) for s in optima}
        | {f"{s}_at_budget": at_budget.get(s, math.nan) for s in optima}
    )


def _settled(cfg, ctx, seed: int, optima: dict[str, float]) -> dict[str, float]:
    """The sweep's search at the config's budget, then explore.settle.settle as the sweep runs it:
    each side's best feasible value on the primary objective after the budget and after settling,
    the extra trials settling took, and each side's own trials (search, then settling) until it is
    within 1 % of its exhaustive optimum."""
    import explore.evaluator as ev
    from explore.objective import make_objective
    from explore.sampler import make_sampler, trial_side
    from explore.settle import CAP_FACTOR, settle

    primary = cfg.objectives.primary
    maximize = cfg.objectives.directions()[0] == "maximize"
    study = optuna.create_study(
        directions=cfg.objectives.directions(),
        sampler=make_sampler(cfg.study.sampler, seed, len(cfg.objectives.names()), cfg.space),
    )
    objective = make_objective(cfg, ctx, ev.evaluate, 10**9)  # no surplus check: one process, in memory

    def bests() -> dict[str, float]:
        out = {"sparse": math.nan, "dense": math.nan}
        for t in study.get_trials(deepcopy=False, states=(optuna.trial.TrialState.COMPLETE,)):
            side = trial_side(t)
            if side in out and all(v <= 0 for v in t.constraints.values()):
                v = float(t.user_attrs[primary])
                if math.isnan(out[side]) or (v > out[side] if maximize else v < out[side]):
                    out[side] = v
        return out

    count = {"sparse": 0, "dense": 0}
    hit = {"sparse": math.inf, "dense": math.inf}

    def record(study, trial):  # each side's own trials until it is within 1 % of its optimum
        side = trial_side(trial)
        if side not in count:
            return
        count[side] += 1
        if (
            trial.state == optuna.trial.TrialState.COMPLETE
            and all(v <= 0 for v in trial.constraints.values())
            and math.isinf(hit[side])
        ):
            v, opt = float(trial.user_attrs[primary]), optima[side]
            if (v >= (1 - WITHIN) * opt) if maximize else (v <= (1 + WITHIN) * opt):
                hit[side] = count[side]

    study.optimize(objective, n_trials=cfg.study.trials, callbacks=[record])
    before = bests()
    info = settle(
        study,
        cfg.space,
        lambda n: study.optimize(objective, n_trials=n, callbacks=[record]),
        cap=CAP_FACTOR * cfg.study.trials,
    )
    after = bests()
    return {
        "before": _advantage(before["sparse"], before["dense"], maximize),
        "after": _advantage(after["sparse"], after["dense"], maximize),
        "extra": float(info["extra_trials"]),
        "converged": float(info["converged"]),
        "hit_sparse": hit["sparse"] if math.isfinite(hit["sparse"]) else count["sparse"] + 1.0,
        "hit_dense": hit["dense"] if math.isfinite(hit["dense"]) else count["dense"] + 1.0,
        "missed": float(math.isinf(hit["sparse"]) or math.isinf(hit["dense"])),
    }


def _advantage(sparse: float, dense: float, maximize: bool) -> float:
    """The verdict's advantage in percent: how much better the sparse side's value is."""
    return 100.0 * ((sparse / dense - 1.0) if maximize else (dense / sparse - 1.0))


def main() -> None:
    ap = argparse.ArgumentParser()
    ap.add_argument("--seeds", type=int, default=20)
    ap.add_argument("--trials", type=int, default=300, help="total trials per run (both sides)")
    ap.add_argument("--spaces", default="default,7nm,llm")
    ap.add_argument(
        "--settle-seeds",
        type=int,
        default=10,
        help="seeds of the verdict's advantage at the config's budget, then settled (0: skip)",
    )
    ap.add_argument(
        "--grid-cache",
        default="",
        help="directory to keep each space's exhaustive evaluation in "
        "(reused when present: the LLM space's takes minutes)",
    )
    ap.add_argument(
        "--skip-balance", action="store_true", help="only the settled advantage (no trials-to-1 % runs)"
    )
    args = ap.parse_args()
    optuna.logging.set_verbosity(optuna.logging.WARNING)
    import explore.evaluator as ev
    from explore.grid import evaluate_grid

    configs = _configs()
    rows, rows_settle = [], []
    for name in args.spaces.split(","):
        cfg = configs[name]()
        ctx = ev.make_context(cfg)
        t = time.perf_counter()
        cache = Path(args.grid_cache) / f"{name}.pkl" if args.grid_cache else None
        if cache is not None and cache.exists():
            cols, metrics, cons = pickle.loads(cache.read_bytes())
        else:
            cols, metrics, cons = evaluate_grid(cfg, ctx)
            if cache is not None:
                cache.parent.mkdir(parents=True, exist_ok=True)
                cache.write_bytes(
                    pickle.dumps((cols, {cfg.objectives.primary: metrics[cfg.objectives.primary]}, cons))
                )
        t_grid = time.perf_counter() - t
        optima = _side_optima(cfg, cols, metrics, cons)
        P = len(next(iter(cols.values())))
        print(
            f"\n{name}: {P:,} points, exhaustive in {t_grid:.1f} s; optimum {cfg.objectives.primary}: "
            + ", ".join(f"{s} {v:.4g}" for s, v in optima.items())
        )
        maximize = cfg.objectives.directions()[0] == "maximize"
        exact = _advantage(optima["sparse"], optima["dense"], maximize)
        if args.settle_seeds:
            t = time.perf_counter()
            st = [_settled(cfg, ctx, s, optima) for s in range(args.settle_seeds)]
            before, after = np.array([r["before"] for r in st]), np.array([r["after"] for r in st])
            extra = np.array([r["extra"] for r in st])
            print(
                f"  advantage at the config's budget ({cfg.study.trials} trials), seeds 0-{args.settle_seeds - 1}: "
                + ", ".join(f"{a:+.1f}" for a in before)
                + f" % (spread {np.ptp(before):.1f} points)"
            )
            print(
                "  then settled (explore.settle): "
                + ", ".join(f"{a:+.1f}" for a in after)
                + f" % (spread {np.ptp(after):.1f} points; target within 2); exhaustive {exact:+.1f} %"
            )
            print(
                f"  settling took +{np.median(extra):g} trials median (min {extra.min():g}, max {extra.max():g}); "
                f"converged in {int(sum(r['converged'] for r in st))} of {len(st)}; {time.perf_counter() - t:.0f} s"
            )
            hs, hd = np.array([r["hit_sparse"] for r in st]), np.array([r["hit_dense"] for r in st])
            p90 = (float(np.percentile(hs, 90)), float(np.percentile(hd, 90)))
            print(
                f"  search + settling, own trials to within 1 %: sparse median {np.median(hs):g} p90 {p90[0]:g}, "
                f"dense median {np.median(hd):g} p90 {p90[1]:g}; dense / sparse p90 {p90[1] / p90[0]:.2f} "
                f"(target <= {TARGET_P90_RATIO}); not reached in {int(sum(r['missed'] for r in st))} of {len(st)}"
            )
            rows_settle.append(
                (name, cfg.study.trials, np.ptp(before), np.ptp(after), exact, float(np.median(extra)))
            )
        if args.skip_balance:
            continue
        t = time.perf_counter()
        runs = [_run(cfg, ctx, s, args.trials, optima) for s in range(args.seeds)]
        t_runs = time.perf_counter() - t
        stats = {}
        for side in optima:
            v = np.array([r[side] for r in runs])
            missed = int(sum(r[f"{side}_missed"] for r in runs))
            stats[side] = (float(np.median(v)), float(np.percentile(v, 90)), missed)
            print(
                f"  {side:>6}: trials of its own to within 1 %: median {stats[side][0]:g}, p90 {stats[side][1]:g}"
                f"  (not reached in {missed} of {args.seeds}; per seed {[int(x) for x in v]})"
            )
        adv = np.array([_advantage(r["sparse_at_budget"], r["dense_at_budget"], maximize) for r in runs])
        print(
            f"  advantage at the config's budget ({cfg.study.trials} trials, {cfg.study.trials // 2} per side), "
            f"seeds 0-{min(10, args.seeds) - 1}: "
            + ", ".join(f"{a:+.1f}" for a in adv[:10])
            + f" %; exhaustive {exact:+.1f} %; spread {np.nanmax(adv[:10]) - np.nanmin(adv[:10]):.1f} points"
            + " (target: within 2)"
        )
        ratio = stats["dense"][1] / stats["sparse"][1]
        print(
            f"  dense p90 / sparse p90 = {ratio:.2f} (target <= {TARGET_P90_RATIO}); "
            f"{args.seeds} runs in {t_runs:.0f} s"
        )
        rows.append((name, P, stats, ratio))

    if rows:
        print(
            "\n| space | points | sparse median | sparse p90 | dense median | dense p90 | dense/sparse p90 | target |"
        )
        print("|---|---|---|---|---|---|---|---|")
        for name, P, st, ratio in rows:
            s, d = st["sparse"], st["dense"]
            ok = "met" if ratio <= TARGET_P90_RATIO and not s[2] and not d[2] else "NOT MET"
            print(
                f"| {name} | {P:,} | {s[0]:g} | {s[1]:g} | {d[0]:g} | {d[1]:g} | "
                f"{ratio:.2f} | <= {TARGET_P90_RATIO} ({ok}) |"
            )
    if rows_settle:
        print(
            "\n| space | budget | advantage spread at budget | spread after settling | "
            "exhaustive | settle trials (median) |"
        )
        print("|---|---|---|---|---|---|")
        for name, b, sb, sa, exact, extra in rows_settle:
            print(
                f"| {name} | {b} | {sb:.1f} | "
                f"{sa:.1f} ({'met' if sa <= 2 else 'NOT MET'}) | {exact:+.1f} % | {extra:g} |"
            )


if __name__ == "__main__":
    main()
