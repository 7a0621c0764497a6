"""strata-server driven as people drive an OpenAI-compatible server: the real `openai` client for
chat and completions (streamed and not), raw HTTP for every bad input, and the server's own
/metrics to see that slots are freed. The model is SmolLM2-135M-Instruct (skipped when the
package is not installed); /tokenize and /detokenize are also checked on a synthetic model.

Every expected figure comes from strata itself (the Python bindings over the same library): token
counts from Model.tokenize, greedy answers from the same server alone."""
from __future__ import annotations

import concurrent.futures
import http.client
import json
import signal
import subprocess
import threading
import time
from pathlib import Path

import pytest

import strata
from pipeline_util import WorkerProc, build_dir, skip_unless_pipelines
from server_util import API_KEY, Server, open_stream, server_binary, smollm2_path

@pytest.fixture(scope="module")
def smol_model():
    with strata.Model(str(smollm2_path())) as m:
        yield m


@pytest.fixture(scope="module")
def server(tmp_path_factory):
    path = smollm2_path()
    s = Server([path], ["--parallel", "4", "--ctx", "512", "--threads", "2", "--api-key", API_KEY,
                        "--max-tokens-limit", "256", "--max-body-bytes", "65536", "--prefill-chunk", "16"],
               tmp_path_factory.mktemp("server") / "server.log")
    s.wait_healthy()
    yield s
    assert s.terminate() == 0, s.log_path.read_text()


PARIS_CHAT = [{"role": "system", "content": "You are a helpful assistant."},
              {"role": "user", "content": "What is the capital of France?"}]


def chat_prompt_tokens(model, messages) -> int:
    return len(model.tokenize(model.apply_chat_template(messages), add_special=True, parse_special=True))


# --- the openai client ---

def test_greedy_chat_answers_paris_with_exact_usage(server, smol_model):
    r = server.client().chat.completions.create(model="smollm2", messages=PARIS_CHAT, temperature=0, max_tokens=32)
    choice = r.choices[0]
    assert "Paris" in choice.message.content, choice.message.content
    assert choice.message.role == "assistant"
    assert choice.finish_reason == "stop"  # the answer ends with <|im_end|>, well before 32 tokens
    assert r.object == "chat.completion" and r.model == "smollm2"
    assert r.usage.prompt_tokens == chat_prompt_tokens(smol_model, PARIS_CHAT)
    # Without the end-of-turn token, the answer's tokens are the completion's.
    answer_ids = smol_model.tokenize(choice.message.content, add_special=False)
    assert r.usage.completion_tokens == len(answer_ids)
    assert r.usage.total_tokens == r.usage.prompt_tokens + r.usage.completion_tokens


def test_streamed_chat_is_the_same_answer_in_chunks(server):
    c = server.client()
    whole = c.chat.completions.create(model="m", messages=PARIS_CHAT, temperature=0, max_tokens=32)
    chunks = list(c.chat.completions.create(model="m", messages=PARIS_CHAT, temperature=0, max_tokens=32,
                                            stream=True, stream_options={"include_usage": True}))
    assert all(ch.object == "chat.completion.chunk" for ch in chunks)
    assert chunks[0].choices[0].delta.role == "assistant"
    text = "".join(ch.choices[0].delta.content or "" for ch in chunks if ch.choices)
    assert text == whole.choices[0].message.content
    finishes = [ch.choices[0].finish_reason for ch in chunks if ch.choices and ch.choices[0].finish_reason]
    assert finishes == ["stop"]
    assert chunks[-1].choices == [] and chunks[-1].usage.completion_tokens == whole.usage.completion_tokens


def test_completion_counts_tokens_and_stops_at_max_tokens(server, smol_model):
    prompt = "The capital of France is"
    c = server.client()
    r = c.completions.create(model="m", prompt=prompt, temperature=0, max_tokens=8)
    assert r.object == "text_completion"
    assert r.choices[0].text.startswith(" Paris"), r.choices[0].text
    assert r.choices[0].finish_reason == "length"
    assert r.usage.prompt_tokens == len(smol_model.tokenize(prompt, add_special=True, parse_special=True))
    assert r.usage.completion_tokens == 8
    streamed = list(c.completions.create(model="m", prompt=[prompt], temperature=0, max_tokens=8, stream=True))
    assert "".join(ch.choices[0].text for ch in streamed) == r.choices[0].text
    assert streamed[-1].choices[0].finish_reason == "length"


