"""The char-level transformer reference (sim.quality.transformer) and the intervals (sim.quality.stats).

Fast tests use the TINY config (seconds): training lowers the loss, ASP masks stay N:M through the
fine-tune and the gradual schedule, the autograd gradient matches a finite difference, the cache
returns the same result. The full-size acceptance run (dense perplexity clearly below the unigram
baseline; the ASP fine-tune recovers at least half of the one-shot loss) is marked ``slow``."""

from __future__ import annotations

import hashlib
import pydoc_data.topics as t
import time
from dataclasses import replace

import numpy as np
import pytest
from autograd import grad

import sim.quality.references.charlm as charlm
from sim.perf import ArrayConfig
from sim.quality.evidence.stats import loss_of, paired_interval
from sim.quality.prune.pruning import is_nm, reduction_axis
from sim.quality.references.transformer import (
    TINY,
    VOCAB,
    LMConfig,
    corpus,
    init_lm,
    lm_loss,
    train_lm,
    transformer_experiment,
    unigram_baseline,
)
from sim.quality.team.user_eval import prune_for_eval


def test_corpus_is_pydoc_topics_with_its_digest():
    train, test, digest, chars = corpus()
    text = "".join(t.topics[k] for k in sorted(t.topics))
    assert digest == hashlib.sha256(text.encode()).hexdigest() and chars == len(text)
    assert len(train) + len(test) == chars and abs(len(test) / chars - 0.1) < 1e-3
    assert train.max() < VOCAB and test.min() >= 0
    # unigram baseline recomputed by hand
    p = (np.bincount(train, minlength=VOCAB) + 1.0) / (len(train) + VOCAB)
    assert unigram_baseline(train, test)["perplexity"] == pytest.approx(
        float(np.exp(-np.mean(np.log(p[test]))))
    )


def test_autograd_gradient_matches_finite_difference():
    cfg = replace(TINY, d_model=16, heads=2, ctx=8, batch=2)
    rng = np.random.default_rng(0)
    p = {k: v.astype(np.float64) for k, v in init_lm(cfg, rng).items()}
    x = rng.integers(0, VOCAB, size=(2, 8))
    y = rng.integers(0, VOCAB, size=(2, 8))
    old = charlm.DTYPE
    charlm.DTYPE = np.float64
    try:
        g = grad(lm_loss)(p, x, y, 2)
        for name, idx in (
            ("blocks.0.ffn.fc1.weight", (3, 5)),
            ("blocks.0.attn.qkv.weight", (20, 7)),
            ("tok_embed.weight", (int(x[0, 0]), 2)),
            ("blocks.0.ln1.weight", (4,)),
        ):
            h = 1e-6
            pp = {k: v.copy() for k, v in p.items()}
            pm = {k: v.copy() for k, v in p.items()}
            pp[name][idx] += h
            pm[name][idx] -= h
            fd = (float(lm_loss(pp, x, y, 2)) - float(lm_loss(pm, x, y, 2))) / (2 * h)
            assert g[name][idx] == pytest.approx(fd, rel=1e-4, abs=1e-8), name
    finally:
        charlm.DTYPE = old


def test_tiny_training_lowers_the_loss_and_masks_stay_nm():
    cfg = TINY
    train, _, _, _ = corpus()
    rng = np.random.default_rng(1)
    p, losses = train_lm(init_lm(cfg, rng), train, cfg, rng, 60)
    assert np.mean(losses[-10:]) < np.mean(losses[:5]) - 0.8  # from ln(97) = 4.57 nats down
    one, masks, skipped = prune_for_eval(p, 2, 4)
    assert set(masks) == {
        "blocks.0.attn.qkv.weight",
        "blocks.0.attn.out.weight",
        "blocks.0.ffn.fc1.weight",
        "blocks.0.ffn.fc2.weight",
    }
    assert "head.weight" in skipped and "tok_embed.weight" in skipped
    ft, _ = train_lm(one, train, cfg, rng, 20, masks=masks)
    gr, _ = train_lm(p, train, cfg, rng, 20, gradual=(2, 4))
    for k in masks:
        assert is_nm(ft[k], 2, 4, reduction_axis(ft[k].shape)), k
        assert np.all(ft[k][~masks[k]] == 0), k  # the mask is fixed: pruned weights stay zero
        assert is_nm(gr[k], 2, 4, reduction_axis(gr[k].shape)), k
        assert np.count_nonzero(gr[k]) <= gr[k].size // 2
    assert not np.array_equal(ft["blocks.0.ffn.fc1.weight"], one["blocks.0.ffn.fc1.weight"])  # it trained


