import pytest

from hw.errors import InputError
from ppa import dram, sram

# CACTI 7.0 (published-figures §5.1), typed here independently of ppa/sram.py:
# node, KB, access ns, cycle ns, read pJ, write pJ, leakage mW, area mm^2
CACTI = [
    (22, 32, 0.220, 0.225, 9.28, 22.6, 9.57, 0.0277), (22, 256, 0.603, 0.540, 40.6, 60.7, 69.3, 0.257),
    (22, 1024, 1.112, 1.341, 96.4, 102.9, 264, 0.946), (22, 4096, 2.005, 1.341, 212.2, 218.7, 1058, 3.75),
    (32, 32, 0.313, 0.328, 17.2, 43.5, 19.9, 0.0585), (32, 256, 0.791, 0.735, 74.7, 116.0, 143, 0.544),
    (32, 1024, 1.403, 1.759, 177.1, 195.3, 542, 2.00), (32, 4096, 2.591, 1.759, 392.2, 410.4, 2170, 7.93),
    (45, 32, 0.408, 0.431, 30.7, 79.7, 37.4, 0.115), (45, 256, 1.016, 0.935, 131.2, 210.9, 270, 1.07),
    (45, 1024, 1.789, 2.218, 311.1, 352.8, 1022, 3.95), (45, 4096, 3.280, 2.218, 693.5, 735.1, 4089, 15.7),
]


@pytest.mark.parametrize("row", CACTI, ids=lambda r: f"{r[0]}nm-{r[1]}KB")
def test_sram_model_within_10pct_of_cacti(row):
    nm, kb, acc, cyc, rd, wr, leak, area = row
    c = sram.sram(kb, nm)
    assert c.in_range and not c.notes
    for got, ref in ((c.access_ns, acc), (c.cycle_ns, cyc), (c.read_pj, rd), (c.write_pj, wr),
                     (c.leakage_mw, leak), (c.area_mm2, area)):
        assert got == pytest.approx(ref, rel=0.10)


def test_sram_says_when_out_of_range():
    assert not sram.sram(32, 7).in_range
    assert any("below CACTI" in n for n in sram.sram(32, 7).notes)
    assert not sram.sram(8, 45).in_range
    big = sram.sram(16384, 22)
    assert not big.in_range and big.banks == 4
    assert not sram.sram(256, 22, word_bits=64).in_range


def test_sram_cross_check_with_horowitz_per_bit_order_of_magnitude():
    # Horowitz 45 nm: 64-bit access from 32 KB = 20 pJ, 1 MB = 100 pJ. CACTI's 512-bit access,
    # per bit, lands within 10x of those per-bit figures (the two differ in port width and periphery).
    for kb, pj64 in ((32, 20.0), (1024, 100.0)):
        per_bit = sram.sram(kb, 45).read_pj / 512
        assert 0.1 < per_bit / (pj64 / 64) < 10


def test_sram_bad_input():
    for bad in (-1, 0, float("nan")):
        with pytest.raises(InputError, match="sram-kb"):
            sram.sram(bad, 22)
    with pytest.raises(InputError):
        sram.sram(32, 22, banks=0)


def test_dram_figures_and_labels():
    assert dram.dram("hbm2").pj_per_bit == 3.97
    lp = dram.dram("LPDDR5")
    assert "NOT FOUND" in lp.energy_source and "derived" in lp.energy_source
    assert lp.pj_per_bit == pytest.approx(3.45 + 16.55 * (0.5 / 1.2) ** 2)
    assert dram.dram("hbm3").gb_per_s == 819.0
    with pytest.raises(InputError, match="DRAM"):
        dram.dram("gddr9")
