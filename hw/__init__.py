"""Amaranth RTL of the N:M structured-sparse tensor-core PE, its dense baseline, the PE array,
and their bit-exact numpy golden models. Imports nothing from the other rooms."""

from hw.errors import InputError

__all__ = ["InputError"]
