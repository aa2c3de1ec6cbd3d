"""The ``[quality]`` section of the sweep configuration (explore.config): the team's own model and
eval behind the quality limit, and how its one-shot N:M model is pruned."""

from __future__ import annotations

from pathlib import Path
from typing import Annotated, Literal

from pydantic import Field, model_validator

from explore.space import StrictModel
from hw.errors import InputError
from sim.quality.prune.calibration import is_function_spec
from sim.quality.prune.method_names import CALIBRATED, METHODS
from sim.quality.team.hooks import DEFAULT_HOOK_TIMEOUT, HookTimeout, check_hook_timeout

__all__ = ["Quality"]


class Quality(StrictModel):
    """The team's own model and evaluation (``"model"`` evidence for the quality limit).

    ``weights``: the dense model (.safetensors / .npz); ``eval``: ``"module:function"`` (a module
    importable from the config's directory, or ``"file.py:function"``); ``finetuned``: the team's
    N:M fine-tuned weights (optional); ``metric``: the eval metric's name, for reports;
    ``method``: magnitude, wanda or sparsegpt (default: sparsegpt with calibration, else
    magnitude; sim.quality.prune.oneshot); ``calibration``: a ``.npz`` / ``.safetensors`` file or
    ``MODULE:FUNCTION`` (sim.quality.prune.calibration); ``hook_timeout``: seconds each call of the eval
    and the calibration function may take (default sim.quality.team.hooks.DEFAULT_HOOK_TIMEOUT);
    ``prune_lm_head``: prune an LM head tied to the input embedding (kept dense by default, the rule of
    a workload's ``prune_lm_head`` and of ``quality --prune-lm-head``; sim.quality.prune.tied). Paths
    are relative to the config file. Without this section the quality limit binds on a reference
    model of the workload family (``"proxy"`` evidence)."""

    weights: str | None = None
    eval: str | None = None
    finetuned: str | None = None
    metric: str | None = None
    method: Literal[METHODS] | None = None  # type: ignore[valid-type]
    calibration: str | None = None
    hook_timeout: Annotated[float, Field(strict=True)] | None = None  # strict: true or "10" are not seconds
    prune_lm_head: bool = Field(False, strict=True)

    @model_validator(mode="after")
    def _check(self) -> Quality:
        if (self.weights is None) != (self.eval is None):
            raise ValueError("weights and eval go together (the eval scores the weights)")
        for key in ("finetuned", "method", "calibration", "hook_timeout", "prune_lm_head"):
            if getattr(self, key) not in (None, False) and self.weights is None:
                raise ValueError(f"{key} needs weights and eval (it applies to the team's model)")
        if self.eval is not None and ":" not in self.eval:
            raise ValueError(f"eval must be 'module:function', got {self.eval!r}")
        if self.calibration is not None and not (
            is_function_spec(self.calibration)
            or Path(self.calibration).suffix.lower() in (".npz", ".safetensors")
        ):
            raise ValueError(
                f"calibration: expected a .npz or .safetensors file or MODULE:FUNCTION, "
                f"got {self.calibration!r}"
            )
        if self.method in CALIBRATED and self.calibration is None:
            raise ValueError(f"method: {self.method} needs calibration inputs ([quality] calibration)")
        if self.hook_timeout is not None:
            try:
                check_hook_timeout(self.hook_timeout, "hook_timeout")
            except InputError as exc:
                raise ValueError(str(exc)) from None
        return self

    def timeout(self) -> HookTimeout:
        """The time limit of each call of the team's code, named by its setting in messages."""
        return HookTimeout(
            DEFAULT_HOOK_TIMEOUT if self.hook_timeout is None else self.hook_timeout, "[quality] hook_timeout"
        )

    def path(self, value: str, source: str) -> Path:
        """A path of this section, relative to the config file ``source``."""
        p = Path(value)
        if p.is_absolute():
            return p
        base = Path(source).parent if source and not source.startswith("<") else Path.cwd()
        return base / p

    def base_dir(self, source: str) -> Path:
        return Path(source).parent if source and not source.startswith("<") else Path.cwd()
