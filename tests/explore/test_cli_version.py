"""``sparsepe --version``: the package version and the model code version, the digest a study
records when it is created (and is resumed only by)."""

from __future__ import annotations

import hashlib
from importlib import metadata
from pathlib import Path

from explore.trials import MODEL_CODE_ATTR
from hw.host import code_fingerprint

REPO = Path(__file__).resolve().parents[2]


def _model_code_digest(root: Path) -> str:
    """The documented digest, computed here from the files: SHA-256 over the relative path, a NUL,
    the code (hw.host.code_fingerprint, tested in tests/test_code_fingerprint.py) and a NUL of
    every .py file of hw/, ppa/ and sim/ and of the evaluator's modules (explore/evaluator.py,
    explore/twins.py, explore/prewarm.py), in path order; 16 hex digits."""
    files = {p for pkg in ("hw", "ppa", "sim") for p in (root / pkg).rglob("*.py")}
    files |= {root / "explore" / m for m in ("evaluator.py", "twins.py", "prewarm.py")}
    h = hashlib.sha256()
    for p in sorted(files):
        h.update(p.relative_to(root).as_posix().encode() + b"\0" + code_fingerprint(p) + b"\0")
    return h.hexdigest()[:16]


def test_version_prints_the_package_and_model_code_versions(run_cli):
    r = run_cli(["--version"])
    assert r.returncode == 0, r.stderr
    assert r.stderr == ""
    assert r.stdout == f"sparsepe {metadata.version('sparsepe')}\nmodel code {_model_code_digest(REPO)}\n"


def test_version_is_the_model_code_a_study_records(run_cli, small_config, tmp_path, run_sweep):
    study, _ = run_sweep(small_config(), tmp_path / "o", trials=2, evaluator="tests.explore._analytic")
    printed = run_cli(["--version"]).stdout.splitlines()[1].removeprefix("model code ")
    assert study.user_attrs[MODEL_CODE_ATTR] == printed


def test_version_is_listed_in_the_help_and_runs_before_any_command(run_cli):
    assert "--version" in run_cli(["--help"]).stdout
    r = run_cli(["--version", "sweep"])  # eager: it answers and exits before the command's arguments
    assert r.returncode == 0 and r.stdout.startswith("sparsepe ")
