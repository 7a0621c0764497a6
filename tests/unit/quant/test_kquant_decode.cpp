// IQ4_NL and the K-quants (Q2_K .. Q6_K) that llama.cpp's mixes use: one block of each worked
// out by hand, the dispatch entry points, and CpuBackend::matmul on random blocks against a
// float64 product of the decoded weights and activations. (Bit-exactness against ggml's own
// decode of random blocks: tests/python/formats/test_kquant_interop.py, through the gguf package.)
#include <doctest/doctest.h>

#include <algorithm>
#include <cmath>
#include <cstddef>
#include <cstring>
#include <random>
#include <string>
#include <vector>

#include "exec/cpu_backend.hpp"
#include "gguf/ggml_types.hpp"
#include "quant/formats.hpp"
#include "quant/half.hpp"
#include "quant/iq/iq4_nl.hpp"
#include "quant/codecs/k_quants.hpp"
#include "quant/type_traits.hpp"
#include "quant_test_util.hpp"
#include "test_support.hpp"
#include "util/error.hpp"

using namespace strata;

namespace {

using test::check_equal;
using test::expect;

std::vector<float> decode(uint32_t type, const void* block, int64_t n) {
    std::vector<float> y(static_cast<size_t>(n), std::nanf(""));
    quant::dequantize_row(type, block, y.data(), n);
    return y;
}

}  // namespace

TEST_CASE("IQ4_NL: one block worked by hand") {
    // d = 0.5 (f16 0x3800). Byte j holds the code of weight j (low nibble) and j+16 (high).
    // The codebook (ggml's kvalues_iq4nl): code 0 = -127, 7 = -10, 8 = 1, 15 = 113.
    quant::block_iq4_nl b;
    b.d = 0x3800;
    std::memset(b.qs, 0x88, sizeof b.qs);  // code 8 everywhere: 0.5 * 1 = 0.5
    b.qs[0] = 0x80;                        // w0 = 0.5 * -127 = -63.5, w16 = 0.5 * 1 = 0.5
    b.qs[1] = 0xF7;                        // w1 = 0.5 * -10 = -5,     w17 = 0.5 * 113 = 56.5
    check_equal(decode(quant::kTypeIQ4_NL, &b, 32), expect(32, 0.5f, {{0, -63.5f}, {1, -5.0f}, {17, 56.5f}}));
}

TEST_CASE("Q2_K: one block worked by hand") {
    // d = 1, dmin = 0.5; scales[s] = (min << 4) | scale for sub-block s = w / 16, and
    // weight = (d * scale) * q - (dmin * min), q = bits 2j..2j+1 of qs[32h + l] (w = 128h + 32j + l).
    quant::block_q2_K b;
    std::memset(&b, 0, sizeof b);
    b.d = 0x3C00;
    b.dmin = 0x3800;
    b.scales[0] = 0x32;   // sub-block 0: 2q - 1.5
    b.scales[1] = 0x01;   // sub-block 1: q
    b.scales[2] = 0x40;   // sub-block 2 (w 32..47): 0q - 2
    b.scales[15] = 0xF5;  // sub-block 15: 5q - 7.5
    b.qs[0] = 0x1B;       // w0: q = 3 -> 4.5; w32: q = 2 (scale 0) -> -2; w64: 1 (sub-block 4, all 0) -> 0
    b.qs[17] = 0x03;      // w17: q = 3 -> 3
    b.qs[63] = 0xC0;      // h = 1, l = 31, bits 6-7: w255 = 128 + 96 + 31, q = 3 -> 7.5
    std::vector<float> want(256, 0.0f);
    for (int i = 0; i < 16; ++i) {
        want[size_t(i)] = -1.5f;
        want[size_t(32 + i)] = -2.0f;
        want[size_t(240 + i)] = -7.5f;
    }
    want[0] = 4.5f, want[17] = 3.0f, want[255] = 7.5f;
    check_equal(decode(quant::kTypeQ2_K, &b, 256), want);
}

