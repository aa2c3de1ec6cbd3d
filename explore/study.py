"""The Optuna study behind ``sparsepe sweep``: samplers, the objective, workers, resume, exports.

* Samplers: TPE (default, multivariate, seeded), NSGA-II and random. Each worker ``k`` of a run
  gets seed ``seed + k``; one worker with one seed gives the same trials every time.
* Constraints: one ``trial.set_constraint`` per configured limit (plus ``timing``: the clock must
  not exceed fmax), normalised so that 0.1 means "10 % over the limit"; feasible when <= 0.
* Every metric the evaluator returns is a trial user attribute.
* ``--trials`` is the target number of COMPLETE trials in the study, not an increment. A worker
  stops when that many are complete, waits while the rest are running elsewhere, and a trial
  that starts once the target is already covered by earlier live trials is pruned unevaluated
  (user attribute ``surplus``), so several workers never overshoot.
* The evaluator is a module with ``make_context(cfg)`` and ``evaluate(point, ctx) -> dict``;
  the product uses :mod:`explore.evaluator`.
"""

from __future__ import annotations

import csv
import functools
import hashlib
import importlib
import json
import math
import subprocess
import os
import sys
import time
import warnings
from dataclasses import dataclass
from pathlib import Path
from typing import Any, Callable

import optuna
from optuna.storages import JournalStorage
from optuna.study._constrained_optimization import _CONSTRAINTS_KEY
from optuna.trial import TrialState

from explore.config import (
    LIMIT_CONSTRAINTS,
    SweepConfig,
    axis_choices,
    is_integer_axis,
    load_config,
    quality_evidence_kind,
)
from explore.sampler import IncumbentSearchSampler
from explore.storage import (
    WORKER_ATTR,
    set_trial_attrs,
    StorageSpec,
    fail_dead_local_trials,
    open_storage,
    worker_tag,
)
from hw.errors import InputError

#: TPE: random start-up trials before the density model is used (Optuna default 10). Measured on
#: the example spaces with bench/bench_sweep_efficiency.py.
TPE_STARTUP_TRIALS = 10
#: After start-up, every INCUMBENT_EVERY-th trial of the "tpe" sampler evaluates an untried one-step
#: neighbour of the best feasible design (explore.sampler); measured with bench_sweep_efficiency.py.
INCUMBENT_EVERY = 2
#: NSGA-II population size (Optuna's default).
NSGA2_POPULATION = 50
#: Seconds a worker sleeps while the last trials run in other workers.
WAIT_POLL_S = 0.5
#: Study user attribute holding the fingerprint of the config that created the study.
FINGERPRINT_ATTR = "sparsepe_config_sha256"
#: Study user attribute holding the version of the model code that computed its trials
#: (:func:`model_code_version`): with the config's fingerprint, the study's fingerprint.
MODEL_CODE_ATTR = "sparsepe_model_code"
#: Study user attribute holding the config (``SweepConfig.model_dump(mode="json")``).
CONFIG_ATTR = "config"
#: Study user attribute naming the evaluator module when it is not the product's.
EVALUATOR_ATTR = "evaluator"
#: Study user attribute with the last run's options (trials, seed, sampler, workers).
SWEEP_ATTR = "sweep"
#: Constraint always present: the clock must not exceed the achievable fmax.
TIMING_CONSTRAINT = "timing"
#: Without a terminal, the sweep logs one progress line per this many finished trials.
LOG_EVERY_TRIALS = 10
#: A worker stops after this many consecutive FAILED trials (an error inside the evaluation) and
#: reports the last one in one line. [A] 5: a design-dependent failure (one bad corner of the
#: space) is survived, a failure that repeats on every point (the study cannot make progress)
#: stops within seconds instead of looping (issue 16: 1,553 failed trials in 53 s).
MAX_CONSECUTIVE_FAILURES = 5
#: Trial system attribute holding the one-line error of a FAILED trial.
ERROR_ATTR = "sparsepe:error"
#: ppa.model found the design unable to run for a reason no limit carries (thermal runaway, power
#: density above the cooling stack's limit, DRAM traffic above the memory's bandwidth): 1, else 0.
PPA_CONSTRAINT = "ppa_feasibility"

DEFAULT_EVALUATOR = "explore.evaluator"


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


# ---- pieces used by every worker ------------------------------------------------------------

