"""SRAM model vs the CACTI 7 runs (every in-range point) and the Horowitz / Jouppi per-access figures.

Run: python bench/bench_ppa_sram.py   (reads /work/shared/reference/cacti7/summary.txt when present)
"""

from pathlib import Path

from ppa import sram

REF = Path("/work/shared/reference/cacti7/summary.txt")


def main() -> None:
    pts = sram.CACTI7_POINTS
    if REF.exists():
        rows = [l.split() for l in REF.read_text().splitlines()[1:] if l.strip()]
        pts = [[float(x) * (1000 if i == 0 else 1) for i, x in enumerate(r[:8])] for r in rows]
        print(f"reference: {REF}")
    worst = 0.0
    print(f"{'node':>4} {'KB':>5} " + " ".join(f"{m:>11}" for m in sram.METRICS))
    for p in pts:
        c = sram.sram(float(p[1]), int(round(p[0])))
        model = [c.access_ns, c.cycle_ns, c.read_pj, c.write_pj, c.leakage_mw, c.area_mm2]
        ratios = [m / r for m, r in zip(model, p[2:8])]
        worst = max(worst, max(abs(x - 1) for x in ratios))
        print(f"{int(round(p[0])):4d} {int(p[1]):5d} " + " ".join(f"{x:11.3f}" for x in ratios))
    print(f"worst deviation from CACTI 7: {worst * 100:.1f} % (target <= 10 %)")
    print("cross-check, 64-bit access energy (CACTI fit scaled by width from 512 bits):")
    for kb, ref in sram.HOROWITZ_64B_PJ.items():
        c = sram.sram(kb, 45, word_bits=64)
        print(f"  45 nm {kb:5d} KB: model {c.read_pj:6.2f} pJ, Horowitz {ref:6.1f} pJ, ratio {c.read_pj / ref:.2f}")
    for kb, ref in sram.JOUPPI_7NM_64B_PJ.items():
        c = sram.sram(kb, 7, word_bits=64)
        print(f"   7 nm {kb:5d} KB: model {c.read_pj:6.2f} pJ, Jouppi   {ref:6.1f} pJ, ratio {c.read_pj / ref:.2f}")


if __name__ == "__main__":
    main()
