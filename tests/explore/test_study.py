"""Study machinery: resume, target totals, workers, storages, determinism, exports.

These tests use the TEST-ONLY analytic objective in ``tests/explore/_analytic.py`` (documented
there), so they check the Optuna machinery independently of the sim/ and ppa/ models.
"""

from __future__ import annotations

import csv
import functools
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

from explore.config import load_config
from explore.results import constraint_values, pareto_indices, summarise
from explore.storage import WORKER_ATTR, fail_dead_local_trials, open_storage, resolve_storage
from explore.study import run_study
from hw.errors import InputError

REPO = Path(__file__).resolve().parents[2]
EVAL = "tests.explore._analytic"


@pytest.fixture
def opts(sweep_options):
    """SweepOptions of a sweep with the analytic test objective."""
    return functools.partial(sweep_options, evaluator=EVAL)


@pytest.fixture
def sweep(run_sweep):
    """A sweep with the analytic test objective: (study, best)."""
    return functools.partial(run_sweep, evaluator=EVAL)


def _complete(study):
    return study.get_trials(deepcopy=False, states=(TrialState.COMPLETE,))


def test_determinism_same_seed_same_trials_csv(small_config, tmp_path, sweep):
    cfg = small_config()
    sweep(cfg, tmp_path / "a", trials=25, seed=7)
    sweep(cfg, tmp_path / "b", trials=25, seed=7)
    a = (tmp_path / "a" / "trials.csv").read_text()
    b = (tmp_path / "b" / "trials.csv").read_text()
    assert a == b
    assert len(a.splitlines()) == 26
    sweep(cfg, tmp_path / "c", trials=25, seed=8)
    assert (tmp_path / "c" / "trials.csv").read_text() != a


def test_trials_is_a_target_total_and_rerun_resumes(small_config, tmp_path, sweep):
    cfg = small_config()
    study, _ = sweep(cfg, tmp_path / "o", trials=10)
    first = {t.number: t.values for t in _complete(study)}
    assert len(first) == 10
    study, _ = sweep(cfg, tmp_path / "o", trials=16)
    after = {t.number: t.values for t in _complete(study)}
    assert len(after) == 16
    assert all(after[n] == v for n, v in first.items())
    study, _ = sweep(cfg, tmp_path / "o", trials=16)  # already there: nothing new
    assert len(study.get_trials(deepcopy=False)) == 16
    rows = list(csv.DictReader(open(tmp_path / "o" / "trials.csv")))
    assert len(rows) == 16 and all(r["state"] == "COMPLETE" for r in rows)


def test_sigkill_halfway_then_rerun_ends_with_exact_total(small_config, tmp_path, cli_env):
    cfg = small_config()
    out = tmp_path / "o"
    env = cli_env(SPARSEPE_TEST_SLOW_S="0.05")
    args = [
        sys.executable,
        "-m",
        "tests.explore._driver",
        str(cfg),
        "-",
        "k",
        "40",
        "1",
        "0",
        "tpe",
        str(out),
    ]
    proc = subprocess.Popen(args, env=env, stdout=subprocess.DEVNULL, stderr=subprocess.PIPE)
    journal = out / "study.journal"
    deadline = time.time() + 60
    n_done = 0
    while time.time() < deadline:
        time.sleep(0.2)
        if journal.exists():
            try:
                st = optuna.load_study(
                    study_name="k", storage=open_storage(resolve_storage(None, out), create=False)
                )
            except KeyError:  # the journal file exists, its create-study record is not written yet
                continue
            n_done = len(_complete(st))
            if n_done >= 12:
                break
    os.kill(proc.pid, signal.SIGKILL)
    proc.wait()
    assert 12 <= n_done < 40
    st = optuna.load_study(study_name="k", storage=open_storage(resolve_storage(None, out), create=False))
    before = {t.number: (t.params, t.values) for t in _complete(st)}
    # re-run the same command (no slowdown needed now)
    env["SPARSEPE_TEST_SLOW_S"] = "0"
    r = subprocess.run(args, env=env, capture_output=True, text=True, timeout=120)
    assert r.returncode == 0, r.stderr
    st = optuna.load_study(study_name="k", storage=open_storage(resolve_storage(None, out), create=False))
    done = {t.number: (t.params, t.values) for t in _complete(st)}
    assert len(done) == 40
    for n, pv in before.items():  # no finished trial lost or changed
        assert done[n] == pv
    assert not st.get_trials(deepcopy=False, states=(TrialState.RUNNING,))
    failed = st.get_trials(deepcopy=False, states=(TrialState.FAIL,))
    for f in failed:  # a trial killed mid-evaluation is failed and retried with its parameters
        retried = [t for t in st.get_trials(deepcopy=False) if t.system_attrs.get("failed_trial") == f.number]
        assert retried and f.params.items() <= retried[0].params.items()
    rows = list(csv.DictReader(open(out / "trials.csv")))
    assert sum(r["state"] == "COMPLETE" for r in rows) == 40


