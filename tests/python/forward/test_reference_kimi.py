"""Self-checks of the numpy kimi-linear / kimi-k3 reference (reference_kimi.py) that need no strata
forward pass: the chunked (WY) KDA recurrence against the step form, incremental against full
runs, a KDA step worked by hand, and the K3 reference reducing to the kimi-linear one when its
extras are switched off. The reference must be right before strata is compared against it."""
from __future__ import annotations

import math

import numpy as np
import pytest

from _synth_kimi import write_kimi_model
from reference_kimi import (ReferenceKimi, causal_conv, kda_chunked, kda_gate, kda_step, l2_norm, situ,
                            softplus)


def _random_kda(rng: np.random.Generator, T: int, H: int, dk: int, dv: int, gate: str):
    q = l2_norm(rng.standard_normal((T, H, dk)), 1e-5) / math.sqrt(dk)
    k = l2_norm(rng.standard_normal((T, H, dk)), 1e-5)
    v = rng.standard_normal((T, H, dv))
    z = rng.standard_normal((T, H, dk))
    a = -rng.uniform(0.1, 2.0, H)
    if gate == "softplus":
        g = kda_gate(z, a, None)
        g[:, 0, :2] -= 30.0        # a few channels decay to nothing (exp underflows inside a chunk)
    elif gate == "lower_bound":
        g = kda_gate(z, a, -5.0)
    else:                          # no decay at all
        g = np.zeros((T, H, dk))
    beta = rng.uniform(0.0, 1.0, (T, H))
    S0 = rng.standard_normal((H, dk, dv))
    return q, k, v, g, beta, S0


@pytest.mark.parametrize("gate", ["softplus", "lower_bound", "none"])
def test_the_chunked_kda_form_equals_the_step_form(seed, gate):
    rng = np.random.default_rng(seed)
    T, H, dk, dv = 37, 3, 8, 6
    q, k, v, g, beta, S0 = _random_kda(rng, T, H, dk, dv, gate)
    o_ref, S_ref = kda_step(q, k, v, g, beta, S0)
    assert np.all(np.isfinite(o_ref)) and np.max(np.abs(o_ref)) > 0.1, f"seed {seed}"
    for chunk in (1, 3, 5, 16, 37, 64):
        o, S = kda_chunked(q, k, v, g, beta, S0, chunk)
        assert np.max(np.abs(o - o_ref)) < 1e-10, f"seed {seed} chunk {chunk}: {np.max(np.abs(o - o_ref))}"
        assert np.max(np.abs(S - S_ref)) < 1e-10, f"seed {seed} chunk {chunk}: {np.max(np.abs(S - S_ref))}"
    # chaining: two calls continue where the first stopped, in either form
    o1, S1 = kda_step(q[:20], k[:20], v[:20], g[:20], beta[:20], S0)
    o2, S2 = kda_chunked(q[20:], k[20:], v[20:], g[20:], beta[20:], S1, 7)
    assert np.max(np.abs(np.concatenate([o1, o2]) - o_ref)) < 1e-10 and np.max(np.abs(S2 - S_ref)) < 1e-10
    # padding tokens (k = v = 0, g = 0, beta = 0) leave the state alone
    zk = np.zeros((4, H, dk))
    _, Sp = kda_chunked(zk, zk, np.zeros((4, H, dv)), zk, np.zeros((4, H)), S_ref, 3)
    assert np.array_equal(Sp, S_ref)


def test_a_kda_step_worked_by_hand():
    # one head, dk = dv = 2; S rows are key channels, columns value channels
    S0 = np.array([[[1.0, 2.0], [3.0, 4.0]]])
    q = np.array([[[0.6, 0.8]], [[1.0, 0.0]]])
    k = np.array([[[1.0, 0.0]], [[0.6, 0.8]]])
    v = np.array([[[3.0, 4.0]], [[1.0, 0.0]]])
    g = np.log(np.array([[[0.5, 1.0]], [[1.0, 0.5]]]))
    beta = np.array([[0.5], [1.0]])
    # token 1: decay the key ROWS by (0.5, 1): S~ = [[0.5, 1], [3, 4]]; S~^T k = [0.5, 1];
    #   u = 0.5 ([3, 4] - [0.5, 1]) = [1.25, 1.5]; S1 = S~ + k u^T = [[1.75, 2.5], [3, 4]];
    #   o1 = S1^T q = [0.6*1.75 + 0.8*3, 0.6*2.5 + 0.8*4] = [3.45, 4.7]
    # token 2: S~ = diag(1, 0.5) S1 = [[1.75, 2.5], [1.5, 2]]; S~^T k = [2.25, 3.1];
    #   u = 1 * ([1, 0] - [2.25, 3.1]) = [-1.25, -3.1];
    #   S2 = S~ + k u^T = [[1.0, 0.64], [0.5, -0.48]]; o2 = S2^T [1, 0] = [1.0, 0.64]
    #   (beta = 1: S2^T k = v exactly, the delta rule's fixed point)
    o, S = kda_step(q, k, v, g, beta, S0)
    assert np.allclose(o[:, 0, :], [[3.45, 4.7], [1.0, 0.64]], atol=1e-12, rtol=0)
    assert np.allclose(S[0], [[1.0, 0.64], [0.5, -0.48]], atol=1e-12, rtol=0)
    assert np.allclose(S[0].T @ k[1, 0], v[1, 0], atol=1e-12)
    for chunk in (1, 2):
        oc, Sc = kda_chunked(q, k, v, g, beta, S0, chunk)
        assert np.allclose(oc, o, atol=1e-12) and np.allclose(Sc, S, atol=1e-12)
    # decaying the value columns instead would give a different first output
    S_wrong = S0[0] * np.array([0.5, 1.0])[None, :]
    u_wrong = 0.5 * (v[0, 0] - S_wrong.T @ k[0, 0])
    assert not np.allclose((S_wrong + np.outer(k[0, 0], u_wrong)).T @ q[0, 0], [3.45, 4.7])


