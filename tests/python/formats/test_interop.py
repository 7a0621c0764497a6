"""Files go both ways between strata and the `gguf` PyPI package (llama.cpp's gguf-py)."""
from __future__ import annotations

import gguf
import numpy as np
import pytest

import strata
from _helpers import canon_py, canon_reader, canon_strata

Q = gguf.GGMLQuantizationType
V = gguf.GGUFValueType
_GGUF_TYPES = {"u8": V.UINT8, "i8": V.INT8, "u16": V.UINT16, "i16": V.INT16, "u32": V.UINT32, "i32": V.INT32,
               "u64": V.UINT64, "i64": V.INT64, "f32": V.FLOAT32, "f64": V.FLOAT64, "bool": V.BOOL,
               "string": V.STRING}


def _f32(x: float) -> float:
    return float(np.float32(x))


def _metadata_spec(rng: np.random.Generator) -> list[tuple[str, str, object]]:
    """(key, kind, value) covering every scalar type, strings and arrays of every element type."""
    f32s = [_f32(v) for v in rng.standard_normal(6)] + [-0.0, float("inf"), 1e-45, 3.4028234663852886e38]
    f64s = [float(v) for v in rng.standard_normal(6) * 1e10] + [-0.0, float("-inf"), float("nan"), 5e-324]
    return [
        ("t.u8", "u8", int(rng.integers(0, 256))), ("t.i8", "i8", -128), ("t.u16", "u16", 65535),
        ("t.i16", "i16", int(rng.integers(-32768, 32768))), ("t.u32", "u32", 4294967295),
        ("t.i32", "i32", -2147483648), ("t.u64", "u64", 2**64 - 1), ("t.i64", "i64", -(2**63)),
        ("t.i64_small", "i64", 7), ("t.u64_small", "u64", 0),
        ("t.f32", "f32", f32s[0]), ("t.f32_neg_zero", "f32", -0.0), ("t.f64", "f64", f64s[0]),
        ("t.f64_nan", "f64", float("nan")),
        ("t.bool_true", "bool", True), ("t.bool_false", "bool", False),
        ("t.str", "string", "hello"), ("t.str_utf8", "string", "Grüße, 世界 🚀 café"), ("t.str_empty", "string", ""),
        ("t.str_nul", "string", "a\x00b"),
        ("t.arr_u8", "array[u8]", [int(v) for v in rng.integers(0, 256, 9)] + [0, 255]),
        ("t.arr_i8", "array[i8]", [-128, -1, 0, 127]),
        ("t.arr_u16", "array[u16]", [0, 1, 65535]),
        ("t.arr_i16", "array[i16]", [-32768, 0, 32767]),
        ("t.arr_u32", "array[u32]", [0, 4294967295] + [int(v) for v in rng.integers(0, 2**32, 5, dtype=np.uint64)]),
        ("t.arr_i32", "array[i32]", [int(v) for v in rng.integers(-2**31, 2**31, 300)]),
        ("t.arr_u64", "array[u64]", [0, 1, 2**64 - 1]),
        ("t.arr_i64", "array[i64]", [-(2**63), -1, 0, 2**63 - 1]),
        ("t.arr_f32", "array[f32]", f32s),
        ("t.arr_f64", "array[f64]", f64s),
        ("t.arr_bool", "array[bool]", [True, False, False, True]),
        ("t.arr_str", "array[string]", ["alpha", "", "ünïcödé", "日本語", "tab\there\nnl", "<|endoftext|>"]),
    ]


def _write_tensors(w: gguf.GGUFWriter, tensors: dict) -> None:
    """Adds ``tensors`` (as _tensor_spec gives them) to ``w`` and writes and closes the file(s)."""
    for name, (t, data) in tensors.items():
        w.add_tensor(name, data, raw_dtype=Q(t) if data.dtype == np.uint8 else None)
    w.write_header_to_file()
    w.write_kv_data_to_file()
    w.write_tensors_to_file()
    w.close()