def test_two_local_workers_share_a_journal(small_config, tmp_path, monkeypatch, sweep):
    monkeypatch.setenv("SPARSEPE_TEST_SLOW_S", "0.03")
    monkeypatch.setenv("PYTHONPATH", str(REPO))
    study, _ = sweep(small_config(), tmp_path / "o", trials=30, workers=2)
    done = _complete(study)
    assert len(done) == 30
    owners = {t.system_attrs[WORKER_ATTR] for t in done}
    assert len(owners) == 2
    numbers = [t.number for t in study.get_trials(deepcopy=False)]
    assert len(numbers) == len(set(numbers))


def test_sqlite_storage_and_single_writer_rule(small_config, tmp_path, sweep, opts):
    url = f"sqlite:///{tmp_path / 's.db'}"
    study, best = sweep(small_config(), tmp_path / "o", trials=8, storage=url)
    assert len(_complete(study)) == 8 and best["n_evaluated"] == 8
    cfg = load_config(small_config())
    with pytest.raises(InputError, match="one writer"):
        run_study(opts(small_config(), tmp_path / "o", trials=9, storage=url, workers=2), cfg)


def test_corrupt_journal_is_one_clear_error_and_left_unchanged(small_config, tmp_path, sweep):
    cfg_path = small_config()
    sweep(cfg_path, tmp_path / "o", trials=5)
    journal = tmp_path / "o" / "study.journal"
    lines = journal.read_bytes().splitlines(keepends=True)
    corrupt = b"".join(lines[:3] + [b"{not json at all\n"] + lines[3:])
    journal.write_bytes(corrupt)
    with pytest.raises(InputError) as exc:
        sweep(cfg_path, tmp_path / "o", trials=8)
    assert "corrupt" in str(exc.value) and str(journal) in str(exc.value)
    assert "\n" not in str(exc.value)
    assert journal.read_bytes() == corrupt


def test_unreachable_postgres_is_one_clear_error(small_config, tmp_path, opts):
    cfg = load_config(small_config())
    t0 = time.time()
    with pytest.raises(InputError) as exc:
        run_study(
            opts(small_config(), tmp_path / "o", storage="postgresql://nobody:pw@127.0.0.1:1/none"), cfg
        )
    msg = str(exc.value)
    assert "cannot connect" in msg and "\n" not in msg and "pw" not in msg
    assert time.time() - t0 < 30


def test_changed_config_on_same_study_is_refused(small_config, tmp_path, sweep):
    p = small_config()
    sweep(p, tmp_path / "o", trials=3)
    p.write_text(p.read_text().replace("max_area_mm2 = 20.0", "max_area_mm2 = 10.0"))
    with pytest.raises(InputError, match="different config"):
        sweep(p, tmp_path / "o", trials=4)


def test_other_model_code_on_same_study_is_refused(small_config, tmp_path, sweep, monkeypatch):
    """Issue 10: the study's fingerprint includes the model code version, so a resumed study never
    mixes results of two model versions."""
    import explore.study as st

    p = small_config()
    study, _ = sweep(p, tmp_path / "o", trials=3)
    assert study.user_attrs[st.MODEL_CODE_ATTR] == st.model_code_version()
    monkeypatch.setattr(st, "model_code_version", lambda: "0123456789abcdef")
    with pytest.raises(InputError, match="other model code") as exc:
        sweep(p, tmp_path / "o", trials=4)
    assert "\n" not in str(exc.value) and "0123456789abcdef" in str(exc.value)
    # the same code resumes
    monkeypatch.undo()
    study, _ = sweep(p, tmp_path / "o", trials=4)
    assert len(_complete(study)) == 4


