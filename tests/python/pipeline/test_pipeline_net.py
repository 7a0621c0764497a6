"""Pipelines over real network paths: workers in their own network namespaces (separate
addresses, veth links, a pre-shared key as non-loopback requires), and a slow link made by a
userspace proxy (tests/python/netproxy.py: fixed one-way latency, capped bandwidth)."""
from __future__ import annotations

import statistics
import time

import pytest

import strata
from netproxy import Proxy
from pipeline_util import (LOGITS_ATOL, NetNamespaces, WorkerPool, greedy_trace, max_abs_diff,
                           pipeline_models)

N_CTX = 256
HEARTBEAT_MS = 200
PEER_TIMEOUT_MS = 3000
LAYERS = "0:2,2:4,4:6"


@pytest.fixture(scope="module")
def model_paths(tmp_path_factory):
    return pipeline_models(tmp_path_factory.mktemp("net-models"), ["llama-f32"])["llama-f32"]


@pytest.fixture
def pool(tmp_path):
    p = WorkerPool(tmp_path, heartbeat_ms=HEARTBEAT_MS, peer_timeout_ms=PEER_TIMEOUT_MS)
    yield p
    p.close()


def _prompt(n_vocab: int) -> list[int]:
    return [1] + [(17 * i + 5) % (n_vocab - 3) + 3 for i in range(36)]


def test_workers_in_other_network_namespaces_with_a_key_give_the_local_results(model_paths, pool, tmp_path):
    reason = NetNamespaces.unavailable_reason()
    if reason:
        pytest.skip(reason)
    key = tmp_path / "psk"
    key.write_bytes(b"strata namespace test key \x00\x01\x02")
    ns = NetNamespaces(2)
    try:
        ns.setup()
        # A non-loopback address without a key is refused by strata-worker itself.
        bare = pool.spawn(model_paths, wait=False, listen=f"{ns.addresses[0]}:0", prefix=ns.prefix(0))
        code = bare.proc.wait(60)
        assert code != 0 and bare.port is None, f"a keyless worker on {ns.addresses[0]} started:\n{bare.log()}"
        print(f"keyless worker on {ns.addresses[0]}: exit {code}: {bare.log().strip()[-300:]}")
        ws = [pool.spawn(model_paths, listen=f"{ns.addresses[i]}:0", key_file=str(key), prefix=ns.prefix(i))
              for i in range(2)]
        for i, w in enumerate(ws):
            assert w.host == ns.addresses[i], w.stdout_lines
        with strata.Model(model_paths[0]) as m:
            prompt = _prompt(m.vocab.n_vocab)
            with m.session(n_ctx=N_CTX, n_threads=1) as local:
                want = greedy_trace(local, prompt, 10)
            with strata.Pipeline(m, workers=[w.address for w in ws], layers=LAYERS, key_file=str(key), n_ctx=N_CTX, wire_dtype="f32",
                                 n_threads=1, n_batch=8, heartbeat_ms=HEARTBEAT_MS,
                                 peer_timeout_ms=PEER_TIMEOUT_MS, connect_timeout_ms=10000) as p:
                got = greedy_trace(p.session(), prompt, 10)
                plan_text = p.plan_json()
                print("plan:", plan_text)
                for w in ws:
                    assert w.host in plan_text, f"the plan does not show {w.address}"
            assert got[1] == want[1], f"tokens {got[1]} != local {want[1]}"
            assert max_abs_diff(got[0], want[0]) <= LOGITS_ATOL
            assert max(max_abs_diff(a, b) for a, b in zip(got[2], want[2])) <= LOGITS_ATOL
            # Without the key, the namespaced workers refuse the head.
            with pytest.raises(strata.StrataError) as e:
                strata.Pipeline(m, workers=[w.address for w in ws], layers=LAYERS, n_ctx=N_CTX, n_threads=1,
                                connect_timeout_ms=10000)
            assert e.value.status == strata.Status.REFUSED, e.value
    finally:
        pool.close()
        ns.close()


