"""The published accelerators ``sparsepe validate`` checks, each configured from its published
architecture only (MAC count, precision, node, clock, on-chip SRAM, post-processing throughputs,
DRAM type): TPU v1, Eyeriss v1, the NVDLA configurations, TPU v4i's bf16 MXUs and the A100's INT8
tensor cores. Sources are in docs/published-silicon.md. Our PE covers M reduction elements per
cycle (M multipliers and an adder tree), so a chip of N MACs is configured as R x C PEs with
R x C x M = N: M = 4, except TPU v1, a 256 x 256 systolic array of one-MAC cells, configured at its
published geometry with the smallest PE the hardware builds (M = 2: 128 x 256 PEs, 256 deep by 256
wide).

Each chip is one function returning its ``Chip``; ``chips`` lists them all. The rows built from
them are explore.validation.silicon's.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import TypedDict

from ppa import tech
from ppa.design import DesignPoint

#: TPU v1's matrix unit: "a quarter" of the die [P: Jouppi et al. ISCA 2017, arXiv 1704.04760 section 2]
TPU_V1_MXU_SHARE = 0.25
#: TPU v1's die: "<= half the Haswell die size" with Haswell (E5-2699 v3) 662 mm^2 [P: same paper, Table 2]
TPU_V1_DIE_BOUND_MM2 = 662.0 / 2


@dataclass
class Chip:
    name: str
    design: DesignPoint
    published: dict  # figure -> (value, scope, note)
    reasons: dict = field(default_factory=dict)  # figure -> why a miss is expected
    scope: str = ""  # what the model covers for this row and what it leaves out
    variants: list = field(default_factory=list)  # (label, DesignPoint): info lines, no verdict
    macs: int = 0  # INT8 MACs (NVDLA rows: for the per-MAC slope)
    cbuf_kb: float = 0.0  # NVDLA convolution buffer (for the per-MAC slope over the 256 KB rows)
    fits: dict = field(default_factory=dict)  # figure -> fit sources: a fit anchor, not a check
    #: MACs per second of the workload the published power was measured on (None: every PE busy)
    measured_macs_per_s: float | None = None


#: Eyeriss v1's measured workload: AlexNet convolutional layers at 35 frames/s [V: Chen et al. JSSC
#: 2017 abstract], 666 M MACs per 227 x 227 image [P: Chen et al. ISSCC 2016 paper 14.5]
EYERISS_ALEXNET_FPS = 35.0
ALEXNET_CONV_MACS = 666e6


def nvdla_shape(pes: int) -> tuple[int, int]:
    r = 1 << ((pes.bit_length() - 1 + 1) // 2)
    return r, pes // r


# NVDLA (nvdla/doc doc/primer.rst "Example Area and Performance"): # MACs, conv. buffer KB, 28 nm area
# (estimated synthesis area, all memories included), INT8 ResNet-50. No clock in the table [A: 1 GHz].
NVDLA_PRIMER = (
    (2048, 512, 5.5),
    (1024, 256, 3.0),
    (512, 256, 2.3),
    (256, 256, 1.7),
    (128, 256, 1.4),
    (64, 128, 0.91),
    (32, 128, 0.85),
)

# nv_full, the NVDLA v1 configuration with 2048 INT8 MACs and a 512 KB CBUF, the primer's first row
# [A: the primer is a v1 document; nv_large (v2) has the same sizes but INT8-only MACs: an info line].
# nvdla/doc doc/hw/v1/ias/unit_description.rst [P]:
#  CMAC: 16 MAC cells x 64 16-bit multipliers for int16/fp16, each splitting into two int8 units
#  CBUF: 512 KB, 16 banks of 32 KB, each two 512-bit x 256-entry two-port SRAMs (32 macros of 16 KB)
#  CACC: assembly group 4 x 96B x 32 + 4 x 64B x 32, delivery group 8 x 64B x 32 (= 36 KB); INT16
#        accumulates at 48 bits
#  SDP: X1/X2 16 elements/cycle, Y 4 elements/cycle; partial feature data elements are 16 bits;
#       LUT (65 + 257) x 2 B = 644 B; M read DMA buffer 128 x 32 B = 4 KB; BS/BN read DMA buffers 8 KB each
#  PDP: share line buffer 7 KB; read DMA buffer 1 KB; peak 8 B/cycle (8 int8 or 4 int16/fp16 elements)
#  CDP: LUT 644 B; read DMA buffer 1 KB; peak 8 B/cycle; stripe-edge buffer 56 B
NVFULL_CACC_KB = (4 * 96 * 32 + 4 * 64 * 32 + 8 * 64 * 32) / 1024  # [D] = 36 KB
NVFULL_PP_KB = (644 + 4096 + 2 * 8192 + 7 * 1024 + 1024 + 644 + 1024 + 56) / 1024  # [D] SDP+PDP+CDP buffers
NVFULL_LANES = 16 + 16 + 4 + 4 + 4  # [D] SDP X1 + X2 + Y, PDP and CDP at 4 int16 elements per cycle
# nv_small (nvdla/doc doc/hw/v2/scalability.rst [P]): INT8, MAC atomic C 8 x K 8 = 64 MACs; CBUF 32
# banks x 8 B x 512 = 128 KB; SDP BS and BN throughput 1 (EW and LUT disabled), PDP 1, CDP 1
NVSMALL_LANES = 1 + 1 + 1 + 1
#: [P] SDP datapath width (v1 unit description: "Each partial feature data element is 16 bits");
#: PDP/CDP lanes at 16 bits are their int16 mode [P]; nv_small's 8-bit PDP/CDP lanes costed at 16 [A]
NVDLA_VECTOR_BITS = 16


class NvdlaCommon(TypedDict):
    """The DesignPoint keywords every NVDLA row shares (28 nm, 1 GHz [A], two LPDDR5 channels)."""

    node_nm: int
    clock_mhz: float
    voltage_v: float
    dram: str
    dram_units: int


def nvdla_chips() -> list[Chip]:
    """One chip per row of the nvdla primer (``NVDLA_PRIMER``)."""
    v28 = tech.nominal_voltage(28)
    common = NvdlaCommon(node_nm=28, clock_mhz=1000, voltage_v=v28, dram="lpddr5", dram_units=2)
    return [nvdla_chip(macs, kb, mm2, common) for macs, kb, mm2 in NVDLA_PRIMER]


def nvdla_chip(macs: int, kb: int, mm2: float, common: NvdlaCommon) -> Chip:
    """The primer row of ``macs`` INT8 MACs and a ``kb`` KB CBUF, published at ``mm2`` mm^2."""
    pub = {"block_area_mm2": (mm2, "block", "synthesis area, memories included")}
    if (macs, kb) == (2048, 512):
        return nv_full(macs, kb, pub, common)
    if (macs, kb) == (64, 128):
        return nv_small(macs, kb, pub, common)
    return nvdla_primer_row(macs, kb, pub, common)


def nv_full(macs: int, kb: int, pub: dict, common: NvdlaCommon) -> Chip:
    """nv_full: its CMAC as 1024 INT16 MACs, with its published buffers and post-processing lanes."""
    r, c = nvdla_shape(macs // 4)
    r16, c16 = nvdla_shape(1024 // 4)
    design = DesignPoint(
        rows=r16,
        cols=c16,
        sparse=False,
        act_bits=16,
        weight_bits=16,
        acc_bits=48,
        sram_buffers_kb=(kb / 2, kb / 2, NVFULL_CACC_KB + NVFULL_PP_KB),
        sram_banks=16,
        vector_lanes=NVFULL_LANES,
        vector_bits=NVDLA_VECTOR_BITS,
        **common,
    )
    name = f"NVDLA {macs} MACs / {kb} KB = nv_full (28 nm)"
    scope = (
        "in: CMAC as 1024 INT16 MACs (48-bit accumulation), CBUF 512 KB as 32 macros of 16 KB, "
        f"CACC assembly+delivery SRAM {NVFULL_CACC_KB:.0f} KB, SDP/PDP/CDP buffers "
        f"{NVFULL_PP_KB:.1f} KB, {NVFULL_LANES} 16-bit vector lanes for SDP X1/X2/Y, PDP, CDP at "
        "their published throughputs, the fixed control block (ppa.model.CONTROL_FIXED_TRANSISTORS, fitted "
        "on nv_small: DMA, sequencers, configuration registers); out: the FP16 exponent/alignment logic, "
        "Winograd PRA/POA adders, CACC's separate adder array, weight decompression, RUBIK and what of "
        "BDMA, MCIF/SRAMIF and the write-DMA buffers outgrows nv_small's. Not compared: "
        "the clock (1 GHz is an assumption [A]; the one-cycle INT16 PE does not reach it at 0.9 V)"
    )
    variants = [
        (
            "MACs as 1024 bf16 (nearest synthesised float; binary32 accumulation)",
            DesignPoint(
                rows=r16,
                cols=c16,
                sparse=False,
                precision="bf16",
                sram_buffers_kb=(kb / 2, kb / 2, NVFULL_CACC_KB + NVFULL_PP_KB),
                sram_banks=16,
                vector_lanes=NVFULL_LANES,
                vector_bits=NVDLA_VECTOR_BITS,
                **common,
            ),
        ),
        (
            "MACs as 2048 INT8 only (nv_large, v2: same sizes)",
            DesignPoint(
                rows=r,
                cols=c,
                sparse=False,
                acc_bits=32,
                sram_buffers_kb=(kb / 2, kb / 2, NVFULL_CACC_KB + NVFULL_PP_KB),
                sram_banks=16,
                vector_lanes=NVFULL_LANES,
                vector_bits=NVDLA_VECTOR_BITS,
                **common,
            ),
        ),
    ]
    why = (
        "the published area covers the whole NVDLA core; the model leaves out the units listed as "
        "out of scope, and costs the CBUF as single-port CACTI (ITRS-HP) macros where NVDLA uses "
        "two-port SRAMs"
    )
    return Chip(name, design, pub, {"block_area_mm2": why}, scope, variants, macs, kb, {})


def nv_small(macs: int, kb: int, pub: dict, common: NvdlaCommon) -> Chip:
    """nv_small: 64 INT8 MACs, the fit anchor of the fixed control block."""
    r, c = nvdla_shape(macs // 4)
    design = DesignPoint(
        rows=r,
        cols=c,
        sparse=False,
        acc_bits=32,
        sram_kb=kb,
        sram_banks=32,
        vector_lanes=NVSMALL_LANES,
        vector_bits=NVDLA_VECTOR_BITS,
        **common,
    )
    name = f"NVDLA {macs} MACs / {kb} KB = nv_small (28 nm)"
    scope = (
        "in: 64 INT8 MACs, CBUF 128 KB (32 banks of 4 KB), 4 vector lanes for SDP BS/BN, PDP, CDP "
        "at throughput 1, the fixed control block (ppa.model.CONTROL_FIXED_TRANSISTORS, fitted on this "
        "row: CACC, DMA and post-processing buffers, CDMA/CSC sequencers, MCIF, configuration registers)"
    )
    fits = {
        "block_area_mm2": [
            "nvdla primer: nv_small 0.91 mm^2 at 28 nm -> ppa.model.CONTROL_FIXED_TRANSISTORS "
            "(the published area minus the model's array, CBUF, vector lanes and allowances)"
        ]
    }
    return Chip(name, design, pub, {}, scope, [], macs, kb, fits)


def nvdla_primer_row(macs: int, kb: int, pub: dict, common: NvdlaCommon) -> Chip:
    """Another primer row: only its MAC count and CBUF size are published."""
    r, c = nvdla_shape(macs // 4)
    # the primer is a v1 document: v1's only MAC cell (CMAC unit description) is nv_full's
    # 16-bit int16/fp16 multiplier that splits into two int8 units, so a row of N INT8 MACs is
    # N/2 INT16 MACs with 48-bit accumulation [A: the primer does not name each row's MAC
    # type]; CACC pro rata of nv_full's published 36 KB per 2048 MACs [A]
    r16, c16 = nvdla_shape(max(macs // 8, 1))
    cacc_kb = NVFULL_CACC_KB * macs / 2048
    design = DesignPoint(
        rows=r16,
        cols=c16,
        sparse=False,
        act_bits=16,
        weight_bits=16,
        acc_bits=48,
        sram_buffers_kb=(kb / 2, kb / 2, cacc_kb),
        sram_banks=max(kb // 16, 1),
        vector_lanes=0,
        **common,
    )
    name = f"NVDLA {macs} MACs / {kb} KB (28 nm)"
    scope = (
        f"in: {macs} INT8 MACs as {macs // 2} nv_full-type INT16 MACs (48-bit accumulation), CBUF "
        f"{kb} KB as two macros, CACC {cacc_kb:.1f} KB (nv_full's per MAC), the fixed control block "
        "(ppa.model.CONTROL_FIXED_TRANSISTORS, fitted on nv_small); out: SDP/PDP/CDP lanes (this row's "
        "post-processing throughputs are not published). Not compared: the clock (1 GHz is an "
        "assumption [A], as for nv_full)"
    )
    variants = [
        (
            "MACs as INT8 only (no 16-bit MAC cells)",
            DesignPoint(
                rows=r,
                cols=c,
                sparse=False,
                acc_bits=32,
                sram_buffers_kb=(kb / 2, kb / 2, cacc_kb),
                sram_banks=max(kb // 16, 1),
                vector_lanes=0,
                **common,
            ),
        )
    ]
    why = (
        "only the MAC count and CBUF size of this row are published; its post-processing throughputs, "
        "DMA buffers and MAC type are taken from nv_full and its fixed units from nv_small"
    )
    return Chip(name, design, pub, {"block_area_mm2": why}, scope, variants, macs, kb, {})


def tpu_v1() -> Chip:
    """Google TPU v1 at its published 256 x 256 geometry."""
    # Google TPU v1 (Jouppi et al. ISCA 2017): 256 x 256 INT8 MACs, 28 nm, 700 MHz, 92 TOPS,
    # 24 MiB unified buffer (+ 4 MiB accumulators = 28 MiB on chip), 40 W busy, two DDR3 channels
    # (34 GB/s; DDR4-class channels here). Die area not published (published-figures §8b), only
    # bounded: [P] arXiv 1704.04760 section 2, "the Matrix Multiply Unit is a quarter" of the die
    # (Fig. 2's floor plan), and Table 2, "The TPU die is <= half the Haswell die size", Haswell
    # E5-2699 v3 662 mm^2 in the same table: the matrix unit is at most 0.25 x 331 mm^2. The matrix
    # unit "holds one 64 KiB tile of weights plus one for double-buffering" [S: published-figures §12,
    # ISCA 2017]: the double-buffered PE (hw.array, a shadow weight set per PE). Its 256 x 256 cells
    # are one MAC each [V: ISCA 2017 abstract, via published-figures §8b: 65,536 8-bit MACs, a 256 x
    # 256 systolic array]: PEs of M = 2 (hw's smallest) at 128 x 256 give its 256-deep, 256-wide
    # array (M = 4 at 128 x 128 would be a 512 x 128 array with a quarter of its partial-sum registers).
    return Chip(
        "TPU v1 (28 nm, 700 MHz)",
        DesignPoint(
            rows=128,
            cols=256,
            n=1,
            m=2,
            sparse=False,
            node_nm=28,
            clock_mhz=700,
            voltage_v=tech.nominal_voltage(28),
            sram_kb=28 * 1024,
            sram_banks=8,
            dram="ddr4",
            dram_units=2,
            acc_bits=32,
            cooling="liquid",
            double_buffer=True,
        ),
        {
            "peak_tops": (92.0, "array", "65,536 x 2 x 0.7 GHz"),
            "array_area_mm2": (
                TPU_V1_MXU_SHARE * TPU_V1_DIE_BOUND_MM2,
                "array",
                "a quarter of a die <= half Haswell's 662 mm^2: an upper bound",
            ),
            "power_w": (40.0, "chip", "busy"),
            "tops_per_w": (92.0 / 40.0, "chip", "peak TOPS / busy power"),
        },
        {
            "array_area_mm2": "the published figure is a floorplan share of a die only bounded from above (<= 331 "
            "mm^2), so 83 mm^2 is an upper bound, and the matrix unit's quarter holds its weight "
            "FIFO and wiring as well as the MACs and their double-buffered weights (which the "
            "model's PEs hold); the model's array is the synthesised PEs' cells at the realised "
            "density (as TPU v4i's row), 2 MACs per PE sharing one partial-sum register where "
            "TPU v1's 256 x 256 cells have one each",
            "power_w": "published power is the busy chip (host interface, control, DDR3 I/O) at an undisclosed "
            "voltage; the model runs the array 100 % busy at the 28 nm nominal 0.9 V [A]",
            "tops_per_w": "chip-scope power (see power_w)",
        },
        "in: the INT8 array as 128 x 256 PEs of 2 MACs (TPU v1's 256 x 256 geometry) with double-buffered "
        "weights, 28 MiB SRAM, a vector lane per column, DDR PHYs; "
        "out: host interface, the "
        "activation pipeline's real size, the DDR3 devices' I/O power",
    )


def eyeriss_v1() -> Chip:
    """Eyeriss v1, its power at the published AlexNet throughput."""
    # Eyeriss v1 (Chen et al. JSSC 2017): 65 nm, 168 PEs, 16-bit fixed point, 108 KB global
    # buffer, 200 MHz core clock, 1 V; 278 mW on AlexNet conv layers; die 4.0 x 4.0 mm (pads incl.).
    # Each PE holds scratchpads of 224 (filter) + 12 (ifmap) + 24 (psum) 16-bit words [S: JSSC 2017
    # via the Eyeriss tutorial]; costed as SRAM: 168 x 260 x 2 B = 85.3 KB on top of the 108 KB.
    # The power was measured on AlexNet's convolutional layers at 35 frames/s [V: JSSC 2017 abstract],
    # 666 million MACs per 227 x 227 image [P: Chen et al. ISSCC 2016 14.5, "requires 666 million MACs
    # per 227x227 image"]: the model runs that throughput (69 % of the PE cycles), not every PE busy.
    spad_kb = 168 * (224 + 12 + 24) * 2 / 1024
    return Chip(
        "Eyeriss v1 (65 nm, 200 MHz, 1.0 V)",
        DesignPoint(
            rows=6,
            cols=7,
            sparse=False,
            node_nm=65,
            clock_mhz=200,
            voltage_v=1.0,
            sram_kb=108 + spad_kb,
            act_bits=16,
            weight_bits=16,
            acc_bits=32,
            dram="lpddr5",
            dram_units=4,
        ),
        {
            "area_mm2": (16.0, "chip", "4.0 x 4.0 mm die, pads included"),
            "power_w": (0.278, "chip", "AlexNet conv layers, 35 fps"),
            "tops_per_w": (2 * 168 * 0.2e9 / 1e12 / 0.278, "chip", "peak 67 GOPS / 278 mW"),
        },
        {
            "area_mm2": "the published figure is the whole 4 x 4 mm die with its pad ring; Eyeriss keeps its PE "
            "scratchpads in register files (costed here as CACTI SRAM, denser) and has a NoC and "
            "run-length codec the model does not cost; and see the area note below the table",
            "power_w": "the model runs the published AlexNet throughput with its default traffic per busy cycle and "
            "charges every operand access at the energy of one 193 KB SRAM (the global buffer and the PE "
            "scratchpads merged into one macro, at the silicon-derived energy), where Eyeriss serves most "
            "accesses from 0.5 KB register-file scratchpads",
            "tops_per_w": "published is peak ops over measured AlexNet power (a lower bound on efficiency); and see "
            "power_w",
        },
        "in: 168 16-bit MACs (42 PEs of 4), 108 KB buffer + PE scratchpads as SRAM, PHY/pad ring of the "
        "model's PHYs, the fixed control block; power at the published AlexNet throughput (35 fps x 666 M MACs "
        "per image = 69 % of the 168 MACs' cycles busy); out: NoC, RLC codec, register-file (vs SRAM) "
        "scratchpad area",
        macs=168,
        measured_macs_per_s=EYERISS_ALEXNET_FPS * ALEXNET_CONV_MACS,
    )


def tpu_v4i() -> Chip:
    """TPU v4i's four bf16 MXUs."""
    # Google TPU v4i (Jouppi et al. ISCA 2021 section 3 / Fig. 6): 7 nm, 1.05 GHz, four 128 x 128 bf16
    # MXUs (binary32 accumulation), "about 11 %" of a die "< 400 mm^2" [S: published-figures §8b, "via a
    # review"]. The paper's text gives the die (< 400 mm^2) and CMEM (28 %) in Fig. 6's caption but no
    # MXU share (which may be printed only in the floor plan's image); an unsourced third-party model
    # takes the MXUs as ~100 mm^2 (0.72 mm^2 per TOPS). Costed with the project's
    # synthesised bf16 PE (hw/fp.py, precision="bf16": bf16 multiplies, binary32 adds, RNE + FTZ),
    # 128 x 128 PEs of 4 MACs = 65,536 MACs = the four MXUs.
    return Chip(
        "TPU v4i 4 MXUs (7 nm, 1.05 GHz, bf16 PE)",
        DesignPoint(
            rows=128,
            cols=128,
            sparse=False,
            node_nm=7,
            clock_mhz=1050,
            voltage_v=tech.nominal_voltage(7),
            sram_kb=0,
            dram="hbm2",
            dram_units=1,
            precision="bf16",
            vector_lanes=0,
        ),
        {"mxu_area_mm2": (0.11 * 400, "array", "about 11 % of a < 400 mm^2 die: an upper bound")},
        {
            "mxu_area_mm2": "the published figure is a floorplan share of a die only bounded from above (< 400 mm^2), "
            "so 44 mm^2 is an upper bound (and the 11 % is a review's reading of the floor plan: the "
            "paper's text gives the die and CMEM's 28 % only), and the share includes the MXUs' weight "
            "shift registers, "
            "input/result FIFOs, transpose paths and wiring. The bf16 array is 3.3x the INT8 one where "
            "Horowitz's operator areas give 12x, but not for a reduced float unit: at 45 nm the model's "
            "binary32 adder is 0.95x Horowitz's FP32 add area, its INT32 add and INT8 multiply 3.2x his "
            "(bench/bench_ppa_precision.py), so his FP/INT ratio is that of small integer operators; "
            "and see the area note below"
        },
        "in: 65,536 bf16 MACs (bf16 multiply, binary32 add chain) with their pipeline registers; out: weight "
        "double buffers beyond the PE's, FIFOs, transpose unit, MXU wiring. Not compared: the clock (our bf16 PE "
        "adds its four products and the partial sum in one cycle, a chain of binary32 adds, so its fmax is far "
        "below 1.05 GHz; the MXU pipelines it) and the power density flag (the model's die is the MXUs alone)",
    )


