// Parses and validates one GGUF file held in memory (a mapping or a copy). Internal to
// lib/gguf: ModelFile merges one ParsedFile per shard.
#pragma once

#include <cstdint>
#include <memory>
#include <string>
#include <string_view>
#include <unordered_map>
#include <vector>

#include "gguf/mapped_file.hpp"
#include "gguf/value.hpp"

namespace strata::gguf::detail {

struct ParsedTensor {
    std::string name;
    uint32_t type = 0;
    uint32_t n_dims = 0;
    int64_t ne[4] = {1, 1, 1, 1};
    uint64_t offset = 0;
    uint64_t nbytes = 0;
    uint64_t n_elements = 0;
};

struct ParsedFile {
    explicit ParsedFile(MappedFile bytes) : file(std::move(bytes)) {}

    MappedFile file;
    std::string name;  // for messages
    uint32_t version = 0;
    uint32_t alignment = 32;
    uint64_t data_offset = 0;
    std::vector<std::string> keys;
    std::vector<Node> values;  // one per key, same order
    std::vector<std::unique_ptr<Node[]>> child_blocks;  // children of string/array arrays
    std::vector<ParsedTensor> tensors;

    // Index of a key, or -1.
    long find(std::string_view key) const;
};

// Throws strata::Error (format / unsupported) naming `name` and the defect.
std::unique_ptr<ParsedFile> parse(MappedFile bytes, const std::string& name);

}  // namespace strata::gguf::detail