def test_a_stop_string_ends_the_text_before_it(server):
    c = server.client()
    full = c.completions.create(model="m", prompt="The capital of France is", temperature=0, max_tokens=12).choices[0]
    word = full.text.split()[2]  # a word well inside the greedy continuation
    cut = full.text.index(word)
    for stream in (False, True):
        if stream:
            chunks = list(c.completions.create(model="m", prompt="The capital of France is", temperature=0,
                                               max_tokens=12, stop=[word, "zzzz"], stream=True))
            text = "".join(ch.choices[0].text for ch in chunks)
            reason = chunks[-1].choices[0].finish_reason
        else:
            r = c.completions.create(model="m", prompt="The capital of France is", temperature=0, max_tokens=12,
                                     stop=word).choices[0]
            text, reason = r.text, r.finish_reason
        assert text == full.text[:cut], (stream, text, full.text)
        assert reason == "stop"


def test_seeded_sampling_is_reproducible(server):
    c = server.client()
    kw = dict(model="m", prompt="Once upon a time", temperature=1.0, top_p=0.95, max_tokens=24)
    a = c.completions.create(seed=1234, **kw).choices[0].text
    b = c.completions.create(seed=1234, **kw).choices[0].text
    others = {c.completions.create(seed=s, **kw).choices[0].text for s in (1, 2, 3)}
    assert a == b
    assert len(others | {a}) > 1, "four seeds gave one text: the seed is not used"
    # Sampling extensions are accepted beside the OpenAI fields.
    r = c.completions.create(seed=7, extra_body={"top_k": 20, "min_p": 0.05, "repeat_penalty": 1.1}, **kw)
    assert r.choices[0].text


def test_logprobs_describe_every_generated_token(server):
    c = server.client()
    r = c.chat.completions.create(model="m", messages=PARIS_CHAT, temperature=0, max_tokens=12, logprobs=True,
                                  top_logprobs=3)
    content = r.choices[0].logprobs.content
    assert len(content) == r.usage.completion_tokens
    assert "".join(t.token for t in content) == r.choices[0].message.content
    for t in content:
        assert len(t.top_logprobs) == 3
        lps = [x.logprob for x in t.top_logprobs]
        assert lps == sorted(lps, reverse=True) and lps[0] <= 0
        # Greedy: the chosen token is the most likely one.
        assert t.token == t.top_logprobs[0].token and t.logprob == pytest.approx(lps[0], abs=1e-5)
        assert bytes(t.bytes) == t.token.encode()
    comp = c.completions.create(model="m", prompt="The capital of France is", temperature=0, max_tokens=4, logprobs=2)
    lp = comp.choices[0].logprobs
    assert len(lp.tokens) == 4 and len(lp.token_logprobs) == 4 and all(len(t) <= 2 for t in lp.top_logprobs)
    assert "".join(lp.tokens) == comp.choices[0].text
    assert lp.text_offset[0] == 0 and lp.text_offset[1] == len(lp.tokens[0].encode())


def test_concurrent_clients_get_exactly_what_they_get_alone(server):
    c = server.client()
    requests = [
        dict(prompt="The capital of France is", temperature=0, max_tokens=20),
        dict(prompt="Once upon a time", temperature=0.8, seed=99, max_tokens=20),
        dict(prompt="def fibonacci(n):", temperature=0, max_tokens=20),
        dict(prompt="A short list of fruits: apples, pears,", temperature=1.0, seed=5, top_p=0.9, max_tokens=20),
    ]

    def run(kw):
        r = c.completions.create(model="m", **kw)
        return r.choices[0].text, r.usage.completion_tokens

    alone = [run(kw) for kw in requests]
    for _ in range(2):
        with concurrent.futures.ThreadPoolExecutor(4) as pool:
            together = list(pool.map(run, requests))
        assert together == alone
    server.wait_idle(5)


