"""Toggle counts of the bit-parallel simulator against a VCD from Icarus Verilog simulating the
same synthesised gate netlist (Yosys write_verilog of the mapped netlist) on the same trace."""

import shutil
import subprocess

import numpy as np
import pytest

from hw.params import PEParams


def _vcd_values(path):
    """{name: (width, [(time, value_str)])} for the signals of the top scope of the DUT."""
    ids, sigs, time = {}, {}, 0
    scope = []
    with open(path) as f:
        for line in f:
            tok = line.split()
            if not tok:
                continue
            if tok[0] == "$scope":
                scope.append(tok[2])
            elif tok[0] == "$upscope":
                scope.pop()
            elif tok[0] == "$var" and scope == ["tb", "dut"]:
                width, code, name = int(tok[2]), tok[3], tok[4]
                ids.setdefault(code, []).append(name)
                sigs[name] = (width, [])
            elif tok[0].startswith("#"):
                time = int(tok[0][1:])
            elif tok[0][0] in "bB" and len(tok) == 2 and tok[1] in ids:
                for name in ids[tok[1]]:
                    sigs[name][1].append((time, tok[0][1:]))
            elif tok[0][0] in "01xz" and tok[0][1:] in ids:
                for name in ids[tok[0][1:]]:
                    sigs[name][1].append((time, tok[0][0]))
    return sigs


def _bit_toggles(changes, width, bit, sample_times, count_from):
    """Toggles of one bit between consecutive samples (final value at each sample time)."""
    vals, j, cur = [], 0, "x" * width
    for t in sample_times:
        while j < len(changes) and changes[j][0] <= t:
            cur = changes[j][1].rjust(width, "0" if changes[j][1][0] in "01" else changes[j][1][0])
            j += 1
        vals.append(cur[-1 - bit])
    return sum(1 for k in range(count_from, len(vals)) if vals[k] != vals[k - 1])


