"""``sparsepe quality``: model quality under N:M pruning.

``sparsepe quality [--weights FILE] [--eval MODULE:FUNCTION] [--finetuned FILE] [--calib FILE|MODULE:FUNCTION]
[--method magnitude|wanda|sparsegpt] [--layout [PATTERN=]LAYOUT ...] [--save-pruned FILE.safetensors] [--nm 2:4]
[--hook-timeout SECONDS] [--reference [--family mlp|transformer]] [--seed S] [--json]``

* ``--weights MODEL --eval MODULE:FUNCTION [--finetuned PRUNED]`` scores the team's own model
  with the team's own eval (``"model"`` evidence, sim.quality.team.user_eval): dense, one-shot N:M and
  fine-tuned weights; JSON keys ``dense_metric``, ``oneshot_metric``, ``finetuned_metric``,
  ``delta``, ``delta_ci``, ``pruned_tensors``, ``skipped_tensors``, ``evidence``, ``method``,
  ``calibration`` (``source``, ``samples``, ``inputs``), ``layouts`` (tensor -> reduction axis);
* ``--calib``, ``--method``, ``--layout``: how the one-shot model is pruned (sim.quality.prune.oneshot:
  sparsegpt by default when calibration inputs are given, else magnitude; the layout of each
  tensor, sim.quality.prune.layouts); ``--save-pruned`` writes the one-shot weights;
* ``--reference`` runs the built-in experiment (digits MLP: dense, one-shot N:M, ASP fine-tune,
  gradual, dense model of equal latency) in a few seconds; ``--family transformer`` the
  char-level transformer LM reference instead (cached; about a minute cold; with the one-shot
  delta of every pruning method), both over sim.quality.evidence.evidence.REFERENCE_SEEDS seeds with a
  95 % interval (``evidence: "proxy"``);
* ``--weights FILE`` alone (.npz / .safetensors) prunes every weight and reports per-layer
  retained magnitude share, relative output error and SNR on the calibration inputs (else seeded
  N(0, 1)) (sim.quality.team.layer_report);
* ``--max-quality-delta`` sets the guardrail on the equal-latency delta (fraction, 0.015 = 1.5 points);
* ``--hook-timeout`` limits each call of the team's code (``--eval``, ``--calib MODULE:FUNCTION``),
  which runs in a child process (sim.quality.team.hooks): a hook that hangs, exits, raises, prints to
  stdout or returns a wrong value is one line ``sparsepe: error: <hook>: <what it did>``, exit 2.

Ctrl-C prints one line ``sparsepe: interrupted`` and exits with 130; the hook's process is killed.
The tables and lines printed without ``--json`` are :mod:`explore.commands.quality_print`'s.
"""

from __future__ import annotations

import math
import sys
from contextlib import contextmanager
from pathlib import Path
from typing import Annotated

import typer
from rich.console import Console

from explore.commands.quality_print import print_result
from explore.config import MAX_SEED
from hw.errors import InputError
from sim.quality.evidence.evidence import digits_evidence, guardrail_verdict, transformer_evidence
from sim.quality.evidence.precision import precision_quality
from sim.quality.prune.calibration import is_function_spec
from sim.quality.prune.layouts import parse_layout_rules
from sim.quality.prune.method_names import METHODS
from sim.quality.references.reference import check_guardrail, parse_nm
from sim.quality.team.hooks import DEFAULT_HOOK_TIMEOUT, HookRaised, HookTimeout, check_hook_timeout
from sim.quality.team.layer_report import weights_report
from sim.quality.team.user_eval import model_evidence
from sim.quality.team.weights import check_save_path, save_tensors


def _check_common(
    nm: str,
    seed: int,
    max_quality_delta: float,
    method: str | None,
    layouts,
    save_pruned,
    weights: Path | None,
    calib: str | None,
    reference: bool,
    eval_spec: str | None,
    prune_lm_head: bool = False,
):
    """Every argument checked before any work: (n, m, layout rules)."""
    n, m = parse_nm(nm)
    if seed < 0:
        raise InputError(f"must be >= 0, got {seed}", where="--seed")
    if not max_quality_delta >= 0:
        raise InputError(
            f"must be >= 0 (a fraction: 0.015 = 1.5 points), got {max_quality_delta}",
            where="--max-quality-delta",
        )
    if method is not None and method not in METHODS:
        raise InputError(f"unknown pruning method {method!r} (known: {', '.join(METHODS)})", where="--method")
    rules = parse_layout_rules(layouts)
    for flag, given in (
        ("--method", method is not None),
        ("--calib", calib is not None),
        ("--layout", bool(rules)),
        ("--save-pruned", save_pruned is not None),
        ("--prune-lm-head", prune_lm_head),
    ):
        if given and weights is None:
            raise InputError(
                "prunes the team's weights: give --weights FILE (the references bring their own "
                "calibration data and report every method)",
                where=flag,
            )
    if save_pruned is not None:
        check_save_path(save_pruned)
    if eval_spec is not None and reference:
        raise InputError("--eval scores the team's model; run --reference separately", where="--eval")
    return n, m, rules


