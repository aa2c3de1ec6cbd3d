import json
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
    (["--voltage", "1.3"], "--voltage"), (["--sparsity", "3:4"], "n:m"), (["--sparsity", "half"], "--sparsity"),
    (["--clock-mhz", "-5"], "--clock-mhz"),
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
