"""Hostile input (issue 16): every bad input ends in exactly one stderr line
``sparsepe: error: <where>: <what>`` and exit code 2, with no traceback, no hang, nothing created
before validation passes and nothing written outside the output directory.

The command line runs in this process (``explore.cli.main``) so that each case costs
milliseconds; sweeps that must run trials use the TEST-ONLY analytic objective
(``tests/explore/_analytic.py``) or its failing wrapper (``tests/explore/_hostile_eval.py``).
"""

from __future__ import annotations

import json
import os
import zipfile
from pathlib import Path

import numpy as np
import pytest
from optuna.trial import TrialState

import explore.prewarm
import explore.study
from explore.cli import main
from hw.errors import InputError
from tests.explore.conftest import SMALL_CONFIG

BASE = SMALL_CONFIG.replace("{workload}", "bert-base")


def run(argv, capsys):
    """(exit code, stdout, stderr) of ``sparsepe *argv`` in this process."""
    with pytest.raises(SystemExit) as e:
        main([str(a) for a in argv])
    out, err = capsys.readouterr()
    return e.value.code, out, err


def one_line(code, err, needle: str | None = None):
    lines = [ln for ln in err.splitlines() if ln.strip()]
    assert code == 2, err
    assert len(lines) == 1, err
    assert lines[0].startswith("sparsepe: error: "), err
    assert "Traceback" not in err
    if needle is not None:
        assert needle in lines[0], lines[0]
    return lines[0]


def strict_json(text: str):
    """json.loads that refuses NaN / Infinity (standard JSON only)."""

    def bad(x):
        raise ValueError(f"non-standard JSON constant {x}")

    return json.loads(text, parse_constant=bad)


# ---- configs: validated at the door, naming the file and the key, nothing created -------------

CONFIG_CASES = {
    # name: (old text, new text, the key the error must name)
    "ambient nan": ("ambient_c = 45.0", "ambient_c = nan", "fixed.ambient_c"),
    "ambient absurd": ("ambient_c = 45.0", "ambient_c = 1e9", "fixed.ambient_c"),
    "pipeline 1000": ("pipeline = [1, 2, 3]", "pipeline = [1, 2, 1000]", "space.pipeline"),
    "rows 1e9": ("rows = [8, 16, 32]", "rows = [8, 16, 1000000000]", "space.rows"),
    "clock 1e30": (
        "clock_mhz = { min = 200, max = 2000, step = 100 }",
        "clock_mhz = [200, 1e30]",
        "clock_mhz",
    ),
    "clock 1e-300": (
        "clock_mhz = { min = 200, max = 2000, step = 100 }",
        "clock_mhz = [1e-300]",
        "clock_mhz",
    ),
    "clock range step tiny": (
        "clock_mhz = { min = 200, max = 2000, step = 100 }",
        "clock_mhz = { min = 200, max = 2000, step = 1e-300 }",
        "space.clock_mhz",
    ),
    "clock range inf": (
        "clock_mhz = { min = 200, max = 2000, step = 100 }",
        "clock_mhz = { min = 200, max = inf }",
        "space.clock_mhz",
    ),
    "tj nan": ("max_tj_c = 85.0", "max_tj_c = nan", "limits.max_tj_c"),
    "tj inf": ("max_tj_c = 85.0", "max_tj_c = inf", "limits.max_tj_c"),
    "tj absurd": ("max_tj_c = 85.0", "max_tj_c = 1e6", "max_tj_c"),
    "negative seed": ("seed = 3", "seed = -1", "study.seed"),
    "huge seed": ("seed = 3", "seed = 99999999999999", "study.seed"),
    "huge trials": ("trials = 20", "trials = 1000000000", "study.trials"),
    "float step rounds to 0": (
        "rows = [8, 16, 32]",
        "rows = { min = 8, max = 32, step = 0.3 }",
        "space.rows",
    ),
    "weight inf": ("weight = 1.0", "weight = inf", "workload[0].weight"),
    "weight tiny": ("weight = 1.0", "weight = 1e-300", "workload[0].weight"),
    "weight huge": ("weight = 1.0", "weight = 1e300", "workload[0].weight"),
    "layer dims overflow": (
        "weight = 1.0",
        "weight = 1.0\nparams = { seq = 100000000000, batch = 1 }",
        "workload 'bert-base'",
    ),
    "workload param float": ("weight = 1.0", "weight = 1.0\nparams = { seq = 1.5 }", "workload"),
    "sparsity 0:0": ('sparsity = ["2:4", "dense"]', 'sparsity = ["0:0"]', "sparsity"),
    "sparsity huge M": ('sparsity = ["2:4", "dense"]', 'sparsity = ["1:1048576"]', "sparsity"),
    "study name path": ('name = "small"', 'name = "../../evil"', "study.name"),
    "study name separator": ('name = "small"', 'name = "a/b"', "study.name"),
    "dram units huge": (
        "dram_units = { lpddr5 = 4, hbm2 = 1 }",
        "dram_units = { lpddr5 = 1000000, hbm2 = 1 }",
        "fixed.dram_units",
    ),
    "theta inf": ("theta_ja_c_per_w = 2.0", "theta_ja_c_per_w = inf", "fixed.theta_ja_c_per_w"),
    "sram huge": ("sram_kb = [64, 256, 1024]", "sram_kb = [64, 1e15]", "sram_kb"),
    "serving requests 1e9": (
        "[objectives]",
        "[serving]\nn_requests = 1000000000\n\n[objectives]",
        "serving.n_requests",
    ),
    "bits do not fit": (
        "ambient_c = 45.0",
        "ambient_c = 45.0\nact_bits = 16\nweight_bits = 16\nacc_bits = 24",
        "acc",
    ),
    "unknown key": ("ambient_c = 45.0", "ambient_c = 45.0\nbogus = 1", "fixed.bogus"),
}


