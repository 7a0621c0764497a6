// ggml type ids of the tensor formats lib/quant implements (values fixed by ggml.h's enum ggml_type).
// lib/quant depends on nothing else in lib/, so it keeps its own copy of the ids it needs.
#pragma once

#include <cstdint>

namespace strata::quant {

enum TypeId : uint32_t {
    kTypeF32 = 0,
    kTypeF16 = 1,
    kTypeQ4_0 = 2,
    kTypeQ4_1 = 3,
    kTypeQ5_0 = 6,
    kTypeQ5_1 = 7,
    kTypeQ8_0 = 8,
    kTypeQ8_1 = 9,
    kTypeQ2_K = 10,
    kTypeQ3_K = 11,
    kTypeQ4_K = 12,
    kTypeQ5_K = 13,
    kTypeQ6_K = 14,
    kTypeQ8_K = 15,
    kTypeIQ2_XXS = 16,
    kTypeIQ2_XS = 17,
    kTypeIQ3_XXS = 18,
    kTypeIQ1_S = 19,
    kTypeIQ4_NL = 20,
    kTypeIQ3_S = 21,
    kTypeIQ2_S = 22,
    kTypeIQ4_XS = 23,
    kTypeIQ1_M = 29,
    kTypeBF16 = 30,
    kTypeTQ1_0 = 34,
    kTypeTQ2_0 = 35,
    kTypeMXFP4 = 39,
    kTypeQ1_0 = 41,
};

}  // namespace strata::quant
