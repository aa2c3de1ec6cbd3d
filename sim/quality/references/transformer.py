"""The transformer reference: a small character-level transformer LM (sim.quality.references.charlm) trained
here, pruned N:M.

Reference for transformer workloads; the digits MLP (sim.quality.references.reference) stays the reference
for MLP/CNN workloads.

* **Runs**, each seed: dense pre-training; from the pre-trained weights, one-shot N:M by each
  pruning method (sim.quality.prune.methods: magnitude = ASP ``m4n2_1d``, wanda, sparsegpt), with the
  reference's own calibration inputs: ``CALIB_WINDOWS`` windows of ``ctx`` characters drawn from
  the training split, each projection's inputs taken from the model whose earlier blocks are
  already pruned (SparseGPT's sequential mode, sim.quality.prune.calibration); a dense control trained
  ``finetune_steps`` more steps; the ASP fine-tune of the magnitude mask with the mask fixed (the
  NVIDIA ASP recipe: re-run the optimiser from the pruned weights, ``finetune_steps`` steps);
  gradual pruning from the dense model, Zhu & Gupta (2017) cubic ramp over 75 % of the same steps;
  the dense model of equal latency (the largest width of the family, step 8, whose latency on the
  *dense* design does not exceed the sparse model's on the sparse design, ``sim.perf``), trained
  like the dense baseline.
* **Metric**: perplexity (and bits per character) on the held-out split; the quality loss is the
  relative perplexity increase ``ppl_sparse / ppl_dense - 1`` (sim.quality.evidence.stats), with a 95 %
  interval from the seeds x a bootstrap over the held-out windows. The one-shot delta of each
  method is against the pre-trained dense model it was pruned from (as the published one-shot
  tables, e.g. Sun et al. 2024 Table 3: LLaMA-2-7B dense 5.12, 2:4 magnitude 54.59, wanda 11.02,
  sparsegpt 10.17).

Cached on disk (``$SPARSEPE_CACHE_DIR`` or ``~/.cache/sparsepe``, ``quality/``), keyed by the
digest of this file and the modules the training and pruning use, the seed, N:M, the config and
the equal-latency width; the latencies themselves are recomputed (sim.perf) on every call.
A result missing there is looked up, by the same key, among the results shipped with the package
(:func:`shipped_dir`: the references the example sweeps need, written by ``sparsepe characterise``),
so a first run does not train them.
"""

from __future__ import annotations

import concurrent.futures as cf
import hashlib
import json
import multiprocessing as mp
import os
import resource
import time
from collections.abc import Callable
from dataclasses import asdict, dataclass, field, replace
from pathlib import Path

import numpy as np
from threadpoolctl import threadpool_limits

from hw.errors import InputError
from hw.host import cache_root, die_with_parent, exclusive_lock, json_text, write_file
from hw.nm import check_nm
from sim.asp_rules import ACT_GEMM, WEIGHT_GEMM, weight_verdict
from sim.perf import ArrayConfig
from sim.quality.digest import modules_digest
from sim.quality.prune.calibration import calibration_from_function
from sim.quality.prune.method_names import METHODS
from sim.quality.prune.oneshot import prune_tensors
from sim.quality.references.charlm import (
    DTYPE,
    TINY,
    VOCAB,
    LMConfig,
    corpus,
    eval_lm,
    eval_windows,
    init_lm,
    layer_inputs,
    lm_loss,
    train_lm,
    unigram_baseline,
)
from sim.quality.references.reference import DEFAULT_DESIGN, GemmShape, perf_latency_fn
from sim.quality.team.user_eval import prune_for_eval

__all__ = [
    "LMConfig",
    "TINY",
    "VOCAB",
    "DTYPE",
    "corpus",
    "init_lm",
    "lm_loss",
    "train_lm",
    "eval_lm",
    "eval_windows",
    "unigram_baseline",
    "lm_gemms",
    "TransformerResult",
    "transformer_experiment",
    "cache_dir",
    "code_digest",
    "CALIB_WINDOWS",
    "calibration_windows",
]

#: Calibration windows of the reference [A]: 128, the number of calibration sequences of the Wanda
#: and SparseGPT papers (of 2,048 tokens there; of ``ctx`` characters here).
CALIB_WINDOWS = 128


# ---------------------------------------------------------------------------------------------
# latency: the model's GEMMs on a design (sim.perf)
# ---------------------------------------------------------------------------------------------


