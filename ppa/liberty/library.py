"""One Liberty library as one object: its header, cells, pins and tables, and the cells the flows need.

:func:`load_liberty` reads a file's header into a :class:`LibertyLibrary`; the file is parsed once per
(path, SHA-256) in a process and every query of the object reads that parse. Timing
(ppa.timing: mapping, buffer trees, OpenSTA, FO4) and energy (ppa.liberty.energy) ask it:

* cells: by name, their pins (direction, capacitance), area;
* the cells a flow needs: the smallest inverter and buffer, the strongest data buffer (for
  ppa.timing.buffer's trees), the clock buffers, the flip-flops and the plain D flip-flop that
  registers the STA wrapper's ports;
* tables: one NLDM table at an input slew and an output load (bilinear, extrapolated linearly, as
  NLDM lookup does), a pin's internal energy per transition, an output's transition time, a
  flip-flop's clock-pin energy per cycle.

Conventions: LibertyLibrary ``rise_power`` / ``fall_power`` are energies per rising / falling transition
of the pin (energy unit = voltage unit x capacitance unit); pJ, pF and ns throughout.
"""

from __future__ import annotations

import hashlib
import os
import re
import shutil
import subprocess
from dataclasses import dataclass
from functools import cached_property, lru_cache
from pathlib import Path

from hw.errors import InputError
from ppa.liberty import parse as _lib

#: The Debian package ``qflow-tech-osu018``: OSU (Oklahoma State University) 0.18 um standard
#: cells for TSMC 0.18 um, 1.8 V (the file's nom_voltage) [P] osu018_stdcells.lib.
OSU018_PATH = "/usr/share/qflow/tech/osu018/osu018_stdcells.lib"
OSU018_NODE_NM = (
    180  # [P] "osu018" = OSU cells for the 0.18 um process (qflow-tech-osu018 package description)
)

#: Largest Liberty file read. [A] 2 GiB: PDK libraries with NLDM tables are tens to hundreds of MB.
MAX_LIBERTY_BYTES = 2 * 2**30


@lru_cache(maxsize=16)
def _parse_cached(path: str, digest: str) -> _lib.Group:
    text = Path(path).read_bytes().decode("utf-8")
    return _lib.parse(text, where=path)


def _library_group(path: str, digest: str) -> _lib.Group:
    root = _parse_cached(path, digest)
    libs = root.sub("library")
    if not libs:
        raise InputError("no library( ... ) group: not a Liberty file", where=path)
    return libs[0]


def cell_area(c: _lib.Group) -> float:
    """A cell group's ``area`` (inf when it has none or it is unreadable)."""
    try:
        return float(c.attr("area", "inf"))
    except ValueError:
        return float("inf")


def is_clock_cell(c: _lib.Group) -> bool:
    """Clock buffers (name or footprint with "clk", e.g. osu018's CLKBUF1-3) are reserved for the
    clock tree [A: the usual dont_use for data nets in implementation flows]."""
    return "clk" in c.name.lower() or "clk" in str(c.attr("cell_footprint", "")).lower()


#: Hold and delay buffers are for hold fixing, not for driving data nets [A]: ASAP7's HB1xp67-HB4xp67
#: (a buffer's function, but slow by design; ORFS's ASAP7 dont-use list ``*xp*`` covers them), and the
#: DLY*/DEL* delay cells of other libraries. No flow here picks them as a buffer or an inverter.
_HOLD_OR_DELAY = re.compile(r"^(HB\d|DLY|DEL)", re.I)


#: a unit-drive cell name: X1 / x1 not followed by a digit or a fraction's "p" (INVX1, INVx1_ASAP7_75t_R)
_UNIT_DRIVE = re.compile(r"x1(?![0-9p])", re.I)


def is_hold_or_delay_cell(c: _lib.Group) -> bool:
    return bool(_HOLD_OR_DELAY.match(c.name))


def _is_buffer(a: str) -> tuple[str, str]:
    return a, f"({a})"


def _is_inverter(a: str) -> tuple[str, ...]:
    return f"!{a}", f"(!{a})", f"{a}'", f"({a}')", f"!({a})"


