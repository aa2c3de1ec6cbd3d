"""The design space of a sweep: its axes, the ``[space]`` section's model, and the values an axis
takes (choices, a range, or one fixed value), with the sparsity values every room reads.

* :data:`AXES`: the axes, in the order trials suggest them and trials.csv lists them.
* :class:`Space` (``[space]``) and :class:`Range` (a range axis ``{min, max, step?, log?,
  grid_points?}``), pydantic v2 models that forbid unknown keys (:class:`StrictModel`, the base of
  every config model, explore.config); each axis value is checked against its domain here.
* :func:`parse_sparsity` and friends: ``"2:4"``, ``"2:4+dense"``, ``"dense"``, ``"dense:M"``.
* :func:`axis_choices` / :func:`is_integer_axis`: how an axis is sampled and discretised.
* :func:`double_buffered`: whether a point's weights are double-buffered (the ``double_buffer``
  axis, which applies to the stationary dataflows: an OS array streams its weights, so an OS point
  has nothing to double-buffer and the search and the grid give it ``false``).
"""

from __future__ import annotations

import json
import math
from typing import Any

import numpy as np
from pydantic import BaseModel, ConfigDict, Field, model_validator

from hw.errors import InputError
from hw.nm import check_nm
from hw.params import MAX_PIPELINE
from hw.precision import PRECISIONS
from ppa.dram import DRAM_TYPES as PPA_DRAM_TYPES
from ppa.tech import NODES_NM

#: The axes of the design space, in the order trials suggest them and trials.csv lists them.
AXES = (
    "rows",
    "cols",
    "sram_kb",
    "clock_mhz",
    "node_nm",
    "sparsity",
    "pipeline",
    "dataflow",
    "dram",
    "dram_gbps",
    "vector_lanes",
    "precision",
    "double_buffer",
)

#: Axes added after studies were stored: left out of the config fingerprint when absent
#: (explore.config.config_fingerprint), so a study stored before them still loads.
ADDED_AXES = ("double_buffer",)

#: Dataflows known to the cycle model (weight-, output-, input-stationary; SCALE-Sim's names).
DATAFLOWS = ("ws", "os", "is")

#: Named DRAM types: the PPA model's table (bandwidth per unit, energy per bit, with sources).
DRAM_TYPES = tuple(PPA_DRAM_TYPES)


class StrictModel(BaseModel):
    """The base of every config model: unknown keys are errors, values are frozen."""

    # allow_inf_nan=False: a NaN or infinite number anywhere in the file is an error naming its key
    model_config = ConfigDict(extra="forbid", frozen=True, allow_inf_nan=False)


# ---- input limits of the axes (README "Input limits"); each cap is stated with its reason ------

#: Largest array side: ppa.model.DesignPoint.validate's cap (the array cost is characterised up to
#: 256 x 256, ppa.array_cost.MAX_CHARACTERISED_ROWS).
MAX_ARRAY_SIDE = 256
#: Clock range, MHz. [A] below 1 MHz no design of interest runs (and DRAM bytes per cycle blow up);
#: above 10 GHz no CMOS logic clock has shipped (ppa.tech's fmax at 7 nm is a few GHz).
MIN_CLOCK_MHZ, MAX_CLOCK_MHZ = 1.0, 10_000.0
#: Largest SRAM, KiB. [A] 1 GiB: above any single accelerator's on-chip SRAM outside wafer-scale
#: parts (H100: 50 MB L2 + 33 MB shared memory), and the SRAM macro model's range.
MAX_SRAM_KB = 1_048_576.0
#: Largest DRAM bandwidth, GB/s. [A] 100 TB/s: ~30x an 8-stack HBM3 system (8 x 819 GB/s [S]).
MAX_DRAM_GBPS = 100_000.0
#: Most choices of one axis, and most values a range may discretise into. [A] the grid and the
#: samplers hold every value in memory; 100,000 is far above any useful axis.
MAX_AXIS_VALUES = 100_000


