"""Glitches: how much switching a timed simulation adds to the zero-delay toggles the model counts.

ppa.model costs switching activity as zero-delay toggles of the generic netlist (ppa.netlist), so a
net that settles after several transitions within a cycle is charged once. This bench measures the
difference with peer tools on each operator's netlist mapped to a real library:

1. the operator (ppa.operators 8/32-bit add and multiply, hw.fp's bf16 FPMul and binary32 F32Add) is
   mapped to osu018 for minimum delay, buffered and sized (ppa.timing.mapping, as the STA flow does;
   ``--mapping area``: for area);
2. OpenSTA writes its SDF (the library's delays at each cell's load);
3. zero-delay: ppa.liberty.switching simulates the mapped netlist (flattened onto the cells'
   functions) on random operands and charges each net's transitions the library's energy per
   transition of that net (ppa.liberty.energy.net_energies: 1/2 C V^2 of the pins it drives plus
   its driver's internal energy; the operands' own input nets are not charged);
   tests/ppa/test_liberty_switching.py checks its transitions net by net against Icarus;
4. timed: Icarus Verilog runs the same operands through the osu018 cell models with the SDF
   (``-gspecify``, ``$sdf_annotate``), one operand pair every 40 ns (longer than any path), and
   each net's transitions in its VCD are charged the same energies.

It prints each operator's energy per operation both ways and the energy ratios between operators
against Horowitz's 45 nm and Jouppi's 7 nm tables (published-figures.md section 3). Then what the
model charges instead: the generic netlist's toggles (ppa.netlist), each at its net's energy as an
osu018 cell (ppa.liberty.gates; beside one energy per toggle, the model's former rule), of the
calibration operators (ppa.calibration's operands) and of the INT8 and BF16 dense PEs (ppa.activity's
default trace), against the library energy of their mapped netlists on the same inputs, each
relative to the calibration pair (the 8-bit multiply and 32-bit add, the model's fit anchors). Icarus applies a
path delay to every pulse (no pulse rejection), so the timed figure is an upper bound on the
glitches of this netlist. Not a target: it measures glitches, which the model leaves out, and
timing-driven sizing, which it leaves out too (docs/validation.md, "Energy per operation").

Needs Icarus (iverilog, vvp), OpenSTA (sta) and Debian's qflow-tech-osu018; skips with the reason
otherwise. Run: PYTHONPATH=. python bench/bench_ppa_glitch.py [--ops mul8,add32,...] [--vectors 400]
"""

from __future__ import annotations

import argparse
import re
import shutil
import subprocess
import sys
import tempfile
import time
from pathlib import Path

import numpy as np
from bench_ppa_precision import _fp_operands

from hw.fp import F32Add, FPMul
from hw.params import PEParams
from hw.precision import FORMATS
from hw.verilog import to_verilog
from ppa import activity, rtl
from ppa.calibration import CAL_CYCLES, CAL_INSTANCES, CAL_SEED, measure_operator
from ppa.liberty import sizing
from ppa.liberty.library import default_liberty_path, load_liberty
from ppa.liberty.mapped import module_body, port_bits
from ppa.liberty.switching import mapped_switching
from ppa.timing.mapping import FASTEST_CLOCK_PS, map_to_liberty
from ppa.timing.opensta import measure_fo4, run_sta

PERIOD_NS = 40
SEED = 7
#: [S] energy per operation (pJ): Horowitz ISSCC 2014 (45 nm) and Jouppi et al. ISCA 2021 Table 2 (7 nm)
HOROWITZ_PJ = {"mul8": 0.2, "add8": 0.03, "add32": 0.1, "mul32": 3.1, "f32_add": 0.9}
JOUPPI_PJ = {"mul8": 0.07, "add8": 0.007, "add32": 0.03, "mul32": 1.48, "f32_add": 0.38, "bf16_mul": 0.21}
RATIOS = (("mul8", "add32"), ("mul32", "mul8"), ("add8", "add32"), ("f32_add", "add32"), ("bf16_mul", "mul8"))


