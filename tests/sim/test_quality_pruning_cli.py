"""Calibrated pruning of the team's model through ``sparsepe quality`` (sim.quality.user_eval, oneshot).

The team's model here is written by the test: a linear classifier ``argmax(x W^T)`` labelled by its
dense weights (dense accuracy 1 by construction), whose inputs have a few outlier channels 100x
larger than the rest carrying small weights, the pattern of LLM activations (Dettmers et al. 2022)
that makes magnitude pruning fail and that Wanda was built for (Sun et al. 2024, sec. 3)."""

from __future__ import annotations

import json
import subprocess
import sys
from pathlib import Path

import numpy as np
import pytest
from safetensors import safe_open
from safetensors.numpy import load_file, save_file

from hw.errors import InputError
from sim.quality.prune.oneshot import prune_tensors
from sim.quality.team.user_eval import model_evidence
from tests.sim.test_quality_methods import gpt2_checkpoint, groups_ok

REPO = Path(__file__).resolve().parents[2]

EVAL_SRC = """
import numpy as np
from pathlib import Path

_HERE = Path(__file__).parent
_D = np.load(_HERE / "evaldata.npz")

def score(weights):
    with open(_HERE / "eval_calls.log", "a") as f:
        f.write("call\\n")
    pred = np.argmax(_D["x"] @ weights["fc.weight"].T, axis=1)
    ok = (pred == _D["y"]).astype(float)
    return {"metric": float(ok.mean()), "per_sample": ok.tolist(), "higher_is_better": True}

def gpt2_score(weights):
    return float(sum(np.abs(v).sum() for k, v in weights.items() if k.endswith("c_fc.weight")))
"""

CALIB_SRC = '''
import numpy as np
from pathlib import Path

_HERE = Path(__file__).parent
_X = np.load(_HERE / "calib.npz")["x"]

def dense_inputs():
    return {"fc": _X}

def two_blocks(weights):
    """Inputs of a two-block MLP computed with the weights it is given; logs what it saw."""
    w0 = weights["blocks.0.fc.weight"]
    with open(_HERE / "calib_calls.log", "a") as f:
        f.write(f"{np.count_nonzero(w0)}\\n")
    h = np.maximum(_X @ w0.T, 0.0)
    return {"blocks.0.fc": _X, "blocks.1.fc": h}
'''


def outlier_model(
    tmp: Path, *, k: int = 256, out: int = 16, outliers: int = 4, weak: float = 0.2, seed: int = 0
) -> Path:
    """The team's files: weights, eval data (2,000 rows), 128 calibration rows of the same inputs."""
    rng = np.random.default_rng(seed)
    chans = rng.choice(k, outliers, replace=False)
    scale = np.ones(k)
    scale[chans] = 100.0
    w = rng.standard_normal((out, k))
    w[:, chans] *= weak  # small weights on the large inputs: magnitude pruning drops them
    x = rng.standard_normal((2000, k)) * scale
    np.savez(tmp / "evaldata.npz", x=x, y=np.argmax(x @ w.T, axis=1))
    np.savez(tmp / "calib.npz", x=rng.standard_normal((128, k)) * scale)
    np.savez(tmp / "calib_named.npz", fc=np.load(tmp / "calib.npz")["x"])
    (tmp / "team_eval.py").write_text(EVAL_SRC)
    (tmp / "team_calib.py").write_text(CALIB_SRC)
    path = tmp / "model.safetensors"
    save_file(
        {"fc.weight": w.astype(np.float32), "fc.bias": np.zeros(out, np.float32)},
        str(path),
        metadata={"format": "pt"},
    )
    return path


def _cli(*args, cwd):
    return subprocess.run(
        [sys.executable, "-m", "explore.cli", "quality", *map(str, args)],
        capture_output=True,
        text=True,
        cwd=cwd,
        timeout=300,
        env={"PYTHONPATH": str(REPO), "PATH": "/usr/bin:/bin"},
    )


def test_outlier_channels_magnitude_destroys_the_metric_wanda_and_sparsegpt_keep_it(tmp_path):
    path = outlier_model(tmp_path)
    got = {}
    for method in ("magnitude", "wanda", "sparsegpt"):
        ev = model_evidence(
            path,
            "team_eval:score",
            base_dir=tmp_path,
            method=method,
            calibration=tmp_path / "calib_named.npz",
        )
        assert ev["dense_metric"] == 1.0 and ev["method"] == method
        got[method] = ev["oneshot_metric"]
    assert got["magnitude"] < 0.5, got
    assert got["wanda"] > 0.8 and got["sparsegpt"] > 0.8, got
    # the default with calibration inputs is sparsegpt; without them magnitude
    assert (
        model_evidence(path, "team_eval:score", base_dir=tmp_path, calibration="calib_named.npz")["method"]
        == "sparsegpt"
    )
    assert model_evidence(path, "team_eval:score", base_dir=tmp_path)["oneshot_metric"] == got["magnitude"]


