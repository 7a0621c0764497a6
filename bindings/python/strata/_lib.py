"""Finding and loading libstrata.so, and the ctypes prototypes of every strata.h function."""
from __future__ import annotations

import ctypes
import ctypes.util
import os
import sys
import threading
from pathlib import Path
from typing import Optional

from .errors import AbiMismatch, LibraryError, LibraryNotFound, StrataError

#: STRATA_ABI_VERSION of the strata.h these bindings follow.
ABI_VERSION = 1

c_status = ctypes.c_int
c_size_p = ctypes.POINTER(ctypes.c_size_t)
c_u64_p = ctypes.POINTER(ctypes.c_uint64)
c_i64_p = ctypes.POINTER(ctypes.c_int64)
c_int_p = ctypes.POINTER(ctypes.c_int)
c_char_pp = ctypes.POINTER(ctypes.c_char_p)
c_voidp_p = ctypes.POINTER(ctypes.c_void_p)

PROGRESS_FN = ctypes.CFUNCTYPE(None, ctypes.c_char_p, ctypes.c_uint64, ctypes.c_uint64, ctypes.c_void_p)


class ModelParams(ctypes.Structure):
    _fields_ = [
        ("struct_size", ctypes.c_size_t),
        ("progress", PROGRESS_FN),
        ("progress_user_data", ctypes.c_void_p),
        ("digest_cache_dir", ctypes.c_char_p),
        ("use_digest_cache", ctypes.c_int),
    ]


class TensorInfoC(ctypes.Structure):
    _fields_ = [
        ("struct_size", ctypes.c_size_t),
        ("name", ctypes.c_char_p),
        ("type", ctypes.c_int),
        ("n_dims", ctypes.c_uint32),
        ("ne", ctypes.c_int64 * 4),
        ("n_elements", ctypes.c_uint64),
        ("n_bytes", ctypes.c_uint64),
        ("shard", ctypes.c_uint32),
        ("file_offset", ctypes.c_uint64),
    ]


class ShardInfoC(ctypes.Structure):
    _fields_ = [
        ("struct_size", ctypes.c_size_t),
        ("path", ctypes.c_char_p),
        ("size", ctypes.c_uint64),
        ("gguf_version", ctypes.c_uint32),
        ("alignment", ctypes.c_uint32),
        ("data_offset", ctypes.c_uint64),
        ("n_tensors", ctypes.c_uint64),
        ("n_metadata", ctypes.c_uint64),
    ]


class WriteParams(ctypes.Structure):
    _fields_ = [("struct_size", ctypes.c_size_t), ("n_shards", ctypes.c_uint32)]


class VocabInfoC(ctypes.Structure):
    _fields_ = [
        ("struct_size", ctypes.c_size_t),
        ("n_vocab", ctypes.c_int32),
        ("bos", ctypes.c_int32),
        ("eos", ctypes.c_int32),
        ("add_bos", ctypes.c_int),
        ("kind", ctypes.c_char_p),
    ]


class SessionParams(ctypes.Structure):
    _fields_ = [
        ("struct_size", ctypes.c_size_t),
        ("n_ctx", ctypes.c_int64),
        ("n_threads", ctypes.c_int32),
        ("kv_type", ctypes.c_int32),
        ("memory_budget", ctypes.c_uint64),
        ("device", ctypes.c_int32),  # appended: strata_device
        ("n_seq", ctypes.c_int32),  # appended after device: sequence slots
    ]


class SamplingParams(ctypes.Structure):
    _fields_ = [
        ("struct_size", ctypes.c_size_t),
        ("temperature", ctypes.c_float),
        ("top_k", ctypes.c_int32),
        ("top_p", ctypes.c_float),
        ("min_p", ctypes.c_float),
        ("repeat_penalty", ctypes.c_float),
        ("repeat_last_n", ctypes.c_int32),
        ("seed", ctypes.c_uint64),
    ]


