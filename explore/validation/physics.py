"""The physics rows of ``sparsepe validate``: operator (MAC) energy, SRAM and DRAM energy, PHY
energy and area, the 7 nm stage timing of the PE, voltage-frequency points, and the clock and
leakage shares of power. Each row puts one model figure, computed through ppa's public functions,
against one published figure (ppa.references, or the fit source for fit anchors).
"""

from __future__ import annotations

import math
from dataclasses import replace

from explore.validation.row import Row, fit_row, ranged
from hw.errors import InputError
from hw.params import PEParams
from ppa import calibration, dram, phy, references, rtl, silicon_clock, sram, synth, tech
from ppa.design import DesignPoint, PPAResult
from ppa.liberty import asap7, sizing
from ppa.liberty.area import mapped_cell_area_um2
from ppa.liberty.energy import clock_with_leaf_wire
from ppa.liberty.library import default_liberty, load_liberty
from ppa.model import estimate
from ppa.timing.mapping import FASTEST_CLOCK_PS
from ppa.timing.opensta import find_sta

#: the operating points the operator anchors state: Horowitz's table is at 0.9 V (45 nm), Jouppi's
#: is taken at the 7 nm nominal 0.7 V (ppa.tech.JOUPPI_V)
ANCHOR_V = {45: tech.HOROWITZ_V, 7: tech.JOUPPI_V}
#: the node between the anchors whose MAC energy is shown (no published figure: not a check)
MID_NODE_NM = 16


def with_liberty(design: DesignPoint, liberty: dict | None) -> DesignPoint:
    """``design`` timed with the Liberty file in ``liberty`` (``{"liberty": path, "liberty_node_nm": nm}``)."""
    return replace(design, **liberty) if liberty else design


def compute_mac_pj(res: PPAResult) -> float:
    """Compute energy per effective MAC (pJ): the array's dynamic + clock power over its MAC rate
    (the scope of an operator-energy table: no SRAM, DRAM or leakage)."""
    p = res.power_breakdown_w
    return (p["dynamic"] + p["clock"]) / res.details["effective_macs_per_s"] * 1e12


def _mac_design(nm: int, precision: str, liberty: dict | None) -> DesignPoint:
    v = ANCHOR_V.get(nm)
    return with_liberty(
        DesignPoint(
            rows=16,
            cols=16,
            sparse=False,
            pipeline=1,
            node_nm=nm,
            voltage_v=v,
            sram_kb=0,
            vector_lanes=0,
            precision=precision,
        ),
        liberty,
    )


