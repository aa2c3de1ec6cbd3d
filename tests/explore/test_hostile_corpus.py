"""The hostile-input corpus: every case of the input contract (issue 25's list, but for the team
hooks of ``quality``, which tests/explore/test_quality_hooks*.py hold) plus well over a hundred
more, each through the real command line in a subprocess, all of them in parallel.

Each case expects exactly one stderr line ``sparsepe: error: ...`` (naming what it must name) and
exit code 2, or a correct success (exit 0, the output checked). Cases that would write check that
nothing was written where they point.

The whole corpus fits in 3 minutes on 2 cores: the processor time of all its subprocesses (user +
system, from the kernel's accounting of waited-for children), spread over 2 cores, is at most
:data:`LIMIT_S`. That holds on a loaded machine too, where the wall time (printed) is longer. It
holds because a command answers bad input before it imports its heavy stack (Optuna, the report,
the models, amaranth).
"""

from __future__ import annotations

import json
import os
import resource
import subprocess
import sys
import time
from collections.abc import Callable
from concurrent.futures import ThreadPoolExecutor
from dataclasses import dataclass, field
from pathlib import Path

import numpy as np
import pytest

from tests.explore.conftest import SMALL_CONFIG

REPO = Path(__file__).resolve().parents[2]
BASE = SMALL_CONFIG.replace("{workload}", "bert-base")
#: Subprocesses at a time, the whole corpus's time limit (s) and the cores it is measured on.
PARALLEL, LIMIT_S, CORES = 4, 180, 2


@dataclass
class Case:
    name: str
    args: list[str]
    needle: str | None = None  # the error line must contain it; None with ok=True: a success
    ok: bool = False
    check: Callable[[str, str], None] | None = None  # (stdout, stderr) of a success
    absent: list[str] = field(default_factory=list)  # must not appear anywhere in stderr
    not_created: list[Path] = field(default_factory=list)


def strict_json(text: str):
    def bad(x):
        raise ValueError(f"non-standard JSON constant {x}")

    return json.loads(text, parse_constant=bad)


def _sim_json(workload: str = "w", total=100, layers=None) -> dict:
    return {
        "workload": workload,
        "arch": {"rows": 8, "cols": 8},
        "layers": layers
        if layers is not None
        else [
            {
                "name": "a",
                "count": 1,
                "cycles": 50,
                "stall_cycles": 5,
                "utilization": 0.5,
                "sparse": True,
                "dram_bytes": 10.0,
            }
        ],
        "total_cycles": total,
        "stall_fraction": 0.1,
    }