# int (*)(int32_t token, const char* piece, size_t piece_length, void* user_data); the piece is
# taken as a void pointer: it is not NUL-terminated and may contain NUL bytes.
TOKEN_FN = ctypes.CFUNCTYPE(ctypes.c_int, ctypes.c_int32, ctypes.c_void_p, ctypes.c_size_t, ctypes.c_void_p)


class GenerateParams(ctypes.Structure):
    _fields_ = [
        ("struct_size", ctypes.c_size_t),
        ("max_tokens", ctypes.c_int32),
        ("add_special", ctypes.c_int),
        ("parse_special", ctypes.c_int),
        ("stop_at_end_of_generation", ctypes.c_int),
        ("stop_strings", ctypes.POINTER(ctypes.c_char_p)),
        ("n_stop_strings", ctypes.c_size_t),
        ("on_token", TOKEN_FN),
        ("user_data", ctypes.c_void_p),
    ]


class GenerateResult(ctypes.Structure):
    _fields_ = [
        ("struct_size", ctypes.c_size_t),
        ("n_prompt_tokens", ctypes.c_int64),
        ("n_generated", ctypes.c_int64),
        ("prefill_seconds", ctypes.c_double),
        ("decode_seconds", ctypes.c_double),
        ("stop_reason", ctypes.c_int32),
    ]


_vp = ctypes.c_void_p
_cp = ctypes.c_char_p
_vt = ctypes.c_int  # strata_value_type (a C enum: int-sized)
_vt_p = ctypes.POINTER(ctypes.c_int)

# name: (restype, argtypes)
PROTOTYPES = {
    "strata_version": (_cp, []),
    "strata_version_number": (ctypes.c_int, []),
    "strata_abi_version": (ctypes.c_int, []),
    "strata_last_error": (_cp, []),
    "strata_status_string": (_cp, [c_status]),
    "strata_tensor_type_name": (_cp, [ctypes.c_int]),
    "strata_tensor_type_supported": (ctypes.c_int, [ctypes.c_int]),
    "strata_model_default_params": (None, [ctypes.POINTER(ModelParams)]),
    "strata_model_open": (c_status, [c_char_pp, ctypes.c_size_t, ctypes.POINTER(ModelParams), c_voidp_p]),
    "strata_model_free": (None, [_vp]),
    "strata_model_gguf_version": (c_status, [_vp, ctypes.POINTER(ctypes.c_uint32)]),
    "strata_model_metadata_count": (c_status, [_vp, c_size_p]),
    "strata_model_metadata_key": (c_status, [_vp, ctypes.c_size_t, c_char_pp]),
    "strata_model_metadata_type": (c_status, [_vp, _cp, _vt_p, _vt_p, c_u64_p]),
    "strata_model_metadata_int": (c_status, [_vp, _cp, c_i64_p]),
    "strata_model_metadata_uint": (c_status, [_vp, _cp, c_u64_p]),
    "strata_model_metadata_float": (c_status, [_vp, _cp, ctypes.POINTER(ctypes.c_double)]),
    "strata_model_metadata_bool": (c_status, [_vp, _cp, c_int_p]),
    "strata_model_metadata_string": (c_status, [_vp, _cp, c_voidp_p, c_size_p]),
    "strata_model_metadata_array_int": (c_status, [_vp, _cp, ctypes.c_uint64, c_i64_p]),
    "strata_model_metadata_array_uint": (c_status, [_vp, _cp, ctypes.c_uint64, c_u64_p]),
    "strata_model_metadata_array_float": (c_status, [_vp, _cp, ctypes.c_uint64, ctypes.POINTER(ctypes.c_double)]),
    "strata_model_metadata_array_bool": (c_status, [_vp, _cp, ctypes.c_uint64, c_int_p]),
    "strata_model_metadata_array_string": (c_status, [_vp, _cp, ctypes.c_uint64, c_voidp_p, c_size_p]),
    "strata_model_metadata_json": (c_status, [_vp, _cp, _vp, ctypes.c_size_t, c_size_p]),
    "strata_model_tensor_count": (c_status, [_vp, c_size_p]),
    "strata_model_tensor_info": (c_status, [_vp, ctypes.c_size_t, ctypes.POINTER(TensorInfoC)]),
    "strata_model_find_tensor": (c_status, [_vp, _cp, c_size_p]),
    "strata_model_tensor_data": (c_status, [_vp, ctypes.c_size_t, c_voidp_p, c_u64_p]),
    "strata_model_tensor_read_f32": (c_status, [_vp, ctypes.c_size_t, _vp, ctypes.c_uint64, c_u64_p]),
    "strata_model_shard_count": (c_status, [_vp, c_size_p]),
    "strata_model_shard_info": (c_status, [_vp, ctypes.c_size_t, ctypes.POINTER(ShardInfoC)]),
    "strata_model_shard_sha256": (c_status, [_vp, ctypes.c_size_t, _vp]),
    "strata_model_identity": (c_status, [_vp, _vp]),
    "strata_writer_create": (c_status, [c_voidp_p]),
    "strata_writer_free": (None, [_vp]),
    "strata_writer_set_int": (c_status, [_vp, _cp, _vt, ctypes.c_int64]),
    "strata_writer_set_uint": (c_status, [_vp, _cp, _vt, ctypes.c_uint64]),
    "strata_writer_set_float": (c_status, [_vp, _cp, _vt, ctypes.c_double]),
    "strata_writer_set_bool": (c_status, [_vp, _cp, ctypes.c_int]),
    "strata_writer_set_string": (c_status, [_vp, _cp, _vp, ctypes.c_size_t]),
    "strata_writer_set_array": (c_status, [_vp, _cp, _vt, _vp, ctypes.c_uint64]),
    "strata_writer_set_string_array": (c_status, [_vp, _cp, _vp, _vp, ctypes.c_uint64]),
    "strata_writer_add_tensor_f32": (c_status, [_vp, _cp, ctypes.c_int, ctypes.c_uint32, c_i64_p, _vp, _vp]),
    "strata_writer_add_tensor_raw": (c_status, [_vp, _cp, ctypes.c_int, ctypes.c_uint32, c_i64_p, _vp, ctypes.c_uint64]),
    "strata_write_default_params": (None, [ctypes.POINTER(WriteParams)]),
    "strata_writer_write": (c_status, [_vp, _cp, ctypes.POINTER(WriteParams), ctypes.POINTER(ctypes.c_uint32)]),
}

