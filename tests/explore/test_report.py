"""sparsepe reports: traceability to the evaluator, escaping, infeasible studies, the CLI and a
headless-Chromium check of report.html.

The studies are small real sweeps (explore.study with the product evaluator) on a tiny config,
built once per module in a temporary directory; each test writes its report into its own
tmp_path.
"""

from __future__ import annotations

import csv
import json
import math
import re
import shutil
import subprocess
from pathlib import Path

import pytest

from explore.config import load_config
from explore.storage import resolve_storage

TINY = """\
[study]
name = "tiny"
seed = 1
trials = 24

[space]
rows = [8, 16, 32]
cols = [8, 16, 32]
sram_kb = [64, 1024]
clock_mhz = {{ min = 400, max = 1600, step = 400 }}
node_nm = [7]
sparsity = ["2:4", "dense"]
pipeline = [1]
dataflow = ["ws", "os"]
dram = ["lpddr5", "hbm2"]

[fixed]
ambient_c = 45.0
theta_ja_c_per_w = 2.0
dram_units = {{ lpddr5 = 4, hbm2 = 1 }}

[[workload]]
name = {workload}
weight = 1.0

[limits]
max_stall_fraction = 0.3
max_tj_c = 85.0
max_area_mm2 = {area}
{extra}
"""


def _config(path: Path, *, workload: str = '"bert-base"', area: float = 20.0, extra: str = "") -> Path:
    path.write_text(TINY.format(workload=workload, area=area, extra=extra))
    return path


def _sweep(run_sweep, cfg_path: Path, out: Path, trials: int, study: str = "tiny") -> Path:
    """A product-evaluator sweep into ``out``; the journal file it wrote."""
    run_sweep(cfg_path, out, trials=trials, seed=1, study=study)
    return Path(resolve_storage(None, out).url)


@pytest.fixture(scope="module")
def feasible_study(tmp_path_factory, run_sweep):
    d = tmp_path_factory.mktemp("feasible")
    cfg = _config(d / "tiny.toml")
    return cfg, _sweep(run_sweep, cfg, d / "run", 24)


@pytest.fixture(scope="module")
def feasible_report(feasible_study, tmp_path_factory):
    from explore.report.build import write_report

    cfg, journal = feasible_study
    out = tmp_path_factory.mktemp("report")
    html = write_report(str(journal), "tiny", out, progress=False)
    return out, html


def _csv(path: Path) -> list[dict[str, str]]:
    with open(path, newline="") as f:
        return list(csv.DictReader(f))


def test_key_figures_equal_the_evaluator_for_the_same_design(feasible_study, feasible_report):
    import explore.evaluator as ev
    from explore.report.format import fmt

    cfg_path, _ = feasible_study
    out, html = feasible_report
    key = json.loads((out / "report.json").read_text())
    best = json.loads((cfg_path.parent / "run" / "best.json").read_text())
    assert key["feasible"] and key["trial"] == best["best"]["number"]
    assert key["params"] == best["best"]["params"]
    # an independent evaluation of the same point, from a fresh config object and context
    ref = ev.evaluate(dict(key["params"]), ev.make_context(load_config(cfg_path)))
    for k, v in ref.items():
        assert key["metrics"][k] == v, k  # exact: same models, same inputs
        assert key["stored_metrics"][k] == v, k  # and the study stored the same number
    text = html.read_text()
    md = (out / "report.md").read_text()
    for k in ("perf_per_watt", "effective_tops", "power_w", "area_mm2", "tj_c", "effective_speedup"):
        assert f"<td>{fmt(ref[k])}</td>" in text, k
        assert f"| {fmt(ref[k])} |" in md, k


def test_breakdowns_and_layers_add_up_to_the_evaluator_totals(feasible_study, feasible_report):
    import explore.evaluator as ev

    cfg_path, _ = feasible_study
    out, _ = feasible_report
    key = json.loads((out / "report.json").read_text())
    ref = ev.evaluate(dict(key["params"]), ev.make_context(load_config(cfg_path)))
    files = out / "report_files"
    area = _csv(files / "best_area.csv")
    assert math.isclose(sum(float(r["area_mm2"]) for r in area), ref["area_mm2"], rel_tol=1e-12)
    power = _csv(files / "best_power.csv")
    assert math.isclose(sum(float(r["power_w"]) for r in power), ref["power_w"], rel_tol=1e-12)
    # per-layer sparse and dense runs (sim.perf.simulate / evaluate(force_dense)) re-add to the
    # evaluator's network totals (sim.perf.simulate_grid): the speedup and the stall fraction
    layers = _csv(files / "layers_bert-base.csv")
    sparse_t = sum(int(r["total_cycles"]) for r in layers)
    dense_t = sum(float(r["dense_cycles_per_instance"]) * int(r["count"]) for r in layers)
    stall_t = sum(int(r["stall_cycles"]) * int(r["count"]) for r in layers)
    assert math.isclose(dense_t / sparse_t, ref["effective_speedup"], rel_tol=1e-12)
    assert math.isclose(stall_t / sparse_t, ref["stall_fraction"], rel_tol=1e-12, abs_tol=1e-15)
    # every plot has its data as CSV and its PNG beside report.md
    for png in files.glob("*.png"):
        assert png.with_suffix(".csv").exists()
        assert png.read_bytes()[:8] == b"\x89PNG\r\n\x1a\n"
        assert f"report_files/{png.name}" in (out / "report.md").read_text()