def operator(name: str, rng: np.random.Generator, n: int):
    """(Verilog, top, {port: operand array}) of one operator on ``n`` random operand pairs."""
    if name in ("mul8", "add8", "add32", "mul32"):
        kind, width = name[:3], int(name[3:])
        v, top = rtl.operator_verilog(kind, width)
        return v, top, {p: rng.integers(0, 1 << width, n, dtype=np.uint64) for p in ("a", "b")}
    if name == "bf16_mul":
        f = FORMATS["bf16"]
        ops = [_fp_operands(rng, f.bits, f.exp_bits, f.man_bits, f.bias, (n,)) for _ in "ab"]
        return to_verilog(FPMul(f), "fp_mul_bf16"), "fp_mul_bf16", dict(zip("ab", ops, strict=True))
    if name == "f32_add":
        a = _fp_operands(rng, 32, 8, 23, 127, (n,))
        b = _fp_operands(rng, 32, 8, 23, 127, (n,), around=(a >> 23) & 0xFF)
        return to_verilog(F32Add(), "f32_add"), "f32_add", {"a": a, "b": b}
    raise SystemExit(f"bench_ppa_glitch: error: unknown operator {name!r}")


def testbench(top: str, ports: dict[str, tuple[str, int]], n: int, sdf: str, d: Path) -> str:
    inputs = [(p, w) for p, (direction, w) in ports.items() if direction == "input"]
    lines = ["`timescale 1ns/1ps", "module tb;"]
    lines += [f"  reg [{w - 1}:0] {p}; reg [{w - 1}:0] mem_{p} [0:{n - 1}];" for p, w in inputs]
    lines += [f"  wire [{w - 1}:0] {p};" for p, (direction, w) in ports.items() if direction == "output"]
    lines += [
        f"  {top} dut(" + ", ".join(f".{p}({p})" for p in ports) + ");",
        "  integer i;",
        "  initial begin",
        f'    if ($test$plusargs("sdf")) $sdf_annotate("{sdf}", dut);',
    ]
    lines += [f'    $readmemh("{d / p}.hex", mem_{p}); {p} = 0;' for p, _ in inputs]
    lines += [
        f"    #{PERIOD_NS};",
        f'    $dumpfile("{d / "run.vcd"}"); $dumpvars(1, dut); #1;',
        f"    for (i = 0; i < {n}; i = i + 1) begin",
    ]
    lines += [f"      {p} = mem_{p}[i];" for p, _ in inputs]
    lines += [f"      #{PERIOD_NS};", "    end", "    $finish;", "  end", "endmodule", ""]
    return "\n".join(lines)


def vcd_transitions(path: Path, skip: set[str]) -> dict[str, int]:
    """Transitions per net bit (``name`` or ``name[i]``, a leading backslash dropped) after the
    initial dump, ports in ``skip`` left out."""
    bits: dict[str, list[str]] = {}  # id -> net bit names, lowest bit last (the VCD's order)
    last: dict[str, str] = {}
    count: dict[str, int] = {}
    started = False
    with open(path) as f:
        for line in f:
            if line.startswith("$var"):
                _, _, width, ident, name, *rest = line.split()
                name = name.lstrip("\\")
                w = int(width)
                if w == 1:
                    bits[ident] = [name]
                else:
                    msb, lsb = (int(x) for x in re.match(r"\[(\d+):(\d+)\]", rest[0]).groups())
                    step = -1 if msb >= lsb else 1
                    bits[ident] = [f"{name}[{b}]" for b in range(msb, lsb + step, step)]
                continue
            if line.startswith("#"):
                started = started or int(line[1:]) > 0
                continue
            if not line.strip() or line[0] not in "01xzXZb":
                continue
            if line[0] == "b":
                value, ident = line[1:].split()
            else:
                value, ident = line[0], line[1:].strip()
            names = bits.get(ident)
            if names is None:
                continue
            value = value.rjust(len(names), "0" if value[0] in "01" else value[0])
            prev = last.get(ident)
            last[ident] = value
            if not started or prev is None:
                continue
            for name, x, y in zip(names, value, prev, strict=True):
                if x != y and name.split("[")[0] not in skip:
                    count[name] = count.get(name, 0) + 1
    return count


