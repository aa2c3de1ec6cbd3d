"""The sweep configuration: one TOML file read with :mod:`tomllib` into pydantic v2 models.

Every model forbids unknown keys (``extra="forbid"``), so a typo is an error that names the file
and the dotted key. :func:`load_config` is the only entry point; it raises
:class:`hw.errors.InputError` with a one-line message for anything wrong in the file. The design
space (``[space]``, its axes and their values) is :mod:`explore.space`; this module holds the other
sections, the loading, and the config's fingerprint (:func:`config_fingerprint`); a pydantic
validation error becomes its one line in :mod:`explore.config_errors`.

Layout of a config (every section but ``[study]`` and ``[objectives]`` is required)::

    [study]            name, sampler (tpe | nsga2 | random), seed, trials
    [space]            one entry per axis: a list of choices, or a range table
                       {min, max, step?, log?, grid_points?}; a single value fixes the axis
    [fixed]            design constants that are not searched (operand widths, cooling, ambient)
    [[workload]]       name (a built-in workload), weight, params (passed to get_workload); or
                       onnx = "model.onnx" with input_shapes, or hf_config = "config.json" (params: seq,
                       batch, phase, context; prune_lm_head)
    [limits]           the constraints, one Optuna constraint per limit
    [serving]          batching of the serving simulation behind the p99 limit (optional)
    [objectives]       primary (any objective of explore.metrics.OBJECTIVES; default perf_per_watt) and
                       optional secondary objectives (Pareto front)
    [quality]          the team's own model and eval behind the quality limit (optional):
                       weights, eval = "module:function", finetuned, metric, method, calibration,
                       hook_timeout
    [owners]           who owns each finding of the review packet (optional): the four roles
                       model_optimization, accelerator_architecture, compiler_sparsity,
                       serving_performance, each mapped to a person or team
    [context]          build and runtime tags the user supplies for the review memo (optional):
                       model_revision, compiler_version, runtime_version, power_mode, notes
    [decision]         what SHIP needs (optional): margin (the sparse advantage, default 0.05),
                       min_confidence (P(advantage >= margin) over the assumptions' ranges, default
                       0.9), samples (joint samples of the ranges, default 256)
    [assumptions]      plausible ranges that replace the registry's (optional): one entry per
                       assumption of ``sparsepe assumptions``, ``name = { low = .., high = .. }``
"""

from __future__ import annotations

import hashlib
import json
import math
import tomllib
from pathlib import Path
from typing import Annotated, Any, Literal, cast

from pydantic import (
    Field,
    ValidationError,
    ValidationInfo,
    field_validator,
    model_validator,
)

from explore.config_errors import one_line_error
from explore.metrics import DEFAULT_PRIMARY, OBJECTIVES
from explore.quality_config import Quality
from explore.safety import check_study_name
from explore.space import (
    ADDED_AXES,
    DRAM_TYPES,
    Range,
    Space,
    StrictModel,
    as_choices,
    axis_choices,
    is_integer_axis,
    parse_sparsity,
)
from explore.workload_config import (  # noqa: F401
    MAX_WORKLOAD_WEIGHT,
    MIN_WORKLOAD_WEIGHT,
    Workload,
    importer_field,
)
from hw.errors import InputError
from hw.params import PEParams
from ppa.assumptions import Assumption, with_ranges
from ppa.liberty import asap7
from ppa.liberty.library import load_liberty

#: Limits -> the name of the Optuna constraint it becomes (``metric - limit``, feasible when <= 0).
LIMIT_CONSTRAINTS = {
    "max_stall_fraction": "stall_fraction",
    "max_tj_c": "tj_c",
    "max_power_density_w_mm2": "power_density_w_mm2",
    "max_area_mm2": "area_mm2",
    "p99_latency_ms": "p99_latency_ms",
    "max_quality_delta": "quality_delta",
}

# ---- input limits (README "Input limits"); each cap is stated with its reason -----------------

