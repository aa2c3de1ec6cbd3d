"""On-chip SRAM: area, read/write energy per access, access time and leakage.

Fitted to CACTI 7.0 runs [T] (HewlettPackard/cacti @ 1ffd8dfb, ``cache type "ram"``, 1 UCA bank,
512-bit port, 1 RW port, itrs-hp cells and periphery, 360 K, optimise ED^2; published-figures.md
section 5.1; raw table in /work/shared/reference/cacti7/summary.txt). The 12 points are below so
the model works without that directory.

Fit: for every metric, log(metric) = c0 + c1 L + c2 L^2 + c3 L^3 + c4 ln(node) + c5 L ln(node),
L = ln(KB per bank), least squares over the 12 points. Largest residual: 2.4 % (cycle time).

Validity range (``in_range``): 22-45 nm (28 nm lies inside the ln(node) fit), 32 KB-4 MB per
bank, 512-bit word. Outside it the model still answers, says so in ``notes``, and extrapolates as
stated there:
- 65 nm: the fit extrapolated in ln(node) (CACTI 7 itself covers 65 nm; we have no run there);
- node below 22 nm: the 22 nm value scaled by ppa.tech's factors at nominal voltage (area by the
  area factor, energy by the node's switching energy per toggle, which carries the Jouppi node
  correction, times by the delay factor, leakage with area);
- bank smaller than 32 KB: the 32 KB macro's energy and time, area and leakage pro rata capacity
  (an upper bound on energy/time: the periphery does not shrink);
- bank larger than 4 MB: evaluated as ceil(size / 4 MB) banks of <= 4 MB;
- word width other than 512 bits: energies proportional to width (bit lines, sense amplifiers
  and I/O per bit), area and time unchanged. This is our assumption [A], not CACTI's.
Banks: a capacity split into B banks costs B x area and leakage of one bank; one access touches
one bank, so energy and access time are those of one bank.

Voltage: CACTI's figures are taken at the node's nominal voltage [A]. At another SRAM voltage
(``voltage_v``, at least the node's SRAM Vmin, ppa.tech.sram_vmin_v) energies scale as V^2, leakage
with ppa.tech.leakage_voltage_factor and access/cycle times with the alpha-power delay ratio.
"""

from __future__ import annotations

import math
from dataclasses import dataclass, field

import numpy as np

from hw.errors import InputError
from ppa import tech

# CACTI 7.0 [T], published-figures §5.1: node nm, KB, access ns, cycle ns, read pJ, write pJ,
# leakage mW (HP, 360 K), area mm^2 (per 512-bit access)
CACTI7_POINTS = np.array([
    (22, 32, 0.219869, 0.224954, 9.2756, 22.6293, 9.57119, 0.0276757),
    (22, 256, 0.603371, 0.540338, 40.6419, 60.7211, 69.2919, 0.25721),
    (22, 1024, 1.11241, 1.34121, 96.4296, 102.949, 264.411, 0.946371),
    (22, 4096, 2.00453, 1.34121, 212.184, 218.703, 1057.65, 3.7524),
    (32, 32, 0.313047, 0.328091, 17.2125, 43.4595, 19.9006, 0.0584752),
    (32, 256, 0.791421, 0.734647, 74.7374, 116.016, 142.999, 0.543653),
    (32, 1024, 1.40318, 1.75935, 177.127, 195.312, 542.391, 2.0),
    (32, 4096, 2.59094, 1.75935, 392.247, 410.432, 2169.56, 7.93039),
    (45, 32, 0.407996, 0.431177, 30.6904, 79.7215, 37.4134, 0.115458),
    (45, 256, 1.01647, 0.934759, 131.177, 210.857, 269.537, 1.07417),
    (45, 1024, 1.78942, 2.21788, 311.132, 352.773, 1022.33, 3.95165),
    (45, 4096, 3.28009, 2.21788, 693.499, 735.14, 4089.3, 15.6695),
])
METRICS = ("access_ns", "cycle_ns", "read_pj", "write_pj", "leakage_mw", "area_mm2")
FIT_KB = (32.0, 4096.0)
FIT_WORD_BITS = 512

# Horowitz ISSCC 2014, 45 nm: 64-bit access from an 8 KB / 32 KB / 1 MB SRAM, pJ (published-figures §3)
HOROWITZ_64B_PJ = {8: 10.0, 32: 20.0, 1024: 100.0}
# Jouppi et al. ISCA 2021 Table 2, 7 nm: 64-bit access, pJ
JOUPPI_7NM_64B_PJ = {8: 7.5, 32: 8.5, 1024: 14.0}


def _features(kb: np.ndarray, nm: np.ndarray) -> np.ndarray:
    L = np.log(kb)
    N = np.log(nm)
    return np.column_stack([np.ones_like(L), L, L**2, L**3, N, L * N])


def _fit() -> dict[str, np.ndarray]:
    X = _features(CACTI7_POINTS[:, 1], CACTI7_POINTS[:, 0])
    return {m: np.linalg.lstsq(X, np.log(CACTI7_POINTS[:, 2 + i]), rcond=None)[0] for i, m in enumerate(METRICS)}


