// The ggml tensor type table: for every ggml type id its name, block size (elements) and
// bytes per block, as ggml defines them (ggml.h enum ggml_type, ggml.c type_traits).
#pragma once

#include <cstdint>
#include <optional>
#include <string_view>

namespace strata::gguf {

inline constexpr uint32_t kGgmlTypeCount = 43;  // ids 0..42

// Ids with a meaning for us; the full table lives in ggml_types.cpp.
enum GgmlType : uint32_t {
    kF32 = 0, kF16 = 1, kQ4_0 = 2, kQ4_1 = 3, kQ5_0 = 6, kQ5_1 = 7, kQ8_0 = 8, kQ8_1 = 9,
    kQ2_K = 10, kQ3_K = 11, kQ4_K = 12, kQ5_K = 13, kQ6_K = 14, kQ8_K = 15,
    kIQ2_XXS = 16, kIQ2_XS = 17, kIQ3_XXS = 18, kIQ1_S = 19, kIQ4_NL = 20, kIQ3_S = 21,
    kIQ2_S = 22, kIQ4_XS = 23, kI8 = 24, kI16 = 25, kI32 = 26, kI64 = 27, kF64 = 28,
    kIQ1_M = 29, kBF16 = 30, kTQ1_0 = 34, kTQ2_0 = 35, kMXFP4 = 39, kNVFP4 = 40,
    kQ1_0 = 41, kQ2_0 = 42,
};

struct GgmlTypeInfo {
    const char* name;     // ggml's type_name ("f32", "iq1_s", ...); removed ids keep their old name
    uint32_t block_size;  // elements per block; 0 for removed ids
    uint32_t type_size;   // bytes per block; 0 for removed ids
    bool removed;         // the id existed once and may not appear in GGUF files any more
};

// nullptr for ids >= kGgmlTypeCount.
const GgmlTypeInfo* ggml_type_info(uint32_t type);

// True for ids a GGUF tensor may carry (known and not removed).
bool ggml_type_usable(uint32_t type);

// "f32", ..., or "unknown" / the removed name.
const char* ggml_type_name(uint32_t type);

// Type id by name ("q8_0"); nullopt if unknown or removed.
std::optional<uint32_t> ggml_type_from_name(std::string_view name);

// Bytes of one row of ne0 elements; nullopt if the type is unusable, ne0 is not a multiple of
// the block size, or the size overflows.
std::optional<uint64_t> ggml_row_size(uint32_t type, uint64_t ne0);

// Bytes of a tensor with the given dimensions (innermost first; n_dims <= 4, every ne >= 0,
// ne[0] a multiple of the block size); nullopt on any violation or overflow.
std::optional<uint64_t> ggml_nbytes(uint32_t type, uint32_t n_dims, const int64_t* ne);

}  // namespace strata::gguf
