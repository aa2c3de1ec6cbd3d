"""The ppa tests share the root conftest's ``synth_cache`` (tests/conftest.py)."""
