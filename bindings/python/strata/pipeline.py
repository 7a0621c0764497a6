"""strata.Pipeline and strata.Worker: one model served by this process (the head: embeddings
and the first layers) and remote workers (contiguous layer ranges; the last one samples) over
TCP — the "Pipelines" section of strata.h.

    with strata.Model(path) as m, strata.Pipeline(m, workers=["10.0.0.2:7001", "10.0.0.3:7001"],
                                                  key_file="psk") as p:
        print(p.plan())                 # per stage: address, layer range, memory plan, sockets
        s = p.session()                 # a strata.Session: decode, logits, sample, generate ...
        text, info = s.generate_text("Once upon a time", max_tokens=32)
        print(p.stats())                # bytes per link, forward requests, per-hop latency

A stage that dies, goes silent or breaks the protocol makes the running call raise StrataError
STAGE_FAILED naming the stage; ``reconnect()`` re-dials it, then ``session.reset()``.
"""
from __future__ import annotations

import ctypes
import json
import os
import threading
from typing import Any, Callable, Iterable, Optional, Sequence, Union

from . import _lib
from ._convert import _buffer_text, _device_id, _kv_type_id
from ._handle import OwnedHandle
from ._lib import check
from .model import Model
from .session import Session

PathLike = Union[str, "os.PathLike[str]"]
Layers = Union[None, str, Sequence[Sequence[int]]]


# strata_wire_dtype: the hidden states' type between stages. f16 (the default) halves the bytes
# of f32; f32 keeps the logits bit-identical to one process.
WIRE_DTYPES = {"f32": 0, "f16": 1, "bf16": 2}


def format_layers(layers: Layers) -> Optional[str]:
    """"0:2,2:5,5:8" from a string (returned as is, stripped) or from [(0, 2), (2, 5), (5, 8)];
    None stays None (the head plans the ranges)."""
    if layers is None:
        return None
    if isinstance(layers, str):
        return layers.strip()
    parts = []
    for r in layers:
        a, b = (int(x) for x in r)
        parts.append(f"{a}:{b}")
    return ",".join(parts)


def _key_bytes(key: Union[None, bytes, bytearray, str]) -> Optional[bytes]:
    if key is None:
        return None
    if isinstance(key, str):
        return key.encode("utf-8")
    return bytes(key)


def _own_model(model: Union[Model, PathLike, Sequence[PathLike]]) -> tuple[Model, bool]:
    """(model, owned): a Model as given, or one opened here from path(s) and owned by the caller."""
    if isinstance(model, Model):
        return model, False
    return Model(model), True


def _new_params(cls: Any, default_params: str) -> Any:
    """A params struct of type ``cls`` filled by the library's ``default_params`` function."""
    p = cls()
    _lib.fn(default_params)(ctypes.byref(p))
    p.struct_size = ctypes.sizeof(cls)
    return p


def _key_params(p: Any, key: Union[None, bytes, str], key_file: Optional[PathLike]) -> tuple:
    """Sets the params' key_file, key and key_length; returns what they point to (kept alive by
    the caller): the encoded key file path and the key buffer."""
    c_key_file = os.fsencode(key_file) if key_file is not None else None
    p.key_file = c_key_file
    kb = _key_bytes(key)
    c_key = ctypes.create_string_buffer(kb, max(1, len(kb))) if kb is not None else None
    p.key = ctypes.cast(c_key, ctypes.c_void_p) if c_key is not None else None
    p.key_length = len(kb) if kb is not None else 0
    return c_key_file, c_key


def _tls_files(p: Any, cert: Optional[PathLike], key: Optional[PathLike], ca: Optional[PathLike]) -> tuple:
    """Sets the params' tls_*_file fields; returns the encoded paths (kept alive by the caller)."""
    files = tuple(os.fsencode(f) if f is not None else None for f in (cert, key, ca))
    p.tls_cert_file, p.tls_key_file, p.tls_ca_file = files
    return files


