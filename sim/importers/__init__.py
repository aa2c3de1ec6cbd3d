"""Workload importers: SCALE-Sim topologies and configs (:mod:`sim.importers.scalesim`), ONNX models
(:mod:`sim.importers.onnx`, needs the ``onnx`` package, imported on use) and Hugging Face configs
(:mod:`sim.importers.hf`)."""

from sim.importers.scalesim import (  # noqa: F401
    ScaleSimConfig,
    check_nm_where,
    load_scalesim_config,
    load_scalesim_topology,
)
