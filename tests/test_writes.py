"""Every file the tool writes goes through one function, hw.host.write_file, and every JSON file
through one writer, hw.host.json_text; read from the project's own source with ast.

Outside hw/host.py no module of hw, sim, ppa or explore may call a file-writing primitive: ``open``
in a writing mode, ``Path.write_text`` / ``write_bytes`` / ``mkdir`` / ``touch``, ``os.makedirs`` /
``mkdir`` / ``replace`` / ``rename`` / ``open`` / ``symlink``, ``shutil.copy*`` / ``move``, ``json.dump``,
``tempfile.mkstemp`` / ``NamedTemporaryFile``, ``numpy.save*`` / ``savetxt`` / ``tofile``,
``safetensors.save_file``, or a pandas / matplotlib writer (``to_csv`` ... ``savefig``) given a path
rather than an in-memory buffer. The JSON handed to write_file is json_text's, never json.dumps's,
and no command prints JSON with json.dumps. (Scratch directories for Yosys and OpenSTA come from
``tempfile.TemporaryDirectory``, removed on exit; the tools write only there.)
Writes a library makes on its own, handed a path by the tool (Optuna's journal and SQLite storages),
are listed in :data:`LIBRARY_WRITES`, each with the reason it is not hw.host's; any other use of such
a writer is an offence. The checker is tried on a synthetic module first: it must find what it
claims to.
"""

from __future__ import annotations

import ast
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
PACKAGES = ("hw", "sim", "ppa", "explore")
THE_WRITER = Path("hw/host.py")

#: attribute calls that write whatever their receiver is
_ATTR_WRITES = {
    "write_text",
    "write_bytes",
    "mkdir",
    "touch",
    "makedirs",
    "symlink_to",
    "hardlink_to",
    "copyfile",
    "copy",
    "copy2",
    "copytree",
    "move",
    "mkstemp",
    "mkdtemp",
    "NamedTemporaryFile",
    "savetxt",
    "tofile",
    "save_file",
    "rename",
    "replace",
    "symlink",
    "link",
}
#: receivers for which the names above are file writes (``str.replace`` is not)
_FS_MODULES = {"os", "shutil", "tempfile", "np", "numpy", "safetensors"}
_PATH_ONLY = {"write_text", "write_bytes", "mkdir", "touch", "symlink_to", "hardlink_to"}
#: writers that accept a path or an in-memory buffer as their first argument
_BUFFER_WRITERS = {
    "to_csv",
    "to_json",
    "to_parquet",
    "to_excel",
    "to_html",
    "to_pickle",
    "savefig",
    "save",
    "savez",
    "savez_compressed",
    "write_image",
    "write_html",
}


#: Library objects that write the file they are given (constructing one is a write)
_LIBRARY_WRITERS = {"JournalFileBackend", "JournalFileSymlinkLock", "RDBStorage", "create_engine"}
#: (module, writer) -> why the write is the library's and not hw.host.write_file's
LIBRARY_WRITES = {
    (
        "explore/storage.py",
        "JournalFileBackend",
    ): "Optuna appends the study journal itself, record by record under its lock, as several worker processes "
    "share it; the path is checked first (explore.storage.check_journal_file: no symlink, no non-journal file)",
    (
        "explore/storage.py",
        "JournalFileSymlinkLock",
    ): "Optuna's lock beside the journal (a symlink it makes and removes), the one the journal's writers share",
    (
        "explore/storage.py",
        "RDBStorage",
    ): "Optuna's SQLite / PostgreSQL study storage, written through SQLAlchemy transactions; an SQLite path that "
    "is a symlink is refused first (explore.storage.check_storage_file)",
}


def _mode(value: object) -> str | None:
    """ "write" / "read" for a file-mode string, None for any other constant."""
    if not isinstance(value, str) or not value or len(value) > 3 or set(value) - set("rwaxbt+U"):
        return None
    return "write" if set(value) & set("wax+") else "read"


