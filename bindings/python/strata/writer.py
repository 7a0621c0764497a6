"""strata.Writer: build GGUF files (optionally split into shards) through libstrata."""
from __future__ import annotations

import ctypes
import os
import struct
from typing import Any, Optional, Sequence, Union

import numpy as np

from . import _lib
from ._convert import _key
from ._handle import OwnedHandle
from ._lib import check
from ._types import (FLOAT_TYPES, INTEGER_TYPES, SIGNED_TYPES, STRUCT_FORMATS, ValueType, tensor_type_id)

_NP_TO_VALUE = {np.dtype(np.uint8): ValueType.U8, np.dtype(np.int8): ValueType.I8,
                np.dtype(np.uint16): ValueType.U16, np.dtype(np.int16): ValueType.I16,
                np.dtype(np.uint32): ValueType.U32, np.dtype(np.int32): ValueType.I32,
                np.dtype(np.uint64): ValueType.U64, np.dtype(np.int64): ValueType.I64,
                np.dtype(np.float32): ValueType.F32, np.dtype(np.float64): ValueType.F64,
                np.dtype(np.bool_): ValueType.BOOL}

_I32 = (-(1 << 31), (1 << 31) - 1)
_I64 = (-(1 << 63), (1 << 63) - 1)
_U64 = (0, (1 << 64) - 1)


def _infer_int(values: Sequence[int]) -> ValueType:
    lo, hi = (min(values), max(values)) if len(values) else (0, 0)
    for t, (a, b) in ((ValueType.I32, _I32), (ValueType.I64, _I64), (ValueType.U64, _U64)):
        if a <= lo and hi <= b:
            return t
    raise OverflowError(f"integer out of the range of every GGUF integer type: {lo if lo < 0 else hi}")


def _infer_scalar(value: Any) -> ValueType:
    if isinstance(value, (bool, np.bool_)):
        return ValueType.BOOL
    if isinstance(value, np.generic) and value.dtype in _NP_TO_VALUE:
        return _NP_TO_VALUE[value.dtype]
    if isinstance(value, int):
        return _infer_int([value])
    if isinstance(value, float):
        return ValueType.F64
    if isinstance(value, (str, bytes, bytearray)):
        return ValueType.STRING
    raise TypeError(f"cannot infer a GGUF value type for {type(value).__name__}")


def _is_string(v: Any) -> bool:
    return isinstance(v, (str, bytes, bytearray, np.str_, np.bytes_))


def _as_bytes(v: Union[str, bytes, bytearray]) -> bytes:
    return v.encode("utf-8", "surrogateescape") if isinstance(v, str) else bytes(v)


def _parse_type(type_: Union[ValueType, int, str, None]) -> Optional[ValueType]:
    if type_ is None:
        return None
    if isinstance(type_, str) and type_.strip().lower().startswith("array[") and type_.strip().endswith("]"):
        return ValueType.parse(type_.strip()[6:-1])
    return ValueType.parse(type_)


