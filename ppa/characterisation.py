"""Results computed once per netlist, and the characterisation shipped with the package.

A result computed from a synthesised netlist or a tool run -- the generic timing path's
logical-effort delay (ppa.timing.effort), a PE's switching activity (ppa.activity), the vector
lane's toggles (ppa.vector_cost), a Liberty library's energies (ppa.liberty.energy) -- is looked
up by :func:`cached` in this order:

1. memory (this process);
2. disk: ``<synth cache>/results/<kind>/<key>.json`` (ppa.synth.cache_dir), written atomically;
3. the shipped characterisation (below);

and computed only when all three miss, then kept in memory and on disk. ``key`` is the caller's
hash of everything the result depends on: the netlist's synthesis key (ppa.synth: the Verilog,
the flow and the Yosys that ran it), the computing code's version and constants, and its other
inputs -- the discipline of the OpenSTA results (ppa.timing.sta). Syntheses of generated designs
(:func:`synthesis`) and OpenSTA runs of them (:func:`sta`) consult the shipped characterisation
before ppa.synth's and ppa.timing.sta's own caches.

The shipped characterisation, ``ppa/characterised/<yosys>.json``: every such result a prewarm
of the example sweeps looks up, recorded (:func:`recording`) by ``sparsepe characterise --out
DIR`` while it characterises with the code that characterises on demand. Its entries carry no
netlists: a shipped synthesis result whose netlist is needed anyway (a new activity trace, say)
is synthesised then (ppa.synth.SynthResult.netlist_file). A file is used only when

- its Yosys (ppa.yosys.yosys_id: native or the wheel, with its version) synthesises here,
- its model code version (:func:`code_version`) is this installation's, and
- its Verilog toolchain (ppa.synth_memo.verilog_toolchain: Amaranth and the Yosys its back end runs)
  is this installation's;

otherwise it is ignored and the run characterises as without it; the first result it then has to
compute logs why (:func:`status`). ``SPARSEPE_CHARACTERISATION=off`` turns it off, a directory
there replaces the package's.

Also here: :func:`probing` (a lookup that would compute raises :class:`NotCharacterised` instead:
how explore.prewarm learns in milliseconds what is left to characterise), :func:`computed` (what
this process had to compute: a trial's progress line says so), and the failures of this process
(a synthesis or timing that failed fails again at once, with the same message, when asked again).
"""

from __future__ import annotations

import ast
import contextlib
import hashlib
import json
import logging
import os
import random
from collections.abc import Callable, Iterator
from dataclasses import dataclass
from functools import lru_cache
from pathlib import Path
from typing import Any

from hw.errors import InputError
from hw.host import code_fingerprint, json_text, make_dir, write_file
from hw.params import PEParams
from ppa import rtl, synth, synth_memo, yosys
from ppa.liberty.library import LibertyLibrary
from ppa.timing import buffer as _buffer, sta as _sta
from ppa.timing.mapping import MAP_SCRIPT, TIMING_ABC_SCRIPT

_log = logging.getLogger("sparsepe.characterisation")

#: where the shipped files are (package data)
SHIPPED_DIR = Path(__file__).resolve().with_name("characterised")
#: the shipped files' layout; bump when it changes
FORMAT = 1
#: the command that writes the shipped files (what a stale file's message tells to run)
REGENERATE = "sparsepe characterise --out ppa/characterised"

#: Sources that make no characterised figure: those that only turn characterised figures into the
#: costs at a node, voltage and array size, and the host plumbing (file writes, error types). They
#: are not part of the model code version (editing them leaves every shipped figure as it was).
#: Everything else in hw/ and ppa/ is.
POST_CHARACTERISATION = (
    "ppa/model.py",
    "ppa/operating.py",
    "ppa/power.py",
    "ppa/result.py",
    "ppa/tech.py",
    "ppa/nodes.py",
    "ppa/sram.py",
    "ppa/dram.py",
    "ppa/phy.py",
    "ppa/thermal.py",
    "ppa/calibration.py",
    "ppa/design.py",
    "ppa/array_cost.py",
    "ppa/timing/stage.py",
    "ppa/assumptions.py",
    "ppa/override.py",
    "ppa/recost.py",
    "ppa/silicon_clock.py",
    "ppa/references.py",
    "ppa/clock_gating.py",
    "hw/host.py",
    "hw/errors.py",
)


