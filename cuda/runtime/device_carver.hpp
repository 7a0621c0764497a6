// Hands out pieces of one device allocation, each on an exec::kDeviceTensorAlign boundary; a first
// pass over a null base only measures, so the plan and the allocation share one layout.
#pragma once

#include <cstdint>

#include "exec/memory/device_plan.hpp"

namespace strata::cuda {

class Carver {
public:
    explicit Carver(uint8_t* base) : base_(base) {}
    template <class T>
    T* take(uint64_t count) {
        offset_ = (offset_ + exec::kDeviceTensorAlign - 1) / exec::kDeviceTensorAlign * exec::kDeviceTensorAlign;
        T* p = base_ ? reinterpret_cast<T*>(base_ + offset_) : nullptr;
        offset_ += count * sizeof(T);
        return p;
    }
    uint64_t bytes() const { return offset_; }

private:
    uint8_t* base_;
    uint64_t offset_ = 0;
};

}  // namespace strata::cuda