def mac_rows(liberty: dict | None = None) -> list[Row]:
    """MAC energy rows. The PE runs ppa.activity's synthetic trace (no workload): the published
    figures are per-operation energies of operator tables, measured on no workload's data, and the
    7 nm INT8 row is the fit anchor the node correction was set on; a sweep's workload-family
    trace (explore.activity_traces) moves these figures by its data (docs/model.md)."""
    rows = []
    int8 = {nm: compute_mac_pj(estimate(_mac_design(nm, "int8", liberty))) for nm in (45, MID_NODE_NM, 7)}
    bf16 = {nm: compute_mac_pj(estimate(_mac_design(nm, "bf16", liberty))) for nm in (45, 7)}
    fp16 = {nm: compute_mac_pj(estimate(_mac_design(nm, "fp16", liberty))) for nm in (45, MID_NODE_NM)}
    # the PE multiplies 8 x 8 bits and accumulates in 32 bits: an 8-bit multiply plus a 32-bit add
    h_int8 = tech.HOROWITZ_MUL8_PJ + tech.HOROWITZ_ADD32_PJ  # [S] Horowitz: 0.2 + 0.1 pJ
    j_int8 = tech.JOUPPI_MUL8_7NM_PJ + tech.JOUPPI_ADD32_7NM_PJ  # [S] Jouppi Table 2: 0.07 + 0.03 pJ
    rows.append(
        fit_row(
            "mac",
            "INT8 MAC energy (dense PE, compute only)",
            45,
            int8[45],
            h_int8,
            "pJ",
            "[S] Horowitz ISSCC 2014 (45 nm, 0.9 V): 8-bit multiply 0.2 + 32-bit add 0.1 pJ (the PE accumulates in 32 bits)",
            ["Horowitz 45 nm 8-bit multiply and 32-bit add (ppa.tech toggle energy)"],
        )
    )
    rows.append(
        fit_row(
            "mac",
            "INT8 MAC energy (dense PE, compute only)",
            7,
            int8[7],
            j_int8,
            "pJ",
            "[S] Jouppi et al. ISCA 2021 Table 2 (7 nm): 8-bit multiply 0.07 + 32-bit add 0.03 pJ (the PE accumulates in 32 bits)",
            ["Jouppi 7 nm 8-bit multiply and 32-bit add (ppa.tech node correction K7)"],
        )
    )
    h = references.HOROWITZ_FP16MUL_FP32ADD_PJ
    rows.append(
        Row(
            "mac",
            "FP16 MAC energy (dense PE: fp16 multiply, binary32 add)",
            45,
            fp16[45],
            h.value,
            "pJ",
            h.source,
            held_out=True,
            reason=""
            if _ok(fp16[45], h.value)
            else "the multiplier: Horowitz's fp16 multiply (1.1 pJ) is 1.8x this flow's fp16 FPMul on random "
            "operands, while the binary32 adder is 0.95x his fp32 add (bench/bench_ppa_precision.py)",
        )
    )
    rows.append(
        Row(
            "mac",
            "BF16 MAC energy (dense PE: bf16 multiply, binary32 add)",
            45,
            bf16[45],
            h.value,
            "pJ",
            h.source,
            held_out=False,
            reason="not a check: Horowitz's table has no bf16; shown against his fp16 multiply + fp32 add, "
            "whose 11-bit significands make 1.9x the partial products of bf16's 8-bit ones (the "
            "FP16 row is the check against that reference; the 7 nm BF16 row against Jouppi's bf16)",
        )
    )
    j = references.JOUPPI_BF16_MAC_PJ
    rows.append(
        Row(
            "mac",
            "BF16 MAC energy (dense PE: bf16 multiply, binary32 add)",
            7,
            bf16[7],
            j.value,
            "pJ",
            j.source,
            held_out=True,
            reason=""
            if _ok(bf16[7], j.value)
            else "Jouppi's bf16 multiply is 3.0x his INT8 one where the model's is 1.65x (0.10 pJ), and his fp32 "
            "add 12.7x his INT32 add where the model's is 8.1x (0.28 pJ; Horowitz's ratio is 9, and the model's "
            "adder is 0.95x Horowitz's absolute fp32 add); the published FP multipliers cost more per "
            "partial-product bit than any multiplier of this flow (bench/bench_ppa_precision.py)",
        )
    )
    rows += operator_rows()
    scale = tech.node(MID_NODE_NM).energy_factor / tech.node(45, tech.HOROWITZ_V).energy_factor
    for label, got, ref in (("INT8", int8[MID_NODE_NM], h_int8), ("FP16", fp16[MID_NODE_NM], h.value)):
        rows.append(
            Row(
                "mac",
                f"{label} MAC energy (dense PE), between the anchors",
                MID_NODE_NM,
                got,
                ref * scale,
                "pJ",
                "[D] Horowitz 45 nm scaled by Stillmaker & Baas 2017's device energy (no node correction)",
                held_out=False,
                reason="no published MAC energy at this node was found: shown against Stillmaker-scaled Horowitz, "
                "which the model's node correction K departs from on purpose; not a check",
            )
        )
    return rows


def operator_rows(cache=None) -> list[Row]:
    """The integer operators of the two tables the toggle energy is fitted on (ppa.calibration): the
    8-bit multiply and 32-bit add are the fit (one constant per node for both, so neither is its own
    check); the 8-bit add and the 32-bit multiply are held out, at 45 nm (Horowitz, 0.9 V) and 7 nm
    (Jouppi, the node's nominal voltage). Each is the operator's own netlist (ppa.operators) costed
    with the model's toggle energy (``cache``: the synthesis cache, default the tool's) and, when the
    default library and OpenSTA are installed, its sizing factor (ppa.liberty.sizing), as the MAC
    rows' PEs on the STA path."""
    rows = []
    lib = default_liberty() if find_sta() is not None else None
    sz = (lambda kind, width: sizing.operator_sizing_factor(kind, width, lib)) if lib is not None else None
    for nm, table, src in (
        (45, calibration.held_out_table(cache=cache, sizing=sz), "[S] Horowitz ISSCC 2014 (45 nm, 0.9 V)"),
        (
            7,
            calibration.node_scaling_crosscheck(cache=cache, sizing=sz),
            "[S] Jouppi et al. ISCA 2021 Table 2 (7 nm)",
        ),
    ):
        for r in table:
            q = f"{r['operator']} energy (operator netlist)"
            if r["energy_anchor"]:
                rows.append(
                    fit_row(
                        "mac",
                        q,
                        nm,
                        r["energy_pj"],
                        r["energy_ref_pj"],
                        "pJ",
                        src,
                        [f"{src}: 8-bit multiply and 32-bit add, one toggle energy for both (ppa.tech)"],
                    )
                )
            else:
                rows.append(
                    Row(
                        "mac",
                        q,
                        nm,
                        r["energy_pj"],
                        r["energy_ref_pj"],
                        "pJ",
                        src + " (held out of the fit)",
                        held_out=True,
                        reason=""
                        if _ok(r["energy_pj"], r["energy_ref_pj"])
                        else "one toggle energy per node for every operator, fitted on the geometric mean of the "
                        "8-bit multiply and the 32-bit add; Jouppi's 32-bit multiply is 21x his 8-bit one where "
                        "Horowitz's is 15.5x and this netlist's 19.8x",
                    )
                )
    return rows


