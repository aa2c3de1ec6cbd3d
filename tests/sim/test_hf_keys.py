"""Hugging Face configs (issue 36 item 6, issue 38 item 6): the heads ``architectures`` names and the
parameter counts against transformers' own models (built on the meta device, when transformers and
torch are installed), active parameters with and without the embeddings against the published
figures, ``quantization_config`` read as the operand precision, and every bad key named as written
with its value and allowed range."""

import pytest

from hw.errors import InputError
from sim.importers.hf import load_hf_config, param_summary
from tests.sim.test_hf_import import (
    BERT_BASE,
    DEEPSEEK_V2_LITE,
    DEEPSEEK_V3,
    GPT2_SMALL,
    LLAMA2_7B,
    MISTRAL_7B,
    MIXTRAL_8X7B,
    OPT_125M,
    QWEN2_05B,
    QWEN3_30B,
    QWEN15_MOE,
)

BERT_HEADS = [
    "BertModel",
    "BertForMaskedLM",
    "BertForPreTraining",
    "BertLMHeadModel",
    "BertForSequenceClassification",
    "BertForTokenClassification",
    "BertForQuestionAnswering",
    "BertForMultipleChoice",
    "BertForNextSentencePrediction",
]
DECODER_HEADS = [(GPT2_SMALL, "GPT2"), (QWEN2_05B, "Qwen2"), (OPT_125M, "OPT"), (LLAMA2_7B, "Llama")]


def _transformers_count(cfg: dict, arch: str) -> int:
    """Parameters of transformers' ``arch`` built from ``cfg`` on the meta device (no memory, no weights);
    ``parameters()`` yields a tied tensor once."""
    torch = pytest.importorskip("torch")
    transformers = pytest.importorskip("transformers")
    c = transformers.AutoConfig.for_model(**{k: v for k, v in cfg.items() if k != "architectures"})
    with torch.device("meta"):
        model = getattr(transformers, arch)(c)
    return sum(p.numel() for p in model.parameters())


@pytest.mark.parametrize("arch", BERT_HEADS)
def test_bert_heads_follow_architectures_to_the_parameter(arch):
    ours = load_hf_config({**BERT_BASE, "architectures": [arch]}, seq=128)
    assert ours.weight_params == _transformers_count(BERT_BASE, arch)


def test_bert_for_masked_lm_has_no_pooler():
    mlm = {layer.name for layer in load_hf_config(BERT_BASE, seq=128).layers}
    base = {
        layer.name for layer in load_hf_config({**BERT_BASE, "architectures": ["BertModel"]}, seq=128).layers
    }
    assert "pooler" not in mlm and "lm_head" in mlm and "pooler" in base and "lm_head" not in base
    # [P] BertModel 109,482,240 and BertForMaskedLM 109,514,298 parameters (transformers, bert-base-uncased)
    assert load_hf_config(BERT_BASE, seq=128).weight_params == 109_514_298


@pytest.mark.parametrize("cfg,prefix", DECODER_HEADS, ids=[p for _, p in DECODER_HEADS])
@pytest.mark.parametrize("head", ["Model", "ForCausalLM", "ForSequenceClassification"])
def test_decoder_heads_follow_architectures_to_the_parameter(cfg, prefix, head):
    arch = prefix + ("LMHeadModel" if prefix == "GPT2" and head == "ForCausalLM" else head)
    ours = load_hf_config({**cfg, "architectures": [arch]}, seq=128)
    assert ours.weight_params == _transformers_count(cfg, arch)
    names = {layer.name for layer in ours.layers}
    assert ("lm_head" in names) == (head == "ForCausalLM") and ("score" in names) == (
        head != "Model" and head != "ForCausalLM"
    )


