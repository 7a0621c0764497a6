"""Sessions through the Python bindings: state, sampling settings, determinism, errors,
streaming generate (Python) and generate_text (strata_session_generate)."""
from __future__ import annotations

import gc
import json

import numpy as np
import pytest

import strata
from _synth import write_model
from conftest import fresh_seed

SETTINGS = dict(temperature=0.8, top_k=40, top_p=0.9, min_p=0.05, repeat_penalty=1.1, repeat_last_n=16)


@pytest.fixture(scope="module")
def model_path(tmp_path_factory):
    seed = fresh_seed("test_session model")
    return write_model(tmp_path_factory.mktemp("sess") / "m.gguf", seed, arch="llama", wtype="q8_0",
                       n_ctx_train=512)[0]


@pytest.fixture
def model(model_path):
    with strata.Model(model_path) as m:
        yield m


def _status(e: pytest.ExceptionInfo) -> strata.Status:
    return strata.Status(e.value.status)


def test_session_state_and_plan(model):
    with model.session(n_ctx=128, n_threads=2) as s:
        assert s.n_ctx == 128 and s.n_past == 0 and s.n_vocab == 300 == model.vocab.n_vocab
        plan = s.plan
        assert isinstance(plan, str) and plan.strip()
        s.decode([1, 5, 9])
        assert s.n_past == 3 and s.logits.shape == (1, 300)
        s.reset()
        assert s.n_past == 0
    assert s.closed
    with model.session() as s:  # n_ctx 0: the model's context_length (512 here), at most 4096
        assert s.n_ctx == 512


def test_a_session_keeps_its_model_alive_and_closing_the_model_closes_it(model_path):
    s = strata.Model(model_path).session(n_ctx=32, n_threads=1)
    gc.collect()
    s.decode([1, 2, 3])
    assert s.n_past == 3
    m = s.model
    m.close()
    assert s.closed
    with pytest.raises(ValueError):
        s.decode([1])


def test_sampling_json_holds_every_setting(model, seed):
    with model.session(n_ctx=32, n_threads=1, seed=seed, **SETTINGS) as s:
        got = s.sampling
        assert set(strata.SAMPLING_SETTINGS) <= set(got), got
        assert got["seed"] == seed
        for k, v in SETTINGS.items():
            assert got[k] == pytest.approx(v, rel=1e-6), (k, got)
        json.loads(s.sampling_json)
        s.set_sampling(temperature=0.0)
        got2 = s.sampling
        assert got2["temperature"] == 0 and got2["top_k"] == 40 and got2["seed"] == seed


def _run(s: strata.Session, prompt: list[int], n: int) -> list[int]:
    s.decode(prompt)
    out = []
    for _ in range(n):
        t = s.sample()
        out.append(t)
        s.decode([t])
    return out


def test_same_seed_and_settings_give_the_same_tokens(model, seed):
    prompt = np.random.default_rng(seed).integers(3, 300, 10).tolist()
    with model.session(n_ctx=64, n_threads=2, seed=seed, **SETTINGS) as a, \
            model.session(n_ctx=64, n_threads=2, seed=seed, **SETTINGS) as b:
        first = _run(a, prompt, 20)
        assert _run(b, prompt, 20) == first, f"seed {seed}"
        a.reset()
        assert _run(a, prompt, 20) == first, f"seed {seed}: after reset"
        b.reset()
        b.set_sampling(**SETTINGS)  # same settings again: the sampler is re-seeded with the same seed
        assert _run(b, prompt, 20) == first, f"seed {seed}: after set_sampling"


def test_greedy_sampling_is_the_argmax(model, seed):
    prompt = np.random.default_rng(seed).integers(3, 300, 8).tolist()
    with model.session(n_ctx=64, n_threads=2, temperature=0.0, repeat_penalty=1.0) as s:
        s.decode(prompt)
        assert s.sample() == int(np.argmax(s.logits[-1])), f"seed {seed}"


def test_context_overflow_raises_and_runs_nothing(model):
    with model.session(n_ctx=32, n_threads=1) as s:
        s.decode(list(range(3, 23)))
        with pytest.raises(strata.StrataError) as e:
            s.decode(list(range(3, 23)))
        assert _status(e) == strata.Status.CONTEXT_OVERFLOW, e.value
        assert s.n_past == 20
        s.decode(list(range(3, 15)))
        assert s.n_past == 32
        with pytest.raises(strata.StrataError) as e:
            s.decode([5])
        assert _status(e) == strata.Status.CONTEXT_OVERFLOW and s.n_past == 32


def test_token_out_of_range_is_invalid_argument(model):
    with model.session(n_ctx=32, n_threads=1) as s:
        s.decode([1, 2])
        for bad in ([300], [5, -1], [2**31 - 1]):
            with pytest.raises(strata.StrataError) as e:
                s.decode(bad)
            assert _status(e) == strata.Status.INVALID_ARGUMENT, (bad, e.value)
            assert s.n_past == 2
        with pytest.raises(OverflowError):
            s.decode([2**31])


