"""Benchmark: the cost of running the team's hooks in a child process (sim.quality.team.hooks).

    python bench/bench_quality_hooks.py [--reps 3]

Side by side, for three weight sets (a tiny test model; one 4096 x 4096 float32 layer; the
tensors of GPT-2 small, 124 M float32 parameters), with an eval that returns at once:

* in process: the call the hooks replaced (the weights copied, the function called);
* child, first call: every tensor written to the memory file, mapped by the child, copied for the
  function;
* child, nothing changed: only the names cross (the dense -> one-shot -> fine-tuned calls share
  their unpruned tensors);
* child, one block changed: one GPT-2 block's four GEMM weights replaced, as each call of a
  sequential calibration function sees them;

plus the start of a child (interpreter, numpy, the team's module). Target: the first call costs
at most 2x the in-process call plus 1 s; a call with nothing changed, at most the in-process call
plus 50 ms. Best of ``--reps``.
"""

from __future__ import annotations

import argparse
import sys
import tempfile
import time
from pathlib import Path

import numpy as np

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))

from sim.quality.team.hooks import TeamHook  # noqa: E402

D_MODEL, D_FF, LAYERS, VOCAB = 768, 3072, 12, 50257  # GPT-2 small (Radford et al. 2019, 124 M parameters)


def gpt2_small() -> dict[str, np.ndarray]:
    rng = np.random.default_rng(0)
    w = {"wte.weight": rng.standard_normal((VOCAB, D_MODEL), dtype=np.float32)}
    for i in range(LAYERS):
        p = f"h.{i}."
        w[p + "attn.c_attn.weight"] = rng.standard_normal((D_MODEL, 3 * D_MODEL), dtype=np.float32)
        w[p + "attn.c_proj.weight"] = rng.standard_normal((D_MODEL, D_MODEL), dtype=np.float32)
        w[p + "mlp.c_fc.weight"] = rng.standard_normal((D_MODEL, D_FF), dtype=np.float32)
        w[p + "mlp.c_proj.weight"] = rng.standard_normal((D_FF, D_MODEL), dtype=np.float32)
    return w


def best(fn, reps: int) -> float:
    out = float("inf")
    for _ in range(reps):
        t0 = time.perf_counter()
        fn()
        out = min(out, time.perf_counter() - t0)
    return out


def first_call(tmp: Path, weights) -> float:
    """One call of a fresh child: every tensor crosses."""
    with TeamHook("bench_eval:zero", tmp) as hook:
        t0 = time.perf_counter()
        hook.call(weights)
        return time.perf_counter() - t0


def in_process(fn, weights):
    return fn({k: v.copy() for k, v in weights.items()})


def main() -> int:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--reps", type=int, default=3)
    args = ap.parse_args()
    tmp = Path(tempfile.mkdtemp(prefix="bench_hooks_"))
    (tmp / "bench_eval.py").write_text("def zero(weights):\n    return 0.0\n")

    def zero(weights):
        return 0.0

    t_start = best(lambda: TeamHook("bench_eval:zero", tmp).close(), args.reps)
    print(f"child start (interpreter, numpy, the team's module): {t_start * 1e3:.0f} ms")
    rng = np.random.default_rng(1)
    cases = {
        "tiny (16x32 + 16)": {
            "fc.weight": np.ones((16, 32), np.float32),
            "fc.bias": np.zeros(16, np.float32),
        },
        "one 4096x4096 fp32 layer": {"w": rng.standard_normal((4096, 4096), dtype=np.float32)},
        "GPT-2 small, 124 M fp32": gpt2_small(),
    }
    ok = True
    for name, w in cases.items():
        mb = sum(v.nbytes for v in w.values()) / 2**20
        block = [k for k in w if k.startswith("h.5.")] or [next(iter(w))]
        variants = [dict(w, **{k: w[k] + 0 for k in block}) for _ in range(args.reps)]
        with TeamHook("bench_eval:zero", tmp) as hook:
            t_in = best(lambda w=w: in_process(zero, w), args.reps)

            t_first = min(first_call(tmp, w) for _ in range(args.reps))
            hook.call(w)
            t_same = best(lambda w=w: hook.call(w), args.reps)
            it = iter(variants)
            t_block = best(lambda it=it: hook.call(next(it)), args.reps)
        changed = sum(w[k].nbytes for k in block) / 2**20
        met = t_first <= 2 * t_in + 1.0 and t_same <= t_in + 0.05
        ok &= met
        print(
            f"{name}: {mb:.1f} MB; in process {t_in * 1e3:.1f} ms; child first call {t_first * 1e3:.1f} ms "
            f"(+{(t_first - t_in) * 1e3:.1f}); nothing changed {t_same * 1e3:.1f} ms (+{(t_same - t_in) * 1e3:.1f}); "
            f"{changed:.1f} MB changed {t_block * 1e3:.1f} ms; {'MET' if met else 'MISSED'}"
        )
    return 0 if ok else 1


if __name__ == "__main__":
    sys.exit(main())
