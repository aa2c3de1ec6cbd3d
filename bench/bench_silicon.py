"""The PPA model against published silicon: TPU v1, Eyeriss v1, the NVDLA configurations and the
A100's INT8 tensor-core throughput, side by side.

Run: python bench/bench_silicon.py            (first run synthesises the 16-bit PE, ~1 minute)

Every design is configured from its published architecture only (MAC count, precision, node,
clock, on-chip SRAM, DRAM type) and costed with ppa.model.estimate, whose energy constants are
calibrated on Horowitz (45 nm) and Jouppi (7 nm) operator energies and whose logic area comes from
published process logic densities (ppa.tech), never on these chips. Sources are in
docs/published-silicon.md. Our PE covers M = 4 reduction elements per cycle (4 multipliers and an
adder tree), so a chip of N MACs is configured as R x C PEs with R x C x 4 = N.

Scope of each published figure (printed in the table):
- "chip": the whole die or package (host interface, control, caches, PHYs, I/O);
- "block": the accelerator block without DRAM PHY (NVDLA's synthesis areas include its memories);
- "array": the MAC array only.
The model's figure is taken at the same scope: chip = everything ppa.model costs (array, SRAM,
PHY, wiring/control allowances), block = chip less PHY, array = pe_array + decoders.
Power is on-die power (DRAM device power excluded) at the default activity (every PE busy), so
model TOPS/W is peak; the published TOPS/W is published peak TOPS over published power.

Targets (issue 10): every figure within 2x; array area and TOPS/W of the matrix units within 1.5x.
Misses are printed with their reason.
"""

from __future__ import annotations

from dataclasses import dataclass, field

from ppa import tech
from ppa.model import DesignPoint, estimate


@dataclass
class Chip:
    name: str
    design: DesignPoint
    published: dict  # figure -> (value, scope, note)
    reasons: dict = field(default_factory=dict)  # figure -> why a miss is expected