def _decode_seconds_per_token(p: strata.Pipeline, prompt: list[int], n: int) -> tuple[list[int], float]:
    """Greedy decode of n tokens after the prompt: (tokens, median seconds per sample+decode step)."""
    s = p.session()
    s.reset()
    s.set_sampling(temperature=0.0)
    s.decode(prompt)
    toks, times = [], []
    for _ in range(n):
        t0 = time.monotonic()
        t = s.sample()
        s.decode([t])
        times.append(time.monotonic() - t0)
        toks.append(t)
    return toks, statistics.median(times)


def test_a_slow_link_gives_the_same_tokens_and_costs_at_least_its_latency(model_paths, pool):
    latency = 0.040          # one way, per proxied link
    bandwidth = 5_000_000    # bytes/s per direction: a hidden state of 256 f32 takes ~0.2 ms
    n = 12
    ws = pool.spawn_n(model_paths, 2)
    with strata.Model(model_paths[0]) as m:
        prompt = _prompt(m.vocab.n_vocab)
        with m.session(n_ctx=N_CTX, n_threads=1) as local:
            want = greedy_trace(local, prompt, n)[1]
        opts = dict(wire_dtype="f32", layers=LAYERS, n_ctx=N_CTX, n_threads=1, n_batch=8, heartbeat_ms=HEARTBEAT_MS,
                    peer_timeout_ms=PEER_TIMEOUT_MS, connect_timeout_ms=10000)
        with strata.Pipeline(m, workers=[w.address for w in ws], **opts) as p:
            direct_toks, direct_s = _decode_seconds_per_token(p, prompt, n)
        proxies = [Proxy((w.host, w.port), latency=latency, bandwidth=bandwidth).start() for w in ws]
        try:
            with strata.Pipeline(m, workers=[x.address for x in proxies], **opts) as p:
                slow_toks, slow_s = _decode_seconds_per_token(p, prompt, n)
                stats = p.stats()
        finally:
            for x in proxies:
                x.close()
    print(f"decode per token: direct {direct_s * 1e3:.1f} ms, through proxies (+{latency * 1e3:.0f} ms one way "
          f"per link) {slow_s * 1e3:.1f} ms; stats {stats}")
    assert direct_toks == want and slow_toks == want
    hops = len(ws)
    # Each proxied link is crossed there and back at least once per token.
    added = slow_s - direct_s
    assert added >= 0.8 * 2 * latency * hops, \
        f"a token costs only {added * 1e3:.1f} ms more through {hops} links of {latency * 1e3:.0f} ms one way"


def test_netproxy_adds_its_latency_and_caps_its_bandwidth():
    """The proxy the slow-link test relies on: an echo through it takes two latencies, and a large
    transfer at least its size over the bandwidth (lower bounds only: the machine may be loaded)."""
    import socket
    import threading

    srv = socket.create_server(("127.0.0.1", 0))

    def echo() -> None:
        c, _ = srv.accept()
        with c:
            while True:
                d = c.recv(65536)
                if not d:
                    return
                c.sendall(d)

    threading.Thread(target=echo, daemon=True).start()
    latency, bandwidth = 0.05, 2_000_000
    with Proxy(srv.getsockname()[:2], latency=latency, bandwidth=bandwidth) as p:
        with socket.create_connection(("127.0.0.1", p.port), timeout=30) as c:
            c.setsockopt(socket.IPPROTO_TCP, socket.TCP_NODELAY, 1)

            def round_trip(n: int) -> float:
                t0 = time.monotonic()
                c.sendall(b"x" * n)
                got = 0
                while got < n:
                    chunk = c.recv(65536)
                    assert chunk, "the proxy closed the connection"
                    got += len(chunk)
                return time.monotonic() - t0

            small = round_trip(16)
            big = round_trip(400_000)
            c.shutdown(socket.SHUT_WR)
            assert c.recv(1) == b"", "EOF is not forwarded"
    srv.close()
    print(f"echo through the proxy: 16 bytes {small * 1e3:.1f} ms, 400 kB {big * 1e3:.1f} ms")
    assert small >= 2 * latency * 0.95
    assert big >= 400_000 / bandwidth + 2 * latency * 0.95
