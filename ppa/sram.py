"""On-chip SRAM: area, read/write energy per access, access time and leakage.

Two sources, which disagree on read energy by 2-10x (``conflict``), and a selectable model:
- ``model="silicon"`` (the default): read energy from the silicon-derived per-access tables,
  Horowitz (ISSCC 2014, 45 nm, 0.9 V) and Jouppi et al. (ISCA 2021 Table 2, 7 nm): see
  "Silicon-derived read energy" below. Area, access/cycle time, leakage and the write/read
  energy ratio from the CACTI fit.
- ``model="cacti"``: every figure from the CACTI 7 fit.
Where the sources conflict the default follows the silicon-derived one (CACTI's ITRS-HP
periphery is a tool's projection, not a measurement).

Silicon-derived read energy [D]: per 64-bit read, E(KB) = a + b sqrt(KB) at each anchor node: the
sqrt term is the word-line, bit-line and H-tree wire length, which grows as the side of the array
(sqrt of its capacity); a is the periphery that does not grow. a and b are fitted on the 8 KB and
1 MB points of each table; the 32 KB points are held out (``sparsepe validate``: 0.94x Horowitz,
0.96x Jouppi). Anchors: 45 nm at Horowitz's 0.9 V, 7 nm at our 7 nm nominal 0.7 V (Jouppi's
table states no voltage [A], as for ppa.tech's logic anchor). Other nodes: both anchor curves
taken to their node's nominal voltage (C V^2) and interpolated log-linearly in log(node) at the
same capacity (the method of ppa.tech.node_correction); 65 nm: the 45 nm curve times the
switching energy per toggle of 65 vs 45 nm (ppa.tech, Stillmaker) [D]. Other voltages: C V^2.
Other word widths: proportional to width (as the CACTI path). Write energy: the silicon read
energy times CACTI's write/read ratio at the same bank size and node [D] (the tables give reads).

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
from ppa.override import assumed

# CACTI 7.0 [T], published-figures §5.1: node nm, KB, access ns, cycle ns, read pJ, write pJ,
# leakage mW (HP, 360 K), area mm^2 (per 512-bit access)
CACTI7_POINTS = np.array(
    [
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
    ]
)
METRICS = ("access_ns", "cycle_ns", "read_pj", "write_pj", "leakage_mw", "area_mm2")
FIT_KB = (32.0, 4096.0)
FIT_WORD_BITS = 512

# Horowitz ISSCC 2014, 45 nm, 0.9 V: 64-bit access from an 8 KB / 32 KB / 1 MB SRAM, pJ (published-figures §3)
HOROWITZ_64B_PJ = {8: 10.0, 32: 20.0, 1024: 100.0}
HOROWITZ_V = 0.9  # [S] the voltage of Horowitz's table
# Jouppi et al. ISCA 2021 Table 2, 7 nm: 64-bit access, pJ (no voltage stated: our 7 nm nominal 0.7 V [A])
JOUPPI_7NM_64B_PJ = {8: 7.5, 32: 8.5, 1024: 14.0}
JOUPPI_V = 0.7

#: the SRAM energy models: "silicon" (the default, see the module docstring) and "cacti"
SRAM_MODELS = ("silicon", "cacti")
SRAM_MODEL_DEFAULT = "silicon"
#: the table points each anchor curve is fitted on (KB); the third point of each table is held out
SILICON_FIT_KB = (8, 1024)


def _sqrt_law(table: dict[int, float]) -> tuple[float, float]:
    """(a, b) of E = a + b sqrt(KB) through the table's SILICON_FIT_KB points."""
    k0, k1 = SILICON_FIT_KB
    b = (table[k1] - table[k0]) / (math.sqrt(k1) - math.sqrt(k0))
    return table[k0] - b * math.sqrt(k0), b


#: (a, b) in pJ per 64-bit read at each anchor's own voltage: 45 nm (Horowitz, 0.9 V), 7 nm (Jouppi, 0.7 V)
SILICON_ANCHORS = {45: (_sqrt_law(HOROWITZ_64B_PJ), HOROWITZ_V), 7: (_sqrt_law(JOUPPI_7NM_64B_PJ), JOUPPI_V)}


def _features(kb: np.ndarray, nm: np.ndarray) -> np.ndarray:
    L = np.log(kb)
    N = np.log(nm)
    return np.column_stack([np.ones_like(L), L, L**2, L**3, N, L * N])


def _fit() -> dict[str, np.ndarray]:
    X = _features(CACTI7_POINTS[:, 1], CACTI7_POINTS[:, 0])
    return {
        m: np.linalg.lstsq(X, np.log(CACTI7_POINTS[:, 2 + i]), rcond=None)[0] for i, m in enumerate(METRICS)
    }


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


def _anchor_pj(anchor_nm: int, kb: float, at_v: float) -> float:
    (a, b), v_ref = SILICON_ANCHORS[anchor_nm]
    return (a + b * math.sqrt(kb)) * (at_v / v_ref) ** 2


def silicon_read_pj_64b(kb: float, node_nm: int, voltage_v: float | None = None) -> float:
    """Silicon-derived energy of one 64-bit read from a bank of ``kb`` KB at ``node_nm`` and
    ``voltage_v`` (default: the node's nominal voltage), pJ (module docstring)."""
    nm = tech.NODE_ALIASES.get(tech.check_node(node_nm), node_nm)
    vnom = tech.nominal_voltage(nm)
    v = vnom if voltage_v is None else float(voltage_v)
    if nm >= 45:
        e = _anchor_pj(45, kb, tech.nominal_voltage(45))
        if nm > 45:  # 65 nm: the 45 nm curve times the switching energy per toggle ratio
            e *= tech.node(nm).toggle_energy_pj / tech.node(45).toggle_energy_pj
    else:
        t = math.log(45 / nm) / math.log(45 / 7)
        e45 = _anchor_pj(45, kb, tech.nominal_voltage(45))
        e7 = _anchor_pj(7, kb, tech.nominal_voltage(7))
        e = math.exp((1 - t) * math.log(e45) + t * math.log(e7))
    return e * (v / vnom) ** 2


