"""The team's hooks (``--eval``, ``--calib MODULE:FUNCTION``, the ``[quality]`` eval of a sweep)
run in a child process with a time limit.

One persistent child per hook (sim.quality.team.team_code runs there): it imports the team's module
once and answers every call (the dense, one-shot and fine-tuned evals; the calibration function
once per block in sequential mode). The weights go to the child through a memory file (memfd),
written once by the tool and mapped by the child without a copy, and only the tensors that
changed since the previous call (the one-shot model shares its unpruned tensors with the dense
one, the sequential calibration replaces one block at a time).

Whatever the team's code does, the tool reports one :class:`hw.errors.InputError` naming the hook
and what it did, and the child is gone afterwards:

* a call (or the import) that does not return within the limit (:class:`HookTimeout`; default
  :data:`DEFAULT_HOOK_TIMEOUT` s, ``--hook-timeout`` on ``sparsepe quality``, ``[quality]
  hook_timeout`` in a sweep config): stopped;
* an exit (``os._exit``, a crash, a signal): its status or signal, and its last stderr line;
* an exception (KeyboardInterrupt and SystemExit included): its type and first line;
* output on stdout (the tool's own stdout, ``--json``, stays clean: the child's fd 1 is a file);
* a return value that is not plain data (an object of the team's class, a generator):
  :class:`Opaque`, which the callers' checks reject as wrongly typed.

The child's stderr (numpy warnings included) is kept in an unnamed temporary file, never shown;
its last line is quoted when the hook dies. Ctrl-C reaches only the tool: the child ignores
SIGINT and runs in its own session, and is killed (with anything it started) when the hook is
closed, when the tool exits, and when the tool dies (PR_SET_PDEATHSIG).
"""

from __future__ import annotations

import io
import math
import os
import pickle
import signal
import socket
import subprocess
import sys
import tempfile
import time
import weakref
from dataclasses import dataclass
from pathlib import Path

import numpy as np

from hw.errors import InputError
from sim.quality.team import team_code
from sim.quality.team.team_code import OPAQUE, recv_msg, send_msg

__all__ = [
    "DEFAULT_HOOK_TIMEOUT",
    "MAX_HOOK_TIMEOUT",
    "HookRaised",
    "HookTimeout",
    "TeamHook",
    "Opaque",
    "check_hook_timeout",
    "printable",
]

#: Seconds a call of a team hook (or its import) may take [A]: generous for an eval over a
#: validation set on CPU; ``--hook-timeout`` / ``[quality] hook_timeout`` change it.
DEFAULT_HOOK_TIMEOUT = 600.0
#: Largest limit accepted (one week): keeps deadlines finite and socket timeouts in range.
MAX_HOOK_TIMEOUT = 7 * 24 * 3600.0
_CHILD = str(Path(team_code.__file__).resolve())
_QUOTE = 160  # characters of the team's text quoted in a message
_EXIT_WAIT = 2.0  # seconds a child that closed its socket gets to finish exiting
_ALIGN = 64  # byte alignment of each tensor in the memory file
_NUMPY_NAMES = {"_frombuffer", "_reconstruct", "dtype", "ndarray", "scalar"}


@dataclass(frozen=True)
class HookTimeout:
    """The time limit of one call and the setting that changes it (named in the message)."""

    seconds: float = DEFAULT_HOOK_TIMEOUT
    setting: str = ""  # e.g. "--hook-timeout", "[quality] hook_timeout"


def check_hook_timeout(value, where: str) -> float:
    """A limit in seconds: a finite number in (0, MAX_HOOK_TIMEOUT]."""
    if (
        isinstance(value, bool)
        or not isinstance(value, (int, float))
        or not math.isfinite(value)
        or not 0 < value <= MAX_HOOK_TIMEOUT
    ):
        raise InputError(
            f"must be a number of seconds > 0 and <= {MAX_HOOK_TIMEOUT:g}, got {value!r}", where=where
        )
    return float(value)


class Opaque:
    """A value the team's code returned that is not plain data (only its type name crosses over)."""

    def __init__(self, type_name: str):
        self.type_name = str(type_name)

    def __repr__(self) -> str:
        return f"<{printable(self.type_name)} object>"

    def __eq__(self, other) -> bool:
        return isinstance(other, Opaque) and other.type_name == self.type_name

    def __hash__(self) -> int:
        return hash((Opaque, self.type_name))


