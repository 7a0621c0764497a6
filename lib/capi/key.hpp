// The pre-shared key of a pipeline link, from a key file or from bytes (strata_pipeline_params,
// strata_worker_params). The file's bytes are the key, exactly as stored (a trailing newline
// included), so that every side reading the same file holds the same key.
#pragma once

#include <cstddef>
#include <cstdint>
#include <vector>

namespace strata::capi {

inline constexpr size_t kMaxKeyBytes = 1 << 20;

// key_file when not null, else key[0..key_length) (null key: the empty key). Throws naming
// the file: not_found when it does not exist, invalid_argument when it is empty or over
// 1 MiB (an empty file would silently mean "no key"), io when it cannot be read.
std::vector<uint8_t> read_key(const char* key_file, const uint8_t* key, size_t key_length);

}  // namespace strata::capi