def make_sampler(name: str, seed: int, n_objectives: int) -> optuna.samplers.BaseSampler:
    seed = int(seed) % 2**32  # numpy's seed range; worker and resume offsets wrap around
    if name == "tpe":
        with warnings.catch_warnings():
            warnings.simplefilter("ignore", optuna.exceptions.ExperimentalWarning)
            tpe = optuna.samplers.TPESampler(seed=seed, n_startup_trials=TPE_STARTUP_TRIALS, multivariate=True)
        # every 2nd trial after start-up: an untried one-step neighbour of the incumbent (explore.sampler)
        return IncumbentSearchSampler(tpe, seed=seed, startup=TPE_STARTUP_TRIALS, every=INCUMBENT_EVERY)
    if name == "nsga2":
        return optuna.samplers.NSGAIISampler(seed=seed, population_size=NSGA2_POPULATION)
    if name == "random":
        return optuna.samplers.RandomSampler(seed=seed)
    raise InputError(f"unknown sampler {name!r} (tpe, nsga2, random)", where="--sampler")


#: [serving] fields added after studies were stored, with their defaults (left out of the fingerprint
#: at the default, so a study stored before them still loads).
_SERVING_ADDED = {"seeds": 5, "warmup_fraction": 0.1, "cold_start_ms": 0.0, "output_tokens": 128}


#: the code that turns a design point into its figures: every module of these packages, and the
#: evaluator that joins them
_MODEL_PACKAGES = ("hw", "ppa", "sim")
_MODEL_MODULES = ("explore/evaluator.py", "explore/prewarm.py")


@functools.lru_cache(maxsize=1)
def model_code_version() -> str:
    """SHA-256 (16 hex digits) of the model code's source: every ``.py`` file of hw/, ppa/ and
    sim/ and the evaluator, by path and content. A study stores it, and a study computed by other
    model code is not resumed (results of two model versions never mix)."""
    h = hashlib.sha256()
    root = Path(importlib.import_module("explore").__file__).resolve().parent.parent
    files = [f for pkg in _MODEL_PACKAGES for f in (root / pkg).rglob("*.py")] + [root / m for m in _MODEL_MODULES]
    for f in sorted(set(files)):
        h.update(f.relative_to(root).as_posix().encode())
        h.update(b"\0")
        h.update(f.read_bytes())
        h.update(b"\0")
    return h.hexdigest()[:16]


def config_fingerprint(cfg: SweepConfig) -> str:
    """Hash of everything that defines the study's problem (not trials/seed/sampler/name)."""
    # [owners] and [context] name people and tags, not the problem: they never change the fingerprint
    body = cfg.model_dump(mode="json", exclude={"study", "source", "owners", "context"})
    if body.get("quality") is None:  # no [quality] section: the fingerprint of configs written before it
        body.pop("quality", None)
    for k, v in _SERVING_ADDED.items():  # serving fields added later: at their default, as before them
        if body["serving"].get(k) == v:
            body["serving"].pop(k)
    return hashlib.sha256(json.dumps(body, sort_keys=True).encode()).hexdigest()


def suggest_point(trial: optuna.Trial, cfg: SweepConfig) -> dict[str, Any]:
    """Ask the trial for one value per axis of the space."""
    point: dict[str, Any] = {}
    for name in cfg.space.active_axes():
        choices = axis_choices(cfg.space, name)
        if choices is not None:
            point[name] = trial.suggest_categorical(name, choices) if len(choices) > 1 else choices[0]
            continue
        r = cfg.space.axis(name)
        if r.min == r.max:
            point[name] = int(r.min) if is_integer_axis(name) else float(r.min)
        elif is_integer_axis(name):
            step = int(r.step) if r.step is not None else 1
            point[name] = trial.suggest_int(name, int(r.min), int(r.max), step=step, log=r.log)
        else:
            point[name] = trial.suggest_float(name, r.min, r.max, step=r.step, log=r.log)
    return point


