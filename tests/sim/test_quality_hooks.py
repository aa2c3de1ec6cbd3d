"""The team's hooks in their child process (sim.quality.hooks): every misbehaviour is one stderr
line and exit 2, a hang is stopped at --hook-timeout, Ctrl-C is one line and exit 130, and a good
hook gives exactly what calling it in this process gives.

The team's module is written into tmp_path by each test, as a team would write it; every CLI case
runs the real command line in a subprocess."""

from __future__ import annotations

import importlib.util
import json
import os
import signal
import subprocess
import sys
import time
from pathlib import Path

import numpy as np
import pytest
from safetensors.numpy import save_file

from hw.errors import InputError
from sim.quality.evidence.stats import paired_interval
from sim.quality.prune.calibration import calibration_from_function, calibration_from_hook
from sim.quality.prune.oneshot import prune_tensors
from sim.quality.team.hooks import HookTimeout, Opaque, TeamHook
from sim.quality.team.user_eval import model_evidence
from sim.quality.team.weights import load_tensors

REPO = Path(__file__).resolve().parents[2]
ENV = {"PYTHONPATH": str(REPO), "PATH": "/usr/bin:/bin"}

HOOKS_SRC = """
import os, signal, sys, time
from pathlib import Path
import numpy as np

_D = np.load(Path(__file__).with_name("evaldata.npz"))

def score(weights):
    w = weights["fc.weight"]
    pred = np.argmax(_D["x"] @ w.T, axis=1)
    ok = (pred == _D["y"]).astype(float)
    return {"metric": float(ok.mean()), "per_sample": ok.tolist(), "higher_is_better": True}

def warns(weights):
    np.log(np.zeros(3))                  # RuntimeWarning: divide by zero
    np.float64(1e308) * 10               # RuntimeWarning: overflow
    import warnings; warnings.warn("the team's own warning")
    print("progress to stderr", file=sys.stderr)
    return score(weights)

def hang(weights):
    Path(os.environ["HOOK_PID_FILE"]).write_text(str(os.getpid())) if "HOOK_PID_FILE" in os.environ else None
    time.sleep(3600)

def os_exit(weights):
    os._exit(0)

def sys_exit(weights):
    sys.exit(0)

def keyboard(weights):
    raise KeyboardInterrupt

def raises(weights):
    raise RuntimeError("the eval server is down")

def through_a_library(weights):
    import team_helpers
    return team_helpers.summarise(weights)

def calib_raises():
    return {"fc.weight": 1 / 0}

def killed(weights):
    os.kill(os.getpid(), signal.SIGKILL)

def prints(weights):
    print("accuracy:", 0.9)
    return 0.9

def writes_fd1(weights):
    os.write(1, b"raw bytes on fd 1\\n")
    return 0.9

def nan(weights):
    return float("nan")

def inf_samples(weights):
    return {"metric": 0.5, "per_sample": [0.5, float("inf"), 0.5]}

def huge_samples(weights):
    return {"metric": 1.0, "per_sample": [1e308] * 10}

def an_object(weights):
    return object()

def a_string(weights):
    return "ninety percent"

def a_generator(weights):
    return (x for x in [0.9])

def metric_list(weights):
    return {"metric": [0.9], "per_sample": [1.0]}

def ragged(weights):
    n = 4 + int((weights["fc.weight"] == 0).any())     # the pruned model gets one sample more
    return {"metric": 0.5, "per_sample": [0.5] * n}

def zero_loss_metric(weights):
    return {"metric": 0.0, "higher_is_better": False}

class Model:
    pass

def returns_instance(weights):
    return {"metric": 0.5, "per_sample": Model()}

def calib_dense():
    return {"fc.weight": np.random.default_rng(0).standard_normal((64, 32))}

def calib_seq(weights):
    x = np.random.default_rng(1).standard_normal((64, 32))
    return {"fc.weight": x, "fc2.weight": np.tanh(x @ weights["fc.weight"].T)}

def calib_all_nan():
    return {"fc.weight": np.full((64, 32), np.nan)}

def calib_hang():
    time.sleep(3600)

def calib_prints():
    print("loading calibration batches")
    return calib_dense()

def calib_exit():
    os._exit(3)

def calib_list():
    return [np.zeros((4, 32))]

def calib_wrong_width():
    return {"fc.weight": np.zeros((64, 31))}
"""


