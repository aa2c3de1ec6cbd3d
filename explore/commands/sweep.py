"""``sparsepe sweep CONFIG.toml``: search the design space (Optuna) or evaluate all of it (--grid,
--exhaustive).

Writes ``DIR/trials.csv`` (one row per trial) and ``DIR/best.json`` (best feasible design, or the
Pareto set for several objectives, or ``feasible: false`` with the binding limits), then writes the
report (:func:`explore.report.build.write_report`; not in --grid mode). Exit code 0 even when no design is feasible.
``--exhaustive`` evaluates every point of both sides (sparse and dense PEs; the dense twins of the
sparse options when the space offers no dense PE) when that is at most :data:`MAX_EXHAUSTIVE_POINTS`.
A search is then settled (explore.settle; ``--no-settle`` or ``study.settle = false`` stops at the
budget): each side's best design's untried one- and two-step neighbours are evaluated until none is
left, so the verdict does not depend on where the sampler's budget ended.
"""

from __future__ import annotations

import math
import sys
from pathlib import Path
from typing import Annotated, Any

import typer
from rich.console import Console
from rich.table import Table

from explore.commands.design_options import Liberty, LibertyNode
from explore.config import MAX_SEED, MAX_TRIALS, SweepConfig, grid_size, load_config, with_liberty
from explore.flags import in_range, one_of, study_name
from explore.safety import check_out_dir, check_study_name, dumps, rich_markup
from explore.space import axis_choices, dense_twin_sparsity
from explore.twins import ABSENT
from hw.errors import InputError

#: Most local worker processes. [A] each is a Python process with its own models in memory; 64 is
#: far above the cores of one machine (workers on several machines share a PostgreSQL study).
MAX_WORKERS = 64
#: The samplers of ``--sampler`` (explore.sampler).
SAMPLERS = ("tpe", "nsga2", "random")
#: Most points ``--exhaustive`` evaluates (both sides together). [A] 50,000 points take a few minutes
#: on 2 cores with warm caches; beyond that the search (equal effort per side) is the tool.
MAX_EXHAUSTIVE_POINTS = 50_000


def exhaustive_config(cfg: SweepConfig) -> SweepConfig:
    """The space ``--exhaustive`` evaluates: the config's, with the dense twins of its sparse options
    added when it offers no dense PE (both sides are evaluated); at most MAX_EXHAUSTIVE_POINTS points."""
    from explore.compare import needs_dense_substudy  # reason: Optuna loads only for an --exhaustive run

    if needs_dense_substudy(cfg):
        opts = list(axis_choices(cfg.space, "sparsity") or [])
        twins = [t for t in dict.fromkeys(dense_twin_sparsity(o) for o in opts) if t not in opts]
        cfg = cfg.model_copy(update={"space": cfg.space.model_copy(update={"sparsity": opts + twins})})
    try:
        n = grid_size(cfg)
    except InputError as exc:
        raise InputError(
            f"every axis needs a finite set of values (choices, a step or grid_points): {exc}",
            where="--exhaustive",
        ) from None
    if n > MAX_EXHAUSTIVE_POINTS:
        raise InputError(
            f"the space has {n:,} points (both sides), more than {MAX_EXHAUSTIVE_POINTS:,}; search it "
            "(equal trials per side) or use --grid",
            where="--exhaustive",
        )
    return cfg


def _summary_value(key: str, v: Any) -> str:
    """A metric as the summary prints it; a quantity that does not exist (NaN or null: the iso-area
    twin of a design smaller than every feasible dense design) is 'n/a' with what it means."""
    if v is None or (isinstance(v, float) and not math.isfinite(v)):
        return "n/a" + (f" ({ABSENT[key]})" if key in ABSENT and (v is None or math.isnan(v)) else "")
    return f"{v:.4g}" if isinstance(v, (int, float)) else rich_markup(v)


