"""Generated Verilog: port names, determinism, Icarus against the golden model, Verilator lint, CLI."""

from __future__ import annotations

import os
import re
import subprocess
import sys
from pathlib import Path

import numpy as np
import pytest

from hw.golden import dense_pe_reference, pe_reference
from hw.params import PEParams
from hw.verilog import VERILATOR_WAIVERS, write_bundle
from tests.hw.test_pe_sim import DP_CASES, DP_IDS, SPARSE_CASES
from tests.hw.vbench import run_pe_iverilog
from tests.hw.vectors import pe_vectors

REPO = Path(__file__).resolve().parents[2]


def _cli(*args, cwd=None):
    env = {**os.environ, "PYTHONPATH": str(REPO)}
    return subprocess.run(
        [sys.executable, "-m", "explore.cli", *args], capture_output=True, text=True, cwd=cwd or REPO, env=env
    )


def _ports(text: str, module: str) -> dict[str, tuple[str, int]]:
    body = text[text.index(f"module {module}(") :]
    body = body[: body.index("endmodule")]
    return {
        name: (d, int(hi) + 1 if hi else 1)
        for d, hi, name in re.findall(r"^\s*(input|output)\s+(?:\[(\d+):0\]\s+)?(\w+);", body, re.M)
    }


def test_port_names_and_widths(tmp_path):
    paths = write_bundle(tmp_path, PEParams())
    assert _ports(paths["sparse_pe"].read_text(), "sparse_pe") == {
        "clk": ("input", 1),
        "rst": ("input", 1),
        "in_valid": ("input", 1),
        "in_clear": ("input", 1),
        "in_act": ("input", 32),
        "in_w": ("input", 16),
        "in_meta": ("input", 4),
        "out_valid": ("output", 1),
        "out_acc": ("output", 32),
        "out_meta_err": ("output", 1),
    }
    dense = _ports(paths["dense_pe"].read_text(), "dense_pe")
    assert (
        dense["in_w"] == ("input", 32) and "in_meta" not in dense and dense["out_meta_err"] == ("output", 1)
    )
    p = PEParams(act_bits=6, weight_bits=5, acc_bits=20, n=4, m=8)
    paths = write_bundle(tmp_path / "nm", p)
    ports = _ports(paths["sparse_pe"].read_text(), "sparse_pe")
    assert ports["in_act"][1] == 48 and ports["in_w"][1] == 20 and ports["in_meta"][1] == 12
    assert ports["out_acc"][1] == 20


def test_sidecar_json(tmp_path):
    import json

    paths = write_bundle(tmp_path, PEParams(pipeline=3))
    info = json.loads(paths["sparse_pe.json"].read_text())
    assert info["module"] == "sparse_pe" and info["latency"] == 3 and info["params"]["meta_bits"] == 4
    assert [p["name"] for p in info["ports"]][:2] == ["clk", "rst"]


def test_output_is_deterministic_across_cwd(tmp_path):
    a, b = tmp_path / "a", tmp_path / "b"
    (tmp_path / "cwd1").mkdir()
    (tmp_path / "cwd2").mkdir()
    r1 = _cli("verilog", "--out", str(a), "--rows", "2", "--cols", "2", cwd=tmp_path / "cwd1")
    r2 = _cli("verilog", "--out", str(b), "--rows", "2", "--cols", "2", cwd=tmp_path / "cwd2")
    assert r1.returncode == 0 and r2.returncode == 0, r1.stderr + r2.stderr
    names = sorted(p.name for p in a.iterdir())
    assert names == [
        "dense_array.json",
        "dense_array.v",
        "dense_pe.json",
        "dense_pe.v",
        "sparse_array.json",
        "sparse_array.v",
        "sparse_pe.json",
        "sparse_pe.v",
    ]
    for name in names:
        text = (a / name).read_bytes()
        assert text == (b / name).read_bytes(), name
        assert b"/work" not in text and str(REPO).encode() not in text and b"src =" not in text