def _tensor_spec(rng: np.random.Generator, fixtures_dir) -> dict[str, tuple[int, np.ndarray]]:
    """name -> (ggml type, bytes as the gguf package lays them out)."""
    x = rng.standard_normal
    iq1s = np.load(fixtures_dir / "iq1s" / "c2_rowscale_16x1024_iq1s.npy")
    return {
        "w.f32": (0, x((7, 64)).astype(np.float32)),
        "v.f32": (0, x(33).astype(np.float32)),
        "cube.f32": (0, x((2, 3, 8)).astype(np.float32)),
        "w.f16": (1, x((5, 48)).astype(np.float16)),
        "w.bf16": (30, gguf.quants.quantize(x((4, 32)).astype(np.float32), Q.BF16)),
        "w.q8_0": (8, gguf.quants.quantize(x((3, 256)).astype(np.float32), Q.Q8_0)),
        "w.iq1_s": (19, iq1s),
    }


def test_a_file_written_by_the_gguf_package_is_read_with_identical_metadata_and_tensor_bytes(
        tmp_path, seed, fixtures_dir):
    rng = np.random.default_rng(seed)
    spec = _metadata_spec(rng)
    tensors = _tensor_spec(rng, fixtures_dir)
    path = tmp_path / "from-gguf-py.gguf"
    w = gguf.GGUFWriter(path, "interop")
    for key, kind, value in spec:
        if kind.startswith("array["):
            w.add_key_value(key, value, V.ARRAY, sub_type=_GGUF_TYPES[kind[6:-1]])
        else:
            w.add_key_value(key, value, _GGUF_TYPES[kind])
    _write_tensors(w, tensors)

    want = [("general.architecture", "string", "interop")] + spec
    reader = gguf.GGUFReader(path)
    with strata.Model(path) as m:
        assert m.keys() == [k for k, _, _ in want], f"seed {seed}"
        for key, kind, value in want:
            assert canon_strata(m, key) == (kind, canon_py(kind, value)), f"{key} (seed {seed})"
        assert m.get("t.str_nul") == "a\x00b" and m.get_string_bytes("t.str_nul") == b"a\x00b"
        assert [t.name for t in m.tensors] == list(tensors)
        theirs = {t.name: t for t in reader.tensors}
        for info in m.tensors:
            t, data = tensors[info.name]
            assert info.type == t, info.name
            assert info.file_offset == theirs[info.name].data_offset, info.name
            assert list(info.ne) == [int(v) for v in theirs[info.name].shape], info.name
            assert m.tensor_bytes(info.name) == data.tobytes(), f"{info.name} (seed {seed})"
            ref = gguf.quants.dequantize(theirs[info.name].data, Q(t)).astype(np.float32).reshape(info.shape)
            got = m.read_f32(info.name)
            assert np.array_equal(got.view(np.uint32), ref.view(np.uint32)), f"{info.name} (seed {seed})"
        golden = np.load(fixtures_dir / "iq1s" / "c2_rowscale_16x1024_dequant.npy").astype(np.float32)
        assert np.array_equal(m.read_f32("w.iq1_s").view(np.uint32), golden.view(np.uint32))


def test_a_model_split_by_the_gguf_package_opens_from_its_first_shard(tmp_path, seed, fixtures_dir):
    rng = np.random.default_rng(seed)
    tensors = _tensor_spec(rng, fixtures_dir)
    w = gguf.GGUFWriter(tmp_path / "split.gguf", "interop", split_max_tensors=3)
    w.add_uint32("t.answer", 42)
    _write_tensors(w, tensors)
    first = tmp_path / "split-00001-of-00003.gguf"
    assert first.is_file(), sorted(p.name for p in tmp_path.iterdir())
    with strata.Model(first) as m:
        assert len(m.shards) == 3
        assert m.get("t.answer") == 42 and m.get("split.count") == 3
        assert [t.name for t in m.tensors] == list(tensors)
        assert [t.shard for t in m.tensors] == [0, 0, 0, 1, 1, 1, 2]
        for name, (t, data) in tensors.items():
            assert m.tensor_bytes(name) == data.tobytes(), f"{name} (seed {seed})"


