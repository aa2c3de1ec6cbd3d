"""A signal at a random moment of a sweep, 50 times, with two CPU-bound processes alongside.

Each run is ``sparsepe sweep`` (the TEST-ONLY analytic objective, tests/explore/_signal_sweep.py)
on 1 or 2 workers, in a process group of its own, started from a process that ignores SIGINT the
way a shell's background job does (the window explore.interrupt closes). Once the run's signal
handlers are in place (its /proc status says SIGTERM is caught: before that the process is
CPython's own start-up, none of the tool's code), it gets, after a random delay that spans its
imports, the prewarm, the trials, the robustness sampling and the report, either SIGINT to its
group (Ctrl-C) or SIGTERM to its own process (``kill``). A run is lost unless:

* it ends within 2 s of the signal with exit code 130 (SIGINT) or 143 (SIGTERM), and what it writes
  after the progress lines it printed before the signal is one line (``sparsepe: interrupted`` /
  ``sparsepe: terminated (SIGTERM)``), no traceback; or it had finished (exit 0) as the signal came;
* no process of its group is left;
* every trial that was COMPLETE just before the signal is COMPLETE afterwards;
* (every fifth run) a rerun of the same command exits 0 and holds the target of COMPLETE trials,
  the kept ones among them.
"""

from __future__ import annotations

import os
import random
import signal
import subprocess
import sys
import time
from pathlib import Path

import optuna
import pytest
from optuna.trial import TrialState

from explore.storage import open_storage, resolve_storage
from tests.explore.conftest import SMALL_CONFIG

REPO = Path(__file__).resolve().parents[2]
RUNS = 50
TRIALS = 10
#: Seconds from the signal to the exit, at most (the issue's contract).
DEADLINE_S = 2.0


def _group(pgid: int) -> list[int]:
    out = []
    for d in os.listdir("/proc"):
        if d.isdigit():
            try:
                fields = Path(f"/proc/{d}/stat").read_text().rsplit(")", 1)[1].split()
            except OSError:
                continue
            if int(fields[2]) == pgid and fields[0] != "Z":
                out.append(int(d))
    return out


def _catches_sigterm(pid: int) -> bool:
    try:
        for ln in Path(f"/proc/{pid}/status").read_text().splitlines():
            if ln.startswith("SigCgt:"):
                return bool(int(ln.split()[1], 16) & (1 << (signal.SIGTERM - 1)))
    except OSError:
        pass
    return False


def _complete(out: Path) -> set[int]:
    try:
        st = optuna.load_study(
            study_name="small", storage=open_storage(resolve_storage(None, out), create=False)
        )
    except Exception:  # not created yet
        return set()
    return {t.number for t in st.get_trials(deepcopy=False, states=(TrialState.COMPLETE,))}


def _command(cfg: Path, out: Path, workers: int) -> list[str]:
    return [
        sys.executable,
        "-m",
        "tests.explore._signal_sweep",
        "sweep",
        str(cfg),
        "--out",
        str(out),
        "--trials",
        str(TRIALS),
        "--workers",
        str(workers),
    ]


def _ignore_sigint() -> None:
    signal.signal(signal.SIGINT, signal.SIG_IGN)


def _run(cfg: Path, out: Path, workers: int, env: dict) -> subprocess.Popen:
    # started with SIGINT ignored, as a script's background job is (sh -c 'cmd &'), in a group of
    # its own; no shell stays between (dash dies of the group's SIGINT itself, and its exit status
    # would hide the sweep's)
    return subprocess.Popen(
        _command(cfg, out, workers),
        env=env,
        stdout=subprocess.DEVNULL,
        stderr=subprocess.PIPE,
        text=True,
        start_new_session=True,
        preexec_fn=_ignore_sigint,
    )


def _sweep_pid(sh: subprocess.Popen) -> int | None:
    return sh.pid


