// The argument checks every importance-weighted quantizer shares: whole 256-weight blocks,
// non-null buffers, finite weights and a finite, non-negative importance matrix (may be null).
#pragma once

#include <cstdint>

namespace strata::quant {

// Throws Error(invalid_argument) naming `quantizer` ("IQ1_M quantizer") and the first defect.
void check_quantizer_input(const char* quantizer, const float* x, const void* y, int64_t n, const float* imatrix);

}  // namespace strata::quant
