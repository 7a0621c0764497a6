"""Helpers for the pipeline tests: strata-worker processes started from the build directory,
synthetic models, network namespaces, raw frames, and comparisons against a local session."""
from __future__ import annotations

import os
import re
import signal
import struct
import subprocess
import sys
import threading
import time
from pathlib import Path
from typing import Any, Optional, Sequence

import numpy as np
import pytest

import strata

#: How long a worker may take to print "listening on" (it hashes its shards first; the machine
#: may be loaded by parallel builds).
LISTEN_TIMEOUT_S = 90.0


def build_dir() -> Path:
    """$STRATA_BUILD_DIR (set by ctest), else the build directory holding $STRATA_LIBRARY."""
    d = os.environ.get("STRATA_BUILD_DIR")
    if d:
        return Path(d)
    lib = Path(os.environ["STRATA_LIBRARY"]).resolve()
    return lib.parent.parent


def tool(name: str) -> Path:
    """A program of the build (bin/NAME); a missing one fails the test with the path."""
    p = build_dir() / "bin" / name
    if not p.is_file():
        pytest.fail(f"{p} is missing: build the examples (cmake --build BUILD --target {name}) "
                    f"or set STRATA_BUILD_DIR")
    return p


def pipeline_unsupported_reason(model: strata.Model) -> Optional[str]:
    """Why this library cannot run pipelines (built without the TCP transport), or None."""
    if not strata._lib.has("strata_pipeline_create"):
        pytest.fail(f"{strata.library_path()} has no strata_pipeline_create: a library older than strata.h")
    try:
        strata.Pipeline(model, workers=["127.0.0.1:1"], connect_timeout_ms=200).close()
    except strata.StrataError as e:
        if e.status == strata.Status.UNSUPPORTED:
            return f"the library was built without the TCP transport: {e.message}"
    return None


def skip_unless_pipelines(model_path: str) -> None:
    """pytest.skip when this library cannot run pipelines (pipeline_unsupported_reason of the
    model at ``model_path``)."""
    with strata.Model(model_path) as m:
        reason = pipeline_unsupported_reason(m)
    if reason:
        pytest.skip(reason)


def pipeline_models(directory: Path, names: Sequence[str]) -> dict[str, list[str]]:
    """write_test_model of every name under ``directory``, keyed by name; pytest.skip when this
    library cannot run pipelines."""
    out = {name: write_test_model(directory, name) for name in names}
    skip_unless_pipelines(out[names[0]][0])
    return out