def _ok(model: float, ref: float) -> bool:
    return 1 / 1.5 <= model / ref <= 1.5


def sram_rows() -> list[Row]:
    rows = []
    tables = {
        45: (sram.HOROWITZ_64B_PJ, "[S] Horowitz ISSCC 2014 (45 nm, 0.9 V)"),
        7: (sram.JOUPPI_7NM_64B_PJ, "[S] Jouppi et al. ISCA 2021 Table 2 (7 nm)"),
    }
    for nm, (table, src) in tables.items():
        v = ANCHOR_V[nm]
        for kb, ref in table.items():
            got = sram.sram(kb, nm, word_bits=64, voltage_v=v).read_pj
            q = f"SRAM 64-bit read energy, {kb} KB"
            if kb in sram.SILICON_FIT_KB:
                rows.append(
                    fit_row(
                        "sram", q, nm, got, ref, "pJ", src, [f"{src}: {kb} KB point (a + b sqrt(KB) law)"]
                    )
                )
            else:
                rows.append(
                    Row(
                        "sram",
                        q,
                        nm,
                        got,
                        ref,
                        "pJ",
                        src + f", {kb} KB (held out of the fit)",
                        held_out=True,
                        reason="" if _ok(got, ref) else "the sqrt-of-capacity law misses the middle point",
                    )
                )
    k40 = references.KECKLER_8KB_40NM_PJ
    got = sram.sram(8, 45, word_bits=64, voltage_v=tech.HOROWITZ_V).read_pj
    rows.append(
        Row(
            "sram",
            "SRAM 64-bit read energy, 8 KB (model at 45 nm, 0.9 V; reference at 40 nm)",
            45,
            got,
            k40.value,
            "pJ",
            k40.source,
            held_out=True,
            reason="" if _ok(got, k40.value) else "Keckler's 40 nm figure exceeds Horowitz's 45 nm one",
        )
    )
    k10 = references.KECKLER_8KB_10NM_PJ
    got = sram.sram(8, 10, word_bits=64).read_pj
    j8 = sram.JOUPPI_7NM_64B_PJ[8]
    rows.append(
        Row(
            "sram",
            "SRAM 64-bit read energy, 8 KB: silicon-derived (default) vs Keckler's 2011 projection",
            10,
            got,
            **ranged(k10.low, k10.high),
            unit="pJ",
            source=k10.source,
            held_out=False,
            reason=f"conflict between sources, not a check: Jouppi's later 7 nm table, derived from silicon, "
            f"reads {j8:g} pJ at 8 KB, {j8 / k10.high:.1f}-{j8 / k10.low:.1f}x this projection for a "
            f"larger node, so no energy law can meet both; the default follows the silicon-derived "
            f"table (its 32 KB point is held out at 7 nm) and interpolates between 45 and 7 nm",
        )
    )
    for nm in (45, 7):
        for kb in (32, 1024):
            c = sram.conflict(kb, nm)
            rows.append(
                Row(
                    "sram",
                    f"SRAM 64-bit read energy, {kb} KB: silicon-derived (default) vs CACTI 7",
                    nm,
                    c["silicon_pj"],
                    c["cacti_pj"],
                    "pJ",
                    "[T] CACTI 7 (ITRS-HP, 512-bit port scaled to 64 bits): the selectable alternative "
                    "(--sram-model cacti)",
                    held_out=False,
                    reason="conflict between sources, not a check: the default follows the silicon-derived "
                    "tables; CACTI's ITRS-HP periphery reads 2-10x cheaper",
                )
            )
    return rows


