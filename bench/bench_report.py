"""Report generation time for a 1000-trial study, against a 30 s target.

Builds (or reuses) a study of ``--trials`` finished trials with the product evaluator and the
random sampler on ``examples/default.toml`` (BERT-base, 30,720-point space) in a journal file,
then times ``explore.report.build.write_report`` on it (study load, re-evaluation of the best design,
importances, one-at-a-time sensitivity sweeps, PNGs, HTML with plotly.js inlined once, Markdown,
CSVs) and prints the phases side by side with the target.

Run: ``python bench/bench_report.py [--trials 1000] [--work DIR] [--config examples/default.toml]``
(the sweep itself takes about a minute the first time; ``--work`` keeps it for re-runs).
"""

from __future__ import annotations

import argparse
import cProfile
import pstats
import tempfile
import time
from pathlib import Path

TARGET_S = 30.0  # target: the report of a 1000-trial study in under 30 s
REPO = Path(__file__).resolve().parents[1]


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__)
    ap.add_argument("--trials", type=int, default=1000)
    ap.add_argument("--config", type=Path, default=REPO / "examples" / "default.toml")
    ap.add_argument(
        "--work", type=Path, default=None, help="keep the study here (default: a temporary directory)"
    )
    ap.add_argument("--profile", action="store_true", help="print the 15 most expensive calls of the report")
    args = ap.parse_args()

    from explore.config import load_config
    from explore.report.build import build_report, render
    from explore.runner import export_study
    from explore.storage import resolve_storage
    from explore.study import SweepOptions, run_study

    work = args.work or Path(tempfile.mkdtemp(prefix="sparsepe-bench-report-"))
    run_dir = work / "run"
    cfg = load_config(args.config)
    spec = resolve_storage(None, run_dir)
    opts = SweepOptions(
        config_path=str(args.config),
        storage=spec,
        study_name="bench",
        trials=args.trials,
        seed=0,
        sampler="random",
        out_dir=str(run_dir),
        progress=True,
    )
    t0 = time.perf_counter()
    study = run_study(opts, cfg)
    export_study(study, cfg, run_dir)
    t_sweep = time.perf_counter() - t0

    out = work / "report"
    prof = cProfile.Profile() if args.profile else None
    t0 = time.perf_counter()
    if prof:
        prof.enable()
    rep = build_report(spec.url, "bench", out)
    t_build = time.perf_counter() - t0
    html = render(rep, out)
    t_total = time.perf_counter() - t0
    if prof:
        prof.disable()
    n = rep["key"]["n_evaluated"]
    size_mb = html.stat().st_size / 1e6
    n_png = len(list((out / "report_files").glob("*.png")))
    print(
        f"study: {n} finished trials ({rep['key']['n_feasible']} feasible) in {spec.url}; sweep/resume {t_sweep:.1f} s"
    )
    print(f"{'phase':<44}{'measured s':>12}{'target s':>10}{'ratio':>8}")
    print(f"{'build (load, re-evaluate, sensitivity, text)':<44}{t_build:>12.2f}{'':>10}{'':>8}")
    print(
        f"{'render (PNG x ' + str(n_png) + ', HTML, Markdown, CSV)':<44}{t_total - t_build:>12.2f}{'':>10}{'':>8}"
    )
    print(f"{'report total':<44}{t_total:>12.2f}{TARGET_S:>10.1f}{t_total / TARGET_S:>8.2f}")
    print(
        f"report.html {size_mb:.1f} MB (plotly.js inlined once); decision: {rep['key']['decision']['verdict']}; "
        f"files in {out}"
    )
    if prof:
        pstats.Stats(prof).sort_stats("cumulative").print_stats(15)


if __name__ == "__main__":
    main()
