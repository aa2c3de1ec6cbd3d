"""The robustness of the verdict (explore.robustness) on designs costed by the product's evaluator:
a space where one assumption decides the winner (it flips the verdict; no SHIP), a space where sparse
wins under every range (P = 1), the batch re-costing against the evaluator under overrides, the
decision rule, and bad input as one line with exit code 2."""

from __future__ import annotations

import json
import subprocess
import sys
import tomllib
from pathlib import Path

import numpy as np
import pytest

from explore.config import parse_config
from explore.report.best_design import assumption_limit_rows
from explore.report.data import StudyData
from explore.report.decision import decide
from explore.results import Detail, Evaluator, constraint_values
from explore.robustness import SHARE_LIMIT, assumption_shares, confident, robustness
from ppa.assumptions import varied
from ppa.override import overriding

pytestmark = pytest.mark.yosys

ROOT = Path(__file__).resolve().parents[2]
# 400 MHz: met at 7 nm over the whole ASAP7 FO4 range (fo4_7nm_ps up to 26.2 ps; 600 MHz is missed there)
SPACE = """
[study]
seed = 3
[space]
rows = [16, 32]
cols = [16, 32]
sram_kb = [1024]
clock_mhz = [400]
node_nm = [7]
sparsity = ["2:4", "dense"]
pipeline = [1]
dataflow = ["os"]
dram = ["lpddr5", "hbm2"]
[fixed]
dram_units = { lpddr5 = 4, hbm2 = 1 }
[[workload]]
name = "bert-base"
params = { seq = 128, batch = 1 }
[limits]
"""
SPARSE = dict(
    rows=32,
    cols=32,
    sram_kb=1024,
    clock_mhz=400.0,
    node_nm=7,
    sparsity="2:4",
    pipeline=1,
    dataflow="os",
    dram="lpddr5",
)


def _setup(extra: str = ""):
    cfg = parse_config(tomllib.loads(SPACE + extra), source="robust.toml")
    return cfg, Evaluator("explore.evaluator", cfg, where=None)


def _records(cfg, ev, points):
    return [
        {"number": i, "params": p, "metrics": m, "constraints": constraint_values(cfg, m)}
        for i, (p, m) in enumerate(zip(points, ev.evaluate_many(points), strict=True))
    ]


def test_one_assumption_decides_the_winner_and_the_verdict_is_not_ship():
    # the sparse design on LPDDR5 against the dense one on HBM2: which wins depends on HBM2's energy
    # per bit, here given a wide range; every other range is pinned to the model's value
    pins = "".join(
        f"{a.name} = {{ low = {a.value!r}, high = {a.value!r} }}\n"
        for a in varied()
        if a.name != "hbm2_dram_pj_per_bit"
    )
    cfg, ev = _setup("[assumptions]\nhbm2_dram_pj_per_bit = { low = 0.5, high = 8.0 }\n" + pins)
    recs = _records(cfg, ev, [SPARSE, {**SPARSE, "sparsity": "dense", "dram": "hbm2"}])
    rob = robustness(recs, cfg, ev)
    assert rob["flips"] == ["hbm2_dram_pj_per_bit"]
    flip = rob["flip_points"][0]
    assert 0.5 < flip["value"] < 8.0
    row = next(t for t in rob["tornado"] if t["name"] == "hbm2_dram_pj_per_bit")
    assert row["low_advantage"] < 0 < cfg.decision.margin < row["high_advantage"]  # cheap HBM: dense wins
    assert 0.0 < rob["p_advantage_ge_margin"] < cfg.decision.min_confidence
    assert not confident(rob)
    # the advantage at the flip point, checked against the evaluator itself under that override
    with overriding({"hbm2_dram_pj_per_bit": flip["value"]}):
        s, d = (ev.evaluate(r["params"])["perf_per_watt"] for r in recs)
    assert s / d - 1.0 == pytest.approx(flip["advantage"], rel=1e-9)
    assert (s / d - 1.0 >= cfg.decision.margin) != (rob["advantage_nominal"] >= cfg.decision.margin)


def test_sparse_wins_under_every_range():
    cfg, ev = _setup()
    recs = _records(cfg, ev, [SPARSE, {**SPARSE, "rows": 16, "cols": 16, "sparsity": "dense"}])
    rob = robustness(recs, cfg, ev)
    assert rob["p_advantage_ge_margin"] == 1.0
    assert rob["flips"] == [] and rob["samples"] == 256
    assert rob["advantage_p05"] >= cfg.decision.margin
    assert confident(rob)
    assert "no single range flips it" in rob["line"]


