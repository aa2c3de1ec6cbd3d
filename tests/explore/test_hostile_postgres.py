"""Two first workers on a fresh PostgreSQL database both start (issue 16).

Optuna's RDBStorage creates its tables on first use; two processes doing that at once raced
("duplicate key value violates unique constraint pg_type_typname_nsp_index": 6 of 6 tries).
explore.storage creates the schema under a PostgreSQL advisory lock. The server is the one of
tests/explore/test_postgres.py (SPARSEPE_TEST_POSTGRES_URL, or a private server it starts); each
run gets a fresh database. Uses the TEST-ONLY analytic objective.
"""

from __future__ import annotations

import os
import subprocess
import sys
import uuid
from pathlib import Path

import optuna
import pytest
from optuna.trial import TrialState

from explore.storage import open_storage, resolve_storage
from tests.explore.test_postgres import pg_url  # noqa: F401  (the server fixture)

REPO = Path(__file__).resolve().parents[2]
pytestmark = pytest.mark.postgres


def _fresh_db(url: str) -> str:
    import psycopg

    name = f"fresh_{uuid.uuid4().hex[:10]}"
    with psycopg.connect(url, autocommit=True) as conn:
        conn.execute(f'CREATE DATABASE "{name}"')
    return url.rsplit("/", 1)[0] + "/" + name


@pytest.mark.parametrize("attempt", range(3))
def test_two_sweeps_start_at_once_on_a_fresh_database(pg_url, small_config, tmp_path, attempt):  # noqa: F811
    url = _fresh_db(pg_url)
    cfg = small_config()
    env = {**os.environ, "PYTHONPATH": str(REPO), "SPARSEPE_TEST_SLOW_S": "0.02"}
    procs = [
        subprocess.Popen(
            [
                sys.executable,
                "-m",
                "tests.explore._driver",
                str(cfg),
                url,
                "race",
                "8",
                "1",
                str(k),
                "tpe",
                str(tmp_path / f"out{k}"),
            ],
            env=env,
            stdout=subprocess.PIPE,
            stderr=subprocess.PIPE,
            text=True,
        )
        for k in range(2)
    ]
    results = [(p.wait(timeout=300), p.stderr.read()) for p in procs]
    for code, err in results:
        assert code == 0, err
        assert "duplicate key" not in err
    study = optuna.load_study(
        study_name="race", storage=open_storage(resolve_storage(url, tmp_path), create=False)
    )
    assert len(study.get_trials(deepcopy=False, states=(TrialState.COMPLETE,))) == 8
