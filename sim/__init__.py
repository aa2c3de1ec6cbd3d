"""How the hardware behaves on work: workloads, importers, the analytical cycle model of the
array, serving latency and pruning quality. May import hw/, never ppa/."""
