"""The ``sparsepe`` command line.

Each sub-command lives in its own module ``explore/commands/<name>.py`` that defines
``register(app: typer.Typer) -> None``; the module is imported when its command is looked up (to
run it, or to list it in the help), so ``sparsepe ppa`` does not load the sweep's Optuna and report
stack. ``sparsepe --version`` prints the package version and the model code version a study
records (explore.provenance). Bad input anywhere below raises
:class:`hw.errors.InputError` (config validation and file errors are turned into one where they
occur, naming the file and key); :func:`main` turns it into one line on stderr and exit code 2,
never a traceback.
"""

from __future__ import annotations

import importlib
import logging
import os
import sys
from typing import Annotated, Any

import click.exceptions
import typer
from typer.core import TyperGroup, TyperOption
from typer.exceptions import Abort as TyperAbort

from explore.provenance import model_code_version, package_version
from hw.errors import InputError

try:  # the click that typer 0.29 vendors; a typer that uses click itself has none
    from typer._click import exceptions as typer_click_exceptions
except ImportError:
    typer_click_exceptions = None


def _flags_without_type() -> None:
    """Typer 0.29's rich help prints a type column for every option, ``<bool>`` on on/off flags
    (``--json``, ``--grid``, ``--help``), which reads as if the flag took a value. Flags take none:
    show no type for them (value options keep theirs)."""
    shown = TyperOption.display_type_rich

    def display_type_rich(self, ctx):
        if getattr(self, "is_flag", False) and self.metavar is None:
            return None
        return shown(self, ctx)

    TyperOption.display_type_rich = display_type_rich


_flags_without_type()

#: The sub-commands, in the order the help lists them: ``explore/commands/<name>.py`` each.
_COMMAND_MODULES = ("verilog", "ppa", "simulate", "quality", "sweep", "report", "memo", "diff", "validate", "characterise")


def _load_command(name: str) -> Any:
    """The click command of ``explore/commands/<name>.py``, registered on a Typer of its own."""
    one = typer.Typer(add_completion=False, pretty_exceptions_enable=False)
    importlib.import_module(f"explore.commands.{name}").register(one)  # lazy subcommand loading: on first use only
    return typer.main.get_command(one)


class _LazyCommands(dict):
    """Command name -> click command; a command's module is imported when its command is first read."""

    def __init__(self, names: tuple[str, ...]):
        super().__init__((n, None) for n in names)

    def __getitem__(self, name: str) -> Any:
        cmd = super().__getitem__(name)
        if cmd is None:
            cmd = _load_command(name)
            super().__setitem__(name, cmd)
        return cmd

    def get(self, name: str, default: Any = None) -> Any:
        return self[name] if name in self else default

    def items(self):
        return [(n, self[n]) for n in self]

    def values(self):
        return [self[n] for n in self]


class _LazyGroup(TyperGroup):
    """The root command group over :data:`_COMMAND_MODULES`, loaded lazily (:class:`_LazyCommands`)."""

    def __init__(self, **kwargs: Any):
        super().__init__(**kwargs)
        self.commands = _LazyCommands(_COMMAND_MODULES)

    def list_commands(self, ctx: Any) -> list[str]:
        return list(self.commands)


app = typer.Typer(
    name="sparsepe",
    help="Design-space exploration and PPA of N:M structured-sparse tensor cores.",
    no_args_is_help=True,
    add_completion=False,
    pretty_exceptions_enable=False,
    cls=_LazyGroup,
)


def _print_version(value: bool) -> None:
    if value:
        typer.echo(f"sparsepe {package_version()}\nmodel code {model_code_version()}")
        raise typer.Exit()


@app.callback()
def _root(
    version: Annotated[bool, typer.Option(
        "--version", help="Print the package version and the model code version (the digest a study records), "
                          "then exit.", callback=_print_version, is_eager=True)] = False,
) -> None:
    """Design-space exploration and PPA of N:M structured-sparse tensor cores."""


