"""Input shapes of an ONNX import: ``--input-shape NAME=1x3x224x224`` parsed, and bound into the graph's inputs.

A dimension is ASCII digits only (``x=1x４x16``, with a full-width digit, is an error naming the flag
and the value: Python's ``int`` would read it). The graph's inputs get concrete dimensions from
``--input-shape`` (per input), then from the symbols those bind, then ``--batch`` for a symbolic
leading dimension; a symbol bound there is bound wherever the model's ``value_info`` uses it.
"""

from __future__ import annotations

import re

from hw.errors import InputError

_DIGITS = re.compile(r"[0-9]+")


def parse_shape(text: str, where: str = "--input-shape") -> tuple[str, tuple[int, ...]]:
    """``"NAME=1x3x224x224"`` -> ("NAME", (1, 3, 224, 224))."""
    name, sep, dims = str(text).partition("=")
    if not sep or not name.strip():
        raise InputError(f"expected NAME=D1xD2x..., got {text!r}", where=where)
    return name.strip(), dims_of(dims, where, name.strip())


def parse_shapes(texts: list[str] | None, where: str = "--input-shape") -> dict[str, tuple[int, ...]]:
    """Every ``NAME=...`` of a repeated flag; the same NAME twice is an error."""
    out: dict[str, tuple[int, ...]] = {}
    for text in texts or []:
        name, dims = parse_shape(text, where)
        if name in out:
            raise InputError(f"input {name!r} is given twice", where=where)
        out[name] = dims
    return out


def dims_of(dims, where: str, name: str) -> tuple[int, ...]:
    """A shape given as ``"1x3x224x224"`` or a sequence of positive integers."""
    bad = InputError(
        f"shape of {name!r} must be positive integers like 1x3x224x224, got {dims!r}", where=where
    )
    if isinstance(dims, (list, tuple)):
        if any(isinstance(p, bool) or not isinstance(p, int) for p in dims):
            raise bad
        out = tuple(int(p) for p in dims)
    else:
        parts = [p.strip() for p in str(dims).strip().lower().split("x")]
        if not all(
            _DIGITS.fullmatch(p) for p in parts
        ):  # ASCII digits only: int("４") would read a full-width 4
            raise bad
        out = tuple(int(p) for p in parts)
    if not out or min(out) <= 0:
        raise bad
    return out


def shape_of(vi) -> list[int | str | None] | None:
    """A value_info's shape: ints, symbol names (str) and None for an unknown dimension."""
    t = vi.type
    if not t.HasField("tensor_type") or not t.tensor_type.HasField("shape"):
        return None
    out: list[int | str | None] = []
    for dim in t.tensor_type.shape.dim:
        if dim.HasField("dim_value"):
            out.append(int(dim.dim_value))
        elif dim.HasField("dim_param"):
            out.append(str(dim.dim_param))
        else:
            out.append(None)
    return out


def _given_symbols(graph_inputs, shapes_in: dict) -> dict[str, int]:
    symbol: dict[str, int] = {}
    for vi in graph_inputs:
        if vi.name not in shapes_in:
            continue
        cur = shape_of(vi) or []
        given = shapes_in[vi.name]
        if cur and len(cur) != len(given):
            raise InputError(
                f"input {vi.name!r} has rank {len(cur)}, --input-shape gives {len(given)} dims",
                where="--input-shape",
            )
        for c, v in zip(cur, given, strict=False):  # cur [] (shape unknown): nothing to match
            if isinstance(c, str):
                symbol.setdefault(c, v)
            elif isinstance(c, int) and c != v and c > 0:
                raise InputError(
                    f"input {vi.name!r} has fixed size {c} where --input-shape gives {v}",
                    where="--input-shape",
                )
    return symbol


def _bound_dims(vi, shapes_in: dict, symbol: dict, batch: int | None, where: str) -> list[int]:
    shp = shape_of(vi)
    if shp is None:
        if vi.name not in shapes_in:
            raise InputError(
                f"graph input {vi.name!r} has no shape: give --input-shape {vi.name}=...", where=where
            )
        shp = [None] * len(shapes_in[vi.name])
    new = []
    for i, c in enumerate(shp):
        if vi.name in shapes_in:
            v = shapes_in[vi.name][i]
        elif isinstance(c, int) and c > 0:
            v = c
            if i == 0 and batch is not None and c != batch:
                raise InputError(
                    f"input {vi.name!r} has a fixed leading dimension {c}; --batch {batch} cannot "
                    "change it (export the model with a dynamic batch axis)",
                    where="--batch",
                )
        elif isinstance(c, str) and c in symbol:
            v = symbol[c]
        elif i == 0 and batch is not None:
            v = batch
            if isinstance(c, str):
                symbol.setdefault(c, batch)
        else:
            label = repr(c) if isinstance(c, str) else f"#{i}"
            raise InputError(
                f"dimension {label} of input {vi.name!r} is unresolved: give --input-shape "
                f"{vi.name}=" + "x".join(str(x) if isinstance(x, int) and x > 0 else "N" for x in shp),
                where=where,
            )
        new.append(v)
    return new


def bind_inputs(g, inits, shapes_in: dict, batch: int | None, where: str) -> dict[str, int]:
    """Give every graph input concrete dimensions (--input-shape, then its symbols, then --batch);
    returns the symbol values used, for the model's value_info."""
    graph_inputs = [vi for vi in g.input if vi.name not in inits]
    names = {vi.name for vi in graph_inputs}
    for k in shapes_in:
        if k not in names:
            raise InputError(
                f"no graph input named {k!r} (inputs: {', '.join(sorted(names)) or 'none'})",
                where="--input-shape",
            )
    symbol = _given_symbols(graph_inputs, shapes_in)
    for vi in graph_inputs:
        new = _bound_dims(vi, shapes_in, symbol, batch, where)
        dims = vi.type.tensor_type.shape.dim
        del dims[:]
        for v in new:
            dims.add().dim_value = int(v)
    # the same symbol means the same size in the model's own value_info and outputs
    for vi in list(g.value_info) + list(g.output):
        if vi.type.HasField("tensor_type") and vi.type.tensor_type.HasField("shape"):
            for dim in vi.type.tensor_type.shape.dim:
                if dim.HasField("dim_param") and dim.dim_param in symbol:
                    dim.dim_value = int(symbol[dim.dim_param])
    return symbol
