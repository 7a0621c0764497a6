// The C ABI's strata_device in one place: sessions, workers and plan queries refuse the same
// values with the same words, and report a GPU's weight upload the same way.
#pragma once

#include <cstdint>
#include <functional>

#include "strata/strata.h"
#include "capi/handles.hpp"  // after strata.h: the handles hold its types

namespace strata::capi {

// Error(invalid_argument) naming the value unless it is STRATA_DEVICE_CPU or STRATA_DEVICE_CUDA.
void check_device(int32_t device);

// Error(unsupported): STRATA_DEVICE_CUDA asked of a library built without the CUDA backend.
[[noreturn]] void no_cuda_backend();

// The model's progress callback as the progress of a weight upload to the GPU ("upload
// weights"); empty when the model has none.
std::function<void(uint64_t, uint64_t)> upload_progress(const strata_model& model);

}  // namespace strata::capi