def a100() -> Chip:
    """The A100's INT8 tensor cores."""
    # NVIDIA A100 SXM4: 7 nm, 826 mm^2, 1410 MHz, 400 W, INT8 624 dense TOPS (432 TCs x 512 MACs),
    # 40 MB L2, five HBM2 stacks. No sub-scope (tensor-core area or power) figure is published in the
    # reference: area, power and TOPS/W compare a GPU die/TDP with an INT8 array and stay misses.
    return Chip(
        "A100 INT8 tensor cores (7 nm, 1410 MHz)",
        DesignPoint(
            rows=256,
            cols=216,
            sparse=False,
            node_nm=7,
            clock_mhz=1410,
            voltage_v=tech.nominal_voltage(7),
            sram_kb=40 * 1024,
            sram_banks=10,
            dram="hbm2",
            dram_units=5,
            acc_bits=32,
            cooling="liquid",
        ),
        {
            "peak_tops": (624.0, "array", "432 x 512 x 2 x 1.41 GHz"),
            "area_mm2": (826.0, "chip", "whole die"),
            "power_w": (400.0, "chip", "TDP"),
            "tops_per_w": (624.0 / 400.0, "chip", "peak INT8 TOPS / TDP"),
        },
        {
            "area_mm2": "scope, not a model check: the A100 die is a GPU (108 SMs of FP32/FP64 cores, 27 MB "
            "register files, 20 MB L1, NVLink and PCIe); the model costs only the INT8 MAC array, "
            "40 MB SRAM and five HBM2 PHYs; no tensor-core-only area is published",
            "power_w": "scope, not a model check: TDP covers the whole GPU (FP pipelines, register files, NVLink, "
            "HBM devices); the model only the INT8 array path; no tensor-core power is published",
            "tops_per_w": "scope, not a model check (see power_w)",
        },
        "in: 221,184 INT8 MACs, 40 MB SRAM, 5 HBM2 PHYs; out: the rest of the GPU",
    )


def chips() -> list[Chip]:
    """Every configured chip, in the validation table's order."""
    return [tpu_v1(), eyeriss_v1(), *nvdla_chips(), tpu_v4i(), a100()]
