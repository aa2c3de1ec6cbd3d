"""What ``sparsepe quality`` prints (explore.commands.quality): its result as one JSON object, or as
tables (the team's model, the reference experiments, the per-layer pruning report) and one line per
precision gate."""

from __future__ import annotations

from typing import Any

from rich.console import Console
from rich.markup import escape
from rich.table import Table

from explore.safety import dumps


def _print_pruning(con, result: dict) -> None:
    """What ran: the method, the calibration inputs, the layouts, the saved file."""
    cal = result["calibration"]
    src = (
        f"calibration {cal['source']}, {cal['samples']} rows per tensor, inputs from the {cal['inputs']}"
        if cal.get("source")
        else "no calibration inputs"
    )
    con.print(escape(f"method {result['method']} ({src})"))
    pruned = result.get("pruned_tensors") or [r for r in result.get("layers", []) if r["pruned"]]
    by: dict[tuple[Any, Any, Any], list[str]] = {}
    for r in pruned:
        by.setdefault((r["layout"], r["reduction_axis"], r["method"]), []).append(r["name"])
    for (lay, axis, meth), names in by.items():
        con.print(
            escape(
                f"  {len(names)} tensor(s) {lay}, groups of M along axis {axis}, pruned by {meth}: "
                + ", ".join(names[:4])
                + (", ..." if len(names) > 4 else "")
            )
        )
    if result.get("pruned_file"):
        con.print(escape(f"pruned weights written to {result['pruned_file']}"))


def _print_evidence(con, result: dict) -> None:
    if result.get("evidence") == "model":
        t = Table(
            title=escape(
                f"{result['weights_file']}: team eval {result['eval']}, {result['nm']} (evidence: model)"
            )
        )
        t.add_column("weights")
        t.add_column(escape(result["metric"]), justify="right")
        t.add_row("dense", f"{result['dense_metric']:.6g}")
        t.add_row(f"one-shot {result['nm']}", f"{result['oneshot_metric']:.6g}")
        if result["finetuned_metric"] is not None:
            t.add_row("fine-tuned (team)", f"{result['finetuned_metric']:.6g}")
        con.print(t)
        ci = result["delta_ci"]
        con.print(
            escape(
                f"delta ({result['sparse_model']} - dense): {result['delta']:+.6g}"
                + (
                    f", 95 % interval [{ci[0]:+.6g}, {ci[1]:+.6g}]"
                    if ci
                    else " (no per-sample scores: no interval)"
                )
            )
        )
        _print_pruning(con, result)
        for sk in result["skipped_tensors"]:
            con.print(escape(f"  skipped {sk['name']}: {sk['reason']}"))
    else:
        t = Table(
            title=escape(
                f"reference ({result['evidence']}): {result['model']}, {result['nm']}, "
                f"seeds {result['seeds']}"
            )
        )
        t.add_column("step")
        t.add_column(escape(result["metric"]) + " (mean over seeds)", justify="right")
        for label, key in (
            ("dense", "dense_metric"),
            ("one-shot", "oneshot_metric"),
            ("fine-tuned, fixed mask (ASP)", "finetuned_metric"),
            ("gradual", "gradual_metric"),
            (f"dense {result['dense_equal_latency_size']} (equal latency)", "dense_equal_latency_metric"),
            ("unigram baseline", "unigram_metric"),
        ):
            if result.get(key) is not None:
                t.add_row(escape(label), f"{result[key]:.4f}")
        con.print(t)
        if result.get("oneshot_methods"):
            mt = Table(
                title=escape(
                    f"one-shot {result['nm']} by method, against the pre-trained dense model "
                    f"({result['pretrained_metric']:.4f}); calibration "
                    f"{result['calibration']['source']}"
                )
            )
            for col in ("method", escape(result["metric"]), "delta", "95 % interval"):
                mt.add_column(col, justify="left" if col == "method" else "right")
            for meth, row in result["oneshot_methods"].items():
                lo, hi = row["quality_delta_interval"]
                mt.add_row(
                    meth,
                    f"{row['perplexity']:.4f}",
                    f"{row['quality_delta'] * 100:+.2f} %",
                    f"[{lo * 100:+.2f}, {hi * 100:+.2f}] %",
                )
            con.print(mt)
        con.print(
            escape(
                f"equal latency: sparse {result['sparse_size']} ({result['sparse_params']} params, "
                f"{result['sparse_nonzero_params']} nonzero, {result['sparse_latency']:g} cycles on "
                f"{result['latency_model']}) vs dense {result['dense_equal_latency_size']} "
                f"({result['dense_equal_latency_params']} params, {result['dense_equal_latency_latency']:g} "
                f"cycles on {result['dense_latency_model']})"
            )
        )
    iv = result.get("quality_delta_interval")
    con.print(
        escape(
            f"quality loss {result['quality_delta']:+.4f}"
            + (f" (95 % interval [{iv[0]:+.4f}, {iv[1]:+.4f}])" if iv else "")
            + f"; {result['guardrail']}"
        )
    )


