"""Wrong arguments give a StrataError with the right status and a message that says what is wrong."""
from __future__ import annotations

import gguf
import numpy as np
import pytest

import strata


@pytest.fixture
def tiny(gguf_dir):
    with strata.Model(gguf_dir / "tiny-model.gguf") as m:
        yield m


def test_opening_a_missing_file_names_the_path(tmp_path):
    path = tmp_path / "does-not-exist.gguf"
    with pytest.raises(strata.StrataError) as e:
        strata.Model(path)
    assert e.value.status in (strata.Status.IO, strata.Status.NOT_FOUND), e.value
    assert str(path) in e.value.message


def test_opening_a_missing_shard_in_a_list_names_that_shard(gguf_dir, tmp_path):
    missing = tmp_path / "tiny-model-00002-of-00003.gguf"
    with pytest.raises(strata.StrataError) as e:
        strata.Model([gguf_dir / "tiny-model-00001-of-00003.gguf", missing,
                      gguf_dir / "tiny-model-00003-of-00003.gguf"])
    assert e.value.status in (strata.Status.IO, strata.Status.NOT_FOUND), e.value
    assert str(missing) in e.value.message


def test_opening_a_first_shard_whose_siblings_are_missing_fails(gguf_dir, tmp_path):
    lonely = tmp_path / "tiny-model-00001-of-00003.gguf"
    lonely.write_bytes((gguf_dir / "tiny-model-00001-of-00003.gguf").read_bytes())
    with pytest.raises(strata.StrataError) as e:
        strata.Model(lonely)
    assert e.value.status in (strata.Status.IO, strata.Status.NOT_FOUND, strata.Status.FORMAT), e.value
    assert "tiny-model-0000" in e.value.message


def test_opening_a_directory_or_no_path_at_all_fails(tmp_path):
    with pytest.raises(strata.StrataError) as e:
        strata.Model(tmp_path)
    assert e.value.status in (strata.Status.IO, strata.Status.FORMAT, strata.Status.INVALID_ARGUMENT), e.value
    with pytest.raises(strata.StrataError) as e:
        strata.Model([])
    assert e.value.status == strata.Status.INVALID_ARGUMENT


def test_an_unknown_key_is_not_found(tiny):
    for call in (tiny.metadata_type, tiny.get, tiny.get_int, tiny.get_uint, tiny.get_float, tiny.get_bool,
                 tiny.get_string, tiny.get_json_text):
        with pytest.raises(strata.StrataError) as e:
            call("no.such.key")
        assert e.value.status == strata.Status.NOT_FOUND, call.__name__
        assert "no.such.key" in e.value.message, call.__name__
    assert "no.such.key" not in tiny and "fx.u8" in tiny


def test_a_value_of_another_type_is_a_type_mismatch(tiny):
    cases = [(tiny.get_int, "fx.str"), (tiny.get_string, "fx.u8"), (tiny.get_float, "fx.i32"),
             (tiny.get_bool, "fx.u8"), (tiny.get_int, "fx.u64"), (tiny.get_uint, "fx.i8"),
             (tiny.get_int, "fx.arr_i32"), (tiny.get_string, "fx.arr_str")]
    for call, key in cases:
        with pytest.raises(strata.StrataError) as e:
            call(key)
        assert e.value.status == strata.Status.TYPE_MISMATCH, f"{call.__name__}({key}): {e.value}"
        assert key in e.value.message, f"{call.__name__}({key}): {e.value}"


def test_integers_convert_between_widths_when_they_fit(tiny):
    assert tiny.get_int("fx.u8") == 250 and tiny.get_uint("fx.u8") == 250
    assert tiny.get_int("fx.u32") == 4294967295
    assert tiny.get_uint("fx.u64") == 2**64 - 1 and tiny.get_int("fx.i64") == -(2**63)
    assert tiny.get_float("fx.f32") == float(np.float32(3.14159274))
    assert tiny.get_json("fx.arr_i32") == [-1, 0, 1, 2147483647, -2147483648]
    assert tiny.get_json("fx.str_utf8") == "Grüße, 世界! Ελληνικά 🚀 café"
    assert tiny.get_json("fx.arr_empty_str") == []


