#include "quant/iq1s_gemm.hpp"

#include "quant/iq1s_gemm_panel.hpp"
#include "util/cpu_features.hpp"

namespace strata::quant {

using namespace iq1s_gemm_detail;

bool iq1s_gemm_available() { return util::has_avx512_vnni_kernels(); }

size_t iq1s_gemm_act_bytes(int64_t n, int64_t n_tok) {
    return size_t(groups(n_tok, kIq1sGemmTokenGroup) * (n / kQK_K)) * sizeof(ActGroup);
}

size_t iq1s_gemm_weight_bytes(int64_t n, int64_t n_rows) {
    return size_t(groups(n_rows, kIq1sGemmRowGroup) * (n / kQK_K)) * sizeof(RowGroup);
}

}  // namespace strata::quant
