"""The N:M sparsity pattern: validation shared by the RTL, the golden models, sim/ and ppa/."""

from __future__ import annotations

from hw.errors import InputError

#: Largest group size M. [A] 64 (6 metadata bits per kept weight) is far past the patterns in use
#: (2:4 in NVIDIA Ampere/Hopper; 1:8, 2:8, 1:16 in the N:M literature) and bounds the PE's M-input
#: mux, the RTL export and the golden models (M = 2**20 made ``sparsepe verilog`` hang).
MAX_M = 64


def check_nm(n: int, m: int) -> None:
    """Validate an N:M pattern: M a power of two (log2(M) metadata bits per kept weight),
    1 <= N < M, and N dividing M, so that a dense group of M runs on the N-multiplier PE as
    exactly M/N sparse groups (the dense-fallback path). 3:4, for example, is rejected."""
    if not (isinstance(n, int) and isinstance(m, int)):
        raise InputError(f"N:M must be integers, got {n!r}:{m!r}")
    if m < 2 or m & (m - 1):
        raise InputError(f"M must be a power of two >= 2 (log2(M) metadata bits), got {n}:{m}")
    if m > MAX_M:
        raise InputError(f"M must be at most {MAX_M}, got {n}:{m}")
    if not 1 <= n < m:
        raise InputError(f"N must satisfy 1 <= N < M, got {n}:{m}")
    if m % n:
        raise InputError(f"N must divide M (dense fallback runs M/N groups per dense group), got {n}:{m}")


def meta_bits_per_weight(m: int) -> int:
    """Metadata bits per kept weight: log2(M) (2 bits for 2:4, NVIDIA's format)."""
    return (m - 1).bit_length()