class WorkerProc:
    """One strata-worker process. stdout is read on a thread (the "listening on HOST:PORT" line
    gives the real port); stderr (the worker's log) goes to ``log_path``."""

    def __init__(self, model: Sequence[str], log_path: Path, listen: str = "127.0.0.1:0",
                 layers: Optional[str] = None, key_file: Optional[str] = None, allow_no_key: bool = False,
                 threads: int = 1, heartbeat_ms: int = 200, peer_timeout_ms: int = 2000,
                 memory_budget: Optional[int] = None, prefix: Sequence[str] = (), extra: Sequence[str] = (),
                 transport: str = "tcp"):
        self.model = [str(p) for p in model]
        self.transport = transport  # what heads must dial it with
        self.log_path = Path(log_path)
        self.listen = listen
        cmd = [*prefix, str(tool("strata-worker")), "--listen", listen, "--model", *self.model,
               "--threads", str(threads), "--heartbeat-ms", str(heartbeat_ms),
               "--peer-timeout-ms", str(peer_timeout_ms)]
        if layers is not None:
            cmd += ["--layers", layers]
        if key_file is not None:
            cmd += ["--key-file", str(key_file)]
        if allow_no_key:
            cmd += ["--allow-no-key"]
        if memory_budget is not None:
            cmd += ["--memory-budget", str(memory_budget)]
        if transport != "tcp":
            cmd += ["--transport", transport]
        cmd += list(extra)
        self.cmd = cmd
        self.stdout_lines: list[str] = []
        self.host: Optional[str] = None
        self.port: Optional[int] = None
        self._listening = threading.Event()
        self._log = open(self.log_path, "ab")
        self.proc = subprocess.Popen(cmd, stdin=subprocess.DEVNULL, stdout=subprocess.PIPE, stderr=self._log,
                                     start_new_session=True)
        self._reader = threading.Thread(target=self._read_stdout, daemon=True)
        self._reader.start()

    def _read_stdout(self) -> None:
        assert self.proc.stdout is not None
        for raw in self.proc.stdout:
            line = raw.decode("utf-8", "replace").rstrip("\n")
            self.stdout_lines.append(line)
            m = re.search(r"listening on (\S+):(\d+)\s*$", line)
            if m and not self._listening.is_set():
                self.host, self.port = m.group(1).strip("[]"), int(m.group(2))
                self._listening.set()
        self._listening.set()  # EOF: wake a waiter (the process ended)

    def wait_listening(self, timeout: float = LISTEN_TIMEOUT_S) -> "WorkerProc":
        if not self._listening.wait(timeout):
            self.kill()
            pytest.fail(f"strata-worker printed no 'listening on' line within {timeout} s\n"
                        f"command: {' '.join(self.cmd)}\nstdout: {self.stdout_lines}\nlog:\n{self.log()}")
        if self.port is None:
            code = self.proc.wait(10)
            pytest.fail(f"strata-worker exited ({code}) before listening\ncommand: {' '.join(self.cmd)}\n"
                        f"stdout: {self.stdout_lines}\nlog:\n{self.log()}")
        return self

    @property
    def address(self) -> str:
        return f"{self.host}:{self.port}"

    def log(self) -> str:
        try:
            return self.log_path.read_text("utf-8", "replace")
        except OSError:
            return ""

    def wait_log(self, pattern: str, timeout: float, start: int = 0) -> re.Match:
        """Waits until the log (from character ``start``) matches ``pattern`` (re, IGNORECASE)."""
        deadline = time.monotonic() + timeout
        rx = re.compile(pattern, re.IGNORECASE)
        while True:
            m = rx.search(self.log(), start)
            if m:
                return m
            if time.monotonic() > deadline:
                pytest.fail(f"the worker log did not match /{pattern}/ within {timeout} s:\n{self.log()}")
            time.sleep(0.05)

    def alive(self) -> bool:
        return self.proc.poll() is None

    def signal(self, sig: int) -> None:
        if self.alive():
            os.kill(self.proc.pid, sig)

    def kill(self) -> None:
        """SIGCONT (a stopped worker), SIGKILL, reap."""
        if self.alive():
            try:
                os.kill(self.proc.pid, signal.SIGCONT)
                os.kill(self.proc.pid, signal.SIGKILL)
            except ProcessLookupError:
                pass
        try:
            self.proc.wait(30)
        except subprocess.TimeoutExpired:
            pass
        self._close_files()

    def terminate(self, timeout: float = 10.0) -> Optional[int]:
        """SIGTERM, then SIGKILL after ``timeout``; the exit code."""
        if self.alive():
            self.proc.send_signal(signal.SIGTERM)
            try:
                self.proc.wait(timeout)
            except subprocess.TimeoutExpired:
                self.kill()
        self._close_files()
        return self.proc.returncode

    def _close_files(self) -> None:
        try:
            self._log.close()
        except OSError:
            pass


