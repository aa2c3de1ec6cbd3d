"""Where a study lives: a journal file (default), SQLite, or PostgreSQL.

* The embedded default is a journal file in the output directory,
  ``JournalStorage(JournalFileBackend(DIR/study.journal))``: no server, several local processes
  may share it, and ``optuna-dashboard DIR/study.journal`` opens it unchanged.
* ``sqlite:///path.db``: one process (SQLite locks the whole file on write).
* ``postgresql://user@host:port/db``: workers on several machines share one study. Heartbeats
  (``heartbeat_interval``) mark a crashed worker's trial FAIL after ``grace_period`` and
  ``RetryHeartbeatStaleTrialCallback`` (the current name of
  ``RetryFailedTrialCallback``) enqueues it again.

A journal file has no heartbeat, so :func:`fail_dead_local_trials` does the same job for
processes on this machine: each worker tags its running trial with host, pid and process start
time; a RUNNING trial whose process is gone is marked FAIL and retried.

Opening a storage never writes to it before it has been read successfully: a corrupt journal or
database raises :class:`InputError` and leaves the file as it was.
"""

from __future__ import annotations

import contextlib
import datetime
import hashlib
import json
import os
import socket
import threading
import warnings
from collections.abc import Iterator
from dataclasses import dataclass
from pathlib import Path

import optuna
import psycopg
import sqlalchemy.exc
from optuna.storages import JournalStorage, RDBStorage, RetryHeartbeatStaleTrialCallback
from optuna.storages._rdb import models as rdb_models
from optuna.storages._rdb.storage import _create_scoped_session as create_scoped_session
from optuna.storages.journal import JournalFileBackend, JournalFileSymlinkLock
from optuna.storages.journal._storage import JournalOperation
from optuna.trial import TrialState
from sqlalchemy.dialects.postgresql import insert as pg_insert

from hw.errors import InputError
from hw.host import make_dir, mask_passwords, printable

#: Seconds between heartbeats of a running trial on an RDB storage.
HEARTBEAT_INTERVAL_S = 10
#: A RUNNING trial whose last heartbeat is older than this is failed (Optuna's default is 2x interval).
HEARTBEAT_GRACE_S = 30
#: How often one set of parameters is retried after its worker died.
MAX_RETRY = 3
#: Seconds to wait for a PostgreSQL server before giving up with one clear line.
CONNECT_TIMEOUT_S = 5
#: A journal lock file left by a process killed while appending is broken after this many seconds
#: (Optuna's default is 30 s; an append holds the lock for milliseconds; 3 s is Optuna's smallest
#: recommended value). Same lock file as Optuna's default, so other readers/writers interoperate.
JOURNAL_LOCK_GRACE_S = 3
#: A RUNNING trial on a file storage that never got its worker tag (its process died between
#: creating and tagging it) is failed once it is this old. Between the two, Optuna samples the
#: trial's relative parameters (TPE over the whole history), which takes seconds on a loaded
#: machine: 10 s reaped live workers' trials with four workers on 2 busy cores.
UNTAGGED_STALE_S = 60.0
#: File name of the embedded default storage inside the output directory.
JOURNAL_NAME = "study.journal"
#: System attribute that names the process running a trial (host:pid:start-time).
WORKER_ATTR = "sparsepe:worker"


@dataclass(frozen=True)
class StorageSpec:
    """A resolved ``--storage`` value. ``kind`` is journal, sqlite or postgresql; ``url`` is what
    Optuna / optuna-dashboard accept (a file path for a journal)."""

    kind: str
    url: str

    @property
    def local(self) -> bool:
        """True when all workers must run on this machine (file storages)."""
        return self.kind in ("journal", "sqlite")

    @property
    def path(self) -> Path | None:
        if self.kind == "journal":
            return Path(self.url)
        if self.kind == "sqlite":
            return Path(self.url.removeprefix("sqlite:///"))
        return None


