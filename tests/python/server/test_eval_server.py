"""strata-eval --server and strata-bench server against a small fake OpenAI server (http.server in
a thread) whose answers the tests choose: right and wrong GSM8K and HumanEval answers, a server
slower than the client's timeout, a server failing with 500, a server that is not there. The
suites are the canonical JSONL layouts written here. One test drives the real strata-server on
SmolLM2 when both are present."""
from __future__ import annotations

import json
import os
import re
import socket
import subprocess
import threading
import time
import urllib.request
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from pathlib import Path

import pytest

import _smollm2
from _report_tools import run, tool

MODEL_ID = "fake-model"
MODELS = {"object": "list",
          "data": [{"id": MODEL_ID, "object": "model", "created": 0, "owned_by": "tests",
                    "meta": {"n_ctx": 2048, "parallel": 4}}]}

GSM8K = [
    {"question": "Tom has 1,000 apples and buys 234 more. How many apples does he have?",
     "answer": "He has 1000 + 234 = <<1000+234=1234>>1234 apples.\n#### 1,234"},
    {"question": "What is 6 times 7?", "answer": "6 * 7 = <<6*7=42>>42\n#### 42"},
]
# The fake model: right about the apples, wrong about 6 * 7.
GSM8K_REPLIES = {GSM8K[0]["question"]: "1000 plus 234 makes 1,234. The answer is 1,234.",
                 GSM8K[1]["question"]: "6 times 7 is 48."}

HUMANEVAL = [
    {"task_id": "Fake/0", "prompt": "def add(a, b):\n    \"\"\"Return a + b.\"\"\"\n",
     "canonical_solution": "    return a + b\n", "entry_point": "add",
     "test": "def check(candidate):\n    assert candidate(2, 3) == 5\n    assert candidate(-1, 1) == 0\n"},
    {"task_id": "Fake/1", "prompt": "def sub(a, b):\n    \"\"\"Return a - b.\"\"\"\n",
     "canonical_solution": "    return a - b\n", "entry_point": "sub",
     "test": "def check(candidate):\n    assert candidate(5, 3) == 2\n"},
]
# Completions continue the stub (the right body for add, a wrong one for sub, then text the
# HumanEval stops cut away); chat answers give the whole function in a code block.
CODE_COMPLETIONS = {"add": "    return a + b\n\ndef unrelated():\n    pass\n", "sub": "    return a + b\n"}
CODE_CHAT = {"add": "Here it is:\n```python\ndef add(a, b):\n    return a + b\n```\n",
             "sub": "```python\ndef sub(a, b):\n    return b - a\n```"}


def reply_for(text: str) -> str:
    for question, reply in GSM8K_REPLIES.items():
        if question in text:
            return reply
    for name in CODE_COMPLETIONS:
        if f"def {name}(" in text:
            return CODE_CHAT[name] if "code block" in text else CODE_COMPLETIONS[name]
    return "I do not know."


