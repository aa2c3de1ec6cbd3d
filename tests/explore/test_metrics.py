"""explore.metrics: every row of the table is a metric the tool really computes and can print, and
any objective of the table can be a study's primary objective."""

from __future__ import annotations

import json
import math
import tomllib
from pathlib import Path
from typing import Any

import pytest

from explore.config import parse_config
from explore.evaluator import LLM_SERVING_METRICS, SERVING_METRICS
from explore.metrics import BY_NAME, DIRECTIONS, LLM_SERVING, METRICS, OBJECTIVES, SOURCES, VIEWS, Metric
from explore.results import DEFAULT_EVALUATOR, Evaluator
from explore.trials import study_records
from explore.twins import TWIN_METRICS
from hw.errors import InputError
from tests.explore.conftest import FIXED, ONE_POINT, SMALL_CONFIG

#: The design the contract test evaluates: ONE_POINT's 2:4 PE, with the limits that make the
#: evaluator produce the quality and serving metrics (a short serving run: 100 requests, one seed).
POINT = {k: v[0] for k, v in ONE_POINT.items()}
CONTRACT_CONFIG = {
    "study": {"name": "metrics"},
    "space": ONE_POINT,
    "fixed": FIXED,
    "workload": [{"name": "bert-base", "weight": 1.0, "params": {"seq": 128, "batch": 1}}],
    "limits": {
        "max_area_mm2": 20.0,
        "max_quality_delta": 0.1,
        "p99_latency_ms": 1000.0,
        "request_rate_hz": 10.0,
    },
    "serving": {"n_requests": 100, "seeds": 1},
}


@pytest.fixture(scope="module")
def produced() -> dict[str, Any]:
    """What the evaluator gives for POINT: its metrics, and the totals of its per-layer detail."""
    ev = Evaluator(DEFAULT_EVALUATOR, parse_config(CONTRACT_CONFIG))
    det = ev.detail(POINT)
    return {"metrics": det.metrics, "totals": det.networks[0][2].totals}


@pytest.mark.parametrize("row", METRICS, ids=[m.name for m in METRICS])
def test_row_is_well_formed_and_produced(row: Metric, produced: dict[str, Any]) -> None:
    assert row.direction in DIRECTIONS and row.source in SOURCES
    assert row.unit == row.unit.strip() and 1 <= row.digits <= 17 and row.label.strip()
    assert any(row.name in names for names in VIEWS.values()), f"{row.name} is in no view"
    if row.source == "twins":
        assert row.name in TWIN_METRICS
        value = 1.25
    elif row.requires == LLM_SERVING:  # produced on an LLM workload only (the contract design runs BERT)
        assert row.name in LLM_SERVING_METRICS
        value = 1.25
    elif row.source == "detail":
        value = float(produced["totals"][row.name])
    else:
        assert row.name in produced["metrics"], f"the evaluator gives no {row.name}"
        value = float(produced["metrics"][row.name])
        if row.source == "serving":
            assert row.name in SERVING_METRICS
    text = row.render(value)
    number = float(text.removesuffix(f" {row.unit}") if row.unit else text)
    assert math.isfinite(number) and math.isclose(number, value, rel_tol=10 ** (1 - row.digits))


def test_objectives_are_the_objective_rows() -> None:
    assert OBJECTIVES == {m.name: m.direction for m in METRICS if m.objective}
    assert list(OBJECTIVES)[0] == "perf_per_watt" and BY_NAME["perf_per_watt"].direction == "maximize"


def test_unknown_primary_objective_names_the_known_ones() -> None:
    text = SMALL_CONFIG.replace("{workload}", "bert-base").replace(
        'primary = "perf_per_watt"', 'primary = "speed"'
    )
    with pytest.raises(
        InputError,
        match=r"objectives.primary: unknown primary objective 'speed' \(known: "
        r"perf_per_watt, effective_tops",
    ):
        parse_config(tomllib.loads(text))


@pytest.mark.parametrize("primary", ["latency_ms", "effective_tops"])
def test_sweep_with_another_primary_objective_picks_its_best(
    primary: str, small_config, run_sweep, tmp_path: Path
) -> None:
    text = SMALL_CONFIG.replace("{workload}", "bert-base").replace(
        'primary = "perf_per_watt"', f'primary = "{primary}"'
    )
    cfg_path = small_config(text=text)
    study, best = run_sweep(cfg_path, tmp_path / "out", trials=10, seed=1)
    stored = json.loads((tmp_path / "out" / "best.json").read_text())
    assert stored["objectives"] == {primary: OBJECTIVES[primary]}
    records = study_records(study, parse_config(tomllib.loads(text)))
    feasible = [r for r in records if all(v <= 0 for v in r["constraints"].values())]
    assert feasible and best["feasible"]
    values = [float(r["metrics"][primary]) for r in feasible]
    target = max(values) if OBJECTIVES[primary] == "maximize" else min(values)
    assert float(best["best"]["metrics"][primary]) == target
    # the comparison's headline objective is the primary one
    per = stored["comparison"]["per_objective"][0]
    assert per["objective"] == primary and per["direction"] == OBJECTIVES[primary]
