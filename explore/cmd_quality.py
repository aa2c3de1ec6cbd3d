"""``sparsepe quality``: model quality under N:M pruning.

``sparsepe quality [--weights FILE] [--nm 2:4] [--reference] [--seed S] [--json]``

* ``--reference`` runs the built-in experiment (digits MLP: dense, one-shot N:M, ASP fine-tune,
  gradual, dense model of equal latency) in a few seconds;
* ``--weights FILE`` (.npz / .safetensors) prunes every weight per the ASP rules and reports
  per-layer retained magnitude share, relative output error and SNR on calibration activations
  (``--calib FILE`` with arrays named like the weights, else seeded N(0, 1));
* ``--max-quality-delta`` sets the guardrail on the equal-latency delta (fraction, 0.015 = 1.5 points).
"""

from __future__ import annotations

import json
import sys
from pathlib import Path
from typing import Annotated, Optional

import typer

from hw.errors import InputError


def run_quality(weights: Path | None, nm: str, reference: bool, seed: int, calib: Path | None,
                max_quality_delta: float, progress=None) -> dict:
    """Everything ``sparsepe quality`` prints with ``--json``, as one dict."""
    from sim.quality import check_guardrail, parse_nm, reference_experiment

    n, m = parse_nm(nm)
    if seed < 0:
        raise InputError(f"must be >= 0, got {seed}", where="--seed")
    if weights is None and not reference:
        raise InputError("nothing to do: give --weights FILE and/or --reference", where="quality")
    if calib is not None and weights is None:
        raise InputError("--calib needs --weights", where="--calib")
    if not max_quality_delta >= 0:
        raise InputError(f"must be >= 0 (a fraction: 0.015 = 1.5 points), got {max_quality_delta}",
                         where="--max-quality-delta")
    out: dict = {"nm": f"{n}:{m}", "seed": seed}
    if weights is not None:
        from sim.quality.weights import weights_report

        rep = weights_report(weights, n, m, seed=seed, calib_path=calib)
        out.update({"weights_file": rep["file"], "calibration": rep["calibration"], "layers": rep["layers"],
                    "skipped": rep["skipped"], "layers_pruned": rep["layers_pruned"],
                    "layers_dense": rep["layers_dense"]})
    if reference:
        res = reference_experiment(seed, n, m, progress=progress)
        out.update(res.to_json())
        ok, msg = check_guardrail(res.delta_at_equal_latency, max_quality_delta)
        out.update({"max_quality_delta": max_quality_delta, "guardrail_ok": ok, "guardrail": msg})
    return out


def _print_human(result: dict) -> None:
    from rich.console import Console
    from rich.markup import escape
    from rich.table import Table

    con = Console()
    if "layers" in result:
        t = Table(title=escape(f"{result['weights_file']}: {result['nm']} pruning ({result['calibration']})"))
        for col in ("layer", "shape", "kind", "pruned", "nonzero", "kept |w| share", "rel. out err", "SNR dB"):
            t.add_column(col, overflow="fold")
        for r in result["layers"]:
            t.add_row(r["name"], "x".join(map(str, r["shape"])), r["kind"], "yes" if r["pruned"] else "dense",
                      f"{r['nonzero_fraction']:.3f}", f"{r['retained_magnitude_share']:.4f}",
                      f"{r['relative_output_error']:.4f}", "inf" if r["snr_db"] is None else f"{r['snr_db']:.2f}")
        con.print(t)
        for r in result["layers"]:
            if not r["pruned"]:
                con.print(escape(f"  {r['name']} stays dense: {r['reason']}"))
        for s in result["skipped"]:
            con.print(escape(f"  skipped {s['name']}: {s['reason']}"))
    if "dense_accuracy" in result:
        t = Table(title=f"reference experiment: digits MLP {'-'.join(map(str, result['widths']))}, "
                        f"{result['nm']}, seed {result['seed']}")
        t.add_column("step")
        t.add_column("test accuracy", justify="right")
        for label, key in (("dense", "dense_accuracy"), (f"one-shot {result['nm']}", "oneshot_accuracy"),
                           ("fine-tuned, fixed mask (ASP)", "finetuned_accuracy"),
                           ("gradual (cubic ramp)", "gradual_accuracy"),
                           (f"dense h={result['dense_equal_latency_hidden']} (equal latency)",
                            "dense_equal_latency_accuracy")):
            t.add_row(label, f"{result[key] * 100:.2f}%")
        con.print(t)
        con.print(f"equal latency on {escape(result['latency_model'])}: sparse h={result['sparse_hidden']} "
                  f"({result['sparse_params']} params, {result['sparse_nonzero_params']} nonzero, latency "
                  f"{result['sparse_latency']:g}) vs dense h={result['dense_equal_latency_hidden']} "
                  f"({result['dense_equal_latency_params']} params, latency {result['dense_equal_latency_latency']:g})")
        con.print(f"delta at equal latency: {result['delta_at_equal_latency'] * 100:+.2f} points; "
                  f"{result['guardrail']}; {result['seconds']:.1f} s")


def register(app: typer.Typer) -> None:
    @app.command("quality")
    def quality_cmd(
        weights: Annotated[Optional[Path], typer.Option("--weights", help="Weights file (.npz or .safetensors).")] = None,
        nm: Annotated[str, typer.Option("--nm", help="N:M pattern, e.g. 2:4.")] = "2:4",
        reference: Annotated[bool, typer.Option("--reference", help="Run the built-in digits-MLP experiment.")] = False,
        seed: Annotated[int, typer.Option("--seed", help="Seed (data split, init, calibration draws).")] = 0,
        as_json: Annotated[bool, typer.Option("--json", help="Print one JSON object to stdout.")] = False,
        calib: Annotated[Optional[Path], typer.Option(
            "--calib", help="Calibration activations (.npz/.safetensors, arrays named like the weights).")] = None,
        max_quality_delta: Annotated[float, typer.Option(
            "--max-quality-delta", help="Guardrail: largest tolerated accuracy loss at equal latency (fraction).")
        ] = 0.015,
    ) -> None:
        """Quality of N:M pruning: user weights per layer and/or the built-in reference experiment."""
        from rich.console import Console

        err = Console(stderr=True)
        progress = None
        if reference and sys.stderr.isatty():
            status = err.status("reference experiment")
            status.start()
            progress = status.update
        try:
            result = run_quality(weights, nm, reference, seed, calib, max_quality_delta, progress)
        finally:
            if progress is not None:
                status.stop()
        if as_json:
            print(json.dumps(result, sort_keys=True))
        else:
            _print_human(result)
