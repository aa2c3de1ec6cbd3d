"""`sparsepe simulate` through the real CLI: JSON contents and bad input (one line, exit code 2)."""

import json
import os
import subprocess
import sys

import pytest


def _run(*args):
    return subprocess.run(
        [sys.executable, "-m", "explore.cli", "simulate", *args], capture_output=True, text=True
    )


def test_json_bert_base_shows_fallback():
    p = _run("--workload", "bert-base", "--rows", "32", "--cols", "32", "--sparsity", "2:4", "--json")
    assert p.returncode == 0, p.stderr
    d = json.loads(p.stdout)
    lay = {layer["name"]: layer for layer in d["layers"]}
    assert (
        lay["attn_scores"]["sparse"] is False
        and "activation x activation" in lay["attn_scores"]["fallback_reason"]
    )
    assert lay["ffn1"]["sparse"] is True and lay["ffn1"]["fallback_reason"] is None
    assert lay["ffn1"]["metadata_bytes"] > 0 and lay["attn_scores"]["metadata_bytes"] == 0
    assert 1.0 < d["effective_speedup"] <= 2.0 and 0 <= d["stall_fraction"] < 1 and d["total_cycles"] > 0


def test_topology_with_scalesim_config_flags_win(tmp_path):
    topo = tmp_path / "t.csv"
    topo.write_text("Layer Name, M, N, K,\nTest_1, 256, 256, 256,\n")
    cfg = tmp_path / "c.cfg"
    cfg.write_text(
        "[architecture_presets]\nArrayHeight: 32\nArrayWidth: 32\nIfmapSramSzkB: 64\nFilterSramSzkB: 64\n"
        "OfmapSramSzkB: 64\nDataflow : ws\nBandwidth : 10\n[sparsity]\nSparsitySupport : true\n"
        "OptimizedMapping : true\nBlockSize : 4\n[run_presets]\nInterfaceBandwidth: CALC\n"
    )
    d = json.loads(_run("--topology", str(topo), "--scalesim-config", str(cfg), "--json").stdout)
    assert d["layers"][0]["cycles"] == 11199  # SCALE-Sim 3.0.0, 256^3 on 32x32 WS with 2:4 (tooling-facts.md)
    d = json.loads(
        _run("--topology", str(topo), "--scalesim-config", str(cfg), "--sparsity", "dense", "--json").stdout
    )
    assert d["layers"][0]["cycles"] == 22399


@pytest.mark.parametrize(
    "content,args,needle",
    [
        ("Layer Name, M, N, K,\nok, 4, 4, 4,\nbad, 4, four, 4,\n", (), "t.csv: row 3"),
        ("Layer Name, M, N, K,\nzero, 4, 0, 4,\n", (), "zero-sized"),
        ("Layer Name, M, N, K, Sparsity,\nodd, 4, 8, 16, 3:4,\n", (), "t.csv: row 2"),
        ("Layer Name, M, N, K,\nok, 4, 4, 4,\n", ("--dataflow", "xs"), "--dataflow"),
        ("Layer Name, M, N, K,\nok, 4, 4, 4,\n", ("--sparsity", "3:4"), "--sparsity"),
        ("Layer Name, M, N, K,\nok, 4, 4, 4,\n", ("--sram-port-bytes", "-1"), "--sram-port-bytes"),
        ("Layer Name, M, N, K,\nok, 4, 4, 4,\n", ("--pipeline", "0"), "pipeline"),
        (
            "Layer Name, M, N, K,\nok, 4, 4, 4,\n",
            ("--acc-bits", "8"),
            "--acc-bits",
        ),  # the flag the user wrote (issue 16)
        ("Layer Name, M, N, K,\nok, 4, 4, 4,\n", ("--sram-banks", "0"), "--sram-banks"),
    ],
)
def test_bad_input_one_line_exit_2(tmp_path, content, args, needle):
    topo = tmp_path / "t.csv"
    topo.write_text(content)
    p = _run("--topology", str(topo), *args)
    assert p.returncode == 2
    lines = p.stderr.strip().splitlines()
    assert len(lines) == 1 and lines[0].startswith("sparsepe: error:") and needle in lines[0], p.stderr
    assert "Traceback" not in p.stderr