def test_models_and_metrics_report_the_server(server):
    status, _, body = server.request("GET", "/v1/models")
    assert status == 200
    models = json.loads(body)
    assert models["object"] == "list" and models["data"][0]["id"] == smollm2_path().name
    assert models["data"][0]["meta"]["parallel"] == 4 and models["data"][0]["meta"]["n_ctx"] == 512
    m = server.wait_idle(5)
    assert m["strata_slots_total"] == 4 and m["strata_model_loaded"] == 1
    assert m["strata_kv_cache_tokens_capacity"] == 4 * 512
    assert m['strata_requests_total{endpoint="/v1/models",status="200"}'] >= 1
    assert m["strata_generated_tokens_total"] > 0 and m["strata_prompt_tokens_total"] > 0


# --- raw HTTP: bad input ---

def assert_error(status, body, want_status, param=None):
    assert status == want_status, body
    err = json.loads(body)["error"]
    assert set(err) == {"message", "type", "param", "code"} and err["message"], err
    if param is not None:
        assert err["param"] == param, err
    return err


@pytest.mark.parametrize("path,body,param", [
    ("/v1/completions", b'{"prompt": "hi", ', None),
    ("/v1/completions", b'["not", "an", "object"]', None),
    ("/v1/completions", b'{"prompt": "hi", "temperature": 2e444}', None),  # past a double (found by the fuzzer)
    ("/v1/completions", {"prompt": 42}, "prompt"),
    ("/v1/completions", {"prompt": ["a", "b"]}, "prompt"),
    ("/v1/completions", {"prompt": "hi", "temperature": "hot"}, "temperature"),
    ("/v1/completions", {"prompt": "hi", "max_tokens": "ten"}, "max_tokens"),
    ("/v1/completions", {"prompt": "hi", "max_tokens": 0}, "max_tokens"),
    ("/v1/completions", {"prompt": "hi", "stream": "yes"}, "stream"),
    ("/v1/completions", {"prompt": "hi", "stop": [1, 2]}, "stop"),
    ("/v1/completions", {"prompt": "hi", "n": 2}, "n"),
    ("/v1/completions", {"prompt": "hi", "seed": 1.5}, "seed"),
    ("/v1/completions", {"prompt": "hi", "top_p": 2}, "top_p"),
    ("/v1/chat/completions", {"messages": "hello"}, "messages"),
    ("/v1/chat/completions", {"messages": [{"content": "no role"}]}, "messages[0].role"),
    ("/v1/chat/completions", {"messages": PARIS_CHAT, "logprobs": 1}, "logprobs"),
    ("/v1/chat/completions", {"messages": PARIS_CHAT, "top_logprobs": 50, "logprobs": True}, "top_logprobs"),
    ("/tokenize", {"content": 5}, "content"),
    ("/detokenize", {"tokens": ["a"]}, "tokens"),
    ("/detokenize", {"tokens": [10 ** 9]}, "tokens"),
])
def test_bad_requests_get_a_400_error_object(server, path, body, param):
    status, _, payload = server.request("POST", path, body)
    assert_error(status, payload, 400, param)


def test_prompt_or_max_tokens_past_the_context_or_limit_is_refused(server):
    long_prompt = "hello " * 600  # > 512 tokens
    err = assert_error(*server.request("POST", "/v1/completions", {"prompt": long_prompt})[::2], 400, "prompt")
    assert err["code"] == "context_length_exceeded"
    err = assert_error(*server.request("POST", "/v1/completions", {"prompt": "hi", "max_tokens": 300})[::2], 400,
                       "max_tokens")
    assert "limit" in err["message"]
    err = assert_error(*server.request("POST", "/v1/chat/completions",
                                       {"messages": [{"role": "user", "content": "hello " * 300}],
                                        "max_tokens": 250})[::2], 400, "max_tokens")
    assert err["code"] == "context_length_exceeded"


