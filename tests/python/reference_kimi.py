"""A numpy reference forward pass for `kimi-linear` (Kimi-Linear) and `kimi-k3` (Kimi K3) GGUF
models: KDA linear-attention layers interleaved with MLA layers, MoE (K3: latent MoE and SiTU),
K3 attention residuals.

Independent of strata: the file (one file or every shard of a split model) is read with the
`gguf` package (reference_llama.GGUFWeights, dequantized by gguf.quants), and the math follows
lib/model/kimi_linear.md in float64 throughout. Routing is reference_deepseek2.route.

Conventions (what an implementation must match; numpy shapes are the reversed ggml ne):

  Layer type      layer i is KDA when attention.head_count_kv[i] == 0, MLA otherwise.
  KDA, per token t, heads h (H = attention.head_count), dk = kda.head_dim, D = H*dk,
  K = ssm.conv_kernel, eps = attention.layer_norm_rms_epsilon:
    q', k', v'    = W_q h, W_k h, W_v h (attn_q/k/v, numpy (D, E)); head h = channels h*dk..h*dk+dk-1
    conv          w = ssm_conv1d_{q,k,v} reshaped to (D, K): w[c, j] = file element j + c*K (the tap
                  index innermost; ne [K,1,D,1] or [K,1,D] both read this way); tap j = K-1 multiplies
                  the current token, tap j the input t-(K-1)+j; q[c] = silu(sum_j w[c,j] q'_{t-(K-1)+j}[c]).
                  The conv state is the last K-1 PRE-conv inputs q', k', v' (zeros at the start).
    L2 norm       q_h <- q_h / max(||q_h||, eps), same for k_h (eps = the rms eps; v is not normed)
    q scale       q_h <- q_h / sqrt(dk), AFTER the L2 norm, before the recurrence
    decay         z = W_f_b (W_f_a h) + ssm_dt.bias (D wide); a_h = ssm_a[h] (the file holds -exp(A_log));
                  no kda.gate_lower_bound: g = a_h * softplus(z);  with lb: g = lb * sigmoid(-a_h * z)
                  (log decay per channel, alpha = exp(g); channel c of head h decays key row c of S_h)
    beta          beta_h = sigmoid(W_beta h)[h] (ssm_beta, numpy (H, E))
    recurrence    S_h in R^{dk x dv}, rows = key channels, columns = value channels, zero at the start:
                  S~ = diag(alpha) S;  u = beta (v - S~^T k);  S = S~ + k u^T;  o = S^T q (read after)
    output        y_h = rms_norm(o_h) * ssm_norm * sigmoid(gate_h), gate = W_g_b (W_g_a h) (kimi-linear,
                  ssm_g_a/ssm_g_b) or W_g h (K3, ssm_g); out = W_o concat_h y_h (attn_output (E, D))
  MLA (no rotation in either model):
    q = q_lora ? W_q_b (rms_norm(W_q_a h) * q_a_norm) : W_q h, per head [q_nope (N), q_pe (R)];
    ckv = W_kv_a_mqa h; c = rms_norm(ckv[:C]) * kv_a_norm; k_pe = ckv[C:] (unrotated, shared by heads);
    cache += (c, k_pe) (kv_round="f16": both rounded to f16 as they enter);
    DECOMPRESSED attention per head: k_p = (k_b[h]^T c_p, k_pe_p), v_p = v_b[h] c_p,
    s_p = (q_nope . k_b[h]^T c_p + q_pe . k_pe_p) / sqrt(N + R); o_h = softmax(s) v;
    K3 with attn_gate: concat(o_h) *= sigmoid(W_gate h) before W_o.
    (attn_k_b numpy (H, C, N), attn_v_b (H, Vd, C); a legacy attn_kv_b (H*(N+Vd), C) is read in the
    HF order: per head N k rows then Vd v rows.)
  FFN: router p = sigmoid(W_gate_inp h) on the full-width h; sel = p + exp_probs_b chooses the
    expert_used_count largest (ties: lower index); w = p[chosen] / sum (kimi-linear: always; K3: when
    expert_weights_norm), times expert_weights_scale when != 0.
    kimi-linear: SwiGLU everywhere.  K3: situ(a, b) = beta tanh(a/beta) sigmoid(a) (lin > 0 ? lin
    tanh(b/lin) : b) everywhere; with expert_latent_length L > 0 the experts run on z = W_routed_down h
    (E -> L), m = sum_i w_i down_e(act(gate_e z, up_e z)), m = rms_norm(m) * ffn_routed_norm (when
    present), moe = W_routed_up m (L -> E). Shared experts (full width) added to moe.
  K3 attention residuals (attn_res.block_size B > 0), per token, bank initially empty:
    mix(x, w) = x if the bank is empty, else sum_j p_j b_j + p_x x, p = softmax over the bank and x of
    sum_d rms_norm(.)_d w_d (unweighted norm, eps = rms eps);
    layer i: a = mix(x, attn_res_score_i); if i % B == 0: push x; y = attn(rms_norm(a) * attn_norm);
    x = (i % B == 0) ? y : x + y; f = mix(x, ffn_res_score_i); x += ffn(rms_norm(f) * ffn_norm);
    logits = W_out (rms_norm(mix(x, output_res_score)) * output_norm).

Use ReferenceKimi(path).forward(tokens) incrementally (the MLA latent cache, the KDA conv windows
and recurrent states persist between calls; reset() clears them) or .full(tokens) for a fresh run;
both return the logits of every token given, shape (n_tokens, n_vocab), float64. ``margins`` holds
one routing margin per position (as reference_deepseek2). kda_chunk=N runs the KDA recurrence in
the chunked (WY) form with chunks of N tokens of each call instead of the step form (for tests;
the result must be the same).

kda_step / kda_chunked: the gated delta rule on raw arrays (q, k already normalized, q scaled).
"""
from __future__ import annotations

