"""strata-mkmodel writes llama, qwen2 and qwen3 models named and shaped as llama.cpp expects
(checked with the gguf package against a table written from llama.cpp's conventions), with
RoPE scaling keys, tied outputs, a GPT-2 style BPE vocabulary, and refuses bad flags with
status 2. deepseek2 (Kimi K2 / DeepSeek-V3) models are checked the same way against tables
written from lib/model/deepseek2.md: the MLA and legacy attn_kv_b forms (same weights for a
seed), a full attn_q, softmax gating with groups, the row-length fallbacks (q8_0, else f16),
and expert tensors converted one expert at a time giving the bytes of the whole tensor.
kimi-linear and kimi-k3 models are checked against tables written from lib/model/kimi_linear.md
(every tensor, the per-layer head_count_kv array, the K3 keys, the value ranges
tests/python/_synth_kimi.py draws), and a tiny model of each is loaded and decoded by strata, its
f32 logits matching the numpy reference (reference_kimi.py). Tiny presets only (k2-slice,
48b-slice and k3-slice are gigabytes): every model here takes well under two seconds."""
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
    (["--type", "q3_K"], "--type"),                           # read, not written
    (["--type-mix", "bogus"], "--type-mix"),
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


# --- deepseek2 (lib/model/deepseek2.md) ---

DS2_TINY = dict(n_embd=256, n_layer=3, n_ff=512, n_vocab=384, n_head=4, n_ctx=4096, q_lora=256, kv_lora=256,
                qk_nope=64, qk_rope=32, v_head_dim=64, n_ff_exp=256, n_expert=8, n_expert_used=2, n_expert_shared=1,
                n_dense_lead=1)
W, F32 = "weight", "f32"  # a weight matrix (--type, or its row-length fallback), or always f32


def _mla_q_kv_a(t: dict, p: str, E, H, q_lora, C, nope, R):
    """MLA's query (q_a, its norm and q_b, or a full attn_q with q_lora 0) and compressed KV."""
    if q_lora:
        t[p + "attn_q_a.weight"] = ((E, q_lora), W)
        t[p + "attn_q_a_norm.weight"] = ((q_lora,), F32)
        t[p + "attn_q_b.weight"] = ((q_lora, H * (nope + R)), W)
    else:
        t[p + "attn_q.weight"] = ((E, H * (nope + R)), W)
    t[p + "attn_kv_a_mqa.weight"] = ((E, C + R), W)
    t[p + "attn_kv_a_norm.weight"] = ((C,), F32)


def _dense_ffn(t: dict, p: str, E, n_ff, suffix=""):
    t[p + f"ffn_gate{suffix}.weight"] = ((E, n_ff), W)
    t[p + f"ffn_up{suffix}.weight"] = ((E, n_ff), W)
    t[p + f"ffn_down{suffix}.weight"] = ((n_ff, E), W)


def _experts(t: dict, p: str, E, Le, n_ff_exp, n_expert, n_expert_shared):
    """The routed experts (rows of Le) and the shared ones."""
    t[p + "ffn_gate_exps.weight"] = ((Le, n_ff_exp, n_expert), W)
    t[p + "ffn_up_exps.weight"] = ((Le, n_ff_exp, n_expert), W)
    t[p + "ffn_down_exps.weight"] = ((n_ff_exp, Le, n_expert), W)
    if n_expert_shared:
        _dense_ffn(t, p, E, n_ff_exp * n_expert_shared, "_shexp")


def _check_tensors(r: gguf.GGUFReader, want: dict, wtype: str):
    """The names, shapes and types `want` lists; yields each tensor with its (finite, varied) values."""
    assert {t.name: tuple(int(d) for d in t.shape) for t in r.tensors} == {n: ne for n, (ne, _) in want.items()}
    for t in r.tensors:
        ne, kind = want[t.name]
        expect = "f32" if kind == F32 else weight_type(wtype, ne[0])
        assert t.tensor_type == TYPES[expect], (t.name, t.tensor_type, expect)
        values = gguf.quants.dequantize(t.data, t.tensor_type)
        assert np.isfinite(values).all() and values.std() > 0, t.name
        yield t, values


def _check_keys(r: gguf.GGUFReader, got: dict, keys: dict, arch: str, name: str, wtype: str, n_vocab: int):
    """The arch keys (`got`: key -> (value, type)) as `keys` says, and the general ones."""
    assert set(got) == set(keys)
    for k, (value, vtype) in keys.items():
        assert got[k][1] == vtype, k
        if vtype == F32V:
            assert got[k][0] == pytest.approx(value, rel=1e-6), k
        else:
            assert got[k][0] == value, k
    assert _value(r, "general.architecture") == arch
    assert _value(r, "general.name") == name
    assert _value(r, "general.file_type") == {"iq1_s": 24, "q8_0": 7, "f16": 1, "bf16": 32, "f32": 0}[wtype]
    assert len(_value(r, "tokenizer.ggml.tokens")) == n_vocab


def _assert_types(r: gguf.GGUFReader, want: dict[str, str]):
    """The named tensors of `r` hold the types `want` names (iq1_s, q8_0, f16, f32)."""
    types = {t.name: t.tensor_type for t in r.tensors}
    assert {n: types[n] for n in want} == {n: TYPES[kind] for n, kind in want.items()}


