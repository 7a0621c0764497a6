// Rows of the legacy formats: decode, ggml's reference quantizers and the scalar dots (ggml's
// ggml_vec_dot_*_generic arithmetic).
#include "legacy_quants.hpp"

#include <algorithm>
#include <cfloat>
#include <cmath>
#include <cstring>

#include "q8_0.hpp"

namespace strata::quant {

namespace {

template <typename Block, void (*DecodeBlock)(const Block&, float*)>
void decode_blocks(const void* blocks, float* y, int64_t n) {
    const auto* b = static_cast<const Block*>(blocks);
    for (int64_t i = 0; i < n / 32; ++i) DecodeBlock(b[i], y + 32 * i);
}

// Scale of a symmetric block: the first element of largest magnitude (ggml: strict <).
float signed_absmax(const float* x) {
    float amax = 0.0f, max = 0.0f;
    for (int j = 0; j < 32; ++j)
        if (amax < std::fabs(x[j])) {
            amax = std::fabs(x[j]);
            max = x[j];
        }
    return max;
}

struct MinMax {
    float min, max;
};
MinMax block_min_max(const float* x) {
    MinMax r{FLT_MAX, -FLT_MAX};
    for (int j = 0; j < 32; ++j) {
        if (x[j] < r.min) r.min = x[j];
        if (x[j] > r.max) r.max = x[j];
    }
    return r;
}

// Code j's bit 4 goes to bit j of qh (little-endian uint32), its low nibble to qs as decoded.
void pack_q5(const uint8_t* codes, uint8_t* qs, uint8_t* qh) {
    uint32_t high = 0;
    for (int j = 0; j < 16; ++j) {
        qs[j] = uint8_t((codes[j] & 0x0f) | (codes[j + 16] & 0x0f) << 4);
        high |= uint32_t((codes[j] & 0x10u) >> 4) << j;
        high |= uint32_t((codes[j + 16] & 0x10u) >> 4) << (j + 16);
    }
    for (int k = 0; k < 4; ++k) qh[k] = uint8_t(high >> (8 * k));
}

int32_t dot32(const int8_t* a, const int8_t* b) {
    int32_t sum = 0;
    for (int j = 0; j < 32; ++j) sum += int32_t(a[j]) * b[j];
    return sum;
}

int32_t sum32(const int8_t* x) {
    int32_t sum = 0;
    for (int j = 0; j < 32; ++j) sum += x[j];
    return sum;
}

// The integer sum of a block's codes minus offset (8 for Q4_0, 16 for Q5_0, 0 for the _1 types)
// times the activations. Q4: one loop the compiler vectorizes as it stands (3.8 ns per block).
// Q5: the per-weight shift of qh keeps that loop scalar (23 ns), so the codes are built eight
// bytes at a time in registers, then one vectorized int8 dot, with the offset taken off as
// offset * sum(x) (6.6 ns).
constexpr uint64_t kLowNibbles = 0x0F0F0F0F0F0F0F0Full;

int32_t q4_block_sum(const uint8_t* qs, int offset, const int8_t* x) {
    int32_t sum = 0;
    for (int j = 0; j < 16; ++j) {
        sum += ((qs[j] & 0x0f) - offset) * x[j];
        sum += ((qs[j] >> 4) - offset) * x[j + 16];
    }
    return sum;
}

int32_t q5_block_sum(const uint8_t* qs, const uint8_t* qh, int offset, const int8_t* x) {
    uint64_t q[2];
    std::memcpy(q, qs, 16);
    // Fifth bit of weight j: bit j % 8 of qh[j / 8].
    const uint64_t codes[4] = {(q[0] & kLowNibbles) | kBitsToBytes[qh[0]] << 4, (q[1] & kLowNibbles) | kBitsToBytes[qh[1]] << 4,
                               ((q[0] >> 4) & kLowNibbles) | kBitsToBytes[qh[2]] << 4,
                               ((q[1] >> 4) & kLowNibbles) | kBitsToBytes[qh[3]] << 4};
    int8_t c[32];
    std::memcpy(c, codes, 32);
    return dot32(c, x) - offset * sum32(x);
}

}  // namespace

void decode_row_q4_0(const void* blocks, float* y, int64_t n) { decode_blocks<block_q4_0, q4_0_decode_block>(blocks, y, n); }
void decode_row_q4_1(const void* blocks, float* y, int64_t n) { decode_blocks<block_q4_1, q4_1_decode_block>(blocks, y, n); }
void decode_row_q5_0(const void* blocks, float* y, int64_t n) { decode_blocks<block_q5_0, q5_0_decode_block>(blocks, y, n); }
void decode_row_q5_1(const void* blocks, float* y, int64_t n) { decode_blocks<block_q5_1, q5_1_decode_block>(blocks, y, n); }
void decode_row_q8_1(const void* blocks, float* y, int64_t n) { decode_blocks<block_q8_1, q8_1_decode_block>(blocks, y, n); }

void quantize_row_q4_0(const float* x, void* blocks, int64_t n, const float* /*imatrix*/) {
    auto* y = static_cast<block_q4_0*>(blocks);
    for (int64_t b = 0; b < n / kQK4_0; ++b, x += kQK4_0) {
        const float d = signed_absmax(x) / -8.0f;
        const float id = d != 0.0f ? 1.0f / d : 0.0f;
        y[b].d = f32_to_f16(d);
        for (int j = 0; j < 16; ++j) {
            // ggml: MIN(15, (int8_t)(x * id + 8.5f)); the sum is in [0.5, 16.5] for finite x.
            const int lo = std::min(15, int(int8_t(x[j] * id + 8.5f)));
            const int hi = std::min(15, int(int8_t(x[j + 16] * id + 8.5f)));
            y[b].qs[j] = uint8_t(lo | hi << 4);
        }
    }
}

void quantize_row_q4_1(const float* x, void* blocks, int64_t n, const float* /*imatrix*/) {
    auto* y = static_cast<block_q4_1*>(blocks);
    for (int64_t b = 0; b < n / kQK4_1; ++b, x += kQK4_1) {
        const MinMax r = block_min_max(x);
        const float d = (r.max - r.min) / 15.0f;
        const float id = d != 0.0f ? 1.0f / d : 0.0f;
        y[b].d = f32_to_f16(d);
        y[b].m = f32_to_f16(r.min);
        for (int j = 0; j < 16; ++j) {
            const int lo = std::min(15, int(int8_t((x[j] - r.min) * id + 0.5f)));
            const int hi = std::min(15, int(int8_t((x[j + 16] - r.min) * id + 0.5f)));
            y[b].qs[j] = uint8_t(lo | hi << 4);
        }
    }
}

void quantize_row_q5_0(const float* x, void* blocks, int64_t n, const float* /*imatrix*/) {
    auto* y = static_cast<block_q5_0*>(blocks);
    for (int64_t b = 0; b < n / kQK5_0; ++b, x += kQK5_0) {
        const float d = signed_absmax(x) / -16.0f;
        const float id = d != 0.0f ? 1.0f / d : 0.0f;
        y[b].d = f32_to_f16(d);
        uint8_t codes[32];
        for (int j = 0; j < 32; ++j) codes[j] = uint8_t(std::min(31, int(int8_t(x[j] * id + 16.5f))));
        pack_q5(codes, y[b].qs, y[b].qh);
    }
}

void quantize_row_q5_1(const float* x, void* blocks, int64_t n, const float* /*imatrix*/) {
    auto* y = static_cast<block_q5_1*>(blocks);
    for (int64_t b = 0; b < n / kQK5_1; ++b, x += kQK5_1) {
        const MinMax r = block_min_max(x);
        const float d = (r.max - r.min) / 31.0f;
        const float id = d != 0.0f ? 1.0f / d : 0.0f;
        y[b].d = f32_to_f16(d);
        y[b].m = f32_to_f16(r.min);
        uint8_t codes[32];
        // ggml casts straight to uint8_t here (no clamp): the value is at most 31.5 + rounding.
        for (int j = 0; j < 32; ++j) codes[j] = uint8_t((x[j] - r.min) * id + 0.5f);
        pack_q5(codes, y[b].qs, y[b].qh);
    }
}

void quantize_row_q8_1(const float* x, block_q8_1* y, int64_t n) {
    for (int64_t b = 0; b < n / kQK8_1; ++b, x += kQK8_1) {
        float amax = 0.0f;
        for (int j = 0; j < kQK8_1; ++j) {
            const float ax = std::fabs(x[j]);
            amax = amax > ax ? amax : ax;  // ggml's MAX()
        }
        const float d = amax / 127.0f;
        const float id = d != 0.0f ? 1.0f / d : 0.0f;
        y[b].d = f32_to_f16(d);
        int sum = 0;
        for (int j = 0; j < kQK8_1; ++j) {
            y[b].qs[j] = int8_t(std::roundf(x[j] * id));
            sum += y[b].qs[j];
        }
        y[b].s = f32_to_f16(float(sum) * d);
    }
}

float vec_dot_q4_0_q8_0(int64_t n, const void* w, const void* x) {
    const auto* wb = static_cast<const block_q4_0*>(w);
    const auto* xb = static_cast<const block_q8_0*>(x);
    float sum = 0.0f;
    for (int64_t b = 0; b < n / kQK4_0; ++b) {
        const int32_t sumi = q4_block_sum(wb[b].qs, 8, xb[b].qs);
        sum += float(sumi) * f16_to_f32(wb[b].d) * f16_to_f32(xb[b].d);
    }
    return sum;
}

float vec_dot_q4_1_q8_1(int64_t n, const void* w, const void* x) {
    const auto* wb = static_cast<const block_q4_1*>(w);
    const auto* xb = static_cast<const block_q8_1*>(x);
    float sum = 0.0f;
    for (int64_t b = 0; b < n / kQK4_1; ++b) {
        const int32_t sumi = q4_block_sum(wb[b].qs, 0, xb[b].qs);
        sum += (f16_to_f32(wb[b].d) * f16_to_f32(xb[b].d)) * float(sumi) + f16_to_f32(wb[b].m) * f16_to_f32(xb[b].s);
    }
    return sum;
}

float vec_dot_q5_0_q8_0(int64_t n, const void* w, const void* x) {
    const auto* wb = static_cast<const block_q5_0*>(w);
    const auto* xb = static_cast<const block_q8_0*>(x);
    float sum = 0.0f;
    for (int64_t b = 0; b < n / kQK5_0; ++b) {
        const int32_t sumi = q5_block_sum(wb[b].qs, wb[b].qh, 16, xb[b].qs);
        sum += (f16_to_f32(wb[b].d) * f16_to_f32(xb[b].d)) * float(sumi);
    }
    return sum;
}

float vec_dot_q5_1_q8_1(int64_t n, const void* w, const void* x) {
    const auto* wb = static_cast<const block_q5_1*>(w);
    const auto* xb = static_cast<const block_q8_1*>(x);
    float sum = 0.0f;
    for (int64_t b = 0; b < n / kQK5_1; ++b) {
        const int32_t sumi = q5_block_sum(wb[b].qs, wb[b].qh, 0, xb[b].qs);
        sum += (f16_to_f32(wb[b].d) * f16_to_f32(xb[b].d)) * float(sumi) + f16_to_f32(wb[b].m) * f16_to_f32(xb[b].s);
    }
    return sum;
}

float vec_dot_q8_0_q8_0(int64_t n, const void* w, const void* x) {
    const auto* wb = static_cast<const block_q8_0*>(w);
    const auto* xb = static_cast<const block_q8_0*>(x);
    float sum = 0.0f;
    for (int64_t b = 0; b < n / kQK8_0; ++b) {
        sum += float(dot32(wb[b].qs, xb[b].qs)) * (f16_to_f32(wb[b].d) * f16_to_f32(xb[b].d));
    }
    return sum;
}

}  // namespace strata::quant
