"""Pipelines give what one local session gives: the head runs in this pytest process through the
bindings, the other stages are real strata-worker processes on loopback.

Equality is exact: every stage runs the same per-row forward as a local session, so the logits
are expected bit-identical (asserted as max |difference| <= 1e-6 over every prefill row and every
decode step) and the greedy tokens equal. Prompts are longer than n_batch, so the prefill flows
through the stages as several micro-batches (the last one partial)."""
from __future__ import annotations


import json

import numpy as np
import pytest

import strata
from _pipeline_cases import PipelineSettings, assert_same_trace, check_three_ranges, prompt_tokens, three_stage_traces
from pipeline_util import (LOGITS_ATOL, MODEL_SPECS, generated_tokens, greedy_trace, n_layers, pipeline_models,
                           plan_ranges)

N_CTX = 256
HEARTBEAT_MS = 200
PEER_TIMEOUT_MS = 3000
N_STEPS = 12  # greedy decode steps compared after the prefill


@pytest.fixture(scope="module")
def models(tmp_path_factory):
    return pipeline_models(tmp_path_factory.mktemp("pipeline-models"), list(MODEL_SPECS))


SETTINGS = PipelineSettings(N_CTX, HEARTBEAT_MS, PEER_TIMEOUT_MS)
pool, workers = SETTINGS.fixtures("pipeline-workers")
_prompt, _pipeline, _assert_same_trace = prompt_tokens, SETTINGS.pipeline, assert_same_trace


# (model, layers, n_batch, prompt length): even, uneven (1:1:n-2 and n-2:1:1) and planned splits.
CASES = [
    ("llama-f32", "0:2,2:4,4:6", 8, 37),
    ("llama-f32", "0:1,1:2,2:6", 8, 37),
    ("llama-f32", "0:4,4:5,5:6", 32, 70),
    ("llama-f32", None, 8, 37),
    ("llama-iq1_s-3shards", "0:1,1:2,2:5", 8, 37),
    ("llama-iq1_s-3shards", None, 16, 50),
    ("qwen3-q8_0", "0:1,1:3,3:4", 8, 37),
    ("qwen3-q8_0", None, 8, 37),
    ("qwen2-f16", "0:2,2:3,3:4", 8, 29),
]


@pytest.mark.parametrize("name,layers,n_batch,n_prompt", CASES,
                         ids=[f"{c[0]}-{c[1] or 'planned'}-b{c[2]}-p{c[3]}" for c in CASES])
def test_three_stage_pipeline_gives_the_local_logits_and_greedy_tokens(models, workers, name, layers, n_batch,
                                                                       n_prompt):
    paths = models[name]
    with strata.Model(paths[0]) as m:
        prompt = _prompt(m.vocab.n_vocab, n_prompt, 5)

        def check_plan(p: strata.Pipeline) -> list[tuple[int, int]]:
            ranges = plan_ranges(p.plan())
            check_three_ranges(ranges, n_layers(m), layers)
            return ranges

        want, got, ranges, stats = three_stage_traces(SETTINGS, m, workers[name], prompt, N_STEPS, check_plan,
                                                      lambda p, _s: p.stats(), layers=layers, n_batch=n_batch)
    _assert_same_trace(got, want, f"{name} layers={layers or ranges}")
    assert stats, "empty stats"


def test_sampling_with_temperature_and_seed_gives_the_local_tokens(models, workers):
    name = "llama-iq1_s-3shards"
    settings = dict(temperature=0.9, top_k=50, top_p=0.95, min_p=0.02, repeat_penalty=1.1, repeat_last_n=32,
                    seed=123456789)
    prompt = "Once upon a time, a pipeline of three stages said hello " * 2
    with strata.Model(models[name][0]) as m:
        with m.session(n_ctx=N_CTX, n_threads=1, **settings) as local:
            want, want_info = generated_tokens(local, prompt, 40, stop_at_end_of_generation=False)
            local.reset()
            gen = local.generate(prompt, max_tokens=24, stop_at_end_of_generation=False)
            list(gen)
            want_py = gen.tokens
        with _pipeline(m, workers[name], layers="0:1,1:3,3:5", n_batch=16) as p:
            s = p.session()
            s.set_sampling(**settings)
            got, info = generated_tokens(s, prompt, 40, stop_at_end_of_generation=False)
            assert info["n_prompt_tokens"] == want_info["n_prompt_tokens"] > 16
            assert got == want, "strata_session_generate on the pipeline sampled other tokens than locally"
            s.reset()
            gen = s.generate(prompt, max_tokens=24, stop_at_end_of_generation=False)
            list(gen)
            assert gen.tokens == want_py, "decode + sample on the pipeline sampled other tokens than locally"
            assert len(set(got)) > 3, f"temperature 0.9 should not give a constant sequence: {got}"