def expected_deepseek2_tensors(n_embd, n_layer, n_ff, n_vocab, n_head, q_lora, kv_lora, qk_nope, qk_rope, v_head_dim,
                               n_ff_exp, n_expert, n_expert_shared, n_dense_lead, legacy=False, score_bias=True,
                               **_) -> dict[str, tuple[tuple[int, ...], str]]:
    """name -> (ne, kind), from the tensor table of lib/model/deepseek2.md."""
    E, H, C, R, nope, v = n_embd, n_head, kv_lora, qk_rope, qk_nope, v_head_dim
    t = {"token_embd.weight": ((E, n_vocab), W), "output_norm.weight": ((E,), F32),
         "output.weight": ((E, n_vocab), W)}
    for i in range(n_layer):
        p = f"blk.{i}."
        t[p + "attn_norm.weight"] = ((E,), F32)
        _mla_q_kv_a(t, p, E, H, q_lora, C, nope, R)
        if legacy:
            t[p + "attn_kv_b.weight"] = ((C, H * (nope + v)), W)
        else:
            t[p + "attn_k_b.weight"] = ((nope, C, H), W)
            t[p + "attn_v_b.weight"] = ((C, v, H), W)
        t[p + "attn_output.weight"] = ((H * v, E), W)
        t[p + "ffn_norm.weight"] = ((E,), F32)
        if i < n_dense_lead:
            _dense_ffn(t, p, E, n_ff)
            continue
        t[p + "ffn_gate_inp.weight"] = ((E, n_expert), F32)
        if score_bias:
            t[p + "exp_probs_b.bias"] = ((n_expert,), F32)
        _experts(t, p, E, E, n_ff_exp, n_expert, n_expert_shared)
    return t


BLOCK = {"iq1_s": 256, "q8_0": 32, "f16": 1, "bf16": 1, "f32": 1}


def weight_type(wtype: str, row: int) -> str:
    """--type when the rows fit its blocks, else q8_0 when they fit blocks of 32, else f16."""
    if row % BLOCK[wtype] == 0:
        return wtype
    return "q8_0" if row % 32 == 0 else "f16"


U32, F32V, BOOL, STR = (gguf.GGUFValueType.UINT32, gguf.GGUFValueType.FLOAT32, gguf.GGUFValueType.BOOL,
                        gguf.GGUFValueType.STRING)


def expected_deepseek2_keys(n_embd, n_layer, n_ff, n_vocab, n_head, n_ctx, q_lora, kv_lora, qk_nope, qk_rope,
                            v_head_dim, n_ff_exp, n_expert, n_expert_used, n_expert_shared, n_dense_lead, legacy=False,
                            gating=2, weights_norm=True, weights_scale=2.5, groups=None, yarn=(8.0, 512, 0.1, 32.0, 1.0),
                            freq_base=10000.0, **_) -> dict[str, tuple[object, gguf.GGUFValueType]]:
    """Every deepseek2.* key -> (value, type), from the metadata table of lib/model/deepseek2.md."""
    k = {"context_length": (n_ctx, U32), "embedding_length": (n_embd, U32), "block_count": (n_layer, U32),
         "feed_forward_length": (n_ff, U32), "attention.head_count": (n_head, U32),
         "attention.kv_lora_rank": (kv_lora, U32), "attention.layer_norm_rms_epsilon": (1e-6, F32V),
         "rope.dimension_count": (qk_rope, U32), "rope.freq_base": (freq_base, F32V),
         "leading_dense_block_count": (n_dense_lead, U32), "expert_count": (n_expert, U32),
         "expert_used_count": (n_expert_used, U32), "expert_shared_count": (n_expert_shared, U32),
         "expert_feed_forward_length": (n_ff_exp, U32), "expert_gating_func": (gating, U32),
         "expert_weights_norm": (weights_norm, BOOL), "expert_weights_scale": (weights_scale, F32V),
         "vocab_size": (n_vocab, U32)}
    if legacy:
        k.update({"attention.head_count_kv": (n_head, U32), "attention.key_length": (qk_nope + qk_rope, U32),
                  "attention.value_length": (v_head_dim, U32)})
    else:
        k.update({"attention.head_count_kv": (1, U32), "attention.key_length": (kv_lora + qk_rope, U32),
                  "attention.value_length": (kv_lora, U32), "attention.key_length_mla": (qk_nope + qk_rope, U32),
                  "attention.value_length_mla": (v_head_dim, U32)})
    if q_lora:
        k["attention.q_lora_rank"] = (q_lora, U32)
    if groups:
        k["expert_group_count"] = (groups[0], U32)
        k["expert_group_used_count"] = (groups[1], U32)
    if yarn:
        factor, orig, log_mul, beta_fast, beta_slow = yarn
        k.update({"rope.scaling.type": ("yarn", STR), "rope.scaling.factor": (factor, F32V),
                  "rope.scaling.original_context_length": (orig, U32),
                  "rope.scaling.yarn_log_multiplier": (log_mul, F32V),
                  "rope.scaling.yarn_beta_fast": (beta_fast, F32V), "rope.scaling.yarn_beta_slow": (beta_slow, F32V)})
    return {"deepseek2." + key: v for key, v in k.items()}


def _check_deepseek2(path: Path, wtype: str, shape: dict, keys: dict, name="strata-synthetic-deepseek2-tiny"):
    r = gguf.GGUFReader(path)
    for _ in _check_tensors(r, expected_deepseek2_tensors(**shape), wtype):
        pass
    got = {k: (_value(r, k), r.fields[k].types[0]) for k in r.fields if k.startswith("deepseek2.")}
    _check_keys(r, got, keys, "deepseek2", name, wtype, shape["n_vocab"])
    return r


DS2_CASES = {
    "mla": ([], {}, {}),
    "legacy-kv-b": (["--legacy-kv-b"], dict(legacy=True), dict(legacy=True)),
    "full-q": (["--q-lora", "0"], dict(q_lora=0), dict(q_lora=0)),
    "softmax-groups": (["--gating", "softmax", "--n-group", "4", "--n-group-used", "2", "--no-score-bias",
                        "--no-weights-norm", "--weights-scale", "0", "--rope-scaling", "none"],
                       dict(score_bias=False), dict(gating=1, groups=(4, 2), weights_norm=False, weights_scale=0.0,
                                                    yarn=None)),
}


