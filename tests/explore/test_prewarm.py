"""explore.prewarm: the hardware configurations a sweep (and its dense twins) characterises."""

from explore.config import load_config
from explore.prewarm import hardware_jobs, prewarm


def _kinds(jobs):
    return sorted((("dense" if not j["sparse"] else "dense_path" if j["dense_path"] else f"{j['n']}:{j['m']}"),
                   j["pipeline"], j["dataflow"]) for j in jobs)


def test_jobs_cover_every_kind_pipeline_and_dataflow_and_the_dense_twins(small_config):
    cfg = load_config(small_config())
    jobs = hardware_jobs(cfg)
    want = sorted((k, p, d) for k in ("dense", "2:4") for p in (1, 2, 3) for d in ("ws", "os"))
    assert _kinds(jobs) == want
    assert {j["rows"] for j in jobs} == {32}  # the deepest array of the space
    # dense kinds first: every sparse design's twins need them
    assert [j["sparse"] for j in jobs] == sorted(j["sparse"] for j in jobs)


def test_dense_path_space_adds_the_dense_twin_kind(small_config):
    text = (small_config().read_text().replace('sparsity = ["2:4", "dense"]', 'sparsity = ["2:4+dense"]')
            .replace("pipeline = [1, 2, 3]", "pipeline = [2]").replace('dataflow = ["ws", "os"]', 'dataflow = ["ws"]'))
    cfg = load_config(small_config(text=text, name="dp.toml"))
    assert _kinds(hardware_jobs(cfg)) == [("dense", 2, "ws"), ("dense_path", 2, "ws")]
    # one core: no pool is started, the trials characterise as they go
    assert prewarm(cfg, workers=1) == 2
