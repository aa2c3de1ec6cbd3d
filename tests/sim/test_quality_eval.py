"""The team's own model and eval (sim.quality.user_eval, ``sparsepe quality --weights --eval``).

The model here is written by the test: a linear classifier ``argmax(x W^T)`` with labels made by
the dense weights, so the dense accuracy is 1 by construction and any loss is the pruning's. The
eval module is written into tmp_path like a team's own file. Expected values are recomputed here
with numpy alone (an independent N:M mask: keep the two largest |w| of each group of four)."""

from __future__ import annotations

import json
import subprocess
import sys
from pathlib import Path

import numpy as np
import pytest
from safetensors.numpy import save_file

from hw.errors import InputError
from sim.quality.team.user_eval import load_eval, model_evidence, prune_for_eval

REPO = Path(__file__).resolve().parents[2]

EVAL_SRC = """
import numpy as np
from pathlib import Path

_D = np.load(Path(__file__).with_name("evaldata.npz"))

def score(weights):
    w = weights["fc.weight"]
    pred = np.argmax(_D["x"] @ w.T + weights["fc.bias"], axis=1)
    ok = (pred == _D["y"]).astype(float)
    return {"metric": float(ok.mean()), "per_sample": ok.tolist(), "higher_is_better": True}

def plain(weights):
    return 0.5

def boom(weights):
    raise RuntimeError("the eval server is down")

def text(weights):
    return "ninety percent"
"""


def nm_reference(w: np.ndarray) -> np.ndarray:
    """Independent 2:4 mask along the last axis: the two largest magnitudes of each group."""
    g = w.reshape(w.shape[0], -1, 4)
    order = np.argsort(-np.abs(g), axis=-1, kind="stable")
    keep = np.zeros_like(g, dtype=bool)
    np.put_along_axis(keep, order[..., :2], True, axis=-1)
    return (g * keep).reshape(w.shape)


def write_model(tmp: Path, w: np.ndarray, *, samples: int = 400, seed: int = 0) -> Path:
    rng = np.random.default_rng(seed)
    x = rng.standard_normal((samples, w.shape[1]))
    b = np.zeros(w.shape[0])
    y = np.argmax(x @ w.T + b, axis=1)
    np.savez(tmp / "evaldata.npz", x=x, y=y)
    (tmp / "team_eval.py").write_text(EVAL_SRC)
    path = tmp / "model.safetensors"
    save_file(
        {
            "fc.weight": w.astype(np.float32),
            "fc.bias": b.astype(np.float32),
            "tok_embed.weight": rng.standard_normal((10, 16)).astype(np.float32),
        },
        str(path),
    )
    return path


def equal_importance(rows: int = 16, cols: int = 32, seed: int = 1) -> np.ndarray:
    """Every weight of a group of four has the same magnitude: 2:4 must drop half of the signal."""
    rng = np.random.default_rng(seed)
    return rng.choice([-1.0, 1.0], size=(rows, cols))


def two_strong(rows: int = 16, cols: int = 32, seed: int = 2, weak: float = 0.03) -> np.ndarray:
    """Two strong and two weak weights per group: 2:4 drops only the weak ones."""
    rng = np.random.default_rng(seed)
    w = rng.standard_normal((rows, cols)) * weak
    g = w.reshape(rows, -1, 4)
    g[..., :2] = rng.choice([-1.0, 1.0], size=g[..., :2].shape) * (1.0 + rng.random(g[..., :2].shape))
    return w


def test_prune_for_eval_follows_asp_rules_and_lists_skips():
    rng = np.random.default_rng(0)
    t = {
        "fc.weight": rng.standard_normal((16, 32)),
        "fc.bias": np.zeros(16),
        "odd.weight": rng.standard_normal((10, 32)),
        "tok_embed.weight": rng.standard_normal((16, 32)),
        "ids": np.arange(4),
    }
    out, masks, skipped = prune_for_eval(t, 2, 4)
    assert list(masks) == ["fc.weight"]
    np.testing.assert_array_equal(out["fc.weight"], nm_reference(t["fc.weight"]))
    assert "not divisible by 8" in skipped["odd.weight"] and "embedding" in skipped["tok_embed.weight"]
    assert set(skipped) == {"fc.bias", "odd.weight", "tok_embed.weight", "ids"}
    np.testing.assert_array_equal(out["tok_embed.weight"], t["tok_embed.weight"])


def test_model_evidence_scores_dense_oneshot_and_finetuned(tmp_path):
    w = equal_importance()
    path = write_model(tmp_path, w)
    ev = model_evidence(path, "team_eval:score", n=2, m=4, seed=0, base_dir=tmp_path)
    # recomputed here: the eval on the independently pruned weights
    d = np.load(tmp_path / "evaldata.npz")
    w32 = w.astype(np.float32).astype(np.float64)
    acc_one = float(np.mean(np.argmax(d["x"] @ nm_reference(w32).T, axis=1) == d["y"]))
    assert ev["dense_metric"] == 1.0 and abs(ev["oneshot_metric"] - acc_one) < 1e-12
    assert ev["finetuned_metric"] is None and ev["evidence"] == "model"
    assert ev["delta"] == pytest.approx(acc_one - 1.0)
    lo, hi = ev["delta_ci"]
    assert lo <= ev["delta"] <= hi and hi - lo > 0
    assert (
        ev["quality_delta"] == pytest.approx(1.0 - acc_one) and ev["quality_delta_ci"] >= ev["quality_delta"]
    )
    assert ev["oneshot_metric"] < 0.6  # equal importance: 2:4 destroys the classifier
    assert [t["name"] for t in ev["pruned_tensors"]] == ["fc.weight"]
    assert {t["name"] for t in ev["skipped_tensors"]} == {"fc.bias", "tok_embed.weight"}

    # the team's fine-tuned weights: here the pruned weights rescaled (still 2:4)
    ft = tmp_path / "ft.safetensors"
    save_file(
        {
            "fc.weight": (2.0 * nm_reference(w32)).astype(np.float32),
            "fc.bias": np.zeros(16, np.float32),
            "tok_embed.weight": np.zeros((10, 16), np.float32),
        },
        str(ft),
    )
    ev2 = model_evidence(path, "team_eval:score", finetuned_path=ft, base_dir=tmp_path)
    assert ev2["finetuned_metric"] == pytest.approx(acc_one) and ev2["sparse_model"] == "fine-tuned"