@pytest.mark.parametrize("wtype", ["iq1_s", "q8_0", "f16"])
@pytest.mark.parametrize("case", list(DS2_CASES))
def test_deepseek2_tiny_has_the_tensors_types_and_keys_of_the_spec(tmp_path, case, wtype):
    args, shape, keys = DS2_CASES[case]
    out = tmp_path / "m.gguf"
    result = _mk(out, "--arch", "deepseek2", "--preset", "tiny", "--type", wtype, *args)
    shape = dict(DS2_TINY, **shape)
    r = _check_deepseek2(out, wtype, shape, expected_deepseek2_keys(**dict(shape, **keys)))
    lines = [line for line in result.stderr.splitlines() if line.startswith("[")]
    assert len(lines) == len(r.tensors)
    # iq1_s: the MLA form's attn_k_b has rows of qk_nope = 64, so it falls back to q8_0 and says so.
    fallbacks = [line for line in lines if "do not fit" in line]
    if wtype == "iq1_s" and case != "legacy-kv-b":
        assert len(fallbacks) == 3 and all("attn_k_b" in f and " q8_0 " in f and "iq1_s" in f for f in fallbacks)
    else:
        assert fallbacks == []


def test_deepseek2_rows_that_fit_no_block_fall_back_to_q8_0_or_f16(tmp_path):
    out = tmp_path / "m.gguf"
    # q_b rows of 96 (q8_0 under iq1_s), k_b rows of 48 (f16), attn_output rows of 4 * 40 = 160 (q8_0),
    # dense ffn_down rows of 544 (q8_0), expert ffn_down rows of 80 (f16), shared ffn_down rows of 160 (q8_0)
    args = dict(q_lora=96, qk_nope=48, v_head_dim=40, n_ff=544, n_ff_exp=80, n_expert_shared=2)
    flags = ["--q-lora", "96", "--qk-nope", "48", "--v-head-dim", "40", "--n-ff", "544", "--n-ff-exp", "80",
             "--n-expert-shared", "2"]
    result = _mk(out, "--arch", "deepseek2", "--preset", "tiny", *flags)
    shape = dict(DS2_TINY, **args)
    _assert_types(_check_deepseek2(out, "iq1_s", shape, expected_deepseek2_keys(**shape)), {
        "blk.0.attn_q_b.weight": "q8_0", "blk.0.attn_k_b.weight": "f16", "blk.2.ffn_down_exps.weight": "f16",
        "blk.2.ffn_up_exps.weight": "iq1_s", "blk.0.ffn_down.weight": "q8_0", "blk.1.ffn_down_shexp.weight": "q8_0",
        "blk.0.attn_v_b.weight": "iq1_s", "output.weight": "iq1_s"})
    assert "blk.2.ffn_down_exps.weight" in result.stderr and "rows of 80 do not fit iq1_s" in result.stderr


def test_deepseek2_k2_slice_preset_keys(tmp_path):
    """The k2-slice preset's routing and YaRN keys (dimensions shrunk: the real slice is 3.5 GB)."""
    out = tmp_path / "m.gguf"
    small = dict(n_embd=256, n_head=2, q_lora=256, kv_lora=256, n_ff=256, n_ff_exp=256, n_expert=16, n_vocab=384)
    flags = [a for k, v in small.items() for a in ("--" + k.replace("_", "-"), str(v))]
    _mk(out, "--arch", "deepseek2", "--preset", "k2-slice", "--type", "q8_0", *flags)
    shape = dict(small, n_layer=2, n_ctx=131072, qk_nope=128, qk_rope=64, v_head_dim=128, n_expert_used=8,
                 n_expert_shared=1, n_dense_lead=1)
    keys = expected_deepseek2_keys(**shape, weights_scale=2.827, groups=(1, 1), yarn=(32.0, 4096, 0.1, 1.0, 1.0),
                                   freq_base=50000.0)
    _check_deepseek2(out, "q8_0", shape, keys, name="strata-synthetic-deepseek2-k2-slice")


def _tensors(path: Path) -> dict[str, np.ndarray]:
    """name -> float32 values shaped numpy-style (outermost first)."""
    out = {}
    for t in gguf.GGUFReader(path).tensors:
        ne = tuple(int(d) for d in t.shape)
        out[t.name] = gguf.quants.dequantize(t.data, t.tensor_type).reshape(ne[::-1])
    return out


def test_deepseek2_mla_and_legacy_forms_of_a_seed_hold_the_same_weights(tmp_path):
    mla, legacy = tmp_path / "mla.gguf", tmp_path / "legacy.gguf"
    _mk(mla, "--arch", "deepseek2", "--preset", "tiny", "--type", "f32", "--seed", "7")
    _mk(legacy, "--arch", "deepseek2", "--preset", "tiny", "--type", "f32", "--seed", "7", "--legacy-kv-b")
    a, b = _tensors(mla), _tensors(legacy)
    H, C, nope, v = 4, 256, 64, 64
    for i in range(3):
        kv_b = b[f"blk.{i}.attn_kv_b.weight"].reshape(H, nope + v, C)  # per head: nope k rows, then v rows
        k_b, v_b = a[f"blk.{i}.attn_k_b.weight"], a[f"blk.{i}.attn_v_b.weight"]  # [H, C, nope], [H, v, C]
        np.testing.assert_array_equal(k_b, kv_b[:, :nope, :].transpose(0, 2, 1))
        np.testing.assert_array_equal(v_b, kv_b[:, nope:, :])
    common = set(a) & set(b)
    assert len(common) == len(a) - 6
    for name in common:
        np.testing.assert_array_equal(a[name], b[name], err_msg=name)


def test_deepseek2_experts_streamed_one_at_a_time_equal_the_whole_tensor_converted(tmp_path):
    """Each expert is generated and converted alone; its bytes laid end to end are what converting
    the whole tensor gives (checked through strata's Python writer), and every expert differs."""
    strata = pytest.importorskip("strata")
    f32, iq1 = tmp_path / "f32.gguf", tmp_path / "iq1.gguf"
    _mk(f32, "--arch", "deepseek2", "--preset", "tiny", "--type", "f32", "--seed", "3")
    _mk(iq1, "--arch", "deepseek2", "--preset", "tiny", "--type", "iq1_s", "--seed", "3")
    values = _tensors(f32)
    streamed = {t.name: bytes(t.data) for t in gguf.GGUFReader(iq1).tensors}
    names = ["blk.1.ffn_gate_exps.weight", "blk.2.ffn_down_exps.weight", "blk.1.attn_k_b.weight"]
    w = strata.Writer()
    for name in names:
        w.add_tensor(name, values[name], "iq1_s" if "exps" in name else "q8_0")
    w.write(tmp_path / "whole.gguf")
    whole = {t.name: bytes(t.data) for t in gguf.GGUFReader(tmp_path / "whole.gguf").tensors}
    for name in names:
        assert streamed[name] == whole[name], name
    experts = values["blk.1.ffn_up_exps.weight"]
    assert experts.shape == (8, 256, 256)
    assert all(not np.array_equal(experts[0], experts[e]) for e in range(1, 8))
    assert abs(float(experts.std()) - 1 / 16) < 0.005  # stddev 1/sqrt(row length)


