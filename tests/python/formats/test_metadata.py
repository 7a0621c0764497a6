"""Metadata values beyond the fixtures: JSON text, nested arrays, strings that are not UTF-8."""
from __future__ import annotations

import json
import math
import struct

import numpy as np
import pytest

import strata
from _helpers import f32_bits, f64_bits


def _gguf_string(b: bytes) -> bytes:
    return struct.pack("<Q", len(b)) + b


def _write_raw_gguf(path, kvs: list[bytes]) -> None:
    """A GGUF v3 file with no tensors and the given encoded key/value pairs."""
    data = b"GGUF" + struct.pack("<IQQ", 3, 0, len(kvs)) + b"".join(kvs)
    data += b"\0" * (-len(data) % 32)
    path.write_bytes(data)


def _shortest_len(v) -> int:
    """Length of the shortest round-trip decimal of v (positional or scientific)."""
    return min(len(np.format_float_positional(v, unique=True, trim="-")),
               len(np.format_float_scientific(v, unique=True, trim="-")))


def test_metadata_json_writes_floats_as_the_shortest_round_trip_decimal(tmp_path, seed):
    rng = np.random.default_rng(seed)
    f32s = rng.standard_normal(50).astype(np.float32) * np.float32(10) ** rng.integers(-30, 30, 50).astype(np.float32)
    f64s = rng.standard_normal(50) * 10.0 ** rng.integers(-300, 300, 50)
    w = strata.Writer()
    w.set("a32", f32s.astype(np.float32))
    w.set("a64", f64s)
    w.set("s32", float(f32s[0]), type="f32")
    [path] = w.write(tmp_path / "floats.gguf")
    with strata.Model(path) as m:
        got32 = json.loads(m.get_json_text("a32"))
        assert [f32_bits(v) for v in got32] == [int(b) for b in f32s.view(np.uint32)], f"seed {seed}"
        for text, v in zip(m.get_json_text("a32")[1:-1].split(","), f32s):
            assert len(text) <= _shortest_len(v), f"{text} is not the shortest form of {v!r}"
        got64 = json.loads(m.get_json_text("a64"))
        assert [f64_bits(v) for v in got64] == [f64_bits(float(v)) for v in f64s], f"seed {seed}"
        for text, v in zip(m.get_json_text("a64")[1:-1].split(","), f64s):
            assert len(text) <= _shortest_len(v), f"{text} is not the shortest form of {v!r}"
        assert f32_bits(m.get_json("s32")) == f32_bits(float(f32s[0]))


def test_metadata_json_writes_non_finite_floats_as_the_documented_strings(tmp_path):
    # strata.h: 'NaN and infinities as the strings "NaN", "Infinity", "-Infinity"'.
    w = strata.Writer()
    w.set("arr", [float("nan"), float("inf"), float("-inf"), 1.5], type="f32")
    w.set("neg_inf", float("-inf"), type="f64")
    w.set("nan", float("nan"))
    [path] = w.write(tmp_path / "nonfinite.gguf")
    with strata.Model(path) as m:
        assert m.get_json("arr") == ["NaN", "Infinity", "-Infinity", 1.5], m.get_json_text("arr")
        assert m.get_json("neg_inf") == "-Infinity", m.get_json_text("neg_inf")
        assert m.get_json("nan") == "NaN", m.get_json_text("nan")
        values = m.get("arr")
        assert math.isnan(values[0]) and values[1:] == [math.inf, -math.inf, 1.5]


def test_nested_arrays_come_back_as_nested_lists(tmp_path):
    nested = (_gguf_string(b"n.nested") + struct.pack("<i", 9) + struct.pack("<iQ", 9, 3)
              + struct.pack("<iQ", 5, 2) + struct.pack("<ii", 1, -2)
              + struct.pack("<iQ", 8, 2) + _gguf_string(b"x") + _gguf_string("ß".encode())
              + struct.pack("<iQ", 5, 0))
    path = tmp_path / "nested.gguf"
    _write_raw_gguf(path, [nested])
    with strata.Model(path) as m:
        mt = m.metadata_type("n.nested")
        assert (mt.type, mt.element_type, mt.count) == (strata.ValueType.ARRAY, strata.ValueType.ARRAY, 3)
        assert str(mt) == "array[array]"
        assert m.get("n.nested") == [[1, -2], ["x", "ß"], []]
        assert m.metadata == {"n.nested": [[1, -2], ["x", "ß"], []]}


def test_strings_that_are_not_utf8_come_back_as_bytes(tmp_path):
    bad = b"ok\xff\xfe\x00end"
    w = strata.Writer()
    w.set("bad", bad)
    w.set("bad_list", [b"fine", bad, "ünïcödé"])
    [path] = w.write(tmp_path / "bytes.gguf")
    with strata.Model(path) as m:
        assert m.get("bad") == bad and m.get_string_bytes("bad") == bad
        assert m.get_string("bad") == bad.decode("utf-8", "surrogateescape")
        assert m.get("bad_list") == ["fine", bad, "ünïcödé"]
        assert str(m.metadata_type("bad_list")) == "array[string]"
