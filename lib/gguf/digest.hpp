// Artifact identity: sha256 of shard files (streamed, cached) and the model identity digest.
#pragma once

#include <cstdint>
#include <functional>
#include <string>
#include <vector>

namespace strata::gguf {

class ModelFile;

struct DigestOptions {
    // Directory of the cache file "sha256-cache.txt". Empty: $STRATA_CACHE_DIR, else
    // $XDG_CACHE_HOME/strata, else $HOME/.cache/strata. An unreadable or unwritable cache is
    // ignored (the digest is computed and returned, just not cached).
    std::string cache_dir;
    // Called with (bytes hashed so far, file size) after every chunk and once at the end;
    // not called for a cache hit.
    std::function<void(uint64_t, uint64_t)> progress;
    bool use_cache = true;
};

// Lower-case hex sha256 of the file's bytes, read in 8 MiB chunks. The cache is keyed by the
// absolute path, the size and the modification time in nanoseconds: a changed file is hashed
// again. Throws Error io / not_found when the file cannot be read.
std::string sha256_file(const std::string& path, const DigestOptions& options = {});

// Lower-case hex sha256 of a byte buffer.
std::string sha256_bytes(const void* data, size_t size);

// The cache directory DigestOptions{} resolves to ("" when no variable is set).
std::string default_cache_dir();

// Model identity: lower-case hex sha256 over this byte serialization (integers little-endian):
//   "strata-model-identity-v1\n"
//   u64 n_kv; per key in metadata order: u64 key length, key bytes, u32 value type,
//     u64 encoding length, the value's GGUF encoding after the type tag (Value::raw());
//     every key of the merged metadata counts, split.* keys included
//   u64 n_tensors; per tensor in table order: u64 name length, name, u32 ggml type,
//     u32 n_dims, 4 x i64 ne
//   u64 n_shards; per shard: the 64 hex characters of its sha256 (shard_digests[i], which must
//     be the sha256_file of shards()[i]; the count must match, else invalid_argument).
// The shard digests pin every byte (tensor data included); metadata and tensor table make the
// identity readable without re-hashing. A split model and its unsplit equivalent therefore
// have different identities (different files).
std::string model_identity(const ModelFile& model, const std::vector<std::string>& shard_digests);

}  // namespace strata::gguf
