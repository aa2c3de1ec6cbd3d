"""SIGINT and SIGTERM of a ``sparsepe`` process: one line, exit 130 / 143, within a deadline.

The window this closes: CPython installs its KeyboardInterrupt handler only when SIGINT is at its
default disposition when the interpreter starts. POSIX shells start a background job of a script
(``sparsepe sweep ... &``, a CI step, a test runner started with ``&``: ``sh -c 'pytest ... &'``)
with SIGINT *ignored*, and every process started from it inherits that across fork and exec. Such a
sweep never saw a Ctrl-C: it ran on to its 200 trials and exited 0, and a quality run waiting on a
team's hook hung until it was killed. SIGTERM had no handler at all (no line; the running trial
left RUNNING). And where a KeyboardInterrupt did arrive it had to survive every frame it unwound
through: Optuna's ``_run_trial`` turns one that lands in its own bookkeeping into an
UnboundLocalError (an "internal error", exit 1), one that lands in a ``__del__`` is printed as
"Exception ignored" and dropped, and a long call in C (a synthesis, an Agg render) delays it.

:func:`install` (run by explore.cli first thing) therefore sets both handlers explicitly, whatever
was inherited, and does not rely on the KeyboardInterrupt alone:

* the Python handler raises :class:`Interrupted` (a KeyboardInterrupt: every ``except
  KeyboardInterrupt`` / cleanup on the way out runs as before: workers stopped, hooks killed, the
  running trial marked FAIL);
* the C-level handler also writes the signal number to a wake-up pipe (``signal.set_wakeup_fd``),
  which a watcher thread reads even while the main thread is busy in C. From the first signal on,
  nothing but the one line is written to the terminal (stdout and stderr point to /dev/null), and
  if the process has not exited :data:`DEADLINE_S` after the signal, the watcher prints the line,
  kills the process's children and exits with the signal's code. A second signal exits at once.

What the study stored stays: every trial is stored when it finishes (journal appends, database
commits), so ending the process at any point loses no finished trial; a trial that was running is
FAIL or, after a forced exit, RUNNING with a dead worker's tag, and a rerun re-runs it
(explore.storage.fail_dead_local_trials).
"""

from __future__ import annotations

import atexit
import os
import select
import signal
import sys
import threading
import time
from collections.abc import Callable
from pathlib import Path
from types import FrameType, TracebackType
from typing import Any

__all__ = [
    "DEADLINE_S",
    "EXIT_CODES",
    "Interrupted",
    "end_process",
    "exit_code",
    "finish",
    "install",
    "line",
    "received",
]

#: Seconds from the first signal to a forced exit. [A] the contract is "ended within 2 s"; the
#: orderly path (workers stopped within explore.study.STOP_GRACE_S, the line, interpreter exit)
#: normally takes well under a second; 1.2 s leaves the forced exit 0.8 s to kill and exit (under two
#: CPU hogs the forced exit took up to 0.7 s: 3 of 50 stress runs ended 2.1-2.3 s after a 1.6 s deadline).
DEADLINE_S = 1.2
#: Exit code per signal: 128 + the signal's number, as a shell reports a process it ended.
EXIT_CODES = {signal.SIGINT: 130, signal.SIGTERM: 143}
_LINES = {signal.SIGINT: "sparsepe: interrupted", signal.SIGTERM: "sparsepe: terminated (SIGTERM)"}


class Interrupted(KeyboardInterrupt):
    """Raised in the main thread by a SIGINT or SIGTERM (``signum``)."""

    def __init__(self, signum: int):
        super().__init__(signal.Signals(signum).name)
        self.signum = signum


#: A signal's disposition as signal.getsignal returns it.
SignalHandler = Callable[[int, FrameType | None], Any] | int | signal.Handlers | None
#: sys.excepthook's type.
ExceptHook = Callable[[type[BaseException], BaseException, TracebackType | None], Any]


class _State:
    def __init__(self) -> None:
        self.lock = threading.RLock()
        self.signum: int | None = None
        self.at = 0.0
        self.deliveries = 0
        self.terminal: int | None = None  # a copy of fd 2 from before it was silenced
        self.printed = False
        self.owner = 0  # the pid that installed the handlers (a forked child is not it)
        self.write_fd: int | None = None
        self.previous: dict[int, SignalHandler] = {}
        self.previous_hook: ExceptHook | None = None


_S = _State()


def received() -> int | None:
    """The signal (SIGINT or SIGTERM) this process received, None when none."""
    return _S.signum


def exit_code(signum: int | None = None) -> int:
    """130 for SIGINT, 143 for SIGTERM (the received signal's by default)."""
    return EXIT_CODES[signal.Signals(signum if signum is not None else (_S.signum or signal.SIGINT))]


def line(signum: int | None = None) -> str:
    """The one line an interrupted command prints."""
    return _LINES[signal.Signals(signum if signum is not None else (_S.signum or signal.SIGINT))]


def _note(signum: int) -> None:
    """The first SIGINT/SIGTERM: remember it, silence stdout and stderr (the one line goes to a
    copy of stderr), let the watcher start the deadline."""
    with _S.lock:
        if _S.signum is not None:
            return
        _S.signum = signum
        _S.at = time.monotonic()
        try:
            sys.stdout.flush()
            sys.stderr.flush()
        except Exception:  # noqa: BLE001 - a closed or replaced stream: nothing to flush
            pass
        try:
            _S.terminal = os.dup(2)
            null = os.open(os.devnull, os.O_WRONLY)
            os.dup2(null, 1)
            os.dup2(null, 2)
            os.close(null)
        except OSError:
            pass


