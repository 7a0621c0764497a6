"""A numpy reference forward pass for `deepseek2` GGUF models (DeepSeek-V2/V3, Kimi K2).

Independent of strata: the file (one file or every shard of a split model) is read with the
`gguf` package (reference_llama.GGUFWeights, dequantized by gguf.quants), and the math follows
lib/model/deepseek2.md (llama.cpp's deepseek2 graph) in float64 throughout:

  x = token_embd[token]
  per layer:  h = rms_norm(x) * attn_norm
              q = q_lora ? (rms_norm(h Wq_a) * q_a_norm) Wq_b : h Wq          [H, nope + R]
              ckv = h Wkv_a_mqa;  c = rms_norm(ckv[:C]) * kv_a_norm;  k_pe = ckv[C:]
              q_pe, k_pe = rope(q_pe, pos), rope(k_pe, pos)   (adjacent pairs, llama order, R dims)
              cache += (c, k_pe)                               (kv_round="f16"/"q8_0": rounded here)
              DECOMPRESSED multi-head attention over the cache, per head h:
                  k[h]_p = (k_b[h]^T c_p, k_pe_p),  v[h]_p = v_b[h] c_p
                  o_h = softmax_p((q_nope[h], q_pe[h]) . k[h]_p * kq_scale) v[h]_p
              (MLA-form files: k_b, v_b = attn_k_b, attn_v_b; legacy files: the k and v rows of
              attn_kv_b, per head nope k rows then v_dim v rows.) This is deliberately NOT the
              absorbed form strata computes (q_abs = k_b[h] q_nope, attention over the latent),
              so agreement is an independent check of the absorption.
              x += concat(o_h) Wo
              h = rms_norm(x) * ffn_norm
              x += dense layer (i < leading_dense_block_count) ? swiglu(h) : moe(h) + shared(h)
  logits = (rms_norm(x) * output_norm) Wout       (Wout = token_embd when output.weight is absent)

RoPE / scale: plain RoPE (freq_base) unless rope.scaling.type is "yarn": ggml's rope_yarn angles
(freq_scale = 1/factor, ramp between the correction dimensions from yarn_beta_fast/slow over
rope.scaling.original_context_length) with rotation magnitude 1; then
    mscale = 1 + yarn_log_multiplier * ln(factor),  kq_scale = mscale^2 / sqrt(nope + R)
(without yarn kq_scale = 1/sqrt(nope + R)). "linear" scaling (or a factor != 1 without yarn)
raises ValueError, as strata refuses it. Two places where this (the spec) and llama.cpp part,
measured with llama-cpp-python 0.3.36: llama.cpp ignores rope.scaling.yarn_beta_fast/_slow in a
deepseek2 file (it always uses 32 / 1; Kimi K2's own config says 1 / 1), and with yarn but a
yarn_log_multiplier of 0 or none it rotates with magnitude 1 + 0.1 ln(factor) and scales by
(1 + 0.1 ln(factor))^2 / sqrt(nope + R). Elsewhere (MLA and legacy forms, attn_q, softmax and
sigmoid gating, groups, bias, YaRN with log_mul 0.1) this reference and llama.cpp agree to a
relative RMS of 2e-4 .. 7e-4 on synthetic files (llama.cpp rounds q to f16 for its f16 cache).

MoE (llama.cpp build_moe_ffn): logits = W_gate_inp h; probs = softmax or sigmoid
(expert_gating_func 1/0: softmax, 2: sigmoid); sel = probs + exp_probs_b (the bias only chooses);
with expert groups (n_group > 1, n_group_used < n_group) a group scores the sum of its two
largest sel and only experts of the n_group_used best groups are eligible; the n_expert_used
largest sel are chosen (ties: the lower index); weights w = probs[chosen], divided by their sum
when expert_weights_norm, times expert_weights_scale when non-zero;
moe(h) = sum_i w_i down_e(silu(gate_e h) * up_e h); shared(h) = the same SwiGLU with the _shexp
weights (width n_ff_exp * expert_shared_count).

Routing margins: after every forward, ``self.margins`` (one float per position run since reset,
in order) holds that position's smallest margin over all MoE layers. A layer's margin is the sel
of the last chosen expert minus the largest sel of an eligible expert not chosen and, with
groups, also the score of the last kept group minus the best dropped group's score (an expert
of a dropped group is kept out by the group gap, so it enters only through that term). +inf
when the model has no MoE layer (or nothing is left unchosen). Rows whose margin is below the
activation noise of the implementation under test can route differently in two correct
implementations; tests judge them apart (DESIGN.md, "Comparing logits").

Following another implementation through near ties: every routing is recorded in
``self.events[(position, layer)] = (margin, chosen, alternative)``, where alternative is the
choice on the other side of the smallest margin (see route()); ``self.force[(position, layer)]
= experts`` makes the reference use those experts there instead of its own choice (weights
still from its own probabilities); snapshot()/restore() rewind the cache. A test can so run the
reference token by token and, at a near tie only, take the routing the other implementation's
row supports, so that one legitimately different choice does not spill into later rows through
the cache.

Use ReferenceDeepseek2(path).forward(tokens) incrementally (the latent cache persists between
calls; reset() clears it) or .full(tokens) for a fresh run; both return the logits of every
token given, shape (n_tokens, n_vocab), float64. Set ``record = True`` to keep, per layer and
call, the attention inputs and output in ``self.trace`` (for tests of the attention itself).
"""
from __future__ import annotations

