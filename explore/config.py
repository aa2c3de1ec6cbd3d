"""The sweep configuration: one TOML file read with :mod:`tomllib` into pydantic v2 models.

Every model forbids unknown keys (``extra="forbid"``), so a typo is an error that names the file
and the dotted key. :func:`load_config` is the only entry point; it raises
:class:`hw.errors.InputError` with a one-line message for anything wrong in the file.

Layout of a config (every section but ``[study]`` and ``[objectives]`` is required)::

    [study]            name, sampler (tpe | nsga2 | random), seed, trials
    [space]            one entry per axis: a list of choices, or a range table
                       {min, max, step?, log?, grid_points?}; a single value fixes the axis
    [fixed]            design constants that are not searched (operand widths, cooling, ambient)
    [[workload]]       name (a built-in workload), weight, params (passed to get_workload)
    [limits]           the constraints, one Optuna constraint per limit
    [serving]          batching of the serving simulation behind the p99 limit (optional)
    [objectives]       primary (perf_per_watt) and optional secondary objectives (Pareto front)
    [quality]          the team's own model and eval behind the quality limit (optional):
                       weights, eval = "module:function", finetuned, metric
"""

from __future__ import annotations

import math
import tomllib
from pathlib import Path
from typing import Annotated, Any, Literal, Union

from pydantic import BaseModel, ConfigDict, Field, ValidationError, field_validator, model_validator

from hw.errors import InputError
from hw.nm import check_nm
from ppa.dram import DRAM_TYPES as _PPA_DRAM_TYPES
from ppa.tech import NODES_NM

#: The axes of the design space, in the order trials suggest them and trials.csv lists them.
AXES = ("rows", "cols", "sram_kb", "clock_mhz", "node_nm", "sparsity", "pipeline", "dataflow", "dram", "dram_gbps",
        "precision")

#: Dataflows known to the cycle model (weight-, output-, input-stationary; SCALE-Sim's names).
DATAFLOWS = ("ws", "os", "is")

#: Named DRAM types: the PPA model's table (bandwidth per unit, energy per bit, with sources).
DRAM_TYPES = tuple(_PPA_DRAM_TYPES)

#: Objectives: name -> Optuna direction. ``perf_per_watt`` is effective TOPS/W on the weighted
#: workload mix (the primary objective); the others may be added as secondary objectives.
OBJECTIVES = {
    "perf_per_watt": "maximize",
    "effective_tops": "maximize",
    "area_mm2": "minimize",
    "power_w": "minimize",
    "latency_ms": "minimize",
    "p99_latency_ms": "minimize",
    "energy_per_inference_mj": "minimize",
}

#: Limits -> the name of the Optuna constraint it becomes (``metric - limit``, feasible when <= 0).
LIMIT_CONSTRAINTS = {
    "max_stall_fraction": "stall_fraction",
    "max_tj_c": "tj_c",
    "max_power_density_w_mm2": "power_density_w_mm2",
    "max_area_mm2": "area_mm2",
    "p99_latency_ms": "p99_latency_ms",
    "max_quality_delta": "quality_delta",
}


class _Strict(BaseModel):
    model_config = ConfigDict(extra="forbid", frozen=True)


class Range(_Strict):
    """A numeric range axis. ``step`` makes it discrete (and grid-able); ``log`` samples on a log
    scale; ``grid_points`` discretises a continuous range for ``--grid``."""

    min: float
    max: float
    step: float | None = None
    log: bool = False
    grid_points: int | None = None

    @model_validator(mode="after")
    def _check(self) -> "Range":
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
        if self.grid_points is not None and self.grid_points < 1:
            raise ValueError(f"grid_points must be >= 1, got {self.grid_points}")
        return self

    def grid(self, integer: bool) -> list[float] | list[int]:
        """The discretised values of this range for grid mode."""
        import numpy as np

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


Axis = Union[Range, list[Any], int, float, str]


def _as_choices(value: Any) -> list[Any] | None:
    """A list axis or a single fixed value -> the list of choices; a Range -> None."""
    if isinstance(value, Range):
        return None
    if isinstance(value, list):
        return value
    return [value]


