"""strata.Model: a GGUF file or split model opened (memory-mapped) by libstrata."""
from __future__ import annotations

import ctypes
import json
import os
import weakref
from dataclasses import dataclass
from typing import Any, Callable, Iterable, Optional, Sequence, Union

import numpy as np

from . import _lib
from ._convert import _as_token, _buffer_text, _device_id, _key, _kv_type_id, _token_array
from ._handle import OwnedHandle
from ._lib import check
from ._types import FLOAT_TYPES, SIGNED_TYPES, MetadataType, ValueType, tensor_type_name
from .errors import StrataError

PathLike = Union[str, bytes, "os.PathLike[str]"]
ProgressFn = Callable[[str, int, int], None]


@dataclass(frozen=True)
class TensorInfo:
    """One tensor of the model. ``ne`` is ggml order (innermost first); ``shape`` is numpy order."""

    index: int
    name: str
    type: int
    type_name: str
    ne: tuple[int, ...]
    n_elements: int
    n_bytes: int
    shard: int
    file_offset: int

    @property
    def n_dims(self) -> int:
        return len(self.ne)

    @property
    def shape(self) -> tuple[int, ...]:
        """numpy shape: reversed ne, e.g. (ne[1], ne[0]) for a 2-D tensor."""
        return tuple(reversed(self.ne))


@dataclass(frozen=True)
class VocabInfo:
    """The model's vocabulary (strata_vocab_info). ``bos``/``eos`` are -1 when absent; ``kind``
    is "spm" (SentencePiece-style, GGUF "llama") or "bpe" (byte-level, GGUF "gpt2")."""

    n_vocab: int
    bos: int
    eos: int
    add_bos: bool
    kind: str


@dataclass(frozen=True)
class ShardInfo:
    """One file of the model."""

    index: int
    path: str
    size: int
    gguf_version: int
    alignment: int
    data_offset: int
    n_tensors: int
    n_metadata: int


def _decode_string(raw: bytes) -> Union[str, bytes]:
    try:
        return raw.decode("utf-8")
    except UnicodeDecodeError:
        return raw