def constraint_values(cfg: SweepConfig, metrics: dict[str, Any], as_number: Callable[[Any], Any] = float
                      ) -> dict[str, Any]:
    """One normalised constraint per limit (feasible when <= 0) plus the timing constraint.

    Normalisation: (metric - limit) / limit, and for T_j (T_j - limit) / (limit - ambient), so
    0.1 reads "10 % of the allowed amount over". A limit of 0 (quality delta) is not divided.
    ``as_number`` converts each metric: ``float`` for one trial; explore.grid passes a conversion
    to float arrays and gets the same formulas on every grid point at once."""
    out: dict[str, Any] = {}
    for key, limit in cfg.limits.active().items():
        metric = LIMIT_CONSTRAINTS[key]
        # the quality limit binds on the pessimistic end of the delta's 95 % interval
        # (quality_delta_ci); an evaluator that gives no interval is held to its point estimate
        src = "quality_delta_ci" if key == "max_quality_delta" and "quality_delta_ci" in metrics else metric
        value = as_number(metrics[src])
        if key == "max_tj_c":
            out[metric] = (value - limit) / (limit - cfg.fixed.ambient_c)
        elif limit > 0:
            out[metric] = (value - limit) / limit
        else:
            out[metric] = value - limit
    out[TIMING_CONSTRAINT] = as_number(metrics["clock_mhz"]) / as_number(metrics["fmax_mhz"]) - 1.0
    if "ppa_infeasible" in metrics:  # ppa.model says the design cannot run (explore.evaluator.ppa_only_reasons)
        out[PPA_CONSTRAINT] = as_number(metrics["ppa_infeasible"])
    return out


def _load_evaluator(name: str):
    try:
        mod = importlib.import_module(name)
    except ModuleNotFoundError as exc:
        raise InputError(f"cannot import evaluator module {name!r}: {exc}") from None
    return mod


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
    sampler = make_sampler(opts.sampler, seed, len(cfg.objectives.names()))
    directions = cfg.objectives.directions()
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
    results = any(t.state in (TrialState.COMPLETE, TrialState.RUNNING) for t in study.get_trials(deepcopy=False))
    if stored is not None and (stored != fp or stored_code != code) and not results:
        # the study holds no finished (or running) trial, only failed ones: no result to protect, so
        # a corrected config (or newer model code) takes it over instead of being blocked by the
        # failed first attempt
        stored = None
    if stored is not None and stored == fp and stored_code != code:
        raise InputError(
            f"this study's trials were computed by other model code ({stored_code or 'a version before it was recorded'}; "
            f"this is {code}): resuming would mix results of two model versions; use another --study name or --out "
            "directory", where=f"study {opts.study_name!r}")
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


#: User attribute of a trial whose design an earlier trial already evaluated: that trial's number.
#: Its metrics are the stored ones (not evaluated again), and records/best.json/reports count the
#: design once.
DUPLICATE_ATTR = "duplicate_of"


def _design_key(point: dict[str, Any]) -> str:
    """A design's identity: numbers compare as floats (a fixed axis's 500 and the echoed metric 500.0)."""
    norm = {k: (float(v) if isinstance(v, (int, float)) and not isinstance(v, bool) else v) for k, v in point.items()}
    return json.dumps(norm, sort_keys=True, default=str)


def study_constraint_names(cfg: SweepConfig, constraint_dicts) -> list[str]:
    """The constraints of a study, in report order: one per limit, timing, then ppa feasibility
    when the evaluator reports it."""
    names = [LIMIT_CONSTRAINTS[k] for k in cfg.limits.active()] + [TIMING_CONSTRAINT]
    if any(PPA_CONSTRAINT in c for c in constraint_dicts):
        names.append(PPA_CONSTRAINT)
    return names


def _counts(study: optuna.Study) -> dict[TrialState, int]:
    counts = {s: 0 for s in TrialState}
    for t in study.get_trials(deepcopy=False):
        counts[t.state] += 1
    return counts


def make_objective(cfg: SweepConfig, ctx: Any, evaluate: Callable, target: int) -> Callable[[optuna.Trial], Any]:
    names = cfg.objectives.names()
    live = (TrialState.COMPLETE, TrialState.RUNNING, TrialState.WAITING)
    known: dict[str, Any] = {}  # design key -> (number, attrs, constraints) of its first evaluation
    scanned: set[int] = set()

    def objective(trial: optuna.Trial):
        storage = trial.study._storage
        storage.set_trial_system_attr(trial._trial_id, WORKER_ATTR, worker_tag())
        ahead = sum(1 for t in trial.study.get_trials(deepcopy=False, states=live) if t.number < trial.number)
        if ahead >= target:
            trial.set_user_attr("surplus", True)
            raise optuna.TrialPruned("target number of trials already covered by other workers")
        point = suggest_point(trial, cfg)
        prior = _evaluated(trial.study, point, known, scanned)
        if prior is not None:  # the design is in the study already: reuse its stored result
            number, attrs, cons = prior
            _write_attrs(storage, trial, {**attrs, DUPLICATE_ATTR: number}, cons)
            return _objective_values(attrs)
        try:
            metrics = evaluate(point, ctx)
            cons = constraint_values(cfg, metrics)
            _check_objectives(metrics, names)
        except (KeyboardInterrupt, SystemExit):
            raise
        except Exception as exc:  # one line in the trial and, after MAX_CONSECUTIVE_FAILURES, for the user
            line = _error_line(exc, point, getattr(cfg, "source", ""))
            storage.set_trial_system_attr(trial._trial_id, ERROR_ATTR, line)
            raise TrialFailed(line) from None
        attrs: dict[str, Any] = {k: v for k, v in point.items() if k not in trial.params}  # axes fixed to one value
        for key in sorted(metrics):
            value = metrics[key]
            if isinstance(value, float) and not math.isfinite(value):
                value = str(value)
            attrs[key] = value
        # optuna-dashboard (0.21) shows only the pre-5.0 list form of constraints, so feasibility
        # is also written as user attributes the dashboard can filter on
        violated = sorted(k for k, v in cons.items() if v > 0)
        attrs["feasible"] = not violated
        attrs["violated_limits"] = ",".join(violated)
        _write_attrs(storage, trial, attrs, cons)
        return _objective_values(attrs)

    def _objective_values(attrs: dict[str, Any]):
        values = [float(attrs[n]) for n in names]
        return values[0] if len(values) == 1 else values

    return objective


