"""The shipped example configs: one per built-in workload family plus the small default."""

from __future__ import annotations

from pathlib import Path

import pytest

from explore.config import grid_size, load_config

EXAMPLES = Path(__file__).resolve().parents[2] / "examples"
FAMILIES = {"bert": "bert", "resnet50": "resnet50", "gpt2": "gpt2", "llama": "llama"}


def test_one_example_per_workload_family_plus_default():
    names = {p.stem for p in EXAMPLES.glob("*.toml")}
    assert {"default", *FAMILIES} <= names


@pytest.mark.parametrize("name", ["default", *FAMILIES])
def test_example_loads_and_names_its_family(name):
    cfg = load_config(EXAMPLES / f"{name}.toml")
    assert cfg.objectives.primary == "perf_per_watt"
    if name in FAMILIES:
        assert all(w.name.startswith(FAMILIES[name]) for w in cfg.workload)


def test_default_example_is_small_enough_for_grid_mode_and_evaluates():
    import explore.evaluator as ev

    cfg = load_config(EXAMPLES / "default.toml")
    assert grid_size(cfg) == 4 * 4 * 4 * 10 * 2 * 2 * 3 * 2 * 2
    m = ev.evaluate(
        {
            "rows": 16,
            "cols": 16,
            "sram_kb": 256,
            "clock_mhz": 800.0,
            "node_nm": 7,
            "sparsity": "2:4",
            "pipeline": 1,
            "dataflow": "ws",
            "dram": "lpddr5",
        },
        ev.make_context(cfg),
    )
    assert 0 <= m["stall_fraction"] < 1
    for k in ("perf_per_watt", "effective_tops", "power_w", "area_mm2", "tj_c", "fmax_mhz"):
        assert m[k] > 0, k
    # dense-equivalent ops per joule: perf/W = effective TOPS / average power
    assert m["perf_per_watt"] == pytest.approx(m["effective_tops"] / m["power_w"], rel=1e-9)
    assert m["dram_gbps"] == pytest.approx(4 * 12.8)  # 4 LPDDR5 x16 channels (ppa.dram)
    # BERT: the quality limit binds on the transformer reference, labelled proxy, on its interval
    assert m["quality_evidence"] == "proxy"
    assert m["quality_delta_ci"] >= m["quality_delta"]
    ctx = ev.make_context(cfg)
    assert ctx.quality_evidence[(2, 4)]["reference"] == "char-transformer"
