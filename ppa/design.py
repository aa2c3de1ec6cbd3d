"""What ppa.model.estimate costs and what it returns: a design point (:class:`DesignPoint`, checked
by its ``validate``), the activity of a workload on it as explore/ passes it in from sim/
(:class:`WorkloadActivity`), the estimate (:class:`PPAResult`), and the frozen result of each phase
of ppa.model.estimate: operating point -> area -> activity -> power -> thermal
(:class:`OperatingPoint`, :class:`AreaBreakdown`, :class:`Workload`, :class:`Power`, :class:`Thermal`)."""

from __future__ import annotations

import math
from dataclasses import dataclass, field, fields

from hw.errors import InputError
from hw.params import PEParams
from ppa import dram, sram, tech, thermal
from ppa.array_cost import pe_kind
from ppa.references import VT_CHOICES, VtFlavour, vt_flavour
from ppa.timing.stage import StageTiming, resolve_liberty


@dataclass
class WorkloadActivity:
    """What explore/ passes in from sim/ for one workload on one design (plain numbers)."""

    cycles: float  # runtime in cycles at the design's clock
    effective_macs: float  # dense-equivalent MACs of the workload
    performed_multiplies: float = 0.0  # multiplies the PEs actually performed (information)
    pe_busy_fraction: float = 1.0  # average fraction of PE-cycles doing useful work
    sram_read_bytes: float = 0.0
    sram_write_bytes: float = 0.0
    dram_bytes: float = 0.0
    #: per buffer (ifmap, filter, ofmap): (read bytes, write bytes), as sim/ counts them; with three
    #: buffer macros (DesignPoint.sram_buffers_kb) each buffer's traffic is costed on its own macro
    sram_buffer_bytes: dict[str, tuple[float, float]] | None = None
    weight_tiles: float | None = (
        None  # weight tiles shifted into a WS array; None: one per W_HOLD busy cycles [A]
    )
    #: operations the vector unit performs, by class (sim.vector: alu, exp, div, red); None: it is idle
    vector_ops: dict[str, float] | None = None

    def __post_init__(self):
        for name in (
            "cycles",
            "effective_macs",
            "performed_multiplies",
            "sram_read_bytes",
            "sram_write_bytes",
            "dram_bytes",
        ):
            v = getattr(self, name)
            if not (isinstance(v, (int, float)) and math.isfinite(v) and v >= 0):
                raise InputError(f"must be a non-negative number, got {v!r}", where=f"activity.{name}")
        if self.cycles <= 0:
            raise InputError("must be positive", where="activity.cycles")
        if self.weight_tiles is not None and not (
            isinstance(self.weight_tiles, (int, float))
            and math.isfinite(self.weight_tiles)
            and self.weight_tiles >= 0
        ):
            raise InputError(
                f"must be a non-negative number, got {self.weight_tiles!r}", where="activity.weight_tiles"
            )
        if not 0.0 <= self.pe_busy_fraction <= 1.0:
            raise InputError(
                f"must be in [0, 1], got {self.pe_busy_fraction}", where="activity.pe_busy_fraction"
            )


