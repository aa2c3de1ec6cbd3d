"""Importers for SCALE-Sim v3 inputs: topology CSVs (convolution and GEMM forms) and config files.

Parsing follows SCALE-Sim 3.0.0 (``scalesim/topology_utils.py``, ``scale_config.py``) where it
matters for cycle counts: GEMM rows ``Layer Name, M, N, K, Sparsity`` map to an ifmap of M x K and
N filters of 1 x K; convolution rows give output dims ``ceil((H - R) / S) + 1`` (no padding); a layer
whose name contains ``DP`` is a depthwise convolution split per channel. Unlike SCALE-Sim, a row
without the trailing comma keeps its last field, and a malformed row is an error naming file and row.
"""

from __future__ import annotations

import configparser
import csv
import io
import math
from dataclasses import dataclass, replace
from pathlib import Path

from hw.errors import InputError
from hw.nm import check_nm
from sim.inputs import MAX_SIM_ARRAY_SIDE, read_text
from sim.layers import ConvGeometry, Workload, conv_layer, make_layer
from sim.perf import ArrayConfig


def _int(v: str, label: str, where: str) -> int:
    try:
        x = int(v.strip())
    except ValueError:
        raise InputError(f"{label} must be an integer, got {v.strip()!r}", where=where) from None
    if x <= 0:
        raise InputError(f"{label} must be positive, got {x} (zero-sized layer)", where=where)
    return x


def _nm(v: str, where: str) -> tuple[int, int] | None:
    s = v.strip()
    if not s:
        return None
    parts = s.split(":")
    if len(parts) != 2:
        raise InputError(f"Sparsity must look like N:M (e.g. 2:4), got {s!r}", where=where)
    try:
        n, m = int(parts[0]), int(parts[1])
    except ValueError:
        raise InputError(f"Sparsity must look like N:M (e.g. 2:4), got {s!r}", where=where) from None
    if n == m:
        if n < 1:  # 0:0 (or -1:-1) is not "dense": it is not a pattern at all
            raise InputError(f"Sparsity N:N (dense) needs N >= 1, got {s!r}", where=where)
        return (n, m)  # 1:1 = dense, SCALE-Sim's default
    check_nm_where(n, m, where)
    return (n, m)


def check_nm_where(n: int, m: int, where: str) -> None:
    try:
        check_nm(n, m)
    except InputError as exc:
        raise InputError(str(exc), where=where) from None


def load_scalesim_topology(path: str | Path, *, n: int = 2, m: int = 4):
    """Read a SCALE-Sim topology CSV into a :class:`sim.layers.Workload`.

    A ``Sparsity`` entry ``N:M`` marks the layer as pruned to that pattern (a user override of the
    ASP verdict); ``1:1`` marks it dense; no entry keeps the ASP verdict for ``n:m``."""
    p = Path(path)
    if not p.is_file():
        raise InputError("topology file not found", where=str(p))
    text = read_text(p, "topology file", encoding="utf-8-sig")
    lines = text.splitlines()
    if not lines:
        raise InputError("empty topology file", where=str(p))
    delim = "," if "," in lines[0] else "\t"
    try:
        rows = list(csv.reader(io.StringIO(text), delimiter=delim))
    except csv.Error as exc:
        raise InputError(f"not a readable CSV ({exc})", where=str(p)) from None
    header = [h.strip().lower() for h in rows[0]]
    gemm = len(header) >= 4 and header[1:4] == ["m", "n", "k"]
    if not gemm and not (len(header) >= 8 and header[1].startswith("ifmap")):
        raise InputError(
            f"header is neither the GEMM form 'Layer Name, M, N, K, Sparsity' nor the "
            f"convolution form 'Layer name, IFMAP Height, ...', got {rows[0][:4]}",
            where=f"{p}: row 1",
        )
    sp_col = header.index("sparsity") if "sparsity" in header else None
    layers = []
    seen: dict[str, int] = {}
    for i, rec in enumerate(rows[1:], start=2):
        cells = [c.split("#")[0] for c in rec]
        if not cells or all(not c.strip() for c in cells):
            continue
        where = f"{p}: row {i}"
        name = cells[0].strip()
        if not name:
            raise InputError("missing layer name", where=where)
        need = 4 if gemm else 8
        if len(cells) < need or any(not c.strip() for c in cells[1:need]):
            raise InputError(
                f"expected {need} fields ({', '.join(h for h in header[:need])}), got "
                f"{[c.strip() for c in cells[:need]]}",
                where=where,
            )
        nm = _nm(cells[sp_col], where) if sp_col is not None and sp_col < len(cells) else None
        override = None if nm is None else nm[0] != nm[1]
        if name in seen:
            seen[name] += 1
            name = f"{name}#{seen[name]}"
        else:
            seen[name] = 1
        if gemm:
            M, N, K = (_int(cells[j], header[j].upper(), where) for j in (1, 2, 3))
            L = make_layer(
                name, "gemm", M, N, K, weight_shape=(N, K), sparsifiable=override, n=n, m=m, where=where
            )
        else:
            H, W, R, S, C, F, st = (_int(cells[j], rows[0][j].strip(), where) for j in range(1, 8))
            if R > H or S > W:
                raise InputError(f"filter {R}x{S} larger than the ifmap {H}x{W}", where=where)
            geom = ConvGeometry(H, W, R, S, C, F, st)
            L = conv_layer(name, geom, depthwise="DP" in name, sparsifiable=override, where=where)
        if nm is not None and nm[0] != nm[1]:
            L = replace(L, nm=nm)
        layers.append(L)
    if not layers:
        raise InputError("no layers in topology", where=str(p))
    return Workload(p.stem, tuple(layers))


