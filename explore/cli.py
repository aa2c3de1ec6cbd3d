"""The ``sparsepe`` command line.

Each sub-command lives in its own module ``explore/commands/<name>.py`` that defines
``register(app: typer.Typer) -> None``; the module is imported when its command is looked up (to
run it, or to list it in the help), so ``sparsepe ppa`` does not load the sweep's Optuna and report
stack. ``sparsepe --version`` prints the package version and the model code version a study
records (explore.provenance). Bad input anywhere below raises
:class:`hw.errors.InputError` (config validation and file errors are turned into one where they
occur, naming the file and key); :func:`main` turns it into one line on stderr and exit code 2,
never a traceback.

Before a command runs, every flag and argument the user gave is checked for an empty value
(``--out ''``, ``--storage ''``: one line naming the flag); the flags' own checks (explore.flags) run
as the parser reads them, so the first wrong input in argument order is the one reported. Every
line printed for an error has its URL credentials masked (``postgresql://u:***@host``) and its
control characters escaped (hw.host.printable). The caches libraries keep on their own go into the
tool's cache directory (hw.host.keep_library_caches). Ctrl-C prints ``sparsepe: interrupted`` and exits
with code 130, SIGTERM ``sparsepe: terminated (SIGTERM)`` and 143, within 2 s whatever the command was
doing (explore.interrupt: installed before the command's imports when this module is the program).
"""

from __future__ import annotations

import os
import sys
from pathlib import Path
from types import ModuleType

from explore import interrupt

if __name__ == "__main__" or Path(sys.argv[0] if sys.argv else "").name == "sparsepe":
    interrupt.install()  # the program itself: a signal during the imports below is answered too

import importlib  # noqa: E402 - after the handlers, on purpose
import logging  # noqa: E402
from typing import Annotated, Any  # noqa: E402

import click.exceptions  # noqa: E402
import typer  # noqa: E402
from typer.core import TyperGroup, TyperOption  # noqa: E402
from typer.exceptions import Abort as TyperAbort  # noqa: E402

from explore.provenance import model_code_version, package_version  # noqa: E402
from hw.errors import InputError  # noqa: E402
from hw.host import keep_library_caches, mask_passwords, printable  # noqa: E402

typer_click_exceptions: ModuleType | None
ParameterSource: Any  # the vendored click's enum, or click's own
try:  # the click that typer 0.29 vendors; a typer that uses click itself has none
    from typer._click import exceptions as typer_click_exceptions
    from typer._click.core import ParameterSource
except ImportError:
    typer_click_exceptions = None
    from click.core import ParameterSource

#: Exit code of an interrupted command (128 + SIGINT), as a shell reports it.
INTERRUPTED_EXIT = 130


def _flags_without_type() -> None:
    """Typer 0.29's rich help prints a type column for every option, ``<bool>`` on on/off flags
    (``--json``, ``--grid``, ``--help``), which reads as if the flag took a value. Flags take none:
    show no type for them (value options keep theirs)."""
    shown = TyperOption.display_type_rich

    def display_type_rich(self, ctx):
        if getattr(self, "is_flag", False) and self.metavar is None:
            return None
        return shown(self, ctx)

    TyperOption.display_type_rich = display_type_rich  # type: ignore[method-assign]  # patching typer's class


_flags_without_type()

#: The sub-commands, in the order the help lists them: ``explore/commands/<name>.py`` each.
COMMAND_MODULES = (
    "verilog",
    "ppa",
    "simulate",
    "quality",
    "sweep",
    "report",
    "memo",
    "diff",
    "validate",
    "assumptions",
    "characterise",
)


def _load_command(name: str) -> Any:
    """The click command of ``explore/commands/<name>.py``, registered on a Typer of its own, with
    an empty value refused for every flag and argument (:func:`_refuse_empty`)."""
    one = typer.Typer(add_completion=False, pretty_exceptions_enable=False)
    importlib.import_module(f"explore.commands.{name}").register(
        one
    )  # lazy subcommand loading: on first use only
    cmd = typer.main.get_command(one)
    for param in cmd.params:
        _refuse_empty(param)
    return cmd


def param_label(param: Any) -> str:
    """How the user names a parameter: its flags (``--out``), or an argument's name (``CONFIG``)."""
    opts = [o for o in (getattr(param, "opts", None) or []) if o.startswith("-")]
    return "/".join(opts) if opts else str(getattr(param, "name", "") or "").upper()


