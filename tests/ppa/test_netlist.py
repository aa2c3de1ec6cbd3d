"""Bit-parallel gate simulation against independent references: a hand-written netlist with a
Python model, Yosys-mapped operators against integer arithmetic, and the synthesised PE against
the golden model in hw/golden.py."""

import numpy as np
import pytest

from hw.errors import InputError
from ppa.netlist import GateNetlist


def _cell(t, conns, dirs):
    return {"type": t, "connections": conns, "port_directions": dirs}


def _toy():
    # y = ~((a & b) | c) (AOI3), q <= a ^ y (XOR + DFF); bits: clk 2, a 3, b 4, c 5, y 6, x 7, q 8
    io2 = {"A": "input", "B": "input", "Y": "output"}
    return {
        "modules": {
            "toy": {
                "ports": {
                    "clk": {"direction": "input", "bits": [2]},
                    "a": {"direction": "input", "bits": [3]},
                    "b": {"direction": "input", "bits": [4]},
                    "c": {"direction": "input", "bits": [5]},
                    "y": {"direction": "output", "bits": [6]},
                    "q": {"direction": "output", "bits": [8]},
                },
                "cells": {
                    "g1": _cell(
                        "$_AOI3_",
                        {"A": [3], "B": [4], "C": [5], "Y": [6]},
                        {"A": "input", "B": "input", "C": "input", "Y": "output"},
                    ),
                    "g2": _cell("$_XOR_", {"A": [3], "B": [6], "Y": [7]}, io2),
                    "ff": _cell(
                        "$_DFF_P_",
                        {"C": [2], "D": [7], "Q": [8]},
                        {"C": "input", "D": "input", "Q": "output"},
                    ),
                },
                "netnames": {"a": {"bits": [3]}, "y": {"bits": [6]}, "x": {"bits": [7]}, "q": {"bits": [8]}},
            }
        }
    }


def test_toy_netlist_values_and_toggles_against_python_model():
    rng = np.random.default_rng(0)
    T, n_inst = 50, 128
    a, b, c = (rng.integers(0, 2, (T, n_inst)) for _ in range(3))
    net = GateNetlist(_toy(), "toy")
    tc, out = net.simulate({"a": a, "b": b, "c": c}, outputs=("y", "q"))
    # reference, one instance at a time, in plain Python
    exp_toggles = 0
    for i in range(n_inst):
        q = y_prev = x_prev = q_prev = 0
        x = 0
        for t in range(T):
            q = x  # clock edge: q takes the x settled in the previous cycle (0 before cycle 0)
            y = 1 - ((a[t, i] & b[t, i]) | c[t, i])
            x = a[t, i] ^ y
            assert out["y"][t, i] == y and out["q"][t, i] == q
            exp_toggles += int(y != y_prev) + int(x != x_prev) + int(q != q_prev)
            y_prev, x_prev, q_prev = y, x, q
    assert tc.circuit_toggles == exp_toggles
    assert tc.ff_output_toggles + tc.gate_output_toggles == exp_toggles


def test_constant_inputs_do_not_toggle_after_settling():
    T, n_inst = 20, 64
    ones = np.ones((T, n_inst), dtype=np.int64)
    net = GateNetlist(_toy(), "toy")
    tc_all, _ = net.simulate({"a": ones, "b": ones, "c": ones * 0})
    tc_late, _ = net.simulate({"a": ones, "b": ones, "c": ones * 0}, count_from=3)
    assert tc_late.circuit_toggles == 0 < tc_all.circuit_toggles


def test_bad_inputs():
    net = GateNetlist(_toy(), "toy")
    with pytest.raises(InputError, match="multiple of 64"):
        net.simulate({"a": np.zeros((3, 10))})
    with pytest.raises(InputError, match="no data input port"):
        net.simulate({"zz": np.zeros((3, 64))})


@pytest.mark.yosys
@pytest.mark.parametrize("kind,width", [("add", 8), ("mul", 8), ("add", 32), ("mul", 16)])
def test_mapped_operators_compute_the_right_function(kind, width, synth_cache):
    from ppa.operators import operator_verilog
    from ppa.synth import synthesize

    v, top = operator_verilog(kind, width)
    res = synthesize(v, top, cache=synth_cache)
    rng = np.random.default_rng(width)
    a = rng.integers(0, 1 << width, (8, 64), dtype=np.uint64)
    b = rng.integers(0, 1 << width, (8, 64), dtype=np.uint64)
    _, out = GateNetlist(res.netlist(), top).simulate({"a": a, "b": b}, outputs=("y",))
    exp = a + b if kind == "add" else a * b
    assert np.array_equal(out["y"], exp)


@pytest.mark.yosys
@pytest.mark.parametrize("sparse", [True, False])
def test_gate_level_pe_matches_golden_model(sparse, synth_cache):
    from hw.golden import dense_pe_reference, pe_reference
    from hw.params import PEParams
    from ppa.activity import simulate_pe, synthetic_trace

    p = PEParams()
    tr = synthetic_trace(p, sparse, cycles=40, instances=64, kind="random", seed=3)
    _, out, _ = simulate_pe(p, sparse, tr, cache=synth_cache, outputs=("out_acc",))
    for i in (0, 17, 63):
        if sparse:
            acc, _ = pe_reference(tr.acts[:, i], tr.weights[:, i], tr.meta[:, i], tr.clear[:, i], p)
        else:
            acc, _ = dense_pe_reference(tr.acts[:, i], tr.weights[:, i], tr.clear[:, i], p)
        got = out["out_acc"][:, i].astype(np.int64)
        got = np.where(got >= 1 << 31, got - (1 << 32), got)
        assert np.array_equal(got[1:], acc[:-1])  # pipeline 1: visible one cycle after the group