@dataclass(frozen=True)
class LibertyLibrary:
    """One Liberty file: its header (the fields) and, read from its parse, its cells and tables."""

    path: str
    sha256: str
    library: str  # the library group's name
    nominal_voltage_v: float
    node_nm: int | None  # the process node: from the file, or --liberty-node; None if neither says
    time_unit_s: float  # e.g. 1e-9 for "1ns"
    cap_unit_f: float  # e.g. 1e-12 for (1, pf)
    cells: int  # number of cell groups

    @property
    def name(self) -> str:
        return self.library

    def describe(self) -> str:
        node = f"{self.node_nm} nm" if self.node_nm else "node unknown"
        return f"{self.library} ({Path(self.path).name}, {node}, {self.nominal_voltage_v:g} V)"

    def to_json(self) -> dict:
        return {
            "library": self.library,
            "path": self.path,
            "sha256": self.sha256,
            "node_nm": self.node_nm,
            "nominal_voltage_v": self.nominal_voltage_v,
        }

    # -- the parsed file -------------------------------------------------------------------------
    @property
    def group(self) -> _lib.Group:
        """The ``library`` group of the file (parsed once per path and digest)."""
        return _library_group(self.path, self.sha256)

    def cell_groups(self) -> list[_lib.Group]:
        return self.group.sub("cell")

    def cell(self, name: str) -> _lib.Group:
        for c in self.cell_groups():
            if c.name == name:
                return c
        raise InputError(f"no cell {name} in the library", where=self.path)

    @staticmethod
    def pins(cell: _lib.Group) -> dict[str, _lib.Group]:
        """A cell group's pin groups by pin name."""
        out = {}
        for pg in cell.sub("pin"):
            for nm in pg.args:
                out[nm] = pg
        return out

    def pin_info(self) -> dict[str, dict[str, tuple[str, float]]]:
        """cell -> pin -> (direction, capacitance in the library's unit)."""
        return self._pin_info

    @cached_property
    def _pin_info(self) -> dict[str, dict[str, tuple[str, float]]]:
        out = {}
        for c in self.cell_groups():
            d = {}
            for n, g in self.pins(c).items():
                try:
                    cap = float(g.attr("capacitance", 0.0))
                except (TypeError, ValueError):
                    cap = 0.0
                d[n] = (str(g.attr("direction", "")), cap)
            out[c.name] = d
        return out

    def template(self, name: str) -> _lib.Group:
        """The ``power_lut_template`` or ``lu_table_template`` called ``name``."""
        for kind in ("power_lut_template", "lu_table_template"):
            for g in self.group.sub(kind):
                if g.name == name:
                    return g
        raise InputError(f"no table template {name}", where=self.path)

    # -- the cells the flows need ----------------------------------------------------------------
    def _one_in_one_out_cells(self, want) -> list[tuple[_lib.Group, str, str]]:
        """(cell group, input pin, output pin) of every usable one-input one-output cell whose
        function (spaces and quotes removed) is in ``want(input pin)``."""
        out = []
        for c in self.cell_groups():
            if c.attr("dont_use") == "true" or is_hold_or_delay_cell(c):
                continue
            pins = self.pins(c)
            ins = [n for n, g in pins.items() if g.attr("direction") == "input"]
            outs = [n for n, g in pins.items() if g.attr("direction") == "output"]
            if len(ins) != 1 or len(outs) != 1:
                continue
            fn = str(pins[outs[0]].attr("function", "")).replace(" ", "").replace('"', "")
            if fn in want(ins[0]):
                out.append((c, ins[0], outs[0]))
        return out

    def _smallest(self, want, prefer=None) -> tuple[str, str, str] | None:
        """The smallest-area cell of :meth:`_one_in_one_out_cells`; of equal areas one that
        ``prefer(cell group)`` accepts, then the first in the file."""
        best = None
        for c, a, y in self._one_in_one_out_cells(want):
            key = (cell_area(c), not (prefer is not None and prefer(c)))
            if best is None or key < best[0]:
                best = (key, c.name, a, y)
        return None if best is None else best[1:]

    def inverter(self) -> tuple[str, str, str]:
        """(cell, input pin, output pin) of the smallest-area inverter of the library; of equal areas
        the unit-drive one, named X1 (the FO4 inverter: osu018's INVX1 beside INVX2, ASAP7's INVx1
        beside the fractional-drive INVxp33, both pairs of one area)."""
        best = self._smallest(_is_inverter, prefer=lambda c: bool(_UNIT_DRIVE.search(c.name)))
        if best is None:
            raise InputError(
                "the library has no inverter (a cell whose function is !A of its one input)", where=self.path
            )
        return best

    def buffer(self) -> tuple[str, str, str]:
        """(cell, input pin, output pin) of the smallest-area non-inverting buffer of the library."""
        b = self._smallest(_is_buffer)
        if b is None:
            raise InputError(
                "the library has no buffer (a cell whose function is its one input)", where=self.path
            )
        return b

    def buffers(self) -> list[tuple[_lib.Group, str, str]]:
        """(cell group, input pin, output pin) of every usable non-inverting buffer of the library (a
        cell whose function is its one input); raises InputError when it has none."""
        out = self._one_in_one_out_cells(_is_buffer)
        if not out:
            self.buffer()  # raises the library's InputError
        return out

    def drive_buffer(self) -> tuple[str, str, str, float, float]:
        """(cell, input pin, output pin, input capacitance, area) of the library's strongest data
        buffer: the largest-area cell whose function is its one input, clock buffers excluded
        (BUFX4 in osu018); the strongest clock buffer when the library has no other buffer."""
        cells = self.buffers()
        data = [(c, a, y) for c, a, y in cells if not is_clock_cell(c)]
        c, a, y = max(data or cells, key=lambda cay: cell_area(cay[0]))
        return c.name, a, y, float(self.pins(c)[a].attr("capacitance", 0.0)), cell_area(c)

    def clock_buffers(self) -> list[tuple[str, str, str]]:
        """(cell, input, output) of the library's non-inverting one-in one-out cells named or
        footprinted as clock cells (CLKBUF1-3 in osu018); the data buffers when it has none."""
        cells = self.buffers()
        clock = [(c.name, a, y) for c, a, y in cells if is_clock_cell(c)]
        return clock or [(c.name, a, y) for c, a, y in cells]

    def flops(self) -> dict[str, tuple[str, str, str]]:
        """Cells with an ``ff`` group: name -> (clock pin, data pin or "", output pin or "")."""
        out = {}
        for c in self.cell_groups():
            ffs = c.sub("ff")
            if not ffs:
                continue
            ff = ffs[0]
            clk = str(ff.attr("clocked_on", "")).strip('"').strip()
            nxt = str(ff.attr("next_state", "")).strip('"').strip()
            state = set(ff.args)
            q = ""
            for n, g in self.pins(c).items():
                if (
                    g.attr("direction") == "output"
                    and str(g.attr("function", "")).strip('"').strip() in state
                ):
                    q = n
                    break
            out[c.name] = (clk, nxt if re.fullmatch(r"\w+", nxt) else "", q)
        return out

    def register(self) -> tuple[str, str, str, str]:
        """(cell, clock pin, D pin, Q pin) of the smallest plain positive-edge D flip-flop (no set,
        reset or enable): the STA wrapper's input / output registers."""
        best = None
        for name, (clk, d, q) in self.flops().items():
            c = self.cell(name)
            ff = c.sub("ff")[0]
            if not d or not q or not re.fullmatch(r"\w+", clk) or ff.attr("clear") or ff.attr("preset"):
                continue
            if len([n for n, g in self.pins(c).items() if g.attr("direction") == "input"]) != 2:
                continue
            if best is None or cell_area(c) < best[0]:
                best = (cell_area(c), name, clk, d, q)
        if best is None:
            raise InputError("the library has no plain D flip-flop", where=self.path)
        return best[1:]

    # -- tables ------------------------------------------------------------------------------------
    def energy_unit_pj(self) -> float:
        """The library's energy unit (voltage unit x capacitance unit) in pJ."""
        vu = self.group.attr("voltage_unit", "1V")
        return self.cap_unit_f / 1e-12 * _lib.unit_scale(str(vu), "v", self.path)

    def table_value(self, table: _lib.Group, *, slew_ns: float, load_pf: float) -> float:
        """One NLDM table (energy: ``rise_power`` / ``fall_power``; or ``rise_transition`` /
        ``fall_transition``) at an input slew and an output load, in the library's unit: bilinear
        in the table's indices, extrapolated linearly, as NLDM lookup does. 1-D tables take
        whichever of slew or load their template names; Liberty's built-in ``scalar`` template is
        one value (ASAP7's flip-flop and ICG clock pins: ``rise_power (scalar) { values ("0"); }``)."""
        vals = _lib.floats(table.attr("values"))
        if table.name == "scalar":
            return vals[0]
        tmpl = self.template(table.name)
        idx = []
        for k in (1, 2):
            own = table.attr(f"index_{k}")
            src = own if own is not None else tmpl.attr(f"index_{k}")
            if src is None:
                break
            idx.append((str(tmpl.attr(f"variable_{k}", "")), _lib.floats(src)))
        if not idx:
            return vals[0]

        def arg(var: str) -> float:
            if "capacitance" in var:
                return load_pf * 1e-12 / self.cap_unit_f
            if "transition" in var:
                return slew_ns * 1e-9 / self.time_unit_s
            raise InputError(f"table {table.name}: unsupported variable {var!r}", where=self.path)

        if len(idx) == 1:
            return _lib.interp1(idx[0][1], vals, arg(idx[0][0]))
        (v1, i1), (v2, i2) = idx
        if len(vals) != len(i1) * len(i2):
            raise InputError(
                f"table {table.name}: {len(vals)} values for a {len(i1)} x {len(i2)} table", where=self.path
            )
        rows = [vals[r * len(i2) : (r + 1) * len(i2)] for r in range(len(i1))]
        col = [_lib.interp1(i2, row, arg(v2)) for row in rows]
        return _lib.interp1(i1, col, arg(v1))

    def pin_internal_pj(
        self, cell: str, pin: str, *, slew_ns: float, load_pf: float = 0.0
    ) -> tuple[float, float]:
        """(rise, fall) internal energy of ``cell``'s pin per transition, pJ, mean over its
        ``internal_power`` groups (related pins / ``when`` conditions). (0, 0) when it has none."""
        g = self.pins(self.cell(cell)).get(pin)
        if g is None:
            raise InputError(f"{cell} has no pin {pin}", where=self.path)
        rise: list[float] = []
        fall: list[float] = []
        for ip in g.sub("internal_power"):
            for kind, acc in (("rise_power", rise), ("fall_power", fall)):
                t = ip.sub(kind)
                if t:
                    acc.append(self.table_value(t[0], slew_ns=slew_ns, load_pf=load_pf))
        u = self.energy_unit_pj()
        mean = lambda xs: sum(xs) / len(xs) if xs else 0.0  # noqa: E731
        return mean(rise) * u, mean(fall) * u

    def pin_cap_pf(self, cell: str, pin: str) -> float:
        """Input capacitance of ``cell``'s pin, pF (0 when it states none)."""
        g = self.pins(self.cell(cell)).get(pin)
        try:
            return float(g.attr("capacitance", 0.0)) * self.cap_unit_f / 1e-12 if g is not None else 0.0
        except (TypeError, ValueError):
            return 0.0

    def output_transition_ns(self, cell: str, pin: str, *, slew_ns: float, load_pf: float) -> float:
        """The slower of the rising and falling output transitions of ``cell``'s output ``pin`` (ns)
        at an input slew and a load, from its ``rise_transition`` / ``fall_transition`` tables."""
        g = self.pins(self.cell(cell)).get(pin)
        worst = 0.0
        for tg in g.sub("timing") if g is not None else []:
            for kind in ("rise_transition", "fall_transition"):
                t = tg.sub(kind)
                if t:
                    ns = self.table_value(t[0], slew_ns=slew_ns, load_pf=load_pf) * self.time_unit_s / 1e-9
                    worst = max(worst, ns)
        if worst <= 0:
            raise InputError(f"{cell}/{pin} has no transition tables", where=self.path)
        return worst

    def clock_pin_energy_pj(self, cell: str, slew_ns: float) -> float:
        """Internal energy drawn at a flip-flop's clock pin per clock cycle (one rising + one falling
        edge), pJ, at input slew ``slew_ns``: :meth:`pin_internal_pj` of the clock pin (several
        ``internal_power`` groups, e.g. ``when`` conditions, are averaged)."""
        clk = self.flops().get(cell, ("", "", ""))[0]
        if not clk:
            raise InputError(f"{cell} is not a flip-flop", where=self.path)
        rise, fall = self.pin_internal_pj(cell, clk, slew_ns=slew_ns)
        return rise + fall


