"""Live parity against SCALE-Sim 3.0.0 (slow; skipped unless SPARSEPE_SCALESIM_PYTHON points at a
python with ``scalesim==3.0.0`` installed, e.g. /tmp/scalesim-venv/bin/python)."""

import json
import os
import subprocess
from pathlib import Path

import pytest

from sim.importers import load_scalesim_config, load_scalesim_topology
from sim.perf import simulate

PY = os.environ.get("SPARSEPE_SCALESIM_PYTHON")


def _have_scalesim() -> bool:
    if not PY or not Path(PY).exists():
        return False
    return subprocess.run([PY, "-c", "import scalesim.scale_sim"], capture_output=True).returncode == 0


pytestmark = [
    pytest.mark.slow,
    pytest.mark.skipif(
        not _have_scalesim(),
        reason="SCALE-Sim not available: set SPARSEPE_SCALESIM_PYTHON to a python with scalesim==3.0.0",
    ),
]

RUNNER = r"""
import sys, io, contextlib, tempfile, glob, json
from scalesim.scale_sim import scalesim
cfg, topo, layout = sys.argv[1:4]
out = tempfile.mkdtemp()
with contextlib.redirect_stdout(io.StringIO()):
    scalesim(save_disk_space=True, verbose=False, config=cfg, topology=topo, layout=layout,
             input_type_gemm=True).run_scale(top_path=out)
rows = [l.split(",") for l in open(glob.glob(out + "/*/COMPUTE_REPORT.csv")[0]).read().splitlines()[1:] if l.strip()]
print(json.dumps([int(r[2]) for r in rows]))
"""

LAYOUT = (
    "Layer name, IFMAP Height Intraline Factor, IFMAP Width Intraline Factor, Filter Height Intraline Factor, "
    "Filter Width Intraline Factor, Channel Intraline Factor, Num Filter Intraline Factor, IFMAP Height Intraline "
    "Order, IFMAP Width Intraline Order, Channel Intraline Order, IFMAP Height Interline Order, IFMAP Width "
    "Interline Order, Channel Interline Order, Num Filter Intraline Order, Channel Intraline Order, Filter Height "
    "Intraline Order, Filter Width Intraline Order, Num Filter Interline Order, Channel Interline Order, Filter "
    "Height Interline Order, Filter Width Interline Order, \n"
    "Inc5b_3x3, 2, 2, 1, 1, 16, 4,     0, 1, 2,     4, 5, 3,     3, 2, 1, 0,     4, 5, 6, 7,\n"
)


@pytest.mark.parametrize("df,sparse", [("ws", "false"), ("os", "false"), ("is", "false"), ("ws", "true")])
def test_live_gemm_parity(tmp_path, df, sparse):
    topo = tmp_path / "t.csv"
    topo.write_text("Layer Name, M, N, K, Sparsity,\nA, 40, 24, 52, 2:4,\nB, 17, 33, 20, 2:4,\n")
    cfg = tmp_path / "c.cfg"
    cfg.write_text(
        f"[general]\nrun_name = t\n[architecture_presets]\nArrayHeight: 8\nArrayWidth: 16\n"
        "IfmapSramSzkB: 64\nFilterSramSzkB: 64\nOfmapSramSzkB: 64\nIfmapOffset: 0\nFilterOffset: 10000000\n"
        f"OfmapOffset: 20000000\nBandwidth : 10\nDataflow : {df}\nMemoryBanks: 1\nReadRequestBuffer: 32\n"
        "WriteRequestBuffer: 32\n[layout]\nIfmapCustomLayout: False\nIfmapSRAMBankBandwidth: 10\n"
        "IfmapSRAMBankNum: 1\nIfmapSRAMBankPort: 2\nFilterCustomLayout: False\nFilterSRAMBankBandwidth: 10\n"
        f"FilterSRAMBankNum: 1\nFilterSRAMBankPort: 2\n[sparsity]\nSparsitySupport : {sparse}\n"
        f"SparseRep : ellpack_block\nOptimizedMapping : {sparse}\nBlockSize : 4\n"
        "RandomNumberGeneratorSeed : 40\n[run_presets]\nInterfaceBandwidth: CALC\nUseRamulatorTrace: False\n"
    )
    layout = tmp_path / "layout.csv"
    layout.write_text(LAYOUT)
    p = subprocess.run(
        [PY, "-c", RUNNER, str(cfg), str(topo), str(layout)],
        capture_output=True,
        text=True,
        cwd=tmp_path,
        timeout=600,
    )
    assert p.returncode == 0, p.stderr[-2000:]
    ref = json.loads(p.stdout.strip().splitlines()[-1])
    wl = load_scalesim_topology(topo)
    res = simulate(wl, load_scalesim_config(cfg).to_array_config())
    assert res.layers["cycles"].tolist() == ref
