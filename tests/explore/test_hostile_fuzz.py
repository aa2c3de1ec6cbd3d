"""Fuzz (hypothesis) of the one-line contract (issue 16).

* The config schema: a valid config with one to three values replaced by hostile ones (NaN,
  infinities, huge and negative numbers, wrong types, markup and braces, nested lists, empty
  lists) is either accepted with every value inside its stated domain, or refused with one
  InputError line that starts with the config file's name.
* The ``simulate`` command line: generated flag values either give exit 0 and standard JSON, or
  exit 2 with exactly one stderr line ``sparsepe: error: ...`` and no traceback.

Both run in this process and stay within a few seconds (limited examples, no deadline).
"""

from __future__ import annotations

import copy
import json
import math
import tomllib

import pytest
from hypothesis import HealthCheck, given, settings, strategies as st

from explore import config as C, space as S
from explore.cli import main
from hw.errors import InputError
from tests.explore.conftest import SMALL_CONFIG

BASE = tomllib.loads(SMALL_CONFIG.replace("{workload}", "bert-base"))

# (section, key) paths of the base config that the fuzzer replaces; [[workload]] is index 0
PATHS = [
    ("study", "name"),
    ("study", "seed"),
    ("study", "trials"),
    ("study", "sampler"),
    *[("space", k) for k in BASE["space"]],
    ("fixed", "ambient_c"),
    ("fixed", "theta_ja_c_per_w"),
    ("fixed", "dram_units"),
    ("fixed", "act_bits"),
    ("fixed", "acc_bits"),
    ("fixed", "sram_banks"),
    ("workload", "weight"),
    ("workload", "params"),
    ("workload", "name"),
    *[("limits", k) for k in BASE["limits"]],
    ("serving", "n_requests"),
    ("serving", "timeout_ms"),
    ("serving", "max_batch"),
]

SCALARS = st.one_of(
    st.sampled_from(
        [
            float("nan"),
            float("inf"),
            -float("inf"),
            0,
            -1,
            0.0,
            1e-300,
            1e300,
            2**63,
            -(2**63),
            10**30,
            True,
            False,
            "",
            "[/]",
            "{x}",
            "../..",
            "2:4",
            "0:0",
            "1:1048576",
            "dense",
            "ws",
        ]
    ),
    st.integers(min_value=-(2**70), max_value=2**70),
    st.floats(allow_nan=True, allow_infinity=True),
    st.text(max_size=12),
)
NUMBERS = st.one_of(
    st.sampled_from(
        [float("nan"), float("inf"), -float("inf"), 0, -1, 1e-300, 1e300, 2**63, 10**30, 0.3, 1000]
    ),
    st.integers(min_value=-(2**70), max_value=2**70),
    st.floats(allow_nan=True, allow_infinity=True),
)
VALUES = st.one_of(
    NUMBERS,
    NUMBERS.map(lambda v: [8, v]),
    SCALARS,
    st.lists(SCALARS, max_size=4),
    st.dictionaries(
        st.sampled_from(["min", "max", "step", "log", "grid_points", "seq", "batch", "lpddr5", "x"]),
        SCALARS,
        max_size=4,
    ),
    st.integers(min_value=1, max_value=400).map(lambda d: "[" * d + "]" * d).map(lambda s: s),  # nesting text
    st.integers(min_value=50, max_value=2000).map(lambda d: _nested(d)),
)


def _nested(depth: int):
    v: list = []
    for _ in range(depth):
        v = [v]
    return v


def _within_domains(cfg: C.SweepConfig) -> None:
    """An accepted config holds every value inside its stated domain."""
    bounds = S.axis_bounds()
    for name in cfg.space.active_axes():
        choices = S.axis_choices(cfg.space, name)
        vals = choices if choices is not None else [cfg.space.axis(name).min, cfg.space.axis(name).max]
        for v in vals:
            if name in bounds:
                lo, hi, _ = bounds[name]
                assert isinstance(v, (int, float)) and math.isfinite(v) and lo <= v <= hi, (name, v)
    f, lim = cfg.fixed, cfg.limits
    assert C.MIN_AMBIENT_C <= f.ambient_c <= C.MAX_AMBIENT_C
    for v in lim.active().values():
        assert math.isfinite(v)
    for w in cfg.workload:
        assert C.MIN_WORKLOAD_WEIGHT <= w.weight <= C.MAX_WORKLOAD_WEIGHT
    assert 0 <= cfg.study.seed <= C.MAX_SEED and 1 <= cfg.study.trials <= C.MAX_TRIALS
    assert cfg.serving.n_requests <= C.MAX_SERVING_REQUESTS


@settings(max_examples=200, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(st.lists(st.tuples(st.sampled_from(PATHS), VALUES), min_size=1, max_size=2))
def test_fuzz_config_schema_one_line(edits):
    data = copy.deepcopy(BASE)
    data.setdefault("serving", {})
    for (section, key), value in edits:
        target = data[section][0] if section == "workload" else data[section]
        target[key] = value
    try:
        cfg = C.parse_config(data, source="fuzz.toml")
    except InputError as exc:
        msg = str(exc)
        assert msg.startswith("fuzz.toml: ") and "\n" not in msg, msg
        return
    _within_domains(cfg)


FLAGS = {
    "--rows": st.one_of(st.integers(-5, 70_000), st.sampled_from(["abc", "1e9", "nan", str(2**70)])),
    "--cols": st.one_of(st.integers(-5, 70_000), st.sampled_from(["x", "0"])),
    "--clock-mhz": st.one_of(
        st.floats(allow_nan=True, allow_infinity=True), st.sampled_from(["1e-300", "1e30"])
    ),
    "--sram-kb": st.one_of(st.floats(allow_nan=True, allow_infinity=True), st.sampled_from(["0", "-1"])),
    "--dram-gbps": st.floats(allow_nan=True, allow_infinity=True),
    "--sparsity": st.sampled_from(
        ["2:4", "1:4", "0:0", "3:4", "1:1048576", "dense", "[/]", "{x}", "2:4+dense", ""]
    ),
    "--dataflow": st.sampled_from(["ws", "os", "is", "xx", "[/]"]),
    "--pipeline": st.integers(-3, 2000),
    "--acc-bits": st.integers(-3, 200),
    "--sram-banks": st.integers(-3, 200),
}


@settings(
    max_examples=60,
    deadline=None,
    suppress_health_check=[HealthCheck.too_slow, HealthCheck.function_scoped_fixture],
)
@given(chosen=st.lists(st.sampled_from(sorted(FLAGS)), min_size=1, max_size=4, unique=True), data=st.data())
def test_fuzz_simulate_cli_one_line(chosen, data, capsys):
    argv = ["simulate", "--workload", "bert-base", "--json"]
    for flag in chosen:
        argv += [flag, str(data.draw(FLAGS[flag]))]
    with pytest.raises(SystemExit) as e:
        main(argv)
    out, err = capsys.readouterr()
    assert "Traceback" not in err, err
    if e.value.code == 0:
        json.loads(out, parse_constant=lambda c: (_ for _ in ()).throw(ValueError(c)))
        return
    lines = [ln for ln in err.splitlines() if ln.strip()]
    assert e.value.code == 2, (argv, err)
    assert len(lines) == 1 and lines[0].startswith("sparsepe: error: "), (argv, err)
