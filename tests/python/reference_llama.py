"""A numpy reference forward pass for llama-family GGUF models (llama, qwen2, qwen3).

Independent of strata: the file (one file or every shard of a split model) is read with the
`gguf` package's GGUFReader and weights are dequantized with gguf.quants.dequantize. The math
follows llama.cpp's graph for these architectures, in float64 throughout:

  x = token_embd[token]
  per layer:  h = rms_norm(x) * attn_norm
              q, k, v = h Wq (+bq), h Wk (+bk), h Wv (+bv)          (qwen2: biases)
              q, k = rms_norm_per_head(q) * q_norm, ... * k_norm    (qwen3, before RoPE)
              q, k = rope(q, pos), rope(k, pos)                     (llama: adjacent pairs;
                                                                     qwen2/qwen3: NeoX halves)
              x += softmax(q k^T / sqrt(head_dim) + causal mask) v Wo    (GQA: n_head / n_head_kv
                                                                     query heads share a KV head)
              h = rms_norm(x) * ffn_norm
              x += (silu(h Wgate) * (h Wup)) Wdown
  logits = (rms_norm(x) * output_norm) Wout      (Wout = token_embd when output.weight is absent)

RoPE: theta = pos * freq_base^(-i0 / n_rot) for the even index i0 of each rotated pair. Scaling
as `{arch}.rope.scaling.type` says: "linear" divides positions by `rope.scaling.factor`; "yarn"
follows ggml's rope_yarn (freq_scale = 1/factor, ext_factor ramp between the correction
dimensions from beta_fast/beta_slow and rope.scaling.original_context_length, magnitude
scale attn_factor * (1 + 0.1 ln(factor))). Keys read for YaRN: rope.scaling.yarn_ext_factor
(default 1), yarn_attn_factor (1), yarn_beta_fast (32), yarn_beta_slow (1).

Use ReferenceModel(path).forward(tokens) incrementally (the KV cache persists between calls;
reset() clears it) or ReferenceModel.full(tokens) for a fresh run; both return the logits of
every token given, shape (n_tokens, n_vocab), float64.
"""
from __future__ import annotations

import math
import os
import re
from pathlib import Path
from typing import Any, Optional, Sequence, Union

import numpy as np
import gguf
from gguf import GGUFReader
from gguf.quants import dequantize

_SPLIT = re.compile(r"^(.*)-(\d{5})-of-(\d{5})\.gguf$")


def _shard_paths(path: Union[str, os.PathLike]) -> list[Path]:
    p = Path(path)
    m = _SPLIT.match(p.name)
    if not m:
        return [p]
    n = int(m.group(3))
    return [p.with_name(f"{m.group(1)}-{i:05d}-of-{n:05d}.gguf") for i in range(1, n + 1)]


def _field_value(field: Any) -> Any:
    return field.contents()


class GGUFWeights:
    """Metadata (first shard) and every tensor (all shards) of a GGUF model, dequantized to float64."""

    def __init__(self, path: Union[str, os.PathLike, Sequence[Union[str, os.PathLike]]]):
        paths = [Path(p) for p in path] if isinstance(path, (list, tuple)) else _shard_paths(path)
        self.readers = [GGUFReader(str(p)) for p in paths]
        self.metadata = {name: _field_value(f) for name, f in self.readers[0].fields.items()
                         if not name.startswith("GGUF.")}
        self._tensors = {}
        for r in self.readers:
            for t in r.tensors:
                self._tensors[t.name] = t
        self._cache: dict[str, np.ndarray] = {}

    def __contains__(self, name: str) -> bool:
        return name in self._tensors

    def get(self, name: str) -> np.ndarray:
        """The tensor in numpy order (reversed ggml ne), float64."""
        if name not in self._cache:
            t = self._tensors[name]
            ne = [int(x) for x in t.shape]
            qtype = gguf.GGMLQuantizationType(int(t.tensor_type))
            if qtype in (gguf.GGMLQuantizationType.F32, gguf.GGMLQuantizationType.F16):
                arr = np.asarray(t.data).astype(np.float64)
            else:
                arr = dequantize(np.asarray(t.data), qtype).astype(np.float64)
            self._cache[name] = arr.reshape(tuple(reversed(ne)))
        return self._cache[name]


def rms_norm(x: np.ndarray, eps: float) -> np.ndarray:
    return x / np.sqrt(np.mean(x * x, axis=-1, keepdims=True) + eps)


def yarn_corr_dims(n_rot: int, n_ctx_orig: int, freq_base: float, beta_fast: float, beta_slow: float):
    """ggml's correction dimensions: where the YaRN ramp starts and ends (in pair units)."""
    def corr_dim(n_rotations: float) -> float:
        return n_rot * math.log(n_ctx_orig / (n_rotations * 2 * math.pi)) / (2 * math.log(freq_base))
    start = math.floor(corr_dim(beta_fast))
    end = math.ceil(corr_dim(beta_slow))
    return max(0.0, start), min(n_rot - 1.0, end)


