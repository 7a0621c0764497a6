"""Comparison helpers shared by the tests."""
from __future__ import annotations

import hashlib
import struct
from typing import Any

import numpy as np

import strata


def f32_bits(x: float) -> int:
    return struct.unpack("<I", struct.pack("<f", x))[0]


def f64_bits(x: float) -> int:
    return struct.unpack("<Q", struct.pack("<d", x))[0]


def sha256(data: bytes) -> str:
    return hashlib.sha256(data).hexdigest()


def _same_scalar(kind: str, actual: Any, expected: Any, where: str) -> None:
    if kind == "f32":
        assert isinstance(actual, float), f"{where}: {actual!r} is not a float"
        assert f32_bits(actual) == int(expected["bits"], 16), \
            f"{where}: bits {f32_bits(actual):#010x} != {expected['bits']} ({actual!r})"
    elif kind == "f64":
        assert isinstance(actual, float), f"{where}: {actual!r} is not a float"
        assert f64_bits(actual) == int(expected["bits"], 16), \
            f"{where}: bits {f64_bits(actual):#018x} != {expected['bits']} ({actual!r})"
    elif kind == "bool":
        assert actual is expected, f"{where}: {actual!r} != {expected!r}"
    elif kind == "string":
        assert isinstance(actual, str) and actual == expected, f"{where}: {actual!r} != {expected!r}"
    else:
        assert type(actual) is int and actual == expected, f"{where}: {actual!r} != {expected!r}"


def assert_metadata_matches_manifest(model: strata.Model, kv: list[dict], what: str) -> None:
    """Every key in order, its type and its value (float bit patterns exact)."""
    assert model.keys() == [e["key"] for e in kv], f"{what}: keys or their order differ"
    meta = model.metadata
    assert list(meta) == [e["key"] for e in kv]
    for e in kv:
        key, kind, want = e["key"], e["type"], e["value"]
        where = f"{what}: {key}"
        mt = model.metadata_type(key)
        assert str(mt) == kind, f"{where}: type {mt} != {kind}"
        got = meta[key]
        if kind.startswith("array["):
            elem = kind[6:-1]
            assert mt.count == len(want), f"{where}: count {mt.count} != {len(want)}"
            assert isinstance(got, list) and len(got) == len(want), f"{where}: {got!r}"
            for i, (a, b) in enumerate(zip(got, want)):
                _same_scalar(elem, a, b, f"{where}[{i}]")
        else:
            assert mt.count == 1
            _same_scalar(kind, got, want, where)


def assert_tensors_match_manifest(model: strata.Model, tensors: list[dict], what: str,
                                  shard_of: dict | None = None) -> None:
    """Names, types, shapes, sizes, offsets and sha256 of every tensor's bytes."""
    got = model.tensors
    assert [t.name for t in got] == [t["name"] for t in tensors], f"{what}: tensor names/order differ"
    for g, w in zip(got, tensors):
        where = f"{what}: {w['name']}"
        assert g.type == w["type_id"] and g.type_name == w["type"], f"{where}: type {g.type} {g.type_name}"
        assert list(g.ne) == w["ne"] and g.n_dims == w["n_dims"], f"{where}: ne {g.ne}"
        assert g.n_bytes == w["nbytes"], f"{where}: n_bytes {g.n_bytes}"
        assert g.n_elements == int(np.prod(w["ne"])), f"{where}: n_elements"
        assert g.file_offset == w["abs_offset"], f"{where}: file_offset {g.file_offset} != {w['abs_offset']}"
        if shard_of is not None:
            assert g.shard == shard_of[w["name"]], f"{where}: shard {g.shard}"
        else:
            assert g.shard == 0
        data = model.tensor_bytes(w["name"])
        assert sha256(data) == w["sha256"], f"{where}: sha256 of the tensor bytes"
        view = model.tensor_bytes(g, copy=False)
        assert view.readonly and bytes(view) == data
        assert model.tensor(w["name"]) == g


# --- canonical forms of metadata values: floats as bit patterns, strings as bytes ---------------

def canon_py(kind: str, value: Any) -> Any:
    """Canonical form of a Python value stored as `kind` ("u8", "f32", "array[string]", ...)."""
    if kind.startswith("array["):
        elem = kind[6:-1]
        return [canon_py(elem, v) for v in value]
    if kind == "f32":
        return f32_bits(float(value))
    if kind == "f64":
        return f64_bits(float(value))
    if kind == "string":
        return value.encode("utf-8", "surrogateescape") if isinstance(value, str) else bytes(value)
    if kind == "bool":
        return bool(value)
    return int(value)


def canon_strata(model: strata.Model, key: str) -> tuple[str, Any]:
    kind = str(model.metadata_type(key))
    return kind, canon_py(kind, model.get(key))


_GGUF_NAMES = {0: "u8", 1: "i8", 2: "u16", 3: "i16", 4: "u32", 5: "i32", 6: "f32", 7: "bool", 8: "string",
               10: "u64", 11: "i64", 12: "f64"}


def _canon_part(kind: str, part: np.ndarray) -> Any:
    if kind == "string":
        return part.tobytes()
    if kind == "f32":
        return int(part.view(np.uint32)[0])
    if kind == "f64":
        return int(part.view(np.uint64)[0])
    if kind == "bool":
        return bool(part[0])
    return int(part[0])


def canon_reader(field: Any) -> tuple[str, Any]:
    """Canonical (kind, value) of a gguf.GGUFReader field, read from its raw parts."""
    t0 = int(field.types[0])
    if t0 == 9:
        elem = _GGUF_NAMES[int(field.types[-1])] if len(field.types) > 1 else None
        if elem is None:  # the reader gives no element type for an empty array: read it from the parts
            elem = _GGUF_NAMES[int(field.parts[3][0])]
        return f"array[{elem}]", [_canon_part(elem, field.parts[i]) for i in field.data]
    kind = _GGUF_NAMES[t0]
    return kind, _canon_part(kind, field.parts[field.data[0]])
