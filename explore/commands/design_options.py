"""The design-point flags that several subcommands take, declared once: one default, one check each.

``sparsepe ppa``, ``simulate``, ``verilog`` and ``sweep`` name the same array with the same flags; each
option here is a Typer ``Annotated`` type with its help and its check (explore.flags: one line,
``sparsepe: error: <flag>: <what>``, exit 2), and its default is the constant beside it. A command
writes ``rows: Rows = ROWS``. Where a command must tell "not given" from the default (``simulate``
takes the array of a ``--scalesim-config`` when ``--rows`` is absent), it writes ``= None`` and
resolves None to the same constant; the help shows the constant either way (``show_default``).

Defaults are the middle of the default sweep space (examples/default.toml: rows and cols 8..64,
sram_kb 64..4096, pipeline 1..3, ws/os). ``--clock-mhz`` shares its check but not a default: ppa
runs at the fmax it computes, simulate (no timing model) at :data:`SIMULATE_CLOCK_MHZ`.
Checks that relate several flags (acc bits >= act + weight bits, double buffering needs ws or is)
stay in the commands and the models.
"""

from __future__ import annotations

from typing import Annotated, Any, TypeVar

import typer

from explore.flags import in_range, one_of
from explore.space import MAX_ARRAY_SIDE, MAX_CLOCK_MHZ, MAX_SRAM_KB, MIN_CLOCK_MHZ, sparsity_option
from hw.errors import InputError
from hw.params import MAX_ACC_BITS, MAX_PIPELINE
from hw.precision import PRECISIONS, check_precision
from ppa.liberty.library import MAX_LIBERTY_NODE_NM
from ppa.references import VT_CHOICES

__all__ = [
    "ACC_BITS",
    "COLS",
    "DATAFLOW",
    "DATAFLOWS",
    "PIPELINE",
    "PRECISION",
    "ROWS",
    "SIMULATE_CLOCK_MHZ",
    "SPARSITY",
    "SRAM_BANKS",
    "SRAM_KB",
    "AccBits",
    "ArrayCols",
    "ArrayRows",
    "ClockMhz",
    "Cols",
    "Dataflow",
    "DenseFlag",
    "DoubleBuffer",
    "Liberty",
    "LibertyNode",
    "Pipeline",
    "Precision",
    "Rows",
    "Sparsity",
    "SramBanks",
    "SramKb",
    "Vt",
    "or_default",
    "parse_sparsity_dp",
]

ROWS = 16
COLS = 16
#: KiB of on-chip SRAM (simulate splits it equally into its ifmap, filter and ofmap buffers).
SRAM_KB = 256.0
PIPELINE = 1
PRECISION = "int8"
SPARSITY = "2:4"
DATAFLOW = "ws"
#: The dataflows of the cycle model and the cost model (is is costed as ws; hw has ws and os arrays).
DATAFLOWS = ("ws", "os", "is")
#: Banks per SRAM buffer: the ping and pong halves of the double buffer.
SRAM_BANKS = 2
ACC_BITS = 32
#: simulate's clock when --clock-mhz is absent. [A] an operating point, not a published figure
#: (sim.perf.ArrayConfig's default); ppa's default is the fmax it computes.
SIMULATE_CLOCK_MHZ = 1000.0
#: Most SRAM banks per buffer (sim.perf.ArrayConfig's limit).
MAX_SRAM_BANKS = 64


T = TypeVar("T")


def or_default(value: T | None, default: T) -> T:
    """A flag's value, or ``default`` for None: a command whose flag defaults to the constant (never
    None from the command line) passes it on typed as given."""
    return default if value is None else value


def parse_sparsity_dp(text: str) -> tuple[bool, int, int, bool]:
    """``"2:4"`` -> (True, 2, 4, False); ``"dense"`` -> (False, 2, 4, False); ``"N:M+dense"`` (the sparse
    PE with a full-rate dense path) -> (True, N, M, True)."""
    t = str(text).strip()
    if t.lower().replace(" ", "").endswith("+dense"):
        sparse, n, m = sparsity_option(t[: t.lower().rindex("+")])
        if not sparse:
            raise InputError(f"the dense path is a mode of an N:M PE, got {text!r}", where="--sparsity")
        return True, n, m, True
    return (*sparsity_option(t), False)


def _check_sparsity(value: Any) -> Any:
    if value is not None:
        parse_sparsity_dp(value)
    return value


def _check_precision(value: Any) -> Any:
    return value if value is None else check_precision(value, where="--precision")


def _int(flag: str, lo: int, hi: int, help_: str, show: str | None = None) -> Any:
    return typer.Option(flag, help=help_, callback=in_range(flag, lo, hi), show_default=show or True)