import math
import os
from typing import Any, Optional, Sequence, Union

import numpy as np

from reference_deepseek2 import MoEReference, gate_probs, route, routed_experts, silu
from reference_llama import rms_norm

ARCHS = ("kimi-linear", "kimi-k3")


# -- small functions (exposed for tests) ----------------------------------------------------------

def sigmoid(x: np.ndarray) -> np.ndarray:
    return 1.0 / (1.0 + np.exp(-x))


def softplus(x: np.ndarray) -> np.ndarray:
    return np.logaddexp(0.0, x)


def l2_norm(x: np.ndarray, eps: float) -> np.ndarray:
    """x / max(||x||_2, eps) over the last axis (ggml_l2_norm)."""
    return x / np.maximum(np.sqrt(np.sum(x * x, axis=-1, keepdims=True)), eps)


def situ(a: np.ndarray, b: np.ndarray, beta: float, lin: float) -> np.ndarray:
    """K3's SiTU gated activation of gate a and up b."""
    up = lin * np.tanh(b / lin) if lin > 0 else b
    return beta * np.tanh(a / beta) * sigmoid(a) * up


def causal_conv(x: np.ndarray, state: np.ndarray, w: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
    """Depthwise causal conv, no bias, no activation. x (n, D) new inputs, state (K-1, D) the previous
    K-1 inputs (oldest first), w (D, K) with tap K-1 on the current input. Returns (y (n, D), the new
    state: the last K-1 inputs)."""
    K = w.shape[1]
    xp = np.concatenate([state, x])  # (K-1+n, D)
    n = x.shape[0]
    y = np.zeros_like(x)
    for j in range(K):
        y += w[:, j] * xp[j:j + n]
    return y, xp[xp.shape[0] - (K - 1):].copy()


def kda_gate(z: np.ndarray, a: np.ndarray, lower_bound: Optional[float]) -> np.ndarray:
    """The per-channel log decay g. z (..., H, dk); a (H,) = ssm_a = -exp(A_log).
    lower_bound None: a * softplus(z); else lower_bound * sigmoid(-a * z)."""
    a = np.asarray(a, dtype=np.float64)[:, None]
    if lower_bound is None:
        return a * softplus(z)
    return lower_bound * sigmoid(-a * z)


def kda_step(q: np.ndarray, k: np.ndarray, v: np.ndarray, g: np.ndarray, beta: np.ndarray,
             S0: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
    """The gated delta rule one token at a time. q, k, g (T, H, dk) (q normalized and scaled, k
    normalized, g the log decay), v (T, H, dv), beta (T, H), S0 (H, dk, dv) (rows: key channels).
    Per token: S~ = diag(exp g) S; u = beta (v - S~^T k); S = S~ + k u^T; o = S^T q.
    Returns (o (T, H, dv), the final state (H, dk, dv))."""
    S = np.array(S0, dtype=np.float64, copy=True)
    T = q.shape[0]
    o = np.empty((T,) + v.shape[1:])
    for t in range(T):
        S = np.exp(g[t])[:, :, None] * S                          # decay the key rows
        pred = np.einsum("hk,hkv->hv", k[t], S)                   # S~^T k
        u = beta[t][:, None] * (v[t] - pred)
        S = S + k[t][:, :, None] * u[:, None, :]
        o[t] = np.einsum("hk,hkv->hv", q[t], S)                   # read after the update
    return o, S


def kda_chunked(q: np.ndarray, k: np.ndarray, v: np.ndarray, g: np.ndarray, beta: np.ndarray,
                S0: np.ndarray, chunk: int) -> tuple[np.ndarray, np.ndarray]:
    """The same recurrence in the chunked WY / UT-transform form of lib/model/kimi_linear.md, chunks of
    ``chunk`` tokens (the last one may be shorter). Same arguments and result as kda_step."""
    if chunk < 1:
        raise ValueError("chunk must be >= 1")
    S = np.array(S0, dtype=np.float64, copy=True)
    T = q.shape[0]
    o = np.empty((T,) + v.shape[1:])
    for s in range(0, T, chunk):
        e = min(s + chunk, T)
        n = e - s
        Q = q[s:e].transpose(1, 0, 2)          # (H, n, dk)
        Kc = k[s:e].transpose(1, 0, 2)
        V = v[s:e].transpose(1, 0, 2)          # (H, n, dv)
        B = beta[s:e].T                        # (H, n)
        G = np.cumsum(g[s:e].transpose(1, 0, 2), axis=1)   # (H, n, dk): G_r = sum_{s<=r} g_s
        lower = np.tril(np.ones((n, n), dtype=bool))        # j <= i
        diff = G[:, :, None, :] - G[:, None, :, :]          # G_i - G_j (H, i, j, dk)
        decay = np.exp(np.where(lower[None, :, :, None], diff, -np.inf))  # one exponent, 0 above
        kk = np.einsum("hid,hijd,hjd->hij", Kc, decay, Kc)
        Lm = B[:, :, None] * np.where(np.tri(n, k=-1, dtype=bool)[None], kk, 0.0)  # strictly lower
        # T = (I + L)^{-1} diag(beta) by forward substitution: X_i = beta_i e_i - sum_{j<i} L_ij X_j
        Tm = np.zeros((Q.shape[0], n, n))
        for i in range(n):
            Tm[:, i, i] = B[:, i]
            if i:
                Tm[:, i, :] -= np.einsum("hj,hjc->hc", Lm[:, i, :i], Tm[:, :i, :])
        eG = np.exp(G)
        W = Tm @ (eG * Kc)                      # (H, n, dk)
        U = Tm @ V                              # (H, n, dv)
        Vp = U - W @ S                          # the per-token deltas u_r
        Aqk = np.einsum("hid,hijd,hjd->hij", Q, decay, Kc)  # j <= i (decay is 0 above)
        O = (eG * Q) @ S + Aqk @ Vp
        o[s:e] = O.transpose(1, 0, 2)
        Gl = G[:, -1, :]                        # (H, dk)
        S = np.exp(Gl)[:, :, None] * S + np.einsum("hjd,hje->hde", np.exp(Gl[:, None, :] - G) * Kc, Vp)
    return o, S


# -- the model ------------------------------------------------------------------------------------

class ReferenceKimi(MoEReference):
    """The reference forward pass of one kimi-linear / kimi-k3 GGUF model; see the module docstring."""

    def __init__(self, path: Union[str, os.PathLike, Sequence[Union[str, os.PathLike]]],
                 kv_round: Optional[str] = None, kda_chunk: Optional[int] = None):
        """kv_round: None keeps the MLA latent cache (c, k_pe) in float64; "f16" rounds both to float16
        as they enter the cache. kda_chunk: None runs the KDA recurrence in the step form, N the
        chunked form with chunks of N tokens."""
        w, md = self.open_weights(path, kv_round)
        self.kda_chunk = kda_chunk
        arch = self.arch = md.get("general.architecture")
        if arch not in ARCHS:
            raise ValueError(f"reference: not a kimi-linear / kimi-k3 file ({arch!r})")
        self.k3 = arch == "kimi-k3"

        def key(k: str, default: Any = None) -> Any:
            v = md.get(f"{arch}.{k}", default)
            if v is None:
                raise ValueError(f"reference: {arch}.{k} is missing")
            return v

        self.n_embd = E = int(key("embedding_length"))
        self.n_layer = int(key("block_count"))
        self.n_head = H = int(key("attention.head_count"))
        self.eps = float(key("attention.layer_norm_rms_epsilon"))
        hkv = key("attention.head_count_kv")
        hkv = [int(v) for v in (hkv if isinstance(hkv, (list, tuple)) else [hkv] * self.n_layer)]
        if len(hkv) != self.n_layer:
            raise ValueError(f"reference: head_count_kv has {len(hkv)} entries for {self.n_layer} layers")
        self.is_kda = [v == 0 for v in hkv]
        # KDA
        self.dk = dk = int(key("kda.head_dim"))
        self.D = D = H * dk
        self.K = int(key("ssm.conv_kernel"))
        lb = md.get(f"{arch}.kda.gate_lower_bound")
        self.gate_lb = None if lb is None or not math.isfinite(float(lb)) else float(lb)
        # MLA
        self.q_lora = int(key("attention.q_lora_rank", 0))
        self.kv_lora = C = int(key("attention.kv_lora_rank"))
        self.n_rot = R = int(key("rope.dimension_count"))
        qk = int(key("attention.key_length_mla"))
        self.v_dim = int(key("attention.value_length_mla"))
        self.nope = N = qk - R
        if N <= 0:
            raise ValueError(f"reference: key_length_mla {qk} leaves no nope dims beside R {R}")
        self.kq_scale = 1.0 / math.sqrt(N + R)
        # FFN
        self.n_dense = int(key("leading_dense_block_count", 0))
        self.n_expert = int(key("expert_count", 0))
        self.n_expert_used = int(key("expert_used_count", 0))
        self.n_shared = int(key("expert_shared_count", 0))
        gating = int(key("expert_gating_func", 2))
        if gating not in (1, 2):
            raise ValueError(f"reference: unknown expert_gating_func {gating}")
        self.gating = "sigmoid" if gating == 2 else "softmax"
        self.weights_norm = True if not self.k3 else bool(key("expert_weights_norm", False))
        self.weights_scale = float(key("expert_weights_scale", 0.0))
        self.n_group = int(key("expert_group_count", 0))
        self.n_group_used = int(key("expert_group_used_count", 0))
        self.latent = int(key("expert_latent_length", 0)) if self.k3 else 0
        if self.k3:
            self.situ = (float(key("activation.situ_beta")), float(key("activation.situ_linear_beta")))
            self.res_block = int(key("attn_res.block_size"))
        else:
            self.situ, self.res_block = None, 0

        self.tok_embd = w.get("token_embd.weight")
        self.n_vocab = self.tok_embd.shape[0]
        self.out_w = w.get("output.weight") if "output.weight" in w else self.tok_embd
        self.out_norm = w.get("output_norm.weight")
        self.out_res = w.get("output_res_score.weight") if self.res_block > 0 else None
        self.layers = []
        for i in range(self.n_layer):
            p = f"blk.{i}."

            def get(n: str) -> np.ndarray:
                return w.get(p + n)

            def opt(n: str) -> Any:
                return w.get(p + n) if p + n in w else None

            L: dict[str, Any] = {"kda": self.is_kda[i], "attn_norm": get("attn_norm.weight"),
                                 "wo": get("attn_output.weight"), "ffn_norm": get("ffn_norm.weight")}
            if self.res_block > 0:
                L["attn_res"] = get("attn_res_score.weight")
                L["ffn_res"] = get("ffn_res_score.weight")
            if L["kda"]:
                for n in ("q", "k", "v"):
                    L["w" + n] = get(f"attn_{n}.weight")                               # (D, E)
                    cw = get(f"ssm_conv1d_{n}.weight")
                    if cw.size != D * self.K:
                        raise ValueError(f"reference: {p}ssm_conv1d_{n} has {cw.size} values, not {D}*{self.K}")
                    L["conv_" + n] = cw.reshape(D, self.K)                            # [c, j] = elem j + c*K
                L["f_a"], L["f_b"] = get("ssm_f_a.weight"), get("ssm_f_b.weight")     # (dk, E), (D, dk)
                L["dt_bias"] = get("ssm_dt.bias").reshape(D)
                L["a"] = w.get(p + "ssm_a").reshape(H)                                 # -exp(A_log)
                L["beta"] = get("ssm_beta.weight")                                    # (H, E)
                if p + "ssm_g_a.weight" in w:
                    L["g_a"], L["g_b"] = get("ssm_g_a.weight"), get("ssm_g_b.weight")  # (dk, E), (D, dk)
                else:
                    L["g"] = get("ssm_g.weight")                                      # (D, E)
                L["ssm_norm"] = get("ssm_norm.weight").reshape(dk)
                assert L["wq"].shape == (D, E) and L["wo"].shape == (E, D), (L["wq"].shape, L["wo"].shape)
            else:
                L["kv_a"] = get("attn_kv_a_mqa.weight")                               # (C+R, E)
                L["kv_a_norm"] = get("attn_kv_a_norm.weight")
                if p + "attn_q_a_norm.weight" in w:
                    L["q_a"], L["q_a_norm"], L["q_b"] = (get("attn_q_a.weight"), get("attn_q_a_norm.weight"),
                                                         get("attn_q_b.weight"))
                else:
                    L["q"] = get("attn_q.weight")                                     # (H*(N+R), E)
                if p + "attn_kv_b.weight" in w and p + "attn_k_b.weight" not in w:
                    kvb = get("attn_kv_b.weight").reshape(H, N + self.v_dim, C)        # HF order
                    L["k_b"] = np.ascontiguousarray(kvb[:, :N, :].transpose(0, 2, 1))  # (H, C, N)
                    L["v_b"] = np.ascontiguousarray(kvb[:, N:, :])                     # (H, Vd, C)
                else:
                    L["k_b"], L["v_b"] = get("attn_k_b.weight"), get("attn_v_b.weight")
                assert L["k_b"].shape == (H, C, N) and L["v_b"].shape == (H, self.v_dim, C)
                L["gate"] = opt("attn_gate.weight") if self.k3 else None              # (H*Vd, E)
            if i < self.n_dense:
                L["moe"] = False
                L["up"], L["gate_ffn"], L["down"] = get("ffn_up.weight"), get("ffn_gate.weight"), get("ffn_down.weight")
            else:
                if self.n_expert <= 0 or self.n_expert_used <= 0:
                    raise ValueError(f"reference: layer {i} is MoE but expert_count/expert_used_count are missing")
                L["moe"] = True
                L["gate_inp"] = get("ffn_gate_inp.weight")                            # (n_expert, E)
                L["probs_b"] = get("exp_probs_b.bias")
                L["gate_exps"], L["up_exps"] = get("ffn_gate_exps.weight"), get("ffn_up_exps.weight")
                L["down_exps"] = get("ffn_down_exps.weight")                          # (n_expert, Le, n_ff_exp)
                if self.latent > 0:
                    L["routed_down"] = get("ffn_routed_down.weight")                  # (L, E)
                    L["routed_up"] = get("ffn_routed_up.weight")                      # (E, L)
                    L["routed_norm"] = opt("ffn_routed_norm.weight")
                    assert L["routed_down"].shape == (self.latent, E)
                L["gate_sh"], L["up_sh"], L["down_sh"] = (opt("ffn_gate_shexp.weight"), opt("ffn_up_shexp.weight"),
                                                          opt("ffn_down_shexp.weight"))
            self.layers.append(L)
        self.has_moe = any(L["moe"] for L in self.layers)
        self.force: dict[tuple[int, int], Any] = {}
        self.reset()

    # -- state ---------------------------------------------------------------------------------

    def reset(self) -> None:
        K1, D = self.K - 1, self.D
        self.conv_state = [None if not kda else {n: np.zeros((K1, D)) for n in "qkv"} for kda in self.is_kda]
        self.ssm_state = [np.zeros((self.n_head, self.dk, self.dk)) if kda else None for kda in self.is_kda]
        self.c_cache = [np.zeros((0, self.kv_lora)) for _ in range(self.n_layer)]
        self.kpe_cache = [np.zeros((0, self.n_rot)) for _ in range(self.n_layer)]
        self.n_past = 0
        self.margins: list[float] = []
        self.events: dict[tuple[int, int], tuple[float, np.ndarray, Optional[np.ndarray]]] = {}

    def snapshot(self) -> tuple:
        """The state forward() extends, for restore() (arrays are replaced, never changed in place)."""
        return ([None if c is None else dict(c) for c in self.conv_state], list(self.ssm_state),
                list(self.c_cache), list(self.kpe_cache), self.n_past, len(self.margins), dict(self.events))

    def restore(self, state: tuple) -> None:
        conv, ssm, c, k, self.n_past, n_margins, events = state
        self.conv_state = [None if x is None else dict(x) for x in conv]
        self.ssm_state, self.c_cache, self.kpe_cache, self.events = list(ssm), list(c), list(k), dict(events)
        del self.margins[n_margins:]

    # -- KDA -----------------------------------------------------------------------------------

    def kda(self, li: int, L: dict, h: np.ndarray) -> np.ndarray:
        """The KDA layer li on normed rows h (n, E); advances its conv windows and recurrent state."""
        n, H, dk, eps = h.shape[0], self.n_head, self.dk, self.eps
        st = dict(self.conv_state[li])
        act = {}
        for name in "qkv":
            y, st[name] = causal_conv(h @ L["w" + name].T, st[name], L["conv_" + name])
            act[name] = silu(y).reshape(n, H, dk)
        self.conv_state[li] = st
        q = l2_norm(act["q"], eps) / math.sqrt(dk)
        k = l2_norm(act["k"], eps)
        v = act["v"]
        z = ((h @ L["f_a"].T) @ L["f_b"].T + L["dt_bias"]).reshape(n, H, dk)
        g = kda_gate(z, L["a"], self.gate_lb)
        beta = sigmoid(h @ L["beta"].T)                                   # (n, H)
        if self.kda_chunk:
            o, self.ssm_state[li] = kda_chunked(q, k, v, g, beta, self.ssm_state[li], self.kda_chunk)
        else:
            o, self.ssm_state[li] = kda_step(q, k, v, g, beta, self.ssm_state[li])
        gate = (h @ L["g_a"].T) @ L["g_b"].T if "g_a" in L else h @ L["g"].T
        y = rms_norm(o, eps) * L["ssm_norm"] * sigmoid(gate.reshape(n, H, dk))
        return y.reshape(n, self.D) @ L["wo"].T

    # -- MLA -----------------------------------------------------------------------------------

    def mla(self, li: int, L: dict, h: np.ndarray, pos: np.ndarray) -> np.ndarray:
        n, H, C, N, R, Vd = h.shape[0], self.n_head, self.kv_lora, self.nope, self.n_rot, self.v_dim
        q_nope, q_pe, c, k_pe = self.mla_inputs(L, h, "q_a" in L)        # k_pe: no rotation
        if self.kv_round == "f16":
            c = c.astype(np.float16).astype(np.float64)
            k_pe = k_pe.astype(np.float16).astype(np.float64)
        c_all = self.c_cache[li] = np.concatenate([self.c_cache[li], c])
        kpe_all = self.kpe_cache[li] = np.concatenate([self.kpe_cache[li], k_pe])
        T = c_all.shape[0]
        mask = np.arange(T)[None, :] > pos[:, None]
        out = np.empty((n, H, Vd))
        for hd in range(H):
            k_nope = c_all @ L["k_b"][hd]          # (T, N)
            v = c_all @ L["v_b"][hd].T             # (T, Vd)
            s = (q_nope[:, hd, :] @ k_nope.T + q_pe[:, hd, :] @ kpe_all.T) * self.kq_scale
            s = np.where(mask, -np.inf, s)
            s = np.exp(s - s.max(axis=1, keepdims=True))
            s /= s.sum(axis=1, keepdims=True)
            out[:, hd, :] = s @ v
        o = out.reshape(n, H * Vd)
        if L.get("gate") is not None:
            o = o * sigmoid(h @ L["gate"].T)
        return o @ L["wo"].T

    # -- FFN -----------------------------------------------------------------------------------

    def act(self, a: np.ndarray, b: np.ndarray) -> np.ndarray:
        return situ(a, b, *self.situ) if self.situ is not None else silu(a) * b

    def moe(self, li: int, L: dict, h: np.ndarray, pos: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
        logits = h @ L["gate_inp"].T
        probs = sigmoid(logits) if self.gating == "sigmoid" else gate_probs(logits, self.gating)
        z = h @ L["routed_down"].T if self.latent > 0 else h
        m = np.zeros_like(z)
        # route: this module's, looked up per call (test_forward_kimi wraps it)
        picks, margins = routed_experts(self, li, L, probs, pos, route)
        for t, (chosen, wts) in enumerate(picks):
            for e_i, wt in zip(chosen, wts):
                m[t] += wt * (L["down_exps"][e_i] @ self.act(L["gate_exps"][e_i] @ z[t], L["up_exps"][e_i] @ z[t]))
        if self.latent > 0:
            if L["routed_norm"] is not None:
                m = rms_norm(m, self.eps) * L["routed_norm"]
            out = m @ L["routed_up"].T
        else:
            out = m
        if L["gate_sh"] is not None:
            out = out + self.act(h @ L["gate_sh"].T, h @ L["up_sh"].T) @ L["down_sh"].T
        return out, margins

    # -- forward -------------------------------------------------------------------------------

    def mix(self, bank: list, x: np.ndarray, w: np.ndarray) -> np.ndarray:
        """The attention-residual mix of each row of x with its banked checkpoints."""
        if not bank:
            return x
        vals = bank + [x]
        s = np.stack([rms_norm(b, self.eps) @ w for b in vals], axis=1)  # (n, len)
        p = np.exp(s - s.max(axis=1, keepdims=True))
        p /= p.sum(axis=1, keepdims=True)
        return sum(p[:, j:j + 1] * b for j, b in enumerate(vals))

    def forward(self, tokens: Sequence[int]) -> np.ndarray:
        """Runs tokens at positions n_past..; returns (n_tokens, n_vocab) logits; extends the caches
        and states and appends one routing margin per token to self.margins."""
        toks = np.asarray(tokens, dtype=np.int64)
        n = len(toks)
        pos = np.arange(self.n_past, self.n_past + n)
        x = self.tok_embd[toks]
        B = self.res_block
        bank: list[np.ndarray] = []
        margin = np.full(n, math.inf)
        for li, L in enumerate(self.layers):
            a = self.mix(bank, x, L["attn_res"]) if B > 0 else x
            banked = B > 0 and li % B == 0
            if banked:
                bank.append(x)
            h = rms_norm(a, self.eps) * L["attn_norm"]
            y = self.kda(li, L, h) if L["kda"] else self.mla(li, L, h, pos)
            x = y if banked else x + y
            f = self.mix(bank, x, L["ffn_res"]) if B > 0 else x
            h = rms_norm(f, self.eps) * L["ffn_norm"]
            y, margin = self.ffn(li, L, h, pos, margin)
            x = x + y
        if B > 0:
            x = self.mix(bank, x, self.out_res)
        return self.output(x, n, margin)

    def dense_ffn(self, L: dict, h: np.ndarray) -> np.ndarray:
        return self.act(h @ L["gate_ffn"].T, h @ L["up"].T) @ L["down"].T