@dataclass(frozen=True)
class ScaleSimConfig:
    """The settings of a SCALE-Sim config file that the cycle model uses."""

    run_name: str
    rows: int
    cols: int
    ifmap_kb: float
    filter_kb: float
    ofmap_kb: float
    dataflow: str
    bandwidth_words: float  # [architecture_presets] Bandwidth (ofmap port in USER mode)
    ifmap_bw_words: float  # [layout] IfmapSRAMBankBandwidth (ifmap DRAM port in USER mode)
    filter_bw_words: float  # [layout] FilterSRAMBankBandwidth
    user_bandwidth: bool  # [run_presets] InterfaceBandwidth: USER (else CALC: no stalls)
    sparsity_support: bool
    optimized_mapping: bool
    block_size: int

    def to_array_config(self, **overrides):
        """An :class:`sim.perf.ArrayConfig` in SCALE-Sim-compatible mode (scalar PE, 1-byte words)."""
        kw = dict(
            rows=self.rows,
            cols=self.cols,
            ifmap_kb=self.ifmap_kb,
            filter_kb=self.filter_kb,
            ofmap_kb=self.ofmap_kb,
            dataflow=self.dataflow,
            n=self.block_size // 2 if self.optimized_mapping else 2,
            m=self.block_size if self.optimized_mapping else 4,
            sparse=self.sparsity_support,
            pe_k=1,
            dense_path=False,
            act_bits=8,
            weight_bits=8,
            mode="scalesim",
            port_words=(self.ifmap_bw_words, self.filter_bw_words, self.bandwidth_words)
            if self.user_bandwidth
            else None,
        )
        kw.update({k: v for k, v in overrides.items() if v is not None})
        return ArrayConfig(**kw)


def _get(cp: configparser.ConfigParser, section: str, key: str, where: str, default=None):
    if cp.has_section(section) and cp.has_option(section, key):
        return cp.get(section, key, raw=True).strip()  # raw: a '%' is text, not an interpolation
    if default is None:
        raise InputError(f"missing key [{section}] {key}", where=where)
    return default


def load_scalesim_config(path: str | Path) -> ScaleSimConfig:
    """Read a SCALE-Sim ``.cfg`` ([general], [architecture_presets], [sparsity], [layout], [run_presets])."""
    p = Path(path)
    if not p.is_file():
        raise InputError("config file not found", where=str(p))
    cp = configparser.ConfigParser()
    # keep key case as SCALE-Sim writes it; the stubs type optionxform as a method, which the
    # configparser docs' own idiom replaces by assignment
    cp.optionxform = str  # type: ignore[method-assign,assignment]
    try:
        cp.read_string(read_text(p, "config file"))
    except configparser.Error as exc:
        raise InputError(f"config syntax: {str(exc).splitlines()[0]}", where=str(p)) from None
    w = str(p)

    def num(section, key, default=None, cast=float, hi=1e9, why="far outside any accelerator"):
        v = _get(cp, section, key, w, default)
        try:
            x = cast(v)
        except ValueError:
            raise InputError(f"[{section}] {key} must be a number, got {v!r}", where=w) from None
        if not math.isfinite(x) or x <= 0:
            raise InputError(f"[{section}] {key} must be a positive finite number, got {v!r}", where=w)
        if x > hi:
            raise InputError(f"[{section}] {key} = {v} is above the limit {hi:g} ({why})", where=w)
        return x

    def flag(section, key, default):
        v = _get(cp, section, key, w, default).lower()
        if v not in ("true", "false"):
            raise InputError(f"[{section}] {key} must be true or false, got {v!r}", where=w)
        return v == "true"

    df = _get(cp, "architecture_presets", "Dataflow", w).lower()
    if df not in ("ws", "os", "is"):
        raise InputError(f"[architecture_presets] Dataflow must be ws, os or is, got {df!r}", where=w)
    bw = num("architecture_presets", "Bandwidth", "10")
    mode = _get(cp, "run_presets", "InterfaceBandwidth", w, "CALC").upper()
    if mode not in ("USER", "CALC"):
        raise InputError(f"[run_presets] InterfaceBandwidth must be USER or CALC, got {mode!r}", where=w)
    block = int(num("sparsity", "BlockSize", "4", int, hi=2**6, why="hw.nm.MAX_M"))
    sparse = flag("sparsity", "SparsitySupport", "false")
    if sparse:
        check_nm_where(max(block // 2, 1), block, f"{w}: [sparsity] BlockSize")
    return ScaleSimConfig(
        run_name=_get(cp, "general", "run_name", w, p.stem),
        rows=int(
            num(
                "architecture_presets",
                "ArrayHeight",
                cast=int,
                hi=MAX_SIM_ARRAY_SIDE,
                why="sim.inputs.MAX_SIM_ARRAY_SIDE",
            )
        ),
        cols=int(
            num(
                "architecture_presets",
                "ArrayWidth",
                cast=int,
                hi=MAX_SIM_ARRAY_SIDE,
                why="sim.inputs.MAX_SIM_ARRAY_SIDE",
            )
        ),
        ifmap_kb=num("architecture_presets", "IfmapSramSzkB", hi=2**20, why="1 GiB of SRAM"),
        filter_kb=num("architecture_presets", "FilterSramSzkB", hi=2**20, why="1 GiB of SRAM"),
        ofmap_kb=num("architecture_presets", "OfmapSramSzkB", hi=2**20, why="1 GiB of SRAM"),
        dataflow=df,
        bandwidth_words=bw,
        ifmap_bw_words=num("layout", "IfmapSRAMBankBandwidth", str(bw)),
        filter_bw_words=num("layout", "FilterSRAMBankBandwidth", str(bw)),
        user_bandwidth=mode == "USER",
        sparsity_support=sparse,
        optimized_mapping=flag("sparsity", "OptimizedMapping", "false"),
        block_size=block,
    )
