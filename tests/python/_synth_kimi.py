"""Synthetic `kimi-linear` / `kimi-k3` GGUF models (KDA + MLA layers, MoE; K3: latent MoE, SiTU,
attention residuals, lower-bound decay gate, full-rank output gates, MLA output gate) written with
strata.Writer from numpy weights, named and shaped as lib/model/kimi_linear.md says.

Every tensor is drawn from its own generator, seeded by (seed, tensor name): two files written with
the same seed hold the same values under the same names whatever the other options (the kimi-k3 vs
kimi-linear reduction test relies on it).

Types: weight matrices are written in ``wtype`` with _synth_deepseek2.tensor_type's fallback (rows
that are not a multiple of the type's block: q8_0 when a multiple of 32, else f16); f32 always:
the router ffn_gate_inp, exp_probs_b, every norm, the attention-residual score vectors, the conv
weights ssm_conv1d_{q,k,v}, ssm_a and ssm_dt.bias.

Scales: matrices have std 1/sqrt(cols) (so activations stay O(1)), token_embd std 1, norms
uniform(0.8, 1.2), conv taps std 1/sqrt(K). ssm_a holds -exp(A_log), exp(A_log) uniform per head
in a_range; ssm_dt.bias uniform in dt_bias. Defaults: kimi-linear (0.1, 1) and (-1, 1) (decays
alpha = exp(g) mostly in 0.3..0.96); K3 (0.5, 2) and (-4, 0), so that the lower-bound gate
exp(lb * sigmoid(exp(A_log) z)) does not sit near exp(lb / 2) = 0.08 for every channel.
Layer i is MLA when i is in mla_layers (head_count_kv 1), KDA otherwise (head_count_kv 0).
"""
from __future__ import annotations

import zlib
from pathlib import Path
from typing import Any, Sequence

import numpy as np

import strata
from _synth import byte_vocab, set_vocab
from _synth_deepseek2 import add_kv_b, expert_keys, key_setters, tensor_type

ARCHS = ("kimi-linear", "kimi-k3")
DEFAULT: Any = object()  # "the architecture's default" for the options below


def _rng(seed: int, name: str) -> np.random.Generator:
    return np.random.default_rng([int(seed) % (1 << 64), zlib.crc32(name.encode())])


