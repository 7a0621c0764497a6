"""Self-checks of the numpy reference forward pass (reference_llama.py), independent of strata's
forward pass: the reference must be right before strata is compared against it."""
from __future__ import annotations

import math

import numpy as np
import pytest

from _synth import write_model
from reference_llama import ReferenceModel, Rope, yarn_corr_dims


@pytest.mark.parametrize("arch", ["llama", "qwen2", "qwen3"])
def test_incremental_equals_full_and_is_causal(tmp_path, seed, arch):
    path = write_model(tmp_path / "m.gguf", seed, arch=arch, n_embd=64, n_head=4, n_head_kv=2, n_ff=128,
                       wtype="f32")[0]
    ref = ReferenceModel(path)
    rng = np.random.default_rng(seed)
    toks = rng.integers(0, ref.n_vocab, 30)
    full = ref.full(toks)
    ref.reset()
    parts = np.concatenate([ref.forward(toks[:11]), ref.forward(toks[11:12]), ref.forward(toks[12:])])
    assert np.max(np.abs(full - parts)) < 1e-10, f"seed {seed}"
    # causal: changing a later token leaves earlier logits alone
    toks2 = toks.copy()
    toks2[20] = (toks2[20] + 1) % ref.n_vocab
    other = ref.full(toks2)
    assert np.max(np.abs(other[:20] - full[:20])) < 1e-10 and np.max(np.abs(other[20:] - full[20:])) > 1e-3


def test_a_split_model_and_a_tied_output_read_the_same_weights(tmp_path, seed):
    single = write_model(tmp_path / "one.gguf", seed, n_embd=64, n_ff=128, tied=True)[0]
    shards = write_model(tmp_path / "split.gguf", seed, n_embd=64, n_ff=128, tied=True, n_shards=3)
    assert len(shards) == 3
    a, b = ReferenceModel(single), ReferenceModel(shards[0])
    toks = np.random.default_rng(seed).integers(0, 300, 12)
    assert np.array_equal(a.full(toks), b.full(toks)), f"seed {seed}"
    assert a.out_w is a.tok_embd


def test_rope_pairs_halves_and_linear_scaling():
    x = np.zeros((1, 1, 8))
    x[0, 0, 0] = 1.0
    pos = np.array([3])
    normal = Rope(8, neox=False, freq_base=10000.0).apply(x, pos)
    neox = Rope(8, neox=True, freq_base=10000.0).apply(x, pos)
    # dimension pair 0 rotates by theta = pos * base^0 = 3 radians
    assert np.allclose(normal[0, 0, :2], [math.cos(3), math.sin(3)]) and np.allclose(normal[0, 0, 2:], 0)
    assert np.allclose(neox[0, 0, [0, 4]], [math.cos(3), math.sin(3)]) and np.allclose(neox[0, 0, [1, 2, 3, 5, 6, 7]], 0)
    # pair i of a NeoX rope rotates by pos * base^(-2i/n_rot)
    y = np.zeros((1, 1, 8))
    y[0, 0, 1] = 1.0
    r = Rope(8, neox=True, freq_base=100.0).apply(y, np.array([5]))
    th = 5 * 100.0 ** (-2 / 8)
    assert np.allclose(r[0, 0, [1, 5]], [math.cos(th), math.sin(th)])
    # linear scaling divides positions by the factor
    lin = Rope(8, neox=False, freq_base=10000.0, freq_scale=0.25).apply(x, np.array([12]))
    assert np.allclose(lin, normal)


def test_yarn_ramp_extrapolates_fast_dims_interpolates_slow_dims_and_scales_magnitude():
    n_rot, n_orig, base, factor = 64, 256, 10000.0, 8.0
    low, high = yarn_corr_dims(n_rot, n_orig, base, 32.0, 1.0)
    assert 0 <= low < high <= n_rot - 1
    rope = Rope(n_rot, True, base, 1 / factor, 1.0, n_ctx_orig=n_orig)
    c, s = rope.cos_sin(np.array([100.0]))
    mscale = 1 + 0.1 * math.log(factor)
    theta = np.arctan2(s[0], c[0])
    assert np.allclose(np.hypot(c[0], s[0]), mscale)
    i0 = np.arange(0, n_rot, 2)
    extrap = 100.0 * base ** (-i0 / n_rot)
    wrap = lambda a: np.angle(np.exp(1j * a))  # noqa: E731
    fast = i0 // 2 <= low
    slow = i0 // 2 >= high
    assert fast.any() and slow.any()
    assert np.allclose(theta[fast], wrap(extrap[fast]))
    assert np.allclose(theta[slow], wrap(extrap[slow] / factor))