@lru_cache(maxsize=1)
def code_version() -> str:
    """SHA-256 (16 hex digits) of the model code the characterised figures come from: every
    ``.py`` of hw/ and ppa/ except :data:`POST_CHARACTERISATION`, by path and code
    (:func:`hw.host.code_fingerprint`: reformatting a file or editing a comment or docstring keeps
    the shipped characterisation current; a change to the code does not)."""
    return code_version_of(Path(__file__).resolve().parent.parent)


def code_version_of(root: Path) -> str:
    """:func:`code_version` of the source tree at ``root`` (the directory holding hw/ and ppa/)."""
    files = [f for pkg in ("hw", "ppa") for f in (root / pkg).rglob("*.py")]
    h = hashlib.sha256()
    for f in sorted(files):
        rel = f.relative_to(root).as_posix()
        if rel in POST_CHARACTERISATION:
            continue
        h.update(rel.encode())
        h.update(b"\0")
        h.update(code_fingerprint(f))
        h.update(b"\0")
    return h.hexdigest()[:16]


def context() -> dict[str, str]:
    """What a shipped file must match here (see the module docstring)."""
    return {
        "yosys": yosys.yosys_id(),
        "code_version": code_version(),
        "verilog": synth_memo.verilog_toolchain(),
    }


# ------------------------------------------------------------------------------------------------
# the shipped files
# ------------------------------------------------------------------------------------------------


@dataclass(frozen=True)
class Shipped:
    """The shipped characterisation that applies here (``entries``), or None and why not."""

    entries: dict[str, dict[str, dict]] | None
    why: str
    path: Path | None = None


def file_name(yosys: str) -> str:
    """The shipped file of a Yosys: its id with every run of other characters than letters,
    digits, '.' and '-' made one '-'."""
    out, dash = [], False
    for ch in yosys:
        ok = ch.isascii() and (ch.isalnum() or ch in ".-")
        if ok:
            out.append(ch)
        elif not dash:
            out.append("-")
        dash = not ok
    return "".join(out).strip("-") + ".json"


@lru_cache(maxsize=8)
def _load(yosys: str, code: str, verilog: str, directory: str) -> Shipped:
    path = Path(directory) / file_name(yosys)
    if not path.is_file():
        have = sorted(p.stem for p in Path(directory).glob("*.json"))
        return Shipped(
            None,
            f"none was made with {yosys} (shipped: {', '.join(have) or 'none'}"
            + (
                "; SPARSEPE_YOSYS=yowasp selects the wheel"
                if any("yowasp" in h for h in have) and not yosys.startswith("yowasp")
                else ""
            )
            + ")",
        )
    try:
        blob = json.loads(path.read_text())
        head = {k: blob[k] for k in ("format", "yosys", "code_version", "verilog")}
        entries = blob["entries"]
        if not isinstance(entries, dict):
            raise TypeError("entries")
    except (OSError, ValueError, KeyError, TypeError) as exc:
        return Shipped(None, f"{path} is unreadable ({type(exc).__name__})", path)
    if head["format"] != FORMAT:
        return Shipped(None, f"{path.name} has format {head['format']}, this code reads {FORMAT}", path)
    if head["yosys"] != yosys:
        return Shipped(None, f"{path.name} was made with {head['yosys']}, not {yosys}", path)
    if head["code_version"] != code:
        return Shipped(
            None,
            f"its model code version {head['code_version']} is not this code's {code} "
            f"(regenerate: {REGENERATE})",
            path,
        )
    if head["verilog"] != verilog:
        return Shipped(None, f"its Verilog toolchain ({head['verilog']}) is not this one ({verilog})", path)
    return Shipped(entries, "", path)


_OFF = ("off", "0", "no", "none")


def _disabled() -> bool:
    return _recorder is not None or os.environ.get("SPARSEPE_CHARACTERISATION", "").strip().lower() in _OFF


def shipped_dir() -> Path:
    """:data:`SHIPPED_DIR`, or the directory ``SPARSEPE_CHARACTERISATION`` names (one written by
    ``sparsepe characterise --out DIR``)."""
    env = os.environ.get("SPARSEPE_CHARACTERISATION", "").strip()
    return Path(env) if env and env.lower() not in _OFF else SHIPPED_DIR


def status() -> Shipped:
    """The shipped characterisation that applies to this installation and Yosys, or why none does.
    ``SPARSEPE_CHARACTERISATION=off`` turns it off (as does :func:`recording`); a directory there
    replaces the package's."""
    if _disabled():
        return Shipped(None, "turned off (SPARSEPE_CHARACTERISATION=off, or characterising)")
    c = context()
    return _load(c["yosys"], c["code_version"], c["verilog"], str(shipped_dir()))


