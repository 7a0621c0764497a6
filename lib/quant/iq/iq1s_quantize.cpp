// IQ1_S quantizer; see iq1s_quantize.hpp. Float expressions keep ggml's evaluation order on purpose:
// the scores of competing candidates are compared exactly, so a reordered sum can flip a choice.
#include "iq1s_quantize.hpp"

#include <algorithm>
#include <cfloat>
#include <cmath>
#include <cstring>
#include <string>
#include <thread>
#include <vector>

#include "quant/half.hpp"
#include "iq1_grid_neighbours.hpp"
#include "iq1s_block.hpp"
#include "util/error.hpp"

namespace strata::quant {
namespace {

constexpr int kSub = kIq1sSubBlock;                // 32 weights per sub-block
constexpr int kSubs = kQK_K / kIq1sSubBlock;       // 8 sub-blocks per superblock
constexpr int kGroups = kIq1sSubBlock / kIq1sGroupSize;  // 4 groups per sub-block
constexpr float kZeroEps = 1e-12f;                 // sub-blocks below this are "empty" (as ggml)
constexpr float kHalfMax = 65504.0f;

using GridTables = Iq1GridNeighbours;
const GridTables& tables() { return iq1_grid_neighbours(); }

int nearest_int(float v) { return int(std::nearbyint(v)); }  // ties to even, as ggml's trick

struct BlockStats {
    int64_t zero_blocks = 0, off_grid_groups = 0, clamped_blocks = 0;
};

// Among the neighbour candidates, the grid entry minimising the weighted error at this scale.
// Each position's three possible error terms are computed once; summing them in position order
// gives the same float result as evaluating each candidate from scratch.
int best_neighbour(const uint16_t* cand, const float* x, const float* w, float scale, const float* levels) {
    float term[8][3];
    for (int j = 0; j < 8; ++j)
        for (int l = 0; l < 3; ++l) {
            const float diff = scale * levels[l] - x[j];
            term[j][l] = w[j] * diff * diff;
        }
    const int n = cand[0];
    float best = FLT_MAX;
    int best_index = cand[1];
    for (int c = 1; c <= n; ++c) {
        const uint64_t entry = kIq1sGrid[cand[c]];
        float err = 0;
        for (int j = 0; j < 8; ++j) err += term[j][iq1s_grid_value(entry, j) + 1];
        if (err < best) {
            best = err;
            best_index = cand[c];
        }
    }
    return best_index;
}

void quantize_block(const float* xin, const float* qw, block_iq1_s& out, BlockStats& stats) {
    const GridTables& t = tables();
    static constexpr float kPlus[3] = {-1 + kIq1sDelta, kIq1sDelta, 1 + kIq1sDelta};
    static constexpr float kMinus[3] = {-1 - kIq1sDelta, -kIq1sDelta, 1 - kIq1sDelta};

    std::memset(&out, 0, sizeof out);

    float sumx2 = 0;
    for (int i = 0; i < kQK_K; ++i) sumx2 += xin[i] * xin[i];
    // Overflowing sum of squares (|x| above ~1e18): work on x * 2^-e with every |value| < 1, exact,
    // and scale d back at the end (uniformly scaled weights have the same optimum).
    int exp_shift = 0;
    float scaled[kQK_K];
    const float* x = xin;
    if (!std::isfinite(sumx2)) {
        float amax = 0;
        for (int i = 0; i < kQK_K; ++i) amax = std::max(amax, std::fabs(xin[i]));
        exp_shift = std::ilogb(amax) + 1;
        sumx2 = 0;
        for (int i = 0; i < kQK_K; ++i) {
            scaled[i] = std::ldexp(xin[i], -exp_shift);
            sumx2 += scaled[i] * scaled[i];
        }
        x = scaled;
    }
    const float sigma2 = 2 * sumx2 / kQK_K;

    float scales[kSubs];
    bool minus_shift[kSubs];
    float max_scale = 0;
    for (int ib = 0; ib < kSubs; ++ib) {
        const float* xb = x + kSub * ib;
        scales[ib] = 0;
        minus_shift[ib] = false;
        float w[kSub];
        float amax = 0;
        for (int i = 0; i < kSub; ++i) {
            w[i] = (qw ? qw[kSub * ib + i] : 1.0f) * std::sqrt(sigma2 + xb[i] * xb[i]);
            amax = std::max(amax, std::fabs(xb[i]));
        }
        if (amax < kZeroEps) continue;  // written as index 0, code 0, delta +1/8 (as ggml)

        // Sort ascending (stable: ties keep index order, like glibc's merge-sort qsort), then any
        // ternary assignment worth considering is a split of the sorted order at i1 <= i2.
        uint8_t order[kSub];
        for (int i = 0; i < kSub; ++i) order[i] = uint8_t(i);
        for (int i = 1; i < kSub; ++i) {  // insertion sort: stable, and no allocation unlike stable_sort
            const uint8_t v = order[i];
            int j = i;
            for (; j > 0 && xb[v] < xb[order[j - 1]]; --j) order[j] = order[j - 1];
            order[j] = v;
        }
        float sx[kSub + 1], sw[kSub + 1];
        sx[0] = sw[0] = 0;
        for (int j = 0; j < kSub; ++j) {
            sx[j + 1] = sx[j] + w[order[j]] * xb[order[j]];
            sw[j + 1] = sw[j] + w[order[j]];
        }
        // Maximise sumqx^2 / sumq2 (the error reduction at the optimal scale sumqx / sumq2). For each
        // i1 the candidate sums are computed for all i2 first (a loop the compiler vectorises), then
        // compared in ggml's order (i1, i2, plus shift before minus): same choices, fewer stalls.
        float best = -FLT_MAX, scale = amax;
        int best_i1 = -1, best_i2 = -1, shift = 0;
        for (int i1 = 0; i1 <= kSub; ++i1) {
            float qx_p[kSub + 1], q2_p[kSub + 1], qx_m[kSub + 1], q2_m[kSub + 1];
            const float a = sx[i1] - sx[0], wa = sw[i1] - sw[0];
            for (int i2 = i1; i2 <= kSub; ++i2) {
                const float b = sx[i2] - sx[i1], c = sx[kSub] - sx[i2];
                const float wb = sw[i2] - sw[i1], wc = sw[kSub] - sw[i2];
                qx_p[i2] = a * kPlus[0] + b * kPlus[1] + c * kPlus[2];
                q2_p[i2] = wa * kPlus[0] * kPlus[0] + wb * kPlus[1] * kPlus[1] + wc * kPlus[2] * kPlus[2];
                qx_m[i2] = a * kMinus[0] + b * kMinus[1] + c * kMinus[2];
                q2_m[i2] = wa * kMinus[0] * kMinus[0] + wb * kMinus[1] * kMinus[1] + wc * kMinus[2] * kMinus[2];
            }
            for (int i2 = i1; i2 <= kSub; ++i2) {
                if (q2_p[i2] > 0 && qx_p[i2] * qx_p[i2] > best * q2_p[i2]) {
                    scale = qx_p[i2] / q2_p[i2];
                    best = scale * qx_p[i2];
                    best_i1 = i1;
                    best_i2 = i2;
                    shift = 1;
                }
                if (q2_m[i2] > 0 && qx_m[i2] * qx_m[i2] > best * q2_m[i2]) {
                    scale = qx_m[i2] / q2_m[i2];
                    best = scale * qx_m[i2];
                    best_i1 = i1;
                    best_i2 = i2;
                    shift = -1;
                }
            }
        }
        if (best_i1 < 0) continue;  // all weights zero: nothing to fit

        int8_t L[kSub];
        for (int j = 0; j < kSub; ++j) L[order[j]] = int8_t(j < best_i1 ? 0 : j < best_i2 ? 1 : 2);
        if (scale < 0) {  // mirror so that the scale is positive; the shift mirrors with it
            for (int j = 0; j < kSub; ++j) L[j] = int8_t(2 - L[j]);
            scale = -scale;
            shift = -shift;
        }
        const float* levels = shift == 1 ? kPlus : kMinus;

        int index[kGroups];
        bool all_on_grid = true;
        for (int k = 0; k < kGroups; ++k) {
            uint32_t key = 0;
            for (int j = 0; j < 8; ++j) key |= uint32_t(L[8 * k + j]) << (2 * j);
            const int32_t m = t.map[key];
            if (m >= 0) {
                index[k] = m;
            } else {
                all_on_grid = false;
                ++stats.off_grid_groups;
                index[k] = best_neighbour(&t.neighbours[size_t(-m - 1)], xb + 8 * k, w + 8 * k,
                                          scale, levels);
            }
        }
        if (!all_on_grid) {  // refit the scale to the grid entries actually chosen
            float sumqx = 0, sumq2 = 0;
            for (int k = 0; k < kGroups; ++k) {
                const uint64_t entry = kIq1sGrid[index[k]];
                for (int j = 0; j < 8; ++j) {
                    const float wj = w[8 * k + j];
                    const float q = levels[iq1s_grid_value(entry, j) + 1];
                    sumqx += wj * q * xb[8 * k + j];
                    sumq2 += wj * q * q;
                }
            }
            if (sumqx > 0 && sumq2 > 0) scale = sumqx / sumq2;
        }
        uint16_t h = 0;
        for (int k = 0; k < kGroups; ++k) {
            out.qs[kGroups * ib + k] = uint8_t(index[k] & 255);
            h = uint16_t(h | (index[k] >> 8) << (3 * k));
        }
        out.qh[ib] = h;
        scales[ib] = scale;
        minus_shift[ib] = shift == -1;
        max_scale = std::max(max_scale, scale);
    }

    if (!(max_scale > 0)) {
        ++stats.zero_blocks;
        return;  // d = 0 (the codes written above, if any, decode to -0.0 / +0.0)
    }
    float d = max_scale / 15;
    float stored = d * 1.125f;  // ggml's factor: d sits a little above the largest sub-block scale
    if (exp_shift != 0 || stored > kHalfMax) {
        // Only where ggml would store Inf: clamp to the largest half and keep codes relative to it.
        const double full = std::ldexp(double(stored), exp_shift);
        if (full > kHalfMax) {
            stored = kHalfMax;
            ++stats.clamped_blocks;
        } else {
            stored = float(full);
        }
        d = std::ldexp(stored / 1.125f, -exp_shift);
    }
    out.d = f32_to_f16(stored);
    const float id = 1 / d;
    for (int ib = 0; ib < kSubs; ++ib) {
        const int l = std::clamp(nearest_int(0.5f * (id * scales[ib] - 1)), 0, 7);
        out.qh[ib] = uint16_t(out.qh[ib] | (l << 12) | (minus_shift[ib] ? 0x8000 : 0));
    }
}

void check_finite(const float* v, int64_t n, const char* what, bool nonnegative) {
    for (int64_t i = 0; i < n; ++i) {
        if (!std::isfinite(v[i]) || (nonnegative && v[i] < 0))
            fail(Status::invalid_argument, std::string("IQ1_S quantizer: ") + what + "[" +
                                               std::to_string(i) + "] is " +
                                               (std::isfinite(v[i]) ? "negative" : "not finite"));
    }
}

void check_shape(const float* x, const void* dst, int64_t n) {
    if (!x || !dst) fail(Status::invalid_argument, "IQ1_S quantizer: null source or destination");
    if (n <= 0 || n % kQK_K != 0)
        fail(Status::invalid_argument, "IQ1_S quantizer: row length " + std::to_string(n) +
                                           " is not a positive multiple of 256");
}

void quantize_rows(const float* x, block_iq1_s* dst, int64_t rows, int64_t cols, const float* imatrix,
                   BlockStats& stats) {
    const int64_t nb = cols / kQK_K;
    for (int64_t r = 0; r < rows; ++r)
        for (int64_t b = 0; b < nb; ++b)
            quantize_block(x + r * cols + b * kQK_K, imatrix ? imatrix + b * kQK_K : nullptr,
                           dst[r * nb + b], stats);
}

}  // namespace

void quantize_row_iq1s(const float* x, void* dst, int64_t n, const float* imatrix) {
    check_shape(x, dst, n);
    check_finite(x, n, "x", false);
    if (imatrix) check_finite(imatrix, n, "imatrix", true);
    BlockStats stats;
    quantize_rows(x, static_cast<block_iq1_s*>(dst), 1, n, imatrix, stats);
}

Iq1sQuantizeReport quantize_iq1s(const float* x, void* dst, int64_t rows, int64_t cols,
                                 const float* imatrix, int n_threads) {
    check_shape(x, dst, cols);
    if (rows < 0) fail(Status::invalid_argument, "IQ1_S quantizer: negative row count");
    if (rows > 0 && cols > INT64_MAX / rows)
        fail(Status::invalid_argument, "IQ1_S quantizer: rows * cols overflows");
    check_finite(x, rows * cols, "x", false);
    if (imatrix) check_finite(imatrix, cols, "imatrix", true);
    tables();  // build once up front rather than racing inside the workers (call_once would serialise)

    auto* out = static_cast<block_iq1_s*>(dst);
    const int64_t threads = std::clamp<int64_t>(n_threads, 1, std::max<int64_t>(rows, 1));
    std::vector<BlockStats> stats(static_cast<size_t>(threads));
    if (threads == 1) {
        quantize_rows(x, out, rows, cols, imatrix, stats[0]);
    } else {
        // Contiguous row ranges: every row is quantized independently, so the split cannot change bytes.
        std::vector<std::thread> workers;
        const int64_t nb = cols / kQK_K;
        try {
            for (int64_t t = 0; t < threads; ++t) {
                const int64_t r0 = rows * t / threads, r1 = rows * (t + 1) / threads;
                workers.emplace_back([=, &stats] {
                    quantize_rows(x + r0 * cols, out + r0 * nb, r1 - r0, cols, imatrix, stats[size_t(t)]);
                });
            }
        } catch (...) {  // could not start a thread: let the started ones finish, then report
            for (auto& w : workers) w.join();
            throw;
        }
        for (auto& w : workers) w.join();
    }
    Iq1sQuantizeReport report;
    report.used_imatrix = imatrix != nullptr;
    report.rows = rows;
    report.cols = cols;
    report.blocks = rows * (cols / kQK_K);
    for (const auto& s : stats) {
        report.zero_blocks += s.zero_blocks;
        report.off_grid_groups += s.off_grid_groups;
        report.clamped_blocks += s.clamped_blocks;
    }
    return report;
}

}  // namespace strata::quant
