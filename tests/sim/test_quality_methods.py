"""Pruning methods (sim.quality.methods) and tensor layouts (sim.quality.layouts, sim.quality.oneshot).

The methods are checked against ports of the papers' own code (tests/sim/pruning_reference.py) and
against what they are for: on random layers with correlated inputs the layer reconstruction error
``||X W^T - X W'^T||`` orders sparsegpt <= wanda <= magnitude. The layouts are checked by counting
nonzeros per group along the axis each layout names, recomputed here with plain reshapes."""

from __future__ import annotations

import numpy as np
import pytest

from hw.errors import InputError
from sim.quality.prune.calibration import block_of, calibration_from_arrays
from sim.quality.prune.layouts import parse_layout_rules, resolve_layouts
from sim.quality.prune.methods import magnitude_prune, sparsegpt_prune, wanda_prune
from sim.quality.prune.oneshot import prune_tensors
from tests.sim.pruning_reference import sparsegpt_reference, wanda_reference


def correlated_layer(seed: int, k: int = 128, out: int = 64, samples: int = 512):
    """W ~ N(0, 1); inputs mixed by a random matrix (correlated channels) with log-normal channel scales."""
    rng = np.random.default_rng(seed)
    mix = rng.standard_normal((k, k)) / np.sqrt(k) + np.eye(k)
    x = (rng.standard_normal((samples, k)) @ mix) * np.exp(rng.normal(0.0, 0.5, k))
    return rng.standard_normal((out, k)), x