def _shipped(kind: str, key: str) -> dict | None:
    if _disabled():
        return None
    entries = status().entries
    return None if entries is None else entries.get(kind, {}).get(key)


_said: set[str] = set()
#: what this process had to compute (synthesise, time, simulate), in order: see :func:`computed`
_computed: list[str] = []


def computed(since: int = 0) -> list[str]:
    """What this process computed (no cache or shipped result answered), from the ``since``-th on:
    ``len(computed())`` marks a point to compare with later."""
    return _computed[since:]


def note_computed(what: str) -> None:
    """Record that ``what`` is computed here; log once per process why the shipped
    characterisation did not answer it."""
    _computed.append(what)
    st = status()
    if st.entries is None and st.why not in _said and not _disabled():
        _said.add(st.why)
        _log.info("shipped characterisation not used (%s): characterising %s here", st.why, what)


# ------------------------------------------------------------------------------------------------
# recording (sparsepe characterise)
# ------------------------------------------------------------------------------------------------

_recorder: dict[str, dict[str, dict]] | None = None


def _record(kind: str, key: str, value: dict) -> None:
    if _recorder is not None:
        _recorder.setdefault(kind, {})[key] = value


@contextlib.contextmanager
def recording() -> Iterator[dict[str, dict[str, dict]]]:
    """Record every result looked up in the block ({kind: {key: value}}), the shipped files not
    consulted (so each result comes from this code and this machine's tools)."""
    global _recorder
    outer, _recorder = _recorder, {}
    try:
        yield _recorder
    finally:
        _recorder = outer


def merge(into: dict[str, dict[str, dict]], other: dict[str, dict[str, dict]]) -> None:
    for kind, entries in other.items():
        into.setdefault(kind, {}).update(entries)


def write(directory: Path, entries: dict[str, dict[str, dict]]) -> Path:
    """Write ``entries`` as this installation's shipped file for the Yosys in use."""
    c = context()
    make_dir(directory)
    path = directory / file_name(c["yosys"])
    body = {
        "format": FORMAT,
        **c,
        "written_by": REGENERATE.split(" --")[0],
        "entries": {k: dict(sorted(v.items())) for k, v in sorted(entries.items())},
    }
    write_file(path, json_text(body, indent=0, sort_keys=False))
    _load.cache_clear()
    return path


# ------------------------------------------------------------------------------------------------
# probing (what a prewarm still has to characterise) and failures
# ------------------------------------------------------------------------------------------------


class NotCharacterised(Exception):
    """Raised under :func:`probing` where a result would have to be computed (synthesis, OpenSTA,
    a per-netlist result): the message says what."""


_probing = False


@contextlib.contextmanager
def probing() -> Iterator[None]:
    """In the block, every lookup that would compute raises :class:`NotCharacterised` instead
    (nothing is elaborated, synthesised, timed or simulated): a caller learns, in milliseconds,
    whether the caches and the shipped characterisation answer a design."""
    global _probing
    outer, _probing = _probing, True
    try:
        yield
    finally:
        _probing = outer


def is_probing() -> bool:
    """Whether the caller runs inside :func:`probing`."""
    return _probing


#: failed syntheses / timings of this process by key: asked again, they fail again at once, with
#: the same message, instead of running the tool again
_failed: dict[tuple[str, str], InputError] = {}


def failure(kind: str, key: str) -> InputError | None:
    return _failed.get((kind, key))


def _remember_failure(kind: str, key: str, exc: InputError) -> None:
    _failed[(kind, key)] = exc


def _once(kind: str, key: str, run: Callable[[], Any]) -> Any:
    """``run()``, unless it failed before in this process: then its failure again at once (the
    same one-line message); a new failure is remembered."""
    failed = failure(kind, key)
    if failed is not None:
        raise type(failed)(str(failed).removeprefix(f"{failed.where}: "), where=failed.where)
    try:
        return run()
    except InputError as exc:
        _remember_failure(kind, key, exc)
        raise


# ------------------------------------------------------------------------------------------------
# the lookups
# ------------------------------------------------------------------------------------------------

_memory: dict[tuple[str, str], dict] = {}


def results_dir(cache=None) -> Path:
    """``<ppa.synth cache dir>/results``."""
    return synth.cache_dir(cache) / "results"


#: the key of a cached result that is Yosys's own error report (yosys.SynthesisError.deterministic):
#: the same inputs fail the same way, so a later process gets the failure without running Yosys
FAILED = "__synthesis_failed__"


