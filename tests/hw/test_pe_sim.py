"""Amaranth simulation of the decoder and PEs against the numpy golden models."""

from __future__ import annotations

import numpy as np
import pytest
from amaranth.sim import Simulator

from hw.errors import InputError
from hw.golden import (decode_meta, dense_pe_reference, dense_to_sparse_stream, fallback_clears, pack_meta,
                       pe_reference, unpack_meta)
from hw.params import PEParams
from hw.pe import DensePE, MetadataDecoder, SparsePE
from hw.simulate import run_pe
from tests.hw.vectors import pe_vectors


def _run_decoder(dec, words):
    got = []

    async def bench(ctx):
        for word in words:
            ctx.set(dec.meta, word)
            sel = [[ctx.get(dec.sel[g][j]) for j in range(dec.n)] for g in range(dec.groups)]
            got.append((sel, ctx.get(dec.err)))

    sim = Simulator(dec)
    sim.add_testbench(bench)
    sim.run()
    return got


@pytest.mark.parametrize("n,m", [(2, 4), (1, 4), (2, 8), (4, 8)])
def test_decoder_exhaustive(n, m):
    dec = MetadataDecoder(n, m)
    codes = list(range(1 << dec.meta.shape().width))
    for code, (sel, err) in zip(codes, _run_decoder(dec, codes)):
        idx, legal = decode_meta(code, n, m)
        assert tuple(sel[0]) == idx and err == (not legal), code


def test_decoder_all_16_codes_2of4():
    got = _run_decoder(MetadataDecoder(2, 4), range(16))
    illegal = {c for c, (_, err) in zip(range(16), got) if err}
    assert illegal == {0b0000, 0b0101, 0b1010, 0b1111} | {c for c in range(16) if (c & 3) > (c >> 2)}
    assert len(illegal) == 10


def test_decoder_packed_ptx_word():
    rng = np.random.default_rng(3)
    words = [pack_meta(rng.integers(0, 16, 8).tolist(), 2, 4) for _ in range(40)] + [0xFFFF_FFFF, 0x0, 0xEDC9_8400]
    dec = MetadataDecoder(2, 4, groups=8)
    assert dec.meta.shape().width == 32
    for word, (sel, err) in zip(words, _run_decoder(dec, words)):
        for g, code in enumerate(unpack_meta(word, 8, 2, 4)):
            idx, legal = decode_meta(code)
            assert tuple(sel[g]) == idx and ((err >> g) & 1) == (not legal)


def test_decoder_rejects_bad_pattern():
    with pytest.raises(InputError):
        MetadataDecoder(3, 4)


SPARSE_CASES = [
    # (params, vectors) -- bit widths, N:M variants and pipeline depths
    (PEParams(), 160),
    (PEParams(pipeline=2), 80),
    (PEParams(pipeline=3), 80),
    (PEParams(pipeline=5, acc_bits=16), 80),
    (PEParams(act_bits=4, weight_bits=6, acc_bits=10), 120),
    (PEParams(act_bits=16, weight_bits=16, acc_bits=32), 80),
    (PEParams(n=1, m=4, acc_bits=17), 80),
    (PEParams(n=2, m=8), 140),
    (PEParams(n=4, m=8, acc_bits=18, pipeline=2), 200),
]


@pytest.mark.parametrize("p,t", SPARSE_CASES, ids=lambda x: str(x) if isinstance(x, int) else
                         f"a{x.act_bits}w{x.weight_bits}acc{x.acc_bits}_{x.n}of{x.m}_p{x.pipeline}")
def test_sparse_pe_matches_golden(p, t):
    acts, w, metas, clears, valid = pe_vectors(p, t, seed=p.meta_bits * 100 + p.pipeline)
    run = run_pe(SparsePE(p), acts, w, metas, clears, valid)
    ref, err = pe_reference(acts, w, metas, clears, p, valid=valid)
    assert run.acc.tolist() == ref.tolist()
    assert run.err.tolist() == err.tolist()
    assert (err.any() if p.n > 1 else not err.any()) and not err.all()
    # one pulse per consumed group, fixed latency, in order
    assert len(run.acc) == int(valid.sum())
    assert set((run.out_cycle - run.in_cycle).tolist()) == {p.latency - 1}


def test_sparse_pe_wraps_and_clears_on_illegal():
    p = PEParams(act_bits=8, weight_bits=8, acc_bits=16)
    # (-128*-128)*2 = 32768 wraps to -32768 in 16 bits; illegal code drops product but still clears
    acts = np.array([[-128] * 4, [-128] * 4, [5, 5, 5, 5], [1, 2, 3, 4]])
    w = np.array([[-128, -128], [-128, -128], [3, 3], [10, 100]])
    metas = np.array([0b0100, 0b1110, 0b0101, 0b1101])
    clears = np.array([1, 0, 1, 0])
    run = run_pe(SparsePE(p), acts, w, metas, clears)
    assert run.acc.tolist() == [-32768, 0, 0, 20 + 400]
    assert run.err.tolist() == [False, False, True, False]


@pytest.mark.parametrize("p", [PEParams(), PEParams(pipeline=3, act_bits=5, weight_bits=7, acc_bits=12),
                               PEParams(n=2, m=8, acc_bits=20)], ids=["2of4", "narrow_p3", "m8"])
def test_dense_pe_matches_golden(p):
    acts, w, _, clears, valid = pe_vectors(p, 100, seed=5, dense=True)
    run = run_pe(DensePE(p), acts, w, None, clears, valid)
    ref, _ = dense_pe_reference(acts, w, clears, p, valid=valid)
    assert run.acc.tolist() == ref.tolist() and not run.err.any()
    assert set((run.out_cycle - run.in_cycle).tolist()) == {p.latency - 1}


@pytest.mark.parametrize("p", [PEParams(), PEParams(n=2, m=8, acc_bits=20, pipeline=2)], ids=["2of4", "2of8"])
def test_dense_fallback_on_sparse_pe(p):
    """A dense layer on sparse hardware: M/N sparse groups per dense group, same result, N/M rate."""
    acts, w, _, clears, _ = pe_vectors(p, 40, seed=9, dense=True)
    sa, sw, sm = dense_to_sparse_stream(acts, w, p.n, p.m)
    run = run_pe(SparsePE(p), sa, sw, sm, fallback_clears(clears, p.n, p.m))
    dense_ref, _ = dense_pe_reference(acts, w, clears, p)
    steps = p.m // p.n
    assert run.acc[steps - 1::steps].tolist() == dense_ref.tolist()
    assert not run.err.any()
    drun = run_pe(DensePE(p), acts, w, None, clears)
    assert drun.acc.tolist() == dense_ref.tolist()
    assert run.cycles - drun.cycles == len(acts) * (steps - 1)     # half rate for 2:4


def test_pe_rejects_non_params():
    with pytest.raises(InputError):
        SparsePE({"n": 2})