def _refuse_empty(param: Any) -> None:
    """An empty string the user gave for ``param`` (``--out ''`` would be the current directory,
    ``--storage ''`` no storage at all) is one line naming the flag, before the value is converted."""
    process = param.process_value

    def process_value(ctx: Any, value: Any) -> Any:
        if ctx.get_parameter_source(param.name) in (ParameterSource.COMMANDLINE, ParameterSource.ENVIRONMENT):
            values = value if isinstance(value, (list, tuple)) else [value]
            if any(isinstance(v, str) and not v.strip() for v in values):
                raise InputError("is empty: give a value", where=param_label(param))
        return process(ctx, value)

    param.process_value = process_value


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
    """The root command group over :data:`COMMAND_MODULES`, loaded lazily (:class:`_LazyCommands`)."""

    def __init__(self, **kwargs: Any):
        super().__init__(**kwargs)
        self.commands = _LazyCommands(COMMAND_MODULES)

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
    version: Annotated[
        bool,
        typer.Option(
            "--version",
            help="Print the package version and the model code version (the digest a study records), "
            "then exit.",
            callback=_print_version,
            is_eager=True,
        ),
    ] = False,
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


def safe_line(text: str) -> str:
    """``text`` as one safe terminal line: whitespace runs folded to one space, URL passwords
    masked, control characters escaped."""
    return printable(mask_passwords(" ".join(str(text).split())))


def _fail(where: str | None, what: str, code: int = 2) -> None:
    """The one line of a failed command: ``sparsepe: error: <where>: <what>`` (:func:`safe_line`)."""
    line = f"{where}: {what}" if where else str(what)
    print(f"sparsepe: error: {safe_line(line)}", file=sys.stderr)
    sys.exit(code)


def _interrupted() -> None:
    """Ctrl-C (or SIGTERM): one line, exit code 130 (143); what the study stored so far is kept."""
    interrupt.finish()
    sys.exit(interrupt.exit_code())


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

    def of_every(name: str) -> tuple:
        return tuple(getattr(m, name) for m in mods if hasattr(m, name))

    return of_every("UsageError"), of_every("Abort"), of_every("ClickException")


def main(argv: list[str] | None = None) -> None:
    """Console-script entry point.

    Every failure is one line on stderr: bad input (:class:`InputError`, a bad flag value, an
    unknown option or command, an unreadable or read-only path) exits with code 2; an unexpected
    exception exits with code 1 (``SPARSEPE_TRACEBACK=1`` shows its traceback). Only ``--help``
    and a command given without arguments print help. Once a SIGINT or SIGTERM has come, the
    command ends as interrupted whatever the signal's KeyboardInterrupt turned into on its way out
    (an error of a library's cleanup, a swallowed exception, a normal return): one line, 130 / 143."""
    interrupt.install()
    try:
        try:
            _main(argv)
        except BaseException:
            if interrupt.received() is not None:
                _interrupted()
            raise
        finally:
            if argv is not None:  # in-process callers (tests) get their handlers back; no-op after a signal
                interrupt.uninstall()
        if interrupt.received() is not None:
            _interrupted()
    except SystemExit as exc:
        if argv is not None:
            raise
        interrupt.end_process(_exit_status(exc.code))
    if argv is None:  # the console script: the handlers stay to the process's end (interrupt.end_process)
        interrupt.end_process(0)


def _exit_status(code) -> int:
    """sys.exit's argument as an exit status (None: 0; a message: printed, 1)."""
    if code is None:
        return 0
    if isinstance(code, int):
        return code
    print(code, file=sys.stderr)
    return 1


def _main(argv: list[str] | None) -> None:
    """:func:`main` without the signal handling."""
    _log_to_stderr()
    keep_library_caches()  # nothing of the libraries' own lands in ~/.cache or ~/.config
    usage, abort, click_exc = _click_exceptions()
    command = typer.main.get_command(app)
    try:
        rc = command.main(args=argv, prog_name="sparsepe", standalone_mode=False)
    except KeyboardInterrupt:
        _interrupted()
    except InputError as exc:
        _fail(None, str(exc))
    except usage as exc:
        if type(exc).__name__ == "NoArgsIsHelpError":  # ``sparsepe sweep`` alone: its help, as before
            exc.show()
            sys.exit(exc.exit_code)
        what = exc.message if exc.message and type(exc).__name__ == "BadParameter" else exc.format_message()
        _fail(_usage_where(exc), what)
    except (*abort, TyperAbort):  # a flat tuple: ``except`` takes no nested one
        _interrupted()
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
        _fail(
            None,
            f"internal error ({type(exc).__name__}: {exc}); set SPARSEPE_TRACEBACK=1 for the traceback",
            code=1,
        )
    if rc == INTERRUPTED_EXIT:  # typer turns KeyboardInterrupt into Exit(130), silently
        _interrupted()
    sys.exit(rc if isinstance(rc, int) else 0)


if __name__ == "__main__":
    main()
