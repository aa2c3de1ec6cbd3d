"""``sparsepe sweep CONFIG.toml``: search the design space (Optuna) or evaluate all of it (--grid).

Writes ``DIR/trials.csv`` (one row per trial) and ``DIR/best.json`` (best feasible design, or the
Pareto set for several objectives, or ``feasible: false`` with the binding limits), then writes the
report (:func:`explore.report.write_report`; not in --grid mode). Exit code 0 even when no design is feasible.
"""

from __future__ import annotations

import sys
from pathlib import Path
from typing import Annotated, Any, Optional

import typer
from rich.console import Console
from rich.table import Table

from explore import evaluator
from explore.config import MAX_SEED, MAX_TRIALS, load_config, with_liberty
from explore.prewarm import prewarm
from explore.report import write_report
from explore.runner import export_study, run_grid
from explore.safety import check_out_dir, check_study_name, dumps, rich_markup
from explore.storage import check_journal_file, resolve_storage
from explore.study import SweepOptions, run_study
from hw.errors import InputError


#: Most local worker processes. [A] each is a Python process with its own models in memory; 64 is
#: far above the cores of one machine (workers on several machines share a PostgreSQL study).
MAX_WORKERS = 64


def _summary(best: dict[str, Any], out_dir: Path, notes: list[str]) -> None:
    """One screen on stderr: best feasible design, the limit that binds, where the files are."""
    con = Console(stderr=True)
    if best.get("feasible"):
        b = best["best"]
        m = b["metrics"]
        t = Table(title=f"best feasible design (trial {b['number']}, {best['n_feasible']}/{best['n_evaluated']} feasible)",
                  show_header=False, box=None)
        for k, v in b["params"].items():
            t.add_row(rich_markup(k), rich_markup(v))
        for k in ("perf_per_watt", "effective_tops", "power_w", "area_mm2", "fmax_at_voltage_mhz", "voltage_v", "tj_c",
                  "stall_fraction", "speedup_vs_dense_design", "speedup_vs_iso_area_dense", "p99_latency_ms",
                  "quality_delta", "quality_delta_ci", "quality_evidence"):
            if k in m:
                v = m[k]
                t.add_row(f"[bold]{k}[/]" if k == "perf_per_watt" else k,
                          f"{v:.4g}" if isinstance(v, (int, float)) else rich_markup(v))
        con.print(t)
        if best.get("binding_limits"):
            for name in best["binding_limits"]:
                con.print(f"binding limit: [bold]{name}[/] ({best['binding_evidence'][name]})")
        else:
            con.print("no limit binds: no evaluated design better than this one violates a single limit")
        tight = best.get("tightest_limit")
        if tight:
            con.print(f"least slack at the best design: {tight['name']} ({-tight['constraint']:.1%} below its limit)")
        if "pareto" in best:
            con.print(f"Pareto set: {len(best['pareto'])} designs (in best.json)")
    else:
        con.print(f"[bold red]no feasible design[/] in {best['n_evaluated']} evaluated; "
                  f"binding limits: {', '.join(best.get('binding_limits', [])) or 'none (no trial finished)'}")
    for n in notes:
        con.print(n, markup=False, highlight=False)
    con.print(f"results: {out_dir / 'trials.csv'}, {out_dir / 'best.json'}", markup=False, highlight=False)