_COEF = _fit()


@dataclass
class SramCost:
    """One SRAM of ``kb`` KB in ``banks`` banks, ``word_bits`` per access, at ``node_nm``."""

    kb: float
    banks: int
    word_bits: int
    node_nm: int
    area_mm2: float
    read_pj: float  # per access of word_bits
    write_pj: float
    access_ns: float
    cycle_ns: float
    leakage_mw: float  # at 360 K, HP cells, at voltage_v
    in_range: bool
    voltage_v: float | None = None
    notes: list[str] = field(default_factory=list)

    def read_pj_per_byte(self) -> float:
        return self.read_pj / (self.word_bits / 8)

    def write_pj_per_byte(self) -> float:
        return self.write_pj / (self.word_bits / 8)


def _raw(kb: float, nm: int) -> dict[str, float]:
    X = _features(np.array([kb], dtype=float), np.array([nm], dtype=float))
    return {m: float(np.exp(X @ c)[0]) for m, c in _COEF.items()}


def sram(kb: float, node_nm: int = 22, *, word_bits: int = FIT_WORD_BITS, banks: int = 1,
         voltage_v: float | None = None) -> SramCost:
    """Cost of an SRAM at ``voltage_v`` (default: the node's nominal voltage); see the module
    docstring for the fit and its validity range."""
    if not isinstance(kb, (int, float)) or isinstance(kb, bool) or not math.isfinite(kb) or kb <= 0:
        raise InputError(f"SRAM capacity must be a positive number of KB, got {kb!r}", where="--sram-kb")
    nm = tech.check_node(node_nm)
    if not isinstance(banks, int) or banks < 1:
        raise InputError(f"SRAM banks must be a positive integer, got {banks!r}", where="sram banks")
    if not isinstance(word_bits, int) or word_bits < 1:
        raise InputError(f"SRAM word width must be a positive integer, got {word_bits!r}", where="sram word_bits")
    notes: list[str] = []
    bank_kb = kb / banks
    if bank_kb > FIT_KB[1]:
        extra = math.ceil(bank_kb / FIT_KB[1])
        notes.append(f"bank of {bank_kb:g} KB above the CACTI fit (<= 4096 KB): split into {extra} banks per bank")
        banks *= extra
        bank_kb = kb / banks
    scale_cap = 1.0
    if bank_kb < FIT_KB[0]:
        notes.append(f"bank of {bank_kb:g} KB below the CACTI fit (>= 32 KB): 32 KB energy/time, area and leakage pro rata")
        scale_cap = bank_kb / FIT_KB[0]
        bank_kb = FIT_KB[0]
    # 22/20 nm is one node in ppa.tech; CACTI's 22 nm point stands for both; 28 nm is inside the
    # ln(node) fit; 65 nm is extrapolated in ln(node)
    fit_nm = {20: 22, 22: 22, 28: 28, 32: 32, 45: 45, 65: 65}.get(nm, 22)
    if nm == 65:
        notes.append("65 nm is above the CACTI runs (22-45 nm): fit extrapolated in ln(node)")
    v = _raw(bank_kb, fit_nm)
    if nm < 20:
        ref, tgt = tech.node(20), tech.node(nm)
        a = tgt.area_factor / ref.area_factor
        v["area_mm2"] *= a
        v["leakage_mw"] *= a
        e = tgt.toggle_energy_pj / ref.toggle_energy_pj
        v["read_pj"] *= e
        v["write_pj"] *= e
        v["access_ns"] *= tgt.delay_factor / ref.delay_factor
        v["cycle_ns"] *= tgt.delay_factor / ref.delay_factor
        notes.append(f"{nm} nm is below CACTI 7's 22 nm: 22 nm fit scaled by ppa.tech node factors")
    vnom = tech.nominal_voltage(nm)
    vs = vnom if voltage_v is None else tech.sram_voltage(nm, vnom, voltage_v)
    if vs != vnom:
        ev = (vs / vnom) ** 2
        v["read_pj"] *= ev
        v["write_pj"] *= ev
        v["leakage_mw"] *= tech.leakage_voltage_factor(vs, vnom)
        tv = tech.alpha_power_delay(vs, nm) / tech.alpha_power_delay(vnom, nm)
        v["access_ns"] *= tv
        v["cycle_ns"] *= tv
    wscale = word_bits / FIT_WORD_BITS
    if word_bits != FIT_WORD_BITS:
        notes.append(f"{word_bits}-bit word: energy scaled by width from CACTI's 512-bit port (assumption)")
    return SramCost(
        kb=kb, banks=banks, word_bits=word_bits, node_nm=nm,
        area_mm2=v["area_mm2"] * scale_cap * banks,
        read_pj=v["read_pj"] * wscale,
        write_pj=v["write_pj"] * wscale,
        access_ns=v["access_ns"],
        cycle_ns=v["cycle_ns"],
        leakage_mw=v["leakage_mw"] * scale_cap * banks,
        in_range=not notes,
        voltage_v=vs,
        notes=notes,
    )