DS2_BAD = [
    (["--n-expert-used", "9"], "--n-expert-used"),
    (["--n-dense-lead", "4"], "--n-dense-lead"),
    (["--qk-rope", "33"], "--qk-rope"),
    (["--n-group", "3", "--n-group-used", "1"], "--n-group"),         # 8 % 3
    (["--n-group", "2", "--n-group-used", "3"], "--n-group-used"),
    (["--n-group", "8", "--n-group-used", "4"], "--n-group"),         # one expert per group
    (["--n-group", "4", "--n-group-used", "1", "--n-expert-used", "3"], "--n-group-used"),  # 2 eligible < 3
    (["--n-group", "4"], "--n-group-used"),
    (["--gating", "relu"], "--gating"),
    (["--rope-scaling", "linear", "--rope-factor", "2"], "linear"),
    (["--rope-scaling", "none", "--yarn-log-mul", "0.2"], "--rope-scaling yarn"),
    (["--yarn-log-mul", "-1"], "--yarn-log-mul"),
    (["--n-embd", "320"], "--n-embd"),                                 # 320 % 256 (iq1_s)
    (["--type", "q8_0", "--n-embd", "272"], "n_embd"),
    (["--n-head-kv", "2"], "--n-head-kv"),
    (["--head-dim", "64"], "--head-dim"),
    (["--tied-output"], "--tied-output"),
    (["--preset", "small"], "unknown preset"),
    (["--n-expert", "0"], "--n-expert"),
    (["--n-expert", "100000000"], "too large"),                      # 256 * 256 * 1e8 values a tensor
    (["--kv-lora", "0"], "--kv-lora"),
    (["--q-lora", "-1"], "--q-lora"),
    (["--n-vocab", "100"], "--n-vocab"),
]


@pytest.mark.parametrize("args,needle", DS2_BAD, ids=[" ".join(a) for a, _ in DS2_BAD])
def test_deepseek2_bad_flags_exit_2_with_a_message_naming_them(tmp_path, args, needle):
    out = tmp_path / "m.gguf"
    result = _mk(out, "--arch", "deepseek2", "--preset", "tiny", *args, check=False)
    assert result.returncode == 2, result.stderr
    first = result.stderr.splitlines()[0]
    assert first.startswith("strata-mkmodel: ") and needle in first, first
    assert not out.exists() and list(tmp_path.iterdir()) == []


@pytest.mark.parametrize("flag", [["--n-expert", "4"], ["--legacy-kv-b"], ["--q-lora", "0"], ["--gating", "softmax"],
                                  ["--yarn-log-mul", "0.1"], ["--no-score-bias"]])
def test_deepseek2_flags_are_refused_for_the_llama_family(tmp_path, flag):
    result = _mk(tmp_path / "m.gguf", "--arch", "llama", "--preset", "tiny", *flag, check=False)
    assert result.returncode == 2
    assert f"{flag[0]} is only for --arch deepseek2" in result.stderr.splitlines()[0]
    assert _mk(tmp_path / "k.gguf", "--arch", "qwen2", "--preset", "k2-slice", check=False).returncode == 2


# --- kimi-linear / kimi-k3 (lib/model/kimi_linear.md) ---

KIMI_TINY = dict(n_embd=256, n_layer=4, n_ff=512, n_vocab=300, n_head=4, n_ctx=4096, head_dim=64, conv_kernel=4,
                 kv_lora=256, qk_nope=64, qk_rope=32, v_head_dim=64, n_ff_exp=256, n_expert=8, n_expert_used=2,
                 n_expert_shared=1, n_dense_lead=1, mla_layers=(2,))
KIMI_K3_TINY = dict(q_lora=256, latent=128, attn_res_block=2, situ=(4.0, 25.0), gate_lower_bound=-5.0)


def kimi_shape(arch: str, **changes) -> dict:
    shape = dict(KIMI_TINY, q_lora=0, latent=0, attn_res_block=0)
    if arch == "kimi-k3":
        shape.update(KIMI_K3_TINY)
    shape.update(changes)
    return shape