def check_precisions(precision: str) -> list[str]:
    """``--precision`` as a list: comma-separated, no empty entry."""
    precs = [p.strip() for p in precision.split(",")]
    if not any(precs):
        raise InputError(
            "empty: give a comma list of int8, int4, fp8-e4m3, fp8-e5m2, fp16, bf16", where="--precision"
        )
    if not all(precs):
        raise InputError(
            f"empty entry in {precision!r} (a comma list of int8, int4, fp8-e4m3, fp8-e5m2, fp16, bf16)",
            where="--precision",
        )
    return precs


def check_hooks(hook_timeout: float | None, eval_spec: str | None, calib: str | None) -> HookTimeout:
    """``--hook-timeout`` (checked; it needs a hook to apply to) as the hooks' limit."""
    if hook_timeout is None:
        return HookTimeout(DEFAULT_HOOK_TIMEOUT, "--hook-timeout")
    seconds = check_hook_timeout(hook_timeout, "--hook-timeout")
    if eval_spec is None and (calib is None or not is_function_spec(calib)):
        raise InputError(
            "limits the team's code: give --eval MODULE:FUNCTION or --calib MODULE:FUNCTION",
            where="--hook-timeout",
        )
    return HookTimeout(seconds, "--hook-timeout")


def _team_model_result(
    weights: Path | None,
    eval_spec: str,
    n: int,
    m: int,
    rules,
    seed: int,
    calib: str | None,
    max_quality_delta: float,
    *,
    finetuned: Path | None,
    method: str | None,
    save_pruned: Path | None,
    hook_timeout: HookTimeout | None,
    prune_lm_head: bool,
) -> dict:
    """``--weights --eval``: the team's model scored by the team's eval, with the guardrail."""
    if weights is None:
        raise InputError("--eval needs --weights (the model it scores)", where="--eval")
    out = model_evidence(
        weights,
        eval_spec,
        finetuned_path=finetuned,
        n=n,
        m=m,
        seed=seed,
        method=method,
        calibration=calib,
        layout_rules=rules,
        save_pruned=save_pruned,
        hook_timeout=hook_timeout,
        prune_lm_head=prune_lm_head,
    )
    ok, msg = guardrail_verdict(out, max_quality_delta)
    out.update({"max_quality_delta": max_quality_delta, "guardrail_ok": ok, "guardrail": msg})
    return out


def _transformer_result(n: int, m: int, seed: int, max_quality_delta: float, progress) -> dict:
    """``--reference --family transformer``: the char-level transformer LM reference."""
    ev, _ = transformer_evidence(n, m, seed=seed, progress=progress)
    ok, msg = guardrail_verdict(ev, max_quality_delta)
    return {
        **ev,
        "nm": f"{n}:{m}",
        "seed": seed,
        "max_quality_delta": max_quality_delta,
        "guardrail_ok": ok,
        "guardrail": msg,
    }


def _weights_result(
    weights: Path,
    n: int,
    m: int,
    rules,
    seed: int,
    calib: str | None,
    *,
    method: str | None,
    save_pruned: Path | None,
    hook_timeout: HookTimeout | None,
    prune_lm_head: bool,
) -> dict:
    """``--weights`` alone: the per-layer report of the pruned weights (and the saved file)."""
    rep, shot = weights_report(
        weights,
        n,
        m,
        seed=seed,
        calibration=calib,
        method=method,
        layout_rules=rules,
        hook_timeout=hook_timeout,
        prune_lm_head=prune_lm_head,
    )
    if save_pruned is not None:
        save_tensors(save_pruned, shot.tensors, source=weights, note=shot.schedule())
    return {
        "weights_file": rep["file"],
        "calibration": rep["calibration"],
        "layers": rep["layers"],
        "skipped": rep["skipped"],
        "layers_pruned": rep["layers_pruned"],
        "layers_dense": rep["layers_dense"],
        "method": rep["method"],
        "layouts": rep["layouts"],
        "pruned_file": None if save_pruned is None else str(save_pruned),
        "tied_lm_head": rep["tied_lm_head"],
    }


