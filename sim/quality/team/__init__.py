"""The team's code and model: hooks in a child process (hooks, team_code), weight files (weights),
its own eval (user_eval) and per precision (user_precision), the per-layer report (layer_report)."""