def _one(k: int, rng: random.Random, tmp: Path, env: dict) -> str | None:
    """One run; None when it met the contract, else what went wrong."""
    workers = 1 + k % 2
    sig = signal.SIGINT if (k // 2) % 2 == 0 else signal.SIGTERM
    cfg, out = tmp / "c.toml", tmp / f"run{k}"
    sh = _run(cfg, out, workers, env)
    try:
        t0 = time.monotonic()
        pid = None
        while pid is None or not _catches_sigterm(pid):
            assert sh.poll() is None, sh.stderr.read()
            assert time.monotonic() - t0 < 60, "the sweep did not start"
            pid = _sweep_pid(sh)
            time.sleep(0.005)
        time.sleep(
            rng.uniform(0.0, 12.0)
        )  # the imports, prewarm, 10 trials and the report take about 12 s here
        before = _complete(out)
        if sh.poll() is not None:
            return None if sh.returncode == 0 else f"run {k}: exit {sh.returncode} before the signal"
        t_sig = time.monotonic()
        try:
            os.killpg(sh.pid, sig) if sig == signal.SIGINT else os.kill(pid, sig)
        except ProcessLookupError:
            pass
        try:
            _, err = sh.communicate(timeout=30)
        except subprocess.TimeoutExpired:
            return f"run {k}: {sig.name} after {t_sig - t0:.2f} s: still running 30 s later"
        took = time.monotonic() - t_sig
        lines = [ln for ln in err.splitlines() if ln.strip()]
        want = {
            signal.SIGINT: (130, "sparsepe: interrupted"),
            signal.SIGTERM: (143, "sparsepe: terminated (SIGTERM)"),
        }[sig]
        if sh.returncode == 0 and "results:" in err:
            pass  # it had finished its report as the signal came
        elif (
            sh.returncode != want[0]
            or lines[-1:] != [want[1]]
            or err.count(want[1]) != 1
            or "Traceback" in err
        ):
            return (
                f"run {k} (workers {workers}, {sig.name} {t_sig - t0:.2f} s in): "
                f"exit {sh.returncode}, stderr {err[-400:]!r}"
            )
        elif took > DEADLINE_S:
            return f"run {k} (workers {workers}, {sig.name} {t_sig - t0:.2f} s in): ended {took:.2f} s after the signal"
        time.sleep(0.3)
        if _group(sh.pid):
            return f"run {k}: processes left: {_group(sh.pid)}"
        after = _complete(out)
        if not before <= after:
            return f"run {k}: finished trials lost: {sorted(before - after)}"
        if k % 5 == 0:
            again = subprocess.run(
                _command(cfg, out, workers), env=env, capture_output=True, text=True, timeout=300
            )
            final = _complete(out)
            if again.returncode != 0 or len(final) < TRIALS or not after <= final:
                return (
                    f"run {k}: the rerun did not resume (exit {again.returncode}, {len(final)} complete): "
                    f"{again.stderr[-300:]!r}"
                )
        return None
    finally:
        for p in _group(sh.pid):
            try:
                os.kill(p, signal.SIGKILL)
            except ProcessLookupError:
                pass


@pytest.mark.slow
def test_fifty_signals_at_random_moments_under_load_lose_nothing(tmp_path):
    (tmp_path / "c.toml").write_text(SMALL_CONFIG.replace("{workload}", "bert-base"))
    env = {**os.environ, "PYTHONPATH": str(REPO), "SPARSEPE_TEST_SLOW_S": "0.05"}
    hogs = [subprocess.Popen([sys.executable, "-c", "while 1: pass"]) for _ in range(2)]
    rng = random.Random(38)
    lost = []
    try:
        for k in range(RUNS):
            what = _one(k, rng, tmp_path, env)
            if what:
                lost.append(what)
    finally:
        for h in hogs:
            h.kill()
            h.wait()
    assert not lost, f"{len(lost)} of {RUNS} runs lost the signal:\n" + "\n".join(lost)