def dram_rows() -> list[Row]:
    rows = []
    j = references.JOUPPI_HBM2_PJ_PER_BIT
    got = phy.total_pj_per_bit("hbm2")
    rows.append(
        Row(
            "dram",
            "HBM2 energy per bit, device + SoC PHY",
            None,
            got,
            **ranged(j.low, j.high),
            unit="pJ/bit",
            source=j.source,
            held_out=True,
            reason="" if j.low / 1.5 <= got <= j.high * 1.5 else "below Jouppi's range",
        )
    )
    hx = references.HYNIX_HBM2E_PJ_PER_BIT
    rows.append(
        Row(
            "dram",
            "HBM2 device energy per bit (O'Connor's breakdown) vs an HBM2E part",
            None,
            dram.dram("hbm2").pj_per_bit,
            hx.value,
            "pJ/bit",
            hx.source,
            held_out=True,
            reason="" if _ok(dram.dram("hbm2").pj_per_bit, hx.value) else "generations differ",
        )
    )
    rows.append(
        fit_row(
            "dram",
            "HBM2E device energy per bit",
            None,
            dram.dram("hbm2e").pj_per_bit,
            hx.value,
            "pJ/bit",
            hx.source,
            ["SK hynix HBM2E 4.3 pJ/bit (Moon et al. IEDM 2023)"],
        )
    )
    got = dram.dram("hbm3").pj_per_bit
    rows.append(
        Row(
            "dram",
            "HBM3 device energy per bit, at most HBM2E's (JESD238 lowers its voltages)",
            None,
            got,
            hx.value,
            "pJ/bit",
            hx.source + " (an upper bound: no HBM3 device figure found)",
            held_out=True,
            reason="" if got <= hx.value else "above the previous generation's figure",
        )
    )
    ha = references.HA_LPDDR4_PJ_PER_BIT
    got = dram.lpddr_total_pj_per_bit(dram.LPDDR4_VDDQ)
    rows.append(
        Row(
            "dram",
            "LPDDR family energy per bit (the LPDDR5 model at LPDDR4's VDDQ 1.1 V), device + PHY",
            None,
            got,
            **ranged(ha.low, ha.high),
            unit="pJ/bit",
            source=ha.source,
            held_out=True,
            reason="" if ha.low / 1.5 <= got <= ha.high * 1.5 else "the VDDQ^2 I/O law misses LPDDR4",
        )
    )
    sm = references.SAMSUNG_LPDDR5_OVER_LPDDR4X
    got = dram.lpddr_total_pj_per_bit(dram.LPDDR5_VDDQ) / dram.lpddr_total_pj_per_bit(dram.LPDDR4X_VDDQ)
    rows.append(
        Row(
            "dram",
            "LPDDR5 energy per bit relative to LPDDR4X",
            None,
            got,
            **ranged(sm.low, sm.high),
            unit="ratio",
            source=sm.source,
            held_out=True,
            reason="" if sm.low / 1.5 <= got <= sm.high * 1.5 else "the VDDQ^2 I/O law misses the trend",
        )
    )
    rows.append(
        fit_row(
            "dram",
            "DDR4 energy per bit, device + SoC PHY",
            None,
            phy.total_pj_per_bit("ddr4"),
            1300 / 64,
            "pJ/bit",
            "[S] Jouppi et al. ISCA 2021 Table 2: DDR3/4 1300 pJ per 64 b",
            ["Jouppi / Horowitz 1300 pJ per 64-bit DDR access"],
        )
    )
    hz = references.HOROWITZ_DRAM_PJ_PER_BIT
    got = phy.total_pj_per_bit("ddr4")
    rows.append(
        Row(
            "dram",
            "DDR4 energy per bit, device + SoC PHY",
            None,
            got,
            **ranged(hz.low, hz.high),
            unit="pJ/bit",
            source=hz.source,
            held_out=True,
            reason="" if hz.low / 1.5 <= got <= hz.high * 1.5 else "outside Horowitz's range",
        )
    )
    return rows