def test_a_body_over_the_limit_is_413(server):
    body = json.dumps({"prompt": "x" * 100_000})
    status, _, payload = server.request("POST", "/v1/completions", body)
    assert_error(status, payload, 413)


def test_missing_or_wrong_api_key_is_401(server):
    for key in (None, "wrong"):
        status, headers, payload = server.request("POST", "/v1/completions", {"prompt": "hi"}, key=key)
        assert_error(status, payload, 401)
    assert server.request("GET", "/v1/models", key="wrong")[0] == 401
    assert server.request("GET", "/health", key=None)[0] == 200  # health needs no key


def test_unknown_route_is_404_and_wrong_method_405(server):
    assert_error(*server.request("GET", "/v1/nothing")[::2], 404)
    status, headers, payload = server.request("GET", "/v1/completions")
    assert_error(status, payload, 405)
    assert headers.get("Allow") == "POST"
    assert_error(*server.request("POST", "/health", {})[::2], 405)


def test_keep_alive_serves_several_requests_on_one_connection(server):
    conn = http.client.HTTPConnection("127.0.0.1", server.port, timeout=30)
    for text in ("one", "two words"):
        conn.request("POST", "/tokenize", body=json.dumps({"content": text}),
                     headers={"Authorization": f"Bearer {API_KEY}"})
        r = conn.getresponse()
        assert r.status == 200 and json.loads(r.read())["tokens"]
    conn.close()


def test_a_client_that_disconnects_mid_stream_frees_its_slot(server):
    s = open_stream(server.port, {"prompt": "Once upon a time", "max_tokens": 250, "stream": True,
                                  "temperature": 0.7, "seed": 3})
    got = b""
    while got.count(b"data: ") < 3:
        got += s.recv(4096)
    assert server.metrics()["strata_slots_active"] == 1
    generated_before = server.metrics()["strata_generated_tokens_total"]
    s.close()
    m = server.wait_idle(3)
    # Freed at once, not after the 250 tokens it asked for.
    assert m["strata_generated_tokens_total"] - generated_before < 200
    assert m['strata_requests_total{endpoint="/v1/completions",status="499"}'] >= 1


def test_a_client_that_disconnects_while_waiting_frees_its_slot(server):
    s = open_stream(server.port, {"prompt": "Once upon a time", "max_tokens": 250, "temperature": 0.7, "seed": 3})
    end = time.monotonic() + 10
    while server.metrics()["strata_slots_active"] < 1 and time.monotonic() < end:
        time.sleep(0.02)
    s.close()
    server.wait_idle(3)


# --- load: a full queue, a deadline, SIGTERM ---

def test_full_queue_is_503_with_retry_after_and_sigterm_drains(tmp_path):
    s = Server([smollm2_path()], ["--parallel", "1", "--queue", "1", "--ctx", "512", "--threads", "2"],
               tmp_path / "queue.log")
    try:
        s.wait_healthy()
        slow = {"prompt": "Once upon a time", "max_tokens": 400, "stream": True, "temperature": 0.7, "seed": 1}
        running = open_stream(s.port, slow)
        running.recv(1)  # its stream has begun: it holds the slot
        waiting = open_stream(s.port, slow)
        end = time.monotonic() + 10
        while s.metrics()["strata_queue_length"] < 1 and time.monotonic() < end:
            time.sleep(0.02)
        status, headers, payload = s.request("POST", "/v1/completions", {"prompt": "hi"}, key=None)
        err = assert_error(status, payload, 503)
        assert headers.get("Retry-After") == "1" and err["code"] == "queue_full"
        running.close()
        waiting.close()
        s.wait_idle(5)
        # SIGTERM with a request in flight: it is finished, then the server exits 0.
        results = {}

        def short_request():
            results["r"] = s.request("POST", "/v1/completions", {"prompt": "The capital of France is",
                                                                 "temperature": 0, "max_tokens": 24}, key=None)

        t = threading.Thread(target=short_request)
        t.start()
        end = time.monotonic() + 10
        while s.metrics()["strata_slots_active"] < 1 and time.monotonic() < end:
            time.sleep(0.01)
        s.proc.send_signal(signal.SIGTERM)
        t.join(30)
        assert results["r"][0] == 200, results
        # Finished, not cut off: all 24 tokens, or fewer ending at the end-of-generation token
        # (which greedy continuation after "Paris." comes depends on near-ties in the logits).
        answer = json.loads(results["r"][2])
        finish, n = answer["choices"][0]["finish_reason"], answer["usage"]["completion_tokens"]
        assert (finish == "length" and n == 24) or (finish == "stop" and 0 < n < 24), answer
        assert s.terminate() == 0
    finally:
        s.kill()


