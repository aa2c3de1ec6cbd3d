"""The workload importers, one entry per file format: the table every reader of a workload file uses.

An :class:`Importer` names its format, the file suffixes it reads, the ``sparsepe simulate`` flag and
the ``[[workload]]`` key of a sweep config that give it a file (``explore.config``), the params and
other ``[[workload]]`` keys it takes, its loader and a one-line description. ``explore.config``
dispatches a workload table through :func:`importer_for_field`; a format with ``field=None`` is read
only from the command line (``--topology``). A new format is one module under ``sim/importers/`` and
one :func:`register_importer` call (below, or :func:`registered` for a test's temporary format).
"""

from __future__ import annotations

from collections.abc import Callable, Iterator, Mapping
from contextlib import contextmanager
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from hw.errors import InputError
from sim.importers.hf import MODEL_TYPES, load_hf_config
from sim.importers.onnx import load_onnx
from sim.importers.scalesim import load_scalesim_topology
from sim.layers import Workload

#: ``load(path, params, options)``: ``params`` the workload's params (already checked against
#: :attr:`Importer.params`), ``options`` the values of the importer's other ``[[workload]]`` keys.
Loader = Callable[[str | Path, Mapping[str, Any], Mapping[str, Any]], Workload]


@dataclass(frozen=True)
class Importer:
    """One workload file format."""

    name: str
    suffixes: tuple[str, ...]
    flag: str | None
    #: the ``[[workload]]`` key that holds the file's path (None: command line only)
    field: str | None
    load: Loader
    description: str
    #: the params a ``[[workload]]`` table may give
    params: tuple[str, ...] = ()
    #: other ``[[workload]]`` keys the loader reads, each with its default (unset: that default)
    options: tuple[tuple[str, Any], ...] = ()
    #: the article before ``field`` in messages ("an onnx workload")
    article: str = "a"

    @property
    def noun(self) -> str:
        """``an onnx workload``: how messages name a workload of this format."""
        return f"{self.article} {self.field} workload"

    def load_checked(
        self, path: str | Path, params: Mapping[str, Any], options: Mapping[str, Any]
    ) -> Workload:
        """:attr:`load`, after checking ``params`` against :attr:`params` (an error names ``path``)."""
        extra = set(params) - set(self.params)
        if extra:
            raise InputError(
                f"unknown params {sorted(extra)} for {self.noun} ({', '.join(self.params)})", where=str(path)
            )
        return self.load(path, params, options)


_IMPORTERS: dict[str, Importer] = {}


def register_importer(importer: Importer) -> Importer:
    """Add a format to the table; its name, flag and config field must be new."""
    for other in _IMPORTERS.values():
        for attr in ("name", "flag", "field"):
            value = getattr(importer, attr)
            if value is not None and value == getattr(other, attr):
                raise ValueError(f"importer {importer.name!r}: {attr} {value!r} is already {other.name!r}'s")
    _IMPORTERS[importer.name] = importer
    return importer


def unregister_importer(name: str) -> None:
    """Remove a format (the inverse of :func:`register_importer`)."""
    del _IMPORTERS[name]


@contextmanager
def registered(importer: Importer) -> Iterator[Importer]:
    """Register ``importer`` for the duration of a ``with`` block (a test's temporary format)."""
    register_importer(importer)
    try:
        yield importer
    finally:
        unregister_importer(importer.name)


def importers() -> tuple[Importer, ...]:
    """Every registered format, in registration order."""
    return tuple(_IMPORTERS.values())


def config_importers() -> tuple[Importer, ...]:
    """The formats a sweep config's ``[[workload]]`` table can name (those with a field)."""
    return tuple(imp for imp in _IMPORTERS.values() if imp.field is not None)


def importer_named(name: str) -> Importer:
    """The format registered as ``name`` (KeyError if none)."""
    return _IMPORTERS[name]


def importer_for_field(field: str) -> Importer | None:
    return next((imp for imp in config_importers() if imp.field == field), None)


def importer_for_suffix(path: str | Path) -> Importer | None:
    """The first format whose suffixes include ``path``'s (None if no format reads it)."""
    suffix = Path(path).suffix.lower()
    return next((imp for imp in _IMPORTERS.values() if suffix in imp.suffixes), None)


def _load_onnx(path: str | Path, params: Mapping[str, Any], options: Mapping[str, Any]) -> Workload:
    return load_onnx(path, dict(options["input_shapes"]), params.get("batch"))


def _load_hf(path: str | Path, params: Mapping[str, Any], options: Mapping[str, Any]) -> Workload:
    return load_hf_config(path, **params, prune_lm_head=options["prune_lm_head"])


def _load_topology(path: str | Path, params: Mapping[str, Any], options: Mapping[str, Any]) -> Workload:
    return load_scalesim_topology(path)


register_importer(
    Importer(
        "onnx",
        (".onnx",),
        "--onnx",
        "onnx",
        _load_onnx,
        "an ONNX model file (weights may stay external)",
        params=("batch",),
        options=(("input_shapes", {}),),
        article="an",
    )
)
register_importer(
    Importer(
        "hf",
        (".json",),
        "--hf-config",
        "hf_config",
        _load_hf,
        f"a Hugging Face config.json ({', '.join(MODEL_TYPES)})",
        params=("seq", "batch", "phase", "context"),
        options=(("prune_lm_head", False),),
        article="an",
    )
)
register_importer(
    Importer("scalesim", (".csv",), "--topology", None, _load_topology, "a SCALE-Sim topology CSV")
)
