"""The PE-kind registry (hw.kinds): one contract run over every registered kind, and a toy kind that
follows docs/design.md's recipe ("Extending sparsepe": a PE kind) through hw, ppa and sim.

The contract: a kind's RTL declares the operand counts its row states (weights, metadata codes,
activations, the dense-mode bit), its golden model reproduces the RTL's outputs on random streams
with illegal codes and clears, its array is named and shaped as the row says, and ppa and sim read
the same counts."""

from __future__ import annotations

import numpy as np
import pytest

from hw.array import SparseArray
from hw.errors import InputError
from hw.golden import compress_nm, gemm_nm, legal_codes
from hw.kinds import PE_KINDS, PEKind, kind_names, kind_of, pe_kind, register_pe_kind, unregister_pe_kind
from hw.params import PEParams
from hw.simulate import run_array_os, run_array_ws, run_pe
from ppa import array_cost, rtl
from sim.array_config import ArrayConfig, grid_design_arrays

PARAMS = [PEParams(), PEParams(n=1, m=4, act_bits=4, weight_bits=4, acc_bits=16, pipeline=2)]
SHIPPED = ("sparse", "dense", "dense_path")


def test_shipped_kinds_in_order_and_lookups():
    assert kind_names()[:3] == SHIPPED
    assert [kind_of(s, d).name for s, d in ((True, False), (False, False), (True, True))] == list(SHIPPED)
    with pytest.raises(InputError, match="dense path is a mode of the sparse PE"):
        kind_of(False, True)
    with pytest.raises(InputError, match="must be one of sparse, dense, dense_path"):
        pe_kind("tpu")


def _stream(spec: PEKind, p: PEParams, t: int, rng):
    """Random inputs for one PE of ``spec``: activations, weights, codes (some illegal when N > 1),
    clears, the dense-mode bit; in the shapes hw.simulate.run_pe and the golden model take."""
    g = spec.groups(p.n, p.m)
    lo_a, hi_a = -(1 << (p.act_bits - 1)), 1 << (p.act_bits - 1)
    lo_w, hi_w = -(1 << (p.weight_bits - 1)), 1 << (p.weight_bits - 1)
    acts = rng.integers(lo_a, hi_a, (t, spec.acts(p.n, p.m)))
    weights = rng.integers(lo_w, hi_w, (t, spec.weights(p.n, p.m)))
    metas = rng.integers(0, 1 << p.meta_bits, (t, g)) if g else None
    if metas is not None and g == 1:
        metas = metas[:, 0]
    clears = rng.random(t) < 0.2
    clears[0] = True
    dense = (rng.random(t) < 0.5) if spec.dense_mode else None
    return acts, weights, metas, clears, dense


@pytest.mark.parametrize("name", SHIPPED)
@pytest.mark.parametrize("p", PARAMS, ids=["int8-2of4", "int4-1of4-p2"])
def test_contract_rtl_golden_array_and_rates(name, p):
    spec = PE_KINDS[name]
    w, g, a = spec.weights(p.n, p.m), spec.groups(p.n, p.m), spec.acts(p.n, p.m)
    # the RTL declares the row's operand counts
    pe = spec.build(p)
    assert len(pe.in_w.as_value()) == w * p.weight_bits
    assert len(pe.in_act.as_value()) == a * p.act_bits
    assert hasattr(pe, "in_meta") == bool(g)
    if g:
        assert len(pe.in_meta) == g * p.meta_bits
    assert hasattr(pe, "in_dense") == spec.dense_mode
    # the golden model is what the RTL computes, illegal codes and clears included
    rng = np.random.default_rng(7)
    acts, weights, metas, clears, dense = _stream(spec, p, 40, rng)
    run = run_pe(pe, acts, weights, metas, clears, dense=dense)
    acc, err = spec.golden(acts, weights, metas, clears, p, dense=dense)
    signed = np.where(run.acc >= 1 << (p.acc_bits - 1), run.acc - (1 << p.acc_bits), run.acc)
    assert signed.tolist() == acc.tolist() and run.err.tolist() == err.tolist()
    # the array is the row's: its module and its cell's operands
    for dataflow in ("ws", "os"):
        arr = SparseArray(2, 2, p, dataflow=dataflow, kind=name)
        arr._MustUse__silence = True  # port and name checks only, never elaborated
        assert arr.module_name == spec.array_module == rtl.array_module(name)
        assert (arr.w_lanes, arr.meta_groups, arr.act_lanes) == (w, g, a)
    sh = array_cost.array_shape(p, name)
    assert (sh.w_lanes, sh.meta_groups, sh.act_lanes, sh.mode_bit) == (w, g, a, int(spec.dense_mode))
    # ppa names the standalone PE and sim runs it at the row's rate
    assert rtl.pe_name(spec.sparse, spec.dense_mode) == spec.pe_module
    cfg = ArrayConfig(n=p.n, m=p.m, sparse=spec.sparse, dense_path=spec.dense_mode)
    assert cfg.effective_pe_k == w
    d, _ = grid_design_arrays(
        {"sparse": [spec.sparse], "dense_path": [spec.dense_mode], "n": [p.n], "m": [p.m]}
    )
    assert d["pe_k"].ravel().tolist() == [w]


