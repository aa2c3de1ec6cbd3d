import pytest


@pytest.fixture(scope="session")
def synth_cache(request, tmp_path_factory):
    """One synthesis cache for the ppa tests, never ~/.cache: pytest's cache directory of this
    checkout (``.pytest_cache/d/ppa-cache/synth``), so a second run finds what the first
    synthesised and the xdist workers of one run share it (entries are content-keyed and written
    atomically, as for parallel sweep workers); ``pytest --cache-clear`` starts it empty. Without
    pytest's cache plugin, a temporary directory. Its parent is what SPARSEPE_CACHE_DIR points at
    for CLI subprocesses."""
    cache = getattr(request.config, "cache", None)
    root = cache.mkdir("ppa-cache") if cache is not None else tmp_path_factory.mktemp("ppa-cache")
    return root / "synth"