def _digits_result(n: int, m: int, seed: int, max_quality_delta: float, progress) -> dict:
    """``--reference``: the digits MLP experiment, its seed's guardrail and the multi-seed one."""
    ev, results = digits_evidence(n, m, seed=seed, progress=progress)
    res = results[0]
    out = {**res.to_json()}
    ok0, msg0 = check_guardrail(res.delta_at_equal_latency, max_quality_delta)
    ok, msg = guardrail_verdict(ev, max_quality_delta)
    ev = {k: v for k, v in ev.items() if k != "details"}
    out.update(
        {
            "max_quality_delta": max_quality_delta,
            "guardrail_ok": ok,
            "guardrail": msg,
            "seed_guardrail_ok": ok0,
            "seed_guardrail": msg0,
            "evidence": "proxy",
            "multi_seed": ev,
            "quality_delta": ev["quality_delta"],
            "quality_delta_interval": ev["quality_delta_interval"],
            "quality_delta_ci": ev["quality_delta_ci"],
        }
    )
    return out


def run_quality(
    weights: Path | None,
    nm: str,
    reference: bool,
    seed: int,
    calib: str | None,
    max_quality_delta: float,
    progress=None,
    *,
    eval_spec: str | None = None,
    finetuned: Path | None = None,
    family: str = "mlp",
    method: str | None = None,
    layouts=(),
    save_pruned: Path | None = None,
    hook_timeout: HookTimeout | None = None,
    prune_lm_head: bool = False,
) -> dict:
    """Everything ``sparsepe quality`` prints with ``--json``, as one dict."""
    n, m, rules = _check_common(
        nm,
        seed,
        max_quality_delta,
        method,
        layouts,
        save_pruned,
        weights,
        calib,
        reference,
        eval_spec,
        prune_lm_head,
    )
    if finetuned is not None and eval_spec is None:
        raise InputError("--finetuned needs --weights and --eval", where="--finetuned")
    if eval_spec is not None:
        return _team_model_result(
            weights,
            eval_spec,
            n,
            m,
            rules,
            seed,
            calib,
            max_quality_delta,
            finetuned=finetuned,
            method=method,
            save_pruned=save_pruned,
            hook_timeout=hook_timeout,
            prune_lm_head=prune_lm_head,
        )
    if family not in ("mlp", "transformer"):
        raise InputError(f"unknown reference family {family!r} (mlp, transformer)", where="--family")
    if family == "transformer":
        if not reference or weights is not None:
            raise InputError("--family transformer goes with --reference alone", where="--family")
        return _transformer_result(n, m, seed, max_quality_delta, progress)
    if weights is None and not reference:
        raise InputError(
            "nothing to do: give --weights FILE [--eval M:F] and/or --reference", where="quality"
        )
    out: dict = {"nm": f"{n}:{m}", "seed": seed}
    if weights is not None:
        out.update(
            _weights_result(
                weights,
                n,
                m,
                rules,
                seed,
                calib,
                method=method,
                save_pruned=save_pruned,
                hook_timeout=hook_timeout,
                prune_lm_head=prune_lm_head,
            )
        )
    if reference:
        out.update(_digits_result(n, m, seed, max_quality_delta, progress))
    return out


@contextmanager
def interrupt_line():
    """Ctrl-C: exit 130, whose one line ``sparsepe: interrupted`` explore.cli prints (the hooks'
    child processes are killed on the way out: sim.quality.team.hooks). A team hook that raised:
    its traceback trimmed to the team's files on stderr, before explore.cli's one error line."""
    try:
        yield
    except KeyboardInterrupt:
        raise typer.Exit(130) from None
    except HookRaised as exc:  # the team's traceback (its own files' frames), then the one-line error
        for line in exc.traceback_lines():
            print(line, file=sys.stderr)
        raise