class Range(StrictModel):
    """A numeric range axis. ``step`` makes it discrete (and grid-able); ``log`` samples on a log
    scale; ``grid_points`` discretises a continuous range for ``--grid``."""

    min: float
    max: float
    step: float | None = None
    log: bool = False
    grid_points: int | None = None

    @model_validator(mode="after")
    def _check(self) -> Range:
        if not (math.isfinite(self.min) and math.isfinite(self.max)):
            raise ValueError("min and max must be finite numbers")
        if self.min > self.max:
            raise ValueError(f"empty range: min {self.min:g} > max {self.max:g}")
        if self.step is not None:
            if self.step <= 0:
                raise ValueError(f"step must be > 0, got {self.step:g}")
            if self.log:
                raise ValueError("a range cannot have both step and log")
        if self.log and self.min <= 0:
            raise ValueError(f"a log range needs min > 0, got {self.min:g}")
        if self.grid_points is not None and not 1 <= self.grid_points <= MAX_AXIS_VALUES:
            raise ValueError(f"grid_points must be in 1..{MAX_AXIS_VALUES}, got {self.grid_points}")
        if self.step is not None and (self.max - self.min) / self.step + 1 > MAX_AXIS_VALUES:
            raise ValueError(
                f"step {self.step:g} gives more than {MAX_AXIS_VALUES} values in [{self.min:g}, {self.max:g}]"
            )
        return self

    def grid(self, integer: bool) -> list[float] | list[int]:
        """The discretised values of this range for grid mode."""
        if self.step is not None:
            n = int(math.floor((self.max - self.min) / self.step + 1e-9)) + 1
            vals = [self.min + i * self.step for i in range(n)]
        elif self.min == self.max:
            vals = [self.min]
        elif self.grid_points is None:
            raise InputError("a continuous range needs 'step' or 'grid_points' for --grid")
        elif self.log:
            vals = list(np.geomspace(self.min, self.max, self.grid_points))
        else:
            vals = list(np.linspace(self.min, self.max, self.grid_points))
        if integer:
            return sorted({int(round(v)) for v in vals})
        return [float(v) for v in vals]


Axis = Range | list[Any] | int | float | str


def as_choices(value: Any) -> list[Any] | None:
    """A list axis or a single fixed value -> the list of choices; a Range -> None."""
    if isinstance(value, Range):
        return None
    if isinstance(value, list):
        return value
    return [value]


class Space(StrictModel):
    """The design space. Each axis is a list of choices, a range table, or one fixed value."""

    rows: Axis
    cols: Axis
    sram_kb: Axis
    clock_mhz: Axis
    node_nm: Axis
    sparsity: Axis = Field(description="'2:4', another 'N:M', or 'dense'")
    pipeline: Axis
    dataflow: Axis
    dram: Axis | None = None
    dram_gbps: Axis | None = None
    #: lanes of the vector unit beside the array (optional axis; not given: one lane per column)
    vector_lanes: Axis | None = None
    precision: Axis | None = Field(
        None,
        description="operand formats: int8, int4, fp8-e4m3, fp8-e5m2, fp16, bf16 "
        "(absent: fixed.act_bits / weight_bits integers)",
    )
    double_buffer: Axis | None = Field(
        None,
        description="a shadow weight set per PE (hw.array double_buffer): "
        "[false, true] sweeps it; ws and is only (absent: false)",
    )

    @model_validator(mode="after")
    def _check(self) -> Space:
        if (self.dram is None) == (self.dram_gbps is None):
            raise ValueError("give exactly one of 'dram' (memory types) or 'dram_gbps' (bandwidth in GB/s)")
        for name in AXES:
            value = getattr(self, name)
            if value is None:
                continue
            choices = as_choices(value)
            if choices is None:
                if name in ("sparsity", "dataflow", "dram", "node_nm", "precision", "double_buffer"):
                    raise ValueError(f"{name}: must be a list of choices, not a range")
                if value.min <= 0:
                    raise ValueError(f"{name}: range must be positive, got min {value.min:g}")
                if name in INT_AXES:
                    for key in ("min", "max", "step"):
                        v = getattr(value, key)
                        if v is not None and v != int(v):
                            raise ValueError(f"{name}.{key}: an integer axis needs an integer, got {v:g}")
                for key in ("min", "max"):
                    _check_number(name, getattr(value, key), f"{name}.{key}")
                continue
            if not choices:
                raise ValueError(f"{name}: empty list of choices")
            if len(choices) > MAX_AXIS_VALUES:
                raise ValueError(f"{name}: {len(choices)} choices, at most {MAX_AXIS_VALUES}")
            if len(set(map(str, choices))) != len(choices):
                raise ValueError(f"{name}: duplicate choices {choices}")
            for c in choices:
                _check_choice(name, c)
        if True in (as_choices(self.double_buffer) or []) and not set(as_choices(self.dataflow) or []) - {
            "os"
        }:
            raise ValueError(
                "double_buffer: true needs a stationary dataflow (ws or is) among the dataflow "
                "choices; os streams its weights"
            )
        return self

    def axis(self, name: str) -> Any:
        return getattr(self, name)

    def active_axes(self) -> tuple[str, ...]:
        return tuple(a for a in AXES if getattr(self, a) is not None)


