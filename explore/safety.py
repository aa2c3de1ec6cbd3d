"""Hostile-input guards shared by the commands: standard JSON, safe result writes, names, rich text.

* :func:`dumps` -- standard JSON only, through the one JSON writer (hw.host.json_text): a non-finite
  float (NaN, +-inf) becomes ``null``, and the object gains ``"non_finite": {json-path: "inf" |
  "-inf" | "nan"}`` saying which values were nulled and what they were (the reason).
* :func:`write_text` -- a result file, through the one file writer (hw.host.write_file): atomic,
  never through a symlink.
* :func:`check_out_dir` -- an ``--out`` is refused when it is a symlink (results are never written
  through one: a link to a directory would put them in its target), a file, or empty; a directory
  that cannot be created or written is one line.
* :func:`check_study_name` -- a study name is a name: no path separators, no ``..``, no control
  characters, at most :data:`MAX_NAME_LEN` characters.
* :func:`rich_safe` / :func:`rich_markup` -- a user string for rich: control characters escaped
  (hw.host.printable), markup escaped (``[/]``) and, for a ``str.format`` template such as a
  progress column, braces doubled.
"""

from __future__ import annotations

import os
import unicodedata
from collections.abc import Mapping
from pathlib import Path
from typing import Any

from rich.markup import escape

from hw.errors import InputError
from hw.host import NON_FINITE_KEY, finite_json, json_text, make_dir, printable, write_file

__all__ = [
    "MAX_NAME_LEN",
    "NON_FINITE_KEY",
    "check_out_dir",
    "check_study_name",
    "dumps",
    "finite_json",
    "refuse_symlinks",
    "rich_markup",
    "rich_safe",
    "write_text",
]

#: Longest study name accepted. [A] a study name becomes a directory name (results/<study>) and a
#: database key; 128 characters is well under every file system's 255-byte name limit.
MAX_NAME_LEN = 128


def dumps(obj: Any, *, absent: Mapping[str, str] | None = None, **kw: Any) -> str:
    """Standard JSON text of ``obj`` (hw.host.json_text: ``allow_nan=False``, non-finite -> null
    with the reason). ``absent``: key -> what a NaN under that key means (a quantity that does not
    exist, such as the iso-area twin of a design smaller than every feasible dense design); its
    ``non_finite`` entry then says so instead of naming the NaN."""
    out = finite_json(obj)
    if absent:
        out = _explain_absent(out, absent)
    return json_text(out, **kw)


def _explain_absent(obj: Any, absent: Mapping[str, str]) -> Any:
    if isinstance(obj, list):
        return [_explain_absent(v, absent) for v in obj]
    if not isinstance(obj, dict):
        return obj
    out = {k: _explain_absent(v, absent) for k, v in obj.items() if k != NON_FINITE_KEY}
    if isinstance(obj.get(NON_FINITE_KEY), dict):
        notes = {}
        for path, why in obj[NON_FINITE_KEY].items():
            key = path.rsplit(".", 1)[-1].split("[", 1)[0]
            notes[path] = f"null: {absent[key]}" if key in absent and why.startswith("nan") else why
        out[NON_FINITE_KEY] = notes
    return out


def write_text(path: Path | str, text: str, encoding: str = "utf-8") -> None:
    """Write ``text`` to ``path`` atomically, never following a symlink at ``path`` (hw.host.write_file)."""
    write_file(path, text, encoding=encoding)


def refuse_symlinks(directory: Path | str, names: list[str] | tuple[str, ...]) -> None:
    """Refuse to write into ``directory`` when any of ``names`` in it is a symlink, or, for a
    name that is a directory, when anything inside it is (results are never written through one)."""
    d = Path(directory)
    for name in names:
        p = d / name
        if p.is_symlink():
            raise InputError(
                "is a symlink; results are never written through a symlink (remove it)", where=str(p)
            )
        if p.is_dir():
            for q in p.rglob("*"):
                if q.is_symlink():
                    raise InputError(
                        "is a symlink; results are never written through a symlink (remove it)", where=str(q)
                    )


def check_out_dir(out: Path | str, flag: str = "--out", *, create: bool = True) -> Path:
    """An output directory: refused when it is empty, a symlink (to a directory or dangling:
    results are never written through a symlink) or a file; created (with parents) and checked
    writable when ``create``."""
    if str(out) == "":
        raise InputError("is empty: give a directory", where=flag)
    p = Path(out)
    if p.is_symlink():
        raise InputError(
            f"is a symlink (to {printable(os.readlink(p))}); results are never written through a "
            "symlink: give the directory itself",
            where=f"{flag} {printable(p)}",
        )
    if p.exists() and not p.is_dir():
        raise InputError("is a file, not a directory", where=f"{flag} {printable(p)}")
    if create:
        make_dir(p, where=f"{flag} {printable(p)}")
        if not os.access(p, os.W_OK | os.X_OK):
            raise InputError("the directory is not writable", where=f"{flag} {printable(p)}")
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
    bad = next(
        (c for c in name if unicodedata.category(c) in ("Cc", "Cf", "Cs", "Co", "Cn", "Zl", "Zp")), None
    )
    if (
        bad is not None
    ):  # control, bidi / format (U+202E), surrogate, private-use, unassigned, line separators
        raise InputError(
            f"a study name may not contain control or formatting characters (U+{ord(bad):04X} "
            f"{unicodedata.name(bad, 'unnamed')} at position {name.index(bad)}), got {name!r}",
            where=where,
        )
    return name


def rich_safe(text: Any) -> str:
    """A user string for a rich markup string that may also pass through ``str.format``."""
    return escape(printable(text)).replace("{", "{{").replace("}", "}}")


def rich_markup(text: Any) -> str:
    """A user string for rich markup that is NOT a format template (console.print, table cells)."""
    return escape(printable(text))
