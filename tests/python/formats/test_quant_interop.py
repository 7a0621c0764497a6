"""Every quantized tensor type llama.cpp's quantizer writes, read by strata exactly as ggml decodes
it: tensors of random blocks (random bytes for the quants, finite random binary16 scales of both
signs over several decades, a few zeros) written by the `gguf` package, read back through the
library (Model.read_f32) and compared bit for bit with gguf.quants.dequantize, for many shapes and
seeds. Q1_0, which the gguf package cannot dequantize, is compared with a numpy decoder written
from ggml's block_q1_0 specification (below)."""
from __future__ import annotations

import gguf
import numpy as np
import pytest

import strata

Q = gguf.GGMLQuantizationType

# type -> byte offsets of the binary16 scales in a block (gguf.GGML_QUANT_SIZES gives the sizes).
_F16_SCALES = {
    Q.Q4_0: (0,), Q.Q4_1: (0, 2), Q.Q5_0: (0,), Q.Q5_1: (0, 2), Q.Q8_0: (0,),
    Q.Q2_K: (80, 82), Q.Q3_K: (108,), Q.Q4_K: (0, 2), Q.Q5_K: (0, 2), Q.Q6_K: (208,),
    Q.IQ2_XXS: (0,), Q.IQ2_XS: (0,), Q.IQ2_S: (0,), Q.IQ3_XXS: (0,), Q.IQ3_S: (0,), Q.IQ1_S: (0,),
    Q.IQ4_NL: (0,), Q.IQ4_XS: (0,), Q.TQ1_0: (52,), Q.TQ2_0: (64,), Q.Q1_0: (0,),
    Q.IQ1_M: (), Q.MXFP4: (),  # special: see _random_blocks
}


def _scales(rng, n):
    s = (rng.choice([-1.0, 1.0], n) * 10.0 ** rng.uniform(-6.0, 1.0, n)).astype(np.float16)
    s[::17] = 0.0
    assert np.isfinite(s).all()
    return s