class WorkerPool:
    """Starts WorkerProcs and kills every one at teardown."""

    def __init__(self, tmp: Path, **defaults: Any):
        self.tmp = Path(tmp)
        self.defaults = defaults
        self.procs: list[WorkerProc] = []

    def spawn(self, model: Sequence[str], wait: bool = True, **kw: Any) -> WorkerProc:
        opts = {**self.defaults, **kw}
        log = self.tmp / f"worker-{len(self.procs)}-{os.getpid()}.log"
        w = WorkerProc(model, log, **opts)
        self.procs.append(w)
        return w.wait_listening() if wait else w

    def spawn_n(self, model: Sequence[str], n: int, **kw: Any) -> list[WorkerProc]:
        ws = [self.spawn(model, wait=False, **kw) for _ in range(n)]
        return [w.wait_listening() for w in ws]

    def respawn_on_port(self, model: Sequence[str], port: int, attempts: int = 20) -> WorkerProc:
        """A fresh worker on a port just freed (retried: the kernel may hold it for a moment)."""
        last = None
        for _ in range(attempts):
            w = self.spawn(model, wait=False, listen=f"127.0.0.1:{port}")
            w._listening.wait(LISTEN_TIMEOUT_S)
            if w.port == port:
                return w
            last = w.log()
            w.kill()
            time.sleep(0.5)
        pytest.fail(f"no worker could listen on port {port} again after {attempts} attempts; last log:\n{last}")

    def close(self) -> None:
        for w in self.procs:
            w.kill()
        self.procs.clear()


# --- comparisons ---------------------------------------------------------------------------------

#: The head and the workers run the same per-row forward (same kernels, same thread count per row
#: result): logits are expected bit-identical; this bound leaves room for nothing but that.
LOGITS_ATOL = 1e-6


def max_abs_diff(a: np.ndarray, b: np.ndarray) -> float:
    a, b = np.asarray(a, dtype=np.float64), np.asarray(b, dtype=np.float64)
    assert a.shape == b.shape, f"shapes differ: {a.shape} vs {b.shape}"
    return float(np.max(np.abs(a - b))) if a.size else 0.0


def greedy_trace(s: strata.Session, prompt: Sequence[int], n: int) -> tuple[np.ndarray, list[int], list[np.ndarray]]:
    """Prefill ``prompt`` with every row's logits, then ``n`` greedy steps: (prefill logits,
    tokens, each step's logits row). Uses sample() with the session's (greedy) sampler."""
    s.set_sampling(temperature=0.0, top_k=0, top_p=1.0, min_p=0.0, repeat_penalty=1.0)
    s.decode(list(prompt), all_logits=True)
    prefill = s.logits
    tokens, rows = [], []
    for _ in range(n):
        t = s.sample()
        tokens.append(t)
        s.decode([t])
        rows.append(s.logits[0])
    return prefill, tokens, rows


def generated_tokens(s: strata.Session, prompt: str, max_tokens: int, **gen: Any) -> tuple[list[int], dict]:
    """strata_session_generate's tokens (through the callback) and its result."""
    toks: list[int] = []
    _, info = s.generate_text(prompt, max_tokens=max_tokens, on_token=lambda t, _p: toks.append(t), **gen)
    return toks, info


# --- raw frames (transport/PROTOCOL.md) ----------------------------------------------------------

def _crc32c_table() -> list[int]:
    table = []
    for i in range(256):
        c = i
        for _ in range(8):
            c = (c >> 1) ^ 0x82F63B78 if c & 1 else c >> 1
        table.append(c)
    return table


_CRC_TABLE = _crc32c_table()


def crc32c(data: bytes) -> int:
    c = 0xFFFFFFFF
    for b in data:
        c = (c >> 8) ^ _CRC_TABLE[(c ^ b) & 0xFF]
    return c ^ 0xFFFFFFFF


PROTOCOL_VERSION = 2  # transport/PROTOCOL.md (kProtocolVersion)


def frame_header(msg_type: int, length: int, crc: int, magic: bytes = b"STRF", version: int = PROTOCOL_VERSION,
                 flags: int = 0) -> bytes:
    return magic + struct.pack("<HHIQI", version, msg_type, flags, length, crc)


def frame(msg_type: int, payload: bytes) -> bytes:
    return frame_header(msg_type, len(payload), crc32c(payload)) + payload


