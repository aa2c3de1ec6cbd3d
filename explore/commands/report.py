"""``sparsepe report --storage URL --study NAME [--out DIR]``: write the PPA tradeoff and sparsity
deployment reports of a stored study (report.html, report.md with PNGs, the CSV data behind every
plot, report.json with the key figures). ``sparsepe sweep`` calls the same writer at its end."""

from __future__ import annotations

import json
import sys
from pathlib import Path
from typing import Annotated

import typer
from rich.console import Console

from explore.flags import study_name
from explore.safety import check_out_dir, dumps
from explore.storage import check_storage_file, resolve_storage


def report(
    storage: Annotated[
        str, typer.Option("--storage", help="journal file path, sqlite:///..., or postgresql://...")
    ],
    study: Annotated[str, typer.Option("--study", help="study name", callback=study_name("--study"))],
    out: Annotated[
        Path | None, typer.Option("--out", help="output directory (default results/<study>)")
    ] = None,
    config: Annotated[
        Path | None,
        typer.Option("--config", help="sweep config TOML, only for a study that does not hold its config"),
    ] = None,
    json_out: Annotated[
        bool, typer.Option("--json", help="print the key figures (report.json) to stdout")
    ] = False,
) -> None:
    """Write report.html / report.md (+ PNG and CSV files) for a stored study."""
    if out is not None:
        check_out_dir(out, create=False)
    out_dir = check_out_dir(out if out is not None else Path("results") / study, create=False)
    check_storage_file(resolve_storage(storage, Path(".")), create=False)
    from explore.report.build import (
        write_report,
    )  # reason: the report stack loads once the flags and the storage have passed

    path = write_report(storage, study, out_dir, progress=sys.stderr.isatty(), config=config)
    if json_out:
        sys.stdout.write(dumps(json.loads((out_dir / "report.json").read_text())) + "\n")
    Console(stderr=True).print(f"report: {path}, {out_dir / 'report.md'}", markup=False, highlight=False)


def register(app: typer.Typer) -> None:
    app.command("report")(report)