def _receiver(node: ast.AST) -> str | None:
    return node.id if isinstance(node, ast.Name) else None


def _is_buffer(arg: ast.AST, buffers: set[str]) -> bool:
    return isinstance(arg, ast.Name) and arg.id in buffers


def _is_devnull(arg: ast.AST | None) -> bool:
    return isinstance(arg, ast.Attribute) and arg.attr == "devnull" and _receiver(arg.value) == "os"


def offenders(text: str, rel: str) -> list[str]:
    """``rel:line: what`` for every file write in ``text`` that does not go through hw.host."""
    tree = ast.parse(text)
    buffers = {
        t.id
        for n in ast.walk(tree)
        if isinstance(n, ast.Assign)
        and isinstance(n.value, ast.Call)
        and isinstance(n.value.func, ast.Attribute)
        and n.value.func.attr in ("BytesIO", "StringIO")
        for t in n.targets
        if isinstance(t, ast.Name)
    }
    out = []
    for n in ast.walk(tree):
        if not isinstance(n, ast.Call):
            continue
        f = n.func
        where = f"{rel}:{n.lineno}"
        name = f.id if isinstance(f, ast.Name) else (f.attr if isinstance(f, ast.Attribute) else None)
        if name == "open" and isinstance(f, ast.Name):  # the builtin: open(path, mode)
            mode = (
                n.args[1] if len(n.args) > 1 else next((k.value for k in n.keywords if k.arg == "mode"), None)
            )
            if mode is not None and not (isinstance(mode, ast.Constant) and _mode(mode.value) == "read"):
                out.append(f"{where}: open() in a writing mode")
            continue
        if name in ("open", "ZipFile") and _receiver(getattr(f, "value", None)) != "os":
            # Path.open(mode), gzip.open(p, mode), zipfile.ZipFile(p, mode), zf.open(name, mode)
            consts = [
                a.value
                for a in [*n.args, *(k.value for k in n.keywords if k.arg == "mode")]
                if isinstance(a, ast.Constant)
            ]
            if any(_mode(c) == "write" for c in consts):
                out.append(f"{where}: {name}() in a writing mode")
            continue
        lib = f.id if isinstance(f, ast.Name) else (f.attr if isinstance(f, ast.Attribute) else None)
        if lib in _LIBRARY_WRITERS:
            if (rel, lib) not in LIBRARY_WRITES:
                out.append(f"{where}: {lib}() (a library writer not in LIBRARY_WRITES)")
            continue
        if isinstance(f, ast.Name) and f.id in ("save_file", "mkstemp", "NamedTemporaryFile", "copyfile"):
            out.append(f"{where}: {f.id}()")
            continue
        if not isinstance(f, ast.Attribute):
            continue
        recv = _receiver(f.value)
        if f.attr == "dump" and recv == "json":
            out.append(f"{where}: json.dump()")
        elif f.attr in _PATH_ONLY:
            out.append(f"{where}: .{f.attr}()")
        elif f.attr in _ATTR_WRITES and recv in _FS_MODULES:
            out.append(f"{where}: {recv}.{f.attr}()")
        elif f.attr == "open" and recv == "os" and not _is_devnull(n.args[0] if n.args else None):
            out.append(f"{where}: os.open()")  # os.open(os.devnull, ...) writes no file
        elif f.attr in _BUFFER_WRITERS and (
            recv not in ("json", "pickle", "self", "cls") or f.attr == "savefig"
        ):
            target = (
                n.args[0]
                if n.args
                else next(
                    (k.value for k in n.keywords if k.arg in ("path_or_buf", "fname", "file", "path")), None
                )
            )
            if f.attr in ("save", "savez", "savez_compressed") and recv not in ("np", "numpy"):
                continue  # e.g. safetensors.numpy.save(arrays) -> bytes
            if target is not None and not _is_buffer(target, buffers):
                out.append(f"{where}: .{f.attr}() to a path")
    for n in ast.walk(tree):  # JSON files: json_text, not json.dumps
        if (
            isinstance(n, ast.Call)
            and isinstance(n.func, ast.Name)
            and n.func.id in ("write_file", "write_text")
            and len(n.args) > 1
            and isinstance(n.args[1], ast.Call)
            and isinstance(n.args[1].func, ast.Attribute)
            and n.args[1].func.attr == "dumps"
            and _receiver(n.args[1].func.value) == "json"
        ):
            out.append(f"{rel}:{n.lineno}: a JSON file written with json.dumps (use hw.host.json_text)")
    if rel.startswith("explore/commands/"):
        for n in ast.walk(tree):
            if (
                isinstance(n, ast.Call)
                and isinstance(n.func, ast.Attribute)
                and n.func.attr == "dumps"
                and _receiver(n.func.value) == "json"
            ):
                out.append(f"{rel}:{n.lineno}: a command prints json.dumps output (use explore.safety.dumps)")
    return out


