"""Seeded PE test vectors shared by the Amaranth and the Icarus tests (same stimulus, same golden)."""

from __future__ import annotations

import numpy as np

from hw.golden import legal_codes
from hw.params import PEParams


def pe_vectors(p: PEParams, t: int, seed: int, dense: bool = False):
    """acts (T, M), weights (T, N or M), metas (T,), clears (T,), valid (T,).

    The first rows walk every metadata code (for wide metadata, the first 2*T/2 codes) with extreme operands (most negative x most
    negative, max x most negative) without clears, so the accumulator wraps; the rest is random
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
    metas = np.where(rng.random(t) < 0.75, rng.choice(legal, size=t), rng.integers(0, 1 << p.meta_bits, size=t))
    metas[:head] = np.resize(codes, head)
    acts[:head:2], w[:head:2] = lo_a, lo_w             # most negative x most negative
    acts[1:head:2], w[1:head:2] = hi_a, lo_w
    clears = rng.random(t) < 0.1
    clears[:head] = False
    clears[0] = True
    valid = rng.random(t) < 0.8
    valid[:head] = True
    return acts, w, metas, clears, valid
