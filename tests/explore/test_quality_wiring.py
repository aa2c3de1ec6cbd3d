"""The sweep's quality wiring: [quality] method / calibration / hook_timeout reach the team's
model evidence, read from a real config file.

The team's model is written here: a linear classifier ``argmax(x W^T)`` whose labels the dense
weights make (dense accuracy 1), with one input channel per group of four 100x larger than the
rest carrying weights 10x smaller. Magnitude 2:4 drops those small weights although their
products are the largest; wanda (|W| x ||X||) and sparsegpt keep them, so the one-shot
accuracies tell which method ran (measured: magnitude 0.205, wanda 0.878, sparsegpt 0.848)."""

from __future__ import annotations

import json
import time
from pathlib import Path
from types import SimpleNamespace

import numpy as np
import pandas as pd
import pytest
from safetensors.numpy import save_file

from explore.config import config_fingerprint, load_config
from explore.evaluator import evaluate_detail, make_context
from explore.report.decision import HOLD_REASON, decide, rule_reason, section_decision
from explore.report.owners import artifact_frames
from explore.report.precision import policy_rows, section_precision
from explore.results import constraint_values, summarise
from hw.errors import InputError
from sim.quality.evidence.precision import PrecisionQuality
from sim.quality.evidence.stats import Interval
from tests.explore.conftest import fixed_toml, space_toml
from tests.sim.test_hf_import import MISTRAL_7B, OPT_125M, QWEN2_05B
from tests.sim.test_onnx_import import build_model

CONFIG = (
    """\
[study]
name = "wire"
seed = 0
trials = 2

"""
    + space_toml()
    + fixed_toml("ambient_c", "theta_ja_c_per_w")
    + """
[[workload]]
name = "resnet50"

[limits]
max_quality_delta = 0.5

[quality]
weights = "model.safetensors"
eval = "team_eval:score"
{extra}
"""
)

EVAL_SRC = """
import time
import numpy as np
from pathlib import Path

_D = np.load(Path(__file__).with_name("evaldata.npz"))

def score(weights):
    ok = (np.argmax(_D["x"] @ weights["fc.weight"].T, axis=1) == _D["y"]).astype(float)
    return {"metric": float(ok.mean()), "per_sample": ok.tolist()}

def slow(weights):
    time.sleep(60)
    return 1.0
"""

#: input channels 100x larger than the rest (one per group of four), carrying weights 10x smaller:
#: their products are the largest (10x), their weights the smallest
OUTLIERS = slice(0, 32, 4)


def outlier_model(d: Path, rows: int = 16, cols: int = 32, samples: int = 400, seed: int = 0) -> None:
    rng = np.random.default_rng(seed)
    w = rng.standard_normal((rows, cols))
    w[:, OUTLIERS] *= 0.1
    x = rng.standard_normal((samples, cols))
    x[:, OUTLIERS] *= 100.0
    y = np.argmax(x @ w.T, axis=1)
    np.savez(d / "evaldata.npz", x=x, y=y)
    np.savez(d / "calib.npz", fc=x[:128])
    (d / "team_eval.py").write_text(EVAL_SRC)
    save_file({"fc.weight": w.astype(np.float32)}, str(d / "model.safetensors"))


def _config(d: Path, extra: str = "") -> Path:
    p = d / "q.toml"
    p.write_text(CONFIG.format(extra=extra))
    return p


def _evidence(cfg_path: Path) -> dict:
    ctx = make_context(load_config(cfg_path))
    return ctx.quality_evidence[(2, 4)]


