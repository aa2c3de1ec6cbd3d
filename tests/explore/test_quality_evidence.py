"""Quality evidence in the sweep: the team's own model + eval ([quality]) binds the quality limit on
the pessimistic end of the delta's interval; equal-importance weights make the decision ROLLBACK
naming the quality limit; proxy evidence caps the decision at BOUNDED ROLLOUT; the per-trial
metrics and best.json carry quality_evidence and quality_delta_ci.

The team's model and eval are written here (tests/sim/test_quality_eval.py's classifier: labels
made by the dense weights, so the dense accuracy is 1 and every loss is the pruning's)."""

from __future__ import annotations

import csv
import json
from pathlib import Path

import pytest

from explore.storage import resolve_storage
from tests.explore.conftest import fixed_toml, space_toml
from tests.sim.test_quality_eval import equal_importance, two_strong, write_model

CONFIG = (
    """\
[study]
name = "q"
seed = 1
trials = {trials}

{space}"""
    + fixed_toml()
    + """
[[workload]]
name = "{workload}"
weight = 1.0

[limits]
max_stall_fraction = 0.9
max_tj_c = 85.0
max_area_mm2 = 50.0
max_quality_delta = {limit}
{quality}
"""
)

QUALITY = """
[quality]
weights = "model.safetensors"
eval = "team_eval:score"
metric = "top-1 accuracy"
"""


#: two clocks, both within the 7 nm fmax
CLOCKS = [300, 600]


def _write(
    tmp: Path, limit: float, *, workload: str = "resnet50", quality: bool = True, trials: int = 6, **axes
) -> Path:
    """The config in ``tmp``: CONFIG with ``axes`` replacing the [space] ones."""
    p = tmp / "q.toml"
    p.write_text(
        CONFIG.format(
            trials=trials,
            workload=workload,
            limit=limit,
            quality=QUALITY if quality else "",
            space=space_toml(**{"clock_mhz": CLOCKS, **axes}),
        )
    )
    return p


def _report(tmp: Path, run_sweep, cfg: Path, trials: int = 6) -> tuple[dict, dict, str]:
    from explore.report.build import write_report

    out = tmp / "run"
    _, best = run_sweep(cfg, out, trials=trials, seed=0, study="q", sampler="random")
    html = write_report(resolve_storage(None, out).url, "q", tmp / "rep", progress=False)
    key = json.loads((tmp / "rep" / "report.json").read_text())
    return best, key, (tmp / "rep" / "report.md").read_text() + html.read_text()


def test_equal_importance_weights_make_the_sweep_roll_back_on_the_quality_limit(tmp_path, run_sweep):
    write_model(tmp_path, equal_importance())
    best, key, text = _report(tmp_path, run_sweep, _write(tmp_path, 0.015))
    assert key["decision"]["verdict"] == "ROLLBACK" and key["decision"]["rule"] == "R2"
    assert "max_quality_delta" in text and "fails on all" in text
    rows = list(csv.DictReader(open(tmp_path / "run" / "trials.csv")))
    sparse = [r for r in rows if r["sparsity"] == "2:4"]
    assert sparse and all(r["quality_evidence"] == "model" for r in rows)
    assert all(float(r["quality_delta_ci"]) >= float(r["quality_delta"]) > 0.3 for r in sparse)
    assert all(float(r["c_quality_delta"]) > 0 for r in sparse)
    assert best["best"]["params"]["sparsity"] == "dense"
    assert best["quality_evidence"] == "model"
    assert best["best"]["metrics"]["quality_evidence"] == "model"
    assert best["best"]["metrics"]["quality_delta_ci"] == 0.0


def test_the_limit_binds_on_the_interval_not_the_point(tmp_path, run_sweep):
    from explore.commands.quality import run_quality

    path = write_model(tmp_path, two_strong(weak=0.12), samples=400)
    import os

    cwd = os.getcwd()
    os.chdir(tmp_path)  # the CLI imports the eval from the working directory
    try:
        ev = run_quality(path, "2:4", False, 0, None, 0.015, eval_spec="team_eval:score")
    finally:
        os.chdir(cwd)
    point, (_lo, hi) = ev["quality_delta"], ev["quality_delta_interval"]
    assert 0 < point < hi and hi - point > 0.004, ev  # a real interval around a small loss
    between = round((point + hi) / 2, 6)  # the point passes this limit, the pessimistic end does not
    rows = {}
    for name, limit in (("between", between), ("above", round(hi + 0.002, 6))):
        d = tmp_path / name
        d.mkdir()
        write_model(d, two_strong(weak=0.12), samples=400)
        _, best = run_sweep(_write(d, limit), d / "run", trials=6, seed=0, study="q", sampler="random")
        rows[name] = list(csv.DictReader(open(d / "run" / "trials.csv")))
        sparse = [r for r in rows[name] if r["sparsity"] == "2:4"]
        assert sparse
        for r in sparse:
            assert float(r["quality_delta"]) == pytest.approx(point)
            assert float(r["quality_delta_ci"]) == pytest.approx(hi)
            assert (float(r["c_quality_delta"]) > 0) == (name == "between")
        if (
            name == "above"
        ):  # the sparse designs are feasible (whether they win is the equal-terms comparison's)
            assert all(r["feasible"] == "1" for r in sparse)
            bs = best["comparison"]["best_sparse"]
            assert bs is not None and bs["design"]["sparsity"] == "2:4"
        # grid mode: the same constraint formula on every point
        from explore.config import load_config
        from explore.runner import run_grid

        gbest = run_grid(load_config(d / "q.toml"), d / "grid")
        grows = list(csv.DictReader(open(d / "grid" / "trials.csv")))
        assert len(grows) == 4 and gbest["quality_evidence"] == "model"
        for r in grows:
            study_row = (
                next(
                    x
                    for x in rows[name]
                    if (x["sparsity"], x["clock_mhz"]) == (r["sparsity"], r["clock_mhz"])
                )
                if any((x["sparsity"], x["clock_mhz"]) == (r["sparsity"], r["clock_mhz"]) for x in rows[name])
                else None
            )
            assert r["quality_evidence"] == "model"
            assert (float(r["c_quality_delta"]) > 0) == (name == "between" and r["sparsity"] == "2:4")
            if study_row is not None:
                assert float(r["c_quality_delta"]) == pytest.approx(float(study_row["c_quality_delta"]))