def test_a_sample_is_the_evaluator_under_the_same_overrides():
    cfg, ev = _setup()
    point = {**SPARSE, "rows": 16, "dram": "hbm2"}
    rng = np.random.default_rng(1)
    names = varied()
    cols = {a.name: np.exp(rng.uniform(np.log(a.low), np.log(a.high), 3)) for a in names}
    got = ev.mod.evaluate_under([point], ev.ctx, cols, 3)[0]
    for i in range(3):
        with overriding({k: float(v[i]) for k, v in cols.items()}):
            want = ev.evaluate(point)
        for k in (
            "perf_per_watt",
            "power_w",
            "area_mm2",
            "tj_c",
            "fmax_mhz",
            "energy_per_inference_mj",
            "power_density_w_mm2",
            "ppa_infeasible",
            "latency_ms",
        ):
            assert got[k][i] == pytest.approx(want[k], rel=1e-7), k


def _decision(rob, tmp_cfg):
    """decide() on a study whose best design is sparse, with evidence on the team's model and slack:
    only the robustness rule can hold SHIP back."""
    best = {
        "feasible": True,
        "n_feasible": 2,
        "n_evaluated": 2,
        "tightest_limit": {"name": "timing", "constraint": -0.5},
        "best": {"number": 0, "params": SPARSE, "metrics": {}},
    }
    data = StudyData(
        study_name="s",
        storage_url="",
        storage_kind="journal",
        cfg=tmp_cfg,
        config_json={},
        fingerprint="",
        objectives=["perf_per_watt"],
        directions=["maximize"],
        records=[],
        best=best,
        state_counts={},
        user_attrs={},
        evaluator="explore.evaluator",
        constraint_names=[],
    )
    det = Detail(point=dict(SPARSE), metrics={"effective_speedup": 1.9, "ideal_speedup": 2.0})
    q = {"evidence": "model", "guardrail_ok": True, "guardrail": "ok", "quality_delta": 0.0}
    comp = {
        "primary_advantage": 1.2,
        "best_sparse": {"perf_per_watt": 1.2},
        "best_dense": {"perf_per_watt": 1.0},
    }
    return decide(data, det, q, comp, rob)


def test_ship_needs_the_confidence():
    cfg, _ = _setup()
    rob = {"p_advantage_ge_margin": 0.95, "min_confidence": 0.9, "line": "sparse +20 %"}
    assert _decision(rob, cfg)[0] == "SHIP"
    verdict, rule, rows = _decision({**rob, "p_advantage_ge_margin": 0.81}, cfg)
    assert (verdict, rule) == ("BOUNDED ROLLOUT", "R5") and "needs P >= 0.9" in rows[-1][2]
    assert _decision(None, cfg)[:2] == ("BOUNDED ROLLOUT", "R5")


def _cli(tmp_path, text: str, *args) -> subprocess.CompletedProcess:
    p = tmp_path / "c.toml"
    p.write_text(text)
    return subprocess.run(
        [sys.executable, "-m", "explore.cli", "sweep", str(p), "--out", str(tmp_path / "out"), *args],
        capture_output=True,
        text=True,
        cwd=ROOT,
        env={"PYTHONPATH": str(ROOT), "PATH": "/usr/bin:/bin"},
    )


BIGGER = ("sram_kb = [64, 256, 1024, 4096]", "sram_kb = [64, 128, 256, 512, 1024, 2048, 4096, 8192]")


@pytest.mark.parametrize(
    "extra, args, message",
    [
        (
            "[assumptions]\nwire_allowance = { low = 0.2, high = 0.1 }\n",
            (),
            "assumptions.wire_allowance: low 0.2 is above high 0.1",
        ),
        ("[decision]\nmin_confidence = 0.0\n", (), "decision.min_confidence"),
        ("[decision]\nmin_confidence = 1.01\n", (), "decision.min_confidence"),
        (
            BIGGER,
            ("--exhaustive",),
            "--exhaustive: the space has 61,440 points (both sides), more than 50,000",
        ),
    ],
)
def test_bad_input_is_one_line_exit_2(tmp_path, extra, args, message):
    text = (ROOT / "examples" / "default.toml").read_text()
    text = (
        text.replace(*extra)
        if isinstance(extra, tuple)
        else text.replace("[objectives]", extra + "[objectives]")
    )
    r = _cli(tmp_path, text, *args)
    lines = r.stderr.strip().splitlines()
    assert r.returncode == 2 and len(lines) == 1 and lines[0].startswith("sparsepe: error: "), r.stderr
    assert message in lines[0]
    assert not (tmp_path / "out").exists()


