"""Pipelines when things go wrong: a worker killed or frozen mid-generation, a head that dies,
peers that must be refused (key, model, layer range), and malformed frames from a stranger.

Every test that needs no raw TCP socket runs twice: over tcp and over rdma (UCX, which carries
the stream over TCP or shared memory on a machine without an RDMA device), with the same
expected errors. The malformed-frame tests write raw TCP and run over tcp only; the rdma
connection's own bad-frame handling is in tests/unit/transport/test_transport_ucx.cpp.

Time bounds (the only timing assertions here): a failure must surface within the peer timeout
plus DETECT_MARGIN_S, a margin for a loaded 2-core machine; every wait is bounded so that a hang
fails the test instead of stalling the run."""
from __future__ import annotations

import os
import re
import signal
import socket
import subprocess
import sys
import textwrap
import threading
import time

import pytest

import strata
from pipeline_util import (LISTEN_TIMEOUT_S, WorkerPool, WorkerProc, crc32c, frame, frame_header,
                           generated_tokens, hello_payload, pipeline_models, plan_ranges, range_pattern)

N_CTX = 1024
HEARTBEAT_MS = 200
PEER_TIMEOUT_MS = 2000
DETECT_MARGIN_S = 3.0
LAYERS = "0:2,2:4,4:6"
PROMPT = "The three stages of a pipeline pass hidden states along "


@pytest.fixture(scope="module")
def models(tmp_path_factory):
    return pipeline_models(tmp_path_factory.mktemp("fault-models"), ["llama-f32", "qwen3-q8_0"])


TRANSPORTS = ["tcp", pytest.param("rdma", marks=pytest.mark.skipif(not strata.transport_available("rdma"),
                                                                       reason="the library was built without UCX"))]


@pytest.fixture(params=TRANSPORTS)
def pool(request, tmp_path):
    p = WorkerPool(tmp_path, heartbeat_ms=HEARTBEAT_MS, peer_timeout_ms=PEER_TIMEOUT_MS, transport=request.param)
    p.transport = request.param
    yield p
    p.close()


@pytest.fixture
def tcp_pool(tmp_path):
    p = WorkerPool(tmp_path, heartbeat_ms=HEARTBEAT_MS, peer_timeout_ms=PEER_TIMEOUT_MS)
    yield p
    p.close()


@pytest.fixture(scope="module")
def local_greedy(models):
    """Greedy tokens of the llama model for PROMPT, from a local session (the reference)."""
    with strata.Model(models["llama-f32"][0]) as m, m.session(n_ctx=N_CTX, n_threads=1) as s:
        s.set_sampling(temperature=0.0)
        toks, _ = generated_tokens(s, PROMPT, 24, stop_at_end_of_generation=False)
    return toks


def _pipeline(m, ws, **kw) -> strata.Pipeline:
    opts = dict(wire_dtype="f32", layers=LAYERS, n_ctx=N_CTX, n_threads=1, n_batch=8, heartbeat_ms=HEARTBEAT_MS,
                peer_timeout_ms=PEER_TIMEOUT_MS, connect_timeout_ms=10000,
                transport=next((w.transport for w in ws if isinstance(w, WorkerProc)), "tcp"))
    opts.update(kw)
    return strata.Pipeline(m, workers=[w if isinstance(w, str) else w.address for w in ws], **opts)


def _greedy(s: strata.Session, n: int = 24) -> list[int]:
    s.set_sampling(temperature=0.0)
    toks, _ = generated_tokens(s, PROMPT, n, stop_at_end_of_generation=False)
    return toks


def _names_stage(message: str, w: WorkerProc, index: int) -> bool:
    """The message names the stage: its address, or "stage <index>" (head = stage 0)."""
    low = message.lower()
    return (w.address in message or f":{w.port}" in message or f"stage {index}" in low
            or f"stage #{index}" in low or f"worker {index}" in low)


def _fail_mid_generation(s: strata.Session, after_tokens: int, action) -> tuple[strata.StrataError, float, int]:
    """Generates (greedy, a long max_tokens); after ``after_tokens`` tokens runs ``action`` (from the
    token callback, so mid-generation for sure). Returns the error, the seconds from the action to
    the error, and the tokens seen."""
    s.set_sampling(temperature=0.0)
    seen: list[int] = []
    acted: list[float] = []

    def on_token(t: int, _piece: bytes) -> None:
        seen.append(t)
        if len(seen) == after_tokens:
            action()
            acted.append(time.monotonic())

    with pytest.raises(strata.StrataError) as e:
        s.generate_text(PROMPT, max_tokens=N_CTX - 64, stop_at_end_of_generation=False, on_token=on_token)
    t_err = time.monotonic()
    assert acted, f"generation failed before the fault was injected: {e.value}"
    return e.value, t_err - acted[0], len(seen)