@pytest.mark.yosys
@pytest.mark.iverilog
def test_toggle_counts_equal_icarus_vcd(tmp_path, synth_cache):
    if not shutil.which("yosys"):
        pytest.skip("yosys: the Icarus comparison writes Verilog with native yosys")
    from ppa.activity import synth_pe, synthetic_trace
    from ppa.netlist import GateNetlist

    p = PEParams()
    T = 60
    tr = synthetic_trace(p, True, cycles=T, instances=64, kind="random", seed=11, w_hold=8, acc_len=5)
    res = synth_pe(p, True, cache=synth_cache)
    netv = tmp_path / "sparse_pe_gates.v"
    subprocess.run(
        ["yosys", "-q", "-p", f"read_json {res.netlist_path}; write_verilog -noattr -norename {netv}"],
        check=True,
    )

    # cycle 0 is a reset cycle (rst=1, inputs 0); lane 0's stream follows; all 64 lanes identical
    def lane0(a, bits, lanes):
        a = np.asarray(a)[:, 0] if a.ndim == 2 else np.asarray(a)[:, 0, :]
        if a.ndim == 1:
            return [int(x) & ((1 << bits) - 1) for x in a]
        return [sum((int(v) & ((1 << bits) - 1)) << (k * bits) for k, v in enumerate(row)) for row in a]

    streams = {
        "in_act": lane0(tr.acts, p.act_bits, p.m),
        "in_w": lane0(tr.weights, p.weight_bits, p.n),
        "in_meta": lane0(tr.meta, p.meta_bits, 1),
        "in_clear": lane0(tr.clear, 1, 1),
        "in_valid": lane0(tr.valid, 1, 1),
    }
    widths = {
        "in_act": p.m * p.act_bits,
        "in_w": p.n * p.weight_bits,
        "in_meta": p.meta_bits,
        "in_clear": 1,
        "in_valid": 1,
    }
    for k, v in streams.items():
        streams[k] = [0] + v
    rst = [1] + [0] * T
    n = T + 1
    for k, v in streams.items():
        (tmp_path / f"{k}.hex").write_text("\n".join(f"{x:x}" for x in v) + "\n")
    (tmp_path / "rst.hex").write_text("\n".join(str(x) for x in rst) + "\n")
    regs = "\n".join(
        f"  reg [{w - 1}:0] {k}; reg [{w - 1}:0] mem_{k} [0:{n - 1}];" for k, w in widths.items()
    )
    loads = "\n".join(f'    $readmemh("{tmp_path / k}.hex", mem_{k});' for k in widths)
    apply = "\n".join(f"      {k} <= mem_{k}[k];" for k in widths)
    tb = f"""
module tb;
  reg clk = 0; reg rst; reg mem_rst [0:{n - 1}];
{regs}
  wire out_valid, out_meta_err; wire [{p.acc_bits - 1}:0] out_acc;
  integer k = 0;
  sparse_pe dut(.clk(clk), .rst(rst), .in_valid(in_valid), .in_clear(in_clear), .in_act(in_act),
                .in_w(in_w), .in_meta(in_meta), .out_valid(out_valid), .out_acc(out_acc), .out_meta_err(out_meta_err));
  initial begin
{loads}
    $readmemh("{tmp_path}/rst.hex", mem_rst);
    $dumpfile("{tmp_path}/pe.vcd"); $dumpvars(0, tb);
    #{10 * n + 10} $finish;
  end
  always #5 clk = ~clk;
  always @(posedge clk) begin
    if (k < {n}) begin
      rst <= mem_rst[k];
{apply}
    end
    k <= k + 1;
  end
endmodule
"""
    (tmp_path / "tb.v").write_text(tb)
    subprocess.run(
        ["iverilog", "-g2005", "-o", str(tmp_path / "sim"), str(tmp_path / "tb.v"), str(netv)], check=True
    )
    subprocess.run(["vvp", str(tmp_path / "sim")], check=True, cwd=tmp_path, capture_output=True)
    sigs = _vcd_values(tmp_path / "pe.vcd")
    sample_times = [5 + 10 * c for c in range(n)]  # posedge of cycle c; zero-delay nets settle there

    # the same stream on all 64 lanes of the bit-parallel simulator
    def rep(a):
        a = np.asarray(a, dtype=np.int64)
        a = a[:, :1] if a.ndim == 2 else a[:, :1, :]
        z = np.zeros((1, *a.shape[1:]), dtype=np.int64)
        return np.repeat(np.concatenate([z, a]), 64, axis=1)

    net = GateNetlist(res.netlist(), "sparse_pe")
    inputs = {
        "in_act": rep(tr.acts),
        "in_w": rep(tr.weights),
        "in_meta": rep(tr.meta),
        "in_clear": rep(tr.clear),
        "in_valid": rep(tr.valid),
        "rst": np.repeat(np.array(rst)[:, None], 64, axis=1),
    }
    count_from = 2  # cycle 0 differs (Verilog flip-flops start at x); compare from cycle 1 -> 2 on
    tc, _ = net.simulate(inputs, count_from=count_from)
    netnames = res.netlist()["modules"]["sparse_pe"]["netnames"]
    compared = mismatched = total = 0
    for name, info in netnames.items():
        vname = name if name in sigs else ("\\" + name if "\\" + name in sigs else None)
        if vname is None:
            continue
        width, changes = sigs[vname]
        for i, bit in enumerate(info["bits"]):
            if isinstance(bit, str) or bit not in net.bit_ids:
                continue
            ours = tc.per_net[net.bit_ids[bit]]
            assert ours % 64 == 0
            theirs = _bit_toggles(changes, width, i, sample_times, count_from)
            compared += 1
            total += theirs
            if ours // 64 != theirs:
                mismatched += 1
    assert compared > 1000  # nearly every net of the ~1,500-gate PE is in the VCD
    assert total > 5000
    assert mismatched == 0