def test_the_kda_pieces_worked_by_hand():
    # decay gates: a = -exp(A_log) = -1, z = 0: softplus form -ln 2, lower-bound form lb * sigmoid(0)
    z = np.zeros((1, 2))
    assert np.allclose(kda_gate(z, [-1.0], None), -math.log(2.0))
    assert np.allclose(kda_gate(z, [-1.0], -5.0), -2.5)
    # lower-bound form: exp(A_log) = 2 is a temperature inside the sigmoid: lb * sigmoid(2 * 1)
    assert np.allclose(kda_gate(np.ones((1, 1)), [-2.0], -5.0), -5.0 / (1.0 + math.exp(-2.0)))
    assert np.allclose(kda_gate(np.ones((1, 1)), [-2.0], None), -2.0 * math.log1p(math.e))
    assert np.allclose(softplus(np.array([-800.0, 0.0, 800.0])), [0.0, math.log(2.0), 800.0])
    # L2 norm with eps as a floor on the norm
    assert np.allclose(l2_norm(np.array([3.0, 4.0]), 1e-5), [0.6, 0.8])
    assert np.allclose(l2_norm(np.array([3e-7, 4e-7]), 1e-5), [0.03, 0.04])
    # conv: w[c, j], tap K-1 on the current input, zeros before the start, state = last K-1 inputs
    w = np.array([[1.0, 10.0, 100.0], [2.0, 0.0, -1.0]])   # (D=2, K=3)
    x = np.array([[1.0, 1.0], [2.0, 3.0], [4.0, 5.0]])
    y, st = causal_conv(x, np.zeros((2, 2)), w)
    assert np.allclose(y, [[100.0, -1.0], [210.0, -3.0], [421.0, -3.0]])
    assert np.allclose(st, x[1:])
    y2, _ = causal_conv(np.array([[1.0, 0.0]]), st, w)  # window (2, 4, 1) / (3, 5, 0)
    assert np.allclose(y2, [[2.0 + 40.0 + 100.0, 6.0]])
    # SiTU: beta tanh(a/beta) sigmoid(a) * lin tanh(b/lin); lin <= 0: b unchanged
    a, b = np.array([2.0]), np.array([3.0])
    want = 4.0 * math.tanh(0.5) / (1 + math.exp(-2.0)) * 25.0 * math.tanh(3.0 / 25.0)
    assert np.allclose(situ(a, b, 4.0, 25.0), want)
    assert np.allclose(situ(a, b, 4.0, 0.0), 4.0 * math.tanh(0.5) / (1 + math.exp(-2.0)) * 3.0)


