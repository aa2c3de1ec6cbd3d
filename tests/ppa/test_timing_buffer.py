"""ppa.timing.buffer: buffer trees on flip-flop / primary-input nets before OpenSTA.

Checked structurally (every original sink reaches its original driver through buffers only, all at
the same depth, every buffer's load within BUFFER_EFFORT x its input capacitance, the clock and
small nets untouched) and functionally (Icarus, with the library's own Verilog cell models,
simulates a Yosys-mapped design before and after the pass cycle by cycle identically)."""

from __future__ import annotations

import random
import re
import shutil
import subprocess
from pathlib import Path

import pytest

from ppa.liberty.library import default_liberty
from ppa.timing import buffer as sb
from ppa.timing.mapping import FASTEST_CLOCK_PS, map_to_liberty

LIB = default_liberty()
CELL_MODELS = Path("/usr/share/qflow/tech/osu018/osu018_stdcells.v")
pytestmark = pytest.mark.skipif(LIB is None, reason="no Liberty file (osu018) installed")

N = 48


def _inst(cell, name, **pins):
    conns = ",\n".join(f"    .{p}({n})" for p, n in pins.items())
    return f"  {cell} {name} (\n{conns}\n  );\n"


def _hand_netlist() -> str:
    """Yosys write_verilog style: a flop q and an input en each fan out to N NAND2X1 pins; the
    outputs are registered on clk (N+1 clock pins); d feeds one flop (small net)."""
    s = "module t(clk, d, en, a, y);\n  input clk;\n  input d;\n  input en;\n  input [47:0] a;\n  output [47:0] y;\n"
    s += "  wire q;\n" + "".join(f"  wire n{i};\n  wire m{i};\n" for i in range(N))
    s += _inst("DFFPOSX1", "r0", CLK="clk", D="d", Q="q")
    for i in range(N):
        s += _inst("NAND2X1", f"g{i}", A="q", B=f"a[{i}]", Y=f"n{i}")
        s += _inst("NAND2X1", f"h{i}", A="en", B=f"n{i}", Y=f"m{i}")
        s += _inst("DFFPOSX1", f"o{i}", CLK="clk", D=f"m{i}", Q=f"y[{i}]")
    return s + "endmodule\n"


def _instances(v: str) -> dict[str, tuple[str, dict[str, str]]]:
    out = {}
    for m in re.finditer(r"^\s*(\w+)\s+(\S+)\s*\(\n(.*?)\n\s*\);", v, re.M | re.S):
        out[m.group(2)] = (m.group(1), {p: n.strip() for p, n in re.findall(r"\.(\w+)\((.*?)\)", m.group(3))})
    return out


def test_tree_structure_on_flop_and_input_nets():
    before = _hand_netlist()
    r = sb.buffer_high_fanout(before, "t", LIB, clock_port="clk")
    buf, a, y, c_buf, _ = LIB.drive_buffer()
    assert buf == "BUFX4"  # osu018's strongest data buffer (CLKBUF1-3 are clock buffers)
    assert {n.net for n in r.nets} == {"q", "en"}  # not clk (clock port), not d (one pin)
    old, new = _instances(before), _instances(r.verilog)
    bufs = {k: v for k, v in new.items() if k not in old}
    assert all(c == buf for c, _ in bufs.values()) and len(bufs) == r.buffers
    drv = {p[y]: k for k, (c, p) in bufs.items()}  # buffer output net -> buffer
    loads: dict[str, float] = {}
    pins = LIB.pin_info()
    for _k, (c, p) in new.items():
        for pin, net in p.items():
            if pins[c][pin][0] == "input":
                loads[net] = loads.get(net, 0.0) + pins[c][pin][1]
    for _k, (_c, p) in bufs.items():
        assert loads.get(p[y], 0.0) <= sb.BUFFER_EFFORT * c_buf + 1e-12
    for root in ("q", "en"):
        # the original net now drives exactly one buffer, nothing else
        users = [
            (k, pin)
            for k, (c, p) in new.items()
            for pin, n in p.items()
            if n == root and pins[c][pin][0] == "input"
        ]
        assert len(users) == 1 and users[0][0] in bufs
    depths = {"q": set(), "en": set()}
    for k, (c, p) in old.items():
        for pin, net in p.items():
            if net in depths and pins[c][pin][0] == "input":
                n, d = new[k][1][pin], 0
                while n in drv:
                    n, d = bufs[drv[n]][1][a], d + 1
                assert n == net  # reaches the original driver through buffers only
                depths[net].add(d)
            elif k in new:
                assert new[k][1][pin] == net  # every other connection unchanged
    assert all(
        len(s) == 1 and min(s) >= 2 for s in depths.values()
    )  # balanced; N x NAND2 > one BUFX4's limit
    again = sb.buffer_high_fanout(r.verilog, "t", LIB, clock_port="clk")
    assert again.nets == []  # a buffered netlist needs nothing more


