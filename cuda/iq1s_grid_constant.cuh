// The IQ1_S grid in constant memory, for the decode functions of quant/iq1s_block.hpp in device
// code (ops.cu's row gathers). Internal to the cuda/ kernels; like them, UNTESTED ON A GPU.
#pragma once

#include <cstdint>

#include "quant/iq1s_block.hpp"

namespace strata::cuda {

// From the same generated data as the host table. One copy per translation unit that includes
// this (16 KB of the 64 KB constant bank): the library is built without relocatable device code,
// so a constant cannot be shared across files. The constant cache serves one address per warp at
// a time: kernels whose lanes look up different entries at once keep a global copy instead
// (gemm.cu, moe.cu).
static __constant__ uint64_t kIq1sGridDevice[quant::kIq1sGridSize] = {
#include "quant/iq1s_grid.inc"
};

}  // namespace strata::cuda
