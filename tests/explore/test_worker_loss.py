"""Scale-out that survives worker loss: 4 worker processes run one study of 400 trials, 2 of them
are SIGKILLed at random moments while they hold a running trial, and the study still ends with
exactly 400 COMPLETE trials, none RUNNING or WAITING, every killed trial FAILed and run again.

* PostgreSQL (``postgres`` marker; the server of tests/explore/test_postgres.py, a fresh database per
  run): the survivors find the dead workers' trials by Optuna's heartbeat alone (the workers act as
  if on other machines: tests/explore/_loss_worker.py, MODE ``heartbeat``, 1 s heartbeat, 3 s
  grace), ``RetryHeartbeatStaleTrialCallback`` enqueues them again.
* The journal file: a journal has no heartbeat; a dead local worker's trial is found by its process
  tag (explore.storage.fail_dead_local_trials) and enqueued by the same callback.

The workers are the product's (explore.study.run_worker) on the TEST-ONLY analytic objective.
"""

from __future__ import annotations

import os
import random
import signal
import subprocess
import sys
import time
import uuid
from pathlib import Path

import optuna
import psycopg
import pytest
from optuna.trial import TrialState

from explore.storage import WORKER_ATTR, open_storage, resolve_storage
from hw.errors import InputError
from tests.explore.conftest import SMALL_CONFIG
from tests.explore.test_postgres import pg_url  # noqa: F401  (the server fixture)

REPO = Path(__file__).resolve().parents[2]
TRIALS, WORKERS, KILLED = 400, 4, 2
#: The small test config with three searched axes (rows, cols, clock: 1,629 designs) and the rest
#: fixed: each trial stores three parameters, so the run measures the workers, not the database.
LOSS_CONFIG = (
    SMALL_CONFIG.replace("{workload}", "bert-base")
    .replace(
        "clock_mhz = { min = 200, max = 2000, step = 100 }",
        "clock_mhz = { min = 200, max = 2000, step = 10 }",
    )
    .replace("sram_kb = [64, 256, 1024]", "sram_kb = [256]")
    .replace("node_nm = [16, 7]", "node_nm = [7]")
    .replace('sparsity = ["2:4", "dense"]', 'sparsity = ["2:4"]')
    .replace("pipeline = [1, 2, 3]", "pipeline = [2]")
    .replace('dataflow = ["ws", "os"]', 'dataflow = ["ws"]')
    .replace('dram = ["lpddr5", "hbm2"]', 'dram = ["hbm2"]')
)
#: Seconds the whole run may take before the test gives up (the runs take 20-50 s).
DEADLINE_S = 240


def _pid_of(t: optuna.trial.FrozenTrial) -> int | None:
    tag = t.system_attrs.get(WORKER_ATTR)
    try:
        return int(str(tag).rsplit(":", 2)[1])
    except (IndexError, ValueError):
        return None


def _load(url: str, tmp: Path) -> optuna.Study | None:
    try:
        return optuna.load_study(
            study_name="loss", storage=open_storage(resolve_storage(url, tmp), create=False)
        )
    except (KeyError, InputError):  # not created yet by the first worker
        return None


