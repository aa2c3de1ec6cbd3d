"""ONNX ``Einsum`` equations read as batched GEMMs.

:func:`parse_einsum` reads an equation against its operands' shapes (ONNX / numpy rules: letters
are indices, ``...`` stands for broadcast leading dimensions, ``->`` the output; without ``->`` the
output is the ellipsis dimensions followed by the indices that occur once, in alphabetical order)
and classifies every index of a two-operand equation:

* in both operands and the output: a batch index (one GEMM per value);
* in the first operand and the output only: M (rows of the result);
* in the second operand and the output only: N (columns of the result);
* in both operands but not the output: K (the reduction).

So ``bij,bjk->bik`` (batched matmul), ``bhqd,bhkd->bhqk`` (attention scores), ``bhqk,bhkd->bhqd``
(attention context) and ``bij,jk->bik`` (a projection) are GEMMs with count = batch, M, N, K the
products of their indices' sizes. Every other equation is not a GEMM and :func:`parse_einsum`
says why: one operand or more than two, an index repeated inside one operand (a diagonal or
trace), an index summed over one operand only, or no index to reduce (an outer or element-wise
product). An equation that does not parse, or that contradicts its operands' ranks or sizes,
raises :class:`ValueError` with the reason (the importer turns it into an input error).
"""

from __future__ import annotations

import math
from dataclasses import dataclass

ELLIPSIS = "..."


@dataclass(frozen=True)
class EinsumGemm:
    """A two-operand equation as ``count`` GEMMs of (M x K) . (K x N)."""

    count: int
    M: int
    N: int
    K: int


def _term(text: str, rank: int | None, where: str) -> tuple[list[str], int]:
    """The labels of one term, the ellipsis as ``...0``, ``...1`` ... right-aligned (numpy
    broadcasting: ``...k`` is the k-th dimension counted from the last ellipsis dimension)."""
    n_ell = text.count(ELLIPSIS)
    if n_ell > 1:
        raise ValueError(f"{where} {text!r} has more than one ellipsis")
    letters = text.replace(ELLIPSIS, "")
    bad = sorted({c for c in letters if not ("a" <= c <= "z" or "A" <= c <= "Z")})
    if bad:
        raise ValueError(f"{where} {text!r} has characters that are not index letters: {''.join(bad)!r}")
    if rank is None:  # the output term: its ellipsis width is fixed by the inputs
        return list(text.replace(ELLIPSIS, "\0")), 0
    if n_ell == 0:
        if len(letters) != rank:
            raise ValueError(f"{where} {text!r} names {len(letters)} indices for an operand of rank {rank}")
        return list(letters), 0
    width = rank - len(letters)
    if width < 0:
        raise ValueError(f"{where} {text!r} names {len(letters)} indices for an operand of rank {rank}")
    head, _, tail = text.partition(ELLIPSIS)
    return list(head) + [f"{ELLIPSIS}{width - 1 - i}" for i in range(width)] + list(tail), width


def parse_einsum(equation: str, shapes: list[list[int]]) -> EinsumGemm | str:
    """The GEMM an equation performs on operands of ``shapes``, or the reason it is not one (a string).

    Raises :class:`ValueError` when the equation does not parse or does not fit the shapes."""
    if not isinstance(equation, str) or not equation.strip():
        raise ValueError("the equation is empty")
    eq = equation.replace(" ", "")
    if eq.count("->") > 1:
        raise ValueError(f"equation {equation!r} has more than one '->'")
    lhs, arrow, rhs = eq.partition("->")
    if "-" in lhs or ">" in lhs or "-" in rhs or ">" in rhs:
        raise ValueError(f"equation {equation!r} has a stray '-' or '>'")
    texts = lhs.split(",")
    if len(texts) != len(shapes):
        raise ValueError(f"equation {equation!r} has {len(texts)} operand term(s) for {len(shapes)} input(s)")
    terms: list[list[str]] = []
    sizes: dict[str, int] = {}
    widths: list[int] = []
    for i, (t, dims) in enumerate(zip(texts, shapes, strict=True)):
        labels, width = _term(t, len(dims), f"operand {i + 1}")
        terms.append(labels)
        widths.append(width)
        for lab, size in zip(labels, dims, strict=True):
            if lab.startswith(ELLIPSIS):  # broadcast: sizes 1 and n give n
                old = sizes.get(lab, 1)
                if old != 1 and size != 1 and old != size:
                    raise ValueError(f"ellipsis dimensions {old} and {size} do not broadcast")
                sizes[lab] = max(old, int(size)) if min(old, size) == 1 else int(size)
            elif sizes.setdefault(lab, int(size)) != int(size):
                raise ValueError(f"index {lab!r} has sizes {sizes[lab]} and {size}")
    ell = [f"{ELLIPSIS}{k}" for k in range(max(widths, default=0) - 1, -1, -1)]
    if arrow:
        out_raw, _ = _term(rhs, None, "output")
        out: list[str] = []
        for lab in out_raw:
            if lab == "\0":
                if not any(widths):
                    raise ValueError(f"equation {equation!r}: the output has '...' but no operand has")
                out += ell
                continue
            if lab not in sizes:
                raise ValueError(f"equation {equation!r}: output index {lab!r} is in no operand")
            if lab in out:
                raise ValueError(f"equation {equation!r}: output index {lab!r} repeats")
            out.append(lab)
    else:
        seen = [lab for t in terms for lab in t if not lab.startswith(ELLIPSIS)]
        out = ell + sorted(lab for lab in set(seen) if seen.count(lab) == 1)
    if len(terms) != 2:
        return f"{len(terms)} operand(s): only two-operand contractions are GEMMs"
    a, b = terms
    for term in terms:
        dup = sorted({lab for lab in term if term.count(lab) > 1})
        if dup:
            return f"index {dup[0]!r} repeats inside one operand (a diagonal or trace)"
    # an ellipsis dimension of size 1 in one operand is broadcast: it belongs to the other only
    shp = {0: dict(zip(a, shapes[0], strict=True)), 1: dict(zip(b, shapes[1], strict=True))}

    def has(side: int, lab: str) -> bool:
        if lab not in shp[side]:
            return False
        return not lab.startswith(ELLIPSIS) or shp[side][lab] != 1 or shp[1 - side].get(lab, 1) == 1

    batch: list[str] = []
    m: list[str] = []
    n: list[str] = []
    k: list[str] = []
    for lab in sizes:
        in_a, in_b, in_o = has(0, lab), has(1, lab), lab in out
        if in_a and in_b:
            (batch if in_o else k).append(lab)
        elif in_a or in_b:
            if not in_o:
                return f"index {lab!r} is summed over one operand only"
            (m if in_a else n).append(lab)
        # an ellipsis dimension of size 1 in both operands: no work
    if not k:
        return "no index is reduced (an outer or element-wise product, not a GEMM)"
    prod = lambda labs: int(math.prod(sizes[x] for x in labs))  # noqa: E731
    return EinsumGemm(count=prod(batch), M=prod(m), N=prod(n), K=prod(k))
