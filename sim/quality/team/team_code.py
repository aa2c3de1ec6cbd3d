"""The team's own code, called by name (``MODULE:FUNCTION``: the eval, the calibration inputs),
run in a child process: the child side of sim.quality.team.hooks.

``MODULE`` is an importable module, a module file next to the config (or in the working
directory), or a ``.py`` path; a module file is loaded under a name derived from its path, so two
configs with the same module name in different directories never mix.

sim.quality.team.hooks starts this file as a script (``python -P team_code.py FD PARENT_PID``): it
imports only the standard library and numpy, so the child starts in a fraction of a second and
never imports the tool's own modules. Protocol on the socket ``FD`` (each message its length in
8 bytes, then its bytes: :func:`send_msg`), each message a pickle unless noted:

* parent -> child ``{"spec", "base_dir", "what", "path"}``; child -> parent ``("ready",
  takes_weights)`` or ``("error", message)`` (the import failed, the name is not a Python function);
* parent -> child ``{"names", "layout", "size", "with_weights"}``: the tensors changed since the
  last call are in a memory file (memfd) the parent wrote once, whose descriptor follows with one
  byte (SCM_RIGHTS); ``layout`` gives each one's offset, dtype and shape. The child maps the file
  privately (no copy), keeps the weights between calls, so a tensor that did not change is not
  sent again, and hands the function a fresh copy;
  child -> parent ``("ok", value)`` (the return value as plain data: :func:`plain`),
  ``("raised", type name, first line of the message, frames)`` (``frames``: the traceback's
  frames in the team's files, :func:`team_frames`) or ``("bad", what)``.

The child ignores SIGINT (the parent stops it), dies with its parent (PR_SET_PDEATHSIG on Linux),
and writes nothing to its own stdout: what reaches fd 1 is the team's code printing.
"""

from __future__ import annotations

import ctypes
import ctypes.util
import hashlib
import importlib
import importlib.machinery
import importlib.util
import inspect
import mmap
import os
import pickle
import signal
import socket
import struct
import sys
import sysconfig
import traceback
from collections.abc import Callable
from pathlib import Path
from typing import cast

import numpy as np

__all__ = [
    "HookLoadError",
    "load_function",
    "takes_weights",
    "first_line",
    "describe",
    "plain",
    "OPAQUE",
    "serve",
    "send_msg",
    "recv_msg",
    "team_frames",
]

#: Tag of a value that is not plain data (an object of the team's own class, a generator, ...):
#: ``(OPAQUE, type name)``. Tuples never occur otherwise in :func:`plain`'s output (lists do).
OPAQUE = "__sparsepe_opaque__"
_MAX_DEPTH = 32
_PR_SET_PDEATHSIG = 1  # linux/prctl.h
_LEN = struct.Struct("!Q")
#: most frames of a traceback sent back, and the longest line text of one
_MAX_FRAMES, _MAX_LINE = 30, 240


class HookLoadError(ValueError):
    """The team's ``MODULE:FUNCTION`` cannot be loaded (the message says why)."""


def first_line(exc: BaseException) -> str:
    s = str(exc).strip()
    return s.splitlines()[0] if s else "(no message)"


def describe(exc: BaseException) -> str:
    """The first line of an exception's message, even when its ``__str__`` raises."""
    try:
        return first_line(exc)
    except BaseException:  # noqa: BLE001 - the team's exception class may be broken
        return "(message unreadable)"


def load_function(spec: str, base_dir: str | Path | None = None, *, what: str = "eval") -> Callable:
    """``"module:function"`` (an importable module, or a ``.py`` file path relative to
    ``base_dir``) -> the function; HookLoadError when it cannot be loaded or is not a Python
    function (a builtin such as ``os:getcwd``, a class). Runs the team's module: call it in the
    child only."""
    example = "my_eval:score" if what == "eval" else "my_calib:inputs"
    if not isinstance(spec, str) or spec.count(":") < 1:
        raise HookLoadError(f"expected MODULE:FUNCTION, e.g. {example}")
    mod_name, _, fn_name = spec.rpartition(":")
    if not mod_name or not fn_name.isidentifier():
        raise HookLoadError(f"expected MODULE:FUNCTION, e.g. {example}")
    base = Path(base_dir) if base_dir is not None else Path.cwd()
    try:
        path = None
        if mod_name.endswith(".py"):
            path = Path(mod_name)
            path = path if path.is_absolute() else base / path
            if not path.is_file():
                raise HookLoadError(f"no such file {path}")
        elif "." not in mod_name:
            # a module file next to the config (or in the working directory) is loaded from there:
            # two configs with the same module name in different directories never mix
            found = importlib.machinery.PathFinder.find_spec(mod_name, [str(base.resolve())])
            if found is not None and found.origin and found.origin.endswith(".py"):
                path = Path(found.origin)
        if path is not None:
            name = f"_sparsepe_eval_{hashlib.sha256(str(path.resolve()).encode()).hexdigest()[:16]}"
            sp = importlib.util.spec_from_file_location(name, path)
            if sp is None or sp.loader is None:  # never for a .py file: it gets a source loader
                raise HookLoadError(f"no loader for {path}")
            module = importlib.util.module_from_spec(sp)
            sys.modules[name] = module
            sp.loader.exec_module(module)
        else:
            sys.path.insert(0, str(base.resolve()))
            module = importlib.import_module(mod_name)
    except HookLoadError:
        raise
    except BaseException as exc:  # noqa: BLE001 - whatever the team's module raises (SystemExit too), one line
        raise HookLoadError(f"import failed: {type(exc).__name__}: {describe(exc)}") from None
    try:
        fn = getattr(module, fn_name, None)
    except BaseException as exc:  # noqa: BLE001 - a module __getattr__ of the team's
        raise HookLoadError(f"getting {fn_name!r} raised {type(exc).__name__}: {describe(exc)}") from None
    if fn is None:
        raise HookLoadError(f"module {mod_name!r} has no function {fn_name!r}")
    if inspect.isclass(fn):
        raise HookLoadError(f"{fn_name!r} is a class, not a function taking the weights")
    if inspect.isbuiltin(fn) or not callable(fn):
        kind = "a built-in function" if inspect.isbuiltin(fn) else f"a {type(fn).__name__}"
        raise HookLoadError(f"{fn_name!r} is {kind}, not a Python function taking the weights")
    return fn


