"""Synthetic `deepseek2` GGUF models (MLA attention, MoE with shared experts, YaRN) written with
strata.Writer from numpy weights, named and shaped as lib/model/deepseek2.md says.

Types: weight matrices are written in ``wtype`` except
- the router ``ffn_gate_inp``, the ``exp_probs_b`` bias and every norm: f32 (llama.cpp's
  quantizer never quantizes ffn_gate_inp, and 1-D tensors stay f32);
- a matrix whose row length (ne[0], the last numpy axis) is not a multiple of the type's block
  (256 for iq1_s, 32 for q8_0): it falls back to q8_0 when the row is a multiple of 32, else to
  f16, as llama.cpp's quantizer falls back for incompatible rows ("tensor cols ... are not
  divisible by ..."). llama.cpp itself picks IQ4_NL for an IQ1_S fallback; strata does not read
  IQ4_NL, so q8_0 stands in (same role: a 32-block type for the odd rows). With the defaults
  the one such tensor is ``attn_k_b`` under iq1_s: its rows are qk_nope = 64 long (Kimi K2:
  128), so it is q8_0; everything else has rows of 256 or 512.

Shapes (numpy order = reversed ggml ne): 3-D tensors are (n_expert, rows, cols) for the
experts, (H, C, nope) for attn_k_b and (H, v_dim, C) for attn_v_b. The legacy form writes
attn_kv_b (H*(nope+v_dim), C) instead, per head the nope k rows (k_b[h] transposed) then the
v_dim rows of v_b[h]; for one seed both forms hold the same weights (the random draws are the
same, the legacy file only rearranges k_b/v_b), so their logits must agree.
"""
from __future__ import annotations

from pathlib import Path
from typing import Any, Callable, Optional

import numpy as np

import strata
from _synth import byte_vocab, set_vocab

ARCH = "deepseek2"
_BLOCK = {"iq1_s": 256, "q8_0": 32}


def tensor_type(wtype: str, row: int) -> str:
    """The type a wtype matrix with rows of ``row`` values is written in (see the docstring)."""
    block = _BLOCK.get(wtype, 1)
    if row % block == 0:
        return wtype
    return "q8_0" if row % 32 == 0 else "f16"


def key_setters(w: "strata.Writer", arch: str, name: str, n_ctx_train: int, n_embd: int,
                n_layer: int) -> tuple[Callable, Callable]:
    """Writes general.architecture, general.name, context_length, embedding_length and
    block_count; returns (u32, f32), setters of "<arch>.<key>" values."""
    w.set("general.architecture", arch)
    w.set("general.name", name)
    u32, f32 = _setters(w, arch)
    u32("context_length", n_ctx_train)
    u32("embedding_length", n_embd)
    u32("block_count", n_layer)
    return u32, f32


def _setters(w: "strata.Writer", arch: str) -> tuple[Callable, Callable]:
    def u32(k: str, v: int) -> None:
        w.set(f"{arch}.{k}", int(v), type="u32")

    def f32(k: str, v: float) -> None:
        w.set(f"{arch}.{k}", float(v), type="f32")

    return u32, f32


def expert_keys(w: "strata.Writer", arch: str, n_layer: int, n_dense_lead: int, n_expert: int, n_expert_used: int,
                n_expert_shared: int, n_ff_exp: int, gating_func: int, weights_norm: Optional[bool],
                weights_scale: float) -> bool:
    """leading_dense_block_count and, where there are MoE layers, the expert keys (weights_norm
    None: no expert_weights_norm key); returns whether there are MoE layers."""
    u32, f32 = _setters(w, arch)
    u32("leading_dense_block_count", n_dense_lead)
    if n_layer <= n_dense_lead:
        return False
    u32("expert_count", n_expert)
    u32("expert_used_count", n_expert_used)
    u32("expert_shared_count", n_expert_shared)
    u32("expert_feed_forward_length", n_ff_exp)
    u32("expert_gating_func", gating_func)
    if weights_norm is not None:
        w.set(f"{arch}.expert_weights_norm", bool(weights_norm))
    f32("expert_weights_scale", weights_scale)
    return True


def add_kv_b(mat: Callable, p: str, k_b: np.ndarray, v_b: np.ndarray, legacy_kv_b: bool) -> None:
    """An MLA layer's k_b (H, C, nope) and v_b (H, v_dim, C): attn_k_b and attn_v_b, or (legacy)
    one attn_kv_b of per head nope k rows then v_dim v rows."""
    if legacy_kv_b:
        H, C = k_b.shape[0], k_b.shape[1]
        kv_b = np.concatenate([k_b.transpose(0, 2, 1), v_b], axis=1).reshape(H * (k_b.shape[2] + v_b.shape[1]), C)
        mat(p + "attn_kv_b.weight", np.ascontiguousarray(kv_b))
    else:
        mat(p + "attn_k_b.weight", k_b)
        mat(p + "attn_v_b.weight", v_b)