def test_a_killed_last_worker_fails_the_call_naming_it_then_reconnect_and_reset_recover(models, pool,
                                                                                         local_greedy):
    paths = models["llama-f32"]
    w1, w2 = pool.spawn_n(paths, 2)
    with strata.Model(paths[0]) as m, _pipeline(m, [w1, w2]) as p:
        s = p.session()
        assert _greedy(s) == local_greedy
        s.reset()
        err, elapsed, n_seen = _fail_mid_generation(s, 5, lambda: w2.signal(signal.SIGKILL))
        print(f"SIGKILL of the last worker after {n_seen} tokens: {err} after {elapsed:.3f} s")
        assert err.status == strata.Status.STAGE_FAILED, err
        assert _names_stage(err.message, w2, 2), f"the error does not name the stage: {err.message}"
        assert elapsed <= PEER_TIMEOUT_MS / 1000 + DETECT_MARGIN_S, f"detected after {elapsed:.2f} s"
        w2.proc.wait(10)
        w2b = pool.respawn_on_port(paths, w2.port)
        p.reconnect()
        s.reset()
        assert s.n_past == 0
        assert _greedy(s) == local_greedy, "after reconnect + reset the pipeline no longer gives the local tokens"
        assert w2b.alive()


def test_a_frozen_worker_is_detected_within_the_peer_timeout(models, pool, local_greedy):
    paths = models["llama-f32"]
    w1, w2 = pool.spawn_n(paths, 2)
    with strata.Model(paths[0]) as m, _pipeline(m, [w1, w2]) as p:
        s = p.session()
        try:
            err, elapsed, n_seen = _fail_mid_generation(s, 5, lambda: w1.signal(signal.SIGSTOP))
        finally:
            w1.signal(signal.SIGCONT)
        print(f"SIGSTOP of the middle worker after {n_seen} tokens: {err} after {elapsed:.3f} s")
        assert err.status == strata.Status.STAGE_FAILED, err
        assert _names_stage(err.message, w1, 1), f"the error does not name the stage: {err.message}"
        # Silence, not a closed socket: only the peer timeout can detect it.
        assert PEER_TIMEOUT_MS / 1000 * 0.5 <= elapsed <= PEER_TIMEOUT_MS / 1000 + DETECT_MARGIN_S, \
            f"detected after {elapsed:.2f} s (peer timeout {PEER_TIMEOUT_MS} ms)"
        p.reconnect()
        s.reset()
        assert _greedy(s) == local_greedy
    assert w1.alive() and w2.alive()


_HEAD_SCRIPT = textwrap.dedent("""
    import sys, strata
    model, layers, transport, workers = sys.argv[1], sys.argv[2], sys.argv[3], sys.argv[4:]
    m = strata.Model(model)
    p = strata.Pipeline(m, workers=workers, layers=layers, n_ctx=1024, n_threads=1, n_batch=8, wire_dtype="f32",
                        heartbeat_ms=200, peer_timeout_ms=2000, transport=transport)
    s = p.session()
    print("ready", flush=True)
    while True:
        s.reset()
        s.generate_text("a head about to die ", max_tokens=900, stop_at_end_of_generation=False,
                        on_token=lambda t, piece: print("token", t, flush=True))
""")


