"""Double-buffered weights as a design axis (``[space] double_buffer``) and as a ``--double-buffer``
flag of ``simulate``, ``ppa`` and ``verilog``."""

from __future__ import annotations

import json
import tomllib
from pathlib import Path

import numpy as np
import optuna
import pytest

from explore.config import config_fingerprint, grid_size, parse_config
from explore.evaluator import design_columns, evaluate, make_context
from explore.grid import grid_columns
from explore.sampler import suggest_point
from explore.space import double_buffered
from explore.twins import DensePool, iso_array_point, twin_metrics
from hw.errors import InputError
from tests.hw.test_verilog import _cli

REPO = Path(__file__).resolve().parents[2]


def _cfg(**space):
    data = tomllib.loads((REPO / "examples" / "default.toml").read_text())
    data["space"].update(space)
    return parse_config(data, "default.toml")


def test_axis_parses_and_rejects_bad_values():
    cfg = _cfg(double_buffer=[False, True])
    assert "double_buffer" in cfg.space.active_axes()
    assert "double_buffer" not in _cfg().space.active_axes()
    for bad in ([0, 1], ["yes"], [True, True], {"min": 0, "max": 1}, []):
        with pytest.raises(InputError, match="double_buffer"):
            _cfg(double_buffer=bad)
    with pytest.raises(InputError, match="stationary dataflow"):  # OS streams its weights
        _cfg(double_buffer=[True], dataflow=["os"])
    assert _cfg(double_buffer=[False, True], dataflow=["ws"]).space.double_buffer == [False, True]


def test_fingerprint_only_changes_with_the_axis():
    base = config_fingerprint(_cfg())
    assert config_fingerprint(_cfg(double_buffer=[False, True])) != base
    assert config_fingerprint(_cfg(double_buffer=[False])) != base


def test_grid_leaves_out_os_points_with_double_buffering():
    cfg = _cfg(
        double_buffer=[False, True],
        rows=[8, 16],
        cols=[8],
        sram_kb=[256],
        clock_mhz=500,
        node_nm=[7],
        pipeline=[1],
        dram=["hbm2"],
    )
    cols = grid_columns(cfg)
    pairs = sorted({(str(d), bool(b)) for d, b in zip(cols["dataflow"], cols["double_buffer"], strict=True)})
    assert pairs == [("os", False), ("ws", False), ("ws", True)]
    assert len(cols["rows"]) == grid_size(cfg) == 2 * 2 * 3  # rows x sparsity x the three pairs
    d = design_columns(cfg, cols)
    assert d["double_buffer"].tolist() == [
        (str(a) == "ws" and bool(b)) for a, b in zip(cols["dataflow"], cols["double_buffer"], strict=True)
    ]
    # a point given OS with double_buffer true (a one-step move of a report) is the OS design
    one = design_columns(
        cfg,
        {k: v[:1] for k, v in cols.items()}
        | {"dataflow": np.array(["os"], dtype=object), "double_buffer": np.array([True])},
    )
    assert one["double_buffer"].tolist() == [False]
    assert not double_buffered({"dataflow": "os", "double_buffer": True})
    assert double_buffered({"dataflow": "is", "double_buffer": True}) and not double_buffered(
        {"dataflow": "ws"}
    )


def test_search_asks_only_stationary_points():
    cfg = _cfg(double_buffer=[False, True])
    study = optuna.create_study(sampler=optuna.samplers.RandomSampler(seed=1))
    seen = set()
    for _ in range(60):
        trial = study.ask()
        point = suggest_point(trial, cfg)
        if point["dataflow"] == "os":
            assert point["double_buffer"] is False and "double_buffer" not in trial.params
        else:
            assert "double_buffer" in trial.params
        seen.add((point["dataflow"], point["double_buffer"]))
        study.tell(trial, 0.0)
    assert seen == {("os", False), ("ws", False), ("ws", True)}


@pytest.mark.yosys
def test_evaluator_costs_both_and_the_dense_twin_alike():
    """A WS point with and without double buffering: fewer cycles, more PE-array area (the shadow
    registers from the synthesised double-buffered array), and its dense twin double-buffered too."""
    cfg = _cfg(double_buffer=[False, True])
    ctx = make_context(cfg)
    point = dict(
        rows=16,
        cols=16,
        sram_kb=256,
        clock_mhz=1000.0,
        node_nm=7,
        sparsity="2:4",
        pipeline=1,
        dataflow="ws",
        dram="lpddr5",
    )
    single = evaluate({**point, "double_buffer": False}, ctx)
    double = evaluate({**point, "double_buffer": True}, ctx)
    assert double["latency_ms"] < single["latency_ms"]
    assert double["area_pe_array_mm2"] > single["area_pe_array_mm2"]
    iso = iso_array_point({**point, "double_buffer": True})  # the twin keeps the double buffering
    assert iso == {**point, "sparsity": "dense", "double_buffer": True}
    twin = evaluate(iso, ctx)
    cols = ("latency_ms", "perf_per_watt", "area_mm2", "energy_per_inference_mj")
    t = twin_metrics(
        {k: np.array([double[k]]) for k in cols},
        {k: np.array([twin[k]]) for k in cols},
        DensePool([], lambda r: True),
    )
    assert t["speedup_vs_dense_design"][0] == pytest.approx(
        twin["latency_ms"] / double["latency_ms"], rel=1e-12
    )
    assert t["area_vs_dense_design"][0] == pytest.approx(double["area_mm2"] / twin["area_mm2"], rel=1e-12)