def _strata_metadata(rng: np.random.Generator) -> list[tuple[str, str, object, object]]:
    """(key, kind, value given to Writer.set, type given to Writer.set)."""
    spec = []
    for key, kind, value in _metadata_spec(rng):
        if kind.startswith("array["):
            spec.append((key, kind, value, kind[6:-1]))
        else:
            spec.append((key, kind, value, kind))
    # type inference and numpy inputs
    spec += [
        ("i.int", "i32", -5, None), ("i.big", "i64", 2**40, None), ("i.huge", "u64", 2**63 + 1, None),
        ("i.float", "f64", 0.1, None), ("i.bool", "bool", True, None), ("i.str", "string", "x", None),
        ("i.bytes", "string", b"\xff\xferaw", None), ("i.np_u16", "u16", np.uint16(7), None),
        ("i.np_f32", "f32", np.float32(0.1), None),
        ("i.arr_int", "array[i32]", [1, -2, 3], None), ("i.arr_float", "array[f64]", [0.5, 1, -2.25], None),
        ("i.arr_bool", "array[bool]", [True, False], None), ("i.arr_str", "array[string]", ["a", "ß"], None),
        ("i.arr_np_i16", "array[i16]", np.array([-3, 4], dtype=np.int16), None),
        ("i.arr_np_f32", "array[f32]", rng.standard_normal(5).astype(np.float32), None),
        ("e.arr_i32", "array[i32]", [], "i32"), ("e.arr_str", "array[string]", [], "string"),
        ("e.arr_f32", "array[f32]", [], "f32"),
    ]
    return spec


def _write_strata_file(rng: np.random.Generator, path, n_shards: int = 1):
    meta = _strata_metadata(rng)
    x = rng.standard_normal
    floats = {
        "w.f32": ("f32", x((7, 64)).astype(np.float32)),
        "v.f32": ("f32", x(33).astype(np.float32)),
        "cube.f32": ("f32", x((2, 3, 8)).astype(np.float32)),
        "w.f16": ("f16", x((5, 48)).astype(np.float32)),
        "w.bf16": ("bf16", x((4, 32)).astype(np.float32)),
        "w.q8_0": ("q8_0", x((3, 256)).astype(np.float32)),
        "w.iq1_s": ("iq1_s", x((4, 512)).astype(np.float32)),
        "v.iq1_s": ("iq1_s", x(256).astype(np.float32)),
    }
    imatrix = rng.uniform(0.1, 4.0, 512).astype(np.float32)
    raw_q8 = gguf.quants.quantize(x((2, 64)).astype(np.float32), Q.Q8_0)
    w = strata.Writer()
    w.set("general.alignment", 64, type="u32")
    w.set("general.architecture", "interop")
    for key, _, value, t in meta:
        w.set(key, value, type=t)
    for name, (t, data) in floats.items():
        w.add_tensor(name, data, type=t, imatrix=imatrix if name == "w.iq1_s" else None)
    w.add_tensor_raw("raw.q8_0", "q8_0", [64, 2], raw_q8.tobytes())
    paths = w.write(path, n_shards=n_shards)
    w.close()
    return paths, meta, floats, raw_q8


def _expected_bytes(t: str, data: np.ndarray) -> bytes | None:
    """What llama.cpp writes for these float32 values (None for IQ1_S: checked by decoding)."""
    if t == "f32":
        return data.tobytes()
    if t == "f16":
        return data.astype(np.float16).tobytes()
    if t == "bf16":
        return gguf.quants.quantize(data, Q.BF16).tobytes()
    if t == "q8_0":
        return gguf.quants.quantize(data, Q.Q8_0).tobytes()
    return None


