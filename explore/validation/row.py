"""One row of ``sparsepe validate``: a model quantity against one published reference.

``held_out``: the reference was not used to fit the quantity (a fitted value never counts as its
own check: fit anchors are rows with ``held_out`` false whose ``fit_sources`` name what they were
fitted to). ``within``: the model lies within ``TOLERANCE`` (1.5x) of the reference; for a
reference given as a range (``low``..``high``, ``reference`` = their geometric mean) the model may
lie anywhere from low / 1.5 to high x 1.5. ``reason``: why a miss misses (every miss has one), or
what a row that is not a check stands for.
"""

from __future__ import annotations

import math
from dataclasses import dataclass, field

#: the agreement a held-out row must reach (within 1.5x)
TOLERANCE = 1.5


@dataclass
class Row:
    group: str  # mac, sram, dram, phy, timing, voltage, power, silicon
    quantity: str
    node_nm: int | None
    model: float | None
    reference: float | None
    unit: str
    source: str
    held_out: bool
    reason: str = ""
    fit_sources: list[str] = field(default_factory=list)
    low: float | None = None  # a reference range (the reference is its geometric mean)
    high: float | None = None
    bound: str = ""  # one-sided: "at_least" (model >= reference) or "at_most_1.5x" (model <= 1.5 x reference)

    @property
    def ratio(self) -> float | None:
        if self.model is None or not self.reference:
            return None
        return self.model / self.reference

    @property
    def within(self) -> bool:
        if self.model is None or self.reference is None:
            return False
        if self.bound == "at_least":
            return self.model >= self.reference * (1 - 1e-9)
        if self.bound == "at_most_1.5x":
            return self.model <= self.reference * TOLERANCE
        if self.low is not None and self.high is not None:
            return self.low / TOLERANCE <= self.model <= self.high * TOLERANCE
        r = self.ratio
        return r is not None and 1 / TOLERANCE <= r <= TOLERANCE

    def to_json(self) -> dict:
        return {
            "group": self.group,
            "quantity": self.quantity,
            "node_nm": self.node_nm,
            "model": _num(self.model),
            "reference": _num(self.reference),
            "ratio": _num(self.ratio),
            "unit": self.unit,
            "source": self.source,
            "held_out": self.held_out,
            "within": self.within,
            "reason": self.reason,
            "fit_sources": list(self.fit_sources),
            "reference_range": None if self.low is None else [self.low, self.high],
        }


def _num(x: float | None) -> float | None:
    return None if x is None or not math.isfinite(x) else float(x)


def ranged(low: float, high: float) -> dict:
    """Keyword arguments of a Row whose reference is the range low..high."""
    return {"reference": math.sqrt(low * high), "low": low, "high": high}


def fit_row(
    group: str,
    quantity: str,
    node_nm: int | None,
    model: float | None,
    reference: float,
    unit: str,
    source: str,
    fit_sources: list[str],
) -> Row:
    """A fit anchor: the model against the figure it was fitted to (not a check)."""
    return Row(
        group,
        quantity,
        node_nm,
        model,
        reference,
        unit,
        source,
        held_out=False,
        reason="fit anchor, not a check: fitted to " + "; ".join(fit_sources),
        fit_sources=fit_sources,
    )


def summary(rows: list[Row]) -> dict:
    """Held-out rows within tolerance, and the misses (each with its reason)."""
    held = [r for r in rows if r.held_out]
    ok = [r for r in held if r.within]
    return {
        "held_out": len(held),
        "held_out_within": len(ok),
        "tolerance": TOLERANCE,
        "share": len(ok) / len(held) if held else None,
        "rows": len(rows),
        "misses": [r for r in held if not r.within],
        "misses_without_reason": [r for r in held if not r.within and not r.reason],
    }