_i32_p = ctypes.POINTER(ctypes.c_int32)

# The tokenizer / session / sampling / generation section of strata.h. Functions are only ever
# appended to the ABI (without an ABI version bump), so a library built before this section may
# lack them: they are declared when present and raise LibraryError naming the function when used
# on a library without them (see fn()).
SESSION_PROTOTYPES = {
    "strata_model_vocab_info": (c_status, [_vp, ctypes.POINTER(VocabInfoC)]),
    "strata_tokenize": (c_status, [_vp, _vp, ctypes.c_size_t, ctypes.c_int, ctypes.c_int, _vp, ctypes.c_size_t,
                                   c_size_p]),
    "strata_detokenize": (c_status, [_vp, _vp, ctypes.c_size_t, ctypes.c_int, _vp, ctypes.c_size_t, c_size_p]),
    "strata_token_to_piece": (c_status, [_vp, ctypes.c_int32, _vp, ctypes.c_size_t, c_size_p]),
    "strata_token_is_eog": (c_status, [_vp, ctypes.c_int32, ctypes.POINTER(ctypes.c_int)]),
    "strata_session_default_params": (None, [ctypes.POINTER(SessionParams)]),
    "strata_session_create": (c_status, [_vp, ctypes.POINTER(SessionParams), c_voidp_p]),
    "strata_session_free": (None, [_vp]),
    "strata_session_plan": (c_status, [_vp, _vp, ctypes.c_size_t, c_size_p]),
    "strata_session_n_ctx": (c_status, [_vp, c_i64_p]),
    "strata_session_n_past": (c_status, [_vp, c_i64_p]),
    "strata_session_n_vocab": (c_status, [_vp, _i32_p]),
    "strata_session_decode": (c_status, [_vp, _vp, ctypes.c_size_t, ctypes.c_int]),
    "strata_session_logits": (c_status, [_vp, c_voidp_p, c_size_p]),
    "strata_session_reset": (c_status, [_vp]),
    "strata_sampling_default_params": (None, [ctypes.POINTER(SamplingParams)]),
    "strata_session_set_sampling": (c_status, [_vp, ctypes.POINTER(SamplingParams)]),
    "strata_session_sampling_json": (c_status, [_vp, _vp, ctypes.c_size_t, c_size_p]),
    "strata_session_sample": (c_status, [_vp, _i32_p]),
    "strata_generate_default_params": (None, [ctypes.POINTER(GenerateParams)]),
    "strata_session_generate": (c_status, [_vp, _vp, ctypes.c_size_t, ctypes.POINTER(GenerateParams),
                                           ctypes.POINTER(GenerateResult)]),
}