@pytest.mark.parametrize("setting,value", [("temperature", -1.0), ("temperature", float("nan")),
                                           ("top_k", -1), ("top_p", 0.0), ("top_p", 1.5), ("min_p", -0.1),
                                           ("min_p", 1.5), ("repeat_penalty", 0.0), ("repeat_last_n", -1)])
def test_bad_sampling_settings_are_invalid_argument_naming_the_setting(model, setting, value):
    with model.session(n_ctx=32, n_threads=1) as s:
        before = s.sampling
        with pytest.raises(strata.StrataError) as e:
            s.set_sampling(**{setting: value})
        assert _status(e) == strata.Status.INVALID_ARGUMENT and setting in e.value.message, e.value
        assert s.sampling == before
    with pytest.raises(strata.StrataError) as e:
        model.session(n_ctx=32, **{setting: value})
    assert setting in e.value.message


def test_a_memory_budget_too_small_is_out_of_memory_saying_what_fits(model):
    with pytest.raises(strata.StrataError) as e:
        model.session(n_ctx=4096, memory_budget=1 << 20)
    assert _status(e) == strata.Status.OUT_OF_MEMORY and "fits" in e.value.message, e.value


def test_q8_0_kv_needs_a_head_dimension_multiple_of_32(tmp_path, seed):
    path = write_model(tmp_path / "hd48.gguf", seed, n_embd=192, n_head=4, n_head_kv=2, wtype="f32")[0]
    with strata.Model(path) as m:
        with pytest.raises(strata.StrataError) as e:
            m.session(n_ctx=32, kv_type="q8_0")
        assert "q8_0" in e.value.message.lower(), e.value
        with m.session(n_ctx=32, kv_type="f16") as s:
            s.decode([1, 2, 3])
    with pytest.raises(ValueError):
        strata.Model(path).session(kv_type="q4")


# --- generation -----------------------------------------------------------------------------

def _greedy(model, **kw):
    return model.session(n_ctx=96, n_threads=2, temperature=0.0, repeat_penalty=1.0, **kw)


def test_generate_streams_valid_text_equal_to_a_manual_greedy_loop(model):
    prompt = "t300 t301"
    with _greedy(model) as s:
        gen = s.generate(prompt, max_tokens=12, stop_at_end_of_generation=False)
        pieces = list(gen)
        assert all(isinstance(p, str) and p for p in pieces)
        assert gen.stop_reason == "max_tokens" and len(gen.tokens) == 12
        assert "".join(pieces) == gen.text == b"".join(model.token_to_piece(t) for t in gen.tokens).decode(
            "utf-8", "replace")
        assert gen.n_prompt_tokens == len(model.tokenize(prompt))
        assert s.n_past == gen.n_prompt_tokens + 12  # every generated token is decoded, as in the C ABI
    with _greedy(model) as s:
        s.decode(model.tokenize(prompt))
        manual = []
        for _ in range(12):
            manual.append(int(np.argmax(s.logits[-1])))
            s.decode([manual[-1]])
    assert gen.tokens == manual


def test_generate_text_matches_the_python_generator(model):
    with _greedy(model) as s:
        gen = s.generate("t310", max_tokens=10, stop_at_end_of_generation=False)
        text_py = "".join(gen)
    seen = []
    with _greedy(model) as s:
        text, info = s.generate_text("t310", max_tokens=10, stop_at_end_of_generation=False,
                                     on_token=lambda t, p: seen.append((t, p)))
    assert [t for t, _ in seen] == gen.tokens
    assert text == text_py
    assert info["n_generated"] == 10 and info["stop_reason"] == "max_tokens"
    assert info["n_prompt_tokens"] == gen.n_prompt_tokens
    assert info["prefill_seconds"] >= 0 and info["decode_seconds"] >= 0


def test_generate_text_callback_can_stop_and_its_exceptions_propagate(model):
    with _greedy(model) as s:
        text, info = s.generate_text("t320", max_tokens=20, stop_at_end_of_generation=False,
                                     on_token=lambda t, p: True)
        assert info["n_generated"] == 1 and info["stop_reason"] == "callback"

    class Boom(Exception):
        pass

    def cb(t, p):
        raise Boom("from the callback")

    with _greedy(model) as s:
        with pytest.raises(Boom):
            s.generate_text("t320", max_tokens=20, stop_at_end_of_generation=False, on_token=cb)
        s.reset()
        text, info = s.generate_text("t320", max_tokens=3)
        assert info["n_generated"] <= 3


