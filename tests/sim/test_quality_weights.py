"""User weight files: loading, tensor rules, per-layer metrics, bad-file errors."""

from __future__ import annotations

import numpy as np
import pytest
from safetensors.numpy import save_file

from hw.errors import InputError
from sim.quality.team.layer_report import CALIB_SAMPLES, layer_quality, weights_report
from sim.quality.team.weights import load_tensors


def _model(rng):
    return {
        "fc1.weight": rng.normal(size=(128, 64)).astype(np.float32),
        "fc1.bias": np.zeros(128, np.float32),
        "conv.weight": rng.normal(size=(16, 32, 3, 3)).astype(np.float32),
        "ln_f.weight": np.ones(64, np.float32),
        "head.weight": rng.normal(size=(10, 128)).astype(np.float32),
    }


@pytest.mark.parametrize("fmt", ["npz", "safetensors"])
def test_report_on_both_formats(tmp_path, fmt):
    tensors = _model(np.random.default_rng(0))
    path = tmp_path / f"m.{fmt}"
    if fmt == "npz":
        np.savez(path, **tensors)
    else:
        save_file(tensors, str(path))
    rep, _ = weights_report(path, 2, 4, seed=3)
    rows = {r["name"]: r for r in rep["layers"]}
    assert set(rows) == {"fc1.weight", "conv.weight", "head.weight"}
    assert {s["name"] for s in rep["skipped"]} == {"fc1.bias", "ln_f.weight"}
    assert (
        rows["fc1.weight"]["pruned"] and rows["conv.weight"]["pruned"] and not rows["head.weight"]["pruned"]
    )
    assert rows["head.weight"]["relative_output_error"] == 0.0 and rows["head.weight"]["snr_db"] is None
    assert rows["fc1.weight"]["nonzero_fraction"] == 0.5
    # Gaussian weights: retained share near the order-statistics value 0.7445 (see test_pruning)
    assert 0.72 < rows["fc1.weight"]["retained_magnitude_share"] < 0.77
    # same seed -> same report; other seed -> other calibration draws
    assert weights_report(path, 2, 4, seed=3)[0] == rep
    assert (
        weights_report(path, 2, 4, seed=4)[0]["layers"][0]["relative_output_error"]
        != rows["fc1.weight"]["relative_output_error"]
    )


def test_metrics_against_direct_computation():
    rng = np.random.default_rng(1)
    w = rng.normal(size=(32, 64))
    x = rng.normal(size=(50, 64))
    r = layer_quality("w", w, 2, 4, calib=x, method="magnitude")
    # independent reference: explicit per-group loop keeping the 2 largest |w|
    wp = np.zeros_like(w)
    for i in range(32):
        for g in range(16):
            grp = w[i, 4 * g : 4 * g + 4]
            keep = sorted(range(4), key=lambda j: (-abs(grp[j]), j))[:2]
            wp[i, [4 * g + j for j in keep]] = grp[keep]
    y, yp = x @ w.T, x @ wp.T
    assert r.retained_magnitude_share == pytest.approx(np.abs(wp).sum() / np.abs(w).sum(), rel=1e-12)
    assert r.relative_output_error == pytest.approx(np.linalg.norm(y - yp) / np.linalg.norm(y), rel=1e-12)
    assert r.snr_db == pytest.approx(20 * np.log10(np.linalg.norm(y) / np.linalg.norm(y - yp)), rel=1e-12)
    assert r.calibration == "user, 50 samples"
    assert layer_quality("w", w).calibration.startswith(f"seeded N(0,1), {CALIB_SAMPLES}")


def test_user_calibration_file(tmp_path):
    rng = np.random.default_rng(2)
    np.savez(tmp_path / "w.npz", fc=rng.normal(size=(16, 32)))
    np.savez(tmp_path / "c.npz", fc=rng.normal(size=(20, 32)))
    rep, _ = weights_report(tmp_path / "w.npz", calibration=tmp_path / "c.npz")
    assert rep["layers"][0]["calibration"] == "user, 20 samples"
    assert (
        rep["method"] == "sparsegpt" and rep["calibration"]["samples"] == 20
    )  # the default with calibration
    np.savez(tmp_path / "c2.npz", fc=rng.normal(size=(20, 16)))
    with pytest.raises(InputError, match="width 16, but tensor 'fc'"):
        weights_report(tmp_path / "w.npz", calibration=tmp_path / "c2.npz")


@pytest.mark.parametrize(
    "case,match",
    [
        ("notnpz", "not an .npz"),
        ("oned", "1-D tensor"),
        ("int", "dtype int32"),
        ("untileable", "cannot be tiled"),
        ("nan", "NaN"),
        ("badsafe", "not a readable .safetensors"),
        ("txt", "unsupported"),
        ("missing", "no such file"),
    ],
)
def test_bad_files_name_file_and_tensor(tmp_path, case, match):
    p = tmp_path / {"badsafe": "x.safetensors", "txt": "x.txt"}.get(case, "x.npz")
    if case in ("notnpz", "badsafe", "txt"):
        p.write_text("hello")
    elif case == "oned":
        np.savez(p, W1=np.ones((16, 32)), scale=np.ones(16))
    elif case == "int":
        np.savez(p, W1=np.ones((16, 32), dtype=np.int32))
    elif case == "untileable":
        np.savez(p, W1=np.ones((8, 6)))
    elif case == "nan":
        np.savez(p, W1=np.full((16, 32), np.nan))
    with pytest.raises(InputError, match=match) as exc:
        weights_report(p)
    assert str(p) in str(exc.value)
    if case in ("oned", "int", "untileable", "nan"):
        assert "tensor 'W" in str(exc.value) or "tensor 'scale'" in str(exc.value)


def test_load_tensors_roundtrip(tmp_path):
    t = {"a": np.arange(8, dtype=np.float16).reshape(2, 4)}
    save_file(t, str(tmp_path / "a.safetensors"))
    np.testing.assert_array_equal(load_tensors(tmp_path / "a.safetensors")["a"], t["a"])
