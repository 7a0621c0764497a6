"""strata reads ggml's golden GGUF files exactly as the manifest describes them."""
from __future__ import annotations

import gguf
import numpy as np
import pytest

import strata
from _helpers import assert_metadata_matches_manifest, assert_tensors_match_manifest, sha256

SHARDS = ["tiny-model-00001-of-00003.gguf", "tiny-model-00002-of-00003.gguf", "tiny-model-00003-of-00003.gguf"]


def _split_expectations(valid_files: dict) -> tuple[list[dict], list[dict], dict]:
    kv = valid_files[SHARDS[0]]["kv"]
    tensors, shard_of = [], {}
    for i, name in enumerate(SHARDS):
        for t in valid_files[name]["tensors"]:
            tensors.append(t)
            shard_of[t["name"]] = i
    return kv, tensors, shard_of


def test_the_single_file_reproduces_every_key_type_value_and_tensor_digest_of_the_manifest(gguf_dir, valid_files):
    want = valid_files["tiny-model.gguf"]
    with strata.Model(gguf_dir / "tiny-model.gguf") as m:
        assert m.gguf_version == 3
        assert_metadata_matches_manifest(m, want["kv"], "tiny-model.gguf")
        assert_tensors_match_manifest(m, want["tensors"], "tiny-model.gguf")
        [shard] = m.shards
        assert shard.path.endswith("tiny-model.gguf")
        assert (shard.size, shard.gguf_version, shard.alignment, shard.data_offset, shard.n_tensors,
                shard.n_metadata) == (want["file_size"], 3, want["alignment"], want["data_offset"],
                                      want["n_tensors"], want["n_kv"])


@pytest.mark.parametrize("how", ["first_shard_path", "explicit_list"])
def test_the_three_shards_open_as_one_model_with_the_first_shards_metadata_and_all_tensors(gguf_dir, valid_files, how):
    paths = [gguf_dir / SHARDS[0]] if how == "first_shard_path" else [gguf_dir / s for s in SHARDS]
    kv, tensors, shard_of = _split_expectations(valid_files)
    with strata.Model(paths if how == "explicit_list" else paths[0]) as m:
        assert_metadata_matches_manifest(m, kv, f"3 shards ({how})")
        assert_tensors_match_manifest(m, tensors, f"3 shards ({how})", shard_of=shard_of)
        shards = m.shards
        assert [s.path.rsplit("/", 1)[-1] for s in shards] == SHARDS
        for s, name in zip(shards, SHARDS):
            w = valid_files[name]
            assert (s.size, s.alignment, s.data_offset, s.n_tensors, s.n_metadata) == \
                (w["file_size"], w["alignment"], w["data_offset"], w["n_tensors"], w["n_kv"]), name


def test_a_version_2_file_reads_like_the_version_3_file(gguf_dir, valid_files, manifest):
    want = valid_files["tiny-model.gguf"]
    [variant] = [v for v in manifest["accepted_variants"] if v["file"] == "variants/version_2.gguf"]
    with strata.Model(gguf_dir / variant["file"]) as m:
        assert m.gguf_version == 2
        assert m.shards[0].gguf_version == 2
        assert_metadata_matches_manifest(m, want["kv"], "version_2.gguf")
        assert_tensors_match_manifest(m, want["tensors"], "version_2.gguf")


def test_read_f32_matches_the_manifests_ggml_dequantization(gguf_dir, valid_files):
    want = valid_files["tiny-model.gguf"]
    with strata.Model(gguf_dir / "tiny-model.gguf") as m:
        for t in want["tensors"]:
            got = m.read_f32(t["name"])
            assert got.dtype == np.float32 and got.shape == tuple(reversed(t["ne"])), t["name"]
            assert sha256(got.astype("<f4").tobytes()) == t["dequant_f32_sha256"], t["name"]
            first8 = np.array(t["dequant_first8"], dtype=np.float32)
            assert np.array_equal(got.reshape(-1)[:8].view(np.uint32), first8.view(np.uint32)), \
                f"{t['name']}: first 8 {got.reshape(-1)[:8]} != {first8}"