def takes_weights(fn: Callable) -> bool:
    """True when ``fn`` has a required positional parameter (it is called ``fn(weights)``)."""
    try:
        params = inspect.signature(fn).parameters.values()
    except (TypeError, ValueError):
        return False
    return any(
        p.kind in (p.POSITIONAL_ONLY, p.POSITIONAL_OR_KEYWORD) and p.default is p.empty for p in params
    )


def _library_dirs() -> tuple[str, ...]:
    """The interpreter's standard library and site-packages directories (not the team's files)."""
    paths = sysconfig.get_paths()
    dirs = {paths.get(k) for k in ("stdlib", "platstdlib", "purelib", "platlib")}
    return tuple(str(Path(d).resolve()) + os.sep for d in dirs if d)


def team_frames(exc: BaseException, fn: Callable, base_dir: str | None) -> list[tuple[str, int, str, str]]:
    """The frames of ``exc``'s traceback in the team's files, outermost first, each (file, line,
    function, the line's text): files in the directory of the team's module (``fn``'s file) or of
    ``base_dir``, or anywhere outside the interpreter's standard library and site-packages; never
    this file's own frames."""
    own = str(Path(__file__).resolve())
    team_dirs = [
        str(Path(d).resolve()) + os.sep
        for d in (os.path.dirname(getattr(getattr(fn, "__code__", None), "co_filename", "") or ""), base_dir)
        if d
    ]
    libs = _library_dirs()
    out = []
    for fs in traceback.extract_tb(exc.__traceback__):
        name = fs.filename
        if name.startswith("<"):
            continue  # <frozen importlib._bootstrap>, <string>
        full = str(Path(name).resolve())
        if full == own:
            continue
        if any(full.startswith(d) for d in team_dirs) or not any(full.startswith(d) for d in libs):
            out.append((name, fs.lineno or 0, fs.name, (fs.line or "").strip()[:_MAX_LINE]))
    return out[-_MAX_FRAMES:]


def plain(x, depth: int = 0):
    """``x`` as plain data the parent can read without importing the team's code: None, bool,
    int, float, str, list, dict and numpy arrays of numbers or text; numpy scalars become Python
    numbers, array-likes (torch / jax tensors) numpy arrays, anything else ``(OPAQUE, type name)``."""
    if x is None or type(x) in (bool, int, float, str):
        return x
    if depth > _MAX_DEPTH:
        return (OPAQUE, type(x).__name__)
    if isinstance(x, np.ndarray):
        return x if x.dtype.kind in "biufcUS" else (OPAQUE, f"numpy array of {x.dtype}")
    if isinstance(x, np.generic):
        item = x.item()
        return item if type(item) in (bool, int, float, complex, str) else (OPAQUE, type(x).__name__)
    if isinstance(x, bool):
        return bool(x)
    if isinstance(x, int):
        return int(x)
    if isinstance(x, float):
        return float(x)
    if isinstance(x, str):
        return str(x)
    if isinstance(x, dict):
        return {plain_key(k): plain(v, depth + 1) for k, v in x.items()}
    if isinstance(x, (list, tuple)):
        if all(type(e) in (float, int) for e in x):
            return list(x)
        return [plain(e, depth + 1) for e in x]
    if hasattr(x, "__array__"):
        try:
            return plain(np.asarray(x), depth + 1)
        except Exception:  # noqa: BLE001 - an array-like that cannot convert is not plain
            pass
    return (OPAQUE, type(x).__name__)


def plain_key(k):
    if k is None or type(k) in (bool, int, float, str):
        return k
    return (OPAQUE, type(k).__name__)


