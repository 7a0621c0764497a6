// The portable attention kernel: one float per "vector" (any CPU; the reference the SIMD
// kernels are tested beside).
#include <cmath>

#include "attention_cpu_impl.hpp"
#include "quant/half.hpp"
#include "quant/codecs/q8_0.hpp"

namespace strata::exec::attn::detail {

namespace {

struct ScalarOps {
    using V = float;
    static constexpr int64_t W = 1;
    static V zero() { return 0.0f; }
    static V load(const float* p) { return *p; }
    static void store(float* p, V v) { *p = v; }
    static V set1(float x) { return x; }
    static V fma(V a, V b, V c) { return a * b + c; }  // not fused: libm's fma is slow where FMA is missing
    static V mul(V a, V b) { return a * b; }
    static V add(V a, V b) { return a + b; }
    static V sub(V a, V b) { return a - b; }
    static V max(V a, V b) { return a > b ? a : b; }
    static float hsum(V v) { return v; }
    static void hsum4(V a, V b, V c, V d, float* out) { out[0] = a, out[1] = b, out[2] = c, out[3] = d; }
    static float hmax(V v) { return v; }
    static V exp(V x) { return std::exp(x); }
    static float exp1(float x) { return std::exp(x); }

    template <RowType T>
    static V row(const uint8_t* row, int64_t i) {
        if constexpr (T == RowType::f32) {
            float x;
            std::memcpy(&x, row + i * 4, sizeof x);
            return x;
        } else if constexpr (T == RowType::f16) {
            uint16_t h;
            std::memcpy(&h, row + i * 2, sizeof h);
            return quant::f16_to_f32(h);
        } else {
            // Rows need not be 2-byte aligned (a q8_0 block is 34 bytes): bytes, not the struct.
            const uint8_t* b = row + (i / quant::kQK8_0) * int64_t(sizeof(quant::block_q8_0));
            uint16_t d;
            std::memcpy(&d, b, sizeof d);
            return quant::f16_to_f32(d) * float(int8_t(b[sizeof d + i % quant::kQK8_0]));
        }
    }
    template <RowType T>
    static V row_tail(const uint8_t* r, int64_t i, int64_t) {
        return row<T>(r, i);  // never called: W = 1 leaves no tail
    }
};

}  // namespace

const Fns& scalar_fns() { return SegmentKernel<ScalarOps>::fns; }

}  // namespace strata::exec::attn::detail
