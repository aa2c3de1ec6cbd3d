import subprocess
import sys


def test_cli_help_lists_program():
    out = subprocess.run([sys.executable, "-m", "explore.cli", "--help"], capture_output=True, text=True)
    assert out.returncode == 0
    assert "sparsepe" in out.stdout


def test_unknown_command_exits_2():
    out = subprocess.run([sys.executable, "-m", "explore.cli", "no-such-command"], capture_output=True, text=True)
    assert out.returncode == 2
    assert "Traceback" not in out.stderr