class Space(_Strict):
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
    precision: Axis | None = Field(None, description="operand formats: int8, int4, fp8-e4m3, fp8-e5m2, bf16 "
                                   "(absent: fixed.act_bits / weight_bits integers)")

    @model_validator(mode="after")
    def _check(self) -> "Space":
        if (self.dram is None) == (self.dram_gbps is None):
            raise ValueError("give exactly one of 'dram' (memory types) or 'dram_gbps' (bandwidth in GB/s)")
        for name in AXES:
            value = getattr(self, name)
            if value is None:
                continue
            choices = _as_choices(value)
            if choices is None:
                if name in ("sparsity", "dataflow", "dram", "node_nm", "precision"):
                    raise ValueError(f"{name}: must be a list of choices, not a range")
                if value.min <= 0:
                    raise ValueError(f"{name}: range must be positive, got min {value.min:g}")
                continue
            if not choices:
                raise ValueError(f"{name}: empty list of choices")
            if len(set(map(str, choices))) != len(choices):
                raise ValueError(f"{name}: duplicate choices {choices}")
            for c in choices:
                _check_choice(name, c)
        return self

    def axis(self, name: str) -> Any:
        return getattr(self, name)

    def active_axes(self) -> tuple[str, ...]:
        return tuple(a for a in AXES if getattr(self, a) is not None)


_INT_AXES = ("rows", "cols", "sram_kb", "node_nm", "pipeline")


def _check_choice(name: str, c: Any) -> None:
    if name in _INT_AXES:
        if isinstance(c, bool) or not isinstance(c, int) or c <= 0:
            raise ValueError(f"{name}: choices must be positive integers, got {c!r}")
    if name == "node_nm" and c not in NODES_NM:
        raise ValueError(f"node_nm: no model for {c} nm (known: {', '.join(map(str, NODES_NM))})")
    if name in ("clock_mhz", "dram_gbps"):
        if isinstance(c, bool) or not isinstance(c, (int, float)) or not c > 0:
            raise ValueError(f"{name}: choices must be positive numbers, got {c!r}")
    elif name == "sparsity":
        parse_sparsity(c)
    elif name == "dataflow":
        if c not in DATAFLOWS:
            raise ValueError(f"dataflow: unknown {c!r} (known: {', '.join(DATAFLOWS)})")
    elif name == "precision":
        from hw.precision import PRECISIONS

        if c not in PRECISIONS:
            raise ValueError(f"precision: unknown {c!r} (known: {', '.join(PRECISIONS)})")
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
            raise ValueError(f"sparsity: expected 'dense:M' with M a power of two >= 2, got {value!r}") from None
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


class Fixed(_Strict):
    """Design constants that are not searched. Every value here reaches the models as given."""

    act_bits: int = Field(8, description="activation width, bits")
    weight_bits: int = Field(8, description="weight width, bits")
    acc_bits: int = Field(32, ge=8, le=64, description="accumulator width, bits")
    ambient_c: float = Field(45.0, description="ambient temperature, C (HotSpot 6.0 default 318.15 K)")
    cooling: Literal["air", "liquid"] = Field("air", description="package + cooling stack of ppa.thermal")
    theta_ja_c_per_w: float | None = Field(None, gt=0, description="override the cooling's theta_ja, K/W")
    dram_units: dict[str, int] = Field(
        default_factory=dict,
        description="DRAM type -> number of units (HBM stacks, LPDDR x16 channels, DDR4 channels); "
        "bandwidth = units x the type's per-unit GB/s",
    )

    sram_banks: int = Field(2, ge=1, le=64, description="SRAM banks per buffer, one 64 B port each: the cycle model's "
                            "port bandwidth limit (sim.perf) and the macros ppa.sram costs; 2 = the ping and pong "
                            "halves of the double buffer")
    activity_trace: Literal["synthetic", "reference"] = Field(
        "synthetic",
        description="data the PE netlist is simulated on for switching activity: 'synthetic' (ppa.activity's "
        "seeded post-ReLU / N(0, 2^(W-3)) trace) or 'reference' (real int8 activations and ASP-pruned "
        "weights + metadata of sim.quality's reference MLP; the dense PE gets the dense baseline model)",
    )
    dram_type: str | None = Field(
        None, description="DRAM type whose energy per bit is charged when the space gives dram_gbps"
    )
    liberty: str | None = Field(
        None, description="Liberty (.lib) file of the team's standard cells (relative to the config file): "
        "timing from OpenSTA on it; default: the osu018 library when OpenSTA and qflow-tech-osu018 are installed"
    )
    liberty_node: int | None = Field(
        None, ge=1, le=1000, description="process node (nm) of the liberty file when the file does not state it"
    )

    @field_validator("dram_type")
    @classmethod
    def _dtype(cls, v: str | None) -> str | None:
        if v is not None and v not in DRAM_TYPES:
            raise ValueError(f"unknown memory type {v!r} (known: {', '.join(DRAM_TYPES)})")
        return v

    @field_validator("act_bits", "weight_bits")
    @classmethod
    def _bits(cls, v: int) -> int:
        if v not in (4, 8, 16):
            raise ValueError(f"must be 4, 8 or 16, got {v}")
        return v

    @field_validator("dram_units")
    @classmethod
    def _units(cls, v: dict[str, int]) -> dict[str, int]:
        for k, n in v.items():
            if k not in DRAM_TYPES:
                raise ValueError(f"unknown memory type {k!r} (known: {', '.join(DRAM_TYPES)})")
            if isinstance(n, bool) or not isinstance(n, int) or n < 1:
                raise ValueError(f"{k}: number of units must be a positive integer, got {n!r}")
        return v


