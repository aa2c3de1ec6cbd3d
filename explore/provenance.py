"""What produced a result: the package version and the version of the model code.

A study stores the model code version beside its config's fingerprint
(explore.config.config_fingerprint; explore.trials.MODEL_CODE_ATTR, FINGERPRINT_ATTR) and is
resumed only by the same pair; ``sparsepe --version`` prints the package version and the model
code version of the installed tree.
"""

from __future__ import annotations

import functools
import hashlib
import importlib
from importlib import metadata
from pathlib import Path

from hw.host import code_fingerprint

#: The distribution name of the package (pyproject.toml).
PACKAGE = "sparsepe"


def package_version() -> str:
    """The installed package's version (importlib.metadata), or a sentence saying it is not installed."""
    try:
        return metadata.version(PACKAGE)
    except metadata.PackageNotFoundError:
        return "not installed as a package"


#: The code that turns a design point into its figures: every module of these packages, and the
#: evaluator that joins them.
_MODEL_PACKAGES = ("hw", "ppa", "sim")
_MODEL_MODULES = ("explore/evaluator.py", "explore/twins.py", "explore/prewarm.py")


@functools.lru_cache(maxsize=1)
def model_code_version() -> str:
    """SHA-256 (16 hex digits) of the model code's source: every ``.py`` file of hw/, ppa/ and
    sim/ and the evaluator (with its dense twins and the hardware prewarm), by path and code
    (:func:`hw.host.code_fingerprint`: a reformatted file or an edited comment keeps it). A
    study stores it, and a study computed by other model code is not resumed (results of two model
    versions never mix)."""
    h = hashlib.sha256()
    init = importlib.import_module("explore").__file__
    assert init is not None  # explore is a regular package (it has an __init__.py)
    root = Path(init).resolve().parent.parent
    files = [f for pkg in _MODEL_PACKAGES for f in (root / pkg).rglob("*.py")] + [
        root / m for m in _MODEL_MODULES
    ]
    for f in sorted(set(files)):
        h.update(f.relative_to(root).as_posix().encode())
        h.update(b"\0")
        h.update(code_fingerprint(f))
        h.update(b"\0")
    return h.hexdigest()[:16]
