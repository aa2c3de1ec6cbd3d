"""The Optuna study behind ``sparsepe sweep``: opening and resuming it, the workers (the objective
they run is :mod:`explore.objective`).

* Samplers (explore.sampler): TPE (default, multivariate, seeded), NSGA-II and random. Each worker
  ``k`` of a run gets seed ``seed + k``; one worker with one seed gives the same trials every time.
* Constraints: one ``trial.set_constraint`` per configured limit (plus ``timing``: the clock must
  not exceed fmax), normalised so that 0.1 means "10 % over the limit"; feasible when <= 0.
* Every metric the evaluator returns is a trial user attribute.
* ``--trials`` is the target number of COMPLETE trials in the study, not an increment. A worker
  stops when that many are complete, waits while the rest are running elsewhere, and a trial
  that starts once the target is already covered by earlier live trials is pruned unevaluated
  (user attribute ``surplus``), so several workers never overshoot.
* The evaluator is a module with ``make_context(cfg)`` and ``evaluate(point, ctx) -> dict``;
  the product uses :mod:`explore.evaluator`.
* What a study stores is named in :mod:`explore.trials`, which also reads it back; the files a
  finished sweep writes (trials.csv, best.json) are :mod:`explore.runner`'s.
"""

from __future__ import annotations

import json
import os
import platform
import signal
import subprocess
import sys
import time
import warnings
from collections.abc import Callable
from dataclasses import dataclass
from typing import Any

import optuna
from optuna.trial import TrialState
from rich.console import Console
from rich.progress import BarColumn, MofNCompleteColumn, Progress, TextColumn, TimeElapsedColumn

from explore.config import SweepConfig, config_fingerprint, grid_size, load_config, with_liberty
from explore.grid import grid_columns
from explore.objective import TrialFailed, make_objective
from explore.prewarm import prewarm
from explore.provenance import model_code_version
from explore.results import DEFAULT_EVALUATOR, Evaluator
from explore.safety import rich_safe
from explore.sampler import EXHAUSTIVE, SIDES, make_sampler, sparsity_sides, study_directions
from explore.space import design_key
from explore.storage import (
    WORKER_ATTR,
    StorageSpec,
    fail_dead_local_trials,
    open_storage,
    tag_alive,
)
from explore.trials import (
    CHARACTERISED_ATTR,
    CONFIG_ATTR,
    ERROR_ATTR,
    EVALUATOR_ATTR,
    FINGERPRINT_ATTR,
    MODEL_CODE_ATTR,
    SWEEP_ATTR,
    TOOLS_ATTR,
)
from hw.errors import InputError
from ppa.design import DesignPoint
from ppa.model import tools_provenance

#: Seconds a worker sleeps while the last trials run in other workers.
WAIT_POLL_S = 0.5
#: Without a terminal, the sweep logs one progress line per this many finished trials.
LOG_EVERY_TRIALS = 10
#: A worker stops after this many consecutive FAILED trials (an error inside the evaluation) and
#: reports the last one in one line. [A] 5: a design-dependent failure (one bad corner of the
#: space) is survived, a failure that repeats on every point (the study cannot make progress)
#: stops within seconds instead of looping (1,553 failed trials in 53 s otherwise).
MAX_CONSECUTIVE_FAILURES = 5


#: A space of at most this many times the trial budget is evaluated exhaustively (every point,
#: both sides) instead of searched. [A] "a few times": one point costs what one trial costs (each is
#: a trial), so 4x the budget is at most 4x its time, and the verdict then rests on no sampler's luck
#: (a 128-point space searched with 40 trials found the dense optimum in 2 of 4 seeds, issue 38).
EXHAUSTIVE_FACTOR = 4


def exhaustive_points(cfg: SweepConfig, budget: int) -> list[dict[str, Any]] | None:
    """Every point of the discretised space as the trial parameters a search would suggest, when the
    space offers both sides (sparse and dense PEs) and has at most EXHAUSTIVE_FACTOR x ``budget``
    points; None otherwise (a continuous axis without a step, a larger space, or a space without dense
    PEs, whose dense side is a study of twins: explore.compare)."""
    sides = sparsity_sides(cfg.space)
    if not all(sides.get(side) for side in SIDES):
        return None
    try:
        n = grid_size(cfg)
    except InputError:
        return None
    if n > EXHAUSTIVE_FACTOR * budget:
        return None
    cols = grid_columns(cfg)
    names = [a for a in cfg.space.active_axes() if a in cols]
    return [
        trial_point({a: (cols[a][i].item() if hasattr(cols[a][i], "item") else cols[a][i]) for a in names})
        for i in range(len(cols[names[0]]))
    ]


