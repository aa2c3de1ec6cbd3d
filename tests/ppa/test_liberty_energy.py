"""ppa.liberty.energy and ppa.liberty.library's tables: clock and flip-flop energy read from the Liberty library.

References: values typed here from osu018_stdcells.lib (DFFPOSX1 pin CLK, INVX1 pin Y tables) and
interpolated by hand; OpenSTA's report_power on the same cells (a peer tool)."""

import re
import shutil
import subprocess

import pytest

OSU018_INV_CIN_PF = 0.00932456  # INVX1 pin A capacitance
OSU018_DFF_CLK_PF = 0.0279235  # DFFPOSX1 pin CLK capacitance


def _lib():
    from ppa.liberty.library import default_liberty

    lib = default_liberty()
    if lib is None:
        pytest.skip("the qflow-tech-osu018 Liberty file is not installed")
    return lib


def _lerp(x0, x1, y0, y1, x):
    return y0 + (y1 - y0) * (x - x0) / (x1 - x0)


def test_clock_pin_energy_is_the_hand_read_table():
    """DFFPOSX1 CLK internal_power (1-D in input_transition_time): rise 0.006865 / 0.006943 and fall
    0.11034 / 0.129769 at 0.06 / 0.24 ns; per cycle = one rising + one falling edge."""
    lib = _lib()
    r, f = lib.pin_internal_pj("DFFPOSX1", "CLK", slew_ns=0.06)
    assert r + f == pytest.approx(0.006865 + 0.11034, rel=1e-9)
    r, f = lib.pin_internal_pj("DFFPOSX1", "CLK", slew_ns=0.15)
    want = _lerp(0.06, 0.24, 0.006865, 0.006943, 0.15) + _lerp(0.06, 0.24, 0.11034, 0.129769, 0.15)
    assert r + f == pytest.approx(want, rel=1e-9)
    assert lib.pin_cap_pf("DFFPOSX1", "CLK") == pytest.approx(OSU018_DFF_CLK_PF)


def test_output_internal_energy_is_bilinear_in_load_and_slew():
    """INVX1 Y driving four INVX1 (0.0373 pF) at 0.1 ns input slew, from the 5x5 tables (index_1
    load 0.025 / 0.075 pF, index_2 slew 0.06 / 0.18 ns): rise 0.023574 0.02752 / 0.024479 0.025247,
    fall 0.008669 0.006332 / 0.007879 0.007243."""
    from ppa.liberty import energy as le

    lib = _lib()
    load = 4 * OSU018_INV_CIN_PF

    def bil(a, b, c, d):
        lo = _lerp(0.06, 0.18, a, b, 0.1)
        hi = _lerp(0.06, 0.18, c, d, 0.1)
        return _lerp(0.025, 0.075, lo, hi, load)

    r, f = lib.pin_internal_pj("INVX1", "Y", slew_ns=0.1, load_pf=load)
    assert r == pytest.approx(bil(0.023574, 0.02752, 0.024479, 0.025247), rel=1e-9)
    assert f == pytest.approx(bil(0.008669, 0.006332, 0.007879, 0.007243), rel=1e-9)
    # a hand netlist: the driver's net costs 1/2 C V^2 + the mean of its rising and falling energy
    netlist = (
        "module t(a, y1, y2, y3, y4);\ninput a;\noutput y1;\noutput y2;\noutput y3;\noutput y4;\nwire n;\n"
        + "INVX1 d0 (\n.A(a),\n.Y(n)\n);\n"
        + "".join(f"INVX1 l{i} (\n.A(n),\n.Y(y{i})\n);\n" for i in range(1, 5))
        + "endmodule\n"
    )
    nets = {n: (sw, it) for n, sw, it in le.net_energies(lib, netlist, "t", slew_ns=0.1, output_load_pf=0.0)}
    assert set(nets) == {"n", "y1", "y2", "y3", "y4"}
    assert nets["n"][0] == pytest.approx(0.5 * load * 1.8**2, rel=1e-9)
    assert nets["n"][1] == pytest.approx((r + f) / 2, rel=1e-9)
    assert nets["y1"][0] == 0.0