#: PHY areas seen only as secondary copies (other tools' model constants and review notes quoting a
#: paper's table), the primary text not read: printed beside the unvalidated rows, never a check
PHY_AREA_LEADS = {
    "hbm2": (
        "; secondary copies only, primary not read: 14.9 mm^2 per HBM2/2E-class stack (a cost model's "
        "constant) and 29.6 mm^2 per HBM3 stack (a note on zkSpeed, ISCA 2025, Table 5: 59.2 mm^2 for two), "
        "against this model's 11.1 mm^2"
    ),
    "lpddr5": (
        "; a secondary, uncited note: a 10 nm all-digital 16-bit LPDDR4 PHY test chip, 0.57 mm^2 with its "
        "PLL, against this model's 1.0 mm^2 per x16 channel"
    ),
}


def phy_rows() -> list[Row]:
    rows = []
    mw = 8.0  # mW per GB/s per pJ/bit
    rows.append(
        fit_row(
            "phy",
            "HBM PHY + controller energy per GB/s",
            None,
            phy.phy("hbm3").pj_per_bit * mw,
            0.29 * mw,
            "mW per GB/s",
            "[P] 4 nm HBM3 interface, IEEE JSSC 59(1) 2024: 0.29 pJ/bit",
            ["4 nm HBM3 interface, JSSC 2024"],
        )
    )
    pam = references.PAM4_HBM_PHY_PJ_PER_BIT
    got = phy.phy("hbm3").pj_per_bit * mw
    rows.append(
        Row(
            "phy",
            "HBM PHY + controller energy per GB/s",
            None,
            got,
            pam.value * mw,
            "mW per GB/s",
            pam.source,
            held_out=True,
            reason="" if _ok(got, pam.value * mw) else "interfaces differ (PAM-4, 40 nm)",
        )
    )
    rows.append(
        fit_row(
            "phy",
            "LPDDR/DDR PHY energy per GB/s at LPDDR4's VDDQ 1.1 V (one link end)",
            None,
            dram.link_end_pj_per_bit(dram.LPDDR4_VDDQ) * mw,
            (5.68 + 1.83) / 2 * mw,
            "mW per GB/s",
            "[P] Kim et al. IEEE TCAS-II 2018, 65 nm LPDDR4 interface: 5.68 write / 1.83 read pJ/bit",
            ["Kim et al. 2018 LPDDR4 interface (scaled by VDDQ^2 to LPDDR5 and DDR4)"],
        )
    )
    for kind in ("hbm2", "lpddr5", "ddr4"):
        p, d = phy.phy(kind), dram.dram(kind)
        rows.append(
            Row(
                "phy",
                f"{p.name} area per GB/s",
                None,
                p.area_mm2 / d.gb_per_s,
                None,
                "mm^2 per GB/s",
                p.source,
                held_out=False,
                reason="no published PHY area was found in the sources searched: the figure is the bump/pad "
                "field derivation of ppa.phy, unvalidated" + PHY_AREA_LEADS.get(kind, ""),
            )
        )
    return rows