def test_sections_and_self_contained_html(feasible_report):
    out, html = feasible_report
    text = html.read_text()
    for n, title in enumerate(
        (
            "Verdict: sparse vs dense, on equal terms",
            "Robustness of the verdict",
            "Summary",
            "Pareto front",
            "Best design",
            "Per-layer view",
            "Sensitivity",
            "Supported layer matrix",
            "Dense-fallback impact",
            "Metadata overhead",
            "Quality",
            "Bottleneck classification",
            "Decision",
            "Reproducibility",
        ),
        start=1,
    ):
        assert re.search(rf"<h2>{n}\. {title}", text), title
    assert text.count("plotly.js v") <= 2  # the bundle's own banner, inlined once
    assert len(re.findall(r"<script[^>]*\bsrc=", text)) == 0
    assert not re.search(r"<link[^>]+href=\"?https?:", text)
    # no quality evidence in this config: the section says so
    assert "No quality evidence was given" in text
    assert "Recommendation: BOUNDED ROLLOUT (rule R4)" in text
    # the exact command that regenerates it
    assert "sparsepe report --storage" in text and "--study tiny" in text


def test_sensitivity_centre_is_the_best_design(feasible_report):
    out, _ = feasible_report
    key = json.loads((out / "report.json").read_text())
    rows = _csv(out / "report_files" / "sensitivity_oat.csv")
    centres = [r for r in rows if r["is_centre"] == "True"]
    assert centres and all(float(r["perf_per_watt"]) == key["metrics"]["perf_per_watt"] for r in centres)
    assert {r["axis"] for r in rows} == {
        "rows",
        "cols",
        "sram_kb",
        "clock_mhz",
        "sparsity",
        "dataflow",
        "dram",
    }


def test_cli_report_and_bad_input(feasible_study, tmp_path, run_cli):
    _, journal = feasible_study
    out = tmp_path / "cli"
    r = run_cli(["report", "--storage", str(journal), "--study", "tiny", "--out", str(out), "--json"])
    assert r.returncode == 0, r.stderr
    assert json.loads(r.stdout)["study"] == "tiny"
    assert (out / "report.html").exists() and (out / "report.md").exists()
    r = run_cli(
        ["report", "--storage", str(journal), "--study", "nope", "--out", str(tmp_path / "x")], timeout=120
    )
    assert r.returncode == 2
    assert r.stderr.strip().splitlines() == [
        "sparsepe: error: --study: no study named 'nope' in this storage (studies: tiny)"
    ]
    r = run_cli(
        ["report", "--storage", str(tmp_path / "missing.journal"), "--study", "tiny"],
        cwd=tmp_path,
        timeout=120,
    )
    assert r.returncode == 2 and "no such journal file" in r.stderr and "Traceback" not in r.stderr


def test_no_feasible_design_still_renders(tmp_path, run_sweep):
    from explore.report.build import write_report

    cfg = _config(tmp_path / "tight.toml", area=0.001)  # every array is larger than 0.001 mm^2
    journal = _sweep(run_sweep, cfg, tmp_path / "run", 8)
    out = tmp_path / "rep"
    html = write_report(str(journal), "tiny", out, progress=False)
    key = json.loads((out / "report.json").read_text())
    assert key["feasible"] is False and key["n_feasible"] == 0
    assert "area_mm2" in key["binding_limits"]
    assert key["decision"] == {"verdict": "ESCALATE", "rule": "R1", "reason": "no feasible design"}
    text = html.read_text()
    assert "No feasible design among 8 evaluated" in text
    # by how much: the closest design's area against the limit, in the limits table
    limits = _csv(out / "report_files" / "limits.csv")
    area = next(r for r in limits if r["limit"] == "area_mm2")
    assert area["trials failing"] == "8/8" and float(area["best normalised value"]) > 0
    closest = json.loads((tmp_path / "run" / "best.json").read_text())["closest"]
    assert math.isclose(float(area["metric there"]), closest["metrics"]["area_mm2"], rel_tol=1e-3)


HOSTILE_WL = "<script>alert('wl')</script>\"q"
HOSTILE_LAYER = "<img src=x onerror=alert(1)>\"'&"


@pytest.fixture
def hostile_registry(monkeypatch):
    import sim.workloads as w

    def make(**_):
        return w.Workload(
            HOSTILE_WL,
            (
                w.make_layer(HOSTILE_LAYER, "gemm", 64, 256, 256),
                w.make_layer("ok_layer", "gemm", 64, 128, 256),
                w.make_layer("</script><b>x", "act_gemm", 64, 64, 64),
            ),
        )

    monkeypatch.setitem(w._REGISTRY, HOSTILE_WL, make)