def run_with_losses(url: str, tmp: Path, mode: str, seed: int) -> dict:
    """Start the workers, SIGKILL KILLED of them at random moments (each while it holds a running
    trial), wait for the rest; return what happened."""
    cfg = tmp / "c.toml"
    cfg.write_text(LOSS_CONFIG)
    env = {**os.environ, "PYTHONPATH": str(REPO), "SPARSEPE_TEST_SLOW_S": "0.02"}
    procs = [
        subprocess.Popen(
            [
                sys.executable,
                "-m",
                "tests.explore._loss_worker",
                str(cfg),
                url,
                "loss",
                str(TRIALS),
                str(k),
                mode,
            ],
            env=env,
            stdout=subprocess.DEVNULL,
            stderr=subprocess.PIPE,
            text=True,
        )
        for k in range(WORKERS)
    ]
    rng = random.Random(seed)
    victims = rng.sample(procs, KILLED)
    # by half the trials: under load the poll below is slow, and a later moment can come after the
    # victim has run out of trials to hold (it then exits on its own instead of being killed)
    moments = sorted(rng.randint(TRIALS // 10, TRIALS // 2) for _ in victims)
    t0 = time.monotonic()
    held: list[int] = []  # trial numbers the victims held when killed
    st = None
    try:
        for victim, moment in zip(victims, moments, strict=True):
            while True:
                assert time.monotonic() - t0 < DEADLINE_S, (
                    f"no victim caught by {DEADLINE_S} s: victim exit {victim.poll()}, "
                    f"{sum(t.state == TrialState.COMPLETE for t in (st.get_trials(deepcopy=False) if st else []))} "
                    f"complete, moment {moment}; {victim.stderr.read() if victim.poll() is not None else ''}"
                )
                st = st or _load(url, tmp)  # one storage, re-read: a fresh connection per poll is slow
                trials = st.get_trials(deepcopy=False) if st is not None else []
                done = sum(t.state == TrialState.COMPLETE for t in trials)
                mine = [
                    t.number for t in trials if t.state == TrialState.RUNNING and _pid_of(t) == victim.pid
                ]
                if done >= moment and mine:
                    victim.send_signal(signal.SIGKILL)
                    victim.wait()
                    # what it held at its death (a trial seen running may have finished meanwhile)
                    held += [
                        t.number
                        for t in st.get_trials(deepcopy=False)
                        if t.state == TrialState.RUNNING and _pid_of(t) == victim.pid
                    ]
                    break
                time.sleep(0.02)
        codes = [p.wait(timeout=max(1.0, DEADLINE_S - (time.monotonic() - t0))) for p in procs]
    finally:
        for p in procs:
            if p.poll() is None:
                p.kill()
    errs = [p.stderr.read() for p in procs]
    return {
        "seed": seed,
        "codes": codes,
        "victims": [procs.index(v) for v in victims],
        "held": held,
        "errors": errs,
        "study": _load(url, tmp),
        "seconds": time.monotonic() - t0,
        "moments": moments,
    }


def check(res: dict) -> None:
    """The study's end state after the losses (``res`` of :func:`run_with_losses`)."""
    print(
        f"seed {res['seed']}: killed workers {res['victims']} at {res['moments']} complete trials, holding "
        f"trials {res['held']}; {res['seconds']:.1f} s"
    )
    for k, (code, err) in enumerate(zip(res["codes"], res["errors"], strict=True)):
        if k in res["victims"]:
            assert code == -signal.SIGKILL, (k, code, err)
        else:
            assert code == 0, (k, code, err)
    trials = res["study"].get_trials(deepcopy=False)
    states = [t.state for t in trials]
    assert states.count(TrialState.COMPLETE) == TRIALS, {s.name: states.count(s) for s in set(states)}
    assert TrialState.RUNNING not in states and TrialState.WAITING not in states
    by_number = {t.number: t for t in trials}
    assert res["held"], "no killed worker held a trial (each is killed while it runs one)"
    for n in res["held"]:  # each trial a killed worker held: failed, then run again to completion
        assert by_number[n].state == TrialState.FAIL, (n, by_number[n].state)
        retries = [t for t in trials if t.system_attrs.get("failed_trial") == n]
        assert any(t.state == TrialState.COMPLETE for t in retries), f"trial {n} was not run again"
        # the same design: every parameter the killed trial had drawn (it may have died mid-way)
        assert all(t.params[k] == v for t in retries for k, v in by_number[n].params.items())


def _fresh_db(url: str) -> str:
    name = f"loss_{uuid.uuid4().hex[:10]}"
    with psycopg.connect(url, autocommit=True) as conn:
        conn.execute(f'CREATE DATABASE "{name}"')
    return url.rsplit("/", 1)[0] + "/" + name


@pytest.mark.postgres
def test_postgres_study_survives_two_killed_workers(pg_url, tmp_path):  # noqa: F811
    res = run_with_losses(_fresh_db(pg_url), tmp_path, "heartbeat", seed=random.randrange(2**31))
    check(res)


def test_journal_study_survives_two_killed_workers(tmp_path):
    res = run_with_losses(str(tmp_path / "loss.journal"), tmp_path, "local", seed=random.randrange(2**31))
    check(res)
