"""The review packet (issue 15): owners and closure artifacts, the review memo, `sparsepe diff`.

Small real sweeps (explore.study with the product evaluator) on one-design or two-design spaces,
so each runs in seconds with the synthesis cache; each test writes into its own tmp_path. The
findings, the memo's proposed action and the diff's first diverging layer are checked against
independent computations (trials.csv, explore.evaluator.evaluate, sim.perf.simulate).
"""

from __future__ import annotations

import csv
import json
import re
from pathlib import Path

import pytest

from explore.storage import resolve_storage
from tests.explore.conftest import fixed_toml, space_toml

ONE = """\
[study]
name = "one"
seed = 1
trials = {trials}

{space}{fixed}
[[workload]]
name = "bert-base"
params = {{ seq = 64 }}

[limits]
max_stall_fraction = 0.3
max_tj_c = 85.0
max_area_mm2 = 20.0
{extra}
"""

REVIEW_EXTRA = """\
max_quality_delta = 0.10
p99_latency_ms = 60.0
request_rate_hz = 20.0

[serving]
max_batch = 2
n_requests = 300
seeds = 3

[owners]
model_optimization = "Ada (ML)"
serving_performance = "Grace (SRE)"

[context]
model_revision = "bert-base@r7"
power_mode = "MAXN"
"""


def _write(path: Path, *, trials=2, clock=None, units=4, extra="") -> Path:
    path.write_text(
        ONE.format(
            trials=trials,
            space=space_toml(sparsity=["2:4"], clock_mhz=clock or [400]),
            fixed=fixed_toml(dram_units={"lpddr5": units}),
            extra=extra,
        )
    )
    return path


def _sweep(run_sweep, cfg: Path, out: Path, study="s", seed=1, trials=2) -> Path:
    run_sweep(cfg, out, trials=trials, seed=seed, study=study)
    return Path(resolve_storage(None, out).url)


@pytest.fixture(scope="module")
def review_study(tmp_path_factory, run_sweep):
    d = tmp_path_factory.mktemp("review")
    cfg = _write(d / "review.toml", trials=3, clock=[300, 600], units=1, extra=REVIEW_EXTRA)
    out = d / "run"
    journal = _sweep(run_sweep, cfg, out, study="review", trials=3)
    return cfg, out, journal


# ---- owners ----------------------------------------------------------------------------------------


def _all_findings(owners: dict) -> list[dict]:
    return [f for role, v in owners.items() if role != "rules" for f in v["findings"]]


def _check_one_owner_each(owners: dict, cfg_owners: dict[str, str]) -> list[dict]:
    from explore.config import OWNER_ROLES

    assert set(owners) == {"rules", *OWNER_ROLES}
    found = _all_findings(owners)
    ids = [f["id"] for f in found]
    assert len(ids) == len(set(ids)), "a finding listed under two owners"
    for role in OWNER_ROLES:
        v = owners[role]
        assert v["name"] == cfg_owners.get(role, v["title"])
        assert all(f["owner"] == role for f in v["findings"])
        assert v["artifact"]["status"] in ("produced", "partial", "missing") and v["artifact"]["owed"]
        assert v["artifact"]["why"]
    return found