def test_cli_json_says_method_calibration_and_layouts(tmp_path):
    outlier_model(tmp_path)
    r = _cli(
        "--weights",
        "model.safetensors",
        "--eval",
        "team_eval:score",
        "--calib",
        "team_calib:dense_inputs",
        "--json",
        cwd=tmp_path,
    )
    assert r.returncode == 0, r.stderr
    d = json.loads(r.stdout)
    for key in (
        "dense_metric",
        "oneshot_metric",
        "finetuned_metric",
        "delta",
        "delta_ci",
        "pruned_tensors",
        "skipped_tensors",
        "evidence",
    ):
        assert key in d, key
    assert d["method"] == "sparsegpt" and d["oneshot_metric"] > 0.8
    assert d["calibration"]["source"] == "function team_calib:dense_inputs"
    assert d["calibration"]["samples"] == 128 and d["calibration"]["inputs"] == "dense model"
    assert d["layouts"] == {"fc.weight": 1}
    assert d["pruned_tensors"] == [
        {
            "name": "fc.weight",
            "shape": [16, 256],
            "layout": "linear",
            "reduction_axis": 1,
            "method": "sparsegpt",
        }
    ]
    human = _cli(
        "--weights",
        "model.safetensors",
        "--eval",
        "team_eval:score",
        "--calib",
        "calib_named.npz",
        "--method",
        "wanda",
        cwd=tmp_path,
    )
    assert human.returncode == 0 and "method wanda (calibration file" in human.stdout
    assert "linear, groups of M along axis 1, pruned by wanda" in human.stdout


def test_save_pruned_round_trips(tmp_path):
    path = outlier_model(tmp_path)
    out = tmp_path / "pruned.safetensors"
    r = _cli(
        "--weights",
        path,
        "--eval",
        "team_eval:score",
        "--calib",
        "calib_named.npz",
        "--save-pruned",
        out,
        "--json",
        cwd=tmp_path,
    )
    assert r.returncode == 0, r.stderr
    d = json.loads(r.stdout)
    dense, saved = load_file(str(path)), load_file(str(out))
    assert list(saved) == list(dense)
    for k in dense:
        assert saved[k].dtype == dense[k].dtype and saved[k].shape == dense[k].shape, k
    assert groups_ok(saved["fc.weight"], 2, 4, 1) and not np.array_equal(
        saved["fc.weight"], dense["fc.weight"]
    )
    np.testing.assert_array_equal(saved["fc.bias"], dense["fc.bias"])
    with safe_open(str(out), framework="numpy") as f:
        meta = f.metadata()
    assert meta["format"] == "pt" and "sparsegpt" in meta["sparsepe"]
    # the saved file is the model the eval scored: scoring it again gives the one-shot metric
    again = model_evidence(out, "team_eval:score", base_dir=tmp_path)
    assert again["dense_metric"] == d["oneshot_metric"] and d["pruned_file"] == str(out)
    # without an eval, the per-layer report saves the same pruned weights
    out2 = tmp_path / "pruned2.safetensors"
    r2 = _cli("--weights", path, "--calib", "calib_named.npz", "--save-pruned", out2, "--json", cwd=tmp_path)
    assert r2.returncode == 0, r2.stderr
    np.testing.assert_array_equal(load_file(str(out2))["fc.weight"], saved["fc.weight"])


def test_gpt2_checkpoint_saved_pruned_along_the_input_axis(tmp_path):
    rng = np.random.default_rng(0)
    t = gpt2_checkpoint(rng)
    save_file(t, str(tmp_path / "gpt2.safetensors"))
    r = _cli(
        "--weights",
        "gpt2.safetensors",
        "--nm",
        "4:8",
        "--save-pruned",
        "p.safetensors",
        "--json",
        cwd=tmp_path,
    )
    assert r.returncode == 0, r.stderr
    d = json.loads(r.stdout)
    saved = load_file(str(tmp_path / "p.safetensors"))
    pruned = [k for k in t if k.endswith(("c_attn.weight", "c_proj.weight", "c_fc.weight"))]
    assert d["layouts"] == {k: 0 for k in pruned} and d["method"] == "magnitude"
    for k in pruned:
        assert groups_ok(saved[k], 4, 8, 0), k
    assert np.array_equal(saved["transformer.wte.weight"], t["transformer.wte.weight"])


