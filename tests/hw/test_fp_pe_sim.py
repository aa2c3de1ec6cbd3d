"""Amaranth simulation of the float PEs (SparsePE, DensePE, dense-path PE) against hw.fp_golden on
random, extreme and special-value vectors (NaN, inf, subnormals, overflow, cancellation)."""

from __future__ import annotations

import numpy as np
import pytest

from hw.errors import InputError
from hw.fp_golden import fp_dense_path_pe_reference, fp_dense_pe_reference, fp_pe_reference
from hw.golden import legal_codes
from hw.params import PEParams
from hw.pe import DensePE, SparsePE
from hw.simulate import run_pe
from tests.hw.fp_vectors import big_band, operands, specials

FLOATS = ("fp8-e4m3", "fp8-e5m2", "fp16", "bf16")


def _stream(rng, p: PEParams, t: int, a_lanes: int, w_lanes: int):
    acts = operands(rng, p.precision, (t, a_lanes))
    w = operands(rng, p.precision, (t, w_lanes))
    edge = rng.random(t) < 0.3  # overflow / underflow rows
    acts[edge] = big_band(rng, p.precision, acts[edge].shape)
    w[edge] = big_band(rng, p.precision, w[edge].shape)
    # cancellation: a row whose second product is minus the first
    k = t // 3
    acts[k, :2] = acts[k, 0]
    w[k, 1] = w[k, 0] ^ (1 << (p.weight_bits - 1))
    clears = rng.random(t) < 0.2
    clears[0] = True
    valid = rng.random(t) < 0.9
    return acts, w, clears, valid


@pytest.mark.parametrize("precision", FLOATS)
@pytest.mark.parametrize("pipeline", [1, 2, 3])
def test_sparse_fp_pe_matches_golden(precision, pipeline):
    rng = np.random.default_rng(100 + pipeline + 10 * FLOATS.index(precision))
    p = PEParams(precision=precision, pipeline=pipeline)
    t = 90
    acts, w, clears, valid = _stream(rng, p, t, p.m, p.n)
    metas = rng.choice(legal_codes(), size=t)
    metas[rng.random(t) < 0.1] = 0b0101  # illegal: the group adds nothing
    metas[t // 3] = 0b0100  # (0, 1): the cancellation row
    run = run_pe(SparsePE(p), acts, w, metas, clears, valid)
    acc, err = fp_pe_reference(acts, w, metas, clears, p, valid)
    assert run.acc.tolist() == acc.tolist()
    assert run.err.astype(bool).tolist() == err.tolist()
    assert (run.in_cycle + p.latency - 1 == run.out_cycle).all()


@pytest.mark.parametrize("precision", FLOATS)
def test_specials_exhaustive_products_through_pe(precision):
    """Every pair of special / extreme operands through the sparse PE, each from a cleared
    accumulator and then added to a running sum (so inf - inf, NaN propagation occur)."""
    p = PEParams(precision=precision)
    sp = specials(precision)
    a, b = (x.reshape(-1) for x in np.meshgrid(sp, sp))
    t = len(a)
    acts = np.zeros((t, 4), dtype=np.int64)
    acts[:, 0], acts[:, 1] = a, b
    w = np.stack([b, a], axis=1)
    clears = (np.arange(t) % 3) == 0
    metas = np.full(t, 0b0100)
    run = run_pe(SparsePE(p), acts, w, metas, clears)
    acc, _ = fp_pe_reference(acts, w, metas, clears, p)
    assert run.acc.tolist() == acc.tolist()
    assert 0x7FC00000 in acc.tolist()


@pytest.mark.parametrize("precision", ["fp8-e4m3", "bf16"])
def test_dense_fp_pe_matches_golden(precision):
    rng = np.random.default_rng(7)
    p = PEParams(precision=precision, pipeline=2)
    acts, w, clears, valid = _stream(rng, p, 60, p.m, p.m)
    run = run_pe(DensePE(p), acts, w, None, clears, valid)
    acc, _ = fp_dense_pe_reference(acts, w, clears, p, valid)
    assert run.acc.tolist() == acc.tolist() and not run.err.any()


@pytest.mark.parametrize("precision", ["fp8-e5m2", "bf16"])
def test_dense_path_fp_pe_matches_golden(precision):
    rng = np.random.default_rng(9)
    p = PEParams(precision=precision)
    t = 60
    acts, w, clears, valid = _stream(rng, p, t, 2 * p.m, p.m)
    metas = rng.choice(legal_codes(), size=(t, 2))
    metas[rng.random((t, 2)) < 0.1] = 0b1111
    dense = rng.random(t) < 0.4
    run = run_pe(SparsePE(p, dense_path=True), acts, w, metas, clears, valid, dense=dense)
    acc, err = fp_dense_path_pe_reference(acts, w, metas, dense, clears, p, valid)
    assert run.acc.tolist() == acc.tolist()
    assert run.err.astype(bool).tolist() == err.tolist()


def test_fp_ports_and_params():
    p = PEParams(precision="bf16")
    pe, pe8 = SparsePE(p), SparsePE(PEParams(precision="fp8-e4m3"))
    pe._MustUse__silence = pe8._MustUse__silence = True  # port checks only, never elaborated
    assert (p.act_bits, p.weight_bits, p.acc_bits) == (16, 16, 32)
    assert pe.in_act.shape().size == 4 * 16 and pe.in_w.shape().size == 2 * 16 and len(pe.out_acc) == 32
    assert pe8.in_act.shape().size == 32
    assert PEParams(precision="int4").act_bits == 4
    with pytest.raises(InputError):
        PEParams(precision="bf16", act_bits=8)
    with pytest.raises(InputError):
        PEParams(precision="fp64")