@pytest.mark.parametrize(
    "args,what",
    [
        (["--n", "3", "--m", "4"], "N must divide M"),
        (["--act-bits", "0"], "--act-bits"),  # the flag the user wrote (issue 16)
        (["--weight-bits", "0"], "--weight-bits"),
        (["--acc-bits", "15"], "--acc-bits"),
        (["--m", "6", "--n", "2"], "power of two"),
        (["--pipeline", "0"], "pipeline"),
        (["--rows", "2"], "rows"),
        (["--rows", "0", "--cols", "2"], "rows"),
        (["--rows", "2", "--cols", "2", "--dataflow", "xx"], "dataflow"),
    ],
)
def test_bad_parameters_exit_2(tmp_path, args, what):
    r = _cli("verilog", "--out", str(tmp_path / "o"), *args)
    assert r.returncode == 2
    lines = r.stderr.strip().splitlines()
    assert len(lines) == 1 and lines[0].startswith("sparsepe: error:") and what in lines[0], r.stderr
    assert "Traceback" not in r.stderr


@pytest.mark.iverilog
@pytest.mark.parametrize(
    "p,t",
    SPARSE_CASES,
    ids=lambda x: (
        str(x)
        if isinstance(x, int)
        else f"a{x.act_bits}w{x.weight_bits}acc{x.acc_bits}_{x.n}of{x.m}_p{x.pipeline}"
    ),
)
def test_iverilog_sparse_pe_matches_golden(tmp_path, p, t):
    paths = write_bundle(tmp_path / "rtl", p)
    acts, w, metas, clears, valid = pe_vectors(
        p, t, seed=p.meta_bits * 100 + p.pipeline
    )  # as the Amaranth test
    acc, err, out_k = run_pe_iverilog(
        paths["sparse_pe"], "sparse_pe", p, acts, w, metas, clears, valid, tmp_path
    )
    ref, ref_err = pe_reference(acts, w, metas, clears, p, valid=valid)
    assert acc == ref.tolist() and err == ref_err.tolist()
    assert (np.array(out_k) - np.flatnonzero(valid)).tolist() == [p.latency - 1] * len(ref)


@pytest.mark.iverilog
@pytest.mark.parametrize(
    "p", [PEParams(), PEParams(pipeline=3, act_bits=5, weight_bits=7, acc_bits=12)], ids=["2of4", "narrow_p3"]
)
def test_iverilog_dense_pe_matches_golden(tmp_path, p):
    paths = write_bundle(tmp_path / "rtl", p)
    acts, w, _, clears, valid = pe_vectors(p, 100, seed=5, dense=True)
    acc, err, _ = run_pe_iverilog(paths["dense_pe"], "dense_pe", p, acts, w, None, clears, valid, tmp_path)
    ref, _ = dense_pe_reference(acts, w, clears, p, valid=valid)
    assert acc == ref.tolist() and not any(err)


LINT_CASES = [
    PEParams(),
    pytest.param(PEParams(pipeline=4, n=4, m=8, acc_bits=16), marks=pytest.mark.slow),
    PEParams(n=1, m=4, act_bits=3, weight_bits=5, acc_bits=8),
    pytest.param(PEParams(pipeline=2, n=2, m=8), marks=pytest.mark.slow),
]  # slow: 15-20 s of Verilator


@pytest.mark.verilator
@pytest.mark.parametrize("p", LINT_CASES, ids=["default", "4of8_p4_acc16", "1of4_narrow", "2of8_p2"])
def test_verilator_lint_clean(tmp_path, p):
    # The only waivers are VERILATOR_WAIVERS in hw/verilog.py, each justified there: Amaranth's
    # unused per-lane alias wires, the deliberately discarded carry of the wrapping accumulator,
    # and Yosys's reliance on Verilog sign extension in $signed(a) + $signed(b).
    for dataflow in ("ws", "os"):
        paths = write_bundle(
            tmp_path / f"rtl_{dataflow}", p, rows=2, cols=3, dataflow=dataflow, dense_path=True
        )
        _lint(
            tmp_path,
            paths,
            ("sparse_pe", "dense_pe", "sparse_pe_dp", "sparse_array", "dense_array", "sparse_array_dp"),
        )


def _lint(tmp_path, paths, modules):
    (tmp_path / "waivers.vlt").write_text(VERILATOR_WAIVERS)
    for module in modules:
        r = subprocess.run(
            ["verilator", "--lint-only", "-Wall", "waivers.vlt", str(paths[module]), "--top-module", module],
            cwd=tmp_path,
            capture_output=True,
            text=True,
        )
        assert r.returncode == 0, f"{module}:\n{r.stderr}"


