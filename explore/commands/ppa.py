"""``sparsepe ppa``: area, operating point, power and thermal feasibility of one design point."""

from __future__ import annotations

import sys
from typing import Annotated

import typer
from rich.console import Console
from rich.table import Table

from explore.commands.design_options import (
    ACC_BITS,
    COLS,
    DATAFLOW,
    PIPELINE,
    PRECISION,
    ROWS,
    SPARSITY,
    SRAM_BANKS,
    SRAM_KB,
    AccBits,
    ClockMhz,
    Cols,
    Dataflow,
    DenseFlag,
    DoubleBuffer,
    Liberty,
    LibertyNode,
    Pipeline,
    Precision,
    Rows,
    Sparsity,
    SramBanks,
    SramKb,
    Vt,
    parse_sparsity_dp,
)
from explore.config import MAX_AMBIENT_C, MAX_DRAM_UNITS, MAX_THETA_JA, MIN_AMBIENT_C
from explore.flags import finite, in_range
from explore.safety import dumps
from ppa.design import DesignPoint
from ppa.model import estimate


def _fmt(v, unit="", digits=4):
    if v is None:
        return "n/a"
    if isinstance(v, float):
        return f"{v:.{digits}g}{unit}"
    return f"{v}{unit}"


def register(app: typer.Typer) -> None:
    @app.command("ppa")
    def ppa_cmd(
        rows: Rows = ROWS,
        cols: Cols = COLS,
        sram_kb: SramKb = SRAM_KB,
        clock_mhz: ClockMhz = None,
        node: Annotated[
            int,
            typer.Option("--node", help="Technology node (nm): 65, 45, 32, 28, 22, 20, 16, 14, 10, 7, 5."),
        ] = 7,
        act_bits: Annotated[int, typer.Option("--act-bits", help="Activation width (signed).")] = 8,
        weight_bits: Annotated[int, typer.Option("--weight-bits", help="Weight width (signed).")] = 8,
        acc_bits: AccBits = ACC_BITS,
        precision: Precision = PRECISION,
        sparsity: Sparsity = SPARSITY,
        dense_path: DenseFlag = False,
        dataflow: Dataflow = DATAFLOW,
        pipeline: Pipeline = PIPELINE,
        voltage: Annotated[
            float | None,
            typer.Option("--voltage", help="Force a supply voltage (V).", callback=finite("--voltage")),
        ] = None,
        dram_kind: Annotated[str, typer.Option("--dram", help="ddr4, lpddr5, hbm2, hbm2e, hbm3.")] = "hbm2",
        dram_units: Annotated[
            int,
            typer.Option(
                "--dram-units",
                help="DRAM stacks/channels.",
                callback=in_range("--dram-units", 1, MAX_DRAM_UNITS),
            ),
        ] = 1,
        cooling: Annotated[str, typer.Option("--cooling", help="air or liquid.")] = "air",
        theta_ja: Annotated[
            float | None,
            typer.Option(
                "--theta-ja",
                help="Junction-to-ambient K/W (overrides --cooling's package model).",
                callback=in_range("--theta-ja", 1e-9, MAX_THETA_JA),
            ),
        ] = None,
        t_ambient: Annotated[
            float,
            typer.Option(
                "--t-ambient",
                help="Ambient temperature (C).",
                callback=in_range("--t-ambient", MIN_AMBIENT_C, MAX_AMBIENT_C),
            ),
        ] = 25.0,
        sram_banks: SramBanks = SRAM_BANKS,
        sram_model: Annotated[
            str,
            typer.Option(
                "--sram-model",
                help="SRAM read energy source: silicon (Horowitz 45 nm / "
                "Jouppi 7 nm tables, the default) or cacti (the CACTI 7 fit).",
            ),
        ] = "silicon",
        liberty: Liberty = None,
        liberty_node: LibertyNode = None,
        vector_lanes: Annotated[
            int | None,
            typer.Option(
                "--vector-lanes",
                help="Lanes of the vector unit (synthesised hw.vector lane each; 0: none).",
                show_default="--cols",
            ),
        ] = None,
        clock_gating: Annotated[
            bool,
            typer.Option(
                "--clock-gating/--no-clock-gating",
                help="Gate the clock of the weight-stationary weight registers while they hold (one gating cell per PE).",
            ),
        ] = True,
        double_buffer: DoubleBuffer = False,
        vt: Vt = None,
        as_json: Annotated[bool, typer.Option("--json", help="Print one JSON object to stdout.")] = False,
    ) -> None:
        """Cost one design point from its synthesised hardware: area, fmax/voltage, power, Tj."""
        sparse, n, m, dp = parse_sparsity_dp(sparsity)  # --precision and --sparsity passed their checks
        dense_path = dense_path or dp
        # each flag's own range is checked as it is read (explore.flags); here what relates flags
        d = DesignPoint(
            rows=rows,
            cols=cols,
            sram_kb=sram_kb,
            clock_mhz=clock_mhz,
            node_nm=node,
            act_bits=act_bits,
            weight_bits=weight_bits,
            acc_bits=acc_bits,
            n=n,
            m=m,
            sparse=sparse,
            pipeline=pipeline,
            dram=dram_kind,
            dram_units=dram_units,
            cooling=cooling,
            theta_ja=theta_ja,
            t_ambient_c=t_ambient,
            sram_banks=sram_banks,
            voltage_v=voltage,
            liberty=liberty,
            liberty_node_nm=liberty_node,
            dataflow=dataflow,
            dense_path=dense_path,
            vector_lanes=vector_lanes,
            precision=precision,
            sram_model=sram_model,
            clock_gating=clock_gating,
            double_buffer=double_buffer,
            vt=vt,
        )
        d.validate()
        err = Console(stderr=True)
        with err.status("synthesising and simulating the PE (cached after the first run)..."):
            res = estimate(d)
        if as_json:
            print(dumps(res.to_json(), sort_keys=True))
            return
        out = Console(file=sys.stdout)
        label = res.details["pe"]
        db = ", double-buffered weights" if double_buffer else ""
        t = Table(title=f"sparsepe ppa: {rows}x{cols} {label} PE array ({dataflow}{db}), {node} nm")
        t.add_column("metric")
        t.add_column("value", justify="right")
        t.add_row("area", _fmt(res.area_mm2, " mm^2"))
        for k, v in res.area_breakdown_mm2.items():
            t.add_row(f"  {k}", _fmt(v, " mm^2"))
        t.add_row("fmax (best over the voltage range)", _fmt(res.fmax_mhz, " MHz"))
        t.add_row("operating point", f"{res.clock_mhz:.0f} MHz @ {res.voltage_v:g} V")
        vt_d = res.details["vt"]
        t.add_row("cells (threshold voltage)", f"{vt_d['flavour']} ({vt_d['choice']})")
        tm, st = res.details.get("timing") or {}, res.details.get("sta")
        if tm:
            t.add_row("critical stage", f"{tm['cycle_fo4']:.1f} FO4 ({tm['source']}: {tm['stage']})")
        if st:
            t.add_row(
                "  STA",
                f"{st['critical_path_ps']:.0f} ps + setup {st['setup_ps']:.0f} ps, FO4 {st['fo4_ps']:.1f} ps ({st['library']})",
            )
        t.add_row("power", _fmt(res.power_w, " W"))
        for k, v in res.power_breakdown_w.items():
            t.add_row(f"  {k}", _fmt(v, " W"))
        t.add_row("energy per effective MAC", _fmt(res.energy_per_mac_pj, " pJ"))
        t.add_row("peak (dense-equivalent)", _fmt(res.peak_tops, " TOPS"))
        t.add_row("junction temperature", _fmt(res.tj_c, " C"))
        t.add_row("power density", _fmt(res.power_density_w_mm2, " W/mm^2"))
        t.add_row("feasible", "yes" if res.feasible else "NO")
        out.print(t)
        for r in res.infeasible_reasons:
            out.print(f"infeasible: {r}")
        for note in res.notes:
            out.print(f"note: {note}")
