"""An independent reference for the float PE datapath, built on numpy's float32/float64 arithmetic
and ml_dtypes' decoders of OCP FP8 and bfloat16, numpy's float16 for IEEE binary16 (no bit
manipulation of exponents or significands).
Used only by the tests: it must not share code with hw.fp_golden or hw.fp."""

from __future__ import annotations

import numpy as np

try:
    import ml_dtypes
except ImportError:  # pragma: no cover - ml_dtypes is a dependency of jax/tensorflow stacks, optional here
    ml_dtypes = None

CANON = 0x7FC00000
_TINY = np.float32(np.finfo(np.float32).tiny)  # 2**-126, the smallest binary32 normal


def _dtype(precision: str):
    return {
        "fp8-e4m3": ml_dtypes.float8_e4m3fn,
        "fp8-e5m2": ml_dtypes.float8_e5m2,
        "bf16": ml_dtypes.bfloat16,
        "fp16": np.float16,
    }[precision]


def decode(bits, precision: str) -> np.ndarray:
    """Operand bit patterns -> float64 values (bf16 subnormals read as signed zero: DAZ)."""
    raw = np.asarray(bits).astype(np.uint16 if precision in ("bf16", "fp16") else np.uint8)
    v = raw.view(_dtype(precision)).astype(np.float64)
    if precision == "bf16":
        v = np.where((v != 0) & (np.abs(v) < 2.0**-126), np.copysign(0.0, v), v)
    return v


def _ftz(x: np.ndarray) -> np.ndarray:
    return np.where((x != 0) & (np.abs(x) < _TINY), np.copysign(np.float32(0), x), x).astype(np.float32)


def mul(a_bits, w_bits, precision: str) -> np.ndarray:
    """float32 products: the exact float64 product, cast (RNE) to float32, flushed."""
    with np.errstate(over="ignore", invalid="ignore"):
        p = (decode(a_bits, precision) * decode(w_bits, precision)).astype(np.float32)
    return _ftz(p)


def add(acc: np.ndarray, p: np.ndarray) -> np.ndarray:
    with np.errstate(over="ignore", invalid="ignore"):
        return _ftz((acc.astype(np.float32) + p.astype(np.float32)).astype(np.float32))


def to_bits(x: np.ndarray) -> np.ndarray:
    x = np.asarray(x, dtype=np.float32)
    return np.where(np.isnan(x), CANON, x.view(np.uint32).astype(np.int64))


def sparse_streams(acts, weights, idx, legal, clears, precision: str) -> np.ndarray:
    """S streams of the sparse PE: acts (S, T, M), weights (S, T, N), idx (S, T, N) selected lanes,
    legal (S, T), clears (S, T). Returns (S, T) binary32 bit patterns of the accumulator."""
    s_n, t_n, n = weights.shape
    acc = np.zeros(s_n, dtype=np.float32)
    out = np.empty((s_n, t_n), dtype=np.int64)
    for t in range(t_n):
        acc = np.where(clears[:, t], np.float32(0), acc).astype(np.float32)
        sel = np.take_along_axis(acts[:, t], idx[:, t], axis=1)
        prods = mul(sel, weights[:, t], precision)
        for j in range(n):
            acc = np.where(legal[:, t], add(acc, prods[:, j]), acc).astype(np.float32)
        out[:, t] = to_bits(acc)
    return out
