"""PEParams validation and derived facts; the golden models stay free of Amaranth."""

from __future__ import annotations

import dataclasses
import os
import subprocess
import sys
from pathlib import Path

import pytest

from hw.errors import InputError
from hw.params import PEParams


def test_defaults_and_derived():
    p = PEParams()
    assert (p.act_bits, p.weight_bits, p.acc_bits, p.n, p.m, p.pipeline) == (8, 8, 32, 2, 4, 1)
    assert p.meta_bits == 4 and p.product_bits == 16 and p.latency == 1
    assert PEParams(n=4, m=8).meta_bits == 12 and PEParams(n=1, m=4).meta_bits == 2
    assert PEParams(pipeline=3).latency == 3
    with pytest.raises(dataclasses.FrozenInstanceError):
        p.n = 4  # frozen


@pytest.mark.parametrize(
    "kwargs,where",
    [
        (dict(n=3, m=4), "n:m"),
        (dict(n=2, m=6), "n:m"),
        (dict(n=4, m=4), "n:m"),
        (dict(act_bits=0), "act_bits"),
        (dict(weight_bits=0), "weight_bits"),
        (dict(acc_bits=0), "acc_bits"),
        (dict(acc_bits=15), "acc_bits"),
        (dict(pipeline=0), "pipeline"),
        (dict(act_bits=8.5), "act_bits"),
        (dict(n=True), "n"),
        (dict(acc_bits=65), "acc_bits"),
    ],
)
def test_bad_parameters_raise_input_error(kwargs, where):
    with pytest.raises(InputError) as exc:
        PEParams(**kwargs)
    assert exc.value.where == where


def test_golden_imports_no_amaranth():
    code = "import sys, hw.golden, hw.params; assert not any(m.startswith('amaranth') for m in sys.modules)"
    repo = Path(__file__).resolve().parents[2]
    env = {**os.environ, "PYTHONPATH": str(repo)}
    assert (
        subprocess.run([sys.executable, "-c", code], capture_output=True, cwd=repo, env=env).returncode == 0
    )