def _log_to_stderr() -> None:
    """The library's ``sparsepe.*`` loggers (e.g. ppa.synth's "synthesising ...") as plain lines
    on stderr, once."""
    class _Stderr(logging.StreamHandler):
        """Writes to the sys.stderr of the moment (not the one at set-up: tests swap it)."""

        @property
        def stream(self):
            return sys.stderr

        @stream.setter
        def stream(self, value):
            pass

    log = logging.getLogger("sparsepe")
    if not log.handlers:
        h = _Stderr()
        h.setFormatter(logging.Formatter("sparsepe: %(message)s"))
        log.addHandler(h)
        log.setLevel(logging.INFO)
        log.propagate = False


def _fail(where: str | None, what: str, code: int = 2) -> None:
    """The one line of a failed command: ``sparsepe: error: <where>: <what>`` (newlines folded)."""
    what = " ".join(str(what).split())
    print(f"sparsepe: error: {where}: {what}" if where else f"sparsepe: error: {what}", file=sys.stderr)
    sys.exit(code)


def _usage_where(exc) -> str:
    """The flag or argument a click usage error is about, as the user wrote it."""
    param = getattr(exc, "param", None)
    if param is not None:
        opts = getattr(param, "opts", None) or []
        return "/".join(opts) if opts else str(getattr(param, "name", "") or "")
    hint = getattr(exc, "param_hint", None)
    if hint:
        return hint if isinstance(hint, str) else "/".join(hint)
    ctx = getattr(exc, "ctx", None)
    return ctx.command_path if ctx is not None else "sparsepe"


def _click_exceptions() -> tuple[tuple, tuple, tuple]:
    """(UsageError, Abort, ClickException) classes of click and of the click typer 0.29 vendors."""
    mods = [click.exceptions] + ([typer_click_exceptions] if typer_click_exceptions is not None else [])
    return tuple(tuple(getattr(m, n) for m in mods if hasattr(m, n)) for n in ("UsageError", "Abort", "ClickException"))


def main(argv: list[str] | None = None) -> None:
    """Console-script entry point.

    Every failure is one line on stderr: bad input (:class:`InputError`, a bad flag value, an
    unknown option or command, an unreadable or read-only path) exits with code 2; an unexpected
    exception exits with code 1 (``SPARSEPE_TRACEBACK=1`` shows its traceback). Only ``--help``
    and a command given without arguments print help."""
    _log_to_stderr()
    usage, abort, click_exc = _click_exceptions()
    command = typer.main.get_command(app)
    try:
        rc = command.main(args=argv, prog_name="sparsepe", standalone_mode=False)
    except InputError as exc:
        _fail(None, str(exc))
    except usage as exc:
        if type(exc).__name__ == "NoArgsIsHelpError":  # ``sparsepe sweep`` alone: its help, as before
            exc.show()
            sys.exit(exc.exit_code)
        what = exc.message if exc.message and type(exc).__name__ == "BadParameter" else exc.format_message()
        _fail(_usage_where(exc), what)
    except abort:
        _fail(None, "aborted", code=130)
    except TyperAbort:
        _fail(None, "aborted", code=130)
    except click_exc as exc:
        _fail(None, exc.format_message())
    except (OSError, RecursionError, MemoryError) as exc:
        if os.environ.get("SPARSEPE_TRACEBACK"):
            raise
        if isinstance(exc, OSError):
            where = exc.filename if exc.filename is not None else None
            _fail(str(where) if where is not None else None, exc.strerror or str(exc))
        _fail(None, f"{type(exc).__name__}: input too large or nested too deeply")
    except Exception as exc:  # a bug, not bad input: still one line (exit 1), traceback on request
        if os.environ.get("SPARSEPE_TRACEBACK"):
            raise
        _fail(None, f"internal error ({type(exc).__name__}: {exc}); set SPARSEPE_TRACEBACK=1 for the traceback", code=1)
    sys.exit(rc if isinstance(rc, int) else 0)


if __name__ == "__main__":
    main()
