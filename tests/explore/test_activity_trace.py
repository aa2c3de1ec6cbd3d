"""fixed.activity_trace = "reference": the energy figures use real pruned data.

The sparse PE's trace must be the reference MLP's ASP-pruned int8 weights with metadata that
hw.golden decodes back to those weights, and its real activations; the dense PE's trace the dense
baseline model. The evaluator's dynamic power must come from that trace, not the synthetic one.
"""

from __future__ import annotations

import numpy as np
import pytest

import explore.evaluator as ev
from explore.config import parse_config
from explore.space import dense_twin_sparsity
from hw.golden import decode_meta, pe_reference
from hw.params import PEParams
from sim.quality.reference import analytic_latency_fn, reference_experiment
from sim.quality.traces import reference_pe_stream

CONFIG = """
[study]
name = "trace"
seed = 0
[space]
rows = [8]
cols = [8]
sram_kb = [256]
clock_mhz = [800.0]
node_nm = [7]
sparsity = ["2:4", "dense"]
pipeline = [1]
dataflow = ["ws"]
dram = ["lpddr5"]
[fixed]
ambient_c = 45.0
dram_units = { lpddr5 = 4 }
activity_trace = "TRACE"
[[workload]]
name = "bert-base"
weight = 1.0
params = { seq = 64, batch = 1 }
[objectives]
primary = "perf_per_watt"
"""


@pytest.fixture(scope="module")
def result():
    return reference_experiment(0, 2, 4, latency_fn=analytic_latency_fn(16, 16, 2, 4))


def test_sparse_stream_is_real_pruned_data(result):
    acts, w, meta, clear = reference_pe_stream(result, sparse=True)
    assert acts.shape[1] == 4 and w.shape[1] == 2 and meta.shape == (len(acts),)
    assert all(decode_meta(int(c))[1] for c in np.unique(meta))  # every code legal
    assert np.count_nonzero(acts) > 0.2 * acts.size  # real post-ReLU activations, not zeros
    # The golden PE on the stream (a clear once per dot product) gives the running partial sum,
    # which equals an independent running sum of the selected activations' products.
    acc, err = pe_reference(acts[:500], w[:500], meta[:500], clear[:500], PEParams())
    idx = np.array([decode_meta(int(c))[0] for c in meta[:500]])
    prod = (np.take_along_axis(acts[:500], idx, axis=1) * w[:500]).sum(axis=1)
    start = np.maximum.accumulate(np.where(clear[:500], np.arange(500), 0))
    csum = np.cumsum(prod)
    ref = csum - np.where(start > 0, csum[start - 1], 0)
    np.testing.assert_array_equal(acc, ref)
    assert 0 < clear[:500].sum() < 100                # not every cycle
    assert not err.any()


def test_dense_stream_is_the_dense_baseline(result):
    acts, w, meta, _ = reference_pe_stream(result, sparse=False)
    assert meta is None and w.shape[1] == 4
    # dense weights: no 2:4 structure imposed (some group keeps more than 2 nonzeros)
    assert (np.count_nonzero(w, axis=1) > 2).any()


def test_evaluator_energy_uses_the_reference_trace():
    point = dict(rows=8, cols=8, sram_kb=256, clock_mhz=800.0, node_nm=7, sparsity="2:4", pipeline=1,
                 dataflow="ws", dram="lpddr5")
    out = {}
    for trace in ("synthetic", "reference"):
        cfg = parse_config(__import__("tomllib").loads(CONFIG.replace("TRACE", trace)), source=f"<{trace}>")
        ctx = ev.make_context(cfg)
        out[trace] = ev.evaluate(point, ctx)
        # the 2:4 PE's trace; the dense twins (explore.twins, costed after the trials by the same
        # method) take the dense PE's trace, built when a dense design is costed
        assert {k[2] for k in ctx.traces} == ({True} if trace == "reference" else set())
        ev.evaluate({**point, "sparsity": dense_twin_sparsity(point["sparsity"])}, ctx)
        assert {k[2] for k in ctx.traces} == ({True, False} if trace == "reference" else set())
    assert out["reference"]["power_dynamic_w"] != out["synthetic"]["power_dynamic_w"]
    # everything that does not depend on the data is unchanged
    for k in ("area_mm2", "latency_ms", "stall_fraction", "power_dram_w"):
        assert out["reference"][k] == out["synthetic"][k]