def trial_point(p: dict[str, Any]) -> dict[str, Any]:
    """A design as trial parameters: an OS point has no ``double_buffer`` (suggest_point)."""
    return {k: v for k, v in p.items() if not (k == "double_buffer" and p.get("dataflow") == "os")}


def _enqueue_points(study: optuna.Study, cfg: SweepConfig, points: list[dict[str, Any]]) -> int:
    """Enqueue every point of ``points`` the study has not evaluated or queued (its trial budget is
    then one trial per point); returns the target of COMPLETE trials: those already complete plus
    the points queued."""
    names = set().union(*points) if points else set()
    have, queued, n_complete = set(), 0, 0
    for t in study.get_trials(deepcopy=False, states=(TrialState.COMPLETE, TrialState.WAITING)):
        p = {
            **{k: v for k, v in t.user_attrs.items() if k in names},
            **t.params,
            **(t.system_attrs.get("fixed_params") or {}),
        }
        have.add(design_key(trial_point({a: p[a] for a in names if a in p})))
        queued += t.state == TrialState.WAITING
        n_complete += t.state == TrialState.COMPLETE
    for p in points:
        if design_key(p) not in have:
            study.enqueue_trial(p)
            queued += 1
    return n_complete + queued


@dataclass
class SweepOptions:
    """Everything a worker needs besides the config. Picklable (sent to worker processes)."""

    config_path: str
    storage: StorageSpec
    study_name: str
    trials: int
    seed: int
    sampler: str
    workers: int = 1
    evaluator: str = DEFAULT_EVALUATOR
    out_dir: str = ""
    progress: bool = True
    liberty: str | None = None  # --liberty: overrides the config's fixed.liberty
    liberty_node: int | None = None  # --liberty-node: overrides fixed.liberty_node


def resume_seed(storage: optuna.storages.BaseStorage, study_name: str, seed: int) -> int:
    """The sampler seed of a worker: ``seed`` on a new study; on a study that already holds trials,
    ``seed`` plus the number of its trials, so a resumed run does not replay the random stream
    (and the points) of the first run. A fresh run keeps its seed: same seed, same trials."""
    try:
        sid = storage.get_study_id_from_name(study_name)
    except KeyError:
        return seed
    return seed + len(storage.get_all_trials(sid, deepcopy=False))


def open_study(cfg: SweepConfig, opts: SweepOptions, seed: int, *, create: bool) -> optuna.Study:
    storage = open_storage(opts.storage, create=create)
    seed = resume_seed(storage, opts.study_name, seed)
    sampler = make_sampler(opts.sampler, seed, len(cfg.objectives.names()), cfg.space)
    directions = study_directions(cfg)
    try:
        study = optuna.create_study(
            storage=storage,
            study_name=opts.study_name,
            directions=directions,
            sampler=sampler,
            load_if_exists=True,
        )
    except ValueError as exc:  # e.g. directions differ from the stored study
        raise InputError(str(exc).splitlines()[0], where=f"study {opts.study_name!r}") from None
    if [d.name.lower() for d in study.directions] != directions:
        raise InputError(
            f"stored study has objectives {[d.name.lower() for d in study.directions]}, the config asks for "
            f"{directions}; use another --study name",
            where=f"study {opts.study_name!r}",
        )
    fp = config_fingerprint(cfg)
    code = model_code_version()
    stored = study.user_attrs.get(FINGERPRINT_ATTR)
    stored_code = study.user_attrs.get(MODEL_CODE_ATTR)
    results = any(
        t.state in (TrialState.COMPLETE, TrialState.RUNNING) for t in study.get_trials(deepcopy=False)
    )
    if stored is not None and (stored != fp or stored_code != code) and not results:
        # the study holds no finished (or running) trial, only failed ones: no result to protect, so
        # a corrected config (or newer model code) takes it over instead of being blocked by the
        # failed first attempt
        stored = None
    if stored is not None and stored == fp and stored_code != code:
        raise InputError(
            "this study's trials were computed by other model code "
            f"({stored_code or 'a version before it was recorded'}; "
            f"this is {code}): resuming would mix results of two model versions; use another --study name or --out "
            "directory",
            where=f"study {opts.study_name!r}",
        )
    if stored is None:
        study.set_user_attr(MODEL_CODE_ATTR, code)  # before the fingerprint: a worker that sees one sees both
        study.set_user_attr(FINGERPRINT_ATTR, fp)
        # what the report writer (explore.report) reads back: the config itself, where it came
        # from, and the evaluator module when it is not the product's
        study.set_user_attr(CONFIG_ATTR, cfg.model_dump(mode="json", exclude={"source"}))
        study.set_user_attr("config_source", cfg.source)
        study.set_user_attr("objectives", cfg.objectives.names())
        study.set_user_attr("limits", cfg.limits.active())
        if opts.evaluator != DEFAULT_EVALUATOR:
            study.set_user_attr(EVALUATOR_ATTR, opts.evaluator)
    elif stored != fp:
        raise InputError(
            "this study was created from a different config (space, workloads, limits or objectives "
            "changed); use another --study name or --out directory to start a new one",
            where=f"study {opts.study_name!r}",
        )
    return study


