"""Held-out clock rows of ``sparsepe validate`` (issue 37): shipped designs' published clocks, on both sides.

For each design, mapped onto sparsepe's PE convention (a dense PE holds M = 4 multipliers unless stated):
- "reachable": the fastest clock the model reaches at nominal voltage with ``--pipeline`` 1-4 and the
  fastest cells (``--vt slvt``, ppa.references; the best fmax over the four depths) must be AT LEAST the
  published clock (one-sided: ``model >= reference``); the row names the lowest-leakage flavour that
  reaches it;
- "not beaten": the pipeline-1 fmax at nominal voltage with rvt cells (the flavour the model takes with
  no clock asked) must be AT MOST 1.5x the published clock.
No constant of the model was fitted to any of these clocks (held out). The timing FO4 they use is the
45 nm / ASAP7 7 nm law of ppa.tech (fit anchors: the 45 nm FO4 mentions and ASAP7's FO4, not these chips);
the node FO4 (``details.fo4_ps``) is reported beside it. Each row states the timing source it used.
"""

from __future__ import annotations

from dataclasses import dataclass, replace

from explore.validation.row import Row
from hw.errors import InputError
from ppa import tech
from ppa.design import DesignPoint
from ppa.model import estimate
from ppa.references import VT_CHOICES

PIPELINES = (1, 2, 3, 4)


@dataclass(frozen=True)
class ShippedClock:
    name: str
    design: DesignPoint  # clocked at the published clock, nominal voltage
    mhz: float
    source: str
    mapping: str


def shipped() -> list[ShippedClock]:
    def dp(nm, rows, cols, **kw):
        return DesignPoint(
            rows=rows,
            cols=cols,
            sparse=False,
            node_nm=nm,
            sram_kb=0,
            vector_lanes=0,
            voltage_v=tech.nominal_voltage(nm),
            **kw,
        )

    return [
        ShippedClock(
            "Tesla FSD NPU",
            dp(14, 24, 96),
            2000.0,
            "[S] Talpes et al., IEEE Micro 40(2) 2020 / Hot Chips 31 (2019): Samsung 14 nm, 96 x 96 INT8 MACs, 2 GHz",
            "96 x 96 = 9,216 MACs as 24 x 96 dense PEs of 4 (the 96-deep reduction as 24 PEs of 4 multipliers)",
        ),
        ShippedClock(
            "Google TPU v1",
            dp(28, 128, 256, n=1, m=2),
            700.0,
            "[V] Jouppi et al., ISCA 2017: 28 nm, 256 x 256 INT8 MACs, 700 MHz (published-figures §8b)",
            "256 x 256 MACs as 128 x 256 dense PEs of 2 (as the silicon rows)",
        ),
        ShippedClock(
            "Google TPU v4i",
            dp(7, 32, 128, precision="bf16"),
            1050.0,
            "[S] Jouppi et al., ISCA 2021 §3: 7 nm, 4 x 128 x 128 bf16 MXUs, 1.05 GHz (published-figures §8b)",
            "one MXU's 128 x 128 bf16 MACs as 32 x 128 dense bf16 PEs of 4 (the four MXUs clock alike)",
        ),
        ShippedClock(
            "NVIDIA A100 SXM4",
            dp(7, 16, 8),
            1410.0,
            "[S] NVIDIA A100 spec pages: TSMC 7 nm, 1410 MHz boost, 432 TCs x 512 INT8 MACs (published-figures §8b)",
            "one tensor core's 512 INT8 MACs as 16 x 8 dense PEs of 4",
        ),
        ShippedClock(
            "NVIDIA H100 SXM5",
            dp(5, 16, 16),
            1980.0,
            "[S] NVIDIA H100 SXM5 spec pages: TSMC 4N (5 nm class), 1,980 MHz max boost; not confirmed "
            "from the whitepaper here (published-figures.md has no H100 clock)",
            "one tensor core's 1,024 INT8 MACs as 16 x 16 dense PEs of 4",
        ),
        ShippedClock(
            "Eyeriss v1",
            dp(65, 6, 7, act_bits=16, weight_bits=16, acc_bits=32),
            200.0,
            "[V]/[S] Chen et al., JSSC 2017: 65 nm, 168 16-bit PEs; 200 MHz core clock (tutorial: 100-250 MHz)",
            "168 16-bit MACs as 6 x 7 dense PEs of 4 (as the silicon rows)",
        ),
    ]


def _fmax(design: DesignPoint, pipeline: int, vt: str = "rvt"):
    """(fmax at nominal voltage, timing source, critical stage FO4), or (None, why, None) when the model
    cannot cost the design at this depth."""
    try:
        res = estimate(replace(design, pipeline=pipeline, clock_mhz=None, vt=vt))
    except InputError as e:
        return None, f"pipeline {pipeline}: {e}", None
    return res.fmax_at_voltage_mhz, res.details["timing"]["source"], res.details["timing"]["cycle_fo4"]


def clock_rows(liberty: dict | None = None) -> list[Row]:
    rows = []
    for s in shipped():
        d = replace(s.design, **liberty) if liberty else s.design
        fs = {p: _fmax(d, p, "slvt") for p in PIPELINES}
        ok = [p for p in PIPELINES if fs[p][0] is not None]
        failed = "; ".join(fs[p][1] for p in PIPELINES if fs[p][0] is None)
        best_p = max(ok, key=lambda p: fs[p][0]) if ok else None
        best, src = (fs[best_p][0], fs[best_p][1]) if best_p is not None else (None, failed)
        f1, _, c1 = _fmax(d, 1, "rvt")
        nd = tech.node(s.design.node_nm)
        cheapest = next(
            (
                vt
                for vt in VT_CHOICES
                if best is not None and best_p is not None and (_fmax(d, best_p, vt)[0] or 0) >= s.mhz
            ),
            None,
        )
        how = (
            f"{s.mapping}; timing {src}, timing FO4 {nd.gate_delay_ps:.2f} ps (rvt), node FO4 {nd.fo4_ps:.2f} ps; "
            f"slvt fmax by pipeline 1-4: "
            + " / ".join("-" if fs[p][0] is None else f"{fs[p][0]:.0f}" for p in PIPELINES)
            + " MHz"
            + (f"; reached with {cheapest} cells at pipeline {best_p}" if cheapest else "")
            + (f" (not costed: {failed})" if failed else "")
        )
        r = Row(
            "clock",
            f"{s.name}: fastest clock at nominal voltage, pipeline 1-4 (at least {s.mhz:g} MHz)",
            s.design.node_nm,
            best,
            s.mhz,
            "MHz",
            s.source,
            held_out=True,
            bound="at_least",
            reason=how
            if best is not None and best >= s.mhz
            else f"not reachable: {how}; the critical stage does not fall with pipelining (issue 37 item 3)",
        )
        rows.append(r)
        rows.append(
            Row(
                "clock",
                f"{s.name}: pipeline-1 rvt fmax at nominal voltage (at most 1.5x {s.mhz:g} MHz)",
                s.design.node_nm,
                f1,
                s.mhz,
                "MHz",
                s.source,
                held_out=True,
                bound="at_most_1.5x",
                reason=(
                    f"{s.mapping}; stage {c1:.1f} FO4"
                    + ("" if f1 <= 1.5 * s.mhz else "; beats the shipped clock by more than 1.5x")
                )
                if f1 is not None
                else _fmax(d, 1)[1],
            )
        )
    return rows
