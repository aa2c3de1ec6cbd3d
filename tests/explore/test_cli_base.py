import subprocess
import sys

import pytest


def test_cli_help_lists_program():
    out = subprocess.run([sys.executable, "-m", "explore.cli", "--help"], capture_output=True, text=True)
    assert out.returncode == 0
    assert "sparsepe" in out.stdout


def test_unknown_command_exits_2():
    out = subprocess.run(
        [sys.executable, "-m", "explore.cli", "no-such-command"], capture_output=True, text=True
    )
    assert out.returncode == 2
    assert "Traceback" not in out.stderr


def test_an_internal_error_is_one_line_exit_1(monkeypatch, capsys):
    """A bug (not bad input) below a command: one line naming the exception, exit 1, no traceback."""
    from explore import cli
    from explore.commands import assumptions

    def broken(*_a, **_k):
        raise ZeroDivisionError("a bug")

    monkeypatch.setattr(assumptions, "load_config", broken)
    monkeypatch.delenv("SPARSEPE_TRACEBACK", raising=False)
    with pytest.raises(SystemExit) as exc:
        cli.main(["assumptions", "--config", "any.toml"])
    assert exc.value.code == 1
    err = capsys.readouterr().err.strip().splitlines()
    assert len(err) == 1 and err[0].startswith(
        "sparsepe: error: internal error (ZeroDivisionError: a bug)"
    ), err