def groups_ok(w: np.ndarray, n: int, m: int, axis: int) -> bool:
    """At most N nonzeros in every group of M consecutive entries along ``axis`` (plain reshape)."""
    g = np.moveaxis(w, axis, -1)
    g = g.reshape(-1, g.shape[-1] // m, m)
    return bool((np.count_nonzero(g, axis=-1) <= n).all())


@pytest.mark.parametrize("nm", [(2, 4), (4, 8), (1, 4)])
def test_sparsegpt_matches_the_reference_code(nm):
    w, x = correlated_layer(0, k=384, out=24, samples=200)  # three column blocks of 128
    x[:, 5] = 0.0  # a dead input: the reference zeroes its weights
    got, keep = sparsegpt_prune(w, *nm, x=x)
    ref, ref_keep = sparsegpt_reference(w, x, *nm)
    np.testing.assert_array_equal(keep, ref_keep)
    np.testing.assert_allclose(got, ref, rtol=1e-9, atol=1e-12)
    assert groups_ok(got, nm[0], nm[1], 1) and np.all(got[:, 5] == 0)
    # the kept weights were updated (OBS), the pruned ones are zero
    assert not np.allclose(got[keep], w[keep]) and np.all(got[~keep] == 0)


@pytest.mark.parametrize("nm", [(2, 4), (4, 8)])
def test_wanda_matches_the_reference_code(nm):
    w, x = correlated_layer(1, k=64, out=16, samples=50)
    got, keep = wanda_prune(w, x, *nm)
    ref, ref_keep = wanda_reference(w, x, *nm)
    np.testing.assert_array_equal(keep, ref_keep)
    np.testing.assert_array_equal(got, ref)
    assert np.array_equal(got[keep], w[keep])  # no weight update


@pytest.mark.parametrize("seed", range(6))
@pytest.mark.parametrize("nm", [(2, 4), (4, 8)])
def test_reconstruction_error_sparsegpt_le_wanda_le_magnitude(seed, nm):
    w, x = correlated_layer(seed)

    def err(wp):
        return float(np.linalg.norm(x @ (w - wp).T))

    e_mag, e_wanda, e_sgpt = (
        err(magnitude_prune(w, *nm)[0]),
        err(wanda_prune(w, x, *nm)[0]),
        err(sparsegpt_prune(w, *nm, x=x)[0]),
    )
    assert e_sgpt <= e_wanda <= e_mag, (e_sgpt, e_wanda, e_mag)
    assert e_sgpt < 0.9 * e_mag  # a clear margin, not a tie


def gpt2_checkpoint(rng, d: int = 64, layers: int = 2, vocab: int = 100) -> dict[str, np.ndarray]:
    """Tensors named and shaped like HF GPT-2 (Conv1D weights stored (in, out))."""
    t = {
        "transformer.wte.weight": rng.standard_normal((vocab, d)),
        "transformer.wpe.weight": rng.standard_normal((32, d)),
    }
    for i in range(layers):
        b = f"transformer.h.{i}."
        t.update(
            {
                b + "ln_1.weight": np.ones(d),
                b + "ln_1.bias": np.zeros(d),
                b + "attn.c_attn.weight": rng.standard_normal((d, 3 * d)),
                b + "attn.c_attn.bias": np.zeros(3 * d),
                b + "attn.c_proj.weight": rng.standard_normal((d, d)),
                b + "attn.c_proj.bias": np.zeros(d),
                b + "ln_2.weight": np.ones(d),
                b + "ln_2.bias": np.zeros(d),
                b + "mlp.c_fc.weight": rng.standard_normal((d, 4 * d)),
                b + "mlp.c_fc.bias": np.zeros(4 * d),
                b + "mlp.c_proj.weight": rng.standard_normal((4 * d, d)),
                b + "mlp.c_proj.bias": np.zeros(d),
            }
        )
    t.update({"transformer.ln_f.weight": np.ones(d), "transformer.ln_f.bias": np.zeros(d)})
    return {k: v.astype(np.float32) for k, v in t.items()}


@pytest.mark.parametrize("method", ["magnitude", "wanda", "sparsegpt"])
@pytest.mark.parametrize("nm", [(2, 4), (4, 8)])
def test_gpt2_conv1d_tensors_are_pruned_along_their_input_axis(method, nm):
    rng = np.random.default_rng(3)
    t = gpt2_checkpoint(rng)
    cal = None
    if method != "magnitude":  # inputs (samples, in): in = axis 0 of a Conv1D weight
        cal = calibration_from_arrays(
            {
                k[: -len(".weight")]: rng.standard_normal((96, v.shape[0]))
                for k, v in t.items()
                if k.endswith(("c_attn.weight", "c_fc.weight", "c_proj.weight"))
            },
            "test",
        )
    shot = prune_tensors(t, *nm, method=method, calibration=cal)
    conv1d = [k for k in t if k.endswith(("c_attn.weight", "c_proj.weight", "c_fc.weight"))]
    assert sorted(shot.masks) == sorted(conv1d)
    assert shot.layouts_json() == {k: 0 for k in conv1d}
    for k in conv1d:
        w = shot.tensors[k]
        assert w.dtype == np.float32 and w.shape == t[k].shape
        assert groups_ok(w, nm[0], nm[1], 0), k  # N:M along the input axis (0)
        assert np.count_nonzero(w) == w.size * nm[0] // nm[1]
    # along the output axis the groups are not N:M: the axis matters
    assert not all(groups_ok(shot.tensors[k], nm[0], nm[1], 1) for k in conv1d)
    assert {"transformer.wte.weight", "transformer.wpe.weight"} <= set(shot.skipped)
    assert set(shot.methods.values()) == {method}


def test_gpt2_names_stored_as_linear_are_read_as_linear():
    # nanoGPT keeps the GPT-2 names with nn.Linear (out, in): c_attn is (3d, d)
    rng = np.random.default_rng(4)
    t = {
        k: (v.T.copy() if v.ndim == 2 and "wte" not in k and "wpe" not in k else v)
        for k, v in gpt2_checkpoint(rng, layers=1).items()
    }
    shot = prune_tensors(t, 2, 4)
    assert set(shot.layouts_json().values()) == {1}
    assert all(groups_ok(shot.tensors[k], 2, 4, 1) for k in shot.masks)
    # an explicit --layout wins over the name
    shot2 = prune_tensors(
        gpt2_checkpoint(rng, layers=1), 2, 4, layout_rules=parse_layout_rules(["*c_fc*=linear"])
    )
    assert shot2.layouts_json()["transformer.h.0.mlp.c_fc.weight"] == 1
    assert shot2.layouts_json()["transformer.h.0.attn.c_attn.weight"] == 0


def test_conv_grouped_along_cin_with_im2col_calibration():
    rng = np.random.default_rng(5)
    w = rng.standard_normal((16, 32, 3, 3))
    x = rng.standard_normal((70, 32 * 9)) * np.exp(
        rng.normal(0, 1, 32 * 9)
    )  # im2col rows, (Cin, kh, kw) order
    shot = prune_tensors(
        {"conv.weight": w},
        2,
        4,
        method="wanda",
        calibration=calibration_from_arrays({"conv.weight": x}, "test"),
    )
    assert shot.layouts_json() == {"conv.weight": 1}
    # independent: the Wanda metric of w[o, c, r, s] uses im2col column c*9 + r*3 + s; groups of 4 along c
    norms = np.sqrt((x**2).sum(axis=0)).reshape(32, 3, 3)
    metric = np.abs(w) * norms[None]
    keep = np.zeros_like(w, dtype=bool)
    for o in range(16):
        for r in range(3):
            for s in range(3):
                for g in range(0, 32, 4):
                    top = np.argsort(-metric[o, g : g + 4, r, s], kind="stable")[:2]
                    keep[o, g + top, r, s] = True
    np.testing.assert_array_equal(shot.masks["conv.weight"], keep)
    np.testing.assert_array_equal(shot.tensors["conv.weight"], np.where(keep, w, 0))
    # sparsegpt on the conv equals sparsegpt on the matrix (out, kh*kw*Cin) with permuted columns
    sg = prune_tensors(
        {"conv.weight": w},
        2,
        4,
        method="sparsegpt",
        calibration=calibration_from_arrays({"conv.weight": x}, "test"),
    ).tensors["conv.weight"]
    mat = w.transpose(0, 2, 3, 1).reshape(16, -1)
    xp = x.reshape(70, 32, 3, 3).transpose(0, 2, 3, 1).reshape(70, -1)
    ref, _ = sparsegpt_reference(mat, xp, 2, 4)
    np.testing.assert_allclose(sg, ref.reshape(16, 3, 3, 32).transpose(0, 3, 1, 2), rtol=1e-9, atol=1e-12)


def test_stacked_experts_pruned_per_expert_or_skipped_with_reason():
    rng = np.random.default_rng(6)
    w_oi = rng.standard_normal((3, 16, 32))  # (E, out, in)
    w_io = rng.standard_normal((3, 32, 16))  # (E, in, out)
    t = {"moe.experts.gate_up_proj": w_oi, "moe.experts.down_proj": w_io}
    shot = prune_tensors(t, 2, 4)
    assert set(shot.skipped) == set(t) and "--layout experts-out-in" in shot.skipped["moe.experts.down_proj"]
    rules = parse_layout_rules(["*gate_up_proj=experts-out-in", "*down_proj=experts-in-out"])
    shot = prune_tensors(t, 2, 4, layout_rules=rules)
    assert shot.layouts_json() == {"moe.experts.gate_up_proj": 2, "moe.experts.down_proj": 1}
    for e in range(3):
        np.testing.assert_array_equal(
            shot.tensors["moe.experts.gate_up_proj"][e], magnitude_prune(w_oi[e], 2, 4)[0]
        )
        np.testing.assert_array_equal(
            shot.tensors["moe.experts.down_proj"][e], magnitude_prune(w_io[e].T, 2, 4)[0].T
        )
    # the calibration width tells the orientation; per-expert inputs (E, samples, in) are used per expert
    x = rng.standard_normal((3, 40, 32))
    shot = prune_tensors(
        t,
        2,
        4,
        method="wanda",
        calibration=calibration_from_arrays(
            {"moe.experts.gate_up_proj": x, "moe.experts.down_proj": x[0]}, "test"
        ),
    )
    assert shot.layouts["moe.experts.gate_up_proj"].name == "experts-out-in"
    assert shot.layouts["moe.experts.down_proj"].name == "experts-in-out"
    for e in range(3):
        np.testing.assert_array_equal(
            shot.tensors["moe.experts.gate_up_proj"][e], wanda_reference(w_oi[e], x[e], 2, 4)[0]
        )
        np.testing.assert_array_equal(
            shot.tensors["moe.experts.down_proj"][e], wanda_reference(w_io[e].T, x[0], 2, 4)[0].T
        )


def test_ambiguous_3d_tensor_is_skipped_and_wrong_rank_layout_is_an_error():
    rng = np.random.default_rng(7)
    t = {"rel_bias.table": rng.standard_normal((16, 32, 3)), "fc.weight": rng.standard_normal((16, 32))}
    shot = prune_tensors(t, 2, 4)
    assert "cannot tell" in shot.skipped["rel_bias.table"] and list(shot.masks) == ["fc.weight"]
    with pytest.raises(InputError, match="layout gpt2-conv1d describes 2-axis tensors") as ei:
        resolve_layouts({"conv.weight": (16, 32, 3, 3)}, parse_layout_rules(["conv.weight=gpt2-conv1d"]))
    assert "--layout conv.weight=gpt2-conv1d" in ei.value.where
    with pytest.raises(InputError, match="unknown layout"):
        parse_layout_rules(["fc=rowmajor"])
    with pytest.raises(InputError, match="matches no weight tensor"):
        resolve_layouts({"fc.weight": (16, 32)}, parse_layout_rules(["nothing*=linear"]))


def test_block_of_groups_tensors_by_their_first_numeric_part():
    assert block_of("transformer.h.11.attn.c_attn.weight") == "transformer.h.11"
    assert block_of("model.layers.3.mlp.up_proj.weight") == "model.layers.3"
    assert block_of("lm_head.weight") == "lm_head.weight"


def test_sparsegpt_without_calibration_rows_or_hessian_is_an_input_error():
    w, _ = correlated_layer(0, k=16, out=4, samples=8)
    with pytest.raises(InputError, match="calibration rows x or their Hessian"):
        sparsegpt_prune(w, 2, 4)