def test_model_code_version_follows_the_model_source(tmp_path, monkeypatch):
    """It hashes hw/, ppa/, sim/ and the evaluator by path and code: in a copy of the tree, a blank
    line added to a ppa module keeps the version, and a new constant there changes it."""
    import shutil

    import explore.study as st

    src = Path(st.__file__).resolve().parents[1]
    for d in ("hw", "ppa", "sim", "explore"):
        shutil.copytree(src / d, tmp_path / d, ignore=shutil.ignore_patterns("__pycache__", "*.pyc"))
    import importlib

    real_import = importlib.import_module

    def fake(name, *a, **k):
        return (
            type("M", (), {"__file__": str(tmp_path / "explore" / "__init__.py")})
            if name == "explore"
            else real_import(name, *a, **k)
        )

    monkeypatch.setattr(importlib, "import_module", fake)
    st.model_code_version.cache_clear()
    try:
        v1 = st.model_code_version()
        st.model_code_version.cache_clear()
        f = tmp_path / "ppa" / "tech.py"
        f.write_text(f.read_text() + "\n\n# a comment\n")
        v_layout = st.model_code_version()
        st.model_code_version.cache_clear()
        f.write_text(f.read_text() + "EXTRA_CONSTANT = 1\n")
        v2 = st.model_code_version()
    finally:
        monkeypatch.undo()
        st.model_code_version.cache_clear()
    assert v1 == st.model_code_version() == v_layout and v2 != v1


def test_constraints_one_per_limit_plus_timing(small_config):
    cfg = load_config(small_config())
    m = {
        "stall_fraction": 0.45,
        "tj_c": 95.0,
        "power_density_w_mm2": 0.5,
        "area_mm2": 20.0,
        "clock_mhz": 1000.0,
        "fmax_mhz": 800.0,
    }
    c = constraint_values(cfg, m)
    assert set(c) == {"stall_fraction", "tj_c", "power_density_w_mm2", "area_mm2", "timing"}
    assert c["stall_fraction"] == pytest.approx(0.5)  # 50 % over 0.3
    assert c["tj_c"] == pytest.approx((95 - 85) / (85 - 45))
    assert c["power_density_w_mm2"] == pytest.approx(-0.5)
    assert c["area_mm2"] == pytest.approx(0.0)  # at the limit is feasible (<= 0)
    assert c["timing"] == pytest.approx(0.25)


def test_no_feasible_design_names_binding_limits(small_config, tmp_path, sweep):
    p = small_config()
    p.write_text(p.read_text().replace("max_area_mm2 = 20.0", "max_area_mm2 = 0.5"))
    study, best = sweep(p, tmp_path / "o", trials=6)
    assert best["feasible"] is False
    assert "area_mm2" in best["binding_limits"]
    assert best["violated_share"]["area_mm2"] == 1.0
    on_disk = json.loads((tmp_path / "o" / "best.json").read_text())
    assert on_disk["feasible"] is False and on_disk["binding_limits"] == best["binding_limits"]


def test_multi_objective_pareto_set_is_nondominated(small_config, tmp_path, sweep):
    p = small_config()
    p.write_text(
        p.read_text().replace(
            'primary = "perf_per_watt"', 'primary = "perf_per_watt"\nsecondary = ["area_mm2"]'
        )
    )
    study, best = sweep(p, tmp_path / "o", trials=30, sampler="nsga2")
    assert len(study.directions) == 2
    feas = [t for t in _complete(study) if all(v <= 0 for v in t.constraints.values())]
    front = {d["number"] for d in best["pareto"]}
    # independent brute-force check: maximise ppw, minimise area
    for t in feas:
        ppw, area = t.values
        dominated = any(
            u.values[0] >= ppw and u.values[1] <= area and (u.values[0] > ppw or u.values[1] < area)
            for u in feas
        )
        assert (t.number in front) == (not dominated)


def test_pareto_helper_small_case():
    pts = [(1.0, 1.0), (2.0, 2.0), (2.0, 1.5), (0.5, 0.5)]
    assert sorted(pareto_indices(pts, ["maximize", "minimize"])) == [0, 2, 3]


