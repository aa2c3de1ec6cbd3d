"""The ASAP7 7 nm standard cells as one Liberty library for the timing flow (``--liberty asap7``).

ASAP7 (Clark et al., "ASAP7: A 7-nm finFET predictive process design kit", Microelectronics Journal
53 (2016) 105-115) is a public predictive 7 nm PDK. Its RVT, typical-corner (TT, 0.7 V, 25 C) NLDM
libraries ship 7z-compressed in ``../shared/reference/asap7`` (The-OpenROAD-Project/asap7sc7p5t_28
@ f970bd3c, BSD-3; five files: SIMPLE, INVBUF, SEQ, AO, OA). The project never holds a copy: on
first use they are unpacked into the cache directory (``$SPARSEPE_CACHE_DIR/asap7/<digest>`` or
``~/.cache/sparsepe/asap7/<digest>``) with the BSD-3 LICENSE beside them, and merged into one
library file, because Yosys 0.23's ``abc`` and ``stat`` take a single ``-liberty``:

- the header (units, operating conditions, the first file's templates) of SIMPLE;
- every table template of the other files whose name is new (SEQ's ``*_7x7`` templates; the
  combinational files share the ``*_x1`` ones);
- every cell group of the five files, as published (INVBUF's and the ICG*DC cells' ``area : X``
  lines without a ``;`` are left as they are: ppa.liberty.parse accepts a simple attribute ended by
  its line, as Yosys and OpenSTA do);
- the library renamed ``asap7sc7p5t_RVT_TT_merged``, its ``comment`` stating the 7 nm node.

Where the directory is: ``$SPARSEPE_ASAP7_DIR``, else ``shared/reference/asap7`` in the nearest
ancestor of this source tree that has one (``../shared`` beside the checkout).
"""

from __future__ import annotations

import hashlib
import os
import re
import shutil
import subprocess
import tempfile
from pathlib import Path

from hw.errors import InputError
from hw.host import make_dir, write_file
from ppa import synth

#: the value of ``--liberty`` / ``fixed.liberty`` that selects the ASAP7 library
KEYWORD = "asap7"
NODE_NM = 7  # [S] ASAP7 is a 7 nm predictive PDK (Clark et al. 2016)
#: the five RVT TT libraries, in merge order (SIMPLE's header leads)
FILES = (
    "asap7sc7p5t_SIMPLE_RVT_TT_nldm_211120",
    "asap7sc7p5t_INVBUF_RVT_TT_nldm_220122",
    "asap7sc7p5t_SEQ_RVT_TT_nldm_220123",
    "asap7sc7p5t_AO_RVT_TT_nldm_211120",
    "asap7sc7p5t_OA_RVT_TT_nldm_211120",
)
MERGED_NAME = "asap7sc7p5t_RVT_TT_merged"
#: bump when the merge changes
MERGE_VERSION = "1"

_TEMPLATE = re.compile(r"^\s*(lu_table_template|power_lut_template)\s*\(\s*(\S+?)\s*\)\s*\{\s*$")


def reference_dir() -> Path | None:
    """The directory holding the ASAP7 ``*.lib.7z`` files, or None when there is none."""
    env = os.environ.get("SPARSEPE_ASAP7_DIR")
    if env:
        p = Path(env).expanduser()
        return p if _complete(p) else None
    for anc in Path(__file__).resolve().parents:
        p = anc / "shared" / "reference" / "asap7"
        if _complete(p):
            return p
    return None


def _complete(d: Path) -> bool:
    return d.is_dir() and all((d / f"{f}.lib.7z").is_file() for f in FILES)


def available() -> bool:
    """The ASAP7 archives are present and a 7z unpacker is installed."""
    return reference_dir() is not None and _seven_zip() is not None


def why_unavailable() -> str | None:
    """Why ``--liberty asap7`` cannot be used here (a sentence), or None when it can."""
    if reference_dir() is None:
        return (
            "the ASAP7 libraries are not found (../shared/reference/asap7 beside the checkout, or "
            "$SPARSEPE_ASAP7_DIR)"
        )
    if _seven_zip() is None:
        return "unpacking the ASAP7 libraries needs 7z (Debian package p7zip-full)"
    return None


def _seven_zip() -> str | None:
    for exe in ("7z", "7za", "7zr"):
        p = shutil.which(exe)
        if p:
            return p
    return None