def cached(kind: str, key: str, compute: Callable[[], dict], *, cache=None, what: str = "") -> dict:
    """The result ``kind``/``key`` (a JSON object) from memory, disk or the shipped
    characterisation, else ``compute()`` (see the module docstring). A compute that fails with
    Yosys's own error report is cached as that failure, and raised again from the cache."""
    mem = _memory.get((kind, key))
    if mem is not None:
        _record(kind, key, mem)
        return mem
    path = results_dir(cache) / kind / f"{key}.json"
    value = None
    try:
        value = json.loads(path.read_text())
    except (OSError, ValueError):
        value = None  # absent or damaged: looked up further, rewritten below
    if isinstance(value, dict) and isinstance(value.get(FAILED), str):
        raise yosys.SynthesisError(value[FAILED], where="ppa.synth", deterministic=True)
    if not isinstance(value, dict):
        value = _shipped(kind, key)
    if not isinstance(value, dict):
        if _probing:
            raise NotCharacterised(what or kind)
        note_computed(what or kind)
        try:
            value = compute()
        except yosys.SynthesisError as exc:
            if exc.deterministic:
                message = str(exc).removeprefix(f"{exc.where}: ") if exc.where else str(exc)
                write_file(path, json_text({FAILED: message}), parents=True)
            raise
        write_file(path, json_text(value), parents=True)
    _memory[(kind, key)] = value
    _record(kind, key, value)
    return value


def synthesis(
    generator: str,
    params: object,
    top: str,
    make_verilog: Callable[[], str],
    *,
    cache=None,
    mapping: str = "area",
) -> synth.SynthResult:
    """ppa.synth_memo.synthesize_generated, answered by the shipped characterisation when it holds the
    design (the result then has no netlist on disk until one is asked for)."""
    key = synth_memo.generated_key(generator, params, top, mapping)
    meta = _shipped("synth", key)
    if meta is not None:
        try:
            root = synth.cache_dir(cache)

            def regenerate() -> synth.SynthResult:
                return synth_memo.synthesize_generated(
                    generator, params, top, make_verilog, cache=cache, mapping=mapping
                )

            res = synth.SynthResult.from_meta(meta, root / meta["key"] / "netlist.json", cached=True)
            res.regenerate = regenerate
            return res
        except (KeyError, ValueError, TypeError):
            pass  # a damaged entry: synthesise
    if _probing:
        hit = synth_memo.cached_generated(generator, params, top, cache=cache, mapping=mapping)
        if hit is None:
            raise NotCharacterised(f"module {top}")
        res = hit
    else:
        res = _once(
            "synth",
            key,
            lambda: synth_memo.synthesize_generated(
                generator, params, top, make_verilog, cache=cache, mapping=mapping
            ),
        )
    if not res.cached:
        note_computed(f"module {top}")
    if _recorder is not None:
        _record(
            "synth",
            key,
            res.meta()
            | {"call": {"generator": generator, "params": repr(params), "top": top, "mapping": mapping}},
        )
    return res


def sta_key(
    generator: str, params: object, top: str, lib: LibertyLibrary, *, clock_ps, clock_port, false_path_ports
) -> str:
    """:func:`synth_memo.portable_key` of a ppa.timing.sta.time_generated call (its memo key without the
    machine's own parts: hw/'s source and the Verilog toolchain are the shipped file's)."""
    return synth_memo.portable_key(
        "sta",
        _sta.STA_FLOW_VERSION,
        MAP_SCRIPT,
        TIMING_ABC_SCRIPT,
        _buffer.key(),
        generator,
        repr(params),
        top,
        json.dumps(_sta.tools(lib), sort_keys=True),
        lib.sha256,
        repr(clock_ps),
        repr(clock_port),
        repr(tuple(false_path_ports)),
    )


def sta(
    generator: str,
    params: object,
    top: str,
    make_verilog: Callable[[], str],
    lib: LibertyLibrary,
    *,
    clock_ps: float | None = None,
    clock_port: str | None = "clk",
    false_path_ports: tuple[str, ...] = (),
    cache=None,
) -> _sta.StaResult:
    """ppa.timing.sta.time_generated, answered by the shipped characterisation when it holds it."""
    key = sta_key(
        generator,
        params,
        top,
        lib,
        clock_ps=clock_ps,
        clock_port=clock_port,
        false_path_ports=false_path_ports,
    )
    d = _shipped("sta", key)
    if d is not None:
        try:
            return _sta.StaResult.from_json(d, cached=True)
        except (KeyError, TypeError):
            pass
    kw = dict(clock_ps=clock_ps, clock_port=clock_port, false_path_ports=tuple(false_path_ports), cache=cache)
    if _probing:
        res = _sta.cached_timing(generator, params, top, lib, **kw)
        if res is None:
            raise NotCharacterised(f"the timing of {top}")
    else:
        res = _once("sta", key, lambda: _sta.time_generated(generator, params, top, make_verilog, lib, **kw))
    if not res.cached:
        note_computed(f"the timing of {top}")
    _record("sta", key, res.to_json())
    return res