def test_method_and_calibration_reach_the_team_model(tmp_path):
    d = tmp_path / "cfgdir"
    d.mkdir()
    outlier_model(d)
    evs = {}
    for label, extra in (
        ("magnitude", 'method = "magnitude"'),
        ("wanda", 'method = "wanda"\ncalibration = "calib.npz"'),
        ("default", 'calibration = "calib.npz"'),
    ):
        sub = d / label
        sub.mkdir()
        for f in ("evaldata.npz", "calib.npz", "team_eval.py", "model.safetensors"):
            (sub / f).write_bytes((d / f).read_bytes())
        evs[label] = _evidence(_config(sub, extra))
    assert evs["magnitude"]["method"] == "magnitude" and not evs["magnitude"]["calibration"].get("source")
    assert evs["wanda"]["method"] == "wanda"
    # the calibration file is the one beside the config (relative to the config file)
    assert str(d / "wanda" / "calib.npz") in evs["wanda"]["calibration"]["source"]
    assert evs["wanda"]["calibration"]["samples"] == 128
    # with calibration and no method, the default rule: sparsegpt
    assert evs["default"]["method"] == "sparsegpt"
    # which method ran shows in the team's metric: magnitude drops the outlier channels' products
    assert evs["magnitude"]["oneshot_metric"] < 0.5
    assert evs["wanda"]["oneshot_metric"] > evs["magnitude"]["oneshot_metric"] + 0.4
    assert evs["default"]["oneshot_metric"] > evs["magnitude"]["oneshot_metric"] + 0.4


def test_hook_timeout_limits_the_eval_and_is_named(tmp_path):
    outlier_model(tmp_path)
    cfg = _config(tmp_path, "hook_timeout = 1")
    cfg.write_text(cfg.read_text().replace("team_eval:score", "team_eval:slow"))
    t0 = time.monotonic()
    with pytest.raises(InputError) as exc:
        make_context(load_config(cfg))
    assert time.monotonic() - t0 < 20
    msg = str(exc.value)
    assert "team_eval:slow" in msg and "within 1 s ([quality] hook_timeout)" in msg and "\n" not in msg


@pytest.mark.parametrize(
    "extra, msg",
    [
        ('method = "obs"', "quality.method: Input should be 'magnitude', 'wanda' or 'sparsegpt'"),
        ('method = "sparsegpt"', "quality.method: sparsegpt needs calibration inputs"),
        (
            'calibration = "inputs.txt"',
            "quality.calibration: expected a .npz or .safetensors file or MODULE:FUNCTION",
        ),
        ("hook_timeout = 0", "quality.hook_timeout: must be a number of seconds > 0"),
        ("hook_timeout = -5", "quality.hook_timeout: must be a number of seconds > 0"),
        ("hook_timeout = 1e9", "quality.hook_timeout: must be a number of seconds > 0 and <= 604800"),
        ("hook_timeout = nan", "quality.hook_timeout: Input should be a finite number"),
        ("hook_timeout = true", "quality.hook_timeout: must be a number, got True (a boolean)"),
        ('hook_timeout = "10"', "quality.hook_timeout: must be a number, got '10' (a string)"),
    ],
)
def test_quality_settings_are_validated(tmp_path, extra, msg):
    with pytest.raises(InputError, match=msg.replace("(", r"\(").replace(")", r"\)").replace(".", r"\.")):
        load_config(_config(tmp_path, extra))


def test_quality_settings_need_the_team_model(tmp_path):
    p = _config(tmp_path, 'method = "magnitude"')
    p.write_text(p.read_text().replace('weights = "model.safetensors"\neval = "team_eval:score"\n', ""))
    with pytest.raises(InputError, match="method needs weights and eval"):
        load_config(p)


def test_hook_timeout_is_not_part_of_the_problem(tmp_path):
    base = config_fingerprint(load_config(_config(tmp_path)))
    assert config_fingerprint(load_config(_config(tmp_path, "hook_timeout = 30"))) == base
    assert config_fingerprint(load_config(_config(tmp_path, 'method = "magnitude"'))) != base
    assert load_config(_config(tmp_path)).quality.timeout().seconds == 600.0


# ---- workloads matched to a reference by structure ---------------------------------------------------------

PROXY_CONFIG = (
    space_toml()
    + fixed_toml("ambient_c", "theta_ja_c_per_w")
    + """
{workloads}

[limits]
max_quality_delta = {limit}
"""
)


def proxy_config(d: Path, workloads: str, limit: float = 0.5) -> Path:
    p = d / "proxy.toml"
    p.write_text(PROXY_CONFIG.format(workloads=workloads, limit=limit))
    return p


