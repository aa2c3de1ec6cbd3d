"""User weights: load ``.npz`` / ``.safetensors``, prune N:M per the shared ASP verdict, report
per-layer quality on calibration activations.

Which tensors are weights (stated rule):

* floating-point tensors with two or more axes are layer weights in PyTorch layout:
  ``(out, in)`` -> kind ``gemm``; ``(Cout, Cin, ...)`` -> ``conv`` (``depthwise`` when Cin == 1);
* one-axis tensors whose name marks them as a bias or a normalisation parameter (a name part
  ``bias``, or containing ``norm``, ``ln``, ``bn``, ``running_``, ``num_batches``) are not
  weights and are listed as skipped;
* anything else is an error naming the file and the tensor: integer/bool/bfloat16 dtype,
  a scalar, a one-axis tensor not named as above ("a 1-D tensor where a matrix is expected"),
  NaN/infinity; and a file in which *no* weight can be tiled by N:M groups.

Per layer (pruned or not) the report gives the retained magnitude share ``sum|W_p| / sum|W|``,
the relative output error ``||X W^T - X W_p^T||_F / ||X W^T||_F`` and the output SNR
``10 log10(||X W^T||^2 / ||X (W - W_p)^T||^2)`` dB on calibration activations X: given by the
user (a ``.npz`` of ``(samples, in_features)`` arrays named like the weights; for a conv,
``in_features = Cin*R*S`` in PyTorch's flattening order) or drawn from the stated distribution
``X ~ N(0, 1)`` i.i.d., ``CALIB_SAMPLES`` rows, ``numpy.random.default_rng(seed)``.
"""

from __future__ import annotations

import re
import zipfile
from dataclasses import asdict, dataclass
from pathlib import Path

import numpy as np

from hw.errors import InputError
from sim.quality.pruning import prune_layer

__all__ = ["load_tensors", "classify", "LayerQuality", "layer_quality", "weights_report", "CALIB_SAMPLES",
           "load_calibration"]

#: Rows of seeded calibration activations per layer when the user gives none.
CALIB_SAMPLES = 256

_NOT_WEIGHT = re.compile(r"(^|[._/])bias($|[._/])|norm|(^|[._/])(ln|bn)(_\w+|\d*)($|[._/])|running_|num_batches",
                         re.IGNORECASE)


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
    import numpy.lib.format as fmt

    version = fmt.read_magic(f)
    if version == (1, 0):
        return fmt.read_array_header_1_0(f)
    if version == (2, 0):
        return fmt.read_array_header_2_0(f)
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
            raise InputError(f"the archive unpacks to {total / 2**30:.1f} GiB, more than the limit "
                             f"{MAX_WEIGHTS_BYTES / 2**30:.0f} GiB", where=where)
        out: dict[str, np.ndarray] = {}
        for info in infos:
            name = info.filename[:-4] if info.filename.endswith(".npy") else info.filename
            at = f"{where}: tensor {name!r}"
            if info.file_size > MAX_TENSOR_BYTES:
                raise InputError(f"{info.file_size / 2**30:.1f} GiB, more than the limit "
                                 f"{MAX_TENSOR_BYTES / 2**30:.0f} GiB of one tensor", where=at)
            with zf.open(info) as f:
                shape, fortran, dtype = _npy_header(f, at)
                if dtype.hasobject:
                    raise InputError("object array (needs pickle; not read)", where=at)
                if len(shape) > MAX_NDIM or any((not isinstance(d, int)) or d < 0 for d in shape):
                    raise InputError(f"shape {shape} is not a tensor shape of at most {MAX_NDIM} axes", where=at)
                count = 1
                for d in shape:
                    count *= d
                nbytes = count * dtype.itemsize
                if nbytes > MAX_TENSOR_BYTES:
                    raise InputError(f"header declares shape {shape} of {dtype} ({nbytes / 2**30:.3g} GiB), more "
                                     f"than the limit {MAX_TENSOR_BYTES / 2**30:.0f} GiB of one tensor", where=at)
                if nbytes > info.file_size:
                    raise InputError(f"header declares shape {shape} of {dtype} ({nbytes} bytes) but the member "
                                     f"holds {info.file_size} bytes: a lying or truncated header", where=at)
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
        except (zipfile.BadZipFile, zipfile.LargeZipFile, OSError, EOFError, NotImplementedError, RuntimeError) as exc:
            raise InputError(f"not a readable .npz archive ({exc})", where=where) from None
        except (ValueError, SyntaxError, TypeError) as exc:  # bad npy header, object arrays need pickle
            raise InputError(f"unreadable tensor in .npz ({exc})", where=where) from None
    if suffix == ".safetensors":
        from safetensors import SafetensorError

        # safetensors checks its header's offsets against the file; the file's size bounds the tensors
        if p.stat().st_size > MAX_WEIGHTS_BYTES:
            raise InputError(f"larger than the limit {MAX_WEIGHTS_BYTES / 2**30:.0f} GiB of one weight file", where=where)
        from safetensors.numpy import load_file

        try:
            return dict(load_file(str(p)))
        except (SafetensorError, OSError, ValueError, TypeError) as exc:
            msg = str(exc).splitlines()[0] if str(exc) else type(exc).__name__
            hint = ("; bfloat16 tensors cannot be read without torch, convert them to float16/float32"
                    if "bfloat16" in msg else "")
            raise InputError(f"not a readable .safetensors file ({msg}){hint}", where=where) from None
    raise InputError(f"unsupported weight file type {p.suffix!r} (use .npz or .safetensors)", where=where)


