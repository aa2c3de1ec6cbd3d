"""Number formats of the PE datapath (``PEParams.precision``). No Amaranth, no numpy here.

Integer precisions (``int8``, ``int4``) are signed two's complement operands with a two's-complement
accumulator, as before. Floating-point precisions follow:

* ``fp8-e4m3``: OCP 8-bit Floating Point Specification (OFP8) rev. 1.0, E4M3: bias 7, subnormals,
  no infinities, NaN = S.1111.111 only, max normal 1.75 * 2**8 = 448.
* ``fp8-e5m2``: OFP8 E5M2: bias 15, subnormals, IEEE-style infinities (S.11111.00) and NaNs.
* ``fp16``: IEEE 754 binary16: bias 15, subnormals, infinities and NaNs; max normal 65504. Its
  products (at most 22 significant bits, exponents inside binary32's normal range) are exact in
  binary32.
* ``bf16``: the top half of IEEE 754 binary32 (bias 127, inf/NaN as binary32); subnormal inputs are
  read as a zero of the same sign (DAZ).

FP accumulation (``ACCUMULATION_RULES``, copied into the Verilog JSON sidecar): binary32 accumulator;
each product exact, rounded to binary32 RNE, binary32 subnormal results flushed to a zero of the same
sign (FTZ); products added one at a time in increasing metadata index order (group 0 first for the
dense-path PE, lane order for the dense PE), each a binary32 add with RNE + FTZ; any NaN gives the
canonical NaN 0x7FC00000; infinities follow IEEE 754 (inf + -inf = NaN, 0 * inf = NaN); ``in_clear``
starts the accumulator from +0; a group with an illegal metadata code adds nothing.
"""

from __future__ import annotations

from dataclasses import dataclass

from hw.errors import InputError

__all__ = [
    "FPFormat",
    "FORMATS",
    "PRECISIONS",
    "INT_BITS",
    "is_float",
    "fp_format",
    "check_precision",
    "operand_bits",
    "ACCUMULATION_RULES",
    "CANONICAL_NAN",
    "F32_BITS",
]


@dataclass(frozen=True)
class FPFormat:
    """A binary floating-point operand format: 1 sign bit, ``exp_bits`` exponent bits (bias
    ``bias``), ``man_bits`` fraction bits. ``ieee_specials``: the all-ones exponent encodes inf
    (fraction 0) and NaN (fraction != 0); otherwise (E4M3) only S.1111.111 is NaN and there is no
    infinity. ``daz``: subnormal inputs read as zero."""

    name: str
    exp_bits: int
    man_bits: int
    bias: int
    ieee_specials: bool
    daz: bool

    @property
    def bits(self) -> int:
        return 1 + self.exp_bits + self.man_bits

    @property
    def exp_max_field(self) -> int:
        return (1 << self.exp_bits) - 1

    @property
    def sig_bits(self) -> int:
        """Significand width with the hidden bit."""
        return self.man_bits + 1

    @property
    def min_exp(self) -> int:
        """Unbiased exponent of the significand's least significant bit for the smallest
        encodings (value = sig * 2**(max(e,1) - bias - man_bits))."""
        return 1 - self.bias - self.man_bits

    @property
    def max_exp(self) -> int:
        """Largest LSB exponent of a finite encoding."""
        top = self.exp_max_field - 1 if self.ieee_specials else self.exp_max_field
        return top - self.bias - self.man_bits

    @property
    def max_finite(self) -> float:
        top = self.exp_max_field - 1 if self.ieee_specials else self.exp_max_field
        frac = (1 << self.man_bits) - 1 - (0 if self.ieee_specials else 1)  # E4M3: S.1111.111 is NaN
        return (1 + frac / (1 << self.man_bits)) * 2.0 ** (top - self.bias)


#: [P] OCP OFP8 spec rev 1.0 (2023) Table 1; [P] IEEE 754-2008 binary16; [P] bfloat16 = binary32 with
#: the low 16 bits dropped (Google TPU / Intel BF16 definition); DAZ on bf16 inputs is this tool's
#: stated rule.
FORMATS: dict[str, FPFormat] = {
    "fp8-e4m3": FPFormat("fp8-e4m3", 4, 3, 7, ieee_specials=False, daz=False),
    "fp8-e5m2": FPFormat("fp8-e5m2", 5, 2, 15, ieee_specials=True, daz=False),
    "fp16": FPFormat("fp16", 5, 10, 15, ieee_specials=True, daz=False),
    "bf16": FPFormat("bf16", 8, 7, 127, ieee_specials=True, daz=True),
}
#: Integer precisions and their operand width.
INT_BITS = {"int8": 8, "int4": 4}
PRECISIONS = ("int8", "int4", "fp8-e4m3", "fp8-e5m2", "fp16", "bf16")
CANONICAL_NAN = 0x7FC00000
F32_BITS = 32

ACCUMULATION_RULES = {
    "accumulator": "IEEE 754 binary32 (out_acc holds its 32 bits)",
    "inputs": "decoded exactly, FP8 and fp16 subnormals included; bf16 subnormal inputs read as zero (DAZ)",
    "products": "exact, rounded to binary32 with round-to-nearest-even; a binary32-subnormal result is "
    "flushed to a zero of the same sign (FTZ)",
    "additions": "one product at a time in increasing metadata index order (idx0 then idx1; dense-path PE: "
    "group 0 first; dense PE: lane order), each a binary32 addition with RNE and FTZ",
    "specials": "any NaN gives the canonical NaN 0x7FC00000; infinities follow IEEE 754 (inf + -inf and "
    "0 * inf are NaN)",
    "clear": "in_clear starts the accumulator from +0",
    "illegal_metadata": "a group with an illegal code adds nothing (the accumulator passes through)",
}


def is_float(precision: str) -> bool:
    return precision in FORMATS


def check_precision(precision, where: str = "precision") -> str:
    if precision not in PRECISIONS:
        raise InputError(f"must be one of {', '.join(PRECISIONS)}, got {precision!r}", where=where)
    return precision


def fp_format(precision: str) -> FPFormat:
    check_precision(precision)
    if precision not in FORMATS:
        raise InputError(
            f"{precision} is an integer precision, not a floating-point format", where="precision"
        )
    return FORMATS[precision]


def operand_bits(precision: str) -> int:
    """Bits per activation / weight operand of a precision (fp16 and bf16 16, fp8 8, int8 8, int4 4)."""
    check_precision(precision)
    return FORMATS[precision].bits if precision in FORMATS else INT_BITS[precision]
