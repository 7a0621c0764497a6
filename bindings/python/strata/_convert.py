"""Python values to and from the C ABI's: the conversions model, session, pipeline, writer and
report all use. It sits below every one of them (it imports only _lib and errors), so that none
of them needs another for these helpers."""
from __future__ import annotations

import ctypes
from typing import Any, Callable, Iterable, Union

import numpy as np

from ._lib import check
from .errors import StrataError

#: strata_kv_type values by name.
KV_TYPES = {"f16": 0, "q8_0": 1}
#: strata_device values by name.
DEVICES = {"cpu": 0, "cuda": 1}

_I32_MIN, _I32_MAX = -(1 << 31), (1 << 31) - 1


def _kv_type_id(kv_type: Union[str, int]) -> int:
    if isinstance(kv_type, str):
        try:
            return KV_TYPES[kv_type.strip().lower()]
        except KeyError:
            raise ValueError(f"unknown KV cache type {kv_type!r}; use one of {sorted(KV_TYPES)}") from None
    return int(kv_type)


def _device_id(device: Union[str, int]) -> int:
    if isinstance(device, str):
        try:
            return DEVICES[device.strip().lower()]
        except KeyError:
            raise ValueError(f"unknown device {device!r}; use one of {sorted(DEVICES)}") from None
    return int(device)


def _buffer_text(call: Callable[[Any, int, Any], int]) -> str:
    """Runs a (buffer, capacity, out_needed) text call, growing the buffer once if asked."""
    cap = 512
    for _ in range(3):
        buf = ctypes.create_string_buffer(cap)
        needed = ctypes.c_size_t()
        st = call(buf, cap, ctypes.byref(needed))
        if st == 6 and needed.value > cap:  # BUFFER_TOO_SMALL
            cap = needed.value
            continue
        check(st)
        return buf.value.decode("utf-8", "replace")
    raise StrataError(8, "the library kept asking for a larger buffer")


def _as_token(t: Any) -> int:
    if isinstance(t, (bool, np.bool_)) or not isinstance(t, (int, np.integer)):
        raise TypeError(f"a token id must be an integer, not {type(t).__name__}")
    v = int(t)
    if not _I32_MIN <= v <= _I32_MAX:
        raise OverflowError(f"token id {v} does not fit int32")
    return v


def _token_array(tokens: Iterable[int]) -> np.ndarray:
    """Token ids as a contiguous int32 array (range-checked: no silent wrap-around)."""
    if isinstance(tokens, np.ndarray):
        if tokens.ndim != 1 or tokens.dtype.kind not in "iu":
            raise TypeError("tokens must be a one-dimensional integer array")
        if tokens.size and (int(tokens.min()) < _I32_MIN or int(tokens.max()) > _I32_MAX):
            raise OverflowError("a token id does not fit int32")
        return np.ascontiguousarray(tokens, dtype=np.int32)
    if isinstance(tokens, (int, np.integer)):
        raise TypeError("tokens must be a sequence of ids (wrap a single id in a list)")
    return np.array([_as_token(t) for t in tokens], dtype=np.int32)


def _key(key: Union[str, bytes]) -> bytes:
    """A metadata key or tensor name as the NUL-free bytes the C calls take."""
    if isinstance(key, bytes):
        return key
    if not isinstance(key, str):
        raise TypeError(f"key must be str, not {type(key).__name__}")
    raw = key.encode("utf-8", "surrogateescape")
    if b"\0" in raw:
        raise ValueError("key contains a NUL character")
    return raw