def test_summarise_picks_best_feasible(small_config):
    cfg = load_config(small_config())
    recs = [
        {"number": 0, "params": {}, "metrics": {"perf_per_watt": 9.0}, "constraints": {"area_mm2": 0.2}},
        {"number": 1, "params": {}, "metrics": {"perf_per_watt": 5.0}, "constraints": {"area_mm2": -0.01}},
        {"number": 2, "params": {}, "metrics": {"perf_per_watt": 4.0}, "constraints": {"area_mm2": -0.5}},
    ]
    s = summarise(recs, cfg)
    assert s["feasible"] and s["best"]["number"] == 1
    assert s["tightest_limit"] == {"name": "area_mm2", "constraint": -0.01}
    # trial 0 is better and violates only the area limit: area binds
    assert s["binding_limits"] == ["area_mm2"] and "trial 0" in s["binding_evidence"]["area_mm2"]
    recs[0]["constraints"]["timing"] = 0.5  # two limits violated: neither alone binds
    assert summarise(recs, cfg)["binding_limits"] == []


def test_journal_opens_in_optuna_dashboard(small_config, tmp_path, sweep):
    """The embedded journal (with its batched attribute records) is read by optuna-dashboard's own
    storage loader and API, unchanged (no server: the WSGI app is called directly)."""
    import io

    dashboard = pytest.importorskip("optuna_dashboard")
    from optuna_dashboard._storage_url import get_storage

    sweep(small_config(), tmp_path / "o", trials=6)
    app = dashboard.wsgi(get_storage(str(tmp_path / "o" / "study.journal")))

    def get(path):
        env = {
            "REQUEST_METHOD": "GET",
            "PATH_INFO": path,
            "QUERY_STRING": "",
            "SERVER_NAME": "localhost",
            "SERVER_PORT": "80",
            "wsgi.input": io.BytesIO(),
            "wsgi.url_scheme": "http",
            "SERVER_PROTOCOL": "HTTP/1.1",
        }
        status = {}
        body = b"".join(app(env, lambda s, h, e=None: status.setdefault("s", s)))
        assert status["s"].startswith("200"), status
        return json.loads(body)

    studies = get("/api/studies")["study_summaries"]
    assert [s["study_name"] for s in studies] == ["t"]
    detail = get(f"/api/studies/{studies[0]['study_id']}")
    assert len(detail["trials"]) == 6
    keys = {a["key"] for a in detail["trials"][0]["user_attrs"]}
    assert {"perf_per_watt", "stall_fraction", "tj_c", "feasible"} <= keys


def test_orphaned_running_trials_are_failed_and_retried(small_config, tmp_path, monkeypatch, sweep):
    """Trials left RUNNING by dead local processes (tagged with a dead pid, or killed before the
    tag was written) are failed and their parameters retried; the total still ends exact."""
    import socket

    import explore.storage as storage_mod

    cfg = small_config()
    study, _ = sweep(cfg, tmp_path / "o", trials=5)
    dead = study.ask()
    study._storage.set_trial_system_attr(dead._trial_id, WORKER_ATTR, f"{socket.gethostname()}:999999999:1")
    dead.suggest_categorical("rows", [8, 16, 32])
    untagged = study.ask()
    monkeypatch.setattr(storage_mod, "UNTAGGED_STALE_S", 0.0)
    study, _ = sweep(cfg, tmp_path / "o", trials=9)
    states = {t.number: t.state for t in study.get_trials(deepcopy=False)}
    assert states[dead.number] == TrialState.FAIL and states[untagged.number] == TrialState.FAIL
    assert len(_complete(study)) == 9
    retried = [
        t for t in study.get_trials(deepcopy=False) if t.system_attrs.get("failed_trial") == dead.number
    ]
    assert retried and retried[0].params["rows"] == dead.params["rows"]