def test_sequential_calibration_feeds_each_block_the_pruned_prefix(tmp_path):
    outlier_model(tmp_path)
    rng = np.random.default_rng(1)
    w0, w1 = rng.standard_normal((64, 256)), rng.standard_normal((16, 64))
    save_file(
        {"blocks.0.fc.weight": w0.astype(np.float32), "blocks.1.fc.weight": w1.astype(np.float32)},
        str(tmp_path / "mlp.safetensors"),
    )
    r = _cli("--weights", "mlp.safetensors", "--calib", "team_calib:two_blocks", "--json", cwd=tmp_path)
    assert r.returncode == 0, r.stderr
    d = json.loads(r.stdout)
    assert d["method"] == "sparsegpt" and d["calibration"]["inputs"].startswith("pruned prefix")
    assert d["calibration"]["calls"] == 2
    seen = [int(s) for s in (tmp_path / "calib_calls.log").read_text().split()]
    # first call: the dense model (all 64*256 weights); second call: block 0 already pruned 2:4
    assert seen[:2] == [64 * 256, 64 * 256 // 2]


BAD = {
    "calib key": (["--calib", "bad_key.npz"], "key 'fc2' matches no tensor"),
    "calib width": (
        ["--calib", "bad_width.npz"],
        "width 128, but tensor 'fc.weight' (16, 256) (layout linear) takes 256",
    ),
    "calib nan": (["--calib", "bad_nan.npz"], "holds NaN or infinity"),
    "method": (["--method", "obs"], "unknown pruning method 'obs'"),
    "layout rank": (["--layout", "fc.weight=conv"], "layout conv describes 3 or 4 or 5-axis tensors"),
    "wanda no calib": (["--method", "wanda"], "wanda needs calibration inputs"),
    "calib fn": (["--calib", "team_calib:nothing"], "has no function 'nothing'"),
}


@pytest.mark.parametrize("case", sorted(BAD))
def test_bad_input_is_one_line_exit_2_before_any_pruning(tmp_path, case):
    outlier_model(tmp_path)
    x = np.load(tmp_path / "calib.npz")["x"]
    np.savez(tmp_path / "bad_key.npz", fc2=x)
    np.savez(tmp_path / "bad_width.npz", fc=x[:, :128])
    xn = x.copy()
    xn[3, 7] = np.nan
    np.savez(tmp_path / "bad_nan.npz", fc=xn)
    args, msg = BAD[case]
    r = _cli(
        "--weights",
        "model.safetensors",
        "--eval",
        "team_eval:score",
        *args,
        "--save-pruned",
        "p.safetensors",
        cwd=tmp_path,
    )
    assert r.returncode == 2, r.stderr
    lines = r.stderr.strip().splitlines()
    assert len(lines) == 1 and lines[0].startswith("sparsepe: error:") and msg in lines[0], r.stderr
    assert not (tmp_path / "eval_calls.log").exists()  # the eval never ran
    assert not (tmp_path / "p.safetensors").exists()  # nothing was pruned and written


def test_finetuned_weights_are_checked_along_the_layout_axis(tmp_path):
    rng = np.random.default_rng(2)
    t = gpt2_checkpoint(rng, layers=1)
    save_file(t, str(tmp_path / "g.safetensors"))
    (tmp_path / "team_eval.py").write_text(EVAL_SRC.replace('_D = np.load(_HERE / "evaldata.npz")', ""))
    # every tensor pruned along its input axis, except c_fc: 2:4 along the output axis (1), wrong for Conv1D
    good = prune_tensors(t, 2, 4).tensors
    save_file(good, str(tmp_path / "ok.safetensors"))
    ev = model_evidence(
        tmp_path / "g.safetensors",
        "team_eval:gpt2_score",
        finetuned_path=tmp_path / "ok.safetensors",
        base_dir=tmp_path,
    )
    assert ev["finetuned_metric"] == pytest.approx(ev["oneshot_metric"])
    bad = dict(good)
    k = "transformer.h.0.mlp.c_fc.weight"
    w = t[k].copy()
    g = w.reshape(w.shape[0], -1, 4)
    g[..., 2:] = 0
    bad[k] = w
    assert groups_ok(w, 2, 4, 1) and not groups_ok(w, 2, 4, 0)
    save_file(bad, str(tmp_path / "ft.safetensors"))
    with pytest.raises(InputError, match="along axis 0") as ei:
        model_evidence(
            tmp_path / "g.safetensors",
            "team_eval:gpt2_score",
            finetuned_path=tmp_path / "ft.safetensors",
            base_dir=tmp_path,
        )
    assert k in ei.value.where