import math
import os
from typing import Any, Callable, Optional, Sequence, Union

import gguf
import numpy as np

from reference_llama import GGUFWeights, Rope, rms_norm

ARCH = "deepseek2"


def silu(x: np.ndarray) -> np.ndarray:
    return x / (1.0 + np.exp(-x))


def _top(masked: np.ndarray, n_used: int) -> np.ndarray:
    return np.argsort(-masked, kind="stable")[:n_used]  # ties: the lower index


def route(probs: np.ndarray, bias: Optional[np.ndarray], n_used: int, n_group: int = 0,
          n_group_used: int = 0, alternative: bool = False) -> tuple:
    """One token's expert choice as llama.cpp's build_moe_ffn makes it.

    probs: (n_expert,) gating probabilities (softmax or sigmoid of the router logits);
    bias: the optional exp_probs_b, added for the choice only. Returns (chosen expert indices in
    order of decreasing sel, margin) where margin is as the module docstring says; with
    alternative=True also the choice on the other side of that margin (the last chosen expert
    swapped for the best unchosen eligible one, or, when the group gap is the smaller margin,
    the choice with the last kept group swapped for the best dropped one), None when the
    margin is +inf."""
    probs = np.asarray(probs, dtype=np.float64)
    n_expert = probs.shape[0]
    sel = probs + (0.0 if bias is None else np.asarray(bias, dtype=np.float64))
    group_gap, alt_groups, per = math.inf, None, n_expert
    eligible = np.ones(n_expert, dtype=bool)
    if n_group > 1 and n_group_used < n_group:
        per = n_expert // n_group
        if per * n_group != n_expert or per < 2:
            raise ValueError(f"reference: {n_expert} experts do not split into {n_group} groups of >= 2")
        gscore = (-np.sort(-sel.reshape(n_group, per), axis=1)[:, :2]).sum(axis=1)  # two largest sel
        gorder = np.argsort(-gscore, kind="stable")  # ties: the lower group index
        group_gap = float(gscore[gorder[n_group_used - 1]] - gscore[gorder[n_group_used]])
        alt_groups = list(gorder[:n_group_used - 1]) + [gorder[n_group_used]]
        eligible[:] = False
        for g in gorder[:n_group_used]:
            eligible[g * per:(g + 1) * per] = True
    if n_used > int(eligible.sum()):
        raise ValueError(f"reference: {n_used} experts used but only {int(eligible.sum())} eligible")
    masked = np.where(eligible, sel, -np.inf)
    order = np.argsort(-masked, kind="stable")
    chosen = order[:n_used]
    expert_gap = float(masked[order[n_used - 1]] - masked[order[n_used]]) if eligible.sum() > n_used else math.inf
    margin = min(group_gap, expert_gap)
    if not alternative:
        return chosen, margin
    alt = None
    if margin < math.inf:
        if group_gap < expert_gap:
            ok = np.zeros(n_expert, dtype=bool)
            for g in alt_groups:
                ok[g * per:(g + 1) * per] = True
            alt = _top(np.where(ok, sel, -np.inf), n_used)
        else:
            alt = np.concatenate([chosen[:-1], order[n_used:n_used + 1]])
    return chosen, margin, alt


