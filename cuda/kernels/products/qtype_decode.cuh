// Per-type decode traits of every quantized weight type the CUDA backend takes (all that lib/quant
// decodes and the CPU backend multiplies): the block struct, its weight count, and decode8, which
// yields weights 8g..8g+7 of one block bit for bit as lib/quant's decoder does (the f16 panels of
// the prefill products, the embedding rows, the generic decode GEMV and the tensor-core tiles all
// decode through it). Every decode8 is built from the __host__ __device__ functions of the type's
// lib/quant header (layouts, codes, scales: one definition of each format) and evaluates the
// float products in the same order; cuda/tests/test_qtype_host.cu compiles them on the host and
// compares them with quant::dequantize_row on random blocks, so the CPU tests cover this code.
//
// Lookup tables reach decode8 through QTables, pointers to the host tables (host code) or to the
// device copies of qtables_device.cuh (kernels).
#pragma once

#include <cstdint>

#include "qdev_ops.cuh"
#include "quant/hd.hpp"
#include "quant/iq/iq1m_block.hpp"
#include "quant/iq/iq1s_block.hpp"
#include "quant/iq/iq2_block.hpp"
#include "quant/iq/iq3_block.hpp"
#include "quant/iq/iq4_nl.hpp"
#include "quant/iq/iq4_xs.hpp"
#include "quant/codecs/k_quants.hpp"
#include "quant/codecs/legacy_quants.hpp"
#include "quant/codecs/mxfp4.hpp"
#include "quant/codecs/q1_0.hpp"
#include "quant/codecs/q8_0.hpp"
#include "quant/codecs/ternary.hpp"
#include "quant/type_ids.hpp"