def test_generation_stops_at_a_full_context_and_a_prompt_too_long_overflows(model):
    with model.session(n_ctx=16, n_threads=1, temperature=0.0) as s:
        gen = s.generate("t300", max_tokens=100, stop_at_end_of_generation=False)
        list(gen)
        assert gen.stop_reason == "context_full" and s.n_past == 16
    with model.session(n_ctx=16, n_threads=1, temperature=0.0) as s:
        text, info = s.generate_text("t300", max_tokens=100, stop_at_end_of_generation=False)
        assert info["stop_reason"] == "context_full", info
    with model.session(n_ctx=8, n_threads=1) as s:
        long_prompt = " ".join(f"t{i}" for i in range(300, 320))
        with pytest.raises(strata.StrataError) as e:
            s.generate_text(long_prompt)
        assert _status(e) == strata.Status.CONTEXT_OVERFLOW and s.n_past == 0
        with pytest.raises(strata.StrataError) as e:
            list(s.generate(long_prompt))
        assert _status(e) == strata.Status.CONTEXT_OVERFLOW and s.n_past == 0


def _seeded(model, seed):
    """Sampling at temperature 1 with a fixed seed: as repeatable as greedy decoding, but a random
    model's greedy output can settle on one byte token and offer no ASCII piece to stop on."""
    return model.session(n_ctx=96, n_threads=2, temperature=1.0, top_k=0, top_p=1.0, min_p=0.0,
                         repeat_penalty=1.0, seed=seed)


def test_generate_stop_strings(model):
    # a stop string made of a later token's piece, in printable ASCII (a random model also emits byte
    # tokens; the library matches stop strings on bytes, the Python text holds U+FFFD for them)
    for seed in range(1, 9):
        with _seeded(model, seed) as s:
            full = s.generate("t330", max_tokens=16, stop_at_end_of_generation=False)
            text = "".join(full)
        pieces = [model.token_to_piece(t) for t in full.tokens]
        cands = [p for p in pieces[1:] if p.strip() and all(32 <= c < 127 for c in p)]
        if cands:
            break
    assert cands, f"no ASCII piece among {pieces} (seed {seed})"
    stop = cands[0].decode()
    with _seeded(model, seed) as s:
        gen = s.generate("t330", max_tokens=16, stop=[stop], stop_at_end_of_generation=False)
        cut = "".join(gen)
    assert gen.stop_reason == "stop_string" and cut == text[:text.find(stop)], (seed, stop, cut, text)
    with _seeded(model, seed) as s:
        out, info = s.generate_text("t330", max_tokens=16, stop=[stop], stop_at_end_of_generation=False)
    assert info["stop_reason"] == "stop_string" and stop in out and out.startswith(cut[:-1] if cut else ""), \
        (info, out, cut, stop)


class _FakeModel:
    def __init__(self, pieces):
        self.pieces = pieces
        self.vocab = strata.VocabInfo(n_vocab=len(pieces), bos=-1, eos=0, add_bos=False, kind="spm")

    def tokenize(self, text, add_special=True, parse_special=False):
        return [1]

    def token_to_piece(self, t):
        return self.pieces[t]

    def is_eog(self, t):
        return t == self.vocab.eos


class _FakeSession:
    """Plays a fixed token sequence: exercises Generation's UTF-8 buffering and stop logic alone."""

    def __init__(self, pieces, script, n_ctx=100):
        self.model, self.script, self.n_past, self.n_ctx = _FakeModel(pieces), list(script), 0, n_ctx

    def decode(self, ids):
        self.n_past += len(ids)

    def sample(self):
        return self.script.pop(0)

    def decode_sample(self, ids):
        self.decode(ids)
        return self.sample()


def test_generation_yields_only_complete_utf8_and_stops_at_eos():
    e_acute = "é".encode()
    pieces = [b"", b"a", e_acute[:1], e_acute[1:], b"\xf0\x9f", b"\x98", b"\x80", b" b", b"\xff"]
    # "a", then é in two tokens, then 😀 in three, " b", an invalid byte, then eos (0)
    gen = strata.Generation(_FakeSession(pieces, [1, 2, 3, 4, 5, 6, 7, 8, 0]), "x", 50, None, True, False, True)
    out = list(gen)
    assert "".join(out) == "aé😀 b\ufffd" and gen.stop_reason == "end_of_generation"
    assert all(p.encode("utf-8") for p in out)  # every piece is valid text on its own
    assert gen.tokens == [1, 2, 3, 4, 5, 6, 7, 8]
    # a dangling incomplete sequence at max_tokens comes out as U+FFFD
    gen = strata.Generation(_FakeSession(pieces, [1, 4]), "x", 2, None, True, False, True)
    assert "".join(gen) == "a\ufffd" and gen.stop_reason == "max_tokens"


def test_generation_holds_back_a_possible_stop_string_prefix():
    pieces = [b"", b"ab", b"c", b"X", b"YZ", b"d"]
    gen = strata.Generation(_FakeSession(pieces, [1, 2, 3, 2, 3, 4, 5]), "x", 50, ["XY"], True, False, True)
    out = list(gen)
    assert "".join(out) == "abcXc" and gen.stop_reason == "stop_string"
    assert "X" not in out[-1] or out[-1].endswith("c")