def write_team(tmp: Path, *, samples: int = 200) -> Path:
    rng = np.random.default_rng(0)
    w = rng.standard_normal((16, 32))
    x = rng.standard_normal((samples, 32))
    np.savez(tmp / "evaldata.npz", x=x, y=np.argmax(x @ w.T, axis=1))
    (tmp / "team_hooks.py").write_text(HOOKS_SRC)
    (tmp / "hang_at_import.py").write_text("import time\ntime.sleep(3600)\n")
    # a second file of the team's; the error is raised inside the standard library (json's encoder)
    (tmp / "team_helpers.py").write_text(
        "import json\n\ndef summarise(weights):\n    return json.dumps({k: v for k, v in weights.items()})\n"
    )
    (tmp / "prints_at_import.py").write_text(
        "print('hello from import')\ndef score(weights):\n    return 1.0\n"
    )
    path = tmp / "model.safetensors"
    save_file(
        {
            "fc.weight": w.astype(np.float32),
            "fc.bias": np.zeros(16, np.float32),
            "fc2.weight": rng.standard_normal((8, 16)).astype(np.float32),
        },
        str(path),
    )
    np.savez(tmp / "nan_calib.npz", **{"fc.weight": np.full((64, 32), np.nan)})
    return path


def run_cli(args, cwd: Path, timeout: float = 120, env: dict | None = None) -> subprocess.CompletedProcess:
    return subprocess.run(
        [sys.executable, "-m", "explore.cli", "quality", *args],
        capture_output=True,
        text=True,
        cwd=cwd,
        timeout=timeout,
        env={**ENV, **(env or {})},
    )


def assert_one_error_line(r: subprocess.CompletedProcess, *fragments: str, traceback: bool = False) -> str:
    """Exit 2, exactly one stderr line ``sparsepe: error: ...`` holding every fragment, and a
    stdout that is empty or one JSON document (never the hook's output). ``traceback``: a hook that
    raised, whose trimmed traceback (:func:`team_traceback`) comes before that line."""
    lines = r.stderr.splitlines()
    if traceback:
        lines = lines[len(team_traceback(r)) :]
    assert r.returncode == 2, (r.returncode, r.stderr)
    assert len(lines) == 1 and lines[0].startswith("sparsepe: error: "), r.stderr
    for f in fragments:
        assert f in lines[0], (f, lines[0])
    if r.stdout.strip():
        json.loads(r.stdout)
    return lines[0]


def team_traceback(r: subprocess.CompletedProcess) -> list[str]:
    """The stderr lines before the error line: the header, then ``  File "...", line N, in fn``
    and the line's text for each frame in the team's files."""
    lines = r.stderr.splitlines()
    head = lines[:-1]
    assert head and "traceback in the team's code (most recent call last):" in head[0], r.stderr
    assert all(ln.startswith("  File ") or ln.startswith("    ") for ln in head[1:]), r.stderr
    return head


#: the hooks that raise: their traceback is shown, trimmed to the team's files
RAISING = {"sys_exit", "keyboard", "raises"}

EVAL_CASES = [
    ("os_exit", ["exited with status 0 instead of returning"]),
    ("sys_exit", ["raised SystemExit"]),
    ("keyboard", ["raised KeyboardInterrupt"]),
    ("raises", ["raised RuntimeError: the eval server is down"]),
    ("killed", ["was killed by SIGKILL"]),
    ("prints", ["printed to stdout", "accuracy: 0.9"]),
    ("writes_fd1", ["printed to stdout", "raw bytes on fd 1"]),
    ("nan", ["non-numeric result nan"]),
    ("inf_samples", ["non-finite per_sample"]),
    ("huge_samples", ["per_sample scores up to 1e+308"]),
    ("an_object", ["non-numeric result <object object>"]),
    ("a_string", ["non-numeric result 'ninety percent'"]),
    ("a_generator", ["non-numeric result <generator object>"]),
    ("metric_list", ["non-numeric metric"]),
    ("ragged", ["per_sample lengths differ"]),
    ("zero_loss_metric", ["non-finite quality loss", "dense metric is 0"]),
    ("returns_instance", ["non-numeric per_sample"]),
]


