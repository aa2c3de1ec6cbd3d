"""Hugging Face config import: published configs (written out here, nothing downloaded), parameter
counts against the published model sizes, MACs per token against an independent formula."""

import json
import subprocess
import sys
from pathlib import Path

import pytest

from hw.errors import InputError
from sim.importers.hf import load_hf_config
from sim.perf import ArrayConfig, simulate

ROOT = Path(__file__).resolve().parents[2]

# [P] meta-llama/Llama-2-7b-hf config.json (the fields the model reads)
LLAMA2_7B = {"architectures": ["LlamaForCausalLM"], "model_type": "llama", "hidden_size": 4096,
             "intermediate_size": 11008, "num_attention_heads": 32, "num_hidden_layers": 32,
             "num_key_value_heads": 32, "max_position_embeddings": 4096, "vocab_size": 32000, "hidden_act": "silu",
             "rms_norm_eps": 1e-05, "tie_word_embeddings": False, "torch_dtype": "float16"}
# [P] mistralai/Mistral-7B-v0.1 config.json
MISTRAL_7B = {"architectures": ["MistralForCausalLM"], "model_type": "mistral", "hidden_size": 4096,
              "intermediate_size": 14336, "num_attention_heads": 32, "num_hidden_layers": 32,
              "num_key_value_heads": 8, "max_position_embeddings": 32768, "vocab_size": 32000, "hidden_act": "silu",
              "rms_norm_eps": 1e-05, "rope_theta": 10000.0, "sliding_window": 4096, "tie_word_embeddings": False}
# [P] openai-community/gpt2 config.json
GPT2_SMALL = {"architectures": ["GPT2LMHeadModel"], "model_type": "gpt2", "n_embd": 768, "n_head": 12, "n_layer": 12,
              "n_ctx": 1024, "n_positions": 1024, "vocab_size": 50257, "activation_function": "gelu_new",
              "layer_norm_epsilon": 1e-05}
# Published sizes: Llama-2-7B 6.74B (Meta model card, "7B" = 6.74B params), Mistral-7B 7.24B (Mistral AI
# announcement / HF card), GPT-2 small 124M (HF openai-community/gpt2 card: 124M parameters)
PUBLISHED = {"llama": 6.74e9, "mistral": 7.24e9, "gpt2": 124e6}


@pytest.mark.parametrize("cfg", [LLAMA2_7B, MISTRAL_7B, GPT2_SMALL], ids=["llama2-7b", "mistral-7b", "gpt2"])
def test_weight_params_within_one_percent_of_published(cfg):
    w = load_hf_config(cfg, seq=128)
    assert w.weight_params == pytest.approx(PUBLISHED[cfg["model_type"]], rel=0.01)


def _macs_per_token(cfg, attn_len):
    """Independent: every weight GEMM is (out x in) MACs per token; attention is (heads x head_dim) x
    attn_len MACs per token for the scores and as many for the values; the LM head vocab x d."""
    if cfg["model_type"] == "gpt2":
        d, L, V, ffn = cfg["n_embd"], cfg["n_layer"], cfg["vocab_size"], 4 * cfg["n_embd"]
        proj = 3 * d * d + d * d + 2 * d * ffn
    else:
        d, L, V, ffn = cfg["hidden_size"], cfg["num_hidden_layers"], cfg["vocab_size"], cfg["intermediate_size"]
        kv = cfg["num_key_value_heads"] * d // cfg["num_attention_heads"]
        proj = d * d + 2 * d * kv + d * d + 3 * d * ffn
    return L * (proj + 2 * attn_len * d) + V * d


@pytest.mark.parametrize("cfg", [LLAMA2_7B, MISTRAL_7B, GPT2_SMALL], ids=["llama2-7b", "mistral-7b", "gpt2"])
def test_prefill_and_decode_macs_per_token(cfg):
    seq, batch, ctx = 512, 2, 1000
    pre = load_hf_config(cfg, seq=seq, batch=batch)
    assert sum(l.dense_macs for l in pre.layers) == batch * seq * _macs_per_token(cfg, seq)
    dec = load_hf_config(cfg, batch=batch, phase="decode", context=ctx)
    assert sum(l.dense_macs for l in dec.layers) == batch * _macs_per_token(cfg, ctx)