@dataclass
class DesignPoint:
    rows: int = 16
    cols: int = 16
    sram_kb: float = 256.0
    clock_mhz: float | None = None
    node_nm: int = 7
    act_bits: int = 8
    weight_bits: int = 8
    acc_bits: int = 32
    n: int = 2
    m: int = 4
    sparse: bool = True
    pipeline: int = 1
    dram: str = "hbm2"
    dram_units: int = 1
    cooling: str = "air"
    theta_ja: float | None = None  # K/W; None: from the cooling and the die area
    t_ambient_c: float = 25.0
    tj_max_c: float = thermal.TJ_MAX_C_DEFAULT
    sram_banks: int = 1
    voltage_v: float | None = None  # force a supply voltage (else chosen from the clock)
    sram_voltage_v: float | None = None  # SRAM rail; None: max(SRAM Vmin, logic V) (ppa.tech.sram_voltage)
    sram_buffers_kb: tuple[float, float, float] | None = None  # (ifmap, filter, ofmap) KB; None: one macro
    sram_model: str = sram.SRAM_MODEL_DEFAULT  # SRAM energy source (ppa.sram): "silicon" or "cacti"
    liberty: str | None = None  # a Liberty file to time the hardware with (else osu018 when installed)
    liberty_node_nm: int | None = None  # the Liberty file's process node, when the file does not state it
    dataflow: str = "ws"  # ws, os (each costed from its own array RTL) or is (costed as the WS array)
    dense_path: bool = (
        False  # with sparse: the sparse PE with a full-rate dense path (hw SparsePE dense_path)
    )
    #: gate the clock of the WS stationary weight registers while they hold (one ICG per PE); False:
    #: every flip-flop clocked every cycle
    clock_gating: bool = True
    precision: str = "int8"  # operand format (hw.precision): int8, int4, fp8-e4m3, fp8-e5m2, fp16, bf16
    #: lanes of the vector unit beside the array (hw.vector.VectorLane at act_bits, ppa.vector_cost);
    #: None: one per column (sim.perf.ArrayConfig's default), 0: no vector unit
    vector_lanes: int | None = None
    #: bits of each vector lane (hw.vector.VectorLane width, 4..32); None: act_bits. A post-processing
    #: unit that works on wider data than the array's operands (e.g. NVDLA's SDP on 16-bit partial
    #: results) sets it
    vector_bits: int | None = None
    #: a shadow weight set per PE (hw.array.SparseArray(double_buffer=True)); WS, and IS costed as WS
    double_buffer: bool = False
    #: threshold-voltage flavour of the logic cells (ppa.references VT_FLAVOURS: rvt, lvt, slvt); None: the
    #: lowest-leakage flavour that meets the clock (rvt with no clock asked)
    vt: str | None = None

    @property
    def effective_vector_bits(self) -> int:
        return self.act_bits if self.vector_bits is None else int(self.vector_bits)

    @property
    def effective_vector_lanes(self) -> int:
        return self.cols if self.vector_lanes is None else int(self.vector_lanes)

    @property
    def kind(self) -> str:
        """The PE kind: ``"sparse"``, ``"dense"`` or ``"dense_path"``."""
        return pe_kind(self.sparse, self.dense_path)

    @property
    def cost_dataflow(self) -> str:
        """The array RTL the design is costed from: ws or os (hw/ has no IS array: IS costs as WS)."""
        return "os" if self.dataflow == "os" else "ws"

    def validate(self) -> PEParams:
        for name in ("rows", "cols", "dram_units", "sram_banks"):
            v = getattr(self, name)
            if isinstance(v, bool) or not isinstance(v, int) or v < 1:
                raise InputError(
                    f"must be a positive integer, got {v!r}", where=f"--{name.replace('_', '-')}"
                )
        if self.rows > 256 or self.cols > 256:
            raise InputError("rows and cols must be at most 256", where="--rows/--cols")
        if not isinstance(self.sram_kb, (int, float)) or not math.isfinite(self.sram_kb) or self.sram_kb < 0:
            raise InputError(f"must be a non-negative number of KB, got {self.sram_kb!r}", where="--sram-kb")
        if self.clock_mhz is not None and not (
            isinstance(self.clock_mhz, (int, float)) and math.isfinite(self.clock_mhz) and self.clock_mhz > 0
        ):
            raise InputError(f"must be a positive frequency, got {self.clock_mhz!r}", where="--clock-mhz")
        tech.check_node(self.node_nm)
        if self.dataflow not in ("ws", "os", "is"):
            raise InputError(f"must be ws, os or is, got {self.dataflow!r}", where="--dataflow")
        if self.vt is not None and self.vt not in VT_CHOICES:
            raise InputError(
                f"must be {', '.join(VT_CHOICES[:-1])} or {VT_CHOICES[-1]}, got {self.vt!r}", where="--vt"
            )
        if not isinstance(self.clock_gating, bool):
            raise InputError(f"must be True or False, got {self.clock_gating!r}", where="clock_gating")
        if not isinstance(self.dense_path, bool) or not isinstance(self.sparse, bool):
            raise InputError("sparse and dense_path must be True or False", where="--dense-path")
        if not isinstance(self.double_buffer, bool):
            raise InputError(f"must be True or False, got {self.double_buffer!r}", where="--double-buffer")
        if self.double_buffer and self.dataflow == "os":
            raise InputError(
                "double-buffered weights need stationary weights (ws or is); os streams them",
                where="--double-buffer",
            )
        if self.dense_path and not self.sparse:
            raise InputError(
                "the dense path is a mode of the sparse PE: give an N:M sparsity, not dense",
                where="--dense-path",
            )
        if self.vector_lanes is not None and (
            isinstance(self.vector_lanes, bool)
            or not isinstance(self.vector_lanes, int)
            or self.vector_lanes < 0
        ):
            raise InputError(
                f"must be a non-negative integer, got {self.vector_lanes!r}", where="--vector-lanes"
            )
        if self.vector_bits is not None and (
            isinstance(self.vector_bits, bool)
            or not isinstance(self.vector_bits, int)
            or not 4 <= self.vector_bits <= 32
        ):
            raise InputError(
                f"must be an integer of 4..32 bits, got {self.vector_bits!r}", where="vector_bits"
            )
        if self.voltage_v is not None:
            tech.node(self.node_nm, self.voltage_v)
        if self.sram_voltage_v is not None:
            tech.sram_voltage(self.node_nm, tech.nominal_voltage(self.node_nm), self.sram_voltage_v)
        if self.sram_buffers_kb is not None:
            b = self.sram_buffers_kb
            if (
                not isinstance(b, (tuple, list))
                or len(b) != 3
                or not all(
                    isinstance(x, (int, float)) and not isinstance(x, bool) and math.isfinite(x) and x >= 0
                    for x in b
                )
            ):
                raise InputError(
                    f"must be three non-negative KB figures (ifmap, filter, ofmap), got {b!r}",
                    where="sram_buffers_kb",
                )
        if self.sram_model not in sram.SRAM_MODELS:
            raise InputError(
                f"unknown SRAM model {self.sram_model!r}; known: {', '.join(sram.SRAM_MODELS)}",
                where="--sram-model",
            )
        dram.dram(self.dram)
        if self.cooling not in thermal.COOLING_LIMIT_W_PER_MM2:
            raise InputError(f"unknown cooling {self.cooling!r}; known: air, liquid", where="--cooling")
        if self.theta_ja is not None and not (isinstance(self.theta_ja, (int, float)) and self.theta_ja > 0):
            raise InputError(f"must be positive (K/W), got {self.theta_ja!r}", where="--theta-ja")
        if not -60 <= self.t_ambient_c <= 150:
            raise InputError(f"ambient {self.t_ambient_c} C outside -60..150 C", where="--t-ambient")
        resolve_liberty(self)
        return self.pe_params()

    def pe_params(self) -> PEParams:
        """The PE parameters; with a precision other than int8 the default widths (8/8/32) follow it."""
        if self.precision == "int8":
            return PEParams(self.act_bits, self.weight_bits, self.acc_bits, self.n, self.m, self.pipeline)
        return PEParams(
            None if self.act_bits == 8 else self.act_bits,
            None if self.weight_bits == 8 else self.weight_bits,
            None if self.acc_bits == 32 else self.acc_bits,
            self.n,
            self.m,
            self.pipeline,
            precision=self.precision,
        )