def _counts(
    study: optuna.Study, trials: list[optuna.trial.FrozenTrial] | None = None
) -> dict[TrialState, int]:
    counts = {s: 0 for s in TrialState}
    for t in study.get_trials(deepcopy=False) if trials is None else trials:
        counts[t.state] += 1
    return counts


def _record_tools(study: optuna.Study, cfg: SweepConfig) -> None:
    """Record, per host, the tools this worker's trials are costed with (ppa.model.tools_provenance):
    the caches are keyed by them, so these are also the tools that built any cached result used."""
    try:
        prov = tools_provenance(
            DesignPoint(liberty=cfg.fixed.liberty, liberty_node_nm=cfg.fixed.liberty_node)
        )
    except InputError as exc:  # e.g. no Yosys here: say so rather than fail the sweep
        prov = {"unavailable": str(exc)}
    host = platform.node() or "localhost"
    cur = dict(study.user_attrs.get(TOOLS_ATTR) or {})
    if cur.get(host) != prov:
        cur[host] = prov
        study.set_user_attr(TOOLS_ATTR, cur)


def run_worker(opts: SweepOptions, index: int, on_trial: Callable[[int], None] | None = None) -> int:
    """One worker: run trials until the study holds ``opts.trials`` COMPLETE trials.

    Returns the number of trials this worker completed."""
    # Optuna's own warnings ("Trial N failed ... Traceback") are not shown: a failed trial's error
    # is stored on the trial (ERROR_ATTR) and reaches the user as one line (below).
    optuna.logging.set_verbosity(optuna.logging.ERROR)
    cfg = with_liberty(load_config(opts.config_path), opts.liberty, opts.liberty_node)
    ev = Evaluator(opts.evaluator, cfg, where=None)
    study = open_study(cfg, opts, opts.seed + index, create=True)
    _record_tools(study, cfg)
    objective = make_objective(cfg, ev.ctx, ev.mod.evaluate, opts.trials)
    done = 0
    failures = 0
    while True:
        trials = study.get_trials(deepcopy=False)
        if fail_dead_local_trials(study, local=opts.storage.local, trials=trials):
            trials = study.get_trials(deepcopy=False)
        c = _counts(study, trials)
        n_complete = c[TrialState.COMPLETE]
        if on_trial is not None:
            on_trial(n_complete)
        if n_complete >= opts.trials:
            break
        if n_complete + c[TrialState.RUNNING] >= opts.trials:
            # The remaining trials run elsewhere. Wait for them (their worker may die, and then
            # the retried trial needs a worker) unless they cannot be watched from here.
            if opts.storage.kind == "journal" and not _all_running_local(study):
                break
            time.sleep(WAIT_POLL_S)
            continue
        try:
            with warnings.catch_warnings():
                warnings.simplefilter("ignore")
                study.optimize(objective, n_trials=1, gc_after_trial=False, catch=(TrialFailed,))
        except Exception as exc:
            # Another worker may have failed this trial as a dead worker's while it ran here (and
            # enqueued its retry): Optuna then refuses this worker's writes to it ("Cannot tell a
            # FAIL trial", UpdateFinishedTrialError, which also leaves this storage handle unable to
            # replay its journal). Read the study afresh; if so, the retry evaluates the point.
            fresh = open_study(cfg, opts, opts.seed + index, create=False)
            if not _reaped(fresh, objective.last_trial_id, exc):
                raise
            study = fresh
            continue
        last = (
            study._storage.get_trial(objective.last_trial_id) if objective.last_trial_id is not None else None
        )
        if last is not None and last.state == TrialState.FAIL:
            failures += 1
            if failures >= MAX_CONSECUTIVE_FAILURES:
                msg = last.system_attrs.get(ERROR_ATTR, "no error message")
                raise InputError(
                    f"stopped after {failures} consecutive failed trials (the study cannot make "
                    f"progress); last, trial {last.number}: {msg}",
                    where=f"study {opts.study_name!r}",
                )
        else:
            failures = 0
        done += 1
    return done


