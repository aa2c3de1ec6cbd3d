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
    or_default,
    parse_sparsity_dp,
)
from explore.config import MAX_AMBIENT_C, MAX_DRAM_UNITS, MAX_THETA_JA, MIN_AMBIENT_C
from explore.flags import finite, in_range
from explore.safety import dumps
from ppa.design import DesignPoint, PPAResult
from ppa.model import estimate

Node = Annotated[
    int,
    typer.Option("--node", help="Technology node (nm): 65, 45, 32, 28, 22, 20, 16, 14, 10, 7, 5."),
]
ActBits = Annotated[int, typer.Option("--act-bits", help="Activation width (signed).")]
WeightBits = Annotated[int, typer.Option("--weight-bits", help="Weight width (signed).")]
Voltage = Annotated[
    float | None,
    typer.Option("--voltage", help="Force a supply voltage (V).", callback=finite("--voltage")),
]
DramKind = Annotated[str, typer.Option("--dram", help="ddr4, lpddr5, hbm2, hbm2e, hbm3.")]
DramUnits = Annotated[
    int,
    typer.Option(
        "--dram-units",
        help="DRAM stacks/channels.",
        callback=in_range("--dram-units", 1, MAX_DRAM_UNITS),
    ),
]
Cooling = Annotated[str, typer.Option("--cooling", help="air or liquid.")]
ThetaJa = Annotated[
    float | None,
    typer.Option(
        "--theta-ja",
        help="Junction-to-ambient K/W (overrides --cooling's package model).",
        callback=in_range("--theta-ja", 1e-9, MAX_THETA_JA),
    ),
]
TAmbient = Annotated[
    float,
    typer.Option(
        "--t-ambient",
        help="Ambient temperature (C).",
        callback=in_range("--t-ambient", MIN_AMBIENT_C, MAX_AMBIENT_C),
    ),
]
SramModel = Annotated[
    str,
    typer.Option(
        "--sram-model",
        help="SRAM read energy source: silicon (Horowitz 45 nm / "
        "Jouppi 7 nm tables, the default) or cacti (the CACTI 7 fit).",
    ),
]
VectorLanes = Annotated[
    int | None,
    typer.Option(
        "--vector-lanes",
        help="Lanes of the vector unit (synthesised hw.vector lane each; 0: none).",
        show_default="--cols",
    ),
]
ClockGating = Annotated[
    bool,
    typer.Option(
        "--clock-gating/--no-clock-gating",
        help="Gate the clock of the weight-stationary weight registers while they hold "
        "(one gating cell per PE).",
    ),
]
AsJson = Annotated[bool, typer.Option("--json", help="Print one JSON object to stdout.")]


def _fmt(v, unit="", digits=4):
    if v is None:
        return "n/a"
    if isinstance(v, float):
        return f"{v:.{digits}g}{unit}"
    return f"{v}{unit}"


def _print_table(
    res: PPAResult, rows: int | None, cols: int | None, dataflow: str | None, double_buffer: bool, node: int
) -> None:
    """The human-readable result (the array as the flags named it): one row per metric, its
    breakdowns indented, then the notes."""
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
            f"{st['critical_path_ps']:.0f} ps + setup {st['setup_ps']:.0f} ps, FO4 {st['fo4_ps']:.1f} ps "
            f"({st['library']})",
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


def register(app: typer.Typer) -> None:
    @app.command("ppa")
    def ppa_cmd(
        rows: Rows = ROWS,
        cols: Cols = COLS,
        sram_kb: SramKb = SRAM_KB,
        clock_mhz: ClockMhz = None,
        node: Node = 7,
        act_bits: ActBits = 8,
        weight_bits: WeightBits = 8,
        acc_bits: AccBits = ACC_BITS,
        precision: Precision = PRECISION,
        sparsity: Sparsity = SPARSITY,
        dense_path: DenseFlag = False,
        dataflow: Dataflow = DATAFLOW,
        pipeline: Pipeline = PIPELINE,
        voltage: Voltage = None,
        dram_kind: DramKind = "hbm2",
        dram_units: DramUnits = 1,
        cooling: Cooling = "air",
        theta_ja: ThetaJa = None,
        t_ambient: TAmbient = 25.0,
        sram_banks: SramBanks = SRAM_BANKS,
        sram_model: SramModel = "silicon",
        liberty: Liberty = None,
        liberty_node: LibertyNode = None,
        vector_lanes: VectorLanes = None,
        clock_gating: ClockGating = True,
        double_buffer: DoubleBuffer = False,
        vt: Vt = None,
        as_json: AsJson = False,
    ) -> None:
        """Cost one design point from its synthesised hardware: area, fmax/voltage, power, Tj."""
        # --precision and --sparsity passed their checks
        sparse, n, m, dp = parse_sparsity_dp(or_default(sparsity, SPARSITY))
        dense_path = dense_path or dp
        # each flag's own range is checked as it is read (explore.flags); here what relates flags
        d = DesignPoint(
            rows=or_default(rows, ROWS),
            cols=or_default(cols, COLS),
            sram_kb=or_default(sram_kb, SRAM_KB),
            clock_mhz=clock_mhz,
            node_nm=node,
            act_bits=act_bits,
            weight_bits=weight_bits,
            acc_bits=or_default(acc_bits, ACC_BITS),
            n=n,
            m=m,
            sparse=sparse,
            pipeline=or_default(pipeline, PIPELINE),
            dram=dram_kind,
            dram_units=dram_units,
            cooling=cooling,
            theta_ja=theta_ja,
            t_ambient_c=t_ambient,
            sram_banks=or_default(sram_banks, SRAM_BANKS),
            voltage_v=voltage,
            liberty=liberty,
            liberty_node_nm=liberty_node,
            dataflow=or_default(dataflow, DATAFLOW),
            dense_path=dense_path,
            vector_lanes=vector_lanes,
            precision=or_default(precision, PRECISION),
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
        _print_table(res, rows, cols, dataflow, double_buffer, node)
