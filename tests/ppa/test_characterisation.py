"""The characterisation shipped with the package (ppa.characterisation).

References: fresh synthesis of the shipped entries by this code and this machine's Yosys (identical
results required); a fresh process estimating a design from recorded results alone, against the
estimate of the process that synthesised it; hand-written files that do not apply here.
"""

from __future__ import annotations

import json
import logging
import os
import subprocess
import sys
from pathlib import Path

import pytest

from ppa import characterisation, synth_memo, yosys

REPO = Path(__file__).resolve().parents[2]

# one known configuration, estimated in a fresh process: the result, whether Amaranth was imported
# and every file the process wrote into its (fresh) cache
PROBE = """
import json, sys
from pathlib import Path
from ppa.design import DesignPoint
from ppa.model import estimate
from ppa.synth import cache_dir
r = estimate(DesignPoint(rows=2, cols=2, sram_kb=32, node_nm=7))
print(json.dumps({"result": r.to_json(), "amaranth": any(k.split(".")[0] == "amaranth" for k in sys.modules),
                  "written": sorted(str(p.relative_to(cache_dir().parent)) for p in cache_dir().parent.rglob("*")
                                    if p.is_file())}))
"""


# the same estimate, recorded (in a fresh process: nothing answered from this one's memory) and
# written as a shipped file into the directory argv[1]
RECORD = """
import json, sys
from pathlib import Path
from ppa import characterisation
from ppa.design import DesignPoint
from ppa.model import estimate
with characterisation.recording() as rec:
    r = estimate(DesignPoint(rows=2, cols=2, sram_kb=32, node_nm=7))
path = characterisation.write(Path(sys.argv[1]), rec)
print(json.dumps({"result": r.to_json(), "kinds": sorted(rec), "file": path.name}))
"""


def _run(script: str, env_extra: dict[str, str], *args: str) -> dict:
    env = {**os.environ, "PYTHONPATH": str(REPO), **env_extra}
    r = subprocess.run(
        [sys.executable, "-c", script, *args], capture_output=True, text=True, env=env, cwd=REPO, timeout=600
    )
    assert r.returncode == 0, r.stderr
    return json.loads(r.stdout)


@pytest.mark.yosys
def test_recorded_results_estimate_a_design_in_a_fresh_process_without_synthesis(synth_cache, tmp_path):
    shipped = tmp_path / "shipped"
    first = _run(
        RECORD,
        {"SPARSEPE_CHARACTERISATION": "off", "SPARSEPE_CACHE_DIR": str(synth_cache.parent)},
        str(shipped),
    )
    assert {"synth", "activity", "vector-lane"} <= set(first["kinds"])
    assert ("sta" in first["kinds"]) != ("generic-tau" in first["kinds"])  # one timing path
    assert first["file"] == characterisation.file_name(yosys.yosys_id())
    got = _run(
        PROBE, {"SPARSEPE_CHARACTERISATION": str(shipped), "SPARSEPE_CACHE_DIR": str(tmp_path / "fresh")}
    )
    assert got["result"] == first["result"]  # identical, not just close
    assert got["amaranth"] is False
    assert got["written"] == []  # nothing synthesised, timed or simulated: nothing cached


def _file(directory: Path, **head) -> Path:
    c = characterisation.context()
    body = {"format": characterisation.FORMAT, **c, **head, "entries": {}}
    path = directory / characterisation.file_name(body["yosys"])
    path.write_text(json.dumps(body))
    return path


@pytest.mark.yosys
@pytest.mark.parametrize(
    "head, why",
    [
        ({"code_version": "0123456789abcdef"}, "its model code version 0123456789abcdef is not this code's "),
        ({"verilog": "amaranth=0.0"}, "its Verilog toolchain (amaranth=0.0) is not this one ("),
        ({"format": 99}, "has format 99, this code reads 1"),
        ({"yosys": "yosys (native) Yosys 0.1"}, "none was made with "),
    ],
)
def test_a_file_that_does_not_apply_is_ignored_and_the_first_computation_says_why(
    tmp_path, monkeypatch, caplog, head, why
):
    monkeypatch.setenv("SPARSEPE_CHARACTERISATION", str(tmp_path))
    _file(tmp_path, **head)
    st = characterisation.status()
    assert st.entries is None and why in st.why, st.why
    if head.get("code_version"):
        assert characterisation.REGENERATE in st.why
    caplog.set_level(logging.INFO, logger="sparsepe.characterisation")
    monkeypatch.setattr(characterisation, "_said", set())
    characterisation.cached(
        "test-kind",
        synth_memo.portable_key("test", str(tmp_path)),
        lambda: {"x": 1},
        cache=tmp_path / "cache",
        what="a test result",
    )
    lines = [r.getMessage() for r in caplog.records if r.name == "sparsepe.characterisation"]
    assert lines == [f"shipped characterisation not used ({st.why}): characterising a test result here"]


