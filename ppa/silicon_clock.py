"""Published silicon clocks: the held-out checks of the FO4 law (``fo4_check``: POWER6 at 65 nm, Cell
at 90 nm; ``a72_7nm_check``: the 7 nm FO4) and the cap on 7 nm clocks.

ppa.tech anchors the 7 nm FO4 on the ASAP7 library (19.48 ps at 0.7 V) and moves it in voltage with
the alpha-power law (7 nm Vth 0.418 V, fitted to MT8195's GPU table). TSMC's 7 nm Cortex-A72
chiplet (4.0 GHz at 1.20 V) then runs at 28.2 FO4 per cycle (``a72_7nm_check``), a plausible depth
for a 4 GHz core (its 4.2 GHz / 1.375 V point at 30.5, just above the range: the law, fitted at
0.65-0.75 V, gives more gain above 1.2 V than the chip shows); the former Stillmaker-scaled FO4
(4.56 ps) made it 86. The same silicon bounds every 7 nm design: no design of the node may clock
faster at a voltage than the chip's FO4 per cycle allows at that voltage (``silicon_limit_mhz``,
applied by ppa.model.fmax_mhz).
"""

from __future__ import annotations

from ppa import tech

#: [S] published 7 nm silicon, the held-out check of the 7 nm FO4 and the cap on 7 nm clocks:
#: TSMC's N7 Arm Cortex-A72 CoWoS chiplet, 4.0 GHz at 1.20 V and 4.2 GHz at 1.375 V (VLSI
#: Symposium 2019, "A 7nm 4GHz Arm-core-based CoWoS Chiplet Design for High-Performance
#: Computing"; voltages as reported by tomshardware.fr/?p=533415; 4 GHz also in Arm's newsroom,
#: 2019-09-26, and AnandTech article 14914). (GHz, V) points.
A72_7NM_POINTS = ((4.0, 1.20), (4.2, 1.375))
#: the range of FO4 per cycle a 4 GHz general-purpose core can have [A]: 15-30 (POWER6's FPU
#: pipeline is 13 FO4, the Cell SPE 11; Arm's A72 is a 15-stage mobile core, not a deeper one)
A72_FO4_PER_CYCLE_RANGE = (15.0, 30.0)


def a72_7nm_check() -> list[dict]:
    """The 7 nm FO4 against TSMC's 7 nm Cortex-A72 chiplet (``A72_7NM_POINTS``): FO4 per cycle the
    model's 7 nm FO4 implies at each published (GHz, V) point; it must lie in
    ``A72_FO4_PER_CYCLE_RANGE``."""
    lo, hi = A72_FO4_PER_CYCLE_RANGE
    rows = []
    for ghz, v in A72_7NM_POINTS:
        fo4 = tech.fo4_ps(7, v)
        n = 1e3 / ghz / fo4
        rows.append(
            {
                "design": f"TSMC N7 Cortex-A72 chiplet, {ghz:g} GHz at {v:g} V",
                "node_nm": 7,
                "voltage_v": v,
                "published_ghz": ghz,
                "fo4_ps": fo4,
                "fo4_per_cycle": n,
                "within": lo <= n <= hi,
            }
        )
    return rows


#: [D] how a production 7 nm design may differ from the unsized ASAP7 RVT corner the timing FO4 is anchored
#: on (ppa.tech FO4_ANCHORS_NM): the A72 chiplet (production N7, its own sizing, Vt mix and 1.2 V) lands at
#: 28.2 timing FO4 per cycle; for it to have 15-30 FO4 of a production corner, that corner's FO4 must be
#: 28.2 / 30 = 0.94x to 28.2 / 15 = 1.88x the ASAP7 one: an LVT/SLVT corner much faster than ASAP7's RVT
#: (0.94x or less) would put a 4 GHz core above 30 FO4. The model takes 1.0x (the corner itself).
PRODUCTION_7NM_BOUNDS = tuple(
    min(r["fo4_per_cycle"] for r in a72_7nm_check()) / n for n in A72_FO4_PER_CYCLE_RANGE[::-1]
)

#: FO4 per cycle of the fastest published silicon per node (the fewest, over its points): a design of
#: that node cannot clock faster at a voltage than this many FO4 at that voltage (``silicon_limit_mhz``)
SILICON_LIMIT_FO4_PER_CYCLE = {7: min(r["fo4_per_cycle"] for r in a72_7nm_check())}


def silicon_limit_mhz(nm: int, v: float) -> float | None:
    """The clock published silicon of node ``nm`` reaches at ``v`` (MHz), moved along the alpha-power
    law: 1 / (SILICON_LIMIT_FO4_PER_CYCLE x FO4(v)); None for a node without such a figure. At 7 nm:
    the A72 chiplet's 28.2 FO4: 1.82 GHz at 0.7 V, 0.65 GHz at 0.52 V."""
    n = SILICON_LIMIT_FO4_PER_CYCLE.get(tech.NODE_ALIASES.get(nm, nm))
    return None if n is None else 1e6 / (n * tech.fo4_ps(nm, v))


def fo4_check() -> list[dict]:
    """The FO4 law against published clock rates of known designs: cycle = FO4 per cycle x FO4
    at the design's node and voltage. (POWER6 at 65 nm; Cell SPE at 90 nm, a Stillmaker node used
    only here.)"""
    rows = []
    for name, nm, v, fo4_per_cycle, ghz in (
        ("IBM POWER6 FPU (65 nm SOI, 13 FO4, >5 GHz at <=1.2 V)", 65, 1.2, 13, 5.0),
        ("IBM Cell SPE (90 nm SOI, 11 FO4, 5.6 GHz at 1.4 V)", 90, 1.4, 11, 5.6),
    ):
        fo4 = tech.fo4_ps(nm, v)
        model_ghz = 1e3 / (fo4 * fo4_per_cycle)
        rows.append(
            {
                "design": name,
                "node_nm": nm,
                "voltage_v": v,
                "fo4_ps": fo4,
                "model_ghz": model_ghz,
                "published_ghz": ghz,
                "ratio": model_ghz / ghz,
            }
        )
    return rows