@pytest.mark.parametrize("case", sorted(CONFIG_CASES))
def test_bad_config_is_one_line_naming_file_and_key_and_creates_nothing(case, tmp_path, capsys):
    old, new, key = CONFIG_CASES[case]
    assert old in BASE
    cfg = tmp_path / "c.toml"
    cfg.write_text(BASE.replace(old, new))
    out = tmp_path / "out"
    code, _, err = run(["sweep", cfg, "--out", out], capsys)
    line = one_line(code, err, str(cfg))
    assert key in line, line
    assert not out.exists(), "nothing may be created before validation passes"


def test_liberty_that_is_a_device_is_refused(tmp_path, capsys):
    cfg = tmp_path / "c.toml"
    cfg.write_text(BASE)
    one_line(
        *run(
            ["sweep", cfg, "--out", tmp_path / "o", "--liberty", "/dev/zero", "--liberty-node", "180"], capsys
        )[::2],
        "/dev/zero",
    )
    assert not (tmp_path / "o").exists()


def test_deeply_nested_and_non_utf8_and_odd_files(tmp_path, capsys):
    cases = {
        "nested.toml": ("rows = " + "[" * 5000 + "]" * 5000).encode(),
        "latin1.toml": BASE.replace('name = "small"', 'name = "sm\xe4ll"').encode("latin-1"),
    }
    for name, data in cases.items():
        p = tmp_path / name
        p.write_bytes(data)
        one_line(*run(["sweep", p, "--out", tmp_path / "o"], capsys)[::2], str(p))
    one_line(*run(["sweep", tmp_path, "--out", tmp_path / "o"], capsys)[::2], "not a regular file")
    one_line(*run(["sweep", "/dev/zero", "--out", tmp_path / "o"], capsys)[::2], "not a regular file")
    assert not (tmp_path / "o").exists()


# ---- CLI values ------------------------------------------------------------------------------