def test_cached_results_are_computed_once_then_read_from_disk(tmp_path, monkeypatch):
    monkeypatch.setenv("SPARSEPE_CHARACTERISATION", "off")
    calls = []
    key = synth_memo.portable_key("test", str(tmp_path))

    def compute():
        calls.append(1)
        return {"tau": 1.5}

    assert characterisation.cached("test-kind", key, compute, cache=tmp_path) == {"tau": 1.5}
    assert characterisation.cached("test-kind", key, compute, cache=tmp_path) == {"tau": 1.5}
    assert len(calls) == 1
    monkeypatch.setattr(characterisation, "_memory", {})  # a new process: the disk answers
    assert (
        characterisation.cached("test-kind", key, compute, cache=tmp_path) == {"tau": 1.5} and len(calls) == 1
    )
    assert json.loads((tmp_path / "results" / "test-kind" / f"{key}.json").read_text()) == {"tau": 1.5}
    with characterisation.probing(), pytest.raises(characterisation.NotCharacterised, match="another"):
        characterisation.cached("test-kind", key + "x", compute, cache=tmp_path, what="another")


def test_yosys_reporting_an_error_is_cached_as_that_failure_a_killed_run_is_not(tmp_path, monkeypatch):
    """Yosys's own error report (exit 1 with an ERROR line: the merged ASAP7 library's ICG cell)
    fails again for the same inputs, so a later process gets it from the cache without running
    Yosys; a run killed by a signal may succeed the next time and is not cached."""
    monkeypatch.setenv("SPARSEPE_CHARACTERISATION", "off")
    calls = []
    reported = yosys.YosysRun(1, "", "ERROR: Missing function on output IQ of cell ICGx1_ASAP7_75t_R.", "")
    killed = yosys.YosysRun(-9, "", "", "")
    # an error about a file, not the design (a full disk): it may pass once the file system is mended
    disk = yosys.YosysRun(
        1, "", "ERROR: Can't open output file `netlist.json' for writing: No space left on device", ""
    )

    def compute(run):
        def go():
            calls.append(run.returncode)
            yosys.raise_failure(run, "flattening sparse_pe", tmp_path)
            return {}

        return go

    for run, key in ((reported, "r"), (killed, "k"), (disk, "d")):
        for _ in range(2):
            monkeypatch.setattr(characterisation, "_memory", {})  # each a new process
            with pytest.raises(yosys.SynthesisError, match="flattening sparse_pe") as exc:
                characterisation.cached("test-fail", key, compute(run), cache=tmp_path)
            assert exc.value.deterministic == (run is reported)
    assert calls == [1, -9, -9, 1, 1]  # the reported failure ran once; the others every time
    stored = json.loads((tmp_path / "results" / "test-fail" / "r.json").read_text())
    assert "Missing function on output IQ" in stored[characterisation.FAILED]
    assert not (tmp_path / "results" / "test-fail" / "k.json").exists()
    assert not (tmp_path / "results" / "test-fail" / "d.json").exists()


def _shipped_here() -> characterisation.Shipped:
    st = characterisation.status()
    if st.entries is None:
        pytest.skip(f"no shipped characterisation applies here: {st.why}")
    return st


def test_shipped_files_are_of_this_model_code():
    """A shipped file of another model code version is ignored (every first run characterises):
    regenerate it after a change to the characterised code."""
    files = sorted(characterisation.SHIPPED_DIR.glob("*.json"))
    if not files:
        pytest.skip(
            f"no shipped characterisation in {characterisation.SHIPPED_DIR}: run "
            f"`{characterisation.REGENERATE} --quality-out sim/quality/shipped`"
        )
    for f in files:
        head = json.loads(f.read_text())
        assert head["code_version"] == characterisation.code_version(), (
            f"{f.name} is of model code {head['code_version']}, this code is {characterisation.code_version()}: "
            f"run `{characterisation.REGENERATE} --quality-out sim/quality/shipped`"
        )