@pytest.mark.parametrize("fn,fragments", EVAL_CASES, ids=[c[0] for c in EVAL_CASES])
def test_misbehaving_eval_is_one_line_exit_2(tmp_path, fn, fragments):
    path = write_team(tmp_path)
    r = run_cli(
        ["--weights", str(path), "--eval", f"team_hooks:{fn}", "--json", "--hook-timeout", "30"], tmp_path
    )
    line = assert_one_error_line(r, f"eval 'team_hooks:{fn}'", *fragments, traceback=fn in RAISING)
    assert "Warning" not in line and "Traceback" not in r.stderr
    if fn in RAISING:
        tb = team_traceback(r)
        assert 'team_hooks.py", line' in tb[1] and f"in {fn}" in tb[1] and len(tb) == 3, tb
    assert r.stdout == ""


@pytest.mark.parametrize(
    "hook,frames,error",
    [
        (
            ["--eval", "team_hooks:through_a_library"],
            [
                ("team_hooks.py", "through_a_library", "return team_helpers.summarise(weights)"),
                ("team_helpers.py", "summarise", "return json.dumps({k: v for k, v in weights.items()})"),
            ],
            "on the dense weights: raised TypeError: Object of type ndarray is not JSON serializable",
        ),
        (
            ["--calib", "team_hooks:calib_raises"],
            [("team_hooks.py", "calib_raises", 'return {"fc.weight": 1 / 0}')],
            "raised ZeroDivisionError: division by zero",
        ),
    ],
    ids=["eval-through-a-library", "calib"],
)
def test_a_raising_hook_shows_its_traceback_in_the_teams_files(tmp_path, hook, frames, error):
    """Issue 38 item 4: the frames in the team's files (file, line, the line's text), outermost
    first, none of the tool's or the standard library's (json's encoder raised), then the one line."""
    path = write_team(tmp_path)
    r = run_cli(["--weights", str(path), *hook, "--json"], tmp_path)
    assert_one_error_line(r, error, traceback=True)
    tb = team_traceback(r)[1:]
    assert len(tb) == 2 * len(frames), r.stderr
    src = {f: (tmp_path / f).read_text().splitlines() for f, _, _ in frames}
    for (file, fn, text), (where, line) in zip(frames, zip(tb[::2], tb[1::2], strict=True), strict=True):
        assert where.startswith(f'  File "{tmp_path / file}", line ') and where.endswith(f"in {fn}"), where
        number = int(where.split(", line ")[1].split(",")[0])
        assert src[file][number - 1].strip() == text == line.strip()
    assert "json" + os.sep + "encoder.py" not in r.stderr and "team_code.py" not in r.stderr


