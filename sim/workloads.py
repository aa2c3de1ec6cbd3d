"""Workloads by name or from a file: the registry of built-in networks and the native workload format.

:func:`get_workload` builds a built-in network (:mod:`sim.networks`; the mixtures of experts through
the Hugging Face importer) by name; :func:`load_workload`
reads the native TOML / CSV format. The data model is :mod:`sim.layers`; the importers of other
formats (:mod:`sim.importers`: SCALE-Sim, ONNX, Hugging Face) build on it and never import this
module, which re-exports the names below so that one import serves every caller. Every other format is
one entry of :mod:`sim.importers.registry` (:func:`importers` lists them; :func:`register_importer` adds one).
"""

from __future__ import annotations

import csv
import io
import tomllib
from pathlib import Path

from hw.errors import InputError
from sim.importers import load_scalesim_config, load_scalesim_topology
from sim.importers.hf import load_hf_config
from sim.importers.registry import Importer, importers, register_importer
from sim.inputs import MAX_LAYER_DIM, read_text
from sim.layers import ConvGeometry, Layer, Workload, conv_layer, make_layer, total_dense_macs
from sim.networks import (
    GPT2_CONFIGS,
    LLAMA_CONFIGS,
    MOE_CONFIGS,
    bert,
    gpt2,
    llama,
    resnet50,
    transformer_ops,
)

_REGISTRY = {
    "bert-base": lambda **p: bert("base", **p),
    "bert-large": lambda **p: bert("large", **p),
    "resnet50": lambda **p: resnet50(**p),
    **{k: (lambda k=k, **p: gpt2(k.split("-")[1], **p)) for k in GPT2_CONFIGS},
    **{
        f"{k}-{ph}": (lambda k=k, ph=ph, **p: llama(k, ph, **p))
        for k in LLAMA_CONFIGS
        for ph in ("prefill", "decode")
    },
    # mixtures of experts through the Hugging Face importer (params seq, batch, context, as for Llama)
    **{
        f"{k}-{ph}": (lambda k=k, ph=ph, **p: load_hf_config(MOE_CONFIGS[k], phase=ph, name=k, **p))
        for k in MOE_CONFIGS
        for ph in ("prefill", "decode")
    },
}


def list_workloads() -> list[str]:
    return sorted(_REGISTRY)


def get_workload(name: str, **params) -> Workload:
    """A built-in network by name (see :func:`list_workloads`); params e.g. ``seq=384, batch=8``."""
    if name not in _REGISTRY:
        raise InputError(
            f"unknown workload {name!r} (built-in: {', '.join(list_workloads())})", where="--workload"
        )
    try:
        return _REGISTRY[name](**params)
    except (TypeError, ValueError, ArithmeticError) as exc:
        if isinstance(exc, InputError):
            raise
        raise InputError(
            f"bad parameters {params} for workload {name!r}: {exc}", where="--workload"
        ) from None


# --------------------------------------------------------------------------------------------
# Native workload format: TOML ([[layer]] tables) or CSV (header below).
# --------------------------------------------------------------------------------------------

NATIVE_CSV_COLUMNS = ("name", "kind", "M", "N", "K", "count", "sparsifiable")
_NATIVE_KEYS = {"name", "kind", "M", "N", "K", "count", "sparsifiable", "weight_shape"}


def _parse_bool(v, where: str) -> bool | None:
    if v is None or (isinstance(v, str) and v.strip() == ""):
        return None
    if isinstance(v, bool):
        return v
    s = str(v).strip().lower()
    if s in ("true", "1", "yes", "sparse"):
        return True
    if s in ("false", "0", "no", "dense"):
        return False
    raise InputError(f"sparsifiable must be true/false or empty, got {v!r}", where=where)


def _parse_int(v, label: str, where: str) -> int:
    try:
        if isinstance(v, bool):
            raise ValueError
        iv = int(str(v).strip())
    except (TypeError, ValueError):
        raise InputError(f"{label} must be an integer, got {v!r}", where=where) from None
    return iv