class FakeServer:
    """mode: "ok", "slow" (sleeps `delay` s before answering), "error500"."""

    def __init__(self, api_key: str | None = None):
        self.mode, self.delay, self.api_key = "ok", 0.0, api_key
        self.token_gap, self.first_token_delay = 0.01, 0.05
        self.requests: list[dict] = []
        self.in_flight = self.max_in_flight = 0
        self.lock = threading.Lock()
        fake = self

        class Handler(BaseHTTPRequestHandler):
            protocol_version = "HTTP/1.1"

            def log_message(self, *args):
                pass

            def _send(self, status: int, body: bytes, content_type: str = "application/json"):
                self.send_response(status)
                self.send_header("Content-Type", content_type)
                self.send_header("Content-Length", str(len(body)))
                self.send_header("Connection", "close")
                self.end_headers()
                self.wfile.write(body)

            def _error(self, status: int, message: str):
                self._send(status, json.dumps({"error": {"message": message, "type": "fake_error"}}).encode())

            def _authorized(self) -> bool:
                if fake.api_key and self.headers.get("Authorization") != f"Bearer {fake.api_key}":
                    self._error(401, "a valid API key is needed")
                    return False
                return True

            def do_GET(self):
                if not self._authorized():
                    return
                if self.path == "/v1/models":
                    self._send(200, json.dumps(MODELS).encode())
                elif self.path == "/metrics":
                    self._send(200, f"fake_requests_total {len(fake.requests)}\n".encode(), "text/plain")
                else:
                    self._error(404, f"no route {self.path}")

            def do_POST(self):
                body = json.loads(self.rfile.read(int(self.headers.get("Content-Length", "0"))) or b"{}")
                with fake.lock:
                    fake.requests.append({"path": self.path, "body": body,
                                          "authorization": self.headers.get("Authorization")})
                if not self._authorized():
                    return
                if self.path not in ("/v1/completions", "/v1/chat/completions"):
                    return self._error(404, f"no route {self.path}")
                if fake.mode == "error500":
                    return self._error(500, "the fake server failed on purpose")
                if fake.mode == "slow":
                    time.sleep(fake.delay)
                chat = self.path == "/v1/chat/completions"
                prompt = body["messages"][-1]["content"] if chat else body["prompt"]
                try:
                    if body.get("stream"):
                        self._stream(chat, body, prompt)
                    else:
                        self._complete(chat, prompt)
                except (BrokenPipeError, ConnectionResetError):
                    pass  # the client gave up (its timeout)

            def _complete(self, chat: bool, prompt: str):
                text = reply_for(prompt)
                choice = ({"index": 0, "message": {"role": "assistant", "content": text}, "finish_reason": "stop"}
                          if chat else {"index": 0, "text": text, "finish_reason": "stop"})
                usage = {"prompt_tokens": len(prompt.split()), "completion_tokens": len(text.split()),
                         "total_tokens": len(prompt.split()) + len(text.split())}
                self._send(200, json.dumps({"id": "x", "object": "chat.completion" if chat else "text_completion",
                                            "model": MODEL_ID, "choices": [choice], "usage": usage}).encode())

            def _chunk(self, data: str):
                payload = f"data: {data}\n\n".encode()
                self.wfile.write(f"{len(payload):x}\r\n".encode() + payload + b"\r\n")
                self.wfile.flush()

            def _stream(self, chat: bool, body: dict, prompt: str):
                # One word per event, max_tokens of them, every token_gap seconds (chunked encoding).
                with fake.lock:
                    fake.in_flight += 1
                    fake.max_in_flight = max(fake.max_in_flight, fake.in_flight)
                try:
                    self.send_response(200)
                    self.send_header("Content-Type", "text/event-stream")
                    self.send_header("Transfer-Encoding", "chunked")
                    self.send_header("Connection", "close")
                    self.end_headers()
                    n = int(body.get("max_tokens", 16))
                    time.sleep(fake.first_token_delay)
                    for i in range(n):
                        if i:
                            time.sleep(fake.token_gap)
                        piece = f" word{i}"
                        choice = ({"index": 0, "delta": {"content": piece}, "finish_reason": None} if chat
                                  else {"index": 0, "text": piece, "finish_reason": None})
                        self._chunk(json.dumps({"id": "x", "model": MODEL_ID, "choices": [choice]}))
                    final = ({"index": 0, "delta": {}, "finish_reason": "length"} if chat
                             else {"index": 0, "text": "", "finish_reason": "length"})
                    self._chunk(json.dumps({"id": "x", "model": MODEL_ID, "choices": [final]}))
                    if body.get("stream_options", {}).get("include_usage"):
                        self._chunk(json.dumps({"id": "x", "choices": [], "usage": {
                            "prompt_tokens": len(prompt.split()), "completion_tokens": n,
                            "total_tokens": len(prompt.split()) + n}}))
                    self._chunk("[DONE]")
                    self.wfile.write(b"0\r\n\r\n")
                finally:
                    with fake.lock:
                        fake.in_flight -= 1

        self.httpd = ThreadingHTTPServer(("127.0.0.1", 0), Handler)
        self.httpd.daemon_threads = True
        self.url = f"http://127.0.0.1:{self.httpd.server_address[1]}"
        self.thread = threading.Thread(target=self.httpd.serve_forever, daemon=True)
        self.thread.start()

    def close(self):
        self.httpd.shutdown()
        self.httpd.server_close()


@pytest.fixture
def fake():
    server = FakeServer()
    yield server
    server.close()


def write_jsonl(path: Path, records: list) -> Path:
    path.write_text("".join((r if isinstance(r, str) else json.dumps(r)) + "\n" for r in records))
    return path