# void (*log)(const char* line, void* user_data) of strata_worker_params.
WORKER_LOG_FN = ctypes.CFUNCTYPE(None, ctypes.c_char_p, ctypes.c_void_p)


# The transport fields both params structs end with (appended after their TLS and device fields).
_LINK_FIELDS = [
        ("transport", ctypes.c_char_p),
        ("rdma_transports", ctypes.c_char_p),
        ("rdma_devices", ctypes.c_char_p),
        ("rdma_mtu", ctypes.c_int32),
        ("rdma_max_inline", ctypes.c_int32),
        ("rdma_rx_queue_len", ctypes.c_int32),
        ("rdma_tx_queue_len", ctypes.c_int32),
]


class PipelineParams(ctypes.Structure):
    _fields_ = [
        ("struct_size", ctypes.c_size_t),
        ("workers", ctypes.POINTER(ctypes.c_char_p)),
        ("n_workers", ctypes.c_size_t),
        ("layers", ctypes.c_char_p),
        ("key_file", ctypes.c_char_p),
        ("key", ctypes.c_void_p),
        ("key_length", ctypes.c_size_t),
        ("n_ctx", ctypes.c_int64),
        ("n_threads", ctypes.c_int32),
        ("kv_type", ctypes.c_int32),
        ("memory_budget", ctypes.c_uint64),
        ("n_batch", ctypes.c_int32),
        ("heartbeat_ms", ctypes.c_int32),
        ("peer_timeout_ms", ctypes.c_int32),
        ("connect_timeout_ms", ctypes.c_int32),
        ("socket_buffer_bytes", ctypes.c_int32),
        ("wire_dtype", ctypes.c_int32),
        ("tls_cert_file", ctypes.c_char_p),
        ("tls_key_file", ctypes.c_char_p),
        ("tls_ca_file", ctypes.c_char_p),
    ] + _LINK_FIELDS


class WorkerParams(ctypes.Structure):
    _fields_ = [
        ("struct_size", ctypes.c_size_t),
        ("listen", ctypes.c_char_p),
        ("key_file", ctypes.c_char_p),
        ("key", ctypes.c_void_p),
        ("key_length", ctypes.c_size_t),
        ("allow_no_key", ctypes.c_int),
        ("layer_begin", ctypes.c_int32),
        ("layer_end", ctypes.c_int32),
        ("n_threads", ctypes.c_int32),
        ("memory_budget", ctypes.c_uint64),
        ("heartbeat_ms", ctypes.c_int32),
        ("peer_timeout_ms", ctypes.c_int32),
        ("log", WORKER_LOG_FN),
        ("log_user_data", ctypes.c_void_p),
        ("tls_cert_file", ctypes.c_char_p),
        ("tls_key_file", ctypes.c_char_p),
        ("tls_ca_file", ctypes.c_char_p),
        ("device", ctypes.c_int32),
    ] + _LINK_FIELDS