def _project_files():
    for pkg in PACKAGES:
        for p in sorted((ROOT / pkg).rglob("*.py")):
            rel = p.relative_to(ROOT)
            if rel != THE_WRITER:
                yield rel, p.read_text(encoding="utf-8")


def test_checker_finds_every_kind_of_write():
    src = """
import gzip, io, json, os, shutil, tempfile
import numpy as np
from pathlib import Path
from safetensors.numpy import save_file
def f(p, df, fig, d):
    open(p, "w"); open(p, mode="ab"); open(p, "r+"); Path(p).open("w"); gzip.open(p, "wt")
    Path(p).write_text("x"); Path(p).write_bytes(b""); Path(p).mkdir(); p.touch()
    os.makedirs(p); os.replace(p, p); os.rename(p, p); shutil.copyfile(p, p); shutil.copy(p, p)
    json.dump(d, p); tempfile.mkstemp(); tempfile.NamedTemporaryFile(); np.save(p, d); np.savez(p, d)
    df.to_csv(p); fig.savefig(p); save_file(d, p); os.open(p, os.O_WRONLY)
    write_file(p, json.dumps(d))
    JournalFileBackend(p); optuna.storages.RDBStorage(p)
"""
    found = offenders(src, "explore/commands/x.py")
    assert len(found) == 27, "\n".join(found)
    ok = """
import io, json
def g(p, df, fig, d):
    open(p); open(p, "rb"); open(p, encoding="utf-8"); "a".replace("a", "b"); Path(p).open(); zipfile.ZipFile(p)
    buf = io.BytesIO(); fig.savefig(buf, format="png"); np.savez(buf, x=d); text = df.to_csv(index=False)
    write_file(p, json_text(d)); key = json.dumps(d, sort_keys=True); json.loads("1")
    null = os.open(os.devnull, os.O_WRONLY)
"""
    assert offenders(ok, "sim/x.py") == []


def test_library_writes_are_allowed_only_where_listed():
    src = "JournalFileBackend(p)\nRDBStorage(u)\n"
    assert offenders(src, "explore/storage.py") == []
    assert len(offenders(src, "explore/study.py")) == 2
    used = {
        (str(rel), n.func.id if isinstance(n.func, ast.Name) else n.func.attr)
        for rel, text in _project_files()
        for n in ast.walk(ast.parse(text))
        if isinstance(n, ast.Call)
        and isinstance(n.func, (ast.Name, ast.Attribute))
        and (n.func.id if isinstance(n.func, ast.Name) else n.func.attr) in _LIBRARY_WRITERS
    }
    assert set(LIBRARY_WRITES) <= used, f"listed but no longer used: {set(LIBRARY_WRITES) - used}"


def test_every_write_goes_through_hw_host():
    found = [o for rel, text in _project_files() for o in offenders(text, str(rel))]
    assert not found, "file writes outside hw.host.write_file:\n" + "\n".join(found)