def _random_blocks(rng: np.random.Generator, t, rows: int, cols: int) -> np.ndarray:
    block, size = gguf.GGML_QUANT_SIZES[t]
    n_blocks = rows * cols // block
    raw = rng.integers(0, 256, (n_blocks, size), dtype=np.uint8)
    for off in _F16_SCALES[t]:
        raw[:, off:off + 2] = _scales(rng, n_blocks).reshape(-1, 1).view(np.uint8)
    if t == Q.IQ1_M:
        # The binary16 superblock scale is spread over the top nibbles of the four uint16 scale
        # words at bytes 48..55 (nibble k of the scale in word k).
        d = _scales(rng, n_blocks).view(np.uint16)
        words = raw[:, 48:56].copy().view(np.uint16)
        for k in range(4):
            words[:, k] = (words[:, k] & 0x0FFF) | (((d >> (4 * k)) & 0xF) << 12)
        raw[:, 48:56] = words.view(np.uint8)
    if t == Q.MXFP4:
        raw[:, 0] = rng.integers(100, 155, n_blocks)  # e8m0 exponents 2^-27 .. 2^27, no NaN (255)
    return raw.reshape(rows, cols // block * size)


def _q1_0_reference(raw: np.ndarray, rows: int, cols: int) -> np.ndarray:
    """ggml's block_q1_0 (128 weights in 18 bytes): binary16 d, then 16 bytes of bits; weight j of a
    block is +d when bit j % 8 of byte j // 8 is set, else -d."""
    b = raw.reshape(-1, 18)
    d = b[:, :2].copy().view(np.float16).astype(np.float32)
    bits = np.unpackbits(b[:, 2:], axis=1, bitorder="little").astype(bool)
    out = np.where(bits, d, -d).astype(np.float32)
    return out.reshape(rows, cols) if rows >= 0 else out.reshape(-1, cols)


def _write(path, t, data):
    w = gguf.GGUFWriter(path, "interop")
    w.add_tensor("w", data, raw_dtype=t)
    w.write_header_to_file()
    w.write_kv_data_to_file()
    w.write_tensors_to_file()
    w.close()


_SHAPES = {32: [(64, 128), (3, 32), (1, 96)], 128: [(5, 256), (2, 128)], 256: [(9, 512), (1, 256), (4, 768)]}
_CASES = [(t, shape) for t in _F16_SCALES for shape in _SHAPES[gguf.GGML_QUANT_SIZES[t][0]]]


@pytest.mark.parametrize("t,shape", _CASES, ids=[f"{t.name}-{r}x{c}" for t, (r, c) in _CASES])
def test_read_f32_matches_ggml_bit_for_bit(tmp_path, seed, t, shape):
    rng = np.random.default_rng(seed)
    data = _random_blocks(rng, t, *shape)
    path = tmp_path / f"{t.name}.gguf"
    _write(path, t, data)
    theirs = gguf.GGUFReader(path).tensors[0]
    if t == Q.Q1_0:
        ref = _q1_0_reference(np.asarray(theirs.data), *shape)
    else:
        ref = gguf.quants.dequantize(theirs.data, t).astype(np.float32).reshape(shape)
    with strata.Model(path) as m:
        info = m.tensor("w")
        assert info.type == int(t) and info.type_name.lower() == t.name.lower()
        assert list(info.ne) == [shape[1], shape[0]]
        assert m.tensor_bytes("w") == data.tobytes()
        got = m.read_f32("w")
    assert got.shape == ref.shape
    differ = got.view(np.uint32) != ref.view(np.uint32)
    assert not differ.any(), f"{t.name} seed {seed}: {int(differ.sum())} of {ref.size} values differ, " \
        f"first at {np.argwhere(differ)[0].tolist()}: {got[differ][0]!r} vs {ref[differ][0]!r}"


def test_q1_0_reference_decoder_on_a_hand_worked_block():
    # d = 0.5, bits: byte 0 = 0b00000101 (weights 0 and 2 set), all other bytes zero.
    raw = np.zeros(18, dtype=np.uint8)
    raw[:2] = np.array([0.5], dtype=np.float16).view(np.uint8)
    raw[2] = 0b101
    want = np.full(128, -0.5, dtype=np.float32)
    want[[0, 2]] = 0.5
    assert np.array_equal(_q1_0_reference(raw, 1, 128)[0], want)


def test_an_unknown_type_is_refused_naming_the_tensor_the_type_and_the_known_types(tmp_path):
    # NVFP4 (id 40) is a type ggml knows and strata does not decode yet.
    rng = np.random.default_rng(1)
    data = rng.integers(0, 256, (2, 36), dtype=np.uint8)
    path = tmp_path / "nvfp4.gguf"
    _write(path, Q.NVFP4, data)
    with strata.Model(path) as m:
        with pytest.raises(strata.StrataError) as e:
            m.read_f32("w")
    msg = e.value.message
    assert e.value.status == strata.Status.UNSUPPORTED and "'w'" in msg and "nvfp4" in msg, msg
    assert "iq1_m" in msg and "q4_K" in msg, msg


def _decode(t, raw: np.ndarray, rows: int, cols: int) -> np.ndarray:
    if t == Q.Q1_0:
        return _q1_0_reference(raw, rows, cols)
    return gguf.quants.dequantize(raw.reshape(rows, -1), t).astype(np.float32).reshape(rows, cols)


def _set_block_scale(t, raw: np.ndarray, factor: np.ndarray) -> None:
    """Sets every block's binary16 scale(s) to `factor` (one per block; MXFP4: the nearest power of
    two), so that the block's weights scale with it."""
    if t == Q.MXFP4:
        raw[:, 0] = np.clip(np.round(127 + np.log2(factor)), 1, 254).astype(np.uint8)
        return
    d = factor.astype(np.float16)
    if t == Q.IQ1_M:
        words = raw[:, 48:56].copy().view(np.uint16)
        bits = d.view(np.uint16)
        for k in range(4):
            words[:, k] = (words[:, k] & 0x0FFF) | (((bits >> (4 * k)) & 0xF) << 12)
        raw[:, 48:56] = words.view(np.uint8)
        return
    for off in _F16_SCALES[t]:
        raw[:, off:off + 2] = d.reshape(-1, 1).view(np.uint8)


def _set_scales(t, raw: np.ndarray, d: np.ndarray, m: np.ndarray) -> None:
    """The two binary16 scales of a type with a min (Q4_1, Q5_1: d, m; K-quants: d, dmin)."""
    a, b = _F16_SCALES[t]
    raw[:, a:a + 2] = d.astype(np.float16).reshape(-1, 1).view(np.uint8)
    raw[:, b:b + 2] = m.astype(np.float16).reshape(-1, 1).view(np.uint8)


def _matrix_of_std(rng, t, rows: int, cols: int, std: float) -> bytes:
    """Random blocks of type t whose weights have roughly the given standard deviation and, for the
    types with a min, a mean near zero (as trained weights have; random mins would add a large
    common offset that dominates every product): random quants, then block scales of
    std / (the quants' std at scale 1) x U(0.5, 1.5), and the min that cancels the block's mean."""
    block, size = gguf.GGML_QUANT_SIZES[t]
    raw = _random_blocks(rng, t, rows, cols).reshape(-1, size)
    n = raw.shape[0]
    if len(_F16_SCALES[t]) == 2:
        _set_scales(t, raw, np.ones(n), np.zeros(n))
        mean_d = _decode(t, raw, rows, cols).reshape(n, block).mean(axis=1)
        _set_scales(t, raw, np.zeros(n), np.ones(n))
        mean_m = _decode(t, raw, rows, cols).reshape(n, block).mean(axis=1)
        ratio = np.where(np.abs(mean_m) > 1e-6, -mean_d / np.where(mean_m == 0, 1, mean_m), 0.0)
        _set_scales(t, raw, np.ones(n), ratio)
        unit = float(np.std(_decode(t, raw, rows, cols)))
        f = std / max(unit, 1e-6) * rng.uniform(0.5, 1.5, n)
        _set_scales(t, raw, f, f * ratio)
        return raw.tobytes()
    _set_block_scale(t, raw, np.ones(n))
    unit = float(np.std(_decode(t, raw, rows, cols)))
    _set_block_scale(t, raw, std / max(unit, 1e-6) * rng.uniform(0.5, 1.5, n))
    return raw.tobytes()


# The weight types with a product (all but the activation formats), and the activation format ggml
# pairs each with: the only rounding strata adds over the float64 reference (which multiplies the
# decoded weights with unquantized activations).
_ACT = {Q.Q4_0: "q8_0", Q.Q4_1: "q8_1", Q.Q5_0: "q8_0", Q.Q5_1: "q8_1", Q.Q8_0: "q8_0", Q.IQ4_NL: "q8_0",
        Q.MXFP4: "q8_0", Q.Q1_0: "q8_0", Q.Q2_K: "q8_K", Q.Q3_K: "q8_K", Q.Q4_K: "q8_K", Q.Q5_K: "q8_K",
        Q.Q6_K: "q8_K", Q.IQ2_XXS: "q8_K", Q.IQ2_XS: "q8_K", Q.IQ2_S: "q8_K", Q.IQ3_XXS: "q8_K",
        Q.IQ3_S: "q8_K", Q.IQ1_S: "q8_K", Q.IQ1_M: "q8_K", Q.IQ4_XS: "q8_K", Q.TQ1_0: "q8_K", Q.TQ2_0: "q8_K"}


@pytest.mark.parametrize("t", list(_ACT), ids=[t.name for t in _ACT])
def test_a_model_in_each_type_runs_and_matches_the_reference(tmp_path, seed, t, monkeypatch):
    """Every matrix (embeddings and output too) in type t; the forward pass runs each product in
    ggml's arithmetic (activations quantized to the paired format, integer dots per block)."""
    import reference_llama
    from _synth import compare, write_model
    from reference_llama import ReferenceModel

    if t == Q.Q1_0:  # the gguf package cannot dequantize it: the reference uses the decoder above
        plain = reference_llama.dequantize
        monkeypatch.setattr(reference_llama, "dequantize", lambda data, qtype: _q1_0_reference(
            np.asarray(data), -1, np.asarray(data).shape[-1] // 18 * 128) if qtype == Q.Q1_0 else plain(data, qtype))

    rng = np.random.default_rng(seed)
    name = t.name.lower().replace("_k", "_K")
    path = write_model(tmp_path / f"{t.name}.gguf", seed, arch="llama", wtype="f32",
                       raw_matrix=lambda n, r, c, std: (name, _matrix_of_std(rng, t, r, c, std)))[0]
    toks = rng.integers(0, 300, 24)
    want = ReferenceModel(path, kv_round="f16").full(toks)
    with strata.Model(path) as m, m.session(n_ctx=32, n_threads=2) as s:
        assert {x.type for x in m.tensors if x.name.endswith("attn_q.weight")} == {int(t)}
        s.decode(toks, all_logits=True)
        got = s.logits
    st = compare(got, want)
    # Activations rounded to 8 bits per value (Q8_0/Q8_1: a scale per 32, Q8_K: per 256) before
    # every product. Measured on seeds 0-3 (24 positions, logit RMS ~1.5): rel RMS 0.0068-0.0132
    # for the Q8_0/Q8_1-paired types, 0.0143-0.0239 for the Q8_K-paired ones, TQ2_0 5e-4 (its
    # values are not centred: a common offset dominates), argmax agreement 1.0 everywhere.
    # A wrong scale on one sub-block in sixteen moves rel RMS past 0.1.
    assert st["rel_rms"] <= 0.035 and st["argmax"] >= 0.9, f"{t.name} seed {seed}: {st}"
