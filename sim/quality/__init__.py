"""Model quality under N:M pruning (the quality half of the primary metric).

Modules:

* :mod:`sim.quality.pruning`: N:M magnitude masks (NVIDIA ASP ``m4n2_1d`` generalised), the
  gradual Zhu & Gupta schedule;
* :mod:`sim.quality.methods`: one-shot N:M pruning of one matrix: magnitude, wanda (Sun et al.
  2024), sparsegpt (Frantar & Alistarh 2023); :mod:`sim.quality.method_names` their names;
* :mod:`sim.quality.layouts`: the reduction axis of every checkpoint tensor (Linear, GPT-2 Conv1D,
  conv, stacked experts);
* :mod:`sim.quality.calibration`: calibration inputs (files, the team's function, sequential mode);
* :mod:`sim.quality.oneshot`: one-shot pruning of a whole checkpoint (which tensors, which axis,
  which method);
* :mod:`sim.quality.mlp`: the digits MLP and its training loops (reference for MLP/CNN workloads);
* :mod:`sim.quality.reference`: the digits reference experiment, latency models, equal latency,
  guardrail;
* :mod:`sim.quality.charlm`: the character-level transformer LM (corpus, model, training);
* :mod:`sim.quality.transformer`: the transformer reference experiment (transformer workloads):
  ASP recipe, one-shot delta of every pruning method, equal latency, cache;
* :mod:`sim.quality.hooks`: the team's ``MODULE:FUNCTION`` (eval, calibration) run in a child
  process with a time limit; :mod:`sim.quality.team_code` the child's side (loads it by name);
* :mod:`sim.quality.user_eval`: the team's own weights and evaluation function (``--eval``);
* :mod:`sim.quality.stats`: 95 % intervals (seeds x bootstrap over the test set);
* :mod:`sim.quality.weights`: user weight files (read, classify, write);
* :mod:`sim.quality.layer_report`: the per-layer pruning report of a user weight file;
* :mod:`sim.quality.evidence`: quality evidence in one shape (proxy / model) and the guardrail;
* :mod:`sim.quality.traces`: pruned, quantised layers and PE input streams for activity-based power;
* :mod:`sim.quality.cnn`: the digits CNN reference (im2col convolutions, autograd, ASP recipe), the
  CNN workloads' activity trace; :mod:`sim.quality.family_traces` the real-data PE streams of each
  workload family (transformer LM, digits CNN, digits MLP) for activity-based power;
* :mod:`sim.quality.precision`: quality gates per operand precision (INT8/INT4/FP8/BF16 quantisation of
  the reference MLP, delta vs dense FP32 with its interval); :mod:`sim.quality.transformer_precision`
  and :mod:`sim.quality.user_precision` the same for the transformer reference and the team's model.
"""
