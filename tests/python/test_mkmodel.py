"""strata-mkmodel writes llama, qwen2 and qwen3 models named and shaped as llama.cpp expects
(checked with the gguf package against a table written from llama.cpp's conventions), with
RoPE scaling keys, tied outputs, a GPT-2 style BPE vocabulary, and refuses bad flags with
status 2. Tiny presets only: every model here takes well under a second."""
from __future__ import annotations

import subprocess
from pathlib import Path

import gguf
import numpy as np
import pytest

from _report_tools import tool

TINY = dict(n_embd=256, n_layer=2, n_ff=512, n_vocab=384, n_head=4, n_head_kv=2, n_ctx=512)


def _mk(out: Path, *args, check=True) -> subprocess.CompletedProcess:
    cmd = [str(tool("strata-mkmodel")), "-o", str(out), *[str(a) for a in args]]
    return subprocess.run(cmd, capture_output=True, text=True, check=check, timeout=120)


def _value(reader: gguf.GGUFReader, key: str):
    field = reader.fields[key]
    if field.types[0] == gguf.GGUFValueType.ARRAY:
        if field.types[-1] == gguf.GGUFValueType.STRING:
            return [bytes(field.parts[i]).decode("utf-8") for i in field.data]
        return [field.parts[i][0].item() for i in field.data]
    if field.types[0] == gguf.GGUFValueType.STRING:
        return bytes(field.parts[-1]).decode("utf-8")
    return field.parts[-1][0].item()


def expected_tensors(arch: str, n_embd, n_layer, n_ff, n_vocab, n_head, n_head_kv, head_dim=None, tied=False,
                     **_) -> dict[str, tuple[int, ...]]:
    """name -> ne (innermost first), as llama.cpp's llama-model.cpp creates them for the arch."""
    hd = head_dim or n_embd // n_head
    n_q, n_kv = n_head * hd, n_head_kv * hd
    t = {"token_embd.weight": (n_embd, n_vocab), "output_norm.weight": (n_embd,)}
    if not tied:
        t["output.weight"] = (n_embd, n_vocab)
    for i in range(n_layer):
        p = f"blk.{i}."
        t[p + "attn_norm.weight"] = (n_embd,)
        t[p + "attn_q.weight"] = (n_embd, n_q)
        t[p + "attn_k.weight"] = (n_embd, n_kv)
        t[p + "attn_v.weight"] = (n_embd, n_kv)
        t[p + "attn_output.weight"] = (n_q, n_embd)
        t[p + "ffn_norm.weight"] = (n_embd,)
        t[p + "ffn_gate.weight"] = (n_embd, n_ff)
        t[p + "ffn_up.weight"] = (n_embd, n_ff)
        t[p + "ffn_down.weight"] = (n_ff, n_embd)
        if arch == "qwen2":  # biases on q, k, v
            t[p + "attn_q.bias"] = (n_q,)
            t[p + "attn_k.bias"] = (n_kv,)
            t[p + "attn_v.bias"] = (n_kv,)
        if arch == "qwen3":  # per-head RMS norms of q and k
            t[p + "attn_q_norm.weight"] = (hd,)
            t[p + "attn_k_norm.weight"] = (hd,)
    return t


F32_ONLY = ("_norm.weight", ".bias")
TYPES = {"iq1_s": gguf.GGMLQuantizationType.IQ1_S, "q8_0": gguf.GGMLQuantizationType.Q8_0,
         "f16": gguf.GGMLQuantizationType.F16, "bf16": gguf.GGMLQuantizationType.BF16,
         "f32": gguf.GGMLQuantizationType.F32}


@pytest.mark.parametrize("arch", ["llama", "qwen2", "qwen3"])
@pytest.mark.parametrize("wtype", ["iq1_s", "q8_0", "bf16"])
def test_each_arch_and_type_has_the_tensors_and_keys_llama_cpp_expects(tmp_path, arch, wtype):
    out = tmp_path / "m.gguf"
    _mk(out, "--arch", arch, "--preset", "tiny", "--type", wtype)
    r = gguf.GGUFReader(out)
    got = {t.name: tuple(int(d) for d in t.shape) for t in r.tensors}
    assert got == expected_tensors(arch, **TINY)
    for t in r.tensors:
        want = gguf.GGMLQuantizationType.F32 if t.name.endswith(F32_ONLY) else TYPES[wtype]
        assert t.tensor_type == want, t.name
        values = gguf.quants.dequantize(t.data, t.tensor_type)
        assert np.isfinite(values).all() and values.std() > 0, t.name
    assert _value(r, "general.architecture") == arch
    assert _value(r, "general.file_type") == {"iq1_s": 24, "q8_0": 7, "bf16": 32}[wtype]
    assert _value(r, f"{arch}.embedding_length") == 256
    assert _value(r, f"{arch}.block_count") == 2
    assert _value(r, f"{arch}.feed_forward_length") == 512
    assert _value(r, f"{arch}.attention.head_count") == 4
    assert _value(r, f"{arch}.attention.head_count_kv") == 2
    assert _value(r, f"{arch}.context_length") == 512
    assert _value(r, f"{arch}.rope.dimension_count") == 64
    assert f"{arch}.attention.layer_norm_rms_epsilon" in r.fields
    assert f"{arch}.rope.freq_base" in r.fields
    if arch == "qwen3":
        assert _value(r, "qwen3.attention.key_length") == 64
        assert _value(r, "qwen3.attention.value_length") == 64
    assert not any(k.startswith(f"{arch}.rope.scaling") for k in r.fields)
    assert not any(k.startswith(other) for k in r.fields for other in {"llama.", "qwen2.", "qwen3."} - {arch + "."})
    tokens = _value(r, "tokenizer.ggml.tokens")
    assert len(tokens) == 384 and _value(r, "tokenizer.ggml.model") == "llama"


