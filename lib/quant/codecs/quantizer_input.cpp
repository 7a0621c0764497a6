#include "quantizer_input.hpp"

#include <cmath>
#include <string>

#include "quant/iq/iq1s_block.hpp"  // kQK_K
#include "util/error.hpp"

namespace strata::quant {

void check_quantizer_input(const char* quantizer, const float* x, const void* y, int64_t n, const float* imatrix) {
    const std::string who(quantizer);
    if (n < 0 || n % kQK_K != 0)
        fail(Status::invalid_argument, who + ": row length " + std::to_string(n) + " is not a multiple of 256");
    if (n != 0 && (!x || !y)) fail(Status::invalid_argument, who + ": null source or destination");
    for (int64_t i = 0; i < n; ++i) {
        if (!std::isfinite(x[i]))
            fail(Status::invalid_argument, who + ": x[" + std::to_string(i) + "] is not finite");
        if (imatrix && !(std::isfinite(imatrix[i]) && imatrix[i] >= 0))
            fail(Status::invalid_argument, who + ": imatrix[" + std::to_string(i) + "] is negative or not finite");
    }
}

}  // namespace strata::quant
