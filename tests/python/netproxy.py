#!/usr/bin/env python3
"""A small userspace TCP proxy that adds a fixed one-way latency and caps the bandwidth (there is
no netem here). Every byte received on one side is forwarded to the other no sooner than
``latency`` seconds after it arrived, and each direction of each connection is paced to at most
``bandwidth`` bytes per second (a chunk of n bytes occupies the link n / bandwidth seconds).
Order is preserved; a half-close (EOF) is forwarded after the data before it.

As a library:

    with Proxy(("127.0.0.1", 7001), latency=0.02, bandwidth=12_500_000) as p:
        connect_to(("127.0.0.1", p.port))

From the command line (prints "listening on HOST:PORT" once bound, then serves until killed):

    python tests/python/netproxy.py --listen 127.0.0.1:0 --target 127.0.0.1:7001 \
        --latency-ms 20 [--bandwidth-mbit 100]
"""
from __future__ import annotations

import argparse
import collections
import socket
import sys
import threading
import time
from typing import Optional

_CHUNK = 64 * 1024


def parse_hostport(text: str) -> tuple[str, int]:
    host, sep, port = text.rpartition(":")
    if not sep or not host:
        raise ValueError(f"expected HOST:PORT, got {text!r}")
    return host.strip("[]"), int(port)


class _Pipe:
    """One direction of one connection: a reader thread timestamps chunks; a writer thread sends
    each one at max(arrival + latency, end of the previous chunk's transmission)."""

    def __init__(self, src: socket.socket, dst: socket.socket, latency: float, bandwidth: Optional[float],
                 on_done) -> None:
        self.src, self.dst = src, dst
        self.latency, self.bandwidth = latency, bandwidth
        self.queue: collections.deque = collections.deque()
        self.cond = threading.Condition()
        self.on_done = on_done
        self.bytes = 0
        self._reader = threading.Thread(target=self._read, daemon=True)
        self._writer = threading.Thread(target=self._write, daemon=True)

    def start(self) -> None:
        self._reader.start()
        self._writer.start()

    def _read(self) -> None:
        try:
            while True:
                data = self.src.recv(_CHUNK)
                now = time.monotonic()
                with self.cond:
                    self.queue.append((now, data))  # b"" marks EOF (or an error)
                    self.cond.notify()
                if not data:
                    return
        except OSError:
            with self.cond:
                self.queue.append((time.monotonic(), b""))
                self.cond.notify()

    def _write(self) -> None:
        link_free = 0.0  # when the (virtual) link has finished sending the previous chunk
        try:
            while True:
                with self.cond:
                    while not self.queue:
                        self.cond.wait()
                    arrived, data = self.queue.popleft()
                if not data:
                    try:
                        self.dst.shutdown(socket.SHUT_WR)
                    except OSError:
                        pass
                    return
                start = max(arrived, link_free)
                tx = len(data) / self.bandwidth if self.bandwidth else 0.0
                link_free = start + tx
                due = start + tx + self.latency  # the last byte arrives one latency after it left
                delay = due - time.monotonic()
                if delay > 0:
                    time.sleep(delay)
                self.dst.sendall(data)
                self.bytes += len(data)
        except OSError:
            pass
        finally:
            self.on_done()


class Proxy:
    """Listens on ``listen`` (default 127.0.0.1, any port) and forwards every accepted connection
    to ``target`` with ``latency`` seconds one way and at most ``bandwidth`` bytes/s (None: no cap)
    in each direction."""

    def __init__(self, target: tuple[str, int], latency: float = 0.0, bandwidth: Optional[float] = None,
                 listen: tuple[str, int] = ("127.0.0.1", 0)) -> None:
        self.target = target
        self.latency = float(latency)
        self.bandwidth = float(bandwidth) if bandwidth else None
        self._sock = socket.create_server(listen, reuse_port=False)
        self.host, self.port = self._sock.getsockname()[:2]
        self._closed = threading.Event()
        self._conns: list[socket.socket] = []
        self._lock = threading.Lock()
        self.connections = 0
        self._thread = threading.Thread(target=self._accept, daemon=True)

    @property
    def address(self) -> str:
        return f"{self.host}:{self.port}"

    def start(self) -> "Proxy":
        self._thread.start()
        return self

    def __enter__(self) -> "Proxy":
        return self.start()

    def __exit__(self, *exc) -> None:
        self.close()

    def _accept(self) -> None:
        while not self._closed.is_set():
            try:
                client, _ = self._sock.accept()
            except OSError:
                return
            try:
                upstream = socket.create_connection(self.target, timeout=10)
                upstream.settimeout(None)
            except OSError:
                client.close()
                continue
            for s in (client, upstream):
                s.setsockopt(socket.IPPROTO_TCP, socket.TCP_NODELAY, 1)
            with self._lock:
                self._conns += [client, upstream]
                self.connections += 1
            left = [2]

            def done(c=client, u=upstream, left=left) -> None:
                with self._lock:
                    left[0] -= 1
                    last = left[0] == 0
                if last:
                    for s in (c, u):
                        try:
                            s.close()
                        except OSError:
                            pass

            _Pipe(client, upstream, self.latency, self.bandwidth, done).start()
            _Pipe(upstream, client, self.latency, self.bandwidth, done).start()

    def close(self) -> None:
        """Stop accepting and cut every connection (both sides see the connection end)."""
        self._closed.set()
        try:
            self._sock.close()
        except OSError:
            pass
        with self._lock:
            conns, self._conns = self._conns, []
        for s in conns:
            try:
                s.shutdown(socket.SHUT_RDWR)
            except OSError:
                pass
            try:
                s.close()
            except OSError:
                pass


def main(argv: Optional[list[str]] = None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--listen", default="127.0.0.1:0", help="HOST:PORT to listen on (port 0: any)")
    ap.add_argument("--target", required=True, help="HOST:PORT to forward to")
    ap.add_argument("--latency-ms", type=float, default=0.0, help="one-way latency added, milliseconds")
    ap.add_argument("--bandwidth-mbit", type=float, default=0.0,
                    help="cap per direction and connection, megabits per second (0: none)")
    a = ap.parse_args(argv)
    bw = a.bandwidth_mbit * 1e6 / 8 if a.bandwidth_mbit > 0 else None
    p = Proxy(parse_hostport(a.target), a.latency_ms / 1000.0, bw, parse_hostport(a.listen)).start()
    print(f"listening on {p.address}", flush=True)
    try:
        while True:
            time.sleep(3600)
    except KeyboardInterrupt:
        pass
    finally:
        p.close()
    return 0


if __name__ == "__main__":
    sys.exit(main())
