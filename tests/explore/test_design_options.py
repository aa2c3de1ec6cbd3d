"""The design-point flags are declared once (explore.commands.design_options): every command that
takes one shows the same default and rejects the same bad value with the same one-line message."""

from __future__ import annotations

import pytest

from explore.cli import (
    _load_command as load_command,
    main,
)

#: flag -> (a bad value, the one-line message, the commands that take the flag)
SHARED: dict[str, tuple[str, str, tuple[str, ...]]] = {
    "--rows": ("0", "--rows: must be in 1..256, got 0", ("ppa", "simulate", "verilog")),
    "--cols": ("300", "--cols: must be in 1..256, got 300", ("ppa", "simulate", "verilog")),
    "--sram-kb": ("-1", "--sram-kb: must be in 0..1.04858e+06, got -1", ("ppa", "simulate")),
    "--clock-mhz": ("0.5", "--clock-mhz: must be in 1..10000, got 0.5", ("ppa", "simulate")),
    "--pipeline": ("9", "--pipeline: must be in 1..8, got 9", ("ppa", "simulate", "verilog")),
    "--sram-banks": ("65", "--sram-banks: must be in 1..64, got 65", ("ppa", "simulate")),
    "--acc-bits": ("65", "--acc-bits: must be in 1..64, got 65", ("ppa", "simulate", "verilog")),
    "--dataflow": ("zz", "--dataflow: unknown value 'zz' (ws, os, is)", ("ppa", "simulate", "verilog")),
    "--precision": (
        "fp7",
        "--precision: must be one of int8, int4, fp8-e4m3, fp8-e5m2, fp16, bf16, got 'fp7'",
        ("ppa", "simulate", "verilog"),
    ),
    "--sparsity": ("3:3", "--sparsity:", ("ppa", "simulate")),
    "--liberty-node": ("0", "--liberty-node: must be in 1..1000, got 0", ("ppa", "sweep")),
}
#: verilog writes an array only when --rows and --cols are given: those two have no default there.
OPT_IN = {("verilog", "--rows"), ("verilog", "--cols")}
#: the arguments that bring each command to its flag checks
BASE = {
    "ppa": [],
    "simulate": ["--workload", "bert-base"],
    "verilog": ["--out", "unused-out"],
    "sweep": ["examples/default.toml"],
}


def _shown_default(command: str, flag: str) -> object:
    param = next(p for p in load_command(command).params if flag in p.opts)
    return param.show_default if isinstance(param.show_default, str) else param.default


@pytest.mark.parametrize("flag", sorted(SHARED))
def test_every_command_shows_one_default(flag: str) -> None:
    shown = {c: _shown_default(c, flag) for c in SHARED[flag][2] if (c, flag) not in OPT_IN}
    assert len(set(map(str, shown.values()))) == 1, (flag, shown)


def test_simulate_default_array_is_ppas() -> None:
    assert _shown_default("simulate", "--rows") == _shown_default("ppa", "--rows") == "16"
    assert _shown_default("simulate", "--sram-kb") == "256"


@pytest.mark.parametrize("flag,command", [(f, c) for f, (_, _, cs) in sorted(SHARED.items()) for c in cs])
def test_every_command_rejects_the_same_value_alike(
    flag: str, command: str, capsys: pytest.CaptureFixture[str], tmp_path, monkeypatch
) -> None:
    monkeypatch.chdir(tmp_path) if command == "verilog" else None
    bad, message, _ = SHARED[flag]
    with pytest.raises(SystemExit) as e:
        main([command, *BASE[command], flag, bad])
    lines = [ln for ln in capsys.readouterr().err.splitlines() if ln.strip()]
    assert e.value.code == 2 and len(lines) == 1, lines
    assert lines[0].startswith(f"sparsepe: error: {message}"), lines
