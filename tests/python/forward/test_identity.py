"""Shard digests and the model identity (strata_model_identity: sha256 over the metadata without
split.* keys, the tensor table and every shard's digest)."""
from __future__ import annotations

import hashlib
import shutil

import strata

SHARDS = ["tiny-model-00001-of-00003.gguf", "tiny-model-00002-of-00003.gguf", "tiny-model-00003-of-00003.gguf"]


def _file_sha256(path) -> str:
    return hashlib.sha256(open(path, "rb").read()).hexdigest()


def test_shard_sha256_equals_hashlib_of_each_file(gguf_dir, valid_files, tmp_path):
    for source in (gguf_dir / "tiny-model.gguf", gguf_dir / SHARDS[0]):
        with strata.Model(source, digest_cache_dir=tmp_path, use_digest_cache=False) as m:
            for s in m.shards:
                digest = m.shard_sha256(s.index)
                assert digest == _file_sha256(s.path) == valid_files[s.path.rsplit("/", 1)[-1]]["sha256"], s.path


def test_the_identity_is_stable_across_opens_and_with_the_digest_cache_on_or_off(gguf_dir, tmp_path):
    ids = set()
    for use_cache in (True, True, False):
        with strata.Model(gguf_dir / "tiny-model.gguf", digest_cache_dir=tmp_path / "cache",
                          use_digest_cache=use_cache) as m:
            ident = m.identity()
            assert len(ident) == 64 and all(c in "0123456789abcdef" for c in ident)
            assert m.identity() == ident
            ids.add(ident)
    with strata.Model(gguf_dir / "tiny-model.gguf") as m:  # the default cache location
        ids.add(m.identity())
    assert len(ids) == 1


def test_the_identity_of_a_split_model_does_not_depend_on_how_its_shards_were_named(gguf_dir, tmp_path):
    with strata.Model(gguf_dir / SHARDS[0], digest_cache_dir=tmp_path) as a, \
            strata.Model([gguf_dir / s for s in SHARDS], digest_cache_dir=tmp_path, use_digest_cache=False) as b:
        assert a.identity() == b.identity()


def test_split_and_unsplit_files_differ_in_identity_because_shard_digests_are_included(gguf_dir, tmp_path):
    # strata.h: the identity covers every shard's digest, and the shard files differ from the single file.
    with strata.Model(gguf_dir / SHARDS[0], digest_cache_dir=tmp_path) as split, \
            strata.Model(gguf_dir / "tiny-model.gguf", digest_cache_dir=tmp_path) as single:
        assert [t.name for t in split.tensors] == [t.name for t in single.tensors]
        assert split.identity() != single.identity()


def test_the_identity_changes_when_one_byte_of_tensor_data_changes(gguf_dir, tmp_path):
    original = tmp_path / "tiny-model.gguf"
    shutil.copyfile(gguf_dir / "tiny-model.gguf", original)
    with strata.Model(original, digest_cache_dir=tmp_path / "cache") as m:
        before = m.identity()
        offset = m.tensor("vec.q8_0").file_offset + 5
        original_bytes = m.tensor_bytes("vec.q8_0")
    changed = tmp_path / "changed.gguf"
    data = bytearray(original.read_bytes())
    data[offset] ^= 0x01
    changed.write_bytes(bytes(data))
    with strata.Model(changed, digest_cache_dir=tmp_path / "cache") as m:
        assert m.tensor_bytes("vec.q8_0") != original_bytes
        assert m.identity() != before


def test_a_file_modified_in_place_is_rehashed_despite_the_digest_cache(gguf_dir, tmp_path):
    path = tmp_path / "model.gguf"
    shutil.copyfile(gguf_dir / "tiny-model.gguf", path)
    with strata.Model(path, digest_cache_dir=tmp_path / "cache") as m:
        before = m.shard_sha256(0)
        offset = m.tensor("norm.bias").file_offset
    data = bytearray(path.read_bytes())
    data[offset] ^= 0x80
    path.write_bytes(bytes(data))
    import os
    st = os.stat(path)
    os.utime(path, ns=(st.st_atime_ns, st.st_mtime_ns + 2_000_000_000))  # a clearly newer mtime
    with strata.Model(path, digest_cache_dir=tmp_path / "cache") as m:
        after = m.shard_sha256(0)
    assert after != before and after == _file_sha256(path)


def test_progress_is_reported_while_shards_are_hashed(gguf_dir, tmp_path):
    calls = []
    with strata.Model(gguf_dir / SHARDS[0], use_digest_cache=False, digest_cache_dir=tmp_path,
                      progress=lambda what, done, total: calls.append((what, done, total))) as m:
        m.identity()
        sizes = {s.path: s.size for s in m.shards}
    assert calls, "no progress reports"
    for what, done, total in calls:
        assert 0 <= done <= total, (what, done, total)
        [path] = [p for p in sizes if what.endswith(p.rsplit("/", 1)[-1])]
        assert total == sizes[path], (what, total)


def test_an_exception_in_the_progress_callback_reaches_the_caller(gguf_dir, tmp_path):
    def boom(what, done, total):
        raise RuntimeError("stop hashing")
    with strata.Model(gguf_dir / "tiny-model.gguf", use_digest_cache=False, digest_cache_dir=tmp_path,
                      progress=boom) as m:
        try:
            m.shard_sha256(0)
        except RuntimeError as e:
            assert "stop hashing" in str(e)
        else:
            raise AssertionError("the callback's exception was swallowed")