def write_kimi_model(path: Path, seed: int, arch: str = "kimi-linear", wtype: str = "f32", n_embd: int = 256,
                     n_layer: int = 4, n_head: int = 4, head_dim: int = 64, conv_kernel: int = 4,
                     kv_lora: int = 256, qk_nope: int = 64, qk_rope: int = 32, v_head_dim: int = 64,
                     mla_layers: Sequence[int] = (2,), n_ff: int = 512, n_ff_exp: int = 256, n_expert: int = 8,
                     n_expert_used: int = 2, n_expert_shared: int = 1, n_dense_lead: int = 1,
                     weights_scale: Any = DEFAULT, weights_norm: bool = True, q_lora: Any = DEFAULT,
                     latent: Any = DEFAULT, latent_norm: bool = True, attn_res_block: Any = DEFAULT,
                     situ: Any = DEFAULT, gate_lower_bound: Any = DEFAULT, full_gate: Any = DEFAULT,
                     gate_from_low_rank: bool = False, attn_gate: Any = DEFAULT, conv_dims: Any = DEFAULT,
                     dt_bias: Any = DEFAULT, a_range: Any = DEFAULT, legacy_kv_b: bool = False, eps: float = 1e-5, n_vocab: int = 300,
                     n_ctx_train: int = 4096, n_shards: int = 1) -> list[str]:
    """Writes a random kimi-linear / kimi-k3 model; returns the paths written.

    Defaults by arch (kimi-linear / kimi-k3): weights_scale 2.446 / 1.0; q_lora 0 (full attn_q) / 256;
    latent (expert_latent_length) 0 / 128; attn_res_block 0 (no keys) / 2; situ None / (4.0, 25.0)
    (the situ_beta, situ_linear_beta pair; None writes no keys); gate_lower_bound None (no key:
    softplus gate) / -5.0; full_gate (ssm_g instead of ssm_g_a/ssm_g_b) False / True; attn_gate
    (MLA output gate) False / True; conv_dims (ssm_conv1d as ne [K,1,D,1] or [K,1,D]) 4 / 3;
    dt_bias range (-1, 1) / (-4, 0); a_range (the range of exp(A_log), ssm_a = -exp(A_log))
    (0.1, 1) / (0.5, 2). gate_from_low_rank: a full gate is written as the product
    ssm_g_b @ ssm_g_a of the low-rank draws (the same values, rounded once, as the low-rank pair).
    weights_norm is written only for kimi-k3 (kimi-linear always renormalizes)."""
    if arch not in ARCHS:
        raise ValueError(f"arch must be one of {ARCHS}")
    k3 = arch == "kimi-k3"

    def d(v: Any, lin: Any, kk3: Any) -> Any:
        return (kk3 if k3 else lin) if v is DEFAULT else v

    weights_scale = d(weights_scale, 2.446, 1.0)
    q_lora = d(q_lora, 0, 256)
    latent = d(latent, 0, 128)
    attn_res_block = d(attn_res_block, 0, 2)
    situ = d(situ, None, (4.0, 25.0))
    gate_lower_bound = d(gate_lower_bound, None, -5.0)
    full_gate = d(full_gate, False, True)
    attn_gate = d(attn_gate, False, True)
    conv_dims = d(conv_dims, 4, 3)
    dt_bias = d(dt_bias, (-1.0, 1.0), (-4.0, 0.0))
    a_range = d(a_range, (0.1, 1.0), (0.5, 2.0))

    H, dk, K, C, R, N, Vd, E = n_head, head_dim, conv_kernel, kv_lora, qk_rope, qk_nope, v_head_dim, n_embd
    D = H * dk
    Le = latent if latent > 0 else E
    mla = set(int(i) for i in mla_layers)
    w = strata.Writer()
    u32, f32 = key_setters(w, arch, f"synthetic-{arch}-{wtype}", n_ctx_train, E, n_layer)
    u32("vocab_size", n_vocab)
    u32("feed_forward_length", n_ff)
    u32("attention.head_count", H)
    w.set(f"{arch}.attention.head_count_kv", [1 if i in mla else 0 for i in range(n_layer)], type="u32")
    f32("attention.layer_norm_rms_epsilon", eps)
    if q_lora > 0:
        u32("attention.q_lora_rank", q_lora)
    u32("attention.kv_lora_rank", C)
    u32("attention.key_length_mla", N + R)
    u32("attention.value_length_mla", Vd)
    u32("attention.key_length", C + R)
    if k3:
        u32("attention.value_length", C)
    u32("rope.dimension_count", R)
    f32("rope.freq_base", 10000.0)
    u32("ssm.conv_kernel", K)
    u32("kda.head_dim", dk)
    if gate_lower_bound is not None:
        f32("kda.gate_lower_bound", gate_lower_bound)
    expert_keys(w, arch, n_layer, n_dense_lead, n_expert, n_expert_used, n_expert_shared, n_ff_exp, 2,
                weights_norm if k3 else None, weights_scale)
    if k3:
        u32("expert_latent_length", latent)
        if situ is not None:
            f32("activation.situ_beta", situ[0])
            f32("activation.situ_linear_beta", situ[1])
        u32("attn_res.block_size", attn_res_block)
    tokens, scores, types = byte_vocab(n_vocab)
    set_vocab(w, tokens, scores, types)

    def draw(name: str, shape: tuple[int, ...], std: float) -> np.ndarray:
        return (_rng(seed, name).standard_normal(shape) * std).astype(np.float32)

    def mat(name: str, a: np.ndarray) -> None:
        w.add_tensor(name, a, type=tensor_type(wtype, a.shape[-1]))

    def rmat(name: str, shape: tuple[int, ...]) -> np.ndarray:
        a = draw(name, shape, 1.0 / np.sqrt(shape[-1]))
        mat(name, a)
        return a

    def f32t(name: str, a: np.ndarray) -> None:
        w.add_tensor(name, np.asarray(a, dtype=np.float32), type="f32")

    def vec(name: str, n: int, lo: float = 0.8, hi: float = 1.2) -> None:
        f32t(name, _rng(seed, name).uniform(lo, hi, n))

    mat("token_embd.weight", draw("token_embd.weight", (n_vocab, E), 1.0))
    for l in range(n_layer):
        p = f"blk.{l}."
        vec(p + "attn_norm.weight", E)
        if attn_res_block > 0:
            f32t(p + "attn_res_score.weight", draw(p + "attn_res_score.weight", (E,), 1.0 / np.sqrt(E)))
            f32t(p + "ffn_res_score.weight", draw(p + "ffn_res_score.weight", (E,), 1.0 / np.sqrt(E)))
        if l not in mla:
            for n in ("q", "k", "v"):
                rmat(p + f"attn_{n}.weight", (D, E))
                cw = draw(p + f"ssm_conv1d_{n}.weight", (D, K), 1.0 / np.sqrt(K))  # [c, j]: element j + c*K
                f32t(p + f"ssm_conv1d_{n}.weight", cw.reshape((1, D, 1, K) if conv_dims == 4 else (D, 1, K)))
            rmat(p + "ssm_f_a.weight", (dk, E))
            rmat(p + "ssm_f_b.weight", (D, dk))
            vec(p + "ssm_dt.bias", D, *dt_bias)
            a = -_rng(seed, p + "ssm_a").uniform(*a_range, H)  # -exp(A_log)
            f32t(p + "ssm_a", a.reshape((H,) if k3 else (1, 1, H, 1)))
            rmat(p + "ssm_beta.weight", (H, E))
            if full_gate:
                if gate_from_low_rank:
                    g_a = draw(p + "ssm_g_a.weight", (dk, E), 1.0 / np.sqrt(E)).astype(np.float64)
                    g_b = draw(p + "ssm_g_b.weight", (D, dk), 1.0 / np.sqrt(dk)).astype(np.float64)
                    mat(p + "ssm_g.weight", (g_b @ g_a).astype(np.float32))
                else:
                    rmat(p + "ssm_g.weight", (D, E))
            else:
                rmat(p + "ssm_g_a.weight", (dk, E))
                rmat(p + "ssm_g_b.weight", (D, dk))
            vec(p + "ssm_norm.weight", dk)
            rmat(p + "attn_output.weight", (E, D))
        else:
            if q_lora > 0:
                rmat(p + "attn_q_a.weight", (q_lora, E))
                vec(p + "attn_q_a_norm.weight", q_lora)
                rmat(p + "attn_q_b.weight", (H * (N + R), q_lora))
            else:
                rmat(p + "attn_q.weight", (H * (N + R), E))
            rmat(p + "attn_kv_a_mqa.weight", (C + R, E))  # latent rows first, then the shared R part
            vec(p + "attn_kv_a_norm.weight", C)
            k_b = draw(p + "attn_k_b.weight", (H, C, N), 1.0 / np.sqrt(C))   # k_nope = k_b[h]^T c
            v_b = draw(p + "attn_v_b.weight", (H, Vd, C), 1.0 / np.sqrt(C))  # v = v_b[h] c
            add_kv_b(mat, p, k_b, v_b, legacy_kv_b)
            if attn_gate:
                rmat(p + "attn_gate.weight", (H * Vd, E))
            rmat(p + "attn_output.weight", (E, H * Vd))
        vec(p + "ffn_norm.weight", E)
        if l < n_dense_lead:
            rmat(p + "ffn_gate.weight", (n_ff, E))
            rmat(p + "ffn_up.weight", (n_ff, E))
            rmat(p + "ffn_down.weight", (E, n_ff))
        else:
            f32t(p + "ffn_gate_inp.weight", draw(p + "ffn_gate_inp.weight", (n_expert, E), 1.0 / np.sqrt(E)))
            vec(p + "exp_probs_b.bias", n_expert, -0.1, 0.1)
            if latent > 0:
                rmat(p + "ffn_routed_down.weight", (latent, E))
                rmat(p + "ffn_routed_up.weight", (E, latent))
                if latent_norm:
                    vec(p + "ffn_routed_norm.weight", latent)
            rmat(p + "ffn_gate_exps.weight", (n_expert, n_ff_exp, Le))
            rmat(p + "ffn_up_exps.weight", (n_expert, n_ff_exp, Le))
            rmat(p + "ffn_down_exps.weight", (n_expert, Le, n_ff_exp))
            if n_expert_shared > 0:
                sh = n_ff_exp * n_expert_shared
                rmat(p + "ffn_gate_shexp.weight", (sh, E))
                rmat(p + "ffn_up_shexp.weight", (sh, E))
                rmat(p + "ffn_down_shexp.weight", (E, sh))
    if attn_res_block > 0:
        f32t("output_res_score.weight", draw("output_res_score.weight", (E,), 1.0 / np.sqrt(E)))
    vec("output_norm.weight", E)
    rmat("output.weight", (n_vocab, E))
    out = w.write(path, n_shards=n_shards)
    w.close()
    return out