def test_model_evidence_can_ship_proxy_cannot(tmp_path, run_sweep):
    # the team's eval on a model 2:4 barely hurts: quality limit met on "model" evidence
    d = tmp_path / "model"
    d.mkdir()
    write_model(d, two_strong(weak=0.0))
    # a 32 x 32 array with 4 MB of SRAM: here 2:4 beats the dense array on equal terms (perf/W,
    # fewer DRAM weight bytes), so the decision reaches the evidence rule
    cfg = _write(d, 0.05, rows=[32], cols=[32], sram_kb=[4096])
    best, key, text = _report(d, run_sweep, cfg)
    assert key["params"]["sparsity"] == "2:4"
    assert key["comparison"]["primary_advantage"] > 1.0
    assert key["quality"]["evidence"] == "model" and key["quality"]["guardrail_ok"] is True
    assert "evidence on the team&#39;s model" in text or "evidence on the team's model" in text
    assert (key["decision"]["verdict"], key["decision"]["rule"]) != ("BOUNDED ROLLOUT", "R4")
    # no [quality]: the digits MLP reference (proxy) for resnet50; never SHIP on it
    d = tmp_path / "proxy"
    d.mkdir()
    best, key, text = _report(d, run_sweep, _write(d, 0.5, quality=False))
    assert best["best"]["metrics"]["quality_evidence"] == "proxy" == best["quality_evidence"]
    if key["params"]["sparsity"] == "2:4":
        assert key["decision"]["verdict"] in ("BOUNDED ROLLOUT", "ROLLBACK", "ESCALATE")
        assert key["decision"]["verdict"] != "SHIP"
        assert "PROXY" in text and "95 % interval" in text


def test_bad_eval_fails_before_any_trial(tmp_path, run_cli):
    write_model(tmp_path, two_strong())
    cfg = _write(tmp_path, 0.015)
    cfg.write_text(cfg.read_text().replace("team_eval:score", "team_eval:boom"))
    r = run_cli(["sweep", str(cfg), "--out", str(tmp_path / "run"), "--trials", "2"], cwd=tmp_path)
    assert r.returncode == 2
    line = r.stderr.strip().splitlines()
    assert (
        len(line) == 1 and "team_eval:boom" in line[0] and "RuntimeError: the eval server is down" in line[0]
    )
    assert not (tmp_path / "run" / "best.json").exists()


@pytest.mark.parametrize(
    "section, msg",
    [
        ('[quality]\nweights = "m.safetensors"\n', "weights and eval go together"),
        ('[quality]\nfinetuned = "f.safetensors"\n', "finetuned needs weights and eval"),
        ('[quality]\nweights = "m.safetensors"\neval = "nocolon"\n', "eval must be 'module:function'"),
        (
            '[quality]\nweights = "m.safetensors"\neval = "a:b"\nmetrics = "x"\n',
            "quality.metrics: unknown key",
        ),
    ],
)
def test_quality_section_is_validated(tmp_path, section, msg):
    from explore.config import load_config
    from hw.errors import InputError

    p = tmp_path / "c.toml"
    p.write_text(
        CONFIG.format(
            trials=2, workload="resnet50", limit=0.01, quality=section, space=space_toml(clock_mhz=CLOCKS)
        )
    )
    with pytest.raises(InputError, match=msg):
        load_config(p)


def test_quality_paths_are_relative_to_the_config(tmp_path):
    from explore.config import load_config

    sub = tmp_path / "cfgdir"
    sub.mkdir()
    cfg = load_config(_write(sub, 0.01))
    assert cfg.quality.path(cfg.quality.weights, cfg.source) == sub / "model.safetensors"
    assert cfg.quality.base_dir(cfg.source) == sub