def test_grid_rates_of_a_mixed_grid():
    """simulate_grid's vectorised rate picks each point's kind: N, M, M (2:4 sparse, dense,
    dense path) and 1, 4 for 1:4 sparse and dense."""
    d, _ = grid_design_arrays(
        {
            "sparse": [True, False, True, True, False],
            "dense_path": [False, False, True, False, False],
            "n": [2, 2, 2, 1, 1],
            "m": [4, 4, 4, 4, 4],
        }
    )
    assert d["pe_k"].ravel().tolist() == [2, 4, 4, 1, 4]


def test_registration_refuses_a_taken_name_or_module_and_a_dense_mode_without_sparsity():
    base = PE_KINDS["sparse"]
    for clash in (
        {"name": "sparse"},
        {"name": "x", "pe_module": "dense_pe"},
        {"name": "x", "pe_module": "x_pe", "array_module": "sparse_array_dp"},
    ):
        row = PEKind(**{**base.__dict__, "pe_module": "x_pe", "array_module": "x_array", **clash})
        with pytest.raises(InputError, match="already a registered"):
            register_pe_kind(row)
    with pytest.raises(InputError, match="mode of a sparse PE"):
        register_pe_kind(
            PEKind(
                **{
                    **base.__dict__,
                    "name": "y",
                    "pe_module": "y_pe",
                    "array_module": "y_array",
                    "sparse": False,
                    "dense_mode": True,
                }
            )
        )
    with pytest.raises(InputError, match="shipped"):
        unregister_pe_kind("dense")
    assert kind_names()[:3] == SHIPPED and "x" not in PE_KINDS and "y" not in PE_KINDS


@pytest.fixture
def two_group_kind():
    """The recipe's toy: a sparse PE taking two N:M groups a step (2N multipliers, two decoders,
    2M activations) without a dense mode, registered as one row."""
    base = PE_KINDS["sparse"]
    row = PEKind(
        **{
            **base.__dict__,
            "name": "sparse_x2",
            "summary": "two N:M groups a step",
            "pe_module": "sparse_pe_x2",
            "array_module": "sparse_array_x2",
            "weights": lambda n, m: 2 * n,
            "groups": lambda n, m: 2,
            "acts": lambda n, m: 2 * m,
        }
    )
    register_pe_kind(row)
    yield row
    unregister_pe_kind(row.name)
    assert "sparse_x2" not in PE_KINDS


@pytest.mark.parametrize("dataflow", ["ws", "os"])
def test_toy_kind_is_one_row_through_hw_ppa_and_sim(two_group_kind, dataflow):
    p = PEParams()
    rows, cols, t = 3, 2, 5
    k = rows * two_group_kind.acts(p.n, p.m) if dataflow == "ws" else 4 * two_group_kind.acts(p.n, p.m)
    rng = np.random.default_rng(11)
    dense = rng.integers(-128, 128, (cols if dataflow == "ws" else rows, k))
    values, meta = compress_nm(dense, p.n, p.m)
    assert set(np.unique(meta)) <= set(legal_codes(p.n, p.m))
    x = rng.integers(-128, 128, (k, t if dataflow == "ws" else cols))
    arr = SparseArray(rows, cols, p, dataflow=dataflow, kind="sparse_x2")
    assert arr.module_name == "sparse_array_x2" and arr.k_per_step == 8
    run = (run_array_ws if dataflow == "ws" else run_array_os)(arr, values, meta, x)
    assert run.out.tolist() == gemm_nm(values, meta, x, p.n, p.m, p.acc_bits).tolist()
    # ppa reads the same row: the cost model's cell shape and the array's Verilog module
    sh = array_cost.array_shape(p, "sparse_x2")
    assert (sh.w_lanes, sh.meta_groups, sh.act_lanes, sh.multipliers) == (4, 2, 8, 4)
    array_cost.check_kind("sparse_x2", dataflow)
    assert rtl.array_module("sparse_x2", False) == "sparse_array_x2"
    assert "module sparse_array_x2" in rtl.array_verilog(p, 2, 2, "sparse_x2", dataflow)
    # the design flags keep naming the shipped kind; the toy is reached by its name
    assert kind_of(True, False).name == "sparse"