@pytest.mark.yosys
@pytest.mark.parametrize("dataflow", ["ws", "os"])
def test_native_yosys_reads_every_module(tmp_path, dataflow):
    import shutil

    if shutil.which("yosys") is None:
        pytest.skip("native yosys 0.23 not on PATH (the yowasp build needs minutes to warm up)")
    paths = write_bundle(tmp_path, PEParams(pipeline=2), rows=2, cols=2, dataflow=dataflow, dense_path=True)
    for module in ("sparse_pe", "dense_pe", "sparse_pe_dp", "sparse_array", "dense_array", "sparse_array_dp"):
        r = subprocess.run(
            [
                "yosys",
                "-q",
                "-p",
                f"read_verilog {paths[module]}; hierarchy -check -top {module}; "
                "proc; opt -fast; check -assert",
            ],
            capture_output=True,
            text=True,
            cwd=tmp_path,
        )
        assert r.returncode == 0, r.stderr + r.stdout


# ---- the dense-path PE ---------------------------------------------------------------------------


def test_dense_path_ports_and_sidecar(tmp_path):
    import json

    paths = write_bundle(tmp_path, PEParams(), dense_path=True)
    assert _ports(paths["sparse_pe_dp"].read_text(), "sparse_pe_dp") == {
        "clk": ("input", 1),
        "rst": ("input", 1),
        "in_valid": ("input", 1),
        "in_clear": ("input", 1),
        "in_dense": ("input", 1),
        "in_act": ("input", 64),
        "in_w": ("input", 32),
        "in_meta": ("input", 8),
        "out_valid": ("output", 1),
        "out_acc": ("output", 32),
        "out_meta_err": ("output", 1),
    }
    info = json.loads(paths["sparse_pe_dp.json"].read_text())
    assert info["module"] == "sparse_pe_dp" and info["kind"] == "dense_path" and info["multipliers"] == 4
    assert (
        info["dense_macs_per_cycle"] == 4 and info["nm_effective_macs_per_cycle"] == 8 and info["pe_k"] == 4
    )
    sp = json.loads(paths["sparse_pe.json"].read_text())
    assert sp["dense_macs_per_cycle"] == 2 and sp["nm_effective_macs_per_cycle"] == 4 and sp["pe_k"] == 2
    p = PEParams(n=2, m=8, act_bits=6, weight_bits=5, acc_bits=20)
    ports = _ports(
        write_bundle(tmp_path / "m8", p, dense_path=True)["sparse_pe_dp"].read_text(), "sparse_pe_dp"
    )
    assert ports["in_act"][1] == 4 * 8 * 6 and ports["in_w"][1] == 8 * 5 and ports["in_meta"][1] == 4 * 6
    assert "sparse_pe_dp" not in write_bundle(tmp_path / "no", PEParams())


def test_cli_dense_path_writes_module(tmp_path):
    r = _cli("verilog", "--out", str(tmp_path / "o"), "--dense-path", "--rows", "2", "--cols", "2", "--json")
    assert r.returncode == 0, r.stderr
    import json

    files = json.loads(r.stdout)
    assert {"sparse_pe_dp", "sparse_pe_dp.json", "sparse_array_dp", "dense_array"} <= set(files)
    assert "module sparse_pe_dp(" in Path(files["sparse_pe_dp"]).read_text()
    assert "module sparse_array_dp(" in Path(files["sparse_array_dp"]).read_text()


@pytest.mark.iverilog
@pytest.mark.parametrize("p,t", DP_CASES, ids=DP_IDS)
def test_iverilog_dense_path_pe_matches_golden(tmp_path, p, t):
    from hw.golden import dense_path_pe_reference
    from tests.hw.vectors import dense_path_vectors

    paths = write_bundle(tmp_path / "rtl", p, dense_path=True)
    acts, w, metas, dense, clears, valid = dense_path_vectors(
        p, t, seed=p.meta_bits * 10 + p.pipeline
    )  # as Amaranth
    acc, err, out_k = run_pe_iverilog(
        paths["sparse_pe_dp"], "sparse_pe_dp", p, acts, w, metas, clears, valid, tmp_path, dense=dense
    )
    ref, ref_err = dense_path_pe_reference(acts, w, metas, dense, clears, p, valid=valid)
    assert acc == ref.tolist() and err == ref_err.tolist()
    assert any(err) == (p.n > 1)
    assert (np.array(out_k) - np.flatnonzero(valid)).tolist() == [p.latency - 1] * len(ref)