#: Most DRAM units of one type. [A] 64: 8 HBM stacks or 64 LPDDR x16 channels bound real packages.
MAX_DRAM_UNITS = 64
#: Ambient temperature range, C: ppa.model.DesignPoint.validate's (-60..150 C).
MIN_AMBIENT_C, MAX_AMBIENT_C = -60.0, 150.0
#: Highest T_j limit, C. [A] silicon is rated to 150 C (AEC-Q100 grade 0) and 175 C at most.
MAX_TJ_LIMIT_C = 200.0
#: Largest junction-to-ambient resistance, K/W. [A] a bare die in still air is ~50-100 K/W.
MAX_THETA_JA = 1000.0
#: Largest seed: numpy/Optuna samplers take seeds in [0, 2**32). Worker seeds wrap modulo 2**32.
MAX_SEED = 2**32 - 1
#: Most trials of one study. [A] each trial is one journal record set; 100,000 is ~100x a big sweep.
MAX_TRIALS = 100_000
#: Most requests of the serving simulation: sim.serving.MAX_REQUESTS (100,000; ~0.2 s per point).
MAX_SERVING_REQUESTS = 100_000
#: Longest batching timeout, ms. [A] one minute; an SLA in the minutes is not a serving SLA.
MAX_SERVING_TIMEOUT_MS = 60_000.0
#: Largest config file. [A] a sweep config is a few KiB; 16 MiB bounds parsing time and memory.
MAX_CONFIG_BYTES = 16 * 2**20
#: Upper bound of the latency and rate limits. [A] far outside any serving SLA, finite for the maths.
MAX_LATENCY_MS, MAX_REQUEST_RATE_HZ = 1e7, 1e9


