"""A bounded load test of strata-server on loopback: many concurrent streams, clients killed mid-
stream, and (through a three-stage pipeline) a worker killed mid-stream. Bounded in count (a few
dozen requests) and in time (every client has a deadline; the whole test about 30 s on 2 cores).

What must hold: no crash, every request ends with an answer or a status (an HTTP error or an error
event in its stream, never a hang), no slot leaks (/metrics back to idle), every request that
completes gets exactly the tokens it gets alone, and the server serves again once a restarted
worker is back. The model is synthetic (strata-mkmodel, byte-level BPE): the test is about the
server, not the text."""
from __future__ import annotations

import concurrent.futures
import http.client
import json
import subprocess
import time
from pathlib import Path

import pytest

from pipeline_util import WorkerPool, build_dir, skip_unless_pipelines
from server_util import API_KEY, Server, open_stream

CLIENT_DEADLINE_S = 60.0


@pytest.fixture(scope="module")
def model(tmp_path_factory) -> Path:
    path = tmp_path_factory.mktemp("load") / "llama-tiny.gguf"
    subprocess.run([str(build_dir() / "bin" / "strata-mkmodel"), "--arch", "llama", "--preset", "tiny",
                    "--n-layer", "4", "--type", "q8_0", "--vocab", "bpe", "--seed", "17", "-o", str(path)],
                   check=True, capture_output=True)
    return path


def body(i: int, max_tokens: int) -> dict:
    """Request i: its own prompt and seed, sampled (so slots would visibly cross-talk)."""
    return {"prompt": f"request {i}: once upon a time", "max_tokens": max_tokens, "temperature": 0.8,
            "top_k": 40, "seed": 1000 + i, "stream": True, "stream_options": {"include_usage": True}}


def stream(port: int, request: dict, key: str | None = API_KEY) -> dict:
    """One streamed completion to its end: {"status", "text", "usage", "error", "done"}."""
    conn = http.client.HTTPConnection("127.0.0.1", port, timeout=CLIENT_DEADLINE_S)
    headers = {"Content-Type": "application/json"}
    if key:
        headers["Authorization"] = f"Bearer {key}"
    conn.request("POST", "/v1/completions", body=json.dumps(request), headers=headers)
    r = conn.getresponse()
    out = {"status": r.status, "text": "", "usage": None, "error": None, "done": False}
    if r.status != 200:
        out["error"] = json.loads(r.read())["error"]["message"]
        conn.close()
        return out
    for raw in r:
        line = raw.decode("utf-8").strip()
        if not line.startswith("data: "):
            continue
        if line == "data: [DONE]":
            out["done"] = True
            break
        event = json.loads(line[6:])
        if "error" in event:
            out["error"] = event["error"]["message"]
            continue
        out["usage"] = event.get("usage") or out["usage"]
        for c in event.get("choices", []):
            out["text"] += c.get("text") or ""
    conn.close()
    return out


def stream_then_vanish(port: int, request: dict, after_events: int) -> int:
    """Reads a few events of a stream, then closes the socket without a word; the events seen."""
    s = open_stream(port, request, CLIENT_DEADLINE_S)
    got = b""
    while got.count(b"data: ") < after_events:
        chunk = s.recv(4096)
        if not chunk:
            break
        got += chunk
    s.close()
    return got.count(b"data: ")


def test_concurrent_streams_and_vanishing_clients_leave_no_slot_behind(model, tmp_path):
    s = Server([model], ["--parallel", "4", "--queue", "32", "--ctx", "1024", "--threads", "2",
                         "--api-key", API_KEY, "--prefill-chunk", "8"], tmp_path / "server.log")
    try:
        s.wait_healthy()
        n, killed = 12, {3, 8}
        t0 = time.monotonic()
        with concurrent.futures.ThreadPoolExecutor(n) as pool:
            # The vanishing ones ask for far more than they read, so that they are still running
            # when their client goes.
            futures = {i: (pool.submit(stream_then_vanish, s.port, body(i, 900), 3) if i in killed
                           else pool.submit(stream, s.port, body(i, 48))) for i in range(n)}
            results = {i: f.result(timeout=CLIENT_DEADLINE_S) for i, f in futures.items()}
        elapsed = time.monotonic() - t0
        assert elapsed < CLIENT_DEADLINE_S
        for i, r in results.items():
            if i in killed:
                assert r >= 1, f"request {i} saw no event before it vanished"
                continue
            assert r["status"] == 200 and r["done"] and r["error"] is None, (i, r)
            assert 0 < r["usage"]["completion_tokens"] <= 48, (i, r["usage"])  # fewer: it sampled an eos
        m = s.wait_idle(5)
        assert m['strata_requests_total{endpoint="/v1/completions",status="499"}'] == len(killed)
        assert m['strata_requests_total{endpoint="/v1/completions",status="200"}'] == n - len(killed)
        # Each answer is exactly the one the request gets alone, on an idle server.
        for i in sorted(set(range(n)) - killed)[:4]:
            alone = stream(s.port, body(i, 48))
            assert (alone["text"], alone["usage"]) == (results[i]["text"], results[i]["usage"]), i
        s.wait_idle(5)
        assert s.proc.poll() is None
        assert s.terminate() == 0, s.log_path.read_text()
    finally:
        s.kill()


def test_a_worker_killed_mid_stream_fails_its_requests_with_a_status_and_serving_resumes(model, tmp_path):
    skip_unless_pipelines(str(model))
    pool = WorkerPool(tmp_path, threads=1)
    s = None
    try:
        workers = pool.spawn_n([model], 2)
        s = Server([model], ["--parallel", "3", "--queue", "16", "--ctx", "512", "--threads", "1",
                             "--api-key", API_KEY, *sum((["--worker", w.address] for w in workers), [])],
                   tmp_path / "pipe.log")
        s.wait_healthy()
        reference = stream(s.port, body(0, 16))
        assert reference["status"] == 200 and reference["done"], reference

        n = 6
        with concurrent.futures.ThreadPoolExecutor(n) as ex:
            futures = [ex.submit(stream, s.port, body(i, 400)) for i in range(n)]
            # Once every slot is decoding, stage 3 dies.
            end = time.monotonic() + 20
            while s.metrics()["strata_slots_active"] < 3 and time.monotonic() < end:
                time.sleep(0.02)
            port = workers[1].port
            workers[1].kill()
            results = [f.result(timeout=CLIENT_DEADLINE_S) for f in futures]
        failed = [r for r in results if r["error"] is not None]
        assert failed, "killing a stage mid-stream failed no request"
        for r in results:
            if r["error"] is None:
                assert r["status"] == 200 and r["done"], r  # finished before the stage died
            else:
                assert r["status"] in (200, 502), r  # an error event in a stream that began, or a 502
                assert "stage" in r["error"], r
        assert s.proc.poll() is None, "the server died with its stage"
        s.wait_idle(10)

        pool.respawn_on_port([model], port)
        # Each slot reconnects on its next request; a few may still see the stage come back.
        after = [stream(s.port, body(0, 16)) for _ in range(8)]
        served = [r for r in after if r["status"] == 200 and r["error"] is None]
        assert len(served) >= 5, f"the server did not serve again once the worker was back: {after}"
        assert all(r["text"] == reference["text"] for r in served), (reference["text"], [(r["status"], r["text"], r["error"]) for r in after])
        s.wait_idle(5)
        assert s.terminate() == 0, s.log_path.read_text()
    finally:
        if s:
            s.kill()
        pool.close()