def test_tiny_experiment_runs_and_is_cached(tmp_path, monkeypatch):
    monkeypatch.setenv("SPARSEPE_CACHE_DIR", str(tmp_path))
    cfg = replace(TINY, steps=40, finetune_steps=20, eval_windows=16)
    r = transformer_experiment(2, 4, cfg=cfg)
    assert not r.cached and len(r.per_sample["finetuned"][0]) == 16
    assert r.dense_perplexity[0] < r.unigram["perplexity"]
    assert r.corpus["sha256"] == corpus()[2]
    assert r.sparse_nonzero_params < r.sparse_params
    assert r.dense_equal_latency_latency <= r.sparse_latency
    # one-shot by every method from the same pre-trained model, with the reference's own calibration inputs
    assert set(r.oneshot_methods_perplexity) == {"magnitude", "wanda", "sparsegpt"}
    assert r.oneshot_methods_perplexity["magnitude"] == r.oneshot_perplexity
    assert all(p > 1 for v in r.oneshot_methods_perplexity.values() for p in v)
    assert r.calibration["samples"] == 128 * cfg.ctx and r.calibration["inputs"].startswith("pruned prefix")
    assert len(r.per_sample["pretrained"][0]) == 16 and len(r.per_sample["oneshot_sparsegpt"][0]) == 16
    t0 = time.perf_counter()
    again = transformer_experiment(2, 4, cfg=cfg)
    assert again.cached and time.perf_counter() - t0 < 5
    assert again.to_json() | {"cached": False, "seconds": 0} == r.to_json() | {"cached": False, "seconds": 0}
    assert again.per_sample == r.per_sample
    # another design: the latencies are recomputed, the training reused when the width matches
    other = transformer_experiment(2, 4, cfg=cfg, sparse_arch=ArrayConfig(rows=8, cols=8, dataflow="ws"))
    if other.dense_equal_latency_d_model == r.dense_equal_latency_d_model:
        assert other.cached and other.per_sample == r.per_sample
    assert other.sparse_latency != r.sparse_latency and "8x8" in other.latency_model


def test_paired_interval_covers_a_known_difference():
    rng = np.random.default_rng(0)
    # two seeds of 2,000 paired Bernoulli scores: dense correct w.p. 0.9, sparse flips 3 % of them
    dense, sparse = [], []
    for _ in range(2):
        d = (rng.random(2000) < 0.9).astype(float)
        s = d.copy()
        flip = rng.random(2000) < 0.03
        s[flip] = 0.0
        dense.append(d)
        sparse.append(s)
    iv = paired_interval(dense, sparse, lambda d, s: loss_of(d, s, True), seed=1)
    true = np.mean([d.mean() - s.mean() for d, s in zip(dense, sparse, strict=True)])
    assert iv.point == pytest.approx(true)
    assert iv.low < true < iv.high and iv.high - iv.low < 0.02
    # the analytic standard error of a paired mean difference, checked against the bootstrap width
    diff = np.concatenate([d - s for d, s in zip(dense, sparse, strict=True)])
    se = diff.std(ddof=1) / np.sqrt(diff.size)
    assert (iv.high - iv.low) / 2 == pytest.approx(1.96 * se, rel=0.35)
    assert loss_of(10.0, 11.0, False) == pytest.approx(0.1)


@pytest.mark.slow
def test_full_reference_acceptance(tmp_path, monkeypatch):
    """The acceptance figures (README): cold run on this machine, dense vs unigram, recovery."""
    monkeypatch.setenv("SPARSEPE_CACHE_DIR", str(tmp_path))
    t0 = time.perf_counter()
    r = transformer_experiment(2, 4, cfg=LMConfig())
    wall = time.perf_counter() - t0
    dense, one, ft = (
        float(np.mean(v)) for v in (r.dense_perplexity, r.oneshot_perplexity, r.finetuned_perplexity)
    )
    assert dense < 0.5 * r.unigram["perplexity"]
    assert one > dense
    assert (one - ft) >= 0.5 * (one - dense)
    print(
        f"cold {wall:.1f} s; unigram {r.unigram['perplexity']:.2f}, dense {dense:.2f}, one-shot {one:.2f}, "
        f"fine-tuned {ft:.2f}, gradual {np.mean(r.gradual_perplexity):.2f}"
    )