def test_every_finding_has_exactly_one_owner_and_artifacts_exist(review_study):
    cfg, out, _ = review_study
    best = json.loads((out / "best.json").read_text())
    owners = best["owners"]
    found = _check_one_owner_each(
        owners, {"model_optimization": "Ada (ML)", "serving_performance": "Grace (SRE)"}
    )
    # every limit that fails in some trial (independently, from trials.csv) is a finding of its owner
    with open(out / "trials.csv") as f:
        rows = list(csv.DictReader(f))
    failing = {k[2:] for r in rows for k, v in r.items() if k.startswith("c_") and v != "" and float(v) > 0}
    limits = {f["subject"]: f for f in found if f["kind"] == "limit"}
    assert failing and failing <= set(limits)
    expect_role = {"p99_latency_ms": "serving_performance", "quality_delta": "model_optimization"}
    for c in failing:
        assert limits[c]["owner"] == expect_role.get(c, "accelerator_architecture")
    # the quality gate and the dense-fallback families (the attention products of every block)
    assert [f["owner"] for f in found if f["kind"] == "quality_gate"] == ["model_optimization"]
    fams = {f["subject"] for f in found if f["kind"] == "fallback"}
    assert {"bert-base: attn_scores", "bert-base: attn_context"} <= fams
    assert all(f["owner"] == "compiler_sparsity" for f in found if f["kind"] == "fallback")
    assert (
        sum(f["kind"] == "bottleneck" and f["text"].split(" (")[1].startswith("dominant") for f in found) == 1
    )
    # artifacts: a produced or partial one names a file that exists and holds its evidence
    for role in (
        "model_optimization",
        "accelerator_architecture",
        "compiler_sparsity",
        "serving_performance",
    ):
        art = owners[role]["artifact"]
        assert art["status"] != "missing", (role, art)
        p = out / art["file"]
        assert p.is_file() and p.stat().st_size > 0
    assert owners["model_optimization"]["artifact"]["status"] == "partial"  # proxy evidence only
    with open(out / owners["serving_performance"]["artifact"]["file"]) as f:
        srv = list(csv.DictReader(f))
    assert srv[0]["workload"] == "bert-base" and float(srv[0]["p99_ms"]) > 0
    assert srv[0]["seeds"] == "0;1;2" and srv[0]["warmup"] == "30"  # 10 % of 300 requests discarded


def test_owners_without_sla_or_quality_say_which_artifact_is_missing(tmp_path, run_sweep):
    cfg = _write(tmp_path / "plain.toml")
    out = tmp_path / "run"
    _sweep(run_sweep, cfg, out)
    owners = json.loads((out / "best.json").read_text())["owners"]
    _check_one_owner_each(owners, {})
    assert owners["serving_performance"]["artifact"]["status"] == "missing"
    assert "p99_latency_ms" in owners["serving_performance"]["artifact"]["why"]
    assert owners["serving_performance"]["artifact"]["file"] is None
    assert owners["model_optimization"]["artifact"]["status"] == "missing"


def test_bad_owner_name_is_one_line(tmp_path, run_cli):
    cfg = _write(tmp_path / "bad.toml", extra='[owners]\nserving_performance = "  "\n')
    r = run_cli(["sweep", str(cfg), "--trials", "1", "--out", str(tmp_path / "o")])
    assert r.returncode == 2 and r.stderr.count("\n") == 1 and "owners.serving_performance" in r.stderr


# ---- report and memo -------------------------------------------------------------------------------


@pytest.fixture(scope="module")
def review_report(review_study, tmp_path_factory):
    from explore.report.build import write_report

    _, _, journal = review_study
    out = tmp_path_factory.mktemp("rep")
    write_report(str(journal), "review", out, progress=False)
    return out


def test_report_has_memo_owners_and_p99_interval(review_study, review_report):
    md = (review_report / "report.md").read_text()
    html = (review_report / "report.html").read_text()
    key = json.loads((review_report / "report.json").read_text())
    for text in (md, html):
        assert "Review memo" in text and "Owners and closure artifacts" in text
        for part in ("1. Symptom", "2. Mechanism hypothesis", "3. Proposed action", "4. Signoff"):
            assert part in text
    # report.json's owners are best.json's findings (same rules, same study)
    best = json.loads((review_study[1] / "best.json").read_text())
    ids = lambda o: sorted((f["id"], f["owner"]) for f in _all_findings(o))  # noqa: E731
    assert ids(key["owners"]) == ids(best["owners"])
    # the p99 in the validation matrix carries its interval over the arrival seeds
    m = key["metrics"]
    assert m["p99_latency_lo_ms"] < m["p99_latency_ms"] < m["p99_latency_hi_ms"]
    assert re.search(
        r"p99 latency at 20 req/s \(ms\) \| [\d.,]+ \(95 % interval \[[\d.,]+, [\d.,]+\] over 3 arrival "
        r"seeds, first 10 % of each run discarded as warm-up\)",
        md,
    )
    # the closure artifacts the owners section links to are written
    for role in (
        "accelerator_architecture",
        "compiler_sparsity",
        "serving_performance",
        "model_optimization",
    ):
        assert (review_report / "report_files" / f"closure_{role}.csv").is_file()
        assert f'<a href="report_files/closure_{role}.csv">' in html
        assert f"(report_files/closure_{role}.csv)" in md