@pytest.mark.yosys
def test_shipped_entries_match_fresh_synthesis(tmp_path, monkeypatch):
    """Two random synthesis entries of the shipped file for this machine's Yosys (of up to 20,000
    transistors: a PE, a short column, the register, decoder or vector lane, so the test takes
    seconds), synthesised again (no cache): identical cells, transistors, flip-flops, depth and key
    (so identical Verilog). ``sparsepe characterise --check N`` samples every size."""
    monkeypatch.delenv("SPARSEPE_CHARACTERISATION", raising=False)
    st = _shipped_here()
    assert characterisation.check_sample(st.entries, 2, cache=tmp_path, max_transistors=20_000) == []


def test_recorded_parameters_read_back():
    from hw.params import PEParams

    for v in (32, (2, 4), (6, 1, PEParams(pipeline=3)), (2, 2, PEParams(precision="bf16"), "dense", "os")):
        assert characterisation.recorded_params(repr(v)) == v
    with pytest.raises(ValueError):
        characterisation.recorded_params("__import__('os').getcwd()")


# `sparsepe validate` in a fresh process on an empty cache: what it had to compute
VALIDATE_PROBE = """
from explore.validation import validate
from ppa import characterisation
rows = validate()
# a mapping that fails is no result to ship: the PE's sizing on the merged ASAP7 library (its ICG
# cell has no output function, so Yosys stops; the row is costed as mapped for area) is tried again
left = [w for w in characterisation.computed() if w != "the sizing factor of sparse_pe on asap7sc7p5t_RVT_TT_merged"]
print(len(rows), len(left), "; ".join(left[:5]))
"""


@pytest.mark.slow
@pytest.mark.yosys_calibration
@pytest.mark.sta
def test_validate_on_the_shipped_characterisation_computes_nothing(tmp_path):
    """The package's characterisation holds what `sparsepe validate` looks up with native Yosys and
    OpenSTA (explore.commands.characterise records it): a first validate synthesises nothing."""
    env = {k: v for k, v in os.environ.items() if k not in ("SPARSEPE_CHARACTERISATION", "SPARSEPE_STA")}
    env |= {"SPARSEPE_CACHE_DIR": str(tmp_path / "cache"), "SPARSEPE_YOSYS": "native"}
    out = subprocess.run(
        [sys.executable, "-c", VALIDATE_PROBE], env=env, cwd=REPO, capture_output=True, text=True, timeout=600
    )
    assert out.returncode == 0, out.stderr[-2000:]
    rows, computed, what = out.stdout.split(" ", 2)
    assert int(rows) > 40
    assert int(computed) == 0, f"validate computed {computed} results: {what}"


def test_the_package_characterisation_records_validate_and_a_config_alone_does_not(tmp_path, monkeypatch):
    from typer.testing import CliRunner

    from explore.cli import app
    from explore.commands import characterise as cmd

    seen = []
    monkeypatch.setattr(
        cmd,
        "characterise_configs",
        lambda configs, *a, **kw: seen.append((kw["with_validate"], kw["native_only"], len(configs))) or [],
    )
    monkeypatch.setattr(cmd, "copy_quality_references", lambda dest: [])
    cfg = tmp_path / "c.toml"
    cfg.write_text("")
    out = tmp_path / "out"
    out.mkdir()
    monkeypatch.setenv("SPARSEPE_CACHE_DIR", str(tmp_path / "cache"))  # the command sets these two:
    monkeypatch.delenv("SPARSEPE_CHARACTERISATION", raising=False)  # restored after the test
    for args in ([], [str(cfg)], [str(cfg), "--validate"], ["--no-validate"]):
        r = CliRunner().invoke(app, ["characterise", *args, "--out", str(out), "--workers", "1"])
        assert r.exit_code == 0, r.output
    examples = len(cmd.default_configs())
    # the package's run: every example, the wheel's pass without precision.toml; a config given: as given
    assert "precision.toml" in {p.name for p in cmd.default_configs()}
    assert seen == [
        (True, ("precision.toml",), examples),
        (False, (), 1),
        (True, (), 1),
        (False, ("precision.toml",), examples),
    ]