def test_finetuned_weights_that_break_nm_are_one_clear_error(tmp_path):
    w = two_strong()
    path = write_model(tmp_path, w)
    bad = tmp_path / "bad.safetensors"
    wb = nm_reference(w)
    wb[3, 5] = 0.7 if wb[3, 5] == 0 else wb[3, 5]
    wb[3, 4:8] = 0.5  # four nonzeros in one group
    save_file(
        {
            "fc.weight": wb.astype(np.float32),
            "fc.bias": np.zeros(16, np.float32),
            "tok_embed.weight": np.zeros((10, 16), np.float32),
        },
        str(bad),
    )
    with pytest.raises(InputError, match=r"not 2:4 sparse: 1 group\(s\) of 4 keep more than 2") as ei:
        model_evidence(path, "team_eval:score", finetuned_path=bad, base_dir=tmp_path)
    assert "fc.weight" in ei.value.where


@pytest.mark.parametrize(
    "spec, msg",
    [
        ("no_such_module_xyz:score", "import failed: ModuleNotFoundError"),
        ("team_eval:missing", "has no function 'missing'"),
        ("team_eval:boom", "raised RuntimeError: the eval server is down"),
        ("team_eval:text", "non-numeric result 'ninety percent'"),
        ("team_eval", "expected MODULE:FUNCTION"),
    ],
)
def test_bad_eval_is_one_line_exit_2(tmp_path, spec, msg):
    path = write_model(tmp_path, two_strong())
    r = subprocess.run(
        [sys.executable, "-m", "explore.cli", "quality", "--weights", str(path), "--eval", spec, "--json"],
        capture_output=True,
        text=True,
        cwd=tmp_path,
        timeout=120,
        env={"PYTHONPATH": str(REPO), "PATH": "/usr/bin:/bin"},
    )
    assert r.returncode == 2, r.stderr
    lines = r.stderr.strip().splitlines()
    if "raised" in msg:  # a hook that raised: its traceback in the team's files first (issue 38 item 4)
        assert "traceback in the team's code" in lines[0] and 'team_eval.py", line ' in lines[1], r.stderr
        lines = lines[-1:]
    assert len(lines) == 1 and lines[0].startswith("sparsepe: error:"), r.stderr
    assert msg in lines[0] and spec.split(":")[0] in lines[0]
    assert r.stdout == ""


def test_cli_json_keys(tmp_path):
    path = write_model(tmp_path, two_strong())
    r = subprocess.run(
        [
            sys.executable,
            "-m",
            "explore.cli",
            "quality",
            "--weights",
            str(path),
            "--eval",
            "team_eval:score",
            "--nm",
            "2:4",
            "--seed",
            "3",
            "--json",
        ],
        capture_output=True,
        text=True,
        cwd=tmp_path,
        timeout=120,
        env={"PYTHONPATH": str(REPO), "PATH": "/usr/bin:/bin"},
    )
    assert r.returncode == 0, r.stderr
    out = json.loads(r.stdout)
    for k in (
        "dense_metric",
        "oneshot_metric",
        "finetuned_metric",
        "delta",
        "delta_ci",
        "pruned_tensors",
        "skipped_tensors",
        "evidence",
    ):
        assert k in out, k
    assert out["evidence"] == "model" and out["finetuned_metric"] is None and len(out["delta_ci"]) == 2
    # a plain float result: no per-sample scores, so no interval, and the guardrail uses the point
    with load_eval("team_eval:plain", tmp_path) as p:
        assert p.call({}) == 0.5
    ev = model_evidence(path, "team_eval:plain", base_dir=tmp_path)
    assert ev["delta_ci"] is None and ev["delta"] == 0.0 and ev["quality_delta_ci"] == 0.0


def test_same_module_name_in_two_directories_never_mix(tmp_path):
    a, b = tmp_path / "a", tmp_path / "b"
    a.mkdir()
    b.mkdir()
    pa = write_model(a, equal_importance())
    pb = write_model(b, two_strong(weak=0.0))
    ea = model_evidence(pa, "team_eval:score", base_dir=a)
    eb = model_evidence(pb, "team_eval:score", base_dir=b)
    # each eval reads its own directory's data: both dense models score 1 on their own labels
    assert ea["dense_metric"] == 1.0 and eb["dense_metric"] == 1.0
    assert ea["oneshot_metric"] < 0.6 and eb["oneshot_metric"] == 1.0
