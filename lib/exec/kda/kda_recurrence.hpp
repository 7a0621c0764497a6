// The gated delta rule of one KDA head (lib/model/kimi_linear.md, steps 7 and "Chunked form"):
// S (dk x dk, row = key channel, column = value channel) decays per key channel, takes the
// delta-rule update, and is read after the update. Two forms that agree up to float rounding:
//   kda_step   one token: S~ = diag(exp g) S; u = beta (v - S~^T k); S = S~ + k u^T; o = S^T q
//   kda_chunk  m tokens at once from the cumulative log decay G (the WY form solved by forward
//              substitution): the per-token deltas V' from (I + L) V' = diag(beta)(V - (e^G . K) S0),
//              outputs O = (e^G . Q) S0 + Aqk V', state S = diag(e^G_m) S0 + sum_j (e^(G_m - G_j) . k_j) v'_j^T,
//              every decay taken as one exponent of a difference (<= 0).
// q, k: L2-normalized (q also scaled); g: log decay per key channel (<= 0).
#pragma once

#include <cstdint>
#include <vector>

namespace strata::exec {

void kda_step(float* S, int64_t dk, const float* q, const float* k, const float* v, const float* g, float beta,
              float* o);

// Rows of q, k, v, g, o are the m tokens (dk values each); work: scratch reused between calls.
void kda_chunk(float* S, int64_t dk, int64_t m, const float* q, const float* k, const float* v, const float* g,
               const float* beta, float* o, std::vector<float>& work);

}  // namespace strata::exec