TEST_CASE("Q3_K: one block worked by hand") {
    // d = 0.5; weight = (d * (code_s - 32)) * q for sub-block s = w / 16, q = low - 4 unless bit
    // 4h + j of hmask[l] is set, low = bits 2j..2j+1 of qs[32h + l] (w = 128h + 32j + l).
    quant::block_q3_K b;
    std::memset(&b, 0, sizeof b);
    b.d = 0x3800;
    // Codes: s0 = 34 (scale 2), s1 = 31 (-1), s9 = 40 (8), s15 = 0 (-32), every other 32 (0).
    // Low nibbles: s < 8 in scales[s] bits 0-3, s >= 8 in scales[s - 8] bits 4-7; bits 4-5 of
    // code s in scales[8 + s % 4] at bits 2(s / 4).
    b.scales[0] = 0x02;                          // s0 low 2, s8 low 0
    b.scales[1] = 0x8F;                          // s1 low 15, s9 low 8
    b.scales[8] = 0xAA;                          // s0, s4, s8, s12 high 2
    b.scales[9] = 0xA9;                          // s1 high 1; s5, s9, s13 high 2
    b.scales[10] = 0xAA;                         // s2, s6, s10, s14 high 2
    b.scales[11] = 0x2A;                         // s3, s7, s11 high 2; s15 high 0
    std::memset(b.hmask, 0xFF, sizeof b.hmask);  // q = low everywhere but the cleared bits below
    b.qs[0] = 0x03;                              // w0: q = 3 -> 0.5 * 2 * 3 = 3
    b.qs[1] = 0x01, b.hmask[1] = 0xFE;           // w1: q = 1 - 4 -> -3
    b.qs[16] = 0x02;                             // w16: q = 2 -> 0.5 * -1 * 2 = -1
    b.qs[48] = 0x01, b.hmask[16] = 0xEF;         // w144 (h 1, j 0, l 16): q = -3 -> 0.5 * 8 * -3 = -12
    b.qs[63] = 0x80, b.hmask[31] = 0x7F;         // w255 (h 1, j 3, l 31): q = 2 - 4 -> 0.5 * -32 * -2 = 32
    check_equal(decode(quant::kTypeQ3_K, &b, 256),
                expect(256, 0.0f, {{0, 3.0f}, {1, -3.0f}, {16, -1.0f}, {144, -12.0f}, {255, 32.0f}}));
}

TEST_CASE("Q4_K: one block worked by hand") {
    // d = 1, dmin = 0.5; weight = (d * sc[s]) * q - (dmin * m[s]) for sub-block s = w / 32.
    quant::block_q4_K b;
    std::memset(&b, 0, sizeof b);
    b.d = 0x3C00;
    b.dmin = 0x3800;
    b.scales[0] = 2;     // sc0 = 2
    b.scales[4] = 3;     // m0 = 3          -> sub-block 0: 2q - 1.5
    b.scales[1] = 0x41;  // sc1 = 1; top bits 01 become bits 4-5 of sc5 (+16)
    b.scales[5] = 0x80;  // m1 = 0;  top bits 10 become bits 4-5 of m5 (+32) -> sub-block 1: q
    b.scales[9] = 0x23;  // sc5 = 3 + 16 = 19, m5 = 2 + 32 = 34 -> sub-block 5: 19q - 17
    // Every other scale and min is 0, so sub-blocks 2, 3, 4, 6, 7 decode to 0.
    // qs[0..31]: low nibbles = sub-block 0, high = sub-block 1; qs[64..95] high = sub-block 5.
    for (int l = 0; l < 32; ++l) b.qs[l] = b.qs[64 + l] = 0x11;  // q = 1: 0.5, 1 and 2
    b.qs[0] = 0x7F;   // w0 = 2*15 - 1.5 = 28.5, w32 = 7
    b.qs[1] = 0x00;   // w1 = -1.5,              w33 = 0
    b.qs[64] = 0xA0;  // w128 (sub-block 4) = 0,  w160 = 19*10 - 17 = 173
    std::vector<float> want(256, 0.0f);
    for (int l = 0; l < 32; ++l) want[size_t(l)] = 0.5f, want[size_t(32 + l)] = 1.0f, want[size_t(160 + l)] = 2.0f;
    want[0] = 28.5f, want[32] = 7.0f, want[1] = -1.5f, want[33] = 0.0f, want[160] = 173.0f;
    check_equal(decode(quant::kTypeQ4_K, &b, 256), want);
}

