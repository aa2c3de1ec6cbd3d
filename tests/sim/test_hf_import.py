"""Hugging Face config import: published configs (written out here, nothing downloaded), parameter
counts against the published model sizes, MACs per token against an independent formula."""

import json
import subprocess
import sys
from pathlib import Path

import numpy as np
import pytest

from hw.errors import InputError
from sim.importers.hf import load_hf_config
from sim.perf import ArrayConfig, simulate

ROOT = Path(__file__).resolve().parents[2]

# [P] meta-llama/Llama-2-7b-hf config.json (the fields the model reads)
LLAMA2_7B = {
    "architectures": ["LlamaForCausalLM"],
    "model_type": "llama",
    "hidden_size": 4096,
    "intermediate_size": 11008,
    "num_attention_heads": 32,
    "num_hidden_layers": 32,
    "num_key_value_heads": 32,
    "max_position_embeddings": 4096,
    "vocab_size": 32000,
    "hidden_act": "silu",
    "rms_norm_eps": 1e-05,
    "tie_word_embeddings": False,
    "torch_dtype": "float16",
}
# [P] mistralai/Mistral-7B-v0.1 config.json
MISTRAL_7B = {
    "architectures": ["MistralForCausalLM"],
    "model_type": "mistral",
    "hidden_size": 4096,
    "intermediate_size": 14336,
    "num_attention_heads": 32,
    "num_hidden_layers": 32,
    "num_key_value_heads": 8,
    "max_position_embeddings": 32768,
    "vocab_size": 32000,
    "hidden_act": "silu",
    "rms_norm_eps": 1e-05,
    "rope_theta": 10000.0,
    "sliding_window": 4096,
    "tie_word_embeddings": False,
}
# [P] openai-community/gpt2 config.json
GPT2_SMALL = {
    "architectures": ["GPT2LMHeadModel"],
    "model_type": "gpt2",
    "n_embd": 768,
    "n_head": 12,
    "n_layer": 12,
    "n_ctx": 1024,
    "n_positions": 1024,
    "vocab_size": 50257,
    "activation_function": "gelu_new",
    "layer_norm_epsilon": 1e-05,
}
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
        d, L, V, ffn = (
            cfg["hidden_size"],
            cfg["num_hidden_layers"],
            cfg["vocab_size"],
            cfg["intermediate_size"],
        )
        kv = cfg["num_key_value_heads"] * d // cfg["num_attention_heads"]
        proj = d * d + 2 * d * kv + d * d + 3 * d * ffn
    return L * (proj + 2 * attn_len * d) + V * d


@pytest.mark.parametrize("cfg", [LLAMA2_7B, MISTRAL_7B, GPT2_SMALL], ids=["llama2-7b", "mistral-7b", "gpt2"])
def test_prefill_and_decode_macs_per_token(cfg):
    seq, batch, ctx = 512, 2, 1000
    pre = load_hf_config(cfg, seq=seq, batch=batch)
    assert sum(layer.dense_macs for layer in pre.layers) == batch * seq * _macs_per_token(cfg, seq)
    dec = load_hf_config(cfg, batch=batch, phase="decode", context=ctx)
    assert sum(layer.dense_macs for layer in dec.layers) == batch * _macs_per_token(cfg, ctx)


def test_every_operator_is_there_and_decode_reads_the_kv_cache():
    w = load_hf_config(MISTRAL_7B, batch=2, phase="decode", context=1000)
    names = {layer.name for layer in w.layers} | {o.name for o in w.vector_ops}
    for need in (
        "embed_tokens",
        "q_proj",
        "k_proj",
        "v_proj",
        "o_proj",
        "attn_scores",
        "attn_context",
        "softmax",
        "attn_norm",
        "mlp_norm",
        "gate_proj",
        "up_proj",
        "down_proj",
        "mlp_act",
        "mlp_gate_mul",
        "attn_residual",
        "mlp_residual",
        "final_norm",
        "lm_head",
        "rope",
        "kv_cache_write",
    ):
        assert need in names, need
    L = {layer.name: layer for layer in w.layers}
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
    r = subprocess.run(
        [sys.executable, "-m", "explore.cli", "simulate", "--hf-config", str(p), "--seq", "128", "--json"],
        capture_output=True,
        text=True,
        cwd=ROOT,
        env={"PYTHONPATH": str(ROOT), "PATH": "/usr/bin:/bin"},
    )
    assert r.returncode == 0, r.stderr
    d = json.loads(r.stdout)
    assert d["weight_params"] == load_hf_config(GPT2_SMALL).weight_params and d["vector_cycles"] > 0
    assert {row["unit"] for row in d["layers"]} == {"array"} and "softmax" in {
        v["name"] for v in d["vector_layers"]
    }
    p.write_text("{not json")
    r = subprocess.run(
        [sys.executable, "-m", "explore.cli", "simulate", "--hf-config", str(p)],
        capture_output=True,
        text=True,
        cwd=ROOT,
        env={"PYTHONPATH": str(ROOT), "PATH": "/usr/bin:/bin"},
    )
    assert r.returncode == 2 and len(r.stderr.strip().splitlines()) == 1 and "not valid JSON" in r.stderr


