"""The verdict does not depend on a lucky seed: every example, swept with seeds 0..N-1.

For each example config, ``sparsepe sweep EXAMPLE --seed k`` runs as a user runs it (its own trial
budget, then explore.settle) into a temporary directory; the bench reads the verdict class from
report.md ("Recommendation: SHIP | DON'T SHIP | ...") and the primary advantage from best.json
(comparison.primary_advantage), and prints, per example, the classes seen and the advantage's spread.

Target (issue 38 item 3): on each example the verdict class is the same for every seed and the
advantage agrees within 2 points.

    python bench/bench_verdict_seeds.py [--seeds 10] [--examples default,resnet50,...] [--no-settle]
"""

from __future__ import annotations

import argparse
import json
import re
import subprocess
import sys
import tempfile
import time
from pathlib import Path

REPO = Path(__file__).resolve().parents[1]
TARGET_POINTS = 2.0


def _run(example: Path, seed: int, work: Path, settle: bool) -> dict:
    out = work / f"{example.stem}-{seed}"
    cmd = [
        sys.executable,
        "-m",
        "explore.cli",
        "sweep",
        str(example),
        "--seed",
        str(seed),
        "--out",
        str(out),
        "--study",
        f"{example.stem}-s{seed}",
    ] + ([] if settle else ["--no-settle"])
    t = time.perf_counter()
    p = subprocess.run(cmd, cwd=work, capture_output=True, text=True)
    if p.returncode != 0:
        return {"error": (p.stderr.strip().splitlines() or [f"exit {p.returncode}"])[-1]}
    best = json.loads((out / "best.json").read_text())
    m = re.search(r"Recommendation: \**([^(*]+?)\**\s*\(", (out / "report.md").read_text())
    adv = (best.get("comparison") or {}).get("primary_advantage")
    settle_info = (best.get("search_mode") or {}).get("settle") or {}
    return {
        "verdict": m.group(1).strip() if m else "?",
        "advantage": None if adv is None else 100 * (adv - 1),
        "trials": best.get("n_evaluated"),
        "extra": settle_info.get("extra_trials", 0),
        "converged": settle_info.get("converged"),
        "s": time.perf_counter() - t,
    }


def main() -> None:
    ap = argparse.ArgumentParser()
    ap.add_argument("--seeds", type=int, default=10)
    ap.add_argument("--examples", default="default,resnet50,bert,gpt2,precision,llama,mixtral")
    ap.add_argument(
        "--no-settle", action="store_true", help="stop at the budget (the comparison without settling)"
    )
    args = ap.parse_args()
    rows = []
    with tempfile.TemporaryDirectory() as tmp:
        for name in args.examples.split(","):
            ex = REPO / "examples" / f"{name}.toml"
            runs = []
            for k in range(args.seeds):
                r = _run(ex, k, Path(tmp), not args.no_settle)
                runs.append(r)
                adv = (
                    "none (a side has no feasible design)"
                    if r.get("advantage") is None
                    else f"{r['advantage']:+.1f} %"
                )
                print(
                    f"{name} seed {k}: "
                    + (
                        r["error"]
                        if "error" in r
                        else f"{r['verdict']}, advantage {adv}, {r['trials']} trials (+{r['extra']} settling, "
                        f"converged {r['converged']}), {r['s']:.0f} s"
                    ),
                    flush=True,
                )
            ok = [r for r in runs if "error" not in r and r["advantage"] is not None]
            n_none = sum(1 for r in runs if "error" not in r and r["advantage"] is None)
            classes = sorted({r["verdict"] for r in runs if "error" not in r})
            advs = [r["advantage"] for r in ok]
            spread = max(advs) - min(advs) if advs else float("nan")
            classes += [f"no advantage in {n_none}"] if n_none else []
            rows.append(
                (
                    name,
                    len(runs),
                    classes,
                    min(advs, default=float("nan")),
                    max(advs, default=float("nan")),
                    spread,
                    sum(r.get("s", 0) for r in runs) / max(len(runs), 1),
                )
            )
    print(
        "\n| example | seeds | verdict classes | advantage min | advantage max | spread (points) | s per sweep |"
    )
    print("|---|---|---|---|---|---|---|")
    for name, n, classes, lo, hi, spread, s in rows:
        same = len([c for c in classes if not c.startswith("no advantage")]) == 1
        none_all = any(
            c == f"no advantage in {n}" for c in classes
        )  # one side never feasible: nothing to spread
        ok = "met" if same and (spread <= TARGET_POINTS or none_all) else "NOT MET"
        print(
            f"| {name} | {n} | {' / '.join(classes)} | {lo:+.1f} % | {hi:+.1f} % | {spread:.1f} ({ok}) | {s:.0f} |"
        )


if __name__ == "__main__":
    main()
