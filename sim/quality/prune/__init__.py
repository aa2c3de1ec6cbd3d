"""Pruning methods: N:M masks (pruning), one-shot pruning of one matrix (methods, method_names),
tensor layouts (layouts), calibration inputs (calibration), one-shot pruning of a checkpoint (oneshot)."""
