"""Figures of the sparsepe reports: one neutral description per plot, drawn twice.

A :class:`Figure` holds the data behind a plot as a pandas DataFrame (written as CSV beside the
report) and how to draw it. :func:`to_plotly_div` draws it with plotly for ``report.html``
(``to_html(full_html=False, include_plotlyjs=False)``; plotly.js is inlined once by the page) and
:func:`to_png` with matplotlib (its object-oriented API on the Agg canvas: no pyplot state, no
global backend) for ``report.md``. Both read the same DataFrame, so the
HTML plot, the PNG and the CSV show the same numbers.
"""

from __future__ import annotations

import io
import math
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import numpy as np
import pandas as pd
import plotly.graph_objects as go
from matplotlib.backends.backend_agg import FigureCanvasAgg
from matplotlib.figure import Figure as MplFigure
from matplotlib.ticker import FuncFormatter, LogLocator, NullFormatter

from hw.host import write_file

#: Colours for categorical series (colour-blind safe, Okabe & Ito 2008), feasible first.
PALETTE = ("#0072B2", "#D55E00", "#009E73", "#CC79A7", "#E69F00", "#56B4E9", "#F0E442", "#000000")
#: Colour of feasible designs in the Pareto plots; failed-limit groups take the rest of PALETTE.
FEASIBLE_LABEL = "feasible"


@dataclass
class Line:
    """A reference line drawn over a plot (a roof, a bound, a limit)."""

    name: str
    x: list[float]
    y: list[float]
    dash: str = "dash"


@dataclass
class Figure:
    """One plot.

    kind: ``scatter`` (x, y numeric; ``color`` groups points), ``bar`` (x categories; ``y`` one
    column or several stacked columns), ``hbar`` (horizontal bar: y categories, x values).
    ``overlay``: several bar columns drawn each from 0 over one another instead of stacked (a tornado).
    ``hline`` / ``vline``: (value, label) of a horizontal / vertical reference line; ``lines``: extra
    reference lines."""

    name: str
    title: str
    kind: str
    data: pd.DataFrame
    x: str
    y: str | list[str]
    xlabel: str = ""
    ylabel: str = ""
    color: str | None = None
    hover: str | None = None
    log_x: bool = False
    log_y: bool = False
    hline: tuple[float, str] | None = None
    vline: tuple[float, str] | None = None
    overlay: bool = False
    lines: list[Line] = field(default_factory=list)
    caption: str = ""

    @property
    def ys(self) -> list[str]:
        return [self.y] if isinstance(self.y, str) else list(self.y)

    def csv_name(self) -> str:
        return f"{self.name}.csv"

    def png_name(self) -> str:
        return f"{self.name}.png"


#: Reference lines (roofs, bounds): one colour and dash each, so two roofs never look alike.
LINE_COLOURS = ("#333333", "#B8860B", "#6A3D9A", "#1B7837")
_MPL_DASH = {"solid": "-", "dash": "--", "dot": ":", "dashdot": "-."}


def _groups(fig: Figure) -> list[tuple[str, pd.DataFrame]]:
    if fig.color is None:
        return [("", fig.data)]
    order = list(dict.fromkeys(fig.data[fig.color].astype(str)))
    if FEASIBLE_LABEL in order:  # feasible designs first, in the first colour
        order.remove(FEASIBLE_LABEL)
        order.insert(0, FEASIBLE_LABEL)
    return [(g, fig.data[fig.data[fig.color].astype(str) == g]) for g in order]


def _finite(values) -> list[float | None]:
    out: list[float | None] = []
    for v in values:
        try:
            f = float(v)
        except (TypeError, ValueError):
            out.append(None)
            continue
        out.append(f if math.isfinite(f) else None)
    return out


# ---- plotly (HTML) --------------------------------------------------------------------------------


def to_plotly(fig: Figure) -> go.Figure:
    g = go.Figure()
    if fig.kind == "scatter":
        for i, (name, df) in enumerate(_groups(fig)):
            g.add_trace(
                go.Scatter(
                    x=_finite(df[fig.x]),
                    y=_finite(df[fig.ys[0]]),
                    mode="markers",
                    name=name or fig.ys[0],
                    marker={"color": PALETTE[i % len(PALETTE)], "size": 7, "opacity": 0.8},
                    text=list(df[fig.hover].astype(str)) if fig.hover else None,
                    hovertemplate=("%{text}<br>" if fig.hover else "")
                    + f"{fig.xlabel or fig.x}=%{{x:.4g}}<br>"
                    f"{fig.ylabel or fig.ys[0]}=%{{y:.4g}}<extra>{name}</extra>",
                )
            )
    elif fig.kind in ("bar", "hbar"):
        cats = list(fig.data[fig.x].astype(str))
        for i, col in enumerate(fig.ys):
            vals = _finite(fig.data[col])
            kw = {"y": cats, "x": vals, "orientation": "h"} if fig.kind == "hbar" else {"x": cats, "y": vals}
            g.add_trace(
                go.Bar(
                    name=col,
                    marker={"color": PALETTE[i % len(PALETTE)]},
                    opacity=0.7 if fig.overlay else None,
                    **kw,
                )
            )
        g.update_layout(barmode="overlay" if fig.overlay else "stack")
    else:  # pragma: no cover - programming error
        raise ValueError(f"unknown figure kind {fig.kind!r}")
    for i, ln in enumerate(fig.lines):
        g.add_trace(
            go.Scatter(
                x=ln.x,
                y=ln.y,
                mode="lines",
                name=ln.name,
                line={"dash": ln.dash, "color": LINE_COLOURS[i % len(LINE_COLOURS)]},
            )
        )
    if fig.hline is not None:
        g.add_hline(
            y=fig.hline[0],
            line_dash="dash",
            line_color="#B00020",
            annotation_text=fig.hline[1],
            annotation_position="top left",
        )
    if fig.vline is not None:
        g.add_vline(
            x=fig.vline[0],
            line_dash="dash",
            line_color="#B00020",
            annotation_text=fig.vline[1],
            annotation_position="top right",
        )
    g.update_layout(
        title={"text": fig.title},
        template="plotly_white",
        height=420,
        margin={"l": 60, "r": 20, "t": 50, "b": 60},
        xaxis_title=fig.xlabel or fig.x,
        yaxis_title=fig.ylabel or (fig.ys[0] if len(fig.ys) == 1 else ""),
        legend={"orientation": "h", "y": -0.2},
    )
    # log axes: one labelled tick per decade, written in full (1, 10, 100, 0.01), no bare "2, 5" minors
    if fig.log_x:
        g.update_xaxes(type="log", dtick=1, tickformat="~g")
    if fig.log_y:
        g.update_yaxes(type="log", dtick=1, tickformat="~g")
    return g


