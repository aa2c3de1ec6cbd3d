"""Fixtures for the explore/ tests: a small sweep config written into tmp_path."""

from __future__ import annotations

from pathlib import Path

import pytest

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


@pytest.fixture
def small_config(tmp_path: Path):
    def make(workload: str = "bert-base", text: str | None = None, name: str = "small.toml") -> Path:
        p = tmp_path / name
        p.write_text(text if text is not None else SMALL_CONFIG.replace("{workload}", workload))
        return p

    return make