def test_a_file_written_by_strata_is_read_by_the_gguf_package_with_identical_metadata_and_tensor_bytes(
        tmp_path, seed):
    rng = np.random.default_rng(seed)
    [path], meta, floats, raw_q8 = _write_strata_file(rng, tmp_path / "from-strata.gguf")
    reader = gguf.GGUFReader(path)
    assert reader.alignment == 64
    want = [("general.alignment", "u32", 64), ("general.architecture", "string", "interop")] + \
        [(k, kind, v) for k, kind, v, _ in meta]
    assert [k for k in reader.fields if not k.startswith("GGUF.")] == [k for k, _, _ in want], f"seed {seed}"
    for key, kind, value in want:
        assert canon_reader(reader.fields[key]) == (kind, canon_py(kind, value)), f"{key} (seed {seed})"

    theirs = {t.name: t for t in reader.tensors}
    assert list(theirs) == list(floats) + ["raw.q8_0"]
    with strata.Model(path) as m:
        for key, kind, value in want:
            assert canon_strata(m, key) == (kind, canon_py(kind, value)), f"strata reads back {key} (seed {seed})"
        assert m.get("i.bytes") == b"\xff\xferaw", "invalid UTF-8 comes back as bytes"
        assert m.shards[0].alignment == 64
        for info in m.tensors:
            t = theirs[info.name]
            assert info.file_offset == t.data_offset and info.file_offset % 64 == 0, info.name
            assert int(t.tensor_type) == info.type and [int(v) for v in t.shape] == list(info.ne), info.name
            stored = m.tensor_bytes(info.name)
            assert t.data.tobytes() == stored, f"{info.name}: gguf reads other bytes (seed {seed})"
            if info.name == "raw.q8_0":
                assert stored == raw_q8.tobytes()
                continue
            kind, data = floats[info.name]
            expected = _expected_bytes(kind, data)
            if expected is not None:
                assert stored == expected, f"{info.name}: {kind} bytes differ from llama.cpp's conversion (seed {seed})"
            ref = gguf.quants.dequantize(t.data, t.tensor_type).astype(np.float32).reshape(info.shape)
            got = m.read_f32(info.name)
            assert np.array_equal(got.view(np.uint32), ref.view(np.uint32)), \
                f"{info.name}: read_f32 differs from gguf.quants.dequantize (seed {seed})"
            if kind == "f32":
                assert np.array_equal(got.view(np.uint32), data.view(np.uint32))


def test_a_model_split_by_strata_into_three_shards_is_read_by_the_gguf_package(tmp_path, seed):
    rng = np.random.default_rng(seed)
    paths, meta, floats, raw_q8 = _write_strata_file(rng, tmp_path / "split.gguf", n_shards=3)
    assert [p.rsplit("/", 1)[-1] for p in paths] == [f"split-0000{i}-of-00003.gguf" for i in (1, 2, 3)]
    names, blobs = [], {}
    for i, p in enumerate(paths):
        r = gguf.GGUFReader(p)
        assert canon_reader(r.fields["split.no"]) == ("u16", i)
        assert canon_reader(r.fields["split.count"]) == ("u16", 3)
        assert canon_reader(r.fields["split.tensors.count"]) == ("i32", len(floats) + 1)
        if i == 0:
            assert r.alignment == 64
            for key, kind, value, _ in meta:
                assert canon_reader(r.fields[key]) == (kind, canon_py(kind, value)), f"{key} (seed {seed})"
        for t in r.tensors:
            names.append(t.name)
            blobs[t.name] = t.data.tobytes()
            assert t.data_offset % r.alignment == 0
    assert names == list(floats) + ["raw.q8_0"]
    [single], _, _, _ = _write_strata_file(np.random.default_rng(seed), tmp_path / "single.gguf")
    for source in (paths[0], paths):
        with strata.Model(source) as split, strata.Model(single) as one:
            assert len(split.shards) == 3
            assert [t.name for t in split.tensors] == names
            for t in split.tensors:
                assert split.tensor_bytes(t.name) == blobs[t.name] == one.tensor_bytes(t.name), t.name
            plain = {k: canon_strata(one, k) for k in one.keys()}
            assert {k: canon_strata(split, k) for k in split.keys() if not k.startswith("split.")} == plain


def test_iq1s_bytes_written_by_strata_decode_the_same_in_the_gguf_package_and_in_strata(tmp_path, seed):
    rng = np.random.default_rng(seed)
    x = (rng.standard_normal((8, 1024)) * rng.uniform(1e-3, 1e2, (8, 1))).astype(np.float32)
    w = strata.Writer()
    w.add_tensor("q", x, type="iq1_s", imatrix=rng.uniform(0.01, 10.0, 1024).astype(np.float32))
    w.add_tensor("q_uniform", x, type="iq1_s")
    [path] = w.write(tmp_path / "iq1s.gguf")
    with strata.Model(path) as m:
        for name in ("q", "q_uniform"):
            raw = np.frombuffer(m.tensor_bytes(name), dtype=np.uint8).reshape(8, 1024 // 256 * 50)
            ref = gguf.quants.dequantize(raw, Q.IQ1_S)
            got = m.read_f32(name)
            assert got.shape == (8, 1024)
            assert np.array_equal(got.view(np.uint32), ref.astype(np.float32).view(np.uint32)), \
                f"{name}: seed {seed}"