@pytest.mark.parametrize("retry", [True, False])
def test_a_trial_failed_by_another_worker_while_it_runs_is_retried(
    small_config, tmp_path, monkeypatch, sweep, retry
):
    """Another worker may take a live worker's trial for a dead one's and fail it (its retry
    enqueued) while it is still being evaluated. The live worker must not crash on Optuna's refusal
    of its later writes: it goes on, the retry evaluates the point, and the total ends exact.
    ``retry=False``: the live worker writes between the reaper's FAIL and its enqueue (or the
    trial's retries are spent): it goes on all the same."""
    import socket

    import tests.explore._analytic as analytic

    real, out, hits = analytic.evaluate, tmp_path / "o", []

    def evaluate(point, ctx):
        if not hits:  # the first trial: a second handle on the journal reaps it, as another worker would
            other = optuna.load_study(study_name="t", storage=open_storage(resolve_storage(None, out)))
            (running,) = other.get_trials(deepcopy=False, states=(TrialState.RUNNING,))
            # taken for a dead process's trial (a pid that cannot exist on this host)
            other._storage.set_trial_system_attr(
                running._trial_id, WORKER_ATTR, f"{socket.gethostname()}:999999999:1"
            )
            if retry:
                assert fail_dead_local_trials(other) == 1
            else:
                assert other._storage.set_trial_state_values(running._trial_id, state=TrialState.FAIL)
            hits.append(running.number)
        return real(point, ctx)

    monkeypatch.setattr(analytic, "evaluate", evaluate)
    study, _ = sweep(small_config(), out, trials=6)
    states = {t.number: t.state for t in study.get_trials(deepcopy=False)}
    assert hits and states[hits[0]] == TrialState.FAIL
    retried = [t for t in study.get_trials(deepcopy=False) if t.system_attrs.get("failed_trial") == hits[0]]
    assert (retried and retried[0].state == TrialState.COMPLETE) if retry else not retried
    assert len(_complete(study)) == 6


TINY_SPACE = """\
[study]
name = "tiny"
[space]
rows = [8, 16]
cols = [8]
sram_kb = [256]
clock_mhz = [500]
node_nm = [7]
sparsity = ["2:4", "dense"]
pipeline = [1]
dataflow = ["ws"]
dram = ["hbm2"]
[fixed]
dram_units = { hbm2 = 1 }
[[workload]]
name = "bert-base"
[limits]
max_area_mm2 = 20.0
"""


def test_a_design_already_in_the_study_is_reused_and_counted_once(small_config, tmp_path, sweep, monkeypatch):
    """A space of 4 designs and 12 trials: TPE proposes repeats; each design is evaluated once,
    later trials carry ``duplicate_of`` and the stored result, and best.json counts each design once."""
    import tests.explore._analytic as analytic

    cfg = small_config(text=TINY_SPACE)
    calls: list[dict] = []
    real = analytic.evaluate
    monkeypatch.setattr(
        analytic, "evaluate", lambda point, ctx: (calls.append(dict(point)), real(point, ctx))[1]
    )
    study, best = sweep(cfg, tmp_path / "o", trials=12, seed=1)
    keys = [tuple(sorted(c.items())) for c in calls]
    assert len(keys) == len(set(keys)) <= 4  # no design evaluated twice
    rows = list(csv.DictReader(open(tmp_path / "o" / "trials.csv")))
    assert len(rows) == 12
    dups = [r for r in rows if r["duplicate_of"] != ""]
    assert len(dups) == 12 - len(keys) > 0
    by_number = {r["number"]: r for r in rows}
    for r in dups:
        first = by_number[r["duplicate_of"]]
        assert (r["rows"], r["sparsity"]) == (first["rows"], first["sparsity"])
        assert r["perf_per_watt"] == first["perf_per_watt"]
    assert best["n_evaluated"] == len(keys)


def test_a_trial_that_characterises_says_so_on_the_progress_line(
    small_config, tmp_path, sweep_options, capsys, monkeypatch
):
    from explore.config import load_config
    from explore.trials import CHARACTERISED_ATTR

    monkeypatch.setenv("SPARSEPE_CHARACTERISATION", "off")  # the reason line of ppa stays out of it
    cfg = small_config()
    o = sweep_options(cfg, tmp_path / "o", trials=4, evaluator="tests.explore._characterising")
    o.progress = True
    study = run_study(o, load_config(cfg))
    marked = {
        t.number: t.system_attrs[CHARACTERISED_ATTR]
        for t in study.get_trials(deepcopy=False)
        if CHARACTERISED_ATTR in t.system_attrs
    }
    assert marked == {0: "module sparse_array"}
    err = capsys.readouterr().err
    assert "sweep t: trial 0 characterised module sparse_array (not prewarmed)" in err, err