class Writer(OwnedHandle):
    """Collects metadata and tensors, then writes one GGUF file or N shards.

    Value types are inferred unless ``type`` is given: bool -> bool, int -> i32 (i64 / u64 when
    it does not fit), float -> f64, str/bytes -> string, numpy scalars and arrays -> their dtype,
    list -> array (type = element type). ``general.alignment`` (u32) sets the file alignment.
    """

    _FREE = "strata_writer_free"

    def __init__(self) -> None:
        self._h: Optional[int] = None
        h = ctypes.c_void_p()
        check(_lib.lib().strata_writer_create(ctypes.byref(h)))
        self._h = h.value


    def _handle(self) -> int:
        if self._h is None:
            raise ValueError("the writer is closed")
        return self._h

    # --- metadata -----------------------------------------------------------------------------
    def set(self, key: str, value: Any, type: Union[ValueType, int, str, None] = None) -> None:  # noqa: A002
        """Add one key (an existing key is an error). For lists ``type`` is the element type."""
        t = _parse_type(type)
        if isinstance(value, (list, tuple, np.ndarray)):
            self._set_array(key, value, t)
            return
        if t is None:
            t = _infer_scalar(value)
        L, h, k = _lib.lib(), self._handle(), _key(key)
        if t == ValueType.STRING:
            if not _is_string(value):
                raise TypeError(f"{key}: a string value must be str or bytes, not {value.__class__.__name__}")
            raw = _as_bytes(value)
            check(L.strata_writer_set_string(h, k, raw, len(raw)))
        elif t == ValueType.BOOL:
            check(L.strata_writer_set_bool(h, k, 1 if value else 0))
        elif t in FLOAT_TYPES:
            check(L.strata_writer_set_float(h, k, int(t), float(value)))
        elif t in INTEGER_TYPES:
            if isinstance(value, (float, np.floating)) or not isinstance(value, (int, np.integer)):
                raise TypeError(f"{key}: a {t.short_name} value must be an integer, not {value.__class__.__name__}")
            v = int(value)
            if t in SIGNED_TYPES or v < 0:
                if not _I64[0] <= v <= _I64[1]:
                    raise OverflowError(f"{key}: {v} does not fit {t.short_name}")
                check(L.strata_writer_set_int(h, k, int(t), v))
            else:
                if v > _U64[1]:
                    raise OverflowError(f"{key}: {v} does not fit {t.short_name}")
                check(L.strata_writer_set_uint(h, k, int(t), v))
        else:
            raise ValueError(f"{key}: cannot set a value of type {t.short_name}; give a list for arrays")

    def _set_array(self, key: str, value: Any, t: Optional[ValueType]) -> None:
        L, h, k = _lib.lib(), self._handle(), _key(key)
        if isinstance(value, np.ndarray):
            if value.ndim != 1:
                raise ValueError(f"{key}: only one-dimensional arrays can be stored")
            if t is None and value.dtype in _NP_TO_VALUE:
                t = _NP_TO_VALUE[value.dtype]
            items = value.tolist()
        else:
            items = list(value)
        if t is None:
            if not items:
                raise ValueError(f"{key}: give the element type of an empty array (type=...)")
            if all(_is_string(v) for v in items):
                t = ValueType.STRING
            elif all(isinstance(v, (bool, np.bool_)) for v in items):
                t = ValueType.BOOL
            elif all(isinstance(v, (int, np.integer)) and not isinstance(v, (bool, np.bool_)) for v in items):
                t = _infer_int([int(v) for v in items])
            elif all(isinstance(v, (int, float, np.integer, np.floating)) and not isinstance(v, (bool, np.bool_))
                     for v in items):
                t = ValueType.F64
            else:
                raise TypeError(f"{key}: array elements must all be strings, bools or numbers (no nesting)")
        if t == ValueType.STRING:
            if not all(_is_string(v) for v in items):
                raise TypeError(f"{key}: a string array holds only str or bytes")
            raws = [_as_bytes(v) for v in items]
            n = len(raws)
            ptrs = (ctypes.c_char_p * max(1, n))(*raws)
            lens = (ctypes.c_size_t * max(1, n))(*[len(r) for r in raws])
            check(L.strata_writer_set_string_array(h, k, ptrs, lens, n))
            return
        if t not in STRUCT_FORMATS:
            raise ValueError(f"{key}: arrays of {t.short_name} are not supported")
        if t in INTEGER_TYPES:
            if any(isinstance(v, (float, np.floating)) for v in items):
                raise TypeError(f"{key}: {t.short_name} array elements must be integers")
            items = [int(v) for v in items]
        elif t in FLOAT_TYPES:
            items = [float(v) for v in items]
        else:
            items = [bool(v) for v in items]
        try:
            packed = struct.pack(f"<{len(items)}{STRUCT_FORMATS[t]}", *items)
        except (struct.error, OverflowError) as e:
            raise OverflowError(f"{key}: an element does not fit {t.short_name}: {e}") from None
        buf = ctypes.create_string_buffer(packed, max(1, len(packed)))
        check(L.strata_writer_set_array(h, k, int(t), buf, len(items)))

    # --- tensors ------------------------------------------------------------------------------
    def add_tensor(self, name: str, array: Any, type: Union[int, str] = "f32",  # noqa: A002
                   imatrix: Any = None) -> None:
        """Add float32 data (numpy shape, 1..4 dims) converted to ``type`` ("f32", "f16", "bf16",
        "q8_0", "iq1_s" or a ggml id). ``imatrix``: ne[0] column importances for IQ1_S."""
        a = np.ascontiguousarray(array, dtype=np.float32)
        if not 1 <= a.ndim <= 4:
            raise ValueError(f"{name}: a tensor has 1 to 4 dimensions, not {a.ndim}")
        ne = (ctypes.c_int64 * 4)(*([int(d) for d in reversed(a.shape)] + [1] * (4 - a.ndim)))
        imp = None
        if imatrix is not None:
            imp = np.ascontiguousarray(imatrix, dtype=np.float32).reshape(-1)
            if imp.size != a.shape[-1]:
                raise ValueError(f"{name}: imatrix needs {a.shape[-1]} weights (one per column), not {imp.size}")
        check(_lib.lib().strata_writer_add_tensor_f32(self._handle(), _key(name), tensor_type_id(type), a.ndim, ne,
                                                      a.ctypes.data, None if imp is None else imp.ctypes.data))

    def add_tensor_raw(self, name: str, type: Union[int, str], ne: Sequence[int], data: Any) -> None:  # noqa: A002
        """Add bytes already in the file format of ``type``; ``ne`` in ggml order (innermost first)."""
        ne = [int(x) for x in ne]
        if not 1 <= len(ne) <= 4:
            raise ValueError(f"{name}: a tensor has 1 to 4 dimensions, not {len(ne)}")
        if isinstance(data, np.ndarray):
            raw = np.ascontiguousarray(data).reshape(-1).view(np.uint8)
        else:
            raw = np.frombuffer(bytes(data), dtype=np.uint8)
        c_ne = (ctypes.c_int64 * 4)(*(ne + [1] * (4 - len(ne))))
        ptr = raw.ctypes.data if raw.size else None
        check(_lib.lib().strata_writer_add_tensor_raw(self._handle(), _key(name), tensor_type_id(type), len(ne),
                                                      c_ne, ptr, raw.size))

    # --- output -------------------------------------------------------------------------------
    def write(self, path: Union[str, "os.PathLike[str]"], n_shards: int = 1) -> list[str]:
        """Write the file (or PATH-0000i-of-0000N.gguf shards) and return the paths written."""
        L = _lib.lib()
        params = _lib.WriteParams()
        L.strata_write_default_params(ctypes.byref(params))
        params.struct_size = ctypes.sizeof(_lib.WriteParams)
        params.n_shards = int(n_shards)
        n = ctypes.c_uint32()
        p = os.fspath(path)
        check(L.strata_writer_write(self._handle(), os.fsencode(p), ctypes.byref(params), ctypes.byref(n)))
        if n_shards <= 1:
            return [p]
        stem = p[:-5] if p.endswith(".gguf") else p
        return [f"{stem}-{i:05d}-of-{n.value:05d}.gguf" for i in range(1, n.value + 1)]