def expected_kimi_tensors(arch, n_embd, n_layer, n_ff, n_vocab, n_head, head_dim, conv_kernel, kv_lora, qk_nope,
                          qk_rope, v_head_dim, n_ff_exp, n_expert, n_expert_shared, n_dense_lead, mla_layers, q_lora,
                          latent, attn_res_block, **_) -> dict[str, tuple[tuple[int, ...], str]]:
    """name -> (ne, kind), from the tensor tables of lib/model/kimi_linear.md (ggml ne, innermost first)."""
    k3 = arch == "kimi-k3"
    E, H, dk, K, C, R, N, Vd = n_embd, n_head, head_dim, conv_kernel, kv_lora, qk_rope, qk_nope, v_head_dim
    D = H * dk
    Le = latent if k3 and latent > 0 else E
    t = {"token_embd.weight": ((E, n_vocab), W), "output_norm.weight": ((E,), F32),
         "output.weight": ((E, n_vocab), W)}
    if k3 and attn_res_block > 0:
        t["output_res_score.weight"] = ((E,), F32)
    for i in range(n_layer):
        p = f"blk.{i}."
        t[p + "attn_norm.weight"] = ((E,), F32)
        t[p + "ffn_norm.weight"] = ((E,), F32)
        if k3 and attn_res_block > 0:
            t[p + "attn_res_score.weight"] = ((E,), F32)
            t[p + "ffn_res_score.weight"] = ((E,), F32)
        if i not in mla_layers:  # KDA
            for n in "qkv":
                t[p + f"attn_{n}.weight"] = ((E, D), W)
                t[p + f"ssm_conv1d_{n}.weight"] = ((K, 1, D) if k3 else (K, 1, D, 1), F32)
            t[p + "ssm_f_a.weight"] = ((E, dk), W)
            t[p + "ssm_f_b.weight"] = ((dk, D), W)
            t[p + "ssm_dt.bias"] = ((D,), F32)
            t[p + "ssm_a"] = ((H,) if k3 else (1, H, 1, 1), F32)
            t[p + "ssm_beta.weight"] = ((E, H), W)
            if k3:
                t[p + "ssm_g.weight"] = ((E, D), W)
            else:
                t[p + "ssm_g_a.weight"] = ((E, dk), W)
                t[p + "ssm_g_b.weight"] = ((dk, D), W)
            t[p + "ssm_norm.weight"] = ((dk,), F32)
            t[p + "attn_output.weight"] = ((D, E), W)
        else:  # MLA
            _mla_q_kv_a(t, p, E, H, q_lora, C, N, R)
            t[p + "attn_k_b.weight"] = ((N, C, H), W)
            t[p + "attn_v_b.weight"] = ((C, Vd, H), W)
            if k3:
                t[p + "attn_gate.weight"] = ((E, H * Vd), W)
            t[p + "attn_output.weight"] = ((H * Vd, E), W)
        if i < n_dense_lead:
            _dense_ffn(t, p, E, n_ff)
            continue
        t[p + "ffn_gate_inp.weight"] = ((E, n_expert), F32)
        t[p + "exp_probs_b.bias"] = ((n_expert,), F32)
        if k3 and latent > 0:
            t[p + "ffn_routed_down.weight"] = ((E, latent), W)
            t[p + "ffn_routed_up.weight"] = ((latent, E), W)
            t[p + "ffn_routed_norm.weight"] = ((latent,), F32)
        _experts(t, p, E, Le, n_ff_exp, n_expert, n_expert_shared)
    return t


U32_ARRAY = "u32 array"


def expected_kimi_keys(arch, n_embd, n_layer, n_ff, n_vocab, n_head, n_ctx, head_dim, conv_kernel, kv_lora, qk_nope,
                       qk_rope, v_head_dim, n_ff_exp, n_expert, n_expert_used, n_expert_shared, n_dense_lead,
                       mla_layers, q_lora, latent, attn_res_block, situ=(4.0, 25.0), gate_lower_bound=-5.0,
                       weights_scale=None, weights_norm=True, **_) -> dict[str, tuple[object, object]]:
    """Every kimi-linear.* / kimi-k3.* key -> (value, type), from the metadata table of
    lib/model/kimi_linear.md as the converters (and tests/python/_synth_kimi.py) write them."""
    k3 = arch == "kimi-k3"
    k = {"context_length": (n_ctx, U32), "embedding_length": (n_embd, U32), "block_count": (n_layer, U32),
         "vocab_size": (n_vocab, U32), "feed_forward_length": (n_ff, U32), "attention.head_count": (n_head, U32),
         "attention.head_count_kv": ([1 if i in mla_layers else 0 for i in range(n_layer)], U32_ARRAY),
         "attention.layer_norm_rms_epsilon": (1e-5, F32V), "attention.kv_lora_rank": (kv_lora, U32),
         "attention.key_length_mla": (qk_nope + qk_rope, U32), "attention.value_length_mla": (v_head_dim, U32),
         "attention.key_length": (kv_lora + qk_rope, U32), "rope.dimension_count": (qk_rope, U32),
         "rope.freq_base": (10000.0, F32V), "ssm.conv_kernel": (conv_kernel, U32), "kda.head_dim": (head_dim, U32),
         "leading_dense_block_count": (n_dense_lead, U32)}
    if q_lora:
        k["attention.q_lora_rank"] = (q_lora, U32)
    if n_layer > n_dense_lead:
        k.update({"expert_count": (n_expert, U32), "expert_used_count": (n_expert_used, U32),
                  "expert_shared_count": (n_expert_shared, U32), "expert_feed_forward_length": (n_ff_exp, U32),
                  "expert_gating_func": (2, U32),
                  "expert_weights_scale": ((1.0 if k3 else 2.446) if weights_scale is None else weights_scale, F32V)})
        if k3:
            k["expert_weights_norm"] = (weights_norm, BOOL)
    if k3:
        k.update({"attention.value_length": (kv_lora, U32), "kda.gate_lower_bound": (gate_lower_bound, F32V),
                  "expert_latent_length": (latent, U32), "activation.situ_beta": (situ[0], F32V),
                  "activation.situ_linear_beta": (situ[1], F32V), "attn_res.block_size": (attn_res_block, U32)})
    return {f"{arch}.{key}": v for key, v in k.items()}


# Value ranges _synth_kimi.py draws (and the numpy reference's checks rely on): ssm_a = -exp(A_log)
# with exp(A_log) uniform in a_range, ssm_dt.bias uniform in dt_bias, the selection bias in +-0.1.
KIMI_RANGES = {"kimi-linear": dict(ssm_a=(-1.0, -0.1), dt=(-1.0, 1.0)),
               "kimi-k3": dict(ssm_a=(-2.0, -0.5), dt=(-4.0, 0.0))}


