"""Config schema: unknown keys, empty ranges and impossible limits are one clear line, exit 2,
and nothing is written."""

from __future__ import annotations

import pytest

from explore.config import load_config
from explore.space import Range, parse_sparsity
from hw.errors import InputError


def test_small_config_loads(small_config):
    cfg = load_config(small_config())
    assert cfg.study.trials == 20
    assert cfg.space.active_axes()[:2] == ("rows", "cols")
    assert cfg.limits.active() == {
        "max_stall_fraction": 0.3,
        "max_tj_c": 85.0,
        "max_power_density_w_mm2": 1.0,
        "max_area_mm2": 20.0,
    }
    assert cfg.objectives.directions() == ["maximize"]


@pytest.mark.parametrize(
    "old,new,needle",
    [
        ("max_tj_c = 85.0", "max_tjc = 85.0", "limits.max_tjc: unknown key"),
        ("rows = [8, 16, 32]", "rows = [8, 16, 32]\nrowz = [4]", "space.rowz: unknown key"),
        (
            "clock_mhz = { min = 200, max = 2000, step = 100 }",
            "clock_mhz = { min = 2000, max = 200 }",
            "empty range",
        ),
        ("sram_kb = [64, 256, 1024]", "sram_kb = []", "sram_kb: empty list"),
        ("max_tj_c = 85.0", "max_tj_c = 40.0", "no design can meet it"),
        ("max_stall_fraction = 0.3", "max_stall_fraction = 1.5", "max_stall_fraction must be in (0, 1]"),
        ('sparsity = ["2:4", "dense"]', 'sparsity = ["3:4"]', "N must divide M"),
        ('dram = ["lpddr5", "hbm2"]', 'dram = ["lpddr9"]', "unknown memory type"),
        (
            'primary = "perf_per_watt"',
            'primary = "perf_per_watt"\nsecondary = ["area"]',
            "unknown secondary objective",
        ),
    ],
)
def test_bad_config_names_file_and_key(small_config, old, new, needle):
    p = small_config()
    text = p.read_text()
    assert old in text
    p.write_text(text.replace(old, new))
    with pytest.raises(InputError) as exc:
        load_config(p)
    msg = str(exc.value)
    assert msg.startswith(str(p)), msg
    assert needle in msg, msg
    assert "\n" not in msg


def test_not_toml(tmp_path):
    p = tmp_path / "bad.toml"
    p.write_text("[space\nrows = 1")
    with pytest.raises(InputError, match="not valid TOML"):
        load_config(p)


def test_range_grid_discretisation():
    assert Range(min=200, max=1000, step=200).grid(integer=False) == [200.0, 400.0, 600.0, 800.0, 1000.0]
    assert Range(min=64, max=4096, log=True, grid_points=7).grid(integer=True) == [
        64,
        128,
        256,
        512,
        1024,
        2048,
        4096,
    ]
    with pytest.raises(InputError, match="grid_points"):
        Range(min=1, max=2).grid(integer=False)


def test_parse_sparsity():
    assert parse_sparsity("2:4") == (2, 4, True)
    assert parse_sparsity("1:8") == (1, 8, True)
    assert parse_sparsity("dense") == (2, 4, False)
    with pytest.raises(ValueError):
        parse_sparsity("2-4")


@pytest.mark.parametrize(
    "old,new",
    [
        ("max_tj_c = 85.0", "max_tjc = 85.0"),
        ("sram_kb = [64, 256, 1024]", "sram_kb = { min = 512, max = 64 }"),
        ("max_tj_c = 85.0", "max_tj_c = 30.0"),
    ],
)
def test_cli_bad_config_exit_2_nothing_written(small_config, tmp_path, old, new, run_cli):
    p = small_config()
    p.write_text(p.read_text().replace(old, new))
    out = tmp_path / "out"
    r = run_cli(["sweep", str(p), "--out", str(out), "--trials", "3"], cwd=tmp_path)
    assert r.returncode == 2, r.stderr
    lines = [line for line in r.stderr.splitlines() if line.strip()]
    assert len(lines) == 1 and lines[0].startswith("sparsepe: error: "), r.stderr
    assert "Traceback" not in r.stderr
    assert not out.exists()
    assert not (tmp_path / "results").exists()