def test_a_worker_whose_head_dies_frees_the_sequence_and_serves_the_next_head(models, pool, local_greedy, tmp_path):
    paths = models["llama-f32"]
    w1, w2 = pool.spawn_n(paths, 2)
    script = tmp_path / "head.py"
    script.write_text(_HEAD_SCRIPT)
    head = subprocess.Popen([sys.executable, str(script), paths[0], LAYERS, pool.transport, w1.address, w2.address],
                            stdout=subprocess.PIPE, stderr=subprocess.STDOUT, env=os.environ.copy())
    lines: list[str] = []
    try:
        deadline = time.monotonic() + 120
        assert head.stdout is not None
        while sum(1 for ln in lines if ln.startswith("token")) < 5:
            line = head.stdout.readline().decode("utf-8", "replace")
            if not line:
                pytest.fail(f"the head process ended before generating:\n{''.join(lines)}")
            lines.append(line)
            assert time.monotonic() < deadline, "the head process generated nothing within 120 s"
        marks = [len(w1.log()), len(w2.log())]
        head.send_signal(signal.SIGKILL)
        head.wait(30)
    finally:
        if head.poll() is None:
            head.kill()
            head.wait(30)
    # Both workers notice (a closed socket, or at worst the peer timeout) and free the sequence.
    for w, mark in zip((w1, w2), marks):
        m = w.wait_log(r"[^\n]*(free|releas|drop|clos|lost|gone|disconnect)[^\n]*",
                       PEER_TIMEOUT_MS / 1000 + DETECT_MARGIN_S + 5, start=mark)
        print(f"worker {w.address} logged: {m.group(0).strip()}")
        assert w.alive(), f"the worker died with its head:\n{w.log()}"
    with strata.Model(paths[0]) as m, _pipeline(m, [w1, w2]) as p:
        assert _greedy(p.session()) == local_greedy


def test_a_wrong_key_is_refused_as_an_authentication_failure(models, pool, tmp_path):
    paths = models["llama-f32"]
    key_a, key_b = tmp_path / "a.key", tmp_path / "b.key"
    key_a.write_bytes(os.urandom(32))
    key_b.write_bytes(os.urandom(32))
    w1, w2 = pool.spawn_n(paths, 2, key_file=str(key_a))
    with strata.Model(paths[0]) as m:
        marks = [len(w1.log()), len(w2.log())]
        with pytest.raises(strata.StrataError) as e:
            _pipeline(m, [w1, w2], key_file=str(key_b))
        print("wrong key:", e.value)
        assert e.value.status == strata.Status.REFUSED, e.value
        # The transport names the refusal by its error code (auth_failed) or in words.
        assert re.search(r"authentication failed|auth_failed", e.value.message, re.I), e.value.message
        w1.wait_log(r"[^\n]*(auth|key)[^\n]*", 10, start=marks[0])
        with pytest.raises(strata.StrataError) as e:  # no key at all: refused the same way
            _pipeline(m, [w1, w2])
        assert e.value.status == strata.Status.REFUSED, e.value
        # The right key, given as bytes: served.
        with _pipeline(m, [w1, w2], key=key_a.read_bytes()) as p:
            s = p.session()
            s.decode([1, 5, 9, 20])
            assert s.n_past == 4
        with _pipeline(m, [w1, w2], key_file=str(key_a)) as p:
            p.session().decode([1, 2])


def test_a_worker_holding_another_model_is_refused_naming_the_model_identity(models, pool):
    w1, w2 = pool.spawn_n(models["qwen3-q8_0"], 2)
    with strata.Model(models["llama-f32"][0]) as m:
        with pytest.raises(strata.StrataError) as e:
            _pipeline(m, [w1, w2], layers="0:1,1:2,2:6")
        print("wrong model:", e.value)
        assert e.value.status == strata.Status.REFUSED, e.value
        assert "identity" in e.value.message.lower() or m.identity()[:12] in e.value.message, e.value.message
        assert "model" in e.value.message.lower(), e.value.message


def test_a_worker_started_with_other_layers_is_refused_naming_both_ranges(models, pool):
    paths = models["llama-f32"]
    w1 = pool.spawn(paths, layers="2:4")
    w2 = pool.spawn(paths)
    with strata.Model(paths[0]) as m:
        with pytest.raises(strata.StrataError) as e:
            _pipeline(m, [w1, w2], layers="0:1,1:3,3:6")
        msg = e.value.message
        print("wrong layers:", e.value)
        assert e.value.status == strata.Status.REFUSED, e.value
        assert re.search(range_pattern(2, 4), msg), f"the worker's range 2:4 is not named: {msg}"
        assert re.search(range_pattern(1, 3), msg), f"the head's range 1:3 is not named: {msg}"
        # The same workers with the matching plan are served.
        with _pipeline(m, [w1, w2], layers="0:2,2:4,4:6") as p:
            p.session().decode([1, 2, 3])