# [P] Qwen/Qwen2-0.5B, facebook/opt-125m and google-bert/bert-base-uncased config.json (fields read)
QWEN2_05B = {
    "model_type": "qwen2",
    "hidden_size": 896,
    "intermediate_size": 4864,
    "num_attention_heads": 14,
    "num_hidden_layers": 24,
    "num_key_value_heads": 2,
    "vocab_size": 151936,
    "max_position_embeddings": 32768,
    "tie_word_embeddings": True,
    "hidden_act": "silu",
}
OPT_125M = {
    "model_type": "opt",
    "hidden_size": 768,
    "num_hidden_layers": 12,
    "num_attention_heads": 12,
    "ffn_dim": 3072,
    "vocab_size": 50272,
    "max_position_embeddings": 2048,
    "word_embed_proj_dim": 768,
    "do_layer_norm_before": True,
    "activation_function": "relu",
}
BERT_BASE = {
    "architectures": ["BertForMaskedLM"],
    "model_type": "bert",
    "hidden_size": 768,
    "num_hidden_layers": 12,
    "num_attention_heads": 12,
    "intermediate_size": 3072,
    "vocab_size": 30522,
    "max_position_embeddings": 512,
    "type_vocab_size": 2,
    "hidden_act": "gelu",
}


@pytest.mark.parametrize(
    "cfg,published",
    [(QWEN2_05B, 494e6), (OPT_125M, 125e6), (BERT_BASE, 110e6)],
    ids=["qwen2-0.5b", "opt-125m", "bert-base"],
)
def test_other_model_types_match_their_published_sizes(cfg, published):
    # published: Qwen2 model card 0.49B (494M), OPT paper Table 1 125M, BERT paper 110M
    w = load_hf_config(cfg, seq=128)
    assert w.weight_params == pytest.approx(published, rel=0.01)
    r = simulate(w, ArrayConfig())
    assert r.totals["vector_cycles"] > 0 and r.totals["dense_macs"] == sum(
        layer.dense_macs for layer in w.layers
    )


