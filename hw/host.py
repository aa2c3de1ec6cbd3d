"""What the tool does to the machine it runs on, in one place, for every room.

* :func:`write_file` -- THE function through which every file the tool writes is written: results
  under ``--out``, ``--save-pruned`` weights, the validation Markdown, the on-disk caches and the
  scratch inputs of Yosys / OpenSTA. Atomic (a temporary file beside the destination, then
  ``os.replace``), never through a symlink: a symlink at the destination is refused, so a planted
  ``trials.csv -> ~/.bashrc`` is neither followed nor overwritten. :func:`make_dir` creates the
  directories it writes into, :func:`exclusive_lock` the lock files that order writers. (The one
  write that is not the tool's own is the Optuna study storage, appended by Optuna;
  explore.storage checks its path first.)
* :func:`json_text` -- THE JSON writer: standard JSON only (``allow_nan=False``). A non-finite float
  (NaN, +-inf) becomes ``null`` and the object that holds it gains ``"non_finite": {json-path:
  reason}`` saying which values were nulled and what they were. Finite outputs are unchanged.
* :func:`mask_passwords` -- a text with the passwords of URLs in it masked.
* :func:`printable` -- a user-supplied string (a name, a path, a message part) with its control and
  format characters escaped (``\\x1b`` instead of a raw ANSI escape), for the terminal.
* :func:`cache_root` -- the tool's cache directory (``$SPARSEPE_CACHE_DIR``, else
  ``~/.cache/sparsepe``): the one place besides ``--out`` where the tool writes.
  :func:`keep_library_caches` points the caches libraries keep on their own there too (wasmtime's
  compiled Yosys, behind amaranth's built-in Yosys; matplotlib's config and font list), so nothing
  lands in ``~/.cache`` or ``~/.config``; :func:`tool_env` gives Yosys and OpenSTA their scratch
  directory as HOME and TMPDIR.
* :func:`code_fingerprint` -- the code of a Python source file without its layout, comments and
  docstrings (``ast.dump`` of the parsed module, docstrings removed): what the code-keyed caches
  (ppa.characterisation.code_version, sim.quality.digest) hash, so reformatting a file (``ruff
  format``) or editing a comment keeps every shipped result valid while a code change does not.
* :func:`die_with_parent` -- a child process asks the Linux kernel for SIGKILL when its parent dies
  (``PR_SET_PDEATHSIG``), so a sweep's workers never outlive a killed sweep.
"""

from __future__ import annotations

import ast
import contextlib
import ctypes
import fcntl
import json
import math
import os
import re
import signal
import sys
import tempfile
import unicodedata
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import numpy as np

from hw.errors import InputError

__all__ = [
    "NON_FINITE_KEY",
    "cache_root",
    "die_with_parent",
    "exclusive_lock",
    "finite_json",
    "json_text",
    "keep_library_caches",
    "make_dir",
    "mask_passwords",
    "printable",
    "tool_env",
    "write_file",
]

#: Key added to a JSON object whose non-finite numbers were written as null.
NON_FINITE_KEY = "non_finite"


# ---- files ------------------------------------------------------------------------------------


def make_dir(path: Path | str, where: str | None = None) -> Path:
    """Create the directory ``path`` (and its parents) when missing; one-line InputError naming
    ``where`` (default: the path) when it cannot be."""
    p = Path(path)
    label = where or str(p)
    try:
        p.mkdir(parents=True, exist_ok=True)
    except (FileExistsError, NotADirectoryError):
        raise InputError("a part of this path is a file, not a directory", where=label) from None
    except OSError as exc:
        raise InputError(f"cannot create the directory: {exc.strerror or exc}", where=label) from None
    return p