class Serving(_Strict):
    """The serving simulation behind the p99 limit (``sim.serving.serve``): Poisson arrivals at
    ``limits.request_rate_hz``, dynamic batching up to ``max_batch`` or ``timeout_ms``. Defaults
    are sim.serving's."""

    max_batch: int = Field(8, ge=1, le=256)
    timeout_ms: float = Field(2.0, ge=0)
    n_requests: int = Field(2000, ge=100)
    seed: int = Field(0, ge=0)


class Workload(_Strict):
    """One workload of the mix; ``params`` go to ``sim.workloads.get_workload(name, **params)``."""

    name: str
    weight: float = Field(1.0, gt=0)
    params: dict[str, Any] = Field(default_factory=dict)


class Limits(_Strict):
    """The limits; each becomes one Optuna constraint (``metric - limit``, feasible when <= 0).
    A limit that is not given is not enforced."""

    max_stall_fraction: float | None = None
    max_tj_c: float | None = None
    max_power_density_w_mm2: float | None = None
    max_area_mm2: float | None = None
    p99_latency_ms: float | None = None
    request_rate_hz: float | None = None
    max_quality_delta: float | None = None

    @model_validator(mode="after")
    def _check(self) -> "Limits":
        if self.max_stall_fraction is not None and not 0 < self.max_stall_fraction <= 1:
            raise ValueError(f"max_stall_fraction must be in (0, 1], got {self.max_stall_fraction:g}")
        for key in ("max_power_density_w_mm2", "max_area_mm2", "p99_latency_ms", "request_rate_hz"):
            v = getattr(self, key)
            if v is not None and not v > 0:
                raise ValueError(f"{key} must be > 0, got {v:g}")
        if self.max_quality_delta is not None and self.max_quality_delta < 0:
            raise ValueError(f"max_quality_delta must be >= 0, got {self.max_quality_delta:g}")
        if (self.p99_latency_ms is None) != (self.request_rate_hz is None):
            raise ValueError("p99_latency_ms and request_rate_hz go together (the SLA is p99 at a request rate)")
        return self

    def active(self) -> dict[str, float]:
        """limit key -> value, for the limits that are set (request_rate_hz is not a limit)."""
        return {k: getattr(self, k) for k in LIMIT_CONSTRAINTS if getattr(self, k) is not None}