def _summary(best: dict[str, Any], out_dir: Path, notes: list[str]) -> None:
    """One screen on stderr: best feasible design, the limit that binds, where the files are."""
    con = Console(stderr=True)
    if best.get("feasible"):
        b = best["best"]
        m = b["metrics"]
        t = Table(
            title=f"best feasible design (trial {b['number']}, {best['n_feasible']}/{best['n_evaluated']} feasible)",
            show_header=False,
            box=None,
        )
        for k, v in b["params"].items():
            t.add_row(rich_markup(k), rich_markup(v))
        for k in (
            "perf_per_watt",
            "effective_tops",
            "power_w",
            "area_mm2",
            "fmax_at_voltage_mhz",
            "voltage_v",
            "tj_c",
            "stall_fraction",
            "speedup_vs_dense_design",
            "speedup_vs_iso_area_dense",
            "p99_latency_ms",
            "quality_delta",
            "quality_delta_ci",
            "quality_evidence",
        ):
            if k in m:
                t.add_row(f"[bold]{k}[/]" if k == "perf_per_watt" else k, _summary_value(k, m[k]))
        con.print(t)
        if best.get("binding_limits"):
            for name in best["binding_limits"]:
                con.print(f"binding limit: [bold]{name}[/] ({best['binding_evidence'][name]})")
        else:
            con.print("no limit binds: no evaluated design better than this one violates a single limit")
        tight = best.get("tightest_limit")
        if tight:
            con.print(
                f"least slack at the best design: {tight['name']} ({-tight['constraint']:.1%} below its limit)"
            )
        if "pareto" in best:
            con.print(f"Pareto set: {len(best['pareto'])} designs (in best.json)")
    else:
        con.print(
            f"[bold red]no feasible design[/] in {best['n_evaluated']} evaluated; "
            f"binding limits: {', '.join(best.get('binding_limits', [])) or 'none (no trial finished)'}"
        )
    rob = best.get("robustness")
    if rob is not None:
        ok = rob["p_advantage_ge_margin"] >= rob["min_confidence"]
        con.print(
            f"verdict over the assumptions' ranges: {rob['line']} (SHIP needs P >= {rob['min_confidence']:g}: "
            f"{'met' if ok else 'not met'})",
            markup=False,
            highlight=False,
        )
    srch = (best.get("comparison") or {}).get("search")
    if srch:
        con.print(
            "search effort: "
            + "; ".join(
                f"{k} {v['trials']} trials, {v['distinct_designs']} designs" for k, v in srch.items()
            ),
            markup=False,
            highlight=False,
        )
    for n in notes:
        con.print(n, markup=False, highlight=False)
    con.print(f"results: {out_dir / 'trials.csv'}, {out_dir / 'best.json'}", markup=False, highlight=False)


def _grid(cfg: SweepConfig, out_dir: Path) -> dict[str, Any]:
    """--grid / --exhaustive: every point of the discretised space, vectorised; best.json's content."""
    from explore.prewarm import prewarm  # reason: the models load once the input has passed its checks
    from explore.runner import run_grid  # reason: the models load once the input has passed its checks

    prewarm(cfg)  # cold caches: synthesis and STA on every core before the first point
    return run_grid(cfg, out_dir, progress=True)


def _search(
    cfg: SweepConfig,
    config: Path,
    storage: str | None,
    out_dir: Path,
    name: str,
    n_trials: int,
    seed: int,
    sampler: str,
    workers: int,
    liberty_given: bool,
    liberty_node: int | None,
    notes: list[str],
) -> dict[str, Any]:
    """The Optuna search on the study storage, then the report; best.json's content. The storage is
    checked before the models load (a wrong --storage is answered first)."""
    from explore.storage import (
        check_journal_file,
        redact,
        resolve_storage,
    )  # reason: Optuna loads once the flags and the config have passed

    spec = resolve_storage(storage, out_dir)
    if spec.kind == "journal":
        check_journal_file(Path(spec.url))
    from explore import (
        evaluator,
    )  # reason: the models load once the flags, the config and the storage have passed
    from explore.report.build import write_report  # reason: the report stack loads once the input has passed
    from explore.runner import export_study  # reason: the models load once the input has passed
    from explore.study import (
        EXHAUSTIVE_FACTOR,
        SweepOptions,
        exhaustive_points,
        run_study,
    )  # reason: the models load once the input has passed

    evaluator.make_context(cfg)  # bad workloads / models fail here, before anything is written
    check_out_dir(out_dir)
    points = exhaustive_points(cfg, n_trials)
    mode: dict[str, Any] = {"mode": "search", "trial_budget": n_trials}
    if points is not None:  # a space of at most a few times the budget: every point, no sampler's luck
        sampler = "exhaustive"
        mode = {
            "mode": "exhaustive",
            "trial_budget": n_trials,
            "points": len(points),
            "reason": f"the discretised space has {len(points):,} points (both sides), at most "
            f"{EXHAUSTIVE_FACTOR}x the {n_trials}-trial budget: every point was evaluated",
        }
        notes.append(f"exhaustive: {mode['reason']}")
    opts = SweepOptions(
        config_path=str(config),
        storage=spec,
        study_name=name,
        trials=n_trials,
        seed=seed,
        sampler=sampler,
        workers=workers,
        out_dir=str(out_dir),
        liberty=cfg.fixed.liberty if liberty_given else None,
        liberty_node=liberty_node,
    )
    st = run_study(opts, cfg)
    if (
        points is None and cfg.study.settle
    ):  # searched: settle each side to a local optimum (explore.settle), not the sampler's luck
        from explore.settle import (
            settle_note,
            settle_sweep,
        )  # reason: the models load once the input has passed

        mode["settle"] = settle_sweep(opts, cfg, st)
        notes.append(settle_note(mode["settle"]))
    best = export_study(
        st,
        cfg,
        out_dir,
        extra={
            "study": name,
            "storage": redact(spec.url),
            "sampler": sampler,
            "seed": seed,
            "search_mode": mode,
        },
    )
    notes.append(f"report: {write_report(spec.url, name, out_dir)}")
    if spec.kind == "journal":
        notes.append(f"dashboard: optuna-dashboard {spec.url}")
    return best


