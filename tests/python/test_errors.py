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
    rng = np.random.default_rng(7)
    q4 = gguf.quants.quantize(rng.standard_normal((2, 64)).astype(np.float32), gguf.GGMLQuantizationType.Q4_0)
    w = strata.Writer()
    w.add_tensor_raw("w.q4_0", "q4_0", [64, 2], q4.tobytes())
    w.add_tensor_raw("w.i32", 26, [8], np.arange(8, dtype=np.int32))
    [path] = w.write(tmp_path / "unsupported.gguf")
    with strata.Model(path) as m:
        for name, type_name in (("w.q4_0", "q4_0"), ("w.i32", "i32")):
            info = m.tensor(name)
            assert info.type_name == type_name and not strata.tensor_type_supported(info.type)
            with pytest.raises(strata.StrataError) as e:
                m.read_f32(name)
            assert e.value.status == strata.Status.UNSUPPORTED, e.value
            assert type_name in e.value.message or name in e.value.message, e.value
        assert m.tensor_bytes("w.q4_0") == q4.tobytes()
    reader = gguf.GGUFReader(path)
    assert reader.tensors[0].data.tobytes() == q4.tobytes()


def test_a_closed_model_refuses_further_use(gguf_dir):
    m = strata.Model(gguf_dir / "tiny-model.gguf")
    m.close()
    m.close()
    assert m.closed
    with pytest.raises(ValueError):
        m.tensors