def load_workload(path: str | Path) -> Workload:
    """Native workload file: ``.toml`` with ``name = ...`` and ``[[layer]]`` tables
    (keys name, kind, M, N, K, optional count, sparsifiable, weight_shape) or ``.csv`` with the header
    ``name,kind,M,N,K,count,sparsifiable`` (count and sparsifiable may be empty)."""
    p = Path(path)
    if not p.is_file():
        raise InputError("workload file not found", where=str(p))
    rows: list[tuple[str, dict]] = []
    wl_name = p.stem
    if p.suffix == ".toml":
        try:
            data = tomllib.loads(read_text(p, "workload file"))
        except tomllib.TOMLDecodeError as exc:
            raise InputError(f"TOML syntax: {exc}", where=str(p)) from None
        except RecursionError:
            raise InputError("TOML syntax: nested too deeply", where=str(p)) from None
        extra = set(data) - {"name", "layer"}
        if extra:
            raise InputError(f"unknown key(s) {sorted(extra)} (allowed: name, layer)", where=str(p))
        if not isinstance(data.get("name", ""), str):
            raise InputError(f"name must be a string, got {data['name']!r}", where=f"{p}: name")
        wl_name = str(data.get("name", wl_name))
        layer_list = data.get("layer", [])
        if not isinstance(layer_list, list):
            raise InputError("layer must be an array of tables ([[layer]])", where=f"{p}: layer")
        for i, t in enumerate(layer_list, start=1):
            if not isinstance(t, dict):
                raise InputError(
                    f"a layer must be a table ([[layer]]), got {type(t).__name__}", where=f"{p}: layer {i}"
                )
            for key in ("name", "kind"):
                if key in t and not isinstance(t[key], str):
                    raise InputError(f"{key} must be a string, got {t[key]!r}", where=f"{p}: layer {i}")
            rows.append((f"{p}: layer {i}", t))
    elif p.suffix == ".csv":
        with io.StringIO(read_text(p, "workload file", encoding="utf-8-sig"), newline="") as fh:
            reader = csv.reader(fh)
            try:
                header = [h.strip() for h in next(reader, [])]
                if tuple(header[:5]) != NATIVE_CSV_COLUMNS[:5]:
                    raise InputError(
                        f"header must start with {','.join(NATIVE_CSV_COLUMNS)}, got {header[:8]}",
                        where=f"{p}: row 1",
                    )
                for i, rec in enumerate(reader, start=2):
                    if not rec or all(not c.strip() for c in rec):
                        continue
                    if len(rec) > len(header):
                        raise InputError(
                            f"{len(rec)} fields but the header has {len(header)}", where=f"{p}: row {i}"
                        )
                    # a short row leaves its trailing columns out (their defaults apply)
                    rows.append((f"{p}: row {i}", dict(zip(header, rec, strict=False))))
            except csv.Error as exc:
                raise InputError(f"not a readable CSV ({exc})", where=f"{p}: row {reader.line_num}") from None
    else:
        raise InputError("workload file must be .toml or .csv", where=str(p))
    if not rows:
        raise InputError("no layers", where=str(p))
    layers = []
    seen = set()
    for where, t in rows:
        unknown = set(t) - _NATIVE_KEYS
        if unknown:
            raise InputError(f"unknown key(s) {sorted(unknown)}", where=where)
        for key in ("name", "kind", "M", "N", "K"):
            if key not in t or str(t[key]).strip() == "":
                raise InputError(f"missing {key}", where=where)
        name = str(t["name"]).strip()
        if name in seen:
            raise InputError(f"duplicate layer name {name!r}", where=where)
        seen.add(name)
        count = t.get("count")
        count = 1 if count is None or str(count).strip() == "" else _parse_int(count, "count", where)
        ws = t.get("weight_shape")
        if ws is not None:
            if (
                not isinstance(ws, list)
                or not 1 <= len(ws) <= 8
                or not all(
                    isinstance(x, int) and not isinstance(x, bool) and 1 <= x <= MAX_LAYER_DIM for x in ws
                )
            ):
                raise InputError(
                    f"weight_shape must be a list of 1 to 8 positive integers <= {MAX_LAYER_DIM}, got {ws!r}",
                    where=where,
                )
        layers.append(
            make_layer(
                name,
                str(t["kind"]).strip(),
                _parse_int(t["M"], "M", where),
                _parse_int(t["N"], "N", where),
                _parse_int(t["K"], "K", where),
                weight_shape=tuple(ws) if ws else None,
                count=count,
                sparsifiable=_parse_bool(t.get("sparsifiable"), where),
                where=where,
            )
        )
    return Workload(wl_name, tuple(layers))


__all__ = [
    "ConvGeometry",
    "Layer",
    "Workload",
    "make_layer",
    "conv_layer",
    "bert",
    "gpt2",
    "llama",
    "resnet50",
    "get_workload",
    "list_workloads",
    "load_workload",
    "load_scalesim_topology",
    "load_scalesim_config",
    "total_dense_macs",
    "transformer_ops",
    "Importer",
    "importers",
    "register_importer",
]
