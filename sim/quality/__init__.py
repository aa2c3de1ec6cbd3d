"""Model quality under N:M pruning (the quality half of the primary metric).

Modules:

* :mod:`sim.quality.pruning`: N:M magnitude masks (NVIDIA ASP ``m4n2_1d`` generalised), the
  gradual Zhu & Gupta schedule;
* :mod:`sim.quality.mlp`: the digits MLP and its training loops (reference for MLP/CNN workloads);
* :mod:`sim.quality.reference`: the digits reference experiment, latency models, equal latency,
  guardrail (re-exported here: ``from sim.quality import reference_experiment`` keeps working);
* :mod:`sim.quality.transformer`: the character-level transformer LM reference (bert/gpt/llama
  workloads), trained with ``autograd`` on Python's own ``pydoc_data.topics`` text;
* :mod:`sim.quality.user_eval`: the team's own weights and evaluation function (``--eval``);
* :mod:`sim.quality.stats`: 95 % intervals (seeds x bootstrap over the test set);
* :mod:`sim.quality.weights`: user weight files, per-layer pruning report;
* :mod:`sim.quality.traces`: pruned, quantised layers and PE input streams for activity-based power;
* :mod:`sim.quality.precision`: quality gates per operand precision (INT8/INT4/FP8/BF16 quantisation of
  the reference MLP, delta vs dense FP32 with its interval).
"""

from sim.quality.reference import *  # noqa: F401,F403
from sim.quality.reference import __all__  # noqa: F401