def timing_rows(liberty: dict | None = None) -> list[Row]:
    d = with_liberty(
        DesignPoint(rows=1, cols=1, node_nm=7, sparse=True, n=2, m=4, pipeline=1, sram_kb=0, vector_lanes=0),
        liberty,
    )
    res = estimate(d)
    b = references.PE_7NM_FMAX_BOUND_MHZ
    got = res.fmax_at_voltage_mhz
    src = res.details["timing"]["source"]
    # shipped 7 nm accelerators clock at 1.05 (TPU v4i) to 1.41 GHz (A100): the range; the issue's
    # bound (2.5 GHz) lies above its 1.5x tolerance (2.1 GHz)
    lo, hi = 1050.0, 1410.0
    rows = [
        Row(
            "timing",
            f"fmax of the pipeline-1 INT8 2:4 PE at nominal voltage (shipped 7 nm accelerators "
            f"{lo / 1e3:g}-{hi / 1e3:g} GHz; at most {b.value / 1e3:g} GHz)",
            7,
            got,
            unit="MHz",
            source=b.source,
            held_out=True,
            **ranged(lo, hi),
            reason=""
            if lo / 1.5 <= got <= min(hi * 1.5, b.value)
            else f"timed on {'the Liberty library' if src == 'sta' else 'the generic path'} in FO4 and scaled by the "
            f"7 nm timing FO4 of {tech.node(7).gate_delay_ps:.2f} ps",
        )
    ]
    rows.append(
        fit_row(
            "timing",
            "timing FO4 at 7 nm, 0.7 V (the unit a stage is clocked in)",
            7,
            tech.node(7).gate_delay_ps,
            19.48,
            "ps",
            "[D] ASAP7 RVT TT INVx1 FO4, OpenSTA (Clark et al., Microelectronics Journal 2016)",
            ["ASAP7 library FO4 (ppa.tech.FO4_7NM_PS)"],
        )
    )
    lo, hi = silicon_clock.PRODUCTION_7NM_BOUNDS
    rows.append(
        Row(
            "timing",
            "node FO4 at 7 nm, 0.7 V (details.fo4_ps: 45 nm x Stillmaker's 0.259)",
            7,
            tech.node(7).fo4_ps,
            tech.GATE_DELAY_45_PS * tech.stillmaker_delay_ratio(7),
            "ps",
            "[S] Stillmaker & Baas 2017 HP7 at 0.7 V over HP45 at 1.0 V (published-figures §4)",
            held_out=False,
            reason=f"not a check: the node FO4 is that ratio times the 45 nm FO4; the timing FO4 is "
            f"{tech.REALISED_PATH_FACTOR_7NM:.2f}x it (the realised-path factor: extracted cell "
            f"parasitics and middle-of-line capacitance the device fits leave out); the A72 chiplet "
            f"bounds a production corner to {lo:.2f}-{hi:.2f}x the ASAP7 RVT one (ppa.silicon_clock)",
        )
    )
    for r in silicon_clock.a72_7nm_check():
        lo, hi = silicon_clock.A72_FO4_PER_CYCLE_RANGE
        row = Row(
            "timing",
            f"FO4 per cycle of TSMC's 7 nm Cortex-A72 chiplet at {r['published_ghz']:g} GHz, "
            f"{r['voltage_v']:g} V (a 4 GHz core: {lo:g}-{hi:g})",
            7,
            r["fo4_per_cycle"],
            unit="FO4",
            source="[S] VLSI Symposium 2019, TSMC N7 A72 CoWoS chiplet",
            held_out=True,
            **ranged(lo, hi),
        )
        if not row.within:
            row.reason = (
                f"outside the depth a 4 GHz core has: the alpha-power law with the 7 nm Vth "
                f"{tech.VTH_V[7]:.3g} V, fitted at 0.65-0.75 V, moves the 0.7 V FO4 to {r['voltage_v']:g} V"
            )
        rows.append(row)
    rows.append(asap7_stage_row(res))
    return rows


def asap7_stage_row(res: PPAResult) -> Row:
    """The 7 nm stage the model clocks (``res``: its cycle in FO4, from the default library) against
    the same stage timed by OpenSTA on the ASAP7 library (``--liberty asap7``), when it is present."""
    quantity = "cycle of the 1 x 1 INT8 2:4 p1 column in FO4, against OpenSTA on ASAP7"
    source = "[D] OpenSTA on the ASAP7 7 nm library (../shared/reference/asap7, Clark et al. 2016)"
    model = res.details["timing"]["cycle_fo4"]
    why = asap7.why_unavailable()
    if why is not None:
        return Row("timing", quantity, 7, model, None, "FO4", source, held_out=True, reason=why)
    ref = estimate(replace(res.design, liberty=asap7.KEYWORD, liberty_node_nm=None)).details["timing"][
        "cycle_fo4"
    ]
    return Row(
        "timing",
        quantity,
        7,
        model,
        ref,
        "FO4",
        source,
        held_out=True,
        reason="" if _ok(model, ref) else "the default library's mapping differs from ASAP7's",
    )


