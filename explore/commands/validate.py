"""``sparsepe validate [--json] [--markdown FILE] [--group G] [--node NM] [--liberty FILE]``: the
model against published figures (explore.validation): fit anchors with their fit sources, held-out
checks, and every miss with its reason."""

from __future__ import annotations

import sys
from typing import Annotated

import typer

from explore.safety import dumps


def validate(
    as_json: Annotated[bool, typer.Option("--json", help="Print the rows as one JSON list.")] = False,
    markdown: Annotated[
        str | None,
        typer.Option(
            "--markdown",
            help="Write the generated tables into FILE between its GENERATED markers (docs/validation.md).",
        ),
    ] = None,
    group: Annotated[
        list[str] | None,
        typer.Option(
            "--group",
            help="Only these groups (repeatable): mac, sram, dram, phy, timing, area, voltage, power, silicon, clock.",
        ),
    ] = None,
    node: Annotated[
        list[int] | None,
        typer.Option(
            "--node", help="Only rows at these nodes (nm, repeatable); node-independent rows are kept."
        ),
    ] = None,
    liberty: Annotated[
        str | None,
        typer.Option(
            "--liberty",
            help="Time the designs with this Liberty (.lib) file (default: osu018 when installed).",
        ),
    ] = None,
    liberty_node: Annotated[
        int | None,
        typer.Option(
            "--liberty-node", help="Process node (nm) of the --liberty file when the file does not state it."
        ),
    ] = None,
) -> None:
    """Check the PPA model against published figures it was not fitted to."""
    # lazy: the CLI loads a command's code only when it runs
    from explore.validation import (
        markdown as render,
        summary,
        validate as build,
        write_markdown,
    )

    rows = build(
        tuple(group) if group else None,
        tuple(node) if node else None,
        liberty=liberty,
        liberty_node_nm=liberty_node,
    )
    if markdown is not None:
        write_markdown(markdown, rows)
    if as_json:
        sys.stdout.write(dumps([r.to_json() for r in rows]) + "\n")
        return
    s = summary(rows)
    if markdown is None:
        sys.stdout.write(render(rows) + "\n")
    else:
        sys.stdout.write(f"wrote {markdown}\n")
    sys.stdout.write(f"held-out within {s['tolerance']:g}x: {s['held_out_within']} of {s['held_out']}\n")


def register(app: typer.Typer) -> None:
    app.command("validate")(validate)
