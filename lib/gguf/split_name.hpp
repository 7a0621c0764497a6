// llama.cpp's split file names: PREFIX-00001-of-00003.gguf (1-based, five digits each).
#pragma once

#include <cstdint>
#include <optional>
#include <string>

namespace strata::gguf {

struct SplitName {
    std::string prefix;  // everything before "-NNNNN-of-MMMMM.gguf", directory included
    uint32_t number = 0; // 1-based, as in the name
    uint32_t count = 0;
};

std::optional<SplitName> parse_split_name(const std::string& path);
std::string split_file_name(const std::string& prefix, uint32_t number, uint32_t count);

}  // namespace strata::gguf