def write_file(
    path: Path | str, data: str | bytes, *, encoding: str = "utf-8", parents: bool = False
) -> Path:
    """Write ``data`` (text or bytes) to ``path`` atomically, never through a symlink at ``path``.

    ``parents``: create the missing parent directories first. Raises InputError (one line naming
    the path) for a symlink or non-file at ``path`` and for any OS error."""
    p = Path(path)
    if p.is_symlink():
        raise InputError("is a symlink; files are never written through a symlink (remove it)", where=str(p))
    if p.exists() and not p.is_file():
        raise InputError("exists and is not a regular file", where=str(p))
    if parents:
        make_dir(p.parent)
    raw = data.encode(encoding) if isinstance(data, str) else bytes(data)
    try:
        fd, tmp = tempfile.mkstemp(prefix=f".{p.name}.", suffix=".tmp", dir=str(p.parent))
    except OSError as exc:
        raise InputError(f"cannot write: {exc.strerror or exc}", where=str(p.parent)) from None
    try:
        with os.fdopen(fd, "wb") as f:
            f.write(raw)
        os.chmod(tmp, 0o666 & ~_umask())  # mkstemp makes 0600; a result file gets the usual mode
        os.replace(tmp, p)  # replaces a file (or a symlink planted since the check) without following it
    except OSError as exc:
        try:
            os.unlink(tmp)
        except OSError:
            pass
        raise InputError(f"cannot write: {exc.strerror or exc}", where=str(p)) from None
    return p


@contextlib.contextmanager
def exclusive_lock(path: Path | str) -> Iterator[None]:
    """Hold an exclusive advisory lock (``flock``) on the lock file ``path`` while the block runs
    (other processes wait). The file is created empty when missing and never written; a symlink
    there is not followed."""
    p = Path(path)
    make_dir(p.parent)
    try:
        fd = os.open(p, os.O_RDWR | os.O_CREAT | os.O_NOFOLLOW, 0o666)
    except OSError as exc:
        raise InputError(f"cannot open the lock file: {exc.strerror or exc}", where=str(p)) from None
    try:
        fcntl.flock(fd, fcntl.LOCK_EX)
        yield
    finally:
        fcntl.flock(fd, fcntl.LOCK_UN)
        os.close(fd)


def _umask() -> int:
    mask = os.umask(0)
    os.umask(mask)
    return mask


def cache_root() -> Path:
    """The tool's cache directory: ``$SPARSEPE_CACHE_DIR``, else ``~/.cache/sparsepe`` (synthesis
    results in ``synth/``, the quality references in ``quality/``, the ASAP7 library in ``asap7/``).
    Safe to delete at any time."""
    env = os.environ.get("SPARSEPE_CACHE_DIR")
    return Path(env) if env else Path.home() / ".cache" / "sparsepe"


def tool_env(scratch: Path | str) -> dict[str, str]:
    """The environment of an external tool (Yosys, OpenSTA) run in the scratch directory
    ``scratch``: this process's, with HOME and TMPDIR there, so what a tool keeps in HOME (Yosys
    appends its command history to ``~/.yosys_history``) or leaves in TMPDIR (the ``yosys-abc-*``
    directories of an ABC run that failed) goes away with the scratch directory."""
    return {**os.environ, "HOME": str(scratch), "TMPDIR": str(scratch)}


#: Environment variables that place the caches libraries keep on their own, and their directory
#: under :func:`cache_root`: ``XDG_CACHE_HOME`` (wasmtime caches the Yosys it compiles for
#: amaranth's built-in Yosys there), ``MPLCONFIGDIR`` (matplotlib's config and font-list cache).
LIBRARY_CACHES = {"XDG_CACHE_HOME": "xdg", "MPLCONFIGDIR": "matplotlib"}


def keep_library_caches() -> None:
    """Point the library caches of :data:`LIBRARY_CACHES` into :func:`cache_root` for this process
    and its children; a variable the user set is left as it is (the user chose that place)."""
    root = cache_root()
    for var, sub in LIBRARY_CACHES.items():
        if not os.environ.get(var):
            os.environ[var] = str(root / sub)


# ---- standard JSON ----------------------------------------------------------------------------


def _finite(obj: Any, path: str, found: dict[str, str]) -> Any:
    if isinstance(obj, float):
        if math.isfinite(obj):
            return obj
        found[path or "$"] = "nan" if math.isnan(obj) else ("inf" if obj > 0 else "-inf")
        return None
    if isinstance(obj, dict):
        return {k: _finite(v, f"{path}.{k}" if path else str(k), found) for k, v in obj.items()}
    if isinstance(obj, (list, tuple)):
        return [_finite(v, f"{path}[{i}]", found) for i, v in enumerate(obj)]
    if isinstance(obj, np.ndarray):  # numpy scalars and arrays
        return _finite(obj.tolist(), path, found)
    if isinstance(obj, np.generic):
        return _finite(obj.item(), path, found)
    return obj


def _reasons(found: dict[str, str]) -> dict[str, str]:
    return {p: f"{v} (not representable in standard JSON: written as null)" for p, v in sorted(found.items())}


