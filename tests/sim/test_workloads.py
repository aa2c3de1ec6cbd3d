"""Workload library and importers against the published shapes (published-figures.md section 8)."""

from collections import Counter

import pytest

from hw.errors import InputError
from sim.workloads import (
    get_workload,
    list_workloads,
    load_scalesim_config,
    load_scalesim_topology,
    load_workload,
)

# published-figures.md 8.3: ResNet-50 v1.5 conv GEMMs (M, N, K) x count, batch 1, 224x224, plus fc.
RESNET50_PUBLISHED = {
    (12544, 64, 147): 1,
    (3136, 64, 64): 1,
    (3136, 64, 576): 3,
    (3136, 256, 64): 4,
    (3136, 64, 256): 2,
    (3136, 128, 256): 1,
    (784, 128, 1152): 4,
    (784, 512, 128): 4,
    (784, 512, 256): 1,
    (784, 128, 512): 3,
    (784, 256, 512): 1,
    (196, 256, 2304): 6,
    (196, 1024, 256): 6,
    (196, 1024, 512): 1,
    (196, 256, 1024): 5,
    (196, 512, 1024): 1,
    (49, 512, 4608): 3,
    (49, 2048, 512): 3,
    (49, 2048, 1024): 1,
    (49, 512, 2048): 2,
    (1, 1000, 2048): 1,
}


def test_resnet50_matches_published_shapes():
    w = get_workload("resnet50")
    assert Counter((layer.M, layer.N, layer.K) for layer in w.layers) == RESNET50_PUBLISHED
    assert abs(sum(layer.dense_macs for layer in w.layers) / 1e9 - 4.09) < 0.01  # "about 4.09 GMAC"
    conv1 = w.layers[0]
    assert not conv1.sparsifiable and "input dim 3" in conv1.reason  # K = 3x7x7, Cin = 3 fails ASP
    assert all(layer.sparsifiable for layer in w.layers[1:-1])


def test_bert_base_shapes_and_verdicts():
    w = get_workload("bert-base", seq=128, batch=1)
    shapes = {layer.name: (layer.M, layer.N, layer.K, layer.count) for layer in w.layers}
    # published-figures.md 8.2, BERT-Base L=128
    assert shapes["qkv_proj"] == (128, 2304, 768, 12)
    assert shapes["attn_out"] == (128, 768, 768, 12)
    assert shapes["ffn1"] == (128, 3072, 768, 12)
    assert shapes["ffn2"] == (128, 768, 3072, 12)
    assert shapes["attn_scores"] == (128, 128, 64, 12 * 12)
    assert shapes["attn_context"] == (128, 64, 128, 12 * 12)
    verdict = {layer.name: layer.sparsifiable for layer in w.layers}
    assert verdict == {
        "qkv_proj": True,
        "attn_scores": False,
        "attn_context": False,
        "attn_out": True,
        "ffn1": True,
        "ffn2": True,
        "qa_head": False,
    }
    assert "activation x activation" in next(
        layer.reason for layer in w.layers if layer.name == "attn_scores"
    )


def test_bert_large_and_llama_gqa():
    w = get_workload("bert-large", seq=384)
    assert {(layer.M, layer.N, layer.K) for layer in w.layers} >= {
        (384, 3072, 1024),
        (384, 4096, 1024),
        (384, 1024, 4096),
        (384, 384, 64),
        (384, 64, 384),
    }
    l3 = {layer.name: layer for layer in get_workload("llama3-8b-prefill", seq=512).layers}
    assert (l3["k_proj"].N, l3["ffn_gate"].N, l3["ffn_down"].K) == (1024, 14336, 14336)
    dec = {layer.name: layer for layer in get_workload("llama2-7b-decode", batch=4, context=1000).layers}
    assert dec["q_proj"].M == 4 and dec["attn_scores"].N == 1000 and dec["attn_scores"].M == 1
    assert "gpt2-xl" in list_workloads()
    assert {(layer.M, layer.N, layer.K) for layer in get_workload("gpt2-xl").layers} >= {
        (1024, 4800, 1600),
        (1024, 1024, 64),
    }


def test_override_and_unknown_workload():
    w = get_workload("bert-base").with_overrides({"attn_scores": True, "ffn1": False})
    v = {layer.name: layer for layer in w.layers}
    assert v["attn_scores"].sparsifiable and "user override" in v["attn_scores"].reason
    assert not v["ffn1"].sparsifiable
    with pytest.raises(InputError, match="no layer named"):
        w.with_overrides({"nope": True})
    with pytest.raises(InputError, match="unknown workload"):
        get_workload("resnet51")


