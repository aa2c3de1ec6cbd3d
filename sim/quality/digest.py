"""The cache key of a result that depends on code: a digest of the source files it runs."""

from __future__ import annotations

import hashlib
from collections.abc import Iterable
from pathlib import Path

from hw.host import code_fingerprint

#: the sim.quality package's directory (module names are relative to it: "references/transformer.py")
HERE = Path(__file__).resolve().parent
#: sim/asp_rules.py: which layers a 2:4 design prunes (every quality result depends on it)
ASP_RULES = HERE.parent / "asp_rules.py"


def modules_digest(names: Iterable[str], *extra: Path) -> str:
    """The first 16 hex digits of the SHA-256 of the code of the sim.quality modules ``names``,
    then sim/asp_rules.py, then the files ``extra``, in that order: each file's
    :func:`hw.host.code_fingerprint` (its code without layout, comments and docstrings), so that
    reformatting a module keeps the shipped references and traces valid."""
    h = hashlib.sha256()
    for p in [*(HERE / n for n in names), ASP_RULES, *extra]:
        h.update(code_fingerprint(p))
        h.update(b"\0")
    return h.hexdigest()[:16]
