"""The Writer: quantization quality and refusals."""
from __future__ import annotations

import os

import numpy as np
import pytest

import strata


def _weighted_rel_rms(x: np.ndarray, q: np.ndarray, w: np.ndarray) -> float:
    x64, q64, w64 = x.astype(np.float64), q.astype(np.float64), np.broadcast_to(w.astype(np.float64), x.shape)
    return float(np.sqrt(np.sum(w64 * (x64 - q64) ** 2) / np.sum(w64 * x64 ** 2)))


@pytest.mark.parametrize("weights", ["imatrix", "uniform"])
def test_iq1s_quantization_of_a_gaussian_matrix_has_a_weighted_relative_rms_error_below_0_7(tmp_path, seed, weights):
    rng = np.random.default_rng(seed)
    x = rng.standard_normal((32, 2048)).astype(np.float32)
    imatrix = rng.uniform(0.05, 5.0, 2048).astype(np.float32) if weights == "imatrix" else None
    w = strata.Writer()
    w.add_tensor("x", x, type="iq1_s", imatrix=imatrix)
    [path] = w.write(tmp_path / "q.gguf")
    with strata.Model(path) as m:
        info = m.tensor("x")
        assert (info.type, info.type_name, info.ne, info.n_bytes) == (19, "iq1_s", (2048, 32), 32 * 8 * 50)
        q = m.read_f32("x")
    assert np.all(np.isfinite(q)), f"non-finite output; np.random.default_rng({seed})"
    err = _weighted_rel_rms(x, q, imatrix if imatrix is not None else np.ones(2048, np.float32))
    print(f"weighted relative RMS error {err:.4f} ({weights}, seed {seed})")
    assert err < 0.7, f"weighted relative RMS error {err:.4f} >= 0.7 ({weights}; np.random.default_rng({seed}))"
    assert err > 0.2, f"error {err:.4f} implausibly small for 1.56 bits/weight (seed {seed})"


@pytest.mark.parametrize("t, tol", [("q8_0", 0.02), ("f16", 1e-3), ("bf16", 1e-2)])
def test_other_float_conversions_round_trip_within_their_precision(tmp_path, seed, t, tol):
    x = np.random.default_rng(seed).standard_normal((6, 256)).astype(np.float32)
    w = strata.Writer()
    w.add_tensor("x", x, type=t)
    [path] = w.write(tmp_path / "x.gguf")
    with strata.Model(path) as m:
        q = m.read_f32("x")
    err = float(np.sqrt(np.mean((q - x) ** 2) / np.mean(x ** 2)))
    assert err < tol, f"{t}: relative RMS error {err} (seed {seed})"


def test_a_writer_refuses_a_duplicate_key_with_invalid_argument():
    w = strata.Writer()
    w.set("a.key", 1)
    with pytest.raises(strata.StrataError) as e:
        w.set("a.key", 2)
    assert e.value.status == strata.Status.INVALID_ARGUMENT and e.value.status_name == "INVALID_ARGUMENT"
    assert "a.key" in str(e.value)


def test_a_writer_refuses_a_duplicate_tensor_name_with_invalid_argument():
    w = strata.Writer()
    w.add_tensor("t", np.zeros(32, np.float32))
    with pytest.raises(strata.StrataError) as e:
        w.add_tensor("t", np.ones(32, np.float32), type="q8_0")
    assert e.value.status == strata.Status.INVALID_ARGUMENT
    assert "t" in e.value.message


def test_a_writer_refuses_bad_tensors_and_values(tmp_path):
    w = strata.Writer()
    with pytest.raises(strata.StrataError) as e:  # IQ1_S rows are whole 256-blocks
        w.add_tensor("bad.iq1_s", np.zeros((2, 100), np.float32), type="iq1_s")
    assert e.value.status == strata.Status.INVALID_ARGUMENT
    with pytest.raises(strata.StrataError) as e:  # raw bytes must match the shape
        w.add_tensor_raw("bad.raw", "q8_0", [64, 2], bytes(67))
    assert e.value.status == strata.Status.INVALID_ARGUMENT
    with pytest.raises(strata.StrataError) as e:  # range-checked against the type
        w.set("too.big", 300, type="u8")
    assert e.value.status == strata.Status.INVALID_ARGUMENT
    with pytest.raises(strata.StrataError) as e:
        w.set("neg.unsigned", -1, type="u32")
    assert e.value.status == strata.Status.INVALID_ARGUMENT
    with pytest.raises(OverflowError):
        w.set("arr.too.big", [1, 256], type="u8")
    with pytest.raises(ValueError):
        w.set("arr.empty", [])
    with pytest.raises(strata.StrataError) as e:
        w.set("general.alignment", 48, type="u32")
        w.write(tmp_path / "align48.gguf")
    assert e.value.status == strata.Status.INVALID_ARGUMENT
    assert not (tmp_path / "align48.gguf").exists()


