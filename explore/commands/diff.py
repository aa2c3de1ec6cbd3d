"""``sparsepe diff A B [--threshold 5%] [--json]``: compare two runs (explore.diff): every metric
that moved beyond the threshold, the first diverging layer, the mechanism, the config and tag
differences."""

from __future__ import annotations

import sys
from typing import Annotated

import typer

from explore.diff import Run, diff_runs, is_file_run, load_run, parse_threshold, render_text
from explore.safety import dumps


def _run(spec: str, label: str) -> Run:
    """Run ``label`` (A or B): a JSON file, or a stored study."""
    if is_file_run(spec):
        return load_run(spec, label)
    from explore.diff_study import (
        load_study_run,
    )  # reason: Optuna and the study reader load only for a stored study

    return load_study_run(spec, label)


def diff(
    a: Annotated[
        str, typer.Argument(help="run A: STORAGE#STUDY, a best.json, or a 'sparsepe simulate --json' file")
    ],
    b: Annotated[str, typer.Argument(help="run B: the same kinds as A")],
    threshold: Annotated[
        str, typer.Option("--threshold", help="relative move that counts, e.g. 5% or 0.05")
    ] = "5%",
    as_json: Annotated[
        bool, typer.Option("--json", help="print one JSON object (first_divergence, changes, config_delta)")
    ] = False,
) -> None:
    """Compare two runs: what moved, where it first diverged, and why."""
    thr = parse_threshold(threshold)
    res = diff_runs(_run(a, "A"), _run(b, "B"), thr)
    if as_json:
        sys.stdout.write(dumps(res) + "\n")
    else:
        sys.stdout.write(render_text(res))


def register(app: typer.Typer) -> None:
    app.command("diff")(diff)
