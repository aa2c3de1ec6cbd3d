"""SRAM model vs the CACTI 7 runs (every in-range point, model="cacti") and the Horowitz / Jouppi
per-access figures (the default, model="silicon": fitted on 8 KB and 1 MB, 32 KB held out), with
the conflict between the two sources.

Run: python bench/bench_ppa_sram.py   (reads /work/shared/reference/cacti7/summary.txt when present)
"""

from pathlib import Path

from ppa import sram

REF = Path("/work/shared/reference/cacti7/summary.txt")


def main() -> None:
    pts = sram.CACTI7_POINTS
    if REF.exists():
        rows = [line.split() for line in REF.read_text().splitlines()[1:] if line.strip()]
        pts = [[float(x) * (1000 if i == 0 else 1) for i, x in enumerate(r[:8])] for r in rows]
        print(f"reference: {REF}")
    worst = 0.0
    print(f"{'node':>4} {'KB':>5} " + " ".join(f"{m:>11}" for m in sram.METRICS))
    for p in pts:
        c = sram.sram(float(p[1]), int(round(p[0])), model="cacti")
        model = [c.access_ns, c.cycle_ns, c.read_pj, c.write_pj, c.leakage_mw, c.area_mm2]
        ratios = [m / r for m, r in zip(model, p[2:8], strict=True)]
        worst = max(worst, max(abs(x - 1) for x in ratios))
        print(f"{int(round(p[0])):4d} {int(p[1]):5d} " + " ".join(f"{x:11.3f}" for x in ratios))
    print(f"worst deviation from CACTI 7: {worst * 100:.1f} % (target <= 10 %)")
    print("64-bit read energy, silicon-derived default (fit points 8 KB and 1 MB; 32 KB held out) and CACTI:")
    for nm, v, table, who in (
        (45, 0.9, sram.HOROWITZ_64B_PJ, "Horowitz"),
        (7, 0.7, sram.JOUPPI_7NM_64B_PJ, "Jouppi"),
    ):
        for kb, ref in table.items():
            si = sram.sram(kb, nm, word_bits=64, voltage_v=v).read_pj
            ca = sram.sram(kb, nm, word_bits=64, voltage_v=v, model="cacti").read_pj
            tag = "held out" if kb not in sram.SILICON_FIT_KB else "fit"
            print(
                f"  {nm:2d} nm {kb:5d} KB: {who} {ref:6.1f} pJ; silicon model {si:6.2f} ({si / ref:.2f}x, {tag}); "
                f"CACTI {ca:6.2f} ({ca / ref:.2f}x)"
            )


if __name__ == "__main__":
    main()