def _archives_digest(d: Path) -> str:
    h = hashlib.sha256(MERGE_VERSION.encode())
    for f in FILES:
        h.update((d / f"{f}.lib.7z").read_bytes())
    return h.hexdigest()[:16]


def cache_root() -> Path:
    """``<the synthesis cache's parent>/asap7`` (``$SPARSEPE_CACHE_DIR`` or ``~/.cache/sparsepe``)."""
    return synth.cache_dir().parent / "asap7"


def _split(text: str) -> tuple[list[str], list[str]]:
    """(header lines before the first cell, the cell lines up to the library's closing brace)."""
    lines = text.splitlines()
    first = next((i for i, ln in enumerate(lines) if re.match(r"^\s*cell\s*\(", ln)), None)
    last = max((i for i, ln in enumerate(lines) if ln.strip() == "}"), default=None)
    if first is None or last is None or last < first:
        raise InputError("not an ASAP7 cell library (no cell groups)", where="ppa.liberty.asap7")
    return lines[:first], lines[first:last]


def _templates(header: list[str]) -> dict[str, list[str]]:
    out: dict[str, list[str]] = {}
    cur: list[str] | None = None  # the lines of the template being read, under its name
    name = ""
    for ln in header:
        m = _TEMPLATE.match(ln)
        if m:
            name, cur = m.group(2), [ln]
            continue
        if cur is not None:
            cur.append(ln)
            if ln.strip() == "}":
                out[name] = cur
                cur = None
    return out


def merge(texts: list[str]) -> str:
    """One Liberty library from ASAP7 files' texts (see the module docstring)."""
    header, cells = _split(texts[0])
    have = _templates(header)
    extra, bodies = [], [cells]
    for text in texts[1:]:
        h, c = _split(text)
        for name, lines in _templates(h).items():
            if name not in have:
                have[name] = lines
                extra += lines
        bodies.append(c)
    k = next((i for i, ln in enumerate(header) if re.match(r"^\s*library\s*\(", ln)), None)
    if k is None:
        raise InputError("no library group in the first ASAP7 file", where="ppa.liberty.asap7")
    header = list(header)
    header[k] = f"library ({MERGED_NAME}) {{"
    header.insert(
        k + 1, f'  comment : "ASAP7 7nm predictive PDK, RVT TT 0.7 V 25 C; cells of {", ".join(FILES)}";'
    )
    return "\n".join(header + extra) + "\n" + "\n".join("\n".join(b) for b in bodies) + "\n}\n"


def merged_liberty_path() -> str:
    """The merged library file in the cache (unpacked and merged on first use); raises InputError
    naming what is missing when the archives or 7z are not there."""
    why = why_unavailable()
    if why:
        raise InputError(why, where="--liberty asap7")
    src, seven_zip = reference_dir(), _seven_zip()
    if src is None or seven_zip is None:  # both there a moment ago (why_unavailable)
        raise InputError(
            why_unavailable() or "the ASAP7 libraries or 7z went missing", where="--liberty asap7"
        )
    dest = cache_root() / _archives_digest(src)
    out = dest / f"{MERGED_NAME}.lib"
    if out.is_file():
        return str(out)
    make_dir(dest)
    with tempfile.TemporaryDirectory(prefix="sparsepe-asap7-", dir=dest) as tmp:
        texts = []
        for f in FILES:
            proc = subprocess.run(
                [seven_zip, "x", "-y", f"-o{tmp}", str(src / f"{f}.lib.7z")],
                capture_output=True,
                text=True,
            )
            lib = Path(tmp) / f"{f}.lib"
            if proc.returncode != 0 or not lib.is_file():
                tail = (proc.stderr or proc.stdout).strip().splitlines()[-1:] or ["no output"]
                raise InputError(f"7z could not unpack {f}.lib.7z: {tail[0]}", where="--liberty asap7")
            texts.append(lib.read_text())
        if (src / "LICENSE").is_file():
            write_file(dest / "LICENSE", (src / "LICENSE").read_bytes())
        write_file(out, merge(texts))
    return str(out)


def is_keyword(liberty) -> bool:
    """``liberty`` (a ``--liberty`` / ``fixed.liberty`` value) names the ASAP7 library."""
    return isinstance(liberty, str) and liberty.strip().lower() == KEYWORD


def resolve_path(liberty: str) -> str:
    """A ``--liberty`` value as a file path: the merged ASAP7 file for ``asap7``, else as given."""
    return merged_liberty_path() if is_keyword(liberty) else liberty