def hello_payload(model_id: bytes = bytes(32), layer_begin: int = 0, layer_end: int = 1) -> bytes:
    """An 84-byte hello (this protocol version, the given identity and range, f16 KV, context 256)."""
    return struct.pack("<HH", PROTOCOL_VERSION, 0) + model_id + struct.pack("<IIII", layer_begin, layer_end, 0, 256) + os.urandom(32)


# --- network namespaces ---------------------------------------------------------------------------

def _run(*cmd: str) -> subprocess.CompletedProcess:
    return subprocess.run(cmd, stdout=subprocess.PIPE, stderr=subprocess.STDOUT, text=True, timeout=30)


class NetNamespaces:
    """Namespaces ns[i] joined to this one by a veth pair each: the host end 10.77.<i+1>.1/24,
    the namespace end 10.77.<i+1>.2/24, routes both ways (forwarding on while they exist), so the
    namespaces reach each other through this one. close() removes everything it made."""

    def __init__(self, n: int):
        tag = f"{os.getpid() % 100000}"
        self.names = [f"strata-t{tag}-{i}" for i in range(n)]
        self.host_ifs = [f"st{tag}h{i}" for i in range(n)]
        self.addresses = [f"10.77.{i + 1}.2" for i in range(n)]
        self._made_ns: list[str] = []
        self._made_if: list[str] = []
        self._forward_before: Optional[str] = None

    @staticmethod
    def unavailable_reason() -> Optional[str]:
        if os.geteuid() != 0:
            return "network namespaces need root (ip netns add)"
        if sys.platform != "linux":
            return "network namespaces are Linux only"
        try:
            probe = f"strata-probe-{os.getpid()}"
            r = _run("ip", "netns", "add", probe)
        except (FileNotFoundError, subprocess.TimeoutExpired) as e:
            return f"cannot run ip: {e}"
        if r.returncode != 0:
            return f"'ip netns add' failed: {r.stdout.strip()}"
        _run("ip", "netns", "del", probe)
        return None

    def _must(self, *cmd: str) -> None:
        r = _run(*cmd)
        if r.returncode != 0:
            raise RuntimeError(f"{' '.join(cmd)}: {r.stdout.strip()}")

    def setup(self) -> "NetNamespaces":
        fwd = Path("/proc/sys/net/ipv4/ip_forward")
        self._forward_before = fwd.read_text().strip()
        for i, (ns, hif) in enumerate(zip(self.names, self.host_ifs)):
            nif = hif[:-2] + f"n{i}"
            self._must("ip", "netns", "add", ns)
            self._made_ns.append(ns)
            self._must("ip", "link", "add", hif, "type", "veth", "peer", "name", nif)
            self._made_if.append(hif)
            self._must("ip", "link", "set", nif, "netns", ns)
            self._must("ip", "addr", "add", f"10.77.{i + 1}.1/24", "dev", hif)
            self._must("ip", "link", "set", hif, "up")
            self._must("ip", "-n", ns, "addr", "add", f"10.77.{i + 1}.2/24", "dev", nif)
            self._must("ip", "-n", ns, "link", "set", nif, "up")
            self._must("ip", "-n", ns, "link", "set", "lo", "up")
            self._must("ip", "-n", ns, "route", "add", "default", "via", f"10.77.{i + 1}.1")
        fwd.write_text("1\n")
        return self

    def prefix(self, i: int) -> list[str]:
        return ["ip", "netns", "exec", self.names[i]]

    def close(self) -> None:
        for hif in self._made_if:
            _run("ip", "link", "del", hif)
        for ns in self._made_ns:
            _run("ip", "netns", "del", ns)
        self._made_if.clear()
        self._made_ns.clear()
        if self._forward_before is not None:
            try:
                Path("/proc/sys/net/ipv4/ip_forward").write_text(self._forward_before + "\n")
            except OSError:
                pass
            self._forward_before = None