def test_a_request_past_the_deadline_ends_with_504(tmp_path):
    s = Server([smollm2_path()], ["--ctx", "512", "--threads", "2", "--timeout-s", "0.5"], tmp_path / "deadline.log")
    try:
        s.wait_healthy()
        status, _, payload = s.request("POST", "/v1/completions", {"prompt": "Once upon a time", "max_tokens": 400},
                                       key=None)
        err = assert_error(status, payload, 504)
        assert err["code"] == "timeout"
        sock = open_stream(s.port, {"prompt": "Once upon a time", "max_tokens": 400, "stream": True})
        data = b""
        while b"[DONE]" not in data:
            chunk = sock.recv(65536)
            assert chunk, data
            data += chunk
        sock.close()
        assert b'"code":"timeout"' in data
        s.wait_idle(3)
        assert s.terminate() == 0
    finally:
        s.kill()


# --- a synthetic model: tokenizer endpoints, no chat template ---

def test_tokenize_detokenize_round_trip_on_a_synthetic_model(tmp_path):
    path = tmp_path / "tiny.gguf"
    subprocess.run([str(build_dir() / "bin" / "strata-mkmodel"), "--arch", "llama", "--preset", "tiny",
                    "--type", "q8_0", "--vocab", "bpe", "-o", str(path)], check=True, capture_output=True)
    s = Server([path], ["--ctx", "128", "--threads", "1"], tmp_path / "tiny.log")
    try:
        s.wait_healthy()
        with strata.Model(str(path)) as m:
            for text in ("Hello, world!", "naïve café ☕ 123", "  spaces\tand\nnewlines  "):
                status, _, body = s.request("POST", "/tokenize", {"content": text, "add_special": False}, key=None)
                assert status == 200
                tokens = json.loads(body)["tokens"]
                assert tokens == m.tokenize(text, add_special=False, parse_special=True)
                status, _, body = s.request("POST", "/detokenize", {"tokens": tokens}, key=None)
                assert status == 200 and json.loads(body)["content"] == text
            with_bos = json.loads(s.request("POST", "/tokenize", {"content": "hi", "add_special": True},
                                            key=None)[2])["tokens"]
            assert with_bos == m.tokenize("hi", add_special=True, parse_special=True)
        # No chat template in the file and no --chat-format: a clear 400.
        status, _, body = s.request("POST", "/v1/chat/completions",
                                    {"messages": [{"role": "user", "content": "hi"}]}, key=None)
        err = assert_error(status, body, 400, "messages")
        assert "chat template" in err["message"] and "--chat-format" in err["message"]
        # A completion of random weights still has exact usage and at most max_tokens tokens.
        status, _, body = s.request("POST", "/v1/completions", {"prompt": "abc", "max_tokens": 5, "temperature": 0},
                                    key=None)
        assert status == 200, body
        usage = json.loads(body)["usage"]
        assert usage["completion_tokens"] <= 5 and usage["prompt_tokens"] == len(m_tokens(path, "abc"))
        assert s.terminate() == 0
    finally:
        s.kill()


def m_tokens(path: Path, text: str) -> list[int]:
    with strata.Model(str(path)) as m:
        return m.tokenize(text, add_special=True, parse_special=True)


# --- a three-stage loopback pipeline ---

@pytest.mark.parametrize("transport", ["tcp", pytest.param("rdma", marks=pytest.mark.skipif(
    not strata.transport_available("rdma"), reason="the library was built without UCX"))])
