"""``sparsepe assumptions [--json] [--config]`` and the config's [assumptions] / [decision] sections:
rows with every field, a config range shown, and bad input as one line with exit code 2."""

from __future__ import annotations

import json
import subprocess
import sys
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[2]
FIELDS = {"name", "value", "low", "high", "unit", "tag", "reason", "used_by", "varied"}


def _run(*args, cwd=ROOT) -> subprocess.CompletedProcess:
    return subprocess.run(
        [sys.executable, "-m", "explore.cli", *map(str, args)],
        capture_output=True,
        text=True,
        cwd=cwd,
        env={"PYTHONPATH": str(ROOT), "PATH": "/usr/bin:/bin"},
    )


def _config(tmp_path: Path, extra: str) -> Path:
    text = (ROOT / "examples" / "default.toml").read_text().replace("[objectives]", extra + "\n[objectives]")
    p = tmp_path / "c.toml"
    p.write_text(text)
    return p


def test_json_rows_carry_every_field():
    r = _run("assumptions", "--json")
    assert r.returncode == 0, r.stderr
    rows = json.loads(r.stdout)
    names = {x["name"] for x in rows}
    assert {
        "lpddr5_phy_area_mm2",
        "lpddr5_dram_pj_per_bit",
        "sram_energy_scale",
        "clock_energy_scale",
        "wire_allowance",
        "logic_leakage_scale",
        "fo4_45nm_ps",
        "w_hold_cycles",
    } <= names
    for x in rows:
        assert set(x) == FIELDS
        assert x["low"] <= x["high"] and x["tag"] in ("A", "D", "S", "P", "T")


def test_config_ranges_are_shown(tmp_path):
    p = _config(tmp_path, "[assumptions]\nlpddr5_phy_area_mm2 = { low = 0.8, high = 1.3 }")
    r = _run("assumptions", "--json", "--config", p)
    assert r.returncode == 0, r.stderr
    row = next(x for x in json.loads(r.stdout) if x["name"] == "lpddr5_phy_area_mm2")
    assert (row["low"], row["high"], row["value"]) == (0.8, 1.3, 1.0)


@pytest.mark.parametrize(
    "extra, message",
    [
        (
            "[assumptions]\nlpddr5_phy_area_mm2 = { low = 2.0, high = 1.0 }",
            "assumptions.lpddr5_phy_area_mm2: low 2 is above high 1",
        ),
        (
            "[assumptions]\nnot_a_constant = { low = 1.0, high = 2.0 }",
            "assumptions.not_a_constant: unknown assumption",
        ),
        ("[decision]\nmin_confidence = 0", "decision.min_confidence: must be in (0, 1], got 0 (an integer)"),
        (
            "[decision]\nmin_confidence = 1.5",
            "decision.min_confidence: must be in (0, 1], got 1.5 (a number)",
        ),
    ],
)
def test_bad_config_is_one_line_exit_2(tmp_path, extra, message):
    p = _config(tmp_path, extra)
    r = _run("assumptions", "--config", p)
    assert r.returncode == 2
    lines = r.stderr.strip().splitlines()
    assert len(lines) == 1 and lines[0].startswith("sparsepe: error: ") and message in lines[0], r.stderr
