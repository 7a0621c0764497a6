"""Synthetic llama / qwen2 / qwen3 GGUF models written with strata.Writer from numpy weights."""
from __future__ import annotations

from pathlib import Path
from typing import Any, Callable, Optional, Sequence

import numpy as np

import strata

SPACE = "\u2581"  # SentencePiece's visible space


def byte_vocab(n_vocab: int, extra: Sequence[tuple[str, float]] = ()) -> tuple[list[str], list[float], list[int]]:
    """A byte-level SPM vocabulary: <unk>, <s>, </s>, the 256 <0xNN> byte tokens, then ``extra``
    (text, score) pieces, then fillers "▁t<i>" up to n_vocab. Returns (tokens, scores, types)
    with llama.cpp's token types (1 normal, 2 unknown, 3 control, 6 byte)."""
    tokens = ["<unk>", "<s>", "</s>"] + [f"<0x{b:02X}>" for b in range(256)]
    types = [2, 3, 3] + [6] * 256
    scores = [0.0, 0.0, 0.0] + [0.0] * 256
    for text, score in extra:
        tokens.append(text)
        types.append(1)
        scores.append(float(score))
    i = len(tokens)
    while len(tokens) < n_vocab:
        tokens.append(f"{SPACE}t{i}")
        types.append(1)
        scores.append(-1000.0 - i)
        i += 1
    return tokens, scores, types


def set_vocab(w: strata.Writer, tokens: list[str], scores: list[float], types: list[int],
              add_bos: bool = True) -> None:
    w.set("tokenizer.ggml.model", "llama")
    w.set("tokenizer.ggml.tokens", tokens)
    w.set("tokenizer.ggml.scores", np.asarray(scores, dtype=np.float32))
    w.set("tokenizer.ggml.token_type", np.asarray(types, dtype=np.int32))
    w.set("tokenizer.ggml.bos_token_id", 1, type="u32")
    w.set("tokenizer.ggml.eos_token_id", 2, type="u32")
    w.set("tokenizer.ggml.unknown_token_id", 0, type="u32")
    w.set("tokenizer.ggml.add_bos_token", add_bos)
    w.set("tokenizer.ggml.add_eos_token", False)


