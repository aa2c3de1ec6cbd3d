"""``sparsepe simulate``: the analytical cycle model on one workload and one design point."""

from __future__ import annotations

import math
import sys
from dataclasses import dataclass, replace
from pathlib import Path
from typing import Annotated, Any, cast

import typer
from rich.console import Console
from rich.table import Table

from explore.commands.design_options import (
    COLS,
    ROWS,
    SRAM_KB,
    AccBits,
    ClockMhz,
    Cols,
    Dataflow,
    DoubleBuffer,
    Pipeline,
    Precision,
    Rows,
    Sparsity,
    SramBanks,
    SramKb,
)
from explore.safety import dumps, rich_markup as esc
from explore.space import sparsity_option
from hw.errors import InputError
from hw.host import printable
from hw.precision import operand_bits
from sim.importers.hf import hf_summary
from sim.importers.onnx import parse_shapes
from sim.importers.registry import importer_named
from sim.inputs import read_text
from sim.perf import ArrayConfig, NetworkResult, simulate
from sim.workloads import get_workload, load_scalesim_config, load_scalesim_topology, load_workload


def _parse_sparsity(s: str) -> tuple[bool, int, int]:
    return sparsity_option(s)


def _load_topology(path: Path):
    if path.suffix == ".toml":
        return load_workload(path)
    first = read_text(path, "topology file", encoding="utf-8-sig").split("\n", 1)[0].replace(" ", "").lower()
    if first.startswith("name,kind"):
        return load_workload(path)
    return load_scalesim_topology(path)


def load_model_workload(
    onnx: Path | None = None,
    input_shape: list[str] | None = None,
    hf_config: Path | None = None,
    batch: int | None = None,
    seq: int | None = None,
    phase: str | None = None,
    context: int | None = None,
    prune_lm_head: bool = False,
):
    """The workload of ``--onnx`` (with ``--input-shape``/``--batch``) or ``--hf-config`` (with
    ``--seq``/``--batch``/``--phase``/``--context``/``--prune-lm-head``); flags of the other importer are an error."""
    if onnx is not None:
        for flag, v in (
            ("--seq", seq),
            ("--phase", phase),
            ("--context", context),
            ("--prune-lm-head", prune_lm_head or None),
        ):
            if v is not None:
                raise InputError(f"{flag} applies to --hf-config, not --onnx", where=flag)
        return importer_named("onnx").load(
            onnx, {"batch": batch}, {"input_shapes": parse_shapes(input_shape)}
        )
    if input_shape:
        raise InputError("--input-shape applies to --onnx", where="--input-shape")
    if context is not None and (phase or "prefill") != "decode":
        raise InputError(
            f"applies to --phase decode (the KV cache one decode step reads), not --phase "
            f"{printable(phase or 'prefill')}",
            where="--context",
        )
    params = {
        "seq": seq,
        "batch": 1 if batch is None else batch,
        "phase": phase or "prefill",
        "context": context,
    }
    # the caller gives --onnx or --hf-config: without --onnx, hf_config is the file
    return importer_named("hf").load(cast(Path, hf_config), params, {"prune_lm_head": prune_lm_head})


@dataclass(frozen=True)
class ArrayFlags:
    """The array flags of ``sparsepe simulate`` as given (None: not given)."""

    rows: int | None
    cols: int | None
    sram_kb: float | None
    clock_mhz: float | None
    dram_gbps: float | None
    dataflow: str | None
    sparsity: str | None
    acc_bits: int | None
    pipeline: int | None
    sram_banks: int | None
    sram_port_bytes: float | None
    vector_lanes: int | None
    vector_overlap: bool
    double_buffer: bool


