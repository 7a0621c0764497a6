#include "capi/device.hpp"

#include <string>

#include "util/error.hpp"

namespace strata::capi {

void check_device(int32_t device) {
    if (device != STRATA_DEVICE_CPU && device != STRATA_DEVICE_CUDA)
        fail(Status::invalid_argument,
             "device is " + std::to_string(device) + ", expected STRATA_DEVICE_CPU or STRATA_DEVICE_CUDA");
}

void no_cuda_backend() {
    fail(Status::unsupported, "STRATA_DEVICE_CUDA: this library was built without the CUDA backend");
}

std::function<void(uint64_t, uint64_t)> upload_progress(const strata_model& model) {
    if (!model.progress) return {};
    return [fn = model.progress, user = model.progress_user_data](uint64_t done, uint64_t total) {
        fn("upload weights", done, total, user);
    };
}

}  // namespace strata::capi
