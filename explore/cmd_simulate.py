"""``sparsepe simulate``: the analytical cycle model on one workload and one design point."""

from __future__ import annotations

import sys
from pathlib import Path
from typing import Annotated, Optional

import typer

from hw.errors import InputError


def _parse_sparsity(s: str) -> tuple[bool, int, int]:
    from explore.config import sparsity_option

    return sparsity_option(s)


def _load_topology(path: Path):
    from sim.workloads import load_scalesim_topology, load_workload

    if path.suffix == ".toml":
        return load_workload(path)
    if not path.is_file():
        raise InputError("topology file not found", where=str(path))
    first = path.read_text(encoding="utf-8-sig").split("\n", 1)[0].replace(" ", "").lower()
    if first.startswith("name,kind"):
        return load_workload(path)
    return load_scalesim_topology(path)


def run(workload: str | None, topology: Path | None, scalesim_config: Path | None, rows: int | None,
        cols: int | None, sram_kb: float | None, clock_mhz: float | None, dram_gbps: float | None,
        dataflow: str | None, sparsity: str | None, as_json: bool) -> None:
    from sim.perf import ArrayConfig, simulate
    from sim.workloads import get_workload

    if (workload is None) == (topology is None):
        raise InputError("give exactly one of --workload NAME or --topology FILE.csv", where="simulate")
    wl = get_workload(workload) if workload else _load_topology(topology)
    sp = _parse_sparsity(sparsity) if sparsity is not None else None
    if dataflow is not None and dataflow not in ("ws", "os", "is"):
        raise InputError(f"unknown dataflow {dataflow!r} (ws, os or is)", where="--dataflow")
    over = dict(rows=rows, cols=cols, clock_mhz=clock_mhz, dram_gbps=dram_gbps, dataflow=dataflow)
    if sram_kb is not None:
        over.update(ifmap_kb=sram_kb / 3, filter_kb=sram_kb / 3, ofmap_kb=sram_kb / 3)
    if sp is not None:
        over.update(sparse=sp[0], n=sp[1], m=sp[2])
    if scalesim_config is not None:
        from sim.workloads import load_scalesim_config

        arch = load_scalesim_config(scalesim_config).to_array_config(**over)
    else:
        if sram_kb is not None:
            over = {k: v for k, v in over.items() if k not in ("ifmap_kb", "filter_kb", "ofmap_kb")}
            over["sram_kb"] = sram_kb
        arch = ArrayConfig(**{k: v for k, v in over.items() if v is not None})
    res = simulate(wl, arch)
    if as_json:
        sys.stdout.write(res.to_json() + "\n")
        return
    from rich.console import Console
    from rich.table import Table

    t = Table(title=f"{res.workload} on {arch.rows}x{arch.cols} {arch.dataflow.upper()} "
                    f"({'%d:%d' % (arch.n, arch.m) if arch.sparse else 'dense'}, {arch.mode})")
    for col in ("layer", "kind", "count", "cycles", "stalls", "util", "sparse", "fallback reason"):
        t.add_column(col)
    for i, name in enumerate(res.names):
        t.add_row(name, res.kinds[i], str(int(res.counts[i])), f"{int(res.layers['cycles'][i]):,}",
                  f"{int(res.layers['stall_cycles'][i]):,}", f"{res.layers['utilization'][i]:.2f}",
                  "yes" if res.layers["sparse"][i] else "no", res.fallback_reasons[i] or "")
    c = Console()
    c.print(t)
    tt = res.totals
    c.print(f"total cycles {int(tt['total_cycles']):,} (stall fraction {tt['stall_fraction']:.3f}); "
            f"effective speedup vs dense {tt['effective_speedup']:.3f} (ideal bound {tt['ideal_speedup']:.3f}); "
            f"dense-fallback share {tt['fallback_fraction']:.3f}; DRAM {tt['dram_bytes'] / 1e6:.2f} MB "
            f"(metadata {tt['metadata_bytes'] / 1e6:.2f} MB)")


def register(app: typer.Typer) -> None:
    @app.command("simulate")
    def simulate_cmd(
        workload: Annotated[Optional[str], typer.Option("--workload", help="built-in workload name")] = None,
        topology: Annotated[Optional[Path], typer.Option("--topology", help="SCALE-Sim topology CSV or native workload (.csv/.toml)")] = None,
        scalesim_config: Annotated[Optional[Path], typer.Option("--scalesim-config", help="SCALE-Sim .cfg (array, SRAM, dataflow, sparsity)")] = None,
        rows: Annotated[Optional[int], typer.Option("--rows")] = None,
        cols: Annotated[Optional[int], typer.Option("--cols")] = None,
        sram_kb: Annotated[Optional[float], typer.Option("--sram-kb", help="total SRAM, split ifmap/filter/ofmap equally")] = None,
        clock_mhz: Annotated[Optional[float], typer.Option("--clock-mhz")] = None,
        dram_gbps: Annotated[Optional[float], typer.Option("--dram-gbps")] = None,
        dataflow: Annotated[Optional[str], typer.Option("--dataflow", help="ws, os or is")] = None,
        sparsity: Annotated[Optional[str], typer.Option("--sparsity", help="N:M (e.g. 2:4) or dense")] = None,
        as_json: Annotated[bool, typer.Option("--json", help="print one JSON object to stdout")] = False,
    ) -> None:
        """Cycles, stalls, traffic and effective N:M speedup of a workload on one array."""
        try:
            run(workload, topology, scalesim_config, rows, cols, sram_kb, clock_mhz, dram_gbps, dataflow, sparsity,
                as_json)
        except InputError as exc:
            print(f"sparsepe: error: {exc}", file=sys.stderr)
            raise typer.Exit(code=2)