def lm_gemms(cfg: LMConfig, d_model: int, n: int, m: int, *, sparse: bool):
    """The GEMMs of one inference batch (``tokens_per_inference`` tokens in windows of ``ctx``):
    per block QKV, attention scores and context (activation x activation, always dense), output
    projection, FFN; then the output head. ``sparse``: weights that pass the ASP verdict are N:M."""
    tok = cfg.tokens_per_inference
    seqs = max(1, tok // cfg.ctx)
    hd = d_model // cfg.heads
    out = []

    def w(name, nout, k):
        ok = sparse and weight_verdict(WEIGHT_GEMM, (nout, k), n, m).sparsifiable
        out.append(GemmShape(name, tok, nout, k, (n, m) if ok else None))

    for i in range(cfg.layers):
        w(f"b{i}.qkv", 3 * d_model, d_model)
        for h in range(seqs * cfg.heads):
            out.append(GemmShape(f"b{i}.scores{h}", cfg.ctx, cfg.ctx, hd, None, kind=ACT_GEMM))
            out.append(GemmShape(f"b{i}.context{h}", cfg.ctx, hd, cfg.ctx, None, kind=ACT_GEMM))
        w(f"b{i}.out", d_model, d_model)
        w(f"b{i}.fc1", 4 * d_model, d_model)
        w(f"b{i}.fc2", d_model, 4 * d_model)
    w("head", VOCAB, d_model)
    return out


def _params(p: dict) -> tuple[int, int]:
    total = sum(int(v.size) for v in p.values())
    nonzero = sum(int(np.count_nonzero(v)) for v in p.values())
    return total, nonzero


# ---------------------------------------------------------------------------------------------
# the experiment
# ---------------------------------------------------------------------------------------------


@dataclass
class TransformerResult:
    """Everything the transformer experiment measured (perplexities on the held-out split;
    lists run over the seeds)."""

    n: int
    m: int
    seeds: list[int]
    config: dict
    corpus: dict
    unigram: dict
    dense_perplexity: list[float]
    oneshot_perplexity: list[float]
    finetuned_perplexity: list[float]
    gradual_perplexity: list[float]
    dense_equal_latency_perplexity: list[float]
    sparse_d_model: int
    dense_equal_latency_d_model: int
    sparse_params: int
    sparse_nonzero_params: int
    dense_equal_latency_params: int
    sparse_latency: float
    dense_equal_latency_latency: float
    latency_model: str
    dense_latency_model: str
    pruned_tensors: list[str]
    skipped_tensors: list[dict]
    train_loss: dict
    seconds: float
    cpu_seconds: float  # CPU time of this process and its seed processes (the cost on an idle machine)
    pretrained_perplexity: list[float] = field(
        default_factory=list
    )  # the dense model the one-shot runs prune
    oneshot_methods_perplexity: dict = field(default_factory=dict)  # method -> list (per seed)
    calibration: dict = field(default_factory=dict)
    cached: bool = False
    per_sample: dict = field(default_factory=dict, repr=False)  # run -> list (per seed) of per-window NLL

    def to_json(self) -> dict:
        d = asdict(self)
        d.pop("per_sample")
        return d

    @staticmethod
    def from_json(d: dict, per_sample: dict) -> TransformerResult:
        return TransformerResult(**d, per_sample=per_sample)


def cache_dir() -> Path:
    """``$SPARSEPE_CACHE_DIR`` or ``~/.cache/sparsepe`` (the project's shared cache), ``quality/``."""
    return cache_root() / "quality"


#: the reference results shipped with the package (package data)
SHIPPED_DIR = Path(__file__).resolve().parents[1] / "shipped"


def shipped_dir() -> Path | None:
    """Where shipped reference results are looked up: :data:`SHIPPED_DIR`, or ``quality/`` of the
    directory ``SPARSEPE_CHARACTERISATION`` names; None when it is ``off``."""
    env = os.environ.get("SPARSEPE_CHARACTERISATION", "").strip()
    if env.lower() in ("off", "0", "no", "none"):
        return None
    return Path(env) / "quality" if env else SHIPPED_DIR


#: The modules whose code decides the reference's results (the cache key).
_CODE = (
    "references/transformer.py",
    "references/charlm.py",
    "prune/pruning.py",
    "prune/methods.py",
    "prune/layouts.py",
    "prune/calibration.py",
    "prune/oneshot.py",
    "prune/tied.py",
    "team/user_eval.py",
)


def code_digest() -> str:
    """Digest of the code the reference's results depend on (its cache key)."""
    return modules_digest(_CODE)


def calibration_windows(train_ids: np.ndarray, cfg: LMConfig, rng: np.random.Generator) -> np.ndarray:
    """``CALIB_WINDOWS`` windows of ``ctx`` characters at random offsets of the training split (as
    the papers draw random segments of their training corpus), the inputs ``x`` only."""
    start = rng.integers(0, len(train_ids) - cfg.ctx - 1, size=CALIB_WINDOWS)
    return train_ids[start[:, None] + np.arange(cfg.ctx)]


def oneshot_by_method(pre: dict, n: int, m: int, method: str, calib_x: np.ndarray, heads: int):
    """The pre-trained model ``pre`` pruned one-shot N:M by ``method`` with the reference's own
    calibration inputs, each block's taken from the model whose earlier blocks are pruned."""
    cal = calibration_from_function(
        lambda weights: layer_inputs(weights, calib_x, heads), f"built-in: {len(calib_x)} training windows"
    )
    return prune_tensors(pre, n, m, method=method, calibration=cal)


def equal_latency_dense_width(
    cfg: LMConfig, n: int, m: int, sparse_latency_fn, dense_latency_fn
) -> tuple[int, float, float, dict[int, float]]:
    """Largest d_model (multiple of ``width_step`` and of ``heads``) whose dense model's latency on
    the dense design does not exceed the N:M model's latency on the sparse design."""
    ls = sparse_latency_fn(lm_gemms(cfg, cfg.d_model, n, m, sparse=True))
    step = cfg.width_step * cfg.heads // np.gcd(cfg.width_step, cfg.heads)
    cands = {
        d: dense_latency_fn(lm_gemms(cfg, d, n, m, sparse=False))
        for d in range(step, 2 * cfg.d_model + 1, step)
    }
    fit = [d for d, lat in cands.items() if lat <= ls * (1 + 1e-12)]
    if not fit:
        raise InputError(
            f"no dense width >= {step} runs within the sparse model's latency {ls:g}", where="equal latency"
        )
    best = max(fit)
    return best, ls, cands[best], cands


#: Processes the seeds run in [A]: the 2 cores of the target machine (one BLAS thread each).
_WORKERS = max(1, min(2, os.cpu_count() or 1))


def _seed_run(job, progress: Callable[[str], None] | None = None) -> dict:
    """One seed of the experiment: dense pre-training, then from the same pre-trained weights the
    one-shot N:M model of every method, a dense control, the ASP fine-tune of the magnitude mask
    and gradual pruning, each for ``finetune_steps`` more steps; the dense model of equal latency
    when its width differs."""
    s, n, m, cfg, d_eq = job
    train_ids, test_ids, _, _ = corpus()
    windows = eval_windows(test_ids, cfg)
    rng = [np.random.default_rng(x) for x in np.random.SeedSequence([s, n, m]).spawn(7)]

    def say(msg):
        if progress:
            progress(f"transformer seed {s}: {msg}")

    with threadpool_limits(1):  # small GEMMs: one BLAS thread per process is fastest
        say("dense pre-training")
        pre, l_p = train_lm(init_lm(cfg, rng[0]), train_ids, cfg, rng[1], cfg.steps)
        oneshot, masks, skip = prune_for_eval(pre, n, m)
        calib_x = calibration_windows(train_ids, cfg, rng[6])
        say("one-shot wanda and sparsegpt")
        by_method = {
            meth: oneshot_by_method(pre, n, m, meth, calib_x, cfg.heads).tensors
            for meth in METHODS
            if meth != "magnitude"
        }
        say("dense control")
        dense, l_d = train_lm(pre, train_ids, cfg, rng[2], cfg.finetune_steps)
        say("ASP fine-tune")
        ft, l_f = train_lm(oneshot, train_ids, cfg, rng[2], cfg.finetune_steps, masks=masks)
        say("gradual")
        gr, l_g = train_lm(pre, train_ids, cfg, rng[3], cfg.finetune_steps, gradual=(n, m))
        if d_eq == cfg.d_model:
            deq, l_e = dense, l_p + l_d
        else:
            say(f"dense d={d_eq} (equal latency)")
            deq, l_e = train_lm(
                init_lm(cfg, rng[4], d_eq), train_ids, cfg, rng[5], cfg.steps + cfg.finetune_steps
            )
        models = {
            "dense": dense,
            "oneshot": oneshot,
            "finetuned": ft,
            "gradual": gr,
            "dense_equal_latency": deq,
            "pretrained": pre,
            **{f"oneshot_{k}": v for k, v in by_method.items()},
        }
        per_sample = {r: eval_lm(mod, windows, cfg.heads).tolist() for r, mod in models.items()}

    def marks(lo):  # training loss (20-step mean) at the start, the middle and the end
        return [float(np.mean(lo[max(0, i - 20) : i + 1])) for i in (0, len(lo) // 2, len(lo) - 1)]

    return {
        "per_sample": per_sample,
        "losses": {
            "dense": marks(l_p + l_d),
            "finetuned": marks(l_f),
            "gradual": marks(l_g),
            "dense_equal_latency": marks(l_e),
        },
        "pruned": list(masks),
        "skipped": [{"name": k, "reason": v} for k, v in skip.items()],
        "sizes": (_params(ft), _params(deq)[0]),
    }


def transformer_experiment(
    n: int = 2,
    m: int = 4,
    *,
    seed: int = 0,
    cfg: LMConfig | None = None,
    sparse_arch=None,
    dense_arch=None,
    use_cache: bool = True,
    progress: Callable[[str], None] | None = None,
) -> TransformerResult:
    """Run (or load from the cache) the transformer experiment for N:M over ``cfg.seeds`` seeds
    starting at ``seed``. ``sparse_arch`` / ``dense_arch``: the ``sim.perf.ArrayConfig`` the
    sparse model and the equal-latency dense model run on (default: sim.quality.DEFAULT_DESIGN
    with N:M sparse PEs, and the same array with dense PEs)."""
    check_nm(n, m)
    cfg = cfg or LMConfig()
    if seed < 0:
        raise InputError(f"must be >= 0, got {seed}", where="--seed")
    if cfg.d_model % cfg.heads or cfg.d_model % 16:
        raise InputError(
            f"d_model {cfg.d_model} must be a multiple of 16 and of heads {cfg.heads}", where="LMConfig"
        )
    sparse_arch = sparse_arch or ArrayConfig(**DEFAULT_DESIGN, n=n, m=m)
    dense_arch = dense_arch or replace(sparse_arch, sparse=False)
    if dense_arch.sparse:
        raise InputError(
            "the equal-latency dense model must run on a design with dense PEs", where="dense_arch"
        )
    lat_s, lat_d = perf_latency_fn(sparse_arch), perf_latency_fn(dense_arch)
    # the latencies are recomputed on every call (sim.perf, milliseconds); the training depends on
    # the designs only through the equal-latency width, which is therefore what the cache is keyed by
    d_eq, ls, ld, _ = equal_latency_dense_width(cfg, n, m, lat_s, lat_d)
    timing = {
        "sparse_latency": ls,
        "dense_equal_latency_latency": ld,
        "latency_model": lat_s.description,
        "dense_latency_model": lat_d.description,
    }
    key_obj = {"code": code_digest(), "n": n, "m": m, "seed": seed, "cfg": asdict(cfg), "dense_d_model": d_eq}
    key = hashlib.sha256(json.dumps(key_obj, sort_keys=True).encode()).hexdigest()[:24]
    path = cache_dir() / f"transformer-{key}.json"
    if not use_cache:
        return _experiment(n, m, seed, cfg, d_eq, timing, progress)
    hit = _load(path, timing)
    shipped = shipped_dir()
    if hit is None and shipped is not None:
        hit = _load(shipped / path.name, timing)
    if hit is not None:
        return hit
    # one process trains, the others (sweep workers starting together) wait and load its result
    with exclusive_lock(path.with_suffix(".lock")):
        hit = _load(path, timing)
        if hit is not None:
            return hit
        res = _experiment(n, m, seed, cfg, d_eq, timing, progress)
        try:
            write_file(
                path, json_text({"key": key_obj, "result": res.to_json(), "per_sample": res.per_sample})
            )
            RESULT_FILES[path.name] = path
        except InputError:
            pass  # no writable cache: the result is still returned
        return res


#: the result files this process read or wrote, by file name (``sparsepe characterise`` ships them)
RESULT_FILES: dict[str, Path] = {}


def _load(path: Path, timing: dict) -> TransformerResult | None:
    if not path.is_file():
        return None
    try:
        blob = json.loads(path.read_text())
        res = TransformerResult.from_json({**blob["result"], **timing}, blob["per_sample"])
    except (OSError, ValueError, KeyError, TypeError):
        return None  # a damaged or older cache entry is recomputed
    res.cached = True
    RESULT_FILES[path.name] = path
    return res


def _experiment(n, m, seed, cfg, d_eq: int, timing: dict, progress) -> TransformerResult:
    t0 = time.perf_counter()

    def _cpu() -> float:
        return sum(
            resource.getrusage(w).ru_utime + resource.getrusage(w).ru_stime
            for w in (resource.RUSAGE_SELF, resource.RUSAGE_CHILDREN)
        )

    c0 = _cpu()
    train_ids, test_ids, digest, chars = corpus()
    windows = eval_windows(test_ids, cfg)
    runs = (
        "dense",
        "oneshot",
        "finetuned",
        "gradual",
        "dense_equal_latency",
        "pretrained",
        *(f"oneshot_{k}" for k in METHODS if k != "magnitude"),
    )
    ps: dict[str, list[list[float]]] = {r: [] for r in runs}
    losses: dict[str, list[list[float]]] = {
        "dense": [],
        "finetuned": [],
        "gradual": [],
        "dense_equal_latency": [],
    }

    def say(msg):
        if progress:
            progress(msg)

    seeds = list(range(seed, seed + cfg.seeds))
    jobs = [(s, n, m, cfg, d_eq) for s in seeds]
    say(f"transformer reference: {len(seeds)} seed(s), {min(_WORKERS, len(seeds))} process(es)")
    if len(jobs) > 1 and _WORKERS > 1:
        with cf.ProcessPoolExecutor(
            max_workers=min(_WORKERS, len(jobs)),
            mp_context=mp.get_context("spawn"),
            initializer=die_with_parent,
            initargs=(os.getpid(),),
        ) as ex:  # no orphans
            outs = list(ex.map(_seed_run, jobs))
    else:
        outs = [_seed_run(j, progress) for j in jobs]
    for o in outs:
        for r in runs:
            ps[r].append(o["per_sample"][r])
        for r in losses:
            losses[r].append(o["losses"][r])
    pruned, skipped, sizes = outs[0]["pruned"], outs[0]["skipped"], outs[0]["sizes"]

    def ppl(r):
        return [float(np.exp(np.mean(x))) for x in ps[r]]

    res = TransformerResult(
        n=n,
        m=m,
        seeds=list(range(seed, seed + cfg.seeds)),
        config={**asdict(cfg), "d_ff": cfg.d_ff},
        corpus={
            "source": "pydoc_data.topics (CPython's bundled English reference text), topics in key order",
            "sha256": digest,
            "characters": chars,
            "train_characters": int(len(train_ids)),
            "heldout_characters": int(len(test_ids)),
            "heldout_windows": int(len(windows[0])),
            "window": cfg.ctx,
            "vocab": VOCAB,
        },
        unigram=unigram_baseline(train_ids, windows[1].reshape(-1)),
        dense_perplexity=ppl("dense"),
        oneshot_perplexity=ppl("oneshot"),
        finetuned_perplexity=ppl("finetuned"),
        gradual_perplexity=ppl("gradual"),
        dense_equal_latency_perplexity=ppl("dense_equal_latency"),
        sparse_d_model=cfg.d_model,
        dense_equal_latency_d_model=d_eq,
        sparse_params=sizes[0][0],
        sparse_nonzero_params=sizes[0][1],
        dense_equal_latency_params=sizes[1],
        **timing,
        pruned_tensors=pruned,
        skipped_tensors=skipped,
        train_loss={r: v for r, v in losses.items()},
        seconds=time.perf_counter() - t0,
        cpu_seconds=_cpu() - c0,
        per_sample=ps,
        pretrained_perplexity=ppl("pretrained"),
        oneshot_methods_perplexity={
            k: ppl("oneshot" if k == "magnitude" else f"oneshot_{k}") for k in METHODS
        },
        calibration={
            "source": f"built-in: {CALIB_WINDOWS} windows of {cfg.ctx} characters at random offsets of the "
            "training split",
            "samples": CALIB_WINDOWS * cfg.ctx,
            "inputs": "pruned prefix (sequential, block by block)",
        },
    )
    return res