@pytest.mark.parametrize("path", ["tiny-model.gguf", "tiny-model-00001-of-00003.gguf"])
def test_read_f32_equals_the_gguf_packages_dequantization_bit_for_bit(gguf_dir, path):
    readers = [gguf.GGUFReader(gguf_dir / p) for p in ([path] if path == "tiny-model.gguf" else SHARDS)]
    theirs = {t.name: t for r in readers for t in r.tensors}
    with strata.Model(gguf_dir / path) as m:
        types = set()
        for info in m.tensors:
            t = theirs[info.name]
            ref = gguf.quants.dequantize(t.data, t.tensor_type).astype(np.float32).reshape(info.shape)
            got = m.read_f32(info.name)
            assert got.shape == ref.shape, info.name
            assert np.array_equal(got.view(np.uint32), ref.view(np.uint32)), \
                f"{info.name} ({info.type_name}): {np.count_nonzero(got.view(np.uint32) != ref.view(np.uint32))} " \
                "elements differ from gguf.quants.dequantize"
            assert m.tensor_bytes(info.name) == t.data.tobytes(), info.name
            types.add(info.type_name)
        assert types == {"f32", "f16", "q8_0", "iq1_s"}


def test_iq1s_golden_blocks_decode_to_ggmls_output_bit_for_bit(fixtures_dir, tmp_path):
    cases = sorted(p.name[: -len("_iq1s.npy")] for p in (fixtures_dir / "iq1s").glob("*_iq1s.npy"))
    assert cases, "no IQ1_S golden cases found"
    w = strata.Writer()
    for c in cases:
        blocks = np.load(fixtures_dir / "iq1s" / f"{c}_iq1s.npy")
        deq = np.load(fixtures_dir / "iq1s" / f"{c}_dequant.npy")
        w.add_tensor_raw(c, "iq1_s", list(reversed(deq.shape)), blocks)
    path = w.write(tmp_path / "golden.gguf")[0]
    with strata.Model(path) as m:
        for c in cases:
            deq = np.load(fixtures_dir / "iq1s" / f"{c}_dequant.npy").astype(np.float32)
            got = m.read_f32(c)
            assert np.array_equal(got.view(np.uint32), deq.view(np.uint32)), \
                f"{c}: {np.count_nonzero(got.view(np.uint32) != deq.view(np.uint32))} values differ from ggml"


def test_broken_files_are_refused_with_a_message_naming_the_file(gguf_dir, manifest):
    refused = []
    for entry in manifest["broken_files"]:
        if entry.get("spec_valid"):
            continue
        path = gguf_dir / entry["file"]
        with pytest.raises(strata.StrataError) as info:
            strata.Model(path).close()
        err = info.value
        assert err.status in (strata.Status.FORMAT, strata.Status.UNSUPPORTED), \
            f"{entry['file']} ({entry['defect']}): status {err.status_name}: {err}"
        assert path.name in str(err), f"{entry['file']}: the message does not name the file: {err}"
        refused.append(entry["file"])
    assert len(refused) == 19


@pytest.mark.parametrize("name", ["version_1.gguf", "version_4.gguf"])
def test_unsupported_gguf_versions_are_refused(gguf_dir, name):
    with pytest.raises(strata.StrataError) as info:
        strata.Model(gguf_dir / "broken" / name)
    assert info.value.status in (strata.Status.UNSUPPORTED, strata.Status.FORMAT)
    assert name in info.value.message


def test_the_spec_valid_tensor_offset_gap_file_opens_with_the_same_tensor_bytes(gguf_dir, manifest, valid_files):
    [entry] = [e for e in manifest["broken_files"] if e["file"] == "broken/tensor_offset_gap.gguf"]
    assert entry["spec_valid"] is True
    want = {t["name"]: t for t in valid_files["tiny-model.gguf"]["tensors"]}
    with strata.Model(gguf_dir / entry["file"]) as m:
        assert [t.name for t in m.tensors] == list(want)
        for t in m.tensors:
            assert sha256(m.tensor_bytes(t.name)) == want[t.name]["sha256"], t.name
        gap = m.tensor("cube.f32").file_offset - want["cube.f32"]["abs_offset"]
        assert gap == 64
        assert sha256(m.read_f32("vec.iq1_s").astype("<f4").tobytes()) == want["vec.iq1_s"]["dequant_f32_sha256"]