@dataclass
class PPAResult:
    design: DesignPoint
    area_mm2: float
    area_breakdown_mm2: dict
    fmax_mhz: float  # the best over the modelled voltage range (the delay fits need not be monotonic)
    fmax_at_voltage_mhz: float
    voltage_v: float
    clock_mhz: float
    power_w: float | None
    power_breakdown_w: dict
    energy_per_mac_pj: float | None
    peak_tops: float
    tj_c: float | None
    power_density_w_mm2: float | None
    feasible: bool
    infeasible_reasons: list[str]
    notes: list[str] = field(default_factory=list)
    details: dict = field(default_factory=dict)

    def to_json(self) -> dict:
        return {
            "area_mm2": self.area_mm2,
            "area_breakdown_mm2": self.area_breakdown_mm2,
            "fmax_mhz": self.fmax_mhz,
            "fmax_at_voltage_mhz": self.fmax_at_voltage_mhz,
            "voltage_v": self.voltage_v,
            "clock_mhz": self.clock_mhz,
            "power_w": self.power_w,
            "power_breakdown_w": self.power_breakdown_w,
            "energy_per_mac_pj": self.energy_per_mac_pj,
            "peak_tops": self.peak_tops,
            "tj_c": self.tj_c,
            "power_density_w_mm2": self.power_density_w_mm2,
            "feasible": self.feasible,
            "infeasible_reasons": list(self.infeasible_reasons),
            "notes": list(self.notes),
            "details": self.details,
        }