Weights = Annotated[Path | None, typer.Option("--weights", help="Weights file (.npz or .safetensors).")]
EvalSpec = Annotated[
    str | None,
    typer.Option(
        "--eval", help="The team's eval MODULE:FUNCTION scoring a dict of weights (with --weights)."
    ),
]
Finetuned = Annotated[
    Path | None,
    typer.Option("--finetuned", help="The team's N:M fine-tuned weights (with --eval)."),
]
Family = Annotated[
    str,
    typer.Option(
        "--family",
        help="Reference model with --reference: mlp (digits MLP) or transformer (char LM).",
    ),
]
NM = Annotated[str, typer.Option("--nm", help="N:M pattern, e.g. 2:4.")]
Reference = Annotated[bool, typer.Option("--reference", help="Run the built-in digits-MLP experiment.")]
Seed = Annotated[int, typer.Option("--seed", help="Seed (data split, init, calibration draws).")]
AsJson = Annotated[bool, typer.Option("--json", help="Print one JSON object to stdout.")]
Calib = Annotated[
    str | None,
    typer.Option(
        "--calib",
        help="Calibration inputs for pruning: a .npz/.safetensors file of (samples, in_features) "
        "arrays named like the weights, or MODULE:FUNCTION returning that dict; fn(weights) runs "
        "SparseGPT's sequential mode.",
    ),
]
Method = Annotated[
    str | None,
    typer.Option(
        "--method",
        help="Pruning method: magnitude, wanda or sparsegpt (default: sparsegpt with --calib, "
        "else magnitude).",
    ),
]
Layout = Annotated[
    list[str] | None,
    typer.Option(
        "--layout",
        help="[TENSOR-PATTERN=]LAYOUT: the reduction axis of matching tensors (linear, "
        "gpt2-conv1d, conv, experts-out-in, experts-in-out); repeatable.",
    ),
]
SavePruned = Annotated[
    Path | None,
    typer.Option(
        "--save-pruned",
        help="Write the pruned weights (same names, dtypes, layouts) to FILE.safetensors.",
    ),
]
MaxQualityDelta = Annotated[
    float,
    typer.Option(
        "--max-quality-delta",
        help="Guardrail: largest tolerated quality loss (fraction: accuracy points, or "
        "relative perplexity increase), tested on the pessimistic end of its 95 % interval.",
    ),
]
PrecisionList = Annotated[
    str | None,
    typer.Option(
        "--precision",
        help="Quality gate per operand precision (comma list of int8, int4, fp8-e4m3, fp8-e5m2, "
        "bf16): the digits reference MLP, dense and --nm pruned, at each precision against dense FP32, "
        "3 seeds from --seed, each delta with its 95 % interval.",
    ),
]
PruneLmHead = Annotated[
    bool,
    typer.Option(
        "--prune-lm-head",
        help="Prune an LM head tied to the input embedding (found from config.json's "
        "tie_word_embeddings beside --weights, or from the tensors), and the embedding with it; by default it "
        "is kept dense, as simulate --hf-config keeps it.",
    ),
]
HookTimeoutSeconds = Annotated[
    float | None,
    typer.Option(
        "--hook-timeout",
        help=f"Seconds each call of the team's code (--eval, --calib MODULE:FUNCTION) may take "
        f"in its child process before it is stopped (default {DEFAULT_HOOK_TIMEOUT:g}).",
    ),
]


def _check_seed_and_delta(seed: int, max_quality_delta: float) -> None:
    if not 0 <= seed <= MAX_SEED:
        raise InputError(f"must be in 0..{MAX_SEED} (numpy's seed range), got {seed}", where="--seed")
    if not (math.isfinite(max_quality_delta) and max_quality_delta >= 0):
        raise InputError(
            f"must be a finite number >= 0, got {max_quality_delta}", where="--max-quality-delta"
        )


def register(app: typer.Typer) -> None:
    @app.command("quality")
    def quality_cmd(
        weights: Weights = None,
        eval_spec: EvalSpec = None,
        finetuned: Finetuned = None,
        family: Family = "mlp",
        nm: NM = "2:4",
        reference: Reference = False,
        seed: Seed = 0,
        as_json: AsJson = False,
        calib: Calib = None,
        method: Method = None,
        layout: Layout = None,
        save_pruned: SavePruned = None,
        max_quality_delta: MaxQualityDelta = 0.015,
        precision: PrecisionList = None,
        prune_lm_head: PruneLmHead = False,
        hook_timeout: HookTimeoutSeconds = None,
    ) -> None:
        """Quality of N:M pruning: user weights per layer and/or the built-in reference experiment."""
        with interrupt_line():
            _check_seed_and_delta(seed, max_quality_delta)
            limit = check_hooks(hook_timeout, eval_spec, calib)
            precs = check_precisions(precision) if precision is not None else None
            err = Console(stderr=True)
            progress = None
            if reference and sys.stderr.isatty():
                status = err.status("reference experiment")
                status.start()
                progress = status.update
            try:
                if precision is not None and weights is None and not reference:
                    result = {}
                else:
                    result = run_quality(
                        weights,
                        nm,
                        reference,
                        seed,
                        calib,
                        max_quality_delta,
                        progress,
                        eval_spec=eval_spec,
                        finetuned=finetuned,
                        family=family,
                        method=method,
                        layouts=layout or (),
                        save_pruned=save_pruned,
                        hook_timeout=limit,
                        prune_lm_head=prune_lm_head,
                    )
                if precs is not None:
                    rows = precision_quality(
                        precs, (nm, "dense"), (seed, seed + 1, seed + 2), max_delta=max_quality_delta
                    )
                    result["precision_gates"] = [r.to_json() for r in rows]
            finally:
                if progress is not None:
                    status.stop()
            print_result(result, as_json)
