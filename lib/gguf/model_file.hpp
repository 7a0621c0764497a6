// ModelFile: an opened GGUF model, one file or the shards of a split model, memory-mapped
// read-only and fully validated at open time.
//
// Usage:
//   auto model = strata::gguf::ModelFile::open({"/models/m-00001-of-00003.gguf"});
//   if (auto i = model->find_key("general.architecture"))
//       std::string_view arch = model->metadata_value(*i).as_string().value_or("");
//   for (const TensorInfo& t : model->tensors())
//       use(t.name, t.type, t.ne, t.data, t.nbytes);   // t.data points into the mapping
//
// Everything returned (keys, Values, TensorInfo::data) stays valid while the ModelFile lives.
// Every failure throws strata::Error: Status::format for malformed files (the message names
// the file and the defect), Status::unsupported for GGUF versions other than 2 and 3 and for
// unknown or removed ggml type ids, Status::io / not_found for files that cannot be opened,
// Status::invalid_argument for unusable arguments.
//
// What open() accepts (beyond the GGUF v2/v3 layout):
//  * nested arrays (arrays of arrays, up to kMaxArrayDepth levels; ggml refuses them);
//  * tensors with gaps between them, in any order, as long as each offset is a multiple of
//    the alignment, its data lies inside the file and no two tensors overlap;
//  * n_dims 0..4 (0 = one element, as ggml); every ne >= 0; ne[0] a multiple of the block size;
//  * bool values must be 0 or 1; keys non-empty and unique; tensor names < 64 bytes, unique.
//
// Split models (llama.cpp gguf-split): NAME-00001-of-0000N.gguf ... with split.no (u16,
// 0-based), split.count (u16) and split.tensors.count (i32, total) in every shard. The merged
// metadata is exactly the first shard's key/value list, split.* keys included (they tell a
// caller how the model is split); the tensor table is every shard's tensors in split.no order,
// each with its shard index. Each shard uses its own general.alignment (default 32).
#pragma once

#include <cstdint>
#include <memory>
#include <optional>
#include <span>
#include <string>
#include <string_view>
#include <vector>

#include "gguf/value.hpp"

namespace strata::gguf {

inline constexpr uint32_t kDefaultAlignment = 32;
inline constexpr uint32_t kMaxTensorName = 64;  // names must be shorter (ggml GGML_MAX_NAME)
inline constexpr uint32_t kMaxDims = 4;
inline constexpr uint32_t kMaxArrayDepth = 64;  // nesting limit for arrays of arrays

struct TensorInfo {
    std::string name;
    uint32_t type = 0;          // ggml type id (see ggml_types.hpp)
    uint32_t n_dims = 0;        // as stored (0..4)
    int64_t ne[4] = {1, 1, 1, 1};  // innermost first; dimensions past n_dims are 1
    uint64_t offset = 0;        // in its shard's data section
    uint64_t nbytes = 0;
    uint64_t n_elements = 0;
    size_t shard = 0;           // index into ModelFile::shards()
    uint64_t file_offset = 0;   // shard data_offset + offset: position in the shard file
    const uint8_t* data = nullptr;  // into the mapping
};

struct Shard {
    std::string path;        // as given/found; for parse_memory the name passed
    uint64_t size = 0;       // bytes
    uint32_t version = 0;
    uint32_t alignment = kDefaultAlignment;
    uint64_t data_offset = 0;
    size_t n_kv = 0;
    size_t n_tensors = 0;
};

namespace detail {
struct ParsedFile;
}

class ModelFile {
public:
    // paths.size() == 1: a single file, or the first shard (NAME-00001-of-0000N.gguf) of a
    // split model whose siblings are found next to it by name. paths.size() > 1: every shard
    // of one split model, in any order; each split.no must appear exactly once.
    static std::unique_ptr<ModelFile> open(const std::vector<std::string>& paths);

    // A single (unsplit or one-shard) file held in memory; the bytes are copied. `name` is
    // used in error messages and as the shard path.
    static std::unique_ptr<ModelFile> parse_memory(std::span<const uint8_t> bytes, std::string name);

    ~ModelFile();
    ModelFile(const ModelFile&) = delete;
    ModelFile& operator=(const ModelFile&) = delete;

    uint32_t version() const;  // of the first shard

    size_t metadata_count() const;
    std::string_view metadata_key(size_t i) const;   // throws not_found when i is out of range
    const char* metadata_key_cstr(size_t i) const;   // NUL-terminated, stable
    Value metadata_value(size_t i) const;
    std::optional<size_t> find_key(std::string_view key) const;

    const std::vector<TensorInfo>& tensors() const;
    std::optional<size_t> find_tensor(std::string_view name) const;

    const std::vector<Shard>& shards() const;

private:
    ModelFile();
    struct Impl;
    // Merges shards given in split.no order, checking their consistency.
    static std::unique_ptr<ModelFile> assemble(std::vector<std::unique_ptr<detail::ParsedFile>> files);
    std::unique_ptr<Impl> impl_;
};

}  // namespace strata::gguf
