"""Benchmark: quality under N:M pruning, measured side by side with its references.

    python bench/bench_quality.py [--seeds 5] [--sections 1,2,3,4,5]

Prints, in one run:
1. the reference experiment (digits MLP 64-64-64-10, 2:4) over several seeds: accuracy at each
   step vs the acceptance targets and vs the published dense-vs-2:4 deltas of Mishra et al. 2021;
2. retained |w| share of 2:4 on Gaussian weights vs the order-statistics integral;
3. wall time of one reference run vs the 60 s budget;
4. the transformer reference (proxy: a char-level LM, sim.quality.references.transformer), one-shot delta of
   magnitude, wanda and sparsegpt at 2:4 and 4:8 over 3 seeds with 95 % intervals, next to the
   published LLaMA-2-7B WikiText2 rows (Sun et al. 2024, locuslab/wanda README): ordering and
   ratios of the deltas;
5. speed and memory of wanda and sparsegpt on one 4096 x 4096 layer with 128 calibration rows, one
   BLAS thread (targets: sparsegpt <= 60 s and <= 2 GB, wanda <= 2 s), each in a fresh process.
"""

from __future__ import annotations

import argparse
import multiprocessing as mp
import resource
import sys
import time
from math import comb
from pathlib import Path

import numpy as np
from scipy import integrate, stats
from threadpoolctl import threadpool_limits

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))

from sim.quality.evidence.evidence import transformer_evidence  # noqa: E402
from sim.quality.prune.methods import METHODS, sparsegpt_prune, wanda_prune  # noqa: E402
from sim.quality.prune.pruning import prune_nm  # noqa: E402
from sim.quality.references.reference import reference_experiment  # noqa: E402

#: LLaMA-2-7B WikiText2 perplexity, one-shot ([V] locuslab/wanda README; published-figures.md sec. 10).
LLAMA2_7B_DENSE = 5.12
LLAMA2_7B = {
    ("magnitude", "2:4"): 54.59,
    ("wanda", "2:4"): 11.02,
    ("sparsegpt", "2:4"): 10.17,
    ("wanda", "4:8"): 7.97,
    ("sparsegpt", "4:8"): 8.12,
}

# Dense vs 2:4 (ASP recipe) accuracy, Mishra et al. 2021 as reproduced in pytorch/tutorials
# advanced_source/semi_structured_sparse.py ([S], published-figures.md 1.3): delta in points.
MISHRA_DELTAS = {
    "ResNet-50 top-1": 76.2 - 76.1,
    "ResNeXt-101 top-1": 0.0,
    "Xception top-1": 0.0,
    "FairSeq Transformer BLEU": 28.5 - 28.2,
    "BERT-Large F1": 0.0,
}


def _order_stat_share(n_keep: int = 2, m: int = 4) -> float:
    def e_order(j):
        def f(x):
            cdf = 2 * stats.norm.cdf(x) - 1
            return x * j * comb(m, j) * cdf ** (j - 1) * (1 - cdf) ** (m - j) * 2 * stats.norm.pdf(x)

        return integrate.quad(f, 0, np.inf)[0]

    return sum(e_order(j) for j in range(m - n_keep + 1, m + 1)) / (m * np.sqrt(2 / np.pi))


