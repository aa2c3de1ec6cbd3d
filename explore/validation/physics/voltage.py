"""The voltage-frequency rows of ``sparsepe validate`` (group ``voltage``): the alpha-power law
against published operating-point tables.
"""

from __future__ import annotations

from explore.validation.physics.base import agrees
from explore.validation.row import Row, fit_row
from ppa import references, tech


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
                if agrees(got, ref)
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
