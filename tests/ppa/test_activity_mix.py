"""A sparse design's PE on its N:M layers and its dense layers (ppa.activity TraceMix): the
PE-cycle shares and the mixed activity against hand computations; the dense layers' traces (the
sparse PE's fallback, the dense path's dense mode) against the golden dense dot product."""

from __future__ import annotations

import numpy as np
import pytest

from hw.errors import InputError
from hw.golden import pe_reference
from hw.params import PEParams
from ppa.activity import (
    PEActivity,
    TraceMix,
    TraceRecipe,
    dense_groups_trace,
    mix_activities,
    pe_activity,
    pe_cycle_shares,
    simulate_pe,
    trace_label,
)


def test_pe_cycle_shares_by_hand():
    p = PEParams()  # 2:4
    # sparse PE: N:M layers 4 MACs a cycle, dense groups 2 (a group of 4 takes 2 cycles)
    # 400 MACs -> 100 cycles, 100 MACs -> 50 cycles
    assert pe_cycle_shares(p, 400.0, 100.0, False) == pytest.approx((100 / 150, 50 / 150))
    # dense path: N:M mode 8 MACs a cycle, dense mode 4: 50 and 25 cycles
    assert pe_cycle_shares(p, 400.0, 100.0, True) == pytest.approx((50 / 75, 25 / 75))
    q = PEParams(n=1, m=4)  # 1:4: fallback 1 MAC a cycle (4 cycles a group)
    assert pe_cycle_shares(q, 400.0, 100.0, False) == pytest.approx((100 / 200, 100 / 200))
    assert pe_cycle_shares(p, 400.0, 0.0, False) == (1.0, 0.0)


def _act(g, f, a, w, ge=0.0, fe=0.0):
    return PEActivity(g, f, a, 100, 5000, 12, 300, "t", w, ge, fe)


def test_mix_is_the_share_weighted_mean_by_hand():
    a, b = _act(300.0, 40.0, 10.0, 2.0, 330.0, 12.0), _act(100.0, 20.0, 30.0, 8.0, 90.0, 6.0)
    mix = mix_activities([(a, 3.0), (b, 1.0)], label="x")
    assert mix.gate_toggles == pytest.approx(0.75 * 300 + 0.25 * 100)
    assert mix.ff_toggles == pytest.approx(0.75 * 40 + 0.25 * 20)
    assert mix.act_input_toggles == pytest.approx(0.75 * 10 + 0.25 * 30)
    assert mix.w_input_toggles == pytest.approx(0.75 * 2 + 0.25 * 8)
    assert (mix.gate_energy, mix.ff_net_energy) == pytest.approx(
        (0.75 * 330 + 0.25 * 90, 0.75 * 12 + 0.25 * 6)
    )
    assert (mix.flip_flops, mix.transistors, mix.trace) == (100, 5000, "x")
    with pytest.raises(InputError, match="one netlist"):
        mix_activities([(a, 1.0), (PEActivity(1, 1, 1, 99, 5000, 12, 300, "t", 1, 1, 1), 1.0)])
    with pytest.raises(InputError, match="positive share"):
        mix_activities([(a, 0.0)])


def _dense_groups(rng, t=512 * 3):
    acts = np.maximum(rng.integers(-128, 128, (t, 4)), 0)
    w = rng.integers(-127, 128, (t, 4))
    clear = (np.arange(t) % 3 == 0).astype(np.int64)  # dot products of 3 groups
    return acts, w, clear


def _dot_products(acts, w, clear):
    prod = (acts * w).sum(axis=1)
    starts = np.flatnonzero(clear)
    return np.add.reduceat(prod, starts)


def test_fallback_trace_computes_the_dense_dot_products():
    p = PEParams()
    acts, w, clear = _dense_groups(np.random.default_rng(4))
    tr = dense_groups_trace(p, True, acts, w, clear, instances=64, label="fb")
    assert tr.weights.shape[-1] == 2 and tr.meta is not None and tr.label == "fb"
    lane = 5  # lane i holds cycles [i L, (i+1) L) of the fallback stream
    a, ww, m, c = tr.acts[:, lane], tr.weights[:, lane], tr.meta[:, lane], tr.clear[:, lane]
    acc, err = pe_reference(a, ww, m, c, p)
    ends = np.r_[np.flatnonzero(c)[1:] - 1, len(c) - 1]
    L = tr.cycles // 2  # dense groups per lane (each became 2 sparse groups)
    ref = _dot_products(
        acts[lane * L : (lane + 1) * L], w[lane * L : (lane + 1) * L], clear[lane * L : (lane + 1) * L]
    )
    np.testing.assert_array_equal(acc[ends], ref)
    assert not err.any()


@pytest.mark.yosys
def test_dense_mode_trace_on_the_dense_path_netlist(synth_cache):
    p = PEParams()
    acts, w, clear = _dense_groups(np.random.default_rng(5), t=64 * 30)
    tr = dense_groups_trace(p, True, acts, w, clear, dense_path=True, instances=64)
    assert tr.acts.shape[-1] == 8 and tr.dense.all() and not tr.acts[..., 4:].any()
    _, out, _ = simulate_pe(p, True, tr, cache=synth_cache, outputs=("out_acc",), dense_path=True)
    for i in (0, 33, 63):
        got = out["out_acc"][:, i].astype(np.int64)
        got = np.where(got >= 1 << 31, got - (1 << 32), got)[1:]  # pipeline 1: one cycle later
        c = tr.clear[:, i]
        ends = np.r_[np.flatnonzero(c)[1:] - 1, len(c) - 1][:-1]
        ref = _dot_products(tr.acts[:, i, :4], tr.weights[:, i], c)[:-1]
        np.testing.assert_array_equal(got[ends], ref)


@pytest.mark.yosys
def test_pe_activity_of_a_mix_is_the_mix_of_its_parts(tmp_path):
    # a fresh cache: the recipe must be built (once) here, not found from an earlier run
    synth_cache = tmp_path / "synth"
    p = PEParams()
    rng = np.random.default_rng(6)
    acts, w, clear = _dense_groups(rng, t=64 * 16)
    fb = dense_groups_trace(p, True, acts, w, clear, instances=64, label="fallback")
    built = []
    sp = TraceRecipe(
        "test-sparse-part",
        "sparse part",
        lambda: (
            built.append(1) or dense_groups_trace(p, True, np.maximum(acts[::-1], 0), w, clear, instances=64)
        ),
    )
    mix = TraceMix(sp, fb, 600.0, 100.0, label="mixed")
    got = pe_activity(p, True, mix, cache=synth_cache)
    a_s, a_f = pe_activity(p, True, sp, cache=synth_cache), pe_activity(p, True, fb, cache=synth_cache)
    ws, wf = 600 / 4, 100 / 2  # PE-cycles: N:M layers 4 MACs a cycle, fallback 2
    assert got.gate_toggles == pytest.approx((ws * a_s.gate_toggles + wf * a_f.gate_toggles) / (ws + wf))
    assert got.ff_toggles == pytest.approx((ws * a_s.ff_toggles + wf * a_f.ff_toggles) / (ws + wf))
    assert a_s.gate_toggles != a_f.gate_toggles
    assert built == [1]  # the recipe was built once, when first simulated
    assert trace_label(mix) == "mixed" and got.trace == "mixed"