@pytest.mark.parametrize(
    "args,fragments",
    [
        (["--eval", "os:getcwd"], ["eval 'os:getcwd'", "built-in function"]),
        (["--eval", "collections:OrderedDict"], ["is a class"]),
        (["--eval", "team_hooks:no_such"], ["has no function 'no_such'"]),
        (["--eval", "prints_at_import:score"], ["printed to stdout", "hello from import"]),
        (
            ["--eval", "team_hooks:score", "--calib", "team_hooks:calib_all_nan"],
            ["calibration function team_hooks:calib_all_nan", "holds NaN or infinity"],
        ),
        (
            ["--eval", "team_hooks:score", "--calib", "nan_calib.npz"],
            ["nan_calib.npz", "holds NaN or infinity"],
        ),
        (["--calib", "nan_calib.npz"], ["nan_calib.npz", "holds NaN or infinity"]),
        (
            ["--calib", "team_hooks:calib_prints"],
            ["calibration function team_hooks:calib_prints", "printed to stdout"],
        ),
        (
            ["--calib", "team_hooks:calib_exit"],
            ["calibration function team_hooks:calib_exit", "exited with status 3"],
        ),
        (["--calib", "team_hooks:calib_list"], ["returned list; expected a dict"]),
        (["--calib", "team_hooks:calib_wrong_width"], ["width 31", "takes 32 input features"]),
        (
            ["--eval", "team_hooks:score", "--hook-timeout", "0"],
            ["--hook-timeout", "must be a number of seconds > 0"],
        ),
        (["--eval", "team_hooks:score", "--hook-timeout", "nan"], ["--hook-timeout"]),
        (
            ["--hook-timeout", "5"],
            ["--hook-timeout", "give --eval MODULE:FUNCTION or --calib MODULE:FUNCTION"],
        ),
        (["--calib", "nan_calib.npz", "--hook-timeout", "5"], ["--hook-timeout"]),
    ],
    ids=[
        "builtin",
        "class",
        "missing",
        "prints-at-import",
        "calib-fn-all-nan",
        "calib-file-all-nan-eval",
        "calib-file-all-nan",
        "calib-prints",
        "calib-exits",
        "calib-list",
        "calib-shape",
        "timeout-0",
        "timeout-nan",
        "timeout-without-hook",
        "timeout-with-calib-file",
    ],
)
def test_bad_hook_inputs_are_one_line_exit_2(tmp_path, args, fragments):
    path = write_team(tmp_path)
    r = run_cli(["--weights", str(path), *args, "--json"], tmp_path)
    assert_one_error_line(r, *fragments)
    assert r.stdout == ""


@pytest.mark.parametrize("value", ["", ",", "int8,,bf16"])
def test_empty_precision_is_one_line_exit_2(tmp_path, value):
    r = run_cli(["--precision", value, "--json"], tmp_path)
    assert_one_error_line(r, "--precision", "empty")


@pytest.mark.parametrize(
    "args,what",
    [
        (
            ["--eval", "team_hooks:hang"],
            "eval 'team_hooks:hang' on the dense weights: did not return within 2 s",
        ),
        (
            ["--eval", "hang_at_import:score"],
            "eval 'hang_at_import:score': its import did not finish within 2 s",
        ),
        (
            ["--calib", "team_hooks:calib_hang"],
            "calibration function team_hooks:calib_hang: did not return within 2 s",
        ),
    ],
    ids=["eval", "import", "calibration"],
)
def test_hang_is_stopped_at_the_timeout(tmp_path, args, what):
    path = write_team(tmp_path)
    t0 = time.monotonic()
    r = run_cli(["--weights", str(path), *args, "--hook-timeout", "2", "--json"], tmp_path, timeout=60)
    elapsed = time.monotonic() - t0
    assert_one_error_line(r, what, "(--hook-timeout); stopped")
    assert elapsed < 30, (
        elapsed
    )  # the 2 s limit plus a loaded machine's interpreter start-ups; a hang never returns


def test_numpy_warnings_and_stderr_of_a_good_hook_are_never_printed(tmp_path):
    path = write_team(tmp_path)
    r = run_cli(["--weights", str(path), "--eval", "team_hooks:warns", "--json"], tmp_path)
    assert r.returncode == 0 and r.stderr == "", r.stderr
    assert json.loads(r.stdout)["dense_metric"] == 1.0


def _pid_gone(pid: int, within: float) -> bool:
    end = time.monotonic() + within
    while time.monotonic() < end:
        try:
            os.kill(pid, 0)
        except ProcessLookupError:
            return True
        try:  # a zombie still answers kill(0): it is dead once its state says so
            if Path(f"/proc/{pid}/stat").read_text().split(")")[-1].split()[0] == "Z":
                return True
        except OSError:
            return True
        time.sleep(0.05)
    return False


def _wait_for_pid(pid_file: Path, within: float = 60) -> int:
    end = time.monotonic() + within
    while time.monotonic() < end:
        if pid_file.exists() and pid_file.read_text().strip():
            return int(pid_file.read_text())
        time.sleep(0.05)
    raise AssertionError("the hook never started")


