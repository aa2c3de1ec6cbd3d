"""Benchmark: quality under N:M pruning, measured side by side with its references.

    python bench/bench_quality.py [--seeds 5]

Prints, in one run:
1. the reference experiment (digits MLP 64-64-64-10, 2:4) over several seeds: accuracy at each
   step vs the acceptance targets and vs the published dense-vs-2:4 deltas of Mishra et al. 2021;
2. retained |w| share of 2:4 on Gaussian weights vs the order-statistics integral;
3. wall time of one reference run vs the 60 s budget.
"""

from __future__ import annotations

import argparse
import sys
import time
from math import comb
from pathlib import Path

import numpy as np

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))

from sim.quality.pruning import prune_nm  # noqa: E402
from sim.quality import reference_experiment  # noqa: E402

# Dense vs 2:4 (ASP recipe) accuracy, Mishra et al. 2021 as reproduced in pytorch/tutorials
# advanced_source/semi_structured_sparse.py ([S], published-figures.md 1.3): delta in points.
MISHRA_DELTAS = {"ResNet-50 top-1": 76.2 - 76.1, "ResNeXt-101 top-1": 0.0, "Xception top-1": 0.0,
                 "FairSeq Transformer BLEU": 28.5 - 28.2, "BERT-Large F1": 0.0}


def _order_stat_share(n_keep: int = 2, m: int = 4) -> float:
    from scipy import integrate, stats

    def e_order(j):
        def f(x):
            cdf = 2 * stats.norm.cdf(x) - 1
            return x * j * comb(m, j) * cdf ** (j - 1) * (1 - cdf) ** (m - j) * 2 * stats.norm.pdf(x)
        return integrate.quad(f, 0, np.inf)[0]

    return sum(e_order(j) for j in range(m - n_keep + 1, m + 1)) / (m * np.sqrt(2 / np.pi))


def main() -> None:
    ap = argparse.ArgumentParser()
    ap.add_argument("--seeds", type=int, default=5)
    args = ap.parse_args()

    print("== 1. reference experiment: digits MLP 64-64-64-10, 2:4, sim.perf 16x16 WS ==")
    print(f"{'seed':>4} {'dense':>7} {'1-shot':>7} {'ASP ft':>7} {'gradual':>7} {'ft-dense':>8} "
          f"{'h_d':>4} {'dense@L':>7} {'delta@L':>8} {'sec':>5}")
    rows = []
    for seed in range(args.seeds):
        r = reference_experiment(seed)
        rows.append(r)
        print(f"{seed:>4} {r.dense_accuracy * 100:7.2f} {r.oneshot_accuracy * 100:7.2f} "
              f"{r.finetuned_accuracy * 100:7.2f} {r.gradual_accuracy * 100:7.2f} "
              f"{(r.finetuned_accuracy - r.dense_accuracy) * 100:+8.2f} {r.dense_equal_latency_hidden:>4} "
              f"{r.dense_equal_latency_accuracy * 100:7.2f} {r.delta_at_equal_latency * 100:+8.2f} {r.seconds:5.2f}")
    mean = lambda f: float(np.mean([f(r) for r in rows])) * 100  # noqa: E731
    print(f"mean: dense {mean(lambda r: r.dense_accuracy):.2f}  one-shot {mean(lambda r: r.oneshot_accuracy):.2f}  "
          f"ASP ft {mean(lambda r: r.finetuned_accuracy):.2f}  gradual {mean(lambda r: r.gradual_accuracy):.2f}  "
          f"delta@equal-latency {mean(lambda r: r.delta_at_equal_latency):+.2f} points")
    ft_delta = mean(lambda r: r.finetuned_accuracy - r.dense_accuracy)
    print(f"\n{'quantity':<50} {'measured':>10} {'reference':>10} {'ratio/ok':>9}")
    dense_min = min(r.dense_accuracy for r in rows) * 100
    print(f"{'min dense accuracy (%)':<50} {dense_min:10.2f} {'>= 95':>10} {str(dense_min >= 95):>9}")
    worst = min((r.finetuned_accuracy - r.dense_accuracy) * 100 for r in rows)
    print(f"{'worst ASP-finetuned minus dense (points)':<50} {worst:+10.2f} {'>= -1.5':>10} {str(worst >= -1.5):>9}")
    drop = mean(lambda r: r.dense_accuracy - r.oneshot_accuracy)
    print(f"{'mean one-shot drop (points)':<50} {drop:10.2f} {'> 0':>10} {str(drop > 0):>9}")
    for name, d in MISHRA_DELTAS.items():
        print(f"{'ASP ft - dense vs Mishra 2021 ' + name:<50} {ft_delta:+10.2f} {d:+10.2f} {'':>9}")

    print("\n== 2. retained |w| share of 2:4 on N(0,1) weights (1024x1024) ==")
    w = np.random.default_rng(0).normal(size=(1024, 1024))
    share = float(np.abs(prune_nm(w)).sum() / np.abs(w).sum())
    ref = _order_stat_share()
    print(f"{'retained magnitude share':<50} {share:10.5f} {ref:10.5f} {share / ref:9.4f}")
    t0 = time.perf_counter()
    prune_nm(np.random.default_rng(1).normal(size=(4096, 4096)))
    print(f"{'prune 4096x4096 2:4 (s)':<50} {time.perf_counter() - t0:10.3f}")

    print("\n== 3. wall time of one reference run (dense, 1-shot, ASP ft, gradual, equal-latency dense) ==")
    secs = [r.seconds for r in rows]
    print(f"{'median seconds':<50} {np.median(secs):10.2f} {'< 60':>10} {np.median(secs) / 60:9.3f}")


if __name__ == "__main__":
    main()
