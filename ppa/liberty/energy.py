"""Clock and flip-flop energy read from a Liberty library, in toggle-equivalents of that library.

ppa.model costs switching activity in *net toggles*: ``ppa.tech.Node.toggle_energy_pj`` is the
energy of one gate-output toggle of the calibration multiplier (Horowitz at 45 nm, Jouppi at 7 nm;
ppa.calibration). Two energies are not toggles of logic nets, and this module reads them from the
library the design is timed with (ppa.timing.sta), the way the timing reads FO4:

* the **clock**, per flip-flop per cycle: the flip-flop's clock-pin internal energy (Liberty
  ``internal_power`` of the clock pin, one rising + one falling edge), the clock pin's capacitance
  charged and discharged once (C V^2), the clock wiring (``CLOCK_WIRE_FRACTION`` x the pin
  capacitance, an assumption: no placement), and a balanced tree of the library's clock buffer
  (each buffer driving as many loads as keep its output transition within ``CLOCK_MAX_SLEW_FO4``
  FO4 slews; its output internal energy for two edges per cycle and its input capacitance
  switched, per flip-flop of the tree);
* the **flip-flop data toggle**: when a flip-flop's output toggles, its D pin has switched and its Q
  pin switches, each drawing the library's internal energy on top of the Q net's own switching.

Both are expressed in units of the library's own energy per logic toggle: the calibration
multiplier (ppa.operators ``mul8``) mapped to the library by the ppa.timing.sta flow (area mapping), each
mapped net costed at 1/2 C V^2 (the capacitance of the pins it drives; an output port drives one
flip-flop D pin [A: the operator's result is registered]) plus its driver's output internal energy
(mean of the rising and falling tables at that load and the library's FO4 slew), summed over the
mapped nets, divided by the number of nets of the *generic* netlist whose toggles calibrate
``toggle_energy_pj`` [D: the same mean toggle rate per net in both netlists; 316 mapped against
338 generic nets for osu018]. The ratio is node-independent as far as clock and logic energy scale
alike with C V^2, which is how FO4 moves timing between nodes (ppa.timing.sta): ppa.model multiplies it by
the target node's ``toggle_energy_pj``.

Conventions: LibertyLibrary ``rise_power`` / ``fall_power`` are energies per rising / falling transition
of the pin (energy unit = voltage unit x capacitance unit). OpenSTA 2.0.17's ``report_power``
reads the same tables (tests/ppa/test_liberty_energy.py compares the lookups); it charges an input
pin's rise + fall energy on every transition, twice the per-cycle energy read here.

Not modelled here (stated): clock gating (ppa.model gates the weight registers with ppa.tech's ICG
figures on top of the per-flop clock energy read here), wire
capacitance of data nets (none in the library; the timing's WIRE_ALLOWANCE is a delay figure),
the D-pin energy of a flip-flop whose D toggles and returns within a cycle.
"""

from __future__ import annotations

import hashlib
from dataclasses import asdict, dataclass
from functools import lru_cache

from hw.errors import InputError
from ppa import characterisation, rtl, synth, yosys
from ppa.liberty.library import LibertyLibrary, load_liberty
from ppa.liberty.mapped import CONNECTION, INSTANCE, module_body, net_name, port_bits
from ppa.timing.mapping import MAP_SCRIPT, map_to_liberty
from ppa.timing.opensta import measure_fo4

#: bump when the figures this module computes change meaning
LIBERTY_ENERGY_VERSION = "1"
#: [A] clock wiring capacitance per sink (and per tree level) as a fraction of the pin load it
#: serves. No placement here. Estimate behind the value: a leaf clock wire per flip-flop about the
#: flip-flop pitch (sqrt of the cell area per flip-flop of an array). At 180 nm, ~30 um at ~0.2
#: fF/um is 0.2x a 28 fF osu018 clock pin. At 7 nm, ~1.4 um (a 16 x 16 2:4 array: 1.9 um^2 of cells
#: per flip-flop at ppa.tech's realised density) at the ASAP7 platform's clock-wire 0.145 fF/um
#: (ppa.references) is 0.4x ASAP7's 0.47 fF clock pin. We take 0.5. `sparsepe validate` shows the
#: clock per flip-flop the model charges at 7 nm against ASAP7's library with that wire.
CLOCK_WIRE_FRACTION = 0.5
#: [A] a clock-tree buffer drives as many loads as keep its output transition within this many
#: FO4 slews of the library (clock tree synthesis bounds the clock's transition; the data nets'
#: FO4 slew x 2 is our stated bound)
CLOCK_MAX_SLEW_FO4 = 2.0