# The pipeline section of strata.h (and strata_session_sample_top): appended functions, declared
# when present, LibraryError naming the function when used on a library without them.
PIPELINE_PROTOTYPES = {
    "strata_session_sample_top": (c_status, [_vp, _i32_p, ctypes.c_size_t, _i32_p,
                                             ctypes.POINTER(ctypes.c_float)]),
    "strata_session_decode_sample": (c_status, [_vp, _vp, ctypes.c_size_t, _i32_p]),
    "strata_pipeline_default_params": (None, [ctypes.POINTER(PipelineParams)]),
    "strata_pipeline_create": (c_status, [_vp, ctypes.POINTER(PipelineParams), c_voidp_p]),
    "strata_pipeline_free": (None, [_vp]),
    "strata_pipeline_plan_json": (c_status, [_vp, _vp, ctypes.c_size_t, c_size_p]),
    "strata_pipeline_stats_json": (c_status, [_vp, _vp, ctypes.c_size_t, c_size_p]),
    "strata_pipeline_session": (c_status, [_vp, c_voidp_p]),
    "strata_pipeline_reconnect": (c_status, [_vp]),
    "strata_worker_default_params": (None, [ctypes.POINTER(WorkerParams)]),
    "strata_worker_create": (c_status, [_vp, ctypes.POINTER(WorkerParams), c_voidp_p]),
    "strata_worker_port": (c_status, [_vp, ctypes.POINTER(ctypes.c_uint16)]),
    "strata_worker_run": (c_status, [_vp]),
    "strata_worker_stop": (c_status, [_vp]),
    "strata_worker_free": (None, [_vp]),
    "strata_transport_available": (c_status, [ctypes.c_char_p]),
}


class PlanParams(ctypes.Structure):
    _fields_ = [
        ("struct_size", ctypes.c_size_t),
        ("n_ctx", ctypes.c_int64),
        ("kv_type", ctypes.c_int32),
        ("layers", ctypes.c_char_p),
        ("n_stages", ctypes.c_int32),
        ("n_batch", ctypes.c_int64),
        ("n_threads", ctypes.c_int32),
        ("reserved", ctypes.c_int32),  # the first release's tail padding
        ("device", ctypes.c_int32),  # appended after the first release
    ]


# The memory plan of a model without a session (strata_model_plan_json): appended functions.
PLAN_PROTOTYPES = {
    "strata_plan_default_params": (None, [ctypes.POINTER(PlanParams)]),
    "strata_model_plan_json": (c_status, [_vp, ctypes.POINTER(PlanParams), _vp, ctypes.c_size_t, c_size_p]),
}
#: Every appended (optional) function: declared when the loaded library has it.
OPTIONAL_PROTOTYPES = {**SESSION_PROTOTYPES, **PIPELINE_PROTOTYPES, **PLAN_PROTOTYPES}

# Chat templates (strata_chat_apply_template, strata_chat_builtin_formats): appended functions.
CHAT_PROTOTYPES = {
    "strata_chat_apply_template": (c_status, [_vp, _cp, _cp, ctypes.c_int, _cp, _vp, ctypes.c_size_t, c_size_p]),
    "strata_chat_builtin_formats": (ctypes.c_char_p, []),
}
OPTIONAL_PROTOTYPES.update(CHAT_PROTOTYPES)


class SeqTokensC(ctypes.Structure):
    """strata_seq_tokens: one entry of strata_session_decode_batch."""
    _fields_ = [
        ("seq", ctypes.c_int32),
        ("tokens", ctypes.c_void_p),
        ("n_tokens", ctypes.c_size_t),
    ]