def asap7_area_rows() -> list[Row]:
    """The 7 nm cell area of the INT8 dense PE and 2:4 PE as the model prices it (the synthesised
    netlist's transistors at TSMC N7's peak logic density, ppa.tech, before placement utilisation and
    post-layout growth) against the same PE mapped for area to the ASAP7 library's cells (Yosys + ABC,
    ``stat -liberty``): held-out checks of the transistor count and the density together. And how
    cell sizing is accounted for: the growth of a minimum-delay (fmax) mapping over the area
    mapping on ASAP7 against the model's post-layout cell growth (shown, not counted)."""
    source = (
        "[D] the PE mapped for area to the ASAP7 7 nm library's cells (../shared/reference/asap7, "
        "Clark et al. 2016; Yosys + ABC, stat -liberty)"
    )
    why = asap7.why_unavailable()
    rows, areas = [], {}
    for sparse, name in ((False, "dense PE"), (True, "2:4 PE")):
        v, top = rtl.pe_verilog(PEParams(), sparse), rtl.pe_name(sparse)
        model = synth.synthesize(v, top).transistors * tech.cell_area_per_transistor_um2(7)
        quantity = f"cell area of the INT8 {name} at 7 nm (transistors at N7's peak density)"
        ref = None
        if why is None:
            try:  # maps with Yosys once per PE and mapping (then cached)
                lib = load_liberty(asap7.merged_liberty_path())
                ref = mapped_cell_area_um2(v, top, lib)
                areas[sparse] = (v, top, lib, ref)
            except InputError as e:
                why = f"ASAP7's cell area could not be read here: {e}"
        rows.append(
            Row(
                "area",
                quantity,
                7,
                model,
                ref,
                "um^2",
                source,
                held_out=True,
                reason=why
                if ref is None
                else ""
                if _ok(model, ref)
                else "the model's transistor count at N7's published density departs from ASAP7's cells",
            )
        )
    growth = tech.POST_LAYOUT_CELL_GROWTH
    quantity = "cell-area growth of timing-driven sizing (the 2:4 PE at 7 nm)"
    if True in areas:
        v, top, lib, area = areas[True]
        fast = mapped_cell_area_um2(v, top, lib, clock_ps=FASTEST_CLOCK_PS)
        rows.append(
            Row(
                "area",
                quantity,
                7,
                growth,
                fast / area,
                "ratio",
                "[D] ASAP7: the PE mapped for minimum delay (buffered, up- and down-sized by ABC) over its "
                "area mapping",
                held_out=False,
                reason="not a check: the model's post-layout cell growth [A] (sizing, the clock tree, hold "
                "fixing, tap cells) against the sizing of a mapping for the PE's fmax, the most "
                "sizing a design needs; a design clocked below its fmax is sized less",
            )
        )
    else:
        rows.append(Row("area", quantity, 7, growth, None, "ratio", source, held_out=False, reason=why))
    return rows


def asap7_clock_row(res: PPAResult) -> Row:
    """The clock energy per flip-flop per cycle the model charges at 7 nm (``res``), in logic-toggle
    equivalents, against ASAP7's library with a leaf clock wire of one flip-flop pitch (the
    design's own cell area per flip-flop) at the ASAP7 platform's clock-wire capacitance. ASAP7 is a
    predictive library, not silicon: shown, never counted as a check."""
    quantity = "clock energy per flip-flop per cycle (7 nm, 16 x 16 2:4 array), logic-toggle equivalents"
    w = references.ASAP7_CLOCK_WIRE_FF_PER_UM
    source = (
        "[D] the ASAP7 7 nm library (../shared/reference/asap7) with a leaf clock wire of one flip-flop "
        f"pitch at {w:.3f} fF/um (OpenROAD-flow-scripts, platforms/asap7/setRC.tcl)"
    )
    model = res.details["clock_energy"]["toggles_per_ff_cycle"]
    why = asap7.why_unavailable()
    if why is not None:
        return Row("power", quantity, 7, model, None, "toggles", source, held_out=False, reason=why)
    pitch_um = math.sqrt(res.area_breakdown_mm2["pe_array"] * 1e6 / res.details["array_flip_flops"])
    try:  # reading the library's energies runs Yosys and OpenSTA once (then cached)
        _, ref = clock_with_leaf_wire(load_liberty(asap7.merged_liberty_path()), w * pitch_um * 1e-3)
    except InputError as e:
        return Row(
            "power",
            quantity,
            7,
            model,
            None,
            "toggles",
            source,
            held_out=False,
            reason=f"ASAP7's clock figure could not be read here: {e}",
        )
    return Row(
        "power",
        quantity,
        7,
        model,
        ref,
        "toggles",
        source,
        held_out=False,
        reason=(
            f"not a check: ASAP7 is a predictive library, not silicon, and the wire ({pitch_um:.1f} um per "
            "flip-flop) is an estimate; the model charges osu018's (180 nm) figure at every node"
        ),
    )