def test_the_planner_follows_workers_started_with_fixed_layers(models, pool, local_greedy):
    """Every worker fixed (--layers): the planned split is theirs, the head takes what comes before.
    Some fixed and some not: refused before anything runs, asking for an explicit plan."""
    paths = models["llama-f32"]
    w1 = pool.spawn(paths, layers="1:4")
    w2 = pool.spawn(paths, layers="4:6")
    w3 = pool.spawn(paths)
    with strata.Model(paths[0]) as m:
        with _pipeline(m, [w1, w2], layers=None) as p:
            assert plan_ranges(p.plan()) == [(0, 1), (1, 4), (4, 6)]
            assert _greedy(p.session()) == local_greedy
        with pytest.raises(strata.StrataError) as e:
            _pipeline(m, [w1, w3], layers=None)
        print("mixed fixed and free workers:", e.value)
        assert e.value.status == strata.Status.INVALID_ARGUMENT, e.value
        assert "layers" in e.value.message, e.value.message


def _expect_closed(addr: tuple[str, int], data: bytes, shut_wr: bool, timeout: float = 20.0) -> tuple[str, bytes]:
    """Sends ``data`` on a fresh connection and reads until the worker closes it: ("eof" | "reset",
    bytes received). Fails the test if the connection stays open ``timeout`` seconds."""
    with socket.create_connection(addr, timeout=timeout) as c:
        try:
            c.sendall(data)
            if shut_wr:
                c.shutdown(socket.SHUT_WR)
        except (BrokenPipeError, ConnectionResetError):
            return "reset", b""
        got = b""
        while True:
            try:
                chunk = c.recv(65536)
            except ConnectionResetError:
                return "reset", got
            except socket.timeout:
                pytest.fail(f"the worker kept the connection open {timeout} s after {data[:32]!r}...")
            if not chunk:
                return "eof", got
            got += chunk


def test_malformed_frames_close_only_that_connection(models, tcp_pool, local_greedy):
    pool = tcp_pool
    paths = models["llama-f32"]
    w1, w2 = pool.spawn_n(paths, 2)
    payload = hello_payload()
    cases = [
        ("garbage", b"GET / HTTP/1.1\r\nHost: strata\r\n\r\n", False, r"magic"),
        ("bad checksum", frame_header(1, len(payload), crc32c(payload) ^ 0x5A5A) + payload, False,
         r"checksum|crc"),
        ("oversized length", frame_header(1, 1 << 40, 0), False, r"oversized|too large|exceeds|length"),
        ("truncated frame", frame(1, payload)[:24 + 10], True, r"truncat|end of stream|mid-frame|eof|closed"),
        ("unknown type", frame_header(999, 0, 0), False, r"type"),
    ]
    with strata.Model(paths[0]) as m, _pipeline(m, [w1, w2]) as p:
        s = p.session()
        result: dict = {}

        def generate() -> None:
            try:
                result["tokens"] = _greedy(s, 200)
            except BaseException as e:  # noqa: BLE001 - reported below
                result["error"] = e

        t = threading.Thread(target=generate)
        t.start()
        try:
            for target in (w2, w1):
                for what, data, shut_wr, reason in cases:
                    mark = len(target.log())
                    how, got = _expect_closed((target.host, target.port), data, shut_wr)
                    m_ = target.wait_log(r"[^\n]*(" + reason + r")[^\n]*", 10, start=mark)
                    print(f"{what} -> {target.address}: connection {how} after {len(got)} bytes; "
                          f"log: {m_.group(0).strip()}")
                    assert target.alive()
        finally:
            t.join(300)
        assert not t.is_alive(), "generation hung"
        assert "error" not in result, f"the real pipeline failed meanwhile: {result.get('error')}"
        assert result["tokens"][:24] == local_greedy
        s.reset()
        assert _greedy(s) == local_greedy


def test_a_head_that_sends_garbage_after_a_good_handshake_does_not_take_the_worker_down(models, tcp_pool,
                                                                                        local_greedy):
    """A peer speaking the protocol's framing but not its stage order (a frame the worker does not
    expect right after connecting) is cut off; the worker keeps serving."""
    pool = tcp_pool
    paths = models["llama-f32"]
    w1, w2 = pool.spawn_n(paths, 2)
    mark = len(w2.log())
    how, _ = _expect_closed((w2.host, w2.port), frame(8, b"") + frame(6, b"\x01\x00\x00\x00"), False)
    w2.wait_log(r"[^\n]*(hello|expected|unexpected|handshake|order)[^\n]*", PEER_TIMEOUT_MS / 1000 + 10, start=mark)
    with strata.Model(paths[0]) as m, _pipeline(m, [w1, w2]) as p:
        assert _greedy(p.session()) == local_greedy