def _print_human(result: dict) -> None:
    con = Console()
    if result.get("evidence") == "model" or "reference" in result:
        _print_evidence(con, result)
        return
    if "layers" in result:
        t = Table(
            title=escape(
                f"{result['weights_file']}: {result['nm']} {result['method']} pruning (outputs "
                f"measured on {result['calibration']['measured_on']})"
            )
        )
        for col in (
            "layer",
            "shape",
            "kind",
            "pruned",
            "nonzero",
            "kept |w| share",
            "rel. out err",
            "SNR dB",
        ):
            t.add_column(col, overflow="fold")
        for r in result["layers"]:
            t.add_row(
                escape(r["name"]),
                "x".join(map(str, r["shape"])),
                r["kind"],
                "yes" if r["pruned"] else "dense",
                f"{r['nonzero_fraction']:.3f}",
                f"{r['retained_magnitude_share']:.4f}",
                f"{r['relative_output_error']:.4f}",
                "inf" if r["snr_db"] is None else f"{r['snr_db']:.2f}",
            )
        con.print(t)
        for r in result["layers"]:
            if not r["pruned"]:
                con.print(escape(f"  {r['name']} stays dense: {r['reason']}"))
        for s in result["skipped"]:
            con.print(escape(f"  skipped {s['name']}: {s['reason']}"))
        _print_pruning(con, result)
    if "dense_accuracy" in result:
        t = Table(
            title=f"reference experiment: digits MLP {'-'.join(map(str, result['widths']))}, "
            f"{result['nm']}, seed {result['seed']}"
        )
        t.add_column("step")
        t.add_column("test accuracy", justify="right")
        for label, key in (
            ("dense", "dense_accuracy"),
            (f"one-shot {result['nm']}", "oneshot_accuracy"),
            ("fine-tuned, fixed mask (ASP)", "finetuned_accuracy"),
            ("gradual (cubic ramp)", "gradual_accuracy"),
            (
                f"dense h={result['dense_equal_latency_hidden']} (equal latency)",
                "dense_equal_latency_accuracy",
            ),
        ):
            t.add_row(label, f"{result[key] * 100:.2f}%")
        con.print(t)
        con.print(
            f"equal latency on {escape(result['latency_model'])}: sparse h={result['sparse_hidden']} "
            f"({result['sparse_params']} params, {result['sparse_nonzero_params']} nonzero, latency "
            f"{result['sparse_latency']:g}) vs dense h={result['dense_equal_latency_hidden']} "
            f"({result['dense_equal_latency_params']} params, latency {result['dense_equal_latency_latency']:g})"
        )
        iv = result["quality_delta_interval"]
        con.print(
            f"delta at equal latency (seed {result['seed']}): {result['delta_at_equal_latency'] * 100:+.2f} "
            f"points; loss over {len(result['multi_seed']['seeds'])} seeds {result['quality_delta'] * 100:+.2f} "
            f"points, 95 % interval [{iv[0] * 100:+.2f}, {iv[1] * 100:+.2f}] (evidence: proxy)"
        )
        con.print(escape(result["guardrail"]))


def print_result(result: dict, as_json: bool) -> None:
    """``result`` as one JSON object, or as tables and one line per precision gate."""
    if as_json:
        print(dumps(result, sort_keys=True))
        return
    if set(result) != {"precision_gates"}:
        _print_human(result)
    for r in result.get("precision_gates", []):
        d = r["delta"]
        print(
            f"{r['precision']:9} {r['sparsity']:6} accuracy {r['accuracy'] * 100:6.2f}%  delta vs "
            f"dense FP32 {d['point'] * 100:+.2f} points [{d['low'] * 100:+.2f}, {d['high'] * 100:+.2f}]  "
            f"{'pass' if r['pass'] else 'FAIL'} (max {r['max_delta'] * 100:.1f})"
        )
