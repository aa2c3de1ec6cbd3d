"""explore.storage.one_journal_append: a trial's parameters go to the journal file in one append,
as the standard Optuna records, so the file replays to the same study in a fresh process (Optuna's
own reader), and records of other threads are not held back."""

from __future__ import annotations

import threading

import optuna
from optuna.storages import JournalStorage
from optuna.storages.journal import JournalFileBackend

from explore.storage import one_journal_append


def _storage(path):
    return JournalStorage(JournalFileBackend(str(path)))


def _count_appends(storage, monkeypatch):
    calls = []
    orig = storage._backend.append_logs

    def counted(logs):
        calls.append(len(logs))
        return orig(logs)

    monkeypatch.setattr(storage._backend, "append_logs", counted)
    return calls


def test_params_in_one_append_replay_identically(tmp_path, monkeypatch):
    path = tmp_path / "s.journal"
    storage = _storage(path)
    study = optuna.create_study(
        storage=storage, study_name="s", sampler=optuna.samplers.RandomSampler(seed=3)
    )
    calls = _count_appends(storage, monkeypatch)
    expected = []
    for _ in range(5):
        trial = study.ask()
        before = len(calls)
        with one_journal_append(storage):
            p = {
                "a": trial.suggest_int("a", 1, 64),
                "b": trial.suggest_float("b", 0.1, 10.0, log=True),
                "c": trial.suggest_categorical("c", ["ws", "os", "is"]),
            }
        assert calls[before:] == [3]  # three records, one append
        assert trial.params == p
        study.tell(trial, p["a"] * p["b"])
        expected.append(p)
    # a fresh reader (Optuna's own replay of the file) sees every parameter of every trial
    fresh = optuna.load_study(study_name="s", storage=_storage(path))
    got = [t.params for t in fresh.get_trials()]
    assert got == expected
    assert all(t.state == optuna.trial.TrialState.COMPLETE for t in fresh.get_trials())


def test_other_threads_write_at_once(tmp_path, monkeypatch):
    storage = _storage(tmp_path / "t.journal")
    study = optuna.create_study(storage=storage, study_name="t")
    other = study.ask()
    mine = study.ask()
    calls = _count_appends(storage, monkeypatch)
    with one_journal_append(storage):
        mine.suggest_int("x", 0, 9)
        t = threading.Thread(target=lambda: storage.set_trial_user_attr(other._trial_id, "k", 1))
        t.start()
        t.join()
        assert calls == [1]  # the other thread's record went out at once
        assert storage.get_trial(other._trial_id).user_attrs == {"k": 1}
    assert calls == [1, 1]
    assert storage.get_trial(mine._trial_id).params == {"x": mine.params["x"]}
    assert "_write_log" not in vars(storage)  # Optuna's own method again


def test_other_storages_untouched():
    storage = optuna.storages.InMemoryStorage()
    study = optuna.create_study(storage=storage)
    trial = study.ask()
    with one_journal_append(storage):
        v = trial.suggest_int("x", 0, 9)
    assert storage.get_trial(trial._trial_id).params == {"x": v}