@dataclass(frozen=True)
class LibraryEnergy:
    """Energies of one library at its own voltage (pJ), and the ratios ppa.model uses."""

    library: str
    liberty_sha256: str
    voltage_v: float
    slew_ns: float  # the library's FO4 slew: the input slew every lookup uses
    flop_cell: str
    clock_buffer: str
    clock_leaf_fanout: int  # flip-flops per leaf clock buffer
    mapped_nets: int  # nets of the calibration multiplier mapped to the library
    generic_nets: int  # gate outputs of its generic netlist (ppa.synth), whose toggles calibrate
    net_switching_pj: float  # 1/2 C V^2 summed over the mapped nets
    net_internal_pj: float  # driver output internal energy summed over the mapped nets
    clock_pin_internal_pj: float  # per flip-flop per cycle (rise + fall)
    clock_pin_switching_pj: float  # C_clk V^2 per flip-flop per cycle
    clock_wire_pj: float  # CLOCK_WIRE_FRACTION x C_clk V^2
    clock_tree_pj: float  # the buffer tree's share per flip-flop per cycle
    ff_data_internal_pj: float  # D-pin + Q-pin internal energy per flip-flop output toggle
    version: str = LIBERTY_ENERGY_VERSION

    @property
    def toggle_pj(self) -> float:
        """The library's energy per calibration toggle (see the module docstring)."""
        return (self.net_switching_pj + self.net_internal_pj) / self.generic_nets

    @property
    def clock_pj_per_ff_cycle(self) -> float:
        return (
            self.clock_pin_internal_pj + self.clock_pin_switching_pj + self.clock_wire_pj + self.clock_tree_pj
        )

    @property
    def clock_toggles_per_ff_cycle(self) -> float:
        """Clock energy per flip-flop per cycle in toggle-equivalents (replaces
        ppa.tech.CLOCK_TOGGLES_PER_FF_CYCLE when a library is given)."""
        return self.clock_pj_per_ff_cycle / self.toggle_pj

    @property
    def ff_extra_toggles(self) -> float:
        """Toggle-equivalents a flip-flop output toggle costs on top of its own net toggle (the
        library's D- and Q-pin internal energy)."""
        return self.ff_data_internal_pj / self.toggle_pj

    def details(self) -> dict:
        d = asdict(self)
        d.update(
            toggle_pj=self.toggle_pj,
            clock_pj_per_ff_cycle=self.clock_pj_per_ff_cycle,
            clock_toggles_per_ff_cycle=self.clock_toggles_per_ff_cycle,
            ff_extra_toggles=self.ff_extra_toggles,
            clock_wire_fraction=CLOCK_WIRE_FRACTION,
            clock_max_slew_fo4=CLOCK_MAX_SLEW_FO4,
        )
        return d


# ------------------------------------------------------------------------------------------------
# the figures
# ------------------------------------------------------------------------------------------------