def write_model(path: Path, seed: int, arch: str = "llama", wtype: str = "f32", n_embd: int = 256,
                n_layer: int = 2, n_head: int = 4, n_head_kv: int = 2, n_ff: int = 512, n_vocab: int = 300,
                n_ctx_train: int = 2048, head_dim: Optional[int] = None, tied: bool = False,
                rope: Optional[dict[str, Any]] = None, n_shards: int = 1,
                extra_vocab: Sequence[tuple[str, float]] = (),
                raw_matrix: Optional[Callable[[str, int, int, float], Optional[tuple[str, bytes]]]] = None
                ) -> list[str]:
    """Writes a random model; returns the paths written. ``rope``: extra "{arch}.rope.*" keys
    (e.g. {"scaling.type": "linear", "scaling.factor": 4.0}) and "freq_base". ``raw_matrix(name,
    rows, cols, std)``: (type, bytes) to store a matrix as given (types strata cannot write), or
    None for the usual random ``wtype`` matrix."""
    rng = np.random.default_rng(seed)
    hd = head_dim or n_embd // n_head
    rope = dict(rope or {})
    w = strata.Writer()
    w.set("general.architecture", arch)
    w.set("general.name", f"synthetic-{arch}-{wtype}")
    w.set(f"{arch}.context_length", n_ctx_train, type="u32")
    w.set(f"{arch}.embedding_length", n_embd, type="u32")
    w.set(f"{arch}.block_count", n_layer, type="u32")
    w.set(f"{arch}.feed_forward_length", n_ff, type="u32")
    w.set(f"{arch}.attention.head_count", n_head, type="u32")
    w.set(f"{arch}.attention.head_count_kv", n_head_kv, type="u32")
    if head_dim is not None:
        w.set(f"{arch}.attention.key_length", hd, type="u32")
        w.set(f"{arch}.attention.value_length", hd, type="u32")
    w.set(f"{arch}.rope.dimension_count", hd, type="u32")
    w.set(f"{arch}.rope.freq_base", float(rope.pop("freq_base", 10000.0)), type="f32")
    for k, v in rope.items():
        w.set(f"{arch}.rope.{k}", v, type="f32" if isinstance(v, float) else ("u32" if isinstance(v, int) else None))
    w.set(f"{arch}.attention.layer_norm_rms_epsilon", 1e-5, type="f32")
    tokens, scores, types = byte_vocab(n_vocab, extra_vocab)
    set_vocab(w, tokens, scores, types)

    def mat(name: str, rows: int, cols: int, std: float) -> None:
        raw = raw_matrix(name, rows, cols, std) if raw_matrix else None
        if raw is not None:
            w.add_tensor_raw(name, raw[0], [cols, rows], raw[1])
            return
        w.add_tensor(name, (rng.standard_normal((rows, cols)) * std).astype(np.float32), type=wtype)

    def vec(name: str, n: int, lo: float = 0.8, hi: float = 1.2) -> None:
        w.add_tensor(name, rng.uniform(lo, hi, n).astype(np.float32), type="f32")

    s = 1.0 / np.sqrt(n_embd)
    mat("token_embd.weight", n_vocab, n_embd, 1.0)
    for l in range(n_layer):
        p = f"blk.{l}."
        vec(p + "attn_norm.weight", n_embd)
        mat(p + "attn_q.weight", n_head * hd, n_embd, s)
        mat(p + "attn_k.weight", n_head_kv * hd, n_embd, s)
        mat(p + "attn_v.weight", n_head_kv * hd, n_embd, s)
        if arch == "qwen2":
            vec(p + "attn_q.bias", n_head * hd, -0.3, 0.3)
            vec(p + "attn_k.bias", n_head_kv * hd, -0.3, 0.3)
            vec(p + "attn_v.bias", n_head_kv * hd, -0.3, 0.3)
        if arch == "qwen3":
            vec(p + "attn_q_norm.weight", hd)
            vec(p + "attn_k_norm.weight", hd)
        mat(p + "attn_output.weight", n_embd, n_head * hd, 1.0 / np.sqrt(n_head * hd))
        vec(p + "ffn_norm.weight", n_embd)
        mat(p + "ffn_gate.weight", n_ff, n_embd, s)
        mat(p + "ffn_up.weight", n_ff, n_embd, s)
        mat(p + "ffn_down.weight", n_embd, n_ff, 1.0 / np.sqrt(n_ff))
    vec("output_norm.weight", n_embd)
    if not tied:
        mat("output.weight", n_vocab, n_embd, s)
    out = w.write(path, n_shards=n_shards)
    w.close()
    return out


def compare(got: np.ndarray, want: np.ndarray) -> dict[str, float]:
    """RMS and max abs difference, relative RMS (to want's RMS) and argmax agreement over rows.

    A row agrees when got's argmax is want's, or is a near-tie that the row's own differences
    explain: its reference logit is within 2 x the row's max abs difference of the reference
    maximum (no smaller error could have swapped them; larger gaps still count as flips)."""
    got = np.asarray(got, dtype=np.float64).reshape(-1, want.shape[-1])
    want = np.asarray(want, dtype=np.float64).reshape(-1, want.shape[-1])
    d = got - want
    rms = float(np.sqrt(np.mean(d * d)))
    rows = np.arange(got.shape[0])
    chosen = want[rows, np.argmax(got, axis=1)]
    agree = (np.argmax(got, axis=1) == np.argmax(want, axis=1)) | \
        (np.max(want, axis=1) - chosen <= 2 * np.max(np.abs(d), axis=1))
    return {"rms": rms, "max": float(np.max(np.abs(d))), "rel_rms": rms / float(np.sqrt(np.mean(want * want))),
            "argmax": float(np.mean(agree)), "rows": got.shape[0]}
