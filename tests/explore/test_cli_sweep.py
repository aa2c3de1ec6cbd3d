"""``sparsepe sweep`` through the real command line and the real evaluator."""

from __future__ import annotations

import csv
import json
import os
import signal
import subprocess
import sys
import time
from pathlib import Path

import optuna
import pytest
from optuna.trial import TrialState

from explore.storage import open_storage, resolve_storage

CONFIG = """
[study]
name = "cli"
seed = 1
trials = 12
[space]
rows = [8, 16, 32]
cols = [8, 16, 32]
sram_kb = [64, 256, 1024]
clock_mhz = { min = 200, max = 2000, step = 200 }
node_nm = [16, 7]
sparsity = ["2:4", "dense"]
pipeline = [1]
dataflow = ["ws", "os"]
dram = ["lpddr5", "hbm2"]
[fixed]
ambient_c = 45.0
cooling = "air"
dram_units = { lpddr5 = 4, hbm2 = 1 }
[[workload]]
name = "bert-base"
params = { seq = 64, batch = 1 }
[limits]
max_stall_fraction = 0.5
max_tj_c = 105.0
max_power_density_w_mm2 = 1.0
max_area_mm2 = 20.0
[objectives]
primary = "perf_per_watt"
"""


@pytest.fixture
def sweep_inproc(monkeypatch, tmp_path):
    """Run ``sparsepe sweep`` in this process with typer's CliRunner. The report writer (another
    room, tested there, several seconds per call) is replaced by a recorder of its calls, exposed
    as ``run.report_calls``; the end-to-end subprocess test above keeps the real one."""
    from typer.testing import CliRunner

    import explore.report.build as report_build
    from explore.cli import app

    calls = []

    def fake_write_report(storage_url, study_name, out_dir, **kwargs):
        calls.append((storage_url, study_name, Path(out_dir)))
        return Path(out_dir) / "report.html"

    monkeypatch.setattr(report_build, "write_report", fake_write_report)  # the sweep imports it when it runs
    monkeypatch.chdir(tmp_path)

    def run(args):
        res = CliRunner().invoke(app, ["sweep", *args])
        if res.exception is not None and not isinstance(res.exception, SystemExit):
            raise res.exception
        return res

    run.report_calls = calls
    return run


@pytest.fixture
def cfg_path(tmp_path):
    p = tmp_path / "cli.toml"
    p.write_text(CONFIG)
    return p


def _rows(path):
    return list(csv.DictReader(open(path)))


def test_sweep_writes_trials_and_best(cfg_path, tmp_path, run_cli):
    r = run_cli(["sweep", str(cfg_path), "--json"], cwd=tmp_path)
    assert r.returncode == 0, r.stderr
    out = tmp_path / "results" / "cli"  # default --out is results/<study>
    rows = _rows(out / "trials.csv")
    extra = json.loads((out / "best.json").read_text())["search_mode"]["settle"]["extra_trials"]
    assert len(rows) == 12 + extra and all(
        row["state"] == "COMPLETE" for row in rows
    )  # the budget, then settling
    for col in (
        "rows",
        "clock_mhz",
        "perf_per_watt",
        "c_stall_fraction",
        "c_tj_c",
        "c_timing",
        "feasible",
        "power_w",
        "area_mm2",
        "tj_c",
        "stall_fraction",
    ):
        assert col in rows[0]
    best = json.loads((out / "best.json").read_text())
    assert json.loads(r.stdout) == best
    feasible = [row for row in rows if row["feasible"] == "1"]
    assert best["feasible"] == bool(feasible)
    if feasible:  # the best is the feasible row with the highest perf/W (independent check)
        top = max(feasible, key=lambda row: float(row["perf_per_watt"]))
        assert best["best"]["number"] == int(top["number"])
    assert "results:" in r.stderr and "Traceback" not in r.stderr


def test_same_seed_same_trials_csv_via_cli(cfg_path, tmp_path, sweep_inproc):
    a = sweep_inproc([str(cfg_path), "--out", "a", "--seed", "4"])
    b = sweep_inproc([str(cfg_path), "--out", "b", "--seed", "4"])
    assert a.exit_code == 0 and b.exit_code == 0
    # the sweep hands the report writer its own storage, study name and output directory
    assert sweep_inproc.report_calls == [
        (resolve_storage(None, Path(d)).url, "cli", Path(d)) for d in ("a", "b")
    ]
    assert "report:" in a.stderr and "report.html" in a.stderr.replace("\n", "")
    assert (tmp_path / "a" / "trials.csv").read_text() == (tmp_path / "b" / "trials.csv").read_text()