def net_energies(
    lib: LibertyLibrary, mapped_verilog: str, top: str, *, slew_ns: float, output_load_pf: float
) -> list[tuple[str, float, float]]:
    """(net, 1/2 C V^2, driver output internal energy per toggle) of every cell-driven net of
    ``top`` in a mapped netlist, pJ. C = the input pins it drives (+ ``output_load_pf`` when it is
    an output port); the internal energy is the mean of the rising and falling tables."""
    body = module_body(mapped_verilog, top, where="ppa.liberty.energy").group(1)
    outs = {bit for _, bit in port_bits(body, "output")}
    pins = lib.pin_info()
    cap_pf = lib.cap_unit_f / 1e-12
    load: dict[str, float] = {}
    drivers: dict[str, tuple[str, str]] = {}
    for im in INSTANCE.finditer(body):
        cell = im.group(2)
        info = pins.get(cell)
        if info is None:
            raise InputError(f"cell {cell} is not in the library", where=lib.path)
        for line in im.group(4).split("\n"):
            cm = CONNECTION.match(line)
            if not cm:
                continue
            p, net = cm.group(1), net_name(cm.group(2))
            d, c = info.get(p, ("", 0.0))
            if d == "input":
                load[net] = load.get(net, 0.0) + c * cap_pf
            elif d == "output":
                drivers[net] = (cell, p)
    v = lib.nominal_voltage_v
    out = []
    for net, (cell, p) in sorted(drivers.items()):
        c = load.get(net, 0.0) + (output_load_pf if net in outs else 0.0)
        r, f = lib.pin_internal_pj(cell, p, slew_ns=slew_ns, load_pf=c)
        out.append((net, 0.5 * c * v * v, (r + f) / 2))
    return out


def clock_tree_pj_per_ff(
    lib: LibertyLibrary, *, sink_pf: float, slew_ns: float, wire_fraction: float = CLOCK_WIRE_FRACTION
) -> tuple[float, str, int]:
    """Energy per flip-flop per cycle of a balanced tree over many flip-flops of clock-pin
    capacitance ``sink_pf``: each buffer drives as many loads as keep its output transition within
    ``CLOCK_MAX_SLEW_FO4`` x the library's FO4 slew, and the tree uses the clock buffer with the
    least energy per flip-flop. A level of buffers that each drive k loads costs 1/k of the level
    below per flip-flop (the geometric sum of the levels). Each buffer per cycle: two output edges
    of internal energy at its load, its input pin's internal energy (if any), its input capacitance
    and that wiring switched once. The wiring of each load is ``wire_fraction`` x its pin
    capacitance. Returns (pJ, buffer cell, flip-flops per leaf buffer)."""
    v = lib.nominal_voltage_v
    max_slew = CLOCK_MAX_SLEW_FO4 * slew_ns
    best = None

    def level(buf: str, y: str, c_in: float, ri: float, fi: float, load_each: float) -> tuple[float, int]:
        """(pJ per cycle of one buffer ``buf`` driving loads of ``load_each``, how many it drives)."""
        k = 1
        while (
            k < 4096
            and lib.output_transition_ns(buf, y, slew_ns=slew_ns, load_pf=(k + 1) * load_each) <= max_slew
        ):
            k += 1
        ro, fo = lib.pin_internal_pj(buf, y, slew_ns=slew_ns, load_pf=k * load_each)
        return ro + fo + ri + fi + c_in * (1 + wire_fraction) * v * v, k

    for buf, a, y in lib.clock_buffers():
        c_in = lib.pin_cap_pf(buf, a)
        ri, fi = lib.pin_internal_pj(buf, a, slew_ns=slew_ns)
        e_leaf, k_leaf = level(buf, y, c_in, ri, fi, sink_pf * (1 + wire_fraction))
        e_up, k_up = level(buf, y, c_in, ri, fi, c_in * (1 + wire_fraction))
        if k_up < 2:
            continue  # cannot drive two of itself within the transition bound: no tree of it
        # the leaf level, then the levels above it: a geometric series of ratio 1 / k_up
        total = (e_leaf + e_up / (k_up - 1)) / k_leaf
        if best is None or total < best[0]:
            best = (total, buf, k_leaf)
    if best is None:
        raise InputError(
            f"no clock buffer of the library drives two of itself within {CLOCK_MAX_SLEW_FO4:g} FO4 slews",
            where=lib.path,
        )
    return best


