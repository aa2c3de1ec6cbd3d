"""Amaranth simulation of the decoder and PEs against the numpy golden models."""

from __future__ import annotations

import numpy as np
import pytest
from amaranth.sim import Simulator

from hw.errors import InputError
from hw.golden import (
    decode_meta,
    dense_pe_reference,
    dense_to_sparse_stream,
    fallback_clears,
    pack_meta,
    pe_reference,
    unpack_meta,
)
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
    for code, (sel, err) in zip(codes, _run_decoder(dec, codes), strict=True):
        idx, legal = decode_meta(code, n, m)
        assert tuple(sel[0]) == idx and err == (not legal), code


def test_decoder_all_16_codes_2of4():
    got = _run_decoder(MetadataDecoder(2, 4), range(16))
    illegal = {c for c, (_, err) in zip(range(16), got, strict=True) if err}
    assert illegal == {0b0000, 0b0101, 0b1010, 0b1111} | {c for c in range(16) if (c & 3) > (c >> 2)}
    assert len(illegal) == 10


def test_decoder_packed_ptx_word():
    rng = np.random.default_rng(3)
    words = [pack_meta(rng.integers(0, 16, 8).tolist(), 2, 4) for _ in range(40)] + [
        0xFFFF_FFFF,
        0x0,
        0xEDC9_8400,
    ]
    dec = MetadataDecoder(2, 4, groups=8)
    assert dec.meta.shape().width == 32
    for word, (sel, err) in zip(words, _run_decoder(dec, words), strict=True):
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


@pytest.mark.parametrize(
    "p,t",
    SPARSE_CASES,
    ids=lambda x: (
        str(x)
        if isinstance(x, int)
        else f"a{x.act_bits}w{x.weight_bits}acc{x.acc_bits}_{x.n}of{x.m}_p{x.pipeline}"
    ),
)
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


@pytest.mark.parametrize(
    "p",
    [
        PEParams(),
        PEParams(pipeline=3, act_bits=5, weight_bits=7, acc_bits=12),
        PEParams(n=2, m=8, acc_bits=20),
    ],
    ids=["2of4", "narrow_p3", "m8"],
)
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
    assert run.acc[steps - 1 :: steps].tolist() == dense_ref.tolist()
    assert not run.err.any()
    drun = run_pe(DensePE(p), acts, w, None, clears)
    assert drun.acc.tolist() == dense_ref.tolist()
    assert run.cycles - drun.cycles == len(acts) * (steps - 1)  # half rate for 2:4


def test_pe_rejects_non_params():
    with pytest.raises(InputError):
        SparsePE({"n": 2})


# ---- the dense-path PE: SparsePE(p, dense_path=True), module sparse_pe_dp -----------------------

DP_CASES = [
    (PEParams(), 160),
    (PEParams(pipeline=2), 90),
    (PEParams(pipeline=3), 90),
    (PEParams(pipeline=5, acc_bits=16), 90),
    (PEParams(act_bits=4, weight_bits=6, acc_bits=10), 120),
    (PEParams(n=1, m=4, acc_bits=17), 90),
    (PEParams(n=2, m=8), 200),
    (PEParams(n=4, m=8, acc_bits=18, pipeline=2), 200),
]
DP_IDS = [f"a{p.act_bits}w{p.weight_bits}acc{p.acc_bits}_{p.n}of{p.m}_p{p.pipeline}" for p, _ in DP_CASES]


@pytest.mark.parametrize("p,t", DP_CASES, ids=DP_IDS)
def test_dense_path_pe_matches_golden(p, t):
    from hw.golden import dense_path_pe_reference
    from tests.hw.vectors import dense_path_vectors

    acts, w, metas, dense, clears, valid = dense_path_vectors(p, t, seed=p.meta_bits * 10 + p.pipeline)
    dut = SparsePE(p, dense_path=True)
    assert dut.multipliers == p.m and dut.groups_per_cycle == p.m // p.n
    run = run_pe(dut, acts, w, metas, clears, valid, dense=dense)
    ref, err = dense_path_pe_reference(acts, w, metas, dense, clears, p, valid=valid)
    assert run.acc.tolist() == ref.tolist()
    assert run.err.tolist() == err.tolist()
    # every code met in every group slot (where the stream is long enough: not 4:8's 4096 codes;
    # test_decoder_exhaustive walks those); both modes; illegal codes seen (N > 1) but not everywhere
    if (1 << p.meta_bits) <= t // 3:
        assert all(set(range(1 << p.meta_bits)) <= set(metas[:, g].tolist()) for g in range(metas.shape[1]))
    assert dense[valid].any() and (~dense[valid]).any()
    assert (err.any() if p.n > 1 else not err.any()) and not err.all()
    assert len(run.acc) == int(valid.sum())
    assert set((run.out_cycle - run.in_cycle).tolist()) == {p.latency - 1}