TRANSPORTS = ("tcp", "tls", "rdma", "nccl")


def transport_available(transport: str) -> bool:
    """Whether this library can carry pipeline links over ``transport`` (one of TRANSPORTS);
    ValueError for another name. transport_unavailable_reason() says why not."""
    return transport_unavailable_reason(transport) is None


def transport_unavailable_reason(transport: str) -> Optional[str]:
    """None when ``transport`` is available, else the library's reason (naming what is missing)."""
    if transport not in TRANSPORTS:
        raise ValueError(f"transport must be one of {list(TRANSPORTS)}, got {transport!r}")
    if not _lib.has("strata_transport_available"):
        return None if transport in ("tcp", "tls") else "the library predates strata_transport_available"
    status = _lib.fn("strata_transport_available")(transport.encode("ascii"))
    return None if status == 0 else _lib.last_error()


RDMA_SETTINGS = ("transports", "devices", "mtu", "max_inline", "rx_queue_len", "tx_queue_len")


def _link_params(p: Any, transport: Optional[str], rdma: Optional[dict]) -> tuple:
    """Sets the params' transport and rdma_* fields; returns the encoded strings (kept alive)."""
    rdma = dict(rdma or {})
    unknown = sorted(set(rdma) - set(RDMA_SETTINGS))
    if unknown:
        raise ValueError(f"unknown rdma settings {unknown}; expected some of {list(RDMA_SETTINGS)}")
    kept = tuple(s.encode("utf-8") if s is not None else None
                 for s in (transport, rdma.get("transports"), rdma.get("devices")))
    p.transport, p.rdma_transports, p.rdma_devices = kept
    p.rdma_mtu = int(rdma.get("mtu", 0))
    p.rdma_max_inline = int(rdma.get("max_inline", 0))
    p.rdma_rx_queue_len = int(rdma.get("rx_queue_len", 0))
    p.rdma_tx_queue_len = int(rdma.get("tx_queue_len", 0))
    return kept