@pytest.mark.parametrize(
    "args,needle",
    [
        (["verilog", "--n", "1", "--m", "1048576"], "--n/--m"),
        (["verilog", "--pipeline", "1000"], "--pipeline"),
        (["verilog", "--rows", "100000", "--cols", "2"], "--rows"),
        (["verilog", "--n", "abc"], "--n"),
        (["verilog", "--bogus"], "--bogus"),
        (["ppa", "--t-ambient", "nan"], "--t-ambient"),
        (["ppa", "--rows", "1000000000"], "--rows"),
        (["ppa", "--clock-mhz", "1e30"], "--clock-mhz"),
        (["ppa", "--clock-mhz", "1e-300"], "--clock-mhz"),
        (["ppa", "--sram-kb", "inf"], "--sram-kb"),
        (["ppa", "--sparsity", "0:0"], "--sparsity"),
        (["simulate", "--workload", "bert-base", "--rows", "0"], "--rows"),
        (["simulate", "--workload", "bert-base", "--clock-mhz", "nan"], "--clock-mhz"),
        (["simulate", "--workload", "bert-base", "--clock-mhz", "1e-300"], "--clock-mhz"),
        (["simulate", "--workload", "bert-base", "--sparsity", "1:1048576"], "--sparsity"),
        (["simulate", "--workload", "nope"], "--workload"),
        (["quality", "--seed", "-1"], "--seed"),
        (["bogus-command"], "bogus"),
    ],
)
def test_bad_cli_value_is_one_line(args, needle, tmp_path, capsys):
    if args[0] == "verilog":
        args = [*args, "--out", tmp_path / "v"]
    one_line(*run(args, capsys)[::2], needle)
    assert not (tmp_path / "v").exists()


@pytest.mark.parametrize(
    "flags,needle",
    [
        (["--trials", "0"], "--trials"),
        (["--trials", "1000000000000"], "--trials"),
        (["--seed", "-1"], "--seed"),
        (["--seed", str(2**40)], "--seed"),
        (["--workers", "0"], "--workers"),
        (["--workers", "100000"], "--workers"),
        (["--study", "../escape"], "--study"),
        (["--study", "a/b"], "--study"),
        (["--study", ""], "--study"),
        (["--sampler", "x"], "--sampler"),
        (["--liberty-node", "7"], "--liberty-node"),
    ],
)
def test_bad_sweep_flag_is_one_line_and_creates_nothing(flags, needle, tmp_path, capsys):
    cfg = tmp_path / "c.toml"
    cfg.write_text(BASE)
    out = tmp_path / "out"
    one_line(*run(["sweep", cfg, "--out", out, *flags], capsys)[::2], needle)
    assert not out.exists()
    assert not (Path("results") / "escape").exists()


# ---- paths -----------------------------------------------------------------------------------


def test_out_that_is_a_file_is_refused_and_left_alone(tmp_path, capsys):
    cfg = tmp_path / "c.toml"
    cfg.write_text(BASE)
    f = tmp_path / "file"
    f.write_text("precious\n")
    one_line(*run(["sweep", cfg, "--out", f], capsys)[::2], "is a file")
    one_line(*run(["verilog", "--out", f], capsys)[::2], "is a file")
    assert f.read_text() == "precious\n"


def test_unwritable_out_is_one_line(tmp_path, capsys):
    """/sys refuses new directories even to root (EPERM); /proc has no such parent (ENOENT)."""
    for place in ("/sys/sparsepe-out", "/proc/sparsepe/out"):
        if Path(place).parent.exists() or place.startswith("/proc"):
            one_line(*run(["verilog", "--out", place], capsys)[::2], "--out")


def test_read_only_out_is_one_line(tmp_path, capsys):
    if os.geteuid() == 0:
        pytest.skip("root writes into read-only directories (test_unwritable_out_is_one_line covers root)")
    ro = tmp_path / "ro"
    ro.mkdir()
    ro.chmod(0o500)
    try:
        one_line(*run(["verilog", "--out", ro / "sub"], capsys)[::2], "--out")
    finally:
        ro.chmod(0o700)


def test_symlinked_journal_and_text_file_journal_are_refused_unchanged(tmp_path, capsys):
    cfg = tmp_path / "c.toml"
    cfg.write_text(BASE)
    target = tmp_path / "victim.txt"
    target.write_text("do not append here\n")
    out = tmp_path / "out"
    out.mkdir()
    (out / "study.journal").symlink_to(target)
    one_line(*run(["sweep", cfg, "--out", out], capsys)[::2], "symlink")
    assert target.read_text() == "do not append here\n"
    (out / "study.journal").unlink()
    (out / "study.journal").write_text("a one-line text file\n")
    one_line(*run(["sweep", cfg, "--out", out], capsys)[::2], "not an Optuna journal")
    assert (out / "study.journal").read_text() == "a one-line text file\n"
    # an explicit --storage pointing at a file that is not a journal is refused the same way
    one_line(*run(["sweep", cfg, "--out", out, "--storage", target], capsys)[::2], "not an Optuna journal")
    assert target.read_text() == "do not append here\n"