def _files(d: Path) -> dict[str, Path]:
    """The input files of the corpus, written into ``d``."""
    f: dict[str, Path] = {}

    def put(name: str, text: str | bytes) -> Path:
        p = d / name
        p.write_bytes(text if isinstance(text, bytes) else text.encode())
        f[name] = p
        return p

    put("c.toml", BASE)
    put("a.json", json.dumps(_sim_json()))
    put("b.json", json.dumps(_sim_json(total=200)))
    put("nan.json", json.dumps(_sim_json(total=float("nan"))))
    put("inf.json", json.dumps(_sim_json(total=float("inf"))))
    put("notlist.json", json.dumps(_sim_json(layers="not a list")))
    put("mixed.json", json.dumps(_sim_json(layers=[None, 1, "x"])))
    put("many.json", json.dumps(_sim_json(total="many")))
    put(
        "huge.json",
        json.dumps(_sim_json(total=1)).replace('"total_cycles": 1', '"total_cycles": 1' + "0" * 400),
    )
    put("bool.json", json.dumps(_sim_json(total=True)))
    put("ansi.json", json.dumps(_sim_json(workload="\x1b[31mred\x1b[0m")))
    put("deep.json", "[" * 50000 + "]" * 50000)
    put("deepobj.json", '{"a":' * 200 + "1" + "}" * 200)
    put("trunc.json", json.dumps(_sim_json())[:40])
    put("empty.json", "")
    put("list.json", "[1, 2]")
    put("noname.json", json.dumps(_sim_json(layers=[{"count": 1}])))
    put("badcount.json", json.dumps(_sim_json(layers=[{"name": "a", "count": -3}])))
    put("floatcount.json", json.dumps(_sim_json(layers=[{"name": "a", "count": 1.5}])))
    put("strcycles.json", json.dumps(_sim_json(layers=[{"name": "a", "cycles": "lots"}])))
    put("archlist.json", json.dumps({**_sim_json(), "arch": [1]}))
    put("wlnum.json", json.dumps({**_sim_json(), "workload": 5}))
    put("nonutf8.json", b'{"workload": "\xff"}')
    put("best_nodesign.json", json.dumps({"n_evaluated": 0, "feasible": False}))
    put(
        "best_badparams.json",
        json.dumps({"n_evaluated": 1, "feasible": True, "best": {"params": [], "metrics": {}}}),
    )
    put("best_neg.json", json.dumps({"n_evaluated": -1}))
    put("neither.json", json.dumps({"x": 1}))
    put("op99.journal", '{"op_code": 99, "worker_id": NaN}\n')
    put("text.journal", "hello\n")
    put(
        "g5.json",
        json.dumps(
            {
                "model_type": "gpt2",
                "n_embd": 64,
                "n_head": 5,
                "n_layer": 2,
                "vocab_size": 100,
                "n_positions": 128,
            }
        ),
    )
    put(
        "g4.json",
        json.dumps(
            {
                "model_type": "gpt2",
                "n_embd": 64,
                "n_head": 4,
                "n_layer": 2,
                "vocab_size": 100,
                "n_positions": 128,
            }
        ),
    )
    put(
        "llama_bad.json",
        json.dumps(
            {
                "model_type": "llama",
                "hidden_size": 100,
                "num_attention_heads": 3,
                "num_hidden_layers": 2,
                "intermediate_size": 256,
                "vocab_size": 100,
            }
        ),
    )
    put("hf_deep.json", '{"a":' * 500 + "1" + "}" * 500)
    put("topo_nonutf8.csv", b"name,kind,M,N,K\n\xff\xfe,gemm,1,1,1\n")
    put("topo_huge.toml", "[[layer]]\nname = 'a'\nkind = 'gemm'\nM = 99999999999\nN = 4\nK = 4\n")
    put("victim.txt", "keep me\n")
    for name, old, new in (
        ("cfg_nan.toml", "ambient_c = 45.0", "ambient_c = nan"),
        ("cfg_rows.toml", "rows = [8, 16, 32]", "rows = [8, 16, 1000000000]"),
        ("cfg_unknown.toml", "ambient_c = 45.0", "ambient_c = 45.0\nbogus = 1"),
        ("cfg_name.toml", 'name = "small"', 'name = "../evil"'),
        ("cfg_ansi.toml", 'name = "small"', 'name = "a\x1b[31mb"'),
        ("cfg_seed.toml", "seed = 3", "seed = -1"),
        ("cfg_weight.toml", "weight = 1.0", "weight = inf"),
        ("cfg_sparsity.toml", 'sparsity = ["2:4", "dense"]', 'sparsity = ["0:0"]'),
        ("cfg_tj.toml", "max_tj_c = 85.0", "max_tj_c = nan"),
        ("cfg_workload.toml", 'name = "bert-base"', 'name = "\x1b[2Jnope"'),
    ):
        put(name, BASE.replace(old, new))
    put("cfg_deep.toml", "rows = " + "[" * 3000 + "]" * 3000)
    (d / "outdir").mkdir()
    (d / "link").symlink_to(d / "outdir")
    (d / "dangling").symlink_to(d / "nowhere")
    (d / "afile").write_text("precious\n")
    f["link"], f["dangling"], f["afile"], f["outdir"] = d / "link", d / "dangling", d / "afile", d / "outdir"
    return f