def write_deepseek2_model(path: Path, seed: int, wtype: str = "f32", n_embd: int = 256, n_layer: int = 3,
                          n_head: int = 4, q_lora: int = 256, kv_lora: int = 256, qk_nope: int = 64,
                          qk_rope: int = 32, v_head_dim: int = 64, n_ff: int = 512, n_ff_exp: int = 256,
                          n_expert: int = 8, n_expert_used: int = 2, n_expert_shared: int = 1,
                          n_dense_lead: int = 1, gating: str = "sigmoid", score_bias: bool = True,
                          weights_norm: bool = True, weights_scale: float = 2.5, n_group: int = 0,
                          n_group_used: int = 0, yarn: Optional[dict[str, Any]] = None, legacy_kv_b: bool = False,
                          n_vocab: int = 300, n_ctx_train: int = 4096, n_shards: int = 1) -> list[str]:
    """Writes a random deepseek2 model; returns the paths written.

    q_lora 0 writes a full attn_q instead of attn_q_a/attn_q_a_norm/attn_q_b. gating "sigmoid" or
    "softmax". yarn: None, or a dict with factor, orig_ctx, log_mul, beta_fast, beta_slow (the
    rope.scaling.* keys; log_mul is the file's yarn_log_multiplier). legacy_kv_b: the legacy
    attn_kv_b form (key_length nope+R, value_length v_dim, head_count_kv H, no _mla keys)."""
    rng = np.random.default_rng(seed)
    H, C, R, nope, vd, E = n_head, kv_lora, qk_rope, qk_nope, v_head_dim, n_embd
    w = strata.Writer()
    u32, f32 = key_setters(w, ARCH, f"synthetic-{ARCH}-{wtype}{'-legacy' if legacy_kv_b else ''}", n_ctx_train, E,
                           n_layer)
    u32("feed_forward_length", n_ff)
    u32("attention.head_count", H)
    if legacy_kv_b:
        u32("attention.head_count_kv", H)
        u32("attention.key_length", nope + R)
        u32("attention.value_length", vd)
    else:
        u32("attention.head_count_kv", 1)
        u32("attention.key_length", C + R)
        u32("attention.value_length", C)
        u32("attention.key_length_mla", nope + R)
        u32("attention.value_length_mla", vd)
    if q_lora > 0:
        u32("attention.q_lora_rank", q_lora)
    u32("attention.kv_lora_rank", C)
    f32("attention.layer_norm_rms_epsilon", 1e-6)
    u32("rope.dimension_count", R)
    f32("rope.freq_base", 10000.0)
    if yarn is not None:
        w.set(f"{ARCH}.rope.scaling.type", "yarn")
        f32("rope.scaling.factor", yarn["factor"])
        u32("rope.scaling.original_context_length", yarn["orig_ctx"])
        f32("rope.scaling.yarn_log_multiplier", yarn.get("log_mul", 0.1))
        f32("rope.scaling.yarn_beta_fast", yarn.get("beta_fast", 32.0))
        f32("rope.scaling.yarn_beta_slow", yarn.get("beta_slow", 1.0))
    if expert_keys(w, ARCH, n_layer, n_dense_lead, n_expert, n_expert_used, n_expert_shared, n_ff_exp,
                   {"softmax": 1, "sigmoid": 2}[gating], weights_norm, weights_scale):
        if n_group:
            u32("expert_group_count", n_group)
            u32("expert_group_used_count", n_group_used)
    tokens, scores, types = byte_vocab(n_vocab)
    set_vocab(w, tokens, scores, types)

    def draw(shape: tuple[int, ...], cols: int) -> np.ndarray:
        return (rng.standard_normal(shape) / np.sqrt(cols)).astype(np.float32)

    def mat(name: str, a: np.ndarray) -> None:
        w.add_tensor(name, a, type=tensor_type(wtype, a.shape[-1]))

    def vec(name: str, n: int, lo: float = 0.8, hi: float = 1.2) -> None:
        w.add_tensor(name, rng.uniform(lo, hi, n).astype(np.float32), type="f32")

    mat("token_embd.weight", rng.standard_normal((n_vocab, E)).astype(np.float32))
    for l in range(n_layer):
        p = f"blk.{l}."
        vec(p + "attn_norm.weight", E)
        if q_lora > 0:
            mat(p + "attn_q_a.weight", draw((q_lora, E), E))
            vec(p + "attn_q_a_norm.weight", q_lora)
            mat(p + "attn_q_b.weight", draw((H * (nope + R), q_lora), q_lora))
        else:
            mat(p + "attn_q.weight", draw((H * (nope + R), E), E))
        mat(p + "attn_kv_a_mqa.weight", draw((C + R, E), E))  # latent rows first, then the rope key
        vec(p + "attn_kv_a_norm.weight", C)
        k_b = draw((H, C, nope), C)    # per head C x nope: k_nope = k_b[h]^T c
        v_b = draw((H, vd, C), C)      # per head v_dim x C: v = v_b[h] c
        add_kv_b(mat, p, k_b, v_b, legacy_kv_b)
        mat(p + "attn_output.weight", draw((E, H * vd), H * vd))
        vec(p + "ffn_norm.weight", E)
        if l < n_dense_lead:
            mat(p + "ffn_gate.weight", draw((n_ff, E), E))
            mat(p + "ffn_up.weight", draw((n_ff, E), E))
            mat(p + "ffn_down.weight", draw((E, n_ff), n_ff))
        else:
            w.add_tensor(p + "ffn_gate_inp.weight", draw((n_expert, E), E), type="f32")
            if score_bias:
                vec(p + "exp_probs_b.bias", n_expert, -0.1, 0.1)
            mat(p + "ffn_gate_exps.weight", draw((n_expert, n_ff_exp, E), E))
            mat(p + "ffn_up_exps.weight", draw((n_expert, n_ff_exp, E), E))
            mat(p + "ffn_down_exps.weight", draw((n_expert, E, n_ff_exp), n_ff_exp))
            if n_expert_shared > 0:
                sh = n_ff_exp * n_expert_shared
                mat(p + "ffn_gate_shexp.weight", draw((sh, E), E))
                mat(p + "ffn_up_shexp.weight", draw((sh, E), E))
                mat(p + "ffn_down_shexp.weight", draw((E, sh), sh))
    vec("output_norm.weight", E)
    mat("output.weight", draw((n_vocab, E), E))
    out = w.write(path, n_shards=n_shards)
    w.close()
    return out