def _reaped(study: optuna.Study, trial_id: int | None, exc: Exception) -> bool:
    """Whether the trial ``trial_id`` was failed by another worker: it is FAIL and either its retry
    names it in ``failed_trial`` (explore.storage.fail_dead_local_trials, the heartbeat callback) or
    ``exc`` (or an exception it was raised from) is Optuna refusing this worker's write to a finished
    trial (the reaper fails a trial before it enqueues the retry, and enqueues none once the retries
    are spent; Optuna 5 may surface the refusal as an error of its own cleanup)."""
    if trial_id is None:
        return False
    t = study._storage.get_trial(trial_id)
    if t.state != TrialState.FAIL:
        return False
    chain: list[BaseException] = []
    e: BaseException | None = exc
    while e is not None and len(chain) < 16:
        chain.append(e)
        e = e.__cause__ or e.__context__
    refused = any(
        isinstance(e, optuna.exceptions.UpdateFinishedTrialError)
        or (isinstance(e, ValueError) and str(e).startswith("Cannot tell a "))
        for e in chain
    )
    return refused or any(
        r.system_attrs.get("failed_trial") == t.number for r in study.get_trials(deepcopy=False)
    )


def _all_running_local(study: optuna.Study) -> bool:
    """True when every RUNNING trial can be watched from here: tagged by a process on this host,
    or untagged (failed once stale, see explore.storage.UNTAGGED_STALE_S)."""
    for t in study.get_trials(deepcopy=False, states=(TrialState.RUNNING,)):
        tag = t.system_attrs.get(WORKER_ATTR)
        if isinstance(tag, str) and tag_alive(tag) is None:
            return False
    return True


def options_to_json(opts: SweepOptions) -> str:
    d = {k: getattr(opts, k) for k in opts.__dataclass_fields__}
    d["storage"] = {"kind": opts.storage.kind, "url": opts.storage.url}
    return json.dumps(d)


def options_from_json(text: str) -> SweepOptions:
    d = json.loads(text)
    d["storage"] = StorageSpec(**d["storage"])
    return SweepOptions(**d)


def _spawn_worker(opts: SweepOptions, index: int) -> subprocess.Popen:
    """Start worker ``index`` as ``python -m explore.worker`` (a fresh interpreter: no fork of
    this process's storage connections, no re-import of the caller's main module). It is told this
    process's id and dies with it (hw.host.die_with_parent)."""
    paths = [os.path.abspath(p) if p else os.getcwd() for p in sys.path]
    env = {**os.environ, "PYTHONPATH": os.pathsep.join(paths)}
    return subprocess.Popen(
        [sys.executable, "-m", "explore.worker", str(index), str(os.getpid())],
        env=env,
        stdin=subprocess.PIPE,
        stdout=subprocess.DEVNULL,
        stderr=subprocess.PIPE,
        text=True,
    )


#: Seconds interrupted workers get to stop on their own (a Ctrl-C at the terminal reaches them
#: too; each marks its running trial FAIL), then to stop after SIGINT, before they are killed.
#: [A] within explore.interrupt.DEADLINE_S (1.6 s): an interrupted run ends within 2 s; a worker
#: killed mid-trial leaves that trial RUNNING with a dead tag, which a rerun fails and re-runs.
STOP_GRACE_S = (0.3, 0.8, 0.3)


def stop_workers(procs: list[subprocess.Popen]) -> None:
    """End the worker processes of an interrupted sweep: wait for them briefly, then SIGINT the
    rest (only the parent was signalled), then SIGKILL. What they stored stays in the study."""
    for sig, grace in zip((None, signal.SIGINT, signal.SIGKILL), STOP_GRACE_S, strict=True):
        for p in procs:
            if sig is not None and p.poll() is None:
                p.send_signal(sig)
        deadline = time.monotonic() + grace
        while any(p.poll() is None for p in procs) and time.monotonic() < deadline:
            time.sleep(0.05)
        if all(p.poll() is not None for p in procs):
            break
    for p in procs:
        if p.stderr is not None:
            p.stderr.close()