def test_memo_cli_prints_four_parts_without_placeholders(review_study, run_cli):
    from explore.config import load_config
    from explore.evaluator import evaluate, make_context
    from explore.report.memo_study import memo_of_study

    cfg_path, _, journal = review_study
    r = run_cli(["memo", "--storage", str(journal), "--study", "review"])
    assert r.returncode == 0, r.stderr
    text = r.stdout
    heads = re.findall(r"^## (.*)$", text, flags=re.M)
    assert heads == ["1. Symptom", "2. Mechanism hypothesis", "3. Proposed action", "4. Signoff"]
    # no empty placeholder: no empty table cell, no None / TODO / TBD
    assert not re.search(r"\|[ \t]*\|", text)
    assert not re.search(r"\bNone\b|TODO|TBD|\{\}", text)
    # the tags: versions, config hash, and the user's [context] (supplied ones quoted, others named)
    for tag in ("sparsepe version", "git revision", "Yosys", "OpenSTA", "config hash"):
        assert f"| {tag}" in text
    assert "| [context] model_revision | bert-base@r7 |" in text
    assert "| [context] power_mode | MAXN |" in text
    assert "[context] compiler_version | not supplied" in text
    # missing evidence is named: the proxy quality evidence and the absent runtime tags
    assert "only proxy evidence" in text and "compiler_version, runtime_version" in text
    assert "Ada (ML)" in text and "Grace (SRE)" in text
    # the proposed action was evaluated: its figures are the evaluator's on the changed point
    memo = memo_of_study(str(journal), "review")
    delta = memo["action"]["delta"]
    assert delta and len(delta) == 1
    ((axis, ch),) = delta.items()
    cfg = load_config(cfg_path)
    from explore.report.data import load_study_data

    data = load_study_data(str(journal), "review")
    chosen = data.best.get("best") or data.best["closest"]
    point = {**chosen["params"], axis: ch["to"]}
    m = evaluate(point, make_context(cfg))
    after = {r[0]: r[2] for r in memo["action"]["rows"]}
    from explore.report.format import fmt

    assert after["perf-per-watt (TOPS/W)"] == fmt(m["perf_per_watt"])
    assert after["throughput (effective TOPS)"] == fmt(m["effective_tops"])
    assert after["p99 latency (ms)"] == fmt(m["p99_latency_ms"])
    assert {k for k, _ in memo["action"]["risks"]} == {"correctness", "quality", "thermal", "compatibility"}


# ---- diff ------------------------------------------------------------------------------------------


def test_diff_dram_bandwidth_is_memory_at_the_first_layer_whose_stalls_changed(tmp_path, run_sweep, run_cli):
    from sim.perf import ArrayConfig, simulate
    from sim.workloads import get_workload

    a = _sweep(run_sweep, _write(tmp_path / "a.toml", units=4), tmp_path / "a")
    b = _sweep(run_sweep, _write(tmp_path / "b.toml", units=1), tmp_path / "b")
    r = run_cli(["diff", f"{a}#s", f"{b}#s", "--json"])
    assert r.returncode == 0, r.stderr
    res = json.loads(r.stdout)
    assert res["mechanism"] == "memory" and res["mechanism_rule"] == "D2"
    assert res["config_delta"] == [{"key": "fixed.dram_units.lpddr5", "a": 4, "b": 1}]
    # independently: the same array at 4 and 1 LPDDR5 channels (51.2 and 12.8 GB/s), layer by layer
    wl = get_workload("bert-base", seq=64)
    base = dict(rows=16, cols=16, sram_kb=256, clock_mhz=400, n=2, m=4, sparse=True, dataflow="ws")
    sa, sb = (simulate(wl, ArrayConfig(**base, dram_gbps=g)) for g in (51.2, 12.8))
    first = next(
        i for i in range(len(sa.names)) if sa.layers["stall_cycles"][i] != sb.layers["stall_cycles"][i]
    )
    fd = res["first_divergence"]
    assert fd["layer"] == sa.names[first] and fd["position"] == first and fd["workload"] == sa.workload
    assert fd["moved"]["stall_cycles"]["a"] == int(sa.layers["stall_cycles"][first])
    assert fd["moved"]["stall_cycles"]["b"] == int(sb.layers["stall_cycles"][first])
    assert any(c["metric"] == "stall_fraction" and c["scope"] == "design" for c in res["changes"])
    # the same from the best.json files (per-layer profile from the closure artifact)
    r2 = run_cli(["diff", str(tmp_path / "a" / "best.json"), str(tmp_path / "b" / "best.json"), "--json"])
    res2 = json.loads(r2.stdout)
    assert res2["mechanism"] == "memory" and res2["first_divergence"]["layer"] == sa.names[first]
    assert res2["config_delta"] == res["config_delta"]
    # the table form names the layer and the mechanism
    t = run_cli(["diff", f"{a}#s", f"{b}#s"])
    assert (
        f"first diverging layer: {sa.workload}: {sa.names[first]}" in t.stdout
        and "mechanism: memory" in t.stdout
    )


