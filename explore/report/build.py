"""``sparsepe report``, built and written: the PPA tradeoff report and the sparsity deployment report of a study.

:func:`write_report` reads a stored study back (journal file, SQLite or PostgreSQL), re-evaluates
its best design (or, with none feasible, the design that came closest) with the evaluator the
study used, and writes into ``out_dir``:

* ``report.html``: one self-contained file (plotly.js inlined once, no external request),
  rendered from ``explore/report/templates/report.html.j2`` with Jinja2 autoescape on;
* ``report.md``: the same sections for a pull request or a wiki, with each plot as a PNG beside it
  (matplotlib Agg) under ``report_files/``;
* ``report_files/*.csv``: the data behind every plot and every data table;
* ``report.json``: the key figures (best design, its metrics as re-evaluated, the verdict), which
  the tests compare with the evaluator's output.

The verdict (:mod:`explore.report.verdict`) opens; the PPA tradeoff sections follow
(:mod:`explore.report.sections`, :mod:`explore.report.best_design`, the per-layer view
:mod:`explore.report.layers`), then the sparsity deployment sections (:mod:`explore.report.sparsity`,
:mod:`explore.report.bottleneck`,
:mod:`explore.report.decision`, :mod:`explore.report.repro`, with a precision axis
:mod:`explore.report.precision`, and for LLM requests :mod:`explore.report.serving`); the review
packet closes it: owners and closure artifacts (:mod:`explore.report.owners`) and the review memo
(:mod:`explore.report.memo`). Sections are plain data (:mod:`explore.report.document`) rendered
by one Jinja2 template per format.
"""

from __future__ import annotations

import csv
import io
import shlex
import time
from pathlib import Path
from typing import Any

import pandas as pd
import plotly.offline
from jinja2 import Environment, PackageLoader, StrictUndefined, select_autoescape
from rich.console import Console
from rich.progress import BarColumn, Progress, TextColumn, TimeElapsedColumn

from explore.compare import build_comparison, is_sparse, needs_dense_substudy, stored_substudy
from explore.config import config_fingerprint
from explore.report.best_design import section_best
from explore.report.bottleneck import section_bottleneck
from explore.report.data import StudyData, load_study_data
from explore.report.decision import section_decision
from explore.report.figures import jsonable, to_plotly_div, to_png, write_csv
from explore.report.format import md_cell, md_text
from explore.report.layers import layer_frame, section_layers
from explore.report.memo import section_memo
from explore.report.owners import section_owners
from explore.report.precision import section_precision
from explore.report.repro import section_repro
from explore.report.robustness import section_robustness
from explore.report.sections import section_pareto, section_sensitivity, section_summary
from explore.report.serving import section_llm_serving
from explore.report.sparsity import (
    fallback_numbers,
    metadata_numbers,
    quality_evidence,
    section_fallback,
    section_matrix,
    section_metadata,
    section_quality,
)
from explore.report.verdict import section_verdict
from explore.results import Evaluator
from explore.robustness import assumption_shares, robustness
from explore.safety import check_out_dir, dumps, refuse_symlinks, write_text
from explore.settle import SETTLE_ATTR
from explore.space import parse_sparsity
from explore.trials import SUBSTUDY_ATTR, VERDICT_ATTR
from hw.host import make_dir, write_file

REPORT_FILES = "report_files"


def _progress(enabled: bool) -> Progress:
    return Progress(
        TextColumn("report [bold]{task.description}[/]"),
        BarColumn(),
        TimeElapsedColumn(),
        console=Console(stderr=True),
        disable=not enabled,
        transient=False,
    )