class Pipeline(OwnedHandle):
    """The head of a pipeline over ``workers`` ("HOST:PORT" each, in stage order).

    ``model``: a strata.Model (kept alive by the pipeline) or the path(s) of its shards (opened
    here and closed with the pipeline). ``layers``: one range per stage, head first, as
    "0:2,2:5,5:8" or [(0, 2), (2, 5), (5, 8)]; None plans them from each worker's reported free
    memory. ``key`` (bytes) or ``key_file``: the pre-shared key (neither: the empty key, which
    workers accept only on loopback). ``n_ctx``, ``kv_type``: as for sessions, on every stage;
    ``n_threads``, ``memory_budget``: the head's own. ``n_batch``: the prefill micro-batch.
    Times in milliseconds. ``tls_ca_file``: TLS on every link, the workers' certificates checked
    against this CA (PEM) and the address dialed; ``tls_cert_file`` / ``tls_key_file``: the
    head's certificate for workers that require one (mutual TLS). ``transport``: "tcp" (default;
    "tls" when TLS files are given), "tls", or "rdma" (UCX; every worker must serve rdma), with
    ``rdma`` a dict of UCX settings: transports, devices, mtu, max_inline, rx_queue_len,
    tx_queue_len (StrataError UNSUPPORTED naming the transport when the library lacks it).
    Errors name the stage:
    StrataError REFUSED (key, model, version, layer range, a certificate or TLS handshake),
    STAGE_FAILED or IO (unreachable), OUT_OF_MEMORY (a stage's plan).
    """

    _FREE = "strata_pipeline_free"

    def __init__(self, model: Union[Model, PathLike, Sequence[PathLike]], workers: Iterable[str],
                 layers: Layers = None, key: Union[None, bytes, str] = None,
                 key_file: Optional[PathLike] = None, n_ctx: int = 0, n_threads: int = 0,
                 kv_type: Union[str, int] = "f16", memory_budget: int = 0, n_batch: int = 32,
                 heartbeat_ms: int = 1000, peer_timeout_ms: int = 5000, connect_timeout_ms: int = 5000,
                 socket_buffer_bytes: int = 0, wire_dtype: str = "f16",
                 tls_cert_file: Optional[PathLike] = None, tls_key_file: Optional[PathLike] = None,
                 tls_ca_file: Optional[PathLike] = None, transport: Optional[str] = None,
                 rdma: Optional[dict] = None):
        self._h: Optional[int] = None
        self._session: Optional[Session] = None
        self._model, self._owns_model = _own_model(model)
        try:
            self.workers = [str(w) for w in workers]
            if not self.workers:
                raise ValueError("a pipeline needs at least one worker")
            self.layers = format_layers(layers)
            p = _new_params(_lib.PipelineParams, "strata_pipeline_default_params")
            # Everything the params point to is kept alive as long as the pipeline (reconnect()
            # re-dials with the same settings, should the library keep the pointers).
            self._c_workers = (ctypes.c_char_p * len(self.workers))(*[w.encode("utf-8") for w in self.workers])
            p.workers = ctypes.cast(self._c_workers, ctypes.POINTER(ctypes.c_char_p))
            p.n_workers = len(self.workers)
            self._c_layers = self.layers.encode("utf-8") if self.layers is not None else None
            p.layers = self._c_layers
            self._c_key_file, self._c_key = _key_params(p, key, key_file)
            p.n_ctx = int(n_ctx)
            p.n_threads = int(n_threads)
            p.kv_type = _kv_type_id(kv_type)
            p.memory_budget = int(memory_budget)
            p.n_batch = int(n_batch)
            p.heartbeat_ms = int(heartbeat_ms)
            p.peer_timeout_ms = int(peer_timeout_ms)
            p.connect_timeout_ms = int(connect_timeout_ms)
            p.socket_buffer_bytes = int(socket_buffer_bytes)
            if wire_dtype not in WIRE_DTYPES:
                raise ValueError(f"wire_dtype must be one of {sorted(WIRE_DTYPES)}, got {wire_dtype!r}")
            p.wire_dtype = WIRE_DTYPES[wire_dtype]
            self._c_tls = _tls_files(p, tls_cert_file, tls_key_file, tls_ca_file)
            self._c_link = _link_params(p, transport, rdma)
            self._params = p
            h = ctypes.c_void_p()
            check(_lib.fn("strata_pipeline_create")(self._model._handle(), ctypes.byref(p), ctypes.byref(h)))
            self._h = h.value
            self._model._sessions.add(self)  # Model.close() closes the pipeline (and its session) first
        except BaseException:
            if self._owns_model:
                self._model.close()
            raise

    # --- lifetime -------------------------------------------------------------------------------
    def close(self) -> None:
        """Close the pipeline's session, free the pipeline (idempotent), then the model when the
        pipeline opened it."""
        s, self._session = getattr(self, "_session", None), None
        if s is not None:
            s.close()
        model = getattr(self, "_model", None)
        if self._h is not None and model is not None and model._h is None:
            self._h = None  # the model went first (a reference cycle collected at once)
        super().close()
        if model is not None and getattr(self, "_owns_model", False):
            self._owns_model = False  # Model.close() closes this pipeline again: no recursion
            model.close()

    @property
    def closed(self) -> bool:
        return self._h is None

    @property
    def model(self) -> Model:
        return self._model

    def _handle(self) -> int:
        if self._h is None:
            raise ValueError("the pipeline is closed")
        return self._h

    # --- reports --------------------------------------------------------------------------------
    def plan_json(self) -> str:
        """strata_pipeline_plan_json: the plan as executed (per stage: address, layer range,
        memory plan, what the worker reported, socket settings configured and observed)."""
        h = self._handle()
        return _buffer_text(lambda b, c, n: _lib.fn("strata_pipeline_plan_json")(h, b, c, n))

    def plan(self) -> Any:
        """The plan as executed, parsed from plan_json()."""
        return json.loads(self.plan_json())

    def stats_json(self) -> str:
        """strata_pipeline_stats_json: counters since creation (bytes per link, forward
        requests, per-hop round-trip latency in microseconds)."""
        h = self._handle()
        return _buffer_text(lambda b, c, n: _lib.fn("strata_pipeline_stats_json")(h, b, c, n))

    def stats(self) -> Any:
        """The counters since creation, parsed from stats_json()."""
        return json.loads(self.stats_json())

    # --- running --------------------------------------------------------------------------------
    def session(self) -> Session:
        """The pipeline's sequence as a strata.Session (decode, logits, sample, sample_top,
        generate, generate_text, reset ...). One per pipeline: calling again returns the same
        open Session; a closed one is replaced by a fresh handle."""
        if self._session is not None and not self._session.closed:
            return self._session
        h = ctypes.c_void_p()
        check(_lib.fn("strata_pipeline_session")(self._handle(), ctypes.byref(h)))
        self._session = Session._adopt(h.value, self._model, self)
        return self._session

    def reconnect(self) -> None:
        """After StrataError STAGE_FAILED: re-dial the failed stages with the same plan. The
        sequence is lost: reset the session before decoding again."""
        check(_lib.fn("strata_pipeline_reconnect")(self._handle()))

    def __repr__(self) -> str:
        if self._h is None:
            return "<strata.Pipeline closed>"
        return f"<strata.Pipeline workers={self.workers} layers={self.layers!r}>"