class Quality(_Strict):
    """The team's own model and evaluation (``"model"`` evidence for the quality limit).

    ``weights``: the dense model (.safetensors / .npz); ``eval``: ``"module:function"`` (a module
    importable from the config's directory, or ``"file.py:function"``); ``finetuned``: the team's
    N:M fine-tuned weights (optional); ``metric``: the eval metric's name, for reports. Paths are
    relative to the config file. Without this section the quality limit binds on a reference
    model of the workload family (``"proxy"`` evidence)."""

    weights: str | None = None
    eval: str | None = None
    finetuned: str | None = None
    metric: str | None = None

    @model_validator(mode="after")
    def _check(self) -> "Quality":
        if (self.weights is None) != (self.eval is None):
            raise ValueError("weights and eval go together (the eval scores the weights)")
        if self.finetuned is not None and self.weights is None:
            raise ValueError("finetuned needs weights and eval")
        if self.eval is not None and ":" not in self.eval:
            raise ValueError(f"eval must be 'module:function', got {self.eval!r}")
        return self

    def path(self, value: str, source: str) -> Path:
        """A path of this section, relative to the config file ``source``."""
        p = Path(value)
        if p.is_absolute():
            return p
        base = Path(source).parent if source and not source.startswith("<") else Path.cwd()
        return base / p

    def base_dir(self, source: str) -> Path:
        return Path(source).parent if source and not source.startswith("<") else Path.cwd()


class Objectives(_Strict):
    primary: Literal["perf_per_watt"] = "perf_per_watt"
    secondary: list[str] = Field(default_factory=list)

    @field_validator("secondary")
    @classmethod
    def _known(cls, v: list[str]) -> list[str]:
        for name in v:
            if name not in OBJECTIVES or name == "perf_per_watt":
                known = ", ".join(k for k in OBJECTIVES if k != "perf_per_watt")
                raise ValueError(f"unknown secondary objective {name!r} (known: {known})")
        if len(set(v)) != len(v):
            raise ValueError(f"duplicate secondary objectives {v}")
        return v

    def names(self) -> list[str]:
        return [self.primary, *self.secondary]

    def directions(self) -> list[str]:
        return [OBJECTIVES[n] for n in self.names()]


class StudySection(_Strict):
    name: str | None = None
    sampler: Literal["tpe", "nsga2", "random"] = "tpe"
    seed: int = 0
    trials: int = Field(150, ge=1)


class SweepConfig(_Strict):
    study: StudySection = Field(default_factory=StudySection)
    space: Space
    fixed: Fixed = Field(default_factory=Fixed)
    workload: Annotated[list[Workload], Field(min_length=1)]
    limits: Limits = Field(default_factory=Limits)
    serving: Serving = Field(default_factory=Serving)
    objectives: Objectives = Field(default_factory=Objectives)
    quality: Quality | None = None

    #: Where the config came from (set by load_config; used in messages and reports).
    source: str = Field("<memory>", exclude=True)

    @model_validator(mode="after")
    def _check(self) -> "SweepConfig":
        lim = self.limits
        if lim.max_tj_c is not None and lim.max_tj_c <= self.fixed.ambient_c:
            raise ValueError(
                f"limits.max_tj_c = {lim.max_tj_c:g} C is at or below fixed.ambient_c = "
                f"{self.fixed.ambient_c:g} C: no design can meet it"
            )
        if self.quality is not None and self.quality.weights is not None and lim.max_quality_delta is None:
            raise ValueError("[quality] gives the team's model and eval, but limits.max_quality_delta is not set "
                             "(the quality limit the evidence binds)")
        if self.space.dram_gbps is not None and self.fixed.dram_type is None:
            raise ValueError("space.dram_gbps needs fixed.dram_type (whose energy per bit is charged)")
        if self.space.dram is not None:
            for t in _as_choices(self.space.dram) or []:
                if t not in self.fixed.dram_units:
                    raise ValueError(
                        f"space.dram lists {t!r} but fixed.dram_units has no unit count for it "
                        f"(e.g. dram_units = {{ {t} = 1 }})"
                    )
        return self


_UNION_TAGS = ("Range", "int", "float", "str", "bool", "list")


def _loc(loc: tuple[Any, ...]) -> str:
    """pydantic error location -> dotted key (union member tags like 'list[any]' dropped)."""
    parts: list[str] = []
    for p in loc:
        if isinstance(p, int):
            parts.append(f"[{p}]")
        elif isinstance(p, str) and ("[" in p or "(" in p or p in _UNION_TAGS):
            continue
        else:
            parts.append(("." if parts else "") + str(p))
    return "".join(parts)