def _check_sources(
    workload: str | None,
    topology: Path | None,
    onnx: Path | None,
    hf_config: Path | None,
    model_flags: tuple[tuple[str, Any], ...],
) -> None:
    """Exactly one workload source; the importers' flags (``model_flags``: flag, value) only with
    --onnx or --hf-config."""
    sources = [x for x in (workload, topology, onnx, hf_config) if x is not None]
    if len(sources) != 1:
        raise InputError(
            "give exactly one of --workload NAME, --topology FILE.csv, --onnx MODEL.onnx or "
            "--hf-config config.json",
            where="simulate",
        )
    if onnx is None and hf_config is None:
        for flag, v in model_flags:
            if v is not None and v is not False:  # given, even as 0 or an empty list
                to = "--hf-config" if flag == "--prune-lm-head" else "--onnx / --hf-config"
                what = f"--workload {printable(workload)}" if workload else "--topology"
                raise InputError(f"applies to {to}, not to {what} (whose shape is fixed)", where=flag)


def _array_config(flags: ArrayFlags, scalesim_config: Path | None, precision: str | None) -> ArrayConfig:
    """The array the flags name: the shared defaults (design_options), or a --scalesim-config's
    array with the flags given over it."""
    rows, cols, sram_kb = flags.rows, flags.cols, flags.sram_kb
    sram_port_bytes = flags.sram_port_bytes
    sp = _parse_sparsity(flags.sparsity) if flags.sparsity is not None else None
    if scalesim_config is None:  # the shared defaults (design_options); a --scalesim-config brings its own
        rows, cols = ROWS if rows is None else rows, COLS if cols is None else cols
        sram_kb = SRAM_KB if sram_kb is None else sram_kb
    over: dict[str, Any] = dict(
        rows=rows,
        cols=cols,
        clock_mhz=flags.clock_mhz,
        dram_gbps=flags.dram_gbps,
        dataflow=flags.dataflow,
        acc_bits=flags.acc_bits,
        pipeline=flags.pipeline,
        sram_banks=flags.sram_banks,
        vector_lanes=flags.vector_lanes,
        vector_overlap=True if flags.vector_overlap else None,
        double_buffer=True if flags.double_buffer else None,
    )
    if precision is not None:  # bytes moved per operand follow the format (metadata stays log2(M) bits)
        over.update(act_bits=operand_bits(precision), weight_bits=operand_bits(precision))
    if sram_port_bytes is not None and not (sram_port_bytes > 0):
        raise InputError(
            f"must be a positive number of bytes per cycle, or inf for no limit, got {sram_port_bytes!r}",
            where="--sram-port-bytes",
        )
    if sram_kb is not None:
        over.update(ifmap_kb=sram_kb / 3, filter_kb=sram_kb / 3, ofmap_kb=sram_kb / 3)
    if sp is not None:
        over.update(sparse=sp[0], n=sp[1], m=sp[2])
    if scalesim_config is not None:
        arch = load_scalesim_config(scalesim_config).to_array_config(**over)
    else:
        if sram_kb is not None:
            over = {k: v for k, v in over.items() if k not in ("ifmap_kb", "filter_kb", "ofmap_kb")}
            over["sram_kb"] = sram_kb
        arch = ArrayConfig(**{k: v for k, v in over.items() if v is not None})
    if sram_port_bytes is not None:
        arch = replace(arch, sram_port_bytes=None if math.isinf(sram_port_bytes) else sram_port_bytes)
    return arch


def _print_json(res: NetworkResult, wl: Any, hf: dict[str, Any] | None, quant: Any) -> None:
    out = res.to_dict()
    if wl.active_param_count is not None:  # a mixture of experts: the parameters one token uses
        out["active_params"] = wl.active_params
    if hf is not None:  # with and without the embeddings; the quantization_config read
        out["params"] = hf["params"]
        out["quantization"] = quant.to_dict() if quant is not None else None
    sys.stdout.write(dumps(out) + "\n")