def gate_probs(logits: np.ndarray, gating: str) -> np.ndarray:
    """The router's probabilities from its logits (n, n_expert): sigmoid or a row softmax."""
    if gating == "sigmoid":
        return 1.0 / (1.0 + np.exp(-logits))
    e = np.exp(logits - logits.max(axis=1, keepdims=True))
    return e / e.sum(axis=1, keepdims=True)


def routed_experts(ref: Any, li: int, L: dict, probs: np.ndarray, pos: np.ndarray,
                   route_fn: Optional[Callable] = None) -> tuple[list, np.ndarray]:
    """The routing of layer li for each row of probs at positions pos (shared by the deepseek2
    and kimi references): per row (experts, weights), and the per-row margins. Records every
    routing in ref.events and obeys ref.force; ``route_fn`` is route() unless given (a caller's
    module-level route, so that a test may wrap it)."""
    route_fn = route_fn or route
    margins = np.empty(probs.shape[0])
    picks = []
    for t in range(probs.shape[0]):
        key = (int(pos[t]), li)
        chosen, margins[t], alt = route_fn(probs[t], L["probs_b"], ref.n_expert_used, ref.n_group,
                                           ref.n_group_used, alternative=True)
        ref.events[key] = (margins[t], chosen, alt)
        if key in ref.force:
            chosen = np.asarray(ref.force[key])
        wts = probs[t, chosen].copy()
        if ref.weights_norm:
            wts /= wts.sum()
        if ref.weights_scale != 0.0:
            wts *= ref.weights_scale
        picks.append((chosen, wts))
    return picks, margins


def q8_0_round(x: np.ndarray) -> np.ndarray:
    """x through ggml's Q8_0 blocks of 32 (quantized and dequantized by the gguf package, from
    float32 as strata's cache writes them)."""
    q8_0 = gguf.GGMLQuantizationType.Q8_0
    v = np.asarray(x, dtype=np.float32)
    return gguf.quants.dequantize(gguf.quants.quantize(v, q8_0), q8_0).astype(np.float64).reshape(v.shape)