def classify(path: str | Path, tensors: dict[str, np.ndarray]) -> tuple[dict[str, np.ndarray], dict[str, str]]:
    """Split tensors into (weights, skipped name -> reason); bad tensors raise InputError."""
    weights, skipped = {}, {}
    for name, t in tensors.items():
        where = f"{path}: tensor {name!r}"
        if t.dtype == bool or not np.issubdtype(t.dtype, np.floating):
            raise InputError(f"dtype {t.dtype} is not a floating-point weight type (float16/32/64)", where=where)
        if t.ndim == 0:
            raise InputError("scalar where a weight matrix is expected", where=where)
        if t.ndim == 1:
            if _NOT_WEIGHT.search(name):
                skipped[name] = "1-D bias/normalisation tensor: not a weight (ASP prunes weights only)"
                continue
            raise InputError(f"1-D tensor of shape {t.shape} where a weight matrix is expected "
                             "(name biases/norm scales '...bias' / '...norm...' to skip them)", where=where)
        if t.size == 0:
            raise InputError(f"empty tensor of shape {t.shape}", where=where)
        if not np.all(np.isfinite(t)):
            raise InputError("holds NaN or infinity", where=where)
        weights[name] = t
    if not weights:
        raise InputError("no weight tensor (floating-point, two or more axes) in the file", where=str(path))
    return weights, skipped


def load_calibration(path: str | Path) -> dict[str, np.ndarray]:
    """User calibration activations: a file of 2-D float arrays keyed by weight name."""
    acts = load_tensors(path)
    for name, a in acts.items():
        if a.ndim != 2 or not np.issubdtype(a.dtype, np.floating):
            raise InputError(f"calibration activations must be a 2-D float array (samples, in_features), got "
                             f"shape {a.shape} dtype {a.dtype}", where=f"{path}: tensor {name!r}")
    return acts


@dataclass(frozen=True)
class LayerQuality:
    """One row of the per-layer report."""

    name: str
    shape: list[int]
    kind: str
    pruned: bool
    reason: str
    nonzero_fraction: float
    retained_magnitude_share: float
    relative_output_error: float
    snr_db: float | None  # None when the output is unchanged (infinite SNR)
    calibration: str

    def to_json(self) -> dict:
        return asdict(self)