def run_study(opts: SweepOptions, cfg: SweepConfig) -> optuna.Study:
    """Run ``opts.workers`` workers (this process when 1) with a rich progress bar on stderr."""
    if opts.workers > 1 and opts.storage.kind == "sqlite":
        raise InputError(
            "SQLite takes one writer at a time; use a journal file or PostgreSQL for several workers",
            where="--workers",
        )
    optuna.logging.set_verbosity(optuna.logging.WARNING)
    # Open once here first: bad storage / corrupt file / changed config fail before any worker starts.
    study = open_study(cfg, opts, opts.seed, create=True)
    if opts.sampler == EXHAUSTIVE:  # every point one trial (explore.commands.sweep decided it)
        points = exhaustive_points(cfg, opts.trials)
        if points is not None:
            opts.trials = _enqueue_points(study, cfg, points)
    sweep = {"trials": opts.trials, "seed": opts.seed, "sampler": opts.sampler, "workers": opts.workers}
    if study.user_attrs.get(SWEEP_ATTR) != sweep:
        study.set_user_attr(SWEEP_ATTR, sweep)
    if opts.evaluator == DEFAULT_EVALUATOR:
        prewarm(cfg)  # cold caches: synthesis and STA on every core before the first trial
    console = Console(stderr=True)
    progress = Progress(
        TextColumn(
            f"sweep [bold]{rich_safe(opts.study_name)}[/]"
        ),  # markup escaped, braces doubled (a format template)
        BarColumn(),
        MofNCompleteColumn(),
        TimeElapsedColumn(),
        TextColumn("{task.fields[note]}", markup=False),
        console=console,
        disable=not opts.progress,
        transient=False,
    )
    # On a terminal the bar redraws in place; otherwise (a log file, CI) one plain line every
    # LOG_EVERY_TRIALS finished trials, so long sweeps show progress in logs too.
    log_lines = opts.progress and not console.is_terminal
    t0 = time.monotonic()
    last_logged = [-1]
    announced: set[int] = set()

    def report(n: int) -> None:
        n = min(n, opts.trials)
        # a trial that had to characterise (synthesise, time) says so: on the bar, and as a line
        for t in study.get_trials(deepcopy=False):
            made = t.system_attrs.get(CHARACTERISED_ATTR)
            if made and t.number not in announced:
                announced.add(t.number)
                note = f"trial {t.number} characterised {made} (not prewarmed)"
                progress.update(task, note=note)
                if opts.progress:
                    console.print(f"sweep {opts.study_name}: {note}", highlight=False, markup=False)
        progress.update(task, completed=n)
        if log_lines and n != last_logged[0] and (n % LOG_EVERY_TRIALS == 0 or n == opts.trials):
            last_logged[0] = n
            console.print(
                f"sweep {opts.study_name}: {n}/{opts.trials} trials finished ({time.monotonic() - t0:.1f} s)",
                highlight=False,
                markup=False,
            )

    with progress:
        task = progress.add_task("trials", total=opts.trials, note="")
        if opts.workers == 1:
            run_worker(opts, 0, on_trial=report)
        else:
            payload = options_to_json(opts)
            procs = []
            for k in range(opts.workers):
                p = _spawn_worker(opts, k)
                assert p.stdin is not None
                p.stdin.write(payload)
                p.stdin.close()
                procs.append(p)
            errors: list[str] = []
            try:
                while any(p.poll() is None for p in procs):
                    report(_counts(study)[TrialState.COMPLETE])
                    time.sleep(WAIT_POLL_S)
            except BaseException:  # Ctrl-C (or a failure here): end the workers, then pass it on
                stop_workers(procs)
                raise
            for p in procs:
                p.wait()
                err = p.stderr.read() if p.stderr else ""
                if p.returncode != 0:
                    line = err.strip().splitlines()[-1] if err.strip() else f"exit code {p.returncode}"
                    errors.append(line.removeprefix("sparsepe: error: "))
            if errors and _counts(study)[TrialState.COMPLETE] < opts.trials:
                raise InputError(
                    f"{len(errors)} of {opts.workers} workers failed: {errors[0]}", where="--workers"
                )
        progress.update(task, completed=min(_counts(study)[TrialState.COMPLETE], opts.trials))
    return study
