"""``sparsepe assumptions [--json] [--config FILE]``: the assumptions registry (ppa.assumptions),
every labelled constant the verdict rests on with its value, plausible range, tag, the reason for the
range and where the model reads it; with ``--config``, the ranges that config's ``[assumptions]`` sets."""

from __future__ import annotations

import sys
from pathlib import Path
from typing import Annotated

import typer
from rich.console import Console
from rich.table import Table

from explore.config import assumption_ranges, load_config
from explore.safety import dumps, rich_markup
from ppa.assumptions import REGISTRY

#: The JSON row of one assumption, in this order.
FIELDS = ("name", "value", "low", "high", "unit", "tag", "reason", "used_by", "varied")


def assumptions(
    as_json: Annotated[bool, typer.Option("--json", help="Print the rows as one JSON list.")] = False,
    config: Annotated[
        Path | None,
        typer.Option("--config", help="A sweep config: show the ranges its [assumptions] section sets."),
    ] = None,
) -> None:
    """List the model's assumptions with their plausible ranges."""
    rows = assumption_ranges(load_config(config)) if config is not None else dict(REGISTRY)
    out = [{k: getattr(a, k) for k in FIELDS} for a in rows.values()]
    if as_json:
        sys.stdout.write(dumps(out) + "\n")
        return
    t = Table(title="assumptions (ppa.assumptions): value and plausible range", show_lines=False)
    for col in ("name", "value", "low", "high", "unit", "tag", "varied", "reason"):
        t.add_column(col, overflow="fold")
    for r in out:
        t.add_row(
            r["name"],
            f"{r['value']:.4g}",
            f"{r['low']:.4g}",
            f"{r['high']:.4g}",
            r["unit"],
            r["tag"],
            "yes" if r["varied"] else "no",
            rich_markup(r["reason"]),
        )
    Console(width=200).print(t)


def register(app: typer.Typer) -> None:
    app.command("assumptions")(assumptions)