class MoEReference:
    """What the deepseek2 and kimi references share around their layers: the FFN of a layer
    (MoE with the row margins folded in, or the subclass's dense_ffn), the output head that ends
    forward(), and full(). A subclass sets n_past, margins, eps, out_norm, out_w and defines
    moe(), dense_ffn(), reset() and forward()."""

    def open_weights(self, path: Any, kv_round: Optional[str]) -> tuple:
        """Checks kv_round (None, "f16" or "q8_0") and keeps it; reads the file: (weights, metadata)."""
        if kv_round not in (None, "f16", "q8_0"):
            raise ValueError(f"reference: kv_round must be None, 'f16' or 'q8_0', not {kv_round!r}")
        self.kv_round = kv_round
        w = self.w = GGUFWeights(path)
        return w, w.metadata

    def mla_inputs(self, L: dict, h: np.ndarray, q_lora: bool) -> tuple:
        """An MLA layer's projections of rows h: (q_nope, q_pe) per head, the normed latent c and
        the unrotated k_pe."""
        n, H, C, nope, R = h.shape[0], self.n_head, self.kv_lora, self.nope, self.n_rot
        if q_lora:
            q = (rms_norm(h @ L["q_a"].T, self.eps) * L["q_a_norm"]) @ L["q_b"].T
        else:
            q = h @ L["q"].T
        q = q.reshape(n, H, nope + R)
        ckv = h @ L["kv_a"].T
        return q[..., :nope], q[..., nope:], rms_norm(ckv[:, :C], self.eps) * L["kv_a_norm"], ckv[:, C:]

    def ffn(self, li: int, L: dict, h: np.ndarray, pos: np.ndarray, margin: np.ndarray) -> tuple:
        """(FFN output, margin lowered to the MoE routing's per-row margins)."""
        if L["moe"]:
            y, m = self.moe(li, L, h, pos)
            return y, np.minimum(margin, m)
        return self.dense_ffn(L, h), margin

    def output(self, x: np.ndarray, n: int, margin: np.ndarray) -> np.ndarray:
        """The end of forward() over n rows: positions and margins advanced, the logits."""
        self.n_past += n
        self.margins.extend(float(v) for v in margin)
        return (rms_norm(x, self.eps) * self.out_norm) @ self.out_w.T

    def full(self, tokens: Sequence[int]) -> np.ndarray:
        """A fresh run over tokens from position 0 (caches, states and margins are reset first)."""
        self.reset()
        return self.forward(tokens)


