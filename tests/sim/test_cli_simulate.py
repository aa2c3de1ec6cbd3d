"""`sparsepe simulate` through the real CLI: JSON contents and bad input (one line, exit code 2)."""

import json
import subprocess
import sys

import pytest


def _run(*args):
    return subprocess.run([sys.executable, "-m", "explore.cli", "simulate", *args], capture_output=True, text=True)


def test_json_bert_base_shows_fallback():
    p = _run("--workload", "bert-base", "--rows", "32", "--cols", "32", "--sparsity", "2:4", "--json")
    assert p.returncode == 0, p.stderr
    d = json.loads(p.stdout)
    lay = {l["name"]: l for l in d["layers"]}
    assert lay["attn_scores"]["sparse"] is False and "activation x activation" in lay["attn_scores"]["fallback_reason"]
    assert lay["ffn1"]["sparse"] is True and lay["ffn1"]["fallback_reason"] is None
    assert lay["ffn1"]["metadata_bytes"] > 0 and lay["attn_scores"]["metadata_bytes"] == 0
    assert 1.0 < d["effective_speedup"] <= 2.0 and 0 <= d["stall_fraction"] < 1 and d["total_cycles"] > 0


def test_topology_with_scalesim_config_flags_win(tmp_path):
    topo = tmp_path / "t.csv"
    topo.write_text("Layer Name, M, N, K,\nTest_1, 256, 256, 256,\n")
    cfg = tmp_path / "c.cfg"
    cfg.write_text("[architecture_presets]\nArrayHeight: 32\nArrayWidth: 32\nIfmapSramSzkB: 64\nFilterSramSzkB: 64\n"
                   "OfmapSramSzkB: 64\nDataflow : ws\nBandwidth : 10\n[sparsity]\nSparsitySupport : true\n"
                   "OptimizedMapping : true\nBlockSize : 4\n[run_presets]\nInterfaceBandwidth: CALC\n")
    d = json.loads(_run("--topology", str(topo), "--scalesim-config", str(cfg), "--json").stdout)
    assert d["layers"][0]["cycles"] == 11199  # SCALE-Sim 3.0.0, 256^3 on 32x32 WS with 2:4 (tooling-facts.md)
    d = json.loads(_run("--topology", str(topo), "--scalesim-config", str(cfg), "--sparsity", "dense", "--json").stdout)
    assert d["layers"][0]["cycles"] == 22399


@pytest.mark.parametrize("content,args,needle", [
    ("Layer Name, M, N, K,\nok, 4, 4, 4,\nbad, 4, four, 4,\n", (), "t.csv: row 3"),
    ("Layer Name, M, N, K,\nzero, 4, 0, 4,\n", (), "zero-sized"),
    ("Layer Name, M, N, K, Sparsity,\nodd, 4, 8, 16, 3:4,\n", (), "t.csv: row 2"),
    ("Layer Name, M, N, K,\nok, 4, 4, 4,\n", ("--dataflow", "xs"), "--dataflow"),
    ("Layer Name, M, N, K,\nok, 4, 4, 4,\n", ("--sparsity", "3:4"), "--sparsity"),
])
def test_bad_input_one_line_exit_2(tmp_path, content, args, needle):
    topo = tmp_path / "t.csv"
    topo.write_text(content)
    p = _run("--topology", str(topo), *args)
    assert p.returncode == 2
    lines = p.stderr.strip().splitlines()
    assert len(lines) == 1 and lines[0].startswith("sparsepe: error:") and needle in lines[0], p.stderr
    assert "Traceback" not in p.stderr