def test_sample_top_gives_the_local_top_logprobs(models, workers):
    name = "qwen3-q8_0"
    with strata.Model(models[name][0]) as m:
        prompt = _prompt(m.vocab.n_vocab, 40, 9)
        settings = dict(temperature=0.7, seed=42)

        def run(s):
            s.set_sampling(**settings)
            s.decode(prompt)
            out = []
            for _ in range(6):
                t, top = s.sample_top(10)
                out.append((t, top))
                s.decode([t])
            return out

        with m.session(n_ctx=N_CTX, n_threads=1) as local:
            want = run(local)
            local.reset()
            local.set_sampling(temperature=0.0)
            local.decode(prompt)
            raw = local.logits[0].astype(np.float64)
        # The top list is the log-softmax of the raw logits, descending.
        ls = raw - (np.max(raw) + np.log(np.sum(np.exp(raw - np.max(raw)))))
        order = np.argsort(-ls, kind="stable")[:10]
        assert [t for t, _ in want[0][1]] == [int(i) for i in order]
        assert max(abs(lp - ls[t]) for t, lp in want[0][1]) < 1e-4
        with _pipeline(m, workers[name], layers="0:2,2:3,3:4", n_batch=8) as p:
            got = run(p.session())
        for i, ((gt, gtop), (wt, wtop)) in enumerate(zip(got, want)):
            assert gt == wt, f"step {i}: sampled {gt} != local {wt}"
            assert [t for t, _ in gtop] == [t for t, _ in wtop], f"step {i}: top tokens differ"
            d = max(abs(a - b) for (_, a), (_, b) in zip(gtop, wtop))
            assert d <= LOGITS_ATOL, f"step {i}: top logprobs differ by {d}"


def test_plan_and_stats_describe_the_stages_and_the_traffic(models, workers):
    name = "llama-f32"
    with strata.Model(models[name][0]) as m, _pipeline(m, workers[name], layers="0:2,2:4,4:6", n_batch=8) as p:
        plan = p.plan()
        text = p.plan_json()
        for w in workers[name]:
            assert str(w.port) in text, f"the plan does not name worker {w.address}: {text}"
        s = p.session()
        s.decode(_prompt(m.vocab.n_vocab, 20, 3))
        s.sample()
        stats_text = p.stats_json()
        print("plan:", text)
        print("stats:", stats_text)
        assert plan_ranges(plan) == [(0, 2), (2, 4), (4, 6)]


def test_python_worker_serves_a_stage_in_process(models, workers):
    """strata.Worker (the bindings' strata_worker_*) as the middle stage, beside a strata-worker."""
    name = "llama-f32"
    lines: list[str] = []
    with strata.Model(models[name][0]) as m:
        prompt = _prompt(m.vocab.n_vocab, 30, 4)
        with m.session(n_ctx=N_CTX, n_threads=1) as local:
            want = greedy_trace(local, prompt, 6)
        w = strata.Worker(m, listen="127.0.0.1:0", n_threads=1, heartbeat_ms=HEARTBEAT_MS,
                          peer_timeout_ms=PEER_TIMEOUT_MS, log=lines.append)
        try:
            port = w.port
            assert 0 < port < 65536
            w.start()
            addrs = [f"127.0.0.1:{port}", workers[name][1].address]
            with strata.Pipeline(m, workers=addrs, layers="0:2,2:5,5:6", n_ctx=N_CTX, n_threads=1, n_batch=8, wire_dtype="f32",
                                 heartbeat_ms=HEARTBEAT_MS, peer_timeout_ms=PEER_TIMEOUT_MS) as p:
                got = greedy_trace(p.session(), prompt, 6)
            _assert_same_trace(got, want, "in-process worker")
        finally:
            w.close()
        assert w.closed
    assert lines, "the log callback received nothing"


