"""``sparsepe verilog``: write the PE (and array) Verilog with JSON sidecars."""

from __future__ import annotations

from pathlib import Path
from typing import Annotated

import typer
from rich.console import Console

from explore.commands.design_options import (
    DATAFLOW,
    PIPELINE,
    AccBits,
    ArrayCols,
    ArrayRows,
    Dataflow,
    Pipeline,
    Precision,
    or_default,
)
from explore.safety import check_out_dir, dumps, rich_markup
from hw.errors import InputError
from hw.host import printable
from hw.params import PEParams
from hw.precision import operand_bits


def register(app: typer.Typer) -> None:
    @app.command("verilog")
    def verilog_cmd(
        out: Annotated[Path, typer.Option("--out", help="Output directory (created if absent).")],
        act_bits: Annotated[
            int | None,
            typer.Option(
                "--act-bits",
                help="Activation width (signed integer precisions; default: the precision's width).",
            ),
        ] = None,
        weight_bits: Annotated[
            int | None,
            typer.Option("--weight-bits", help="Weight width (default: the precision's width)."),
        ] = None,
        acc_bits: AccBits = None,  # None: ACC_BITS, binary32 for float precisions (hw.params.PEParams)
        precision: Precision = None,  # None: PRECISION; given, --act-bits / --weight-bits may only repeat its width
        n: Annotated[int, typer.Option("--n", help="Kept weights per group (N of N:M).")] = 2,
        m: Annotated[int, typer.Option("--m", help="Group size (M of N:M), a power of two.")] = 4,
        pipeline: Pipeline = PIPELINE,
        rows: ArrayRows = None,
        cols: ArrayCols = None,
        dataflow: Dataflow = DATAFLOW,
        dense_path: Annotated[
            bool,
            typer.Option(
                "--dense-path",
                help="Also write sparse_pe_dp.v (the sparse PE with a "
                "full-rate dense path: M multipliers, N:M at M/N groups per cycle) "
                "and, with --rows/--cols, sparse_array_dp.v.",
            ),
        ] = False,
        double_buffer: Annotated[
            bool,
            typer.Option(
                "--double-buffer",
                help="With --rows/--cols and ws: the arrays with a shadow weight set per PE "
                "(sparse_array_db.v, dense_array_db.v, ...) in place of the single-buffered "
                "ones.",
            ),
        ] = False,
        as_json: Annotated[
            bool, typer.Option("--json", help="Print the written files as one JSON object.")
        ] = False,
    ) -> None:
        """Write sparse_pe.v, dense_pe.v (and sparse_array.v, dense_array.v with --rows/--cols) plus JSON sidecars."""
        flags = {
            "act_bits": "--act-bits",
            "weight_bits": "--weight-bits",
            "acc_bits": "--acc-bits",
            "n:m": "--n/--m",
            "pipeline": "--pipeline",
            "rows": "--rows",
            "cols": "--cols",
            "rows/cols": "--rows/--cols",
            "dataflow": "--dataflow",
            "precision": "--precision",
            "double_buffer": "--double-buffer",
        }
        try:
            if precision is not None:  # the format fixes the operand widths: a different width contradicts it
                ob = operand_bits(precision)
                for name, v in (("act_bits", act_bits), ("weight_bits", weight_bits)):
                    if v is not None and v != ob:
                        raise InputError(
                            f"{v} bits contradict --precision {printable(precision)} ({ob}-bit operands): "
                            "give the precision or the width, not both",
                            where=name,
                        )
            params = PEParams(
                act_bits=act_bits,
                weight_bits=weight_bits,
                acc_bits=acc_bits,
                n=n,
                m=m,
                pipeline=or_default(pipeline, PIPELINE),
                precision=precision or "int8",
            )
            if (rows is None) != (cols is None):
                raise InputError("give both --rows and --cols, or neither", where="rows/cols")
            if rows is not None:  # hw has ws and os arrays (each flag's range passed explore.flags)
                if dataflow not in ("ws", "os"):
                    raise InputError(f"must be 'ws' or 'os', got {dataflow!r}", where="dataflow")
            if double_buffer and (rows is None or dataflow != "ws"):
                raise InputError(
                    "double-buffered weights are a weight-stationary array's: give --rows, --cols "
                    "and --dataflow ws",
                    where="double_buffer",
                )
        except InputError as exc:
            msg = str(exc).removeprefix(f"{exc.where}: ") if exc.where else str(exc)
            raise InputError(msg, where=flags.get(exc.where or "", exc.where)) from None
        check_out_dir(out)
        from hw.verilog import write_bundle  # reason: amaranth loads once the flags have passed their checks

        paths = write_bundle(
            out,
            params,
            rows=rows,
            cols=cols,
            dataflow=or_default(dataflow, DATAFLOW),
            dense_path=dense_path,
            double_buffer=double_buffer,
        )
        if as_json:
            print(dumps({k: str(v) for k, v in paths.items()}, sort_keys=True))
        else:
            con = Console(stderr=True)
            for key, path in paths.items():
                if not key.endswith(".json"):
                    con.print(
                        f"wrote [bold]{rich_markup(path)}[/bold] ({params.precision}, latency {params.latency})"
                    )
