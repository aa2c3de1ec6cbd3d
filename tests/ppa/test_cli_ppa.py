import json
import math
import os
import subprocess
import sys

import pytest

KEYS = {"area_mm2", "area_breakdown_mm2", "fmax_mhz", "voltage_v", "clock_mhz", "power_w", "power_breakdown_w",
        "energy_per_mac_pj", "peak_tops", "tj_c", "power_density_w_mm2", "feasible", "infeasible_reasons"}


def _run(args, cache):
    env = dict(os.environ, SPARSEPE_CACHE_DIR=str(cache))
    return subprocess.run([sys.executable, "-m", "explore.cli", "ppa", *args], capture_output=True, text=True, env=env)


@pytest.mark.parametrize("args,where", [
    (["--node", "5"], "--node"), (["--rows", "-4"], "--rows"), (["--sram-kb", "-1"], "--sram-kb"),
    (["--voltage", "1.3"], "--voltage"), (["--sparsity", "3:4"], "--sparsity"), (["--sparsity", "half"], "--sparsity"),
    (["--clock-mhz", "-5"], "--clock-mhz"),
    (["--sparsity", "dense", "--dense-path"], "--dense-path"), (["--sparsity", "dense+dense"], "--sparsity"),
    (["--dataflow", "rs"], "--dataflow"),
])
def test_bad_input_one_line_exit_2(args, where, tmp_path):
    out = _run(args, tmp_path)
    assert out.returncode == 2
    lines = out.stderr.strip().splitlines()
    assert len(lines) == 1 and lines[0].startswith("sparsepe: error:") and where in lines[0]
    assert "Traceback" not in out.stderr


@pytest.mark.yosys
def test_json_keys_and_breakdowns(synth_cache):
    out = _run(["--rows", "4", "--cols", "4", "--node", "7", "--clock-mhz", "800", "--json"], synth_cache.parent)
    assert out.returncode == 0, out.stderr
    j = json.loads(out.stdout)
    assert KEYS <= set(j)
    assert set(j["area_breakdown_mm2"]) == {"pe_array", "decoders", "sram", "other"}
    assert set(j["power_breakdown_w"]) == {"dynamic", "clock", "leakage", "sram", "dram"}
    assert j["clock_mhz"] == 800 and j["feasible"] is True
    assert j["area_mm2"] == pytest.approx(sum(j["area_breakdown_mm2"].values()))
    assert j["power_w"] == pytest.approx(sum(j["power_breakdown_w"].values()))
    assert any("no workload given" in n for n in j["notes"])
    human = _run(["--rows", "4", "--cols", "4", "--sparsity", "dense"], synth_cache.parent)
    assert human.returncode == 0 and "area" in human.stdout and "no workload given" in human.stdout


