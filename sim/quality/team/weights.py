"""User weight files: read ``.npz`` / ``.safetensors`` without torch (with size checks before any
allocation), tell weights from the other tensors, write pruned weights back.

Which tensors are weights (stated rule, for the per-layer report):

* floating-point tensors with two or more axes are layer weights (their layout:
  sim.quality.prune.layouts);
* one-axis tensors whose name marks them as a bias or a normalisation parameter (a name part
  ``bias``, or containing ``norm``, ``ln``, ``bn``, ``running_``, ``num_batches``) are not
  weights and are listed as skipped;
* anything else is an error naming the file and the tensor: integer/bool/bfloat16 dtype,
  a scalar, a one-axis tensor not named as above ("a 1-D tensor where a matrix is expected"),
  NaN/infinity.
"""

from __future__ import annotations

import re
import zipfile
from pathlib import Path

import numpy as np
import numpy.lib.format as npy_format
from safetensors import SafetensorError, safe_open
from safetensors.numpy import load_file, save

from hw.errors import InputError
from hw.host import write_file

__all__ = [
    "load_tensors",
    "classify",
    "save_tensors",
    "check_save_path",
    "MAX_TENSOR_BYTES",
    "MAX_WEIGHTS_BYTES",
    "MAX_TENSORS",
    "MAX_NDIM",
]

_NOT_WEIGHT = re.compile(
    r"(^|[._/])bias($|[._/])|norm|(^|[._/])(ln|bn)(_\w+|\d*)($|[._/])|running_|num_batches", re.IGNORECASE
)


#: Largest tensor read from a weight file. [A] 4 GiB: a 1-billion-parameter float32 matrix;
#: larger layers than any in the 8-billion-parameter models sparsepe targets (Llama-3-8B's
#: embedding is 128,256 x 4,096 x 2 B = 1.05 GB).
MAX_TENSOR_BYTES = 4 * 2**30
#: Largest total of the tensors of one weight file. [A] 16 GiB: Llama-3-8B in bfloat16; above it
#: the file is refused before anything is allocated (a zip bomb declares hundreds of GiB).
MAX_WEIGHTS_BYTES = 16 * 2**30
#: Most tensors in one weight file, and most axes of one tensor. [A] far above real checkpoints
#: (Llama-3-8B has 291 tensors; conv weights have 4 axes).
MAX_TENSORS, MAX_NDIM = 100_000, 8


def _npy_header(f, where: str):
    """(shape, fortran_order, dtype) of an .npy stream, the stream left at the data."""
    version = npy_format.read_magic(f)
    if version == (1, 0):
        return npy_format.read_array_header_1_0(f)
    if version == (2, 0):
        return npy_format.read_array_header_2_0(f)
    raise InputError(f"unsupported .npy format version {version}", where=where)


def _load_npz(p: Path, where: str) -> dict[str, np.ndarray]:
    """An .npz read with size checks before any allocation: the archive's member count and declared
    sizes, then each member's .npy header (shape x itemsize against MAX_TENSOR_BYTES and against
    the member's declared size, so a zip bomb or a header that lies about its shape is refused)."""
    with zipfile.ZipFile(p) as zf:
        infos = [i for i in zf.infolist() if not i.is_dir()]
        if len(infos) > MAX_TENSORS:
            raise InputError(f"{len(infos)} members, more than {MAX_TENSORS}", where=where)
        total = sum(i.file_size for i in infos)
        if total > MAX_WEIGHTS_BYTES:
            raise InputError(
                f"the archive unpacks to {total / 2**30:.1f} GiB, more than the limit "
                f"{MAX_WEIGHTS_BYTES / 2**30:.0f} GiB",
                where=where,
            )
        out: dict[str, np.ndarray] = {}
        for info in infos:
            name = info.filename[:-4] if info.filename.endswith(".npy") else info.filename
            at = f"{where}: tensor {name!r}"
            if info.file_size > MAX_TENSOR_BYTES:
                raise InputError(
                    f"{info.file_size / 2**30:.1f} GiB, more than the limit "
                    f"{MAX_TENSOR_BYTES / 2**30:.0f} GiB of one tensor",
                    where=at,
                )
            with zf.open(info) as f:
                shape, fortran, dtype = _npy_header(f, at)
                if dtype.hasobject:
                    raise InputError("object array (needs pickle; not read)", where=at)
                if len(shape) > MAX_NDIM or any((not isinstance(d, int)) or d < 0 for d in shape):
                    raise InputError(
                        f"shape {shape} is not a tensor shape of at most {MAX_NDIM} axes", where=at
                    )
                count = 1
                for d in shape:
                    count *= d
                nbytes = count * dtype.itemsize
                if nbytes > MAX_TENSOR_BYTES:
                    raise InputError(
                        f"header declares shape {shape} of {dtype} ({nbytes / 2**30:.3g} GiB), more "
                        f"than the limit {MAX_TENSOR_BYTES / 2**30:.0f} GiB of one tensor",
                        where=at,
                    )
                if nbytes > info.file_size:
                    raise InputError(
                        f"header declares shape {shape} of {dtype} ({nbytes} bytes) but the member "
                        f"holds {info.file_size} bytes: a lying or truncated header",
                        where=at,
                    )
                data = f.read(nbytes)
                if len(data) != nbytes:
                    raise InputError(f"truncated: {len(data)} of {nbytes} data bytes", where=at)
            arr = np.frombuffer(data, dtype=dtype, count=count)
            out[name] = arr.reshape(shape, order="F" if fortran else "C").copy()
    return out