def _flush() -> None:
    """Push what the team's code wrote (Python and C stdio buffers) to the pipes before replying."""
    for f in (sys.stdout, sys.stderr):
        try:
            f.flush()
        except Exception:  # noqa: BLE001 - a stream the team's code closed or replaced
            pass
    try:
        ctypes.CDLL(None).fflush(None)
    except (OSError, AttributeError):
        pass


def _die_with_parent(parent: int) -> None:
    """SIGKILL when the parent dies (Linux); exit now if it already has."""
    if sys.platform.startswith("linux"):
        try:
            libc = ctypes.CDLL(ctypes.util.find_library("c") or None, use_errno=True)
            libc.prctl(_PR_SET_PDEATHSIG, int(signal.SIGKILL), 0, 0, 0)
        except (OSError, AttributeError):
            pass
    if os.getppid() != parent:
        os._exit(1)


def send_msg(sock: socket.socket, data) -> None:
    """One message: its length (8 bytes, big-endian) and its bytes (any buffer, sent without a copy)."""
    view = memoryview(data).cast("B")
    sock.sendall(_LEN.pack(view.nbytes))
    if view.nbytes:
        sock.sendall(view)


def recv_msg(sock: socket.socket) -> bytearray:
    """The next message (EOFError when the other side has closed)."""
    head = bytearray(_LEN.size)
    _recv_into(sock, memoryview(head))
    buf = bytearray(_LEN.unpack(head)[0])
    _recv_into(sock, memoryview(buf))
    return buf


def _recv_into(sock: socket.socket, view: memoryview) -> None:
    while view.nbytes:
        got = sock.recv_into(view)
        if not got:
            raise EOFError("the other side closed the connection")
        view = view[got:]


def _reply(sock: socket.socket, msg) -> None:
    _flush()
    try:
        data = pickle.dumps(msg, protocol=pickle.HIGHEST_PROTOCOL)
    except Exception as exc:  # noqa: BLE001 - e.g. an odd array
        data = pickle.dumps(("bad", f"returned a value that cannot be passed back ({describe(exc)})"))
    send_msg(sock, data)


def _receive_tensors(sock: socket.socket, layout: dict, size: int) -> dict[str, np.ndarray]:
    """The tensors the parent wrote into a memory file (its descriptor comes with one byte):
    read-only arrays over a private mapping of it, no copy."""
    if not layout:
        return {}
    _, fds, _, _ = socket.recv_fds(sock, 1, 1)
    if len(fds) != 1:
        raise EOFError("no tensor data came with the call")
    try:
        mm = mmap.mmap(fds[0], size, flags=mmap.MAP_PRIVATE, prot=mmap.PROT_READ) if size else None
    finally:
        for fd in fds:
            os.close(fd)
    out = {}
    for name, (offset, dtype, shape) in layout.items():
        count = int(np.prod(shape, dtype=np.int64))
        out[name] = (
            # a tensor with elements makes size > 0, so the mapping exists
            np.frombuffer(cast(mmap.mmap, mm), dtype=dtype, count=count, offset=offset)
            if count
            else np.empty(0, dtype=dtype)
        ).reshape(shape)
    return out


def serve(sock: socket.socket) -> None:
    """Load the team's function and answer calls until the parent closes the socket."""
    init = pickle.loads(recv_msg(sock))
    sys.path[:] = init["path"]
    sys.dont_write_bytecode = True  # the team's module is read, never compiled into a __pycache__ beside it
    try:
        fn = load_function(init["spec"], init["base_dir"], what=init["what"])
    except HookLoadError as exc:
        _reply(sock, ("error", str(exc)))
        return
    _reply(sock, ("ready", takes_weights(fn)))
    state: dict[str, np.ndarray] = {}
    while True:
        try:
            head = pickle.loads(recv_msg(sock))
        except EOFError:
            return
        if head["with_weights"]:
            state.update(_receive_tensors(sock, head["layout"], head["size"]))
            for k in set(state) - set(head["names"]):
                del state[k]
        try:
            out = fn({k: state[k].copy() for k in head["names"]}) if head["with_weights"] else fn()
            msg: tuple[object, ...] = ("ok", plain(out))
        except BaseException as exc:  # noqa: BLE001 - the team's code may raise anything, SystemExit too
            try:
                frames = team_frames(exc, fn, init["base_dir"])
            except Exception:  # noqa: BLE001 - a traceback that cannot be read: the one-line error alone
                frames = []
            msg = ("raised", type(exc).__name__, describe(exc), frames)
        _reply(sock, msg)


def main(argv: list[str]) -> None:
    fd, parent = int(argv[1]), int(argv[2])
    signal.signal(signal.SIGINT, signal.SIG_IGN)
    _die_with_parent(parent)
    sock = socket.socket(fileno=fd)
    try:
        serve(sock)
    except (EOFError, OSError):
        pass
    finally:
        _flush()
    # no interpreter teardown: the team's atexit hooks and threads must not delay or outlive the reply
    os._exit(0)


if __name__ == "__main__":
    main(sys.argv)