def resolve_storage(storage: str | None, out_dir: Path) -> StorageSpec:
    """``--storage`` -> StorageSpec. None means the journal file in ``out_dir``."""
    if storage is None or storage == "":
        return StorageSpec("journal", str(out_dir / JOURNAL_NAME))
    if storage.startswith("sqlite:///"):
        if storage == "sqlite:///":
            raise InputError(
                "sqlite URL has no file path (use sqlite:///path/to/study.db)", where="--storage"
            )
        return StorageSpec("sqlite", storage)
    if storage.startswith(("postgresql://", "postgresql+psycopg://", "postgres://")):
        return StorageSpec("postgresql", storage)
    if "://" in storage:
        scheme = storage.split("://", 1)[0]
        raise InputError(
            f"unsupported storage scheme {scheme!r} (use a journal file path, sqlite:///..., or postgresql://...)",
            where="--storage",
        )
    return StorageSpec("journal", storage)


def _sqlalchemy_url(url: str) -> str:
    """postgresql:// -> postgresql+psycopg:// (psycopg 3 is the installed driver)."""
    for prefix in ("postgresql://", "postgres://"):
        if url.startswith(prefix):
            return "postgresql+psycopg://" + url[len(prefix) :]
    return url


def redact(url: str) -> str:
    """``url`` for messages and files: its password masked (hw.host.mask_passwords)."""
    return mask_passwords(url)


#: Bytes of a journal's first line read to recognise it. [A] Optuna's create-study record is ~150 B.
JOURNAL_HEAD_BYTES = 65536


def check_journal_file(path: Path) -> None:
    """Refuse to open ``path`` as a journal when appending to it could damage something that is not
    a journal: a symlink (never followed), a non-regular file (FIFO, device), or a non-empty file
    whose first line is not an Optuna journal record (a JSON object with ``op_code`` and
    ``worker_id``). A missing or empty file is a new journal."""
    if path.is_symlink():
        raise InputError(
            "is a symlink; a journal is never written through a symlink (remove it)", where=str(path)
        )
    if not path.exists():
        return
    if not path.is_file():
        raise InputError("is not a regular file, not a journal", where=str(path))
    try:
        with open(path, "rb") as f:
            head = f.read(JOURNAL_HEAD_BYTES)
    except OSError as exc:
        raise InputError(f"cannot read the journal: {exc.strerror}", where=str(path)) from None
    if not head:
        return
    first = head.split(b"\n", 1)[0]
    try:
        rec = json.loads(first.decode("utf-8"))
        ok = isinstance(rec, dict) and "op_code" in rec and "worker_id" in rec
    except (UnicodeDecodeError, ValueError, RecursionError):
        ok = False
    if not ok:
        raise InputError(
            "exists and is not an Optuna journal; it was left unchanged (give another --out or --storage)",
            where=str(path),
        )
    codes = {int(op) for op in JournalOperation}
    if (
        isinstance(rec["op_code"], bool)
        or rec["op_code"] not in codes
        or not isinstance(rec["worker_id"], str)
    ):
        raise InputError(
            f"is not a readable Optuna journal: its first record has op_code "
            f"{printable(json.dumps(rec['op_code']))[:40]} and worker_id "
            f"{printable(json.dumps(rec['worker_id']))[:40]} "
            f"(op_code one of {min(codes)}..{max(codes)}, worker_id a string); it was left unchanged",
            where=str(path),
        )


def check_storage_file(spec: StorageSpec, *, create: bool = True) -> None:
    """The checks :func:`open_storage` makes of a file storage before it opens it, without opening
    it (no Optuna replay, no database connection): a journal that is a directory, missing (unless
    ``create``) or not a journal (:func:`check_journal_file`); an SQLite file that is missing (unless
    ``create``) or a symlink. Nothing to check for a server storage."""
    path = spec.path
    if path is None:
        return
    if spec.kind == "journal":
        if path.is_dir():
            raise InputError("is a directory, not a journal file", where=str(path))
        if not path.exists() and not create:
            raise InputError("no such journal file", where=str(path))
        check_journal_file(path)
        return
    if not path.exists() and not create:
        raise InputError("no such SQLite file", where=str(path))
    if path.is_symlink():
        raise InputError("is a symlink; a study file is never written through a symlink", where=str(path))


