"""Analytical cycle model of an R x C systolic array running N:M-sparse workloads.

One closed-form model, vectorised over (design points x layers) with numpy broadcasting: one cohesive
algorithm (array configuration, per-layer arrays, folding, traffic, stalls, totals) kept in one module.

Compute (stall-free) cycles follow SCALE-Sim v3's folding rules exactly (``scalesim/compute/
systolic_{ws,os,is}.py``: each fold is a block of demand-matrix lines; the reported count is the
last line's index, hence the ``- 1``), plus the RTL's pipeline latency. With ``steps`` =
reduction steps a PE row walks through and ``p`` = ``pipeline`` (PE register stages):

* WS: folds = ceil(steps/R) * ceil(N/C), lines per fold = 2R + C + M - 2 + (p - 1) (R to load
  weights, M activations, C-1 drain, R-1 skew, p-1 product registers)
* OS: folds = ceil(M/R) * ceil(N/C), lines per fold = steps + R + C - 2 + (p - 1)
* IS: folds = ceil(steps/R) * ceil(M/C), lines per fold = 2R + C + N - 2 + (p - 1)

The ``p - 1`` per fold is ``hw.array.tile_cycles`` (``R + (T+R+C-2) + (pipeline-1)`` for WS,
``T + R + C - 2 + (pipeline-1)`` for OS): the array runs tiles back to back and drains each one
(no double-buffered weights), so every fold pays its pipeline fill once (IS, not in the RTL, is
WS with the operands' roles swapped and is charged the same). ``pipeline=1`` is SCALE-Sim's count.

Double-buffered weights (``double_buffer=True``; WS, and IS charged as WS; the RTL is
``hw.array.SparseArray(double_buffer=True)``). Each PE holds a shadow weight set the next fold is
shifted into while the array streams the current one; a swap signal copies it into the active
set, travelling along the anti-diagonals with the last vector of the fold, so PE(r, c) changes
tile exactly between that vector and the next (both reach it r + c edges after entering). With
F folds of T vectors (F = folds, T = M for WS, N for IS), counting edges from the first load:

* fold 0's R load words shift in at edges 0..R-1; it swaps in at edge R (its own edge: the swap
  reads the shadow before that edge, so it cannot share the last load edge) and streams T vectors
  from edge R + 1;
* fold f+1 loads from fold f's swap edge s_f (the load wave reaches PE(r, c) at s_f + r + c,
  exactly when the swap has emptied its shadow, so the two never collide) and needs R load
  edges; it can swap in only after fold f's last vector (edge s_f + T) and after its own last load
  edge (s_f + R - 1): s_{f+1} = s_f + max(T, R). The weight load and the stream overlap, and the
  fill (R - 1 row skew) and drain (C - 1 columns) of consecutive folds overlap too: fold f+1's
  first vector enters one edge after fold f's last;
* what cannot overlap: fold 0's load and swap edge (R + 1) before anything streams, and after the
  last fold's T vectors its fill and drain, R + C - 2 edges, and the PE pipeline, p - 1.

  cycles = (R + 1) + (F - 1) max(T, R) + T + (R + C - 2) + (p - 1)     (hw.array.run_cycles)

against SCALE-Sim's F (2R + C + T - 2) (+ F (p - 1) here). It never goes below the compute-only
bound F T (each fold streams its T vectors through the PE row, and every term is >= 0), and it is
shorter for every F >= 2 (it saves (F - 1)(min(T, R) + R + C - 2 + p - 1) - 1 edges: one fold costs
one edge more, its swap). A fold is max(weight load, compute) once the pipeline is full: TPU v1
double-buffers its weight tile "to hide the 256 cycles it takes to shift a tile in" (Jouppi et
al., ISCA 2017). Each layer starts from an empty array (its first load is not hidden behind the
previous layer's last fold). The simulated RTL gives this count edge for edge
(tests/hw/test_array_double_buffer.py); tests/sim/test_double_buffer.py checks it against ZigZag
3.x's tpu_like. ``mode="scalesim"`` has no double buffering (SCALE-Sim's fold), and OS streams its
weights (nothing to double-buffer): both reject it.

``steps`` counts *stored* weights of a column divided by ``pe_k``, the stored-weight reduction
elements a PE consumes per cycle: 1 for SCALE-Sim's scalar PE; N for the sparsepe sparse PE (one
group of M activations + N kept weights per cycle, docs/design.md); M for a dense PE. A sparse
layer stores ceil(K/M)*N weights per column (SCALE-Sim's optimised mapping with BlockSize B stores
ceil(K/2B)*B, reproduced in ``mode="scalesim"``). A layer that cannot be pruned runs dense: on a
sparse-only PE each dense group takes M/N passes (rate N/M), on a PE with a dense path full rate.

Memory: double-buffered ifmap / filter / ofmap SRAMs (sizes: :func:`split_sram_kb`). An operand
whose data fits the active half of its SRAM is fetched from DRAM once; otherwise it is re-streamed
per fold that revisits it (ifmap per column fold in WS/OS, filter per row fold in OS and per
column fold in IS). Weights move compressed, with log2(M) metadata bits per kept weight, counted
separately. Outputs: WS and IS split the reduction over ceil(steps/R) row folds; every fold but
the last writes partial sums, which are read back by the next fold, at accumulator width
(``acc_bits``, the RTL's ``out_acc``); only the final output is written at activation width (it
is requantised at the array edge). OS finishes the reduction inside the PEs: outputs only, at
activation width. Partial sums that do not fit the ofmap SRAM spill to DRAM and back, also at
accumulator width.

Stalls follow a roofline per layer: double buffering hides memory time behind compute until it
exceeds it. DRAM: one bus of ``dram_gbps`` shared by all operands, ``dram_stall = max(0,
ceil(dram_time - compute))``. SRAM: each buffer is ``sram_banks`` banks of one read/write port of
``sram_port_bytes`` bytes per cycle (the macro ppa costs: CACTI 7, 64 B block, 1 RW port,
/work/shared/reference/published-figures.md section 5), and everything that moves through a
buffer uses its ports: the array's reads and writes (partial sums both ways) and the DRAM side
(fills of ifmap/filter, drain of ofmap). A buffer needs ``bytes / (sram_banks *
sram_port_bytes)`` cycles; the layer takes ``max(compute, DRAM time, slowest buffer)`` and
``stall_cycles = dram_stall_cycles + sram_stall_cycles`` (the SRAM share is what the ports add on
top of the DRAM stall). This is SCALE-Sim 3's bank/port limit (``[layout] *SRAMBankNum`` banks
of ``*SRAMBankBandwidth/BankNum`` words, ``*SRAMBankPort`` ports each: at most ``BankPort x
BankBandwidth`` words per cycle; see :mod:`sim.scalesim_mode`) taken as a bandwidth, averaged
over the layer: a lower bound, since phases that burst (WS weight loads) are not resolved.
``sram_port_bytes=None`` removes the limit.

``mode="scalesim"`` reproduces SCALE-Sim 3.0.0's own numbers for parity checks: its DRAM ports,
no SRAM port limit, 1-byte words for every operand; the USER-bandwidth stall emulation lives in
:mod:`sim.scalesim_mode`.
"""