# Many sequences in one session (continuous batching): appended functions.
BATCH_PROTOTYPES = {
    "strata_session_n_seq": (c_status, [_vp, _i32_p]),
    "strata_session_decode_batch": (c_status, [_vp, ctypes.POINTER(SeqTokensC), ctypes.c_size_t]),
    "strata_session_seq_logits": (c_status, [_vp, ctypes.c_int32, c_voidp_p]),
    "strata_session_seq_n_past": (c_status, [_vp, ctypes.c_int32, c_i64_p]),
    "strata_session_seq_reset": (c_status, [_vp, ctypes.c_int32]),
    "strata_session_seq_truncate": (c_status, [_vp, ctypes.c_int32, ctypes.c_int64]),
    "strata_session_seq_set_sampling": (c_status, [_vp, ctypes.c_int32, ctypes.POINTER(SamplingParams)]),
    "strata_session_seq_sample_top": (c_status, [_vp, ctypes.c_int32, _i32_p, ctypes.c_size_t, _i32_p,
                                                 ctypes.POINTER(ctypes.c_float)]),
}
OPTIONAL_PROTOTYPES.update(BATCH_PROTOTYPES)

_LIB_NAME = "libstrata.so"


def _source_root() -> Optional[Path]:
    """The repository root when the package runs from a source tree (bindings/python/strata)."""
    root = Path(__file__).resolve().parent.parent.parent.parent
    return root if (root / "include" / "strata" / "strata.h").is_file() else None


def _prefix_paths(prefixes: list[str]) -> list[str]:
    """PREFIX/lib/libstrata.so and PREFIX/lib64/libstrata.so of each prefix, in order."""
    return [os.path.join(p, d, _LIB_NAME) for p in prefixes for d in ("lib", "lib64")]


def candidate_paths() -> list[str]:
    """Where the loader looks, in order (without $STRATA_LIBRARY, which overrides all of them):
    the source tree's build folders; this Python's prefix (a virtual environment that
    `cmake --install --prefix` filled); the system loader (ctypes.util.find_library, then the
    soname, which follow ld.so.cache and $LD_LIBRARY_PATH); /usr/local, where an install
    leaves the library before ldconfig has run."""
    out: list[str] = []
    root = _source_root()
    if root is not None:
        default = root / "build" / "lib" / _LIB_NAME
        out.append(str(default))
        for p in sorted(root.glob("build*/lib/" + _LIB_NAME)):
            if str(p) not in out:
                out.append(str(p))
    out += _prefix_paths([sys.prefix])
    found = ctypes.util.find_library("strata")
    if found:
        out.append(found)
    out.append(_LIB_NAME + ".0")
    out += _prefix_paths(["/usr/local"])
    return list(dict.fromkeys(out))  # each once, first place kept


def _declare(lib: ctypes.CDLL, where: str) -> None:
    missing = [name for name in PROTOTYPES if not hasattr(lib, name)]
    if missing:
        raise LibraryError(f"{where} lacks {len(missing)} strata.h function(s): {', '.join(missing)}")
    for name, (restype, argtypes) in PROTOTYPES.items():
        fn = getattr(lib, name)
        fn.restype = restype
        fn.argtypes = argtypes
    for name, (restype, argtypes) in OPTIONAL_PROTOTYPES.items():
        if hasattr(lib, name):
            fn = getattr(lib, name)
            fn.restype = restype
            fn.argtypes = argtypes
    abi = lib.strata_abi_version()
    if abi != ABI_VERSION:
        raise AbiMismatch(f"{where} has ABI version {abi}; these bindings need {ABI_VERSION}")


def load_library(path: Optional[str] = None) -> ctypes.CDLL:
    """Load libstrata.so (see the package docstring for the search order) and declare prototypes."""
    tried: list[str] = []
    if path is None:
        path = os.environ.get("STRATA_LIBRARY") or None
        if path is not None:
            tried_from = "$STRATA_LIBRARY"
        else:
            tried_from = None
    else:
        tried_from = "argument"
    if path is not None:
        candidates = [path]
    else:
        candidates = candidate_paths()
    for cand in candidates:
        is_file_path = os.sep in cand
        if is_file_path and not os.path.exists(cand):
            tried.append(f"{cand} (no such file)")
            continue
        try:
            lib = ctypes.CDLL(cand)
        except OSError as e:
            tried.append(f"{cand} ({e})")
            continue
        _declare(lib, cand)
        return lib
    origin = f" (from {tried_from})" if tried_from else ""
    raise LibraryNotFound(
        f"libstrata.so not found{origin}; tried:\n  " + "\n  ".join(tried)
        + "\nSet STRATA_LIBRARY to the path of libstrata.so or build it (cmake --build build).")