def section_digits(args) -> None:
    print("== 1. reference experiment: digits MLP 64-64-64-10, 2:4, sim.perf 16x16 WS ==")
    print(
        f"{'seed':>4} {'dense':>7} {'1-shot':>7} {'ASP ft':>7} {'gradual':>7} {'ft-dense':>8} "
        f"{'h_d':>4} {'dense@L':>7} {'delta@L':>8} {'sec':>5}"
    )
    rows = []
    for seed in range(args.seeds):
        r = reference_experiment(seed)
        rows.append(r)
        print(
            f"{seed:>4} {r.dense_accuracy * 100:7.2f} {r.oneshot_accuracy * 100:7.2f} "
            f"{r.finetuned_accuracy * 100:7.2f} {r.gradual_accuracy * 100:7.2f} "
            f"{(r.finetuned_accuracy - r.dense_accuracy) * 100:+8.2f} {r.dense_equal_latency_hidden:>4} "
            f"{r.dense_equal_latency_accuracy * 100:7.2f} {r.delta_at_equal_latency * 100:+8.2f} {r.seconds:5.2f}"
        )
    mean = lambda f: float(np.mean([f(r) for r in rows])) * 100  # noqa: E731
    print(
        f"mean: dense {mean(lambda r: r.dense_accuracy):.2f}  one-shot {mean(lambda r: r.oneshot_accuracy):.2f}  "
        f"ASP ft {mean(lambda r: r.finetuned_accuracy):.2f}  gradual {mean(lambda r: r.gradual_accuracy):.2f}  "
        f"delta@equal-latency {mean(lambda r: r.delta_at_equal_latency):+.2f} points"
    )
    ft_delta = mean(lambda r: r.finetuned_accuracy - r.dense_accuracy)
    print(f"\n{'quantity':<50} {'measured':>10} {'reference':>10} {'ratio/ok':>9}")
    dense_min = min(r.dense_accuracy for r in rows) * 100
    print(f"{'min dense accuracy (%)':<50} {dense_min:10.2f} {'>= 95':>10} {str(dense_min >= 95):>9}")
    worst = min((r.finetuned_accuracy - r.dense_accuracy) * 100 for r in rows)
    print(
        f"{'worst ASP-finetuned minus dense (points)':<50} {worst:+10.2f} {'>= -1.5':>10} {str(worst >= -1.5):>9}"
    )
    drop = mean(lambda r: r.dense_accuracy - r.oneshot_accuracy)
    print(f"{'mean one-shot drop (points)':<50} {drop:10.2f} {'> 0':>10} {str(drop > 0):>9}")
    for name, d in MISHRA_DELTAS.items():
        print(f"{'ASP ft - dense vs Mishra 2021 ' + name:<50} {ft_delta:+10.2f} {d:+10.2f} {'':>9}")

    print("\n== 3. wall time of one reference run (dense, 1-shot, ASP ft, gradual, equal-latency dense) ==")
    secs = [r.seconds for r in rows]
    print(f"{'median seconds':<50} {np.median(secs):10.2f} {'< 60':>10} {np.median(secs) / 60:9.3f}")


def section_share(args) -> None:
    print("\n== 2. retained |w| share of 2:4 on N(0,1) weights (1024x1024) ==")
    w = np.random.default_rng(0).normal(size=(1024, 1024))
    share = float(np.abs(prune_nm(w)).sum() / np.abs(w).sum())
    ref = _order_stat_share()
    print(f"{'retained magnitude share':<50} {share:10.5f} {ref:10.5f} {share / ref:9.4f}")
    t0 = time.perf_counter()
    prune_nm(np.random.default_rng(1).normal(size=(4096, 4096)))
    print(f"{'prune 4096x4096 2:4 (s)':<50} {time.perf_counter() - t0:10.3f}")