def _layer_table(res: NetworkResult, arch: ArrayConfig) -> Table:
    """One row per array layer, then one per vector-unit operator."""
    t = Table(
        title=f"{esc(res.workload)} on {arch.rows}x{arch.cols} {arch.dataflow.upper()} "
        f"({f'{arch.n:d}:{arch.m:d}' if arch.sparse else 'dense'}, {arch.mode}"
        f"{', double-buffered weights' if arch.double_buffer else ''})"
    )
    for col in (
        "layer",
        "unit",
        "kind",
        "count",
        "cycles",
        "stalls",
        "of which SRAM",
        "util",
        "sparse",
        "fallback reason",
    ):
        t.add_column(col)
    for i, name in enumerate(res.names):
        t.add_row(
            esc(name),
            "array",
            res.kinds[i],
            str(int(res.counts[i])),
            f"{int(res.layers['cycles'][i]):,}",
            f"{int(res.layers['stall_cycles'][i]):,}",
            f"{int(res.layers['sram_stall_cycles'][i]):,}",
            f"{res.layers['utilization'][i]:.2f}",
            "yes" if res.layers["sparse"][i] else "no",
            esc(res.fallback_reasons[i] or ""),
        )
    for j, op in enumerate(res.vector_ops):
        vec = res.vector
        t.add_row(
            esc(op.name),
            "vector",
            esc(op.op_type + ("" if op.supported else " (unsupported)")),
            str(op.count),
            f"{int(vec['vector_op_cycles'][j]):,}",
            f"{int(vec['vector_sram_stall_cycles'][j] + vec['vector_dram_stall_cycles'][j]):,}",
            f"{int(vec['vector_sram_stall_cycles'][j]):,}",
            "",
            "",
            "" if op.supported else esc(op.reason or ""),
        )
    return t


def _print_human(
    res: NetworkResult, arch: ArrayConfig, wl: Any, hf: dict[str, Any] | None, quant: Any
) -> None:
    c = Console()
    c.print(_layer_table(res, arch))
    tt = res.totals
    c.print(
        f"array {int(tt['array_cycles']):,} cycles, vector unit ({arch.effective_vector_lanes} lanes) "
        f"{int(tt['vector_cycles']):,} cycles ({tt['vector_fraction']:.3f} of the time, "
        f"{'overlapped across layers' if arch.vector_overlap else 'serialised with the array'}); "
        f"weight parameters {res.weight_params:,}"
        + (f" ({wl.active_params:,} per token)" if wl.active_param_count is not None else "")
    )
    if hf is not None:
        p = hf["params"]
        c.print(
            f"parameters {p['weight_params']:,}, {p['active_params']:,} per token; without the "
            f"{p['embedding_params']:,} input-embedding parameters {p['weight_params_excluding_embeddings']:,} "
            f"and {p['active_params_excluding_embeddings']:,} per token ({esc(p['published_convention'])})"
        )
        if quant is not None:
            c.print(esc(quant.note))
    for u in res.unsupported_ops:
        c.print(f"unsupported: {u['op_type']} x{u['count']} ({'; '.join(u['shapes'])}): {u['reason']}")
    bw = arch.sram_bytes_per_cycle
    c.print(
        f"total cycles {int(tt['total_cycles']):,} (stall fraction {tt['stall_fraction']:.3f}, of which SRAM ports "
        f"{tt['sram_stall_fraction']:.3f}); "
        f"effective speedup vs dense {tt['effective_speedup']:.3f} (ideal bound {tt['ideal_speedup']:.3f}); "
        f"dense-fallback share {tt['fallback_fraction']:.3f}; DRAM {tt['dram_bytes'] / 1e6:.2f} MB "
        f"(metadata {tt['metadata_bytes'] / 1e6:.2f} MB); SRAM ifmap/filter/ofmap "
        f"{'/'.join(f'{x:g}' for x in arch.sram_split_kb)} KiB, "
        f"{'no port limit' if math.isinf(bw) else f'{bw:g} B/cycle per buffer'}"
    )


