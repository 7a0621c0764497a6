// Device copies of the quantized formats' lookup tables, built from the same generated .inc files
// as lib/quant's host tables, and the QTables (qtype_decode.cuh) that point at them.
//
// In global memory (__device__), not __constant__: the lanes of a warp look up different entries,
// which the constant cache serializes, while global loads are served by L1. One copy per
// translation unit that includes this header (about 33 KB): the library is built without
// relocatable device code, so a device variable cannot be shared across files. 16-byte aligned:
// kernels copy them to shared memory in 16-byte words (gemv_fused.cuh). Internal to the cuda/
// kernels.
#pragma once

#include <cstdint>

#include "qtype_decode.cuh"

namespace strata::cuda {

static __device__ __align__(16) const uint64_t kDevIq1sGrid[quant::kIq1sGridSize] = {
#include "quant/iq/iq1s_grid.inc"
};
static __device__ __align__(16) const uint64_t kDevIq2xxsGrid[256] = {
#include "quant/iq/iq2xxs_grid.inc"
};
static __device__ __align__(16) const uint64_t kDevIq2xsGrid[512] = {
#include "quant/iq/iq2xs_grid.inc"
};
static __device__ __align__(16) const uint64_t kDevIq2sGrid[1024] = {
#include "quant/iq/iq2s_grid.inc"
};
static __device__ __align__(16) const uint8_t kDevIq2Signs[128] = {
#include "quant/iq/iq2_signs.inc"
};
static __device__ __align__(16) const uint32_t kDevIq3xxsGrid[256] = {
#include "quant/iq/iq3xxs_grid.inc"
};
static __device__ __align__(16) const uint32_t kDevIq3sGrid[512] = {
#include "quant/iq/iq3s_grid.inc"
};
static __device__ __align__(16) const int8_t kDevIq4nlValues[16] = {
#include "quant/iq/iq4nl_values.inc"
};
static __device__ __align__(16) const int8_t kDevMxfp4Values[16] = {
#include "quant/codecs/mxfp4_values.inc"
};

// The tables as device code sees them.
__device__ __forceinline__ QTables device_qtables() {
    QTables t;
    t.iq1s_grid = kDevIq1sGrid;
    t.iq2xxs_grid = kDevIq2xxsGrid;
    t.iq2xs_grid = kDevIq2xsGrid;
    t.iq2s_grid = kDevIq2sGrid;
    t.iq2_signs = kDevIq2Signs;
    t.iq3xxs_grid = kDevIq3xxsGrid;
    t.iq3s_grid = kDevIq3sGrid;
    t.iq4nl_values = kDevIq4nlValues;
    t.mxfp4_values = kDevMxfp4Values;
    return t;
}

}  // namespace strata::cuda
