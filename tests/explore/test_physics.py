"""Physics of the search with the real evaluator (sim/ cycle model + ppa/ costs): the memory-stall
and thermal limits bind where they should. The clock range (50-800 MHz) brackets the 7 nm pipeline-1
32 x 32 array's fmax (about 700 MHz at the ASAP7-anchored FO4).

References are independent of explore/: the memory-bound knee is the roofline clock
f_knee = compute_cycles x bandwidth / DRAM bytes (from one sim.perf run at any clock; compute
cycles and bytes do not depend on the clock), and the junction temperatures are checked against
the limit directly.
"""

from __future__ import annotations

import json
import tomllib

import numpy as np
import pytest

from explore.config import parse_config
from explore.grid import evaluate_grid, grid_optimum
from explore.runner import export_study, run_grid
from explore.storage import resolve_storage
from explore.study import SweepOptions, run_study

BASE = """
[study]
name = "phys"
seed = 0
[space]
rows = [32]
cols = [32]
sram_kb = [256]
clock_mhz = { min = 50, max = 800, step = 25 }
node_nm = [7]
sparsity = ["2:4"]
pipeline = [1]
dataflow = ["ws"]
dram_gbps = [400.0]
[fixed]
ambient_c = 45.0
cooling = "air"
dram_type = "lpddr5"
vt = "rvt"
[[workload]]
name = "bert-base"
params = { seq = 64, batch = 1 }
[limits]
[objectives]
primary = "perf_per_watt"
"""
STEP = 25.0
CLOCK_MIN, CLOCK_MAX = (
    50.0,
    800.0,
)  # the 7 nm pipeline-1 32 x 32 array on rvt cells meets timing up to about 700 MHz


def _cfg(gbps: float = 400.0, **limits) -> object:
    d = tomllib.loads(BASE)
    d["space"]["dram_gbps"] = [gbps]
    d["limits"].update(limits)
    return parse_config(d, source="phys.toml")


def _best(cfg):
    cols, metrics, cons = evaluate_grid(cfg)
    i, _ = grid_optimum(cfg, metrics, cons)
    return i, cols, metrics, cons


def _roofline_knee_mhz(gbps: float) -> float:
    from sim.perf import ArrayConfig, simulate
    from sim.workloads import get_workload

    r = simulate(
        get_workload("bert-base", seq=64, batch=1),
        ArrayConfig(rows=32, cols=32, sram_kb=256, clock_mhz=1000.0, dram_gbps=gbps),
    )
    return r.totals["compute_cycles"] * gbps * 1e9 / r.totals["dram_bytes"] / 1e6


@pytest.mark.parametrize("gbps", [10.0, 20.0, 40.0])
def test_low_dram_bandwidth_clocks_beyond_the_knee_are_not_chosen(gbps):
    knee = _roofline_knee_mhz(gbps)
    assert CLOCK_MIN < knee < CLOCK_MAX - STEP  # the knee lies inside the clock range
    i, cols, metrics, _ = _best(_cfg(gbps))
    best_clock = float(cols["clock_mhz"][i])
    assert best_clock <= knee + STEP, (best_clock, knee)
    # and nothing beyond the knee is better: perf/W falls once the array only waits for DRAM
    beyond = cols["clock_mhz"] > knee + STEP
    assert np.all(metrics["perf_per_watt"][beyond] < metrics["perf_per_watt"][i])
    assert np.all(metrics["stall_fraction"][beyond] > 0)


def test_with_ample_bandwidth_the_fastest_clock_wins():
    i, cols, _, cons = _best(_cfg(400.0))
    meets_timing = cons["timing"] <= 0
    assert float(cols["clock_mhz"][meets_timing].max()) < CLOCK_MAX  # the array's fmax lies inside the range
    assert float(cols["clock_mhz"][i]) == float(cols["clock_mhz"][meets_timing].max())


def _tj_limit(cols, m, i0) -> float:
    """A junction limit between the unconstrained best design's temperature and that of the same
    design at about half its clock (which therefore stays feasible)."""
    half = np.argmin(np.abs(cols["clock_mhz"] - cols["clock_mhz"][i0] / 2))
    return 0.5 * (float(m["tj_c"][half]) + float(m["tj_c"][i0]))


def test_tight_junction_limit_lowers_the_clock(tmp_path):
    i0, cols, m0, _ = _best(_cfg(400.0))
    limit = _tj_limit(cols, m0, i0)
    i1, cols1, m1, cons = _best(_cfg(400.0, max_tj_c=limit))
    assert i1 is not None
    assert run_grid(_cfg(400.0, max_tj_c=limit), tmp_path / "g")["binding_limits"] == ["tj_c"]
    assert float(cols1["clock_mhz"][i1]) < float(cols["clock_mhz"][i0])
    assert float(m1["voltage_v"][i1]) <= float(m0["voltage_v"][i0])
    assert float(m1["tj_c"][i1]) <= limit
    # the limit binds: the next faster clock is over it
    faster = cols1["clock_mhz"] == cols1["clock_mhz"][i1] + STEP
    assert np.all(m1["tj_c"][faster] > limit) and np.all(cons["tj_c"][faster] > 0)


def test_tj_limit_binds_in_the_search_and_is_named(tmp_path):
    i0, cols0, m0, _ = _best(_cfg(400.0))
    limit = _tj_limit(cols0, m0, i0)
    cfg_text = BASE.replace("[limits]", f"[limits]\nmax_tj_c = {limit!r}")
    p = tmp_path / "phys.toml"
    p.write_text(cfg_text)
    from explore.config import load_config

    cfg = load_config(p)
    opts = SweepOptions(
        config_path=str(p),
        storage=resolve_storage(None, tmp_path / "o"),
        study_name="phys",
        trials=25,
        seed=0,
        sampler="tpe",
        progress=False,
    )
    best = export_study(run_study(opts, cfg), cfg, tmp_path / "o")
    i1, cols1, m1, _ = _best(cfg)
    assert best["feasible"]
    assert best["best"]["metrics"]["tj_c"] <= limit
    assert best["tightest_limit"]["name"] == "tj_c"
    assert best["binding_limits"] == ["tj_c"]
    assert best["best"]["params"]["clock_mhz"] == float(cols1["clock_mhz"][i1])  # the grid optimum


def test_stall_limit_no_feasible_design_names_it(tmp_path):
    cfg = _cfg(1.0, max_stall_fraction=0.5)  # knee about 15 MHz: every clock of the range stalls
    best = run_grid(cfg, tmp_path / "g")
    assert best["feasible"] is False
    assert best["binding_limits"] == ["stall_fraction"]
    on_disk = json.loads((tmp_path / "g" / "best.json").read_text())
    assert on_disk["binding_limits"] == ["stall_fraction"]


def test_stall_limit_binds_where_it_should():
    free = _best(_cfg(80.0))
    i0, cols, m0, _ = free
    # a limit below the stall the knee design would need at a faster clock
    lim = 0.05
    i1, cols1, m1, cons = _best(_cfg(80.0, max_stall_fraction=lim))
    assert float(m1["stall_fraction"][i1]) <= lim
    over = m1["stall_fraction"] > lim
    assert np.all(cons["stall_fraction"][over] > 0) and np.all(cons["stall_fraction"][~over] <= 0)
    # the constrained best is the best among the designs that satisfy the limit
    ok = ~over & (cons["timing"] <= 0)
    assert m1["perf_per_watt"][i1] == pytest.approx(np.max(m1["perf_per_watt"][ok]))
