"""One design point of the array (:class:`ArrayConfig`, its parameters checked) and the design-point
columns the vectorised cycle model (:mod:`sim.perf`) reads: from a list of configs
(:func:`design_arrays`) or from a grid of parameter arrays (:func:`grid_design_arrays`). The SRAM
split shared by sim and ppa is :func:`split_sram_kb`.
"""

from __future__ import annotations

import math
from dataclasses import dataclass, fields

import numpy as np

from hw.errors import InputError
from hw.kinds import kind_of
from hw.nm import check_nm
from hw.params import MAX_ACC_BITS, MAX_PIPELINE
from sim.inputs import MAX_SIM_ARRAY_SIDE

DATAFLOWS = ("ws", "os", "is")
MODES = ("sparsepe", "scalesim")
#: Per-buffer size when neither the total nor that buffer is given: SCALE-Sim's stock scale.cfg
#: (Ifmap/Filter/OfmapSramSzkB = 64) [P] /work/shared/reference/scalesim-configs/scale.cfg.
DEFAULT_BUFFER_KB = 64.0


def split_sram_kb(
    sram_kb: float | None = None,
    ifmap_kb: float | None = None,
    filter_kb: float | None = None,
    ofmap_kb: float | None = None,
) -> tuple[float, float, float]:
    """The SRAM split shared by sim and ppa: (ifmap, filter, ofmap) KiB of the three buffers.

    Rule: a buffer whose size is given keeps it; the buffers not given share what is left of
    ``sram_kb`` equally (``sram_kb`` alone: thirds). Without ``sram_kb`` a missing buffer is
    :data:`DEFAULT_BUFFER_KB`. The three always add up to ``sram_kb`` when it is given; giving all
    three and a ``sram_kb`` that differs from their sum is an error, as is a remainder <= 0.
    [A] equal thirds: no per-workload tuning of the split (SCALE-Sim's stock configs use equal
    buffers too); ppa costs each buffer as its own macro of this size."""
    parts = [ifmap_kb, filter_kb, ofmap_kb]
    given = [float(p) for p in parts if p is not None]
    missing = 3 - len(given)
    if sram_kb is None:
        fi, ff, fo = (float(p) if p is not None else DEFAULT_BUFFER_KB for p in parts)
        return fi, ff, fo
    rest = float(sram_kb) - sum(given)
    if missing == 0:
        if abs(rest) > 1e-9 * max(1.0, float(sram_kb)):
            raise InputError(
                f"ifmap_kb + filter_kb + ofmap_kb = {sum(given):g} differs from sram_kb = {sram_kb:g}",
                where="parameter sram_kb",
            )
        return given[0], given[1], given[2]
    if rest <= 0:
        raise InputError(
            f"the given buffers ({sum(given):g} KiB) leave nothing of sram_kb = {sram_kb:g} for the "
            f"other {missing}",
            where="parameter sram_kb",
        )
    fi, ff, fo = (float(p) if p is not None else rest / missing for p in parts)
    return fi, ff, fo