def _onnx_files(d: Path, f: dict[str, Path]) -> None:
    onnx = pytest.importorskip("onnx")
    from onnx import TensorProto, helper, numpy_helper  # the optional ONNX package: only these cases need it

    def save(name, nodes, inputs, inits=()):
        outs = [helper.make_tensor_value_info(nodes[-1].output[0], TensorProto.UNDEFINED, None)]
        graph = helper.make_graph(nodes, name, inputs, outs, list(inits))
        onnx.save(
            helper.make_model(
                graph, opset_imports=[helper.make_opsetid("", 21), helper.make_opsetid("acme", 1)]
            ),
            str(d / name),
        )
        f[name] = d / name

    arr = numpy_helper.from_array
    save(
        "group.onnx",
        [helper.make_node("Conv", ["x", "w"], ["y"], name="c", group=4)],
        [helper.make_tensor_value_info("x", TensorProto.FLOAT, [1, 6, 8, 8])],
        [arr(np.zeros((8, 1, 3, 3), np.float32), "w")],
    )
    save(
        "rank0.onnx",
        [helper.make_node("MatMul", ["s", "w"], ["y"], name="mm")],
        [helper.make_tensor_value_info("s", TensorProto.FLOAT, [])],
        [arr(np.zeros((4, 4), np.float32), "w")],
    )
    save(
        "custom.onnx",
        [
            helper.make_node("MatMul", ["x", "w"], ["h"], name="mm"),
            helper.make_node("MyFancyOp", ["h"], ["z"], name="custom", domain="acme"),
            helper.make_node("MatMul", ["z", "w"], ["y"], name="mm2"),
        ],
        [helper.make_tensor_value_info("x", TensorProto.FLOAT, [1, 4])],
        [arr(np.zeros((4, 4), np.float32), "w")],
    )
    save(
        "ok.onnx",
        [helper.make_node("MatMul", ["x", "w"], ["y"], name="mm")],
        [helper.make_tensor_value_info("x", TensorProto.FLOAT, ["n", 4])],
        [arr(np.zeros((4, 8), np.float32), "w")],
    )


def _sim_ok(out: str, _err: str) -> None:
    d = strict_json(out)
    assert d["total_cycles"] > 0 and d["layers"]


def _diff_nan_ok(out: str, _err: str) -> None:
    d = strict_json(out)
    assert any(k.endswith(".a") or k.endswith(".b") for k in d["non_finite"]), d.get("non_finite")
    assert all("written as null" in v for v in d["non_finite"].values())


def _diff_ok(out: str, _err: str) -> None:
    d = strict_json(out)
    assert d["diverged"] and any(c["metric"] == "total_cycles" for c in d["changes"])


def _verilog_ok(out: str, _err: str) -> None:
    d = strict_json(out)
    assert {"sparse_pe", "dense_pe"} <= set(d)


