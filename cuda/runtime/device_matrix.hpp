// A weight matrix resident in device memory, laid out as its GGUF tensor stores it: `rows` rows
// of `cols` elements of ggml type `type`, row_bytes apart (rows packed, so a row of an IQ1_S
// matrix may start at any 2-byte boundary). Uploads (gpu_weights.hpp) pad every tensor with
// kDevicePadBytes so kernels may issue aligned 16-byte loads that run past the last row.
// Plain data: included by .cu (C++17) and host .cpp files alike.
#pragma once

#include <cstdint>

namespace strata::cuda {

inline constexpr uint64_t kDevicePadBytes = 16;

struct DeviceMatrix {
    uint32_t type = 0;  // ggml type id: F32, F16, BF16, Q8_0 or IQ1_S
    int64_t cols = 0;
    int64_t rows = 0;
    uint64_t row_bytes = 0;
    const uint8_t* data = nullptr;  // device pointer
    const uint8_t* row(int64_t r) const { return data + uint64_t(r) * row_bytes; }
};

}  // namespace strata::cuda
