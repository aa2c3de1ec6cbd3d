"""The ``sparsepe`` command line.

Each sub-command lives in its own module ``explore/cmd_<name>.py`` that defines
``register(app: typer.Typer) -> None``. Bad input anywhere below raises
:class:`hw.errors.InputError` (config validation and file errors are turned into one where they
occur, naming the file and key); :func:`main` turns it into one line on stderr and exit code 2,
never a traceback.
"""

from __future__ import annotations

import importlib
import sys

import typer

from hw.errors import InputError

app = typer.Typer(
    name="sparsepe",
    help="Design-space exploration and PPA of N:M structured-sparse tensor cores.",
    no_args_is_help=True,
    add_completion=False,
    pretty_exceptions_enable=False,
)

@app.callback()
def _root() -> None:
    """Design-space exploration and PPA of N:M structured-sparse tensor cores."""


_COMMAND_MODULES = ("verilog", "ppa", "simulate", "quality", "sweep", "report")


def _register_commands() -> None:
    for name in _COMMAND_MODULES:
        importlib.import_module(f"explore.cmd_{name}").register(app)


_register_commands()


def main(argv: list[str] | None = None) -> None:
    """Console-script entry point."""
    try:
        app(args=argv, prog_name="sparsepe", standalone_mode=True)
    except InputError as exc:
        print(f"sparsepe: error: {exc}", file=sys.stderr)
        sys.exit(2)


if __name__ == "__main__":
    main()