def run(
    workload: str | None,
    topology: Path | None,
    scalesim_config: Path | None,
    rows: int | None,
    cols: int | None,
    sram_kb: float | None,
    clock_mhz: float | None,
    dram_gbps: float | None,
    dataflow: str | None,
    sparsity: str | None,
    as_json: bool,
    *,
    acc_bits: int | None = None,
    pipeline: int | None = None,
    sram_banks: int | None = None,
    sram_port_bytes: float | None = None,
    onnx: Path | None = None,
    input_shape: list[str] | None = None,
    hf_config: Path | None = None,
    batch: int | None = None,
    seq: int | None = None,
    phase: str | None = None,
    context: int | None = None,
    vector_lanes: int | None = None,
    vector_overlap: bool = False,
    precision: str | None = None,
    prune_lm_head: bool = False,
    double_buffer: bool = False,
) -> None:
    model_flags = (
        ("--input-shape", input_shape),
        ("--batch", batch),
        ("--seq", seq),
        ("--phase", phase),
        ("--context", context),
        ("--prune-lm-head", prune_lm_head),
    )
    _check_sources(workload, topology, onnx, hf_config, model_flags)
    if onnx is not None or hf_config is not None:
        wl = load_model_workload(onnx, input_shape, hf_config, batch, seq, phase, context, prune_lm_head)
    else:  # one source was given (_check_sources): a --workload name or a --topology file
        wl = get_workload(workload) if workload else _load_topology(cast(Path, topology))
    hf = hf_summary(hf_config, wl) if hf_config is not None else None
    quant = hf["quantization"] if hf else None
    if precision is None and quant is not None and quant.precision is not None:
        precision = quant.precision  # the operand format the checkpoint's quantization_config gives
    flags = ArrayFlags(
        rows=rows,
        cols=cols,
        sram_kb=sram_kb,
        clock_mhz=clock_mhz,
        dram_gbps=dram_gbps,
        dataflow=dataflow,
        sparsity=sparsity,
        acc_bits=acc_bits,
        pipeline=pipeline,
        sram_banks=sram_banks,
        sram_port_bytes=sram_port_bytes,
        vector_lanes=vector_lanes,
        vector_overlap=vector_overlap,
        double_buffer=double_buffer,
    )
    arch = _array_config(flags, scalesim_config, precision)
    res = simulate(wl, arch)
    if as_json:
        _print_json(res, wl, hf, quant)
    else:
        _print_human(res, arch, wl, hf, quant)


WorkloadName = Annotated[str | None, typer.Option("--workload", help="built-in workload name")]
Topology = Annotated[
    Path | None,
    typer.Option("--topology", help="SCALE-Sim topology CSV or native workload (.csv/.toml)"),
]
ScalesimConfig = Annotated[
    Path | None,
    typer.Option(
        "--scalesim-config",
        help="SCALE-Sim .cfg: its array, SRAM sizes, dataflow and sparsity replace the "
        "defaults of --rows, --cols, --sram-kb, --dataflow and --sparsity",
    ),
]
DramGbps = Annotated[
    float | None,
    typer.Option(
        "--dram-gbps",
        help="DRAM bandwidth in GB/s, one bus shared by all operands",
        show_default="64",
    ),
]
SramPortBytes = Annotated[
    float | None,
    typer.Option(
        "--sram-port-bytes",
        help="bytes per cycle of one bank's port; inf removes the SRAM port limit",
        show_default="64",
    ),
]
Onnx = Annotated[Path | None, typer.Option("--onnx", help=importer_named("onnx").description)]
InputShape = Annotated[
    list[str] | None,
    typer.Option(
        "--input-shape", help="NAME=1x3x224x224: the shape of an ONNX graph input (repeat per input)"
    ),
]
HfConfig = Annotated[Path | None, typer.Option("--hf-config", help=importer_named("hf").description)]
Batch = Annotated[
    int | None,
    typer.Option(
        "--batch",
        help="sequences / images per pass (--onnx: a symbolic leading dimension)",
        show_default="1",
    ),
]
Seq = Annotated[
    int | None,
    typer.Option(
        "--seq",
        help="--hf-config: tokens per sequence in prefill",
        show_default="min(max positions, 2048)",
    ),
]
Phase = Annotated[
    str | None,
    typer.Option("--phase", help="--hf-config: prefill or decode", show_default="prefill"),
]
Context = Annotated[
    int | None,
    typer.Option(
        "--context",
        help="--hf-config decode: tokens in the KV cache read from DRAM",
        show_default="--seq",
    ),
]
VectorLanes = Annotated[
    int | None,
    typer.Option(
        "--vector-lanes",
        help="lanes of the vector unit that runs the non-GEMM operators",
        show_default="--cols",
    ),
]
VectorOverlap = Annotated[
    bool,
    typer.Option(
        "--vector-overlap",
        help="overlap the vector unit's work with the next layer's GEMMs (default: serialised with the array)",
    ),
]
PruneLmHead = Annotated[
    bool,
    typer.Option(
        "--prune-lm-head",
        help="--hf-config: make an LM head tied to the embeddings a 2:4 target "
        "(default: kept dense, as the embeddings are)",
    ),
]
AsJson = Annotated[bool, typer.Option("--json", help="print one JSON object to stdout")]