def eval_report(path: Path) -> tuple[dict, dict]:
    doc = json.loads(path.read_text())
    assert doc["schema"] == "strata.server-eval/1"
    ev = doc["evaluations"][0]
    return doc, {t["id"]: t for t in ev["tasks"]}


def test_gsm8k_as_published_through_chat_with_an_api_key(tmp_path):
    server = FakeServer(api_key="sekrit")
    try:
        suite = write_jsonl(tmp_path / "gsm8k.jsonl", GSM8K)
        out = tmp_path / "gsm8k.json"
        r = run("strata-eval", suite, "-o", out, "--server", server.url + "/v1", "--api-key", "sekrit",
                "--max-tokens", "64", "--seed", "5")
        doc, tasks = eval_report(out)
        score = doc["evaluations"][0]["score"]
        assert score["n_tasks"] == 2 and score["first_pass_passed"] == 1
        assert r.stdout.strip() == score["summary"]
        right, wrong = tasks["gsm8k.jsonl:1"]["attempts"][0], tasks["gsm8k.jsonl:2"]["attempts"][0]
        assert right["verdict"] == "pass" and right["extracted_answer"] == "1234"  # "#### 1,234" is 1234
        assert wrong["verdict"] == "fail" and wrong["extracted_answer"] == "48" and "expected 42" in wrong["error"]
        assert right["output_tokens"] == len(GSM8K_REPLIES[GSM8K[0]["question"]].split())  # the server's usage
        assert tasks["gsm8k.jsonl:1"]["prompt"] == GSM8K[0]["question"]
        # The runtime is what the server says about itself; the key is never written down.
        assert doc["runtime"]["server"]["models"] == MODELS
        assert doc["runtime"]["server"]["settings"] == {"meta": MODELS["data"][0]["meta"]}
        assert doc["runtime"]["client"]["strata_version"]
        assert doc["client"] == {"api": "/v1/chat/completions", "model": MODEL_ID, "timeout_s": 600,
                                 "api_key": True}
        assert "sekrit" not in out.read_text() and "sekrit" not in out.with_suffix(".md").read_text()
        posts = [q for q in server.requests if q["path"] == "/v1/chat/completions"]
        assert len(posts) == 2 and all(q["authorization"] == "Bearer sekrit" for q in posts)
        b = posts[0]["body"]
        assert b["model"] == MODEL_ID and b["temperature"] == 0 and b["max_tokens"] == 64 and b["seed"] == 5
        assert b["stream"] is False and "stop" not in b and "top_k" not in b
        md = out.with_suffix(".md").read_text()
        assert score["summary"] in md and "gsm8k.jsonl:2" in md and server.url in md
    finally:
        server.close()


def test_a_missing_api_key_is_the_servers_401_named(tmp_path):
    server = FakeServer(api_key="sekrit")
    try:
        suite = write_jsonl(tmp_path / "gsm8k.jsonl", GSM8K[:1])
        env = {k: v for k, v in os.environ.items() if k != "OPENAI_API_KEY"}
        r = subprocess.run([str(tool("strata-eval")), str(suite), "-o", str(tmp_path / "r.json"), "--server", server.url],
                           capture_output=True, text=True, timeout=60, env=env)
        assert r.returncode == 1
        assert f"GET {server.url}/v1/models: HTTP 401" in r.stderr and "a valid API key is needed" in r.stderr
    finally:
        server.close()


@pytest.mark.parametrize("api", ["completions", "chat"])
def test_humaneval_as_published_runs_the_tests_in_the_sandbox(fake, tmp_path, api):
    suite = write_jsonl(tmp_path / "HumanEval.jsonl", HUMANEVAL)
    out = tmp_path / "he.json"
    run("strata-eval", suite, "-o", out, "--server", fake.url, "--max-tokens", "128",
        *(["--completions"] if api == "completions" else []))
    doc, tasks = eval_report(out)
    add, sub = tasks["Fake/0"]["attempts"][0], tasks["Fake/1"]["attempts"][0]
    assert add["verdict"] == "pass", add
    assert sub["verdict"] == "fail" and "AssertionError" in sub["error"]
    assert add["sandbox"]["exit_code"] == 0 and sub["sandbox"]["exit_code"] != 0
    assert doc["evaluations"][0]["score"]["first_pass_passed"] == 1
    posts = [q for q in fake.requests if q["path"].startswith("/v1/")]
    if api == "completions":
        assert all(q["path"] == "/v1/completions" for q in posts)
        assert posts[0]["body"]["prompt"] == HUMANEVAL[0]["prompt"] and "\ndef " in posts[0]["body"]["stop"]
        assert "unrelated" not in add["extracted_answer"]  # cut at HumanEval's stops
    else:
        assert all(q["path"] == "/v1/chat/completions" for q in posts) and "stop" not in posts[0]["body"]
        assert "def add(a, b):" in add["extracted_answer"] and "```" not in add["extracted_answer"]


