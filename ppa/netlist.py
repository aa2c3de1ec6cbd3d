"""Bit-parallel, cycle-based simulation of a Yosys gate netlist, with toggle counting per net.

Method (chosen over "flip-flop outputs as inputs from a golden state trace"): each of the 64 bit
lanes of a machine word, times ``words`` words, is an independent instance of the circuit fed
its own input stream (for example the PEs of an array, each fed its own data). The netlist is
stepped cycle by cycle; flip-flops take their D values from the netlist itself at every clock
edge, so the state trace is the circuit's own and needs no mapping to a golden model.

Timing model: zero-delay (settled values). In cycle ``t`` the inputs of cycle ``t`` are applied
at the same clock edge that loads the flip-flops, the logic settles, and a net toggles in cycle
``t`` when its settled value differs from cycle ``t-1``. Glitches are not counted; that is the
same convention as the settled per-timestep values in a VCD of the same netlist under a
zero-delay simulator (checked against Icarus in the tests). Cycle 0 compares against the
all-zero state (flip-flops reset to 0, inputs 0), so its toggles are counted too.

Gate semantics follow Yosys ``techlibs/common/simcells.v``. Each net also carries its energy per
transition, its gates costed as the default library's cells (ppa.liberty.gates), so a run gives
the toggles weighted by energy (``ToggleCounts.gate_energy``, ``ff_net_energy``) beside the counts.
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass

import numpy as np

from hw.errors import InputError
from ppa.liberty import gates as gate_energy

_ONES = np.uint64(0xFFFF_FFFF_FFFF_FFFF)

# cell type -> (input pins in order, function on uint64 arrays)
_GATES: dict[str, tuple[tuple[str, ...], Callable[..., np.ndarray]]] = {
    "$_BUF_": (("A",), lambda a: a),
    "$_NOT_": (("A",), lambda a: ~a),
    "$_AND_": (("A", "B"), lambda a, b: a & b),
    "$_NAND_": (("A", "B"), lambda a, b: ~(a & b)),
    "$_OR_": (("A", "B"), lambda a, b: a | b),
    "$_NOR_": (("A", "B"), lambda a, b: ~(a | b)),
    "$_XOR_": (("A", "B"), lambda a, b: a ^ b),
    "$_XNOR_": (("A", "B"), lambda a, b: ~(a ^ b)),
    "$_ANDNOT_": (("A", "B"), lambda a, b: a & ~b),
    "$_ORNOT_": (("A", "B"), lambda a, b: a | ~b),
    "$_MUX_": (("A", "B", "S"), lambda a, b, s: (a & ~s) | (b & s)),
    "$_NMUX_": (("A", "B", "S"), lambda a, b, s: ~((a & ~s) | (b & s))),
    "$_AOI3_": (("A", "B", "C"), lambda a, b, c: ~((a & b) | c)),
    "$_OAI3_": (("A", "B", "C"), lambda a, b, c: ~((a | b) & c)),
    "$_AOI4_": (("A", "B", "C", "D"), lambda a, b, c, d: ~((a & b) | (c & d))),
    "$_OAI4_": (("A", "B", "C", "D"), lambda a, b, c, d: ~((a | b) & (c | d))),
}
_FFS = {"$_DFF_P_"}


@dataclass
class ToggleCounts:
    """Toggle counts summed over all instances and cycles."""

    per_net: np.ndarray  # int64, indexed like GateNetlist nets
    cycles: int
    instances: int
    gate_output_toggles: int  # on nets driven by gates
    ff_output_toggles: int  # on flip-flop outputs
    input_toggles: int  # on primary-input nets (driven from outside; not charged to the circuit)
    port_toggles: dict  # input port -> toggles on its nets
    gate_energy: float  # gate-output toggles, each weighted by its net's energy (ppa.liberty.gates), toggle-equivalents
    ff_net_energy: float  # flip-flop output toggles so weighted (the load they drive; ppa.liberty.gates)

    @property
    def circuit_toggles(self) -> int:
        """Toggles the circuit itself drives (gate and flip-flop outputs)."""
        return self.gate_output_toggles + self.ff_output_toggles

    @property
    def per_instance_cycle(self) -> float:
        return self.circuit_toggles / max(1, self.cycles * self.instances)


class GateNetlist:
    """A flattened Yosys JSON netlist (module ``top``) prepared for bit-parallel evaluation."""

    def __init__(self, netlist: dict, top: str, *, clock: str = "clk"):
        try:
            mod = netlist["modules"][top]
        except KeyError as exc:
            raise InputError(f"module {top!r} not in netlist", where="ppa.netlist") from exc
        self.top = top
        self.clock = clock
        ids: dict[int, int] = {}

        def net(bit) -> int:
            if isinstance(bit, str):
                return 1 if bit == "1" else 0  # "0", "x", "z" -> 0
            if bit not in ids:
                ids[bit] = len(ids) + 2
            return ids[bit]

        self.inputs: dict[str, list[int]] = {}
        self.outputs: dict[str, list[int]] = {}
        for name, port in mod["ports"].items():
            bits = [net(b) for b in port["bits"]]
            if port["direction"] == "input":
                self.inputs[name] = bits
            else:
                self.outputs[name] = bits
        gates: list[tuple[str, list[int], int]] = []
        ff_d: list[int] = []
        ff_q: list[int] = []
        for cname, cell in mod["cells"].items():
            t = cell["type"]
            conn = cell["connections"]
            if t in _FFS:
                if conn["C"] != mod["ports"].get(clock, {}).get("bits"):
                    raise InputError(
                        f"flip-flop {cname} is not clocked by port {clock!r}", where="ppa.netlist"
                    )
                ff_d.append(net(conn["D"][0]))
                ff_q.append(net(conn["Q"][0]))
            elif t in _GATES:
                pins, _ = _GATES[t]
                gates.append((t, [net(conn[p][0]) for p in pins], net(conn["Y"][0])))
            else:
                raise InputError(f"cell {cname} has unsupported type {t}", where="ppa.netlist")
        self.bit_ids = dict(ids)
        self.n_nets = len(ids) + 2
        self.ff_d = np.array(ff_d, dtype=np.int64)
        self.ff_q = np.array(ff_q, dtype=np.int64)
        # net names (for comparison with a VCD): first visible name per net bit
        self.names: dict[int, list[str]] = {}
        for name, info in mod["netnames"].items():
            for i, b in enumerate(info["bits"]):
                if not isinstance(b, str) and b in ids:
                    self.names.setdefault(ids[b], []).append(
                        f"{name}[{i}]" if len(info["bits"]) > 1 else name
                    )
        # levelise: level of a gate = 1 + max level of its inputs (inputs, constants, FF outputs: 0)
        level = np.zeros(self.n_nets, dtype=np.int64)
        driven = {out: (t, ins) for t, ins, out in gates}
        order = _topo_order(driven)
        for out in order:
            _, ins = driven[out]
            level[out] = 1 + max(level[i] for i in ins)
        groups: dict[tuple[int, str], list[tuple[list[int], int]]] = {}
        for out in order:
            t, ins = driven[out]
            groups.setdefault((int(level[out]), t), []).append((ins, out))
        self._groups = []
        for (_level, t), members in sorted(groups.items()):
            in_nets = np.array([m[0] for m in members], dtype=np.int64).T  # (pins, n)
            outs = np.array([m[1] for m in members], dtype=np.int64)
            self._groups.append((_GATES[t][1], [in_nets[k] for k in range(in_nets.shape[0])], outs))
        self.gate_outputs = np.array(sorted(driven), dtype=np.int64)
        self.input_nets = np.array(
            sorted({b for p, bits in self.inputs.items() if p != clock for b in bits} - {0, 1}),
            dtype=np.int64,
        )
        self.logic_depth = int(level.max()) if len(level) else 0
        # each net's energy per transition, its gates costed as the default library's cells
        self.net_energy, self.ff_nets = gate_energy.net_energies(mod, ids, self.n_nets)

    # ------------------------------------------------------------------------------------------
    def simulate(
        self,
        inputs: dict[str, np.ndarray],
        *,
        outputs: tuple[str, ...] = (),
        count_from: int = 0,
        progress=None,
    ) -> tuple[ToggleCounts, dict[str, np.ndarray]]:
        """Run ``T`` cycles on ``I`` independent instances.

        ``inputs[port]`` is an integer array of shape (T, I): the value of that port in each cycle
        for each instance, or (T, I, L) for a port packed from L equal lanes, lane l at bits
        [l*w +: w] (negative values are taken two's complement); ports not given are held at 0,
        the clock port is implicit. I must be a multiple of 64. Returns the
        toggle counts and, for each port named in ``outputs``, its settled value per cycle and
        instance as uint64 (T, I) (ports up to 64 bits)."""
        arrays = {}
        shape = None
        for name, arr in inputs.items():
            if name not in self.inputs or name == self.clock:
                raise InputError(f"{self.top} has no data input port {name!r}", where="ppa.netlist inputs")
            a = np.asarray(arr)
            if a.ndim not in (2, 3) or (a.ndim == 3 and len(self.inputs[name]) % a.shape[2]):
                raise InputError(
                    f"input {name!r} must be (cycles, instances[, lanes]), got shape {a.shape}",
                    where="ppa.netlist",
                )
            if shape is None:
                shape = a.shape[:2]
            elif a.shape[:2] != shape:
                raise InputError(f"input {name!r} has shape {a.shape}, others {shape}", where="ppa.netlist")
            arrays[name] = a
        if shape is None:
            raise InputError("no inputs given", where="ppa.netlist")
        T, n_inst = shape
        if n_inst % 64 or n_inst == 0:
            raise InputError(
                f"instances must be a positive multiple of 64, got {n_inst}", where="ppa.netlist inputs"
            )
        words = n_inst // 64
        packed = {name: _pack_port(a, len(self.inputs[name]), words) for name, a in arrays.items()}
        for name in outputs:
            if name not in self.outputs:
                raise InputError(f"{self.top} has no output port {name!r}", where="ppa.netlist outputs")
        out_vals = {name: np.zeros((T, words * 64), dtype=np.uint64) for name in outputs}

        V = np.zeros((self.n_nets, words), dtype=np.uint64)
        V[1] = _ONES
        prev = V.copy()
        counts = np.zeros(self.n_nets, dtype=np.int64)
        ffd, ffq = self.ff_d, self.ff_q
        in_idx = {name: np.array(self.inputs[name], dtype=np.int64) for name in packed}
        groups = self._groups
        for t in range(T):
            if len(ffq):
                V[ffq] = V[ffd]  # clock edge: flip-flops load what settled in the last cycle
            for name, p in packed.items():
                V[in_idx[name]] = p[t]
            for fn, ins, outs in groups:
                V[outs] = fn(*(V[i] for i in ins))
            if t >= count_from:
                counts += np.bitwise_count(V ^ prev).sum(axis=1, dtype=np.int64)
            prev[...] = V
            for name in outputs:
                out_vals[name][t] = _unpack_port(V[self.outputs[name]], len(self.outputs[name]))
            if progress is not None:
                progress(t + 1, T)
        counts[0] = counts[1] = 0
        gate_t = int(counts[self.gate_outputs].sum()) if len(self.gate_outputs) else 0
        ff_t = int(counts[np.unique(ffq)].sum()) if len(ffq) else 0
        in_t = int(counts[self.input_nets].sum()) if len(self.input_nets) else 0
        ports = {
            p: int(counts[[b for b in bits if b > 1]].sum())
            for p, bits in self.inputs.items()
            if p != self.clock
        }
        e = counts * self.net_energy
        ffe = float(e[self.ff_nets].sum())
        tc = ToggleCounts(
            counts, T - count_from, n_inst, gate_t, ff_t, in_t, ports, float(e.sum()) - ffe, ffe
        )
        return tc, {name: v[:, :n_inst] for name, v in out_vals.items()}


def _topo_order(driven: dict[int, tuple[str, list[int]]]) -> list[int]:
    """Gate outputs in an order where every gate comes after the gates driving its inputs."""
    order: list[int] = []
    state: dict[int, int] = {}
    for root in driven:
        if root in state:
            continue
        stack = [(root, 0)]
        while stack:
            node, i = stack.pop()
            ins = driven[node][1]
            if i == 0:
                if state.get(node) == 2:
                    continue
                state[node] = 1
            while i < len(ins) and (ins[i] not in driven or state.get(ins[i]) == 2):
                i += 1
            if i < len(ins):
                nxt = ins[i]
                if state.get(nxt) == 1:
                    raise InputError("combinational loop in netlist", where="ppa.netlist")
                stack.append((node, i + 1))
                stack.append((nxt, 0))
            else:
                state[node] = 2
                order.append(node)
    return order


def _pack_port(values: np.ndarray, width: int, words: int) -> np.ndarray:
    """(T, I[, L]) integers -> (T, width, words) uint64, instance i in lane i % 64 of word i // 64."""
    if values.ndim == 2:
        values = values[:, :, None]
    T, n, lanes = values.shape
    lane_bits = width // lanes
    v = (
        values.astype(np.int64, copy=False).view(np.uint64)
        if values.dtype.kind == "i"
        else values.astype(np.uint64)
    )
    out = np.empty((T, width, words), dtype=np.uint64)
    for j in range(width):
        b = ((v[:, :, j // lane_bits] >> np.uint64(j % lane_bits)) & np.uint64(1)).astype(np.uint8)
        out[:, j, :] = (
            np.packbits(b.reshape(T, words, 64), axis=-1, bitorder="little").view("<u8").reshape(T, words)
        )
    return out


def _unpack_port(words_arr: np.ndarray, width: int) -> np.ndarray:
    """(width, words) uint64 -> (words*64,) uint64 values."""
    bits = np.unpackbits(
        np.ascontiguousarray(words_arr).view(np.uint8).reshape(width, -1), axis=-1, bitorder="little"
    )
    weights = np.uint64(1) << np.arange(width, dtype=np.uint64)
    return (bits.astype(np.uint64) * weights[:, None]).sum(axis=0, dtype=np.uint64)