EVAL = "tests.explore._analytic"
HOSTILE_EVAL = "tests.explore._hostile_eval"


def test_symlinked_results_are_not_followed(small_config, tmp_path, run_sweep):
    cfg = small_config()
    out = tmp_path / "out"
    out.mkdir()
    victim = tmp_path / "victim.csv"
    victim.write_text("keep me\n")
    (out / "trials.csv").symlink_to(victim)
    with pytest.raises(InputError, match="symlink"):
        run_sweep(cfg, out, evaluator=EVAL, trials=3)
    assert victim.read_text() == "keep me\n"
    (out / "trials.csv").unlink()
    (out / "best.json").symlink_to(victim)
    with pytest.raises(InputError, match="symlink"):
        run_sweep(cfg, out, evaluator=EVAL, trials=3)  # resumes the stored study; nothing is lost
    assert victim.read_text() == "keep me\n"
    (out / "best.json").unlink()
    _, best = run_sweep(cfg, out, evaluator=EVAL, trials=3)
    assert best["n_evaluated"] == 3 and not (out / "best.json").is_symlink()


def test_safe_write_replaces_atomically(tmp_path):
    from explore.safety import write_text

    p = tmp_path / "x.txt"
    write_text(p, "one")
    write_text(p, "two")
    assert p.read_text() == "two" and sorted(os.listdir(tmp_path)) == ["x.txt"]


# ---- one line from inside a trial; a study that cannot make progress stops ------------------


def test_failing_trials_stop_after_k_with_one_line(small_config, tmp_path, run_sweep, monkeypatch, capsys):
    from explore.study import MAX_CONSECUTIVE_FAILURES
    from explore.trials import ERROR_ATTR

    monkeypatch.setenv("SPARSEPE_TEST_FAIL", "all")
    with pytest.raises(InputError) as e:
        run_sweep(small_config(), tmp_path / "out", evaluator=HOSTILE_EVAL, trials=50)
    msg = str(e.value)
    assert f"{MAX_CONSECUTIVE_FAILURES} consecutive failed trials" in msg and "refuses this design" in msg
    assert "fixed.ambient_c" in msg and "--t-ambient" not in msg  # the config key, not the model's flag
    assert "\n" not in msg
    err = capsys.readouterr().err
    assert "Traceback" not in err and "Trial 0 failed" not in err, err
    import optuna

    from explore.storage import open_storage, resolve_storage

    st = optuna.load_study(
        study_name="t", storage=open_storage(resolve_storage(None, tmp_path / "out"), create=False)
    )
    trials = st.get_trials(deepcopy=False)
    assert len(trials) == MAX_CONSECUTIVE_FAILURES  # not 1,553
    assert all(
        t.state == TrialState.FAIL and "refuses this design" in t.system_attrs[ERROR_ATTR] for t in trials
    )
    # the corrected re-run is not blocked by the failed first attempt (no finished trial to protect),
    # even when the config changed
    monkeypatch.delenv("SPARSEPE_TEST_FAIL")
    cfg2 = small_config(
        text=small_config().read_text().replace("max_area_mm2 = 20.0", "max_area_mm2 = 30.0"),
        name="fixed.toml",
    )
    study, best = run_sweep(cfg2, tmp_path / "out", evaluator=HOSTILE_EVAL, trials=4)
    assert len(study.get_trials(deepcopy=False, states=(TrialState.COMPLETE,))) == 4
    assert best["limits"]["max_area_mm2"] == 30.0


def test_nan_objective_is_a_failed_trial_with_its_reason(small_config, tmp_path, run_sweep, monkeypatch):
    monkeypatch.setenv("SPARSEPE_TEST_FAIL", "nan")
    with pytest.raises(InputError, match="perf_per_watt is nan"):
        run_sweep(small_config(), tmp_path / "out", evaluator=HOSTILE_EVAL, trials=20)