@dataclass(frozen=True)
class ArrayConfig:
    """One design point. SRAM sizes in KiB, split by :func:`split_sram_kb` (``sram_split_kb``).
    Defaults describe the sparsepe sparse PE: 2:4, ``pe_k = N`` (two kept weights per PE per
    cycle), sparse-only PE (dense fallback at N/M of the rate), INT8, 32-bit accumulator, one
    pipeline stage, two banks of one 64 B port per buffer."""

    rows: int = 32  # 32 x 32 and 3 x 64 KiB SRAM: SCALE-Sim's stock scale.cfg
    cols: int = 32
    sram_kb: float | None = None
    ifmap_kb: float | None = None
    filter_kb: float | None = None
    ofmap_kb: float | None = None
    clock_mhz: float = 1000.0  # [A] default operating point, not a published figure
    dram_gbps: float = 64.0  # [A] default DRAM bandwidth, not a published figure
    dataflow: str = "ws"
    n: int = 2
    m: int = 4
    sparse: bool = True
    pe_k: int | None = None
    dense_path: bool = False
    act_bits: int = 8
    weight_bits: int = 8
    mode: str = "sparsepe"
    port_words: tuple[float, float, float] | None = None
    # [P] hw.params.PEParams.acc_bits default: width of the RTL's out_acc, the width partial sums leave at
    acc_bits: int = 32
    # [P] hw.params.PEParams.pipeline default; hw.array.tile_cycles adds pipeline - 1 per tile
    pipeline: int = 1
    # [A] two banks per buffer: a double-buffered SRAM is a ping and a pong bank, so the DRAM fill of one
    # half and the array's access to the other each have a port (one single-port bank cannot double-buffer
    # at full rate). 2 x 64 B/cycle keeps a 32 x 32 WS array's partial-sum round trip (2 x 32 x 4 B) fed.
    sram_banks: int = 2
    # [S] 64 B = the 512-bit, 1 RW port block of the CACTI 7 macro ppa costs (published-figures.md
    # section 5); None = no SRAM port limit (SCALE-Sim's default: layout evaluation off)
    sram_port_bytes: float | None = 64.0
    # The vector unit beside the array (sim.vector: recipes, timing, sources). None = one lane per array
    # column [A] (TPUv2/v3 size the vector unit to the MXU width [S] Norrie et al., IEEE Micro 2021)
    vector_lanes: int | None = None
    # ops per lane per cycle by operator class: ALU (add/mul/compare) and reduction steps 1 [A] (one
    # pipelined adder/comparator per lane); exp and divide/rsqrt 1/4 [P] CUDA C++ Programming Guide,
    # arithmetic-instruction throughput, cc 8.0: 16 special-function results vs 64 fp32 FMA per clock per SM
    vector_alu_rate: float = 1.0
    vector_exp_rate: float = 0.25
    vector_div_rate: float = 0.25
    vector_red_rate: float = 1.0
    # bytes per cycle between the vector unit and SRAM; None = the ofmap buffer's ports (sram_banks x
    # sram_port_bytes) [A]: the vector unit works on the array's outputs where they land
    vector_sram_bytes: float | None = None
    # False: vector work serialises with the array (a layer's operators wait for its GEMM); True: the vector
    # unit runs one layer's operators while the array runs the next layer's GEMMs (network = max of the two) [A]
    vector_overlap: bool = False
    # [P] hw.array.SparseArray(double_buffer=True): a shadow weight set per PE, so a WS (or IS) fold costs
    # max(weight load, stream) and consecutive folds' fill and drain overlap (sim.perf's docstring)
    double_buffer: bool = False

    def __post_init__(self):
        def bad(param, msg):
            raise InputError(msg, where=f"parameter {param}")

        def is_int(v):
            return isinstance(v, (int, np.integer)) and not isinstance(v, bool)

        for p in ("rows", "cols", "sram_banks"):
            v = getattr(self, p)
            if not is_int(v) or v <= 0:
                bad(p, f"must be a positive integer, got {v!r}")
            if p != "sram_banks" and v > MAX_SIM_ARRAY_SIDE:
                bad(p, f"must be at most {MAX_SIM_ARRAY_SIDE} (sim.inputs.MAX_SIM_ARRAY_SIDE), got {v!r}")
        if self.sram_banks > 64:
            bad("sram_banks", f"must be at most 64 banks per buffer, got {self.sram_banks!r}")
        # [A] a clock of 1 MHz..10 GHz (explore.config's limit); DRAM from 1 MB/s (explore.space's
        # lowest; a denormal bandwidth would make the cycle count infinite) up to 1e9 GB/s, a finite
        # stand-in for "no DRAM bound" (1e6 GB/s isolates compute in tests and benchmarks)
        for p, lo, hi in (("clock_mhz", 1.0, 1e4), ("dram_gbps", 1e-3, 1e9)):
            v = getattr(self, p)
            if not (isinstance(v, (int, float)) and v > 0 and math.isfinite(v)):
                bad(p, f"must be a positive number, got {v!r}")
            if not lo <= v <= hi:
                bad(p, f"must be in {lo:g}..{hi:g}, got {v!r}")
        for p in ("sram_kb", "ifmap_kb", "filter_kb", "ofmap_kb"):
            v = getattr(self, p)
            if v is not None and not (
                isinstance(v, (int, float)) and v > 0 and math.isfinite(v) and v <= 2**20
            ):
                bad(p, f"must be a positive number of KiB up to 2**20 (1 GiB), got {v!r}")
        if self.dataflow not in DATAFLOWS:
            bad("dataflow", f"unknown dataflow {self.dataflow!r} (ws, os or is)")
        if self.mode not in MODES:
            bad("mode", f"unknown mode {self.mode!r} ({', '.join(MODES)})")
        try:
            check_nm(self.n, self.m)
        except InputError as exc:
            bad("n:m", str(exc))
        if self.pe_k is not None and (not isinstance(self.pe_k, (int, np.integer)) or self.pe_k <= 0):
            bad("pe_k", f"must be a positive integer, got {self.pe_k!r}")
        for p in ("act_bits", "weight_bits"):
            if getattr(self, p) not in (4, 8, 16, 32):
                bad(p, f"must be 4, 8, 16 or 32, got {getattr(self, p)!r}")
        lo = self.act_bits + self.weight_bits
        if not is_int(self.acc_bits) or not lo <= self.acc_bits <= MAX_ACC_BITS:
            bad(
                "acc_bits",
                f"must be an integer from act_bits + weight_bits = {lo} (one product) to {MAX_ACC_BITS}, "
                f"got {self.acc_bits!r}",
            )
        if not is_int(self.pipeline) or not 1 <= self.pipeline <= MAX_PIPELINE:
            bad(
                "pipeline",
                f"must be an integer from 1 to {MAX_PIPELINE} register stages, got {self.pipeline!r}",
            )
        v = self.sram_port_bytes
        if v is not None and not (isinstance(v, (int, float)) and not isinstance(v, bool) and v > 0):
            bad(
                "sram_port_bytes",
                f"must be a positive number of bytes per cycle (or None: no limit), got {v!r}",
            )
        if self.port_words is not None and (len(self.port_words) != 3 or min(self.port_words) <= 0):
            bad(
                "port_words",
                f"must be three positive words/cycle (ifmap, filter, ofmap), got {self.port_words!r}",
            )
        if self.vector_lanes is not None and (not is_int(self.vector_lanes) or self.vector_lanes <= 0):
            bad(
                "vector_lanes",
                f"must be a positive integer (or None: one lane per column), got {self.vector_lanes!r}",
            )
        for p in ("vector_alu_rate", "vector_exp_rate", "vector_div_rate", "vector_red_rate"):
            v = getattr(self, p)
            if isinstance(v, bool) or not (isinstance(v, (int, float)) and v > 0 and math.isfinite(v)):
                bad(p, f"must be a positive number of ops per lane per cycle, got {v!r}")
        v = self.vector_sram_bytes
        if v is not None and (isinstance(v, bool) or not (isinstance(v, (int, float)) and v > 0)):
            bad("vector_sram_bytes", f"must be a positive number of bytes per cycle (or None), got {v!r}")
        if not isinstance(self.double_buffer, (bool, np.bool_)):
            bad("double_buffer", f"must be True or False, got {self.double_buffer!r}")
        if self.double_buffer and self.dataflow == "os":
            bad(
                "double_buffer", "double-buffered weights need stationary weights (ws or is); os streams them"
            )
        if self.double_buffer and self.mode == "scalesim":
            bad("double_buffer", "mode scalesim reproduces SCALE-Sim's fold, which has no double buffering")
        _ = self.sram_split_kb  # computing the split checks it (split_sram_kb raises)

    @property
    def effective_pe_k(self) -> int:
        if self.pe_k is not None:
            return int(self.pe_k)
        if self.mode == "scalesim":
            return 1
        # the kind's multipliers (hw.kinds): N stored weights a cycle on the sparse-only PE; M on the
        # dense PE and on the sparse PE with a dense path (M/N N:M groups or one dense group of M a
        # cycle, so M stored weights a cycle in both modes)
        return int(kind_of(self.sparse, self.dense_path and self.sparse).weights(self.n, self.m))

    @property
    def effective_vector_lanes(self) -> int:
        return int(self.vector_lanes) if self.vector_lanes is not None else int(self.cols)

    @property
    def sram_split_kb(self) -> tuple[float, float, float]:
        """(ifmap, filter, ofmap) KiB, by :func:`split_sram_kb`: the sizes ppa should cost."""
        return split_sram_kb(self.sram_kb, self.ifmap_kb, self.filter_kb, self.ofmap_kb)

    @property
    def sram_total_kb(self) -> float:
        return float(sum(self.sram_split_kb))

    @property
    def sram_bytes_per_cycle(self) -> float:
        """Port bandwidth of one buffer (bytes/cycle): banks x port width; inf without a limit
        (``sram_port_bytes=None``) and in ``mode="scalesim"`` (SCALE-Sim has none by default)."""
        if self.sram_port_bytes is None or self.mode == "scalesim":
            return math.inf
        return float(self.sram_banks * self.sram_port_bytes)

    @property
    def dram_bytes_per_cycle(self) -> float:
        return self.dram_gbps * 1e9 / (self.clock_mhz * 1e6)