def _opensta_2_0():
    exe = shutil.which("sta")
    if exe is None:
        pytest.skip("OpenSTA (sta) is not installed")
    ver = subprocess.run([exe, "-version"], capture_output=True, text=True).stdout.strip()
    if not ver.startswith("2.0."):
        pytest.skip(f"OpenSTA {ver}: the internal-energy convention checked here is 2.0.x's")
    return exe


def _report_power(tmp_path, lib, verilog, top, lines):
    exe = _opensta_2_0()
    (tmp_path / "cells.lib").write_text(open(lib.path).read())
    (tmp_path / "d.v").write_text(verilog)
    (tmp_path / "p.tcl").write_text(
        "\n".join(["read_liberty cells.lib", "read_verilog d.v", f"link_design {top}", *lines]) + "\n"
    )
    out = subprocess.run(
        [exe, "-no_init", "-no_splash", "-exit", "p.tcl"], capture_output=True, text=True, cwd=tmp_path
    ).stdout
    row = [ln for ln in out.splitlines() if re.search(r"\sd0$|\sf0$", ln)][-1].split()
    return float(row[0]), float(row[1])  # internal, switching (W)


@pytest.mark.sta
def test_clock_pin_energy_against_opensta_report_power(tmp_path):
    """OpenSTA 2.0.x charges an input pin's rise + fall energy on each of the clock's two edges per
    period: its internal power x period = 2 x the per-cycle energy read here."""
    lib = _lib()
    v = "module ffs(clk, d, q);\ninput clk;\ninput d;\noutput q;\nDFFPOSX1 f0 (.CLK(clk), .D(d), .Q(q));\nendmodule\n"
    internal, _ = _report_power(
        tmp_path,
        lib,
        v,
        "ffs",
        [
            "create_clock -name clk -period 10 [get_ports clk]",
            "set_input_transition 0.15 [get_ports clk]",
            "set_power_activity -input -activity 0",
            "report_power -instances [get_cells f0] -digits 7",
        ],
    )
    r, f = lib.pin_internal_pj("DFFPOSX1", "CLK", slew_ns=0.15)
    assert internal * 10e-9 / 2 == pytest.approx((r + f) * 1e-12, rel=1e-5)


@pytest.mark.sta
def test_net_energy_against_opensta_report_power(tmp_path):
    """One INVX1 driving four: OpenSTA's switching power is 1/2 C V^2 per toggle and its internal
    power (rise + fall per toggle in 2.0.x) is twice our mean per toggle; the ratio of the two is
    independent of the activity OpenSTA assumes."""
    lib = _lib()
    v = (
        "module invs(a, y1, y2, y3, y4);\ninput a;\noutput y1, y2, y3, y4;\nwire n;\nINVX1 d0 (.A(a), .Y(n));\n"
        + "".join(f"INVX1 l{i} (.A(n), .Y(y{i}));\n" for i in range(1, 5))
        + "endmodule\n"
    )
    internal, switching = _report_power(
        tmp_path,
        lib,
        v,
        "invs",
        [
            "set_input_transition 0.1 [get_ports a]",
            "set_power_activity -input_ports a -activity 0.5",
            "report_power -instances [get_cells d0] -digits 7",
        ],
    )
    load = 4 * OSU018_INV_CIN_PF
    r, f = lib.pin_internal_pj("INVX1", "Y", slew_ns=0.1, load_pf=load)
    assert internal / switching == pytest.approx((r + f) / (0.5 * load * 1.8**2), rel=1e-4)