def test_a_bad_corner_is_survived_and_listed(small_config, tmp_path, run_sweep, monkeypatch):
    monkeypatch.setenv("SPARSEPE_TEST_FAIL", "rows8")
    study, best = run_sweep(
        small_config(), tmp_path / "out", evaluator=HOSTILE_EVAL, trials=15, sampler="random"
    )
    failed = study.get_trials(deepcopy=False, states=(TrialState.FAIL,))
    assert len(study.get_trials(deepcopy=False, states=(TrialState.COMPLETE,))) == 15
    assert failed, "the seed draws rows=8 at least once"
    import csv

    rows = list(csv.DictReader(open(tmp_path / "out" / "trials.csv")))
    assert all("refuses this design" in r["error"] for r in rows if r["state"] == "FAIL")


def test_cli_sweep_trial_error_is_one_line(tmp_path, capsys, monkeypatch):
    """Through the command line: K failed trials -> one line, exit 2, no Optuna log lines."""
    import explore.evaluator as real
    import tests.explore._hostile_eval as bad

    monkeypatch.setenv("SPARSEPE_TEST_FAIL", "all")
    monkeypatch.setattr(real, "make_context", bad.make_context)
    monkeypatch.setattr(real, "evaluate", bad.evaluate)
    # no hardware characterisation: every trial fails before it would use any (on a cold cache the
    # real prewarm synthesises the space's 100-odd netlists, minutes, for trials that never cost one)
    monkeypatch.setattr(explore.prewarm, "prewarm", lambda cfg: None)
    monkeypatch.setattr(explore.study, "prewarm", lambda cfg: None)
    cfg = tmp_path / "c.toml"
    cfg.write_text(BASE)
    code, _, err = run(["sweep", cfg, "--out", tmp_path / "out", "--trials", "30"], capsys)
    # the progress lines of the started sweep come first; the error is one line, the last
    lines = [ln for ln in err.splitlines() if ln.strip()]
    assert code == 2 and "Traceback" not in err and "Trial 0 failed" not in err, err
    assert [ln for ln in lines if ln.startswith("sparsepe: error:")] == [lines[-1]]
    progress = ("sweep small",)  # the sweep's progress lines
    assert "consecutive failed trials" in lines[-1] and all(ln.startswith(progress) for ln in lines[:-1])


# ---- rich markup and braces in user strings --------------------------------------------------


def test_markup_and_braces_in_names_do_not_crash(small_config, tmp_path, sweep_options, capsys):
    from explore.config import load_config
    from explore.safety import rich_safe
    from explore.study import run_study

    cfg_path = small_config()
    name = "a[/]b{x}[bold]"
    opts = sweep_options(cfg_path, tmp_path / "o[/]{y}", trials=2, study=name, evaluator=EVAL)
    opts.progress = True
    run_study(opts, load_config(cfg_path))
    assert name in capsys.readouterr().err
    assert rich_safe("{x}[/]") == "{{x}}\\[/]"


def test_markup_in_topology_layer_names(tmp_path, capsys, monkeypatch):
    monkeypatch.setenv("COLUMNS", "200")
    topo = tmp_path / "t.csv"
    topo.write_text("Layer name,M,N,K,\n[/]{x}[bold],8,64,64,\n")
    code, out, err = run(["simulate", "--topology", topo], capsys)
    assert code == 0, err
    assert "[/]{x}[bold]" in out


# ---- standard JSON ---------------------------------------------------------------------------


def test_non_finite_numbers_become_null_with_a_reason():
    from explore.safety import dumps

    d = strict_json(dumps({"a": float("inf"), "b": [1.0, float("nan")], "c": {"d": -float("inf")}, "e": 2.5}))
    assert d["a"] is None and d["b"] == [1.0, None] and d["c"]["d"] is None and d["e"] == 2.5
    assert set(d["non_finite"]) == {"a", "b[1]", "c.d"} and d["non_finite"]["a"].startswith("inf")
    assert "non_finite" not in strict_json(dumps({"x": 1.0}))  # finite output is unchanged


def test_best_json_and_trials_are_standard_json(small_config, tmp_path, run_sweep):
    _, best = run_sweep(small_config(), tmp_path / "out", evaluator=EVAL, trials=3)
    strict_json((tmp_path / "out" / "best.json").read_text())