def test_hostile_names_are_escaped_and_quality_evidence_is_used(hostile_registry, tmp_path, run_sweep):
    from explore.report.build import write_report

    wl = json.dumps(HOSTILE_WL)  # a TOML basic string
    extra = (
        'max_quality_delta = 0.015\n\n[objectives]\nprimary = "perf_per_watt"\nsecondary = ["latency_ms"]\n'
    )
    cfg = _config(tmp_path / "h.toml", workload=wl, extra=extra)
    study = "<script>alert('study')</script>"
    journal = _sweep(run_sweep, cfg, tmp_path / "run", 6, study=study)
    out = tmp_path / "rep"
    html = write_report(str(journal), study, out, progress=False)
    text = html.read_text()
    md = (out / "report.md").read_text()
    for raw in (HOSTILE_WL, HOSTILE_LAYER, "</script><b>x", study, "<img src=x"):
        assert raw not in text, raw
        assert raw not in md, raw
    assert "&lt;script&gt;alert(&#39;wl&#39;)&lt;/script&gt;&#34;q" in text
    assert "&lt;img src=x onerror=alert(1)&gt;&#34;&#39;&amp;" in text
    assert "&lt;script&gt;" in md
    # only the page's own script blocks: plotly.js and one per figure
    n_figs = text.count('class="plotly-graph-div"')
    assert text.count("<script") == 1 + n_figs
    # quality: the config asks for it, so the report regenerates the evaluator's experiment
    key = json.loads((out / "report.json").read_text())
    q = key["quality"]
    if key["params"]["sparsity"] != "dense":
        assert q["quality_delta"] == key["metrics"]["quality_delta"] == q["stored_quality_delta"]
        # the reference's own metric (accuracy for a classifier family, perplexity for a language model)
        assert q["metric"] in ("accuracy", "perplexity")
        assert f"{q['metric']} against the dense baseline" in text and "95 % interval" in text
        assert "Evidence: PROXY" in text and key["metrics"]["quality_evidence"] == "proxy"
    assert "No quality evidence was given" not in text
    # a latency objective adds the perf-per-watt / latency front
    lat = _csv(out / "report_files" / "pareto_latency.csv")
    assert len(lat) == 6 and "fig-pareto_latency" in text


def _chromium() -> str | None:
    return next(
        (shutil.which(b) for b in ("chromium", "chromium-browser", "google-chrome") if shutil.which(b)), None
    )


@pytest.mark.chromium
def test_html_renders_in_headless_chromium(feasible_report, tmp_path):
    out, html = feasible_report
    n_figs = html.read_text().count('class="plotly-graph-div"')
    assert n_figs >= 8
    r = subprocess.run(
        [
            _chromium(),
            "--headless",
            "--no-sandbox",
            "--disable-gpu",
            "--disable-background-networking",
            "--disable-component-update",
            "--disable-sync",
            "--no-first-run",
            "--disable-default-apps",
            f"--user-data-dir={tmp_path / 'profile'}",
            "--enable-logging=stderr",
            "--v=0",
            "--virtual-time-budget=20000",
            "--dump-dom",
            html.resolve().as_uri(),
        ],
        capture_output=True,
        text=True,
        timeout=180,
    )
    assert r.returncode == 0, r.stderr[-2000:]
    dom = r.stdout
    # plotly drew every figure: each plot gets its SVG layers
    drawn = len(re.findall(r'<div id="fig-[^"]+" class="plotly-graph-div[^"]*js-plotly-plot', dom))
    assert drawn == n_figs, (drawn, n_figs)
    assert dom.count('class="main-svg"') >= n_figs
    # no console output at all (errors, CSP violations from any network request, warnings)
    console = [ln for ln in r.stderr.splitlines() if ":CONSOLE" in ln]
    assert console == []


def test_gap_to_the_bound_adds_up_and_operator_types_are_shown(feasible_report):
    from types import SimpleNamespace

    from explore.report.sparsity import fallback_numbers, operator_time_shares
    from sim.perf import ArrayConfig, simulate
    from sim.workloads import get_workload

    net = simulate(get_workload("bert-base", seq=128), ArrayConfig())
    det = SimpleNamespace(point={"sparsity": "2:4"}, networks=[("bert-base", 1.0, net)])
    (r,) = fallback_numbers(det)
    parts = r["fallback_loss"] + r["vector_loss"] + r["metadata_loss"] + r["stall_loss"]
    assert math.isclose(r["nominal_speedup"] - parts, r["effective_speedup"], rel_tol=1e-12)
    assert r["vector_loss"] > 0.1 and r["fallback_loss"] > 0 and r["metadata_loss"] >= 0
    shares = operator_time_shares(det)
    assert math.isclose(sum(x["time_share"] for x in shares), 1.0, rel_tol=1e-9)
    assert {x["op_type"] for x in shares if x["unit"] == "vector"} >= {
        "Softmax",
        "LayerNormalization",
        "Gelu",
        "Add",
    }
    out, html = feasible_report
    text = html.read_text()
    assert "Operator types by share of their workload" in text and "The gap to the" in text
    assert "vector unit" in text