def conflict(kb: float, node_nm: int) -> dict:
    """The two sources side by side for one 64-bit read at nominal voltage: silicon-derived and
    CACTI (its 512-bit access scaled by width), and their ratio."""
    si = silicon_read_pj_64b(kb, node_nm)
    ca = sram(kb, node_nm, word_bits=64, model="cacti").read_pj
    return {"kb": kb, "node_nm": node_nm, "silicon_pj": si, "cacti_pj": ca, "cacti_over_silicon": ca / si}


def sram(
    kb: float,
    node_nm: int = 22,
    *,
    word_bits: int = FIT_WORD_BITS,
    banks: int = 1,
    voltage_v: float | None = None,
    model: str = SRAM_MODEL_DEFAULT,
) -> SramCost:
    """Cost of an SRAM at ``voltage_v`` (default: the node's nominal voltage); see the module
    docstring for the two energy models (``model``), the CACTI fit and its validity range."""
    if model not in SRAM_MODELS:
        raise InputError(
            f"unknown SRAM model {model!r}; known: {', '.join(SRAM_MODELS)}", where="--sram-model"
        )
    if not isinstance(kb, (int, float)) or isinstance(kb, bool) or not math.isfinite(kb) or kb <= 0:
        raise InputError(f"SRAM capacity must be a positive number of KB, got {kb!r}", where="--sram-kb")
    nm = tech.check_node(node_nm)
    if not isinstance(banks, int) or banks < 1:
        raise InputError(f"SRAM banks must be a positive integer, got {banks!r}", where="sram banks")
    if not isinstance(word_bits, int) or word_bits < 1:
        raise InputError(
            f"SRAM word width must be a positive integer, got {word_bits!r}", where="sram word_bits"
        )
    notes: list[str] = []
    bank_kb = kb / banks
    if bank_kb > FIT_KB[1]:
        extra = math.ceil(bank_kb / FIT_KB[1])
        notes.append(
            f"bank of {bank_kb:g} KB above the CACTI fit (<= 4096 KB): split into {extra} banks per bank"
        )
        banks *= extra
        bank_kb = kb / banks
    scale_cap = 1.0
    if bank_kb < FIT_KB[0]:
        notes.append(
            f"bank of {bank_kb:g} KB below the CACTI fit (>= 32 KB): 32 KB energy/time, area and leakage pro rata"
        )
        scale_cap = bank_kb / FIT_KB[0]
        bank_kb = FIT_KB[0]
    # the node's registry row (ppa.tech.NODE_SPECS) names the CACTI fit node (22/20 nm: CACTI's 22 nm
    # point; 28 nm inside the ln(node) fit; 65 nm extrapolated) and, below CACTI's nodes, the row scaled from
    spec = tech.node_spec(nm)
    if spec.sram_fit_nm is None:  # every offered row names one (tests/ppa/test_node_registry.py)
        raise InputError(f"the {nm} nm registry row names no CACTI fit node", where="ppa.tech sram_fit_nm")
    if spec.sram_fit_nm > CACTI7_POINTS[:, 0].max():
        notes.append(f"{nm} nm is above the CACTI runs (22-45 nm): fit extrapolated in ln(node)")
    v = _raw(bank_kb, spec.sram_fit_nm)
    if spec.sram_scaled_from is not None:
        ref, tgt = tech.node(spec.sram_scaled_from), tech.node(nm)
        a = tgt.area_factor / ref.area_factor
        v["area_mm2"] *= a
        v["leakage_mw"] *= a
        e = tgt.toggle_energy_pj / ref.toggle_energy_pj
        v["read_pj"] *= e
        v["write_pj"] *= e
        v["access_ns"] *= tgt.delay_factor / ref.delay_factor
        v["cycle_ns"] *= tgt.delay_factor / ref.delay_factor
        notes.append(
            f"{nm} nm is below CACTI 7's {spec.sram_fit_nm} nm: {spec.sram_fit_nm} nm fit scaled by "
            "ppa.tech node factors"
        )
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
    if model == "silicon":
        # the silicon-derived read energy of one bank (module docstring); write = read x CACTI's
        # write/read ratio of the same bank
        ratio = v["write_pj"] / v["read_pj"]
        v["read_pj"] = silicon_read_pj_64b(kb / banks, nm, vs) * FIT_WORD_BITS / 64
        v["write_pj"] = v["read_pj"] * ratio
    elif word_bits != FIT_WORD_BITS:
        notes.append(f"{word_bits}-bit word: energy scaled by width from CACTI's 512-bit port (assumption)")
    # ppa.assumptions: the spread of published SRAM access energies, and where a foundry macro's
    # leakage sits below CACTI's ITRS-HP cells (1.0 each unless overridden)
    escale = assumed("sram_energy_scale", 1.0)
    return SramCost(
        kb=kb,
        banks=banks,
        word_bits=word_bits,
        node_nm=nm,
        area_mm2=v["area_mm2"] * scale_cap * banks,
        read_pj=v["read_pj"] * wscale * escale,
        write_pj=v["write_pj"] * wscale * escale,
        access_ns=v["access_ns"],
        cycle_ns=v["cycle_ns"],
        leakage_mw=v["leakage_mw"] * scale_cap * banks * assumed("sram_leakage_scale", 1.0),
        in_range=not notes,
        voltage_v=vs,
        notes=notes,
    )
