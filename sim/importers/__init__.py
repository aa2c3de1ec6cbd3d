"""Workload importers: SCALE-Sim topologies and configs (:mod:`sim.importers.scalesim`)."""
from sim.importers.scalesim import (  # noqa: F401
    ScaleSimConfig, check_nm_where, load_scalesim_config, load_scalesim_topology)
