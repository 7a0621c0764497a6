#include "gguf/ggml_types.hpp"

#include "util/checked.hpp"

namespace strata::gguf {
namespace {

// Facts from ggml's ggml.h (enum ggml_type) and ggml.c (type_traits). Removed ids keep
// their name so that error messages can say what the file asked for.
constexpr GgmlTypeInfo kTable[kGgmlTypeCount] = {
    {"f32", 1, 4, false},          // 0
    {"f16", 1, 2, false},          // 1
    {"q4_0", 32, 18, false},       // 2
    {"q4_1", 32, 20, false},       // 3
    {"q4_2", 0, 0, true},          // 4  removed
    {"q4_3", 0, 0, true},          // 5  removed
    {"q5_0", 32, 22, false},       // 6
    {"q5_1", 32, 24, false},       // 7
    {"q8_0", 32, 34, false},       // 8
    {"q8_1", 32, 36, false},       // 9
    {"q2_K", 256, 84, false},      // 10
    {"q3_K", 256, 110, false},     // 11
    {"q4_K", 256, 144, false},     // 12
    {"q5_K", 256, 176, false},     // 13
    {"q6_K", 256, 210, false},     // 14
    {"q8_K", 256, 292, false},     // 15
    {"iq2_xxs", 256, 66, false},   // 16
    {"iq2_xs", 256, 74, false},    // 17
    {"iq3_xxs", 256, 98, false},   // 18
    {"iq1_s", 256, 50, false},     // 19
    {"iq4_nl", 32, 18, false},     // 20
    {"iq3_s", 256, 110, false},    // 21
    {"iq2_s", 256, 82, false},     // 22
    {"iq4_xs", 256, 136, false},   // 23
    {"i8", 1, 1, false},           // 24
    {"i16", 1, 2, false},          // 25
    {"i32", 1, 4, false},          // 26
    {"i64", 1, 8, false},          // 27
    {"f64", 1, 8, false},          // 28
    {"iq1_m", 256, 56, false},     // 29
    {"bf16", 1, 2, false},         // 30
    {"q4_0_4_4", 0, 0, true},      // 31 removed from GGUF files (repacked at load time now)
    {"q4_0_4_8", 0, 0, true},      // 32 removed
    {"q4_0_8_8", 0, 0, true},      // 33 removed
    {"tq1_0", 256, 54, false},     // 34
    {"tq2_0", 256, 66, false},     // 35
    {"iq4_nl_4_4", 0, 0, true},    // 36 removed
    {"iq4_nl_4_8", 0, 0, true},    // 37 removed
    {"iq4_nl_8_8", 0, 0, true},    // 38 removed
    {"mxfp4", 32, 17, false},      // 39
    {"nvfp4", 64, 36, false},      // 40
    {"q1_0", 128, 18, false},      // 41
    {"q2_0", 64, 18, false},       // 42
};

}  // namespace

const GgmlTypeInfo* ggml_type_info(uint32_t type) {
    return type < kGgmlTypeCount ? &kTable[type] : nullptr;
}

bool ggml_type_usable(uint32_t type) {
    const GgmlTypeInfo* info = ggml_type_info(type);
    return info && !info->removed && info->block_size != 0;
}

const char* ggml_type_name(uint32_t type) {
    const GgmlTypeInfo* info = ggml_type_info(type);
    return info ? info->name : "unknown";
}

std::optional<uint32_t> ggml_type_from_name(std::string_view name) {
    for (uint32_t t = 0; t < kGgmlTypeCount; ++t)
        if (ggml_type_usable(t) && name == kTable[t].name) return t;
    return std::nullopt;
}

std::optional<uint64_t> ggml_row_size(uint32_t type, uint64_t ne0) {
    if (!ggml_type_usable(type)) return std::nullopt;
    const GgmlTypeInfo& info = kTable[type];
    if (ne0 % info.block_size != 0) return std::nullopt;
    return util::checked_mul(ne0 / info.block_size, info.type_size);
}

std::optional<uint64_t> ggml_nbytes(uint32_t type, uint32_t n_dims, const int64_t* ne) {
    if (n_dims > 4) return std::nullopt;
    uint64_t rows = 1;
    for (uint32_t i = 0; i < n_dims; ++i) {
        if (ne[i] < 0) return std::nullopt;
        if (i == 0) continue;
        auto r = util::checked_mul(rows, uint64_t(ne[i]));
        if (!r) return std::nullopt;
        rows = *r;
    }
    auto row = ggml_row_size(type, n_dims == 0 ? 1 : uint64_t(ne[0]));
    if (!row) return std::nullopt;
    return util::checked_mul(*row, rows);
}

}  // namespace strata::gguf
