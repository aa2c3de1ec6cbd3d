"""A language model's output head tied to its input embedding table: one rule for pruning and costing.

``sparsepe simulate --hf-config`` keeps an LM head that is tied to the embeddings dense (it is the
embedding table: pruning it makes the input embedding N:M too, which ASP never does) unless
``--prune-lm-head``. ``sparsepe quality`` applies the same rule and flag to a checkpoint. The tie is
found, in this order:

* **the config**: a ``config.json`` beside the weights file (the Hugging Face layout) whose
  ``tie_word_embeddings`` is given: false means no tensor is tied, true that the head is the table;
* **identical tensors**: a 2-D tensor equal, element for element, to an embedding table of the
  checkpoint (``torch.save`` of a tied model's state dict stores both names);
* **the table stored once**: a head tensor (``lm_head``, ``embed_out``, a top-level ``output.weight``)
  while the checkpoint holds no embedding table of its shape. ``safetensors.torch.save_model`` and
  transformers' ``save_pretrained`` keep one name of a shared tensor, so a tied model's file has
  ``lm_head.weight`` and no ``embed_tokens.weight``; every language model has an input embedding, so
  a missing table of the head's shape is the head's alias.

With ``--prune-lm-head`` the head is pruned like any weight, and an identical copy of the table in
the checkpoint is given the same pruned values, so the file stays tied.
"""

from __future__ import annotations

import json
import re
from pathlib import Path

import numpy as np

from hw.errors import InputError

__all__ = ["LM_HEAD_NAME", "config_tie", "tied_heads"]

#: Names of an LM output head: ``lm_head`` (transformers), ``embed_out`` (GPT-NeoX), a top-level
#: ``output.weight`` (Meta's Llama checkpoints).
LM_HEAD_NAME = re.compile(r"(^|[._/])(lm_head|embed_out)([._/]|$)|^output\.weight$", re.IGNORECASE)


def config_tie(weights_path: str | Path) -> bool | None:
    """``tie_word_embeddings`` of the ``config.json`` beside ``weights_path``, or None when there is
    no such file or it does not say (transformers' default differs by family: not guessed)."""
    cfg = Path(weights_path).with_name("config.json")
    if not cfg.is_file():
        return None
    try:
        data = json.loads(cfg.read_text(encoding="utf-8"))
    except (OSError, ValueError) as exc:
        raise InputError(f"not readable JSON ({type(exc).__name__}: {exc})", where=str(cfg)) from None
    value = data.get("tie_word_embeddings") if isinstance(data, dict) else None
    if value is None:
        return None
    if not isinstance(value, bool):
        raise InputError(f"tie_word_embeddings must be true or false, got {value!r}", where=str(cfg))
    return value


def tied_heads(
    tensors: dict[str, np.ndarray], embedding_name: re.Pattern[str], tie: bool | None = None
) -> dict[str, tuple[str | None, str]]:
    """``{head tensor: (the embedding table it is tied to or None when stored once, why)}``; ``tie``:
    the config's ``tie_word_embeddings`` (:func:`config_tie`), None when unknown."""
    if tie is False:
        return {}
    tables = {k: v for k, v in tensors.items() if embedding_name.search(k) and np.ndim(v) == 2}
    found: dict[str, tuple[str | None, str]] = {}
    for name, t in tensors.items():
        if name in tables or np.ndim(t) != 2:
            continue
        same = [
            k for k, v in tables.items() if v.shape == t.shape and v.dtype == t.dtype and np.array_equal(v, t)
        ]
        if same:
            found[name] = (same[0], f"identical to the embedding table {same[0]!r}")
        elif LM_HEAD_NAME.search(name) and not any(v.shape == t.shape for v in tables.values()):
            why = (
                "config.json sets tie_word_embeddings"
                if tie
                else "the checkpoint holds no embedding table of its shape: the tied table stored once, under this name"
            )
            found[name] = (None, why)
    return found