def measure(name: str, n: int, lib, cells_v: str, slew_ns: float, rng, mapping: str = "delay") -> dict:
    v, top, operands = operator(name, rng, n)
    mapped = map_to_liberty(v, top, lib, clock_ps=FASTEST_CLOCK_PS if mapping == "delay" else None)
    body = module_body(mapped.verilog, top, where="bench_ppa_glitch").group(1)
    ports = {}
    for direction in ("input", "output"):
        for p, _ in port_bits(body, direction):
            ports[p] = (direction, ports.get(p, (direction, 0))[1] + 1)
    ff, _, d_pin, _ = lib.register()
    load = lib.pin_cap_pf(ff, d_pin)
    ms = mapped_switching(mapped.verilog, top, lib, slew_ns=slew_ns, output_load_pf=load)
    energy = ms.net_energy_pj
    # cycle 0 at zero operands settles the netlist (the testbench's first 40 ns)
    settled = {
        p: np.repeat(np.concatenate([np.zeros(1, np.uint64), np.asarray(x, np.uint64)])[:, None], 64, axis=1)
        for p, x in operands.items()
    }
    zero_pj, per = ms.energy_per_cycle_pj(settled, count_from=1)
    out = {"zero": (float(per @ ms.mapped_nets), zero_pj)}  # transitions of the mapped netlist's nets
    with tempfile.TemporaryDirectory(prefix="sparsepe-glitch-") as tmp:
        d = Path(tmp)
        (d / "mapped.v").write_text(mapped.verilog)
        run_sta(
            {"cells.lib": Path(lib.path).read_text(), "mapped.v": mapped.verilog},
            f"read_liberty cells.lib\nread_verilog mapped.v\nlink_design {top}\n"
            f"set_input_transition {slew_ns:.6f} [all_inputs]\n"
            f"set_load {load:.6f} [all_outputs]\n"
            f"write_sdf -no_timestamp -no_version {d / 'mapped.sdf'}",
        )
        for p, values in operands.items():
            np.savetxt(d / f"{p}.hex", np.asarray(values, dtype=np.uint64), fmt="%x")
        (d / "tb.v").write_text(testbench(top, ports, n, str(d / "mapped.sdf"), d))
        subprocess.run(
            [
                "iverilog",
                "-g2005",
                "-gspecify",
                "-o",
                str(d / "sim.vvp"),
                str(d / "tb.v"),
                str(d / "mapped.v"),
                cells_v,
            ],
            check=True,
            capture_output=True,
        )
        subprocess.run(["vvp", "-n", str(d / "sim.vvp"), "+sdf"], check=True, capture_output=True)
        tr = vcd_transitions(d / "run.vcd", skip={p for p, (dr, _) in ports.items() if dr == "input"})
        missing = [net for net in tr if net not in energy]
        if missing:
            raise SystemExit(
                f"bench_ppa_glitch: error: {len(missing)} nets of {top} have no library energy, "
                f"e.g. {missing[0]}"
            )
        out["timed"] = (sum(tr.values()) / n, sum(t * energy[k] for k, t in tr.items()) / n)
    return {
        "name": name,
        "cells": sum(mapped.cells.values()),
        "zero_tr": out["zero"][0],
        "timed_tr": out["timed"][0],
        "zero_fj": out["zero"][1] * 1e3,
        "timed_fj": out["timed"][1] * 1e3,
    }


def library_per_generic_toggle(lib, slew_ns: float, mapping: str) -> list[tuple[str, float, float, float]]:
    """(design, generic toggles per cycle, the model's toggle-equivalents per cycle (ppa.liberty.gates),
    library energy per cycle of the mapped netlist in pJ) of the calibration operators on
    ppa.calibration's operands and of the dense INT8 and BF16 PEs on the default trace."""

    def library_pj(v: str, top: str, inputs: dict) -> float:  # at the library's FO4 slew (slew_ns)
        return sizing.switching_pj(v, top, lib, inputs, speed=mapping == "delay")

    out = []
    for kind, width in (("mul", 8), ("add", 32), ("add", 8), ("mul", 32)):
        rng = np.random.default_rng(CAL_SEED)  # ppa.calibration.measure_operator's operands
        a, b = (rng.integers(0, 1 << width, (CAL_CYCLES, CAL_INSTANCES), dtype=np.uint64) for _ in "ab")
        m = measure_operator(kind, width)
        out.append(
            (
                f"{kind}{width}",
                m.toggles_per_op,
                m.energy_per_op,
                library_pj(*rtl.operator_verilog(kind, width), {"a": a, "b": b}),
            )
        )
    for precision in ("int8", "bf16"):
        p = PEParams(precision=precision)
        trace = activity.synthetic_trace(p, False)
        tc, _, _ = activity.simulate_pe(p, False, trace)
        inputs = {
            "in_act": trace.acts,
            "in_w": trace.weights,
            "in_clear": trace.clear,
            "in_valid": trace.valid,
        }
        n = tc.cycles * tc.instances
        out.append(
            (
                f"{precision} dense PE",
                tc.circuit_toggles / n,
                (tc.gate_energy + tc.ff_net_energy) / n,
                library_pj(
                    rtl.pe_verilog(p, False),
                    rtl.pe_name(False),
                    {k: np.ascontiguousarray(x) for k, x in inputs.items()},
                ),
            )
        )
    return out


