"""PPA per precision through the same flow: BF16 costs more than INT8 (published: Jouppi 7 nm puts
a BF16 multiply at 3x an INT8 multiply), INT4 less; ``sparsepe ppa --precision`` runs."""

from __future__ import annotations

import json

import pytest

from hw.params import PEParams
from tests.ppa.test_cli_ppa import _run


def test_cli_ppa_rejects_unknown_precision(tmp_path):
    bad = _run(["--precision", "fp64", "--json"], tmp_path)
    assert bad.returncode == 2 and "precision" in bad.stderr and "Traceback" not in bad.stderr


@pytest.mark.slow
@pytest.mark.yosys
def test_pe_transistors_order_by_precision(synth_cache):
    from ppa.activity import synth_pe

    tr = {
        p: synth_pe(PEParams(precision=p), True, cache=synth_cache).transistors
        for p in ("int4", "int8", "bf16")
    }
    assert tr["int4"] < tr["int8"] < tr["bf16"]
    assert 1.5 < tr["bf16"] / tr["int8"] < 10  # the FP multipliers and two binary32 adders


@pytest.mark.slow
@pytest.mark.yosys
@pytest.mark.sta
def test_cli_ppa_precision_int4(synth_cache):
    r = _run(["--precision", "int4", "--rows", "2", "--cols", "2", "--json"], synth_cache.parent)
    assert r.returncode == 0, r.stderr
    d = json.loads(r.stdout)
    assert d["area_breakdown_mm2"]["pe_array"] > 0 and d["energy_per_mac_pj"] > 0