def _chips() -> list[Chip]:
    chips = []
    # Google TPU v1 (Jouppi et al. ISCA 2017): 256 x 256 INT8 MACs, 28 nm, 700 MHz, 92 TOPS,
    # 24 MiB unified buffer (+ 4 MiB accumulators = 28 MiB on chip), 40 W busy, two DDR3 channels
    # (34 GB/s; DDR4-class channels here). Die area NOT FOUND (published-figures §8b).
    chips.append(Chip(
        "TPU v1 (28 nm, 700 MHz)",
        DesignPoint(rows=128, cols=128, sparse=False, node_nm=28, clock_mhz=700, voltage_v=tech.nominal_voltage(28),
                    sram_kb=28 * 1024, sram_banks=8, dram="ddr4", dram_units=2, acc_bits=32, cooling="liquid"),
        {"peak_tops": (92.0, "array", "65,536 x 2 x 0.7 GHz"),
         "power_w": (40.0, "chip", "busy"),
         "tops_per_w": (92.0 / 40.0, "chip", "peak TOPS / busy power")},
        {"power_w": "published power is the busy chip (host interface, control, DDR3 I/O) at an undisclosed "
                    "voltage; the model runs the array 100 % busy at the 28 nm nominal 0.9 V [A]",
         "tops_per_w": "chip-scope power (see power_w)"},
    ))
    # Eyeriss v1 (Chen et al. JSSC 2017): 65 nm, 168 PEs, 16-bit fixed point, 108 KB global
    # buffer, 200 MHz core clock, 1 V; 278 mW on AlexNet conv layers; die 4.0 x 4.0 mm (pads incl.).
    # Each PE holds scratchpads of 224 (filter) + 12 (ifmap) + 24 (psum) 16-bit words [S: JSSC 2017
    # via the Eyeriss tutorial]; costed as SRAM: 168 x 260 x 2 B = 85.3 KB on top of the 108 KB.
    spad_kb = 168 * (224 + 12 + 24) * 2 / 1024
    chips.append(Chip(
        "Eyeriss v1 (65 nm, 200 MHz, 1.0 V)",
        DesignPoint(rows=6, cols=7, sparse=False, node_nm=65, clock_mhz=200, voltage_v=1.0, sram_kb=108 + spad_kb,
                    act_bits=16, weight_bits=16, acc_bits=32, dram="lpddr5", dram_units=4),
        {"area_mm2": (16.0, "chip", "4.0 x 4.0 mm die, pads included"),
         "power_w": (0.278, "chip", "AlexNet conv layers, 35 fps"),
         "tops_per_w": (2 * 168 * 0.2e9 / 1e12 / 0.278, "chip", "peak 67 GOPS / 278 mW")},
        {"area_mm2": "the published figure is the whole 4 x 4 mm die with its pad ring; Eyeriss keeps its PE "
                     "scratchpads in register files (costed here as CACTI SRAM, denser) and has a NoC and "
                     "run-length codec the model does not cost; and see the area note below the table",
         "power_w": "published power is on AlexNet with the PEs partly idle; the model runs every PE busy",
         "tops_per_w": "published is peak ops over measured AlexNet power (a lower bound on efficiency)"},
    ))
    # NVDLA (nvdla/doc primer.rst "Example Area and Performance"): 28 nm synthesis areas with memories,
    # INT8; clock 1 GHz [A: not in our excerpt].
    for macs, kb, mm2 in ((2048, 512, 5.5), (1024, 256, 3.0), (512, 256, 2.3), (256, 256, 1.7),
                          (128, 256, 1.4), (64, 128, 0.91), (32, 128, 0.85)):
        pes = macs // 4
        r = 1 << ((pes.bit_length() - 1 + 1) // 2)
        c = pes // r
        chips.append(Chip(
            f"NVDLA {macs} MACs / {kb} KB (28 nm)",
            DesignPoint(rows=r, cols=c, sparse=False, node_nm=28, clock_mhz=1000, voltage_v=tech.nominal_voltage(28),
                        sram_kb=kb, dram="lpddr5", dram_units=2, acc_bits=32),
            {"block_area_mm2": (mm2, "block", "synthesis area, memories included")},
            {"block_area_mm2": "NVDLA's area includes its DMA, convolution sequencer, 48-bit accumulator buffer, "
                               "SDP/PDP/CDP (activation, pooling, LRN) engines and, in nv_full, INT16/FP16 MACs: "
                               "1,400-2,300 um^2 per MAC from its own table against about 950 um^2 for an INT8 MAC "
                               "here; the model has a 5 % control allowance and CACTI (ITRS-HP) SRAM density"},
        ))
    # Google TPU v4i (Jouppi et al. ISCA 2021 section 3 / Fig. 6): 7 nm, 1.05 GHz, four 128 x 128 bf16
    # MXUs, "about 11 %" of a die "< 400 mm^2", i.e. < 44 mm^2 for the four. Our PE is integer only:
    # the INT8 array's area is converted to bf16 MACs by the Horowitz 45 nm area ratio [D]
    # (bf16 multiply ~ fp16 multiply 1640 um^2 x (8/11)^2 for the mantissa = 867, + fp32 add
    # 4184) / (int8 multiply 282 + int32 add 137) = 12.1 (published-figures §3).
    chips.append(Chip(
        "TPU v4i 4 MXUs (7 nm, 1.05 GHz) [bf16 via area ratio]",
        DesignPoint(rows=128, cols=128, sparse=False, node_nm=7, clock_mhz=1050, voltage_v=tech.nominal_voltage(7),
                    sram_kb=0, dram="hbm2", dram_units=1, acc_bits=32),
        {"mxu_area_mm2": (0.11 * 400, "array", "about 11 % of a < 400 mm^2 die (upper bound)")},
        {"mxu_area_mm2": "the 11 % is a floorplan share (an upper bound) that includes the MXUs' weight "
                         "shift registers, FIFOs and wiring; the bf16 MAC is converted from INT8 by Horowitz's "
                         "45 nm operator areas; and see the area note below the table"},
    ))
    # NVIDIA A100 SXM4: 7 nm, 826 mm^2, 1410 MHz, 400 W, INT8 624 dense TOPS (432 TCs x 512 MACs),
    # 40 MB L2, five HBM2 stacks.
    chips.append(Chip(
        "A100 INT8 tensor cores (7 nm, 1410 MHz)",
        DesignPoint(rows=256, cols=216, sparse=False, node_nm=7, clock_mhz=1410, voltage_v=tech.nominal_voltage(7),
                    sram_kb=40 * 1024, sram_banks=10, dram="hbm2", dram_units=5, acc_bits=32, cooling="liquid"),
        {"peak_tops": (624.0, "array", "432 x 512 x 2 x 1.41 GHz"),
         "area_mm2": (826.0, "chip", "whole die"),
         "power_w": (400.0, "chip", "TDP"),
         "tops_per_w": (624.0 / 400.0, "chip", "peak INT8 TOPS / TDP")},
        {"area_mm2": "the A100 die is a GPU: 108 SMs of FP32/FP64 cores, 27 MB register files, 20 MB L1, "
                     "NVLink and PCIe; the model costs only the INT8 MAC array, 40 MB SRAM and five HBM2 PHYs",
         "power_w": "TDP covers the whole GPU (FP pipelines, register files, NVLink, HBM); the model only the INT8 array path",
         "tops_per_w": "same scope difference as power"},
    ))
    return chips


#: [D] bf16 MAC / INT8 MAC area at 45 nm from Horowitz's operator areas (see the TPU v4i entry)
BF16_OVER_INT8_MAC_AREA = (1640.0 * (8 / 11) ** 2 + 4184.0) / (282.0 + 137.0)


def _model_figures(res) -> dict:
    a = res.area_breakdown_mm2
    p = res.power_breakdown_w
    on_die = None if res.power_w is None else res.power_w - p["dram"]
    return {
        "peak_tops": res.peak_tops,
        "area_mm2": res.area_mm2,
        "block_area_mm2": res.area_mm2 - a["phy"],
        "array_area_mm2": a["pe_array"] + a["decoders"],
        # four 128 x 128 MXUs = 65,536 MACs; the design is 128 x 128 PEs of 4 MACs: a quarter of it
        "mxu_area_mm2": (a["pe_array"] + a["decoders"]) / 4 * BF16_OVER_INT8_MAC_AREA,
        "power_w": on_die,
        "tops_per_w": None if not on_die else res.peak_tops / on_die,
    }


def main() -> None:
    print("sparsepe PPA model vs published silicon (energy calibrated on Horowitz 45 nm / Jouppi 7 nm, logic area "
          "on published process logic densities; nothing fitted to these chips)\n")
    hdr = f"{'design':42s} {'figure':15s} {'scope':6s} {'model':>10s} {'published':>10s} {'ratio':>6s}  verdict"
    print(hdr)
    print("-" * len(hdr))
    misses = []
    for chip in _chips():
        res = estimate(chip.design)
        m = _model_figures(res)
        nd = tech.node(chip.design.node_nm, res.voltage_v)
        print(f"{chip.name:42s} {'clock':15s} {'array':6s} {res.clock_mhz:8.0f} MHz at {res.voltage_v:.2f} V "
              f"(Vmin {res.details['vmin_v']:.2f}, fmax {res.fmax_at_voltage_mhz:.0f} MHz, FO4 {nd.fo4_ps:.1f} ps)"
              f"{'' if res.feasible else '  INFEASIBLE: ' + '; '.join(res.infeasible_reasons)}")
        print(f"{'':42s} {'array area':15s} {'array':6s} {m['array_area_mm2']:10.3g} {'-':>10s}")
        for fig, (pub, scope, note) in chip.published.items():
            got = m[fig]
            if got is None:
                print(f"{'':42s} {fig:15s} {scope:6s} {'n/a':>10s} {pub:10.3g}")
                continue
            ratio = got / pub
            limit = 1.5 if scope == "array" and fig in ("array_area_mm2", "mxu_area_mm2", "tops_per_w") else 2.0
            ok = 1 / limit <= ratio <= limit
            verdict = f"within {limit:g}x" if ok else f"MISS (> {limit:g}x)"
            print(f"{'':42s} {fig:15s} {scope:6s} {got:10.3g} {pub:10.3g} {ratio:6.2f}  {verdict}   [{note}]")
            if not ok:
                misses.append((chip.name, fig, ratio, chip.reasons.get(fig, "no reason recorded")))
        print()
    if misses:
        print("Misses and their reasons:")
        for name, fig, ratio, why in misses:
            print(f"- {name}, {fig} (ratio {ratio:.2f}): {why}")
    h = tech.horowitz_area_check()
    print(f"\nArea note: logic area per transistor = 1 / (the node's published peak logic density x "
          f"{tech.REALISED_DENSITY_FRACTION:.2f} realised fraction: {tech.PLACEMENT_UTILISATION:.2f} placement "
          f"utilisation / {tech.POST_LAYOUT_CELL_GROWTH:.2f} post-layout cell growth), ppa.tech: "
          + ", ".join(f"{nm} nm {tech.node(nm).area_per_transistor_um2:.3g} um^2 ({tech.logic_density_mtr_mm2(nm):.3g} MTr/mm^2 peak)"
                      for nm in (65, 28, 7))
          + f". Check: Horowitz's 45 nm 8-bit multiplier (282 um^2, a cell-area figure) against our {tech.CAL_MUL8_TRANSISTORS}-transistor "
          f"netlist: {h['model_block_um2']:.0f} um^2 placed ({h['block_ratio']:.2f}x), {h['model_cell_um2']:.0f} um^2 "
          f"at peak cell density ({h['cell_ratio']:.2f}x). SRAM area is CACTI's (ITRS-HP cells), unchanged.")


if __name__ == "__main__":
    main()