def test_diff_same_seed_twice_is_no_divergence(tmp_path, run_sweep, run_cli):
    cfg = _write(tmp_path / "c.toml", clock=[300, 600], trials=2)
    a = _sweep(run_sweep, cfg, tmp_path / "a", seed=5)
    b = _sweep(run_sweep, cfg, tmp_path / "b", seed=5)
    res = json.loads(run_cli(["diff", str(a), str(b), "--json", "--threshold", "0%"]).stdout)
    assert res["first_divergence"] == "no divergence" and res["mechanism"] == "no divergence"
    assert res["changes"] == [] and res["config_delta"] == []
    assert res["aligned"]["shared_designs"] >= 1 and res["aligned"]["shared_designs_moved"] == 0


def test_diff_simulate_jsons_of_different_workloads_is_one_line(tmp_path, run_cli):
    for w in ("bert-base", "resnet50"):
        r = run_cli(["simulate", "--workload", w, "--rows", "8", "--cols", "8", "--json"])
        (tmp_path / f"{w}.json").write_text(r.stdout)
    r = run_cli(["diff", str(tmp_path / "bert-base.json"), str(tmp_path / "resnet50.json")])
    assert r.returncode == 2 and r.stdout == ""
    assert r.stderr.count("\n") == 1 and "different workloads" in r.stderr
    r = run_cli(
        ["diff", str(tmp_path / "bert-base.json"), str(tmp_path / "bert-base.json"), "--threshold", "x"]
    )
    assert r.returncode == 2 and "--threshold" in r.stderr and r.stderr.count("\n") == 1


def test_diff_threshold_parsing():
    from explore.diff import parse_threshold
    from hw.errors import InputError

    assert parse_threshold("5%") == pytest.approx(0.05) and parse_threshold("0.1") == pytest.approx(0.1)
    with pytest.raises(InputError):
        parse_threshold("-1%")


# ---- the default example ---------------------------------------------------------------------------


@pytest.mark.slow
def test_default_example_every_finding_has_one_owner(tmp_path, run_sweep):
    """examples/default.toml as shipped (a few trials): best.json and the report agree, and every
    finding has exactly one owner. Slow on a cold synthesis cache (the space's dense twins)."""
    from explore.report.build import write_report

    repo = Path(__file__).resolve().parents[2]
    out = tmp_path / "default"
    _, best = run_sweep(repo / "examples" / "default.toml", out, trials=4, seed=0, study="default")
    found = _check_one_owner_each(best["owners"], {})
    assert found and any(f["kind"] == "quality_gate" for f in found)
    write_report(resolve_storage(None, out).url, "default", out / "report", progress=False)
    key = json.loads((out / "report" / "report.json").read_text())
    assert sorted(f["id"] for f in _all_findings(key["owners"])) == sorted(f["id"] for f in found)


# ---- serving evidence in the evaluator -----------------------------------------------------------