# [P] mistralai/Mixtral-8x7B-v0.1 config.json (fields read)
MIXTRAL_8X7B = {
    "architectures": ["MixtralForCausalLM"],
    "model_type": "mixtral",
    "hidden_size": 4096,
    "intermediate_size": 14336,
    "num_hidden_layers": 32,
    "num_attention_heads": 32,
    "num_key_value_heads": 8,
    "vocab_size": 32000,
    "max_position_embeddings": 32768,
    "num_local_experts": 8,
    "num_experts_per_tok": 2,
    "sliding_window": None,
    "hidden_act": "silu",
    "tie_word_embeddings": False,
    "rope_theta": 1e6,
}
# [P] Qwen/Qwen1.5-MoE-A2.7B config.json (qwen2_moe: 60 routed experts, top 4, one shared expert with a gate)
QWEN15_MOE = {
    "model_type": "qwen2_moe",
    "hidden_size": 2048,
    "intermediate_size": 5632,
    "moe_intermediate_size": 1408,
    "shared_expert_intermediate_size": 5632,
    "num_experts": 60,
    "num_experts_per_tok": 4,
    "num_hidden_layers": 24,
    "num_attention_heads": 16,
    "num_key_value_heads": 16,
    "vocab_size": 151936,
    "decoder_sparse_step": 1,
    "mlp_only_layers": [],
    "max_position_embeddings": 8192,
    "sliding_window": 32768,
    "use_sliding_window": False,
    "max_window_layers": 21,
    "tie_word_embeddings": False,
}
# [P] Qwen/Qwen3-30B-A3B config.json
QWEN3_30B = {
    "model_type": "qwen3_moe",
    "hidden_size": 2048,
    "intermediate_size": 6144,
    "moe_intermediate_size": 768,
    "num_experts": 128,
    "num_experts_per_tok": 8,
    "num_hidden_layers": 48,
    "num_attention_heads": 32,
    "num_key_value_heads": 4,
    "head_dim": 128,
    "vocab_size": 151936,
    "decoder_sparse_step": 1,
    "mlp_only_layers": [],
    "max_position_embeddings": 40960,
    "sliding_window": None,
    "use_sliding_window": False,
    "max_window_layers": 48,
    "tie_word_embeddings": False,
}
# [P] deepseek-ai/DeepSeek-V3 config.json (the multi-token-prediction module is not part of the 671B)
DEEPSEEK_V3 = {
    "model_type": "deepseek_v3",
    "hidden_size": 7168,
    "intermediate_size": 18432,
    "moe_intermediate_size": 2048,
    "n_routed_experts": 256,
    "n_shared_experts": 1,
    "num_experts_per_tok": 8,
    "first_k_dense_replace": 3,
    "moe_layer_freq": 1,
    "num_hidden_layers": 61,
    "num_attention_heads": 128,
    "num_key_value_heads": 128,
    "q_lora_rank": 1536,
    "kv_lora_rank": 512,
    "qk_nope_head_dim": 128,
    "qk_rope_head_dim": 64,
    "v_head_dim": 128,
    "vocab_size": 129280,
    "scoring_func": "sigmoid",
    "topk_method": "noaux_tc",
    "max_position_embeddings": 163840,
    "tie_word_embeddings": False,
}
# [P] deepseek-ai/DeepSeek-V2 and DeepSeek-V2-Lite config.json
DEEPSEEK_V2 = {
    "model_type": "deepseek_v2",
    "hidden_size": 5120,
    "intermediate_size": 12288,
    "moe_intermediate_size": 1536,
    "n_routed_experts": 160,
    "n_shared_experts": 2,
    "num_experts_per_tok": 6,
    "first_k_dense_replace": 1,
    "moe_layer_freq": 1,
    "num_hidden_layers": 60,
    "num_attention_heads": 128,
    "num_key_value_heads": 128,
    "q_lora_rank": 1536,
    "kv_lora_rank": 512,
    "qk_nope_head_dim": 128,
    "qk_rope_head_dim": 64,
    "v_head_dim": 128,
    "vocab_size": 102400,
    "scoring_func": "softmax",
    "max_position_embeddings": 163840,
    "tie_word_embeddings": False,
}
DEEPSEEK_V2_LITE = {
    **DEEPSEEK_V2,
    "hidden_size": 2048,
    "intermediate_size": 10944,
    "moe_intermediate_size": 1408,
    "n_routed_experts": 64,
    "num_hidden_layers": 27,
    "num_attention_heads": 16,
    "num_key_value_heads": 16,
    "q_lora_rank": None,
}


def test_mixtral_8x7b_total_and_active_params():
    # Mistral AI, "Mixtral of experts" (2023): 46.7B parameters, 12.9B used per token
    w = load_hf_config(MIXTRAL_8X7B, seq=128)
    assert w.weight_params == pytest.approx(46.70e9, rel=0.01)
    assert w.active_params == pytest.approx(12.9e9, rel=0.01)


@pytest.mark.parametrize(
    "cfg,total,active,embedding_in_active",
    [
        # model cards: Qwen1.5-MoE-A2.7B 14.3B total / 2.7B activated; Qwen3-30B-A3B 30.5B / 3.3B;
        # DeepSeek-V3 671B / 37B, DeepSeek-V2 236B / 21B, DeepSeek-V2-Lite 15.7B / 2.4B (DeepSeek's activated
        # counts leave the input embedding table out: one row of it is read per token)
        (QWEN15_MOE, 14.3e9, 2.7e9, True),
        (QWEN3_30B, 30.5e9, 3.3e9, True),
        (DEEPSEEK_V3, 671e9, 37e9, False),
        (DEEPSEEK_V2, 236e9, 21e9, False),
        (DEEPSEEK_V2_LITE, 15.7e9, 2.4e9, False),
    ],
    ids=["qwen1.5-moe-a2.7b", "qwen3-30b-a3b", "deepseek-v3", "deepseek-v2", "deepseek-v2-lite"],
)
def test_moe_models_match_their_published_sizes(cfg, total, active, embedding_in_active):
    w = load_hf_config(cfg, seq=128)
    emb = cfg["vocab_size"] * cfg["hidden_size"]
    assert w.weight_params == pytest.approx(total, rel=0.02)
    assert w.active_params - (0 if embedding_in_active else emb) == pytest.approx(active, rel=0.03)
    dec = load_hf_config(cfg, batch=3, phase="decode", context=300)
    assert (dec.weight_params, dec.active_params) == (w.weight_params, w.active_params)