TEST_CASE("Q5_K: one block worked by hand") {
    // As Q4_K, with a fifth bit: bit 2k of qh[l] for weight 64k + l, bit 2k+1 for 64k + 32 + l.
    quant::block_q5_K b;
    std::memset(&b, 0, sizeof b);
    b.d = 0x3C00;
    b.dmin = 0x3800;
    b.scales[0] = 2, b.scales[4] = 3;  // sub-block 0: 2q - 1.5
    b.scales[1] = 1;                   // sub-block 1: q
    b.scales[11] = 0x05;               // sc7 = 5, m7 = 0: sub-block 7: 5q
    b.qs[0] = 0x7F;                    // w0: q = 15, w32: q = 7
    b.qh[0] = 0x03;                    // +16 for w0 (bit 0) and w32 (bit 1): w0 = 2*31 - 1.5 = 60.5, w32 = 23
    b.qh[1] = 0x01;                    // w1: q = 16 -> 30.5
    b.qh[2] = 0x04;                    // w66 (sub-block 2, scale 0) -> 0
    b.qs[99] = 0x20;                   // w227 = 64*3 + 32 + 3: high nibble 2 ...
    b.qh[3] = 0x80;                    // ... plus bit 7 of qh[3]: q = 18 -> 5*18 = 90
    std::vector<float> want(256, 0.0f);
    for (int l = 0; l < 32; ++l) want[size_t(l)] = -1.5f;  // q = 0 in sub-block 0
    want[0] = 60.5f, want[32] = 23.0f, want[1] = 30.5f, want[227] = 90.0f;
    check_equal(decode(quant::kTypeQ5_K, &b, 256), want);
}

TEST_CASE("Q6_K: one block worked by hand") {
    // d = 0.25; weight = (d * scales[w / 16]) * (q - 32), q = 4 bits of ql + 2 bits of qh.
    quant::block_q6_K b;
    std::memset(&b, 0, sizeof b);
    b.d = 0x3400;
    b.scales[0] = 4, b.scales[2] = -2, b.scales[4] = 1, b.scales[6] = 3, b.scales[15] = -1;
    b.ql[0] = 0x5A;   // w0: low 10,  w64: high 5
    b.ql[32] = 0xC3;  // w32: low 3,  w96: high 12
    b.qh[0] = 0x9C;   // bits 0-1 = 0 (w0), 2-3 = 3 (w32), 4-5 = 1 (w64), 6-7 = 2 (w96)
    // w0 = 0.25*4*(10-32) = -22; w32 = 0.25*-2*(51-32) = -9.5; w64 = 0.25*1*(21-32) = -2.75;
    // w96 = 0.25*3*(44-32) = 9. Elsewhere q = 0: (d*sc) * -32.
    b.ql[116] = 0xF0;  // second half, l = 20: w244 (sub-block 15) high nibble 15 ...
    b.qh[52] = 0xC0;   // ... and qh bits 6-7 = 3: q = 63 -> 0.25*-1*31 = -7.75
    std::vector<float> want(256, 0.0f);
    for (int l = 0; l < 16; ++l) {
        want[size_t(l)] = -32.0f;       // 0.25*4*-32
        want[size_t(32 + l)] = 16.0f;   // 0.25*-2*-32
        want[size_t(64 + l)] = -8.0f;   // 0.25*1*-32
        want[size_t(96 + l)] = -24.0f;  // 0.25*3*-32
        want[size_t(240 + l)] = 8.0f;   // 0.25*-1*-32
    }
    want[0] = -22.0f, want[32] = -9.5f, want[64] = -2.75f, want[96] = 9.0f, want[244] = -7.75f;
    check_equal(decode(quant::kTypeQ6_K, &b, 256), want);
}

