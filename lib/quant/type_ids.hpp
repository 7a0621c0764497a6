// ggml type ids of the tensor formats lib/quant implements (values fixed by ggml.h's enum ggml_type).
// lib/quant depends on nothing else in lib/, so it keeps its own copy of the few ids it needs.
#pragma once

#include <cstdint>

namespace strata::quant {

enum TypeId : uint32_t {
    kTypeF32 = 0,
    kTypeF16 = 1,
    kTypeQ8_0 = 8,
    kTypeQ4_K = 12,
    kTypeQ5_K = 13,
    kTypeQ6_K = 14,
    kTypeQ8_K = 15,
    kTypeIQ1_S = 19,
    kTypeIQ4_NL = 20,
    kTypeBF16 = 30,
};

}  // namespace strata::quant