def test_head_dim_shapes_q_k_v_and_output_by_heads_and_writes_key_length(tmp_path):
    out = tmp_path / "m.gguf"
    _mk(out, "--arch", "qwen3", "--preset", "tiny", "--type", "q8_0", "--head-dim", "128", "--n-head", "4",
        "--n-head-kv", "1")
    r = gguf.GGUFReader(out)
    got = {t.name: tuple(int(d) for d in t.shape) for t in r.tensors}
    shape = dict(TINY, n_head=4, n_head_kv=1)
    assert got == expected_tensors("qwen3", **shape, head_dim=128)
    assert got["blk.0.attn_q.weight"] == (256, 512) and got["blk.0.attn_output.weight"] == (512, 256)
    assert got["blk.0.attn_k.weight"] == (256, 128) and got["blk.1.attn_k_norm.weight"] == (128,)
    assert _value(r, "qwen3.attention.key_length") == 128
    assert _value(r, "qwen3.rope.dimension_count") == 128

    llama = tmp_path / "l.gguf"
    _mk(llama, "--arch", "llama", "--preset", "tiny", "--type", "f16", "--head-dim", "32", "--n-head", "16")
    r = gguf.GGUFReader(llama)
    assert {t.name: tuple(int(d) for d in t.shape) for t in r.tensors} == \
        expected_tensors("llama", **dict(TINY, n_head=16), head_dim=32)
    assert _value(r, "llama.attention.key_length") == 32  # not n_embd / n_head = 16


@pytest.mark.parametrize("arch", ["llama", "qwen2", "qwen3"])
def test_tied_output_omits_output_weight(tmp_path, arch):
    out = tmp_path / "m.gguf"
    _mk(out, "--arch", arch, "--preset", "tiny", "--tied-output", "--shards", "2")
    names = [t.name for p in sorted(tmp_path.glob("m-0000?-of-00002.gguf")) for t in gguf.GGUFReader(p).tensors]
    assert "output.weight" not in names and "token_embd.weight" in names and "output_norm.weight" in names
    assert set(names) == set(expected_tensors(arch, **TINY, tied=True))


@pytest.mark.parametrize("kind", ["linear", "yarn"])
def test_rope_scaling_keys(tmp_path, kind):
    out = tmp_path / "m.gguf"
    _mk(out, "--arch", "qwen2", "--preset", "tiny", "--n-ctx", "4096", "--rope-scaling", kind, "--rope-factor", "4",
        "--rope-orig-ctx", "1024")
    r = gguf.GGUFReader(out)
    assert _value(r, "qwen2.rope.scaling.type") == kind
    assert r.fields["qwen2.rope.scaling.factor"].types == [gguf.GGUFValueType.FLOAT32]
    assert _value(r, "qwen2.rope.scaling.factor") == 4.0
    assert r.fields["qwen2.rope.scaling.original_context_length"].types == [gguf.GGUFValueType.UINT32]
    assert _value(r, "qwen2.rope.scaling.original_context_length") == 1024
    assert _value(r, "qwen2.context_length") == 4096
    # Without --rope-orig-ctx the original context is n_ctx / factor.
    other = tmp_path / "o.gguf"
    _mk(other, "--arch", "llama", "--preset", "tiny", "--n-ctx", "8192", "--rope-scaling", kind, "--rope-factor", "2")
    assert _value(gguf.GGUFReader(other), "llama.rope.scaling.original_context_length") == 4096


def _byte_symbols() -> list[str]:
    """GPT-2's bytes_to_unicode, written out from its definition."""
    keep = list(range(0x21, 0x7F)) + list(range(0xA1, 0xAD)) + list(range(0xAE, 0x100))
    out, extra = {}, 0
    for b in range(256):
        if b in keep:
            out[b] = chr(b)
        else:
            out[b] = chr(256 + extra)
            extra += 1
    return [out[b] for b in range(256)]