def load_tensors(path: str | Path) -> dict[str, np.ndarray]:
    """All tensors of a ``.npz`` or ``.safetensors`` file as numpy arrays (no torch)."""
    p = Path(path)
    where = str(p)
    if not p.is_file():
        raise InputError("no such file", where=where)
    suffix = p.suffix.lower()
    if suffix == ".npz":
        if not zipfile.is_zipfile(p):
            raise InputError("not an .npz archive (not a zip file)", where=where)
        try:
            return _load_npz(p, where)
        except InputError:
            raise
        except (
            zipfile.BadZipFile,
            zipfile.LargeZipFile,
            OSError,
            EOFError,
            NotImplementedError,
            RuntimeError,
        ) as exc:
            raise InputError(f"not a readable .npz archive ({exc})", where=where) from None
        except (ValueError, SyntaxError, TypeError) as exc:  # bad npy header, object arrays need pickle
            raise InputError(f"unreadable tensor in .npz ({exc})", where=where) from None
    if suffix == ".safetensors":
        # safetensors checks its header's offsets against the file; the file's size bounds the tensors
        if p.stat().st_size > MAX_WEIGHTS_BYTES:
            raise InputError(
                f"larger than the limit {MAX_WEIGHTS_BYTES / 2**30:.0f} GiB of one weight file", where=where
            )
        try:
            return dict(load_file(str(p)))
        except (SafetensorError, OSError, ValueError, TypeError) as exc:
            msg = str(exc).splitlines()[0] if str(exc) else type(exc).__name__
            hint = (
                "; bfloat16 tensors cannot be read without torch, convert them to float16/float32"
                if "bfloat16" in msg
                else ""
            )
            raise InputError(f"not a readable .safetensors file ({msg}){hint}", where=where) from None
    raise InputError(f"unsupported weight file type {p.suffix!r} (use .npz or .safetensors)", where=where)


def classify(
    path: str | Path, tensors: dict[str, np.ndarray]
) -> tuple[dict[str, np.ndarray], dict[str, str]]:
    """Split tensors into (weights, skipped name -> reason); bad tensors raise InputError."""
    weights, skipped = {}, {}
    for name, t in tensors.items():
        where = f"{path}: tensor {name!r}"
        if t.dtype == bool or not np.issubdtype(t.dtype, np.floating):
            raise InputError(
                f"dtype {t.dtype} is not a floating-point weight type (float16/32/64)", where=where
            )
        if t.ndim == 0:
            raise InputError("scalar where a weight matrix is expected", where=where)
        if t.ndim == 1:
            if _NOT_WEIGHT.search(name):
                skipped[name] = "1-D bias/normalisation tensor: not a weight (ASP prunes weights only)"
                continue
            raise InputError(
                f"1-D tensor of shape {t.shape} where a weight matrix is expected "
                "(name biases/norm scales '...bias' / '...norm...' to skip them)",
                where=where,
            )
        if t.size == 0:
            raise InputError(f"empty tensor of shape {t.shape}", where=where)
        if not np.all(np.isfinite(t)):
            raise InputError("holds NaN or infinity", where=where)
        weights[name] = t
    if not weights:
        raise InputError("no weight tensor (floating-point, two or more axes) in the file", where=str(path))
    return weights, skipped


def check_save_path(path: str | Path, where: str = "--save-pruned") -> Path:
    """A writable ``.safetensors`` target (checked before any pruning)."""
    p = Path(path)
    if p.suffix.lower() != ".safetensors":
        raise InputError(f"the pruned weights are written as .safetensors, got {p.name!r}", where=where)
    if not p.parent.is_dir():
        raise InputError(f"no such directory {p.parent}", where=where)
    if p.is_symlink():
        raise InputError("is a symlink; files are never written through a symlink (remove it)", where=where)
    if p.is_dir():
        raise InputError("is a directory", where=where)
    return p


def save_tensors(
    path: str | Path,
    tensors: dict[str, np.ndarray],
    *,
    source: str | Path | None = None,
    note: str | None = None,
) -> Path:
    """Write ``tensors`` (names, dtypes and shapes as given) to a ``.safetensors`` file. The
    metadata of a ``.safetensors`` ``source`` is kept (Hugging Face loaders read its ``format``),
    with ``note`` added under ``sparsepe``."""
    p = check_save_path(path)
    meta: dict[str, str] = {}
    if source is not None and Path(source).suffix.lower() == ".safetensors":
        try:
            with safe_open(str(source), framework="numpy") as f:
                meta = dict(f.metadata() or {})
        except (SafetensorError, OSError):
            meta = {}
    if note:
        meta["sparsepe"] = note
    arrays = {k: np.ascontiguousarray(v) for k, v in tensors.items()}
    write_file(p, save(arrays, metadata=meta or None))
    return p