def test_a_pipeline_serves_the_same_answer_and_survives_a_dead_stage(server, tmp_path, transport):
    path = smollm2_path()
    skip_unless_pipelines(str(path))
    prompt = {"prompt": "The capital of France is", "temperature": 0, "max_tokens": 8}
    local = json.loads(server.request("POST", "/v1/completions", prompt)[2])["choices"][0]["text"]
    workers = [WorkerProc([str(path)], tmp_path / f"worker{i}.log", threads=1, transport=transport).wait_listening()
               for i in range(2)]
    s = None
    try:
        s = Server([path], ["--parallel", "2", "--ctx", "256", "--threads", "1", "--worker-transport", transport,
                            *sum((["--worker", w.address] for w in workers), [])], tmp_path / "pipe.log")
        s.wait_healthy()
        with concurrent.futures.ThreadPoolExecutor(2) as pool:
            texts = list(pool.map(lambda _: json.loads(s.request("POST", "/v1/completions", prompt, key=None)[2])
                                  ["choices"][0]["text"], range(2)))
        # The wire between stages is f16, so compare the greedy text rather than bits.
        assert texts == [local, local]
        address = workers[1].address
        workers[1].kill()
        statuses = []
        for _ in range(2):  # each slot finds the dead stage on its next request
            status, _, body = s.request("POST", "/v1/completions", prompt, key=None)
            statuses.append(status)
            if status != 200:
                assert status == 502 and "stage" in json.loads(body)["error"]["message"], body
        assert 502 in statuses
        workers[1] = WorkerProc([str(path)], tmp_path / "worker1b.log", listen=address, threads=1,
                                transport=transport).wait_listening()
        for _ in range(3):
            status, _, body = s.request("POST", "/v1/completions", prompt, key=None)
            assert status == 200, body
            assert json.loads(body)["choices"][0]["text"] == local
        s.wait_idle(5)
        assert s.terminate() == 0
    finally:
        if s:
            s.kill()
        for w in workers:
            w.kill()


# --- bad command lines and unusable model files: a clear message and a failing exit status ---

@pytest.mark.parametrize("args,rc,says", [
    (["--parallel", "0"], 2, "--parallel needs a number"),
    (["--bogus"], 2, "unknown argument '--bogus'"),
    (["--chat-format", "/nonexistent/template.jinja"], 2, "cannot read '/nonexistent/template.jinja'"),
    (["--worker-transport", "rdma"], 2, "--worker-transport and --layers need at least one --worker"),
])
def test_a_bad_command_line_is_refused_naming_the_option(tmp_path, args, rc, says):
    model = tmp_path / "tiny.gguf"
    subprocess.run([str(build_dir() / "bin" / "strata-mkmodel"), "--arch", "llama", "--preset", "tiny",
                    "--type", "q8_0", "--vocab", "bpe", "-o", str(model)], check=True, capture_output=True)
    r = subprocess.run([str(server_binary()), "--model", str(model), "--port", "0", *args],
                       capture_output=True, text=True, timeout=60)
    assert r.returncode == rc and says in r.stderr, r.stderr


def test_a_missing_or_broken_model_file_fails_naming_it(tmp_path):
    broken = tmp_path / "broken.gguf"
    broken.write_bytes(b"GGUF" + bytes([3, 0, 0, 0]) + bytes(range(92)))  # a header whose counts cannot hold
    for path, says in ((tmp_path / "missing.gguf", "cannot open"), (broken, "broken.gguf")):
        r = subprocess.run([str(server_binary()), "--model", str(path), "--port", "0"],
                           capture_output=True, text=True, timeout=60)
        assert r.returncode == 1, r.stderr
        assert "cannot load the model" in r.stderr and str(path) in r.stderr and says in r.stderr, r.stderr
    r = subprocess.run([str(server_binary()), "--port", "0"], capture_output=True, text=True, timeout=60)
    assert r.returncode == 2 and "--model FILE is required" in r.stderr, r.stderr