@pytest.mark.parametrize("model", ["mistral", "qwen2", "opt", "onnx"])
def test_transformers_of_any_name_get_the_transformer_reference(tmp_path, model):
    if model == "onnx":
        build_model(tmp_path / "tiny.onnx")
        wl = '[[workload]]\nonnx = "tiny.onnx"\nparams = { batch = 1 }'
    else:
        hf = {"mistral": MISTRAL_7B, "qwen2": QWEN2_05B, "opt": OPT_125M}[model]
        (tmp_path / f"{model}.json").write_text(json.dumps(hf))
        wl = f'[[workload]]\nhf_config = "{model}.json"\nparams = {{ seq = 64 }}'
    cfg = load_config(proxy_config(tmp_path, wl))
    # none of these names starts with bert / gpt / llama
    assert not cfg.workload[0].name.lower().startswith(("bert", "gpt", "llama"))
    ev = make_context(cfg).quality_evidence[(2, 4)]
    assert (
        ev["evidence"] == "proxy" and ev["reference"] == "char-transformer" and ev["metric"] == "perplexity"
    )
    assert "attention" in ev["workloads"][cfg.workload[0].name]


def test_a_cnn_gets_the_digits_reference(tmp_path):
    ev = make_context(
        load_config(proxy_config(tmp_path, '[[workload]]\nname = "resnet50"'))
    ).quality_evidence[(2, 4)]
    assert ev["reference"] == "digits-mlp" and "no attention" in ev["workloads"]["resnet50"]


# ---- [[workload]] hf_config with prune_lm_head ------------------------------------------------------------


def test_hf_workload_prune_lm_head(tmp_path):
    (tmp_path / "qwen2.json").write_text(json.dumps(QWEN2_05B))  # tie_word_embeddings = true
    heads = {}
    for flag in ("", "prune_lm_head = true", "prune_lm_head = false"):
        cfg = load_config(
            proxy_config(tmp_path, f'[[workload]]\nhf_config = "qwen2.json"\nparams = {{ seq = 64 }}\n{flag}')
        )
        head = next(layer for layer in cfg.workload[0].build().layers if layer.name == "lm_head")
        heads[flag] = head
    # tied to the embeddings: not a 2:4 target unless asked; the 896 x 151936 head passes ASP's rules when asked
    assert not heads[""].sparsifiable and "tied" in heads[""].reason
    assert heads["prune_lm_head = true"].sparsifiable
    assert heads["prune_lm_head = false"] == heads[""]
    # only configs that ask for it change their fingerprint
    base = config_fingerprint(load_config(proxy_config(tmp_path, '[[workload]]\nhf_config = "qwen2.json"')))
    off = config_fingerprint(
        load_config(proxy_config(tmp_path, '[[workload]]\nhf_config = "qwen2.json"\nprune_lm_head = false'))
    )
    on = config_fingerprint(
        load_config(proxy_config(tmp_path, '[[workload]]\nhf_config = "qwen2.json"\nprune_lm_head = true'))
    )
    assert base == off != on


@pytest.mark.parametrize(
    "workload, msg",
    [
        (
            '[[workload]]\nname = "resnet50"\nprune_lm_head = true',
            "prune_lm_head applies to an hf_config workload",
        ),
        (
            '[[workload]]\nhf_config = "qwen2.json"\nprune_lm_head = "yes"',
            r"workload\[0\]\.prune_lm_head: must be true or false, got .yes. \(a string\)",
        ),
    ],
)
def test_prune_lm_head_is_validated(tmp_path, workload, msg):
    (tmp_path / "qwen2.json").write_text(json.dumps(QWEN2_05B))
    with pytest.raises(InputError, match=msg):
        load_config(proxy_config(tmp_path, workload))


# ---- a mix of reference families: each limit on its own metric --------------------------------------------

MIX = '[[workload]]\nname = "resnet50"\n[[workload]]\nname = "bert-base"\nparams = { seq = 128 }'
MIX_POINT = {
    "rows": 16,
    "cols": 16,
    "sram_kb": 256,
    "clock_mhz": 400.0,
    "node_nm": 7,
    "sparsity": "2:4",
    "pipeline": 1,
    "dataflow": "ws",
    "dram": "lpddr5",
}


