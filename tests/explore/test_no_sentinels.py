"""No figure is a sentinel: a quantity that does not exist is shown as what it is.

The robustness interval is over the joint samples where both sides have a feasible design; the
samples where one side has none are counted beside it; JSON carries null and a reason, never a large
number standing in for 'no dense design'. And no output of an example sweep holds a value of 1e11
or more, NaN or inf.
"""

from __future__ import annotations

import json
import math
import re
from pathlib import Path

import numpy as np
import pytest

from explore.robustness import summarise, verdict_line

EXAMPLES = Path(__file__).resolve().parents[2] / "examples"
#: a number as the outputs print it: digits with optional thousands commas, decimals and exponent, not
#: part of a word (a hex digest such as "fc926e60" is no number; a trailing "x" ratio is kept)
NUMBER = re.compile(r"(?<![\w.])[-+]?(?:\d{1,3}(?:,\d{3})+|\d+)(?:\.\d+)?(?:[eE][-+]?\d+)?(?![A-Za-wyz0-9_])")
#: the words a NaN or an infinity prints as (Python, JSON, numpy, pandas)
NON_FINITE = re.compile(r"(?<![A-Za-z_])(?:nan|NaN|NAN|inf|Infinity|-Infinity|INF)(?![A-Za-z_])")
LAYOUT = {"joint": slice(1, None), "grid": {}}


def _ratios(*parts: tuple[float, int]) -> np.ndarray:
    """A nominal ratio then joint samples: ``(ratio, count)`` pairs (inf: no feasible dense design,
    0: no feasible sparse design, NaN: no design of either side)."""
    return np.array([1.2] + [v for v, k in parts for _ in range(k)])


def _scan(text: str, where: str) -> None:
    """Fails on a number of magnitude 1e11 or more, or a NaN/inf word, in ``text``."""
    for m in NUMBER.finditer(text):
        value = float(m.group().replace(",", ""))
        assert abs(value) < 1e11, (
            f"{where}: {m.group()!r} at {m.start()}: {text[max(0, m.start() - 80) : m.end()]!r}"
        )
    bad = NON_FINITE.search(text)
    assert bad is None, f"{where}: {bad.group()!r}: {text[max(0, bad.start() - 80) : bad.end() + 20]!r}"


def test_samples_without_a_dense_design_are_counted_not_folded_into_the_interval():
    r = _ratios((1.10, 150), (1.30, 71), (math.inf, 35))
    s = summarise(r, LAYOUT, {}, 0.05)
    assert s["advantage_samples"] == 221 and s["samples_without_feasible_dense"] == 35
    # the 95th percentile is over the 221 samples with both sides: at most the largest real ratio
    assert s["advantage_p95"] == pytest.approx(0.30) and s["advantage_p05"] == pytest.approx(0.10)
    assert s["advantage_interval_reason"] is None
    json.dumps(s, allow_nan=False)  # raises on NaN or inf
    line = verdict_line({**s, "margin": 0.05})
    assert "5-95 %: +10 ... +30 %" in line
    assert "over the 221 of 256 samples with both sides feasible; no feasible dense design in 35" in line
    _scan(line, "verdict line")


def test_the_interval_is_null_with_a_reason_when_no_sample_has_both_sides():
    s = summarise(_ratios((math.inf, 20), (0.0, 4), (math.nan, 8)), LAYOUT, {}, 0.05)
    assert s["advantage_p05"] is None and s["advantage_median"] is None and s["advantage_p95"] is None
    assert s["advantage_samples"] == 0 and "no joint sample" in s["advantage_interval_reason"]
    text = json.dumps(s, allow_nan=False)
    _scan(text, "summary JSON")
    line = verdict_line({**s, "margin": 0.05})
    assert "5-95 %: n/a, no joint sample leaves a feasible design on both sides" in line
    assert (
        "no feasible dense design in 20, no feasible sparse design in 4, "
        "no feasible design of either side in 8"
    ) in line


def test_a_sweep_with_every_sample_two_sided_prints_the_interval_alone():
    s = summarise(_ratios((1.10, 100), (1.20, 100), (math.nan, 56)), LAYOUT, {}, 0.05)
    line = verdict_line({**s, "margin": 0.05})
    assert line.startswith("sparse +20.0 % (5-95 %: +10 ... +20 %), P(>= 5 %) = ")


