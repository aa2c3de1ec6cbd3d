"""The ``sparsepe`` command line.

Each sub-command lives in its own module ``explore/commands/<name>.py`` that defines
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

def _flags_without_type() -> None:
    """Typer 0.29's rich help prints a type column for every option, ``<bool>`` on on/off flags
    (``--json``, ``--grid``, ``--help``), which reads as if the flag took a value. Flags take none:
    show no type for them (value options keep theirs)."""
    from typer.core import TyperOption

    shown = TyperOption.display_type_rich

    def display_type_rich(self, ctx):
        if getattr(self, "is_flag", False) and self.metavar is None:
            return None
        return shown(self, ctx)

    TyperOption.display_type_rich = display_type_rich


_flags_without_type()

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


_COMMAND_MODULES = ("verilog", "ppa", "simulate", "quality", "sweep", "report", "memo", "diff")


def _register_commands() -> None:
    for name in _COMMAND_MODULES:
        importlib.import_module(f"explore.commands.{name}").register(app)


_register_commands()


def _log_to_stderr() -> None:
    """The library's ``sparsepe.*`` loggers (e.g. ppa.synth's "synthesising ...") as plain lines
    on stderr, once."""
    import logging

    log = logging.getLogger("sparsepe")
    if not log.handlers:
        h = logging.StreamHandler(sys.stderr)
        h.setFormatter(logging.Formatter("sparsepe: %(message)s"))
        log.addHandler(h)
        log.setLevel(logging.INFO)
        log.propagate = False


def main(argv: list[str] | None = None) -> None:
    """Console-script entry point."""
    _log_to_stderr()
    try:
        app(args=argv, prog_name="sparsepe", standalone_mode=True)
    except InputError as exc:
        print(f"sparsepe: error: {exc}", file=sys.stderr)
        sys.exit(2)


if __name__ == "__main__":
    main()