INT_AXES = ("rows", "cols", "sram_kb", "node_nm", "pipeline", "vector_lanes")


#: Domain of each numeric axis: (lowest, highest, reason). Integer axes also need integers.
def axis_bounds() -> dict[str, tuple[float, float, str]]:
    return {
        "rows": (1, MAX_ARRAY_SIDE, "ppa.model's array cost is characterised up to 256"),
        "cols": (1, MAX_ARRAY_SIDE, "ppa.model's array cost is characterised up to 256"),
        "pipeline": (1, MAX_PIPELINE, "hw.params.MAX_PIPELINE register stages"),
        "sram_kb": (1e-3, MAX_SRAM_KB, "1 GiB of on-chip SRAM at most"),
        "clock_mhz": (MIN_CLOCK_MHZ, MAX_CLOCK_MHZ, "a CMOS clock of 1 MHz to 10 GHz"),
        "dram_gbps": (1e-3, MAX_DRAM_GBPS, "100 TB/s at most"),
    }


def _check_number(name: str, c: Any, where: str | None = None) -> None:
    """A numeric axis value inside its domain (finite, positive, below the stated cap)."""
    bounds = axis_bounds().get(name)
    if bounds is None:
        return
    lo, hi, why = bounds
    where = where or name
    if isinstance(c, bool) or not isinstance(c, (int, float)) or not math.isfinite(c):
        raise ValueError(f"{where}: must be a finite number, got {c!r}")
    if not lo <= c <= hi:
        raise ValueError(f"{where}: {c:g} is outside {lo:g}..{hi:g} ({why})")


def _check_choice(name: str, c: Any) -> None:
    if name in INT_AXES:
        if isinstance(c, bool) or not isinstance(c, int) or c <= 0:
            raise ValueError(f"{name}: choices must be positive integers, got {c!r}")
    if name == "node_nm" and c not in NODES_NM:
        raise ValueError(f"node_nm: no model for {c} nm (known: {', '.join(map(str, NODES_NM))})")
    if name in ("clock_mhz", "dram_gbps"):
        if isinstance(c, bool) or not isinstance(c, (int, float)) or not c > 0:
            raise ValueError(f"{name}: choices must be positive numbers, got {c!r}")
    _check_number(name, c)
    if name == "sparsity":
        parse_sparsity(c)
    elif name == "dataflow":
        if c not in DATAFLOWS:
            raise ValueError(f"dataflow: unknown {c!r} (known: {', '.join(DATAFLOWS)})")
    elif name == "precision":
        if c not in PRECISIONS:
            raise ValueError(f"precision: unknown {c!r} (known: {', '.join(PRECISIONS)})")
    elif name == "double_buffer":
        if not isinstance(c, bool):
            raise ValueError(f"double_buffer: choices must be true or false, got {c!r}")
    elif name == "dram":
        if c not in DRAM_TYPES:
            raise ValueError(f"dram: unknown memory type {c!r} (known: {', '.join(DRAM_TYPES)})")


