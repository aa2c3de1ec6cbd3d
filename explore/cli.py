"""The ``sparsepe`` command line.

Each sub-command lives in its own module ``explore/cmd_<name>.py`` that defines
``register(app: typer.Typer) -> None``. Bad input anywhere below raises :class:`hw.InputError`
(or a pydantic ``ValidationError`` / ``OSError`` on a named file); :func:`main` turns it into one
line on stderr and exit code 2, never a traceback.
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
        modname = f"explore.cmd_{name}"
        try:
            module = importlib.import_module(modname)
        except ModuleNotFoundError as exc:  # a command not built yet in this checkout
            if exc.name != modname:
                raise
            continue
        module.register(app)


_register_commands()


def fail(message: str) -> "typer.Exit":
    """Print one error line to stderr and return the exit (code 2) to raise."""
    print(f"sparsepe: error: {message}", file=sys.stderr)
    return typer.Exit(code=2)


def main(argv: list[str] | None = None) -> None:
    """Console-script entry point."""
    try:
        app(args=argv, prog_name="sparsepe", standalone_mode=True)
    except InputError as exc:
        print(f"sparsepe: error: {exc}", file=sys.stderr)
        sys.exit(2)


if __name__ == "__main__":
    main()