def test_a_timeout_is_a_failure_in_the_denominator_and_retried_with_its_own_limit(fake, tmp_path):
    fake.mode, fake.delay = "slow", 1.5
    suite = write_jsonl(tmp_path / "gsm8k.jsonl", GSM8K)
    out = tmp_path / "slow.json"
    t0 = time.monotonic()
    run("strata-eval", suite, "-o", out, "--server", fake.url, "--timeout-s", "0.3",
        "--retry-timeouts", "--retry-timeout", "30")
    doc, tasks = eval_report(out)
    ev = doc["evaluations"][0]
    s = ev["score"]
    assert s["n_tasks"] == 2 and s["first_pass_verdicts"]["timeout"] == 2 and s["first_pass_passed"] == 0
    for t in tasks.values():
        first, retry = t["attempts"]
        assert first["verdict"] == "timeout" and first["timeout_s"] == 0.3
        assert f"POST {fake.url}/v1/chat/completions: no complete answer within the 0.3 s timeout" == first["error"]
        assert 0.25 < first["wall_s"] < 1.4  # abandoned at the deadline, not when the server answered
        assert retry["round"] == 1 and retry["timeout_s"] == 30 and retry["verdict"] in ("pass", "fail")
    assert tasks["gsm8k.jsonl:1"]["attempts"][1]["verdict"] == "pass"
    assert s["composite_passed"] == 1 and doc["client"]["timeout_s"] == 0.3
    assert time.monotonic() - t0 < 30


def test_a_server_error_is_an_error_verdict_with_the_servers_message(fake, tmp_path):
    fake.mode = "error500"
    suite = write_jsonl(tmp_path / "gsm8k.jsonl", GSM8K[:1])
    out = tmp_path / "e.json"
    run("strata-eval", suite, "-o", out, "--server", fake.url)
    _, tasks = eval_report(out)
    a = tasks["gsm8k.jsonl:1"]["attempts"][0]
    assert a["verdict"] == "error"
    assert a["error"] == (f"POST {fake.url}/v1/chat/completions: HTTP 500 Internal Server Error: "
                          "the fake server failed on purpose")


def free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


def test_a_server_that_is_not_there_is_named(tmp_path):
    port = free_port()
    suite = write_jsonl(tmp_path / "gsm8k.jsonl", GSM8K[:1])
    r = run("strata-eval", suite, "-o", tmp_path / "r.json", "--server", f"http://127.0.0.1:{port}", check=False)
    assert r.returncode == 1
    assert f"GET http://127.0.0.1:{port}/v1/models: cannot connect to 127.0.0.1:{port}" in r.stderr
    assert not (tmp_path / "r.json").exists()
    r = run("strata-eval", suite, "-o", tmp_path / "r.json", "--server", "https://example.invalid", check=False)
    assert r.returncode == 2 and "https is not supported" in r.stderr


@pytest.mark.parametrize("line, message", [
    ({"question": "What is 1+1?", "answer": "It is 2."}, '"answer" must end with a line "#### N" (GSM8K)'),
    ({"question": 7, "answer": "#### 7"}, '"question" must be a string'),
    ({"task_id": "X/1", "prompt": "def f():\n", "entry_point": 3, "test": "def check(c): pass\n"},
     '"entry_point" must be a string'),
    ({"task_id": "X/1", "prompt": "def f():\n", "entry_point": "f", "test": "def check(c): pass\n",
      "canonical_solution": ["no"]}, '"canonical_solution" must be a string'),
    ('{"question": "cut off', "not JSON"),
])
def test_a_malformed_line_is_named_by_file_line_and_field(fake, tmp_path, line, message):
    suite = write_jsonl(tmp_path / "bad.jsonl", [GSM8K[0], line])
    r = run("strata-eval", suite, "-o", tmp_path / "r.json", "--server", fake.url, check=False)
    assert r.returncode == 2
    assert f"{suite}:2: {message}" in r.stderr, r.stderr
    assert not [q for q in fake.requests]  # the suite is read before anything is asked


