"""Limits on what the simulator reads from users: input file sizes, layer dimensions, array sizes.

Every size that drives a loop or an allocation is capped here before use, with a one-line
:class:`hw.errors.InputError` naming the file/row/key (README "Input limits").
"""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

from hw.errors import InputError

#: Largest workload / topology / SCALE-Sim config file read. [A] a topology of the largest networks
#: is a few hundred rows (~10 KiB); 16 MiB bounds parsing time and memory.
MAX_INPUT_FILE_BYTES = 16 * 2**20
#: Largest layer dimension (M, N or K of the GEMM, a conv's H, W, channels or filters). [A] 2**24
#: (16.8 M): above every published layer (Llama-3-8B FFN N = 14,336; a 128 k-token prefill
#: M = 131,072) and small enough that dimension products stay exact in int64 / float64.
MAX_LAYER_DIM = 2**24
#: Largest repeat count of one layer. [A] 2**20: a transformer repeats a block ~100 times;
#: a depthwise conv splits into one GEMM per channel (<= a few thousand).
MAX_LAYER_COUNT = 2**20
#: Largest dense MAC count of one layer (M*N*K*count). [D] 2**53: the largest integer float64
#: holds exactly (the cycle model mixes int64 and float64 arithmetic).
MAX_LAYER_MACS = 2**53
#: Largest array side in the cycle model. [A] 65,536: 256x a TPU-v1 side (256); the ppa model and
#: the RTL stop at 256 (ppa.model, hw.params.MAX_DIM).
MAX_SIM_ARRAY_SIDE = 65_536


def read_text(path: Path | str, what: str = "file", encoding: str = "utf-8") -> str:
    """The text of a regular, not too large, UTF-8 file; one-line InputError otherwise."""
    p = Path(path)
    if not p.is_file():
        raise InputError(f"{what} not found (or not a regular file)", where=str(p))
    try:
        size = p.stat().st_size
        if size > MAX_INPUT_FILE_BYTES:
            raise InputError(f"{what} is larger than {MAX_INPUT_FILE_BYTES // 2**20} MiB", where=str(p))
        raw = p.read_bytes()
    except OSError as exc:
        raise InputError(f"cannot read the {what}: {exc.strerror}", where=str(p)) from None
    try:
        return raw.decode(encoding)
    except UnicodeDecodeError as exc:
        raise InputError(f"{what} is not UTF-8 text (byte {exc.start}: {exc.reason})", where=str(p)) from None


#: Deepest nesting of a JSON input file. [A] a Hugging Face config or a simulate/best.json result
#: nests < 10 levels; 100 leaves room and stays far below Python's recursion limit (~1000).
MAX_JSON_DEPTH = 100


def _depth_ok(text: str, limit: int) -> bool:
    """True when no bracket nesting in ``text`` is deeper than ``limit`` (strings skipped)."""
    depth, in_str, esc = 0, False, False
    for c in text:
        if in_str:
            if esc:
                esc = False
            elif c == "\\":
                esc = True
            elif c == '"':
                in_str = False
        elif c == '"':
            in_str = True
        elif c in "[{":
            depth += 1
            if depth > limit:
                return False
        elif c in "]}":
            depth -= 1
    return True


def read_json(path: Path | str, what: str = "JSON file") -> Any:
    """The JSON value of a regular, UTF-8 file of at most MAX_INPUT_FILE_BYTES, nested at most
    MAX_JSON_DEPTH levels; one-line InputError naming the file otherwise. NaN and Infinity (which
    Python writes) are read as floats; a number too long to read is an error."""
    p = Path(path)
    text = read_text(p, what)
    if not _depth_ok(text, MAX_JSON_DEPTH):
        raise InputError(f"{what} is nested more than {MAX_JSON_DEPTH} levels deep", where=str(p))
    try:
        return json.loads(text)
    except json.JSONDecodeError as exc:
        raise InputError(f"{what} is not valid JSON: {exc}", where=str(p)) from None
    except (ValueError, RecursionError) as exc:  # e.g. an integer of more than 4,300 digits
        raise InputError(f"{what} is not readable JSON: {exc}", where=str(p)) from None


def check_layer_dims(where: str, count: int = 1, **dims: int) -> None:
    """Each dimension in 1..MAX_LAYER_DIM, count in 1..MAX_LAYER_COUNT, their product <= MAX_LAYER_MACS."""
    for label, v in dims.items():
        if v > MAX_LAYER_DIM:
            raise InputError(
                f"{label} = {v} is above the limit {MAX_LAYER_DIM:,} (2**24) of one layer dimension",
                where=where,
            )
    if count > MAX_LAYER_COUNT:
        raise InputError(f"count = {count} is above the limit {MAX_LAYER_COUNT:,} (2**20)", where=where)
    macs = count
    for v in dims.values():
        macs *= v
    if macs > MAX_LAYER_MACS:
        raise InputError(
            f"{' x '.join(dims)} x count = {macs:.3g} MACs is above the limit 2**53 of one layer", where=where
        )