def test_sweep_writes_robustness_equal_search_and_the_report_section(tmp_path):
    text = (
        SPACE.replace("[study]\nseed = 3", '[study]\nname = "rb"\nseed = 3\ntrials = 16')
        .replace('dram = ["lpddr5", "hbm2"]', 'dram = ["lpddr5"]')
        .replace("[limits]", "[limits]\nmax_area_mm2 = 5.0")
    )
    r = _cli(tmp_path, text)
    assert r.returncode == 0, r.stderr
    best = json.loads((tmp_path / "out" / "best.json").read_text())
    search = best["comparison"]["search"]
    # 2 x 2 shapes x 2 PE kinds = 8 points <= 4 x 16 trials: evaluated exhaustively, 4 per side
    assert best["search_mode"]["mode"] == "exhaustive" and best["search_mode"]["points"] == 8
    assert search["sparse"]["trials"] == search["dense"]["trials"] == 4
    assert search["sparse"]["sampler"] == search["dense"]["sampler"]
    rob = best["robustness"]
    for k in (
        "advantage_median",
        "advantage_p05",
        "advantage_p95",
        "p_advantage_ge_margin",
        "samples",
        "flips",
        "tornado",
    ):
        assert k in rob, k
    assert rob["samples"] == 256 and {"name", "low_advantage", "high_advantage"} <= set(rob["tornado"][0])
    assert "lpddr5_phy_area_mm2" in rob["flips"]  # 4 LPDDR5 PHYs are 4.0 of the 5.0 mm^2 allowed
    assert f"P(>= 5 %) = {rob['p_advantage_ge_margin']:.2f}" in r.stderr.replace("\n", " ")
    files = tmp_path / "out" / "report_files"
    assert (files / "robustness_tornado.png").exists() and (files / "robustness_histogram.png").exists()
    key = json.loads((tmp_path / "out" / "report.json").read_text())
    assert key["robustness"]["line"] == rob["line"] and key["decision"]["verdict"] != "SHIP"
    assert "speedup_vs_iso_area_dense" in (tmp_path / "out" / "trials.csv").read_text().splitlines()[0]
    report = (tmp_path / "out" / "report.md").read_text()
    assert "assumption lpddr5_phy_area_mm2 [A] | sets " in report  # the PHYs are most of the area
    assert "assumption ddr4_phy_area_mm2" not in report  # no DDR4 in this design


def test_assumption_shares_are_the_parts_they_price():
    """The elasticity of area in the LPDDR5 PHY area is the PHYs' share of the area, and that of
    power in the LPDDR5 device energy per bit is the DRAM's share of the power, each read from the
    design's own breakdown (explore.evaluator metrics), not from the share computation."""
    cfg, ev = _setup()
    rows = {r["name"]: r for r in assumption_shares(SPARSE, cfg, ev)}
    m = ev.evaluate_many([SPARSE])[0]
    assert rows["lpddr5_phy_area_mm2"]["area_share"] == pytest.approx(
        m["area_phy_mm2"] / m["area_mm2"], rel=0.01
    )
    assert rows["lpddr5_dram_pj_per_bit"]["power_share"] == pytest.approx(
        m["power_dram_w"] / m["power_w"], rel=0.02
    )
    assert rows["lpddr5_dram_pj_per_bit"]["area_share"] == pytest.approx(0.0, abs=1e-9)
    assert rows["hbm_phy_area_mm2"]["area_share"] == pytest.approx(0.0, abs=1e-9)  # not this design's memory
    named = [r[0] for r in assumption_limit_rows(list(rows.values()))]
    big = {n for n, r in rows.items() if max(r["power_share"], r["area_share"]) > SHARE_LIMIT}
    assert (
        named == [f"assumption {n} [{rows[n]['tag']}]" for n in rows if n in big]
        and "assumption lpddr5_phy_area_mm2 [A]" in named
    )