class TrialFailed(Exception):
    """A trial's evaluation raised; the message is one line naming the design and the error."""


#: The models name their parameters by the flags of ``sparsepe ppa``/``simulate``; inside a sweep
#: the user wrote config keys, so a trial's error names those.
_FLAG_TO_KEY = {
    "--t-ambient": "fixed.ambient_c", "--theta-ja": "fixed.theta_ja_c_per_w", "--cooling": "fixed.cooling",
    "--dram-units": "fixed.dram_units", "--sram-banks": "fixed.sram_banks", "--acc-bits": "fixed.acc_bits",
    "--liberty": "fixed.liberty", "--liberty-node": "fixed.liberty_node", "--rows": "space.rows",
    "--cols": "space.cols", "--rows/--cols": "space.rows/space.cols", "--sram-kb": "space.sram_kb",
    "--clock-mhz": "space.clock_mhz", "--node": "space.node_nm", "--dataflow": "space.dataflow",
    "--dram": "space.dram", "--pipeline": "space.pipeline", "--sparsity": "space.sparsity",
    "--dense-path": "space.sparsity", "pipeline": "space.pipeline", "n:m": "space.sparsity",
}


def _error_line(exc: BaseException, point: dict[str, Any], source: str = "") -> str:
    if isinstance(exc, InputError):
        msg = str(exc).removeprefix(f"{exc.where}: ") if exc.where else str(exc)
        key = _FLAG_TO_KEY.get(exc.where or "", exc.where)
        what = f"{source + ': ' if source and key in _FLAG_TO_KEY.values() else ''}{key + ': ' if key else ''}{msg}"
    else:
        what = f"{type(exc).__name__}: {exc}"
    design = ", ".join(f"{k}={v}" for k, v in point.items())
    return " ".join(f"{what} (design {design})".split())


def _check_objectives(metrics: dict[str, Any], names: list[str]) -> None:
    for n in names:
        v = metrics.get(n)
        if v is None:
            raise InputError(f"the evaluator returned no objective {n!r}")
        if not math.isfinite(float(v)):
            raise InputError(f"objective {n} is {float(v)} (not a finite number)")


def _write_attrs(storage: Any, trial: optuna.Trial, attrs: dict[str, Any], cons: dict[str, float]) -> None:
    if isinstance(storage, JournalStorage):
        # one append for every metric and constraint (see explore.storage.set_trial_attrs); the
        # constraint records are exactly what trial.set_constraint writes
        set_trial_attrs(storage, trial._trial_id, attrs, {f"{_CONSTRAINTS_KEY}:{k}": float(v) for k, v in cons.items()})
    else:
        set_trial_attrs(storage, trial._trial_id, attrs, {})
        for key, value in cons.items():
            trial.set_constraint(key, value)