def build_report(
    storage_url: str,
    study_name: str,
    out_dir: Path,
    *,
    config: Any = None,
    evaluator: str | None = None,
    progress: bool = False,
) -> dict[str, Any]:
    """Everything the report shows, as data: {'sections': [...], 'key': {...}, ...}."""
    steps = ["study", "re-evaluate", "sensitivity", "quality", "sections"]
    with _progress(progress) as bar:
        task = bar.add_task("study", total=len(steps))
        data = load_study_data(storage_url, study_name, config=config, evaluator=evaluator)
        bar.update(task, advance=1, description="re-evaluate")
        ev = Evaluator(data.evaluator, data.cfg)
        best = data.best
        if best.get("feasible"):
            rec = best["best"]
            subject = f"the best feasible design (trial {rec['number']})"
        elif best.get("closest"):
            rec = best["closest"]
            subject = f"the design closest to feasible (trial {rec['number']}; no design is feasible)"
        else:
            rec, subject = None, ""
        det = ev.detail(rec["params"]) if rec is not None else None
        layers = layer_frame(data, det) if det is not None and det.has_layers else pd.DataFrame()
        bar.update(task, advance=1, description="sensitivity")
        s5, oat = section_sensitivity(data, ev, dict(rec["params"]) if rec else None, subject)
        bar.update(task, advance=1, description="quality")
        q = quality_evidence(data, det, rec["metrics"] if rec is not None else None)
        bar.update(task, advance=1, description="sections")
        cmd = "sparsepe report " + " ".join(
            shlex.quote(a)
            for a in ("--storage", data.storage_url, "--study", study_name, "--out", str(out_dir))
        )
        comp, rob = stored_comparison(data, ev)
        if det is not None and comp.get(
            "chosen_twin_metrics"
        ):  # the chosen design's twins, as best.json has them
            det.metrics.update({k: v for k, v in comp["chosen_twin_metrics"].items() if v is not None})
        s11, decision = section_decision(data, det, q, comp, rob)
        sections = [
            section_verdict(data, comp, decision, det.metrics if det is not None else None, rob),
            section_robustness(data, rob),
            section_summary(data),
            section_pareto(data),
            section_best(
                data,
                det,
                subject,
                assumption_shares(rec["params"], data.cfg, ev) if rec is not None else None,
            ),
            section_layers(data, det, layers),
            s5,
            section_matrix(data, det, layers),
            section_fallback(data, det, layers),
            section_metadata(data, det),
            section_quality(data, det, q),
            section_bottleneck(data, det, layers),
            s11,
            section_repro(data, out_dir, cmd),
        ]
        llm = section_llm_serving(
            data, ev, det
        )  # LLM requests served: TTFT / TPOT, sparse vs dense, buffering
        if llm is not None:
            sections.insert(sections.index(s11), llm)
        policy = None
        if getattr(data.cfg.space, "precision", None) is not None:  # a precision axis: the policy table
            sp, policy = section_precision(data)
            sections.insert(len(sections) - 1, sp)
        s_own, found, owners = section_owners(data, det, layers, q)
        memo = section_memo(data, ev, det, layers, q, decision, found)
        sections += [s_own, memo]  # the review packet closes the report: owners, then the memo
        for i, sec in enumerate(sections, start=1):  # the verdict opens; the rest follow in order
            sec.number = i
        bar.update(task, advance=1, description="done")
    key: dict[str, Any] = {
        "study": study_name,
        "feasible": bool(best.get("feasible")),
        "n_evaluated": best["n_evaluated"],
        "n_feasible": best["n_feasible"],
        "subject": subject,
        "decision": decision,
        "binding_limits": best.get("binding_limits", []),
        "tightest_limit": best.get("tightest_limit"),
        "evaluator": data.evaluator,
        "config_fingerprint": data.fingerprint,
        "comparison": comp,
        "robustness": rob,
        "owners": owners,
        "memo": memo.memo,
    }
    if det is not None:
        key.update(trial=rec["number"], params=det.point, metrics=det.metrics, stored_metrics=rec["metrics"])
        if det.has_layers:
            key["fallback"] = fallback_numbers(det)
            if parse_sparsity(det.point["sparsity"])[2]:
                key["metadata"] = metadata_numbers(det)
    if policy is not None:
        key["precision_policy"] = policy
    if q is not None:
        key["quality"] = {
            k: v
            for k, v in q.items()
            if isinstance(v, (int, float, str, bool))
            or v is None
            or (isinstance(v, list) and all(isinstance(x, (int, float)) for x in v))
        }
    return {
        "sections": sections,
        "key": key,
        "data": data,
        "command": cmd,
        "title": f"sparsepe report: {study_name}",
    }


