import pytest


@pytest.fixture(scope="session")
def synth_cache(tmp_path_factory):
    """One synthesis cache for the ppa tests (a temporary directory, never ~/.cache); its parent
    is what SPARSEPE_CACHE_DIR points at for CLI subprocesses."""
    return tmp_path_factory.mktemp("ppa-cache") / "synth"
