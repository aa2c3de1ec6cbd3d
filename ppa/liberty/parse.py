"""A Liberty (.lib) reader: the group / attribute tree, enough of it to know the library.

Liberty syntax (Synopsys Liberty reference, "Library-level syntax"): groups ``name (args) { ... }``,
simple attributes ``name : value ;`` (the ``;`` may be left out at the end of a line, as ASAP7's
INVBUF cells do and as Yosys and OpenSTA accept), complex attributes ``name (v1, v2, ...) ;``, C
comments and backslash line continuations. This reader keeps that tree and nothing else;
ppa.liberty.library reads the header (units, nominal voltage), the cells, their pins, and the few
tables the flows need (internal energies, transition times) from it. Delays are never computed
here: OpenSTA does that.
"""

from __future__ import annotations

import re
from dataclasses import dataclass, field

from hw.errors import InputError


@dataclass
class Group:
    """One Liberty group: ``kind (args) { attrs; groups }``."""

    kind: str
    args: list[str]
    attrs: dict[str, list] = field(
        default_factory=dict
    )  # name -> list of values (simple: [str], complex: [list[str]])
    groups: list[Group] = field(default_factory=list)

    def attr(self, name: str, default=None):
        """The last value of a simple (or complex) attribute."""
        v = self.attrs.get(name)
        return v[-1] if v else default

    def sub(self, kind: str) -> list[Group]:
        return [g for g in self.groups if g.kind == kind]

    @property
    def name(self) -> str:
        return self.args[0] if self.args else ""


_TOKEN = re.compile(
    r"\s+|/\*.*?\*/|//[^\n]*|\\\r?\n"  # whitespace, comments, line continuations (skipped)
    r'|(?P<str>"(?:[^"\\]|\\.)*")'
    r"|(?P<punct>[(){};:,])"
    r'|(?P<word>[^\s(){};:,"]+)',
    re.S,
)


def _tokens(text: str, where: str):
    """(kind, value, newline_before) per token: ``newline_before`` says a line ended (not a
    backslash continuation) between the previous token and this one."""
    pos = 0
    n = len(text)
    nl = False
    while pos < n:
        m = _TOKEN.match(text, pos)
        if m is None:
            line = text.count("\n", 0, pos) + 1
            raise InputError(f"malformed Liberty at line {line}: {text[pos : pos + 20]!r}", where=where)
        pos = m.end()
        if m.lastgroup == "str":
            yield "str", m.group("str")[1:-1].replace("\\\n", "").replace("\\\r\n", ""), nl
        elif m.lastgroup == "punct":
            yield "p", m.group("punct"), nl
        elif m.lastgroup == "word":
            yield "w", m.group("word"), nl
        else:
            nl = nl or ("\n" in m.group(0) and not m.group(0).startswith("\\"))
            continue
        nl = False


def parse(text: str, where: str = "liberty") -> Group:
    """Parse Liberty text into its top group (normally ``library (name) { ... }``).

    Raises InputError (``where``) on a syntax error or when the text holds no group."""
    toks, nls = [], []
    for kind, value, nl in _tokens(text, where):
        toks.append((kind, value))
        nls.append(nl)
    i = 0

    def err(msg: str) -> InputError:
        return InputError(f"malformed Liberty: {msg}", where=where)

    def value_list(j: int) -> tuple[list[str], int]:
        # after '(' up to the matching ')'
        vals: list[str] = []
        while True:
            if j >= len(toks):
                raise err("unterminated '('")
            t, v = toks[j]
            if t == "p" and v == ")":
                return vals, j + 1
            if t == "p" and v == ",":
                j += 1
                continue
            if t == "p":
                raise err(f"unexpected {v!r} in an argument list")
            vals.append(v)
            j += 1

    def group_body(g: Group, j: int) -> int:
        while True:
            if j >= len(toks):
                raise err(f"group {g.kind}({', '.join(g.args)}) is not closed")
            t, v = toks[j]
            if t == "p" and v == "}":
                return j + 1
            if t == "p" and v == ";":
                j += 1
                continue
            if t == "p":
                raise err(f"unexpected {v!r} in group {g.kind}")
            name = v
            j += 1
            if j >= len(toks):
                raise err(f"attribute {name} has no value")
            t, v = toks[j]
            if t == "p" and v == ":":
                j += 1
                parts: list[str] = []
                while j < len(toks) and not (toks[j][0] == "p" and toks[j][1] in ";}"):
                    if parts and nls[j]:
                        break  # a simple attribute ended by its line, without ';' (ASAP7's "area : X")
                    if toks[j][0] == "p" and toks[j][1] not in ":,":
                        raise err(f"unexpected {toks[j][1]!r} in attribute {name}")
                    parts.append(toks[j][1])
                    j += 1
                if not parts:
                    raise err(f"attribute {name} has no value")
                g.attrs.setdefault(name, []).append(" ".join(parts))
            elif t == "p" and v == "(":
                args, j = value_list(j + 1)
                if j < len(toks) and toks[j] == ("p", "{"):
                    child = Group(name, args)
                    j = group_body(child, j + 1)
                    g.groups.append(child)
                else:
                    g.attrs.setdefault(name, []).append(args)
            else:
                raise err(f"expected ':' or '(' after {name!r}")

    root = Group("<file>", [])
    while i < len(toks):
        t, v = toks[i]
        if t != "w":
            raise err(f"unexpected {v!r} at top level")
        if i + 1 >= len(toks) or toks[i + 1] != ("p", "("):
            raise err(f"expected '(' after {v!r} at top level")
        args, j = value_list(i + 2)
        if j >= len(toks) or toks[j] != ("p", "{"):
            raise err(f"expected '{{' after {v}({', '.join(args)})")
        g = Group(v, args)
        i = group_body(g, j + 1)
        root.groups.append(g)
    if not root.groups:
        raise err("no group")
    return root


def floats(text) -> list[float]:
    """``"0.1, 0.2"`` (or a list of such strings) -> [0.1, 0.2]."""
    if isinstance(text, list):
        return [x for t in text for x in floats(t)]
    return [float(x) for x in str(text).replace(",", " ").split()]


def interp1(xs: list[float], ys: list[float], x: float) -> float:
    """Piecewise-linear in ``xs`` (sorted), linear extrapolation past either end, as NLDM lookup does."""
    if len(xs) == 1:
        return ys[0]
    k = 1
    while k < len(xs) - 1 and x > xs[k]:
        k += 1
    x0, x1, y0, y1 = xs[k - 1], xs[k], ys[k - 1], ys[k]
    return y0 + (y1 - y0) * (x - x0) / (x1 - x0)


_UNIT = re.compile(r"^\s*([0-9.eE+-]*)\s*([a-zA-Z]+)\s*$")
_SCALE = {"f": 1e-15, "p": 1e-12, "n": 1e-9, "u": 1e-6, "m": 1e-3, "": 1.0}


def unit_scale(text: str, base: str, where: str) -> float:
    """``"1ns"`` with base ``"s"`` -> 1e-9 (SI value of one unit); ``("1", "pf")`` forms too."""
    m = _UNIT.match(text.replace('"', ""))
    if not m:
        raise InputError(f"cannot read unit {text!r}", where=where)
    num = float(m.group(1)) if m.group(1) else 1.0
    word = m.group(2).lower()
    if not word.endswith(base.lower()):
        raise InputError(f"unit {text!r} is not a {base} unit", where=where)
    prefix = word[: -len(base)]
    if prefix not in _SCALE:
        raise InputError(f"unknown unit prefix in {text!r}", where=where)
    return num * _SCALE[prefix]