_lock = threading.Lock()
_lib: Optional[ctypes.CDLL] = None


def lib() -> ctypes.CDLL:
    """The loaded library (loaded on first use)."""
    global _lib
    if _lib is None:
        with _lock:
            if _lib is None:
                _lib = load_library()
    return _lib


def use_library(path: str) -> ctypes.CDLL:
    """Load libstrata from ``path`` and use it for everything (before any other strata call)."""
    global _lib
    with _lock:
        if _lib is not None:
            if os.path.realpath(_lib._name) == os.path.realpath(path):
                return _lib
            raise LibraryError(f"strata already uses {_lib._name}; cannot switch to {path}")
        _lib = load_library(path)
        return _lib


def fn(name: str):
    """The declared function ``name`` of the loaded library; LibraryError when the library
    predates it (an appended function it does not export)."""
    L = lib()
    if name in OPTIONAL_PROTOTYPES and not hasattr(L, name):
        raise LibraryError(f"{L._name} lacks {name} (a library older than these bindings' strata.h)")
    return getattr(L, name)


def has(name: str) -> bool:
    """True when the loaded library exports ``name``."""
    return hasattr(lib(), name)


def last_error() -> str:
    msg = lib().strata_last_error()
    return msg.decode("utf-8", "replace") if msg else ""


def check(status: int) -> None:
    """Raise StrataError with strata_last_error()'s message when status is not 0."""
    if status != 0:
        raise StrataError(status, last_error())


# The Reports section of strata.h (JSON text in and out): appended functions, declared when present.
REPORT_PROTOTYPES = {
    "strata_report_schema_version": (ctypes.c_char_p, []),
    "strata_report_artifact_json": (c_status, [_vp, _vp, ctypes.c_size_t, c_size_p]),
    "strata_report_runtime_json": (c_status, [_vp, ctypes.c_size_t, c_size_p]),
    "strata_report_assemble": (c_status, [_vp, ctypes.c_size_t, _vp, ctypes.c_size_t, c_size_p]),
    "strata_report_validate": (c_status, [_vp, ctypes.c_size_t, _vp, ctypes.c_size_t, c_size_p]),
    "strata_report_markdown": (c_status, [_vp, ctypes.c_size_t, ctypes.c_char_p, _vp, ctypes.c_size_t, c_size_p]),
    "strata_report_eval_score": (c_status, [_vp, ctypes.c_size_t, _vp, ctypes.c_size_t, c_size_p]),
    "strata_report_eval_compare": (c_status, [_vp, ctypes.c_size_t, _vp, ctypes.c_size_t, ctypes.c_size_t,
                                              ctypes.c_size_t, _vp, ctypes.c_size_t, c_size_p]),
    "strata_report_sandbox_run": (c_status, [_vp, ctypes.c_size_t, _vp, ctypes.c_size_t, c_size_p]),
    "strata_report_plot": (c_status, [_vp, ctypes.c_size_t, ctypes.c_char_p, ctypes.c_char_p, _vp,
                                      ctypes.c_size_t, c_size_p]),
    "strata_memory_sampler_create": (c_status, [ctypes.c_int32, c_voidp_p]),
    "strata_memory_sampler_free": (None, [_vp]),
    "strata_memory_sampler_start": (c_status, [_vp]),
    "strata_memory_sampler_set_context": (c_status, [_vp, ctypes.c_int64]),
    "strata_memory_sampler_stop": (c_status, [_vp]),
    "strata_memory_sampler_json": (c_status, [_vp, ctypes.c_char_p, _vp, ctypes.c_size_t, c_size_p]),
}
OPTIONAL_PROTOTYPES.update(REPORT_PROTOTYPES)
