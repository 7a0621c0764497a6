#include "kda_recurrence.hpp"

#include <cmath>

namespace strata::exec {

void kda_step(float* S, int64_t dk, const float* q, const float* k, const float* v, const float* g, float beta,
              float* o) {
    for (int64_t i = 0; i < dk; ++i) {
        const float a = std::exp(g[i]);
        for (int64_t j = 0; j < dk; ++j) S[i * dk + j] *= a;
    }
    for (int64_t j = 0; j < dk; ++j) o[j] = 0.0f;  // o holds S~^T k first
    for (int64_t i = 0; i < dk; ++i)
        for (int64_t j = 0; j < dk; ++j) o[j] += S[i * dk + j] * k[i];
    for (int64_t j = 0; j < dk; ++j) o[j] = beta * (v[j] - o[j]);  // u
    for (int64_t i = 0; i < dk; ++i)
        for (int64_t j = 0; j < dk; ++j) S[i * dk + j] += k[i] * o[j];
    for (int64_t j = 0; j < dk; ++j) o[j] = 0.0f;
    for (int64_t i = 0; i < dk; ++i)
        for (int64_t j = 0; j < dk; ++j) o[j] += S[i * dk + j] * q[i];
}

void kda_chunk(float* S, int64_t dk, int64_t m, const float* q, const float* k, const float* v, const float* g,
               const float* beta, float* o, std::vector<float>& work) {
    const size_t md = size_t(m * dk);
    work.resize(4 * md);
    float* G = work.data();        // [m][dk] cumulative log decay
    float* ek = G + md;            // [m][dk] e^G . k
    float* dv = ek + md;           // [m][dk] the deltas V'
    float* tmp = dv + md;          // [dk] (the first row is used)
    for (int64_t r = 0; r < m; ++r)
        for (int64_t c = 0; c < dk; ++c) G[r * dk + c] = g[r * dk + c] + (r > 0 ? G[(r - 1) * dk + c] : 0.0f);
    for (int64_t r = 0; r < m; ++r)
        for (int64_t c = 0; c < dk; ++c) ek[r * dk + c] = std::exp(G[r * dk + c]) * k[r * dk + c];
    // rhs_r = beta_r (v_r - S0^T (e^G_r . k_r)), then forward substitution with
    // L[r][j] = beta_r k_r . (e^(G_r - G_j) . k_j), j < r.
    for (int64_t r = 0; r < m; ++r) {
        float* d = dv + r * dk;
        for (int64_t j = 0; j < dk; ++j) d[j] = 0.0f;
        for (int64_t i = 0; i < dk; ++i)
            for (int64_t j = 0; j < dk; ++j) d[j] += S[i * dk + j] * ek[r * dk + i];
        for (int64_t j = 0; j < dk; ++j) d[j] = beta[r] * (v[r * dk + j] - d[j]);
        for (int64_t s = 0; s < r; ++s) {
            float l = 0.0f;
            for (int64_t c = 0; c < dk; ++c) l += k[r * dk + c] * std::exp(G[r * dk + c] - G[s * dk + c]) * k[s * dk + c];
            l *= beta[r];
            for (int64_t j = 0; j < dk; ++j) d[j] -= l * dv[s * dk + j];
        }
    }
    // O_r = S0^T (e^G_r . q_r) + sum_{j <= r} (q_r . e^(G_r - G_j) . k_j) v'_j
    for (int64_t r = 0; r < m; ++r) {
        float* out = o + r * dk;
        for (int64_t j = 0; j < dk; ++j) out[j] = 0.0f;
        for (int64_t i = 0; i < dk; ++i) {
            const float eq = std::exp(G[r * dk + i]) * q[r * dk + i];
            for (int64_t j = 0; j < dk; ++j) out[j] += S[i * dk + j] * eq;
        }
        for (int64_t s = 0; s <= r; ++s) {
            float a = 0.0f;
            for (int64_t c = 0; c < dk; ++c) a += q[r * dk + c] * std::exp(G[r * dk + c] - G[s * dk + c]) * k[s * dk + c];
            for (int64_t j = 0; j < dk; ++j) out[j] += a * dv[s * dk + j];
        }
    }
    // S = diag(e^G_last) S0 + sum_j (e^(G_last - G_j) . k_j) v'_j^T
    const float* last = G + (m - 1) * dk;
    for (int64_t i = 0; i < dk; ++i) {
        const float a = std::exp(last[i]);
        for (int64_t j = 0; j < dk; ++j) S[i * dk + j] *= a;
    }
    for (int64_t s = 0; s < m; ++s) {
        for (int64_t i = 0; i < dk; ++i) tmp[i] = std::exp(last[i] - G[s * dk + i]) * k[s * dk + i];
        for (int64_t i = 0; i < dk; ++i)
            for (int64_t j = 0; j < dk; ++j) S[i * dk + j] += tmp[i] * dv[s * dk + j];
    }
}

}  // namespace strata::exec