class Model(OwnedHandle):
    """A GGUF model opened by libstrata.

    ``paths``: one path (a single file or the first shard NAME-00001-of-0000N.gguf, whose
    siblings are found by name) or a sequence of every shard. ``progress(what, done, total)``
    is called while shards are hashed. Use as a context manager or call close(); objects
    taken from the model (tensor_bytes(copy=False) views) must not outlive it.

    Metadata strings are returned as ``str`` when they are valid UTF-8, otherwise as the raw
    ``bytes``.
    """

    _FREE = "strata_model_free"
    #: The class session() builds (strata.Session). session.py sets it where it defines Session:
    #: that module builds on this one, so this one does not import it.
    _session_class: Optional[type] = None

    def __init__(self, paths: Union[PathLike, Sequence[PathLike]], digest_cache_dir: Optional[PathLike] = None,
                 use_digest_cache: bool = True, progress: Optional[ProgressFn] = None):
        self._h: Optional[int] = None
        L = _lib.lib()
        if isinstance(paths, (str, bytes, os.PathLike)):
            paths = [paths]
        encoded = [os.fsencode(p) for p in paths]
        arr = (ctypes.c_char_p * max(1, len(encoded)))(*encoded)
        params = _lib.ModelParams()
        L.strata_model_default_params(ctypes.byref(params))
        params.struct_size = ctypes.sizeof(_lib.ModelParams)
        self._progress_error: Optional[BaseException] = None
        self._progress_cb = None
        if progress is not None:
            def cb(what, done, total, _user):  # exceptions are kept and re-raised after the call
                try:
                    progress(what.decode("utf-8", "surrogateescape") if what else "", int(done), int(total))
                except BaseException as e:  # noqa: BLE001
                    if self._progress_error is None:
                        self._progress_error = e
            self._progress_cb = _lib.PROGRESS_FN(cb)
            params.progress = self._progress_cb
        self._cache_dir = os.fsencode(digest_cache_dir) if digest_cache_dir is not None else None
        params.digest_cache_dir = self._cache_dir
        params.use_digest_cache = 1 if use_digest_cache else 0
        handle = ctypes.c_void_p()
        self._call(L.strata_model_open(arr, len(encoded), ctypes.byref(params), ctypes.byref(handle)))
        self._h = handle.value
        self._metadata: Optional[dict[str, Any]] = None
        self._tensors: Optional[list[TensorInfo]] = None
        self._by_name: dict[str, TensorInfo] = {}
        self._sessions: "weakref.WeakSet[Any]" = weakref.WeakSet()

    def close(self) -> None:
        """Free the model (idempotent). Sessions still open on it are closed first (the library
        requires sessions to be freed before their model)."""
        sessions = getattr(self, "_sessions", None)
        if sessions is not None:
            for s in list(sessions):
                s.close()
        super().close()

    @property
    def closed(self) -> bool:
        return self._h is None

    def _handle(self) -> int:
        if self._h is None:
            raise ValueError("the model is closed")
        return self._h

    def _call(self, status: int) -> None:
        err, self._progress_error = self._progress_error, None
        check(status)
        if err is not None:
            raise err

    # --- header -------------------------------------------------------------------------------
    @property
    def gguf_version(self) -> int:
        v = ctypes.c_uint32()
        check(_lib.lib().strata_model_gguf_version(self._handle(), ctypes.byref(v)))
        return v.value

    # --- metadata -----------------------------------------------------------------------------
    def keys(self) -> list[str]:
        """Metadata keys in file order."""
        L, h = _lib.lib(), self._handle()
        n = ctypes.c_size_t()
        check(L.strata_model_metadata_count(h, ctypes.byref(n)))
        out = []
        for i in range(n.value):
            k = ctypes.c_char_p()
            check(L.strata_model_metadata_key(h, i, ctypes.byref(k)))
            out.append(k.value.decode("utf-8", "surrogateescape"))
        return out

    @property
    def metadata(self) -> dict[str, Any]:
        """All key/value pairs in file order (a fresh dict each time; values converted as get())."""
        if self._metadata is None:
            self._metadata = {k: self.get(k) for k in self.keys()}
        return dict(self._metadata)

    def metadata_type(self, key: str) -> MetadataType:
        """(type, element_type, count) of a value; NOT_FOUND for an unknown key."""
        t, et, n = ctypes.c_int(), ctypes.c_int(), ctypes.c_uint64()
        check(_lib.lib().strata_model_metadata_type(self._handle(), _key(key), ctypes.byref(t), ctypes.byref(et),
                                                    ctypes.byref(n)))
        return MetadataType(ValueType(t.value), ValueType(et.value), n.value)

    def get(self, key: str) -> Any:
        """One value as a Python object: int, float, bool, str (bytes if not UTF-8) or list."""
        mt = self.metadata_type(key)
        if mt.type == ValueType.ARRAY:
            if mt.element_type == ValueType.ARRAY:
                return self.get_json(key)
            return [self._array_element(key, mt.element_type, i) for i in range(mt.count)]
        return self._scalar(key, mt.type)

    def _scalar(self, key: str, t: ValueType) -> Any:
        if t == ValueType.STRING:
            return _decode_string(self.get_string_bytes(key))
        if t == ValueType.BOOL:
            return self.get_bool(key)
        if t in FLOAT_TYPES:
            return self.get_float(key)
        if t in SIGNED_TYPES:
            return self.get_int(key)
        return self.get_uint(key)

    def _array_element(self, key: str, t: ValueType, i: int) -> Any:
        L, h, k = _lib.lib(), self._handle(), _key(key)
        if t == ValueType.STRING:
            p, n = ctypes.c_void_p(), ctypes.c_size_t()
            check(L.strata_model_metadata_array_string(h, k, i, ctypes.byref(p), ctypes.byref(n)))
            return _decode_string(ctypes.string_at(p.value, n.value) if n.value else b"")
        if t == ValueType.BOOL:
            b = ctypes.c_int()
            check(L.strata_model_metadata_array_bool(h, k, i, ctypes.byref(b)))
            return bool(b.value)
        if t in FLOAT_TYPES:
            d = ctypes.c_double()
            check(L.strata_model_metadata_array_float(h, k, i, ctypes.byref(d)))
            return d.value
        if t in SIGNED_TYPES:
            v = ctypes.c_int64()
            check(L.strata_model_metadata_array_int(h, k, i, ctypes.byref(v)))
            return v.value
        u = ctypes.c_uint64()
        check(L.strata_model_metadata_array_uint(h, k, i, ctypes.byref(u)))
        return u.value

    def get_int(self, key: str) -> int:
        """An integer value of any width that fits int64 (else TYPE_MISMATCH)."""
        v = ctypes.c_int64()
        check(_lib.lib().strata_model_metadata_int(self._handle(), _key(key), ctypes.byref(v)))
        return v.value

    def get_uint(self, key: str) -> int:
        """An integer value of any width that fits uint64 (else TYPE_MISMATCH)."""
        v = ctypes.c_uint64()
        check(_lib.lib().strata_model_metadata_uint(self._handle(), _key(key), ctypes.byref(v)))
        return v.value

    def get_float(self, key: str) -> float:
        """An f32 or f64 value."""
        v = ctypes.c_double()
        check(_lib.lib().strata_model_metadata_float(self._handle(), _key(key), ctypes.byref(v)))
        return v.value

    def get_bool(self, key: str) -> bool:
        v = ctypes.c_int()
        check(_lib.lib().strata_model_metadata_bool(self._handle(), _key(key), ctypes.byref(v)))
        return bool(v.value)

    def get_string_bytes(self, key: str) -> bytes:
        """A string value's raw bytes (may contain NUL or invalid UTF-8)."""
        p, n = ctypes.c_void_p(), ctypes.c_size_t()
        check(_lib.lib().strata_model_metadata_string(self._handle(), _key(key), ctypes.byref(p), ctypes.byref(n)))
        return ctypes.string_at(p.value, n.value) if n.value else b""

    def get_string(self, key: str) -> str:
        """A string value decoded as UTF-8 (undecodable bytes kept with surrogateescape)."""
        return self.get_string_bytes(key).decode("utf-8", "surrogateescape")

    def get_json_text(self, key: str) -> str:
        """strata_model_metadata_json: the value as JSON text."""
        L, h, k = _lib.lib(), self._handle(), _key(key)
        needed = ctypes.c_size_t()
        buf = ctypes.create_string_buffer(256)
        st = L.strata_model_metadata_json(h, k, buf, len(buf), ctypes.byref(needed))
        if st == 6:  # BUFFER_TOO_SMALL
            buf = ctypes.create_string_buffer(needed.value)
            st = L.strata_model_metadata_json(h, k, buf, len(buf), ctypes.byref(needed))
        check(st)
        return buf.value.decode("utf-8", "surrogateescape")

    def get_json(self, key: str) -> Any:
        """The value parsed from its JSON text (nested arrays included)."""
        return json.loads(self.get_json_text(key))

    def __contains__(self, key: object) -> bool:
        if not isinstance(key, str):
            return False
        try:
            self.metadata_type(key)
            return True
        except StrataError as e:
            if e.status == 5:
                return False
            raise

    # --- tensors ------------------------------------------------------------------------------
    @property
    def tensors(self) -> list[TensorInfo]:
        """Every tensor, shards concatenated in order."""
        if self._tensors is None:
            L, h = _lib.lib(), self._handle()
            n = ctypes.c_size_t()
            check(L.strata_model_tensor_count(h, ctypes.byref(n)))
            ts = [self._tensor_info(i) for i in range(n.value)]
            self._tensors = ts
            self._by_name = {t.name: t for t in ts}
        return list(self._tensors)

    def _tensor_info(self, i: int) -> TensorInfo:
        info = _lib.TensorInfoC()
        info.struct_size = ctypes.sizeof(_lib.TensorInfoC)
        check(_lib.lib().strata_model_tensor_info(self._handle(), i, ctypes.byref(info)))
        nd = int(info.n_dims)
        return TensorInfo(index=i, name=info.name.decode("utf-8", "surrogateescape"), type=info.type,
                          type_name=tensor_type_name(info.type), ne=tuple(int(x) for x in info.ne[:nd]),
                          n_elements=int(info.n_elements), n_bytes=int(info.n_bytes), shard=int(info.shard),
                          file_offset=int(info.file_offset))

    def tensor(self, name: str) -> TensorInfo:
        """The tensor called ``name``; StrataError NOT_FOUND if there is none."""
        idx = ctypes.c_size_t()
        check(_lib.lib().strata_model_find_tensor(self._handle(), _key(name), ctypes.byref(idx)))
        return self._tensor_info(idx.value)

    def _index(self, t: Union[str, TensorInfo, int]) -> int:
        if isinstance(t, TensorInfo):
            return t.index
        if isinstance(t, int):
            return t
        return self.tensor(t).index

    def tensor_bytes(self, name: Union[str, TensorInfo, int], copy: bool = True) -> Union[bytes, memoryview]:
        """The bytes as stored: a copy, or (copy=False) a zero-copy read-only view of the mapping,
        valid until close()."""
        p, n = ctypes.c_void_p(), ctypes.c_uint64()
        check(_lib.lib().strata_model_tensor_data(self._handle(), self._index(name), ctypes.byref(p), ctypes.byref(n)))
        if n.value == 0:
            return b"" if copy else memoryview(b"")
        if copy:
            return ctypes.string_at(p.value, n.value)
        mapped = (ctypes.c_char * n.value).from_address(p.value)
        mapped.model = self  # the view keeps the model from being collected (close() still ends it)
        return memoryview(mapped).cast("B").toreadonly()

    def read_f32(self, name: Union[str, TensorInfo, int]) -> np.ndarray:
        """The tensor dequantized to float32, numpy-shaped (reversed ne)."""
        info = name if isinstance(name, TensorInfo) else self._tensor_info(self._index(name))
        out = np.empty(info.n_elements, dtype=np.float32)
        needed = ctypes.c_uint64()
        check(_lib.lib().strata_model_tensor_read_f32(self._handle(), info.index, out.ctypes.data, out.size,
                                                      ctypes.byref(needed)))
        return out.reshape(info.shape)

    # --- shards and identity ------------------------------------------------------------------
    @property
    def shards(self) -> list[ShardInfo]:
        L, h = _lib.lib(), self._handle()
        n = ctypes.c_size_t()
        check(L.strata_model_shard_count(h, ctypes.byref(n)))
        out = []
        for i in range(n.value):
            s = _lib.ShardInfoC()
            s.struct_size = ctypes.sizeof(_lib.ShardInfoC)
            check(L.strata_model_shard_info(h, i, ctypes.byref(s)))
            out.append(ShardInfo(index=i, path=os.fsdecode(s.path), size=int(s.size), gguf_version=int(s.gguf_version),
                                 alignment=int(s.alignment), data_offset=int(s.data_offset),
                                 n_tensors=int(s.n_tensors), n_metadata=int(s.n_metadata)))
        return out

    def shard_sha256(self, index: int) -> str:
        """sha256 of a whole shard file (64 lowercase hex digits); cached by the library."""
        buf = ctypes.create_string_buffer(65)
        self._call(_lib.lib().strata_model_shard_sha256(self._handle(), index, buf))
        return buf.value.decode("ascii")

    def identity(self) -> str:
        """The model identity (sha256 hex over metadata without split.*, tensor table, shard digests)."""
        buf = ctypes.create_string_buffer(65)
        self._call(_lib.lib().strata_model_identity(self._handle(), buf))
        return buf.value.decode("ascii")

    # --- tokenizer ----------------------------------------------------------------------------
    @property
    def vocab(self) -> VocabInfo:
        """n_vocab, bos, eos, add_bos and kind of the model's vocabulary."""
        info = _lib.VocabInfoC()
        info.struct_size = ctypes.sizeof(_lib.VocabInfoC)
        check(_lib.fn("strata_model_vocab_info")(self._handle(), ctypes.byref(info)))
        return VocabInfo(n_vocab=int(info.n_vocab), bos=int(info.bos), eos=int(info.eos),
                         add_bos=bool(info.add_bos), kind=(info.kind or b"").decode("utf-8", "replace"))

    def tokenize(self, text: Union[str, bytes], add_special: bool = True, parse_special: bool = False) -> list[int]:
        """Token ids of ``text`` (str, or UTF-8 bytes). add_special: BOS/EOS as the vocabulary asks;
        parse_special: "<s>" and the like become their special token instead of plain text."""
        raw = text.encode("utf-8", "surrogateescape") if isinstance(text, str) else bytes(text)
        f, h = _lib.fn("strata_tokenize"), self._handle()
        src = ctypes.create_string_buffer(raw, max(1, len(raw)))
        cap = max(16, len(raw) + 4)
        for _ in range(3):
            buf = np.empty(cap, dtype=np.int32)
            n = ctypes.c_size_t()
            st = f(h, src, len(raw), int(bool(add_special)), int(bool(parse_special)), buf.ctypes.data, cap,
                   ctypes.byref(n))
            if st == 6 and n.value > cap:  # BUFFER_TOO_SMALL: the needed count is in n
                cap = n.value
                continue
            check(st)
            return [int(x) for x in buf[:n.value]]
        raise StrataError(8, "strata_tokenize kept asking for a larger buffer")

    def detokenize(self, tokens: Iterable[int], remove_special: bool = False, errors: str = "replace") -> str:
        """Text of a token sequence; remove_special drops control tokens (BOS, EOS, ...). Bytes that
        are not valid UTF-8 are decoded with ``errors`` (see detokenize_bytes for the raw bytes)."""
        return self.detokenize_bytes(tokens, remove_special).decode("utf-8", errors)

    def detokenize_bytes(self, tokens: Iterable[int], remove_special: bool = False) -> bytes:
        """The bytes of a token sequence as the library writes them."""
        ids = _token_array(tokens)
        f, h = _lib.fn("strata_detokenize"), self._handle()
        cap = max(64, 8 * len(ids) + 1)
        for _ in range(3):
            buf = ctypes.create_string_buffer(cap)
            n = ctypes.c_size_t()
            st = f(h, ids.ctypes.data if ids.size else None, ids.size, int(bool(remove_special)), buf, cap,
                   ctypes.byref(n))
            if st == 6 and n.value >= cap:
                cap = n.value + 1
                continue
            check(st)
            return buf.raw[:n.value]
        raise StrataError(8, "strata_detokenize kept asking for a larger buffer")

    def is_eog(self, token: int) -> bool:
        """Whether ``token`` ends generation (eos, eot, eom, end-of-turn tokens), as llama.cpp decides."""
        out = ctypes.c_int()
        check(_lib.fn("strata_token_is_eog")(self._handle(), _as_token(token), ctypes.byref(out)))
        return bool(out.value)

    def token_to_piece(self, token: int) -> bytes:
        """The bytes one token contributes to the text (possibly an incomplete UTF-8 sequence)."""
        f, h = _lib.fn("strata_token_to_piece"), self._handle()
        cap = 64
        for _ in range(3):
            buf = ctypes.create_string_buffer(cap)
            n = ctypes.c_size_t()
            st = f(h, _as_token(token), buf, cap, ctypes.byref(n))
            if st == 6 and n.value > cap:
                cap = n.value + 1
                continue
            check(st)
            return buf.raw[:n.value]
        raise StrataError(8, "strata_token_to_piece kept asking for a larger buffer")

    # --- chat templates -----------------------------------------------------------------------
    def apply_chat_template(self, messages: Sequence[Any], add_generation_prompt: bool = True,
                            template: Optional[str] = None, **extra: Any) -> str:
        """The conversation rendered as the model's prompt text, as jinja2 renders the chat
        template (Hugging Face's settings). messages: a list of dicts (role, content, tool_calls,
        ...), as the OpenAI API writes them. template: None for the model's own
        tokenizer.chat_template, a built-in format name (chat_builtin_formats()) or Jinja source.
        extra: more template variables (tools=[...], enable_thinking=False, ...)."""
        f, h = _lib.fn("strata_chat_apply_template"), self._handle()
        msgs = json.dumps(list(messages), ensure_ascii=False).encode("utf-8")
        src = None if template is None else template.encode("utf-8", "surrogateescape")
        ext = json.dumps(extra, ensure_ascii=False).encode("utf-8") if extra else None
        n = ctypes.c_size_t()
        st = f(h, src, msgs, int(bool(add_generation_prompt)), ext, None, 0, ctypes.byref(n))
        if st == 0:
            return ""
        if st != 6:  # anything but BUFFER_TOO_SMALL
            check(st)
        buf = ctypes.create_string_buffer(n.value + 1)
        check(f(h, src, msgs, int(bool(add_generation_prompt)), ext, buf, n.value + 1, ctypes.byref(n)))
        return buf.raw[:n.value].decode("utf-8", "surrogateescape")

    # --- sessions -----------------------------------------------------------------------------
    def session(self, n_ctx: int = 0, n_threads: int = 0, kv_type: Union[str, int] = "f16",
                memory_budget: int = 0, device: Union[str, int] = "cpu", **sampling: Any) -> Any:
        """A strata.Session (one sequence: KV cache and sampler) on this model; see strata.Session.
        Sampling settings (temperature, top_k, top_p, min_p, repeat_penalty, repeat_last_n, seed)
        may be given here; those not given keep the library's defaults."""
        if self._session_class is None:  # only when strata.session was never imported
            raise RuntimeError("strata.session is not loaded: import strata")
        return self._session_class(self, n_ctx=n_ctx, n_threads=n_threads, kv_type=kv_type,
                                   memory_budget=memory_budget, device=device, **sampling)

    # --- memory plans -------------------------------------------------------------------------
    def plan_json(self, n_ctx: int = 4096, kv_type: Union[str, int] = "f16", layers: Optional[str] = None,
                  n_stages: int = 1, n_batch: int = 512, n_threads: int = 0,
                  device: Union[str, int] = "cpu") -> str:
        """strata_model_plan_json: the memory plan of each stage as JSON text, from the tensor table
        and the hyperparameters alone (nothing allocated, nothing hashed). ``device`` "cuda": the
        GPU's plan (works without a GPU)."""
        p = _lib.PlanParams()
        _lib.fn("strata_plan_default_params")(ctypes.byref(p))
        p.n_ctx = int(n_ctx)
        p.kv_type = _kv_type_id(kv_type)
        layers_bytes = None if layers is None else str(layers).encode("utf-8")
        p.layers = layers_bytes
        p.n_stages = int(n_stages)
        p.n_batch = int(n_batch)
        p.n_threads = int(n_threads)
        p.device = _device_id(device)
        f, h = _lib.fn("strata_model_plan_json"), self._handle()
        return _buffer_text(lambda b, c, n: f(h, ctypes.byref(p), b, c, n))

    def plan(self, n_ctx: int = 4096, kv_type: Union[str, int] = "f16", layers: Optional[str] = None,
             n_stages: int = 1, n_batch: int = 512, n_threads: int = 0,
             device: Union[str, int] = "cpu") -> dict[str, Any]:
        """The memory plan of each stage for a context of n_ctx tokens, as a dict: per stage its
        layers, weight bytes, KV cache bytes per token, at n_ctx and at 1,048,576 tokens, scratch
        and total (see strata_model_plan_json). ``layers``: "0:20,20:40,..." (one range per stage);
        without it, ``n_stages`` stages with the layers split evenly. ``device`` "cuda": what a CUDA
        session or stage plans on the device (no GPU needed). Raises StrataError
        (INVALID_ARGUMENT for a bad plan or setting, UNSUPPORTED for a KV type the model's cache
        cannot use, or with "cuda" a library without the CUDA backend or a model the GPU does not
        run)."""
        return json.loads(self.plan_json(n_ctx=n_ctx, kv_type=kv_type, layers=layers, n_stages=n_stages,
                                         n_batch=n_batch, n_threads=n_threads, device=device))

    def __repr__(self) -> str:
        if self._h is None:
            return "<strata.Model closed>"
        return f"<strata.Model {len(self.shards)} shard(s), {len(self.tensors)} tensors>"


def open_model(paths: Union[PathLike, Iterable[PathLike]], **kwargs: Any) -> Model:
    """Same as Model(paths, **kwargs)."""
    if not isinstance(paths, (str, bytes, os.PathLike)):
        paths = list(paths)
    return Model(paths, **kwargs)


def chat_builtin_formats() -> list[str]:
    """The names of the built-in chat formats usable as Model.apply_chat_template(template=...)."""
    raw = _lib.fn("strata_chat_builtin_formats")()
    return [name for name in raw.decode("ascii").split(",") if name]