TEST_CASE("K-quant and IQ4_NL layouts agree with the GGUF type table; Q4_K, Q5_K, Q6_K can be written") {
    struct Case {
        uint32_t type;
        int64_t block;
        size_t bytes;
        bool writable;  // strata has a quantizer for it (the Kimi mixes' K-quants)
    };
    for (Case c : {Case{quant::kTypeIQ4_NL, 32, 18, false}, Case{quant::kTypeQ2_K, 256, 84, false},
                   Case{quant::kTypeQ3_K, 256, 110, false}, Case{quant::kTypeQ4_K, 256, 144, true},
                   Case{quant::kTypeQ5_K, 256, 176, true}, Case{quant::kTypeQ6_K, 256, 210, true}}) {
        CAPTURE(c.type);
        CHECK(quant::is_supported(c.type));
        CHECK(quant::can_quantize(c.type) == c.writable);
        CHECK(quant::block_elements(c.type) == c.block);
        CHECK(quant::row_size(c.type, 3 * c.block) == 3 * c.bytes);
        const gguf::GgmlTypeInfo* info = gguf::ggml_type_info(c.type);
        REQUIRE(info);
        CHECK(info->block_size == uint32_t(c.block));
        CHECK(info->type_size == uint32_t(c.bytes));
        CHECK(exec::CpuBackend::supports(c.type));
        CHECK_THROWS_AS(quant::row_size(c.type, c.block + 16), Error);
        std::vector<float> x(static_cast<size_t>(c.block), 1.0f);
        std::vector<uint8_t> out(c.bytes);
        if (c.writable) {
            quant::quantize_row(c.type, x.data(), out.data(), c.block, nullptr);
            std::vector<float> y = decode(c.type, out.data(), c.block);
            for (float v : y) CHECK(v == doctest::Approx(1.0f).epsilon(0.01));
            continue;
        }
        try {
            quant::quantize_row(c.type, x.data(), out.data(), c.block, nullptr);
            FAIL("quantize_row accepted a read-only type");
        } catch (const Error& e) {
            CHECK(e.status() == Status::unsupported);
        }
    }
    for (uint32_t t : {quant::kTypeF32, quant::kTypeF16, quant::kTypeBF16, quant::kTypeQ8_0, quant::kTypeIQ1_S})
        CHECK(quant::can_quantize(t));
}