@pytest.mark.parametrize("n_vocab", [257, 384, 2000])
def test_bpe_vocabulary_is_gpt2_byte_level_and_every_merge_is_consistent(tmp_path, n_vocab):
    out = tmp_path / "m.gguf"
    _mk(out, "--arch", "qwen2", "--preset", "tiny", "--vocab", "bpe", "--n-vocab", str(n_vocab))
    r = gguf.GGUFReader(out)
    assert _value(r, "tokenizer.ggml.model") == "gpt2"
    assert _value(r, "tokenizer.ggml.pre") in ("default", "gpt2")
    tokens = _value(r, "tokenizer.ggml.tokens")
    types = _value(r, "tokenizer.ggml.token_type")
    merges = _value(r, "tokenizer.ggml.merges")
    assert len(tokens) == len(types) == n_vocab == _value(r, "qwen2.vocab_size")
    assert {t.name: tuple(int(d) for d in t.shape) for t in r.tensors}["token_embd.weight"] == (256, n_vocab)
    assert tokens[:256] == _byte_symbols()
    assert len(set(tokens)) == n_vocab
    eot = tokens.index("<|endoftext|>")
    assert types[eot] == 3 and _value(r, "tokenizer.ggml.bos_token_id") == eot
    assert _value(r, "tokenizer.ggml.eos_token_id") == eot
    assert all(t == 1 for i, t in enumerate(types) if i != eot)
    assert len(merges) == n_vocab - 257
    index = {t: i for i, t in enumerate(tokens)}
    for rank, m in enumerate(merges):
        left, right = m.split(" ")
        assert left in index and right in index and left + right in index, m
        # a merge's parts exist before (have lower ids than) the token it makes
        assert max(index[left], index[right]) < index[left + right], m
        assert index[left + right] == 256 + rank
    if n_vocab >= 300:
        assert "\u0120t he" in merges or "\u0120t" + "he" in tokens  # frequent English pieces come first
        assert merges[0] == "\u0120 t"


def test_same_seed_same_file_other_seed_other_weights(tmp_path):
    a, b, c = tmp_path / "a.gguf", tmp_path / "b.gguf", tmp_path / "c.gguf"
    _mk(a, "--arch", "qwen3", "--preset", "tiny", "--seed", "0", "--type", "q8_0")
    _mk(b, "--arch", "qwen3", "--preset", "tiny", "--seed", "0", "--type", "q8_0")
    _mk(c, "--arch", "qwen3", "--preset", "tiny", "--seed", "5", "--type", "q8_0")
    assert a.read_bytes() == b.read_bytes()
    assert a.read_bytes() != c.read_bytes()


def test_progress_is_reported_per_tensor_on_stderr(tmp_path):
    result = _mk(tmp_path / "m.gguf", "--arch", "llama", "--preset", "tiny")
    lines = [line for line in result.stderr.splitlines() if line.startswith("[")]
    assert len(lines) == len(expected_tensors("llama", **TINY))
    assert "blk.1.ffn_down.weight" in result.stderr and result.stdout == ""


BAD = [
    (["--arch", "gpt2"], "--arch"),
    (["--preset", "huge"], "unknown preset"),
    (["--type", "q4_0"], "--type"),
    (["--vocab", "wordpiece"], "--vocab"),
    (["--n-embd", "320"], "--n-embd"),                        # 320 % 256 (iq1_s)
    (["--n-ff", "520"], "--n-ff"),                            # 520 % 256
    (["--type", "q8_0", "--n-ff", "500"], "--n-ff"),          # 500 % 32 (q8_0)
    (["--head-dim", "48"], "--head-dim"),                     # 4 * 48 = 192 rows for attn_output
    (["--n-head", "4", "--n-head-kv", "3"], "--n-head-kv"),
    (["--n-head", "3", "--type", "f16"], "--n-head"),         # 256 % 3 without --head-dim
    (["--arch", "qwen2", "--head-dim", "128"], "qwen2"),
    (["--n-vocab", "100"], "--n-vocab"),
    (["--vocab", "bpe", "--n-vocab", "256"], "--n-vocab"),
    (["--rope-scaling", "yarn"], "--rope-factor"),
    (["--rope-scaling", "ntk", "--rope-factor", "2"], "--rope-scaling"),
    (["--rope-factor", "2"], "--rope-scaling"),
    (["--rope-scaling", "linear", "--rope-factor", "-1"], "--rope-factor"),
    (["--n-layer", "0"], "--n-layer"),
    (["--n-layer", "two"], "--n-layer"),
    (["--shards", "100"], "--shards"),
    (["--bogus"], "--bogus"),
]


@pytest.mark.parametrize("args,needle", BAD, ids=[" ".join(a) for a, _ in BAD])
def test_bad_flags_exit_2_with_a_message_naming_them(tmp_path, args, needle):
    out = tmp_path / "m.gguf"
    result = _mk(out, "--preset", "tiny", *args, check=False)
    assert result.returncode == 2, result.stderr
    first = result.stderr.splitlines()[0]
    assert first.startswith("strata-mkmodel: ") and needle in first, first
    assert not out.exists() and list(tmp_path.iterdir()) == []


def test_row_length_messages_name_the_type(tmp_path):
    result = _mk(tmp_path / "m.gguf", "--preset", "tiny", "--type", "q8_0", "--n-embd", "272", "--n-head", "1",
                 check=False)
    assert result.returncode == 2
    assert "--n-embd" in result.stderr and "q8_0" in result.stderr and "32" in result.stderr
    # f16 has no block: any row length goes.
    _mk(tmp_path / "f.gguf", "--preset", "tiny", "--type", "f16", "--n-embd", "272", "--n-head", "4", "--n-ff", "100")