def section_methods(args) -> None:
    print(
        "\n== 4. one-shot delta by method: transformer reference (proxy) vs LLaMA-2-7B (WikiText2, published) =="
    )
    print(
        f"{'N:M':<4} {'method':<10} {'proxy ppl':>9} {'proxy delta (95 % interval)':>32} "
        f"{'LLaMA-2-7B ppl':>14} {'pub. delta':>10}"
    )
    deltas = {}
    for nm in ("2:4", "4:8"):
        n, m = (int(v) for v in nm.split(":"))
        t0 = time.perf_counter()
        ev, res = transformer_evidence(n, m, seed=0)
        print(
            f"{nm:<4} {'dense':<10} {ev['pretrained_metric']:9.3f} {'':>32} {LLAMA2_7B_DENSE:14.2f} {'':>10}"
        )
        for meth in METHODS:
            row = ev["oneshot_methods"][meth]
            lo, hi = row["quality_delta_interval"]
            pub = LLAMA2_7B.get((meth, nm))
            pub_d = None if pub is None else pub / LLAMA2_7B_DENSE - 1
            deltas[(meth, nm)] = (row["quality_delta"], pub_d)
            print(
                f"{nm:<4} {meth:<10} {row['perplexity']:9.3f} {row['quality_delta'] * 100:+10.2f} % "
                f"[{lo * 100:+7.2f}, {hi * 100:+7.2f}] %  "
                f"{'-' if pub is None else f'{pub:.2f}':>14} {'-' if pub_d is None else f'{pub_d * 100:+.1f} %':>10}"
            )
        print(
            f"     ({'cached' if res.cached else 'trained'} in {time.perf_counter() - t0:.1f} s; seeds {res.seeds}; "
            f"calibration {res.calibration['source']}, inputs from the {res.calibration['inputs']})"
        )
    print(f"\n{'ordering / ratio of deltas':<44} {'proxy':>10} {'LLaMA-2-7B':>10}")
    for nm in ("2:4", "4:8"):
        order = sorted(METHODS, key=lambda k: -deltas[(k, nm)][0])
        pub = [
            k
            for k in sorted(METHODS, key=lambda k: -(deltas[(k, nm)][1] or 0))
            if deltas[(k, nm)][1] is not None
        ]
        print(f"{nm + ' worst to best':<44} {' > '.join(order):>10}   {' > '.join(pub)}")
    for a, b, nm in (
        ("magnitude", "sparsegpt", "2:4"),
        ("wanda", "sparsegpt", "2:4"),
        ("wanda", "sparsegpt", "4:8"),
    ):
        da, pa = deltas[(a, nm)]
        db, pb = deltas[(b, nm)]
        print(f"{f'{a} / {b} delta at {nm}':<44} {da / db:10.2f} {pa / pb:10.2f}")
    for meth in ("wanda", "sparsegpt"):
        print(
            f"{f'{meth} delta 4:8 / 2:4':<44} {deltas[(meth, '4:8')][0] / deltas[(meth, '2:4')][0]:10.2f} "
            f"{deltas[(meth, '4:8')][1] / deltas[(meth, '2:4')][1]:10.2f}"
        )


def _timed(method: str, queue) -> None:
    """One method on one 4096 x 4096 layer, 128 calibration rows, one BLAS thread (a fresh process)."""
    rng = np.random.default_rng(0)
    w = rng.standard_normal((4096, 4096)).astype(np.float32)
    x = rng.standard_normal((128, 4096)).astype(np.float32)
    base = resource.getrusage(resource.RUSAGE_SELF).ru_maxrss
    with threadpool_limits(1):
        t0, c0 = time.perf_counter(), time.process_time()
        if method == "sparsegpt":
            sparsegpt_prune(w, 2, 4, x=x)
        else:
            wanda_prune(w, x, 2, 4)
        wall, cpu = time.perf_counter() - t0, time.process_time() - c0
    peak = resource.getrusage(resource.RUSAGE_SELF).ru_maxrss
    queue.put((wall, cpu, peak / 2**20, (peak - base) / 2**20))


def section_speed(args) -> None:
    print("\n== 5. one 4096 x 4096 layer, 128 calibration rows, 2:4, one BLAS thread (fresh process each) ==")
    print(
        f"{'method':<10} {'wall s':>8} {'CPU s':>8} {'peak RSS GB':>12} {'of it pruning GB':>17} {'target':>22}"
    )
    ctx = mp.get_context("spawn")
    for method, target in (("wanda", "<= 2 s"), ("sparsegpt", "<= 60 s, <= 2 GB")):
        q = ctx.Queue()
        p = ctx.Process(target=_timed, args=(method, q))
        p.start()
        wall, cpu, peak, added = q.get()
        p.join()
        print(f"{method:<10} {wall:8.2f} {cpu:8.2f} {peak:12.2f} {added:17.2f} {target:>22}")
    load = Path("/proc/loadavg").read_text().split()[0] if Path("/proc/loadavg").exists() else "?"
    print(f"(load average {load}: wall time counts waiting for a core; CPU time is the one-core cost)")


SECTIONS = {1: section_digits, 2: section_share, 4: section_methods, 5: section_speed}


def main() -> None:
    ap = argparse.ArgumentParser()
    ap.add_argument("--seeds", type=int, default=5)
    ap.add_argument("--sections", default="1,2,4,5", help="comma list of 1 (incl. 3), 2, 4, 5")
    args = ap.parse_args()
    for k in (int(v) for v in args.sections.split(",")):
        SECTIONS[k](args)


if __name__ == "__main__":
    main()