class Worker(OwnedHandle):
    """A worker serving a layer range of ``model`` to pipeline heads (what strata-worker runs).

    ``listen``: "HOST:PORT" (port 0: any free port, see ``port``). ``layers``: a fixed range as
    "A:B" or (A, B); None takes whatever range the head assigns. ``key`` / ``key_file``: the
    pre-shared key (neither: only loopback, unless ``allow_no_key``). ``log``: called with each
    log line (default: the library writes them to stderr); it runs on the worker's threads.

    ``tls_cert_file`` / ``tls_key_file``: TLS on every connection with this certificate and key
    (PEM); ``tls_ca_file``: heads must present a certificate signed by this CA (mutual TLS).

    ``transport`` and ``rdma``: as for Pipeline; "rdma" listens through UCX on ``listen``.

    ``device`` "cuda": the stages' layers run on the GPU (``memory_budget`` is then device
    memory); StrataError (UNSUPPORTED) naming why when no GPU can be used.

    ``run()`` serves and blocks; ``start()`` runs it on a daemon thread; ``stop()`` (any thread)
    makes it return; ``close()`` stops, joins and frees.
    """

    _FREE = "strata_worker_free"

    def __init__(self, model: Union[Model, PathLike, Sequence[PathLike]], listen: str = "127.0.0.1:0",
                 layers: Union[None, str, Sequence[int]] = None, key: Union[None, bytes, str] = None,
                 key_file: Optional[PathLike] = None, allow_no_key: bool = False, n_threads: int = 0,
                 memory_budget: int = 0, heartbeat_ms: int = 1000, peer_timeout_ms: int = 5000,
                 log: Optional[Callable[[str], Any]] = None, tls_cert_file: Optional[PathLike] = None,
                 tls_key_file: Optional[PathLike] = None, tls_ca_file: Optional[PathLike] = None,
                 device: Union[str, int] = "cpu", transport: Optional[str] = None,
                 rdma: Optional[dict] = None):
        self._h: Optional[int] = None
        self._thread: Optional[threading.Thread] = None
        self._run_error: Optional[BaseException] = None
        self._model, self._owns_model = _own_model(model)
        try:
            p = _new_params(_lib.WorkerParams, "strata_worker_default_params")
            self._c_listen = str(listen).encode("utf-8")
            p.listen = self._c_listen
            self._c_key_file, self._c_key = _key_params(p, key, key_file)
            p.allow_no_key = int(bool(allow_no_key))
            if layers is not None:
                if isinstance(layers, str):
                    a, sep, b = layers.strip().partition(":")
                    if not sep:
                        raise ValueError(f"layers must be 'A:B', got {layers!r}")
                    begin, end = int(a), int(b)
                else:
                    begin, end = (int(x) for x in layers)
                p.layer_begin, p.layer_end = begin, end
            p.n_threads = int(n_threads)
            p.memory_budget = int(memory_budget)
            p.heartbeat_ms = int(heartbeat_ms)
            p.peer_timeout_ms = int(peer_timeout_ms)
            p.device = _device_id(device)
            self._c_tls = _tls_files(p, tls_cert_file, tls_key_file, tls_ca_file)
            self._c_link = _link_params(p, transport, rdma)
            self._log_fn = log
            if log is not None:
                def cb(line: Optional[bytes], _user: Any) -> None:
                    try:
                        log((line or b"").decode("utf-8", "replace"))
                    except Exception:  # noqa: BLE001 - a logging callback must not unwind into C
                        pass
                self._c_log = _lib.WORKER_LOG_FN(cb)
                p.log = self._c_log
            self._params = p
            h = ctypes.c_void_p()
            check(_lib.fn("strata_worker_create")(self._model._handle(), ctypes.byref(p), ctypes.byref(h)))
            self._h = h.value
        except BaseException:
            if self._owns_model:
                self._model.close()
            raise

    def _handle(self) -> int:
        if self._h is None:
            raise ValueError("the worker is closed")
        return self._h

    @property
    def closed(self) -> bool:
        return self._h is None

    @property
    def port(self) -> int:
        """The bound port (the real one when listening on port 0)."""
        v = ctypes.c_uint16()
        check(_lib.fn("strata_worker_port")(self._handle(), ctypes.byref(v)))
        return int(v.value)

    def run(self) -> None:
        """Serve until stop(); blocks the calling thread (the GIL is released meanwhile)."""
        check(_lib.fn("strata_worker_run")(self._handle()))

    def start(self) -> "Worker":
        """Run on a daemon thread; an error it ends with is raised by close()/join()."""
        if self._thread is not None:
            raise RuntimeError("the worker is already running")

        def body() -> None:
            try:
                self.run()
            except BaseException as e:  # noqa: BLE001 - kept for join()
                self._run_error = e

        self._thread = threading.Thread(target=body, name="strata-worker", daemon=True)
        self._thread.start()
        return self

    def stop(self) -> None:
        """Make run() return soon (thread-safe)."""
        if self._h is not None:
            check(_lib.fn("strata_worker_stop")(self._h))

    def join(self, timeout: Optional[float] = None) -> None:
        t = self._thread
        if t is not None:
            t.join(timeout)
            if t.is_alive():
                raise TimeoutError(f"the worker did not stop within {timeout} s")
            self._thread = None
        err, self._run_error = self._run_error, None
        if err is not None:
            raise err

    def close(self) -> None:
        """Stop, join the thread started by start(), free the worker (idempotent)."""
        t = getattr(self, "_thread", None)
        if self._h is not None and t is not None:
            self.stop()
            t.join(30)
            if t.is_alive():
                self._h = None  # leaked on purpose: freeing a worker that still runs would crash
                raise TimeoutError("the worker did not stop within 30 s after stop()")
            self._thread = None
        super().close()
        if getattr(self, "_owns_model", False) and getattr(self, "_model", None) is not None:
            self._owns_model = False
            self._model.close()

    def __repr__(self) -> str:
        if self._h is None:
            return "<strata.Worker closed>"
        return f"<strata.Worker listen={self._c_listen.decode()} port={self.port}>"