def test_simulate_json_is_standard(tmp_path, capsys):
    code, out, err = run(
        ["simulate", "--workload", "bert-base", "--sram-port-bytes", "inf", "--json"], capsys
    )
    assert code == 0, err
    strict_json(out)


# ---- bounded work: weight files --------------------------------------------------------------


def _npz_with_header(path: Path, shape: tuple[int, ...], payload: bytes = b"") -> None:
    import numpy.lib.format as fmt

    hdr = {"descr": "<f4", "fortran_order": False, "shape": shape}
    import io

    buf = io.BytesIO()
    fmt.write_array_header_1_0(buf, hdr)
    with zipfile.ZipFile(path, "w", zipfile.ZIP_DEFLATED) as z:
        z.writestr("w.npy", buf.getvalue() + payload)


def test_lying_npz_header_is_refused_before_allocation(tmp_path, capsys):
    from sim.quality.team.weights import load_tensors

    p = tmp_path / "lie.npz"
    _npz_with_header(p, (300_000, 300_000), b"\0" * 64)  # declares 360 GB, holds 64 bytes
    with pytest.raises(InputError, match="limit"):
        load_tensors(p)
    p2 = tmp_path / "lie2.npz"
    _npz_with_header(p2, (1000, 1000), b"\0" * 64)  # declares 4 MB, holds 64 bytes
    with pytest.raises(InputError, match="lying or truncated header"):
        load_tensors(p2)
    one_line(*run(["quality", "--weights", p], capsys)[::2], "lie.npz")


def test_zip_bomb_npz_is_refused_from_declared_sizes(tmp_path, monkeypatch):
    """A zip bomb: members that compress ~1000:1. The declared (uncompressed) sizes are summed and
    checked against the cap before any member is read. The cap is lowered here so that the test
    file stays small (a real bomb of 286 GiB and the 16 GiB cap work the same way)."""
    import sim.quality.team.weights as W

    p = tmp_path / "bomb.npz"
    np.savez_compressed(p, **{f"w{i}": np.zeros((512, 512), np.float32) for i in range(5)})  # 5 MiB -> ~5 KiB
    assert p.stat().st_size < 100_000
    monkeypatch.setattr(W, "MAX_WEIGHTS_BYTES", 4 * 2**20)
    with pytest.raises(InputError, match="unpacks to"):
        W.load_tensors(p)
    monkeypatch.setattr(W, "MAX_WEIGHTS_BYTES", 16 * 2**30)
    monkeypatch.setattr(W, "MAX_TENSOR_BYTES", 2**19)
    with pytest.raises(InputError, match="of one tensor"):
        W.load_tensors(p)


def test_valid_npz_still_loads(tmp_path):
    from sim.quality.team.weights import load_tensors

    p = tmp_path / "ok.npz"
    w = np.arange(32, dtype=np.float32).reshape(4, 8)
    wf = np.asfortranarray(np.arange(6, dtype=np.float64).reshape(2, 3))
    np.savez(p, w=w, f=wf)
    t = load_tensors(p)
    assert np.array_equal(t["w"], w) and np.array_equal(t["f"], wf)


# ---- bounded work: serving, caps agree -------------------------------------------------------


def test_serving_requests_capped_in_the_model_too():
    from explore.config import MAX_SERVING_REQUESTS
    from sim.serving import MAX_REQUESTS, serve

    assert MAX_SERVING_REQUESTS == MAX_REQUESTS
    with pytest.raises(InputError, match="n_requests"):
        serve([0.001] * 8, 100.0, n_requests=10**9)


def test_native_workload_files(tmp_path, capsys):
    bad = {
        "layer5.toml": "layer = 5\n",
        "layerints.toml": "layer = [1, 2]\n",
        "namenum.toml": "[[layer]]\nname = 5\nkind = 'gemm'\nM = 1\nN = 1\nK = 1\n",
        "wshape.toml": "[[layer]]\nname = 'a'\nkind = 'gemm'\nM = 1\nN = 4\nK = 4\nweight_shape = 'abc'\n",
        "huge.toml": "[[layer]]\nname = 'a'\nkind = 'gemm'\nM = 99999999999\nN = 4\nK = 4\n",
        "macs.toml": "[[layer]]\nname = 'a'\nkind = 'gemm'\nM = 16000000\nN = 16000000\nK = 16000000\n",
        "nonutf8.csv": None,
    }
    for name, text in bad.items():
        p = tmp_path / name
        if text is None:
            p.write_bytes(b"name,kind,M,N,K\n\xff\xfe,gemm,1,1,1\n")
        else:
            p.write_text(text)
        one_line(*run(["simulate", "--topology", p], capsys)[::2], name)