def test_native_toml_and_csv(tmp_path):
    t = tmp_path / "w.toml"
    t.write_text(
        'name = "mini"\n[[layer]]\nname = "fc1"\nkind = "gemm"\nM = 8\nN = 64\nK = 128\n'
        '[[layer]]\nname = "att"\nkind = "act_gemm"\nM = 8\nN = 8\nK = 64\ncount = 4\n'
    )
    w = load_workload(t)
    assert (
        w.name == "mini"
        and [layer.sparsifiable for layer in w.layers] == [True, False]
        and w.layers[1].count == 4
    )
    c = tmp_path / "w.csv"
    c.write_text("name,kind,M,N,K,count,sparsifiable\nfc1,gemm,8,64,128,,false\nfc2,gemm,8,64,100,2,\n")
    w = load_workload(c)
    assert not w.layers[0].sparsifiable and "user override" in w.layers[0].reason
    assert not w.layers[1].sparsifiable and "100" in w.layers[1].reason  # 100 % 16 != 0
    c.write_text("name,kind,M,N,K,count,sparsifiable\nfc1,gemm,8,0,128,,\n")
    with pytest.raises(InputError, match=r"w\.csv: row 2.*zero-sized"):
        load_workload(c)


def test_scalesim_topology_gemm_and_conv(tmp_path):
    g = tmp_path / "g.csv"
    g.write_text(
        "Layer Name, M, N, K, Sparsity,\nGEMM_1, 3, 5, 16, 2:4,\nGEMM_2, 4, 8, 32, 1:1,\nGEMM_3, 4, 16, 32,\n"
    )
    w = load_scalesim_topology(g)
    assert [(layer.M, layer.N, layer.K) for layer in w.layers] == [(3, 5, 16), (4, 8, 32), (4, 16, 32)]
    assert w.layers[0].sparsifiable and w.layers[0].nm == (2, 4)  # declared 2:4 overrides ASP (5 % 8)
    assert not w.layers[1].sparsifiable  # 1:1 = dense
    assert w.layers[2].sparsifiable  # ASP default
    c = tmp_path / "c.csv"
    c.write_text(
        "Layer name, IFMAP Height, IFMAP Width, Filter Height, Filter Width, Channels, Num Filter, Strides,\n"
        "Conv1, 224, 224, 7, 7, 3, 64, 2,\n,,,,,,,,\nConv2,56,56,3,3,64,64,1\nDP1, 10, 10, 3, 3, 8, 1, 1,\n"
    )
    w = load_scalesim_topology(c)
    # SCALE-Sim rounds up: ceil((224 - 7 + 2) / 2) = 110 (no padding)
    assert (w.layers[0].M, w.layers[0].N, w.layers[0].K) == (110 * 110, 64, 147)
    assert (w.layers[1].M, w.layers[1].K) == (54 * 54, 576)  # last field kept without trailing comma
    assert w.layers[2].kind == "depthwise" and w.layers[2].count == 8 and not w.layers[2].sparsifiable


@pytest.mark.parametrize(
    "row,msg",
    [
        ("GEMM_1, 3, x, 16,", "N must be an integer"),
        ("GEMM_1, 3, 0, 16,", "zero-sized"),
        ("GEMM_1, 3, 5, 16, 3:4,", "N must divide M"),
        ("GEMM_1, 3,", "expected 4 fields"),
    ],
)
def test_scalesim_topology_bad_rows(tmp_path, row, msg):
    g = tmp_path / "bad.csv"
    g.write_text(f"Layer Name, M, N, K, Sparsity,\nok, 1, 2, 3,\n{row}\n")
    with pytest.raises(InputError, match=rf"bad\.csv: row 3: .*{msg}"):
        load_scalesim_topology(g)


def test_scalesim_config(tmp_path):
    p = tmp_path / "s.cfg"
    p.write_text(
        "[general]\nrun_name = t\n[architecture_presets]\nArrayHeight: 8\nArrayWidth: 32\n"
        "IfmapSramSzkB: 6\nFilterSramSzkB: 4\nOfmapSramSzkB: 2\nDataflow : os\nBandwidth : 5\n"
        "[layout]\nIfmapSRAMBankBandwidth: 3\nFilterSRAMBankBandwidth: 4\n"
        "[sparsity]\nSparsitySupport : true\nOptimizedMapping : true\nBlockSize : 4\n"
        "[run_presets]\nInterfaceBandwidth: USER\n"
    )
    c = load_scalesim_config(p)
    assert (c.rows, c.cols, c.dataflow, c.user_bandwidth, c.sparsity_support, c.block_size) == (
        8,
        32,
        "os",
        True,
        True,
        4,
    )
    a = c.to_array_config(rows=16)
    assert (a.rows, a.cols, a.mode, a.effective_pe_k, a.port_words, a.n, a.m) == (
        16,
        32,
        "scalesim",
        1,
        (3, 4, 5),
        2,
        4,
    )
    assert a.sram_split_kb == (6, 4, 2)
    p.write_text(p.read_text().replace("Dataflow : os", "Dataflow : xs"))
    with pytest.raises(InputError, match="Dataflow"):
        load_scalesim_config(p)
