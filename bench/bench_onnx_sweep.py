"""The sweep's verdict on a quantized export: ``sparsepe sweep`` with the same model as its workload,
exported as float, QDQ, QOperator and quantize_dynamic, must reach the same verdict class (issue 36).

Needs torch (CPU wheel), transformers and onnxruntime; skips (exit 0, a line on stderr) without them.

    python bench/bench_onnx_sweep.py [--models bert,resnet50] [--exporter torchscript|dynamo] [--trials 150]

Each model is exported and quantized as bench_onnx_formats.py does (the same functions). The sweep
config is examples/default.toml with its workload replaced by ``onnx = "<file>"`` and the input
shape; every other key (space, limits, seed, trial budget) is the example's. Each format's sweep
runs in its own output directory as ``sparsepe sweep CONFIG --trials N --out DIR`` (a subprocess,
as a user runs it). Printed per model x format: the verdict and its rule (report.json ``decision``),
the best sparse and best dense perf-per-watt, the sparse advantage (``comparison.primary_advantage``)
and the chosen design.
"""

from __future__ import annotations

import argparse
import json
import subprocess
import sys
import tempfile
import time
import tomllib
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT / "bench"))

import bench_onnx_formats as formats  # noqa: E402

FORMATS = ("float", "qdq", "qop", "dynamic")


def config(onnx_path: Path, shapes: dict, base: Path) -> str:
    """The example config's text with its [[workload]] tables replaced by the ONNX file."""
    text = base.read_text()
    tomllib.loads(text)  # the example parses
    head = text.split("[[workload]]")[0]
    tail = text.split("[limits]", 1)[1]
    shape = ", ".join(f'{k} = "{"x".join(map(str, v))}"' for k, v in shapes.items())
    return (
        f'{head}[[workload]]\nonnx = "{onnx_path}"\nweight = 1.0\ninput_shapes = {{ {shape} }}\n\n'
        f"[limits]{tail}"
    )


def sweep(cfg: Path, out: Path, trials: int) -> dict:
    t0 = time.perf_counter()
    p = subprocess.run(
        [sys.executable, "-m", "explore.cli", "sweep", str(cfg), "--trials", str(trials), "--out", str(out)],
        capture_output=True,
        text=True,
        cwd=ROOT,
    )
    if p.returncode != 0:
        return {
            "error": (p.stderr.strip().splitlines() or ["?"])[-1][:300],
            "seconds": time.perf_counter() - t0,
        }
    rep = json.loads((out / "report.json").read_text())
    comp = rep.get("comparison") or {}
    best = lambda side: (comp.get(side) or {}).get("perf_per_watt")  # noqa: E731
    d = (comp.get("best_sparse") or {}).get("design") or {}
    return {
        "verdict": rep["decision"]["verdict"],
        "rule": rep["decision"]["rule"],
        "sparse": best("best_sparse"),
        "dense": best("best_dense"),
        "advantage": comp.get("primary_advantage"),
        "design": f"{d.get('rows')}x{d.get('cols')} {d.get('sparsity')} {d.get('clock_mhz')} MHz "
        f"{d.get('node_nm')} nm"
        if d
        else "-",
        "seconds": time.perf_counter() - t0,
    }


def main() -> int:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--models", default="bert,resnet50")
    ap.add_argument("--exporter", choices=("torchscript", "dynamo"), default="torchscript")
    ap.add_argument("--formats", default=",".join(FORMATS))
    ap.add_argument("--trials", type=int, default=150)
    ap.add_argument("--config", default=str(ROOT / "examples" / "default.toml"))
    args = ap.parse_args()
    try:
        import onnxruntime  # noqa: F401
        import torch
        import transformers  # noqa: F401
    except ImportError as exc:
        print(f"skipped: {exc} (needs torch, transformers and onnxruntime)", file=sys.stderr)
        return 0
    import logging
    import warnings

    logging.getLogger().setLevel(logging.ERROR)
    warnings.filterwarnings("ignore")
    torch.set_num_threads(1)
    base = Path(args.config)
    print(
        f"sparsepe sweep {base.name} with its workload replaced by each export; --trials {args.trials}; "
        f"{args.exporter} exporter",
        flush=True,
    )
    rows, agree, total = [], 0, 0
    with tempfile.TemporaryDirectory(prefix="bench_onnx_sweep_") as tmp:
        for name in [m for m in args.models.split(",") if m]:
            fl = Path(tmp) / f"{name}.onnx"
            shapes, desc, _, _ = formats.export_float(name, fl, False, args.exporter)
            print(f"{name}: {desc}", flush=True)
            res = {}
            for fmt in [f for f in args.formats.split(",") if f]:
                p = fl if fmt == "float" else Path(tmp) / f"{name}.{fmt}.onnx"
                if fmt != "float":
                    formats.quantize(fl, p, fmt, shapes)
                cfg = Path(tmp) / f"{name}.{fmt}.toml"
                cfg.write_text(config(p, shapes, base))
                res[fmt] = sweep(cfg, Path(tmp) / f"out_{name}_{fmt}", args.trials)
                r = res[fmt]
                print(
                    f"  {fmt:8s} {r.get('verdict', 'error: ' + r.get('error', ''))} ({r['seconds']:.0f} s)",
                    flush=True,
                )
            rows.append((name, res))
            for f in Path(tmp).glob(f"{name}.*onnx*"):
                f.unlink()
    print()
    print(
        f"{'model':10s} {'format':8s} {'verdict':16s} {'rule':4s} {'best sparse':>11s} {'best dense':>10s} "
        f"{'advantage':>9s}  chosen design"
    )
    for name, res in rows:
        ref = res.get("float", {}).get("verdict")
        for fmt, r in res.items():
            if "error" in r:
                print(f"{name:10s} {fmt:8s} error: {r['error']}")
                continue
            if fmt != "float":
                total += 1
                agree += r["verdict"] == ref
            adv = f"{(r['advantage'] - 1) * 100:+.1f} %" if r["advantage"] is not None else "-"
            print(
                f"{name:10s} {fmt:8s} {r['verdict']:16s} {r['rule']:4s} {r['sparse'] or 0:11.3f} "
                f"{r['dense'] or 0:10.3f} {adv:>9s}  {r['design']}"
            )
    print(f"\nverdict class as the float export's: {agree} of {total} quantized exports")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