def test_bench_server_streams_concurrently_and_measures_ttft_and_itl(fake, tmp_path):
    fake.token_gap, fake.first_token_delay = 0.02, 0.1
    out, md = tmp_path / "bench.json", tmp_path / "bench.md"
    r = run("strata-bench", "server", fake.url, "--streams", "1,3", "--tokens", "12", "--json", out, "--md", md)
    doc = json.loads(out.read_text())
    assert doc["model"] == MODEL_ID and doc["server"]["models"] == MODELS
    assert doc["server"]["metrics"].startswith("fake_requests_total")
    assert [run_["streams"] for run_ in doc["runs"]] == [1, 3]
    assert fake.max_in_flight == 3  # three streams were open at once
    one, three = doc["runs"]
    for run_ in doc["runs"]:
        assert run_["failed"] == 0 and run_["token_count_source"] == "usage"
        assert run_["completion_tokens"] == 12 * run_["streams"]
        assert 0.09 < run_["ttft_s"]["p50"] < 1.0
        assert 0.015 < run_["itl_s"]["p50"] < 0.2 and run_["itl_s"]["n"] == 11 * run_["streams"]
        assert run_["aggregate_tok_s"] == pytest.approx(run_["completion_tokens"] / run_["wall_s"])
    # 12 tokens take ~0.32 s whatever the concurrency, so three streams give about three times the tokens/s.
    assert three["aggregate_tok_s"] > 1.8 * one["aggregate_tok_s"]
    bodies = [q["body"] for q in fake.requests if q["path"] == "/v1/completions"]
    assert len(bodies) == 1 + 1 + 3  # the warm-up, then 1 and 3 streams
    assert all(b["stream"] is True and b["temperature"] == 0 and b["stop"] == [] for b in bodies)
    assert [b["max_tokens"] for b in bodies] == [4, 12, 12, 12, 12]
    text = md.read_text()
    assert "| 3 |" in text and "TTFT p50 ms" in text and text == r.stdout


def test_bench_server_reports_failed_streams(fake, tmp_path):
    fake.mode = "error500"
    r = run("strata-bench", "server", fake.url, "--streams", "2", "--tokens", "4", check=False)
    assert r.returncode == 1
    assert f"POST {fake.url}/v1/completions: HTTP 500 Internal Server Error: the fake server failed on purpose" in r.stderr


def strata_server_binary() -> Path | None:
    build = Path(os.environ.get("STRATA_BUILD_DIR", ""))
    p = build / "bin" / "strata-server"
    return p if p.is_file() else None


def test_bench_server_against_strata_server_on_smollm2(tmp_path):
    binary, model = strata_server_binary(), _smollm2.find()
    if binary is None or model is None:
        pytest.skip("needs strata-server in the build folder and SmolLM2 (tests/python/_smollm2.py)")
    proc = subprocess.Popen([str(binary), "--model", str(model), "--host", "127.0.0.1", "--port", "0",
                             "--parallel", "2", "--ctx", "512", "--threads", "2"],
                            stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True)
    try:
        line = proc.stdout.readline()
        m = re.search(r"listening on (http://\S+)", line)
        assert m, f"strata-server printed {line!r}; stderr: {proc.stderr.read() if proc.poll() is not None else ''}"
        url = m.group(1)
        deadline = time.monotonic() + 120
        while True:
            try:
                with urllib.request.urlopen(url + "/health", timeout=5) as h:
                    if h.status == 200:
                        break
            except OSError:
                pass
            assert time.monotonic() < deadline and proc.poll() is None, "strata-server never became healthy"
            time.sleep(0.2)
        out = tmp_path / "bench.json"
        run("strata-bench", "server", url, "--streams", "1,2", "--tokens", "8", "--json", out, timeout=300)
        doc = json.loads(out.read_text())
        for run_ in doc["runs"]:
            assert run_["failed"] == 0
            assert 0 < run_["completion_tokens"] <= 8 * run_["streams"]
            assert run_["aggregate_tok_s"] > 0 and run_["ttft_s"]["p50"] > 0
        assert doc["server"]["metrics"] is not None
    finally:
        proc.terminate()
        try:
            proc.wait(timeout=30)
        except subprocess.TimeoutExpired:
            proc.kill()
            proc.wait()