@pytest.mark.parametrize("arch", ["kimi-linear", "kimi-k3"])
def test_incremental_equals_full_and_is_causal(tmp_path, seed, arch):
    path = write_kimi_model(tmp_path / "m.gguf", seed, arch=arch)[0]
    ref = ReferenceKimi(path)
    assert ref.is_kda == [True, True, False, True] and ref.k3 == (arch == "kimi-k3")
    rng = np.random.default_rng(seed)
    toks = rng.integers(0, ref.n_vocab, 24)
    full = ref.full(toks)
    assert np.all(np.isfinite(full)) and 0.1 < np.sqrt(np.mean(full ** 2)) < 10, f"seed {seed}"
    assert len(ref.margins) == 24 and all(m > 0 for m in ref.margins)
    ref.reset()
    parts = np.concatenate([ref.forward(toks[:9]), ref.forward(toks[9:10]), ref.forward(toks[10:11]),
                            ref.forward(toks[11:])])
    assert np.max(np.abs(full - parts)) < 1e-10, f"seed {seed}: {np.max(np.abs(full - parts))}"
    # the recurrent and conv states carry: a fresh run of the tail differs
    assert np.max(np.abs(ref.full(toks[11:]) - full[11:])) > 1e-3
    # causal: changing a later token leaves earlier logits alone
    toks2 = toks.copy()
    toks2[15] = (toks2[15] + 1) % ref.n_vocab
    other = ref.full(toks2)
    assert np.max(np.abs(other[:15] - full[:15])) < 1e-10 and np.max(np.abs(other[15:] - full[15:])) > 1e-3
    # the chunked KDA form gives the same logits
    chunked = ReferenceKimi(path, kda_chunk=4)
    assert np.max(np.abs(chunked.full(toks) - full)) < 1e-10
    # snapshot / restore
    ref.reset()
    ref.forward(toks[:10])
    snap = ref.snapshot()
    a = ref.forward(toks[10:])
    ref.restore(snap)
    assert np.array_equal(ref.forward(toks[10:]), a) and np.max(np.abs(a - full[10:])) < 1e-10


def test_the_f16_latent_cache_and_the_legacy_kv_b_form(tmp_path, seed):
    path = write_kimi_model(tmp_path / "m.gguf", seed)[0]
    legacy = write_kimi_model(tmp_path / "legacy.gguf", seed, legacy_kv_b=True)[0]
    toks = np.random.default_rng(seed).integers(0, 300, 12)
    exact = ReferenceKimi(path)
    want = exact.full(toks)
    assert np.max(np.abs(ReferenceKimi(legacy).full(toks) - want)) < 1e-10
    # f16 rounding of the cache moves the logits a little; a router near a tie may also pick other
    # experts (one seed moved a logit by 1.86 that way), so the f16 run keeps the exact run's choices
    rounded = ReferenceKimi(path, kv_round="f16")
    rounded.force.update({key: chosen for key, (_margin, chosen, _alt) in exact.events.items()})
    f16 = rounded.full(toks)
    diff = np.max(np.abs(f16 - want))
    assert 0 < diff < 0.02, f"seed {seed}: {diff}"


def test_k3_extras_change_the_logits(tmp_path, seed):
    """Each K3 feature switched off on its own moves the logits (so each is exercised)."""
    toks = np.random.default_rng(seed).integers(0, 300, 10)
    base = ReferenceKimi(write_kimi_model(tmp_path / "k3.gguf", seed, arch="kimi-k3")[0]).full(toks)
    for i, kw in enumerate([{"attn_res_block": 0}, {"latent": 0}, {"situ": (2.0 ** 40, 0.0)},
                            {"gate_lower_bound": None}, {"attn_gate": False}, {"latent_norm": False}]):
        other = ReferenceKimi(write_kimi_model(tmp_path / f"v{i}.gguf", seed, arch="kimi-k3", **kw)[0]).full(toks)
        assert np.max(np.abs(other - base)) > 1e-3, f"seed {seed}: {kw}"


def test_k3_without_its_extras_is_kimi_linear(tmp_path, seed):
    """kimi-k3 with attn_res.block_size 0, expert_latent_length 0, no gate lower bound, no MLA output
    gate, no q LoRA and SiTU betas (2^40, 0) (SiTU = beta tanh(a/beta) sigmoid(a) b, which is
    silu(a) b to float64 rounding for beta = 2^40, exact in the f32 key) computes kimi-linear's function. The one weight
    that cannot be the same is the KDA output gate (full-rank ssm_g in K3, ssm_g_a/ssm_g_b in
    kimi-linear): the K3 file holds the product g_b @ g_a rounded once to f32, hence the tolerance."""
    lin = write_kimi_model(tmp_path / "lin.gguf", seed, arch="kimi-linear")[0]
    k3 = write_kimi_model(tmp_path / "k3.gguf", seed, arch="kimi-k3", weights_scale=2.446, weights_norm=True,
                          q_lora=0, latent=0, attn_res_block=0, situ=(2.0 ** 40, 0.0), gate_lower_bound=None,
                          full_gate=True, gate_from_low_rank=True, attn_gate=False, dt_bias=(-1.0, 1.0),
                          a_range=(0.1, 1.0))[0]
    toks = np.random.default_rng(seed).integers(0, 300, 16)
    a, b = ReferenceKimi(lin), ReferenceKimi(k3)
    assert a.situ is None and b.situ == (2.0 ** 40, 0.0) and b.gate_lb is None and b.res_block == 0
    la, lb = a.full(toks), b.full(toks)
    diff = np.max(np.abs(la - lb))
    assert diff < 1e-6, f"seed {seed}: {diff}"
