"""The command line's help reads right: flags show no value type (Typer 0.29 prints ``<bool>``)."""

from __future__ import annotations

import pytest
from typer.testing import CliRunner

from explore.cli import COMMAND_MODULES, app


@pytest.mark.parametrize("command", COMMAND_MODULES)
def test_help_has_no_bool_placeholder(command):
    r = CliRunner().invoke(app, [command, "--help"], terminal_width=120)
    assert r.exit_code == 0, r.output
    assert "--help" in r.output
    assert "<bool>" not in r.output
    # value options keep their type
    if command == "ppa":
        assert "<int>" in r.output