def test_ctrl_c_is_one_line_exit_130_and_kills_the_hook(tmp_path):
    path = write_team(tmp_path)
    pid_file = tmp_path / "hook.pid"
    proc = subprocess.Popen(
        [
            sys.executable,
            "-m",
            "explore.cli",
            "quality",
            "--weights",
            str(path),
            "--eval",
            "team_hooks:hang",
            "--json",
        ],
        cwd=tmp_path,
        stdout=subprocess.PIPE,
        stderr=subprocess.PIPE,
        text=True,
        env={**ENV, "HOOK_PID_FILE": str(pid_file)},
        start_new_session=True,
    )
    try:
        hook_pid = _wait_for_pid(pid_file)
        time.sleep(0.2)
        os.killpg(proc.pid, signal.SIGINT)  # Ctrl-C: the whole foreground process group
        out, err = proc.communicate(timeout=30)
    finally:
        if proc.poll() is None:
            proc.kill()
            proc.wait()
    assert proc.returncode == 130, (proc.returncode, err)
    assert err == "sparsepe: interrupted\n" and out == ""
    assert _pid_gone(hook_pid, 5)


def test_child_dies_with_its_parent(tmp_path):
    """SIGKILL of the tool: the hook's process (in its own session) follows within seconds."""
    write_team(tmp_path)
    pid_file = tmp_path / "hook.pid"
    code = (
        "import sys, numpy as np; from sim.quality.team.hooks import TeamHook; "
        f"h = TeamHook('team_hooks:hang', {str(tmp_path)!r}); h.call({{'w': np.zeros(4)}})"
    )
    proc = subprocess.Popen(
        [sys.executable, "-c", code],
        env={**ENV, "HOOK_PID_FILE": str(pid_file)},
        stdout=subprocess.DEVNULL,
        stderr=subprocess.DEVNULL,
    )
    try:
        hook_pid = _wait_for_pid(pid_file)
        proc.kill()
        proc.wait()
    finally:
        if proc.poll() is None:
            proc.kill()
    assert _pid_gone(hook_pid, 5)


def test_an_interrupted_call_kills_the_child(tmp_path):
    write_team(tmp_path)

    class Alarm(Exception):
        pass

    def ring(*_):
        raise Alarm

    old = signal.signal(signal.SIGALRM, ring)
    hook = TeamHook("team_hooks:hang", tmp_path, timeout=HookTimeout(60))
    pid = hook.pid
    try:
        signal.setitimer(signal.ITIMER_REAL, 1.0)
        with pytest.raises(Alarm):
            hook.call({"fc.weight": np.zeros((4, 4))})
    finally:
        signal.setitimer(signal.ITIMER_REAL, 0)
        signal.signal(signal.SIGALRM, old)
    assert hook.closed and _pid_gone(pid, 2)
    with pytest.raises(RuntimeError, match="closed"):
        hook.call(None)


def _team_module(tmp: Path):
    """The team's module imported in this process: the in-process call the hooks replaced."""
    spec = importlib.util.spec_from_file_location("team_hooks_inprocess", tmp / "team_hooks.py")
    mod = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(mod)
    return mod


def test_good_eval_gives_exactly_the_in_process_results(tmp_path):
    path = write_team(tmp_path)
    mod = _team_module(tmp_path)
    dense = load_tensors(path)
    shot = prune_tensors(dense, 2, 4)
    d, s = (
        mod.score({k: v.copy() for k, v in dense.items()}),
        mod.score({k: v.copy() for k, v in shot.tensors.items()}),
    )
    iv = paired_interval(
        [np.asarray(d["per_sample"])], [np.asarray(s["per_sample"])], lambda a, b: b - a, seed=0
    )
    ev = model_evidence(path, "team_hooks:score", base_dir=tmp_path)
    assert ev["dense_metric"] == d["metric"] and ev["oneshot_metric"] == s["metric"]
    assert ev["delta"] == s["metric"] - d["metric"] and ev["delta_ci"] == [iv.low, iv.high]
    assert (
        d["metric"] == 1.0 and s["metric"] < 1.0
    )  # the eval sees the pruned weights, not the dense ones twice
    # the same through the command line
    r = run_cli(["--weights", str(path), "--eval", "team_hooks:score", "--json"], tmp_path)
    assert r.returncode == 0 and r.stderr == "", r.stderr
    out = json.loads(r.stdout)
    assert (out["dense_metric"], out["oneshot_metric"], out["delta_ci"]) == (
        d["metric"],
        s["metric"],
        [iv.low, iv.high],
    )