# --- models ---------------------------------------------------------------------------------------

#: Synthetic models the pipeline tests run (name: how it is written). Small, so that a test spends
#: its time in the pipeline, not in matmuls; row lengths multiples of 256 for IQ1_S.
MODEL_SPECS: dict[str, dict[str, Any]] = {
    "llama-f32": dict(tool="synth", arch="llama", wtype="f32", n_layer=6, seed=11),
    "llama-iq1_s-3shards": dict(tool="mkmodel", arch="llama", wtype="iq1_s", n_layer=5, shards=3, seed=12),
    "qwen3-q8_0": dict(tool="synth", arch="qwen3", wtype="q8_0", n_layer=4, seed=13),
    "qwen2-f16": dict(tool="synth", arch="qwen2", wtype="f16", n_layer=4, seed=14),
}


def write_test_model(directory: Path, name: str) -> list[str]:
    """Writes MODEL_SPECS[name] under ``directory``; returns every shard path, first shard first."""
    from _synth import write_model  # tests/python is on sys.path under pytest

    spec = MODEL_SPECS[name]
    directory = Path(directory)
    directory.mkdir(parents=True, exist_ok=True)
    out = directory / f"{name}.gguf"
    if spec["tool"] == "synth":
        return [str(p) for p in write_model(out, spec["seed"], arch=spec["arch"], wtype=spec["wtype"],
                                            n_layer=spec["n_layer"], n_ctx_train=2048)]
    cmd = [str(tool("strata-mkmodel")), "--arch", spec["arch"], "--preset", "tiny", "--type", spec["wtype"],
           "--n-layer", str(spec["n_layer"]), "--shards", str(spec["shards"]), "--seed", str(spec["seed"]),
           "--n-ctx", "2048", "-o", str(out)]
    r = subprocess.run(cmd, stdout=subprocess.PIPE, stderr=subprocess.STDOUT, text=True, timeout=300)
    assert r.returncode == 0, f"{' '.join(cmd)}:\n{r.stdout}"
    shards = sorted(str(p) for p in directory.glob(f"{name}-*-of-*.gguf"))
    assert len(shards) == spec["shards"], shards
    return shards


def n_layers(model: strata.Model) -> int:
    arch = model.get_string("general.architecture")
    return int(model.get_uint(f"{arch}.block_count"))


def plan_stages(plan: Any) -> list[dict]:
    """The per-stage entries of strata_pipeline_plan_json (a list under "stages", or the plan itself)."""
    if isinstance(plan, dict):
        for k in ("stages", "plan"):
            if isinstance(plan.get(k), list):
                return plan[k]
    if isinstance(plan, list):
        return plan
    raise AssertionError(f"no list of stages in the plan: {plan!r}")


def stage_range(stage: dict) -> tuple[int, int]:
    """[begin, end) of one plan stage, whichever spelling the plan uses."""
    if "layer_begin" in stage and "layer_end" in stage:
        return int(stage["layer_begin"]), int(stage["layer_end"])
    v = stage.get("layers", stage.get("layer_range", stage.get("range")))
    if isinstance(v, str):
        a, _, b = v.partition(":")
        return int(a), int(b)
    if isinstance(v, (list, tuple)) and len(v) == 2:
        return int(v[0]), int(v[1])
    if isinstance(v, dict):
        return int(v.get("begin", v.get("first"))), int(v.get("end", v.get("last")))
    raise AssertionError(f"no layer range in plan stage {stage!r}")


def plan_ranges(plan: Any) -> list[tuple[int, int]]:
    return [stage_range(s) for s in plan_stages(plan)]


def range_pattern(a: int, b: int) -> str:
    """A regex for the range [a, b) however a message spells it ("2:4", "[2, 4)", "2..4", "2-4")."""
    return rf"(?<!\d){a}\s*(?::|,|\.\.|-|to)\s*{b}(?!\d)"