def _evaluated(study: optuna.Study, point: dict[str, Any], known: dict[str, Any], scanned: set[int]
               ) -> tuple[int, dict[str, Any], dict[str, float]] | None:
    """(number, user attributes, constraints) of the first COMPLETE trial of ``study`` with the
    same design as ``point``, or None. ``known``/``scanned`` carry what earlier calls indexed."""
    for t in study.get_trials(deepcopy=False, states=(TrialState.COMPLETE,)):
        if t.number in scanned:
            continue
        scanned.add(t.number)
        if DUPLICATE_ATTR in t.user_attrs or not t.constraints:
            continue
        p = {**{k: v for k, v in t.user_attrs.items() if k in point}, **t.params}
        k = _design_key({a: p.get(a) for a in point})
        if k not in known or known[k][0] > t.number:
            known[k] = (t.number, {a: v for a, v in t.user_attrs.items() if a != "surplus"}, dict(t.constraints))
    return known.get(_design_key(point))


#: Study user attribute: per host, the tools (Yosys, OpenSTA, Liberty digest) that evaluated trials there.
TOOLS_ATTR = "tools"


def _record_tools(study: optuna.Study, cfg: SweepConfig) -> None:
    """Record, per host, the tools this worker's trials are costed with (ppa.model.tools_provenance):
    the caches are keyed by them, so these are also the tools that built any cached result used."""
    import platform

    from hw.errors import InputError
    from ppa.design import DesignPoint
    from ppa.model import tools_provenance

    try:
        prov = tools_provenance(DesignPoint(liberty=cfg.fixed.liberty, liberty_node_nm=cfg.fixed.liberty_node))
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
    from explore.config import with_liberty

    cfg = with_liberty(load_config(opts.config_path), opts.liberty, opts.liberty_node)
    ev = _load_evaluator(opts.evaluator)
    ctx = ev.make_context(cfg)
    study = open_study(cfg, opts, opts.seed + index, create=True)
    _record_tools(study, cfg)
    objective = make_objective(cfg, ctx, ev.evaluate, opts.trials)
    done = 0
    failures = 0
    while True:
        fail_dead_local_trials(study, local=opts.storage.local)
        c = _counts(study)
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
        with warnings.catch_warnings():
            warnings.simplefilter("ignore")
            study.optimize(objective, n_trials=1, gc_after_trial=False, catch=(TrialFailed,))
        last = _last_own_trial(study)
        if last is not None and last.state == TrialState.FAIL:
            failures += 1
            if failures >= MAX_CONSECUTIVE_FAILURES:
                msg = last.system_attrs.get(ERROR_ATTR, "no error message")
                raise InputError(f"stopped after {failures} consecutive failed trials (the study cannot make "
                                 f"progress); last, trial {last.number}: {msg}", where=f"study {opts.study_name!r}")
        else:
            failures = 0
        done += 1
    return done


def _last_own_trial(study: optuna.Study) -> optuna.trial.FrozenTrial | None:
    """The newest trial this process ran (by its worker tag)."""
    tag = worker_tag()
    own = [t for t in study.get_trials(deepcopy=False) if t.system_attrs.get(WORKER_ATTR) == tag]
    return max(own, key=lambda t: t.number) if own else None