@pytest.mark.parametrize("fn", ["calib_dense", "calib_seq"])
def test_good_calibration_function_prunes_exactly_as_in_process(tmp_path, fn):
    path = write_team(tmp_path)
    dense = load_tensors(path)
    mine = prune_tensors(
        dense,
        2,
        4,
        calibration=calibration_from_function(
            getattr(_team_module(tmp_path), fn), f"function team_hooks:{fn}"
        ),
    )
    with calibration_from_hook(f"team_hooks:{fn}", tmp_path) as cal:
        assert cal.sequential == (fn == "calib_seq")
        theirs = prune_tensors(dense, 2, 4, calibration=cal)
    assert mine.method == theirs.method == "sparsegpt" and mine.calibration == theirs.calibration
    assert set(mine.masks) == set(theirs.masks) == {"fc.weight", "fc2.weight"}
    for k in dense:
        np.testing.assert_array_equal(mine.tensors[k], theirs.tensors[k])
    if fn == "calib_seq":
        assert theirs.calibration["calls"] == 2  # fc, then fc2 with inputs from the pruned fc


def test_only_changed_tensors_are_sent_and_the_hook_gets_a_fresh_copy(tmp_path):
    (tmp_path / "mut.py").write_text(
        "import numpy as np\n"
        "def total(weights):\n"
        "    out = {k: float(v.sum()) for k, v in weights.items()}\n"
        "    for v in weights.values():\n"
        "        v[...] = 1e6  # the hook scribbles on its copy\n"
        "    return out\n"
    )
    a, b = np.arange(6.0).reshape(2, 3), np.full((3, 2), 2.0, np.float32)
    with TeamHook("mut:total", tmp_path) as hook:
        assert hook.call({"a": a, "b": b}) == {"a": 15.0, "b": 12.0}
        assert hook.call({"a": a, "b": b}) == {"a": 15.0, "b": 12.0}  # the child's copy is intact
        b2 = b * 0
        assert hook.call({"a": a, "b": b2}) == {"a": 15.0, "b": 0.0}
        assert hook.call({"b": b2, "c": np.array(7)}) == {"b": 0.0, "c": 7.0}  # a dropped, c added (0-d kept)
    np.testing.assert_array_equal(a, np.arange(6.0).reshape(2, 3))  # never written in the parent


def test_plain_values_cross_over_and_others_are_opaque(tmp_path):
    (tmp_path / "vals.py").write_text(
        "import numpy as np\n"
        "class Mine:\n    pass\n"
        "def many(weights):\n"
        "    return {'f': np.float32(0.5), 'i': np.int64(3), 'b': np.bool_(True), 'a': np.arange(3),\n"
        "            't': (1.0, 2.0), 'mine': Mine(), 'nested': [{'x': Mine()}], 7: None}\n"
    )
    with TeamHook("vals:many", tmp_path) as hook:
        out = hook.call({})
    assert out["f"] == 0.5 and type(out["f"]) is float and out["i"] == 3 and out["b"] is True
    np.testing.assert_array_equal(out["a"], np.arange(3))
    assert (
        out["t"] == [1.0, 2.0] and out["mine"] == Opaque("Mine") and out["nested"] == [{"x": Opaque("Mine")}]
    )
    assert out[7] is None


def test_load_errors_name_the_hook(tmp_path):
    write_team(tmp_path)
    for spec, msg in (
        ("team_hooks", "expected MODULE:FUNCTION"),
        ("no_such_module:f", "import failed"),
        ("team_hooks:no_such", "has no function"),
    ):
        with pytest.raises(InputError, match=msg) as e:
            TeamHook(spec, tmp_path)
        assert str(e.value).startswith(f"eval {spec!r}: ")
