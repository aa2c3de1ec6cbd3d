"""Model quality under N:M pruning (the quality half of the primary metric), by concern:

* :mod:`sim.quality.prune`: pruning methods: N:M masks and the gradual schedule (``pruning``),
  one-shot pruning of one matrix (``methods``: magnitude, wanda, sparsegpt; ``method_names`` their
  names), the reduction axis of every checkpoint tensor (``layouts``), calibration inputs
  (``calibration``), one-shot pruning of a whole checkpoint (``oneshot``);
* :mod:`sim.quality.references`: the proxy reference models: the digits MLP (``mlp``) and its
  experiment, latency models, equal latency and guardrail (``reference``), the char-level
  transformer LM (``charlm``) and its experiment and cache (``transformer``), the digits CNN
  (``cnn``); their results shipped with the package are in ``sim/quality/shipped/``;
* :mod:`sim.quality.team`: the team's code and model: its ``MODULE:FUNCTION`` hooks in a child
  process with a time limit (``hooks``; ``team_code`` the child's side), its weight files
  (``weights``), its own eval (``user_eval``) and per precision (``user_precision``), the per-layer
  report of a weight file (``layer_report``);
* :mod:`sim.quality.evidence`: quality evidence in one shape (proxy / model) and the guardrail
  (``evidence``), 95 % intervals (``stats``), quality gates per operand precision on the digits MLP
  (``precision``) and the transformer reference (``transformer_precision``);
* :mod:`sim.quality.traces`: pruned, quantised layers and PE input streams for activity-based power
  (``traces``), the real-data PE streams of each workload family (``family_traces``);
* :mod:`sim.quality.digest`: the digest of the source files that keys the references' and traces'
  caches (module names relative to this package: ``references/transformer.py``).

The subpackages import nothing themselves: import the module (``sim.quality.prune.oneshot``).
"""
