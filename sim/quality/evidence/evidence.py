"""Quality evidence in one shape, whatever produced it: the reference models (``"proxy"``) or the
team's own model and eval (``"model"``). The sweep (explore.evaluator), the report and
``sparsepe quality`` all read these dicts.

Every evidence dict carries:

* ``evidence``: ``"proxy"`` (a reference model stands in for the deployed one) or ``"model"``;
* ``reference``: ``"digits-mlp"``, ``"char-transformer"`` or ``"team eval"``; ``metric``,
  ``higher_is_better``;
* ``quality_delta``: the quality lost by the sparse model (sim.quality.evidence.stats.loss_of; positive =
  sparse is worse), the point estimate; ``quality_delta_interval``: its 95 % interval
  ``[low, high]`` (None when it cannot be computed); ``quality_delta_ci``: the pessimistic end
  (``high``; the point estimate when there is no interval), which the guardrail tests;
* ``pruning_schedule``, ``finetune_recipe``: how the sparse model was obtained;
* for the reference models, the equal-latency comparison: ``sparse_params``,
  ``sparse_nonzero_params``, ``sparse_latency`` (on the sparse design), ``dense_equal_latency_params``,
  ``dense_equal_latency_latency`` (on the dense design), ``latency_model``, ``dense_latency_model``;
* ``details``: the underlying experiment's own JSON.
"""

from __future__ import annotations

import os
from collections.abc import Callable, Iterable
from dataclasses import replace
from typing import Any

import numpy as np

from hw.errors import InputError
from sim.asp_rules import ACT_GEMM
from sim.perf import ArrayConfig
from sim.quality.evidence.stats import loss_of, paired_interval
from sim.quality.prune.method_names import METHODS
from sim.quality.references.reference import (
    DEFAULT_DESIGN,
    check_guardrail,
    perf_latency_fn,
    reference_experiment,
)
from sim.quality.references.transformer import TINY, LMConfig, transformer_experiment

__all__ = [
    "REFERENCE_SEEDS",
    "reference_family",
    "reference_families",
    "digits_evidence",
    "transformer_evidence",
    "reference_evidence",
    "mix_evidence",
    "limit_excess",
    "guardrail_verdict",
    "transformer_config",
    "reference_size",
]

#: Training seeds behind every reference-model delta [A]: 3, the lower end of the 3-5 seeds
#: that deep-learning papers report; the bootstrap over the test set adds the sampling error.
REFERENCE_SEEDS = 3


def reference_size() -> str:
    """``$SPARSEPE_QUALITY_REFERENCE``: ``full`` (default) or ``tiny`` (the test suite sets it, so
    that sweeps in tests train the reference models in seconds)."""
    size = os.environ.get("SPARSEPE_QUALITY_REFERENCE", "full")
    if size not in ("full", "tiny"):
        raise InputError(f"must be 'full' or 'tiny', got {size!r}", where="$SPARSEPE_QUALITY_REFERENCE")
    return size


def transformer_config():
    """The transformer reference's configuration: ``sim.quality.references.transformer.LMConfig()``, or its
    ``TINY`` variant when :func:`reference_size` is ``tiny`` (results are labelled with the config)."""
    return TINY if reference_size() == "tiny" else LMConfig()


def reference_family(workload) -> tuple[str, str]:
    """(reference family, why) of a ``sim.workloads.Workload``, read from its structure, not its
    name: activation x activation products (attention scores and context, ``act_gemm`` layers, as
    the built-in, Hugging Face and ONNX importers mark them) -> ``"transformer"``; otherwise
    ``"mlp"`` (MLP / CNN: the digits MLP)."""
    attn = [layer for layer in workload.layers if layer.kind == ACT_GEMM]
    if attn:
        names = ", ".join(sorted({layer.name for layer in attn})[:3])
        return "transformer", (
            f"{len(attn)} attention layer(s) (activation x activation products: {names}): "
            "the transformer reference"
        )
    return (
        "mlp",
        "no attention (activation x activation) layers: the digits MLP reference for MLP/CNN workloads",
    )