def test_bert_base_headline_figures_equal_an_independent_reference():
    """The figures `simulate` prints for BERT-base on 32x32 WS, stall-free (no DRAM or SRAM port
    limit), recomputed here without sim/: GEMM shapes from published-figures.md 8.2 (seq 128,
    batch 1, 12 layers, 12 heads, plus a 2-way QA head), SCALE-Sim's WS fold count x
    (2R + C + M - 2) cycles per fold, one group of 4 per PE-cycle: a sparse group in one cycle, a
    dense group as 2 passes (dense fallback)."""
    R = C = 32
    # (M, N, K, count, 2:4-prunable by ASP)
    layers = [
        (128, 2304, 768, 12, True),
        (128, 128, 64, 144, False),
        (128, 64, 128, 144, False),
        (128, 768, 768, 12, True),
        (128, 3072, 768, 12, True),
        (128, 768, 3072, 12, True),
        (128, 2, 768, 1, False),
    ]

    def cycles(M, N, steps):
        return -(-steps // R) * -(-N // C) * (2 * R + C + M - 2)

    groups = [(M, N, -(-K // 4), n, s) for M, N, K, n, s in layers]
    sparse = sum(n * cycles(M, N, g if s else 2 * g) for M, N, g, n, s in groups)
    dense = sum(n * cycles(M, N, 2 * g) for M, N, g, n, s in groups)
    fallback = sum(n * cycles(M, N, 2 * g) for M, N, g, n, s in groups if not s)
    meta = sum(n * N * K // 8 for M, N, K, n, s in layers if s)  # 2 bits per kept weight, K/2 kept
    p = _run(
        "--workload",
        "bert-base",
        "--rows",
        "32",
        "--cols",
        "32",
        "--sparsity",
        "2:4",
        "--dram-gbps",
        "1e6",
        "--sram-port-bytes",
        "inf",
        "--json",
    )
    assert p.returncode == 0, p.stderr
    d = json.loads(p.stdout)
    # the vector unit's cycles (recomputed independently in tests/sim/test_vector.py) add to both runs
    v = d["vector_cycles"]
    assert v > 0 and d["array_cycles"] == sparse and d["stall_cycles"] == 0
    assert d["total_cycles"] == sparse + v and d["dense_total_cycles"] == dense + v
    assert d["effective_speedup"] == pytest.approx((dense + v) / (sparse + v), rel=1e-12)
    assert d["fallback_fraction"] == pytest.approx(fallback / (sparse + v), rel=1e-12)
    assert d["metadata_bytes"] == meta
    assert d["dense_macs"] == sum(n * M * N * K for M, N, K, n, s in layers)


def test_memory_and_pipeline_flags_reach_the_model(tmp_path):
    topo = tmp_path / "t.csv"
    topo.write_text("Layer Name, M, N, K,\nx, 1024, 16, 64,\n")
    base = ("--topology", str(topo), "--rows", "16", "--cols", "16", "--dram-gbps", "1e6", "--json")
    d = json.loads(_run(*base).stdout)
    # defaults: 2 banks x 64 B per buffer, pipeline 1, 32-bit accumulator (hand count in tests/sim/test_perf.py)
    assert (
        d["arch"]["sram_banks"],
        d["arch"]["sram_port_bytes"],
        d["arch"]["pipeline"],
        d["arch"]["acc_bits"],
    ) == (2, 64.0, 1, 32)
    assert d["total_cycles"] == 1070 and d["sram_stall_cycles"] == 0
    d = json.loads(_run(*base, "--sram-banks", "1").stdout)
    assert d["total_cycles"] == 2048 and d["layers"][0]["sram_stall_cycles"] == 2048 - 1070
    d = json.loads(_run(*base, "--sram-port-bytes", "inf", "--pipeline", "3", "--acc-bits", "24").stdout)
    assert d["arch"]["sram_port_bytes"] is None and d["sram_bytes_per_cycle_per_buffer"] is None
    assert d["total_cycles"] == 1070 + 2 and d["arch"]["acc_bits"] == 24


def test_help_shows_defaults_for_array_flags():
    p = subprocess.run(
        [sys.executable, "-m", "explore.cli", "simulate", "--help"],
        capture_output=True,
        text=True,
        env={**os.environ, "COLUMNS": "200", "TERM": "dumb"},
    )
    assert p.returncode == 0
    text = " ".join(p.stdout.split())
    for flag in (
        "--rows",
        "--cols",
        "--clock-mhz",
        "--dram-gbps",
        "--sram-banks",
        "--sram-port-bytes",
        "--pipeline",
        "--acc-bits",
    ):
        seg = text.split(flag + " <", 1)[1].split("] ", 1)[0]
        assert " <" not in seg and "default" in seg and len(seg.split("default")[0].strip()) > 15, (flag, seg)