def test_scalesim_config_values(tmp_path, capsys):
    topo = tmp_path / "t.csv"
    topo.write_text("Layer name,M,N,K,\nfc,8,64,64,\n")
    base = (
        "[architecture_presets]\nArrayHeight = 8\nArrayWidth = 8\nIfmapSramSzkB = 64\nFilterSramSzkB = 64\n"
        "OfmapSramSzkB = 64\nDataflow = ws\n"
    )
    for name, text in {
        "nan.cfg": base.replace("= 64\nF", "= nan\nF"),
        "huge.cfg": base.replace("ArrayHeight = 8", "ArrayHeight = 100000000"),
        "pct.cfg": base.replace("Dataflow = ws", "Dataflow = %(x)s"),
    }.items():
        p = tmp_path / name
        p.write_text(text)
        one_line(*run(["simulate", "--topology", topo, "--scalesim-config", p], capsys)[::2], name)


# ---- resume ----------------------------------------------------------------------------------


def test_resume_does_not_replay_the_first_points(small_config, tmp_path, run_sweep):
    from explore.trials import DUPLICATE_ATTR

    cfg, out = small_config(), tmp_path / "out"
    run_sweep(cfg, out, evaluator=EVAL, trials=6, sampler="random", seed=11)
    study, _ = run_sweep(cfg, out, evaluator=EVAL, trials=12, sampler="random", seed=11)
    trials = sorted(study.get_trials(deepcopy=False), key=lambda t: t.number)
    first = [t.params for t in trials[:6]]
    resumed = [t.params for t in trials[6:12]]
    assert resumed != first, "the resumed sampler replayed the first run's points"
    assert sum(1 for t in trials[6:] if DUPLICATE_ATTR in t.user_attrs) <= 1
    # and a fresh run with the same seed is still the same run
    s2, _ = run_sweep(cfg, tmp_path / "again", evaluator=EVAL, trials=6, sampler="random", seed=11)
    assert [t.params for t in sorted(s2.get_trials(deepcopy=False), key=lambda t: t.number)] == first


def test_report_files_are_not_written_through_symlinks(tmp_path):
    from explore.safety import refuse_symlinks

    out = tmp_path / "out"
    (out / "report_files").mkdir(parents=True)
    refuse_symlinks(out, ("report.html", "report_files"))  # nothing planted: fine
    (out / "report_files" / "a.csv").symlink_to(tmp_path / "victim")
    with pytest.raises(InputError, match="symlink"):
        refuse_symlinks(out, ("report.html", "report_files"))
    (out / "report.html").symlink_to(tmp_path / "victim")
    with pytest.raises(InputError, match="report.html"):
        refuse_symlinks(out, ("report.html",))


def test_journal_check_accepts_empty_and_optuna_journals(tmp_path, small_config, run_sweep):
    from explore.storage import check_journal_file

    empty = tmp_path / "empty.journal"
    empty.write_text("")
    check_journal_file(empty)
    check_journal_file(tmp_path / "missing.journal")
    run_sweep(small_config(), tmp_path / "out", evaluator=EVAL, trials=2)
    check_journal_file(tmp_path / "out" / "study.journal")
    fifo = tmp_path / "fifo"
    os.mkfifo(fifo)
    with pytest.raises(InputError, match="not a regular file"):
        check_journal_file(fifo)


def test_failing_trials_in_worker_processes_end_in_one_line(small_config, tmp_path, run_sweep, monkeypatch):
    monkeypatch.setenv("SPARSEPE_TEST_FAIL", "all")
    with pytest.raises(InputError) as e:
        run_sweep(small_config(), tmp_path / "out", evaluator=HOSTILE_EVAL, trials=50, workers=2)
    msg = str(e.value)
    assert "workers failed" in msg and "consecutive failed trials" in msg and "\n" not in msg
    assert msg.count("sparsepe: error") == 0  # the worker's own prefix is not repeated
