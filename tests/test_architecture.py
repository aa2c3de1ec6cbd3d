"""The project's import architecture, read from its own source with the standard library's ast.

Every import statement of hw, sim, ppa and explore counts, at module level and inside functions.
The rules (issue 26, and the rooms of the shared CONVENTIONS):

(a) no import circle between project modules;
(b) no private name (``_x``, not a dunder) imported from another project module;
(c) an import inside a function carries its reason as a comment on its line (or the line above);
    linter directives (``noqa``, ``type: ignore``, ``pragma``) are not reasons;
(d) rooms import one way: hw imports none of the others; sim and ppa import hw only, never each
    other; explore may import every room;
(e) a module over :data:`MAX_LINES` lines says in its docstring that it is "one cohesive algorithm";
(f) no function or method is over :data:`MAX_FUNCTION_LINES` lines (issue 39), counted from its
    ``def`` (decorators apart) to its last line as ``ruff format`` lays it out.

Each rule is checked per room (sim.quality apart from the rest of sim), so a failure names the room
and lists every offender with file:line.
The checker is tried on a synthetic package first (``test_checker_*``): it must find what it claims to.
"""

from __future__ import annotations

import ast
import io
import re
import tokenize
from dataclasses import dataclass
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[1]
PACKAGES = ("hw", "sim", "ppa", "explore")
#: room -> the other rooms it may import
ROOM_RULES = {
    "hw": frozenset(),
    "sim": frozenset({"hw"}),
    "ppa": frozenset({"hw"}),
    "explore": frozenset({"hw", "sim", "ppa"}),
}
MAX_LINES = 650
MAX_FUNCTION_LINES = 120
COHESIVE = "one cohesive algorithm"

_DIRECTIVE = re.compile(
    r"noqa(?::\s*[A-Z]+[0-9]*(?:\s*,\s*[A-Z]+[0-9]*)*)?|type:\s*ignore(?:\[[^\]]*\])?"
    r"|pragma:[^#]*|pylint:[^#]*|fmt:\s*\w+|isort:\s*\w+",
    re.IGNORECASE,
)


@dataclass(frozen=True)
class Import:
    """One imported module (or name from it) of one import statement."""

    source: str  # the importing project module
    target: str  # the imported module, resolved (a project module when ``project``)
    name: str | None  # the name taken from ``target`` (``from target import name``); None: the module
    path: Path
    lineno: int
    in_function: bool
    has_reason: bool
    project: bool

    @property
    def where(self) -> str:
        return f"{self.path}:{self.lineno}"


@dataclass(frozen=True)
class Project:
    root: Path
    modules: dict[str, Path]  # dotted name -> file
    imports: tuple[Import, ...]

    def rel(self, m: str) -> str:
        return str(self.modules[m].relative_to(self.root))


def _module_name(root: Path, p: Path) -> str:
    parts = list(p.relative_to(root).with_suffix("").parts)
    if parts[-1] == "__init__":
        parts = parts[:-1]
    return ".".join(parts)


def _reason_lines(text: str) -> set[int]:
    """Lines whose comment says something beyond linter directives."""
    out = set()
    for tok in tokenize.generate_tokens(io.StringIO(text).readline):
        if tok.type == tokenize.COMMENT and re.search(r"\w", _DIRECTIVE.sub("", tok.string.lstrip("#"))):
            out.add(tok.start[0])
    return out


def _comment_only_lines(text: str) -> set[int]:
    return {i for i, line in enumerate(text.splitlines(), start=1) if line.lstrip().startswith("#")}


def _targets(node: ast.Import | ast.ImportFrom, module: str, is_pkg: bool) -> list[tuple[str, str | None]]:
    """(module, name) pairs of an import statement, relative imports resolved."""
    if isinstance(node, ast.Import):
        return [(a.name, None) for a in node.names]
    if node.level:
        base = module.split(".") if is_pkg else module.split(".")[:-1]
        base = base[: len(base) - (node.level - 1)]
        target = ".".join(base + ([node.module] if node.module else []))
    else:
        target = node.module or ""
    return [(target, a.name) for a in node.names]


def read_project(root: Path, packages: tuple[str, ...] = PACKAGES) -> Project:
    """Every module of ``packages`` under ``root`` and every import statement in them."""
    root = Path(root)
    modules = {_module_name(root, p): p for pkg in packages for p in sorted((root / pkg).rglob("*.py"))}
    imports = []
    for module, path in modules.items():
        imports.extend(_module_imports(root, packages, modules, module, path))
    return Project(root, modules, tuple(imports))