def test_below_threshold_is_untouched():
    v = _hand_netlist()
    r = sb.buffer_high_fanout(v, "t", LIB, clock_port="clk", threshold_effort=1e9)
    assert r.nets == [] and r.verilog == v and r.buffers == 0
    # 48 NAND2X1 pins = 0.6 pF: above 16 x C_in(INVX1) = 0.149 pF, below 80 x (0.75 pF)
    assert len(sb.buffer_high_fanout(v, "t", LIB, threshold_effort=80).nets) == 0
    assert len(sb.buffer_high_fanout(v, "t", LIB, threshold_effort=16).nets) == 2


_DESIGN = """
module fan(input clk, input en_in, input [63:0] a, input [63:0] b, output reg [63:0] y);
  reg en;
  always @(posedge clk) begin
    en <= en_in;
    y <= en ? (a ^ b) : (a & ~b);
  end
endmodule
"""


@pytest.mark.yosys
@pytest.mark.iverilog
def test_mapped_design_simulates_identically_after_buffering(tmp_path):
    if not CELL_MODELS.exists():
        pytest.skip(f"{CELL_MODELS} (the library's Verilog cell models) is not installed")
    m = map_to_liberty(_DESIGN, "fan", LIB, clock_ps=FASTEST_CLOCK_PS)
    r = sb.buffer_high_fanout(m.verilog, "fan", LIB, clock_port="clk")
    assert r.nets and r.buffers >= 2  # the en register's Q (64 mux selects) gets a tree
    after = re.sub(r"^module fan\(", "module fan_buf(", r.verilog, flags=re.M)
    rng = random.Random(7)
    vec = [(rng.getrandbits(1), rng.getrandbits(64), rng.getrandbits(64)) for _ in range(40)]
    tb = [
        "`timescale 1ns/10ps",
        "module tb;",
        "reg clk = 0; reg en_in; reg [63:0] a, b; wire [63:0] y0, y1;",
        "fan u0(.clk(clk), .en_in(en_in), .a(a), .b(b), .y(y0));",
        "fan_buf u1(.clk(clk), .en_in(en_in), .a(a), .b(b), .y(y1));",
        "integer bad = 0;",
        "initial begin",
    ]
    for e, x, z in vec:
        tb.append(f"  en_in = {e}; a = 64'h{x:016x}; b = 64'h{z:016x}; #50 clk = 1; #50 clk = 0;")
        tb.append('  if (y0 !== y1) bad = bad + 1; $display("%h %h", y0, y1);')
    tb += ['  $display("BAD %0d", bad); $finish;', "end", "endmodule"]
    (tmp_path / "a.v").write_text(m.verilog)
    (tmp_path / "b.v").write_text(after)
    (tmp_path / "tb.v").write_text("\n".join(tb) + "\n")
    subprocess.run(
        [shutil.which("iverilog"), "-o", "sim", "tb.v", "a.v", "b.v", str(CELL_MODELS)],
        cwd=tmp_path,
        check=True,
        capture_output=True,
    )
    out = subprocess.run(["vvp", "sim"], cwd=tmp_path, check=True, capture_output=True, text=True).stdout
    assert "BAD 0" in out
    rows = [ln.split() for ln in out.splitlines() if re.fullmatch(r"[0-9a-fxz]{16} [0-9a-fxz]{16}", ln, re.I)]
    assert len(rows) == len(vec)
    assert all(re.fullmatch(r"[0-9a-f]{16}", r[0]) for r in rows[1:])  # defined after the first edge
    # and the outputs are the design's function (independent golden), one cycle late
    prev_en = None
    for (e, x, z), row in zip(vec, rows, strict=True):
        if prev_en is not None:
            assert int(row[1], 16) == ((x ^ z) if prev_en else (x & ~z & (2**64 - 1)))
        prev_en = e