namespace {

// Byte offsets of a block's binary16 d and dmin (dmin < 0: the type has no mins).
struct ScaleFields {
    size_t d;
    int dmin;
};

ScaleFields scale_fields(uint32_t type) {
    switch (type) {
        case quant::kTypeIQ4_NL: return {offsetof(quant::block_iq4_nl, d), -1};
        case quant::kTypeQ2_K: return {offsetof(quant::block_q2_K, d), int(offsetof(quant::block_q2_K, dmin))};
        case quant::kTypeQ3_K: return {offsetof(quant::block_q3_K, d), -1};
        case quant::kTypeQ4_K: return {offsetof(quant::block_q4_K, d), int(offsetof(quant::block_q4_K, dmin))};
        case quant::kTypeQ5_K: return {offsetof(quant::block_q5_K, d), int(offsetof(quant::block_q5_K, dmin))};
        case quant::kTypeQ6_K: return {offsetof(quant::block_q6_K, d), -1};
        default: FAIL("no scale layout for type " << type); return {0, -1};
    }
}

size_t block_bytes_of(uint32_t type) { return quant::row_size(type, quant::block_elements(type)); }

// Random bytes for a block of type t (every code reachable), then its binary16 scales replaced
// by finite values +-10^U(-3,0) (random bytes could be NaN or infinity).
std::vector<uint8_t> random_blocks(std::mt19937_64& rng, uint32_t type, int64_t rows, int64_t cols) {
    const size_t row_bytes = quant::row_size(type, cols);
    std::vector<uint8_t> w(row_bytes * size_t(rows));
    for (auto& byte : w) byte = uint8_t(rng());
    std::uniform_real_distribution<float> exponent(-3.0f, 0.0f);
    auto scale = [&] { return quant::f32_to_f16(std::pow(10.0f, exponent(rng)) * ((rng() & 1) ? -1.0f : 1.0f)); };
    const ScaleFields f = scale_fields(type);
    for (size_t off = 0; off < w.size(); off += block_bytes_of(type)) {
        const uint16_t d = scale(), dmin = scale();
        std::memcpy(w.data() + off + f.d, &d, 2);
        if (f.dmin >= 0) std::memcpy(w.data() + off + size_t(f.dmin), &dmin, 2);
    }
    return w;
}

// Per weight, |d * sc * q| + |dmin * m|: the row decoded once with dmin = 0 and once with d = 0
// (just |w| for types without mins). The dot kernels' rounding is relative to these terms.
std::vector<double> weight_magnitudes(uint32_t type, std::vector<uint8_t> row, int64_t n) {
    std::vector<float> scaled(static_cast<size_t>(n)), mins(static_cast<size_t>(n), 0.0f);
    const ScaleFields f = scale_fields(type);
    std::vector<uint8_t> only_min = row;
    const uint16_t zero = 0;
    for (size_t off = 0; f.dmin >= 0 && off < row.size(); off += block_bytes_of(type)) {
        std::memcpy(row.data() + off + size_t(f.dmin), &zero, 2);
        std::memcpy(only_min.data() + off + f.d, &zero, 2);
    }
    quant::dequantize_row(type, row.data(), scaled.data(), n);
    if (f.dmin >= 0) quant::dequantize_row(type, only_min.data(), mins.data(), n);
    std::vector<double> m(static_cast<size_t>(n));
    for (size_t i = 0; i < m.size(); ++i) m[i] = std::fabs(double(scaled[i])) + std::fabs(double(mins[i]));
    return m;
}

}  // namespace

