"""Quality evidence: one shape for proxy and model evidence (evidence), 95 % intervals (stats),
quality gates per precision (precision, transformer_precision)."""