def open_storage(spec: StorageSpec, *, create: bool = True) -> optuna.storages.BaseStorage:
    """Open (and for ``create`` make the file's directory for) a storage.

    Raises InputError with one line for an unreachable server, a corrupt file, or a file that is
    not a study storage. Nothing is written to an existing file before it has been read."""
    check_storage_file(spec, create=create)
    if spec.kind == "journal":
        path = Path(spec.url)
        if create:
            make_dir(path.parent)
        try:
            lock = JournalFileSymlinkLock(str(path), grace_period=JOURNAL_LOCK_GRACE_S)
            return JournalStorage(JournalFileBackend(str(path), lock_obj=lock))
        except (
            ValueError,
            KeyError,
            TypeError,
            IndexError,
            UnicodeDecodeError,
            AssertionError,
            AttributeError,
            RecursionError,
        ) as exc:  # Optuna's replay of a damaged record (an unknown op_code: AssertionError)
            raise InputError(
                f"journal file is corrupt or not an Optuna journal ({type(exc).__name__}: {exc}); "
                "it was left unchanged",
                where=str(path),
            ) from None
        except OSError as exc:
            raise InputError(f"cannot open journal file: {exc.strerror}", where=str(path)) from None

    url = _sqlalchemy_url(spec.url)
    kwargs: dict = {}
    if spec.kind == "postgresql":
        kwargs["engine_kwargs"] = {
            "connect_args": {"connect_timeout": CONNECT_TIMEOUT_S},
            "pool_pre_ping": True,
        }
    else:
        db_path = spec.path
        assert db_path is not None
        if create:
            make_dir(db_path.parent)

    def make() -> RDBStorage:
        with warnings.catch_warnings():
            warnings.simplefilter("ignore", optuna.exceptions.ExperimentalWarning)
            return RDBStorage(
                url,
                heartbeat_interval=HEARTBEAT_INTERVAL_S,
                grace_period=HEARTBEAT_GRACE_S,
                heartbeat_stale_trial_callback=_retry_callback(),
                **kwargs,
            )

    try:
        if spec.kind == "postgresql":
            return _with_schema_lock(spec.url, make)
        return make()
    except sqlalchemy.exc.OperationalError as exc:
        first = str(exc.orig).strip().splitlines()[0] if exc.orig is not None else str(exc).splitlines()[0]
        raise InputError(f"cannot connect: {first}", where=redact(spec.url)) from None
    except sqlalchemy.exc.DatabaseError as exc:
        first = str(exc.orig).strip().splitlines()[0] if exc.orig is not None else type(exc).__name__
        raise InputError(
            f"not a usable study database ({first}); it was left unchanged", where=redact(spec.url)
        ) from None
    except sqlalchemy.exc.ArgumentError as exc:
        raise InputError(f"bad storage URL: {exc}", where=redact(spec.url)) from None
    except ImportError as exc:
        raise InputError(f"no database driver for this URL: {exc}", where=redact(spec.url)) from None
    except RuntimeError as exc:  # Optuna's schema-version check
        raise InputError(str(exc).splitlines()[0], where=redact(spec.url)) from None


#: PostgreSQL advisory lock key held while Optuna creates (or checks) its tables: the first
#: 8 bytes of sha256("sparsepe optuna schema") as a signed 64-bit integer.
SCHEMA_LOCK_KEY = int.from_bytes(hashlib.sha256(b"sparsepe optuna schema").digest()[:8], "big", signed=True)


def _with_schema_lock(url: str, make):
    """``make()`` (the RDBStorage constructor, which creates Optuna's tables on a fresh database)
    under a PostgreSQL session advisory lock, so two first workers on a fresh database do not race
    on ``CREATE TABLE`` (one of them failing with "duplicate key value violates unique constraint
    pg_type_typname_nsp_index"). The second waits for the first, then finds the tables."""
    conninfo = "postgresql://" + url.split("://", 1)[1]
    try:
        conn = psycopg.connect(conninfo, connect_timeout=CONNECT_TIMEOUT_S, autocommit=True)
    except psycopg.Error as exc:
        first = str(exc).strip().splitlines()[0] if str(exc).strip() else type(exc).__name__
        raise InputError(f"cannot connect: {first}", where=redact(url)) from None
    try:
        conn.execute("SELECT pg_advisory_lock(%s)", (SCHEMA_LOCK_KEY,))
        try:
            return make()
        finally:
            conn.execute("SELECT pg_advisory_unlock(%s)", (SCHEMA_LOCK_KEY,))
    finally:
        conn.close()


