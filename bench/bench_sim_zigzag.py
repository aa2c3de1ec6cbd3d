"""ZigZag 3.x's tpu_like vs the sparsepe cycle model, single- and double-buffered, on WS GEMMs.

Needs ZigZag in its own venv:
    python -m venv /tmp/zz && /tmp/zz/bin/pip install zigzag-dse six
    SPARSEPE_ZIGZAG_PYTHON=/tmp/zz/bin/python python bench/bench_sim_zigzag.py [--sizes 32 128]

ZigZag runs its stock ``inputs/hardware/tpu_like.yaml`` (the operational array resized for other
sizes) with the tpu_like spatial mapping (D1: K, D2: C), a Gemm layer O[b][k] += I[b][c] * W[c][k]
(B = M rows, C = K, K = N), 8-bit operands, opt=latency, and reports its latency as computation +
data onloading + offloading. The model runs the same GEMM on the same array of scalar dense PEs
(``pe_k=1``) with no DRAM or SRAM bound (its compute), single-buffered (SCALE-Sim's folds) and
double-buffered (sim.perf's docstring). Measured with zigzag-dse 3.9.1, 512x1024x1024: 32 x 32
computation 524,288 (its ideal: no stall), onloading 65,536, offloading 64, 589,888 in all; the model
620,544 single- and 524,383 double-buffered. 128 x 128: ZigZag's computation 65,534 (its ideal 32,768,
bound by the tpu_like SRAM ports), the model 57,216 and 33,151.
"""

from __future__ import annotations

import argparse
import json
import os
import subprocess
import sys
import tempfile
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))

from sim.perf import ArrayConfig, simulate  # noqa: E402
from sim.workloads import Workload, make_layer  # noqa: E402

RUNNER = r"""
import sys, json, logging
from pathlib import Path
import yaml, zigzag
from zigzag.api import get_hardware_performance_zigzag
logging.disable(logging.CRITICAL)
size, M, K, N, work = int(sys.argv[1]), int(sys.argv[2]), int(sys.argv[3]), int(sys.argv[4]), Path(sys.argv[5])
hw = (Path(zigzag.__file__).parent / "inputs/hardware/tpu_like.yaml").read_text()
(work / "acc.yaml").write_text(hw.replace("sizes: [32, 32]", f"sizes: [{size}, {size}]"))
(work / "map.yaml").write_text(yaml.safe_dump([{"name": "default",
    "spatial_mapping": {"D1": [f"K, {size}"], "D2": [f"C, {size}"]},
    "memory_operand_links": {"O": "O", "W": "I2", "I": "I1"}}]))
(work / "wl.yaml").write_text(yaml.safe_dump([{"id": 0, "name": "gemm", "operator_type": "Gemm",
    "equation": "O[b][k]+=I[b][c]*W[c][k]", "loop_dims": ["B", "C", "K"], "loop_sizes": [M, K, N],
    "operand_precision": {"I": 8, "W": 8, "O": 16, "O_final": 8}, "operand_source": {"I": 0}}]))
_, latency, _ = get_hardware_performance_zigzag(
    str(work / "wl.yaml"), str(work / "acc.yaml"), str(work / "map.yaml"),
    opt="latency", dump_folder=str(work / "out"), loma_show_progress_bar=False)
lat = json.loads((work / "out/gemm_complete.json").read_text())["outputs"]["latency"]
print(json.dumps({"latency": latency, **lat}))
"""


def model(size: int, M: int, K: int, N: int, double_buffer: bool) -> int:
    w = Workload("gemm", (make_layer("gemm", "gemm", M, N, K),))
    arch = ArrayConfig(
        rows=size,
        cols=size,
        sparse=False,
        pe_k=1,
        dram_gbps=1e6,
        sram_port_bytes=None,
        double_buffer=double_buffer,
    )
    return int(simulate(w, arch).layers["cycles"][0]) + 1


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--sizes", type=int, nargs="+", default=[32, 128])
    ap.add_argument("--gemm", type=int, nargs=3, default=[512, 1024, 1024], metavar=("M", "K", "N"))
    a = ap.parse_args()
    py = os.environ.get("SPARSEPE_ZIGZAG_PYTHON")
    if not py:
        sys.exit("set SPARSEPE_ZIGZAG_PYTHON to the python of a venv with zigzag-dse installed")
    M, K, N = a.gemm
    print(
        f"{'array':>9} {'zigzag total':>13} {'computation':>12} {'onload':>8} {'offload':>8} "
        f"{'model single':>13} {'model double':>13} {'double/comp':>12}"
    )
    for size in a.sizes:
        with tempfile.TemporaryDirectory() as work:
            out = subprocess.run(
                [py, "-c", RUNNER, str(size), str(M), str(K), str(N), work],
                check=True,
                capture_output=True,
                text=True,
            ).stdout
        z = json.loads(out.strip().splitlines()[-1])
        single, double = model(size, M, K, N, False), model(size, M, K, N, True)
        print(
            f"{size:>4}x{size:<4} {z['latency']:>13,.0f} {z['computation']:>12,.0f} {z['data_onloading']:>8,.0f} "
            f"{z['data_offloading']:>8,.0f} {single:>13,} {double:>13,} {double / z['computation']:>12.4f}"
        )


if __name__ == "__main__":
    main()