def _topology(tmp_path):
    p = tmp_path / "gemm.csv"
    p.write_text("name,kind,M,N,K,count,sparsifiable\nfc,gemm,64,64,256,,true\n")
    return p


def test_simulate_flag_gives_the_derived_fold_count(tmp_path):
    """One 2:4 GEMM, M = 64 streamed vectors, N = 64, K = 256 on 16 x 16: F = (256 / (16 x 4)) x (64 / 16)
    = 16 folds of T = 64, no stalls. Single: F (2R + C + T - 2); double: (R + 1) + (F - 1) max(T, R) + T
    + (R + C - 2) (sim.perf's derivation)."""
    R = C = 16
    T, F = 64, 16
    free = [
        "--rows",
        "16",
        "--cols",
        "16",
        "--dram-gbps",
        "100000",
        "--sram-port-bytes",
        "inf",
        "--sram-kb",
        "3072",
        "--json",
        "--topology",
        str(_topology(tmp_path)),
    ]
    out = {}
    for flag in ([], ["--double-buffer"]):
        r = _cli("simulate", *free, *flag)
        assert r.returncode == 0, r.stderr
        out[bool(flag)] = json.loads(r.stdout)
    assert out[False]["stall_cycles"] == out[True]["stall_cycles"] == 0
    assert out[False]["compute_cycles"] == F * (2 * R + C + T - 2) == 1760
    assert out[True]["compute_cycles"] == (R + 1) + (F - 1) * max(T, R) + T + (R + C - 2) == 1071
    assert out[True]["arch"]["double_buffer"] is True and out[False]["arch"]["double_buffer"] is False
    bad = _cli("simulate", *free, "--dataflow", "os", "--double-buffer")
    assert bad.returncode == 2 and bad.stderr.startswith("sparsepe: error: --double-buffer: ")
    assert len(bad.stderr.strip().splitlines()) == 1


@pytest.mark.yosys
def test_ppa_flag_costs_the_double_buffered_array():
    out = {}
    for flag in ([], ["--double-buffer"]):
        r = _cli("ppa", "--json", *flag)
        assert r.returncode == 0, r.stderr
        out[bool(flag)] = json.loads(r.stdout)
    assert out[True]["details"]["double_buffer"] is True
    assert out[True]["area_breakdown_mm2"]["pe_array"] > out[False]["area_breakdown_mm2"]["pe_array"]
    assert "double-buffered" in out[True]["details"]["timing"]["stage"]
    # the shadow set's cost: clock power (its registers are clocked while the active set is gated);
    # its loads shift fewer bits per tile than the single-buffered chain, so data toggles alone may fall
    pw = {k: v["power_breakdown_w"] for k, v in out.items()}
    assert pw[True]["clock"] > pw[False]["clock"]
    assert pw[True]["clock"] + pw[True]["dynamic"] > pw[False]["clock"] + pw[False]["dynamic"]
    bad = _cli("ppa", "--dataflow", "os", "--double-buffer")
    assert bad.returncode == 2 and bad.stderr.startswith("sparsepe: error: --double-buffer: ")


def test_verilog_flag_writes_the_double_buffered_arrays(tmp_path):
    r = _cli(
        "verilog", "--out", str(tmp_path / "v"), "--rows", "2", "--cols", "2", "--double-buffer", "--json"
    )
    assert r.returncode == 0, r.stderr
    paths = json.loads(r.stdout)
    assert {"sparse_array_db", "dense_array_db"} <= set(paths) and "sparse_array" not in paths
    text = Path(paths["sparse_array_db"]).read_text()
    assert "module sparse_array_db(" in text and "w_swap" in text
    assert json.loads(Path(paths["sparse_array_db.json"]).read_text())["double_buffer"] is True
    for args in (["--double-buffer"], ["--rows", "2", "--cols", "2", "--dataflow", "os", "--double-buffer"]):
        bad = _cli("verilog", "--out", str(tmp_path / "w"), *args)
        assert bad.returncode == 2 and bad.stderr.startswith("sparsepe: error: --double-buffer: ")
        assert not (tmp_path / "w").exists()
