"""The workload-importer registry (sim.importers.registry): a toy format registered in this file alone
loads through the registry and through a sweep config's [[workload]] table; every entry keeps the contract."""

from __future__ import annotations

from collections.abc import Mapping
from pathlib import Path
from typing import Any

import pytest

from explore.config import config_fingerprint, parse_config
from hw.errors import InputError
from sim.asp_rules import WEIGHT_GEMM
from sim.importers.registry import (
    Importer,
    config_importers,
    importer_for_field,
    importer_for_suffix,
    importers,
    register_importer,
    registered,
)
from sim.layers import Workload, make_layer


def _load_gemms(path: str | Path, params: Mapping[str, Any], options: Mapping[str, Any]) -> Workload:
    """A made-up format: one ``M K N`` per line; ``params`` may give ``count`` (repeats of each GEMM)."""
    p = Path(path)
    layers = []
    for i, line in enumerate(p.read_text().split("\n"), start=1):
        if line.strip():
            m, k, n = (int(x) for x in line.split())
            layers.append(make_layer(f"gemm{i}", WEIGHT_GEMM, m, n, k, count=params.get("count", 1)))
    return Workload(p.stem, tuple(layers))


GEMMS = Importer(
    "gemms", (".gemms",), "--gemms", "gemms", _load_gemms, "M K N per line (a test format)", params=("count",)
)

BASE = {
    "space": {
        "rows": [16],
        "cols": [16],
        "sram_kb": [256],
        "clock_mhz": [500],
        "node_nm": [16],
        "sparsity": ["2:4"],
        "pipeline": [1],
        "dataflow": ["ws"],
        "dram_gbps": [100.0],
    },
    "fixed": {"dram_type": "lpddr5"},
    "limits": {},
}


@pytest.fixture
def gemms_file(tmp_path: Path) -> Path:
    f = tmp_path / "toy.gemms"
    f.write_text("64 128 256\n8 16 32\n")
    return f


def test_toy_importer_loads_through_the_registry(gemms_file: Path) -> None:
    with registered(GEMMS):
        imp = importer_for_suffix(gemms_file)
        assert imp is GEMMS and importer_for_field("gemms") is GEMMS
        wl = imp.load_checked(gemms_file, {"count": 3}, {})
        assert [(layer.M, layer.K, layer.N, layer.count) for layer in wl.layers] == [
            (64, 128, 256, 3),
            (8, 16, 32, 3),
        ]
        with pytest.raises(InputError, match=r"unknown params \['seq'\] for a gemms workload \(count\)"):
            imp.load_checked(gemms_file, {"seq": 1}, {})
    assert importer_for_suffix(gemms_file) is None and GEMMS not in importers()


def test_toy_importer_loads_through_the_sweep_config(gemms_file: Path) -> None:
    data = {**BASE, "workload": [{"gemms": gemms_file.name, "params": {"count": 2}}]}
    with pytest.raises(InputError, match="workload\\[0\\].gemms: unknown key"):
        parse_config(data, source=str(gemms_file.parent / "sweep.toml"))
    with registered(GEMMS):
        cfg = parse_config(data, source=str(gemms_file.parent / "sweep.toml"))
        w = cfg.workload[0]
        assert w.name == "toy" and w.option("gemms") == str(gemms_file)  # relative to the config file
        assert [layer.M * layer.count for layer in w.build().layers] == [128, 16]
        assert cfg.model_dump(mode="json")["workload"][0]["gemms"] == str(gemms_file)
        again = parse_config(cfg.model_dump(mode="json", exclude={"source"}), source="<memory>")
        assert config_fingerprint(again) == config_fingerprint(cfg)
        with pytest.raises(InputError, match="give one of onnx, hf_config or gemms, not both"):
            parse_config({**BASE, "workload": [{"gemms": "a.gemms", "onnx": "b.onnx"}]})
        with pytest.raises(InputError, match="workload\\[0\\].typo: unknown key"):
            parse_config({**BASE, "workload": [{"gemms": str(gemms_file), "typo": 1}]})


def test_a_built_in_workload_dumps_as_before() -> None:
    with registered(GEMMS):
        dumped = parse_config({**BASE, "workload": [{"name": "bert-base"}]}).model_dump(mode="json")
    assert "gemms" not in dumped["workload"][0]
    assert parse_config({**BASE, "workload": [{"name": "bert-base"}]}).workload[0].option("gemms") is None


def test_a_clashing_entry_is_refused() -> None:
    with registered(GEMMS), pytest.raises(ValueError, match="field 'onnx' is already 'onnx'"):
        register_importer(Importer("gemms2", (".g2",), None, "onnx", _load_gemms, "clashes"))
    assert "gemms2" not in {imp.name for imp in importers()}


@pytest.mark.parametrize("imp", importers(), ids=lambda imp: imp.name)
def test_every_entry_keeps_the_contract(imp: Importer) -> None:
    assert imp.suffixes or imp.flag, "reachable by a file suffix or a flag"
    assert all(s.startswith(".") and s == s.lower() for s in imp.suffixes)
    assert imp.flag is None or imp.flag.startswith("--")
    assert callable(imp.load) and imp.description.strip()
    fields = [other.field for other in config_importers()]
    assert imp.field is None or fields.count(imp.field) == 1
    assert len({k for k, _ in imp.options}) == len(imp.options)


def test_the_table_names_every_format() -> None:
    assert {imp.name for imp in importers()} >= {"onnx", "hf", "scalesim"}
    assert [imp.field for imp in config_importers()][:2] == ["onnx", "hf_config"]
