// Portable IQ2/IQ3 x Q8_K dots: ggml's ggml_vec_dot_<type>_q8_K_generic arithmetic. Exact integer
// sums per superblock (the shared *_block_sum functions), then one float32 step per block,
// `sum += (d_w * d_q8) * float(block_sum)` as a rounded multiply and a rounded add: GCC 12 does not
// contract these five kernels into an FMA in ggml's -march=native build on Zen 4 (checked against
// libggml-cpu's *_generic symbols; IQ1_S's kernel, by contrast, is contracted), and strata builds
// with -ffp-contract=off. These are the references the AVX2 kernels are tested against.
#include "quant/iq/iq2_block.hpp"
#include "quant/iq/iq3_block.hpp"
#include "quant/codecs/q8_k.hpp"

namespace strata::quant {

namespace {

// sum over blocks of (d_w * d_q8) * float(block_sum(w[i], y[i].qs)).
template <typename Block, typename BlockSum>
float accumulate(int64_t n, const void* w, const void* x, BlockSum block_sum) {
    const auto* wb = static_cast<const Block*>(w);
    const auto* yb = static_cast<const block_q8_K*>(x);
    float sum = 0.0f;
    for (int64_t i = 0; i < n / kQK_K; ++i) {
        const float d = f16_to_f32(wb[i].d) * yb[i].d;
        sum += d * float(block_sum(wb[i], yb[i].qs));
    }
    return sum;
}

}  // namespace

float vec_dot_iq2_xxs_q8_K(int64_t n, const void* w, const void* x) {
    return 0.125f * accumulate<block_iq2_xxs>(n, w, x, [](const block_iq2_xxs& b, const int8_t* q8) {
               return iq2xxs_block_sum(b, kIq2xxsGrid, kIq2Signs, q8);
           });
}

float vec_dot_iq2_xs_q8_K(int64_t n, const void* w, const void* x) {
    return 0.125f * accumulate<block_iq2_xs>(n, w, x, [](const block_iq2_xs& b, const int8_t* q8) {
               return iq2xs_block_sum(b, kIq2xsGrid, kIq2Signs, q8);
           });
}

float vec_dot_iq2_s_q8_K(int64_t n, const void* w, const void* x) {
    return 0.125f * accumulate<block_iq2_s>(n, w, x, [](const block_iq2_s& b, const int8_t* q8) {
               return iq2s_block_sum(b, kIq2sGrid, q8);
           });
}

float vec_dot_iq3_xxs_q8_K(int64_t n, const void* w, const void* x) {
    return 0.25f * accumulate<block_iq3_xxs>(n, w, x, [](const block_iq3_xxs& b, const int8_t* q8) {
               return iq3xxs_block_sum(b, kIq3xxsGrid, kIq2Signs, q8);
           });
}

float vec_dot_iq3_s_q8_K(int64_t n, const void* w, const void* x) {
    return accumulate<block_iq3_s>(n, w, x, [](const block_iq3_s& b, const int8_t* q8) {
        return iq3s_block_sum(b, kIq3sGrid, q8);
    });
}

}  // namespace strata::quant