class Rope:
    """cos/sin tables for positions, as ggml's rope (with rope_yarn when ext_factor != 0)."""

    def __init__(self, n_rot: int, neox: bool, freq_base: float, freq_scale: float = 1.0, ext_factor: float = 0.0,
                 attn_factor: float = 1.0, beta_fast: float = 32.0, beta_slow: float = 1.0, n_ctx_orig: int = 0):
        self.n_rot, self.neox = n_rot, neox
        self.freq_base, self.freq_scale = freq_base, freq_scale
        self.ext_factor, self.attn_factor = ext_factor, attn_factor
        self.corr = yarn_corr_dims(n_rot, n_ctx_orig, freq_base, beta_fast, beta_slow) if n_ctx_orig > 0 else (0, 0)

    def cos_sin(self, positions: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
        i0 = np.arange(0, self.n_rot, 2, dtype=np.float64)  # even index of each pair
        theta_extrap = positions[:, None].astype(np.float64) * self.freq_base ** (-i0 / self.n_rot)[None, :]
        theta_interp = self.freq_scale * theta_extrap
        mscale = self.attn_factor
        if self.ext_factor != 0.0:
            low, high = self.corr
            y = (np.floor(i0 / 2) - low) / max(0.001, high - low)
            ramp = 1.0 - np.minimum(1.0, np.maximum(0.0, y))
            mix = ramp * self.ext_factor
            theta = theta_interp * (1 - mix) + theta_extrap * mix
            mscale *= 1.0 + 0.1 * math.log(1.0 / self.freq_scale)
        else:
            theta = theta_interp
        return np.cos(theta) * mscale, np.sin(theta) * mscale

    def apply(self, x: np.ndarray, positions: np.ndarray) -> np.ndarray:
        """x: (n_tokens, n_heads, head_dim). Rotates the first n_rot dims of every head."""
        c, s = self.cos_sin(positions)
        c, s = c[:, None, :], s[:, None, :]
        out = x.copy()
        r = self.n_rot
        if self.neox:
            a, b = x[..., : r // 2], x[..., r // 2: r]
            out[..., : r // 2] = a * c - b * s
            out[..., r // 2: r] = a * s + b * c
        else:
            a, b = x[..., 0:r:2], x[..., 1:r:2]
            out[..., 0:r:2] = a * c - b * s
            out[..., 1:r:2] = a * s + b * c
        return out


ARCHS = {"llama": {"neox": False}, "qwen2": {"neox": True}, "qwen3": {"neox": True}}


class ReferenceModel:
    """The reference forward pass of one GGUF model; see the module docstring."""

    def __init__(self, path: Union[str, os.PathLike, Sequence[Union[str, os.PathLike]]],
                 kv_round: Optional[str] = None):
        """kv_round: None keeps K and V in float64; "f16" rounds them to float16 as they enter
        the cache (modelling a cache stored as f16; everything else stays float64)."""
        self.kv_round = kv_round
        w = self.w = GGUFWeights(path)
        md = w.metadata
        arch = self.arch = md["general.architecture"]
        if arch not in ARCHS:
            raise ValueError(f"reference: unsupported architecture {arch!r}")

        def key(k: str, default: Any = None) -> Any:
            return md.get(f"{arch}.{k}", default)

        self.n_embd = int(key("embedding_length"))
        self.n_layer = int(key("block_count"))
        self.n_head = int(key("attention.head_count"))
        self.n_head_kv = int(key("attention.head_count_kv", self.n_head))
        self.head_dim = int(key("attention.key_length", self.n_embd // self.n_head))
        self.eps = float(key("attention.layer_norm_rms_epsilon", 1e-5))
        n_ctx_train = int(key("context_length", 0))
        n_rot = int(key("rope.dimension_count", self.head_dim))
        freq_base = float(key("rope.freq_base", 10000.0))
        # as llama.cpp: the factor (rope.scaling.factor, else the older rope.scale_linear) sets
        # freq_scale = 1/factor whatever the scaling type; the type only decides YaRN.
        scaling = key("rope.scaling.type", "linear")
        factor = float(key("rope.scaling.factor", key("rope.scale_linear", 0.0)) or 0.0)
        freq_scale = 1.0 / factor if factor > 0 else 1.0
        ext = 0.0
        kw: dict[str, Any] = {}
        if scaling == "yarn":
            ext = float(key("rope.scaling.yarn_ext_factor", 1.0))
            kw = dict(attn_factor=float(key("rope.scaling.yarn_attn_factor", key("rope.scaling.attn_factor", 1.0))),
                      beta_fast=float(key("rope.scaling.yarn_beta_fast", 32.0)),
                      beta_slow=float(key("rope.scaling.yarn_beta_slow", 1.0)),
                      n_ctx_orig=int(key("rope.scaling.original_context_length", n_ctx_train)))
        elif scaling not in ("none", "linear"):
            raise ValueError(f"reference: unsupported rope scaling {scaling!r}")
        self.rope = Rope(n_rot, ARCHS[arch]["neox"], freq_base, freq_scale, ext, **kw)
        self.tok_embd = w.get("token_embd.weight")
        self.n_vocab = self.tok_embd.shape[0]
        self.out_w = w.get("output.weight") if "output.weight" in w else self.tok_embd
        self.out_norm = w.get("output_norm.weight")
        self.layers = []
        for i in range(self.n_layer):
            p = f"blk.{i}."

            def opt(n: str) -> Any:
                return w.get(p + n) if p + n in w else None

            self.layers.append({
                "attn_norm": w.get(p + "attn_norm.weight"), "wq": w.get(p + "attn_q.weight"),
                "wk": w.get(p + "attn_k.weight"), "wv": w.get(p + "attn_v.weight"),
                "wo": w.get(p + "attn_output.weight"), "bq": opt("attn_q.bias"), "bk": opt("attn_k.bias"),
                "bv": opt("attn_v.bias"), "q_norm": opt("attn_q_norm.weight"), "k_norm": opt("attn_k_norm.weight"),
                "ffn_norm": w.get(p + "ffn_norm.weight"), "gate": w.get(p + "ffn_gate.weight"),
                "up": w.get(p + "ffn_up.weight"), "down": w.get(p + "ffn_down.weight")})
        self.reset()

    def reset(self) -> None:
        self.k_cache = [np.zeros((0, self.n_head_kv, self.head_dim)) for _ in range(self.n_layer)]
        self.v_cache = [np.zeros((0, self.n_head_kv, self.head_dim)) for _ in range(self.n_layer)]
        self.n_past = 0

    def forward(self, tokens: Sequence[int]) -> np.ndarray:
        """Runs tokens at positions n_past..; returns (n_tokens, n_vocab) logits; extends the cache."""
        toks = np.asarray(tokens, dtype=np.int64)
        n = len(toks)
        pos = np.arange(self.n_past, self.n_past + n)
        x = self.tok_embd[toks]
        hd, nh, nkv = self.head_dim, self.n_head, self.n_head_kv
        gqa = nh // nkv
        for li, L in enumerate(self.layers):
            h = rms_norm(x, self.eps) * L["attn_norm"]
            q, k, v = h @ L["wq"].T, h @ L["wk"].T, h @ L["wv"].T
            if L["bq"] is not None:
                q, k, v = q + L["bq"], k + L["bk"], v + L["bv"]
            q, k, v = q.reshape(n, nh, hd), k.reshape(n, nkv, hd), v.reshape(n, nkv, hd)
            if L["q_norm"] is not None:
                q = rms_norm(q, self.eps) * L["q_norm"]
                k = rms_norm(k, self.eps) * L["k_norm"]
            q, k = self.rope.apply(q, pos), self.rope.apply(k, pos)
            if self.kv_round == "f16":
                k, v = k.astype(np.float16).astype(np.float64), v.astype(np.float16).astype(np.float64)
            K = self.k_cache[li] = np.concatenate([self.k_cache[li], k])
            V = self.v_cache[li] = np.concatenate([self.v_cache[li], v])
            total = K.shape[0]
            mask = np.arange(total)[None, :] > pos[:, None]  # (n, total): key after query
            att = np.empty((n, nh, hd))
            for head in range(nh):
                kvh = head // gqa
                s = (q[:, head, :] @ K[:, kvh, :].T) / math.sqrt(hd)
                s = np.where(mask, -np.inf, s)
                s = np.exp(s - s.max(axis=1, keepdims=True))
                s /= s.sum(axis=1, keepdims=True)
                att[:, head, :] = s @ V[:, kvh, :]
            x = x + att.reshape(n, nh * hd) @ L["wo"].T
            h = rms_norm(x, self.eps) * L["ffn_norm"]
            g = h @ L["gate"].T
            x = x + ((g / (1 + np.exp(-g))) * (h @ L["up"].T)) @ L["down"].T
        self.n_past += n
        return (rms_norm(x, self.eps) * self.out_norm) @ self.out_w.T

    def full(self, tokens: Sequence[int]) -> np.ndarray:
        """A fresh run over tokens from position 0 (the cache is reset first)."""
        self.reset()
        return self.forward(tokens)
