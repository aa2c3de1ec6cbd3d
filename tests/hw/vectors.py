"""Seeded PE test vectors shared by the Amaranth and the Icarus tests (same stimulus, same golden)."""

from __future__ import annotations

import numpy as np

from hw.golden import legal_codes
from hw.params import PEParams


def pe_vectors(p: PEParams, t: int, seed: int, dense: bool = False):
    """acts (T, M), weights (T, N or M), metas (T,), clears (T,), valid (T,).

    The first rows walk every metadata code (for wide metadata, the first 2*T/2 codes) with extreme
    operands (most negative x most negative, max x most negative) without clears, so the accumulator
    wraps; the rest is random
    with ~10% clears and ~20% idle cycles (in_valid low, data still toggling).
    """
    rng = np.random.default_rng(seed)
    lo_a, hi_a = -(1 << (p.act_bits - 1)), (1 << (p.act_bits - 1)) - 1
    lo_w, hi_w = -(1 << (p.weight_bits - 1)), (1 << (p.weight_bits - 1)) - 1
    lanes = p.m if dense else p.n
    acts = rng.integers(lo_a, hi_a + 1, size=(t, p.m))
    w = rng.integers(lo_w, hi_w + 1, size=(t, lanes))
    codes = np.arange(1 << p.meta_bits)
    head = min(t // 2, 2 * codes.size)
    legal = np.array(legal_codes(p.n, p.m))
    metas = np.where(
        rng.random(t) < 0.75, rng.choice(legal, size=t), rng.integers(0, 1 << p.meta_bits, size=t)
    )
    metas[:head] = np.resize(codes, head)
    acts[:head:2], w[:head:2] = lo_a, lo_w  # most negative x most negative
    acts[1:head:2], w[1:head:2] = hi_a, lo_w
    clears = rng.random(t) < 0.1
    clears[:head] = False
    clears[0] = True
    valid = rng.random(t) < 0.8
    valid[:head] = True
    return acts, w, metas, clears, valid


def dense_path_vectors(p: PEParams, t: int, seed: int):
    """Vectors for the dense-path PE: acts (T, G*M), weights (T, M), metas (T, G), dense (T,),
    clears (T,), valid (T,), G = M/N.

    The first rows walk every metadata code in every group slot (group g's code runs through all
    codes, shifted by g so that legal and illegal codes meet in one cycle) with extreme operands
    and no clears, so the accumulator wraps, in N:M mode; the next rows are dense with extremes;
    the rest mixes dense (~40 %) and N:M cycles at random with ~10 % clears and ~20 % idle cycles."""
    rng = np.random.default_rng(seed)
    g_n = p.m // p.n
    lo_a, hi_a = -(1 << (p.act_bits - 1)), (1 << (p.act_bits - 1)) - 1
    lo_w, hi_w = -(1 << (p.weight_bits - 1)), (1 << (p.weight_bits - 1)) - 1
    acts = rng.integers(lo_a, hi_a + 1, size=(t, g_n * p.m))
    w = rng.integers(lo_w, hi_w + 1, size=(t, p.m))
    ncodes = 1 << p.meta_bits
    legal = np.array(legal_codes(p.n, p.m))
    metas = np.where(
        rng.random((t, g_n)) < 0.75, rng.choice(legal, size=(t, g_n)), rng.integers(0, ncodes, size=(t, g_n))
    )
    head = min(t // 3, 2 * ncodes)
    for g in range(g_n):
        metas[:head, g] = (np.arange(head) + 3 * g) % ncodes
    dense = rng.random(t) < 0.4
    dense[:head] = False
    dhead = min(8, t - head)
    dense[head : head + dhead] = True
    ext = slice(0, head + dhead)
    acts[ext][::2], w[ext][::2] = lo_a, lo_w  # most negative x most negative
    acts[ext][1::2], w[ext][1::2] = hi_a, lo_w
    clears = rng.random(t) < 0.1
    clears[: head + dhead] = False
    clears[0] = True
    valid = rng.random(t) < 0.8
    valid[: head + dhead] = True
    return acts, w, metas, dense, clears, valid