def test_llm_serving_is_prefill_plus_decode_with_ttft_and_tpot():
    """A Llama request in the evaluator: TTFT of a request served alone is its prefill, TPOT one
    decode step at the mean context, end to end prefill + (T - 1) steps (sim.perf, independently)."""
    import explore.evaluator as ev
    from explore.config import parse_config
    from sim.perf import ArrayConfig, simulate
    from sim.workloads import get_workload

    T = 16
    cfg = parse_config(
        {
            "space": {
                "rows": [32],
                "cols": [32],
                "sram_kb": [1024],
                "clock_mhz": [1000],
                "node_nm": [7],
                "sparsity": ["2:4"],
                "pipeline": [1],
                "dataflow": ["ws"],
                "dram": ["hbm3"],
            },
            "fixed": {"dram_units": {"hbm3": 4}, "cooling": "liquid"},
            "workload": [{"name": "llama2-7b-decode", "params": {"seq": 128, "batch": 1}}],
            "limits": {"p99_latency_ms": 1e5, "request_rate_hz": 0.001},
            "serving": {"max_batch": 2, "n_requests": 200, "seeds": 2, "output_tokens": T, "timeout_ms": 0.0},
        }
    )
    ctx = ev.make_context(cfg)
    point = {
        "rows": 32,
        "cols": 32,
        "sram_kb": 1024,
        "clock_mhz": 1000,
        "node_nm": 7,
        "sparsity": "2:4",
        "pipeline": 1,
        "dataflow": "ws",
        "dram": "hbm3",
    }
    m = ev.evaluate(point, ctx)
    arch = ArrayConfig(
        rows=32,
        cols=32,
        sram_kb=1024,
        clock_mhz=1000,
        dram_gbps=ev.dram_gbps_of(cfg, "hbm3"),
        n=2,
        m=4,
        sparse=True,
        dataflow="ws",
    )
    pre = simulate(get_workload("llama2-7b-prefill", seq=128, batch=1), arch).latency_s() * 1e3
    dec = (
        simulate(get_workload("llama2-7b-decode", seq=128, batch=1, context=128 + T // 2), arch).latency_s()
        * 1e3
    )
    (st,) = ev.serving_stats(ctx, ctx.workloads[0], ev.design_columns(cfg, ev.point_columns(point)))
    # at 0.001 req/s almost every request runs alone: the medians are the single-request figures
    assert st.ttft_p50_ms == pytest.approx(pre, rel=1e-9)
    assert st.tpot_p50_ms == pytest.approx(dec, rel=1e-9)
    assert st.runs[0].p50 == pytest.approx(pre + (T - 1) * dec, rel=1e-9)
    assert m["ttft_p99_ms"] == pytest.approx(st.ttft_p99_ms) and m["tpot_p99_ms"] == pytest.approx(
        st.tpot_p99_ms
    )
    assert m["p99_latency_ms"] >= pre + (T - 1) * dec and m["ttft_p99_ms"] < m["p99_latency_ms"]
    assert 0 <= m["p99_latency_lo_ms"] <= m["p99_latency_ms"] <= m["p99_latency_hi_ms"]


def test_grid_mode_best_json_has_owners_and_diffs_with_a_study(tmp_path, run_sweep, run_cli):
    from explore.config import load_config
    from explore.runner import run_grid

    cfg = _write(tmp_path / "g.toml", clock=[300, 600])
    best = run_grid(load_config(cfg), tmp_path / "grid")
    found = _check_one_owner_each(best["owners"], {})
    assert any(f["kind"] == "fallback" for f in found)
    assert (tmp_path / "grid" / best["owners"]["accelerator_architecture"]["artifact"]["file"]).is_file()
    # the grid's chosen design against a search over the same space: same best design, no divergence
    study = _sweep(run_sweep, cfg, tmp_path / "s", trials=2)
    res = json.loads(run_cli(["diff", str(tmp_path / "grid" / "best.json"), f"{study}#s", "--json"]).stdout)
    assert res["aligned"]["chosen_designs_same"] and res["first_divergence"] == "no divergence"


@pytest.mark.parametrize(
    "a_args,b_args,mech,rule",
    [
        (["--rows", "8"], ["--rows", "16"], "compute", "D3"),  # no stalls at 4 TB/s: only compute cycles move
        (["--sparsity", "2:4"], ["--sparsity", "dense"], "precision", "D1"),  # layers leave the sparse path
    ],
)
def test_diff_mechanism_rules_on_simulate_runs(tmp_path, run_cli, a_args, b_args, mech, rule):
    common = ["simulate", "--workload", "bert-base", "--cols", "8", "--dram-gbps", "4000", "--json"]
    for name, extra in (("a", a_args), ("b", b_args)):
        r = run_cli([*common, *extra])
        assert r.returncode == 0, r.stderr
        (tmp_path / f"{name}.json").write_text(r.stdout)
    res = json.loads(run_cli(["diff", str(tmp_path / "a.json"), str(tmp_path / "b.json"), "--json"]).stdout)
    assert (res["mechanism"], res["mechanism_rule"]) == (mech, rule)
    assert res["first_divergence"]["position"] == 0  # every layer moves: the first in execution order
    assert res["config_delta"]