@pytest.mark.yosys
@pytest.mark.sta  # ppa.liberty.energy times the mapped multiplier with OpenSTA
def test_osu018_clock_and_flop_toggle_equivalents_are_pinned(synth_cache):
    """The calibration multiplier mapped to osu018 (316 nets; its generic netlist 338) and the
    DFFPOSX1 / CLKBUF tree figures. Measured: 4.02 toggle-equivalents per flip-flop per cycle
    (pin internal 0.121 pJ + pin C V^2 0.090 + wiring 0.045 + CLKBUF1 tree 0.139, against 0.0985 pJ
    per toggle at 1.8 V), and 1.24 extra per flip-flop output toggle (D- and Q-pin internal)."""
    from ppa.liberty import energy as le

    lib = _lib()
    e = le.library_energy(lib, cache=synth_cache)
    assert (e.mapped_nets, e.generic_nets) == (316, 338)
    assert e.flop_cell == "DFFPOSX1" and e.clock_buffer.startswith("CLKBUF")
    assert e.clock_pin_switching_pj == pytest.approx(OSU018_DFF_CLK_PF * 1.8**2, rel=1e-6)
    assert e.clock_wire_pj == pytest.approx(le.CLOCK_WIRE_FRACTION * e.clock_pin_switching_pj)
    assert e.toggle_pj == pytest.approx(0.0985, rel=0.01)
    assert e.clock_toggles_per_ff_cycle == pytest.approx(4.02, rel=0.01)
    assert e.ff_extra_toggles == pytest.approx(1.24, rel=0.01)
    # the tree costs less per flip-flop than the pins it drives would if each had its own buffer
    assert (
        0
        < e.clock_tree_pj
        < e.clock_pin_internal_pj + e.clock_pin_switching_pj + e.clock_tree_pj * e.clock_leaf_fanout
    )
    # the generic path's figures are these, rounded (ppa.tech)
    from ppa import tech

    assert tech.CLOCK_TOGGLES_PER_FF_CYCLE == pytest.approx(e.clock_toggles_per_ff_cycle, abs=0.005)
    assert tech.FF_EXTRA_TOGGLES == pytest.approx(e.ff_extra_toggles, abs=0.005)
    # cached on disk: a second process-level call reads the same figures
    le._cached.cache_clear()
    assert le.library_energy(lib, cache=synth_cache) == e


@pytest.mark.yosys
@pytest.mark.sta
def test_clock_with_a_leaf_wire_reproduces_the_library_figure_and_grows_with_the_wire(synth_cache):
    """clock_with_leaf_wire at CLOCK_WIRE_FRACTION x the clock-pin capacitance is the library's own
    clock figure (two paths: compute() and the re-costed tree); a longer wire costs its C V^2 and
    more tree, never less."""
    from ppa.liberty import energy as le

    lib = _lib()
    e = le.library_energy(lib, cache=synth_cache)
    pj, toggles = le.clock_with_leaf_wire(lib, le.CLOCK_WIRE_FRACTION * OSU018_DFF_CLK_PF, cache=synth_cache)
    assert pj == pytest.approx(e.clock_pj_per_ff_cycle, rel=1e-9)
    assert toggles == pytest.approx(e.clock_toggles_per_ff_cycle, rel=1e-9)
    longer, _ = le.clock_with_leaf_wire(lib, 2 * OSU018_DFF_CLK_PF, cache=synth_cache)
    wire_cv2 = (2 - le.CLOCK_WIRE_FRACTION) * OSU018_DFF_CLK_PF * 1.8**2
    assert longer >= pj + wire_cv2 - 1e-12


@pytest.mark.yosys
def test_the_estimate_takes_the_clock_from_the_library(synth_cache):
    from ppa import tech
    from ppa.design import DesignPoint
    from ppa.liberty import energy as le
    from ppa.model import estimate
    from ppa.timing.opensta import find_sta

    lib = _lib()
    if find_sta() is None:
        pytest.skip("OpenSTA (sta) is not installed")
    r = estimate(
        DesignPoint(rows=2, cols=2, node_nm=7, sparse=False, pipeline=1, clock_gating=False),
        cache=synth_cache,
    )
    ce = r.details["clock_energy"]
    e = le.library_energy(lib, cache=synth_cache)
    assert ce["source"] == "liberty" and ce["library"] == lib.library
    nd = tech.node(7, r.voltage_v)
    want = (
        r.details["array_flip_flops"]
        * e.clock_toggles_per_ff_cycle
        * nd.toggle_energy_pj
        * 1e-12
        * r.clock_mhz
        * 1e6
    )
    assert r.power_breakdown_w["clock"] == pytest.approx(want, rel=1e-9)
    # gated (the default): the same per-flop energy times the gated flop-cycle count
    g = estimate(DesignPoint(rows=2, cols=2, node_nm=7, sparse=False, pipeline=1), cache=synth_cache)
    cg = g.details["clock_gating_detail"]
    assert cg["ff_clock_cycles_per_cycle"] < r.details["array_flip_flops"]
    assert g.power_breakdown_w["clock"] == pytest.approx(
        want * cg["ff_clock_cycles_per_cycle"] / r.details["array_flip_flops"], rel=1e-9
    )