def test_an_unknown_tensor_is_not_found(tiny):
    for call in (tiny.tensor, tiny.tensor_bytes, tiny.read_f32):
        with pytest.raises(strata.StrataError) as e:
            call("no.such.tensor")
        assert e.value.status == strata.Status.NOT_FOUND
        assert "no.such.tensor" in e.value.message


def test_reading_an_unsupported_tensor_type_as_float_is_unsupported(tmp_path):
    # nvfp4 (a ggml type strata does not decode) and i32 (ggml's integer type, no float form).
    rng = np.random.default_rng(7)
    nvfp4 = rng.integers(0, 256, (2, 36), dtype=np.uint8)
    w = strata.Writer()
    w.add_tensor_raw("w.nvfp4", 40, [64, 2], nvfp4.tobytes())
    w.add_tensor_raw("w.i32", 26, [8], np.arange(8, dtype=np.int32))
    [path] = w.write(tmp_path / "unsupported.gguf")
    with strata.Model(path) as m:
        for name, type_name in (("w.nvfp4", "nvfp4"), ("w.i32", "i32")):
            info = m.tensor(name)
            assert info.type_name == type_name and not strata.tensor_type_supported(info.type)
            with pytest.raises(strata.StrataError) as e:
                m.read_f32(name)
            assert e.value.status == strata.Status.UNSUPPORTED, e.value
            assert type_name in e.value.message and name in e.value.message, e.value
            assert "q4_K" in e.value.message  # and the types it does decode
        assert m.tensor_bytes("w.nvfp4") == nvfp4.tobytes()
    reader = gguf.GGUFReader(path)
    assert reader.tensors[0].data.tobytes() == nvfp4.tobytes()


def test_a_closed_model_refuses_further_use(gguf_dir):
    m = strata.Model(gguf_dir / "tiny-model.gguf")
    m.close()
    m.close()
    assert m.closed
    with pytest.raises(ValueError):
        m.tensors


def test_buffer_filling_calls_report_the_size_they_need(tiny):
    import ctypes
    from strata import _lib
    L = _lib.lib()
    need = ctypes.c_uint64()
    small = (ctypes.c_float * 4)()
    idx = tiny.tensor("tok_embd.weight").index
    assert L.strata_model_tensor_read_f32(tiny._handle(), idx, small, 4, ctypes.byref(need)) == \
        strata.Status.BUFFER_TOO_SMALL
    assert need.value == 64 * 7 and "tok_embd.weight" in _lib.last_error()
    needed = ctypes.c_size_t()
    buf = ctypes.create_string_buffer(4)
    assert L.strata_model_metadata_json(tiny._handle(), b"fx.str", buf, 4, ctypes.byref(needed)) == \
        strata.Status.BUFFER_TOO_SMALL
    assert needed.value == len('"hello gguf"') + 1
    assert tiny.get_json("fx.arr_i32_1000") == tiny.get("fx.arr_i32_1000")  # the binding grows its buffer


def test_out_of_range_indexes_and_null_outputs_are_invalid_arguments(tiny):
    import ctypes
    from strata import _lib
    L, h = _lib.lib(), tiny._handle()
    cases = {
        "metadata_key": lambda: L.strata_model_metadata_key(h, 35, ctypes.byref(ctypes.c_char_p())),
        "tensor_info NULL": lambda: L.strata_model_tensor_info(h, 0, None),
        "tensor_data index": lambda: L.strata_model_tensor_data(h, 8, ctypes.byref(ctypes.c_void_p()),
                                                                ctypes.byref(ctypes.c_uint64())),
        "shard_sha256 index": lambda: L.strata_model_shard_sha256(h, 1, ctypes.create_string_buffer(65)),
        "array index": lambda: L.strata_model_metadata_array_int(h, b"fx.arr_i32", 5, ctypes.byref(ctypes.c_int64())),
        "open NULL out": lambda: L.strata_model_open(None, 0, None, None),
    }
    for what, call in cases.items():
        assert call() == strata.Status.INVALID_ARGUMENT, what
        assert _lib.last_error(), f"{what}: no message"
    info = _lib.TensorInfoC()
    info.struct_size = 8  # older than any strata_tensor_info
    assert L.strata_model_tensor_info(h, 0, ctypes.byref(info)) == strata.Status.INVALID_ARGUMENT
    assert "struct_size" in _lib.last_error()


