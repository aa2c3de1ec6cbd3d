"""``sparsepe memo --storage URL --study NAME``: the review memo of a stored study alone, as
Markdown on stdout (the same memo as report.md's section; explore.report.memo)."""

from __future__ import annotations

import sys
from pathlib import Path
from typing import Annotated

import typer

from explore.storage import check_storage_file, resolve_storage


def memo(
    storage: Annotated[
        str, typer.Option("--storage", help="journal file path, sqlite:///..., or postgresql://...")
    ],
    study: Annotated[str, typer.Option("--study", help="study name")],
    config: Annotated[
        Path | None,
        typer.Option("--config", help="sweep config TOML, only for a study that does not hold its config"),
    ] = None,
) -> None:
    """Print the review memo (Symptom, Mechanism hypothesis, Proposed action, Signoff) as Markdown."""
    check_storage_file(resolve_storage(storage, Path(".")), create=False)
    from explore.report.memo import (
        memo_markdown,
    )  # reason: the report stack loads once the storage has passed
    from explore.report.memo_study import (
        memo_of_study,
    )  # reason: the report stack loads once the storage has passed

    sys.stdout.write(memo_markdown(memo_of_study(storage, study, config), title=f"Review memo: {study}"))


def register(app: typer.Typer) -> None:
    app.command("memo")(memo)
