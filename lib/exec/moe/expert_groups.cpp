#include "expert_groups.hpp"

#include <algorithm>

namespace strata::exec {

void ExpertGroups::build(const int32_t* chosen, const float* weights, int64_t n_tokens, int64_t k, int64_t n_expert) {
    const size_t n_rows = size_t(n_tokens * k);
    first.assign(size_t(n_expert) + 1, 0);
    for (size_t i = 0; i < n_rows; ++i) ++first[size_t(chosen[i]) + 1];
    for (int64_t x = 0; x < n_expert; ++x) first[size_t(x) + 1] += first[size_t(x)];
    src_token.resize(n_rows);
    sum_rows.resize(n_rows);
    sum_weights.resize(n_rows);
    std::vector<int64_t> next(first.begin(), first.end() - 1);
    std::vector<int64_t> slots(static_cast<size_t>(k));
    for (int64_t t = 0; t < n_tokens; ++t) {
        const int32_t* ids = chosen + t * k;
        for (int64_t i = 0; i < k; ++i) slots[size_t(i)] = i;
        std::sort(slots.begin(), slots.end(), [ids](int64_t a, int64_t b) { return ids[a] < ids[b]; });
        for (int64_t j = 0; j < k; ++j) {
            const int64_t i = slots[size_t(j)];
            const int64_t row = next[size_t(ids[i])]++;  // tokens ascending within an expert
            src_token[size_t(row)] = int32_t(t);
            sum_rows[size_t(t * k + j)] = int32_t(row);
            sum_weights[size_t(t * k + j)] = weights[t * k + i];
        }
    }
}

}  // namespace strata::exec
