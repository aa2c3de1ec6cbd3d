"""The vector lane's operation codes and numpy golden model (no Amaranth: ppa imports it with a warm
synthesis cache). The RTL and the formulas are described in :mod:`hw.vector`."""

from __future__ import annotations

import operator

import numpy as np

from hw.errors import InputError

OPS = ("add", "mul", "max", "exp2", "recip")
OP_CODES = {name: i for i, name in enumerate(OPS)}


def check_width(width) -> int:
    w = operator.index(width)
    if not 4 <= w <= 32:
        raise InputError(f"vector lane width must be 4..32 bits, got {w}", where="hw.vector width")
    return w


def recip_k(width: int) -> int:
    """The seed constant K = round(48/17 x 2**width) of the reciprocal."""
    return int(round(48 / 17 * (1 << width)))


def lane_golden(op: str, a, b, width: int = 8) -> np.ndarray:
    """The lane's result, from the formulas in the module docstring (numpy, uint64 in and out)."""
    W = check_width(width)
    F = W // 2
    top = (1 << (2 * W)) - 1
    a = np.asarray(a, dtype=np.uint64) & np.uint64((1 << W) - 1)
    b = np.asarray(b, dtype=np.uint64) & np.uint64((1 << W) - 1)
    if op == "add":
        return a + b
    if op == "mul":
        return a * b
    if op == "max":
        return np.maximum(a, b)
    if op == "exp2":
        i = a >> np.uint64(F)
        f = a & np.uint64((1 << F) - 1)
        wide = [(int(mm) << int(ii)) for mm, ii in zip(((1 << F) + f).ravel(), i.ravel(), strict=True)]
        return np.array([min(x, top) for x in wide], dtype=np.uint64).reshape(a.shape)
    if op == "recip":
        out = []
        for x in a.ravel().tolist():
            if x == 0:
                out.append(top)
                continue
            p = x.bit_length() - 1
            norm = (x << (W - 1 - p)) & ((1 << W) - 1)
            seed = (recip_k(W) - 2 * norm + (norm >> 3)) & ((1 << (W + 2)) - 1)
            out.append(((seed << (W - 1)) >> (p + 1)) & top)
        return np.array(out, dtype=np.uint64).reshape(a.shape)
    raise InputError(f"unknown lane op {op!r} ({', '.join(OPS)})", where="hw.vector op")
