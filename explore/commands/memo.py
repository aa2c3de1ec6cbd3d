"""``sparsepe memo --storage URL --study NAME``: the review memo of a stored study alone, as
Markdown on stdout (the same memo as report.md's section; explore.report.memo)."""

from __future__ import annotations

import sys
from pathlib import Path
from typing import Annotated, Any, Optional

import pandas as pd
import typer

from explore.report.build import stored_comparison
from explore.report.data import load_study_data
from explore.report.decision import decide, rule_reason
from explore.report.layers import layer_frame
from explore.report.memo import build_memo, memo_markdown
from explore.report.owners import findings
from explore.report.sparsity import quality_evidence
from explore.results import Evaluator


def memo_of_study(storage: str, study: str, config: Any = None) -> dict[str, Any]:
    """The memo's data (explore.report.memo.build_memo) of a stored study's chosen design."""
    data = load_study_data(storage, study, config=config)
    ev = Evaluator(data.evaluator, data.cfg)
    best = data.best
    rec = best.get("best") if best.get("feasible") else best.get("closest")
    det = ev.detail(rec["params"]) if rec is not None else None
    layers = layer_frame(data, det) if det is not None and det.has_layers else pd.DataFrame()
    q = quality_evidence(data, det, rec["metrics"] if rec is not None else None)
    comp = stored_comparison(data, ev)
    verdict, rule, _ = decide(data, det, q, comp)
    decision = {"verdict": verdict, "rule": rule, "reason": rule_reason(verdict, rule)}
    found = findings(data.cfg, data.records, best, data.constraint_names, det, layers, q, data=data)
    return build_memo(data, ev, det, layers, q, decision, found)


def memo(
    storage: Annotated[str, typer.Option("--storage", help="journal file path, sqlite:///..., or postgresql://...")],
    study: Annotated[str, typer.Option("--study", help="study name")],
    config: Annotated[Optional[Path], typer.Option(
        "--config", help="sweep config TOML, only for a study that does not hold its config")] = None,
) -> None:
    """Print the review memo (Symptom, Mechanism hypothesis, Proposed action, Signoff) as Markdown."""
    sys.stdout.write(memo_markdown(memo_of_study(storage, study, config), title=f"Review memo: {study}"))


def register(app: typer.Typer) -> None:
    app.command("memo")(memo)
