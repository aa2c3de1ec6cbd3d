"""Every sub-command, run through the real command line, changes no file outside its output.

Each command of explore.cli's command list runs as a subprocess with HOME, the working directory,
TMPDIR and ``SPARSEPE_CACHE_DIR`` set to directories of the test's own. Before the walk and after
every command, every entry (file, directory, symlink) under HOME, the working directory, TMPDIR and
the parent of the outputs is recorded: kind, size, mtime_ns, content hash (a symlink: its target).
Only entries under the command's output (``--out``, ``--save-pruned``, ``--markdown``) and under the
cache directory (the tool's declared cache, ``$SPARSEPE_CACHE_DIR``) may differ. A command added
to the CLI without a step here fails the walk, so the walk stays complete.

Static side of the same contract: tests/test_writes.py (every write in the source goes through
hw.host.write_file).
"""

from __future__ import annotations

import hashlib
import json
import os
import shutil
import stat
import subprocess
import sys
from dataclasses import dataclass
from pathlib import Path

import numpy as np
import pytest

from explore.cli import COMMAND_MODULES
from tests.explore.conftest import fixed_toml, space_toml

REPO = Path(__file__).resolve().parents[2]

#: The walk's sweep: two designs (the 2:4 PE and its dense twin) on a 4x4 array, 4 trials.
TINY_CONFIG = (
    """\
[study]
name = "walk"
seed = 3
trials = 4

"""
    + space_toml(rows=[4], cols=[4], sram_kb=[64], node_nm=[16])
    + fixed_toml()
    + """
[[workload]]
name = "bert-base"
weight = 1.0

[limits]
max_stall_fraction = 0.9
max_tj_c = 85.0
max_power_density_w_mm2 = 1.0
max_area_mm2 = 20.0

[objectives]
primary = "perf_per_watt"
"""
)

EVAL_MODULE = """\
import numpy as np


def score(weights):
    return float(sum(np.abs(w).sum() for w in weights.values()))
"""


@dataclass(frozen=True)
class Entry:
    kind: str  # file | dir | link
    size: int
    mtime_ns: int
    digest: str


def _entry(p: Path) -> Entry:
    st = p.lstat()
    if stat.S_ISLNK(st.st_mode):
        return Entry("link", 0, st.st_mtime_ns, os.readlink(p))
    if stat.S_ISDIR(st.st_mode):
        return Entry("dir", 0, 0, "")  # a directory's own mtime moves with its entries: those are compared
    return Entry("file", st.st_size, st.st_mtime_ns, hashlib.sha256(p.read_bytes()).hexdigest())


def _under(path: str, dirs: list[Path]) -> bool:
    return any(path == str(d) or path.startswith(str(d) + os.sep) for d in dirs)


def snapshot(roots: list[Path], skip: list[Path]) -> dict[str, Entry]:
    """Every entry under ``roots`` (not following symlinks), but those under ``skip``."""
    out: dict[str, Entry] = {}
    for root in roots:
        for dirpath, dirnames, filenames in os.walk(root, followlinks=False):
            for name in [*dirnames, *filenames]:
                p = Path(dirpath) / name
                if not _under(str(p), skip):
                    out[str(p)] = _entry(p)
    return out


def changes(before: dict[str, Entry], after: dict[str, Entry], allowed: list[Path]) -> list[str]:
    """What differs between two snapshots, but under ``allowed``."""
    found = [f"created {p}" for p in sorted(set(after) - set(before))]
    found += [f"removed {p}" for p in sorted(set(before) - set(after))]
    found += [
        f"changed {p}: {before[p]} -> {after[p]}"
        for p in sorted(set(before) & set(after))
        if before[p] != after[p]
    ]
    return [f for f in found if not _under(f.split(" ", 1)[1].split(":", 1)[0], allowed)]