def _module_imports(
    root: Path, packages: tuple[str, ...], modules: dict[str, Path], module: str, path: Path
) -> list[Import]:
    """Every import statement of one module of :func:`read_project`, in the order of the walk."""
    imports = []
    text = path.read_text(encoding="utf-8")
    tree = ast.parse(text, filename=str(path))
    reasons, comment_only = _reason_lines(text), _comment_only_lines(text)
    is_pkg = path.name == "__init__.py"

    def visit(node: ast.AST, in_function: bool) -> None:
        for child in ast.iter_child_nodes(node):
            if isinstance(child, (ast.Import, ast.ImportFrom)):
                lines = set(range(child.lineno, (child.end_lineno or child.lineno) + 1))
                above = child.lineno - 1
                has_reason = bool(lines & reasons) or (above in comment_only and above in reasons)
                for target, name in _targets(child, module, is_pkg):
                    project = target.split(".")[0] in packages
                    if project and name and f"{target}.{name}" in modules:
                        target, name = f"{target}.{name}", None  # `from pkg import submodule`
                    if project:
                        while target not in modules and "." in target:
                            target = target.rsplit(".", 1)[0]
                        if target not in modules:
                            project = False
                    imports.append(
                        Import(
                            module,
                            target,
                            name,
                            path.relative_to(root),
                            child.lineno,
                            in_function,
                            has_reason,
                            project,
                        )
                    )
            visit(
                child,
                in_function or isinstance(child, (ast.FunctionDef, ast.AsyncFunctionDef, ast.Lambda)),
            )

    visit(tree, False)
    return imports


def _edges(project: Project) -> dict[str, dict[str, Import]]:
    """module -> {imported project module: the first statement that imports it}."""
    out: dict[str, dict[str, Import]] = {}
    for imp in project.imports:
        if imp.project and imp.target != imp.source:
            out.setdefault(imp.source, {}).setdefault(imp.target, imp)
    return out


def circles(project: Project) -> list[tuple[list[str], list[Import]]]:
    """Strongly connected components of more than one module, each with one cycle through it
    (the import statements that close it)."""
    edges = _edges(project)
    index: dict[str, int] = {}
    low: dict[str, int] = {}
    stack: list[str] = []
    on_stack: set[str] = set()
    components: list[list[str]] = []
    for start in project.modules:  # iterative Tarjan
        if start in index:
            continue
        work = [(start, iter(sorted(edges.get(start, {}))))]
        index[start] = low[start] = len(index)
        stack.append(start)
        on_stack.add(start)
        while work:
            v, it = work[-1]
            w = next(it, None)
            if w is not None:
                if w not in index:
                    index[w] = low[w] = len(index)
                    stack.append(w)
                    on_stack.add(w)
                    work.append((w, iter(sorted(edges.get(w, {})))))
                elif w in on_stack:
                    low[v] = min(low[v], index[w])
                continue
            work.pop()
            if work:
                low[work[-1][0]] = min(low[work[-1][0]], low[v])
            if low[v] == index[v]:
                comp = []
                while True:
                    w = stack.pop()
                    on_stack.discard(w)
                    comp.append(w)
                    if w == v:
                        break
                if len(comp) > 1:
                    components.append(sorted(comp))
    out = []
    for comp in components:
        members, first = set(comp), comp[0]
        # breadth-first from the first module back to itself, inside the component
        prev: dict[str, str] = {}
        frontier, seen, closing = [first], {first}, None
        while frontier and closing is None:
            nxt = []
            for v in frontier:
                for w in sorted(edges.get(v, {})):
                    if w == first:
                        closing = v
                        break
                    if w in members and w not in seen:
                        seen.add(w)
                        prev[w] = v
                        nxt.append(w)
                if closing is not None:
                    break
            frontier = nxt
        path = [closing]
        while path[-1] != first:
            path.append(prev[path[-1]])
        path.reverse()
        cycle = [edges[a][b] for a, b in zip(path, path[1:] + [first], strict=True)]
        out.append((comp, cycle))
    return sorted(out, key=lambda c: c[0])


def private_imports(project: Project) -> list[Import]:
    def private(s: str | None) -> bool:
        return bool(s) and s.startswith("_") and not s.startswith("__")

    return [
        i
        for i in project.imports
        if i.project
        and i.target != i.source
        and (private(i.name) or any(private(part) for part in i.target.split(".")))
    ]


def unexplained_function_imports(project: Project) -> list[Import]:
    """Imports inside functions (of any module, project or not) without a reason on the line."""
    seen, out = set(), []
    for i in project.imports:
        if i.in_function and not i.has_reason and (i.path, i.lineno) not in seen:
            seen.add((i.path, i.lineno))
            out.append(i)
    return out