def _retry_callback() -> RetryHeartbeatStaleTrialCallback:
    """Re-enqueue a crashed trial's parameters (at most MAX_RETRY times)."""
    with warnings.catch_warnings():
        warnings.simplefilter("ignore", optuna.exceptions.ExperimentalWarning)
        return RetryHeartbeatStaleTrialCallback(max_retry=MAX_RETRY)


# ---- batched attribute writes ----------------------------------------------------------------


@contextlib.contextmanager
def one_journal_append(storage: optuna.storages.BaseStorage) -> Iterator[None]:
    """On a journal file, the standard Optuna log records this thread writes in the block (e.g. one
    per parameter a trial suggests) go out in ONE append at its end: one lock and one fsync instead
    of one per record (the file replays unchanged in Optuna and optuna-dashboard). Other threads'
    records, and every other storage, are written as usual. Other workers see the records when the
    block ends; if this process dies inside it, its RUNNING trial simply has no parameters (it is
    failed and re-run as any dead worker's trial is)."""
    if not isinstance(storage, JournalStorage):
        yield
        return
    me = threading.get_ident()
    pending: list[dict] = []
    write_log = storage._write_log  # Optuna's: one append per record

    def buffered(op_code: int, extra_fields: dict) -> None:
        if threading.get_ident() != me:
            write_log(op_code, extra_fields)
        else:
            pending.append(
                {"op_code": op_code, "worker_id": storage._replay_result.worker_id, **extra_fields}
            )

    # a deliberate patch of Optuna's method for this block (removed below); mypy forbids method assignment
    storage._write_log = buffered  # type: ignore[method-assign]
    try:
        yield
    finally:
        del storage._write_log  # Optuna's method again
        if pending:
            with storage._thread_lock:
                storage._backend.append_logs(pending)
                storage._sync_with_backend()


def set_trial_attrs(
    storage: optuna.storages.BaseStorage, trial_id: int, user_attrs: dict, system_attrs: dict
) -> None:
    """Write many trial attributes at once.

    On a journal file every attribute is one standard Optuna log record (the same record
    ``set_trial_user_attr`` / ``set_trial_system_attr`` write, so the file replays unchanged in
    Optuna and optuna-dashboard), but all of them go out in ONE append, i.e. one lock and one
    fsync instead of one per attribute: a trial's ~40 metrics cost ~4 ms instead of ~150 ms on
    this machine's disk. On a database they go out in ONE transaction: one commit (one fsync on
    the server) per trial instead of one per attribute (20 ms each on a loaded PostgreSQL); on
    PostgreSQL as one multi-row form of Optuna's own upsert per table, elsewhere by Optuna's
    per-attribute statement."""
    if isinstance(storage, JournalStorage):
        with storage._thread_lock:
            worker_id = storage._replay_result.worker_id
            logs = [
                {
                    "op_code": JournalOperation.SET_TRIAL_USER_ATTR,
                    "worker_id": worker_id,
                    "trial_id": trial_id,
                    "user_attr": {k: v},
                }
                for k, v in user_attrs.items()
            ] + [
                {
                    "op_code": JournalOperation.SET_TRIAL_SYSTEM_ATTR,
                    "worker_id": worker_id,
                    "trial_id": trial_id,
                    "system_attr": {k: v},
                }
                for k, v in system_attrs.items()
            ]
            if logs:
                storage._backend.append_logs(logs)
            storage._sync_with_backend()
        return
    rdb = getattr(storage, "_backend", None)  # Optuna wraps an RDBStorage in its cache
    if isinstance(rdb, RDBStorage) and hasattr(rdb, "_set_trial_attr_without_commit"):
        tables = (
            (rdb_models.TrialUserAttributeModel, user_attrs),
            (rdb_models.TrialSystemAttributeModel, system_attrs),
        )
        with create_scoped_session(rdb.scoped_session, True) as session:
            if rdb.engine.name == "postgresql":  # Optuna's upsert, one statement per table
                trial = rdb_models.TrialModel.find_or_raise_by_id(trial_id, session)
                rdb.check_trial_is_updatable(trial_id, trial.state)
                for model, attrs in tables:
                    if attrs:
                        stmt = pg_insert(model).values(
                            [
                                {"trial_id": trial_id, "key": k, "value_json": json.dumps(v)}
                                for k, v in attrs.items()
                            ]
                        )
                        session.execute(
                            stmt.on_conflict_do_update(
                                index_elements=[model.trial_id, model.key],
                                set_={"value_json": stmt.excluded.value_json},
                            )
                        )
            else:
                for model, attrs in tables:
                    for k, v in attrs.items():
                        rdb._set_trial_attr_without_commit(session, model, trial_id, k, v)
        return
    for k, v in user_attrs.items():
        storage.set_trial_user_attr(trial_id, k, v)
    for k, v in system_attrs.items():
        storage.set_trial_system_attr(trial_id, k, v)


