"""A ``[[workload]]`` table of the sweep config (:mod:`explore.config`): a built-in workload by name, or
a file of any format of :mod:`sim.importers.registry`, dispatched through the registry."""

from __future__ import annotations

from pathlib import Path
from typing import Any, cast

from pydantic import (
    Field,
    ModelWrapValidatorHandler,
    PrivateAttr,
    SerializerFunctionWrapHandler,
    model_serializer,
    model_validator,
)

from explore.space import StrictModel
from sim.importers.registry import Importer, config_importers
from sim.workloads import get_workload

#: Workload weight range. [A] a weight ratio above 1e12 is numerically meaningless in the weighted
#: mix (double precision keeps ~16 digits), and tiny weights underflow the report's shares.
MIN_WORKLOAD_WEIGHT, MAX_WORKLOAD_WEIGHT = 1e-6, 1e6


class Workload(StrictModel):
    """One workload of the mix: a built-in ``name`` (``params`` go to ``sim.workloads.get_workload``),
    an ``onnx`` model file (``input_shapes`` {input: "1x3x224x224"}, ``params`` may give ``batch``)
    or a Hugging Face ``hf_config`` file (``params``: seq, batch, phase, context; ``prune_lm_head``:
    a tied LM head is a 2:4 target too). File paths are relative to the config file; ``name``
    defaults to the file's stem."""

    name: str | None = None
    weight: float = Field(1.0, ge=MIN_WORKLOAD_WEIGHT, le=MAX_WORKLOAD_WEIGHT)
    params: dict[str, Any] = Field(default_factory=dict)
    onnx: str | None = None
    input_shapes: dict[str, str | list[int]] = Field(default_factory=dict)
    hf_config: str | None = None
    #: an hf_config workload: prune a tied LM head too (sim.importers.hf; not a 2:4 target by default)
    prune_lm_head: bool = Field(False, strict=True)

    #: the file and option keys of importers registered after this model was built (sim.importers.registry)
    _registered: dict[str, Any] = PrivateAttr(default_factory=dict)

    @model_validator(mode="wrap")
    @classmethod
    def _source(cls, data: Any, handler: ModelWrapValidatorHandler[Workload]) -> Workload:
        later = _registered_keys(cls) if isinstance(data, dict) else set()
        w = handler({k: v for k, v in data.items() if k not in later} if later else data)
        for k in later & set(data):
            if k in {imp.field for imp in config_importers()} and not isinstance(data[k], str):
                raise ValueError(f"{k} must be a string (a file path), got {data[k]!r}")
            w._registered[k] = data[k]
        return w._check_source()

    def _check_source(self) -> Workload:
        names = [importer_field(imp) for imp in config_importers()]
        given = [imp for imp in config_importers() if self.option(importer_field(imp)) is not None]
        if len(given) > 1:
            raise ValueError(f"give one of {_one_of(names)}, not both")
        for imp in config_importers():
            for key, default in imp.options:
                if self.option(key) != default and self.option(importer_field(imp)) is None:
                    raise ValueError(f"{key} applies to {imp.noun}")
        if not given and not self.name:
            raise ValueError(f"give name (a built-in workload), {_one_of(names)}")
        if self.name is None:
            p = Path(self.option(importer_field(given[0])))
            object.__setattr__(
                self, "name", p.parent.name if p.stem == "config" and p.parent.name else p.stem
            )
        return self

    @model_serializer(mode="wrap")
    def _dump(self, handler: SerializerFunctionWrapHandler) -> dict[str, Any]:
        return {**handler(self), **self._registered}

    def option(self, key: str) -> Any:
        """The value of a ``[[workload]]`` key: a field, or a key of an importer registered later."""
        return self._registered.get(key) if key in self._registered else getattr(self, key, None)

    def set_option(self, key: str, value: Any) -> None:
        if key in self._registered:
            self._registered[key] = value
        else:
            object.__setattr__(self, key, value)

    def importer(self) -> Importer | None:
        """The importer of the workload's file (None: a built-in workload by name)."""
        return next((imp for imp in config_importers() if self.option(importer_field(imp)) is not None), None)

    def build(self, **override: Any):
        """The sim.workloads.Workload (``override`` replaces params, e.g. ``batch`` for serving)."""
        params = {**self.params, **override}
        imp = self.importer()
        if imp is not None:
            options = {
                key: default if self.option(key) is None else self.option(key) for key, default in imp.options
            }
            return imp.load_checked(self.option(importer_field(imp)), params, options)
        return get_workload(cast(str, self.name), **params)  # _check_source named it


def importer_field(imp: Importer) -> str:
    """The ``[[workload]]`` key of a config importer (config_importers gives only those with one)."""
    return cast(str, imp.field)


def _registered_keys(model: type[StrictModel]) -> set[str]:
    """The file and option keys of registered importers that ``model`` does not declare."""
    keys = {imp.field for imp in config_importers()} | {
        k for imp in config_importers() for k, _ in imp.options
    }
    return {k for k in keys if k is not None and k not in model.model_fields}


def _one_of(names: list[str]) -> str:
    return f"{', '.join(names[:-1])} or {names[-1]}" if len(names) > 1 else names[0]