def sweep(
    config: Annotated[Path, typer.Argument(help="sweep config TOML (see examples/)")],
    trials: Annotated[Optional[int], typer.Option("--trials", help="target total of finished trials (resumes)")] = None,
    storage: Annotated[Optional[str], typer.Option("--storage", help="journal file path, sqlite:///..., or postgresql://...")] = None,
    study: Annotated[Optional[str], typer.Option("--study", help="study name (default: the config's study.name, else its file stem)")] = None,
    workers: Annotated[int, typer.Option("--workers", help="local worker processes on the same storage")] = 1,
    seed: Annotated[Optional[int], typer.Option("--seed", help="sampler seed (worker k uses seed + k)")] = None,
    sampler: Annotated[Optional[str], typer.Option("--sampler", help="tpe | nsga2 | random")] = None,
    grid: Annotated[bool, typer.Option("--grid", help="evaluate the whole discretised space (vectorised)")] = False,
    out: Annotated[Optional[Path], typer.Option("--out", help="output directory (default results/<study>)")] = None,
    json_out: Annotated[bool, typer.Option("--json", help="print best.json to stdout")] = False,
    liberty: Annotated[Optional[str], typer.Option("--liberty", help="Liberty (.lib) file of your standard cells: timing from OpenSTA on it (overrides fixed.liberty)")] = None,
    liberty_node: Annotated[Optional[int], typer.Option("--liberty-node", help="process node (nm) of the Liberty file when the file does not state it")] = None,
) -> None:
    """Search the design space for the best feasible perf-per-watt."""
    # CLI values first (cheap), then the config; nothing is created on disk before all of it passes
    if trials is not None and not 1 <= trials <= MAX_TRIALS:
        raise InputError(f"must be in 1..{MAX_TRIALS}, got {trials}", where="--trials")
    if not 1 <= workers <= MAX_WORKERS:
        raise InputError(f"must be in 1..{MAX_WORKERS}, got {workers}", where="--workers")
    if seed is not None and not 0 <= seed <= MAX_SEED:
        raise InputError(f"must be in 0..{MAX_SEED} (numpy's seed range), got {seed}", where="--seed")
    if sampler is not None and sampler not in ("tpe", "nsga2", "random"):
        raise InputError(f"unknown sampler {sampler!r} (tpe, nsga2, random)", where="--sampler")
    if study is not None:
        check_study_name(study, where="--study")
    if out is not None and out.exists() and not out.is_dir():
        raise InputError("is a file, not a directory", where=f"--out {out}")
    cfg = load_config(config)
    if liberty_node is not None and liberty is None and cfg.fixed.liberty is None:
        raise InputError("--liberty-node needs --liberty FILE (or fixed.liberty)", where="--liberty-node")
    cfg = with_liberty(cfg, liberty, liberty_node)
    name = study or cfg.study.name or config.stem
    if study is None and cfg.study.name is None:  # the file stem as the name
        check_study_name(name, where=f"{config} (its file name as the study name; set study.name)")
    n_trials = trials if trials is not None else cfg.study.trials
    the_seed = seed if seed is not None else cfg.study.seed
    the_sampler = sampler if sampler is not None else cfg.study.sampler
    if n_trials < 1:
        raise InputError(f"must be >= 1, got {n_trials}", where="--trials")
    if workers < 1:
        raise InputError(f"must be >= 1, got {workers}", where="--workers")
    if the_sampler not in ("tpe", "nsga2", "random"):
        raise InputError(f"unknown sampler {the_sampler!r} (tpe, nsga2, random)", where="--sampler")
    out_dir = out if out is not None else Path("results") / name
    notes: list[str] = []
    if out_dir.exists() and not out_dir.is_dir():
        raise InputError("is a file, not a directory", where=f"--out {out_dir}")

    if grid:
        prewarm(cfg)  # cold caches: synthesis and STA on every core before the first point

        best = run_grid(cfg, out_dir, progress=True)
        notes.append("grid mode: every point of the discretised space was evaluated; no study storage is used")
    else:
        evaluator.make_context(cfg)  # bad workloads / models fail here, before anything is written
        spec = resolve_storage(storage, out_dir)
        if spec.kind == "journal":
            check_journal_file(Path(spec.url))
        check_out_dir(out_dir)
        opts = SweepOptions(
            config_path=str(config), storage=spec, study_name=name, trials=n_trials, seed=the_seed,
            sampler=the_sampler, workers=workers, out_dir=str(out_dir),
            liberty=cfg.fixed.liberty if liberty is not None else None, liberty_node=liberty_node,
        )
        st = run_study(opts, cfg)
        best = export_study(st, cfg, out_dir, extra={"study": name, "storage": spec.url, "sampler": the_sampler, "seed": the_seed})
        notes.append(f"report: {write_report(spec.url, name, out_dir)}")
        if spec.kind == "journal":
            notes.append(f"dashboard: optuna-dashboard {spec.url}")
    _summary(best, out_dir, notes)
    if json_out:
        sys.stdout.write(dumps(best) + "\n")


def register(app: typer.Typer) -> None:
    app.command("sweep")(sweep)