def reference_families(workloads: Iterable[tuple[str, Any]]) -> dict[str, dict[str, str]]:
    """The reference families a workload mix needs, by structure (:func:`reference_family`):
    ``{family: {workload name: why}}`` over ``(name, sim.workloads.Workload)`` pairs, families sorted."""
    out: dict[str, dict[str, str]] = {}
    for name, workload in workloads:
        fam, why = reference_family(workload)
        out.setdefault(fam, {})[str(name)] = why
    return dict(sorted(out.items()))


def _correct(model, x, y) -> np.ndarray:
    return (np.argmax(model.forward(x), axis=1) == y).astype(np.float64)


def digits_evidence(
    n: int = 2,
    m: int = 4,
    *,
    seed: int = 0,
    seeds: int = REFERENCE_SEEDS,
    latency_fn=None,
    dense_latency_fn=None,
    sparse_arch=None,
    dense_arch=None,
    progress: Callable[[str], None] | None = None,
) -> tuple[dict, list]:
    """The digits MLP reference over ``seeds`` seeds: (evidence dict, [ReferenceResult per seed]).

    Equal latency: the sparse model is timed on ``sparse_arch`` and the dense candidates on
    ``dense_arch`` (``sim.perf.ArrayConfig``; default: sim.quality.references.reference.DEFAULT_DESIGN with N:M sparse
    PEs and the same array with dense PEs), or with explicit latency functions."""
    if sparse_arch is not None or dense_arch is not None:
        sparse_arch = sparse_arch or ArrayConfig(**DEFAULT_DESIGN, n=n, m=m)
        dense_arch = dense_arch or replace(sparse_arch, sparse=False)
        if dense_arch.sparse:
            raise InputError(
                "the equal-latency dense model must run on a design with dense PEs", where="dense_arch"
            )
        latency_fn, dense_latency_fn = perf_latency_fn(sparse_arch), perf_latency_fn(dense_arch)

    results = []
    for s in range(seed, seed + seeds):
        if progress:
            progress(f"digits MLP seed {s}")
        results.append(
            reference_experiment(s, n, m, latency_fn=latency_fn, dense_latency_fn=dense_latency_fn)
        )
    dense_ps, sparse_ps = [], []
    for r in results:
        xte, yte = r.models["data"][2], r.models["data"][3]
        dense_ps.append(_correct(r.models["dense_equal_latency"], xte, yte))
        sparse_ps.append(_correct(r.models["finetuned"], xte, yte))
    iv = paired_interval(dense_ps, sparse_ps, lambda d, s: loss_of(d, s, True), seed=seed)
    r0 = results[0]
    t = r0.train
    mean = lambda key: float(np.mean([getattr(r, key) for r in results]))  # noqa: E731
    return {
        "evidence": "proxy",
        "reference": "digits-mlp",
        "metric": "accuracy",
        "higher_is_better": True,
        "model": f"MLP {'-'.join(map(str, r0.widths))} on {t['dataset']} ({t['test_samples']} test images per seed)",
        "n": n,
        "m": m,
        "seeds": [r.seed for r in results],
        "dense_metric": mean("dense_accuracy"),
        "oneshot_metric": mean("oneshot_accuracy"),
        "finetuned_metric": mean("finetuned_accuracy"),
        "gradual_metric": mean("gradual_accuracy"),
        "dense_equal_latency_metric": mean("dense_equal_latency_accuracy"),
        "quality_delta": iv.point,
        "quality_delta_interval": [iv.low, iv.high],
        "quality_delta_ci": iv.high,
        "interval_method": iv.method,
        "pruning_schedule": (
            f"one-shot {n}:{m} magnitude pruning (ASP m4n2_1d) of the "
            f"{sum(r0.layers_pruned)} of {len(r0.layers_pruned)} layers ASP allows, after dense "
            f"training; alternative: gradual ({t['gradual']})"
        ),
        "finetune_recipe": (
            f"ASP: fixed mask, the dense recipe re-run ({t['epochs']} epochs, {t['optimizer']}, "
            f"lr {t['lr']}, batch {t['batch']})"
        ),
        "sparse_size": f"h={r0.sparse_hidden}",
        "dense_equal_latency_size": f"h={r0.dense_equal_latency_hidden}",
        "sparse_params": r0.sparse_params,
        "sparse_nonzero_params": r0.sparse_nonzero_params,
        "dense_equal_latency_params": r0.dense_equal_latency_params,
        "sparse_latency": r0.sparse_latency,
        "dense_equal_latency_latency": r0.dense_equal_latency_latency,
        "latency_model": r0.latency_model,
        "dense_latency_model": r0.dense_latency_model,
        "details": [r.to_json() for r in results],
    }, results