def steps(inp: Path, out: Path) -> list[tuple[str, list[str], list[Path]]]:
    """(command, arguments, the outputs it may write) of the walk, in order: each command at least
    once, the ones that read a study after the sweep that writes it."""
    study = out / "sweep" / "study.journal"
    return [
        ("assumptions", ["assumptions", "--json"], []),
        (
            "verilog",
            ["verilog", "--out", str(out / "verilog"), "--rows", "2", "--cols", "2", "--json"],
            [out / "verilog"],
        ),
        (
            "ppa",
            [
                "ppa",
                "--rows",
                "4",
                "--cols",
                "4",
                "--node",
                "16",
                "--clock-mhz",
                "400",
                "--sparsity",
                "2:4",
                "--json",
            ],
            [],
        ),
        ("simulate", ["simulate", "--workload", "bert-base", "--rows", "4", "--cols", "4", "--json"], []),
        (
            "quality",
            [
                "quality",
                "--weights",
                str(inp / "w.npz"),
                "--eval",
                "walk_eval:score",
                "--save-pruned",
                str(out / "pruned.safetensors"),
                "--hook-timeout",
                "120",
                "--json",
            ],
            [out / "pruned.safetensors"],
        ),
        ("sweep", ["sweep", str(inp / "walk.toml"), "--out", str(out / "sweep"), "--json"], [out / "sweep"]),
        (
            "report",
            ["report", "--storage", str(study), "--study", "walk", "--out", str(out / "report"), "--json"],
            [out / "report"],
        ),
        ("memo", ["memo", "--storage", str(study), "--study", "walk"], []),
        ("diff", ["diff", f"{study}#walk", str(out / "sweep" / "best.json"), "--json"], []),
        (
            "validate",
            ["validate", "--group", "mac", "--markdown", str(out / "validation.md")],
            [out / "validation.md"],
        ),
        # one Yosys (the native one when installed: the wheel's synthesis takes minutes), its own
        # temporary cache (removed on exit: TMPDIR must end empty)
        (
            "characterise",
            [
                "characterise",
                str(inp / "walk.toml"),
                "--out",
                str(out / "characterised"),
                "--quality-out",
                str(out / "characterised" / "quality"),
                "--workers",
                "1",
                "--yosys",
                "native" if shutil.which("yosys") else "yowasp",
            ],
            [out / "characterised"],
        ),
    ]


def _inputs(inp: Path) -> None:
    inp.mkdir()
    (inp / "walk.toml").write_text(TINY_CONFIG)
    rng = np.random.default_rng(0)
    np.savez(
        inp / "w.npz",
        fc1=rng.standard_normal((8, 16)).astype(np.float32),
        fc2=rng.standard_normal((4, 8)).astype(np.float32),
    )
    (inp / "walk_eval.py").write_text(EVAL_MODULE)


@pytest.mark.slow
@pytest.mark.yosys
def test_every_command_writes_only_under_its_output(tmp_path):
    home, cwd, tmp, cache = (tmp_path / n for n in ("home", "cwd", "tmp", "cache"))
    parent = tmp_path / "work"
    for d in (home, cwd, tmp, cache, parent):
        d.mkdir()
    inp, out = parent / "inputs", parent / "out"
    _inputs(inp)
    out.mkdir()  # the directory the user keeps results in; each command writes below it
    (home / ".profile").write_text("# a file of the user's\n")
    (cwd / "notes.txt").write_text("the user's working directory\n")
    env = {
        k: v
        for k, v in os.environ.items()
        if k not in ("PYTHONDONTWRITEBYTECODE", "MPLCONFIGDIR", "XDG_CACHE_HOME", "XDG_CONFIG_HOME")
    }
    env.update(
        HOME=str(home),
        TMPDIR=str(tmp),
        SPARSEPE_CACHE_DIR=str(cache),
        PYTHONPATH=f"{REPO}{os.pathsep}{inp}",
        COLUMNS="200",
    )
    roots = [home, cwd, tmp, parent]
    walk = steps(inp, out)
    assert {name for name, _, _ in walk} == set(COMMAND_MODULES), "every sub-command is walked"
    state = snapshot(roots, [cache])
    for name, args, outputs in walk:
        p = subprocess.run(
            [sys.executable, "-m", "explore.cli", *args],
            cwd=cwd,
            env=env,
            capture_output=True,
            text=True,
            timeout=900,
        )
        assert p.returncode == 0, f"{name}: exit {p.returncode}\n{p.stderr[-2000:]}"
        if "--json" in args:
            json.loads(p.stdout)
        after = snapshot(roots, [cache])
        found = changes(state, after, outputs)
        assert not found, f"sparsepe {' '.join(args)} changed files outside its output:\n" + "\n".join(found)
        for o in outputs:
            assert o.exists(), f"{name}: {o} was not written"
        state = after
    assert not list(tmp.iterdir()), "temporary files are removed"


def test_the_snapshot_sees_every_kind_of_change(tmp_path):
    keep, out = tmp_path / "keep", tmp_path / "out"
    keep.mkdir()
    out.mkdir()
    (keep / "a.txt").write_text("aaaa")
    (keep / "b.txt").write_text("b")
    (keep / "link").symlink_to(keep / "a.txt")
    before = snapshot([tmp_path], [])
    (keep / "a.txt").write_text("AAAA")  # same size, new content
    (keep / "b.txt").unlink()
    (keep / "link").unlink()
    (keep / "link").symlink_to(keep / "elsewhere")
    (keep / "new").mkdir()
    (out / "result.json").write_text("{}")
    found = changes(before, snapshot([tmp_path], []), [out])
    assert [f.split(" ", 1)[0] for f in found] == ["created", "removed", "changed", "changed"], found
    assert not any("result.json" in f for f in found)