@pytest.mark.parametrize(
    "cfg,extra",
    [
        (MISTRAL_7B, 0),
        (MIXTRAL_8X7B, 0),
        (QWEN15_MOE, 0),
        (QWEN3_30B, 0),
        (DEEPSEEK_V2_LITE, 0),
        # DeepSeek-V3's e_score_correction_bias (256 per MoE layer, 58 layers) is
        # stored in the checkpoint; transformers holds it as a buffer
        (DEEPSEEK_V3, 58 * 256),
    ],
    ids=["mistral", "mixtral", "qwen1.5-moe", "qwen3-moe", "deepseek-v2-lite", "deepseek-v3"],
)
def test_moe_and_decoder_totals_equal_transformers(cfg, extra):
    transformers = pytest.importorskip("transformers")
    torch = pytest.importorskip("torch")
    c = transformers.AutoConfig.for_model(**{k: v for k, v in cfg.items() if k != "architectures"})
    with torch.device("meta"):
        ref = sum(p.numel() for p in transformers.AutoModelForCausalLM.from_config(c).parameters())
    assert load_hf_config(cfg, seq=128).weight_params == ref + extra


@pytest.mark.parametrize(
    "cfg,published,key",
    [
        # [P] DeepSeek-V2-Lite model card: 15.7 B total, 2.4 B activated (DeepSeek leaves the embedding out);
        # DeepSeek-V3 report: 37 B activated; Mixtral of experts: 12.9 B active (with the embeddings);
        # Qwen1.5-MoE-A2.7B card: 2.7 B activated (with the embeddings)
        (DEEPSEEK_V2_LITE, 2.4e9, "active_params_excluding_embeddings"),
        (DEEPSEEK_V3, 37e9, "active_params_excluding_embeddings"),
        (MIXTRAL_8X7B, 12.9e9, "active_params"),
        (QWEN15_MOE, 2.7e9, "active_params"),
    ],
    ids=["deepseek-v2-lite", "deepseek-v3", "mixtral", "qwen1.5-moe"],
)
def test_active_params_with_and_without_embeddings_and_the_published_convention(cfg, published, key):
    w = load_hf_config(cfg, seq=128)
    s = param_summary(w, cfg["model_type"])
    emb = cfg["vocab_size"] * cfg["hidden_size"]
    assert s["embedding_params"] == emb
    assert s["active_params"] - s["active_params_excluding_embeddings"] == emb
    assert s[key] == pytest.approx(published, rel=0.03)
    assert key in s["published_convention"]
    other = "active_params" if key != "active_params" else "active_params_excluding_embeddings"
    if emb > 0.05 * published:  # where the table matters, the other convention misses the figure
        assert s[other] != pytest.approx(published, rel=0.03)
    if cfg is DEEPSEEK_V2_LITE:
        assert round(s["active_params"] / 1e9, 2) == 2.66 and round(s[key] / 1e9, 2) == 2.45


def test_a_tied_table_is_the_lm_heads_weight_not_an_embedding():
    s = param_summary(load_hf_config(QWEN2_05B, seq=128), "qwen2")
    assert s["embedding_params"] == 0 and s["weight_params"] == 494_032_768
    s = param_summary(load_hf_config({**QWEN2_05B, "architectures": ["Qwen2Model"]}, seq=128), "qwen2")
    assert s["embedding_params"] == 151936 * 896  # no LM head: the table is only the input embedding


def test_fp8_quantization_config_is_the_weight_gemms_precision():
    # [P] deepseek-ai/DeepSeek-V3 config.json quantization_config
    q = {
        "activation_scheme": "dynamic",
        "fmt": "e4m3",
        "quant_method": "fp8",
        "weight_block_size": [128, 128],
    }
    w = load_hf_config({**DEEPSEEK_V3, "quantization_config": q}, seq=64)
    prec = {layer.name: layer.precision for layer in w.layers}
    assert prec["q_a_proj"] == prec["expert_gate_proj"] == prec["kv_a_proj_with_mqa"] == "fp8-e4m3"
    assert prec["lm_head"] is None and prec["router"] is None and prec["attn_scores"] is None
    plain = load_hf_config(DEEPSEEK_V3, seq=64)
    assert all(layer.precision is None for layer in plain.layers)
    assert [layer.dense_macs for layer in w.layers] == [layer.dense_macs for layer in plain.layers]