def test_a_writer_can_write_twice_and_reports_an_unwritable_path(tmp_path):
    w = strata.Writer()
    w.set("k", "v")
    w.add_tensor("t", np.arange(64, dtype=np.float32))
    a = w.write(tmp_path / "a.gguf")
    b = w.write(tmp_path / "b.gguf")
    assert open(a[0], "rb").read() == open(b[0], "rb").read()
    bad = tmp_path / "no" / "such" / "dir" / "c.gguf"
    with pytest.raises(strata.StrataError) as e:
        w.write(bad)
    assert e.value.status in (strata.Status.IO, strata.Status.NOT_FOUND)
    assert "c.gguf" in e.value.message
    assert sorted(p.name for p in tmp_path.iterdir()) == ["a.gguf", "b.gguf"], "no temporary files left behind"


def test_a_writer_refuses_what_llama_cpp_would_not_read(tmp_path):
    cases = {
        "empty key": lambda w: w.set("", 1),
        "64-byte tensor name": lambda w: w.add_tensor("n" * 64, np.zeros(4, np.float32)),
        "empty tensor name": lambda w: w.add_tensor("", np.zeros(4, np.float32)),
        "NaN for q8_0": lambda w: w.add_tensor("nan.q8", np.full(32, np.nan, np.float32), type="q8_0"),
        "inf for iq1_s": lambda w: w.add_tensor("inf.iq1", np.full(256, np.inf, np.float32), type="iq1_s"),
        "negative imatrix": lambda w: w.add_tensor("neg.imatrix", np.ones((1, 256), np.float32), type="iq1_s",
                                                   imatrix=-np.ones(256, np.float32)),
        "alignment as i32": lambda w: w.set("general.alignment", 64, type="i32"),
        "zero-size tensor": lambda w: w.add_tensor("empty", np.zeros((0, 4), np.float32)),
    }
    for i, (what, call) in enumerate(cases.items()):
        w = strata.Writer()
        with pytest.raises(strata.StrataError) as e:  # when adding, or at the latest when writing
            call(w)
            w.write(tmp_path / f"refused{i}.gguf")
        assert e.value.status == strata.Status.INVALID_ARGUMENT, f"{what}: {e.value}"
        assert not (tmp_path / f"refused{i}.gguf").exists(), what
    w = strata.Writer()
    w.add_tensor("n" * 63, np.zeros(4, np.float32))
    w.write(tmp_path / "name63.gguf")


def test_a_split_with_more_shards_than_tensors_still_opens(tmp_path):
    w = strata.Writer()
    w.set("k", 1)
    w.add_tensor("only", np.arange(8, dtype=np.float32))
    paths = w.write(tmp_path / "m.gguf", n_shards=3)
    assert all(os.path.isfile(p) for p in paths) and len(paths) == 3
    with strata.Model(paths[0]) as m:
        assert [t.name for t in m.tensors] == ["only"] and len(m.shards) == 3
        assert m.read_f32("only").tolist() == list(range(8))
    with pytest.raises(strata.StrataError) as e:
        w.write(tmp_path / "zero.gguf", n_shards=0)
    assert e.value.status == strata.Status.INVALID_ARGUMENT


def test_the_writers_iq1s_quantizer_reproduces_ggmls_bytes_on_the_golden_cases(fixtures_dir, tmp_path):
    folder = fixtures_dir / "iq1s"
    cases = sorted(p.name[: -len("_imatrix.npy")] for p in folder.glob("*_imatrix.npy"))
    assert len(cases) >= 4, cases
    w = strata.Writer()
    for c in cases:
        w.add_tensor(c, np.load(folder / f"{c}_input.npy"), type="iq1_s", imatrix=np.load(folder / f"{c}_imatrix.npy"))
    [path] = w.write(tmp_path / "golden.gguf")
    with strata.Model(path) as m:
        for c in cases:
            want = np.load(folder / f"{c}_iq1s.npy")
            got = np.frombuffer(m.tensor_bytes(c), dtype=np.uint8).reshape(want.shape)
            differing = np.flatnonzero((got != want).any(axis=1))
            assert differing.size == 0, f"{c}: rows {differing.tolist()} differ from ggml_quantize_chunk"