def finite_json(obj: Any) -> Any:
    """``obj`` with every non-finite float replaced by None. A dict gains :data:`NON_FINITE_KEY`
    (json path -> what the value was) when any was replaced; a list's dict elements each gain
    their own."""
    if isinstance(obj, (list, tuple)):
        return [finite_json(v) if isinstance(v, dict) else _finite(v, "", {}) for v in obj]
    found: dict[str, str] = {}
    out = _finite(obj, "", found)
    if found and isinstance(out, dict):
        out[NON_FINITE_KEY] = _reasons(found)
    return out


def json_text(obj: Any, **kw: Any) -> str:
    """``json.dumps`` of :func:`finite_json` with ``allow_nan=False``: standard JSON only. Objects
    JSON has no form for are written as their ``str`` unless ``default`` says otherwise."""
    kw.setdefault("default", str)
    kw.pop("allow_nan", None)
    return json.dumps(finite_json(obj), allow_nan=False, **kw)


# ---- text from users --------------------------------------------------------------------------


def printable(text: Any) -> str:
    """``str(text)`` with control and format characters (ANSI escapes, bidi overrides, NUL, ...)
    written as Python escapes (``\\x1b``, ``\\u202e``); everything else unchanged."""
    s = str(text)
    if s.isprintable():
        return s
    out = []
    for c in s:
        if unicodedata.category(c) in ("Cc", "Cf", "Cs", "Co", "Zl", "Zp"):
            out.append(repr(c)[1:-1])
        else:
            out.append(c)
    return "".join(out)


#: The password of ``scheme://user:password@host`` and ``password=...`` in a query or a connection
#: string.
_URL_PASSWORD = re.compile(r"(?P<head>[A-Za-z][A-Za-z0-9+.-]*://[^/\s:@]*:)[^\s/]*@")
_PASSWORD_PARAM = re.compile(r"(?P<head>\bpassword=)[^&\s]*", re.IGNORECASE)


def mask_passwords(text: str) -> str:
    """``text`` with every URL password (``postgresql://u:p@host`` -> ``postgresql://u:***@host``)
    and ``password=...`` parameter masked."""
    text = _URL_PASSWORD.sub(lambda m: m.group("head") + "***@", str(text))
    return _PASSWORD_PARAM.sub(lambda m: m.group("head") + "***", text)


# ---- child processes --------------------------------------------------------------------------

#: prctl(2) option: the signal a process gets when its parent dies (linux/prctl.h).
PR_SET_PDEATHSIG = 1

try:
    _PRCTL = ctypes.CDLL(None, use_errno=True).prctl if sys.platform.startswith("linux") else None
except (OSError, AttributeError):  # no libc prctl: workers then rely on their pipe to the parent
    _PRCTL = None


def die_with_parent(parent_pid: int) -> bool:
    """In a child: be SIGKILLed when the parent process dies (Linux ``PR_SET_PDEATHSIG``). When the
    parent ``parent_pid`` is already gone (it died before the request), exit now. Returns False where
    the kernel offers no such request (not Linux)."""
    if _PRCTL is None:
        return False
    _PRCTL(PR_SET_PDEATHSIG, int(signal.SIGKILL), 0, 0, 0)
    if os.getppid() != parent_pid:  # the parent died before the request took effect
        os._exit(1)
    return True


def _strip_docstrings(tree: ast.AST) -> ast.AST:
    """``tree`` with the docstring (a leading string statement) of its module, classes and
    functions removed."""
    for node in ast.walk(tree):
        if isinstance(node, (ast.Module, ast.ClassDef, ast.FunctionDef, ast.AsyncFunctionDef)):
            body = node.body
            if (
                body
                and isinstance(body[0], ast.Expr)
                and isinstance(body[0].value, ast.Constant)
                and isinstance(body[0].value.value, str)
            ):
                node.body = body[1:] or [ast.Pass()]
    return tree


def code_fingerprint(path: Path | str) -> bytes:
    """The code of the Python source ``path``: ``ast.dump`` of its parsed module with every
    docstring removed (no line numbers, no comments, no layout). Two files that differ only in
    formatting, comments or docstrings have the same fingerprint."""
    tree = ast.parse(Path(path).read_bytes(), filename=str(path))
    return ast.dump(_strip_docstrings(tree)).encode()