def _flag_error(exc: InputError, where: str) -> InputError:
    """sim.perf's error naming its parameter (``where``: ``parameter sram_banks``), naming the flag
    instead."""
    flag = "--" + where.removeprefix("parameter ").replace("_", "-")
    msg = str(exc).removeprefix(f"{where}: ")
    return InputError(msg, where=flag if flag != "--n:m" else "--sparsity")


def register(app: typer.Typer) -> None:
    @app.command("simulate")
    def simulate_cmd(
        workload: WorkloadName = None,
        topology: Topology = None,
        scalesim_config: ScalesimConfig = None,
        rows: Rows = None,  # None: the .cfg's ArrayHeight, else ROWS (run)
        cols: Cols = None,
        sram_kb: SramKb = None,
        clock_mhz: ClockMhz = None,
        dram_gbps: DramGbps = None,
        dataflow: Dataflow = None,
        sparsity: Sparsity = None,
        acc_bits: AccBits = None,
        pipeline: Pipeline = None,
        sram_banks: SramBanks = None,
        sram_port_bytes: SramPortBytes = None,
        onnx: Onnx = None,
        input_shape: InputShape = None,
        hf_config: HfConfig = None,
        batch: Batch = None,
        seq: Seq = None,
        phase: Phase = None,
        context: Context = None,
        vector_lanes: VectorLanes = None,
        vector_overlap: VectorOverlap = False,
        precision: Precision = None,
        prune_lm_head: PruneLmHead = False,
        double_buffer: DoubleBuffer = False,
        as_json: AsJson = False,
    ) -> None:
        """Cycles, stalls, traffic and effective N:M speedup of a workload on one array."""
        try:
            run(
                workload,
                topology,
                scalesim_config,
                rows,
                cols,
                sram_kb,
                clock_mhz,
                dram_gbps,
                dataflow,
                sparsity,
                as_json,
                acc_bits=acc_bits,
                pipeline=pipeline,
                sram_banks=sram_banks,
                sram_port_bytes=sram_port_bytes,
                onnx=onnx,
                input_shape=input_shape,
                hf_config=hf_config,
                batch=batch,
                seq=seq,
                phase=phase,
                context=context,
                vector_lanes=vector_lanes,
                vector_overlap=vector_overlap,
                precision=precision,
                prune_lm_head=prune_lm_head,
                double_buffer=double_buffer,
            )
        except InputError as exc:
            if exc.where and exc.where.startswith("parameter "):  # sim.perf names its parameter: the flag
                raise _flag_error(exc, exc.where) from None
            raise
