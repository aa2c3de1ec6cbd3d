"""hw.host.code_fingerprint: what the code-keyed caches hash. Layout, comments and docstrings do not
change it (so ``ruff format`` keeps shipped results valid); any change to the code does."""

from __future__ import annotations

from pathlib import Path

from hw.host import code_fingerprint

SOURCE = '''"""A module."""

def f(x, y=2):
    """Add."""
    # a comment
    return x + y
'''

REFORMATTED = '''"""A module, its docstring rewritten."""


def f(
    x,
    y = 2,
):  # trailing comment
    """Add two numbers."""
    return (x + y)
'''

CODE_CHANGED = SOURCE.replace("x + y", "x - y")
DEFAULT_CHANGED = SOURCE.replace("y=2", "y=3")


def _fp(tmp_path: Path, text: str, name: str) -> bytes:
    path = tmp_path / name
    path.write_text(text)
    return code_fingerprint(path)


def test_layout_comments_and_docstrings_do_not_change_the_fingerprint(tmp_path):
    assert _fp(tmp_path, SOURCE, "a.py") == _fp(tmp_path, REFORMATTED, "b.py")


def test_a_code_change_changes_it(tmp_path):
    base = _fp(tmp_path, SOURCE, "a.py")
    assert _fp(tmp_path, CODE_CHANGED, "c.py") != base
    assert _fp(tmp_path, DEFAULT_CHANGED, "d.py") != base


def test_a_function_whose_body_is_only_a_docstring_still_parses_the_same(tmp_path):
    a = _fp(tmp_path, 'def g():\n    """Only a docstring."""\n', "e.py")
    b = _fp(tmp_path, "def g():\n    pass\n", "f.py")
    assert a == b


def test_the_model_code_version_ignores_layout_and_follows_code(tmp_path):
    """ppa.characterisation.code_version (the shipped characterisation's key) hashes the code, so a
    reformatted copy of hw/ and ppa/ keeps the key and a changed constant does not."""
    import shutil  # only this test copies the source tree

    from ppa.characterisation import POST_CHARACTERISATION, code_version, code_version_of

    root = Path(__file__).resolve().parents[1]
    for pkg in ("hw", "ppa"):
        shutil.copytree(root / pkg, tmp_path / pkg, ignore=shutil.ignore_patterns("__pycache__", "*.json"))
    assert code_version_of(tmp_path) == code_version()
    params = tmp_path / "hw" / "params.py"
    assert "hw/params.py" not in POST_CHARACTERISATION
    text = params.read_text()
    # a re-worded docstring, a comment, blank lines: what a formatter or an edit of prose changes
    doc_end = text.index('"""', 3) + 3
    params.write_text('"""Re-worded\n   module docstring."""\n\n# a comment\n' + text[doc_end:])
    assert code_version_of(tmp_path) == code_version()
    params.write_text(text + "\nEXTRA_CONSTANT = 1\n")
    assert code_version_of(tmp_path) != code_version()
    params.write_text(text)
    post = tmp_path / POST_CHARACTERISATION[0]
    post.write_text(post.read_text() + "\nEXTRA_CONSTANT = 1\n")
    assert code_version_of(tmp_path) == code_version()  # a post-characterisation file is not keyed
