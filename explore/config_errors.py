"""A pydantic validation error of the sweep config (:mod:`explore.config`) as one line naming the
dotted key, what the key takes (its type and its ge/gt/le/lt range) and the value given."""

from __future__ import annotations

import re
from typing import Any

from pydantic import BaseModel, ValidationError

from hw.host import printable

_UNION_TAGS = ("Range", "int", "float", "str", "bool", "list")


def _loc(loc: tuple[Any, ...]) -> str:
    """pydantic error location -> dotted key (union member tags like 'list[any]' dropped)."""
    parts: list[str] = []
    for p in loc:
        if isinstance(p, int):
            parts.append(f"[{p}]")
        elif isinstance(p, str) and ("[" in p or "(" in p or p in _UNION_TAGS):
            continue
        else:
            parts.append(("." if parts else "") + str(p))
    return "".join(parts)


#: pydantic's strict type errors -> what the key takes (types are strict: no string for a number)
_TYPE_NAMES = {
    "int_type": "an integer",
    "float_type": "a number",
    "bool_type": "true or false",
    "string_type": "a string",
    "dict_type": "a table",
    "list_type": "a list",
    "model_type": "a table",
}


def _field_range(root: type[BaseModel], loc: tuple[Any, ...]) -> str:
    """The allowed range of the field at ``loc`` of ``root`` (its ge/gt/le/lt bounds): " in [1, 100000]",
    " > 0", ""."""
    model: Any = root
    info = None
    for part in loc:
        if isinstance(part, int):
            continue
        fields = getattr(model, "model_fields", None)
        if not fields or part not in fields:
            return ""
        info = fields[part]
        ann = info.annotation
        model = next(
            (
                a
                for a in [ann, *getattr(ann, "__args__", ())]
                if isinstance(a, type) and hasattr(a, "model_fields")
            ),
            None,
        )
    if info is None:
        return ""
    bound = {
        k: getattr(m, k)
        for m in info.metadata
        for k in ("ge", "gt", "le", "lt")
        if getattr(m, k, None) is not None
    }
    lo = ("[", bound["ge"]) if "ge" in bound else ("(", bound["gt"]) if "gt" in bound else None
    hi = ("]", bound["le"]) if "le" in bound else (")", bound["lt"]) if "lt" in bound else None
    if lo and hi:
        return f" in {lo[0]}{_num(lo[1])}, {_num(hi[1])}{hi[0]}"
    if lo:
        return f" {'>=' if lo[0] == '[' else '>'} {_num(lo[1])}"
    if hi:
        return f" {'<=' if hi[0] == ']' else '<'} {_num(hi[1])}"
    return ""


def _num(x: Any) -> str:
    return str(x) if isinstance(x, int) else f"{x:g}"


def _got(v: Any) -> str:
    kind = {str: "a string", bool: "a boolean", int: "an integer", float: "a number"}.get(type(v))
    return f"got {printable(repr(v))}" + (f" ({kind})" if kind else "")


def one_line_error(exc: ValidationError, root: type[BaseModel]) -> str:
    """The first error of ``exc`` (a validation of ``root``) as one line ``dotted.key: what``."""
    errs = exc.errors()
    # For union axes pydantic reports one error per member; an unknown key wins, else the first.
    for e in errs:
        if e["type"] == "extra_forbidden":
            return f"{_loc(e['loc'])}: unknown key"
    e = errs[0]
    where = _loc(e["loc"])
    scalar = where and not isinstance(e.get("input"), (dict, list))
    if e["type"] in _TYPE_NAMES and scalar:
        return (
            f"{where}: must be {_TYPE_NAMES[e['type']]}{_field_range(root, e['loc'])}, {_got(e.get('input'))}"
        )
    if e["type"] in ("greater_than_equal", "greater_than", "less_than_equal", "less_than") and scalar:
        return f"{where}: must be{_field_range(root, e['loc']) or ' ' + e['msg'].lower()}, {_got(e.get('input'))}"
    msg = e["msg"].removeprefix("Value error, ")
    if e["type"] == "literal_error" and scalar:
        msg = f"{msg}, {_got(e.get('input'))}"
    # a section validator names its key first ("rows.step: ..."): make it the dotted key
    m = re.match(r"([A-Za-z_][\w.]*): (.*)", msg)
    if m and where in ("space", "fixed", "limits", "serving", "study", "quality"):
        where, msg = f"{where}.{m.group(1)}", m.group(2)
    return f"{where}: {msg}" if where else msg
