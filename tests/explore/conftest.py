"""Fixtures for the explore/ tests: a small sweep config written into tmp_path, the real command
line in a subprocess, and a sweep run in this process."""

from __future__ import annotations

import os
import subprocess
import sys
from pathlib import Path

import pytest
import tomli_w

REPO = Path(__file__).resolve().parents[2]

SMALL_CONFIG = """\
[study]
name = "small"
seed = 3
trials = 20

[space]
rows = [8, 16, 32]
cols = [8, 16, 32]
sram_kb = [64, 256, 1024]
clock_mhz = { min = 200, max = 2000, step = 100 }
node_nm = [16, 7]
sparsity = ["2:4", "dense"]
pipeline = [1, 2, 3]
dataflow = ["ws", "os"]
dram = ["lpddr5", "hbm2"]

[fixed]
ambient_c = 45.0
theta_ja_c_per_w = 2.0
dram_units = { lpddr5 = 4, hbm2 = 1 }

[[workload]]
name = "{workload}"
weight = 1.0

[limits]
max_stall_fraction = 0.3
max_tj_c = 85.0
max_power_density_w_mm2 = 1.0
max_area_mm2 = 20.0

[objectives]
primary = "perf_per_watt"
"""

#: One design, the 2:4 PE and its dense twin, on a 16x16 array at 7 nm: the [space] of the explore
#: tests that evaluate a single point.
ONE_POINT = {
    "rows": [16],
    "cols": [16],
    "sram_kb": [256],
    "clock_mhz": [400],
    "node_nm": [7],
    "sparsity": ["2:4", "dense"],
    "pipeline": [1],
    "dataflow": ["ws"],
    "dram": ["lpddr5"],
}

#: The [fixed] settings those tests share: 45 C ambient, 2 C/W, four LPDDR5 channels.
FIXED = {"ambient_c": 45.0, "theta_ja_c_per_w": 2.0, "dram_units": {"lpddr5": 4}}


def space_toml(**axes) -> str:
    """A ``[space]`` table in TOML: ONE_POINT with ``axes`` replaced."""
    return tomli_w.dumps({"space": {**ONE_POINT, **axes}})


def fixed_toml(*drop: str, **keys) -> str:
    """A ``[fixed]`` table in TOML: FIXED without the keys ``drop``, with ``keys`` added or replaced."""
    return tomli_w.dumps({"fixed": {**{k: v for k, v in FIXED.items() if k not in drop}, **keys}})


@pytest.fixture
def small_config(tmp_path: Path):
    def make(workload: str = "bert-base", text: str | None = None, name: str = "small.toml") -> Path:
        p = tmp_path / name
        p.write_text(text if text is not None else SMALL_CONFIG.replace("{workload}", workload))
        return p

    return make


@pytest.fixture(scope="session")
def cli_env():
    """The environment of a subprocess that runs this checkout: os.environ, PYTHONPATH=<repo>,
    and the given extra variables."""

    def make(**extra: str) -> dict[str, str]:
        return {**os.environ, "PYTHONPATH": str(REPO), **extra}

    return make


@pytest.fixture(scope="session")
def run_cli(cli_env):
    """``run_cli(args, cwd, **kw)``: the real command line (``python -m explore.cli *args``) in a
    subprocess, output captured as text (exit codes, one-line errors, what it writes)."""

    def run(args, cwd=None, **kw) -> subprocess.CompletedProcess:
        kw.setdefault("timeout", 300)
        return subprocess.run(
            [sys.executable, "-m", "explore.cli", *args],
            capture_output=True,
            text=True,
            cwd=cwd,
            env=cli_env(),
            **kw,
        )

    return run


@pytest.fixture(scope="session")
def sweep_options():
    """``sweep_options(cfg_path, out, ...)``: the SweepOptions of a quiet sweep writing into ``out``
    (storage: ``storage``, or the journal file under ``out``)."""
    from explore.results import DEFAULT_EVALUATOR
    from explore.storage import resolve_storage
    from explore.study import SweepOptions

    def make(
        cfg_path,
        out,
        *,
        trials=12,
        seed=0,
        sampler="tpe",
        workers=1,
        storage=None,
        study="t",
        evaluator=DEFAULT_EVALUATOR,
    ):
        return SweepOptions(
            config_path=str(cfg_path),
            storage=resolve_storage(storage, Path(out)),
            study_name=study,
            trials=trials,
            seed=seed,
            sampler=sampler,
            workers=workers,
            evaluator=evaluator,
            out_dir=str(out),
            progress=False,
        )

    return make


@pytest.fixture(scope="session")
def run_sweep(sweep_options):
    """``run_sweep(cfg_path, out, **options) -> (study, best)``: explore.study's sweep in this
    process (run_study, then export_study into ``out``); options as for ``sweep_options``."""
    from explore.config import load_config
    from explore.runner import export_study
    from explore.study import run_study

    def run(cfg_path, out, **kw):
        cfg = load_config(cfg_path)
        study = run_study(sweep_options(cfg_path, out, **kw), cfg)
        return study, export_study(study, cfg, Path(out))

    return run