@pytest.mark.yosys
def test_headline_figures_follow_from_the_published_anchors(synth_cache):
    """What `sparsepe ppa` prints at 45 nm / 1.0 V (the calibration node), recomputed from the
    published anchors and the stated default activity, given the synthesised counts it reports."""
    R = C = 4
    out = _run(["--rows", str(R), "--cols", str(C), "--node", "45", "--voltage", "1.0", "--json"], synth_cache.parent)
    assert out.returncode == 0, out.stderr
    j = json.loads(out.stdout)
    det, f_hz = j["details"], j["clock_mhz"] * 1e6
    # gate delay: the two weak FO4 mentions (published-figures §4) moved to 45 nm, 1.0 V with
    # Stillmaker's delay factors (32 nm 0.669; 90 nm at 1.2 V 1.887), geometric mean
    gate_ps = math.sqrt(8.7 / 0.669 * 45.0 / 1.887)
    assert det["gate_delay_ps"] == pytest.approx(gate_ps, rel=2e-3)
    assert j["fmax_at_voltage_mhz"] == pytest.approx(1e6 / ((det["logic_depth"] + 3) * det["gate_delay_ps"]), rel=1e-9)
    assert j["clock_mhz"] == pytest.approx(j["fmax_at_voltage_mhz"])  # no clock asked: fmax at the voltage
    # one toggle = Horowitz's 8-bit multiply (0.2 pJ) / its 125.628 toggles; one transistor = 282 um^2 / 2210
    e_t_pj = 0.2 / 125.628
    assert det["toggle_energy_fj"] == pytest.approx(e_t_pj * 1e3, rel=1e-9)
    a = j["area_breakdown_mm2"]
    assert a["pe_array"] + a["decoders"] == pytest.approx(det["array_transistors"] * 282.0 / 2210 * 1e-6, rel=1e-9)
    assert a["sram"] == pytest.approx(1.07, rel=0.10)  # CACTI 7, 45 nm, 256 KB (published-figures §5.1)
    assert a["other"] == pytest.approx(0.10 * (a["pe_array"] + a["decoders"] + a["sram"]), rel=1e-9)
    # throughput: 4 dense-equivalent MACs per PE-cycle, every PE busy (no workload given)
    macs_per_s = R * C * 4 * f_hz
    assert j["peak_tops"] == pytest.approx(2 * macs_per_s / 1e12, rel=1e-9)
    assert j["energy_per_mac_pj"] == pytest.approx(j["power_w"] / macs_per_s * 1e12, rel=1e-9)
    p = j["power_breakdown_w"]
    assert p["clock"] == pytest.approx(det["array_flip_flops"] * 3 * e_t_pj * 1e-12 * f_hz, rel=1e-9)
    # DRAM: the stated default traffic (SRAM reads R*M activation bytes + held weights (2 of 4 bytes
    # + 4 metadata bits per PE) / 64, writes C*4 psum bytes per cycle; DRAM = SRAM / 16) at
    # O'Connor's HBM2 3.97 pJ/bit
    dram_bytes_per_cycle = (R * 4 + R * C * 2.5 / 64 + C * 4) / 16
    assert det["dram_gb_per_s"] == pytest.approx(dram_bytes_per_cycle * f_hz / 1e9, rel=1e-9)
    assert p["dram"] == pytest.approx(dram_bytes_per_cycle * f_hz * 8 * 3.97e-12, rel=1e-9)


@pytest.mark.yosys
def test_dense_path_and_dataflow_flags(synth_cache):
    small = ["--rows", "2", "--cols", "2", "--act-bits", "4", "--weight-bits", "4", "--acc-bits", "12",
             "--node", "45", "--voltage", "1.0", "--sram-kb", "0", "--json"]
    runs = {name: _run(small + args, synth_cache.parent) for name, args in (
        ("sparse", []), ("flag", ["--dense-path"]), ("value", ["--sparsity", "2:4+dense"]),
        ("os", ["--dataflow", "os"]))}
    for name, r in runs.items():
        assert r.returncode == 0, f"{name}: {r.stderr}"
    j = {name: json.loads(r.stdout) for name, r in runs.items()}
    assert j["flag"] == j["value"]
    det = j["flag"]["details"]
    assert det["kind"] == "dense_path" and det["pe"] == "2:4+dense" and det["effective_macs_per_pe_cycle"] == 8
    assert det["multipliers_per_pe"] == 4 and j["sparse"]["details"]["multipliers_per_pe"] == 2
    # twice the effective MACs per PE-cycle: peak scales with the clock each runs at
    assert j["flag"]["peak_tops"] / j["flag"]["clock_mhz"] == pytest.approx(2 * j["sparse"]["peak_tops"] / j["sparse"]["clock_mhz"])
    assert j["flag"]["area_mm2"] > j["sparse"]["area_mm2"]
    assert j["os"]["details"]["cost_dataflow"] == "os"
    assert j["os"]["details"]["array_transistors"] != j["sparse"]["details"]["array_transistors"]
