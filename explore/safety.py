"""Hostile-input guards shared by the commands: standard JSON, safe result writes, names, rich text.

* :func:`finite_json` / :func:`dumps` -- standard JSON only: a non-finite float (NaN, +-inf) becomes
  ``null``, and the object gains ``"non_finite": {json-path: "inf" | "-inf" | "nan"}`` saying which
  values were nulled and what they were (the reason). Finite outputs are unchanged.
* :func:`write_text` -- writes a result file atomically (a temporary file in the same directory,
  then ``os.replace``), never through a symlink: a symlink at the destination is refused, so a
  planted ``trials.csv -> ~/.bashrc`` is neither followed nor overwritten.
* :func:`check_out_dir` -- an ``--out`` that is a file is refused before anything is created; a
  directory that cannot be created or written is one line. (A symlink to a directory is the
  user's own choice of location and is accepted; the files written inside it are not followed.)
* :func:`check_study_name` -- a study name is a name: no path separators, no ``..``, no control
  characters, at most :data:`MAX_NAME_LEN` characters.
* :func:`rich_safe` -- a user string for rich: markup escaped (``[/]``) and braces doubled (a
  ``str.format`` template such as a progress column).
"""

from __future__ import annotations

import json
import math
import os
import tempfile
from pathlib import Path
from typing import Any

import numpy as np
from rich.markup import escape

from hw.errors import InputError

#: Longest study name accepted. [A] a study name becomes a directory name (results/<study>) and a
#: database key; 128 characters is well under every file system's 255-byte name limit.
MAX_NAME_LEN = 128

#: Key added to a JSON object whose non-finite numbers were written as null.
NON_FINITE_KEY = "non_finite"


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


def finite_json(obj: Any) -> Any:
    """``obj`` with every non-finite float replaced by None; a dict gains :data:`NON_FINITE_KEY`
    (json path -> what the value was) when any was replaced."""
    found: dict[str, str] = {}
    out = _finite(obj, "", found)
    if found and isinstance(out, dict):
        out[NON_FINITE_KEY] = {
            p: f"{v} (not representable in standard JSON: written as null)" for p, v in sorted(found.items())
        }
    return out


def dumps(obj: Any, **kw: Any) -> str:
    """``json.dumps`` of :func:`finite_json` (``allow_nan=False``: standard JSON only)."""
    kw.setdefault("default", str)
    return json.dumps(finite_json(obj), allow_nan=False, **kw)


def write_text(path: Path | str, text: str, encoding: str = "utf-8") -> None:
    """Write ``text`` to ``path`` atomically, never following a symlink at ``path``."""
    p = Path(path)
    if p.is_symlink():
        raise InputError("is a symlink; results are never written through a symlink (remove it)", where=str(p))
    if p.exists() and not p.is_file():
        raise InputError("exists and is not a regular file", where=str(p))
    try:
        fd, tmp = tempfile.mkstemp(prefix=f".{p.name}.", suffix=".tmp", dir=str(p.parent))
    except OSError as exc:
        raise InputError(f"cannot write: {exc.strerror}", where=str(p.parent)) from None
    try:
        with os.fdopen(fd, "w", encoding=encoding, newline="") as f:
            f.write(text)
        os.replace(tmp, p)  # replaces a file (or a symlink planted since the check) without following it
    except OSError as exc:
        try:
            os.unlink(tmp)
        except OSError:
            pass
        raise InputError(f"cannot write: {exc.strerror}", where=str(p)) from None


def refuse_symlinks(directory: Path | str, names: list[str] | tuple[str, ...]) -> None:
    """Refuse to write into ``directory`` when any of ``names`` in it is a symlink, or, for a
    name that is a directory, when anything inside it is (results are never written through one)."""
    d = Path(directory)
    for name in names:
        p = d / name
        if p.is_symlink():
            raise InputError("is a symlink; results are never written through a symlink (remove it)", where=str(p))
        if p.is_dir():
            for q in p.rglob("*"):
                if q.is_symlink():
                    raise InputError("is a symlink; results are never written through a symlink (remove it)",
                                     where=str(q))


def check_out_dir(out: Path | str, flag: str = "--out", *, create: bool = True) -> Path:
    """An output directory: refused when it is a file (or a dangling symlink); created (with
    parents) and checked writable when ``create``."""
    p = Path(out)
    if p.is_symlink() and not p.exists():
        raise InputError("is a dangling symlink", where=f"{flag} {p}")
    if p.exists() and not p.is_dir():
        raise InputError("is a file, not a directory", where=f"{flag} {p}")
    if create:
        try:
            p.mkdir(parents=True, exist_ok=True)
        except FileExistsError:
            raise InputError("a part of this path is a file, not a directory", where=f"{flag} {p}") from None
        except NotADirectoryError:
            raise InputError("a part of this path is a file, not a directory", where=f"{flag} {p}") from None
        except OSError as exc:
            raise InputError(f"cannot create the directory: {exc.strerror}", where=f"{flag} {p}") from None
        if not os.access(p, os.W_OK | os.X_OK):
            raise InputError("the directory is not writable", where=f"{flag} {p}")
    return p


def check_study_name(name: str, where: str = "--study") -> str:
    """A study name is a name, not a path: non-empty, at most MAX_NAME_LEN characters, no '/',
    no '\\\\', not '.' or '..' (nor containing '..'), no control characters."""
    if not isinstance(name, str) or not name.strip():
        raise InputError("a study name must be a non-empty string", where=where)
    if len(name) > MAX_NAME_LEN:
        raise InputError(f"a study name has at most {MAX_NAME_LEN} characters, got {len(name)}", where=where)
    if "/" in name or "\\" in name or os.sep in name or (os.altsep and os.altsep in name):
        raise InputError(f"a study name is a name, not a path: no '/' or '\\', got {name!r}", where=where)
    if ".." in name or name in (".", ".."):
        raise InputError(f"a study name may not contain '..', got {name!r}", where=where)
    if any(ord(c) < 32 or ord(c) == 127 for c in name):
        raise InputError(f"a study name may not contain control characters, got {name!r}", where=where)
    return name


def rich_safe(text: Any) -> str:
    """A user string for a rich markup string that may also pass through ``str.format``."""
    return escape(str(text)).replace("{", "{{").replace("}", "}}")


def rich_markup(text: Any) -> str:
    """A user string for rich markup that is NOT a format template (console.print, table cells)."""
    return escape(str(text))