def main(argv=None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("--ops", default="mul8,add8,add32,bf16_mul,f32_add,mul32")
    ap.add_argument("--vectors", type=int, default=400)
    ap.add_argument(
        "--mapping",
        choices=("delay", "area"),
        default="delay",
        help="map for minimum delay, buffered and sized (the STA flow's netlist), or for area",
    )
    args = ap.parse_args(argv)
    path = default_liberty_path()
    missing = [t for t in ("iverilog", "vvp", "sta") if shutil.which(t) is None]
    if path is None or missing:
        print(f"bench_ppa_glitch: skipped: needs {', '.join(missing) or 'Debian qflow-tech-osu018'}")
        return 0
    cells_v = str(Path(path).with_suffix(".v"))
    lib = load_liberty(path)
    slew = measure_fo4(lib).slew_ns
    rng = np.random.default_rng(SEED)
    how = "timing-driven mapping (ABC sized for minimum delay)" if args.mapping == "delay" else "area mapping"
    print(
        f"osu018 at {lib.nominal_voltage_v:g} V, {how}, SDF by OpenSTA, "
        f"Icarus; {args.vectors} random operand pairs per operator, one every {PERIOD_NS} ns\n"
    )
    print("zero-delay: ppa.liberty.switching on the mapped netlist; timed: Icarus with OpenSTA's SDF\n")
    print(
        f"{'operator':10} {'cells':>6} {'toggles/op zero-delay':>22} {'timed':>8} {'x':>5}   "
        f"{'energy/op zero-delay (fJ)':>26} {'timed':>8} {'x':>5}"
    )
    res = {}
    for name in args.ops.split(","):
        t0 = time.time()
        r = res[name] = measure(name, args.vectors, lib, cells_v, slew, rng, args.mapping)
        print(
            f"{name:10} {r['cells']:6d} {r['zero_tr']:22.1f} {r['timed_tr']:8.1f} "
            f"{r['timed_tr'] / r['zero_tr']:5.2f}   "
            f"{r['zero_fj']:26.1f} {r['timed_fj']:8.1f} "
            f"{r['timed_fj'] / r['zero_fj']:5.2f}   ({time.time() - t0:.0f} s)",
            flush=True,
        )
    print("\nenergy ratios between operators (this netlist, osu018) against the published tables:")
    print(f"{'ratio':22} {'zero-delay':>10} {'timed':>8} {'Horowitz 45 nm':>15} {'Jouppi 7 nm':>12}")
    for x, y in RATIOS:
        if x in res and y in res:
            h = f"{HOROWITZ_PJ[x] / HOROWITZ_PJ[y]:.2f}" if x in HOROWITZ_PJ and y in HOROWITZ_PJ else "-"
            j = f"{JOUPPI_PJ[x] / JOUPPI_PJ[y]:.2f}" if x in JOUPPI_PJ and y in JOUPPI_PJ else "-"
            print(
                f"{x + ' / ' + y:22} {res[x]['zero_fj'] / res[y]['zero_fj']:10.2f} "
                f"{res[x]['timed_fj'] / res[y]['timed_fj']:8.2f} {h:>15} {j:>12}"
            )
    rows = library_per_generic_toggle(lib, slew, args.mapping)
    print(
        "\nwhat the model charges (zero-delay toggles of the generic netlist, each at its net's energy as an osu018 "
        "cell: ppa.liberty.gates) against the library energy of the mapped netlist on the same inputs, each per "
        "generic toggle and relative to the calibration pair (8-bit multiply, 32-bit add); 'one energy' is the "
        "model's former one energy per toggle:"
    )
    print(
        f"{'design':16} {'generic toggles/cycle':>22} {'model eq/cycle':>15} {'library fJ/cycle':>17} "
        f"{'one energy':>11} {'model':>7} {'library':>8}"
    )
    lib_e = {name: pj / tog for name, tog, _, pj in rows}
    mod_e = {name: eq / tog for name, tog, eq, _ in rows}
    la, ma = (lib_e["mul8"] * lib_e["add32"]) ** 0.5, (mod_e["mul8"] * mod_e["add32"]) ** 0.5
    for name, tog, eq, pj in rows:
        print(
            f"{name:16} {tog:22.1f} {eq:15.1f} {pj * 1e3:17.1f} "
            f"{1.0:11.3f} {mod_e[name] / ma:7.3f} {lib_e[name] / la:8.3f}"
        )
    return 0


if __name__ == "__main__":
    sys.exit(main())