def _as_matrix(w: np.ndarray) -> np.ndarray:
    """(out, in) view: conv (Cout, Cin, R, S) -> (Cout, Cin*R*S), PyTorch's flattening order."""
    return w.reshape(w.shape[0], -1)


def layer_quality(name: str, w: np.ndarray, n: int = 2, m: int = 4, *, calib: np.ndarray | None = None,
                  rng: np.random.Generator | None = None, where: str | None = None) -> LayerQuality:
    """Prune one layer per the ASP verdict and measure what pruning did to its output."""
    w64 = np.asarray(w, dtype=np.float64)
    layer = prune_layer(name, w64, n, m)
    wm, pm = _as_matrix(w64), _as_matrix(layer.weights)
    k = wm.shape[1]
    if calib is None:
        rng = rng or np.random.default_rng(0)
        x = rng.standard_normal((CALIB_SAMPLES, k))
        source = f"seeded N(0,1), {CALIB_SAMPLES} samples"
    else:
        x = np.asarray(calib, dtype=np.float64)
        if x.ndim != 2 or x.shape[1] != k:
            raise InputError(f"calibration activations of shape {x.shape} do not match the layer's "
                             f"{k} input features", where=where or f"calibration {name!r}")
        source = f"user, {x.shape[0]} samples"
    total = float(np.abs(wm).sum())
    share = float(np.abs(pm).sum()) / total if total else 1.0
    y = x @ wm.T
    err = x @ (wm - pm).T
    ny, ne = float(np.sum(y * y)), float(np.sum(err * err))
    rel = float(np.sqrt(ne / ny)) if ny else (0.0 if ne == 0 else float("inf"))
    snr = None if ne == 0 else (10.0 * np.log10(ny / ne) if ny else float("-inf"))
    return LayerQuality(name=name, shape=[int(d) for d in w64.shape], kind=layer.kind, pruned=layer.pruned,
                        reason=layer.verdict.reason, nonzero_fraction=float(np.count_nonzero(pm) / pm.size),
                        retained_magnitude_share=share, relative_output_error=rel,
                        snr_db=None if snr is None else float(snr), calibration=source)


def weights_report(path: str | Path, n: int = 2, m: int = 4, *, seed: int = 0,
                   calib_path: str | Path | None = None) -> dict:
    """Per-layer quality of N:M-pruning every weight in a user file; see the module docstring."""
    weights, skipped = classify(path, load_tensors(path))
    calib = load_calibration(calib_path) if calib_path is not None else {}
    for name in calib:
        if name not in weights:
            raise InputError(f"calibration tensor {name!r} matches no weight in {path}", where=str(calib_path))
    rows = []
    for i, (name, w) in enumerate(weights.items()):
        rng = np.random.default_rng([seed, i])
        rows.append(layer_quality(name, w, n, m, calib=calib.get(name), rng=rng,
                                  where=f"{calib_path}: tensor {name!r}"))
    if not any(r.pruned for r in rows):
        first = rows[0]
        raise InputError(f"shape {tuple(first.shape)} cannot be tiled by {n}:{m} groups under the ASP rules "
                         f"({first.reason}); no tensor in the file can be pruned",
                         where=f"{path}: tensor {first.name!r}")
    pruned = [r for r in rows if r.pruned]
    return {
        "file": str(path), "nm": f"{n}:{m}", "seed": seed,
        "calibration": (f"user file {calib_path} for {sorted(calib)}; " if calib else "")
                       + f"otherwise X ~ N(0, 1) i.i.d., {CALIB_SAMPLES} rows per layer, "
                         "numpy default_rng([seed, layer index])",
        "layers": [r.to_json() for r in rows],
        "skipped": [{"name": k, "reason": v} for k, v in skipped.items()],
        "layers_pruned": len(pruned), "layers_dense": len(rows) - len(pruned),
    }
