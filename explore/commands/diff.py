"""``sparsepe diff A B [--threshold 5%] [--json]``: compare two runs (explore.diff): every metric
that moved beyond the threshold, the first diverging layer, the mechanism, the config and tag
differences."""

from __future__ import annotations

import json
import sys
from typing import Annotated

import typer

from explore.diff import diff_runs, load_run, parse_threshold, render_text


def diff(
    a: Annotated[str, typer.Argument(help="run A: STORAGE#STUDY, a best.json, or a 'sparsepe simulate --json' file")],
    b: Annotated[str, typer.Argument(help="run B: the same kinds as A")],
    threshold: Annotated[str, typer.Option("--threshold", help="relative move that counts, e.g. 5% or 0.05")] = "5%",
    as_json: Annotated[bool, typer.Option("--json", help="print one JSON object (first_divergence, changes, config_delta)")] = False,
) -> None:
    """Compare two runs: what moved, where it first diverged, and why."""
    thr = parse_threshold(threshold)
    res = diff_runs(load_run(a, "A"), load_run(b, "B"), thr)
    if as_json:
        sys.stdout.write(json.dumps(res, default=str) + "\n")
    else:
        sys.stdout.write(render_text(res))


def register(app: typer.Typer) -> None:
    app.command("diff")(diff)
