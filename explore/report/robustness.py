"""The report's section on the robustness of the verdict (explore.robustness): a tornado of each
assumption's range, a histogram of the sparse advantage over the joint samples, the flips."""

from __future__ import annotations

from typing import Any

import numpy as np
import pandas as pd

from explore.report.data import StudyData
from explore.report.document import Section, Table
from explore.report.figures import Figure
from explore.report.format import fmt, pct

#: Assumptions the tornado chart shows (the largest swings; the table lists every one).
TORNADO_BARS = 12
#: Bins of the advantage histogram.
HISTOGRAM_BINS = 20


def _pc(x: float | None) -> str:
    return "n/a (no feasible dense design, or none at all)" if x is None else f"{x * 100:+.1f} %"


def section_robustness(data: StudyData, rob: dict[str, Any] | None) -> Section:
    s = Section(2, "robustness", "Robustness of the verdict: the assumptions' ranges", "verdict")
    if rob is None:
        s.paras.append(
            "No robustness figures: the evaluator cannot re-cost designs under other assumption values, "
            "or a side has no feasible design. SHIP needs them."
        )
        return s
    conf = rob["min_confidence"]
    met = "met" if rob["p_advantage_ge_margin"] >= conf else "not met"
    s.verdict = f"{rob['line']}. SHIP needs P >= {fmt(conf)}: {met}."
    s.paras.append(_method_text(rob))
    s.bullets.extend(_infeasible_sample_bullets(rob))
    tornado = _tornado_figure(rob)
    if tornado is not None:
        s.figures.append(tornado)
    histogram = _histogram_figure(rob)
    if histogram is not None:
        s.figures.append(histogram)
    s.tables.append(_tornado_table(rob))
    if rob["flip_points"]:
        s.tables.append(
            Table(
                "Assumptions whose range alone flips the verdict",
                ["assumption", "flips at", "advantage there"],
                [
                    [f["name"], f"{f['op']} {fmt(f['value'])}", _pc(f["advantage"])]
                    for f in rob["flip_points"]
                ],
                name="robustness_flips",
            )
        )
    else:
        s.bullets.append("No assumption's range alone flips the verdict.")
    for p in rob.get("per_objective", [])[1:]:
        s.bullets.append(f"{p['objective']} ({p['direction']}): {p['line']}")
    if rob.get("not_varied"):
        s.bullets.append(
            "Listed with a range but not varied here (see `sparsepe assumptions` for why): "
            + ", ".join(rob["not_varied"])
            + "."
        )
    return s


def _method_text(rob: dict[str, Any]) -> str:
    """How the designs were costed again and what the advantage is."""
    return (
        f"The {rob['designs_per_side'][0]} best feasible sparse and "
        f"{rob['designs_per_side'][1]} best feasible dense "
        f"designs on {rob['objective']} are costed again under each assumption's plausible range (`sparsepe "
        f"assumptions`; the config's [assumptions] may set them), in numpy batches from their own estimates "
        f"(ppa.recost: no synthesis or STA). "
        f"In every sample each side's best design that still meets every limit is "
        f"picked again. Joint samples: {rob['samples']}, {rob['method']}, seed {rob['seed']}. "
        f"Advantage = best sparse / "
        f"best dense - 1 (> 0 favours sparse; -100 % when no sparse design meets the limits)."
    )


def _infeasible_sample_bullets(rob: dict[str, Any]) -> list[str]:
    """The samples that leave no feasible design of either side, or of one side."""
    out: list[str] = []
    if rob.get("samples_without_feasible_design"):
        out.append(
            f"{rob['samples_without_feasible_design']} of {rob['samples']} joint samples leave no design of "
            "either side within the limits: the advantage is undefined there (left out of the interval) and "
            "they count against P(advantage >= margin)."
        )
    if rob.get("samples_without_feasible_sparse") or rob.get("samples_without_feasible_dense"):
        out.append(
            f"{rob['samples_without_feasible_sparse']} samples leave no feasible sparse design but a dense "
            f"one (advantage -100 %), {rob['samples_without_feasible_dense']} a sparse one but no dense one."
        )
    return out


def _tornado_figure(rob: dict[str, Any]) -> Figure | None:
    """Each assumption at the ends of its range, as the change of the advantage (the largest
    :data:`TORNADO_BARS` swings); None without a swing or a nominal advantage."""
    margin = rob["margin"]
    nom = rob.get("advantage_nominal")
    rows = [t for t in rob["tornado"] if t["low_advantage"] != t["high_advantage"]]
    bars = rows[:TORNADO_BARS][::-1]  # the largest swing on top
    if not bars or nom is None:
        return None

    def delta(x: float | None) -> float:  # no feasible design there: drawn down to -100 %
        return (-1.0 if x is None else x) - nom

    df = pd.DataFrame(
        {
            "assumption": [t["name"] for t in bars],
            "at low end": [delta(t["low_advantage"]) for t in bars],
            "at high end": [delta(t["high_advantage"]) for t in bars],
        }
    )
    return Figure(
        "robustness_tornado",
        f"One assumption at each end of its range (0 = the model's {_pc(nom)})",
        "hbar",
        df,
        "assumption",
        ["at low end", "at high end"],
        "change of the sparse advantage (fraction)",
        "",
        overlay=True,
        vline=(margin - nom, f"SHIP margin {pct(margin)}"),
        caption="bars reaching -100 % minus the model's advantage: no design of a side "
        "(or of either) meets the "
        "limits at that end",
    )


def _histogram_figure(rob: dict[str, Any]) -> Figure | None:
    """The sparse advantage over the joint samples; None when no sample has one."""
    margin = rob["margin"]
    adv = np.array([np.nan if a is None else a for a in rob.get("sample_advantages", [])], float)
    finite = adv[np.isfinite(adv)]
    if not len(finite):
        return None
    counts, edges = np.histogram(finite, bins=HISTOGRAM_BINS)
    centre = (edges[:-1] + edges[1:]) / 2
    hist = pd.DataFrame(
        {
            "advantage": [f"{c * 100:+.1f} %" for c in centre],
            "samples": counts,
            "bin_low": edges[:-1],
            "bin_high": edges[1:],
        }
    )
    return Figure(
        "robustness_histogram",
        f"Sparse advantage over {len(finite)} joint samples",
        "bar",
        hist,
        "advantage",
        "samples",
        "sparse advantage (bin centre)",
        "samples",
        caption=f"SHIP margin {pct(margin)}; P(advantage >= margin) = {rob['p_advantage_ge_margin']:.2f}",
    )


def _tornado_table(rob: dict[str, Any]) -> Table:
    t = Table(
        "Each assumption at the ends of its range (the others at the model's values)",
        ["assumption", "value", "low", "advantage at low", "high", "advantage at high"],
        [],
        name="robustness_tornado",
    )
    for r in rob["tornado"]:
        t.rows.append(
            [
                r["name"],
                fmt(r["value"]),
                fmt(r["low"]),
                _pc(r["low_advantage"]),
                fmt(r["high"]),
                _pc(r["high_advantage"]),
            ]
        )
    return t