Config = Annotated[Path, typer.Argument(help="sweep config TOML (see examples/)")]
Trials = Annotated[
    int | None,
    typer.Option(
        "--trials",
        help="target total of finished trials (resumes)",
        callback=in_range("--trials", 1, MAX_TRIALS),
    ),
]
Storage = Annotated[
    str | None, typer.Option("--storage", help="journal file path, sqlite:///..., or postgresql://...")
]
Study = Annotated[
    str | None,
    typer.Option(
        "--study",
        help="study name (default: the config's study.name, else its file stem)",
        callback=study_name("--study"),
    ),
]
Workers = Annotated[
    int,
    typer.Option(
        "--workers",
        help="local worker processes on the same storage",
        callback=in_range("--workers", 1, MAX_WORKERS),
    ),
]
Seed = Annotated[
    int | None,
    typer.Option(
        "--seed", help="sampler seed (worker k uses seed + k)", callback=in_range("--seed", 0, MAX_SEED)
    ),
]
Sampler = Annotated[
    str | None,
    typer.Option("--sampler", help="tpe | nsga2 | random", callback=one_of("--sampler", SAMPLERS)),
]
Grid = Annotated[bool, typer.Option("--grid", help="evaluate the whole discretised space (vectorised)")]
Exhaustive = Annotated[
    bool,
    typer.Option(
        "--exhaustive",
        help=f"evaluate every point of both sides, sparse and dense (at most {MAX_EXHAUSTIVE_POINTS:,})",
    ),
]
Settle = Annotated[
    bool | None,
    typer.Option(
        "--settle/--no-settle",
        help="after the budget, settle each side to a local optimum (default: study.settle)",
    ),
]
Out = Annotated[Path | None, typer.Option("--out", help="output directory (default results/<study>)")]
JsonOut = Annotated[bool, typer.Option("--json", help="print best.json to stdout")]


def sweep(
    config: Config,
    trials: Trials = None,
    storage: Storage = None,
    study: Study = None,
    workers: Workers = 1,
    seed: Seed = None,
    sampler: Sampler = None,
    grid: Grid = False,
    exhaustive: Exhaustive = False,
    settle: Settle = None,
    out: Out = None,
    json_out: JsonOut = False,
    liberty: Liberty = None,  # overrides fixed.liberty
    liberty_node: LibertyNode = None,
) -> None:
    """Search the design space for the best feasible perf-per-watt."""
    # CLI values first (each flag checked as it is read: explore.flags), then the config; nothing is
    # created on disk before all of it passes
    if out is not None:
        check_out_dir(out, create=False)
    if exhaustive and grid:
        raise InputError(
            "give one of --exhaustive and --grid (--exhaustive is --grid over both sides)",
            where="--exhaustive",
        )
    cfg = load_config(config)
    if liberty_node is not None and liberty is None and cfg.fixed.liberty is None:
        raise InputError(
            "is the node of a Liberty file that does not state its own: give it with --liberty FILE "
            "(or fixed.liberty)",
            where="--liberty-node",
        )
    cfg = with_liberty(cfg, liberty, liberty_node)
    if settle is not None:
        cfg = cfg.model_copy(update={"study": cfg.study.model_copy(update={"settle": settle})})
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
    if the_sampler not in SAMPLERS:
        raise InputError(f"unknown sampler {the_sampler!r} (tpe, nsga2, random)", where="--sampler")
    out_dir = out if out is not None else Path("results") / name
    notes: list[str] = []
    check_out_dir(out_dir, create=False)

    if exhaustive:
        cfg = exhaustive_config(cfg)  # too large: one line, exit 2, before anything runs
    if grid or exhaustive:
        best = _grid(cfg, out_dir)
        notes.append(
            f"{'exhaustive' if exhaustive else 'grid'} mode: every point of the discretised space was "
            "evaluated; no study storage is used"
        )
    else:
        best = _search(
            cfg,
            config,
            storage,
            out_dir,
            name,
            n_trials,
            the_seed,
            the_sampler,
            workers,
            liberty is not None,
            liberty_node,
            notes,
        )
    _summary(best, out_dir, notes)
    if json_out:
        sys.stdout.write(dumps(best) + "\n")


def register(app: typer.Typer) -> None:
    app.command("sweep")(sweep)