from __future__ import annotations

import math
from dataclasses import asdict, dataclass, field, fields

import numpy as np

from hw.errors import InputError
from hw.host import json_text
from hw.nm import check_nm
from hw.params import MAX_ACC_BITS, MAX_PIPELINE
from sim.inputs import MAX_SIM_ARRAY_SIDE
from sim.layers import Workload
from sim.scalesim_mode import port_time

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
        return tuple(float(p) if p is not None else DEFAULT_BUFFER_KB for p in parts)
    rest = float(sram_kb) - sum(given)
    if missing == 0:
        if abs(rest) > 1e-9 * max(1.0, float(sram_kb)):
            raise InputError(
                f"ifmap_kb + filter_kb + ofmap_kb = {sum(given):g} differs from sram_kb = {sram_kb:g}",
                where="parameter sram_kb",
            )
        return tuple(given)
    if rest <= 0:
        raise InputError(
            f"the given buffers ({sum(given):g} KiB) leave nothing of sram_kb = {sram_kb:g} for the "
            f"other {missing}",
            where="parameter sram_kb",
        )
    return tuple(float(p) if p is not None else rest / missing for p in parts)


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
    # max(weight load, stream) and consecutive folds' fill and drain overlap (module docstring)
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
        self.sram_split_kb  # checks the split

    @property
    def effective_pe_k(self) -> int:
        if self.pe_k is not None:
            return int(self.pe_k)
        if self.mode == "scalesim":
            return 1
        # the sparse-only PE has N multipliers (N stored weights a cycle); the dense PE and the
        # sparse PE with a dense path have M (hw.pe.SparsePE(dense_path=True): M/N N:M groups or one
        # dense group of M a cycle, so M stored weights a cycle in both modes)
        return self.n if (self.sparse and not self.dense_path) else self.m

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


