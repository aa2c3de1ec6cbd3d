"""The names of the one-shot pruning methods (sim.quality.prune.methods implements them), in a module of
their own so that a config can be checked against them without loading the linear algebra."""

from __future__ import annotations

__all__ = ["CALIBRATED", "METHODS"]

#: The pruning methods, by name.
METHODS = ("magnitude", "wanda", "sparsegpt")
#: Methods that need calibration inputs.
CALIBRATED = ("wanda", "sparsegpt")
