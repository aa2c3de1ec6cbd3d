"""PE input streams for activity-based power: pruned, quantised layers (traces), real-data
streams per workload family (family_traces)."""