def _check_kimi(path: Path, arch: str, wtype: str, shape: dict, keys: dict, preset="tiny"):
    r = gguf.GGUFReader(path)
    ranges = KIMI_RANGES[arch]
    for t, values in _check_tensors(r, expected_kimi_tensors(arch, **shape), wtype):
        lo, hi = {"ssm_a": ranges["ssm_a"], "ssm_dt.bias": ranges["dt"], "exp_probs_b.bias": (-0.1, 0.1)}.get(
            t.name.split(".", 2)[-1], (0.8, 1.2) if t.name.endswith("norm.weight") else (-np.inf, np.inf))
        assert lo <= values.min() and values.max() <= hi, t.name
    got = {}
    for k in r.fields:
        if k.startswith(arch + "."):
            f = r.fields[k]
            vtype = U32_ARRAY if f.types == [gguf.GGUFValueType.ARRAY, U32] else f.types[0]
            got[k] = (_value(r, k), vtype)
    _check_keys(r, got, keys, arch, f"strata-synthetic-{arch}-{preset}", wtype, shape["n_vocab"])
    other = {"kimi-linear", "kimi-k3"} - {arch}
    assert not any(k.startswith(o + ".") for k in r.fields for o in other | {"deepseek2"})
    return r


KIMI_ARCHS = ["kimi-linear", "kimi-k3"]


@pytest.mark.parametrize("wtype", ["iq1_s", "q8_0", "f16"])
@pytest.mark.parametrize("arch", KIMI_ARCHS)
def test_kimi_tiny_has_the_tensors_types_and_keys_of_the_spec(tmp_path, arch, wtype):
    out = tmp_path / "m.gguf"
    result = _mk(out, "--arch", arch, "--preset", "tiny", "--type", wtype)
    shape = kimi_shape(arch)
    r = _check_kimi(out, arch, wtype, shape, expected_kimi_keys(arch, **shape))
    assert _value(r, f"{arch}.attention.head_count_kv") == [0, 0, 1, 0]
    lines = [line for line in result.stderr.splitlines() if line.startswith("[")]
    assert len(lines) == len(r.tensors)
    fallbacks = sorted(line.split()[1] for line in lines if "do not fit" in line)
    if wtype != "iq1_s":
        assert fallbacks == []
    elif arch == "kimi-linear":  # rows of dk = 64 (ssm_f_b, ssm_g_b) and qk_nope = 64 (attn_k_b)
        assert fallbacks == sorted([f"blk.{i}.ssm_{n}_b.weight" for i in (0, 1, 3) for n in "fg"] +
                                   ["blk.2.attn_k_b.weight"])
    else:  # ... and the latent experts' rows of 128 (gate, up, routed_up)
        assert fallbacks == sorted([f"blk.{i}.ssm_f_b.weight" for i in (0, 1, 3)] + ["blk.2.attn_k_b.weight"] +
                                   [f"blk.{i}.ffn_{n}.weight" for i in (1, 2, 3)
                                    for n in ("gate_exps", "up_exps", "routed_up")])
        assert all(" q8_0 " in line for line in lines if "do not fit" in line)


def test_kimi_flags_shape_the_layers(tmp_path):
    out = tmp_path / "m.gguf"
    flags = dict(n_layer=5, n_dense_lead=2, head_dim=32, conv_kernel=3, n_head=8, kv_lora=128, qk_nope=32,
                 qk_rope=16, v_head_dim=32, n_ff_exp=128, n_expert=4, n_expert_used=3, n_expert_shared=2, q_lora=64)
    args = ["--n-layer", "5", "--n-dense-lead", "2", "--kda-head-dim", "32", "--conv-kernel", "3", "--n-head", "8",
            "--kv-lora", "128", "--qk-nope", "32", "--qk-rope", "16", "--v-head-dim", "32", "--n-ff-exp", "128",
            "--n-expert", "4", "--n-expert-used", "3", "--n-expert-shared", "2", "--q-lora", "64",
            "--mla-layers", "4,0", "--weights-scale", "1.5"]
    _mk(out, "--arch", "kimi-linear", "--preset", "tiny", "--type", "q8_0", *args)
    shape = kimi_shape("kimi-linear", **flags, mla_layers=(0, 4))
    r = _check_kimi(out, "kimi-linear", "q8_0", shape, expected_kimi_keys("kimi-linear", **shape, weights_scale=1.5))
    assert _value(r, "kimi-linear.attention.head_count_kv") == [1, 0, 0, 0, 1]
    assert _value(r, "kimi-linear.attention.q_lora_rank") == 64

    k3 = tmp_path / "k3.gguf"
    _mk(k3, "--arch", "kimi-k3", "--preset", "tiny", "--type", "q8_0", "--latent", "0", "--attn-res-block", "0",
        "--situ-beta", "2", "--situ-linear-beta", "0", "--gate-lower-bound", "-3", "--no-weights-norm",
        "--mla-layers", "none", "--n-dense-lead", "0", "--q-lora", "0")
    shape = kimi_shape("kimi-k3", latent=0, attn_res_block=0, mla_layers=(), n_dense_lead=0, q_lora=0,
                       situ=(2.0, 0.0), gate_lower_bound=-3.0)
    keys = expected_kimi_keys("kimi-k3", **shape, weights_norm=False)
    r = _check_kimi(k3, "kimi-k3", "q8_0", shape, keys)
    names = {t.name for t in r.tensors}
    assert "blk.0.ffn_gate_exps.weight" in names and not any("res_score" in n or "routed" in n for n in names)


def test_kimi_rows_that_fit_no_block_fall_back_to_q8_0_or_f16(tmp_path):
    out = tmp_path / "m.gguf"
    # dk 48: ssm_f_b / ssm_g_b rows of 48 (f16), attn_output rows of 4 * 48 = 192 (q8_0); qk_nope 40:
    # attn_k_b rows of 40 (f16); experts' down rows of 96 (q8_0); shared down rows of 192 (q8_0)
    flags = ["--kda-head-dim", "48", "--qk-nope", "40", "--n-ff-exp", "96", "--n-expert-shared", "2"]
    result = _mk(out, "--arch", "kimi-linear", "--preset", "tiny", *flags)
    shape = kimi_shape("kimi-linear", head_dim=48, qk_nope=40, n_ff_exp=96, n_expert_shared=2)
    _assert_types(_check_kimi(out, "kimi-linear", "iq1_s", shape, expected_kimi_keys("kimi-linear", **shape)), {
        "blk.0.ssm_f_b.weight": "f16", "blk.1.ssm_g_b.weight": "f16", "blk.0.attn_output.weight": "q8_0",
        "blk.2.attn_k_b.weight": "f16", "blk.3.ffn_down_exps.weight": "q8_0", "blk.3.ffn_up_exps.weight": "iq1_s",
        "blk.1.ffn_down_shexp.weight": "q8_0", "blk.0.attn_q.weight": "iq1_s", "blk.0.ssm_conv1d_q.weight": "f32",
        "blk.0.ssm_a": "f32"})
    assert "blk.3.ffn_down_exps.weight" in result.stderr and "rows of 96 do not fit iq1_s" in result.stderr