def printable(text, limit: int = _QUOTE) -> str:
    """The team's text safe for one terminal line: control characters escaped, cut to ``limit``."""
    s = "".join(c if c.isprintable() else repr(c)[1:-1] for c in str(text))
    return s if len(s) <= limit else s[: limit - 3] + "..."


class HookRaised(InputError):
    """The team's function raised: the one-line error, and ``frames``, its traceback trimmed to the
    frames in the team's files (file, line, function, the line's text; outermost first)."""

    def __init__(self, message: str, *, where: str | None, frames: list[tuple[str, int, str, str]]):
        super().__init__(message, where=where)
        self.frames = frames

    def traceback_lines(self) -> list[str]:
        """The frames as a traceback reads (``File "f", line N, in fn`` and the line's text), each
        line safe for the terminal; empty when no frame is in the team's files."""
        if not self.frames:
            return []
        out = [
            f"{printable(self.where or 'the hook')}: traceback in the team's code (most recent call last):"
        ]
        for file, line, fn, text in self.frames:
            out.append(f'  File "{printable(file, 2 * _QUOTE)}", line {line}, in {printable(fn, 60)}')
            if text:
                out.append(f"    {printable(text, 2 * _QUOTE)}")
        return out


def _frames(reply: tuple) -> list[tuple[str, int, str, str]]:
    """The frames of a ``raised`` reply (none from an older child, or malformed ones dropped)."""
    raw = reply[3] if len(reply) > 3 and isinstance(reply[3], list) else []
    return [
        (str(f[0]), int(f[1]), str(f[2]), str(f[3]))
        for f in raw
        if isinstance(f, (list, tuple)) and len(f) == 4 and isinstance(f[1], int)
    ]


class _PlainUnpickler(pickle.Unpickler):
    """Reads the child's replies: builtins and numpy arrays only, never the team's classes."""

    def find_class(self, module, name):
        if (module.split(".")[0] == "numpy" and name in _NUMPY_NAMES) or (
            module == "builtins" and name == "complex"
        ):
            return super().find_class(module, name)
        raise pickle.UnpicklingError(f"{module}.{name}")


def _unopaque(x):
    if isinstance(x, tuple):
        return Opaque(x[1]) if len(x) == 2 and x[0] == OPAQUE else Opaque("tuple")
    if isinstance(x, dict):
        return {_unopaque(k): _unopaque(v) for k, v in x.items()}
    if isinstance(x, list):
        return [_unopaque(v) for v in x]
    return x


def _contiguous(a) -> np.ndarray:
    a = np.asarray(a)
    return a if a.flags.c_contiguous else np.ascontiguousarray(a)  # (ascontiguousarray makes 0-d arrays 1-d)