def test_moe_macs_per_token_are_the_k_chosen_experts_and_the_router():
    c = MIXTRAL_8X7B
    d, L, f, E, k, V = 4096, 32, 14336, 8, 2, 32000
    kv = 8 * 128
    for batch, phase, ctx in ((1, "decode", 1000), (3, "decode", 700), (2, "prefill", 256)):
        w = load_hf_config(c, seq=ctx, batch=batch, phase=phase, context=ctx)
        tokens = batch * (1 if phase == "decode" else ctx)
        # independent: per token q, k, v, o; 2 x keys x d of attention; k experts of 3 d f; the router E d
        per_token = L * (2 * d * d + 2 * d * kv + 2 * ctx * d + k * 3 * d * f + E * d) + V * d
        assert sum(layer.dense_macs for layer in w.layers) == tokens * per_token, (batch, phase)


def test_moe_weight_traffic_is_the_experts_the_batch_touches():
    """Decode at batch B reads the weights of E (1 - (1 - k/E)^B) experts per layer (int8, WS: each
    weight once); the formula itself is checked against random top-k routing."""
    d, L, f, E, k = 4096, 32, 14336, 8, 2
    rng = np.random.default_rng(0)
    for B in (1, 2, 4, 8, 64):
        w = load_hf_config(MIXTRAL_8X7B, batch=B, phase="decode", context=512)
        r = simulate(w, ArrayConfig(sparse=False))
        expert = [i for i, nm in enumerate(r.names) if nm.startswith("expert_")]
        got = sum(r.layers["dram_weight_bytes"][i] * r.counts[i] for i in expert)
        expect = E * (1 - (1 - k / E) ** B)
        # the instances are whole experts: within half an expert of L x expect over the 32 layers
        assert abs(got - L * expect * 3 * d * f) <= 0.5 * 3 * d * f
        # Monte Carlo of independent uniform top-k routing: mean distinct experts over 4,000 batches
        picks = np.argsort(rng.random((4000, B, E)), axis=-1)[..., :k].reshape(4000, -1)
        touched = [len(set(row)) for row in picks]
        assert np.mean(touched) == pytest.approx(expect, rel=0.02)
    one = {layer.name: layer for layer in load_hf_config(MIXTRAL_8X7B, batch=1, phase="decode").layers}
    assert one["expert_gate_proj"].count == L * k and "expert_gate_proj+1" not in one  # one token: k experts


def test_sliding_window_limits_attention_and_the_kv_cache():
    """Mistral-7B's 4,096-token window: a decode at 16k context moves the KV cache of 4,096 tokens."""
    L, kvh, hd, W, batch = 32, 8, 128, 4096, 2
    w = load_hf_config(MISTRAL_7B, batch=batch, phase="decode", context=16384)
    ref = load_hf_config(MISTRAL_7B, batch=batch, phase="decode", context=W)
    assert w.kv_cache_elements == ref.kv_cache_elements == 2 * L * kvh * hd * W * batch

    def attn(wl):
        return sum(
            r.layers["dram_weight_bytes"][i] * r.counts[i]
            for r in [simulate(wl, ArrayConfig())]
            for i, nm in enumerate(r.names)
            if nm.startswith("attn_")
        )

    assert attn(w) == attn(ref) == 2 * L * kvh * hd * W * batch
    no_window = load_hf_config(
        {**MISTRAL_7B, "sliding_window": None}, batch=batch, phase="decode", context=16384
    )
    assert attn(no_window) == 4 * attn(w)
    pre = {layer.name: layer for layer in load_hf_config(MISTRAL_7B, seq=8192).layers}
    assert (pre["attn_scores"].M, pre["attn_scores"].N) == (4 * 8192, W)
    # Qwen2: the window applies only with use_sliding_window, from max_window_layers on
    assert (
        load_hf_config({**QWEN2_05B, "sliding_window": 1024}, phase="decode", context=4096).kv_cache_elements
        == 2 * 24 * 2 * 64 * 4096
    )
    # a window the model does not use is not read: transformers' Qwen2MoeConfig() writes 0 beside
    # use_sliding_window false (it was "sliding_window must be a positive integer or null, got 0")
    assert (
        load_hf_config({**QWEN2_05B, "sliding_window": 0}, phase="decode", context=4096).kv_cache_elements
        == 2 * 24 * 2 * 64 * 4096
    )
    with pytest.raises(InputError, match="sliding_window must be a positive integer"):
        load_hf_config({**MISTRAL_7B, "sliding_window": 0})
    q = load_hf_config(
        {**QWEN2_05B, "sliding_window": 1024, "use_sliding_window": True, "max_window_layers": 16},
        phase="decode",
        context=4096,
    )
    assert q.kv_cache_elements == 2 * 2 * 64 * (16 * 4096 + 8 * 1024)
    names = {layer.name: layer.count for layer in q.layers}
    assert names["attn_scores"] == 16 * 2 and names["attn_scores_window"] == 8 * 2