_DESIGN_KEYS = (
    "rows",
    "cols",
    "ifmap_kb",
    "filter_kb",
    "ofmap_kb",
    "clock_mhz",
    "dram_gbps",
    "dataflow",
    "n",
    "m",
    "sparse",
    "pe_k",
    "dense_path",
    "act_bits",
    "weight_bits",
    "acc_bits",
    "pipeline",
    "sram_banks",
    "sram_port_bytes",
    "scalesim",
    "port_if",
    "port_f",
    "port_of",
    "has_ports",
    "vector_lanes",
    "vector_alu_rate",
    "vector_exp_rate",
    "vector_div_rate",
    "vector_red_rate",
    "vector_sram_bytes",
    "vector_overlap",
    "double_buffer",
)


def design_arrays(archs: list[ArrayConfig]) -> dict[str, np.ndarray]:
    """Design-point columns (shape (P, 1)) from a list of configs (``sram_port_bytes`` None -> inf)."""
    cols: dict[str, list] = {k: [] for k in _DESIGN_KEYS}
    for a in archs:
        fi, ff, fo = a.sram_split_kb
        pw = a.port_words or (1.0, 1.0, 1.0)
        vals = dict(
            rows=a.rows,
            cols=a.cols,
            ifmap_kb=fi,
            filter_kb=ff,
            ofmap_kb=fo,
            clock_mhz=a.clock_mhz,
            dram_gbps=a.dram_gbps,
            dataflow=DATAFLOWS.index(a.dataflow),
            n=a.n,
            m=a.m,
            sparse=a.sparse,
            pe_k=a.effective_pe_k,
            dense_path=a.dense_path,
            act_bits=a.act_bits,
            weight_bits=a.weight_bits,
            acc_bits=a.acc_bits,
            pipeline=a.pipeline,
            sram_banks=a.sram_banks,
            sram_port_bytes=math.inf if a.sram_port_bytes is None else float(a.sram_port_bytes),
            scalesim=a.mode == "scalesim",
            port_if=pw[0],
            port_f=pw[1],
            port_of=pw[2],
            has_ports=a.port_words is not None,
            vector_lanes=0 if a.vector_lanes is None else a.vector_lanes,  # 0: one lane per column
            vector_alu_rate=a.vector_alu_rate,
            vector_exp_rate=a.vector_exp_rate,
            vector_div_rate=a.vector_div_rate,
            vector_red_rate=a.vector_red_rate,
            vector_sram_bytes=0.0 if a.vector_sram_bytes is None else float(a.vector_sram_bytes),
            vector_overlap=a.vector_overlap,
            double_buffer=bool(a.double_buffer),
        )
        for k in _DESIGN_KEYS:
            cols[k].append(vals[k])
    return {k: np.asarray(v)[:, None] for k, v in cols.items()}