def to_plotly_div(fig: Figure) -> str:
    """The figure as an HTML fragment without plotly.js (the page inlines it once)."""
    return to_plotly(fig).to_html(
        full_html=False,
        include_plotlyjs=False,
        div_id=f"fig-{fig.name}",
        config={"displaylogo": False, "responsive": True},
    )


# ---- matplotlib (PNG for the Markdown report) ----------------------------------------------------


def to_png(fig: Figure, path: Path) -> None:
    """The figure as a PNG at ``path`` (for report.md)."""
    f = MplFigure(figsize=(7.0, 4.0), dpi=90)
    FigureCanvasAgg(f)
    ax = f.subplots()
    if fig.kind == "scatter":
        for i, (name, df) in enumerate(_groups(fig)):
            x = np.array([np.nan if v is None else v for v in _finite(df[fig.x])], float)
            y = np.array([np.nan if v is None else v for v in _finite(df[fig.ys[0]])], float)
            ax.scatter(x, y, s=14, alpha=0.8, color=PALETTE[i % len(PALETTE)], label=name or None)
    else:
        cats = [str(c) for c in fig.data[fig.x]]
        pos = np.arange(len(cats))
        base = np.zeros(len(cats))
        for i, col in enumerate(fig.ys):
            vals = np.array([0.0 if v is None else v for v in _finite(fig.data[col])], float)
            kw: dict[str, Any] = {
                "color": PALETTE[i % len(PALETTE)],
                "label": col if len(fig.ys) > 1 else None,
                "alpha": 0.7 if fig.overlay else None,
            }
            if fig.kind == "hbar":
                ax.barh(pos, vals, left=base, **kw)
            else:
                ax.bar(pos, vals, bottom=base, **kw)
            if not fig.overlay:
                base = base + vals
        labels = [c if len(c) <= 18 else c[:17] + "…" for c in cats]
        step = max(1, len(cats) // 40)
        if fig.kind == "hbar":
            ax.set_yticks(pos[::step], labels[::step], fontsize=7)
        else:
            ax.set_xticks(pos[::step], labels[::step], rotation=60, ha="right", fontsize=7)
    for i, ln in enumerate(fig.lines):
        ax.plot(
            ln.x,
            ln.y,
            linestyle=_MPL_DASH.get(ln.dash, "--"),
            color=LINE_COLOURS[i % len(LINE_COLOURS)],
            linewidth=1.2,
            label=ln.name,
        )
    if fig.hline is not None:
        ax.axhline(fig.hline[0], linestyle="--", color="#B00020", linewidth=1, label=fig.hline[1])
    if fig.vline is not None:
        ax.axvline(fig.vline[0], linestyle="--", color="#B00020", linewidth=1, label=fig.vline[1])
    for on, axis in ((fig.log_x, ax.xaxis), (fig.log_y, ax.yaxis)):
        if on:
            (ax.set_xscale if axis is ax.xaxis else ax.set_yscale)("log")
            axis.set_major_locator(LogLocator(base=10))
            axis.set_major_formatter(FuncFormatter(lambda v, _: f"{v:g}"))
            axis.set_minor_formatter(NullFormatter())
    ax.set_title(fig.title, fontsize=10)
    ax.set_xlabel(fig.xlabel or fig.x, fontsize=8)
    ax.set_ylabel(fig.ylabel or (fig.ys[0] if len(fig.ys) == 1 else ""), fontsize=8)
    ax.tick_params(labelsize=7)
    handles, _ = ax.get_legend_handles_labels()
    if handles:
        ax.legend(fontsize=7, loc="best")
    ax.grid(alpha=0.3)
    f.tight_layout()
    buf = io.BytesIO()
    f.savefig(buf, format="png", metadata={"Software": None})
    write_file(path, buf.getvalue())


def write_csv(fig: Figure, path: Path) -> None:
    write_file(path, fig.data.to_csv(index=False, lineterminator="\n"))


def jsonable(v: Any) -> Any:
    """numpy scalars -> Python numbers (for JSON and the templates)."""
    return v.item() if isinstance(v, np.generic) else v