@pytest.mark.parametrize(
    "q,match",
    [
        (
            {"quant_method": "gptq", "bits": 4, "group_size": 128},
            "gptq 4-bit weights with 16-bit activations",
        ),
        ({"quant_method": "awq", "bits": 4}, "awq 4-bit"),
        ({"quant_method": "bitsandbytes"}, "'bitsandbytes' is not read"),
    ],
)
def test_weight_only_quantization_says_why_it_is_not_an_operand_format(q, match):
    from sim.importers.hf_keys import quantization  # reason: the note itself, read beside the workload

    w = load_hf_config({**LLAMA2_7B, "quantization_config": q}, seq=64)
    assert all(layer.precision is None for layer in w.layers)
    note = quantization({"quantization_config": q}, "c").note
    assert match in note and "\n" not in note


@pytest.mark.parametrize(
    "cfg,kw,match",
    [
        (
            {**LLAMA2_7B, "num_hidden_layers": 2**21},
            {},
            "num_hidden_layers = 2097152 is outside 1..1,048,576",
        ),
        ({**LLAMA2_7B, "vocab_size": 2**30}, {}, "vocab_size = 1073741824 is outside 1..16,777,216"),
        (
            {**MIXTRAL_8X7B, "num_local_experts": 2**40},
            {},
            "num_local_experts = 1099511627776 is outside 1..16,777,216",
        ),
        (
            {**DEEPSEEK_V2_LITE, "first_k_dense_replace": 28},
            {},
            "first_k_dense_replace = 28 is outside 0..27",
        ),
        ({**LLAMA2_7B, "hidden_act": "swoosh"}, {}, "hidden_act = 'swoosh' is not an activation"),
        ({**LLAMA2_7B, "hidden_act": ["silu"]}, {}, "hidden_act = ['silu'] is not an activation"),
        ({**GPT2_SMALL, "activation_function": "mish"}, {}, "activation_function = 'mish'"),
        (
            {**QWEN2_05B, "layer_types": ["full_attention"] * 23},
            {},
            "layer_types has 23 entries, but num_hidden_layers = 24",
        ),
        (
            {**QWEN2_05B, "layer_types": ["full_attention"] * 23 + ["global"]},
            {},
            "layer_types[23] = 'global'",
        ),
        (
            {**LLAMA2_7B, "num_hidden_layers": "32"},
            {},
            "num_hidden_layers must be an integer in 1..1,048,576, got '32'",
        ),
        (
            {**LLAMA2_7B, "architectures": ["LlamaForQuestionAnswering"]},
            {},
            "architectures[0] = 'LlamaForQuestionAnswering'",
        ),
        (
            LLAMA2_7B,
            {"phase": "decode", "context": 10**10},
            "--context: 10000000000 is outside 1..16,777,216",
        ),
        (LLAMA2_7B, {"seq": 256, "batch": 10**11}, "--batch: 100000000000 is outside 1..65,536"),
        (LLAMA2_7B, {"seq": 256, "batch": "2"}, "--batch: must be an integer >= 1, got '2' (a string)"),
        (
            LLAMA2_7B,
            {"phase": "decode", "batch": 2**16},
            "--batch: 65536 is outside 1..1,024: num_hidden_layers x num_key_value_heads x --batch",
        ),
    ],
    ids=[
        "layers",
        "vocab",
        "experts",
        "first-k-dense",
        "act",
        "act-list",
        "gpt2-act",
        "layer-types-length",
        "layer-types-value",
        "string-layers",
        "architectures",
        "context",
        "batch",
        "batch-string",
        "batch-repeats",
    ],
)
def test_bad_keys_and_flags_name_what_was_written(cfg, kw, match):
    with pytest.raises(InputError) as e:
        load_hf_config(cfg, **kw)
    assert match in str(e.value) and "\n" not in str(e.value)


def test_first_k_dense_replace_at_the_layer_count_is_a_dense_model():
    w = load_hf_config({**DEEPSEEK_V2_LITE, "first_k_dense_replace": 27}, seq=64)
    names = {layer.name: layer.count for layer in w.layers}
    assert "router" not in names and names["gate_proj"] == 27 and w.active_params == w.weight_params