def room_violations(project: Project, rules: dict[str, frozenset[str]] = ROOM_RULES) -> list[Import]:
    out = []
    for i in project.imports:
        src, dst = i.source.split(".")[0], i.target.split(".")[0]
        if i.project and dst != src and dst not in rules.get(src, frozenset()):
            out.append(i)
    return out


def oversized_modules(project: Project, max_lines: int = MAX_LINES) -> list[tuple[str, int]]:
    out = []
    for m, p in project.modules.items():
        text = p.read_text(encoding="utf-8")
        n = len(text.splitlines())
        doc = " ".join((ast.get_docstring(ast.parse(text)) or "").split()).lower()
        if n > max_lines and COHESIVE not in doc:
            out.append((m, n))
    return out


def oversized_functions(project: Project, max_lines: int = MAX_FUNCTION_LINES) -> list[tuple[str, str, int]]:
    """(module, qualified name, lines) of every function or method over ``max_lines`` lines."""
    out = []
    for m, p in project.modules.items():
        tree = ast.parse(p.read_text(encoding="utf-8"))
        stack: list[tuple[ast.AST, str]] = [(tree, "")]
        while stack:
            node, prefix = stack.pop()
            for child in ast.iter_child_nodes(node):
                if isinstance(child, (ast.FunctionDef, ast.AsyncFunctionDef, ast.ClassDef)):
                    name = f"{prefix}{child.name}"
                    if not isinstance(child, ast.ClassDef):
                        n = (child.end_lineno or child.lineno) - child.lineno + 1
                        if n > max_lines:
                            out.append((m, name, n))
                    stack.append((child, f"{name}."))
                else:
                    stack.append((child, prefix))
    return sorted(out)


def _room(module: str) -> str:
    """The area (:data:`AREAS`) of a module: its room, or sim.quality."""
    return (
        "sim.quality"
        if module == "sim.quality" or module.startswith("sim.quality.")
        else module.split(".")[0]
    )


def _fmt(i: Import) -> str:
    what = f"{i.target}.{i.name}" if i.name else i.target
    return f"  {i.where}: {i.source} imports {what}"


# ------------------------------------------------------------------------------------------------
# The project's own tree, one test per rule and room.
# ------------------------------------------------------------------------------------------------

_PROJECT: list[Project] = []


def project() -> Project:
    if not _PROJECT:
        _PROJECT.append(read_project(ROOT))
    return _PROJECT[0]


#: the rooms, with sim.quality (pruning quality, a package of its own) apart from the rest of sim
AREAS = ("hw", "sim", "sim.quality", "ppa", "explore")
rooms = pytest.mark.parametrize("room", AREAS)


def _fail(found: list, headline: str, lines: list[str]) -> None:
    if found:
        pytest.fail("\n".join([headline] + lines), pytrace=False)


@rooms
def test_no_import_circles(room):
    found = [(comp, cycle) for comp, cycle in circles(project()) if any(_room(m) == room for m in comp)]
    lines = []
    for comp, cycle in found:
        lines.append(f"  {len(comp)} modules: {', '.join(comp)}")
        lines.append(
            f"    one cycle: {cycle[0].source}" + "".join(f" -> {i.target} ({i.where})" for i in cycle)
        )
    _fail(found, f"{len(found)} import circle(s) in {room}:", lines)


@rooms
def test_no_private_names_across_modules(room):
    found = [i for i in private_imports(project()) if _room(i.source) == room]
    _fail(
        found,
        f"{len(found)} private name(s) imported across modules in {room} (make them public or move them):",
        [_fmt(i) for i in found],
    )


@rooms
def test_function_imports_carry_a_reason(room):
    found = [i for i in unexplained_function_imports(project()) if _room(i.source) == room]
    _fail(
        found,
        f"{len(found)} import(s) inside functions in {room} without a '# reason' comment (move them to "
        "module level, or say why on the line):",
        [_fmt(i) for i in found],
    )


@rooms
def test_rooms_import_one_way(room):
    found = [i for i in room_violations(project()) if _room(i.source) == room]
    allowed = ", ".join(sorted(ROOM_RULES[room.split(".")[0]])) or "no other room"
    _fail(
        found,
        f"{len(found)} import(s) from {room} into rooms it may not import ({room} may import {allowed}):",
        [_fmt(i) for i in found],
    )


@rooms
def test_modules_stay_small_unless_one_cohesive_algorithm(room):
    p = project()
    found = [(m, n) for m, n in oversized_modules(p) if _room(m) == room]
    _fail(
        found,
        f"{len(found)} module(s) in {room} over {MAX_LINES} lines whose docstring does not say "
        f"'{COHESIVE}' (split them, or say so):",
        [f"  {p.rel(m)}: {n} lines" for m, n in found],
    )