# ---- crashed local workers on a journal file ------------------------------------------------


def _proc_start_time(pid: int) -> str | None:
    """Process start time in clock ticks since boot (Linux /proc), None when gone/unknown."""
    try:
        with open(f"/proc/{pid}/stat", "rb") as f:
            stat = f.read().decode(errors="replace")
    except OSError:
        return None
    # The comm field may contain spaces; fields after the closing paren are space separated.
    rest = stat.rsplit(")", 1)[-1].split()
    return rest[19] if len(rest) > 19 else None


def worker_tag() -> str:
    pid = os.getpid()
    return f"{socket.gethostname()}:{pid}:{_proc_start_time(pid)}"


def tag_alive(tag: str) -> bool | None:
    """True/False for a process on this host, None for another host (unknown)."""
    try:
        host, pid_s, start = tag.rsplit(":", 2)
        pid = int(pid_s)
    except ValueError:
        return None
    if host != socket.gethostname():
        return None
    now = _proc_start_time(pid)
    return now is not None and now == start


def _untagged_stale(t: optuna.trial.FrozenTrial, after_s: float) -> bool:
    """A RUNNING trial without a worker tag: its process died between creating the trial and
    tagging it (milliseconds apart; on a heartbeat storage also before its first heartbeat, so
    Optuna never sees it stale). Older than ``after_s`` it cannot belong to a live worker."""
    if t.datetime_start is None:
        return False
    age = (datetime.datetime.now() - t.datetime_start).total_seconds()
    return age > after_s


def fail_dead_local_trials(
    study: optuna.Study, *, local: bool = True, trials: list[optuna.trial.FrozenTrial] | None = None
) -> int:
    """Mark RUNNING trials of dead processes on this host FAIL and enqueue them again.

    A RUNNING trial that was never tagged is failed too once it is older than UNTAGGED_STALE_S
    (``local``: file storages), or than the heartbeat grace period as well on a shared database
    (whose workers' clocks may differ a little). Returns how many were failed. Heartbeat storages
    are handled by Optuna's own ``fail_stale_trials`` as well (a worker on another host).
    ``trials``: the study's trials as the caller has just read them (else they are read here)."""
    storage = study._storage
    retry = _retry_callback()
    failed = 0
    if trials is None:
        trials = study.get_trials(deepcopy=False)
    for t in (t for t in trials if t.state == TrialState.RUNNING):
        tag = t.system_attrs.get(WORKER_ATTR)
        if isinstance(tag, str):
            if tag_alive(tag) is not False:
                continue
        elif not _untagged_stale(t, UNTAGGED_STALE_S if local else max(UNTAGGED_STALE_S, HEARTBEAT_GRACE_S)):
            continue
        try:
            ok = storage.set_trial_state_values(t._trial_id, state=TrialState.FAIL)
        except RuntimeError:  # another worker got there first
            continue
        if ok:
            failed += 1
            retry(study, storage.get_trial(t._trial_id))
    with warnings.catch_warnings():
        warnings.simplefilter("ignore", optuna.exceptions.ExperimentalWarning)
        optuna.storages.fail_stale_trials(study)
    return failed
