"""The cache key of a result that depends on code: a digest of the source files it runs."""

from __future__ import annotations

import hashlib
from collections.abc import Iterable
from pathlib import Path

#: the sim.quality package's directory
HERE = Path(__file__).resolve().parent
#: sim/asp_rules.py: which layers a 2:4 design prunes (every quality result depends on it)
ASP_RULES = HERE.parent / "asp_rules.py"


def files_digest(paths: Iterable[Path]) -> str:
    """The first 16 hex digits of the SHA-256 of the files' bytes, in the order given."""
    h = hashlib.sha256()
    for p in paths:
        h.update(Path(p).read_bytes())
    return h.hexdigest()[:16]


def modules_digest(names: Iterable[str], *extra: Path) -> str:
    """``files_digest`` of the sim.quality modules ``names``, then sim/asp_rules.py, then ``extra``."""
    return files_digest([*(HERE / n for n in names), ASP_RULES, *extra])