# ------------------------------------------------------------------------------------------------
# reading a file
# ------------------------------------------------------------------------------------------------

_NODE_IN_TEXT = re.compile(r"(?<![0-9.])(\d{1,3})\s*nm\b|(?<![0-9.])(0?\.\d{2,3})\s*u(?:m|icron)\b", re.I)


def _node_from_file(top: _lib.Group) -> int | None:
    """A node the file itself states, in the library's ``comment``, ``technology`` or
    ``revision``-like free text attributes (e.g. "45nm", "0.18um"); None if none says."""
    texts = []
    for k in ("comment", "technology", "revision", "process"):
        for v in top.attrs.get(k, []):
            texts.append(" ".join(v) if isinstance(v, list) else str(v))
    for t in texts:
        m = _NODE_IN_TEXT.search(t)
        if m:
            return int(m.group(1)) if m.group(1) else int(round(float(m.group(2)) * 1000))
    return None


#: Largest process node (nm) a Liberty file may be of. [A] 1 um: far older than any library the
#: timing model is used with (osu018, the default, is 180 nm).
MAX_LIBERTY_NODE_NM = 1000


def load_liberty(path: str | os.PathLike, node_nm: int | None = None) -> LibertyLibrary:
    """Read a Liberty file's header: library name, nom_voltage, time and capacitance units, the
    node when the file states it (``node_nm`` overrides, e.g. from ``--liberty-node``).

    A missing, unreadable, non-UTF-8 or malformed file (no ``library(`` group, no cells, no
    nom_voltage, unreadable units) raises InputError naming the path."""
    p = str(path)
    where = p
    if node_nm is not None and (
        isinstance(node_nm, bool) or not isinstance(node_nm, int) or not 1 <= node_nm <= MAX_LIBERTY_NODE_NM
    ):
        raise InputError(
            f"must be a node in nm (1..{MAX_LIBERTY_NODE_NM}), got {node_nm!r}", where="--liberty-node"
        )
    try:
        if Path(p).exists() and not Path(p).is_file():  # a FIFO or a device (/dev/zero) would never end
            raise InputError("not a regular file", where=where)
        if Path(p).exists() and Path(p).stat().st_size > MAX_LIBERTY_BYTES:
            raise InputError(f"larger than {MAX_LIBERTY_BYTES // 2**30} GiB", where=where)
        raw = Path(p).read_bytes()
    except OSError as exc:
        raise InputError(f"cannot read Liberty file: {exc.strerror or exc}", where=where) from None
    try:
        raw.decode("utf-8")
    except UnicodeDecodeError as exc:
        raise InputError(f"not a UTF-8 text file ({exc.reason} at byte {exc.start})", where=where) from None
    digest = hashlib.sha256(raw).hexdigest()
    lib = _library_group(p, digest)
    cells = lib.sub("cell")
    if not cells:
        raise InputError("the library has no cell groups", where=where)
    nv = lib.attr("nom_voltage")
    if nv is None:
        raise InputError("no nom_voltage in the library header", where=where)
    try:
        v = float(nv)
    except ValueError:
        raise InputError(f"nom_voltage {nv!r} is not a number", where=where) from None
    if not 0.1 <= v <= 10:
        raise InputError(f"nom_voltage {v:g} V is not a plausible supply", where=where)
    tu = lib.attr("time_unit")
    if tu is None:
        raise InputError("no time_unit in the library header", where=where)
    t_s = _lib.unit_scale(str(tu), "s", where)
    cu = lib.attr("capacitive_load_unit")
    if not isinstance(cu, list) or len(cu) != 2:
        raise InputError("no capacitive_load_unit (value, unit) in the library header", where=where)
    try:
        c_f = float(cu[0]) * _lib.unit_scale(cu[1], "f", where)
    except ValueError:
        raise InputError(f"capacitive_load_unit {cu!r} unreadable", where=where) from None
    stated = _node_from_file(lib)
    if node_nm is not None and stated is not None and node_nm != stated:
        raise InputError(
            f"{node_nm} nm contradicts the node the Liberty file states ({stated} nm, {p}); "
            "--liberty-node is for a file that does not state its node",
            where="--liberty-node",
        )
    node = node_nm if node_nm is not None else stated
    return LibertyLibrary(
        path=str(Path(p).resolve()),
        sha256=digest,
        library=lib.name,
        nominal_voltage_v=v,
        node_nm=node,
        time_unit_s=t_s,
        cap_unit_f=c_f,
        cells=len(cells),
    )


def default_liberty_path() -> str | None:
    """Where the Debian ``qflow-tech-osu018`` package put osu018_stdcells.lib, or None."""
    if os.path.isfile(OSU018_PATH):
        return OSU018_PATH
    dpkg = shutil.which("dpkg")
    if dpkg:
        try:
            out = subprocess.run(
                [dpkg, "-L", "qflow-tech-osu018"], capture_output=True, text=True, timeout=20
            ).stdout
        except (OSError, subprocess.SubprocessError):
            return None
        for line in out.splitlines():
            if line.endswith("/osu018_stdcells.lib") and os.path.isfile(line):
                return line
    return None


def default_liberty() -> LibertyLibrary | None:
    """The OSU 0.18 um library (180 nm, 1.8 V) when the qflow-tech-osu018 package is installed."""
    p = default_liberty_path()
    return load_liberty(p, OSU018_NODE_NM) if p else None