def stored_comparison(data: StudyData, ev: Evaluator) -> tuple[dict[str, Any], dict[str, Any] | None]:
    """explore.compare's comparison and explore.robustness's figures of the study, as best.json has
    them: stored by the sweep's export (explore.trials.VERDICT_ATTR) when it covered these records and
    this config; else computed here (the stored dense study reused, trials counted as distinct designs)."""
    stored = data.user_attrs.get(VERDICT_ATTR)
    if (
        isinstance(stored, dict)
        and stored.get("n_records") == len(data.records)
        and stored.get("fingerprint") == config_fingerprint(data.cfg)
    ):
        return stored["comparison"], stored.get("robustness")
    sides = {
        "sparse": sum(1 for r in data.records if is_sparse(r["params"])),
        "dense": sum(1 for r in data.records if not is_sparse(r["params"])),
    }
    sub = (
        stored_substudy(data.user_attrs.get(SUBSTUDY_ATTR), data.cfg, sides["sparse"], same_seed=False)
        if needs_dense_substudy(data.cfg)
        else None
    )
    chosen = data.best.get("best") if data.best.get("feasible") else None
    sampler = str(data.sweep.get("sampler", data.cfg.study.sampler))
    comp, sub = build_comparison(
        data.records,
        data.cfg,
        chosen,
        ev,
        sides,
        sampler,
        substudy=sub,
        settled=data.user_attrs.get(SETTLE_ATTR),
    )
    return comp, robustness(data.records + list(sub or []), data.cfg, ev)


def _env() -> Environment:
    return Environment(
        loader=PackageLoader("explore.report", "templates"),
        autoescape=select_autoescape(enabled_extensions=("html", "html.j2"), default_for_string=True),
        undefined=StrictUndefined,
        trim_blocks=True,
        lstrip_blocks=True,
        keep_trailing_newline=True,
    )


def render(report: dict[str, Any], out_dir: Path) -> Path:
    """Write report.html, report.md, report_files/ (PNGs, CSVs) and report.json; return report.html."""
    check_out_dir(out_dir, flag="report directory")
    refuse_symlinks(out_dir, ("report.html", "report.md", "report.json", REPORT_FILES))
    files = make_dir(out_dir / REPORT_FILES)
    figs_html: dict[str, str] = {}
    for sec in report["sections"]:
        for fig in sec.figures:
            write_csv(fig, files / fig.csv_name())
            to_png(fig, files / fig.png_name())
            figs_html[fig.name] = to_plotly_div(fig)
        for stem, df in sec.data.items():
            write_file(files / f"{stem}.csv", df.to_csv(index=False, lineterminator="\n"))
        for t in sec.tables:
            if t.name:
                buf = io.StringIO(newline="")
                w = csv.writer(buf, lineterminator="\n")
                w.writerow(t.columns)
                w.writerows(t.rows)
                write_file(files / f"{t.name}.csv", buf.getvalue())
    env = _env()
    ctx = {
        "title": report["title"],
        "sections": report["sections"],
        "files": REPORT_FILES,
        "generated": time.strftime("%Y-%m-%d %H:%M:%S %Z"),
        "command": report["command"],
    }
    html = env.get_template("report.html.j2").render(
        **ctx, plotlyjs=plotly.offline.get_plotlyjs(), figs=figs_html
    )
    write_text(out_dir / "report.html", html)
    env.filters["mdcell"] = md_cell
    env.filters["mdtext"] = md_text
    md = env.get_template("report.md.j2").render(**ctx)
    write_text(out_dir / "report.md", md)
    write_text(out_dir / "report.json", dumps(report["key"], indent=2, default=jsonable) + "\n")
    return out_dir / "report.html"


def write_report(
    storage_url: str,
    study_name: str,
    out_dir: Path,
    *,
    progress: bool = True,
    config: Any = None,
    evaluator: str | None = None,
) -> Path:
    """Write the reports of ``study_name`` stored at ``storage_url`` into ``out_dir``; return the
    path of report.html. ``config`` (a path or SweepConfig) is needed only for a study that does
    not hold its config; ``evaluator`` overrides the evaluator module the study names."""
    out_dir = check_out_dir(out_dir, flag="report directory", create=False)
    report = build_report(
        storage_url, study_name, out_dir, config=config, evaluator=evaluator, progress=progress
    )
    return render(report, out_dir)
