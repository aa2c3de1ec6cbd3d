"""``sparsepe quality`` through the real CLI (subprocess), incl. exit code 2 on bad input."""

from __future__ import annotations

import json
import subprocess
import sys

import numpy as np
import pytest


def _run(*args, cwd, timeout=300):
    return subprocess.run(
        [sys.executable, "-m", "explore.cli", "quality", *args],
        capture_output=True,
        text=True,
        cwd=cwd,
        timeout=timeout,
    )


def test_reference_json(tmp_path):
    out = _run("--reference", "--seed", "0", "--json", cwd=None)
    assert out.returncode == 0, out.stderr
    d = json.loads(out.stdout)
    for key in ("dense_accuracy", "oneshot_accuracy", "finetuned_accuracy", "gradual_accuracy"):
        assert 0.0 <= d[key] <= 1.0
    assert d["dense_accuracy"] >= 0.95
    assert d["finetuned_accuracy"] >= d["dense_accuracy"] - 0.015
    assert d["delta_at_equal_latency"] == pytest.approx(
        d["finetuned_accuracy"] - d["dense_equal_latency_accuracy"]
    )
    assert d["sparse_hidden"] == 64 and d["dense_equal_latency_hidden"] % 16 == 0
    assert d["sparse_params"] > 0 and d["dense_equal_latency_params"] > 0
    assert d["dense_equal_latency_latency"] <= d["sparse_latency"]
    assert "sim.perf" in d["latency_model"] and "dense PEs" in d["dense_latency_model"]
    assert isinstance(d["guardrail_ok"], bool)
    # several seeds and a 95 % interval; the guardrail tests its pessimistic end
    assert d["evidence"] == "proxy" and d["multi_seed"]["seeds"] == [0, 1, 2]
    lo, hi = d["quality_delta_interval"]
    assert lo <= d["quality_delta"] <= hi == d["quality_delta_ci"]
    assert d["guardrail_ok"] == (hi <= d["max_quality_delta"] + 1e-12)


def test_transformer_reference_json(tmp_path):
    # the test suite runs the reference at its tiny size (tests/conftest.py), cached after the first run
    out = _run("--reference", "--family", "transformer", "--json", cwd=None, timeout=900)
    assert out.returncode == 0, out.stderr
    d = json.loads(out.stdout)
    assert d["evidence"] == "proxy" and d["reference"] == "char-transformer" and d["metric"] == "perplexity"
    assert d["higher_is_better"] is False
    assert d["dense_metric"] < d["unigram_metric"] and d["oneshot_metric"] > d["dense_metric"]
    lo, hi = d["quality_delta_interval"]
    assert lo <= d["quality_delta"] <= hi == d["quality_delta_ci"]
    assert "pydoc_data.topics" in d["model"] and len(d["details"]["corpus"]["sha256"]) == 64
    assert d["dense_equal_latency_latency"] <= d["sparse_latency"]
    assert "dense PEs" in d["dense_latency_model"] and "sparse PEs" in d["latency_model"]
    assert d["pruning_schedule"] and d["finetune_recipe"]
    # the one-shot delta of every method, against the pre-trained dense model, with its interval
    assert set(d["oneshot_methods"]) == {"magnitude", "wanda", "sparsegpt"}
    for row in d["oneshot_methods"].values():
        lo, hi = row["quality_delta_interval"]
        assert lo <= row["quality_delta"] <= hi
        assert row["perplexity"] == pytest.approx(
            d["pretrained_metric"] * (1 + row["quality_delta"]), rel=0.05
        )
    assert d["calibration"]["inputs"].startswith("pruned prefix")
    human = _run("--reference", "--family", "transformer", cwd=None, timeout=900)
    assert human.returncode == 0 and "one-shot 2:4 by method" in human.stdout and "sparsegpt" in human.stdout
    bad = _run("--reference", "--family", "cnn", cwd=None)
    assert bad.returncode == 2 and "--family" in bad.stderr


def test_weights_json_and_human(tmp_path):
    rng = np.random.default_rng(0)
    np.savez(
        tmp_path / "w.npz",
        **{
            "fc1.weight": rng.normal(size=(32, 64)),
            "fc1.bias": np.zeros(32),
            "head.weight": rng.normal(size=(10, 32)),
        },
    )
    out = _run("--weights", str(tmp_path / "w.npz"), "--nm", "2:4", "--json", cwd=tmp_path)
    assert out.returncode == 0, out.stderr
    d = json.loads(out.stdout)
    assert [r["name"] for r in d["layers"]] == ["fc1.weight", "head.weight"]
    assert [r["pruned"] for r in d["layers"]] == [True, False]
    assert "dense_accuracy" not in d
    human = _run("--weights", str(tmp_path / "w.npz"), cwd=tmp_path)
    assert human.returncode == 0 and "head.weight stays dense" in human.stdout


@pytest.mark.parametrize("case", ["notnpz", "oned", "int", "untileable", "nm", "nothing", "seed", "maxdelta"])
def test_bad_input_exits_2_with_one_line(tmp_path, case):
    p = tmp_path / "x.npz"
    args = ["--weights", str(p)]
    if case == "notnpz":
        p.write_text("not a zip")
    elif case == "oned":
        np.savez(p, W=np.ones(16))
    elif case == "int":
        np.savez(p, W=np.ones((16, 32), dtype=np.int64))
    elif case == "untileable":
        np.savez(p, W=np.ones((8, 6)))
    else:
        np.savez(p, W=np.ones((16, 32)))
        args = {
            "nm": ["--reference", "--nm", "3:4"],
            "nothing": [],
            "seed": ["--reference", "--seed", "-1"],
            "maxdelta": ["--reference", "--max-quality-delta", "-0.1"],
        }[case]
    out = _run(*args, cwd=tmp_path)
    assert out.returncode == 2
    lines = out.stderr.strip().splitlines()
    assert len(lines) == 1 and lines[0].startswith("sparsepe: error:") and "Traceback" not in out.stderr
    if case in ("notnpz", "oned", "int", "untileable"):
        assert str(p) in lines[0]
    if case in ("oned", "int", "untileable"):
        assert "tensor 'W'" in lines[0]