def transformer_evidence(
    n: int = 2,
    m: int = 4,
    *,
    seed: int = 0,
    cfg=None,
    sparse_arch=None,
    dense_arch=None,
    use_cache: bool = True,
    progress: Callable[[str], None] | None = None,
) -> tuple[dict, object]:
    """The char-level transformer reference: (evidence dict, TransformerResult). Besides the ASP
    recipe's delta (the guardrail's), ``oneshot_methods`` gives the one-shot delta of each pruning
    method against the pre-trained dense model, with its 95 % interval."""
    cfg = cfg or transformer_config()
    r = transformer_experiment(
        n,
        m,
        seed=seed,
        cfg=cfg,
        sparse_arch=sparse_arch,
        dense_arch=dense_arch,
        use_cache=use_cache,
        progress=progress,
    )
    ps = r.per_sample
    # per-window mean NLL; the loss is ppl_sparse / ppl_dense - 1 = exp(nll_s - nll_d) - 1
    iv = paired_interval(ps["dense_equal_latency"], ps["finetuned"], lambda d, s: np.expm1(s - d), seed=seed)
    mean = lambda v: float(np.mean(v))  # noqa: E731
    methods = {}
    if "pretrained" in ps:
        for meth in METHODS:
            run = "oneshot" if meth == "magnitude" else f"oneshot_{meth}"
            mi = paired_interval(ps["pretrained"], ps[run], lambda d, s: np.expm1(s - d), seed=seed)
            methods[meth] = {
                "perplexity": mean(r.oneshot_methods_perplexity[meth]),
                "quality_delta": mi.point,
                "quality_delta_interval": [mi.low, mi.high],
            }
    c = r.config
    return {
        "evidence": "proxy",
        "reference": "char-transformer",
        "metric": "perplexity",
        "higher_is_better": False,
        "model": (
            f"char-level transformer LM, {c['layers']} layers, d_model {c['d_model']}, {c['heads']} heads, "
            f"context {c['ctx']}, on pydoc_data.topics (sha256 {r.corpus['sha256'][:16]}..., "
            f"{r.corpus['heldout_windows']} held-out windows per seed)"
        ),
        "n": n,
        "m": m,
        "seeds": r.seeds,
        "dense_metric": mean(r.dense_perplexity),
        "oneshot_metric": mean(r.oneshot_perplexity),
        "finetuned_metric": mean(r.finetuned_perplexity),
        "gradual_metric": mean(r.gradual_perplexity),
        "dense_equal_latency_metric": mean(r.dense_equal_latency_perplexity),
        "unigram_metric": r.unigram["perplexity"],
        "pretrained_metric": mean(r.pretrained_perplexity) if r.pretrained_perplexity else None,
        "oneshot_methods": methods,
        "calibration": r.calibration,
        "quality_delta": iv.point,
        "quality_delta_interval": [iv.low, iv.high],
        "quality_delta_ci": iv.high,
        "interval_method": iv.method,
        "pruning_schedule": (
            f"one-shot {n}:{m} magnitude pruning (ASP m4n2_1d) of {len(r.pruned_tensors)} "
            f"projection weights after {c['steps']} dense steps (embeddings, head, LayerNorms "
            f"dense), then the ASP fine-tune; alternative: gradual, Zhu & Gupta cubic ramp over 75 % "
            f"of {c['finetune_steps']} steps; one-shot wanda and sparsegpt with the reference's own "
            "calibration inputs in oneshot_methods"
        ),
        "finetune_recipe": (
            f"ASP: fixed mask, Adam lr {c['lr']} decaying linearly to 10 %, {c['finetune_steps']} "
            f"steps of {c['batch']}x{c['ctx']} characters; the dense control gets the same steps"
        ),
        "sparse_size": f"d_model={r.sparse_d_model}",
        "dense_equal_latency_size": f"d_model={r.dense_equal_latency_d_model}",
        "sparse_params": r.sparse_params,
        "sparse_nonzero_params": r.sparse_nonzero_params,
        "dense_equal_latency_params": r.dense_equal_latency_params,
        "sparse_latency": r.sparse_latency,
        "dense_equal_latency_latency": r.dense_equal_latency_latency,
        "latency_model": r.latency_model,
        "dense_latency_model": r.dense_latency_model,
        "details": r.to_json(),
    }, r