def _all_running_local(study: optuna.Study) -> bool:
    from explore.storage import _tag_alive

    """True when every RUNNING trial can be watched from here: tagged by a process on this host,
    or untagged (failed once stale, see explore.storage.UNTAGGED_STALE_S)."""
    for t in study.get_trials(deepcopy=False, states=(TrialState.RUNNING,)):
        tag = t.system_attrs.get(WORKER_ATTR)
        if isinstance(tag, str) and _tag_alive(tag) is None:
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
    this process's storage connections, no re-import of the caller's main module)."""
    paths = [os.path.abspath(p) if p else os.getcwd() for p in sys.path]
    env = {**os.environ, "PYTHONPATH": os.pathsep.join(paths)}
    return subprocess.Popen(
        [sys.executable, "-m", "explore.worker", str(index)],
        env=env,
        stdin=subprocess.PIPE,
        stdout=subprocess.DEVNULL,
        stderr=subprocess.PIPE,
        text=True,
    )


def run_study(opts: SweepOptions, cfg: SweepConfig) -> optuna.Study:
    """Run ``opts.workers`` workers (this process when 1) with a rich progress bar on stderr."""
    from rich.console import Console
    from rich.progress import BarColumn, MofNCompleteColumn, Progress, TextColumn, TimeElapsedColumn

    from explore.safety import rich_safe

    if opts.workers > 1 and opts.storage.kind == "sqlite":
        raise InputError("SQLite takes one writer at a time; use a journal file or PostgreSQL for several workers", where="--workers")
    optuna.logging.set_verbosity(optuna.logging.WARNING)
    # Open once here first: bad storage / corrupt file / changed config fail before any worker starts.
    study = open_study(cfg, opts, opts.seed, create=True)
    sweep = {"trials": opts.trials, "seed": opts.seed, "sampler": opts.sampler, "workers": opts.workers}
    if study.user_attrs.get(SWEEP_ATTR) != sweep:
        study.set_user_attr(SWEEP_ATTR, sweep)
    if opts.evaluator == DEFAULT_EVALUATOR:
        from explore.prewarm import prewarm

        prewarm(cfg)  # cold caches: synthesis and STA on every core before the first trial
    console = Console(stderr=True)
    progress = Progress(
        TextColumn(f"sweep [bold]{rich_safe(opts.study_name)}[/]"),  # markup escaped, braces doubled (a format template)
        BarColumn(),
        MofNCompleteColumn(),
        TimeElapsedColumn(),
        console=console,
        disable=not opts.progress,
        transient=False,
    )
    # On a terminal the bar redraws in place; otherwise (a log file, CI) one plain line every
    # LOG_EVERY_TRIALS finished trials, so long sweeps show progress in logs too.
    log_lines = opts.progress and not console.is_terminal
    t0 = time.monotonic()
    last_logged = [-1]

    def report(n: int) -> None:
        n = min(n, opts.trials)
        progress.update(task, completed=n)
        if log_lines and n != last_logged[0] and (n % LOG_EVERY_TRIALS == 0 or n == opts.trials):
            last_logged[0] = n
            console.print(f"sweep {opts.study_name}: {n}/{opts.trials} trials finished "
                          f"({time.monotonic() - t0:.1f} s)", highlight=False, markup=False)

    with progress:
        task = progress.add_task("trials", total=opts.trials)
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
            finally:
                for p in procs:
                    p.wait()
                    err = p.stderr.read() if p.stderr else ""
                    if p.returncode != 0:
                        line = err.strip().splitlines()[-1] if err.strip() else f"exit code {p.returncode}"
                        errors.append(line.removeprefix("sparsepe: error: "))
            if errors and _counts(study)[TrialState.COMPLETE] < opts.trials:
                raise InputError(f"{len(errors)} of {opts.workers} workers failed: {errors[0]}", where="--workers")
        progress.update(task, completed=min(_counts(study)[TrialState.COMPLETE], opts.trials))
    return study


# ---- exports ------------------------------------------------------------------------------

_NON_METRIC_ATTRS = {"surplus", "failed_trial", "retry_history", "feasible", "violated_limits", DUPLICATE_ATTR}


def _is_feasible(t: optuna.trial.FrozenTrial) -> bool:
    return t.state == TrialState.COMPLETE and all(v <= 0 for v in t.constraints.values())


def trial_rows(study: optuna.Study, cfg: SweepConfig) -> tuple[list[str], list[dict[str, Any]]]:
    """One row per trial (sorted by number): params, objectives, constraints, feasibility, metrics,
    state. No wall-clock columns, so one worker and one seed give the same file every time."""
    trials = sorted(study.get_trials(deepcopy=False), key=lambda t: t.number)
    axes = list(cfg.space.active_axes())
    objectives = cfg.objectives.names()
    constraint_names = study_constraint_names(cfg, [t.constraints for t in trials])
    metric_names = sorted({k for t in trials for k in t.user_attrs} - _NON_METRIC_ATTRS - set(axes) - set(objectives))
    header = (
        ["number", "state"]
        + axes
        + objectives
        + [f"c_{c}" for c in constraint_names]
        + ["feasible"]
        + metric_names
        + ["retry_of", DUPLICATE_ATTR]
        # the one-line error of FAILED trials, a column only when a trial failed
        + (["error"] if any(ERROR_ATTR in t.system_attrs for t in trials) else [])
    )
    rows = []
    for t in trials:
        row: dict[str, Any] = {"number": t.number, "state": t.state.name}
        for a in axes:
            row[a] = t.params[a] if a in t.params else t.user_attrs.get(a, "")
        for o in objectives:
            row[o] = t.user_attrs.get(o, "")
        cons = t.constraints
        for c in constraint_names:
            row[f"c_{c}"] = cons.get(c, "")
        row["feasible"] = int(_is_feasible(t)) if t.state == TrialState.COMPLETE else ""
        for m in metric_names:
            row[m] = t.user_attrs.get(m, "")
        row["retry_of"] = t.system_attrs.get("failed_trial", "")
        row[DUPLICATE_ATTR] = t.user_attrs.get(DUPLICATE_ATTR, "")
        if "error" in header:
            row["error"] = t.system_attrs.get(ERROR_ATTR, "")
        rows.append(row)
    return header, rows


def write_trials_csv(path: Path, header: list[str], rows: list[dict[str, Any]]) -> None:
    """trials.csv, written atomically and never through a symlink (explore.safety.write_text)."""
    import io

    from explore.safety import write_text

    f = io.StringIO(newline="")
    w = csv.DictWriter(f, fieldnames=header, lineterminator="\n")
    w.writeheader()
    for r in rows:
        w.writerow(r)
    write_text(path, f.getvalue())


def _pareto(points: list[tuple[float, ...]], directions: list[str]) -> list[int]:
    """Indices of non-dominated points (directions: maximize/minimize per objective)."""
    sign = [(-1.0 if d == "maximize" else 1.0) for d in directions]
    keys = [tuple(s * v for s, v in zip(sign, p)) for p in points]
    front = []
    for i, a in enumerate(keys):
        dominated = False
        for j, b in enumerate(keys):
            if j != i and all(y <= x for x, y in zip(a, b)) and any(y < x for x, y in zip(a, b)):
                dominated = True
                break
        if not dominated:
            front.append(i)
    return front


def summarise(records: list[dict[str, Any]], cfg: SweepConfig, extra: dict[str, Any] | None = None) -> dict[str, Any]:
    """best.json from evaluated records (``params``, ``metrics``, ``constraints``, ``number``).

    With one objective: the best feasible design. With several: the feasible Pareto set. With
    none feasible: ``feasible: false`` and the binding limits (those violated by the design that
    came closest, and how often each limit was violated)."""
    objectives = cfg.objectives.names()
    directions = cfg.objectives.directions()
    limit_names = list(cfg.limits.active().items())
    out: dict[str, Any] = {
        "objectives": dict(zip(objectives, directions)),
        "limits": {k: v for k, v in limit_names},
        "n_evaluated": len(records),
        # what the quality limit binds on ("model" / "proxy" / "none"); the designs' metrics carry
        # quality_delta, quality_delta_ci (the pessimistic end the limit tests) and quality_evidence
        "quality_evidence": quality_evidence_kind(cfg),
    }
    if extra:
        out.update(extra)
    feasible = [r for r in records if all(v <= 0 for v in r["constraints"].values())]
    out["n_feasible"] = len(feasible)
    cnames = sorted({c for r in records for c in r["constraints"]})
    out["violated_share"] = {
        c: (sum(1 for r in records if r["constraints"].get(c, 0.0) > 0) / len(records) if records else 0.0) for c in cnames
    }
    if not feasible:
        out["feasible"] = False
        if records:
            closest = min(records, key=lambda r: (sum(max(v, 0.0) for v in r["constraints"].values()), r["number"]))
            out["binding_limits"] = sorted(c for c, v in closest["constraints"].items() if v > 0)
            out["closest"] = _design(closest)
        else:
            out["binding_limits"] = []
        out["message"] = (
            "no feasible design: " + (", ".join(out["binding_limits"]) or "no trial finished") + " cannot be met"
        )
        return out
    out["feasible"] = True
    primary, pdir = objectives[0], directions[0]
    sign = -1.0 if pdir == "maximize" else 1.0
    best = min(feasible, key=lambda r: (sign * float(r["metrics"][primary]), r["number"]))
    out["best"] = _design(best)
    # the pass/fail ppa constraint has no slack to speak of
    tight = max(((k, v) for k, v in best["constraints"].items() if k != PPA_CONSTRAINT), key=lambda kv: kv[1])
    out["tightest_limit"] = {"name": tight[0], "constraint": tight[1]}
    # A limit binds when an evaluated design better than the best violates that limit alone.
    binding: dict[str, dict[str, Any]] = {}
    for r in records:
        if sign * float(r["metrics"][primary]) >= sign * float(best["metrics"][primary]):
            continue
        violated = [c for c, v in r["constraints"].items() if v > 0]
        if len(violated) == 1:
            c = violated[0]
            if c not in binding or sign * float(r["metrics"][primary]) < sign * binding[c]["value"]:
                binding[c] = {"number": r["number"], "value": float(r["metrics"][primary])}
    out["binding_limits"] = sorted(binding)
    out["binding_evidence"] = {
        c: f"trial {b['number']} reaches {primary} {b['value']:.4g} and violates only {c}" for c, b in sorted(binding.items())
    }
    if len(objectives) > 1:
        pts = [tuple(float(r["metrics"][o]) for o in objectives) for r in feasible]
        idx = _pareto(pts, directions)
        front = sorted((feasible[i] for i in idx), key=lambda r: (sign * float(r["metrics"][primary]), r["number"]))
        out["pareto"] = [_design(r) for r in front]
    return out


def _design(r: dict[str, Any]) -> dict[str, Any]:
    return {"number": r["number"], "params": r["params"], "metrics": r["metrics"], "constraints": r["constraints"]}


def study_records(study: optuna.Study, cfg: SweepConfig) -> list[dict[str, Any]]:
    axes = cfg.space.active_axes()
    recs = []
    for t in sorted(study.get_trials(deepcopy=False, states=(TrialState.COMPLETE,)), key=lambda t: t.number):
        if DUPLICATE_ATTR in t.user_attrs:  # the same design as an earlier trial: counted once
            continue
        metrics = {k: v for k, v in t.user_attrs.items() if k not in _NON_METRIC_ATTRS}
        params = {a: t.params[a] if a in t.params else t.user_attrs.get(a) for a in axes}
        recs.append({"number": t.number, "params": params, "metrics": metrics, "constraints": dict(t.constraints)})
    return recs


def write_json(path: Path, obj: Any) -> None:
    """Standard JSON (non-finite numbers -> null, listed under "non_finite"), written atomically
    and never through a symlink."""
    from explore.safety import dumps, write_text

    write_text(path, dumps(obj, indent=2, sort_keys=False, default=_json_default) + "\n")


def _json_default(o: Any) -> Any:
    import numpy as np

    if isinstance(o, np.generic):
        return o.item()
    raise TypeError(f"not JSON serialisable: {type(o).__name__}")


#: Study user attribute holding the records of the focused dense sub-study (explore.compare), so
#: the report shows the same comparison as best.json without running it again.
SUBSTUDY_ATTR = "dense_substudy"


def _storable(metrics: dict[str, Any]) -> dict[str, Any]:
    return {k: (str(v) if isinstance(v, float) and not math.isfinite(v) else v) for k, v in metrics.items()}


def equal_terms(study: optuna.Study, cfg: SweepConfig, records: list[dict[str, Any]], best: dict[str, Any], *,
                store: bool) -> dict[str, Any]:
    """best.json's ``comparison`` (explore.compare) for a stored study, with the evaluator the study
    used. The dense sub-study, when one is needed, is stored in the study (``store``) or read back."""
    from explore import compare

    name = study.user_attrs.get(EVALUATOR_ATTR) or DEFAULT_EVALUATOR
    ev = _load_evaluator(name)
    ctx = ev.make_context(cfg)
    stored = study.user_attrs.get(SUBSTUDY_ATTR)
    sub = None
    n = len(records)
    if stored and stored.get("n_trials") == compare.dense_share(cfg, n) and stored.get("seed") == cfg.study.seed:
        sub = [{**r, "metrics": {k: _num_attr(v) for k, v in r["metrics"].items()}} for r in stored["records"]]
    chosen = best.get("best") if best.get("feasible") else None
    comp, sub_new = compare.build(records, cfg, chosen, ev, ctx, n, substudy=sub)
    if store and sub is None and sub_new is not None:
        study.set_user_attr(SUBSTUDY_ATTR, {"n_trials": compare.dense_share(cfg, n), "seed": cfg.study.seed,
                                            "records": [{**r, "metrics": _storable(r["metrics"])} for r in sub_new]})
    return comp


def _num_attr(v: Any) -> Any:
    if isinstance(v, str) and v in ("inf", "-inf", "nan"):
        return float(v)
    return v


def export_study(study: optuna.Study, cfg: SweepConfig, out_dir: Path, extra: dict[str, Any] | None = None, *,
                 compare: bool = True) -> dict[str, Any]:
    """Write DIR/trials.csv and DIR/best.json; return the best.json content. With ``compare``,
    best.json carries ``comparison``: sparse against dense on equal terms (:func:`equal_terms`)."""
    from explore.safety import check_out_dir

    check_out_dir(out_dir)
    header, rows = trial_rows(study, cfg)
    write_trials_csv(out_dir / "trials.csv", header, rows)
    records = study_records(study, cfg)
    best = summarise(records, cfg, extra)
    if compare:
        best["comparison"] = equal_terms(study, cfg, records, best, store=True)
    if records:
        from explore.report.owners import attach_owners

        attach_owners(best, cfg, records, out_dir, study.user_attrs.get(EVALUATOR_ATTR))
    write_json(out_dir / "best.json", best)
    return best