def test_sigkill_then_rerun_via_cli(cfg_path, tmp_path, sweep_inproc, cli_env):
    out = tmp_path / "k"
    args = [sys.executable, "-m", "explore.cli", "sweep", str(cfg_path), "--out", str(out), "--trials", "60"]
    proc = subprocess.Popen(
        args, cwd=tmp_path, env=cli_env(), stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL
    )
    spec = resolve_storage(None, out)
    n = 0
    deadline = time.time() + 120
    while time.time() < deadline and proc.poll() is None:
        time.sleep(0.05)
        if (out / "study.journal").exists():
            try:
                st = optuna.load_study(study_name="cli", storage=open_storage(spec, create=False))
            except KeyError:  # study not created yet
                continue
            n = len(st.get_trials(deepcopy=False, states=(TrialState.COMPLETE,)))
            if n >= 10:
                break
    os.kill(proc.pid, signal.SIGKILL)
    proc.wait()
    st = optuna.load_study(study_name="cli", storage=open_storage(spec, create=False))
    before = {t.number: t.values for t in st.get_trials(deepcopy=False, states=(TrialState.COMPLETE,))}
    assert 10 <= len(before) < 60
    r = sweep_inproc([str(cfg_path), "--out", str(out), "--trials", "60"])
    assert r.exit_code == 0
    st = optuna.load_study(study_name="cli", storage=open_storage(spec, create=False))
    done = {t.number: t.values for t in st.get_trials(deepcopy=False, states=(TrialState.COMPLETE,))}
    extra = json.loads((out / "best.json").read_text())["search_mode"]["settle"]["extra_trials"]
    assert len(done) == 60 + extra  # the budget, then settling (explore.settle)
    assert all(done[k] == v for k, v in before.items())
    assert sum(row["state"] == "COMPLETE" for row in _rows(out / "trials.csv")) == 60 + extra


def test_grid_mode_matches_brute_force_over_its_rows(tmp_path, run_cli):
    p = tmp_path / "g.toml"
    p.write_text(
        CONFIG.replace("rows = [8, 16, 32]", "rows = [16]")
        .replace("cols = [8, 16, 32]", "cols = [16, 32]")
        .replace("sram_kb = [64, 256, 1024]", "sram_kb = [256]")
        .replace("node_nm = [16, 7]", "node_nm = [7]")
    )
    r = run_cli(["sweep", str(p), "--grid", "--out", "g"], cwd=tmp_path)
    assert r.returncode == 0, r.stderr
    rows = _rows(tmp_path / "g" / "trials.csv")
    assert len(rows) == 2 * 10 * 2 * 2 * 2  # cols x clock x sparsity x dataflow x dram
    best = json.loads((tmp_path / "g" / "best.json").read_text())
    feasible = [row for row in rows if all(float(row[k]) <= 0 for k in row if k.startswith("c_"))]
    top = max(feasible, key=lambda row: float(row["perf_per_watt"]))
    assert best["best"]["number"] == int(top["number"])
    assert best["best"]["metrics"]["perf_per_watt"] == pytest.approx(float(top["perf_per_watt"]))


def test_no_feasible_design_exit_0_and_names_limit(cfg_path, tmp_path, sweep_inproc):
    cfg_path.write_text(CONFIG.replace("max_area_mm2 = 20.0", "max_area_mm2 = 0.001"))
    r = sweep_inproc([str(cfg_path), "--trials", "5", "--out", "o"])
    assert r.exit_code == 0
    best = json.loads((tmp_path / "o" / "best.json").read_text())
    assert best["feasible"] is False and "area_mm2" in best["binding_limits"]
    assert "no feasible design" in r.stderr
    assert [c[1:] for c in sweep_inproc.report_calls] == [
        ("cli", Path("o"))
    ]  # the report is written all the same


def test_unreachable_postgres_one_line_exit_2(cfg_path, tmp_path, run_cli):
    r = run_cli(
        ["sweep", str(cfg_path), "--storage", "postgresql://u:secret@127.0.0.1:1/db", "--out", "o"],
        cwd=tmp_path,
    )
    assert r.returncode == 2
    lines = [line for line in r.stderr.splitlines() if line.strip()]
    assert len(lines) == 1 and lines[0].startswith("sparsepe: error:") and "cannot connect" in lines[0], (
        r.stderr
    )
    assert "secret" not in r.stderr


def test_corrupt_journal_one_line_exit_2_file_unchanged(cfg_path, tmp_path, sweep_inproc, run_cli):
    assert sweep_inproc([str(cfg_path), "--trials", "4", "--out", "o"]).exit_code == 0
    j = tmp_path / "o" / "study.journal"
    data = j.read_bytes()
    lines = data.splitlines(keepends=True)
    bad = b"".join(lines[:2]) + b"\x00garbage\n" + b"".join(lines[2:])
    j.write_bytes(bad)
    trials_before = (tmp_path / "o" / "trials.csv").read_bytes()
    r = run_cli(["sweep", str(cfg_path), "--trials", "8", "--out", "o"], cwd=tmp_path)
    assert r.returncode == 2
    lines = [line for line in r.stderr.splitlines() if line.strip()]
    assert len(lines) == 1 and "corrupt" in lines[0], r.stderr
    assert j.read_bytes() == bad
    assert (tmp_path / "o" / "trials.csv").read_bytes() == trials_before


@pytest.mark.parametrize(
    "args,needle",
    [
        (["--sampler", "cmaes"], "--sampler"),
        (["--workers", "0"], "--workers"),
        (["--trials", "0"], "--trials"),
    ],
)
def test_bad_options_exit_2(cfg_path, tmp_path, args, needle, run_cli):
    r = run_cli(["sweep", str(cfg_path), "--out", "o", *args], cwd=tmp_path)
    assert r.returncode == 2 and needle in r.stderr and "Traceback" not in r.stderr
    assert not (tmp_path / "o").exists()