class ReferenceDeepseek2(MoEReference):
    """The reference forward pass of one deepseek2 GGUF model; see the module docstring."""

    def __init__(self, path: Union[str, os.PathLike, Sequence[Union[str, os.PathLike]]],
                 kv_round: Optional[str] = None):
        """kv_round: None keeps the latent cache (c, k_pe) in float64; "f16" rounds both to float16
        as they enter the cache (strata's default f16 cache), "q8_0" through ggml's Q8_0 blocks of
        32 (strata's q8_0 cache); everything else stays float64."""
        w, md = self.open_weights(path, kv_round)
        self.record = False
        if md.get("general.architecture") != ARCH:
            raise ValueError(f"reference: not a deepseek2 file ({md.get('general.architecture')!r})")

        def key(k: str, default: Any = None) -> Any:
            v = md.get(f"{ARCH}.{k}", default)
            if v is None:
                raise ValueError(f"reference: {ARCH}.{k} is missing")
            return v

        self.n_embd = int(key("embedding_length"))
        self.n_layer = int(key("block_count"))
        self.n_head = H = int(key("attention.head_count"))
        self.eps = float(key("attention.layer_norm_rms_epsilon", 1e-5))
        self.q_lora = int(key("attention.q_lora_rank", 0))
        self.kv_lora = C = int(key("attention.kv_lora_rank"))
        self.n_rot = R = int(key("rope.dimension_count"))
        self.legacy = "blk.0.attn_kv_b.weight" in w
        if self.legacy:
            qk = int(key("attention.key_length"))
            self.v_dim = int(key("attention.value_length"))
        else:
            qk = int(key("attention.key_length_mla"))
            self.v_dim = int(key("attention.value_length_mla"))
            if int(key("attention.key_length")) != C + R or int(key("attention.value_length")) != C:
                raise ValueError("reference: MLA-form key_length/value_length must be C+R and C")
        self.nope = qk - R
        if self.nope <= 0:
            raise ValueError(f"reference: key length {qk} leaves no nope dims beside rope {R}")
        self.n_dense = int(key("leading_dense_block_count", 0))

        # RoPE and the attention scale
        n_ctx_train = int(key("context_length", 0))
        freq_base = float(key("rope.freq_base", 10000.0))
        scaling = str(key("rope.scaling.type", "none"))
        factor = float(key("rope.scaling.factor", 0.0) or 0.0)
        mscale = 1.0
        if scaling == "yarn":
            if factor <= 0:
                raise ValueError("reference: yarn scaling without rope.scaling.factor")
            self.rope = Rope(R, False, freq_base, 1.0 / factor, 1.0,
                             attn_factor=1.0 / (1.0 + 0.1 * math.log(factor)),  # cancels ggml's magnitude
                             beta_fast=float(key("rope.scaling.yarn_beta_fast", 32.0)),
                             beta_slow=float(key("rope.scaling.yarn_beta_slow", 1.0)),
                             n_ctx_orig=int(key("rope.scaling.original_context_length", n_ctx_train)))
            mscale = 1.0 + float(key("rope.scaling.yarn_log_multiplier", 0.0)) * math.log(factor)
        elif scaling in ("none", "linear"):
            if scaling == "linear" or factor not in (0.0, 1.0):
                raise ValueError(f"reference: deepseek2 with {scaling!r} rope scaling (factor {factor}) is refused")
            self.rope = Rope(R, False, freq_base)
        else:
            raise ValueError(f"reference: unsupported rope scaling {scaling!r}")
        self.kq_scale = mscale * mscale / math.sqrt(self.nope + R)

        # MoE
        self.n_expert = int(key("expert_count", 0))
        self.n_expert_used = int(key("expert_used_count", 0))
        self.n_shared = int(key("expert_shared_count", 0))
        gating = int(key("expert_gating_func", 0))
        if gating not in (0, 1, 2):
            raise ValueError(f"reference: unknown expert_gating_func {gating}")
        self.gating = "sigmoid" if gating == 2 else "softmax"
        self.weights_norm = bool(key("expert_weights_norm", False))
        self.weights_scale = float(key("expert_weights_scale", 0.0))
        self.n_group = int(key("expert_group_count", 0))
        self.n_group_used = int(key("expert_group_used_count", 0))

        self.tok_embd = w.get("token_embd.weight")
        self.n_vocab = self.tok_embd.shape[0]
        self.out_w = w.get("output.weight") if "output.weight" in w else self.tok_embd
        self.out_norm = w.get("output_norm.weight")
        nope, v = self.nope, self.v_dim
        self.layers = []
        for i in range(self.n_layer):
            p = f"blk.{i}."

            def opt(n: str) -> Any:
                return w.get(p + n) if p + n in w else None

            L: dict[str, Any] = {"attn_norm": w.get(p + "attn_norm.weight"),
                                 "kv_a": w.get(p + "attn_kv_a_mqa.weight"),          # (C+R, E)
                                 "kv_a_norm": w.get(p + "attn_kv_a_norm.weight"),
                                 "wo": w.get(p + "attn_output.weight"),              # (E, H*v)
                                 "ffn_norm": w.get(p + "ffn_norm.weight")}
            if self.q_lora > 0:
                L["q_a"] = w.get(p + "attn_q_a.weight")                             # (q_lora, E)
                L["q_a_norm"] = w.get(p + "attn_q_a_norm.weight")
                L["q_b"] = w.get(p + "attn_q_b.weight")                             # (H*(nope+R), q_lora)
            else:
                L["q"] = w.get(p + "attn_q.weight")                                 # (H*(nope+R), E)
            if self.legacy:
                kvb = w.get(p + "attn_kv_b.weight").reshape(H, nope + v, C)          # per head nope k rows, v rows
                L["k_b"] = np.ascontiguousarray(kvb[:, :nope, :].transpose(0, 2, 1))  # (H, C, nope)
                L["v_b"] = np.ascontiguousarray(kvb[:, nope:, :])                     # (H, v, C)
            else:
                L["k_b"] = w.get(p + "attn_k_b.weight")                              # (H, C, nope)
                L["v_b"] = w.get(p + "attn_v_b.weight")                              # (H, v, C)
            assert L["k_b"].shape == (H, C, nope) and L["v_b"].shape == (H, v, C), (L["k_b"].shape, L["v_b"].shape)
            if i < self.n_dense:
                L["moe"] = False
                L["gate"], L["up"], L["down"] = (w.get(p + "ffn_gate.weight"), w.get(p + "ffn_up.weight"),
                                                 w.get(p + "ffn_down.weight"))
            else:
                if self.n_expert <= 0 or self.n_expert_used <= 0:
                    raise ValueError(f"reference: layer {i} is MoE but expert_count/expert_used_count are missing")
                L["moe"] = True
                L["gate_inp"] = w.get(p + "ffn_gate_inp.weight")                     # (n_expert, E)
                L["probs_b"] = opt("exp_probs_b.bias")
                L["gate_exps"] = w.get(p + "ffn_gate_exps.weight")                   # (n_expert, n_ff_exp, E)
                L["up_exps"] = w.get(p + "ffn_up_exps.weight")
                L["down_exps"] = w.get(p + "ffn_down_exps.weight")                   # (n_expert, E, n_ff_exp)
                if self.n_shared > 0:
                    L["gate_sh"], L["up_sh"], L["down_sh"] = (w.get(p + "ffn_gate_shexp.weight"),
                                                              w.get(p + "ffn_up_shexp.weight"),
                                                              w.get(p + "ffn_down_shexp.weight"))
            self.layers.append(L)
        self.has_moe = any(L["moe"] for L in self.layers)
        self.force: dict[tuple[int, int], Any] = {}
        self.reset()

    def reset(self) -> None:
        self.c_cache = [np.zeros((0, self.kv_lora)) for _ in range(self.n_layer)]
        self.kpe_cache = [np.zeros((0, self.n_rot)) for _ in range(self.n_layer)]
        # the decompressed keys and values of the cached latents, k_b[h]^T c and v_b[h] c
        self.k_cache = [np.zeros((0, self.n_head, self.nope)) for _ in range(self.n_layer)]
        self.v_cache = [np.zeros((0, self.n_head, self.v_dim)) for _ in range(self.n_layer)]
        self.n_past = 0
        self.margins: list[float] = []
        self.events: dict[tuple[int, int], tuple[float, np.ndarray, Optional[np.ndarray]]] = {}
        self.trace: list[dict[str, Any]] = []

    def snapshot(self) -> tuple:
        """The state forward() extends (caches, positions, margins, events), for restore()."""
        return (list(self.c_cache), list(self.kpe_cache), list(self.k_cache), list(self.v_cache), self.n_past,
                len(self.margins), dict(self.events), len(self.trace))

    def restore(self, state: tuple) -> None:
        """Back to a snapshot(): the cache and everything recorded since are dropped."""
        c, kpe, k, v, self.n_past, n_margins, events, n_trace = state
        self.c_cache, self.kpe_cache, self.k_cache, self.v_cache = list(c), list(kpe), list(k), list(v)
        self.events = dict(events)
        del self.margins[n_margins:]
        del self.trace[n_trace:]

    # -- attention ---------------------------------------------------------------------------

    def attend(self, q_nope: np.ndarray, q_pe: np.ndarray, k_all: np.ndarray, kpe_all: np.ndarray,
               v_all: np.ndarray, pos: np.ndarray) -> np.ndarray:
        """Multi-head attention of queries at positions pos over the decompressed cache.
        q_nope (n, H, nope), q_pe (n, H, R) roped; k_all (T, H, nope) = k_b[h]^T c, kpe_all (T, R)
        (one rope key shared by the heads), v_all (T, H, v) = v_b[h] c. Returns (n, H, v)."""
        n, T = q_nope.shape[0], k_all.shape[0]
        mask = np.arange(T)[None, :] > pos[:, None]  # key after query
        out = np.empty((n, self.n_head, self.v_dim))
        for h in range(self.n_head):
            s = (q_nope[:, h, :] @ k_all[:, h, :].T + q_pe[:, h, :] @ kpe_all.T) * self.kq_scale
            s = np.where(mask, -np.inf, s)
            s = np.exp(s - s.max(axis=1, keepdims=True))
            s /= s.sum(axis=1, keepdims=True)
            out[:, h, :] = s @ v_all[:, h, :]
        return out

    # -- feed-forward ------------------------------------------------------------------------

    def moe(self, li: int, L: dict, h: np.ndarray, pos: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
        """Routed experts + shared experts of layer li for rows h (n, E) at positions pos; returns
        (output, per-row margins). Records every routing in self.events and obeys self.force."""
        probs = gate_probs(h @ L["gate_inp"].T, self.gating)  # (n, n_expert)
        out = np.zeros_like(h)
        picks, margins = routed_experts(self, li, L, probs, pos)
        for t, (chosen, wts) in enumerate(picks):
            for e_i, wt in zip(chosen, wts):
                g = L["gate_exps"][e_i] @ h[t]
                u = L["up_exps"][e_i] @ h[t]
                out[t] += wt * (L["down_exps"][e_i] @ (silu(g) * u))
        if self.n_shared > 0:
            out += (silu(h @ L["gate_sh"].T) * (h @ L["up_sh"].T)) @ L["down_sh"].T
        return out, margins

    # -- forward -----------------------------------------------------------------------------

    def forward(self, tokens: Sequence[int]) -> np.ndarray:
        """Runs tokens at positions n_past..; returns (n_tokens, n_vocab) logits; extends the cache
        and appends one routing margin per token to self.margins."""
        toks = np.asarray(tokens, dtype=np.int64)
        n = len(toks)
        pos = np.arange(self.n_past, self.n_past + n)
        x = self.tok_embd[toks]
        H, C, nope, R = self.n_head, self.kv_lora, self.nope, self.n_rot
        margin = np.full(n, math.inf)
        for li, L in enumerate(self.layers):
            h = rms_norm(x, self.eps) * L["attn_norm"]
            q_nope, q_pe, c, k_pe = self.mla_inputs(L, h, self.q_lora > 0)
            q_pe = self.rope.apply(q_pe, pos)
            k_pe = self.rope.apply(k_pe[:, None, :], pos)[:, 0, :]
            if self.kv_round == "f16":
                c = c.astype(np.float16).astype(np.float64)
                k_pe = k_pe.astype(np.float16).astype(np.float64)
            elif self.kv_round == "q8_0":
                c, k_pe = q8_0_round(c), q8_0_round(k_pe)
            c_all = self.c_cache[li] = np.concatenate([self.c_cache[li], c])
            kpe_all = self.kpe_cache[li] = np.concatenate([self.kpe_cache[li], k_pe])
            # decompress the new latents: per head k = k_b[h]^T c, v = v_b[h] c
            k_all = self.k_cache[li] = np.concatenate([self.k_cache[li], np.einsum("tc,hcd->thd", c, L["k_b"])])
            v_all = self.v_cache[li] = np.concatenate([self.v_cache[li], np.einsum("tc,hvc->thv", c, L["v_b"])])
            att = self.attend(q_nope, q_pe, k_all, kpe_all, v_all, pos)
            if self.record:
                self.trace.append({"layer": li, "pos": pos.copy(), "q_nope": q_nope.copy(), "q_pe": q_pe.copy(),
                                   "c": c_all.copy(), "k_pe": kpe_all.copy(), "out": att.copy()})
            x = x + att.reshape(n, H * self.v_dim) @ L["wo"].T
            h = rms_norm(x, self.eps) * L["ffn_norm"]
            y, margin = self.ffn(li, L, h, pos, margin)
            x = x + y
        return self.output(x, n, margin)

    def dense_ffn(self, L: dict, h: np.ndarray) -> np.ndarray:
        return (silu(h @ L["gate"].T) * (h @ L["up"].T)) @ L["down"].T