TEST_CASE("CpuBackend::matmul of IQ4_NL and K-quants matches a float64 product of decoded weights and activations") {
    // The backend quantizes each token's activations to the type's dot format (Q8_0 for IQ4_NL,
    // Q8_K for the K-quants) and runs ggml's integer dots; the reference here quantizes the same
    // way (quant::quantize_row), dequantizes, and multiplies by the decoded weights in float64.
    // What remains is the kernels' float32 rounding: scale products, int-to-float conversions and
    // fewer than nb + 12 additions (nb blocks per row), each at most 2^-24 relative to terms
    // bounded by M = sum_k (|d sc q| + |dmin m|)_k * |a_k|, plus the decoder's and the
    // dequantized activations' own rounding (4 * 2^-24 * M): |error| <= (nb + 16) * 2^-23 * M.
    const uint64_t seed = test::test_seed();
    CAPTURE(seed);
    std::mt19937_64 rng(seed);
    exec::CpuBackend backend(3);
    struct Case {
        uint32_t type;
        int64_t rows, cols;
    };
    // Ragged row counts (not a multiple of the 16-row tile), several blocks per row; IQ4_NL at
    // 128 columns, attn_k_b's width in the Kimi mixes.
    for (Case c : {Case{quant::kTypeIQ4_NL, 37, 128}, Case{quant::kTypeIQ4_NL, 5, 96}, Case{quant::kTypeQ2_K, 21, 512},
                   Case{quant::kTypeQ3_K, 18, 768}, Case{quant::kTypeQ4_K, 19, 512}, Case{quant::kTypeQ5_K, 33, 768},
                   Case{quant::kTypeQ6_K, 17, 512}}) {
        CAPTURE(c.type);
        CAPTURE(c.rows);
        CAPTURE(c.cols);
        const std::vector<uint8_t> bytes = random_blocks(rng, c.type, c.rows, c.cols);
        exec::WeightView w;
        w.name = "w";
        w.type = c.type;
        w.rows = c.rows;
        w.cols = c.cols;
        w.row_bytes = quant::row_size(c.type, c.cols);
        w.data = bytes.data();
        w.nbytes = bytes.size();
        w.mat_stride = w.nbytes;
        std::vector<float> dense(size_t(c.rows * c.cols));
        std::vector<double> magnitude(dense.size());
        for (int64_t r = 0; r < c.rows; ++r) {
            quant::dequantize_row(c.type, w.row(r), dense.data() + r * c.cols, c.cols);
            const std::vector<uint8_t> row(w.row(r), w.row(r) + w.row_bytes);
            const std::vector<double> m = weight_magnitudes(c.type, row, c.cols);
            std::copy(m.begin(), m.end(), magnitude.begin() + r * c.cols);
        }
        for (float v : dense) REQUIRE(std::isfinite(v));
        const quant::TypeTraits* traits = quant::find_type_traits(c.type);
        REQUIRE(traits);
        const uint32_t act_type = traits->dot_type;
        const int64_t nb = c.cols / quant::block_elements(c.type);

        for (int64_t n_tokens : {1, 4}) {
            CAPTURE(n_tokens);
            std::normal_distribution<float> normal;
            std::vector<float> x(size_t(n_tokens * c.cols));
            for (float& v : x) v = normal(rng);
            std::vector<float> y(size_t(n_tokens * c.rows), std::nanf(""));
            backend.matmul(w, x.data(), n_tokens, y.data());
            for (int64_t t = 0; t < n_tokens; ++t) {
                std::vector<uint8_t> xq(quant::row_size(act_type, c.cols));
                std::vector<float> a(size_t(c.cols));
                quant::quantize_row(act_type, x.data() + t * c.cols, xq.data(), c.cols, nullptr);
                quant::dequantize_row(act_type, xq.data(), a.data(), c.cols);
                for (int64_t r = 0; r < c.rows; ++r) {
                    double ref = 0.0, mag = 0.0;
                    for (int64_t k = 0; k < c.cols; ++k) {
                        ref += double(dense[size_t(r * c.cols + k)]) * double(a[size_t(k)]);
                        mag += magnitude[size_t(r * c.cols + k)] * std::fabs(double(a[size_t(k)]));
                    }
                    CHECK(std::fabs(double(y[size_t(t * c.rows + r)]) - ref) <= double(nb + 16) * 0x1p-23 * mag);
                }
            }
            // One token alone gives bit-identical outputs (fixed per-element code).
            std::vector<float> y1(size_t(c.rows), std::nanf(""));
            backend.matmul(w, x.data() + (n_tokens - 1) * c.cols, 1, y1.data());
            CHECK(std::memcmp(y1.data(), y.data() + (n_tokens - 1) * c.rows, y1.size() * sizeof(float)) == 0);
        }
    }
}

TEST_CASE("CpuBackend::matmul refuses a K-quant row that is not whole blocks, in the calling thread") {
    std::vector<uint8_t> bytes(4096, 0);
    exec::WeightView w;
    w.name = "ragged";
    w.type = quant::kTypeQ4_K;
    w.rows = 2;
    w.cols = 128;  // half a Q4_K block
    w.row_bytes = 72;
    w.data = bytes.data();
    w.nbytes = 144;
    w.mat_stride = w.nbytes;
    std::vector<float> x(128, 1.0f), y(2, 0.0f);
    exec::CpuBackend backend(2);
    try {
        backend.matmul(w, x.data(), 1, y.data());
        FAIL("matmul accepted a row of half a block");
    } catch (const Error& e) {
        CHECK(e.status() == Status::invalid_argument);
        CHECK(std::string(e.what()).find("ragged") != std::string::npos);
    }
}