def test_a_gpu_worker_serves_its_stage_or_says_why_not(models, workers):
    """strata.Worker(device="cuda"): without a usable GPU it is refused at creation, naming why;
    with one it serves the middle stage and the logits stay within the GPU's stated tolerance of
    one CPU process (f16 prefill products: ~2% relative RMS, as test_session_device checks)."""
    name = "llama-iq1_s-3shards"  # head dim 64, IQ1_S: a model the GPU kernels take
    with strata.Model(models[name][0]) as m:
        prompt = _prompt(m.vocab.n_vocab, 24, 9)
        with m.session(n_ctx=N_CTX, n_threads=1) as local:
            local.decode(prompt)
            want = local.logits[0]
        try:
            w = strata.Worker(m, listen="127.0.0.1:0", device="cuda", heartbeat_ms=HEARTBEAT_MS,
                              peer_timeout_ms=PEER_TIMEOUT_MS)
        except strata.StrataError as e:
            assert strata.Status(e.status) == strata.Status.UNSUPPORTED, e
            assert "CUDA" in e.message, e.message  # no backend, or the CUDA runtime's reason
            return
        try:
            w.start()
            addrs = [f"127.0.0.1:{w.port}", workers[name][1].address]
            with strata.Pipeline(m, workers=addrs, layers="0:1,1:4,4:5", n_ctx=N_CTX, n_threads=1, n_batch=8,
                                 wire_dtype="f32", heartbeat_ms=HEARTBEAT_MS, peer_timeout_ms=PEER_TIMEOUT_MS) as p:
                stages = p.plan()["stages"]
                assert stages[1]["reported"]["backend"] == "cuda", stages[1]
                s = p.session()
                s.decode(prompt)
                got = s.logits[0]
        finally:
            w.close()
        assert np.all(np.isfinite(got))
        assert np.linalg.norm(got - want) / np.linalg.norm(want) < 0.05


def test_pipeline_arguments_are_checked_before_connecting(models):
    with strata.Model(models["llama-f32"][0]) as m:
        with pytest.raises(ValueError):
            strata.Pipeline(m, workers=[])
        for bad in ("0:2,2:4", "0:2,3:6,6:6", "0:3,2:4,4:6", "zero:2,2:4,4:6", "0:2,2:4,4:7", "0:2,2:2,2:6"):
            with pytest.raises(strata.StrataError) as e:
                strata.Pipeline(m, workers=["127.0.0.1:1", "127.0.0.1:2"], layers=bad, connect_timeout_ms=500)
            assert e.value.status == strata.Status.INVALID_ARGUMENT, (bad, e.value)  # checked before dialing
        with pytest.raises(strata.StrataError) as e:
            strata.Pipeline(m, workers=["127.0.0.1:1"], connect_timeout_ms=500)  # nobody listens on port 1
        assert e.value.status in (strata.Status.IO, strata.Status.STAGE_FAILED), e.value
        assert "127.0.0.1:1" in e.value.message, e.value.message
        with pytest.raises(strata.StrataError) as e:
            strata.Pipeline(m, workers=["no-port-here"])
        assert e.value.status == strata.Status.INVALID_ARGUMENT and "no-port-here" in e.value.message, e.value