def cases(f: dict[str, Path], d: Path) -> list[Case]:
    s = {k: str(v) for k, v in f.items()}
    C: list[Case] = []
    add = C.append
    # ---- issue 25's cases ---------------------------------------------------------------------------
    add(Case("verilog out symlink", ["verilog", "--out", s["link"]], "symlink"))
    add(Case("sweep out symlink", ["sweep", s["c.toml"], "--out", s["link"]], "symlink"))
    add(
        Case(
            "report out symlink",
            ["report", "--storage", s["text.journal"], "--study", "x", "--out", s["link"]],
            "symlink",
        )
    )
    add(Case("verilog out empty", ["verilog", "--out", ""], "--out", not_created=[d / "sparse_pe.v"]))
    add(Case("sweep out empty", ["sweep", s["c.toml"], "--out", ""], "--out"))
    add(
        Case(
            "diff nan --json standard",
            ["diff", s["nan.json"], s["a.json"], "--json"],
            ok=True,
            check=_diff_nan_ok,
        )
    )
    add(
        Case(
            "diff inf --json standard",
            ["diff", s["inf.json"], s["a.json"], "--json"],
            ok=True,
            check=_diff_nan_ok,
        )
    )
    add(Case("journal op 99 diff", ["diff", s["op99.journal"] + "#s", s["a.json"]], "op99.journal"))
    add(
        Case(
            "journal op 99 sweep",
            ["sweep", s["c.toml"], "--storage", s["op99.journal"], "--out", str(d / "o99")],
            "op99.journal",
            not_created=[d / "o99"],
        )
    )
    add(Case("diff layers not a list", ["diff", s["notlist.json"], s["a.json"]], "layers"))
    add(Case("diff layers mixed", ["diff", s["mixed.json"], s["a.json"]], "layers[0]"))
    add(Case("diff total 10^400", ["diff", s["huge.json"], s["a.json"]], "total_cycles"))
    add(Case("diff total many", ["diff", s["many.json"], s["a.json"]], "total_cycles"))
    add(
        Case(
            "verilog int4 act 8",
            ["verilog", "--precision", "int4", "--act-bits", "8", "--out", str(d / "v8")],
            "--act-bits",
            not_created=[d / "v8"],
        )
    )
    add(Case("simulate builtin batch 0", ["simulate", "--workload", "bert-base", "--batch", "0"], "--batch"))
    add(
        Case(
            "hf prefill context",
            ["simulate", "--hf-config", s["g4.json"], "--phase", "prefill", "--context", "99"],
            "--context",
        )
    )
    add(Case("gpt2 heads", ["simulate", "--hf-config", s["g5.json"]], "g5.json"))
    add(Case("onnx group", ["simulate", "--onnx", s["group.onnx"]], "group 4"))
    add(Case("onnx rank0", ["simulate", "--onnx", s["rank0.onnx"]], "scalar"))
    add(Case("onnx no shape", ["simulate", "--onnx", s["custom.onnx"]], "custom"))
    add(
        Case(
            "onnx input twice",
            ["simulate", "--onnx", s["ok.onnx"], "--input-shape", "x=1x4", "--input-shape", "x=2x4"],
            "given twice",
        )
    )
    add(
        Case(
            "postgres password",
            ["diff", "postgresql://u:s3cretpw@127.0.0.1:1/db#s", s["a.json"]],
            "u:***@",
            absent=["s3cretpw"],
        )
    )
    add(
        Case(
            "postgres password sweep",
            [
                "sweep",
                s["c.toml"],
                "--storage",
                "postgresql://u:s3cretpw@127.0.0.1:1/db",
                "--out",
                str(d / "opg"),
            ],
            "***",
            absent=["s3cretpw"],
        )
    )
    add(Case("ansi workload name", ["diff", s["ansi.json"], s["a.json"]], "\\x1b[31m", absent=["\x1b"]))
    add(
        Case(
            "ansi simulate workload",
            ["simulate", "--workload", "\x1b[31mevil"],
            "--workload",
            absent=["\x1b"],
        )
    )
    add(
        Case(
            "ansi config workload",
            ["sweep", s["cfg_workload.toml"], "--out", str(d / "oa")],
            "\\x1b",
            absent=["\x1b"],
        )
    )
    add(Case("deep json named", ["diff", s["deep.json"], s["a.json"]], "deep.json"))
    add(Case("deep hf config named", ["simulate", "--hf-config", s["hf_deep.json"]], "hf_deep.json"))
    add(Case("storage empty", ["sweep", s["c.toml"], "--storage", ""], "--storage"))
    add(Case("report storage empty", ["report", "--storage", "", "--study", "x"], "--storage"))
    add(Case("liberty node alone", ["ppa", "--liberty-node", "3"], "--liberty-node"))
    add(
        Case(
            "liberty node sweep",
            ["sweep", s["c.toml"], "--liberty-node", "3", "--out", str(d / "oln")],
            "--liberty-node",
            not_created=[d / "oln"],
        )
    )
    add(
        Case(
            "first wrong in argv order a",
            ["sweep", s["c.toml"], "--workers", "0", "--trials", "0"],
            "--workers",
        )
    )
    add(
        Case(
            "first wrong in argv order b",
            ["sweep", s["c.toml"], "--trials", "0", "--workers", "0"],
            "--trials",
        )
    )
    add(Case("first wrong ppa a", ["ppa", "--t-ambient", "nan", "--rows", "0"], "--t-ambient"))
    add(Case("first wrong ppa b", ["ppa", "--rows", "0", "--t-ambient", "nan"], "--rows"))
    # ---- successes --------------------------------------------------------------------------------
    add(Case("simulate json", ["simulate", "--workload", "bert-base", "--json"], ok=True, check=_sim_ok))
    add(
        Case(
            "simulate sram inf json",
            ["simulate", "--workload", "bert-base", "--sram-port-bytes", "inf", "--json"],
            ok=True,
            check=_sim_ok,
        )
    )
    add(
        Case(
            "hf decode context",
            ["simulate", "--hf-config", s["g4.json"], "--phase", "decode", "--context", "99", "--json"],
            ok=True,
            check=_sim_ok,
        )
    )
    add(
        Case(
            "onnx ok",
            ["simulate", "--onnx", s["ok.onnx"], "--input-shape", "x=2x4", "--json"],
            ok=True,
            check=_sim_ok,
        )
    )
    add(Case("diff ok", ["diff", s["a.json"], s["b.json"], "--json"], ok=True, check=_diff_ok))
    add(
        Case(
            "verilog int4 widths agree",
            ["verilog", "--precision", "int4", "--act-bits", "4", "--out", str(d / "v4"), "--json"],
            ok=True,
            check=_verilog_ok,
        )
    )
    # ---- diff inputs ------------------------------------------------------------------------------
    for name, needle in (
        ("bool.json", "total_cycles"),
        ("deepobj.json", "deepobj.json"),
        ("trunc.json", "trunc.json"),
        ("empty.json", "empty.json"),
        ("list.json", "list.json"),
        ("noname.json", "layers[0].name"),
        ("badcount.json", "count"),
        ("floatcount.json", "count"),
        ("strcycles.json", "cycles"),
        ("archlist.json", "arch"),
        ("wlnum.json", "workload"),
        ("nonutf8.json", "nonutf8.json"),
        ("best_nodesign.json", "no design"),
        ("best_badparams.json", "params"),
        ("best_neg.json", "n_evaluated"),
        ("neither.json", "neither"),
    ):
        add(Case(f"diff {name}", ["diff", s[name], s["a.json"]], needle))
        add(Case(f"diff B {name}", ["diff", s["a.json"], s[name]], needle))
    for spec, needle in (
        (str(d / "missing.json"), "missing.json"),
        (s["outdir"] + "/x.json", "x.json"),
        ("#s", "#"),
        (s["text.journal"] + "#s", "not an Optuna journal"),
        ("sqlite:///" + str(d / "none.db") + "#s", "none.db"),
        ("mysql://h/db#s", "mysql"),
        (str(d / "nojournal") + "#s", "nojournal"),
    ):
        add(Case(f"diff spec {needle}", ["diff", spec, s["a.json"]], needle))
    add(Case("diff threshold", ["diff", s["a.json"], s["b.json"], "--threshold", "abc"], "--threshold"))
    add(Case("diff threshold nan", ["diff", s["a.json"], s["b.json"], "--threshold", "nan"], "--threshold"))
    add(Case("diff threshold empty", ["diff", s["a.json"], s["b.json"], "--threshold", ""], "--threshold"))
    add(Case("diff different workloads", ["diff", s["ansi.json"], s["b.json"]], "different workloads"))
    # ---- every numeric flag: not a number, empty ---------------------------------------------------------
    flags = {
        "simulate": [
            "--rows",
            "--cols",
            "--sram-kb",
            "--clock-mhz",
            "--dram-gbps",
            "--acc-bits",
            "--pipeline",
            "--sram-banks",
            "--vector-lanes",
            "--sram-port-bytes",
        ],
        "ppa": [
            "--rows",
            "--cols",
            "--sram-kb",
            "--clock-mhz",
            "--node",
            "--act-bits",
            "--weight-bits",
            "--acc-bits",
            "--pipeline",
            "--dram-units",
            "--theta-ja",
            "--t-ambient",
            "--sram-banks",
            "--voltage",
        ],
        "verilog": [
            "--n",
            "--m",
            "--pipeline",
            "--rows",
            "--cols",
            "--acc-bits",
            "--act-bits",
            "--weight-bits",
        ],
        "sweep": ["--trials", "--workers", "--seed"],
    }
    for cmd, fl in flags.items():
        pre = {
            "simulate": ["--workload", "bert-base"],
            "ppa": [],
            "verilog": ["--out", str(d / "vx")],
            "sweep": [s["c.toml"], "--out", str(d / "sx")],
        }[cmd]
        for flag in fl:
            for bad in ("abc", ""):
                add(
                    Case(
                        f"{cmd} {flag} {bad!r}",
                        [cmd, *pre, flag, bad],
                        flag,
                        not_created=[d / "vx", d / "sx"],
                    )
                )
    # ---- ranges --------------------------------------------------------------------------------------
    for args, needle in (
        (["ppa", "--rows", "0"], "--rows"),
        (["ppa", "--sram-kb", "-1"], "--sram-kb"),
        (["ppa", "--clock-mhz", "1e30"], "--clock-mhz"),
        (["ppa", "--theta-ja", "inf"], "--theta-ja"),
        (["ppa", "--voltage", "nan"], "--voltage"),
        (["ppa", "--dram-units", "0"], "--dram-units"),
        (["ppa", "--sram-banks", "1000"], "--sram-banks"),
        (["ppa", "--node", "3"], "--node"),
        (["ppa", "--sparsity", "3:3"], "--sparsity"),
        (["ppa", "--dataflow", "zz"], "--dataflow"),
        (["ppa", "--precision", "int3"], "--precision"),
        (["ppa", "--liberty-node", "0"], "--liberty-node"),
        (["simulate", "--workload", "bert-base", "--dataflow", "zz"], "--dataflow"),
        (["simulate", "--workload", "bert-base", "--sparsity", "0:4"], "--sparsity"),
        (["simulate", "--workload", "bert-base", "--precision", "fp3"], "--precision"),
        (["simulate", "--workload", "bert-base", "--sram-port-bytes", "0"], "--sram-port-bytes"),
        (["simulate", "--workload", "bert-base", "--seq", "5"], "--seq"),
        (["simulate", "--workload", "bert-base", "--phase", "decode"], "--phase"),
        (["simulate", "--workload", "bert-base", "--input-shape", "x=1"], "--input-shape"),
        (["simulate", "--workload", "bert-base", "--prune-lm-head"], "--prune-lm-head"),
        (["simulate"], "exactly one"),
        (["simulate", "--workload", "bert-base", "--topology", s["a.json"]], "exactly one"),
        (["simulate", "--topology", s["topo_nonutf8.csv"]], "topo_nonutf8.csv"),
        (["simulate", "--topology", s["topo_huge.toml"]], "topo_huge.toml"),
        (["simulate", "--hf-config", s["llama_bad.json"]], "llama_bad.json"),
        (["simulate", "--hf-config", s["g4.json"], "--phase", "sideways"], "phase"),
        (["simulate", "--hf-config", s["g4.json"], "--input-shape", "x=1"], "--input-shape"),
        (["simulate", "--onnx", s["ok.onnx"], "--seq", "4"], "--seq"),
        (["simulate", "--hf-config", str(d / "missing.json")], "missing.json"),
        (["verilog", "--out", str(d / "vr"), "--rows", "4"], "--rows"),
        (["verilog", "--out", str(d / "vr"), "--n", "3", "--m", "4"], "--n/--m"),
        (["verilog", "--out", str(d / "vr"), "--precision", "bf16", "--act-bits", "8"], "--act-bits"),
        (["verilog", "--out", str(d / "vr"), "--precision", "int8", "--weight-bits", "4"], "--weight-bits"),
        (["verilog", "--out", str(d / "vr"), "--precision", ""], "--precision"),
        (["verilog", "--out", str(d / "vr"), "--precision", "int5"], "--precision"),
        (["verilog", "--out", str(d / "vr"), "--rows", "4", "--cols", "4", "--dataflow", "zz"], "--dataflow"),
        (["verilog", "--out", s["afile"]], "is a file"),
        (["verilog", "--out", s["dangling"]], "symlink"),
        (["verilog", "--out", s["afile"] + "/sub"], "--out"),
        (["sweep", s["c.toml"], "--sampler", "nope"], "--sampler"),
        (["sweep", s["c.toml"], "--study", "a/b"], "--study"),
        (["sweep", s["c.toml"], "--study", ""], "--study"),
        (["sweep", s["c.toml"], "--study", "x\x1by"], "--study"),
        (["sweep", s["c.toml"], "--seed", "-1"], "--seed"),
        (["sweep", s["c.toml"], "--workers", "100000"], "--workers"),
        (["sweep", s["c.toml"], "--out", s["afile"]], "is a file"),
        (["sweep", s["c.toml"], "--out", s["dangling"]], "symlink"),
        (["sweep", s["c.toml"], "--storage", "ftp://x/y", "--out", str(d / "oftp")], "--storage"),
        (["sweep", s["c.toml"], "--storage", "sqlite:///", "--out", str(d / "osq")], "sqlite"),
        (
            ["sweep", s["c.toml"], "--storage", s["victim.txt"], "--out", str(d / "ovi")],
            "not an Optuna journal",
        ),
        (["sweep", s["c.toml"], "--storage", s["outdir"], "--out", str(d / "odir")], "not a regular file"),
        (["sweep", str(d / "missing.toml")], "missing.toml"),
        (["sweep", s["outdir"]], "not a regular file"),
        (["sweep", "/dev/zero"], "not a regular file"),
        (["sweep", s["cfg_deep.toml"]], "cfg_deep.toml"),
        (["report", "--storage", s["text.journal"], "--study", "x"], "not an Optuna journal"),
        (["report", "--storage", str(d / "nojournal"), "--study", "x"], "nojournal"),
        (["report", "--storage", s["op99.journal"], "--study", "x"], "op99.journal"),
        (["report", "--storage", s["text.journal"], "--study", "../x"], "--study"),
        (["report", "--storage", s["text.journal"], "--study", "x", "--out", s["afile"]], "is a file"),
        (["memo", "--storage", s["text.journal"], "--study", "x"], "not an Optuna journal"),
        (["memo", "--storage", "", "--study", "x"], "--storage"),
        (["memo", "--storage", "postgresql://u:s3cretpw@127.0.0.1:1/db", "--study", "x"], "***"),
        (["validate", "--liberty-node", "3"], "--liberty-node"),
        (["validate", "--group", "nope"], "nope"),
        (["validate", "--markdown", ""], "--markdown"),
        (["bogus-command"], "bogus-command"),
        (["sweep", s["c.toml"], "--bogus"], "--bogus"),
    ):
        add(Case(" ".join(a for a in args if "/" not in a)[:60], args, needle, absent=["s3cretpw", "\x1b"]))
    for name, key in (
        ("cfg_nan.toml", "fixed.ambient_c"),
        ("cfg_rows.toml", "space.rows"),
        ("cfg_unknown.toml", "fixed.bogus"),
        ("cfg_name.toml", "study.name"),
        ("cfg_ansi.toml", "cfg_ansi.toml"),
        ("cfg_seed.toml", "study.seed"),
        ("cfg_weight.toml", "weight"),
        ("cfg_sparsity.toml", "sparsity"),
        ("cfg_tj.toml", "max_tj_c"),
    ):
        add(
            Case(
                f"config {name}",
                ["sweep", s[name], "--out", str(d / f"o_{name}")],
                key,
                absent=["\x1b"],
                not_created=[d / f"o_{name}"],
            )
        )
    return C