def test_scan_catches_the_sentinel_it_is_for():
    with pytest.raises(AssertionError):
        _scan("sparse +57.1 % (5-95 %: +54 ... +99999999999900 %)", "old line")
    with pytest.raises(AssertionError):
        _scan("1.2e12x faster", "a ratio")
    with pytest.raises(AssertionError):
        _scan('{"advantage_p95": NaN}', "json")
    _scan("inference 1,234.5 Infinite-loop pinf sha256 37d06970fc926e60", "words")  # words, digests


def _scan_outputs(p, out: Path) -> None:
    """Every output of a sweep: the terminal, report.md, best.json, trials.csv, report.html."""
    assert p.returncode == 0, p.stderr[-2000:]
    _scan(p.stdout + p.stderr, "terminal")
    files = [out / n for n in ("report.md", "best.json", "trials.csv", "report.html")]
    for f in files:
        assert f.is_file(), f
        text = f.read_text()
        if (
            f.suffix == ".html"
        ):  # the inlined plotly.js and figure data carry their own numbers: scan the text
            text = re.sub(r"<script\b.*?</script>", "", text, flags=re.S)
        _scan(text, f.name)


@pytest.mark.yosys
def test_default_example_outputs_hold_no_sentinel(tmp_path, run_cli):
    out = tmp_path / "out"
    _scan_outputs(run_cli(["sweep", str(EXAMPLES / "default.toml"), "--out", str(out)], cwd=tmp_path), out)


#: The other examples, each at 40 trials (the robustness sampling, where a side can lose every
#: feasible design, runs in full whatever the trial count; llama.toml printed +99999999999900 % here).
OTHER_EXAMPLES = sorted(p.name for p in EXAMPLES.glob("*.toml") if p.name != "default.toml")


@pytest.mark.slow
@pytest.mark.yosys
@pytest.mark.parametrize("example", OTHER_EXAMPLES)
def test_every_example_outputs_hold_no_sentinel(tmp_path, run_cli, example):
    out = tmp_path / "out"
    p = run_cli(
        ["sweep", str(EXAMPLES / example), "--out", str(out), "--trials", "40"], cwd=tmp_path, timeout=900
    )
    _scan_outputs(p, out)
    rob = json.loads((out / "best.json").read_text()).get("robustness") or {}
    one_sided = sum(
        rob.get(k) or 0
        for k in (
            "samples_without_feasible_dense",
            "samples_without_feasible_sparse",
            "samples_without_feasible_design",
        )
    )
    if one_sided:  # the robustness line counts the samples without a design beside the interval
        line = " ".join((p.stdout + p.stderr).split())
        n = rob["advantage_samples"]
        assert f"over the {n} of {rob['samples']} samples with both sides feasible" in line, line[-1500:]


def test_a_design_without_an_iso_area_twin_is_null_with_what_that_means(tmp_path):
    """A design smaller than every feasible dense design has no iso-area twin: its twin metrics are
    NaN in memory, null in best.json, and the reason says why (not a NaN word the scan would flag)."""
    from explore.results import write_json

    metrics = {"perf_per_watt": 1.5, "iso_area_dense_rows": math.nan, "speedup_vs_iso_area_dense": math.nan}
    path = tmp_path / "best.json"
    write_json(path, {"pareto": [{"metrics": metrics}], "other": math.nan})
    text = path.read_text()
    got = json.loads(text)
    assert got["pareto"][0]["metrics"]["iso_area_dense_rows"] is None
    reasons = got["non_finite"]
    assert reasons["pareto[0].metrics.iso_area_dense_rows"] == (
        "null: no feasible dense design of at most this design's area (no iso-area twin)"
    )
    assert reasons["other"].startswith("nan")  # a NaN nothing explains stays named, and is caught
    with pytest.raises(AssertionError):
        _scan(text, "best.json")
    _scan(text.replace(reasons["other"], "x"), "best.json")


def test_the_terminal_summary_prints_a_missing_twin_as_what_it_is():
    from explore.commands.sweep import _summary_value

    text = _summary_value("speedup_vs_iso_area_dense", math.nan)
    assert text == "n/a (no feasible dense design of at most this design's area (no iso-area twin))"
    _scan(text, "summary")
    assert _summary_value("speedup_vs_iso_area_dense", None).startswith("n/a (no feasible")
    assert _summary_value("power_w", math.inf) == "n/a" and _summary_value("power_w", 1.23456) == "1.235"