def finish(signum: int | None = None) -> None:
    """Print the one line (once, whichever path gets here first) to the terminal's stderr."""
    with _S.lock:
        if _S.printed:
            return
        _S.printed = True
        try:
            if (
                _S.terminal is None
            ):  # no signal (a KeyboardInterrupt raised by other means): the stream of the moment
                print(line(signum), file=sys.stderr, flush=True)
            else:
                os.write(_S.terminal, (line(signum) + "\n").encode())
        except (OSError, ValueError):
            pass


def _children() -> list[int]:
    """This process's child process ids (Linux /proc), [] where unknown."""
    out: list[int] = []
    try:
        for task in Path(f"/proc/{os.getpid()}/task").iterdir():
            try:
                out += [int(x) for x in (task / "children").read_text().split()]
            except OSError:
                continue
    except OSError:
        pass
    return out


def _force_exit() -> None:
    """The line, SIGKILL to every child (workers, pools, tools; hooks die with their parent too),
    and exit with the signal's code, now."""
    finish()
    for pid in _children():
        try:
            os.kill(pid, signal.SIGKILL)
        except OSError:
            pass
    os._exit(exit_code())


def _note_only(signum: int, frame) -> None:
    _note(signum)


def end_process(code: int) -> None:
    """End a ``sparsepe`` process whose command has returned ``code``, with the handlers still in
    place to the last instruction. CPython's own finalisation puts SIGINT and SIGTERM back to their
    default actions before the process is gone, so a signal in that window would kill the process
    without the line (exit -2 / -15). Here a signal during the teardown (the atexit functions:
    temporary directories, pools, logging) is only noted, and the process then ends as interrupted
    (the line, 130 / 143); the watcher still forces the exit at the deadline if the teardown hangs."""
    if _S.owner == os.getpid():
        for sig in (signal.SIGINT, signal.SIGTERM):
            signal.signal(sig, _note_only)
    try:
        atexit._run_exitfuncs()
        sys.stdout.flush()
        sys.stderr.flush()
    except Exception:  # noqa: BLE001 - a closed stream or a failing exit function: the exit code stands
        pass
    if _S.signum is not None and _S.owner == os.getpid():
        finish()
        os._exit(exit_code())
    os._exit(code)


def _on_signal(signum: int, frame) -> None:
    _note(signum)
    raise Interrupted(signum)


def _watch(read_fd: int) -> None:
    """The watcher thread: counts deliveries on the wake-up pipe; forces the exit at the deadline
    or at a second signal."""
    while True:
        wait = None if _S.signum is None else max(0.0, _S.at + DEADLINE_S - time.monotonic())
        if wait == 0.0:
            _force_exit()
        ready, _, _ = select.select([read_fd], [], [], wait)
        if not ready:
            continue
        try:
            data = os.read(read_fd, 64)
        except OSError:
            return
        if not data:  # uninstall closed the pipe
            os.close(read_fd)
            return
        for b in data:
            if b in (signal.SIGINT, signal.SIGTERM):
                _S.deliveries += 1
                _note(b)
                if _S.deliveries >= 2:
                    _force_exit()


def _excepthook(kind, value, tb) -> None:
    """An exception nobody caught (a signal during the imports, before explore.cli.main runs): after
    a signal, the line and the signal's code; else the previous hook (a traceback)."""
    if _S.signum is not None and _S.owner == os.getpid():
        finish()
        os._exit(exit_code())
    (_S.previous_hook or sys.__excepthook__)(kind, value, tb)


def _after_fork_in_child() -> None:
    """A forked child (a process pool's worker) starts with the default handlers and no wake-up
    pipe of its parent's: its signals are its own."""
    if _S.owner and os.getpid() != _S.owner:
        try:
            signal.set_wakeup_fd(-1)
            signal.signal(signal.SIGINT, signal.default_int_handler)
            signal.signal(signal.SIGTERM, signal.SIG_DFL)
        except (ValueError, OSError):
            pass


def install() -> None:
    """Install the SIGINT/SIGTERM handling of a ``sparsepe`` process (idempotent; main thread)."""
    if _S.owner == os.getpid():
        return
    if threading.current_thread() is not threading.main_thread():
        return
    r, w = os.pipe()
    os.set_blocking(w, False)
    os.set_inheritable(r, False)
    os.set_inheritable(w, False)
    for sig in (signal.SIGINT, signal.SIGTERM):
        _S.previous[sig] = signal.getsignal(sig)
        signal.signal(sig, _on_signal)  # whatever was inherited: SIG_IGN from a shell's background job too
    signal.set_wakeup_fd(w, warn_on_full_buffer=False)
    _S.previous_hook = sys.excepthook
    sys.excepthook = _excepthook
    _S.owner = os.getpid()
    _S.write_fd = w
    if not getattr(install, "_fork_hook", False):
        os.register_at_fork(after_in_child=_after_fork_in_child)
        install._fork_hook = True  # type: ignore[attr-defined]
    threading.Thread(target=_watch, args=(r,), name="sparsepe-signals", daemon=True).start()


def uninstall() -> None:
    """Put back the handlers :func:`install` replaced, when no signal came (a command run inside
    another program, e.g. a test, leaves the process as it found it)."""
    if _S.owner != os.getpid() or _S.signum is not None:
        return
    signal.set_wakeup_fd(-1)
    if sys.excepthook is _excepthook:
        sys.excepthook = _S.previous_hook or sys.__excepthook__
    for sig, old in _S.previous.items():
        signal.signal(sig, old if old is not None else signal.SIG_DFL)
    _S.owner = 0
    _S.printed = False
    if _S.write_fd is not None:
        os.close(_S.write_fd)  # the watcher sees the end of its pipe and returns
        _S.write_fd = None
