"""IQ4_NL, Q4_K, Q5_K and Q6_K tensors (the types llama.cpp's IQ1_S mixes keep some tensors in)
written by the `gguf` package are read by strata exactly as ggml decodes them: random blocks
(random bytes for the quants, finite random binary16 scales), compared bit for bit with
gguf.quants.dequantize."""
from __future__ import annotations

import gguf
import numpy as np
import pytest

import strata

Q = gguf.GGMLQuantizationType

# type -> (elements per block, bytes per block, byte offsets of the binary16 scales in a block)
_LAYOUT = {
    Q.IQ4_NL: (32, 18, (0,)),
    Q.Q4_K: (256, 144, (0, 2)),  # d, dmin
    Q.Q5_K: (256, 176, (0, 2)),
    Q.Q6_K: (256, 210, (208,)),
}


def _random_blocks(rng: np.random.Generator, t, rows: int, cols: int) -> np.ndarray:
    block, size, scale_offsets = _LAYOUT[t]
    assert gguf.GGML_QUANT_SIZES[t] == (block, size)  # the gguf package agrees on the layout
    n_blocks = rows * cols // block
    raw = rng.integers(0, 256, (n_blocks, size), dtype=np.uint8)
    # Finite scales of either sign over six decades, a few zeros and subnormals among them.
    scales = (rng.choice([-1.0, 1.0], (n_blocks, len(scale_offsets))) *
              10.0 ** rng.uniform(-6.0, 1.0, (n_blocks, len(scale_offsets)))).astype(np.float16)
    scales.flat[:: 17] = 0.0
    assert np.isfinite(scales).all()
    for i, off in enumerate(scale_offsets):
        raw[:, off:off + 2] = scales[:, i:i + 1].view(np.uint8)
    return raw.reshape(rows, cols // block * size)


@pytest.mark.parametrize("t,shape", [(Q.IQ4_NL, (64, 128)), (Q.IQ4_NL, (3, 32)), (Q.Q4_K, (9, 512)),
                                     (Q.Q5_K, (7, 768)), (Q.Q6_K, (11, 512)), (Q.Q6_K, (1, 256))])
def test_read_f32_matches_the_gguf_package_bit_for_bit(tmp_path, seed, t, shape):
    rng = np.random.default_rng(seed)
    data = _random_blocks(rng, t, *shape)
    path = tmp_path / f"{t.name}.gguf"
    w = gguf.GGUFWriter(path, "interop")
    w.add_tensor("w", data, raw_dtype=t)
    w.write_header_to_file()
    w.write_kv_data_to_file()
    w.write_tensors_to_file()
    w.close()

    theirs = gguf.GGUFReader(path).tensors[0]
    ref = gguf.quants.dequantize(theirs.data, t).astype(np.float32).reshape(shape)
    with strata.Model(path) as m:
        info = m.tensor("w")
        assert info.type == int(t) and info.type_name == t.name.lower().replace("_k", "_K")
        assert list(info.ne) == [shape[1], shape[0]]
        assert m.tensor_bytes("w") == data.tobytes()
        got = m.read_f32("w")
    assert got.shape == ref.shape
    assert np.array_equal(got.view(np.uint32), ref.view(np.uint32)), f"{t.name} seed {seed}: " \
        f"{int(np.sum(got.view(np.uint32) != ref.view(np.uint32)))} of {ref.size} values differ"


def test_the_read_only_types_are_readable_but_not_writable(tmp_path):
    for t in _LAYOUT:
        assert not strata.tensor_type_supported(int(t))  # supported = read and write
    w = strata.Writer()
    with pytest.raises(strata.StrataError) as e:
        w.add_tensor("w", np.ones((1, 256), dtype=np.float32), type="q4_K")
    assert e.value.status == strata.Status.UNSUPPORTED and "q4_K" in e.value.message


# Scale of the binary16 block scales per type, so that weights come out near the wanted std:
# typical |weight| / d is ~65 for IQ4_NL (codebook), ~200 for Q4_K (6-bit scale x 4-bit q, less
# the min), ~400 for Q5_K, ~1000 for Q6_K (int8 scale x (q - 32)).
_PER_D = {Q.IQ4_NL: 65.0, Q.Q4_K: 200.0, Q.Q5_K: 400.0, Q.Q6_K: 1000.0}

# The mix of a real IQ1_S build in miniature: embedding Q4_K, q Q5_K, k IQ4_NL, the second
# layer's down projection and the output Q6_K; everything else f32.
_MIX = {"token_embd.weight": Q.Q4_K, "blk.0.attn_q.weight": Q.Q5_K, "blk.0.attn_k.weight": Q.IQ4_NL,
        "blk.1.attn_k.weight": Q.IQ4_NL, "blk.1.ffn_down.weight": Q.Q6_K, "output.weight": Q.Q6_K}


def test_a_model_mixing_the_read_only_types_runs_and_matches_the_reference(tmp_path, seed):
    from _synth import compare, write_model
    from reference_llama import ReferenceModel

    rng = np.random.default_rng(seed)

    def raw(name, rows, cols, std):
        t = _MIX.get(name)
        if t is None:
            return None
        blocks = _random_blocks(rng, t, rows, cols)
        _, size, scale_offsets = _LAYOUT[t]
        flat = blocks.reshape(-1, size)
        for off in scale_offsets:
            d = (std / _PER_D[t] * rng.uniform(0.5, 1.5, flat.shape[0])).astype(np.float16)
            flat[:, off:off + 2] = d.reshape(-1, 1).view(np.uint8)
        return t.name.lower().replace("_k", "_K"), flat.tobytes()

    path = write_model(tmp_path / "mix.gguf", seed, arch="llama", wtype="f32", raw_matrix=raw)[0]
    toks = rng.integers(0, 300, 40)
    want = ReferenceModel(path, kv_round="f16").full(toks)
    with strata.Model(path) as m, m.session(n_ctx=64, n_threads=2) as s:
        assert {t.name: t.type for t in m.tensors if t.name in _MIX} == {k: int(v) for k, v in _MIX.items()}
        s.decode(toks, all_logits=True)
        got = s.logits
    st = compare(got, want)
    # No activation is re-quantized for these types (rows are dequantized to f32 and dotted), so
    # only float32 rounding separates strata from the float64 reference: test_forward.py's f32
    # bounds. Measured on seeds 0-3: rel RMS 1.9e-6 .. 8.0e-6, max 3.3e-5 .. 1.0e-4 (logit RMS ~1.5).
    assert st["rel_rms"] <= 1e-4 and st["max"] <= 1e-3 * max(1.0, float(np.abs(want).max())) and \
        st["argmax"] == 1.0, f"seed {seed}: {st}"
