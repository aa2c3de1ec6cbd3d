"""The vector unit in the cycle model: BERT-base's non-GEMM operators counted by hand, the effect on
the effective speedup, the lanes axis and the overlap option."""

import dataclasses
import math

import numpy as np
import pytest

from hw.errors import InputError
from sim.perf import ArrayConfig, simulate, simulate_grid
from sim.vector import FALLBACK_RULE, make_op
from sim.workloads import Workload, get_workload, make_layer


def _bert_vector_cycles_by_hand(lanes=32, port=128):
    """BERT-base, seq 128, batch 1 (bert-base-uncased: post-LN, GELU tanh form, biases, 512 positions,
    2 token types). Per op: max(arithmetic / lanes at rates alu 1, exp 1/4, div 1/4, reduction 1
    (+ log2(lanes) tree), (read + write) bytes / port)."""
    T, d, f, h, S, L = 128, 768, 3072, 12, 128, 12
    tok, ffn, sc, qkv = T * d, T * f, h * S * S, T * 3 * d
    tree = math.ceil(math.log2(lanes))

    def ew(E, reads=1, alu=1, exp=0, div=0):
        return max(math.ceil(E * (alu + 4 * exp + 4 * div) / lanes), math.ceil((reads + 1) * E / port))

    def norm(E, row):  # LayerNorm: 5 ALU + 2 reduction steps per element, one rsqrt per row
        return max(math.ceil((7 * E) / lanes + (E // row) * 4 / lanes + tree), math.ceil(2 * E / port))

    def softmax(E, row):  # 2 ALU, 1 exp, 2 reduction steps per element, 1 reciprocal per row
        return max(
            math.ceil((4 * E + 4 * E) / lanes + (E // row) * 4 / lanes + tree), math.ceil(2 * E / port)
        )

    gather = math.ceil((T + tok) / port)  # indices in, rows out
    embed = 3 * gather + 2 * ew(tok, reads=2) + norm(tok, d)
    block = (
        ew(qkv)
        + 2 * ew(sc)
        + softmax(sc, S)
        + ew(tok)
        + ew(tok, reads=2)
        + norm(tok, d)
        + ew(ffn)
        + ew(ffn, alu=8, exp=1, div=1)
        + ew(tok)
        + ew(tok, reads=2)
        + norm(tok, d)
    )
    return embed + L * block + ew(T * 2)


def test_bert_base_vector_cycles_equal_a_hand_count():
    w = get_workload("bert-base", seq=128)
    r = simulate(w, ArrayConfig(dram_gbps=1e6))
    assert r.totals["vector_cycles"] == _bert_vector_cycles_by_hand()


def test_vector_time_lowers_effective_speedup_on_bert_base():
    w = get_workload("bert-base", seq=128)
    gemm_only = dataclasses.replace(w, vector_ops=())
    before = simulate(gemm_only, ArrayConfig())
    after = simulate(w, ArrayConfig())
    # the array's work is unchanged; the vector unit's time is the same in the dense and sparse runs
    assert after.totals["array_cycles"] == before.total_cycles
    assert np.array_equal(after.layers["cycles"], before.layers["cycles"])
    v = after.totals["vector_cycles"]
    assert after.total_cycles == before.total_cycles + v
    assert after.totals["dense_total_cycles"] == before.totals["dense_total_cycles"] + v
    assert 0.1 < after.totals["vector_fraction"] < 0.9
    assert after.effective_speedup < before.effective_speedup
    assert after.effective_speedup <= after.totals["ideal_speedup"] < before.totals["ideal_speedup"] <= 2.0


def test_lanes_axis_and_overlap_option():
    w = get_workload("bert-base", seq=64)
    g = simulate_grid(w, {"vector_lanes": np.array([8, 32, 128])})
    assert np.all(np.diff(g["vector_cycles"]) < 0) and np.all(np.diff(g["effective_speedup"]) > 0)
    for i, lanes in enumerate((8, 32, 128)):
        r = simulate(w, ArrayConfig(vector_lanes=lanes))
        assert g["total_cycles"][i] == r.total_cycles and g["vector_cycles"][i] == r.totals["vector_cycles"]
    ser = simulate(w, ArrayConfig())
    ov = simulate(w, ArrayConfig(vector_overlap=True))
    t = ser.totals
    assert ov.total_cycles == max(t["array_cycles"], t["vector_cycles"]) < ser.total_cycles
    with pytest.raises(InputError, match="vector_lanes"):
        ArrayConfig(vector_lanes=0)


def test_unknown_operator_is_unsupported_and_costed_by_the_fallback_rule():
    op = make_op("x", "FancyOp", (4, 64), [(4, 64), (4, 64)])
    assert not op.supported and FALLBACK_RULE in op.reason
    assert op.alu == 256 and op.read == 512 and op.write == 256
    w = Workload(
        "t", (make_layer("g", "gemm", 4, 64, 64),), (op, make_op("r", "Reshape", (4, 64), [(4, 64)]))
    )
    r = simulate(w, ArrayConfig(vector_lanes=16, dram_gbps=1e6))
    assert [o["op_type"] for o in r.to_dict()["unsupported_ops"]] == ["FancyOp"]
    # 256 ALU ops / 16 lanes = 16 cycles; (512 + 256) bytes / 128 B per cycle = 6
    assert int(r.vector["vector_op_cycles"][0]) == 16
    # the reshape moves 2 x 256 bytes at 128 B/cycle: 4 cycles, no arithmetic, not a stall
    assert int(r.vector["vector_op_cycles"][1]) == 4 and r.totals["vector_stall_cycles"] == 0


def test_every_built_in_workload_accounts_for_non_gemm_operators():
    from sim.workloads import list_workloads

    for name in list_workloads():
        w = get_workload(name)
        assert w.vector_ops, name
        r = simulate(w, ArrayConfig())
        assert r.totals["vector_cycles"] > 0 and r.weight_params > 0, name