def reference_evidence(family: str, n: int, m: int, **kw) -> tuple[dict, object]:
    """The reference model of a workload family (:func:`reference_family`)."""
    if family == "transformer":
        return transformer_evidence(n, m, **kw)
    if family == "mlp":
        return digits_evidence(n, m, **kw)
    raise InputError(f"unknown reference family {family!r} (known: transformer, mlp)", where="quality")


def limit_excess(pessimistic: float, max_delta: float) -> float:
    """How far a pessimistic loss lies past the limit, as a fraction of the limit (the excess
    itself for a limit of 0): the normalisation explore.results gives every limit."""
    return (pessimistic - max_delta) / max_delta if max_delta > 0 else pessimistic - max_delta


def mix_evidence(found: list[dict], max_delta: float) -> dict:
    """One evidence dict for a workload mix that needs several reference families.

    Each family's loss is in its own metric (accuracy points; a relative perplexity increase), so
    the limit is tested on each family's own loss (:func:`guardrail_verdict`) and no family's delta
    is compared with another's: the mix meets the limit when every family meets it. ``families``
    keeps each family's evidence (without its ``details``) with its verdict; the top level is the
    binding family's evidence (``binding_family``): the one whose pessimistic end lies farthest
    past (or nearest to) the limit as a fraction of it, so the study's quality constraint fails
    exactly when a family fails. One family: its evidence unchanged."""
    if len(found) == 1:
        return found[0]
    families = {}
    for e in found:
        ok, msg = guardrail_verdict(e, max_delta)
        families[e["reference"]] = {
            **{k: v for k, v in e.items() if k != "details"},
            "guardrail_ok": ok,
            "guardrail": msg,
            "limit_excess": limit_excess(float(e["quality_delta_ci"]), max_delta),
        }
    binding = max(found, key=lambda e: (families[e["reference"]]["limit_excess"], e["reference"]))
    return {**binding, "families": families, "binding_family": binding["reference"]}


def guardrail_verdict(ev: dict, max_delta: float) -> tuple[bool, str]:
    """The guardrail on the pessimistic end of the interval: ok when ``quality_delta_ci <= max_delta``;
    for a mix (:func:`mix_evidence`) on every family's own loss, each in its own metric."""
    if ev.get("families"):
        verdicts = {ref: guardrail_verdict(f, max_delta) for ref, f in ev["families"].items()}
        ok = all(v[0] for v in verdicts.values())
        return ok, (
            (
                f"quality guardrail {'met by every' if ok else 'violated by at least one'} reference, the limit "
                "tested on each reference's own metric: "
            )
            + "; ".join(f"{ref}: {v[1]}" for ref, v in verdicts.items())
        )
    point, pess = float(ev["quality_delta"]), float(ev["quality_delta_ci"])
    ok, _ = check_guardrail(-pess, max_delta)
    iv = ev.get("quality_delta_interval")
    span = (
        f"loss {point:+.4f} (95 % interval [{iv[0]:+.4f}, {iv[1]:+.4f}])"
        if iv
        else f"loss {point:+.4f} (no interval)"
    )
    unit = (
        "accuracy points as a fraction"
        if ev.get("higher_is_better", True)
        else f"relative {ev.get('metric')} increase"
    )
    if ok:
        return True, (
            f"quality guardrail met on the pessimistic end: {span}, {unit}; the pessimistic end "
            f"{pess:+.4f} is within the limit {max_delta:g} ({ev['evidence']} evidence)"
        )
    return False, (
        f"quality guardrail violated on the pessimistic end: {span}, {unit}; the pessimistic end "
        f"{pess:+.4f} exceeds the limit {max_delta:g} ({ev['evidence']} evidence)"
    )