@rooms
def test_functions_stay_short(room):
    p = project()
    found = [(m, f, n) for m, f, n in oversized_functions(p) if _room(m) == room]
    _fail(
        found,
        f"{len(found)} function(s) in {room} over {MAX_FUNCTION_LINES} lines (split them into named steps):",
        [f"  {p.rel(m)}: {f}: {n} lines" for m, f, n in found],
    )


def test_the_tree_is_read_whole():
    """The walk sees the project: the rooms, the in-function imports, the relative form."""
    p = project()
    assert {_room(m) for m in p.modules} == set(AREAS)
    assert {"hw.pe", "sim.perf", "sim.workloads", "ppa.model", "explore.cli"} <= set(p.modules)
    assert ("sim.array_config", "hw.params") in {(i.source, i.target) for i in p.imports}
    assert any(i.in_function for i in p.imports)


# ------------------------------------------------------------------------------------------------
# The checker on a synthetic package: it finds what it claims to find, and passes a clean one.
# ------------------------------------------------------------------------------------------------


def _write(root: Path, files: dict[str, str]) -> None:
    for rel, text in files.items():
        f = root / rel
        f.parent.mkdir(parents=True, exist_ok=True)
        f.write_text(text)


BAD = {
    "low/__init__.py": "",
    "low/a.py": "from low.b import helper\n\n\ndef f():\n    return helper()\n",
    "low/b.py": "from . import c\n\n\ndef helper():\n    return c.X\n",
    "low/c.py": "import low.a\nfrom low.b import _secret  # noqa: F401\nX = 1\n",
    "low/d.py": (
        "def g():\n    import json\n    from low.a import f  # noqa: E402\n"
        "    # onnx is heavy: loaded on use\n    import low.c\n"
        "    import low.b  # loaded on use: low.b is slow to import\n    return json, f, low\n"
    ),
    "low/e.py": "from high.x import Y\n",
    "low/big.py": '"""A long module."""\n' + "X = 1\n" * 700,
    "low/long.py": '"""A long module, but one\ncohesive algorithm."""\n' + "X = 1\n" * 700,
    "low/f.py": "class K:\n    def long(self):\n"
    + "        x = 1\n" * 120
    + "\n\ndef short():\n    return 1\n",
    "high/__init__.py": "",
    "high/x.py": "from low import c as _c\nfrom low.d import g\nY = 2\n",
}
BAD_RULES = {"low": frozenset(), "high": frozenset({"low"})}


def test_checker_finds_a_circle_and_a_private_import(tmp_path):
    _write(tmp_path, BAD)
    p = read_project(tmp_path, ("low", "high"))
    found = circles(p)
    assert [comp for comp, _ in found] == [["low.a", "low.b", "low.c"]]
    cycle = found[0][1]
    assert [(i.source, i.target) for i in cycle] == [
        ("low.a", "low.b"),
        ("low.b", "low.c"),
        ("low.c", "low.a"),
    ]
    assert cycle[1].where == str(Path("low/b.py")) + ":1"  # the relative `from . import c`
    assert [(i.source, i.name) for i in private_imports(p)] == [("low.c", "_secret")]


def test_checker_finds_unexplained_function_imports_rooms_and_size(tmp_path):
    _write(tmp_path, BAD)
    p = read_project(tmp_path, ("low", "high"))
    # json (stdlib) and low.a (a directive only) lack a reason; low.c (line above) and low.b (on the line) have one
    assert [(i.where, i.target) for i in unexplained_function_imports(p)] == [
        (str(Path("low/d.py")) + ":2", "json"),
        (str(Path("low/d.py")) + ":3", "low.a"),
    ]
    assert [(i.source, i.target) for i in room_violations(p, BAD_RULES)] == [("low.e", "high.x")]
    assert oversized_modules(p) == [("low.big", 701)]
    assert oversized_functions(p) == [("low.f", "K.long", 121)]


def test_checker_passes_a_clean_package(tmp_path):
    _write(
        tmp_path,
        {
            "low/__init__.py": "from low.a import f\n",
            "low/a.py": "from low.b import helper\n\n\ndef f():\n    return helper()\n",
            "low/b.py": "import json\n\n\ndef helper():\n"
            "    import low.c  # low.c is heavy: loaded on use\n    return json\n",
            "low/c.py": "__all__ = ['X']\nX = 1\n",
            "high/x.py": "from low import f\nfrom low.c import __all__ as names\n",
        },
    )
    p = read_project(tmp_path, ("low", "high"))
    assert ("low.b", "low.c") in {(i.source, i.target) for i in p.imports}
    assert not circles(p) and not private_imports(p) and not unexplained_function_imports(p)
    assert not room_violations(p, BAD_RULES) and not oversized_modules(p)
