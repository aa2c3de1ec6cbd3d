"""LLM serving, sparse 2:4 against dense, with and without double-buffered weights: TTFT and TPOT
p50/p95/p99 and the decode speedup next to its memory-bound limit, for the Llama-2-7B and Mixtral-8x7B
examples.

    python bench/bench_llm_serving.py [--json] [--sram-port-bytes B]

Each example's workloads (seq, decode batch), [serving] (max_batch, output_tokens), request rate and
DRAM (the fastest type of its space, its [fixed] dram_units stacks) are read from examples/llama.toml
and examples/mixtral.toml; the array is one representative point of their space (stated below), the
same for both sides: the dense design is that array with dense PEs. Each side runs single-buffered
(SCALE-Sim's fold: 2R + C + T - 2 cycles) and double-buffered (a shadow weight set per PE: a fold costs
max(weight load, stream), sim.perf); the double-buffered sparse design is compared with the
double-buffered dense one. A request is its prefill then
output_tokens - 1 decode steps (sim.serving.serve_llm), each decode step timed at the request's mean
context, seq + output_tokens / 2 (as the sweep does). The memory-bound limit of the decode speedup is
dense weight bytes / (sparse weight bytes + metadata bytes) (sim.serving.decode_speedup).
``--sram-port-bytes B``: the bytes per cycle of each SRAM bank's port (default sim.perf's 64; the weights
of a WS fold reach the array through the filter buffer's ports, which bound a decode step at 64 B).
"""

from __future__ import annotations

import json
import os
import sys
import time
import tomllib
from dataclasses import replace
from pathlib import Path

os.environ.setdefault("OMP_NUM_THREADS", "1")
ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT))

from ppa.dram import dram  # noqa: E402
from sim.perf import ArrayConfig  # noqa: E402
from sim.serving import compare_llm_serving, format_llm_serving  # noqa: E402
from sim.workloads import get_workload  # noqa: E402

#: the representative design point [A]: the largest array, SRAM and clock of the llama example's space, WS
POINT = dict(rows=128, cols=128, sram_kb=4096, clock_mhz=2000.0, dataflow="ws", pipeline=1)
#: request rate when the example sets none [A]: mixtral.toml's, a light load at which the dense design's
#: queue is stable too, so the latencies show the designs rather than an overloaded queue
DEFAULT_RATE = 0.05


def example(name: str) -> dict:
    cfg = tomllib.loads((ROOT / "examples" / f"{name}.toml").read_text())
    wl = {w["name"].rsplit("-", 1)[1]: w for w in cfg["workload"]}
    model = cfg["workload"][0]["name"].rsplit("-", 1)[0]
    fast = max(cfg["space"]["dram"], key=lambda t: dram(t).gb_per_s)
    stacks = cfg["fixed"].get("dram_units", {}).get(fast, 1)
    serving = cfg.get("serving", {})
    return dict(
        model=model,
        seq=wl["prefill"]["params"]["seq"],
        dram=fast,
        stacks=stacks,
        gbps=dram(fast).gb_per_s * stacks,
        max_batch=serving.get("max_batch", 8),
        output_tokens=serving.get("output_tokens", 128),
        rate=cfg.get("limits", {}).get("request_rate_hz") or DEFAULT_RATE,
    )


#: the designs compared: label -> (sparse, double_buffer); each sparse one against the dense one with the
#: same weight buffering
DESIGNS = {
    "dense": (False, False),
    "sparse 2:4": (True, False),
    "dense, double-buffered": (False, True),
    "sparse 2:4, double-buffered": (True, True),
}
BASELINES = {"sparse 2:4": "dense", "sparse 2:4, double-buffered": "dense, double-buffered"}


def run(name: str, sram_port_bytes: float | None = None) -> tuple[dict, dict, float]:
    e = example(name)
    arch = ArrayConfig(**POINT, dram_gbps=e["gbps"])
    if sram_port_bytes is not None:
        arch = replace(arch, sram_port_bytes=sram_port_bytes)
    designs = {label: replace(arch, sparse=sp, double_buffer=db) for label, (sp, db) in DESIGNS.items()}
    ctx = e["seq"] + max(1, e["output_tokens"] // 2)
    t0 = time.perf_counter()
    table = compare_llm_serving(
        lambda b: get_workload(f"{e['model']}-prefill", seq=e["seq"], batch=b),
        lambda b: get_workload(f"{e['model']}-decode", seq=e["seq"], batch=b, context=ctx),
        designs,
        e["rate"],
        e["output_tokens"],
        baseline=BASELINES,
        max_batch=e["max_batch"],
    )
    return e, table, time.perf_counter() - t0


def buffering_lines(table: dict) -> list[str]:
    """What double buffering alone gives each side: TTFT and TPOT p50, single -> double-buffered."""
    out = []
    for side in ("dense", "sparse 2:4"):
        s, d = table[side], table[f"{side}, double-buffered"]
        out.append(
            f"double buffering, {side}: TTFT p50 {s['ttft_p50_ms']:.2f} -> {d['ttft_p50_ms']:.2f} ms "
            f"({s['ttft_p50_ms'] / d['ttft_p50_ms']:.3f}x), TPOT p50 {s['tpot_p50_ms']:.3f} -> "
            f"{d['tpot_p50_ms']:.3f} ms ({s['tpot_p50_ms'] / d['tpot_p50_ms']:.3f}x)"
        )
    return out


def main() -> int:
    port = None
    if "--sram-port-bytes" in sys.argv:
        port = float(sys.argv[sys.argv.index("--sram-port-bytes") + 1])
    shown = ArrayConfig().sram_port_bytes if port is None else port
    out = {}
    for name in ("llama", "mixtral"):
        e, table, secs = run(name, port)
        out[name] = {"example": e, "point": {**POINT, "sram_port_bytes": shown}, "table": table}
        if "--json" not in sys.argv:
            print(
                format_llm_serving(
                    f"{e['model']}: prompt {e['seq']} + {e['output_tokens']} tokens, "
                    f"{e['rate']:g} requests/s, batch <= "
                    f"{e['max_batch']}; {POINT['rows']}x{POINT['cols']} WS, {POINT['sram_kb']} KiB, {shown:g} B/cycle "
                    f"SRAM ports, {POINT['clock_mhz']:g} MHz, {e['stacks']} x {e['dram']} ({e['gbps']:.0f} GB/s)  "
                    f"[{secs:.1f} s]",
                    table,
                )
            )
            print("\n".join(buffering_lines(table)))
            print()
    if "--json" in sys.argv:
        print(json.dumps(out, indent=1, allow_nan=False))
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
