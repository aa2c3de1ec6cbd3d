"""How the report writes its numbers and designs, a constraint in words, and Markdown cells.

Every number of the report goes through :func:`fmt` (and shares through :func:`pct`), so the
tests look for figures the way the report prints them.
"""

from __future__ import annotations

import math
from typing import Any

import numpy as np

from explore.config import LIMIT_CONSTRAINTS
from explore.metrics import units
from explore.results import PPA_CONSTRAINT, TIMING_CONSTRAINT

#: metric -> limit key (reverse of LIMIT_CONSTRAINTS).
METRIC_LIMIT = {v: k for k, v in LIMIT_CONSTRAINTS.items()}
#: The unit each constraint's metric is printed in.
UNITS = {**units(tuple(LIMIT_CONSTRAINTS.values())), TIMING_CONSTRAINT: "MHz", PPA_CONSTRAINT: ""}


def fmt(v: Any, digits: int = 4) -> str:
    """How every number appears in the report (and how the tests look for it)."""
    if v is None:
        return "n/a"
    if isinstance(v, (bool, np.bool_)):
        return "yes" if v else "no"
    if isinstance(v, (int, np.integer)):
        return f"{int(v):,}"
    if isinstance(v, (float, np.floating)):
        f = float(v)
        if not math.isfinite(f):  # not applicable (a vector layer's array utilisation) or undefined
            return "n/a"
        if 1000 <= abs(f) < 1e15:
            return f"{f:,.0f}"
        return f"{f:.{digits}g}"
    return str(v)


def pct(v: float | None, digits: int = 1) -> str:
    """A share as a percentage ('12.5 %'), 'n/a' for None or a non-finite value."""
    return "n/a" if v is None or not math.isfinite(float(v)) else f"{100 * float(v):.{digits}f} %"


def num(v: Any) -> float | None:
    """A metric as a float, None where it is not a number."""
    try:
        f = float(v)
    except (TypeError, ValueError):
        return None
    return f


def point_label(params: dict[str, Any]) -> str:
    """A design point in one line: 'rows=16, cols=32, ...'."""
    return ", ".join(f"{k}={v}" for k, v in params.items())


def md_cell(v: Any) -> str:
    """A Markdown table cell: pipes and newlines escaped, HTML neutralised (wikis render HTML)."""
    s = str(v).replace("\\", "\\\\").replace("|", "\\|").replace("\n", " ")
    return s.replace("&", "&amp;").replace("<", "&lt;").replace(">", "&gt;")


def md_text(v: Any) -> str:
    """Markdown running text: HTML neutralised."""
    return str(v).replace("&", "&amp;").replace("<", "&lt;").replace(">", "&gt;")


# ---- constraints in words ------------------------------------------------------------------------
# ``data`` below is anything with the study's config as ``cfg`` (explore.report.data.StudyData).


def limit_value(data: Any, cname: str) -> float | None:
    """The configured limit behind constraint ``cname`` (None for timing and ppa feasibility)."""
    if cname in (TIMING_CONSTRAINT, PPA_CONSTRAINT):
        return None
    return data.cfg.limits.active().get(METRIC_LIMIT[cname])


def constraint_metric(cname: str, m: dict[str, Any]) -> float | None:
    """The metric constraint ``cname`` tests, from the design's metrics ``m``."""
    if cname == TIMING_CONSTRAINT:
        return num(m.get("clock_mhz"))
    if cname == PPA_CONSTRAINT:
        return num(m.get("ppa_infeasible"))
    return num(m.get(cname))


def describe_constraint(data: Any, cname: str, value: float, m: dict[str, Any]) -> str:
    """A constraint value in words: '12.0 % over the 85 C limit (T_j 89.4 C)'."""
    metric = constraint_metric(cname, m)
    if cname == TIMING_CONSTRAINT:
        return (
            f"clock {fmt(m.get('clock_mhz'))} MHz vs fmax {fmt(m.get('fmax_mhz'))} MHz "
            f"({pct(abs(value))} {'over' if value > 0 else 'under'})"
        )
    if cname == PPA_CONSTRAINT:
        return (
            "ppa.model: the design cannot operate (thermal runaway, power density above the cooling limit "
            "or DRAM traffic above its bandwidth)"
            if value > 0
            else "ppa.model: the design can operate"
        )
    lim = limit_value(data, cname)
    side = "over" if value > 0 else "under"
    unit = UNITS.get(cname, "")
    return f"{cname} {fmt(metric)} {unit} vs limit {fmt(lim)} {unit}: {pct(abs(value))} {side}".replace(
        "  ", " "
    )
