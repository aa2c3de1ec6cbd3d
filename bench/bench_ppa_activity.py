"""Gate-level activity speed: bit-parallel netlist simulation vs Amaranth's simulator, same trace.

Run: python bench/bench_ppa_activity.py
"""

import time

from hw.params import PEParams
from ppa import activity


def main() -> None:
    p = PEParams()
    activity.synth_pe(p, True)  # synthesis (cached) outside the timing
    cycles, inst = 64, 16384
    tr = activity.synthetic_trace(p, True, cycles=cycles, instances=inst)
    activity.simulate_pe(p, True, activity.synthetic_trace(p, True, cycles=2, instances=64))
    t = time.perf_counter()
    tc, _, _ = activity.simulate_pe(p, True, tr)
    dt = time.perf_counter() - t
    rate = cycles * inst / dt
    print(
        f"gate level: {cycles} cycles x {inst} PE instances = {cycles * inst} PE-cycles in {dt:.2f} s "
        f"-> {rate / 1e6:.2f} M PE-cycles/s (target >= 1 M); {tc.per_instance_cycle:.1f} toggles/PE-cycle"
    )
    from hw.pe import SparsePE
    from hw.simulate import run_pe

    n = 600  # the same generator and seed, one 600-cycle stream
    tr1 = activity.synthetic_trace(p, True, cycles=n, instances=64)
    t = time.perf_counter()
    run_pe(SparsePE(p), tr1.acts[:, 0], tr1.weights[:, 0], tr1.meta[:, 0], tr1.clear[:, 0].astype(bool))
    dt_am = time.perf_counter() - t
    am_rate = n / dt_am
    print(f"Amaranth simulator: {n} PE-cycles of instance 0 in {dt_am:.2f} s -> {am_rate:.0f} PE-cycles/s")
    print(f"ratio: {rate / am_rate:.0f}x")


if __name__ == "__main__":
    main()
