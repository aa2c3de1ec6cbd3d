"""The elaboration memo (ppa.synth_memo.synthesize_generated): a warm cache serves a fresh process
without Amaranth; a changed generator source (hw/ edited) misses.

References: the same estimate computed by a process that elaborated and synthesised (the first
subprocess), and the Verilog generators themselves (counted calls).
"""

from __future__ import annotations

import json
import os
import shutil
import subprocess
import sys
from pathlib import Path

import pytest

from ppa import synth_memo

pytestmark = pytest.mark.yosys

REPO = Path(__file__).resolve().parents[2]

# one known configuration, estimated in a fresh process; prints the result and whether Amaranth
# (its Verilog back end, or anything of it) was imported
PROBE = """
import json, sys
from ppa.design import DesignPoint
from ppa.model import estimate
r = estimate(DesignPoint(rows=2, cols=2, sram_kb=32, node_nm=7))
print(json.dumps({"result": r.to_json(), "verilog_backend": "amaranth.back.verilog" in sys.modules,
                  "amaranth": any(k == "amaranth" or k.startswith("amaranth.") for k in sys.modules)}))
"""


def _fresh_process(cache_root: Path) -> dict:
    env = {**os.environ, "SPARSEPE_CACHE_DIR": str(cache_root), "PYTHONPATH": str(REPO)}
    r = subprocess.run(
        [sys.executable, "-c", PROBE], capture_output=True, text=True, env=env, cwd=REPO, timeout=300
    )
    assert r.returncode == 0, r.stderr
    return json.loads(r.stdout)


def test_warm_cache_needs_no_amaranth_in_a_fresh_process(synth_cache):
    root = synth_cache.parent  # cache_dir() is $SPARSEPE_CACHE_DIR/synth
    first = _fresh_process(root)  # elaborates what this worker's cache does not hold yet
    assert list((synth_cache / "elab").glob("*.json"))
    second = _fresh_process(root)
    assert second["verilog_backend"] is False and second["amaranth"] is False
    assert second["result"] == first["result"]  # identical, not just close


def test_memo_hits_and_misses_on_a_changed_source(tmp_path, monkeypatch):
    from ppa.operators import register_verilog

    calls = []

    def make() -> str:
        calls.append(1)
        return register_verilog(4)[0]

    a = synth_memo.synthesize_generated("ppa.operators.Register", 4, "reg4", make, cache=tmp_path)
    b = synth_memo.synthesize_generated("ppa.operators.Register", 4, "reg4", make, cache=tmp_path)
    assert len(calls) == 1 and b.cached and b == a
    # other parameters are another entry
    synth_memo.synthesize_generated(
        "ppa.operators.Register", 5, "reg5", lambda: register_verilog(5)[0], cache=tmp_path
    )
    assert len(list((tmp_path / "elab").glob("*.json"))) == 2
    # hw/ edited: the source digest differs, so the memo misses and the Verilog is regenerated
    edited = synth_memo.sources_digest() + "-edited"
    monkeypatch.setattr(synth_memo, "sources_digest", lambda files=None: edited)
    c = synth_memo.synthesize_generated("ppa.operators.Register", 4, "reg4", make, cache=tmp_path)
    assert len(calls) == 2
    assert c.key == a.key  # same Verilog, so the synthesis itself is still a cache hit
    # a memo whose synthesis entry was deleted regenerates instead of failing
    monkeypatch.undo()
    shutil.rmtree(tmp_path / a.key)
    d = synth_memo.synthesize_generated("ppa.operators.Register", 4, "reg4", make, cache=tmp_path)
    assert len(calls) == 3 and d.transistors == a.transistors
    # no memo with use_cache=False
    synth_memo.synthesize_generated(
        "ppa.operators.Register", 4, "reg4", make, cache=tmp_path, use_cache=False
    )
    assert len(calls) == 4


def test_source_digest_covers_every_hw_file(tmp_path):
    files = synth_memo.generator_sources()
    names = {f.name for f in files}
    assert {"pe.py", "array.py", "verilog.py", "params.py", "operators.py"} <= names
    copies = []
    for f in files:
        dst = tmp_path / f.parent.name / f.name
        dst.parent.mkdir(exist_ok=True)
        shutil.copyfile(f, dst)
        copies.append(dst)
    before = synth_memo.sources_digest(copies)
    assert before == synth_memo.sources_digest()
    pe = next(c for c in copies if c.name == "pe.py")
    pe.write_text(pe.read_text() + "\n# an edit\n")
    assert synth_memo.sources_digest(copies) != before