def run_case(c: Case, cwd: Path, env: dict[str, str]) -> str | None:
    """None when the case met the contract, else what went wrong."""
    try:
        p = subprocess.run(
            [sys.executable, "-m", "explore.cli", *c.args],
            capture_output=True,
            text=True,
            cwd=cwd,
            env=env,
            timeout=LIMIT_S,
        )
    except subprocess.TimeoutExpired:
        return f"{c.name}: no answer within {LIMIT_S} s"
    lines = [ln for ln in p.stderr.splitlines() if ln.strip()]
    try:
        for bad in c.absent:
            assert bad not in p.stderr, f"{bad!r} in stderr"
        for path in c.not_created:
            assert not path.exists(), f"{path} was created"
        if c.ok:
            assert p.returncode == 0, f"exit {p.returncode}"
            assert not [ln for ln in lines if "error" in ln], "an error line"
            if c.check is not None:
                c.check(p.stdout, p.stderr)
        else:
            assert p.returncode == 2, f"exit {p.returncode}"
            assert len(lines) == 1, f"{len(lines)} stderr lines"
            assert lines[0].startswith("sparsepe: error: "), "not 'sparsepe: error: ...'"
            assert "Traceback" not in p.stderr
            if c.needle is not None:
                assert c.needle in lines[0], f"{c.needle!r} not named"
    except AssertionError as exc:
        return f"{c.name} {c.args}: {exc}; stderr: {p.stderr.strip()[-300:]!r}"
    return None


