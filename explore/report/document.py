"""What a report is made of: sections of paragraphs, bullets, tables and figures, as plain data
that the HTML and Markdown templates render (explore.report.render)."""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any

import pandas as pd

from explore.report.figures import Figure


@dataclass
class Table:
    title: str
    columns: list[str]
    rows: list[list[str]]
    name: str | None = None  # CSV file stem when the table is data behind a claim


@dataclass
class Section:
    number: int
    key: str
    title: str
    report: str  # "ppa" or "sparsity"
    paras: list[str] = field(default_factory=list)
    bullets: list[str] = field(default_factory=list)
    tables: list[Table] = field(default_factory=list)
    figures: list[Figure] = field(default_factory=list)
    verdict: str | None = None
    pre: list[tuple[str, str]] = field(default_factory=list)  # (caption, preformatted text)
    data: dict[str, pd.DataFrame] = field(default_factory=dict)  # extra CSV files (stem -> raw data)
    links: list[tuple[str, str]] = field(default_factory=list)  # (label, path relative to the report)
    memo: Any = None  # the review memo's data, on the memo section (explore.report.memo.section_memo)