def compute(lib: LibertyLibrary) -> LibraryEnergy:
    """The library's figures (runs Yosys once: the calibration multiplier mapped to ``lib``)."""
    fo4 = measure_fo4(lib)
    slew = fo4.slew_ns
    ff, clk, d, q = lib.register()
    v = lib.nominal_voltage_v
    c_clk = lib.pin_cap_pf(ff, clk)
    c_d = lib.pin_cap_pf(ff, d)
    verilog, top = rtl.operator_verilog("mul", 8)
    mapped = map_to_liberty(verilog, top, lib)
    nets = net_energies(lib, mapped.verilog, top, slew_ns=slew, output_load_pf=c_d)
    generic = synth.synthesize(verilog, top).netlist()["modules"][top]["cells"]
    rc, fc = lib.pin_internal_pj(ff, clk, slew_ns=slew)
    # the Q pin's internal energy at a typical data load: the calibration netlist's mean net load
    mean_load = sum(2 * sw / (v * v) for _, sw, _ in nets) / len(nets)
    rq, fq = lib.pin_internal_pj(ff, q, slew_ns=slew, load_pf=mean_load)
    rd, fd = lib.pin_internal_pj(ff, d, slew_ns=slew)
    tree, buf, k_leaf = clock_tree_pj_per_ff(lib, sink_pf=c_clk, slew_ns=slew)
    return LibraryEnergy(
        library=lib.library,
        liberty_sha256=lib.sha256,
        voltage_v=v,
        slew_ns=slew,
        flop_cell=ff,
        clock_buffer=buf,
        clock_leaf_fanout=k_leaf,
        mapped_nets=len(nets),
        generic_nets=len(generic),
        net_switching_pj=sum(n[1] for n in nets),
        net_internal_pj=sum(n[2] for n in nets),
        clock_pin_internal_pj=rc + fc,
        clock_pin_switching_pj=c_clk * v * v,
        clock_wire_pj=CLOCK_WIRE_FRACTION * c_clk * v * v,
        clock_tree_pj=tree,
        ff_data_internal_pj=(rd + fd) / 2 + (rq + fq) / 2,
    )


def _key(lib: LibertyLibrary) -> str:
    h = hashlib.sha256()
    for part in (
        LIBERTY_ENERGY_VERSION,
        repr(CLOCK_WIRE_FRACTION),
        repr(CLOCK_MAX_SLEW_FO4),
        MAP_SCRIPT,
        yosys.yosys_id(),
        lib.sha256,
    ):
        h.update(str(part).encode())
        h.update(b"\0")
    return h.hexdigest()[:32]


@lru_cache(maxsize=8)
def _cached(path: str, sha: str, cache: str | None) -> LibraryEnergy:
    lib = load_liberty(path)
    d = characterisation.cached(
        "liberty-energy",
        _key(lib),
        lambda: asdict(compute(lib)),
        cache=cache,
        what=f"the energies of {lib.library}",
    )
    try:
        if d.get("liberty_sha256") == sha:
            return LibraryEnergy(**{k: d[k] for k in LibraryEnergy.__dataclass_fields__})
    except (KeyError, TypeError):
        pass
    return compute(lib)


def clock_with_leaf_wire(lib: LibertyLibrary, wire_pf: float, *, cache=None) -> tuple[float, float]:
    """The library's clock energy per flip-flop per cycle with ``wire_pf`` of clock wiring per
    flip-flop (and the same fraction of each tree buffer's input) in place of CLOCK_WIRE_FRACTION:
    (pJ, toggle-equivalents of the library)."""
    e = library_energy(lib, cache=cache)
    ff, clk, _, _ = lib.register()
    c = lib.pin_cap_pf(ff, clk)
    f = wire_pf / c
    tree, _, _ = clock_tree_pj_per_ff(lib, sink_pf=c, slew_ns=e.slew_ns, wire_fraction=f)
    v = lib.nominal_voltage_v
    pj = e.clock_pin_internal_pj + e.clock_pin_switching_pj + f * c * v * v + tree
    return pj, pj / e.toggle_pj


def library_energy(lib: LibertyLibrary, *, cache=None) -> LibraryEnergy:
    """:func:`compute` for ``lib``, computed once (ppa.characterisation.cached: memory, disk, the
    shipped characterisation; keyed by this module's version and constants, the mapping script,
    the Yosys build and the Liberty file's digest)."""
    return _cached(lib.path, lib.sha256, None if cache is None else str(cache))