def test_bad_pipeline_and_worker_parameters_are_refused_by_name(models, tmp_path):
    """Every setting is checked before anything is dialed or bound, and the error names it."""
    empty_key = tmp_path / "empty.key"
    empty_key.write_bytes(b"")
    big_key = tmp_path / "big.key"
    big_key.write_bytes(b"k" * ((1 << 20) + 1))
    with strata.Model(models["llama-f32"][0]) as m:
        bad_heads = [
            (dict(key_file=str(empty_key)), "empty"),
            (dict(key_file=str(big_key)), "1 MiB"),
            (dict(n_batch=0), "n_batch"),
            (dict(heartbeat_ms=1000, peer_timeout_ms=1000), "peer_timeout_ms"),
            (dict(heartbeat_ms=0), "heartbeat_ms"),
            (dict(n_ctx=-1), "n_ctx"),
        ]
        for kwargs, named in bad_heads:
            with pytest.raises(strata.StrataError) as e:
                strata.Pipeline(m, workers=["127.0.0.1:1"], connect_timeout_ms=500, **kwargs)
            assert e.value.status in (strata.Status.INVALID_ARGUMENT, strata.Status.IO), (kwargs, e.value)
            assert named in e.value.message, (kwargs, e.value.message)
        with pytest.raises(strata.StrataError) as e:  # a file that does not exist: not_found, named
            strata.Pipeline(m, workers=["127.0.0.1:1"], key_file=str(tmp_path / "missing.key"))
        assert e.value.status == strata.Status.NOT_FOUND and "missing.key" in e.value.message, e.value
        with pytest.raises(ValueError):
            strata.Pipeline(m, workers=["127.0.0.1:1"], wire_dtype="f8")
        bad_workers = [
            (dict(listen="nowhere"), "nowhere"),
            (dict(key_file=str(empty_key)), "empty"),
            (dict(listen="10.255.255.1:0"), "10.255.255.1"),  # not loopback, no key: refused, or not bindable
        ]
        for kwargs, named in bad_workers:
            with pytest.raises(strata.StrataError) as e:
                strata.Worker(m, **kwargs)
            assert named in e.value.message, (kwargs, e.value.message)


@pytest.mark.parametrize("wire,tolerance", [("f16", 2e-3), ("bf16", 2e-2)])
def test_half_precision_hidden_states_halve_the_bytes_within_a_stated_tolerance(models, workers, wire, tolerance):
    """Hidden states as f16 (the default) or bf16 between stages: every hop carries half the bytes
    of f32, and the logits stay within `tolerance` relative RMS of one process (f16 keeps 11
    significant bits, bf16 8; the next layer's RMSNorm sees the rounded residual)."""
    name = "llama-f32"
    with strata.Model(models[name][0]) as m:
        prompt = _prompt(m.vocab.n_vocab, 20, seed=11)
        with m.session(n_ctx=N_CTX, n_threads=1) as local:
            local.decode(prompt, all_logits=True)
            want = local.logits
        sent = {}
        for dtype in (wire, "f32"):
            with _pipeline(m, workers[name], layers="0:2,2:4,4:6", n_batch=8, wire_dtype=dtype) as p:
                assert p.plan()["wire_dtype"] == dtype
                with p.session() as s:
                    s.decode(prompt, all_logits=True)
                    got = s.logits
                stats = json.loads(p.stats_json())
                sent[dtype] = stats["links"][0]["bytes_sent"]  # head -> stage 1: hidden states only
            rel = float(np.sqrt(np.mean((got - want) ** 2)) / np.sqrt(np.mean(want ** 2)))
            print(f"wire {dtype}: relative RMS logit difference {rel:.2e}, {sent[dtype]} bytes to stage 1")
            if dtype == "f32":
                assert rel == 0.0
            else:
                assert 0.0 < rel < tolerance
    assert sent[wire] < 0.6 * sent["f32"], sent


def test_streaming_generate_moves_token_ids_not_logits(models, workers):
    """Session.generate (the Python streaming path) draws on the last stage through
    decode_sample: per generated token the last stage sends back a few dozen bytes, never a row
    of logits, and the tokens are those of one process."""
    name = "llama-f32"
    with strata.Model(models[name][0]) as m:
        n_vocab = m.vocab.n_vocab
        with m.session(n_ctx=N_CTX, n_threads=1, temperature=0.0) as local:
            want = "".join(local.generate("Hello", max_tokens=12, stop_at_end_of_generation=False))
        with _pipeline(m, workers[name], layers="0:2,2:4,4:6") as p:
            with p.session() as s:
                s.set_sampling(temperature=0.0)
                before = json.loads(p.stats_json())["links"][-1]["bytes_received"]
                gen = s.generate("Hello", max_tokens=12, stop_at_end_of_generation=False)
                got = "".join(gen)
                after = json.loads(p.stats_json())["links"][-1]["bytes_received"]
    assert got == want
    per_token = (after - before) / max(1, len(gen.tokens))
    print(f"last stage -> head: {per_token:.0f} bytes per generated token (a logits row is {4 * n_vocab})")
    assert per_token < 4 * n_vocab / 4
