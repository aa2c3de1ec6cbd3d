"""One rule for an LM head tied to the input embedding (issue: `quality --save-pruned` pruned it).

``simulate --hf-config`` keeps a tied head dense unless ``--prune-lm-head``; ``sparsepe quality``
must do the same on a checkpoint. The checkpoints here are the shapes the savers write:
``safetensors.torch.save_model`` / ``save_pretrained`` keep one name of the shared tensor
(``lm_head.weight`` with no ``embed_tokens.weight``), ``torch.save`` of the state dict keeps both
names with equal values, and a config.json beside the file may say ``tie_word_embeddings``."""

from __future__ import annotations

import json
import subprocess
import sys
from pathlib import Path

import numpy as np
import pytest
from safetensors.numpy import load_file, save_file

from sim.quality.prune.oneshot import EMBEDDING_NAME, prune_tensors
from sim.quality.prune.tied import config_tie, tied_heads

REPO = Path(__file__).resolve().parents[2]
V, D = 64, 32  # vocabulary and model width: both tile 2:4 under the ASP rules (size(0) % 8, size(1) % 16)


def _ckpt(*, stored_once: bool, untied: bool = False) -> dict[str, np.ndarray]:
    rng = np.random.default_rng(0)
    emb = rng.standard_normal((V, D)).astype(np.float32)
    t = {"model.layers.0.mlp.up_proj.weight": rng.standard_normal((2 * D, D)).astype(np.float32)}
    if stored_once:
        t["lm_head.weight"] = emb
    else:
        t["model.embed_tokens.weight"] = emb
        t["lm_head.weight"] = rng.standard_normal((V, D)).astype(np.float32) if untied else emb.copy()
    return t


def _nonzero_share(w: np.ndarray) -> float:
    return float(np.count_nonzero(w) / w.size)


def test_a_head_stored_once_is_found_tied_and_kept_dense():
    t = _ckpt(stored_once=True)
    assert set(tied_heads(t, EMBEDDING_NAME)) == {"lm_head.weight"}
    shot = prune_tensors(t, 2, 4)
    assert "lm_head.weight" not in shot.masks and np.array_equal(
        shot.tensors["lm_head.weight"], t["lm_head.weight"]
    )
    assert "--prune-lm-head" in shot.skipped["lm_head.weight"] and "tied" in shot.skipped["lm_head.weight"]
    assert _nonzero_share(shot.tensors["model.layers.0.mlp.up_proj.weight"]) == 0.5  # the rest is pruned


def test_identical_head_and_table_are_tied_and_pruned_together_only_when_asked():
    t = _ckpt(stored_once=False)
    kept = prune_tensors(t, 2, 4)
    assert "lm_head.weight" not in kept.masks
    assert np.array_equal(kept.tensors["lm_head.weight"], kept.tensors["model.embed_tokens.weight"])
    assert _nonzero_share(kept.tensors["lm_head.weight"]) == 1.0
    pruned = prune_tensors(t, 2, 4, prune_lm_head=True)
    assert {"lm_head.weight", "model.embed_tokens.weight"} <= set(pruned.masks)
    assert _nonzero_share(pruned.tensors["lm_head.weight"]) == 0.5
    # the file stays tied: the table carries the head's pruned values, not a second pruning of its own
    assert np.array_equal(pruned.tensors["lm_head.weight"], pruned.tensors["model.embed_tokens.weight"])
    assert pruned.tied_json()[0]["name"] == "lm_head.weight" and "pruned" in pruned.tied_json()[0]["tie"]


def test_an_untied_head_is_pruned_as_any_weight():
    t = _ckpt(stored_once=False, untied=True)
    assert tied_heads(t, EMBEDDING_NAME) == {}
    shot = prune_tensors(t, 2, 4)
    assert "lm_head.weight" in shot.masks and _nonzero_share(shot.tensors["lm_head.weight"]) == 0.5
    assert "model.embed_tokens.weight" not in shot.masks  # ASP never prunes the embedding


def test_config_json_decides_the_tie(tmp_path):
    t = _ckpt(stored_once=True)
    w = tmp_path / "model.safetensors"
    assert config_tie(w) is None  # no config: the tensors decide
    (tmp_path / "config.json").write_text(json.dumps({"tie_word_embeddings": False}))
    assert config_tie(w) is False
    shot = prune_tensors(t, 2, 4, tie=config_tie(w))  # the config says untied: a head like any other
    assert "lm_head.weight" in shot.masks
    (tmp_path / "config.json").write_text(json.dumps({"tie_word_embeddings": "yes"}))
    with pytest.raises(Exception, match="tie_word_embeddings must be true or false, got 'yes'"):
        config_tie(w)


def _quality(tmp_path: Path, *args: str) -> subprocess.CompletedProcess:
    return subprocess.run(
        [sys.executable, "-m", "explore.cli", "quality", *args],
        cwd=tmp_path,
        capture_output=True,
        text=True,
        timeout=300,
    )


def test_quality_save_pruned_keeps_the_tied_head_dense_unless_prune_lm_head(tmp_path):
    src = tmp_path / "model.safetensors"
    save_file(_ckpt(stored_once=True), str(src))
    r = _quality(tmp_path, "--weights", str(src), "--save-pruned", str(tmp_path / "p.safetensors"), "--json")
    assert r.returncode == 0, r.stderr
    out = json.loads(r.stdout)
    assert [x["name"] for x in out["tied_lm_head"]] == ["lm_head.weight"]
    saved = load_file(str(tmp_path / "p.safetensors"))
    assert _nonzero_share(saved["lm_head.weight"]) == 1.0  # the input embedding stays dense
    assert _nonzero_share(saved["model.layers.0.mlp.up_proj.weight"]) == 0.5
    r = _quality(
        tmp_path,
        "--weights",
        str(src),
        "--save-pruned",
        str(tmp_path / "q.safetensors"),
        "--prune-lm-head",
        "--json",
    )
    assert r.returncode == 0, r.stderr
    assert _nonzero_share(load_file(str(tmp_path / "q.safetensors"))["lm_head.weight"]) == 0.5


def test_prune_lm_head_without_weights_is_one_line(tmp_path):
    r = _quality(tmp_path, "--reference", "--prune-lm-head")
    lines = r.stderr.strip().splitlines()
    assert (
        r.returncode == 2 and len(lines) == 1 and "--prune-lm-head" in lines[0] and "--weights" in lines[0]
    ), r.stderr