def _grid_pe_k(d: dict[str, np.ndarray]) -> np.ndarray:
    """Per design point, the multipliers of its PE kind (ArrayConfig.effective_pe_k, vectorised)."""
    sparse, dense_path = d["sparse"].astype(bool), d["dense_path"].astype(bool)
    pe_k = np.zeros(np.broadcast_shapes(sparse.shape, d["n"].shape), dtype=d["n"].dtype)
    for s in (True, False):
        for dp in (False, True):
            sel = (sparse == s) & (dense_path == dp)
            if sel.any():
                k = kind_of(s, dp and s).weights(d["n"], d["m"])
                pe_k = np.where(sel, k, pe_k)
    return pe_k


def grid_design_arrays(
    params: dict[str, np.ndarray | list], base: ArrayConfig | None = None
) -> tuple[dict[str, np.ndarray], int]:
    """Design-point columns (shape (P, 1)) and P from a grid of parameter arrays (the ``params`` and
    ``base`` of :func:`sim.perf.simulate_grid`), checked on whole arrays (the grid's own checks)."""
    base = base or ArrayConfig()
    if not params:
        raise InputError("no design parameters given", where="simulate_grid")
    arrs = {k: np.asarray(v) for k, v in params.items()}
    sizes = {a.shape[0] if a.ndim else 1 for a in arrs.values()}
    if len(sizes) != 1 or any(a.ndim != 1 for a in arrs.values()):
        raise InputError(
            f"all parameter arrays must be 1-D of equal length, got sizes {sorted(sizes)}",
            where="simulate_grid",
        )
    P = sizes.pop()
    allowed = {f.name for f in fields(ArrayConfig)} - {"mode", "port_words"}
    unknown = set(arrs) - allowed
    if unknown:
        raise InputError(f"unknown design parameter(s) {sorted(unknown)}", where="simulate_grid")
    if "sram_port_bytes" in arrs:
        arrs["sram_port_bytes"] = np.array(
            [np.inf if x is None else x for x in arrs["sram_port_bytes"]], float
        )
    if "vector_lanes" in arrs:  # None: one lane per column (design_arrays' 0)
        arrs["vector_lanes"] = np.array([0 if x is None else x for x in arrs["vector_lanes"]], np.int64)
        if np.any(arrs["vector_lanes"] < 0):
            raise InputError("vector_lanes must be positive", where="simulate_grid")
    if "vector_sram_bytes" in arrs:
        arrs["vector_sram_bytes"] = np.array(
            [0.0 if x is None else x for x in arrs["vector_sram_bytes"]], float
        )
    d = design_arrays([base])
    d = {k: np.repeat(v, P, axis=0) for k, v in d.items()}
    if "sram_kb" in arrs:
        given = [k for k in ("ifmap_kb", "filter_kb", "ofmap_kb") if k in arrs]
        missing = 3 - len(given)
        rest = arrs["sram_kb"].astype(float) - sum(arrs[k].astype(float) for k in given)
        if missing and np.any(rest <= 0):
            raise InputError(
                "the given buffers leave nothing of sram_kb for the others", where="simulate_grid"
            )
        if not missing and np.any(np.abs(rest) > 1e-9 * np.maximum(1.0, arrs["sram_kb"])):
            raise InputError("ifmap_kb + filter_kb + ofmap_kb differs from sram_kb", where="simulate_grid")
        for k in ("ifmap_kb", "filter_kb", "ofmap_kb"):
            if k not in arrs:
                d[k] = (rest / missing)[:, None]
    for k, v in arrs.items():
        if k == "sram_kb":
            continue
        if k == "dataflow":
            bad = set(np.unique(v)) - set(DATAFLOWS)
            if bad:
                raise InputError(f"unknown dataflow(s) {sorted(bad)} (ws, os or is)", where="simulate_grid")
            v = np.array([DATAFLOWS.index(x) for x in v])
        d[k] = v[:, None]
    if "pe_k" not in arrs and base.pe_k is None and base.mode != "scalesim":
        d["pe_k"] = _grid_pe_k(d)
    if np.any(d["rows"] <= 0) or np.any(d["cols"] <= 0):
        raise InputError("rows and cols must be positive", where="simulate_grid")
    if np.any((d["m"] % d["n"]) != 0) or np.any(d["n"] >= d["m"]) or np.any(d["m"] & (d["m"] - 1)):
        raise InputError("every N:M must have M a power of two, 1 <= N < M and N | M", where="simulate_grid")
    if np.any(
        (d["pipeline"] < 1) | (d["pipeline"] > MAX_PIPELINE) | (d["pipeline"] != np.floor(d["pipeline"]))
    ):
        raise InputError(f"pipeline must be an integer from 1 to {MAX_PIPELINE}", where="simulate_grid")
    if np.any((d["acc_bits"] < d["act_bits"] + d["weight_bits"]) | (d["acc_bits"] > MAX_ACC_BITS)):
        raise InputError(
            f"acc_bits must lie between act_bits + weight_bits and {MAX_ACC_BITS}", where="simulate_grid"
        )
    if np.any(d["sram_banks"] < 1) or not np.all(d["sram_port_bytes"] > 0):
        raise InputError(
            "sram_banks must be >= 1 and sram_port_bytes > 0 (inf: no limit)", where="simulate_grid"
        )
    for k in ("pipeline", "sram_banks"):
        d[k] = d[k].astype(np.int64)
    d["double_buffer"] = d["double_buffer"].astype(bool)
    if np.any(d["double_buffer"] & ((d["dataflow"] == DATAFLOWS.index("os")) | d["scalesim"].astype(bool))):
        raise InputError(
            "double_buffer needs stationary weights (ws or is) outside mode scalesim", where="simulate_grid"
        )
    return d, P
