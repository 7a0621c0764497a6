"""strata's forward pass (through Session.decode / logits) against the numpy reference
(reference_llama.py) on synthetic llama / qwen2 / qwen3 models written in-test.

How logits are compared (DESIGN.md, "Comparing logits"): over many positions, by RMS difference
(relative to the reference logits' RMS, which is ~1 for these models), max abs difference and
argmax agreement. The bounds are measured, not guessed:

- F32 / F16 weights: strata computes in float32, the reference in float64; the KV cache is
  stored as f16 in strata, so the reference rounds K and V to f16 too (kv_round="f16"), leaving
  only float32 rounding: measured rel RMS 2e-6 .. 1.7e-5, bound 1e-4.
- Q8_0 and IQ1_S weights: the reference multiplies the same dequantized weights, but strata first
  re-quantizes every activation vector (Q8_0 blocks for Q8_0 matmuls, Q8_K for IQ1_S), which the
  reference does not, so the difference is quantization noise of the activations (measured rel
  RMS ~1.1e-2 for Q8_0, ~1.7e-2 for IQ1_S): bounds are ~3x the largest spread measured over
  repeated random models (see BOUNDS).
"""
from __future__ import annotations

import numpy as np
import pytest

import strata
from _synth import compare, write_model
from reference_llama import ReferenceModel

# wtype: (rel_rms, max_abs, min argmax agreement). Measured over 3 archs x 2 seeds, 48 positions
# (logit RMS ~1): f32 rel_rms <= 1.0e-5, max <= 8.3e-5; f16 <= 1.7e-5, <= 1.4e-4, argmax 1.0 for
# both; q8_0 rel_rms 0.0110-0.0114, max <= 0.053, argmax >= 0.958; iq1_s rel_rms 0.0163-0.0175,
# max <= 0.085, argmax >= 0.958. Bounds: ~3x those maxima (argmax: a few near-tie flips allowed).
BOUNDS = {
    "f32": (1e-4, 1e-3, 1.0),
    "f16": (1e-4, 1e-3, 1.0),
    "q8_0": (0.03, 0.15, 0.9),
    "iq1_s": (0.05, 0.25, 0.85),
}


def _check(stats: dict, wtype: str, what: str) -> None:
    rel, mx, am = BOUNDS[wtype]
    assert stats["rel_rms"] <= rel and stats["max"] <= mx and stats["argmax"] >= am, \
        f"{what}: {stats} exceeds bounds rel_rms<={rel} max<={mx} argmax>={am}"


def _reference(path: str, kv: str = "f16") -> ReferenceModel:
    return ReferenceModel(path, kv_round="f16" if kv == "f16" else None)


@pytest.mark.parametrize("wtype", ["f32", "f16", "q8_0", "iq1_s"])
@pytest.mark.parametrize("arch", ["llama", "qwen2", "qwen3"])
def test_logits_match_the_reference(tmp_path, seed, arch, wtype):
    path = write_model(tmp_path / "m.gguf", seed, arch=arch, wtype=wtype)[0]
    toks = np.random.default_rng(seed).integers(0, 300, 48)
    want = _reference(path).full(toks)
    with strata.Model(path) as m, m.session(n_ctx=64, n_threads=2) as s:
        s.decode(toks, all_logits=True)
        got = s.logits
        assert got.shape == (48, 300) and got.dtype == np.float32
        assert s.n_past == 48
    _check(compare(got, want), wtype, f"{arch}/{wtype} seed {seed}")


@pytest.mark.parametrize("arch,wtype,rope", [
    ("llama", "f32", None),
    ("qwen2", "q8_0", None),
    ("qwen3", "iq1_s", None),
    ("llama", "f32", {"scaling.type": "linear", "scaling.factor": 4.0}),
    ("qwen2", "f32", {"scaling.type": "yarn", "scaling.factor": 4.0, "scaling.original_context_length": 256}),
])
def test_positions_past_1000_in_chunks_then_one_token_steps(tmp_path, seed, arch, wtype, rope):
    """Prefill 1050 tokens in chunks (KV reused across calls), then decode one token at a time to
    1060; the rows at positions 0..1059 (every chunk's logits and every step) match the reference."""
    path = write_model(tmp_path / "m.gguf", seed, arch=arch, wtype=wtype, rope=rope)[0]
    toks = np.random.default_rng(seed).integers(0, 300, 1060)
    want = _reference(path).full(toks)
    rows = []
    with strata.Model(path) as m, m.session(n_ctx=1100, n_threads=2) as s:
        for a, b in ((0, 300), (300, 301), (301, 700), (700, 1050)):
            s.decode(toks[a:b], all_logits=True)
            rows.append(s.logits)
            assert s.n_past == b
        for i in range(1050, 1060):
            s.decode([toks[i]])
            assert s.logits.shape == (1, 300)
            rows.append(s.logits)
    got = np.concatenate(rows)
    what = f"{arch}/{wtype}/{rope} seed {seed}"
    _check(compare(got, want), wtype, what)
    _check(compare(got[1000:], want[1000:]), wtype, what + " positions >= 1000")


@pytest.mark.parametrize("wtype", ["f32", "iq1_s"])
def test_decode_in_several_calls_equals_one_call(tmp_path, seed, wtype):
    path = write_model(tmp_path / "m.gguf", seed, arch="qwen3", wtype=wtype)[0]
    toks = np.random.default_rng(seed).integers(0, 300, 40).tolist()
    with strata.Model(path) as m, m.session(n_ctx=64, n_threads=2) as s:
        s.decode(toks, all_logits=True)
        one = s.logits
        s.reset()
        assert s.n_past == 0
        parts = []
        for a, b in ((0, 1), (1, 17), (17, 18), (18, 40)):
            s.decode(toks[a:b], all_logits=True)
            parts.append(s.logits)
        several = np.concatenate(parts)
        # single-token decode after a prefill == the same rows of a full prefill
        s.reset()
        s.decode(toks[:30])
        steps = []
        for t in toks[30:]:
            s.decode([t])
            steps.append(s.logits[0])
        # last-row-only logits are the last row of all_logits
        s.reset()
        s.decode(toks)
        last = s.logits
    what = f"{wtype} seed {seed}"
    _check(compare(several, one), wtype, what + " several calls vs one")
    _check(compare(np.stack(steps), one[30:]), wtype, what + " one-token steps vs prefill")
    _check(compare(last, one[-1:]), wtype, what + " last row")


def test_q8_0_kv_cache_is_close_to_f16(tmp_path, seed):
    """A q8_0 cache quantizes K and V in blocks of 32 (8-bit): logits move by that noise only."""
    path = write_model(tmp_path / "m.gguf", seed, arch="llama", wtype="f32")[0]
    toks = np.random.default_rng(seed).integers(0, 300, 200)
    out = {}
    with strata.Model(path) as m:
        for kv in ("f16", "q8_0"):
            with m.session(n_ctx=256, n_threads=2, kv_type=kv) as s:
                s.decode(toks, all_logits=True)
                out[kv] = s.logits
    want = _reference(path, kv="f32").full(toks)
    st = compare(out["q8_0"], out["f16"])
    assert st["rel_rms"] < 0.02 and st["argmax"] >= 0.95, f"seed {seed}: q8_0 vs f16 KV {st}"
    st = compare(out["q8_0"], want)
    assert st["rel_rms"] < 0.02 and st["argmax"] >= 0.95, f"seed {seed}: q8_0 KV vs reference {st}"