# ------------------------------------------------------------------------------------------------
# checking shipped entries against fresh synthesis
# ------------------------------------------------------------------------------------------------


def _literal(node: ast.AST):
    """A recorded parameter value (ints, strings, tuples, PEParams(...) with keywords) from its repr."""
    if isinstance(node, ast.Constant):
        return node.value
    if isinstance(node, ast.Tuple):
        return tuple(_literal(e) for e in node.elts)
    if isinstance(node, ast.UnaryOp) and isinstance(node.op, ast.USub):
        return -_literal(node.operand)
    if (
        isinstance(node, ast.Call)
        and isinstance(node.func, ast.Name)
        and node.func.id == "PEParams"
        and not node.args
    ):
        kwargs = {k.arg: _literal(k.value) for k in node.keywords if k.arg is not None}
        if len(kwargs) == len(node.keywords):  # a repr has no **mapping
            return PEParams(**kwargs)
    raise ValueError(f"not a recorded parameter value: {ast.dump(node)[:80]}")


def recorded_params(text: str):
    return _literal(ast.parse(text, mode="eval").body)


def _array_verilog(params) -> str:
    R, C, p, *rest = params
    kind, dataflow = rest if rest else ("sparse", "ws")
    return rtl.array_verilog(p, R, C, kind, dataflow)


#: the Verilog of each generator name ppa records (ppa.activity.synth_pe, ppa.array_cost,
#: ppa.vector_cost), from its recorded parameters
GENERATORS: dict[str, Callable[[Any], str]] = {  # each takes its own parameters' type
    "hw.pe.SparsePE": lambda p: rtl.pe_verilog(p, True),
    "hw.pe.DensePE": lambda p: rtl.pe_verilog(p, False),
    "hw.pe.SparsePE(dense_path)": lambda p: rtl.pe_verilog(p, True, True),
    "hw.array.SparseArray": _array_verilog,
    "ppa.operators.Register": lambda w: rtl.register_verilog(w)[0],
    "hw.pe.MetadataDecoder": lambda nm: rtl.decoder_verilog(*nm),
    "hw.vector.VectorLane": lambda w: rtl.vector_lane_verilog(w)[0],
}


def resynthesise(entry: dict, *, cache) -> synth.SynthResult:
    """Synthesise a shipped synthesis entry's design afresh (no cache read) with this code."""
    call = entry["call"]
    verilog = GENERATORS[call["generator"]](recorded_params(call["params"]))
    return synth.synthesize(verilog, call["top"], cache=cache, use_cache=False, mapping=call["mapping"])


def check_sample(
    entries: dict[str, dict[str, dict]],
    k: int,
    *,
    cache,
    seed: int | None = None,
    max_transistors: int | None = None,
) -> list[str]:
    """Re-synthesise ``k`` random synthesis entries of ``entries`` (of at most ``max_transistors``,
    when given); one line per entry whose fresh result differs (nothing: all identical)."""
    synths = sorted(
        (key, e)
        for key, e in entries.get("synth", {}).items()
        if max_transistors is None or e["transistors"] <= max_transistors
    )
    rng = random.Random(seed)
    bad = []
    for _key, entry in rng.sample(synths, min(k, len(synths))):
        fresh = resynthesise(entry, cache=cache).meta()
        shipped = {k2: v for k2, v in entry.items() if k2 != "call"}
        if fresh != shipped:
            diff = sorted(f for f in set(fresh) | set(shipped) if fresh.get(f) != shipped.get(f))
            bad.append(
                f"{entry['call']['top']} {entry['call']['params']} ({entry['call']['mapping']}): "
                f"{', '.join(diff)} differ"
            )
    return bad


__all__ = [
    "NotCharacterised",
    "probing",
    "is_probing",
    "failure",
    "computed",
    "cached",
    "synthesis",
    "sta",
    "status",
    "recording",
    "merge",
    "write",
    "code_version",
    "code_version_of",
    "context",
    "file_name",
    "Shipped",
    "SHIPPED_DIR",
    "REGENERATE",
    "POST_CHARACTERISATION",
    "results_dir",
    "note_computed",
    "shipped_dir",
    "check_sample",
    "resynthesise",
    "recorded_params",
    "GENERATORS",
]
