"""The bottleneck classification names the mechanism the physics says: a Llama decode step streams
every weight once per token, so it is bound by DRAM bandwidth at low utilisation ("memory"), while a
BERT prefill on a large array with ample bandwidth is bound by the array ("compute").

Independent reference: the roofline. The array runs at 600 MHz, within the 7 nm fmax of a
pipeline-1 32 x 32 array (about 760 MHz). Machine balance = peak ops / DRAM bandwidth; a workload whose
ops per DRAM byte lie below it is memory bound whatever its stall fraction."""

from __future__ import annotations

import tomllib
from types import SimpleNamespace

import pandas as pd

import explore.evaluator as ev
from explore.config import parse_config
from explore.report.bottleneck import best_bottleneck
from explore.results import Detail

CONFIG = """
[space]
rows = [32]
cols = [32]
sram_kb = [1024]
clock_mhz = [600]
node_nm = [7]
sparsity = ["2:4"]
pipeline = [1]
dataflow = ["ws"]
dram = ["hbm2"]
[fixed]
dram_units = { hbm2 = 1 }
[[workload]]
name = "WL"
params = PARAMS
[limits]
"""


def _classify(workload: str, params: str) -> tuple[str, list[str], dict]:
    cfg = parse_config(
        tomllib.loads(CONFIG.replace("WL", workload).replace("PARAMS", params)), source="b.toml"
    )
    point = dict(
        rows=32,
        cols=32,
        sram_kb=1024,
        clock_mhz=600,
        node_nm=7,
        sparsity="2:4",
        pipeline=1,
        dataflow="ws",
        dram="hbm2",
    )
    m = ev.evaluate(point, ev.make_context(cfg))
    det = Detail(point=point, metrics=m)
    mech, evidence = best_bottleneck(SimpleNamespace(cfg=cfg), det, pd.DataFrame())
    return mech, evidence, m


def test_llama_decode_is_weight_streaming_not_compute():
    mech, evidence, m = _classify("llama2-7b-decode", "{ context = 512, batch = 1 }")
    assert m["utilization"] < 0.1  # a GEMV step: most PEs idle
    intensity = m["effective_tops"] * 1e12 * m["latency_ms"] * 1e-3 / m["dram_bytes"]
    balance = m["peak_tops"] * 1e12 / (m["dram_gbps"] * 1e9)
    assert intensity < 0.2 * balance  # deep under the roof (hand check of the roofline)
    assert mech == "memory", evidence
    assert any("weight streaming" in e and "roofline" in e for e in evidence)


def test_bert_prefill_with_ample_bandwidth_is_not_memory_bound():
    mech, evidence, m = _classify("bert-base", "{ seq = 128, batch = 1 }")
    intensity = m["effective_tops"] * 1e12 * m["latency_ms"] * 1e-3 / m["dram_bytes"]
    balance = m["peak_tops"] * 1e12 / (m["dram_gbps"] * 1e9)
    assert intensity > balance
    assert mech != "memory", evidence