_ROWS_HELP = "PE rows R of the array (the reduction side in WS)"
_COLS_HELP = "PE columns C of the array (output channels in WS)"

Rows = Annotated[int | None, _int("--rows", 1, MAX_ARRAY_SIDE, _ROWS_HELP, str(ROWS))]
Cols = Annotated[int | None, _int("--cols", 1, MAX_ARRAY_SIDE, _COLS_HELP, str(COLS))]
#: verilog's: the array is written only when --rows and --cols are given (no default).
ArrayRows = Annotated[
    int | None,
    _int("--rows", 1, MAX_ARRAY_SIDE, _ROWS_HELP + "; with --cols: write the array", "no array"),
]
ArrayCols = Annotated[
    int | None,
    _int("--cols", 1, MAX_ARRAY_SIDE, _COLS_HELP + "; with --rows: write the array", "no array"),
]
SramKb = Annotated[
    float | None,
    typer.Option(
        "--sram-kb",
        help="on-chip SRAM in KiB (simulate: split equally into the ifmap, filter and ofmap buffers)",
        callback=in_range("--sram-kb", 0, MAX_SRAM_KB),
        show_default=f"{SRAM_KB:g}",
    ),
]
ClockMhz = Annotated[
    float | None,
    typer.Option(
        "--clock-mhz",
        help="array clock in MHz",
        callback=in_range("--clock-mhz", MIN_CLOCK_MHZ, MAX_CLOCK_MHZ),
        show_default=f"ppa: fmax at nominal V; simulate: {SIMULATE_CLOCK_MHZ:g}",
    ),
]
Pipeline = Annotated[
    int | None,
    _int(
        "--pipeline",
        1,
        MAX_PIPELINE,
        "register stages in the PE (hw PEParams.pipeline); each fold pays pipeline - 1 cycles",
        str(PIPELINE),
    ),
]
SramBanks = Annotated[
    int | None,
    _int(
        "--sram-banks",
        1,
        MAX_SRAM_BANKS,
        "banks per SRAM buffer (2: the ping and pong halves of the double buffer)",
        str(SRAM_BANKS),
    ),
]
AccBits = Annotated[
    int | None,
    _int(
        "--acc-bits",
        1,
        MAX_ACC_BITS,
        "accumulator width, >= act + weight bits (float precisions: binary32); "
        "partial sums that leave the array before the reduction completes move at this width",
        str(ACC_BITS),
    ),
]
Dataflow = Annotated[
    str | None,
    typer.Option(
        "--dataflow",
        help="array dataflow: ws, os or is (is is costed as ws; verilog writes ws and os arrays)",
        callback=one_of("--dataflow", DATAFLOWS),
        show_default=DATAFLOW,
    ),
]
Sparsity = Annotated[
    str | None,
    typer.Option(
        "--sparsity",
        help="N:M pattern (e.g. 2:4) or dense; ppa also 'N:M+dense' (the sparse PE with its dense path)",
        callback=_check_sparsity,
        show_default=SPARSITY,
    ),
]
Precision = Annotated[
    str | None,
    typer.Option(
        "--precision",
        help=f"operand format: {', '.join(PRECISIONS)} (float formats accumulate in binary32); it sets "
        "the operand widths and the bytes moved per activation and weight",
        callback=_check_precision,
        show_default=PRECISION,
    ),
]
DoubleBuffer = Annotated[
    bool,
    typer.Option(
        "--double-buffer", help="a shadow weight set per PE, loaded while the array computes (ws or is)"
    ),
]
DenseFlag = Annotated[
    bool,
    typer.Option(
        "--dense-path",
        help="the sparse PE with a full-rate dense path (M multipliers; N:M at M/N groups per cycle)",
    ),
]
Liberty = Annotated[
    str | None,
    typer.Option(
        "--liberty",
        help="Liberty (.lib) file of your standard cells, or asap7 (the ASAP7 7 nm library): timing from "
        "OpenSTA on it (sweep: overrides fixed.liberty)",
    ),
]
LibertyNode = Annotated[
    int | None,
    _int(
        "--liberty-node",
        1,
        MAX_LIBERTY_NODE_NM,
        "process node (nm) of the Liberty file when the file does not state it",
    ),
]
Vt = Annotated[
    str | None,
    typer.Option(
        "--vt",
        help=f"threshold-voltage flavour of the logic cells: {', '.join(VT_CHOICES)} (faster cells leak "
        "more); default: the lowest-leakage flavour that meets --clock-mhz (rvt with no clock)",
        callback=one_of("--vt", VT_CHOICES),
        show_default="auto",
    ),
]