def test_shard_lists_that_do_not_form_one_model_are_refused(gguf_dir):
    s = [gguf_dir / f"tiny-model-0000{i}-of-00003.gguf" for i in (1, 2, 3)]
    for paths in ([s[0], s[1]], [s[0], s[1], s[1]], [gguf_dir / "tiny-model.gguf", s[1]], [s[1]]):
        with pytest.raises(strata.StrataError) as e:
            strata.Model(paths)
        assert e.value.status in (strata.Status.INVALID_ARGUMENT, strata.Status.FORMAT, strata.Status.NOT_FOUND), \
            f"{[p.name for p in paths]}: {e.value}"
        assert any(p.name in e.value.message for p in paths), e.value
    with strata.Model([s[1], s[2], s[0]]) as m:  # any order: the shards say where they belong
        assert [t.shard for t in m.tensors] == [0, 0, 0, 1, 1, 1, 2, 2]


def test_errors_are_kept_per_thread_and_a_model_can_be_read_from_several_threads(tiny):
    import threading
    names = [t.name for t in tiny.tensors]
    expected = {n: tiny.read_f32(n).tobytes() for n in names}
    failures = []

    def work(k: int) -> None:
        try:
            for i in range(50):
                n = names[(k + i) % len(names)]
                assert tiny.read_f32(n).tobytes() == expected[n]
                try:
                    tiny.get_int(f"missing.{k}.{i}")
                except strata.StrataError as e:
                    assert f"missing.{k}.{i}" in e.message, e.message
        except BaseException as e:  # noqa: BLE001
            failures.append(e)

    threads = [threading.Thread(target=work, args=(k,)) for k in range(8)]
    for t in threads:
        t.start()
    for t in threads:
        t.join()
    assert not failures, failures


def test_array_elements_convert_like_scalars_and_refuse_other_types(tiny):
    import ctypes
    from strata import _lib
    L, h = _lib.lib(), tiny._handle()
    d, b, i, u = ctypes.c_double(), ctypes.c_int(), ctypes.c_int64(), ctypes.c_uint64()
    p, n = ctypes.c_void_p(), ctypes.c_size_t()
    mismatches = {
        "float of i32": lambda: L.strata_model_metadata_array_float(h, b"fx.arr_i32", 0, ctypes.byref(d)),
        "bool of u8": lambda: L.strata_model_metadata_array_bool(h, b"fx.arr_u8", 0, ctypes.byref(b)),
        "int of u64 max": lambda: L.strata_model_metadata_array_int(h, b"fx.arr_u64", 2, ctypes.byref(i)),
        "uint of -128": lambda: L.strata_model_metadata_array_uint(h, b"fx.arr_i8", 0, ctypes.byref(u)),
        "string of i32": lambda: L.strata_model_metadata_array_string(h, b"fx.arr_i32", 0, ctypes.byref(p),
                                                                      ctypes.byref(n)),
        "array of a scalar": lambda: L.strata_model_metadata_array_int(h, b"fx.i32", 0, ctypes.byref(i)),
    }
    for what, call in mismatches.items():
        assert call() == strata.Status.TYPE_MISMATCH, f"{what}: {_lib.last_error()}"
    assert L.strata_model_metadata_array_int(h, b"fx.arr_u64", 1, ctypes.byref(i)) == 0 and i.value == 1
    assert L.strata_model_metadata_array_float(h, b"fx.arr_f32", 1, ctypes.byref(d)) == 0 and d.value == -1.25
    assert L.strata_model_metadata_array_int(h, b"fx.arr_empty_i32", 0, ctypes.byref(i)) == \
        strata.Status.INVALID_ARGUMENT