namespace strata::cuda {

// The lookup tables of the quantized formats.
struct QTables {
    const uint64_t* iq1s_grid = nullptr;    // IQ1_S, IQ1_M: 2048 entries
    const uint64_t* iq2xxs_grid = nullptr;  // 256
    const uint64_t* iq2xs_grid = nullptr;   // 512
    const uint64_t* iq2s_grid = nullptr;    // 1024
    const uint8_t* iq2_signs = nullptr;     // 128 (IQ2_XXS, IQ2_XS, IQ3_XXS)
    const uint32_t* iq3xxs_grid = nullptr;  // 256
    const uint32_t* iq3s_grid = nullptr;    // 512
    const int8_t* iq4nl_values = nullptr;   // 16 (IQ4_NL, IQ4_XS)
    const int8_t* mxfp4_values = nullptr;   // 16
};

// The host tables of lib/quant (host code and the host tests).
inline QTables host_qtables() {
    QTables t;
    t.iq1s_grid = quant::kIq1sGrid;
    t.iq2xxs_grid = quant::kIq2xxsGrid;
    t.iq2xs_grid = quant::kIq2xsGrid;
    t.iq2s_grid = quant::kIq2sGrid;
    t.iq2_signs = quant::kIq2Signs;
    t.iq3xxs_grid = quant::kIq3xxsGrid;
    t.iq3s_grid = quant::kIq3sGrid;
    t.iq4nl_values = quant::kIq4nlValues;
    t.mxfp4_values = quant::kMxfp4Values;
    return t;
}

// Every quantized weight type with a decoder here, as X(type id, traits name). The float types
// (F32, F16, BF16) have their own kernels; Q8_1 and Q8_K are activation formats, which neither
// backend multiplies as weights.
#define STRATA_CUDA_QTYPES(X)                                                                                   \
    X(quant::kTypeQ4_0) X(quant::kTypeQ4_1) X(quant::kTypeQ5_0) X(quant::kTypeQ5_1) X(quant::kTypeQ8_0)       \
    X(quant::kTypeQ2_K) X(quant::kTypeQ3_K) X(quant::kTypeQ4_K) X(quant::kTypeQ5_K) X(quant::kTypeQ6_K)       \
    X(quant::kTypeIQ2_XXS) X(quant::kTypeIQ2_XS) X(quant::kTypeIQ3_XXS) X(quant::kTypeIQ1_S)                  \
    X(quant::kTypeIQ4_NL) X(quant::kTypeIQ3_S) X(quant::kTypeIQ2_S) X(quant::kTypeIQ4_XS) X(quant::kTypeIQ1_M) \
    X(quant::kTypeTQ1_0) X(quant::kTypeTQ2_0) X(quant::kTypeMXFP4) X(quant::kTypeQ1_0)

template <uint32_t kType>
struct QType;  // specialized below, one per type of STRATA_CUDA_QTYPES

// --- legacy 32-weight blocks -------------------------------------------------------------------

template <>
struct QType<quant::kTypeQ4_0> {
    using Block = quant::block_q4_0;
    static constexpr int kElems = 32;
    STRATA_HD static void decode8(const Block& b, int g, const QTables&, float out[8]) {
        const float d = qdev::f16(b.d);
        for (int j = 0; j < 8; ++j) out[j] = float(quant::q4_code(b.qs, 8 * g + j) - 8) * d;
    }
};

template <>
struct QType<quant::kTypeQ4_1> {
    using Block = quant::block_q4_1;
    static constexpr int kElems = 32;
    STRATA_HD static void decode8(const Block& b, int g, const QTables&, float out[8]) {
        const float d = qdev::f16(b.d), m = qdev::f16(b.m);
        for (int j = 0; j < 8; ++j) out[j] = quant::legacy_mul_add(float(quant::q4_code(b.qs, 8 * g + j)), d, m);
    }
};

template <>
struct QType<quant::kTypeQ5_0> {
    using Block = quant::block_q5_0;
    static constexpr int kElems = 32;
    STRATA_HD static void decode8(const Block& b, int g, const QTables&, float out[8]) {
        const float d = qdev::f16(b.d);
        for (int j = 0; j < 8; ++j) out[j] = float(quant::q5_code(b.qs, b.qh, 8 * g + j) - 16) * d;
    }
};

template <>
struct QType<quant::kTypeQ5_1> {
    using Block = quant::block_q5_1;
    static constexpr int kElems = 32;
    STRATA_HD static void decode8(const Block& b, int g, const QTables&, float out[8]) {
        const float d = qdev::f16(b.d), m = qdev::f16(b.m);
        for (int j = 0; j < 8; ++j) out[j] = quant::legacy_mul_add(float(quant::q5_code(b.qs, b.qh, 8 * g + j)), d, m);
    }
};

template <>
struct QType<quant::kTypeQ8_0> {
    using Block = quant::block_q8_0;
    static constexpr int kElems = 32;
    STRATA_HD static void decode8(const Block& b, int g, const QTables&, float out[8]) {
        const float d = qdev::f16(b.d);  // dequantize_row_q8_0: d * q
        for (int j = 0; j < 8; ++j) out[j] = d * float(b.qs[8 * g + j]);
    }
};

template <>
struct QType<quant::kTypeMXFP4> {
    using Block = quant::block_mxfp4;
    static constexpr int kElems = 32;
    STRATA_HD static void decode8(const Block& b, int g, const QTables& t, float out[8]) {
        const float d = quant::mxfp4_half_scale(b.e);
        for (int j = 0; j < 8; ++j) out[j] = float(t.mxfp4_values[quant::q4_code(b.qs, 8 * g + j)]) * d;
    }
};

template <>
struct QType<quant::kTypeIQ4_NL> {
    using Block = quant::block_iq4_nl;
    static constexpr int kElems = 32;
    STRATA_HD static void decode8(const Block& b, int g, const QTables& t, float out[8]) {
        const float d = qdev::f16(b.d);
        for (int j = 0; j < 8; ++j) out[j] = d * float(t.iq4nl_values[quant::iq4_code(b.qs, 8 * g + j)]);
    }
};

template <>
struct QType<quant::kTypeQ1_0> {
    using Block = quant::block_q1_0;
    static constexpr int kElems = 128;
    STRATA_HD static void decode8(const Block& b, int g, const QTables&, float out[8]) {
        const float d = qdev::f16(b.d);
        for (int j = 0; j < 8; ++j) out[j] = (b.qs[g] >> j) & 1u ? d : -d;  // weight 8g + j
    }
};

// --- K-quants ----------------------------------------------------------------------------------

template <>
struct QType<quant::kTypeQ2_K> {
    using Block = quant::block_q2_K;
    static constexpr int kElems = 256;
    STRATA_HD static void decode8(const Block& b, int g, const QTables&, float out[8]) {
        const int s = g / 2;  // 16-weight sub-block
        const float dl = qdev::f16(b.d) * float(b.scales[s] & 0x0f);
        const float ml = qdev::f16(b.dmin) * float(b.scales[s] >> 4);
        for (int j = 0; j < 8; ++j) out[j] = quant::k_mul_sub(dl, float(quant::q2_K_code(b, 8 * g + j)), ml);
    }
};

template <>
struct QType<quant::kTypeQ3_K> {
    using Block = quant::block_q3_K;
    static constexpr int kElems = 256;
    STRATA_HD static void decode8(const Block& b, int g, const QTables&, float out[8]) {
        const float dl = qdev::f16(b.d) * float(quant::q3_K_scale(b.scales, g / 2));
        for (int j = 0; j < 8; ++j) out[j] = dl * float(quant::q3_K_code(b, 8 * g + j));
    }
};

template <>
struct QType<quant::kTypeQ4_K> {
    using Block = quant::block_q4_K;
    static constexpr int kElems = 256;
    STRATA_HD static void decode8(const Block& b, int g, const QTables&, float out[8]) {
        const quant::KScaleMin sm = quant::k_scale_min(b.scales, g / 4);  // 32-weight sub-block
        const float mul = qdev::f16(b.d) * float(sm.scale), sub = qdev::f16(b.dmin) * float(sm.min);
        for (int j = 0; j < 8; ++j) out[j] = quant::k_mul_sub(mul, float(quant::q4_K_code(b, 8 * g + j)), sub);
    }
};

template <>
struct QType<quant::kTypeQ5_K> {
    using Block = quant::block_q5_K;
    static constexpr int kElems = 256;
    STRATA_HD static void decode8(const Block& b, int g, const QTables&, float out[8]) {
        const quant::KScaleMin sm = quant::k_scale_min(b.scales, g / 4);
        const float mul = qdev::f16(b.d) * float(sm.scale), sub = qdev::f16(b.dmin) * float(sm.min);
        for (int j = 0; j < 8; ++j) out[j] = quant::k_mul_sub(mul, float(quant::q5_K_code(b, 8 * g + j)), sub);
    }
};

template <>
struct QType<quant::kTypeQ6_K> {
    using Block = quant::block_q6_K;
    static constexpr int kElems = 256;
    STRATA_HD static void decode8(const Block& b, int g, const QTables&, float out[8]) {
        const float dl = qdev::f16(b.d) * float(b.scales[g / 2]);  // (d * sc) * q, as q6_K_decode_block
        for (int j = 0; j < 8; ++j) out[j] = dl * float(quant::q6_K_code(b, 8 * g + j));
    }
};

// --- ternary -----------------------------------------------------------------------------------

// n weights (d times trit kLevel of bytes[0..n-1], minus one), the level a constant so that
// quant::tq1_trit's power of three folds away.
template <int kLevel>
STRATA_HD void tq1_trits(const uint8_t* bytes, int n, float d, float* out) {
    for (int j = 0; j < n; ++j) out[j] = float(quant::tq1_trit(bytes[j], kLevel) - 1) * d;
}

STRATA_HD void tq1_trits_at(int level, const uint8_t* bytes, int n, float d, float* out) {
    switch (level) {
    case 0: tq1_trits<0>(bytes, n, d, out); break;
    case 1: tq1_trits<1>(bytes, n, d, out); break;
    case 2: tq1_trits<2>(bytes, n, d, out); break;
    case 3: tq1_trits<3>(bytes, n, d, out); break;
    default: tq1_trits<4>(bytes, n, d, out); break;
    }
}

template <>
struct QType<quant::kTypeTQ1_0> {
    using Block = quant::block_tq1_0;
    static constexpr int kElems = 256;
    // Weight w: trit w / 32 of qs[w % 32] below 160, trit (w - 160) / 16 of qs[32 + w % 16] below
    // 240, else trit (w - 240) / 4 of qh[w % 4] (ternary.hpp). A group of 8 lies in one of those
    // ranges: one trit level of 8 consecutive bytes in the first two, two levels of qh[0..3] in the
    // last.
    STRATA_HD static void decode8(const Block& b, int g, const QTables&, float out[8]) {
        const float d = qdev::f16(b.d);
        const int w0 = 8 * g;
        if (w0 < 160) {
            tq1_trits_at(w0 / 32, b.qs + w0 % 32, 8, d, out);
        } else if (w0 < 240) {
            tq1_trits_at((w0 - 160) / 16, b.qs + 32 + (w0 - 160) % 16, 8, d, out);
        } else {
            const int level = 2 * ((w0 - 240) / 8);
            tq1_trits_at(level, b.qh, 4, d, out);
            tq1_trits_at(level + 1, b.qh, 4, d, out + 4);
        }
    }
};

template <>
struct QType<quant::kTypeTQ2_0> {
    using Block = quant::block_tq2_0;
    static constexpr int kElems = 256;
    // Weight w = 128h + 32l + m: bits 2l..2l+1 of qs[32h + m], minus one (ternary.hpp).
    STRATA_HD static void decode8(const Block& b, int g, const QTables&, float out[8]) {
        const float d = qdev::f16(b.d);
        const int h = g / 16, l = (g / 4) % 4, m0 = 8 * (g % 4);
        for (int j = 0; j < 8; ++j) out[j] = float(int((b.qs[32 * h + m0 + j] >> (2 * l)) & 3u) - 1) * d;
    }
};

// --- i-quants ----------------------------------------------------------------------------------

template <>
struct QType<quant::kTypeIQ1_S> {
    using Block = quant::block_iq1_s;
    static constexpr int kElems = 256;
    STRATA_HD static void decode8(const Block& b, int g, const QTables& t, float out[8]) {
        quant::iq1s_decode_group(b, t.iq1s_grid, g, out);
    }
};

template <>
struct QType<quant::kTypeIQ1_M> {
    using Block = quant::block_iq1_m;
    static constexpr int kElems = 256;
    STRATA_HD static void decode8(const Block& b, int g, const QTables& t, float out[8]) {
        quant::iq1m_decode_group(b, t.iq1s_grid, quant::iq1m_d(b), g, out);
    }
};

template <>
struct QType<quant::kTypeIQ2_XXS> {
    using Block = quant::block_iq2_xxs;
    static constexpr int kElems = 256;
    STRATA_HD static void decode8(const Block& b, int g, const QTables& t, float out[8]) {
        const int s = g / 4, l = g % 4;
        const float db = quant::iq2_sub_scale(qdev::f16(b.d), quant::iq2xxs_ls(b, s));
        quant::iq2_decode_group(db, t.iq2xxs_grid[quant::iq2xxs_grid_index(b, s, l)],
                                quant::iq2xxs_signs(b, t.iq2_signs, s, l), out);
    }
};

template <>
struct QType<quant::kTypeIQ2_XS> {
    using Block = quant::block_iq2_xs;
    static constexpr int kElems = 256;
    STRATA_HD static void decode8(const Block& b, int g, const QTables& t, float out[8]) {
        const int s = g / 4, l = g % 4;
        const float db = quant::iq2_sub_scale(qdev::f16(b.d), quant::iq2_half_ls(b.scales, s, l / 2));
        quant::iq2_decode_group(db, t.iq2xs_grid[quant::iq2xs_grid_index(b, s, l)],
                                quant::iq2xs_signs(b, t.iq2_signs, s, l), out);
    }
};

template <>
struct QType<quant::kTypeIQ2_S> {
    using Block = quant::block_iq2_s;
    static constexpr int kElems = 256;
    STRATA_HD static void decode8(const Block& b, int g, const QTables& t, float out[8]) {
        const int s = g / 4, l = g % 4;
        const float db = quant::iq2_sub_scale(qdev::f16(b.d), quant::iq2_half_ls(b.scales, s, l / 2));
        quant::iq2_decode_group(db, t.iq2s_grid[quant::iq2s_grid_index(b, s, l)], quant::iq2s_signs(b, s, l), out);
    }
};

template <>
struct QType<quant::kTypeIQ3_XXS> {
    using Block = quant::block_iq3_xxs;
    static constexpr int kElems = 256;
    STRATA_HD static void decode8(const Block& b, int g, const QTables& t, float out[8]) {
        const int s = g / 4, l = g % 4;
        const float db = qdev::f16(b.d) * (0.5f + float(quant::iq3xxs_ls(b, s))) * 0.5f;  // as iq3xxs_decode_block
        quant::iq3_decode_group(db, t.iq3xxs_grid[b.qs[8 * s + 2 * l]], t.iq3xxs_grid[b.qs[8 * s + 2 * l + 1]],
                                quant::iq3xxs_signs(b, t.iq2_signs, s, l), out);
    }
};

template <>
struct QType<quant::kTypeIQ3_S> {
    using Block = quant::block_iq3_s;
    static constexpr int kElems = 256;
    STRATA_HD static void decode8(const Block& b, int g, const QTables& t, float out[8]) {
        const int s = g / 4, l = g % 4;
        const float db = qdev::f16(b.d) * float(1 + 2 * int(quant::iq3s_ls(b, s)));  // as iq3s_decode_block
        quant::iq3_decode_group(db, t.iq3s_grid[quant::iq3s_grid_index(b, s, 2 * l)],
                                t.iq3s_grid[quant::iq3s_grid_index(b, s, 2 * l + 1)], b.signs[4 * s + l], out);
    }
};

template <>
struct QType<quant::kTypeIQ4_XS> {
    using Block = quant::block_iq4_xs;
    static constexpr int kElems = 256;
    STRATA_HD static void decode8(const Block& b, int g, const QTables& t, float out[8]) {
        const int s = g / 4;
        const float dl = qdev::f16(b.d) * float(quant::iq4xs_sub_scale(b, s));
        for (int j = 0; j < 8; ++j) out[j] = dl * float(t.iq4nl_values[quant::iq4_code(b.qs + 16 * s, 8 * (g % 4) + j)]);
    }
};

// alignof the block struct of a type of STRATA_CUDA_QTYPES (0 for any other type): the alignment
// a matrix's first byte needs for decode8 (rows and blocks then keep it).
constexpr int qtype_block_align(uint32_t type) {
#define STRATA_QTYPE_ALIGN(t) \
    if (type == t) return int(alignof(typename QType<t>::Block));
    STRATA_CUDA_QTYPES(STRATA_QTYPE_ALIGN)
#undef STRATA_QTYPE_ALIGN
    return 0;
}

// Weights 8u..8u+7 of a row of blocks of type kType (u: the group index along the row).
template <uint32_t kType>
STRATA_HD void decode_row_group(const uint8_t* row, int64_t u, const QTables& t, float out[8]) {
    using Q = QType<kType>;
    constexpr int kGroups = Q::kElems / 8;
    const auto* blocks = reinterpret_cast<const typename Q::Block*>(row);
    Q::decode8(blocks[u / kGroups], int(u % kGroups), t, out);
}

}  // namespace strata::cuda
