"""Operand bit patterns for the float PE tests: uniform bits, a narrow exponent band (rounding,
cancellation), and extreme / special values (NaN, inf, max, subnormals, zeros of both signs)."""

from __future__ import annotations

import numpy as np

from hw.precision import FORMATS


def specials(precision: str) -> np.ndarray:
    f = FORMATS[precision]
    e_all, m_all, sh = f.exp_max_field, (1 << f.man_bits) - 1, f.man_bits
    sign = 1 << (f.bits - 1)
    max_e = e_all - 1 if f.ieee_specials else e_all
    max_m = m_all if f.ieee_specials else m_all - 1
    vals = [
        0,
        1,
        m_all,
        1 << sh,
        (1 << sh) | m_all,
        (max_e << sh) | max_m,
        (max_e << sh),
        f.bias << sh,
        ((f.bias - 1) << sh) | m_all,
        (e_all << sh) | m_all,
        (e_all << sh) | 1,
    ]
    if f.ieee_specials:
        vals.append(e_all << sh)  # inf
    return np.array(sorted({v | s for v in vals for s in (0, sign)}), dtype=np.int64)


def operands(rng: np.random.Generator, precision: str, shape, mix=(0.4, 0.45, 0.15)) -> np.ndarray:
    """Random operand bit patterns: a ``mix`` of uniform bits, a narrow exponent band around the
    bias (so that sums cancel and round), and special/extreme values."""
    f = FORMATS[precision]
    uni = rng.integers(0, 1 << f.bits, size=shape, dtype=np.int64)
    e = np.clip(f.bias + rng.integers(-3, 4, size=shape), 1, f.exp_max_field - 1)
    band = (
        (rng.integers(0, 2, size=shape) << (f.bits - 1))
        | (e << f.man_bits)
        | rng.integers(0, 1 << f.man_bits, size=shape)
    )
    sp = rng.choice(specials(precision), size=shape)
    pick = rng.choice(3, size=shape, p=list(mix))
    return np.choose(pick, [uni, band, sp]).astype(np.int64)


def big_band(rng: np.random.Generator, precision: str, shape) -> np.ndarray:
    """Operands near the top of the range (overflow of products and sums) and near the bottom
    (products below the binary32 normal range for bf16)."""
    f = FORMATS[precision]
    top = f.exp_max_field - (1 if f.ieee_specials else 0)
    hi = np.clip(top - rng.integers(0, 3, size=shape), 1, top)
    lo = rng.integers(1, 4, size=shape)
    e = np.where(rng.integers(0, 2, size=shape) == 1, hi, lo)
    m = rng.integers(0, 1 << f.man_bits, size=shape)
    if not f.ieee_specials:
        m = np.where(e == f.exp_max_field, np.minimum(m, (1 << f.man_bits) - 2), m)
    return (rng.integers(0, 2, size=shape) << (f.bits - 1)) | (e << f.man_bits) | m