def _vf_rows(
    nm: int, opp: tuple, src: str, picks: tuple[int, ...], fit: list[str] | None = None
) -> list[Row]:
    v_top, f_top = opp[-1]
    vth = tech.VTH_V[tech.NODE_ALIASES.get(nm, nm)]
    rows = []
    for i in picks:
        v, f = opp[i]
        got = tech.alpha_power_delay(v_top, nm) / tech.alpha_power_delay(v, nm)
        ref = f / f_top
        q = f"frequency at {v:g} V relative to {v_top:g} V (alpha-power law)"
        if fit:
            rows.append(fit_row("voltage", q, nm, got, ref, "ratio", src, fit))
            continue
        rows.append(
            Row(
                "voltage",
                q,
                nm,
                got,
                ref,
                "ratio",
                src,
                held_out=True,
                reason=""
                if _ok(got, ref)
                else f"the alpha-power law with the {nm} nm Vth {vth:.3g} V falls "
                f"{'less' if got > ref else 'more'} steeply than the published table, which carries the "
                "vendor's voltage margins",
            )
        )
    return rows


def voltage_rows() -> list[Row]:
    """7 nm: the Vth is fitted to MT8195's GPU table above its voltage floor (ppa.tech.vf_curve; fit
    anchors) and checked on MT8192's (held out); 28 nm: RK3399's A72 table (held out)."""
    mt8195 = tuple(tech.vf_curve(tech.MT8195_GPU_OPP))
    fit = [
        "MT8195 (TSMC N6) Mali-G57 OPP table above its 0.65 V floor, least squares on log frequency "
        "(ppa.tech.VTH_V[7])"
    ]
    return (
        _vf_rows(7, mt8195, "[P] MT8195 (N6) Mali-G57 GPU OPP table, Linux mt8195.dtsi", (0, 4), fit)
        + _vf_rows(7, references.MT8192_GPU_OPP, references.MT8192_SOURCE, (0, 4, 8))
        + _vf_rows(28, references.RK3399_A72_OPP, references.RK3399_SOURCE, (0, 2, 4))
    )


def core_power_w(res: PPAResult) -> float:
    """On-die power without the DRAM PHY: array dynamic, clock, leakage, SRAM and vector unit."""
    p = res.power_breakdown_w
    return p["dynamic"] + p["clock"] + (p["leakage"] or 0.0) + p["sram"] + p["vector"]


def power_rows(a100: DesignPoint, liberty: dict | None = None) -> list[Row]:
    rows = []
    res = estimate(with_liberty(DesignPoint(node_nm=7), liberty))
    core = core_power_w(res)
    share = res.power_breakdown_w["clock"] / core
    sram_share = res.power_breakdown_w["sram"] / core
    du = references.DUARTE_CLOCK_SHARE
    if _ok(share, du.value):
        why = ""
    elif share < du.value:
        why = (
            f"the SRAM takes {100 * sram_share:.0f} % of this design's core power (the default traffic at the "
            "silicon-derived SRAM energy), which leaves the clock a smaller share, and the stationary weight "
            "registers are clock-gated while they hold (the default); Duarte's quarter is of processors, "
            "whose power is mostly logic and register files. The clock per flip-flop is not cheap: see the "
            "next row, osu018's figure against ASAP7's 7 nm library with its clock wiring"
        )
    else:
        why = (
            "the clock's share is above Duarte's processor figure: every flip-flop outside the gated "
            "stationary weight registers is clocked every cycle"
        )
    rows.append(
        Row(
            "power",
            "clock-tree share of core power (7 nm, 16 x 16 2:4 array, every PE busy)",
            7,
            share,
            du.value,
            "share",
            du.source,
            held_out=True,
            reason=why,
        )
    )
    rows.append(asap7_clock_row(res))
    res = estimate(with_liberty(a100, liberty))
    on_die = res.power_w - res.power_breakdown_w["dram"]
    share = (res.power_breakdown_w["leakage"] or 0.0) / on_die
    a = references.A100_CONSTANT_POWER_SHARE
    rows.append(
        Row(
            "power",
            "leakage share of on-die power (A100-sized INT8 array, 40 MB SRAM, 7 nm)",
            7,
            share,
            a.value,
            "share",
            a.source,
            held_out=True,
            reason=""
            if _ok(share, a.value)
            else f"the model's logic leaks as ASAP7's {res.details['vt']['flavour'].upper()} cells "
            f"({res.details['vt']['choice']}; a GPU mixes flavours), "
            f"its INT8 array alone dissipates {on_die:.0f} W and leaks at its own junction temperature "
            f"({res.tj_c:.0f} C, liquid cooling), and the model has no idle GPU units; the reference is "
            "whole-GPU constant power (idle clocks, HBM refresh, I/O), an upper bound",
        )
    )
    return rows