def test_a_mix_tests_each_family_on_its_own_metric(tmp_path):
    ev = make_context(load_config(proxy_config(tmp_path, MIX, limit=0.5))).quality_evidence[(2, 4)]
    fams = ev["families"]
    assert set(fams) == {"digits-mlp", "char-transformer"}
    assert (fams["digits-mlp"]["metric"], fams["char-transformer"]["metric"]) == ("accuracy", "perplexity")
    for f in fams.values():  # the per-family detail is kept, each with its verdict on its own loss
        lo, hi = f["quality_delta_interval"]
        assert lo <= f["quality_delta"] <= hi == f["quality_delta_ci"] and f["guardrail_ok"] is True
        assert f["pruning_schedule"] and f["workloads"]
    cis = {ref: f["quality_delta_ci"] for ref, f in fams.items()}
    (low_ref, low), (high_ref, high) = sorted(cis.items(), key=lambda kv: kv[1])
    assert high > low
    limit = round((low + high) / 2, 9)  # between the two pessimistic ends: one family fails, the other passes
    d = tmp_path / "between"
    d.mkdir()
    ctx = make_context(load_config(proxy_config(d, MIX, limit=limit)))
    ev = ctx.quality_evidence[(2, 4)]
    assert (
        ev["families"][high_ref]["guardrail_ok"] is False and ev["families"][low_ref]["guardrail_ok"] is True
    )
    assert ev["binding_family"] == high_ref == ev["reference"] and ev["quality_delta_ci"] == high
    q = evaluate_detail(dict(MIX_POINT), ctx)["quality"]
    assert q["guardrail_ok"] is False
    # the verdict names each family with its own unit
    assert "accuracy points" in q["guardrail"] and "relative perplexity increase" in q["guardrail"]
    assert f"{high_ref}: quality guardrail violated" in q["guardrail"]
    assert f"{low_ref}: quality guardrail met" in q["guardrail"]


def test_precision_policy_gates_each_family_on_its_own_metric(tmp_path):
    cfg = load_config(proxy_config(tmp_path, MIX, limit=0.015))
    rec = {
        "number": 0,
        "feasible": True,
        "params": {"precision": "int8", "sparsity": "2:4"},
        "metrics": {"energy_per_inference_mj": 1.0, "latency_ms": 1.0, "area_mm2": 1.0},
    }

    def gates(mlp_high, lm_high):
        def quality(precs, sparsities, seeds, max_delta=None):
            out = []
            for fam, high in (("mlp", mlp_high), ("transformer", lm_high)):
                r = PrecisionQuality(
                    "int8", "2:4", 0.9, Interval(high / 2, 0.0, high, "test"), high <= max_delta, max_delta
                )
                r.reference = fam
                out.append(r)
            return out

        return quality

    data = SimpleNamespace(records=[rec], cfg=cfg)
    # the MLP passes with the larger number, the transformer fails: the pair fails on the transformer's gate
    (row,) = policy_rows(data, quality=gates(0.012, 0.02))
    assert not row["gate_pass"] and row["reference"] == "transformer"
    assert {g["reference"]: g["gate_pass"] for g in row["gates"]} == {"mlp": True, "transformer": False}
    (row,) = policy_rows(data, quality=gates(0.010, 0.012))
    assert row["gate_pass"] and len(row["gates"]) == 2
    sec, _ = section_precision(data, quality=gates(0.012, 0.02))
    assert [r[6] for r in sec.tables[0].rows] == [
        "char-level transformer (relative NLL increase)",
        "digits MLP (accuracy points)",
    ]


# ---- the decision: proxy evidence cannot decide ROLLBACK; missing evidence fails closed ---------------------


