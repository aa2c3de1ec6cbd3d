"""The review memo of a stored study's chosen design, as data (explore.report.memo.build_memo):
``sparsepe memo`` prints it as Markdown."""

from __future__ import annotations

from typing import Any

import pandas as pd

from explore.report.build import stored_comparison
from explore.report.data import load_study_data
from explore.report.decision import decide, rule_reason
from explore.report.layers import layer_frame
from explore.report.memo import build_memo
from explore.report.owners import findings
from explore.report.sparsity import quality_evidence
from explore.results import Evaluator

__all__ = ["memo_of_study"]


def memo_of_study(storage: str, study: str, config: Any = None) -> dict[str, Any]:
    """The memo's data (explore.report.memo.build_memo) of a stored study's chosen design."""
    data = load_study_data(storage, study, config=config)
    ev = Evaluator(data.evaluator, data.cfg)
    best = data.best
    rec = best.get("best") if best.get("feasible") else best.get("closest")
    det = ev.detail(rec["params"]) if rec is not None else None
    layers = layer_frame(data, det) if det is not None and det.has_layers else pd.DataFrame()
    q = quality_evidence(data, det, rec["metrics"] if rec is not None else None)
    comp, rob = stored_comparison(data, ev)  # as the report's decision has them
    verdict, rule, _ = decide(data, det, q, comp, rob)
    decision = {"verdict": verdict, "rule": rule, "reason": rule_reason(verdict, rule)}
    found = findings(data.cfg, data.records, best, data.constraint_names, det, layers, q, data=data)
    return build_memo(data, ev, det, layers, q, decision, found)
