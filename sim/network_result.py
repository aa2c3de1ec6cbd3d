"""What :func:`sim.perf.simulate` returns: :class:`NetworkResult`, one design point's per-layer
arrays and network totals, and its JSON form; :func:`fallback_reasons`, why a layer ran dense."""

from __future__ import annotations

import math
from dataclasses import asdict, dataclass, field
from typing import cast

import numpy as np

from hw.host import json_text
from sim.array_config import ArrayConfig
from sim.layers import Workload

PER_LAYER_SUM = (
    "dense_macs",
    "performed_mults",
    "dram_bytes",
    "dram_ifmap_bytes",
    "dram_weight_bytes",
    "metadata_bytes",
    "dram_ofmap_bytes",
    "sram_ifmap_read_bytes",
    "sram_filter_read_bytes",
    "sram_metadata_read_bytes",
    "sram_ofmap_write_bytes",
    "sram_ofmap_read_bytes",
    "sram_fill_bytes",
    "sram_ifmap_port_bytes",
    "sram_filter_port_bytes",
    "sram_ofmap_port_bytes",
    "folds",
)  # folds = tiles: in WS each loads R x C weights (ppa charges the shifting)


@dataclass
class NetworkResult:
    """Per-layer numpy arrays (length L, one entry per layer *instance*, ``count`` instances each)
    and network totals (layers weighted by count)."""

    workload: str
    arch: ArrayConfig
    names: list[str]
    kinds: list[str]
    counts: np.ndarray
    fallback_reasons: list[str | None]
    layers: dict[str, np.ndarray]
    totals: dict[str, float]
    #: the vector unit's operators: sim.vector.VectorOp list and per-instance (V,) arrays
    vector_ops: list = field(default_factory=list)
    vector: dict[str, np.ndarray] = field(default_factory=dict)
    weight_params: int = 0
    unsupported_ops: list[dict] = field(default_factory=list)
    #: each layer's operand format as the importer found it (None: the array's own), and what the
    #: importer found beyond the layers (sim.layers.Workload.import_report), both for to_dict
    precisions: list = field(default_factory=list)
    import_report: dict = field(default_factory=dict)

    @property
    def total_cycles(self) -> int:
        return int(self.totals["total_cycles"])

    @property
    def effective_speedup(self) -> float:
        return float(self.totals["effective_speedup"])

    @property
    def stall_fraction(self) -> float:
        return float(self.totals["stall_fraction"])

    def latency_s(self) -> float:
        return self.total_cycles / (self.arch.clock_mhz * 1e6)

    def to_dict(self) -> dict:
        lay = []
        for i, name in enumerate(self.names):
            row = {
                "name": name,
                "kind": self.kinds[i],
                "count": int(self.counts[i]),
                "cycles": int(self.layers["cycles"][i]),
                "stall_cycles": int(self.layers["stall_cycles"][i]),
                "dram_stall_cycles": int(self.layers["dram_stall_cycles"][i]),
                "sram_stall_cycles": int(self.layers["sram_stall_cycles"][i]),
                "utilization": round(float(self.layers["utilization"][i]), 6),
                "sparse": bool(self.layers["sparse"][i]),
                "fallback_reason": self.fallback_reasons[i],
            }
            if self.precisions:
                row["precision"] = self.precisions[i]
            for k in PER_LAYER_SUM:
                row[k] = float(self.layers[k][i])
            row["unit"] = "array"
            lay.append(row)
        vlay = []
        for j, op in enumerate(self.vector_ops):
            vlay.append(
                {
                    "name": op.name,
                    "op_type": op.op_type,
                    "unit": "vector",
                    "count": int(op.count),
                    "cycles": int(self.vector["vector_op_cycles"][j]),
                    "compute_cycles": int(self.vector["vector_compute_cycles"][j]),
                    "elements": int(op.elements),
                    "sram_bytes": float(self.vector["vector_sram_bytes"][j]),
                    "dram_bytes": float(self.vector["vector_dram_bytes"][j]),
                    "movement_only": bool(op.movement_only),
                    "supported": bool(op.supported),
                    "reason": op.reason,
                    "shapes": op.shapes,
                }
            )
        tot = {k: (float(v) if not float(v).is_integer() else int(v)) for k, v in self.totals.items()}
        fi, ff, fo = self.arch.sram_split_kb
        bw = self.arch.sram_bytes_per_cycle
        return {
            "workload": self.workload,
            "arch": asdict(self.arch),
            "sram_split_kb": {"ifmap_kb": fi, "filter_kb": ff, "ofmap_kb": fo},
            "sram_bytes_per_cycle_per_buffer": None if math.isinf(bw) else bw,
            "layers": lay,
            "vector_layers": vlay,
            "vector_lanes": self.arch.effective_vector_lanes,
            "unsupported_ops": [
                {
                    "op_type": u["op_type"],
                    "count": int(u["count"]),
                    "reason": u["reason"],
                    "shapes": list(u["shapes"]),
                }
                for u in self.unsupported_ops
            ],
            "weight_params": int(self.weight_params),
            **self.import_report,
            **tot,
        }

    def to_json(self, **kw) -> str:
        return json_text(self.to_dict(), **kw)


def fallback_reasons(w: Workload, arch: ArrayConfig, sparse_run: np.ndarray) -> list[str | None]:
    out: list[str | None] = []
    for layer, sp in zip(w.layers, sparse_run, strict=True):
        if sp:
            out.append(None)
        elif not arch.sparse:
            out.append(None)  # dense hardware: nothing falls back
        elif not layer.sparsifiable:
            out.append(layer.reason)
        else:  # a sparsifiable layer without a pattern of its own runs sparse: this one has one
            ln, lm = cast(tuple[int, int], layer.nm)
            out.append(f"layer pattern {ln}:{lm} does not fit the hardware's {arch.n}:{arch.m}")
    return out