# ------------------------------------------------------------------------------------------------
# Layer and design-point arrays
# ------------------------------------------------------------------------------------------------


def layer_arrays(w: Workload) -> dict[str, np.ndarray]:
    """Per-layer columns (shape (L,)) for the vectorised model."""
    L = w.layers
    if not L:
        raise InputError("workload has no layers", where=f"workload {w.name!r}")
    i64 = np.int64
    return {
        "M": np.array([l.M for l in L], i64),
        "N": np.array([l.N for l in L], i64),
        "K": np.array([l.K for l in L], i64),
        "count": np.array([l.count for l in L], i64),
        "sparsifiable": np.array([l.sparsifiable for l in L], bool),
        "layer_n": np.array([l.nm[0] if l.nm else 0 for l in L], i64),
        "layer_m": np.array([l.nm[1] if l.nm else 0 for l in L], i64),
        "ifmap_unique": np.array([l.conv.ifmap_elems if l.conv else l.M * l.K for l in L], i64),
    }


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


def _cdiv(a, b):
    return -(-a // b)


def evaluate(
    la: dict[str, np.ndarray], d: dict[str, np.ndarray], *, force_dense: bool = False
) -> dict[str, np.ndarray]:
    """The model: layer columns (L,) x design columns (P, 1) -> per (P, L) arrays (per layer
    *instance*; multiply by ``count`` for totals, done in :func:`_totals`)."""
    M, N, K = la["M"], la["N"], la["K"]
    R, C = d["rows"], d["cols"]
    n, m = d["n"], d["m"]
    ss = d["scalesim"]
    df = d["dataflow"]
    lm, ln = la["layer_m"], la["layer_n"]
    pattern_ok = (lm == 0) | ((lm == m) & (ln <= n))
    run_sparse = la["sparsifiable"] & pattern_ok & d["sparse"]
    if force_dense:
        run_sparse = np.zeros_like(run_sparse)
    pe_k = d["pe_k"]
    # stored weights per output column
    k_sparse = np.where(ss, _cdiv(K, 2 * m) * m, _cdiv(K, m) * n)
    k_dense = np.where(pe_k > 1, _cdiv(K, m) * m, K)
    k_st = np.where(run_sparse, k_sparse, k_dense)
    rate = pe_k  # stored weights a PE consumes a cycle, in either mode (effective_pe_k)
    steps = _cdiv(k_st, rate)
    # SCALE-Sim applies sparsity to the WS mapping only (OS/IS keep the uncompressed ifmap K).
    steps_osis = np.where(ss, K, steps)
    is_ws, is_os = df == 0, df == 1
    steps_df = np.where(is_ws, steps, steps_osis)
    folds_r = np.where(is_os, _cdiv(M, R), _cdiv(steps_df, R))
    folds_c = np.where(df == 2, _cdiv(M, C), _cdiv(N, C))
    per_fold = np.where(is_os, steps_df + R + C - 2, 2 * R + C + np.where(df == 2, N, M) - 2)
    folds = folds_r * folds_c
    # hw.array.tile_cycles: every fold (tile) pays pipeline - 1 more cycles to drain its PE registers
    compute = folds * (per_fold + d["pipeline"] - 1) - 1
    # double-buffered weights (module docstring, hw.array.run_cycles): folds at max(load, stream), the
    # first load, fill, drain and pipeline once; never in SCALE-Sim mode or OS (ArrayConfig rejects both)
    t_fold = np.where(df == 2, N, M)
    db_compute = (
        (R + 1) + (folds - 1) * np.maximum(t_fold, R) + t_fold + (R + C - 2) + (d["pipeline"] - 1) - 1
    )
    compute = np.where(d["double_buffer"] & ~ss & ~is_os, db_compute, compute)

    ab, wb = d["act_bits"] / 8.0, d["weight_bits"] / 8.0
    # partial sums leave the array at accumulator width; SCALE-Sim has one 1-byte word for everything
    accb = np.where(ss, ab, d["acc_bits"] / 8.0)
    meta_bits = np.log2(m)
    w_values = (N * k_st) * wb
    w_meta = np.where(run_sparse, N * k_st * meta_bits / 8.0, 0.0)
    ifmap_stream = (M * K) * ab
    ifmap_unique = np.minimum(la["ifmap_unique"], M * K) * ab
    ofmap = (M * N) * ab
    psum = (M * N) * accb
    cap_if, cap_f, cap_of = (d[k] * 1024.0 / 2 for k in ("ifmap_kb", "filter_kb", "ofmap_kb"))  # active half
    # how often each operand is streamed from DRAM (1 when it stays resident on chip)
    fold_k = _cdiv(steps_df, R)
    if_fit = ifmap_unique <= cap_if
    if_refetch = np.where(df == 2, 1, _cdiv(N, C))
    dram_if = np.where(if_fit, ifmap_unique, ifmap_stream * if_refetch)
    # The loop schedule (which operand is re-streamed) is chosen from the dense footprint, so the
    # sparse and the dense run of a layer use the same schedule and the speedup isolates N:M.
    f_fit = (N * K) * wb <= cap_f
    tile_fit = (K * np.minimum(N, C)) * wb <= cap_f
    f_refetch = np.where(is_ws | f_fit, 1, np.where(is_os, np.where(tile_fit, 1, _cdiv(M, R)), _cdiv(M, C)))
    dram_w = w_values * f_refetch
    dram_meta = w_meta * f_refetch
    # partial sums (WS / IS accumulate across K folds) spill to DRAM and back when their tile does not fit
    partial = np.where(is_os, 0, fold_k - 1)  # partial-sum writes (and read-backs) per output
    psum_tile = np.where(df == 2, C * N, M * np.minimum(N, C)) * accb
    spill = np.where((partial > 0) & (psum_tile > cap_of), 2 * psum * partial, 0.0)
    dram_of = ofmap + spill
    dram_total = dram_if + dram_w + dram_meta + dram_of

    # DRAM stalls
    bpc = d["dram_gbps"] * 1e9 / (d["clock_mhz"] * 1e6)
    t_shared = dram_total / bpc
    use_ports = ss & d["has_ports"]
    if np.any(use_ports):  # SCALE-Sim USER-bandwidth parity only; skipped otherwise (it is most of the cost)
        t_ports = port_time(
            M, N, K, k_st, steps_df, R, C, df, d, folds_r, folds_c, per_fold, use_ports & ~run_sparse
        )
        mem_time = np.where(ss, np.where(use_ports, t_ports, 0.0), t_shared)
    else:
        mem_time = np.where(ss, 0.0, t_shared)
    dram_stall = np.maximum(0.0, np.ceil(mem_time - compute))

    # SRAM traffic (array side) and MACs
    sram_if_rd = ifmap_stream * np.where(df == 2, 1, _cdiv(N, C))
    sram_f_rd = (w_values) * np.where(is_ws, 1, np.where(is_os, _cdiv(M, R), _cdiv(M, C)))
    sram_meta_rd = w_meta * np.where(is_ws, 1, np.where(is_os, _cdiv(M, R), _cdiv(M, C)))
    sram_of_wr = (
        ofmap + psum * partial
    )  # partial sums at accumulator width, the final output at activation width
    sram_of_rd = psum * partial
    # SRAM port stalls: every byte through a buffer's ports (array side and DRAM side) at banks x port width
    port_if = sram_if_rd + dram_if
    port_f = sram_f_rd + sram_meta_rd + dram_w + dram_meta
    port_of = (
        sram_of_wr + sram_of_rd + dram_of
    )  # dram_of: final outputs out, spilled partial sums out and back in
    sram_bw = np.where(ss, np.inf, d["sram_banks"] * d["sram_port_bytes"])
    t_sram = np.maximum(np.maximum(port_if, port_f), port_of) / sram_bw
    # the layer takes max(compute, DRAM, SRAM) cycles; the SRAM share is what it adds beyond the DRAM stall
    stall = np.maximum(dram_stall, np.ceil(t_sram) - (compute + 1))
    sram_stall = stall - dram_stall
    performed = (M * N * k_st).astype(np.float64)
    capacity = (R * C * rate).astype(np.float64)
    util = performed / (capacity * (compute + 1 + stall))
    names = (
        "cycles",
        "stall_cycles",
        "dram_stall_cycles",
        "sram_stall_cycles",
        "utilization",
        "sparse",
        "dense_macs",
        "performed_mults",
        "dram_bytes",
        "dram_ifmap_bytes",
        "dram_weight_bytes",
        "metadata_bytes",
        "dram_ofmap_bytes",
        "sram_ifmap_read_bytes",
        "sram_filter_read_bytes",
        "sram_metadata_read_bytes",
        "sram_ofmap_write_bytes",
        "sram_ofmap_read_bytes",
        "sram_fill_bytes",
        "sram_ifmap_port_bytes",
        "sram_filter_port_bytes",
        "sram_ofmap_port_bytes",
        "folds",
    )
    vals = (
        compute.astype(np.int64),
        stall.astype(np.int64),
        dram_stall.astype(np.int64),
        sram_stall.astype(np.int64),
        util,
        run_sparse,
        (M * N * K).astype(np.float64),
        performed,
        dram_total,
        dram_if,
        dram_w,
        dram_meta,
        dram_of,
        sram_if_rd,
        sram_f_rd,
        sram_meta_rd,
        sram_of_wr,
        sram_of_rd,
        dram_if + dram_w + dram_meta,
        port_if,
        port_f,
        port_of,
        folds.astype(np.float64),
    )
    return dict(zip(names, np.broadcast_arrays(*vals)))


def vector_arrays(w: Workload) -> dict[str, np.ndarray]:
    """Per-operator columns (shape (V,)) of the workload's vector-unit operators (V may be 0)."""
    ops = w.vector_ops
    f = lambda k: np.array([float(getattr(o, k)) for o in ops], np.float64)  # noqa: E731
    return {
        "alu": f("alu"),
        "exp": f("exp"),
        "div": f("div"),
        "red": f("red"),
        "read": f("read"),
        "write": f("write"),
        "dram": f("dram"),
        "count": np.array([o.count for o in ops], np.int64),
        "reduces": np.array([o.reduces for o in ops], bool),
        "movement": np.array([o.movement_only for o in ops], bool),
    }


def evaluate_vector(va: dict[str, np.ndarray], d: dict[str, np.ndarray]) -> dict[str, np.ndarray]:
    """The vector unit (sim.vector): operator columns (V,) x design columns (P, 1) -> per-instance (P, V)
    cycles, SRAM and DRAM bytes. cycles = ceil(max(compute, SRAM port time, DRAM time))."""
    C = d["cols"]
    lanes = np.where(d["vector_lanes"] > 0, d["vector_lanes"], C).astype(np.float64)
    compute = (
        va["alu"] / (lanes * d["vector_alu_rate"])
        + va["exp"] / (lanes * d["vector_exp_rate"])
        + va["div"] / (lanes * d["vector_div_rate"])
        + va["red"] / (lanes * d["vector_red_rate"])
        + np.where(va["reduces"], np.ceil(np.log2(np.maximum(lanes, 1.0))), 0.0)
    )
    ab = d["act_bits"] / 8.0
    moved = (va["read"] + va["write"]) * ab
    port = np.where(d["scalesim"], np.inf, d["sram_banks"] * d["sram_port_bytes"])
    bw = np.where(d["vector_sram_bytes"] > 0, d["vector_sram_bytes"], port)
    t_sram = moved / bw
    # a tensor larger than the active half of the ofmap buffer streams from DRAM and back
    cap_of = d["ofmap_kb"] * 1024.0 / 2
    dram = va["dram"] * ab + np.where(moved <= cap_of, 0.0, moved)
    t_dram = dram / (d["dram_gbps"] * 1e9 / (d["clock_mhz"] * 1e6))
    cycles = np.ceil(np.maximum(np.maximum(compute, t_sram), t_dram))
    # stalls: what the SRAM port and then DRAM add on top of the arithmetic (a data-movement operator's
    # time is its work: its moves are not stalls)
    c_comp = np.where(va["movement"], cycles, np.ceil(compute))
    c_sram = np.maximum(c_comp, np.ceil(t_sram))
    names = (
        "vector_op_cycles",
        "vector_compute_cycles",
        "vector_sram_stall_cycles",
        "vector_dram_stall_cycles",
        "vector_sram_bytes",
        "vector_dram_bytes",
    )
    return dict(
        zip(
            names,
            np.broadcast_arrays(
                cycles, c_comp, c_sram - c_comp, cycles - c_sram, moved + 0 * cycles, dram + 0 * cycles
            ),
        )
    )


# ------------------------------------------------------------------------------------------------
# Results
# ------------------------------------------------------------------------------------------------

_PER_LAYER_SUM = (
    "dense_macs",
    "performed_mults",
    "dram_bytes",
    "dram_ifmap_bytes",
    "dram_weight_bytes",
    "metadata_bytes",
    "dram_ofmap_bytes",
    "sram_ifmap_read_bytes",
    "sram_filter_read_bytes",
    "sram_metadata_read_bytes",
    "sram_ofmap_write_bytes",
    "sram_ofmap_read_bytes",
    "sram_fill_bytes",
    "sram_ifmap_port_bytes",
    "sram_filter_port_bytes",
    "sram_ofmap_port_bytes",
    "folds",
)  # folds = tiles: in WS each loads R x C weights (ppa charges the shifting)


def _totals(
    r: dict[str, np.ndarray],
    dense: dict[str, np.ndarray],
    count: np.ndarray,
    sparsifiable: np.ndarray,
    n: np.ndarray,
    m: np.ndarray,
    hw_sparse: np.ndarray,
    vec: dict[str, np.ndarray] | None = None,
    vcount: np.ndarray | None = None,
    overlap: np.ndarray | bool = False,
) -> dict[str, np.ndarray]:
    """Network totals along the layer axis (last axis). The vector unit's cycles (``vec``, per
    operator instance, ``vcount`` instances each) add to the array's (serial) or, with ``overlap``,
    the network takes the longer of the two."""
    busy = (r["cycles"] + 1 + r["stall_cycles"]) * count  # +1: cycles is the last-cycle index
    array_total = busy.sum(-1)
    if vec is not None and vcount is not None and vcount.size:
        vtot = (vec["vector_op_cycles"] * vcount).sum(-1)
        vsram = (vec["vector_sram_bytes"] * vcount).sum(-1)
        vdram = (vec["vector_dram_bytes"] * vcount).sum(-1)
        vs_sram = (vec["vector_sram_stall_cycles"] * vcount).sum(-1)
        vs_dram = (vec["vector_dram_stall_cycles"] * vcount).sum(-1)
    else:
        vtot = vsram = vdram = vs_sram = vs_dram = np.zeros_like(array_total, dtype=np.float64)
    overlap = np.asarray(overlap, bool).reshape(np.shape(array_total)) if np.ndim(overlap) else bool(overlap)

    def joint(a):
        return np.where(overlap, np.maximum(a, vtot), a + vtot)

    total = joint(array_total)
    out = {k: (r[k] * count).sum(-1) for k in _PER_LAYER_SUM}
    out["total_cycles"] = total
    out["array_cycles"] = array_total
    out["vector_cycles"] = vtot
    out["vector_fraction"] = vtot / total
    out["vector_sram_bytes"] = vsram
    out["vector_dram_bytes"] = vdram
    out["compute_cycles"] = ((r["cycles"] + 1) * count).sum(-1)
    for k in ("stall_cycles", "dram_stall_cycles", "sram_stall_cycles"):
        out[k] = (r[k] * count).sum(-1)
    # the vector unit's memory waits are stalls too (serial mode: they add to the network's time)
    out["vector_stall_cycles"] = vs_sram + vs_dram
    out["stall_cycles"] = out["stall_cycles"] + vs_sram + vs_dram
    out["dram_stall_cycles"] = out["dram_stall_cycles"] + vs_dram
    out["sram_stall_cycles"] = out["sram_stall_cycles"] + vs_sram
    out["stall_fraction"] = out["stall_cycles"] / total  # DRAM and SRAM stalls
    out["sram_stall_fraction"] = out["sram_stall_cycles"] / total
    dense_busy = joint(((dense["cycles"] + 1 + dense["stall_cycles"]) * count).sum(-1))
    out["dense_total_cycles"] = dense_busy
    out["effective_speedup"] = dense_busy / total
    fb = (~r["sparse"]) & hw_sparse
    out["fallback_fraction"] = (busy * fb).sum(-1) / total
    # dense-equivalent MACs of the layers a sparse design runs dense (its fallback / dense path)
    out["fallback_macs"] = (r["dense_macs"] * count * fb).sum(-1)
    # ideal bound: Amdahl over the dense run's time (stalls included, as in effective_speedup),
    # sparsifiable layers shrunk by N/M, fallback layers unchanged. Compute folds at best halve and
    # weight traffic at best halves (metadata adds to it), but a layer can beat N/M when its dense
    # run is bound by partial-sum traffic: the sparse run needs half the K folds, and partial sums
    # move at accumulator width while the final output moves at activation width, so (f-1) partial
    # rounds replace (2f-1). Such a layer counts at its achieved time, so that always
    # effective_speedup <= ideal_speedup; ideal_speedup <= M/N unless some layer beats N/M.
    dc = (dense["cycles"] + 1 + dense["stall_cycles"]) * count
    can = sparsifiable & hw_sparse
    # the vector unit's work is the same in both runs: it bounds the speedup like a fallback layer does
    out["ideal_speedup"] = joint(dc.sum(-1)) / joint(
        np.where(can, np.minimum(dc * (n / m), busy), dc).sum(-1)
    )
    out["metadata_overhead"] = out["metadata_bytes"] / np.maximum(out["dram_weight_bytes"], 1e-30)
    out["utilization"] = (r["utilization"] * busy).sum(-1) / total
    return out


@dataclass
class NetworkResult:
    """Per-layer numpy arrays (length L, one entry per layer *instance*, ``count`` instances each)
    and network totals (layers weighted by count)."""

    workload: str
    arch: ArrayConfig
    names: list[str]
    kinds: list[str]
    counts: np.ndarray
    fallback_reasons: list[str | None]
    layers: dict[str, np.ndarray]
    totals: dict[str, float]
    #: the vector unit's operators: sim.vector.VectorOp list and per-instance (V,) arrays
    vector_ops: list = field(default_factory=list)
    vector: dict[str, np.ndarray] = field(default_factory=dict)
    weight_params: int = 0
    unsupported_ops: list[dict] = field(default_factory=list)
    #: each layer's operand format as the importer found it (None: the array's own), and what the
    #: importer found beyond the layers (sim.layers.Workload.import_report), both for to_dict
    precisions: list = field(default_factory=list)
    import_report: dict = field(default_factory=dict)

    @property
    def total_cycles(self) -> int:
        return int(self.totals["total_cycles"])

    @property
    def effective_speedup(self) -> float:
        return float(self.totals["effective_speedup"])

    @property
    def stall_fraction(self) -> float:
        return float(self.totals["stall_fraction"])

    def latency_s(self) -> float:
        return self.total_cycles / (self.arch.clock_mhz * 1e6)

    def to_dict(self) -> dict:
        lay = []
        for i, name in enumerate(self.names):
            row = {
                "name": name,
                "kind": self.kinds[i],
                "count": int(self.counts[i]),
                "cycles": int(self.layers["cycles"][i]),
                "stall_cycles": int(self.layers["stall_cycles"][i]),
                "dram_stall_cycles": int(self.layers["dram_stall_cycles"][i]),
                "sram_stall_cycles": int(self.layers["sram_stall_cycles"][i]),
                "utilization": round(float(self.layers["utilization"][i]), 6),
                "sparse": bool(self.layers["sparse"][i]),
                "fallback_reason": self.fallback_reasons[i],
            }
            if self.precisions:
                row["precision"] = self.precisions[i]
            for k in _PER_LAYER_SUM:
                row[k] = float(self.layers[k][i])
            row["unit"] = "array"
            lay.append(row)
        vlay = []
        for j, op in enumerate(self.vector_ops):
            vlay.append(
                {
                    "name": op.name,
                    "op_type": op.op_type,
                    "unit": "vector",
                    "count": int(op.count),
                    "cycles": int(self.vector["vector_op_cycles"][j]),
                    "compute_cycles": int(self.vector["vector_compute_cycles"][j]),
                    "elements": int(op.elements),
                    "sram_bytes": float(self.vector["vector_sram_bytes"][j]),
                    "dram_bytes": float(self.vector["vector_dram_bytes"][j]),
                    "movement_only": bool(op.movement_only),
                    "supported": bool(op.supported),
                    "reason": op.reason,
                    "shapes": op.shapes,
                }
            )
        tot = {k: (float(v) if not float(v).is_integer() else int(v)) for k, v in self.totals.items()}
        fi, ff, fo = self.arch.sram_split_kb
        bw = self.arch.sram_bytes_per_cycle
        return {
            "workload": self.workload,
            "arch": asdict(self.arch),
            "sram_split_kb": {"ifmap_kb": fi, "filter_kb": ff, "ofmap_kb": fo},
            "sram_bytes_per_cycle_per_buffer": None if math.isinf(bw) else bw,
            "layers": lay,
            "vector_layers": vlay,
            "vector_lanes": self.arch.effective_vector_lanes,
            "unsupported_ops": [
                {
                    "op_type": u["op_type"],
                    "count": int(u["count"]),
                    "reason": u["reason"],
                    "shapes": list(u["shapes"]),
                }
                for u in self.unsupported_ops
            ],
            "weight_params": int(self.weight_params),
            **self.import_report,
            **tot,
        }

    def to_json(self, **kw) -> str:
        return json_text(self.to_dict(), **kw)


def _fallback_reasons(w: Workload, arch: ArrayConfig, sparse_run: np.ndarray) -> list[str | None]:
    out: list[str | None] = []
    for l, sp in zip(w.layers, sparse_run):
        if sp:
            out.append(None)
        elif not arch.sparse:
            out.append(None)  # dense hardware: nothing falls back
        elif not l.sparsifiable:
            out.append(l.reason)
        else:
            out.append(f"layer pattern {l.nm[0]}:{l.nm[1]} does not fit the hardware's {arch.n}:{arch.m}")
    return out


def simulate(workload: Workload, arch: ArrayConfig | None = None) -> NetworkResult:
    """Evaluate one design point on every layer of a workload."""
    arch = arch or ArrayConfig()
    la = layer_arrays(workload)
    d = design_arrays([arch])
    r = evaluate(la, d)
    # the dense baseline pass differs only where a layer ran sparse; otherwise it is the same evaluation
    dn = evaluate(la, d, force_dense=True) if r["sparse"].any() else r
    va = vector_arrays(workload)
    vr = evaluate_vector(va, d)
    tot = _totals(
        r,
        dn,
        la["count"],
        la["sparsifiable"],
        d["n"][:, 0],
        d["m"][:, 0],
        d["sparse"][:, 0],
        vr,
        va["count"],
        d["vector_overlap"][:, 0],
    )
    layers = {k: np.asarray(v[0]) for k, v in r.items()}
    return NetworkResult(
        workload.name,
        arch,
        [l.name for l in workload.layers],
        [l.kind for l in workload.layers],
        la["count"],
        _fallback_reasons(workload, arch, layers["sparse"]),
        layers,
        {k: float(np.asarray(v).reshape(-1)[0]) for k, v in tot.items()},
        list(workload.vector_ops),
        {k: np.asarray(v[0]) for k, v in vr.items()},
        workload.weight_params,
        workload.unsupported_ops,
        [l.precision for l in workload.layers],
        dict(workload.import_report),
    )


def simulate_grid(
    workload: Workload, params: dict[str, np.ndarray | list], base: ArrayConfig | None = None
) -> dict[str, np.ndarray]:
    """Many design points x all layers in one numpy evaluation.

    ``params`` maps ArrayConfig field names (rows, cols, ifmap_kb, filter_kb, ofmap_kb, sram_kb,
    clock_mhz, dram_gbps, dataflow, n, m, sparse, pe_k, dense_path, act_bits, weight_bits, acc_bits,
    pipeline, sram_banks, sram_port_bytes) to arrays of equal length P; fields not given come from
    ``base``. ``sram_port_bytes`` may hold ``inf`` (or None) for no SRAM port limit. The SRAM split
    follows :func:`split_sram_kb` (with ``sram_kb`` given, the buffers not given share what is left
    of it equally). Returns per-layer arrays of shape (P, L) under their names and network totals of
    shape (P,) under ``total_*`` / speedup names, plus the split used, ``sram_ifmap_kb``,
    ``sram_filter_kb``, ``sram_ofmap_kb`` (P,), the sizes ppa should cost."""
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
        d["pe_k"] = np.where(d["sparse"] & ~d["dense_path"].astype(bool), d["n"], d["m"])
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
    la = layer_arrays(workload)
    r = evaluate(la, d)
    dn = evaluate(la, d, force_dense=True)
    va = vector_arrays(workload)
    vr = evaluate_vector(va, d)
    tot = _totals(
        r,
        dn,
        la["count"],
        la["sparsifiable"],
        d["n"][:, 0:1],
        d["m"][:, 0:1],
        d["sparse"][:, 0:1],
        vr,
        va["count"],
        d["vector_overlap"][:, 0:1],
    )
    out = dict(r)
    out.update({k: np.asarray(v).reshape(P) for k, v in tot.items()})
    out.update(
        {
            f"sram_{k}": np.broadcast_to(d[k][:, 0], (P,)).astype(float)
            for k in ("ifmap_kb", "filter_kb", "ofmap_kb")
        }
    )
    return out