@pytest.mark.parametrize("arch,preset", [("kimi-linear", "48b-slice"), ("kimi-k3", "k3-slice")])
def test_kimi_slice_presets_keys(tmp_path, arch, preset):
    """The slice presets' layer pattern, routing and K3 keys (dimensions shrunk: the real slices are GBs)."""
    out = tmp_path / "m.gguf"
    small = dict(n_embd=256, n_head=2, kv_lora=256, n_ff=256, n_ff_exp=256, n_expert=16, n_vocab=384)
    if arch == "kimi-k3":
        small.update(q_lora=256, latent=256)
    flags = [a for k, v in small.items() for a in ("--" + k.replace("_", "-"), str(v))]
    _mk(out, "--arch", arch, "--preset", preset, "--type", "q8_0", *flags)
    shape = kimi_shape(arch, **small, n_layer=4, n_ctx=1048576, head_dim=128, qk_nope=128, qk_rope=64,
                       v_head_dim=128, mla_layers=(3,), n_dense_lead=1)
    if arch == "kimi-k3":
        # attn_res block 12 capped at the 4 layers: both bank only at layer 0
        shape.update(n_expert_used=16, n_expert_shared=2, attn_res_block=4)
    else:
        shape.update(n_expert_used=8, n_expert_shared=1, q_lora=0)
    _check_kimi(out, arch, "q8_0", shape, expected_kimi_keys(arch, **shape), preset=preset)


def test_kimi_same_seed_same_file(tmp_path):
    a, b, c = tmp_path / "a.gguf", tmp_path / "b.gguf", tmp_path / "c.gguf"
    for path, seed in ((a, 4), (b, 4), (c, 5)):
        _mk(path, "--arch", "kimi-k3", "--preset", "tiny", "--seed", str(seed), "--type", "q8_0")
    assert a.read_bytes() == b.read_bytes() != c.read_bytes()


@pytest.mark.parametrize("arch", KIMI_ARCHS)
def test_kimi_tiny_loads_and_decodes_in_strata(tmp_path, arch):
    """strata reads what mkmodel writes: the iq1_s model decodes (finite logits, prefill then
    incremental); the f32 one gives the numpy reference's logits (reference_kimi, which reads the
    file with the gguf package)."""
    strata = pytest.importorskip("strata")
    from reference_kimi import ReferenceKimi

    toks = [1, 17, 200, 33, 5, 250, 99, 42]
    iq1 = tmp_path / "iq1.gguf"
    _mk(iq1, "--arch", arch, "--preset", "tiny")
    with strata.Model(str(iq1)) as m, m.session(n_ctx=64, n_threads=2) as s:
        assert s.n_vocab == 300
        s.decode(toks[:5])
        s.decode(toks[5:6])
        nxt = s.decode_sample(toks[6:])
        assert 0 <= nxt < 300
        s.decode([nxt])
        assert np.isfinite(s.logits).all() and s.logits.std() > 0

    f32 = tmp_path / "f32.gguf"
    _mk(f32, "--arch", arch, "--preset", "tiny", "--type", "f32", "--seed", "9")
    ref = ReferenceKimi(str(f32), kv_round="f16").full(toks)
    with strata.Model(str(f32)) as m, m.session(n_ctx=64, n_threads=2) as s:
        s.decode(toks[:5], all_logits=True)
        got = [s.logits]
        for t in toks[5:]:
            s.decode([t])
            got.append(s.logits)
    got = np.concatenate(got)
    assert got.shape == ref.shape == (len(toks), 300)
    rel = np.sqrt(np.mean((got - ref) ** 2) / np.mean(ref ** 2))
    assert rel < 1e-4, rel


KIMI_BAD = [
    (["--n-expert-used", "9"], "--n-expert-used"),
    (["--n-dense-lead", "5"], "--n-dense-lead"),
    (["--mla-layers", "4"], "--mla-layers"),                          # past the 4 layers
    (["--mla-layers", "1,1"], "twice"),
    (["--mla-layers", "a,2"], "--mla-layers"),
    (["--mla-layers", "-1"], "--mla-layers"),
    (["--n-layer", "2"], "--mla-layers"),                             # the preset's MLA layer 2 is gone
    (["--kda-head-dim", "0"], "--kda-head-dim"),
    (["--conv-kernel", "65"], "--conv-kernel"),
    (["--n-embd", "320"], "--n-embd"),                                 # 320 % 256 (iq1_s)
    (["--n-head-kv", "1"], "--n-head-kv"),
    (["--head-dim", "64"], "--kda-head-dim"),
    (["--gating", "softmax"], "--gating"),
    (["--n-group", "2", "--n-group-used", "1"], "--n-group"),
    (["--legacy-kv-b"], "--legacy-kv-b"),
    (["--no-score-bias"], "--no-score-bias"),
    (["--rope-scaling", "yarn", "--rope-factor", "4"], "--rope-scaling"),
    (["--tied-output"], "--tied-output"),
    (["--preset", "k2-slice"], "unknown preset"),
    (["--n-expert", "0"], "--n-expert"),
    (["--n-expert", "100000"], "--n-expert"),
    (["--n-expert-shared", "65"], "--n-expert-shared"),
    (["--kv-lora", "0"], "--kv-lora"),
    (["--weights-scale", "-1"], "--weights-scale"),
    (["--n-vocab", "100"], "--n-vocab"),
]
K3_BAD = [
    (["--latent", "512"], "--latent"),                                  # wider than n_embd 256
    (["--attn-res-block", "5"], "--attn-res-block"),                   # more than the 4 layers
    (["--situ-beta", "0"], "--situ-beta"),
    (["--situ-beta", "nan"], "--situ-beta"),
    (["--situ-linear-beta", "inf"], "--situ-linear-beta"),
    (["--gate-lower-bound", "0"], "--gate-lower-bound"),
    (["--gate-lower-bound", "x"], "--gate-lower-bound"),
    (["--preset", "48b-slice"], "unknown preset"),
]
LINEAR_ONLY_BAD = [([flag, value], f"{flag} is only for --arch kimi-k3")
                   for flag, value in (("--latent", "64"), ("--attn-res-block", "2"), ("--situ-beta", "4"),
                                       ("--situ-linear-beta", "25"), ("--gate-lower-bound", "-5"))] + \
                  [(["--no-weights-norm"], "--no-weights-norm is only for --arch kimi-k3"),
                   (["--preset", "k3-slice"], "unknown preset")]
