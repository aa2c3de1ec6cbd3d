"""PE parameters, declared and validated once; every other module trusts a :class:`PEParams`."""

from __future__ import annotations

import operator
from dataclasses import dataclass

from hw.errors import InputError
from hw.nm import check_nm, meta_bits_per_weight
from hw.precision import ACCUMULATION_RULES, F32_BITS, FORMATS, check_precision, is_float, operand_bits

#: Widths accepted for operands and the accumulator. The golden models compute modulo 2**64,
#: which is exact for any accumulator up to 64 bits; 32-bit operands bound the product at 64 bits.
MAX_OPERAND_BITS = 32
MAX_ACC_BITS = 64
#: Deepest pipeline accepted (product register stages + the accumulator stage).
MAX_PIPELINE = 8
#: Array rows and columns accepted (hw.array); RTL elaboration time grows as R*C.
MAX_DIM = 256


@dataclass(frozen=True, init=False)
class PEParams:
    """Parameters of one N:M sparse PE (and of its dense baseline).

    ``pipeline`` is the number of register stages from the input ports to ``out_acc``; the
    last one is the accumulator itself, the ``pipeline - 1`` before it register the selected
    products. ``latency == pipeline``: a group sampled at rising edge k shows ``out_valid`` and
    its accumulator after rising edge k + latency - 1, i.e. ``latency`` edges after it was
    presented (the accumulator edge included).
    """

    # The three widths may be given as None (follow the precision): the constructor below takes
    # them so, and __post_init__ fills them in, so every PEParams holds an int in each.
    act_bits: int
    weight_bits: int
    acc_bits: int
    n: int = 2
    m: int = 4
    pipeline: int = 1
    #: operand format (hw.precision): int8 (default), int4, fp8-e4m3, fp8-e5m2, fp16, bf16. Widths left
    #: None follow it (int8: 8, int4: 4, fp8: 8, bf16: 16; accumulator 32). Integer precisions accept
    #: explicit widths (the integer datapath is width-generic); a float format fixes its widths and
    #: a binary32 accumulator.
    precision: str = "int8"

    def __init__(
        self,
        act_bits: int | None = None,
        weight_bits: int | None = None,
        acc_bits: int | None = None,
        n: int = 2,
        m: int = 4,
        pipeline: int = 1,
        precision: str = "int8",
    ) -> None:
        """The dataclass's own constructor, with the widths optional (None: the precision's)."""
        given = {
            "act_bits": act_bits,
            "weight_bits": weight_bits,
            "acc_bits": acc_bits,
            "n": n,
            "m": m,
            "pipeline": pipeline,
            "precision": precision,
        }
        for name, value in given.items():
            object.__setattr__(self, name, value)
        self.__post_init__()

    def __post_init__(self) -> None:
        check_precision(self.precision)
        ob = operand_bits(self.precision)
        for name, default in (("act_bits", ob), ("weight_bits", ob), ("acc_bits", 32)):
            if getattr(self, name) is None:
                object.__setattr__(self, name, default)
        for name in ("act_bits", "weight_bits", "acc_bits", "n", "m", "pipeline"):
            value = getattr(self, name)
            if isinstance(value, bool):
                raise InputError(f"must be an integer, got {value!r}", where=name)
            try:
                object.__setattr__(self, name, operator.index(value))
            except TypeError:
                raise InputError(f"must be an integer, got {value!r}", where=name) from None
        for name, hi in (
            ("act_bits", MAX_OPERAND_BITS),
            ("weight_bits", MAX_OPERAND_BITS),
            ("acc_bits", MAX_ACC_BITS),
        ):
            value = getattr(self, name)
            if not 1 <= value <= hi:
                raise InputError(f"must be between 1 and {hi} bits, got {value}", where=name)
        if not 1 <= self.pipeline <= MAX_PIPELINE:
            raise InputError(
                f"must be between 1 and {MAX_PIPELINE} register stages, got {self.pipeline}", where="pipeline"
            )
        try:
            check_nm(self.n, self.m)
        except InputError as exc:
            raise InputError(str(exc), where="n:m") from None
        if is_float(self.precision):
            for name, want in (("act_bits", ob), ("weight_bits", ob), ("acc_bits", F32_BITS)):
                if getattr(self, name) != want:
                    raise InputError(
                        f"{self.precision} needs {name} = {want}, got {getattr(self, name)}", where=name
                    )
        if self.acc_bits < self.product_bits:
            raise InputError(
                f"accumulator ({self.acc_bits} bits) narrower than one product "
                f"(act_bits + weight_bits = {self.product_bits} bits)",
                where="acc_bits",
            )

    @property
    def meta_bits(self) -> int:
        """Metadata bits per group: n * log2(m) (4 for 2:4)."""
        return self.n * meta_bits_per_weight(self.m)

    @property
    def index_bits(self) -> int:
        """Metadata bits per kept weight: log2(m)."""
        return meta_bits_per_weight(self.m)

    @property
    def product_bits(self) -> int:
        """Width of one signed act x weight product: act_bits + weight_bits."""
        return self.act_bits + self.weight_bits

    @property
    def is_float(self) -> bool:
        """True for the floating-point precisions (binary32 accumulator)."""
        return is_float(self.precision)

    @property
    def fmt(self):
        """The hw.precision.FPFormat of a float precision (None for integers)."""
        return FORMATS.get(self.precision)

    @property
    def latency(self) -> int:
        """Cycles from a group sampled at the inputs to its ``out_valid`` pulse (== pipeline)."""
        return self.pipeline

    def as_dict(self) -> dict:
        """Plain dict of the parameters and derived facts (for JSON sidecars)."""
        return {
            "act_bits": self.act_bits,
            "weight_bits": self.weight_bits,
            "acc_bits": self.acc_bits,
            "n": self.n,
            "m": self.m,
            "pipeline": self.pipeline,
            "meta_bits": self.meta_bits,
            "product_bits": self.product_bits,
            "latency": self.latency,
            "precision": self.precision,
            "accumulation": dict(ACCUMULATION_RULES)
            if self.is_float
            else "two's complement, wrapped modulo 2**acc_bits",
        }


#: The default PE (INT8 2:4, one register stage): the components' default ``params``.
DEFAULT_PE_PARAMS = PEParams()