def test_every_operator_is_there_and_decode_reads_the_kv_cache():
    w = load_hf_config(MISTRAL_7B, batch=2, phase="decode", context=1000)
    names = {l.name for l in w.layers} | {o.name for o in w.vector_ops}
    for need in ("embed_tokens", "q_proj", "k_proj", "v_proj", "o_proj", "attn_scores", "attn_context", "softmax",
                 "attn_norm", "mlp_norm", "gate_proj", "up_proj", "down_proj", "mlp_act", "mlp_gate_mul",
                 "attn_residual", "mlp_residual", "final_norm", "lm_head", "rope", "kv_cache_write"):
        assert need in names, need
    L = {l.name: l for l in w.layers}
    assert L["k_proj"].N == 8 * 128 and L["attn_scores"].kind == "act_gemm"  # GQA: 8 KV heads of 128
    kv = 2 * 32 * 8 * 128 * 1000 * 2
    assert w.kv_cache_elements == kv
    r = simulate(w, ArrayConfig())  # int8: one byte per cached element, WS reads each cached K/V once
    i = [r.names.index("attn_scores"), r.names.index("attn_context")]
    assert sum(r.layers["dram_weight_bytes"][j] * r.counts[j] for j in i) == kv


def test_bad_configs_are_one_line_errors(tmp_path):
    with pytest.raises(InputError, match="model_type 't5' not supported"):
        load_hf_config({"model_type": "t5"})
    with pytest.raises(InputError, match="missing intermediate_size"):
        load_hf_config({k: v for k, v in LLAMA2_7B.items() if k != "intermediate_size"})
    with pytest.raises(InputError, match="phase"):
        load_hf_config(LLAMA2_7B, phase="train")
    p = tmp_path / "config.json"
    p.write_text(json.dumps(GPT2_SMALL))
    r = subprocess.run([sys.executable, "-m", "explore.cli", "simulate", "--hf-config", str(p), "--seq", "128",
                        "--json"], capture_output=True, text=True, cwd=ROOT, env={"PYTHONPATH": str(ROOT), "PATH": "/usr/bin:/bin"})
    assert r.returncode == 0, r.stderr
    d = json.loads(r.stdout)
    assert d["weight_params"] == load_hf_config(GPT2_SMALL).weight_params and d["vector_cycles"] > 0
    assert {row["unit"] for row in d["layers"]} == {"array"} and "softmax" in {v["name"] for v in d["vector_layers"]}
    p.write_text("{not json")
    r = subprocess.run([sys.executable, "-m", "explore.cli", "simulate", "--hf-config", str(p)], capture_output=True,
                       text=True, cwd=ROOT, env={"PYTHONPATH": str(ROOT), "PATH": "/usr/bin:/bin"})
    assert r.returncode == 2 and len(r.stderr.strip().splitlines()) == 1 and "not valid JSON" in r.stderr


# [P] Qwen/Qwen2-0.5B, facebook/opt-125m and google-bert/bert-base-uncased config.json (fields read)
QWEN2_05B = {"model_type": "qwen2", "hidden_size": 896, "intermediate_size": 4864, "num_attention_heads": 14,
             "num_hidden_layers": 24, "num_key_value_heads": 2, "vocab_size": 151936,
             "max_position_embeddings": 32768, "tie_word_embeddings": True, "hidden_act": "silu"}
OPT_125M = {"model_type": "opt", "hidden_size": 768, "num_hidden_layers": 12, "num_attention_heads": 12,
            "ffn_dim": 3072, "vocab_size": 50272, "max_position_embeddings": 2048, "word_embed_proj_dim": 768,
            "do_layer_norm_before": True, "activation_function": "relu"}
BERT_BASE = {"architectures": ["BertForMaskedLM"], "model_type": "bert", "hidden_size": 768, "num_hidden_layers": 12,
             "num_attention_heads": 12, "intermediate_size": 3072, "vocab_size": 30522,
             "max_position_embeddings": 512, "type_vocab_size": 2, "hidden_act": "gelu"}


@pytest.mark.parametrize("cfg,published", [(QWEN2_05B, 494e6), (OPT_125M, 125e6), (BERT_BASE, 110e6)],
                         ids=["qwen2-0.5b", "opt-125m", "bert-base"])
def test_other_model_types_match_their_published_sizes(cfg, published):
    # published: Qwen2 model card 0.49B (494M), OPT paper Table 1 125M, BERT paper 110M
    w = load_hf_config(cfg, seq=128)
    assert w.weight_params == pytest.approx(published, rel=0.01)
    r = simulate(w, ArrayConfig())
    assert r.totals["vector_cycles"] > 0 and r.totals["dense_macs"] == sum(l.dense_macs for l in w.layers)