def parse_sparsity(value: Any) -> tuple[int, int, bool]:
    """'2:4' -> (2, 4, True); 'dense' (or 'dense:4') -> (2, 4, False): a dense PE of M = 4 (4 activations and 4
    weights, 4 multiplies per cycle), covering as many reduction elements per cycle as the 2:4 PE
    (docs/design.md); N is unused by the dense PE but kept valid for the models' N:M checks.
    '2:4+dense' -> (2, 4, True): the sparse PE with a full-rate dense path (:func:`has_dense_path`)."""
    if value == "dense":
        return (2, 4, False)
    if isinstance(value, str) and value.startswith("dense:"):  # a dense PE of another M (a twin's)
        try:
            m = int(value[6:])
            check_nm(m // 2, m)
        except (ValueError, InputError):
            raise ValueError(
                f"sparsity: expected 'dense:M' with M a power of two >= 2, got {value!r}"
            ) from None
        return (m // 2, m, False)
    if isinstance(value, str) and value.endswith(DENSE_PATH_SUFFIX):
        value = value[: -len(DENSE_PATH_SUFFIX)]
    if not isinstance(value, str) or value.count(":") != 1:
        raise ValueError(f"sparsity: expected 'N:M', 'N:M+dense' or 'dense', got {value!r}")
    a, b = value.split(":")
    try:
        n, m = int(a), int(b)
    except ValueError:
        raise ValueError(f"sparsity: expected 'N:M' with integers, got {value!r}") from None
    try:
        check_nm(n, m)
    except InputError as exc:
        raise ValueError(f"sparsity {value!r}: {exc}") from None
    return (n, m, True)


#: Suffix of a sparsity value whose sparse PE also has a full-rate dense path ("2:4+dense"): M
#: multipliers, a dense group of M per cycle, M/N N:M groups per cycle (NVIDIA's sparse tensor
#: cores; hw.pe.SparsePE(dense_path=True)).
DENSE_PATH_SUFFIX = "+dense"


def has_dense_path(value: Any) -> bool:
    """True for an 'N:M+dense' sparsity value (a valid one; see :func:`parse_sparsity`)."""
    return isinstance(value, str) and value.endswith(DENSE_PATH_SUFFIX) and value != "dense"


def dense_twin_sparsity(value: Any) -> str:
    """The sparsity value of the same array with dense PEs covering the same M per cycle."""
    n, m, _ = parse_sparsity(value)
    return "dense" if m == 4 else f"dense:{m}"


def sparsity_option(text: str, where: str = "--sparsity") -> tuple[bool, int, int]:
    """A command-line sparsity value (``N:M`` or ``dense``; case and blanks ignored) ->
    (sparse, n, m) by :func:`parse_sparsity`; bad input raises InputError naming the option."""
    t = str(text).strip()
    t = "dense" if t.lower() == "dense" else t.replace(" ", "")
    try:
        n, m, sparse = parse_sparsity(t)
    except ValueError as exc:
        raise InputError(str(exc), where=where) from None
    return sparse, n, m


def axis_choices(space: Space, name: str) -> list[Any] | None:
    """The list of choices for a choice axis, or None for a range axis."""
    return as_choices(space.axis(name))


def is_integer_axis(name: str) -> bool:
    return name in INT_AXES


def double_buffered(point: dict[str, Any]) -> bool:
    """Whether the design ``point`` double-buffers its weights: its ``double_buffer`` value (false
    when the space has no such axis), on a stationary dataflow (an OS array streams its weights)."""
    return bool(point.get("double_buffer", False)) and point.get("dataflow") != "os"


def design_key(point: dict[str, Any]) -> str:
    """A design's identity: numbers compare as floats (a fixed axis's 500 and the echoed metric 500.0)."""
    norm = {
        k: (float(v) if isinstance(v, (int, float)) and not isinstance(v, bool) else v)
        for k, v in point.items()
    }
    return json.dumps(norm, sort_keys=True, default=str)