def _record(number: int, sparsity: str, perf: float, ci: float, evidence: str, cfg) -> dict:
    metrics = {
        "perf_per_watt": perf,
        "quality_delta": ci / 2,
        "quality_delta_ci": ci,
        "quality_evidence": evidence,
        "clock_mhz": 400.0,
        "fmax_mhz": 800.0,
        "effective_speedup": 1.9,
        "ideal_speedup": 2.0,
    }
    cons = constraint_values(cfg, metrics)
    return {
        "number": number,
        "params": {**MIX_POINT, "sparsity": sparsity},
        "metrics": metrics,
        "constraints": cons,
        "feasible": all(v <= 0 for v in cons.values()),
    }


def _study(tmp_path, records):
    cfg = load_config(proxy_config(tmp_path, '[[workload]]\nname = "resnet50"', limit=0.015))
    recs = [_record(i, *r, cfg=cfg) for i, r in enumerate(records)]
    data = SimpleNamespace(
        cfg=cfg,
        records=recs,
        best=summarise(recs, cfg),
        directions=cfg.objectives.directions(),
        objectives=cfg.objectives.names(),
    )
    return data, recs


#: The advantage holds under every sample of the assumptions' ranges: R5's confidence is met, so
#: these tests see the evidence rules alone.
ROBUST = {"p_advantage_ge_margin": 1.0, "min_confidence": 0.9, "line": "sparse wins under every sample"}


def _decide(data, rec, q, comp):
    det = SimpleNamespace(point=rec["params"], metrics=rec["metrics"])
    verdict, rule, rows = decide(data, det, q, comp, ROBUST)
    return verdict, rule, {r[0]: r for r in rows}, rule_reason(verdict, rule)


@pytest.mark.parametrize("evidence", ["proxy", "model"])
def test_proxy_evidence_holds_at_bounded_rollout_model_evidence_rolls_back(tmp_path, evidence):
    # the only sparse design beats the dense one 2:1 and fails nothing but the quality limit
    data, (sparse, dense) = _study(tmp_path, [("2:4", 2.0, 0.05, evidence), ("dense", 1.0, 0.0, evidence)])
    assert data.best["best"]["number"] == dense["number"]
    comp = {"best_sparse": None, "best_dense": {"perf_per_watt": 1.0}, "primary_advantage": None}
    verdict, rule, rows, reason = _decide(
        data, dense, {"dense": True, "quality_delta": 0.0, "evidence": evidence}, comp
    )
    if evidence == "model":
        assert (verdict, rule) == ("ROLLBACK", "R2") and rows["R2"][3] == "fires"
    else:
        assert (verdict, rule) == ("BOUNDED ROLLOUT", "R2") and rows["R2"][3] == "holds at BOUNDED ROLLOUT"
        assert (
            "cannot decide ROLLBACK" in reason and "trial 0" in rows["R2"][2] and "ratio 2" in rows["R2"][2]
        )


def test_proxy_evidence_does_not_save_a_sparse_design_that_loses_anyway(tmp_path):
    # the sparse design fails the proxy quality limit AND loses to dense: R3 rolls back on equal terms
    data, (sparse, dense) = _study(tmp_path, [("2:4", 0.5, 0.05, "proxy"), ("dense", 1.0, 0.0, "proxy")])
    comp = {"best_sparse": None, "best_dense": {"perf_per_watt": 1.0}, "primary_advantage": None}
    verdict, rule, rows, _ = _decide(
        data, dense, {"dense": True, "quality_delta": 0.0, "evidence": "proxy"}, comp
    )
    assert (verdict, rule) == ("ROLLBACK", "R3") and rows["R2"][3] == "passes (R3 decides)"


@pytest.mark.parametrize(
    "evidence, expected", [("proxy", ("BOUNDED ROLLOUT", "R2")), ("model", ("ROLLBACK", "R2"))]
)
def test_a_violated_guardrail_on_the_chosen_design(tmp_path, evidence, expected):
    data, (sparse, dense) = _study(tmp_path, [("2:4", 2.0, 0.01, evidence), ("dense", 1.0, 0.0, evidence)])
    comp = {
        "best_sparse": {"perf_per_watt": 2.0},
        "best_dense": {"perf_per_watt": 1.0},
        "primary_advantage": 2.0,
    }
    q = {
        "evidence": evidence,
        "reference": "digits-mlp",
        "guardrail_ok": False,
        "guardrail": "violated",
        "quality_delta": 0.005,
        "quality_delta_ci": 0.01,
    }
    verdict, rule, rows, _ = _decide(data, sparse, q, comp)
    assert (verdict, rule) == expected