class Fixed(StrictModel):
    """Design constants that are not searched. Every value here reaches the models as given."""

    act_bits: int = Field(default=8, description="activation width, bits")
    weight_bits: int = Field(default=8, description="weight width, bits")
    acc_bits: int = Field(default=32, ge=8, le=64, description="accumulator width, bits")
    ambient_c: float = Field(
        default=45.0,
        ge=MIN_AMBIENT_C,
        le=MAX_AMBIENT_C,
        description="ambient temperature, C (HotSpot 6.0 default 318.15 K)",
    )
    cooling: Literal["air", "liquid"] = Field(
        default="air", description="package + cooling stack of ppa.thermal"
    )
    theta_ja_c_per_w: float | None = Field(
        default=None, gt=0, le=MAX_THETA_JA, description="override the cooling's theta_ja, K/W"
    )
    dram_units: dict[str, int] = Field(
        default_factory=dict,
        description="DRAM type -> number of units (HBM stacks, LPDDR x16 channels, DDR4 channels); "
        "bandwidth = units x the type's per-unit GB/s",
    )

    sram_banks: int = Field(
        default=2,
        ge=1,
        le=64,
        description="SRAM banks per buffer, one 64 B port each: the cycle model's "
        "port bandwidth limit (sim.perf) and the macros ppa.sram costs; 2 = the ping and pong "
        "halves of the double buffer",
    )
    activity_trace: Literal["synthetic", "reference"] = Field(
        default="reference",
        description="data the PE netlist is simulated on for switching activity: 'reference' (real data of each "
        "workload's family, explore.activity_traces: transformer workloads the char-level transformer LM, CNNs the "
        "digits CNN, MLPs the digits MLP; ASP-pruned layers on the sparse PE and the layers left dense on its "
        "fallback / dense path, mixed by the workload's MACs; the dense PE gets the dense model; float precisions "
        "the float values encoded to their format) or 'synthetic' (ppa.activity's seeded post-ReLU / "
        "N(0, 2^(W-3)) trace)",
    )
    dram_type: str | None = Field(
        default=None, description="DRAM type whose energy per bit is charged when the space gives dram_gbps"
    )
    liberty: str | None = Field(
        default=None,
        description="Liberty (.lib) file of the team's standard cells (relative to the config file), or "
        "'asap7' (the ASAP7 7 nm library from ../shared/reference/asap7): "
        "timing from OpenSTA on it; default: the osu018 library when OpenSTA and qflow-tech-osu018 are installed",
    )
    liberty_node: int | None = Field(
        default=None,
        ge=1,
        le=1000,
        description="process node (nm) of the liberty file when the file does not state it",
    )
    clock_gating: bool = Field(
        default=True, description="gate the clock of the WS weight registers while they hold"
    )
    vt: Literal["rvt", "lvt", "slvt"] | None = Field(
        default=None,
        description="threshold-voltage flavour of the logic cells (ppa.references VT_FLAVOURS); default: per "
        "design, the lowest-leakage flavour that meets its clock",
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
            if isinstance(n, bool) or not isinstance(n, int) or not 1 <= n <= MAX_DRAM_UNITS:
                raise ValueError(f"{k}: number of units must be an integer in 1..{MAX_DRAM_UNITS}, got {n!r}")
        return v


class Serving(StrictModel):
    """The serving simulation behind the p99 limit (``sim.serving.serve``): Poisson arrivals at
    ``limits.request_rate_hz``, dynamic batching up to ``max_batch`` or ``timeout_ms``. Defaults
    are sim.serving's."""

    max_batch: int = Field(default=8, ge=1, le=256)
    timeout_ms: float = Field(default=2.0, ge=0, le=MAX_SERVING_TIMEOUT_MS)
    n_requests: int = Field(default=2000, ge=100, le=MAX_SERVING_REQUESTS)
    seed: int = Field(default=0, ge=0, le=MAX_SEED)
    #: arrival seeds seed, seed+1, ...: p95/p99 are their mean, with a 95 % interval across them
    #: [A] 5: the fewest for which the t-interval (t = 2.78 at 4 degrees of freedom) is usefully narrow
    seeds: int = Field(default=5, ge=1, le=64)
    #: share of each run's requests discarded at its start (the empty-queue cold start) before
    #: p95/p99 [A]: 10 %; at 2000 requests that is 200, many times the queue's relaxation time
    #: (a few batch services) at any load below saturation
    warmup_fraction: float = Field(default=0.1, ge=0, lt=0.9)
    #: the server's start-up before its first batch (model load, caches), ms; 0: ready at once. The
    #: warm-up discard is what keeps such a start out of p95/p99
    cold_start_ms: float = Field(default=0.0, ge=0, le=MAX_SERVING_TIMEOUT_MS)
    #: LLM workloads (llama*-prefill / -decode): decode tokens per request after its prefill [A]
    output_tokens: int = Field(default=128, ge=1, le=65536)


#: [owners] roles, in the order the review packet lists them.
OWNER_ROLES = ("model_optimization", "accelerator_architecture", "compiler_sparsity", "serving_performance")


class Owners(StrictModel):
    """Roles -> the person or team who owns them; a role not given is named by its title."""

    model_optimization: str = "model optimization lead"
    accelerator_architecture: str = "accelerator architecture owner"
    compiler_sparsity: str = "compiler sparsity pass owner"
    serving_performance: str = "serving performance owner"

    @field_validator("*")
    @classmethod
    def _nonempty(cls, v: str) -> str:
        if not str(v).strip():
            raise ValueError("an owner's name must not be empty")
        return v


class Context(StrictModel):
    """Build and runtime tags only the user knows, quoted in the review memo's Symptom."""

    model_revision: str | None = None
    compiler_version: str | None = None
    runtime_version: str | None = None
    power_mode: str | None = None
    notes: str | None = None


class Limits(StrictModel):
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
    def _check(self) -> Limits:
        if self.max_stall_fraction is not None and not 0 < self.max_stall_fraction <= 1:
            raise ValueError(f"max_stall_fraction must be in (0, 1], got {self.max_stall_fraction:g}")
        for key in ("max_power_density_w_mm2", "max_area_mm2", "p99_latency_ms", "request_rate_hz"):
            v = getattr(self, key)
            if v is not None and not v > 0:
                raise ValueError(f"{key} must be > 0, got {v:g}")
        if self.max_quality_delta is not None and self.max_quality_delta < 0:
            raise ValueError(f"max_quality_delta must be >= 0, got {self.max_quality_delta:g}")
        for key, hi, why in (
            ("max_tj_c", MAX_TJ_LIMIT_C, "silicon is rated to 150-175 C"),
            ("p99_latency_ms", MAX_LATENCY_MS, "far outside any serving SLA"),
            ("request_rate_hz", MAX_REQUEST_RATE_HZ, "far outside any serving load"),
        ):
            v = getattr(self, key)
            if v is not None and v > hi:
                raise ValueError(f"{key} = {v:g} is above {hi:g} ({why})")
        if (self.p99_latency_ms is None) != (self.request_rate_hz is None):
            raise ValueError(
                "p99_latency_ms and request_rate_hz go together (the SLA is p99 at a request rate)"
            )
        return self

    def active(self) -> dict[str, float]:
        """limit key -> value, for the limits that are set (request_rate_hz is not a limit)."""
        return {k: getattr(self, k) for k in LIMIT_CONSTRAINTS if getattr(self, k) is not None}


class Objectives(StrictModel):
    """The study's objectives (explore.metrics.OBJECTIVES): ``primary`` (perf_per_watt unless named)
    picks the best design and the verdict's advantage; ``secondary`` ones make a Pareto front."""

    primary: str = DEFAULT_PRIMARY
    secondary: list[str] = Field(default_factory=list)

    @field_validator("primary")
    @classmethod
    def _known_primary(cls, v: str) -> str:
        if v not in OBJECTIVES:
            raise ValueError(f"unknown primary objective {v!r} (known: {', '.join(OBJECTIVES)})")
        return v

    @field_validator("secondary")
    @classmethod
    def _known(cls, v: list[str], info: ValidationInfo) -> list[str]:
        primary = info.data.get("primary", DEFAULT_PRIMARY)
        for name in v:
            if name not in OBJECTIVES or name == primary:
                known = ", ".join(k for k in OBJECTIVES if k != primary)
                raise ValueError(f"unknown secondary objective {name!r} (known: {known})")
        if len(set(v)) != len(v):
            raise ValueError(f"duplicate secondary objectives {v}")
        return v

    def names(self) -> list[str]:
        return [self.primary, *self.secondary]

    def directions(self) -> list[str]:
        return [OBJECTIVES[n] for n in self.names()]


#: The SHIP margin: the best sparse design must beat the best dense design on the primary objective by
#: at least this share [A]: 5 %, the size of model error we would not bet a tape-out on (the SRAM fit
#: is within 2.4 % of CACTI, PE-scaled area within 2.5 % of whole-array synthesis; DRAM energy per
#: bit varies by more between vendors).
SHIP_MIN_ADVANTAGE = 0.05
#: SHIP also needs P(advantage >= margin) over the assumptions' ranges of at least this [A]: nine
#: chances in ten, a common confidence for a go/no-go call.
MIN_CONFIDENCE = 0.9
#: Joint samples of the assumptions' ranges (Latin hypercube) behind that probability: with 256 the
#: binomial standard error of a probability near 0.9 is about 0.02.
ROBUSTNESS_SAMPLES = 256
#: Most joint samples. [A] 100,000 x 20 designs of numpy rows stays within memory and a minute.
MAX_ROBUSTNESS_SAMPLES = 100_000


class Decision(StrictModel):
    """What SHIP needs beyond the rules of the report's decision section (explore.robustness)."""

    margin: float = Field(
        default=SHIP_MIN_ADVANTAGE,
        ge=0.0,
        le=10.0,
        description="the sparse advantage (best sparse / best dense - 1) SHIP needs",
    )
    min_confidence: float = Field(
        default=MIN_CONFIDENCE,
        gt=0.0,
        le=1.0,
        description="P(advantage >= margin) over the assumptions' ranges SHIP needs",
    )
    samples: int = Field(
        default=ROBUSTNESS_SAMPLES,
        ge=ROBUSTNESS_SAMPLES,
        le=MAX_ROBUSTNESS_SAMPLES,
        description="joint Latin-hypercube samples of the ranges",
    )


class AssumptionRange(StrictModel):
    """One plausible range that replaces the registry's (ppa.assumptions)."""

    low: float
    high: float


class StudySection(StrictModel):
    name: str | None = None
    sampler: Literal["tpe", "nsga2", "random"] = "tpe"
    seed: int = Field(default=0, ge=0, le=MAX_SEED)
    trials: int = Field(default=150, ge=1, le=MAX_TRIALS)
    settle: bool = True  # after the budget, settle each side to a local optimum (explore.settle)

    @field_validator("name")
    @classmethod
    def _name(cls, v: str | None) -> str | None:
        if v is not None:
            try:
                check_study_name(v, where="study.name")
            except InputError as exc:
                raise ValueError(str(exc).removeprefix("study.name: ")) from None
        return v


class SweepConfig(StrictModel):
    study: StudySection = Field(default_factory=StudySection)
    space: Space
    fixed: Fixed = Field(default_factory=Fixed)
    workload: Annotated[list[Workload], Field(min_length=1)]
    limits: Limits = Field(default_factory=Limits)
    serving: Serving = Field(default_factory=Serving)
    objectives: Objectives = Field(default_factory=Objectives)
    quality: Quality | None = None
    owners: Owners = Field(default_factory=Owners)
    context: Context = Field(default_factory=Context)
    decision: Decision = Field(default_factory=Decision)
    assumptions: dict[str, AssumptionRange] = Field(default_factory=dict)

    #: Where the config came from (set by load_config; used in messages and reports).
    source: str = Field(default="<memory>", exclude=True)

    @model_validator(mode="after")
    def _check(self) -> SweepConfig:
        lim = self.limits
        if lim.max_tj_c is not None and lim.max_tj_c <= self.fixed.ambient_c:
            raise ValueError(
                f"limits.max_tj_c = {lim.max_tj_c:g} C is at or below fixed.ambient_c = "
                f"{self.fixed.ambient_c:g} C: no design can meet it"
            )
        if self.quality is not None and self.quality.weights is not None and lim.max_quality_delta is None:
            raise ValueError(
                "[quality] gives the team's model and eval, but limits.max_quality_delta is not set "
                "(the quality limit the evidence binds)"
            )
        _check_pe(self)
        assumption_ranges(self)  # unknown names, non-positive bounds, low > high: InputError naming the key
        if self.space.dram_gbps is not None and self.fixed.dram_type is None:
            raise ValueError("space.dram_gbps needs fixed.dram_type (whose energy per bit is charged)")
        if self.space.dram is not None:
            for t in as_choices(self.space.dram) or []:
                if t not in self.fixed.dram_units:
                    raise ValueError(
                        f"space.dram lists {t!r} but fixed.dram_units has no unit count for it "
                        f"(e.g. dram_units = {{ {t} = 1 }})"
                    )
        return self


def assumption_ranges(cfg: SweepConfig) -> dict[str, Assumption]:
    """The assumptions registry (ppa.assumptions) with the ranges the config's [assumptions] sets."""
    return with_ranges({k: (r.low, r.high) for k, r in cfg.assumptions.items()}, where="assumptions")


def _check_pe(cfg: SweepConfig) -> None:
    """Every PE the space can build is a valid hw.params.PEParams: the fixed widths with each
    sparsity choice and the deepest pipeline (so no trial fails on it later)."""
    pipes = as_choices(cfg.space.pipeline)
    # as_choices gives None for a Range axis only
    deepest = int(max(pipes)) if pipes is not None else int(cast(Range, cfg.space.pipeline).max)
    for s in as_choices(cfg.space.sparsity) or []:
        n, m, _ = parse_sparsity(s)
        try:
            PEParams(
                act_bits=cfg.fixed.act_bits,
                weight_bits=cfg.fixed.weight_bits,
                acc_bits=cfg.fixed.acc_bits,
                n=n,
                m=m,
                pipeline=deepest,
            )
        except InputError as exc:
            raise ValueError(f"fixed/space: the PE of sparsity {s!r} is not buildable: {exc}") from None


def parse_config(data: dict[str, Any], source: str = "<memory>") -> SweepConfig:
    """Validate a config dict (as read from TOML); raise InputError naming ``source`` and the key."""
    try:
        cfg = SweepConfig.model_validate({**data}, strict=True)  # strict: no string for a number
    except ValidationError as exc:
        raise InputError(one_line_error(exc, SweepConfig), where=source) from None
    except InputError as exc:
        raise InputError(str(exc), where=source) from None
    except RecursionError:
        raise InputError("nested too deeply", where=source) from None
    object.__setattr__(cfg, "source", source)
    for w in cfg.workload:
        _check_workload(w, source)
    _check_liberty(cfg, source)
    return cfg


def _check_liberty(cfg: SweepConfig, source: str) -> None:
    """fixed.liberty: a path relative to the config file's directory becomes absolute; the file is
    read (header) now so a bad library fails before anything runs, naming the file."""
    f = cfg.fixed
    if f.liberty is None:
        if f.liberty_node is not None:
            raise InputError("fixed.liberty_node needs fixed.liberty", where=source)
        return
    if asap7.is_keyword(f.liberty):  # the ASAP7 7 nm library (ppa.liberty.asap7), unpacked into the cache
        p = Path(asap7.merged_liberty_path())
    else:
        p = Path(f.liberty).expanduser()
        if not p.is_absolute() and source not in ("<memory>", ""):
            p = Path(source).resolve().parent / p
        object.__setattr__(f, "liberty", str(p))
    lib = load_liberty(p, f.liberty_node)
    if lib.node_nm is None:
        raise InputError(
            "the Liberty file does not state its process node: give fixed.liberty_node (or --liberty-node)",
            where=str(p),
        )


def with_liberty(cfg: SweepConfig, liberty: str | None, liberty_node: int | None) -> SweepConfig:
    """``cfg`` with fixed.liberty / fixed.liberty_node replaced where given (the sweep's --liberty
    and --liberty-node), validated like the file's own."""
    if liberty is None and liberty_node is None:
        return cfg
    data = cfg.model_dump(mode="json", exclude={"source"})
    if liberty is not None:
        data["fixed"]["liberty"] = (
            liberty if asap7.is_keyword(liberty) else str(Path(liberty).expanduser().resolve())
        )
    if liberty_node is not None:
        data["fixed"]["liberty_node"] = liberty_node
    return parse_config(data, source=getattr(cfg, "source", "<memory>"))


def _check_workload(w: Workload, source: str) -> None:
    """Check the workload name (and params) against the workload library (sim.workloads); an onnx or
    hf_config path relative to the config file becomes absolute and the file is read now."""
    imp = w.importer()
    if imp is not None:
        p = Path(w.option(importer_field(imp))).expanduser()
        if not p.is_absolute() and source not in ("<memory>", ""):
            p = Path(source).resolve().parent / p
        w.set_option(importer_field(imp), str(p))
    try:
        w.build()
    except InputError as exc:
        msg = str(exc).removeprefix(f"{exc.where}: ") if exc.where else str(exc)
        at = exc.where or ""
        for flag in ("--seq", "--batch", "--context", "--phase"):  # simulate's flags are params keys here
            at, msg = at.replace(flag, f"params.{flag[2:]}"), msg.replace(flag, f"params.{flag[2:]}")
        # the file (a missing file, or where in it) stays named
        raise InputError(
            f"workload {w.name!r}: {at + ': ' if at and at != 'workload' else ''}{msg}", where=source
        ) from None
    except TypeError as exc:
        raise InputError(f"workload {w.name!r}: bad params: {exc}", where=source) from None
    except (ValueError, ArithmeticError, MemoryError) as exc:
        raise InputError(
            f"workload {w.name!r}: bad params ({type(exc).__name__}: {exc})", where=source
        ) from None


def load_config(path: str | Path) -> SweepConfig:
    """Read and validate a sweep config TOML file."""
    p = Path(path)
    try:
        if p.exists() and not p.is_file():  # a directory, FIFO or device (/dev/zero) is not a config
            raise InputError("not a regular file", where=str(p))
        if p.exists() and p.stat().st_size > MAX_CONFIG_BYTES:
            raise InputError(f"config larger than {MAX_CONFIG_BYTES // 2**20} MiB", where=str(p))
        raw = p.read_bytes()
    except OSError as exc:
        raise InputError(f"cannot read config: {exc.strerror}", where=str(p)) from None
    try:
        data = tomllib.loads(raw.decode("utf-8"))
    except (tomllib.TOMLDecodeError, UnicodeDecodeError) as exc:
        raise InputError(f"not valid TOML: {exc}", where=str(p)) from None
    except RecursionError:
        raise InputError("not valid TOML: nested too deeply", where=str(p)) from None
    return parse_config(data, source=str(p))


def quality_evidence_kind(cfg: SweepConfig) -> str:
    """What the quality limit binds on: ``"model"`` (the team's [quality] weights + eval),
    ``"proxy"`` (a reference model of the workload family) or ``"none"`` (no quality limit)."""
    if cfg.limits.max_quality_delta is None:
        return "none"
    return "model" if cfg.quality is not None and cfg.quality.weights is not None else "proxy"


def axis_values(cfg: SweepConfig) -> dict[str, list[Any]]:
    """The discretised values of each active axis, in AXES order (choice lists as given, ranges by
    ``step`` or ``grid_points``): the grid's axes, the dense twins' array shapes, the memo's steps."""
    out: dict[str, list[Any]] = {}
    for name in cfg.space.active_axes():
        choices = axis_choices(cfg.space, name)
        if choices is not None:
            out[name] = list(choices)
            continue
        try:
            out[name] = cfg.space.axis(name).grid(integer=is_integer_axis(name))
        except InputError as exc:
            raise InputError(str(exc), where=f"{cfg.source}: space.{name}") from None
    return out


def grid_size(cfg: SweepConfig) -> int:
    """The number of points of the discretised space: the product of :func:`axis_values`' lengths,
    less the OS points with ``double_buffer`` true (explore.space.double_buffered)."""
    vals = axis_values(cfg)
    n = math.prod(len(v) for v in vals.values())
    if "double_buffer" in vals:  # the share of the points that are OS with double_buffer true
        n -= (
            n
            * vals["dataflow"].count("os")
            * vals["double_buffer"].count(True)
            // (len(vals["dataflow"]) * len(vals["double_buffer"]))
        )
    return n


#: [serving] fields added after studies were stored, with their defaults (left out of the fingerprint
#: at the default, so a study stored before them still loads).
_SERVING_ADDED = {"seeds": 5, "warmup_fraction": 0.1, "cold_start_ms": 0.0, "output_tokens": 128}


def config_fingerprint(cfg: SweepConfig) -> str:
    """Hash of everything that defines the study's problem (not trials/seed/sampler/name)."""
    # [owners] and [context] name people and tags, not the problem: they never change the fingerprint;
    # nor do [decision] and [assumptions], which judge the trials and never change one
    body = cfg.model_dump(
        mode="json", exclude={"study", "source", "owners", "context", "decision", "assumptions"}
    )
    if body.get("quality") is None:  # no [quality] section: the fingerprint of configs written before it
        body.pop("quality", None)
    else:  # the time limit does not change the problem; method and calibration unset: as before them
        q = body["quality"]
        q.pop("hook_timeout")
        for k in ("method", "calibration"):
            if q[k] is None:
                q.pop(k)
        if not q.get("prune_lm_head"):  # added later: at its default, as before it
            q.pop("prune_lm_head", None)
    for w in body["workload"]:  # prune_lm_head added later: at its default, as before it
        if not w.get("prune_lm_head"):
            w.pop("prune_lm_head", None)
    for k, v in _SERVING_ADDED.items():  # serving fields added later: at their default, as before them
        if body["serving"].get(k) == v:
            body["serving"].pop(k)
    body["space"] = {k: v for k, v in body["space"].items() if not (k in ADDED_AXES and v is None)}
    return hashlib.sha256(json.dumps(body, sort_keys=True).encode()).hexdigest()
