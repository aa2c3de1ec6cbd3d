"""[fixed] activity_trace: which data each design's PE is costed on, per workload family.

"reference" (the default): a transformer workload gets the transformer trace, a CNN the CNN trace,
an MLP the MLP trace; a sparse design mixes its N:M layers' trace and its dense layers' trace by the
workload's own MACs on each (sim.perf); a dense design gets the dense model's trace. "synthetic"
gets none (ppa's default). A bad name is one line and exit 2.
"""

from __future__ import annotations

import os
import subprocess
import sys
import tomllib
from pathlib import Path

import pytest

import explore.evaluator as ev
from explore.activity_traces import check_trace_choice, design_traces, workload_trace
from explore.config import parse_config
from hw.errors import InputError
from ppa.activity import TraceMix, TraceRecipe
from ppa.design import DesignPoint
from sim.workloads import Workload, make_layer
from tests.explore.conftest import fixed_toml, space_toml
from tests.hw.test_verilog import _cli

REPO = Path(__file__).resolve().parents[2]


def _config(trace: str | None = None) -> str:
    """Two workloads (a transformer, a CNN) on one 8x8 design; ``trace``: [fixed] activity_trace."""
    keys = {} if trace is None else {"activity_trace": trace}
    return (
        '[study]\nname = "trace"\nseed = 0\n'
        + space_toml(rows=[8], cols=[8], clock_mhz=[800.0])
        + fixed_toml("theta_ja_c_per_w", **keys)
        + WORKLOADS
    )


WORKLOADS = """
[[workload]]
name = "bert-base"
weight = 1.0
params = { seq = 64, batch = 1 }
[[workload]]
name = "resnet50"
weight = 1.0
[objectives]
primary = "perf_per_watt"
"""

POINT = dict(
    rows=8,
    cols=8,
    sram_kb=256,
    clock_mhz=800.0,
    node_nm=7,
    sparsity="2:4",
    pipeline=1,
    dataflow="ws",
    dram="lpddr5",
)


def _traces(monkeypatch, trace: str | None, sparsity: str):
    """The trace the evaluator hands ppa.model.estimate for each workload (no trace is built)."""
    cfg = parse_config(tomllib.loads(_config(trace)), source="<test>")
    seen = []
    real = ev.estimate
    monkeypatch.setattr(
        ev, "estimate", lambda design, act, trace=None: (seen.append((trace, act)), real(design, act))[1]
    )
    ev.evaluate({**POINT, "sparsity": sparsity}, ev.make_context(cfg))
    return seen


def test_reference_is_the_default_and_picks_each_family(monkeypatch):
    seen = _traces(monkeypatch, None, "2:4")
    (bert, bert_act), (resnet, resnet_act) = seen
    assert isinstance(bert, TraceMix) and isinstance(resnet, TraceMix)
    assert bert.label.startswith("transformer trace: char-level transformer LM")
    assert resnet.label.startswith("cnn trace: digits CNN")
    assert "pruned layers on the sparse PE" in bert.label and "dense fallback" in bert.label
    # the mix weights are the workload's MACs: all of them, split into N:M layers and layers run dense
    for mix, act in ((bert, bert_act), (resnet, resnet_act)):
        assert mix.sparse_macs + mix.fallback_macs == pytest.approx(act.effective_macs)
        assert 0 < mix.fallback_macs < mix.sparse_macs
    # BERT's dense layers are its attention products; ResNet-50's its stem and classifier: different shares
    assert bert.fallback_macs / bert_act.effective_macs != pytest.approx(
        resnet.fallback_macs / resnet_act.effective_macs
    )
    assert isinstance(bert.sparse, TraceRecipe) and bert.sparse.key != resnet.sparse.key


def test_dense_design_gets_the_dense_model_and_synthetic_gets_none(monkeypatch):
    (bert, _), (resnet, _) = _traces(monkeypatch, None, "dense")
    assert isinstance(bert, TraceRecipe) and "dense model, every layer, on the dense PE" in bert.label
    assert bert.label.startswith("transformer") and resnet.label.startswith("cnn")
    assert [t for t, _ in _traces(monkeypatch, "synthetic", "2:4")] == [None, None]


def test_mlp_workload_gets_the_mlp_trace_and_float_is_encoded():
    mlp = Workload(
        "mlp", (make_layer("fc0", "gemm", 64, 256, 256, weight_shape=(256, 256), sparsifiable=True),)
    )
    d = DesignPoint(rows=8, cols=8, sparse=True)
    assert workload_trace("reference", d, mlp, 1.0, 0.0).label.startswith("mlp trace: digits MLP")
    bf = DesignPoint(rows=8, cols=8, sparse=False, precision="bf16", act_bits=16, weight_bits=16)
    t = workload_trace("reference", bf, mlp, 1.0, 0.0)
    assert "encoded to bf16 (RNE)" in t.label
    # the recipe's key names the number format and the stream order: no two configurations share an activity
    os_ = DesignPoint(rows=8, cols=8, sparse=False, dataflow="os")
    keys = {
        workload_trace("reference", x, mlp, 1.0, 0.0).key
        for x in (bf, os_, DesignPoint(rows=8, cols=8, sparse=False))
    }
    assert len(keys) == 3
    # prewarm: a sparse design's both parts, per family of the mix
    [mix] = design_traces("reference", d, [mlp])
    assert isinstance(mix, TraceMix) and mix.sparse_macs > 0 and mix.fallback_macs > 0


def test_unknown_trace_name_is_one_line_and_exit_2(tmp_path):
    with pytest.raises(InputError, match="unknown activity trace"):
        check_trace_choice("digits")
    cfg = tmp_path / "bad.toml"
    cfg.write_text(_config("digits"))
    r = _cli("sweep", str(cfg), "--out", str(tmp_path / "out"))
    assert r.returncode == 2, r.stderr
    lines = [x for x in r.stderr.splitlines() if x.strip()]
    assert len(lines) == 1 and lines[0].startswith("sparsepe: error:") and "activity_trace" in lines[0]
    assert "Traceback" not in r.stderr


FIRST_RUN = """
import sys
from explore.config import load_config
from explore.prewarm import hardware_jobs, probe
from ppa import characterisation
if characterisation.status().entries is None:
    print("SKIP", characterisation.status().why)
    sys.exit(0)
cfg = load_config("examples/default.toml")
print("LEFT", [j["sparse"] for j in probe(cfg, hardware_jobs(cfg))])
"""


def test_the_default_example_finds_its_family_trace_activity_shipped(tmp_path):
    """A first run of the default example (a fresh cache, the shipped files on, the full-size
    references) has nothing left to characterise: its transformer-trace activity is shipped, so no
    model is trained and no netlist simulated."""
    env = {k: v for k, v in os.environ.items() if k != "SPARSEPE_CHARACTERISATION"}
    env.update(
        SPARSEPE_CACHE_DIR=str(tmp_path / "cache"), SPARSEPE_QUALITY_REFERENCE="full", PYTHONPATH=str(REPO)
    )
    r = subprocess.run([sys.executable, "-c", FIRST_RUN], capture_output=True, text=True, cwd=REPO, env=env)
    assert r.returncode == 0, r.stderr
    if r.stdout.startswith("SKIP"):
        pytest.skip(r.stdout.strip())
    assert r.stdout.strip() == "LEFT []"