KIMI_BAD_CASES = ([("kimi-linear", a, n) for a, n in KIMI_BAD + LINEAR_ONLY_BAD] +
                  [("kimi-k3", a, n) for a, n in KIMI_BAD + K3_BAD])


@pytest.mark.parametrize("arch,args,needle", KIMI_BAD_CASES,
                         ids=[f"{arch} {' '.join(a)}" for arch, a, _ in KIMI_BAD_CASES])
def test_kimi_bad_flags_exit_2_with_a_message_naming_them(tmp_path, arch, args, needle):
    out = tmp_path / "m.gguf"
    result = _mk(out, "--arch", arch, "--preset", "tiny", *args, check=False)
    assert result.returncode == 2, result.stderr
    first = result.stderr.splitlines()[0]
    assert first.startswith("strata-mkmodel: ") and needle in first, first
    assert not out.exists() and list(tmp_path.iterdir()) == []


K3_FLAGS = ("--latent", "--attn-res-block", "--situ-beta", "--situ-linear-beta", "--gate-lower-bound")


@pytest.mark.parametrize("arch", ["llama", "deepseek2"])
@pytest.mark.parametrize("flag", [["--kda-head-dim", "64"], ["--conv-kernel", "4"], ["--mla-layers", "1"],
                                  ["--latent", "64"], ["--attn-res-block", "2"], ["--situ-beta", "4"],
                                  ["--situ-linear-beta", "25"], ["--gate-lower-bound", "-5"]])
def test_kimi_flags_are_refused_for_the_other_archs(tmp_path, arch, flag):
    result = _mk(tmp_path / "m.gguf", "--arch", arch, "--preset", "tiny", *flag, check=False)
    assert result.returncode == 2
    which = "kimi-k3" if flag[0] in K3_FLAGS else "kimi-linear and kimi-k3"
    assert f"{flag[0]} is only for --arch {which}" in result.stderr.splitlines()[0]


# --- --type and --type-mix over the writable types ---

# The Kimi K2 UD-IQ1_S-like mix, by tensor-name part (first match wins), as --type-mix documents it.
_KIMI_MIX = [("token_embd", "q4_K"), ("ffn_gate_exps", "iq1_s"), ("ffn_up_exps", "iq1_s"),
             ("ffn_down_exps", "iq1_m"), ("attn_k_b", "q8_0"), ("attn_v_b", "q8_0"), ("attn_kv_a_mqa", "q6_K"),
             ("attn_q_a.", "q4_K"), ("ffn_down", "q5_K"), ("ffn_gate", "q4_K"), ("ffn_up", "q4_K"), ("", "iq4_xs")]


def test_type_mix_kimi_ud_iq1s_types_every_matrix_as_the_release_does_and_runs(tmp_path):
    import strata
    out = tmp_path / "mix.gguf"
    _mk(out, "--arch", "deepseek2", "--preset", "tiny", "--type-mix", "kimi-ud-iq1s", "--seed", "3")
    r = gguf.GGUFReader(out)
    assert _value(r, "general.file_type") == 24  # LLAMA_FTYPE_MOSTLY_IQ1_S
    seen = set()
    for t in r.tensors:
        name, got = t.name, t.tensor_type.name.lower().replace("_k", "_K")
        if len(t.shape) < 2 or got == "f32":
            assert got == "f32" or name.endswith("exp_probs_b.bias"), name
            continue
        want = "q6_K" if name == "output.weight" else next(ty for part, ty in _KIMI_MIX if part in name)
        block = gguf.GGML_QUANT_SIZES[gguf.GGMLQuantizationType[want.upper()]][0]
        if int(t.shape[0]) % block:  # rows that do not fit the blocks fall back, as documented
            want = "q8_0" if int(t.shape[0]) % 32 == 0 else "f16"
        assert got == want, f"{name}: {got}, expected {want}"
        seen.add(got)
    assert {"q4_K", "q6_K", "iq1_s", "iq1_m", "q8_0"} <= seen, seen
    with strata.Model(out) as m, m.session(n_ctx=64, n_threads=2) as s:
        s.decode(list(range(1, 17)))
        assert np.isfinite(s.logits).all()


@pytest.mark.parametrize("wtype", ["q4_0", "q4_1", "q5_0", "q5_1", "q4_K", "q5_K", "q6_K", "iq4_xs", "iq1_m"])
def test_type_writes_every_matrix_in_a_writable_type(tmp_path, wtype):
    import strata
    out = tmp_path / f"{wtype}.gguf"
    _mk(out, "--preset", "tiny", "--type", wtype, "--seed", "5")
    r = gguf.GGUFReader(out)
    types = {t.tensor_type.name.lower().replace("_k", "_K") for t in r.tensors if len(t.shape) >= 2}
    assert types == {wtype}, types
    with strata.Model(out) as m, m.session(n_ctx=64, n_threads=2) as s:
        s.decode(list(range(1, 9)))
        assert np.isfinite(s.logits).all()
