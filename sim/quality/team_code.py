"""The team's own code, called by name: ``MODULE:FUNCTION`` (the eval, the calibration inputs).

``MODULE`` is an importable module, a module file next to the config (or in the working
directory), or a ``.py`` path; a module file is loaded afresh under a name derived from its path,
so two configs with the same module name in different directories never mix.
"""

from __future__ import annotations

import hashlib
import importlib
import importlib.machinery
import importlib.util
import sys
from collections.abc import Callable
from pathlib import Path

from hw.errors import InputError

__all__ = ["load_function", "first_line"]


def load_function(spec: str, base_dir: str | Path | None = None, *, what: str = "eval") -> Callable:
    """``"module:function"`` (an importable module, or a ``.py`` file path relative to
    ``base_dir``) -> the function. Any failure is one InputError naming it (``what``: "eval",
    "calibration")."""
    where = f"{what} {spec!r}"
    example = "my_eval:score" if what == "eval" else "my_calib:inputs"
    if not isinstance(spec, str) or spec.count(":") < 1:
        raise InputError(f"expected MODULE:FUNCTION, e.g. {example}", where=where)
    mod_name, _, fn_name = spec.rpartition(":")
    if not mod_name or not fn_name.isidentifier():
        raise InputError(f"expected MODULE:FUNCTION, e.g. {example}", where=where)
    base = Path(base_dir) if base_dir is not None else Path.cwd()
    try:
        path = None
        if mod_name.endswith(".py"):
            path = Path(mod_name)
            path = path if path.is_absolute() else base / path
            if not path.is_file():
                raise InputError(f"no such file {path}", where=where)
        elif "." not in mod_name:
            # a module file next to the config (or in the working directory) is loaded from there,
            # afresh: two configs with the same module name in different directories never mix
            found = importlib.machinery.PathFinder.find_spec(mod_name, [str(base.resolve())])
            if found is not None and found.origin and found.origin.endswith(".py"):
                path = Path(found.origin)
        if path is not None:
            name = f"_sparsepe_eval_{hashlib.sha256(str(path.resolve()).encode()).hexdigest()[:16]}"
            sp = importlib.util.spec_from_file_location(name, path)
            module = importlib.util.module_from_spec(sp)
            sys.modules[name] = module
            sp.loader.exec_module(module)
        else:
            added = str(base.resolve())
            sys.path.insert(0, added)
            try:
                module = importlib.import_module(mod_name)
            finally:
                if added in sys.path:
                    sys.path.remove(added)
    except InputError:
        raise
    except BaseException as exc:  # noqa: BLE001 - whatever the team's module raises, one line
        if isinstance(exc, KeyboardInterrupt):
            raise
        raise InputError(f"import failed: {type(exc).__name__}: {first_line(exc)}", where=where) from None
    fn = getattr(module, fn_name, None)
    if not callable(fn):
        raise InputError(f"module {mod_name!r} has no function {fn_name!r}", where=where)
    fn.__sparsepe_spec__ = spec  # type: ignore[attr-defined]
    return fn


def first_line(exc: BaseException) -> str:
    s = str(exc).strip()
    return s.splitlines()[0] if s else "(no message)"
