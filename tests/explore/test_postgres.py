"""Distributed sweep on a real PostgreSQL server: 2 worker processes, one study.

The server is ``SPARSEPE_TEST_POSTGRES_URL`` when set (CI starts one); otherwise the fixture
starts a private server (initdb + pg_ctl as the ``postgres`` user) in tmp_path on a free loopback
port, and skips with a reason when neither works. Uses the TEST-ONLY analytic objective.
"""

from __future__ import annotations

import csv
import glob
import os
import pwd
import shutil
import socket
import subprocess
import sys
import uuid
from pathlib import Path

import optuna
import pytest
from optuna.trial import TrialState

from explore.storage import WORKER_ATTR, open_storage, resolve_storage

REPO = Path(__file__).resolve().parents[2]
pytestmark = pytest.mark.postgres


def _free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


def _pg_bin() -> Path | None:
    found = sorted(glob.glob("/usr/lib/postgresql/*/bin/initdb"))
    if found:
        return Path(found[-1]).parent
    w = shutil.which("initdb")
    return Path(w).parent if w else None


@pytest.fixture(scope="module")
def pg_url(tmp_path_factory):
    url = os.environ.get("SPARSEPE_TEST_POSTGRES_URL")
    if url:
        yield url
        return
    binary = _pg_bin()
    if binary is None:
        pytest.skip("no PostgreSQL binaries and no SPARSEPE_TEST_POSTGRES_URL")
    base = tmp_path_factory.mktemp("pg")
    data, log = base / "data", base / "log"
    port = _free_port()
    as_postgres: list[str] = []
    if os.geteuid() == 0:
        try:
            pw = pwd.getpwnam("postgres")
        except KeyError:
            pytest.skip("running as root but there is no 'postgres' user to run the server")
        os.chown(base, pw.pw_uid, pw.pw_gid)
        for parent in list(base.parents)[:3]:  # the tmp dirs above must be traversable
            os.chmod(parent, os.stat(parent).st_mode | 0o711)
        as_postgres = ["runuser", "-u", "postgres", "--"]
    r = subprocess.run(
        [*as_postgres, str(binary / "initdb"), "-D", str(data), "-A", "trust", "-U", "postgres"],
        capture_output=True,
        text=True,
    )
    if r.returncode != 0:
        pytest.skip(
            f"initdb failed: {r.stderr.strip().splitlines()[-1] if r.stderr.strip() else r.returncode}"
        )
    opts = f"-c listen_addresses=127.0.0.1 -p {port} -k {base} -c fsync=off -c synchronous_commit=off"  # throwaway
    r = subprocess.run(
        [*as_postgres, str(binary / "pg_ctl"), "-D", str(data), "-o", opts, "-l", str(log), "-w", "start"],
        capture_output=True,
        text=True,
    )
    if r.returncode != 0:
        pytest.skip(f"pg_ctl start failed: {r.stderr.strip()}")
    try:
        yield f"postgresql://postgres@127.0.0.1:{port}/postgres"
    finally:
        subprocess.run(
            [*as_postgres, str(binary / "pg_ctl"), "-D", str(data), "-m", "immediate", "stop"],
            capture_output=True,
        )


def test_two_workers_on_one_postgres_study(pg_url, small_config, tmp_path):
    study_name = f"pg-{uuid.uuid4().hex[:8]}"
    out = tmp_path / "out"
    env = {**os.environ, "PYTHONPATH": str(REPO), "SPARSEPE_TEST_SLOW_S": "0.03"}
    args = [
        sys.executable,
        "-m",
        "tests.explore._driver",
        str(small_config()),
        pg_url,
        study_name,
        "30",
        "2",
        "0",
        "tpe",
        str(out),
    ]
    r = subprocess.run(args, env=env, capture_output=True, text=True, timeout=300)
    assert r.returncode == 0, r.stderr
    storage = open_storage(resolve_storage(pg_url, out), create=False)
    study = optuna.load_study(study_name=study_name, storage=storage)
    trials = study.get_trials(deepcopy=False)
    done = [t for t in trials if t.state == TrialState.COMPLETE]
    assert len(done) == 30  # exactly the target, none lost
    by_worker: dict[str, set[int]] = {}
    for t in done:
        by_worker.setdefault(t.system_attrs[WORKER_ATTR], set()).add(t.number)
    assert len(by_worker) == 2, "both workers contribute"
    a, b = by_worker.values()
    assert not (a & b), "no trial is counted by two workers"
    numbers = [t.number for t in trials]
    assert len(numbers) == len(set(numbers)), "no duplicated trial"
    rows = list(csv.DictReader(open(out / "trials.csv")))
    complete_rows = {int(row["number"]) for row in rows if row["state"] == "COMPLETE"}
    assert complete_rows == a | b, "the exported result is the union of both workers' trials"
    # a second machine joining the same study with the same target adds nothing
    r = subprocess.run(args, env=env, capture_output=True, text=True, timeout=300)
    assert r.returncode == 0, r.stderr
    study = optuna.load_study(study_name=study_name, storage=storage)
    assert len(study.get_trials(deepcopy=False, states=(TrialState.COMPLETE,))) == 30