def _one_line(exc: ValidationError) -> str:
    errs = exc.errors()
    # For union axes pydantic reports one error per member; an unknown key wins, else the first.
    for e in errs:
        if e["type"] == "extra_forbidden":
            return f"{_loc(e['loc'])}: unknown key"
    e = errs[0]
    msg = e["msg"].removeprefix("Value error, ")
    where = _loc(e["loc"])
    return f"{where}: {msg}" if where else msg


def parse_config(data: dict[str, Any], source: str = "<memory>") -> SweepConfig:
    """Validate a config dict (as read from TOML); raise InputError naming ``source`` and the key."""
    try:
        cfg = SweepConfig.model_validate({**data})
    except ValidationError as exc:
        raise InputError(_one_line(exc), where=source) from None
    except InputError as exc:
        raise InputError(str(exc), where=source) from None
    object.__setattr__(cfg, "source", source)
    for w in cfg.workload:
        _check_workload(w, source)
    _check_liberty(cfg, source)
    return cfg


def _check_liberty(cfg: "SweepConfig", source: str) -> None:
    """fixed.liberty: a path relative to the config file's directory becomes absolute; the file is
    read (header) now so a bad library fails before anything runs, naming the file."""
    f = cfg.fixed
    if f.liberty is None:
        if f.liberty_node is not None:
            raise InputError("fixed.liberty_node needs fixed.liberty", where=source)
        return
    p = Path(f.liberty).expanduser()
    if not p.is_absolute() and source not in ("<memory>", ""):
        p = Path(source).resolve().parent / p
    object.__setattr__(f, "liberty", str(p))
    from ppa.sta import load_liberty

    lib = load_liberty(p, f.liberty_node)
    if lib.node_nm is None:
        raise InputError("the Liberty file does not state its process node: give fixed.liberty_node (or --liberty-node)",
                         where=str(p))


def with_liberty(cfg: "SweepConfig", liberty: str | None, liberty_node: int | None) -> "SweepConfig":
    """``cfg`` with fixed.liberty / fixed.liberty_node replaced where given (the sweep's --liberty
    and --liberty-node), validated like the file's own."""
    if liberty is None and liberty_node is None:
        return cfg
    data = cfg.model_dump(mode="json", exclude={"source"})
    if liberty is not None:
        data["fixed"]["liberty"] = str(Path(liberty).expanduser().resolve())
    if liberty_node is not None:
        data["fixed"]["liberty_node"] = liberty_node
    return parse_config(data, source=getattr(cfg, "source", "<memory>"))


def _check_workload(w: Workload, source: str) -> None:
    """Check the workload name (and params) against the workload library (sim.workloads)."""
    from sim.workloads import get_workload

    try:
        get_workload(w.name, **w.params)
    except InputError as exc:
        msg = str(exc).removeprefix(f"{exc.where}: ") if exc.where else str(exc)
        raise InputError(f"workload {w.name!r}: {msg}", where=source) from None
    except TypeError as exc:
        raise InputError(f"workload {w.name!r}: bad params: {exc}", where=source) from None


def load_config(path: str | Path) -> SweepConfig:
    """Read and validate a sweep config TOML file."""
    p = Path(path)
    try:
        raw = p.read_bytes()
    except OSError as exc:
        raise InputError(f"cannot read config: {exc.strerror}", where=str(p)) from None
    try:
        data = tomllib.loads(raw.decode("utf-8"))
    except (tomllib.TOMLDecodeError, UnicodeDecodeError) as exc:
        raise InputError(f"not valid TOML: {exc}", where=str(p)) from None
    return parse_config(data, source=str(p))


def quality_evidence_kind(cfg: SweepConfig) -> str:
    """What the quality limit binds on: ``"model"`` (the team's [quality] weights + eval),
    ``"proxy"`` (a reference model of the workload family) or ``"none"`` (no quality limit)."""
    if cfg.limits.max_quality_delta is None:
        return "none"
    return "model" if cfg.quality is not None and cfg.quality.weights is not None else "proxy"


def axis_choices(space: Space, name: str) -> list[Any] | None:
    """The list of choices for a choice axis, or None for a range axis."""
    return _as_choices(space.axis(name))


def is_integer_axis(name: str) -> bool:
    return name in _INT_AXES