#: The default tier runs every SAMPLE_STRIDE-th case (each run the same ones, spread over the whole
#: corpus); the slow tier runs all of them.
SAMPLE_STRIDE = 4


@pytest.mark.parametrize(
    "stride", [SAMPLE_STRIDE, pytest.param(1, marks=pytest.mark.slow)], ids=["sample", "full"]
)
def test_hostile_corpus(tmp_path, stride):
    f = _files(tmp_path)
    _onnx_files(tmp_path, f)
    work = tmp_path / "cwd"
    work.mkdir()
    corpus = cases(f, tmp_path)
    assert len(corpus) >= 232, len(corpus)
    all_cases = corpus[::stride]
    env = {**os.environ, "PYTHONPATH": str(REPO), "COLUMNS": "200"}
    before, t0 = resource.getrusage(resource.RUSAGE_CHILDREN), time.monotonic()
    with ThreadPoolExecutor(PARALLEL) as pool:
        failures = [r for r in pool.map(lambda c: run_case(c, work, env), all_cases) if r is not None]
    after, wall = resource.getrusage(resource.RUSAGE_CHILDREN), time.monotonic() - t0
    cpu = (after.ru_utime - before.ru_utime) + (after.ru_stime - before.ru_stime)
    print(
        f"hostile corpus: {len(all_cases)} cases, {wall:.0f} s wall, {cpu:.0f} s processor time "
        f"({cpu / CORES:.0f} s on {CORES} cores)"
    )
    assert not failures, f"{len(failures)} of {len(all_cases)} cases failed:\n" + "\n".join(failures)
    limit = LIMIT_S * len(all_cases) / len(corpus)
    assert cpu / CORES <= limit, (
        f"the cases need {cpu:.0f} s of processor time: over {limit:.0f} s on {CORES} cores"
    )
    assert not list(work.iterdir()), "nothing is written into the working directory"
    assert (tmp_path / "victim.txt").read_text() == "keep me\n" and (
        tmp_path / "afile"
    ).read_text() == "precious\n"
    assert not list((tmp_path / "outdir").iterdir()), "nothing is written through the symlink"
