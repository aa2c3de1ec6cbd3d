"""Section 12 of the report: reproducibility (the study, its config and fingerprint, the model
code, the tools and package versions, the git revision, the command that regenerates it)."""

from __future__ import annotations

import hashlib
import json
import platform
import subprocess
from importlib import metadata
from pathlib import Path

from explore.report.data import StudyData
from explore.report.document import Section, Table
from hw.errors import InputError
from ppa.yosys import yosys_id


def _versions() -> dict[str, str]:
    out = {"python": platform.python_version()}
    for pkg in (
        "sparsepe",
        "numpy",
        "scipy",
        "pandas",
        "optuna",
        "amaranth",
        "plotly",
        "matplotlib",
        "jinja2",
        "pydantic",
        "scikit-learn",
    ):
        try:
            out[pkg] = metadata.version(pkg)
        except metadata.PackageNotFoundError:
            out[pkg] = "not installed"
    return out


def _yosys() -> str:
    """The Yosys synthesis runs with here, with its version (ppa.synth.yosys_id: the wheel's is
    read from its package, so the report never starts the WebAssembly Yosys)."""
    try:
        return yosys_id()
    except InputError as exc:  # no Yosys on this machine: the report says so
        return f"unavailable ({exc})"


def git_revision() -> str:
    """The checkout's git revision, marked when it has uncommitted changes."""
    root = Path(__file__).resolve().parents[2]
    try:
        rev = subprocess.run(
            ["git", "-C", str(root), "rev-parse", "HEAD"], capture_output=True, text=True, timeout=10
        )
        if rev.returncode != 0:
            return "not a git checkout"
        dirty = subprocess.run(
            ["git", "-C", str(root), "status", "--porcelain", "--untracked-files=no"],
            capture_output=True,
            text=True,
            timeout=10,
        )
        return rev.stdout.strip() + (" (with uncommitted changes)" if dirty.stdout.strip() else "")
    except (OSError, subprocess.TimeoutExpired):
        return "git unavailable"


def section_repro(data: StudyData, out_dir: Path, command: str) -> Section:
    s = Section(12, "repro", "Reproducibility", "sparsity")
    body = json.dumps(data.config_json, indent=2, sort_keys=True)
    sweep = data.sweep
    t = Table("Provenance", ["item", "value"], [], name="provenance")
    t.rows += [
        ["study", data.study_name],
        ["storage", f"{data.storage_kind}: {data.storage_url}"],
        ["config source", data.cfg.source],
        ["config fingerprint (sha256, explore.study.config_fingerprint)", data.fingerprint],
        ["config sha256 (canonical JSON below)", hashlib.sha256(body.encode()).hexdigest()],
        [
            "model code that computed the trials (explore.study.model_code_version)",
            data.user_attrs.get("sparsepe_model_code") or "not recorded (a study from before it was)",
        ],
        ["sampler / seed (config)", f"{data.cfg.study.sampler} / {data.cfg.study.seed}"],
    ]
    if sweep:
        t.rows.append(["sweep run", ", ".join(f"{k}={v}" for k, v in sorted(sweep.items()))])
    for host, prov in sorted((data.user_attrs.get("tools") or {}).items()):
        t.rows.append(
            [
                f"tools that costed the trials on {host} (cache keys)",
                "; ".join(f"{k}: {v}" for k, v in sorted(prov.items())),
            ]
        )
    t.rows += [
        ["evaluator", data.evaluator],
        ["Yosys on PATH now", _yosys()],
        ["git revision", git_revision()],
        ["platform", f"{platform.system()} {platform.machine()}"],
    ]
    for k, v in _versions().items():
        t.rows.append([k, v])
    s.tables.append(t)
    s.pre.append(("Regenerate this report with:", command))
    s.pre.append(("The config the study was created from (canonical JSON):", body))
    return s