@dataclass(frozen=True)
class OperatingPoint:
    """Where the design runs: the stage timing, voltage, clock, fmax at that voltage and at the top of
    the range, the published-silicon cap (or None), the node at that voltage and the clock in Hz."""

    timing: StageTiming
    v: float
    clk: float
    f_at_v: float
    f_top: float
    silicon_mhz: float | None
    nd: tech.Node
    f_hz: float
    vt: str = "rvt"  # the cells' threshold-voltage flavour (ppa.references)
    vt_choice: str = "given"  # how it was chosen

    @property
    def flavour(self) -> VtFlavour:
        return vt_flavour(self.vt)


@dataclass(frozen=True)
class AreaBreakdown:
    """The area phase: array, decoder, SRAM, vector, control and PHY areas (mm^2) and what they rest on."""

    tr_total: float
    a_t: float
    pe_mm2: float
    dec_mm2: float
    v_sram: float
    macros: list[tuple[str, sram.SramCost]]
    sram_mm2: float
    lanes: int
    vlane: object
    vec_tr: float
    vec_mm2: float
    ctrl_tr: float
    ctrl_mm2: float
    ph: object
    phy_mm2: float
    other_mm2: float
    area: float
    min_die: float
    die_phy_limited: bool


@dataclass(frozen=True)
class Workload:
    """The activity phase: effective MACs per busy PE-cycle, the busy fraction, runtime (s) and cycles,
    effective MACs and the SRAM read/write and DRAM bytes moved in that runtime."""

    mac_per_pe_cycle: float
    busy: float
    runtime_s: float
    cycles: float
    eff_macs: float
    sram_rd: float
    sram_wr: float
    dram_b: float


@dataclass(frozen=True)
class Power:
    """The power phase: toggle energy, the timing library's energies (or None), the switching-energy
    sizing factor and its source, dynamic parts (PE, edge registers, weight load, their sum; vector),
    flip-flops, clock energy per flip-flop cycle, the clock gating and clock power, SRAM power and its
    leakage at LEAKAGE_T_REF_C, the DRAM type, its power and bandwidth (GB/s), PHY power, the largest
    SRAM macro (or None). Watts unless named otherwise."""

    e_t: float
    lib_e: object
    sizing_factor: float
    sizing_source: str
    pe_dyn_w: float
    edge_dyn_w: float
    load_w: float
    dyn_w: float
    vec_w: float
    ffs: float
    e_ff: float
    gate: object
    clk_w: float
    sram_w: float
    sram_leak_ref: float
    dd: object
    dram_w: float
    dram_bw: float
    phy_w: float
    largest: object


@dataclass(frozen=True)
class Thermal:
    """The thermal phase: logic and total leakage at LEAKAGE_T_REF_C, on-die dynamic power, theta_ja,
    the junction solution, and (None on thermal runaway) leakage, total power, density, pJ per MAC."""

    logic_leak_ref: float
    leak_ref: float
    on_die_dyn: float
    theta: float
    th: thermal.ThermalResult
    leak_w: float | None
    total: float | None
    density: float | None
    epm: float | None


def fields_of(phase) -> tuple:
    """A phase's fields in declaration order (not dataclasses.astuple, which copies nested dataclasses)."""
    return tuple(getattr(phase, f.name) for f in fields(phase))
