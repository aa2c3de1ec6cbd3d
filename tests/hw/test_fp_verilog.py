"""Exported float Verilog: Icarus against hw.fp_golden (random, extreme, special vectors),
Verilator lint, the CLI's --precision and the JSON sidecar's precision and accumulation rules."""

from __future__ import annotations

import json
import shutil
import subprocess

import numpy as np
import pytest

from hw.fp_golden import fp_dense_pe_reference, fp_pe_reference
from hw.golden import legal_codes
from hw.params import PEParams
from hw.verilog import verilator_waivers, write_bundle
from tests.hw.fp_vectors import big_band, operands, specials
from tests.hw.test_fp_array_sim import _case
from tests.hw.test_verilog import _cli, _ports
from tests.hw.vbench import run_array_ws_iverilog, run_pe_iverilog


def _u32(vals):
    return [v & 0xFFFFFFFF for v in vals]


def _vectors(p, t, seed, w_lanes):
    rng = np.random.default_rng(seed)
    acts = operands(rng, p.precision, (t, p.m))
    w = operands(rng, p.precision, (t, w_lanes))
    acts[: t // 3] = big_band(rng, p.precision, (t // 3, p.m))
    w[: t // 3] = big_band(rng, p.precision, (t // 3, w_lanes))
    sp = specials(p.precision)
    acts[-len(sp) :, 0], w[-len(sp) :, 0] = sp, sp[::-1]
    clears = rng.random(t) < 0.2
    valid = rng.random(t) < 0.9
    return acts, w, clears, valid


@pytest.mark.iverilog
@pytest.mark.parametrize("precision,pipeline", [("bf16", 1), ("fp8-e4m3", 2), ("fp8-e5m2", 1), ("fp16", 2)])
def test_iverilog_fp_pes_match_golden(tmp_path, precision, pipeline):
    if shutil.which("iverilog") is None:
        pytest.skip("iverilog not installed")
    p = PEParams(precision=precision, pipeline=pipeline)
    paths = write_bundle(tmp_path / "rtl", p)
    t = 120
    acts, w, clears, valid = _vectors(p, t, 1, p.n)
    metas = np.random.default_rng(2).choice(legal_codes() + [0b0101], size=t)
    acc, err, _ = run_pe_iverilog(paths["sparse_pe"], "sparse_pe", p, acts, w, metas, clears, valid, tmp_path)
    ref, ref_err = fp_pe_reference(acts, w, metas, clears, p, valid)
    assert _u32(acc) == ref.tolist() and err == ref_err.tolist()
    assert 0x7FC00000 in ref.tolist()
    acts, w, clears, valid = _vectors(p, 60, 3, p.m)
    acc, _, _ = run_pe_iverilog(paths["dense_pe"], "dense_pe", p, acts, w, None, clears, valid, tmp_path)
    assert _u32(acc) == fp_dense_pe_reference(acts, w, clears, p, valid)[0].tolist()


@pytest.mark.slow
@pytest.mark.iverilog
def test_iverilog_fp_ws_array_matches_golden(tmp_path):
    if shutil.which("iverilog") is None:
        pytest.skip("iverilog not installed")
    p = PEParams(precision="bf16")
    values, meta, x, want = _case(p, 2 * p.m, 2, 5, seed=8)
    paths = write_bundle(tmp_path / "rtl", p, rows=2, cols=2)
    out, _ = run_array_ws_iverilog(paths["sparse_array"], p, 2, 2, values, meta, x, tmp_path)
    assert (np.asarray(out) & 0xFFFFFFFF).tolist() == want.tolist()


def _lint(tmp_path, path, module, precision):
    (tmp_path / "waivers.vlt").write_text(verilator_waivers(precision))
    r = subprocess.run(
        ["verilator", "--lint-only", "-Wall", "waivers.vlt", str(path), "--top-module", module],
        cwd=tmp_path,
        capture_output=True,
        text=True,
    )
    assert r.returncode == 0, f"{module}:\n{r.stderr[:3000]}"


@pytest.mark.verilator
@pytest.mark.parametrize("precision", ["bf16", "fp8-e4m3"])
def test_verilator_lint_fp(tmp_path, precision):
    if shutil.which("verilator") is None:
        pytest.skip("verilator not installed")
    p = PEParams(precision=precision, pipeline=2)
    paths = write_bundle(tmp_path / "rtl", p, dense_path=True)
    for module in ("sparse_pe", "dense_pe", "sparse_pe_dp"):
        _lint(tmp_path, paths[module], module, precision)


@pytest.mark.verilator
@pytest.mark.parametrize(
    "precision,dataflow,pipeline",
    # 30-70 s of Verilator each: the slow tier; the float PEs lint in the default tier
    [
        pytest.param("bf16", "ws", 1, marks=pytest.mark.slow),
        pytest.param("fp8-e4m3", "os", 2, marks=pytest.mark.slow),
    ],
)
def test_verilator_lint_fp_arrays(tmp_path, precision, dataflow, pipeline):
    """The 2x2 float arrays lint clean under the same waivers as the float PEs (no waiver for Yosys
    temporaries: the WS top row's +0 base takes no adder, E4M3 generates no infinity terms)."""
    if shutil.which("verilator") is None:
        pytest.skip("verilator not installed")
    assert "Signal is not used: '$*'\"" not in verilator_waivers(precision)
    p = PEParams(precision=precision, pipeline=pipeline)
    paths = write_bundle(tmp_path / "rtl", p, rows=2, cols=2, dataflow=dataflow, dense_path=True)
    for module in ("sparse_array", "dense_array", "sparse_array_dp"):
        _lint(tmp_path, paths[module], module, precision)


def test_cli_precision_writes_fp_modules(tmp_path):
    r = _cli("verilog", "--out", str(tmp_path / "o"), "--precision", "fp8-e4m3", "--json")
    assert r.returncode == 0, r.stderr
    files = json.loads(r.stdout)
    info = json.loads(open(files["sparse_pe.json"]).read())
    assert info["params"]["precision"] == "fp8-e4m3" and "RNE" in info["params"]["accumulation"]["additions"]
    ports = _ports(open(files["sparse_pe"]).read(), "sparse_pe")
    assert ports["in_act"][1] == 32 and ports["in_w"][1] == 16 and ports["out_acc"][1] == 32
    r = _cli("verilog", "--out", str(tmp_path / "b"), "--precision", "bf16", "--json")
    ports = _ports(open(json.loads(r.stdout)["sparse_pe"]).read(), "sparse_pe")
    assert ports["in_act"][1] == 64 and ports["in_w"][1] == 32
    bad = _cli("verilog", "--out", str(tmp_path / "x"), "--precision", "fp64")
    assert bad.returncode == 2 and "precision" in bad.stderr and "Traceback" not in bad.stderr
