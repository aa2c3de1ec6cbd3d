"""A parallel sweep under signals, through the real command line in its own process group.

* SIGKILL of the sweep's parent: every worker it started dies with it (hw.host.die_with_parent):
  no process of the group is left 10 s later.
* SIGINT to the process group (Ctrl-C at a terminal): one line ``sparsepe: interrupted``, exit code
  130, no traceback, and the trials that finished are kept in the study.

The sweep evaluates with the TEST-ONLY analytic objective (slowed to 0.2 s a trial), put in place of
the product's evaluator by tests/explore/_signal_sweep.py.
"""

from __future__ import annotations

import os
import signal
import subprocess
import sys
import time
from pathlib import Path

import optuna
from optuna.trial import TrialState

from explore.storage import open_storage, resolve_storage
from tests.explore.conftest import SMALL_CONFIG

REPO = Path(__file__).resolve().parents[2]


def _group(pgid: int) -> list[int]:
    """Live (not zombie) processes of the process group ``pgid``."""
    out = []
    for d in os.listdir("/proc"):
        if not d.isdigit():
            continue
        try:
            stat = Path(f"/proc/{d}/stat").read_text()
        except OSError:
            continue
        fields = stat.rsplit(")", 1)[1].split()
        if int(fields[2]) == pgid and fields[0] != "Z":
            out.append(int(d))
    return out


def _children(pid: int) -> list[int]:
    try:
        return [int(x) for x in Path(f"/proc/{pid}/task/{pid}/children").read_text().split()]
    except OSError:
        return []


def _start(tmp: Path, workers: int) -> subprocess.Popen:
    cfg = tmp / "c.toml"
    cfg.write_text(SMALL_CONFIG.replace("{workload}", "bert-base"))
    env = {**os.environ, "PYTHONPATH": str(REPO), "SPARSEPE_TEST_SLOW_S": "0.2"}
    return subprocess.Popen(
        [
            sys.executable,
            "-m",
            "tests.explore._signal_sweep",
            "sweep",
            str(cfg),
            "--out",
            str(tmp / "out"),
            "--trials",
            "200",
            "--workers",
            str(workers),
        ],
        env=env,
        stdout=subprocess.PIPE,
        stderr=subprocess.PIPE,
        text=True,
        start_new_session=True,
    )


def _complete(tmp: Path) -> int:
    try:
        st = optuna.load_study(
            study_name="small", storage=open_storage(resolve_storage(None, tmp / "out"), create=False)
        )
    except Exception:  # not created yet
        return 0
    return len(st.get_trials(deepcopy=False, states=(TrialState.COMPLETE,)))


def _wait_for_trials(p: subprocess.Popen, tmp: Path, n: int, workers: int) -> None:
    t0 = time.monotonic()
    while _complete(tmp) < n or len(_children(p.pid)) < (workers if workers > 1 else 0):
        assert p.poll() is None, p.stderr.read()
        assert time.monotonic() - t0 < 120, "the sweep did not start"
        time.sleep(0.2)


def test_sigkill_of_a_parallel_sweep_leaves_no_process(tmp_path):
    p = _start(tmp_path, workers=2)
    try:
        _wait_for_trials(p, tmp_path, 3, workers=2)
        workers = _children(p.pid)
        assert len(workers) >= 2
        os.kill(p.pid, signal.SIGKILL)
        p.wait()
        t0 = time.monotonic()
        while _group(p.pid) and time.monotonic() - t0 < 10:
            time.sleep(0.1)
        left = _group(p.pid)
        assert not left, f"processes of the killed sweep still alive after 10 s: {left}"
    finally:
        for pid in _group(p.pid):
            os.kill(pid, signal.SIGKILL)


def test_ctrl_c_of_a_sweep_is_one_line_and_keeps_the_trials(tmp_path):
    for workers in (1, 2):
        tmp = tmp_path / f"w{workers}"
        tmp.mkdir()
        p = _start(tmp, workers=workers)
        try:
            _wait_for_trials(p, tmp, 3, workers=workers)
            os.killpg(p.pid, signal.SIGINT)
            _, err = p.communicate(timeout=60)
        finally:
            if p.poll() is None:
                os.killpg(p.pid, signal.SIGKILL)
        lines = [ln for ln in err.splitlines() if ln.strip()]
        assert p.returncode == 130, err
        assert lines and lines[-1] == "sparsepe: interrupted", err
        assert "Traceback" not in err and "error" not in err, err
        assert _complete(tmp) >= 3, "the finished trials are kept"
        time.sleep(1)
        assert not _group(p.pid), "no worker outlives the interrupted sweep"