@pytest.mark.parametrize(
    "q, expected",
    [
        (
            {"guardrail_ok": True, "guardrail": "met", "quality_delta": 0.0, "quality_delta_ci": 0.001},
            ("BOUNDED ROLLOUT", "R4"),
        ),  # evidence of unknown kind: missing
        (
            {"evidence": "model", "quality_delta": 0.0, "quality_delta_ci": 0.001},
            ("BOUNDED ROLLOUT", "R4"),
        ),  # no verdict
        (
            {"evidence": "team", "guardrail_ok": True, "quality_delta": 0.0, "quality_delta_ci": 0.001},
            ("BOUNDED ROLLOUT", "R4"),
        ),
        (None, ("BOUNDED ROLLOUT", "R4")),
        (
            {
                "evidence": "model",
                "guardrail_ok": True,
                "guardrail": "met",
                "quality_delta": 0.0,
                "quality_delta_ci": 0.001,
            },
            ("SHIP", "R6"),
        ),  # the team's model, verdict met: SHIP
    ],
)
def test_missing_evidence_fails_closed(tmp_path, q, expected):
    data, (sparse, dense) = _study(tmp_path, [("2:4", 2.0, 0.001, "model"), ("dense", 1.0, 0.0, "model")])
    comp = {
        "best_sparse": {"perf_per_watt": 2.0},
        "best_dense": {"perf_per_watt": 1.0},
        "primary_advantage": 2.0,
    }
    verdict, rule, rows, _ = _decide(data, sparse, q, comp)
    assert (verdict, rule) == expected, rows


def test_owners_read_unlabelled_evidence_as_missing(tmp_path):
    cfg = load_config(proxy_config(tmp_path, '[[workload]]\nname = "resnet50"', limit=0.015))
    status = {
        kind: artifact_frames(
            cfg, None, pd.DataFrame(), {"quality_delta": 0.0, **({"evidence": kind} if kind else {})}, None
        )["model_optimization"][1]
        for kind in ("model", "proxy", None)
    }
    assert status == {"model": "produced", "proxy": "partial", None: "missing"}


def test_proxy_hold_without_a_comparison_reads_the_study_dense_designs(tmp_path):
    data, (sparse, dense) = _study(tmp_path, [("2:4", 2.0, 0.05, "proxy"), ("dense", 1.0, 0.0, "proxy")])
    verdict, rule, rows, _ = _decide(
        data, dense, {"dense": True, "quality_delta": 0.0, "evidence": "proxy"}, None
    )
    assert (verdict, rule) == ("BOUNDED ROLLOUT", "R2") and "ratio 2" in rows["R2"][2]
    data, (sparse, dense) = _study(tmp_path, [("2:4", 0.5, 0.05, "proxy"), ("dense", 1.0, 0.0, "proxy")])
    verdict, rule, rows, _ = _decide(
        data, dense, {"dense": True, "quality_delta": 0.0, "evidence": "proxy"}, None
    )
    assert (verdict, rule) == ("ROLLBACK", "R3")


def test_the_report_states_the_hold(tmp_path):
    data, (sparse, dense) = _study(tmp_path, [("2:4", 2.0, 0.05, "proxy"), ("dense", 1.0, 0.0, "proxy")])
    det = SimpleNamespace(point=dense["params"], metrics=dense["metrics"])
    q = {"dense": True, "quality_delta": 0.0, "quality_delta_ci": 0.0, "evidence": "proxy"}
    sec, key = section_decision(data, det, q, {"best_sparse": None, "best_dense": {"perf_per_watt": 1.0}})
    assert key == {"verdict": "BOUNDED ROLLOUT", "rule": "R2", "reason": HOLD_REASON}
    assert any(HOLD_REASON in p for p in sec.paras) and "BOUNDED ROLLOUT (rule R2)" in sec.verdict