def test_tied_lm_head_is_not_a_target_unless_asked():
    w = load_hf_config(QWEN2_05B, seq=128)
    head = {layer.name: layer for layer in w.layers}["lm_head"]
    assert not head.sparsifiable and "tied" in head.reason
    weight_macs = sum(layer.dense_macs for layer in w.layers if layer.kind == "gemm")
    assert 0.25 < head.dense_macs / weight_macs < 0.31  # about 28 % of Qwen2-0.5B's weight MACs
    pruned = {layer.name: layer for layer in load_hf_config(QWEN2_05B, seq=128, prune_lm_head=True).layers}[
        "lm_head"
    ]
    assert pruned.sparsifiable
    assert {layer.name: layer for layer in load_hf_config(MISTRAL_7B, seq=128).layers}[
        "lm_head"
    ].sparsifiable  # not tied


def test_deepseek_latent_attention_caches_the_latent():
    w = load_hf_config(DEEPSEEK_V3, batch=2, phase="decode", context=1000)
    assert w.kv_cache_elements == 61 * (512 + 64) * 1000 * 2
    L = {layer.name: layer for layer in w.layers}
    assert (L["attn_scores"].M, L["attn_scores"].N, L["attn_scores"].K, L["attn_scores"].count) == (
        128,
        1000,
        576,
        122,
    )
    assert not L["kv_b_absorb_k"].sparsifiable and L["kv_b_absorb_v"].sparsifiable
    assert L["router"].count == 58 and L["gate_proj"].count == 3  # first_k_dense_replace = 3 dense MLPs


@pytest.mark.parametrize(
    "cfg,match",
    [
        ({**MIXTRAL_8X7B, "num_experts_per_tok": 9}, "num_experts_per_tok 9 exceeds the number of experts 8"),
        ({**QWEN3_30B, "num_experts_per_tok": 129}, "exceeds the number of experts 128"),
        ({**DEEPSEEK_V3, "num_experts_per_tok": 257}, "exceeds the number of experts 256"),
        ({**MISTRAL_7B, "sliding_window": -1}, "sliding_window must be a positive integer or null, got -1"),
        (
            {**GPT2_SMALL, "n_embd": 64, "n_head": 5},
            "hidden size 64 is not a multiple of the 5 attention heads",
        ),
        ({**LLAMA2_7B, "num_attention_heads": 30}, "hidden size 4096 is not a multiple of the 30"),
        ({**OPT_125M, "num_attention_heads": 7}, "not a multiple of the 7"),
        ({**BERT_BASE, "num_attention_heads": 5}, "not a multiple of the 5"),
        ({**MIXTRAL_8X7B, "num_attention_heads": 24, "num_key_value_heads": 8}, "not a multiple of the 24"),
        ({**QWEN15_MOE, "num_attention_heads": 15, "num_key_value_heads": 15}, "not a multiple of the 15"),
    ],
    ids=[
        "mixtral-topk",
        "qwen3-topk",
        "deepseek-topk",
        "negative-window",
        "gpt2-heads",
        "llama-heads",
        "opt-heads",
        "bert-heads",
        "mixtral-heads",
        "qwen-moe-heads",
    ],
)
def test_bad_moe_window_and_head_configs(cfg, match, tmp_path):
    with pytest.raises(InputError, match=match):
        load_hf_config(cfg, seq=64)
    p = tmp_path / "config.json"
    p.write_text(json.dumps(cfg))
    r = subprocess.run(
        [sys.executable, "-m", "explore.cli", "simulate", "--hf-config", str(p), "--seq", "64"],
        capture_output=True,
        text=True,
        cwd=ROOT,
        env={"PYTHONPATH": str(ROOT), "PATH": "/usr/bin:/bin"},
    )
    lines = r.stderr.strip().splitlines()
    assert (
        r.returncode == 2
        and len(lines) == 1
        and lines[0].startswith("sparsepe: error:")
        and match in lines[0]
    )