def _tensor_file(tensors: dict[str, np.ndarray]) -> tuple[dict, int, int | None]:
    """(layout {name: (offset, dtype, shape)}, size, descriptor) of a memory file holding the
    tensors' bytes, each at a 64-byte aligned offset (no file when there is nothing to send)."""
    layout, size = {}, 0
    for k, a in tensors.items():
        size = -(-size // _ALIGN) * _ALIGN
        layout[k] = (size, a.dtype, a.shape)
        size += a.nbytes
    if not layout:
        return layout, 0, None
    fd = (
        os.memfd_create("sparsepe-hook-weights", os.MFD_CLOEXEC)
        if hasattr(os, "memfd_create")
        else os.dup(tempfile.TemporaryFile().fileno())
    )
    try:
        os.ftruncate(fd, size)
        for k, a in tensors.items():
            view, offset = a.reshape(-1).view(np.uint8).data, layout[k][0]
            while view.nbytes:
                done = os.pwrite(fd, view, offset)
                view, offset = view[done:], offset + done
    except BaseException:
        os.close(fd)
        raise
    return layout, size, fd


def _kill_group(proc: subprocess.Popen) -> None:
    """SIGKILL the child and everything it started (its own session), then reap it. The group id
    is still the child's while the child is unreaped, so the signal cannot reach anyone else."""
    if proc.returncode is None:
        try:
            os.killpg(proc.pid, signal.SIGKILL)
        except (ProcessLookupError, PermissionError):
            pass
    proc.wait()


class TeamHook:
    """The team's ``MODULE:FUNCTION`` loaded in a child process (see the module docstring).

    ``what``: "eval" or "calibration" (messages name the hook as ``<what> 'spec'``). Use as a
    context manager, or :meth:`close`; the child is also killed when the object is collected or
    the interpreter exits."""

    def __init__(
        self,
        spec: str,
        base_dir: str | Path | None = None,
        *,
        what: str = "eval",
        timeout: HookTimeout | None = None,
    ):
        self.spec = spec
        self.what = what
        self.where = f"{what} {spec!r}"
        self.timeout = timeout or HookTimeout()
        self.takes_weights = False
        self._sent: dict[str, np.ndarray] = {}
        self._stdout_seen = 0
        self._out = tempfile.TemporaryFile()  # unnamed: nothing is left behind, whatever happens
        self._err = tempfile.TemporaryFile()
        parent_sock, child_sock = socket.socketpair()
        try:
            self._proc = subprocess.Popen(
                [sys.executable, "-P", _CHILD, str(child_sock.fileno()), str(os.getpid())],
                stdin=subprocess.DEVNULL,
                stdout=self._out,
                stderr=self._err,
                pass_fds=(child_sock.fileno(),),
                start_new_session=True,
            )
        except BaseException:
            parent_sock.close()
            self._out.close()
            self._err.close()
            raise
        finally:
            child_sock.close()
        self._sock: socket.socket | None = parent_sock
        self._finalizer = weakref.finalize(self, _kill_group, self._proc)
        try:
            base = None if base_dir is None else str(base_dir)
            self._send(
                [pickle.dumps({"spec": spec, "base_dir": base, "what": what, "path": list(sys.path)})],
                time.monotonic() + self.timeout.seconds,
                self.where,
                "import",
            )
            reply = self._reply(time.monotonic() + self.timeout.seconds, self.where, "import")
            if reply[0] == "error":
                raise InputError(printable(reply[1], 2 * _QUOTE), where=self.where)
            self.takes_weights = bool(reply[1])
        except BaseException:
            self.close()
            raise

    def __enter__(self) -> TeamHook:
        return self

    def __exit__(self, *exc) -> None:
        self.close()

    @property
    def pid(self) -> int:
        """The child's process id (also its process-group and session id)."""
        return self._proc.pid

    @property
    def closed(self) -> bool:
        """True once the child is killed and reaped."""
        return self._sock is None and self._proc.returncode is not None

    def close(self) -> None:
        """Kill the child (idle or not) and free its files; idempotent."""
        if self._sock is None:
            return
        self._sock.close()
        self._sock = None
        self._finalizer()
        self._out.close()
        self._err.close()
        self._sent = {}

    def call(self, weights: dict[str, np.ndarray] | None, where: str | None = None):
        """``fn(weights)`` (a fresh copy in the child) or, with ``weights=None``, ``fn()``: its
        return value as plain data (numbers, strings, lists, dicts, numpy arrays, :class:`Opaque`).
        Any misbehaviour: one InputError at ``where`` (default: the hook), the hook closed.
        Tensors are sent again only when their array object changed since the last call: callers
        replace tensors, never write into an array they passed."""
        where = where or self.where
        if self._sock is None:
            raise RuntimeError(f"{self.where}: the hook is closed")
        deadline = time.monotonic() + self.timeout.seconds
        try:
            if weights is None:
                self._send(
                    [pickle.dumps({"names": [], "layout": {}, "size": 0, "with_weights": False})],
                    deadline,
                    where,
                    "call",
                )
            else:
                changed = {k: _contiguous(v) for k, v in weights.items() if self._sent.get(k) is not v}
                layout, size, fd = _tensor_file(changed)
                try:
                    self._send(
                        [
                            pickle.dumps(
                                {"names": list(weights), "layout": layout, "size": size, "with_weights": True}
                            )
                        ],
                        deadline,
                        where,
                        "call",
                        fd,
                    )
                finally:
                    if fd is not None:
                        os.close(fd)
            if weights is not None:
                self._sent = dict(weights)
            reply = self._reply(deadline, where, "call")
            if reply[0] == "ok":
                return _unopaque(reply[1])
            if reply[0] == "raised":
                kind, msg = printable(reply[1], 60), printable(reply[2])
                hint = " (a hook must return a value, not exit)" if kind == "SystemExit" else ""
                raise HookRaised(f"raised {kind}: {msg}{hint}", where=where, frames=_frames(reply))
            raise InputError(printable(reply[1], 2 * _QUOTE), where=where)
        except BaseException:
            self.close()
            raise

    # -- the conversation ------------------------------------------------------------------

    def _open_socket(self) -> socket.socket:
        if self._sock is None:
            raise RuntimeError(f"{self.where}: the hook is closed")
        return self._sock

    def _send(self, msgs, deadline: float, where: str, step: str, fd: int | None = None) -> None:
        sock = self._open_socket()
        try:
            for m in msgs:
                sock.settimeout(max(deadline - time.monotonic(), 1e-3))
                send_msg(sock, m)
            if fd is not None:
                socket.send_fds(sock, [b"T"], [fd])
        except TimeoutError:
            self._timed_out(where, step)
        except OSError:  # the child is gone (broken pipe, reset)
            self._died(where, step)

    def _reply(self, deadline: float, where: str, step: str) -> tuple:
        sock = self._open_socket()
        try:
            sock.settimeout(max(deadline - time.monotonic(), 1e-3))
            data = recv_msg(sock)
        except TimeoutError:
            self._timed_out(where, step)
        except (EOFError, OSError):
            self._died(where, step)
        printed = self._stdout()
        if printed:
            raise InputError(
                f"printed to stdout ({printed}); a hook must not write to stdout, which carries "
                "sparsepe's own output (--json): write to stderr or a log file",
                where=where,
            )
        try:
            reply = _PlainUnpickler(io.BytesIO(data)).load()
        except Exception as exc:  # noqa: BLE001 - a reply the tool does not read: never the team's classes
            raise InputError(
                f"returned a value that cannot be read ({printable(exc)})", where=where
            ) from None
        if (
            not isinstance(reply, tuple)
            or not reply
            or reply[0] not in ("ready", "error", "ok", "raised", "bad")
        ):
            raise InputError("the child process sent an unknown reply", where=where)
        return reply

    def _timed_out(self, where: str, step: str):
        s = self.timeout
        what = "its import did not finish" if step == "import" else "did not return"
        raise InputError(
            f"{what} within {s.seconds:g} s{f' ({s.setting})' if s.setting else ''}; stopped", where=where
        )

    def _died(self, where: str, step: str):
        status = self._exit_status()
        if status is None:
            what = "closed its connection to sparsepe"
        elif status >= 0:
            what = f"exited with status {status}"
        else:
            try:
                name = signal.Signals(-status).name
            except ValueError:
                name = f"signal {-status}"
            what = f"was killed by {name}"
        what += (
            " during its import"
            if step == "import"
            else " instead of returning (os._exit, a crash or a signal)"
        )
        tail = self._stderr_tail()
        raise InputError(what + (f"; its last stderr line: {tail}" if tail else ""), where=where)

    def _exit_status(self) -> int | None:
        """The child's exit status (negative: killed by that signal), None if it is still running
        after _EXIT_WAIT s. Where os.waitid exists the child stays unreaped (its process group
        stays its own until _kill_group)."""
        end = time.monotonic() + _EXIT_WAIT
        if not hasattr(os, "waitid"):
            try:
                return self._proc.wait(timeout=_EXIT_WAIT)
            except subprocess.TimeoutExpired:
                return None
        while time.monotonic() < end:
            info = os.waitid(os.P_PID, self._proc.pid, os.WEXITED | os.WNOHANG | os.WNOWAIT)
            if info is not None:
                return info.si_status if info.si_code == os.CLD_EXITED else -info.si_status
            time.sleep(0.01)
        return None

    def _stdout(self) -> str:
        """What the team's code wrote to stdout since the last check ("" when nothing)."""
        fd = self._out.fileno()
        size = os.fstat(fd).st_size
        if size <= self._stdout_seen:
            return ""
        head = os.pread(fd, 4 * _QUOTE, self._stdout_seen).decode("utf-8", "replace")
        n = size - self._stdout_seen
        self._stdout_seen = size
        first = next((ln for ln in head.splitlines() if ln.strip()), "")
        return f"{n} byte(s), first line {printable(first)!r}" if first else f"{n} byte(s)"

    def _stderr_tail(self) -> str:
        """The last non-empty line the child wrote to stderr."""
        fd = self._err.fileno()
        size = os.fstat(fd).st_size
        text = os.pread(fd, 4096, max(0, size - 4096)).decode("utf-8", "replace")
        lines = [ln for ln in text.splitlines() if ln.strip()]
        return printable(lines[-1].strip()) if lines else ""