def test_dense_path_pe_modes_by_hand():
    """2:4, ACC 16: hand-computed sums, wrap-around, a dense cycle with illegal codes present
    (ignored), one illegal group dropping only its own products, clear on an illegal cycle."""
    p = PEParams(acc_bits=16)
    a = np.array(
        [[-128] * 8, [1, 2, 3, 4, 5, 6, 7, 8], [1, 2, 3, 4, 5, 6, 7, 8], [1, 2, 3, 4, 5, 6, 7, 8], [-128] * 8]
    )
    w = np.array([[-128] * 4, [10, 20, 30, 40], [10, 20, 30, 40], [10, 20, 30, 40], [-128] * 4])
    m = np.array([[0b0100, 0b1110], [0b0000, 0b1111], [0b1101, 0b0000], [0b0100, 0b1101], [0, 0]])
    dense = np.array([0, 1, 0, 0, 1])
    clears = np.array([1, 0, 1, 0, 0])
    run = run_pe(SparsePE(p, dense_path=True), a, w, m, clears, dense=dense)
    # cycle 0: 4 x (-128 * -128) = 65536 = 0 mod 2**16; cycle 1 dense: 10+40+90+160 = 300;
    # cycle 2: clear, group 0 (1,3): 2*10 + 4*20 = 100, group 1 code 0000 illegal -> dropped;
    # cycle 3: group 0 (0,1): 1*10 + 2*20 = 50, group 1 (1,3): 6*30 + 8*40 = 500 -> 100 + 550;
    # cycle 4 dense: 4 x 16384 = 65536 wraps to 0 -> 650
    assert run.acc.tolist() == [0, 300, 100, 650, 650]
    assert run.err.tolist() == [False, False, True, False, False]


@pytest.mark.parametrize("p", [PEParams(), PEParams(n=2, m=8, pipeline=2, acc_bits=20)], ids=["2of4", "2of8"])
def test_dense_path_rates(p):
    """Full rate dense (one group of M per cycle, as DensePE) and M/N N:M groups per cycle: the
    same N:M stream takes M/N times fewer cycles than on SparsePE, the same dense stream as many
    cycles as on DensePE, with the same results."""
    g = p.m // p.n
    acts, w, metas, clears, _ = pe_vectors(p, 48, seed=4)
    metas = np.where(
        np.isin(metas, [c for c in range(1 << p.meta_bits) if decode_meta(c, p.n, p.m)[1]]),
        metas,
        metas * 0 + int(sum(j << (j * p.index_bits) for j in range(p.n))),
    )
    clears[:] = False
    clears[0] = True
    sp = run_pe(SparsePE(p), acts, w, metas, clears)
    dp = run_pe(
        SparsePE(p, dense_path=True),
        acts.reshape(-1, g * p.m),
        w.reshape(-1, p.m),
        metas.reshape(-1, g),
        clears.reshape(-1, g)[:, 0],
        dense=np.zeros(len(acts) // g, dtype=bool),
    )
    assert dp.acc.tolist() == sp.acc[g - 1 :: g].tolist()
    assert (sp.cycles - sp.out_cycle[-1]) == (dp.cycles - dp.out_cycle[-1])  # same drain
    assert sp.out_cycle[-1] + 1 == len(acts) + p.latency - 1
    assert dp.out_cycle[-1] + 1 == len(acts) // g + p.latency - 1  # M/N x fewer cycles
    da, dw, _, dc, _ = pe_vectors(p, 30, seed=6, dense=True)
    dref = run_pe(DensePE(p), da, dw, None, dc)
    pad = np.zeros((len(da), (g - 1) * p.m), dtype=np.int64)
    dd = run_pe(
        SparsePE(p, dense_path=True),
        np.hstack([da, pad]),
        dw,
        np.zeros((len(da), g), dtype=int),
        dc,
        dense=np.ones(len(da), dtype=bool),
    )
    assert dd.acc.tolist() == dref.acc.tolist() and dd.out_cycle.tolist() == dref.out_cycle.tolist()
    assert not dd.err.any()


def test_dense_path_rejects_bad_flag():
    with pytest.raises(InputError):
        SparsePE(PEParams(), dense_path="yes")
