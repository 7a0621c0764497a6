// exec::ExpertGroups worked by hand: rows grouped by expert (experts ascending, tokens ascending
// within one), each token's rows in ascending expert order with their weights; and on random
// routings the invariants the CPU and GPU MoE blocks rely on.
#include <doctest/doctest.h>

#include <algorithm>
#include <numeric>
#include <random>
#include <vector>

#include "exec/moe/expert_groups.hpp"

using namespace strata;

TEST_CASE("expert_groups: three tokens, two experts each, of five, by hand") {
    // token 0 chose 3 then 1, token 1 chose 1 then 4, token 2 chose 4 then 0
    const std::vector<int32_t> chosen = {3, 1, 1, 4, 4, 0};
    const std::vector<float> weights = {0.7f, 0.3f, 0.6f, 0.4f, 0.9f, 0.1f};
    exec::ExpertGroups g;
    g.build(chosen.data(), weights.data(), 3, 2, 5);
    // expert 0: token 2; 1: tokens 0, 1; 2: none; 3: token 0; 4: tokens 1, 2
    CHECK(g.first == std::vector<int64_t>{0, 1, 3, 3, 4, 6});
    CHECK(g.src_token == std::vector<int32_t>{2, 0, 1, 0, 1, 2});
    CHECK(g.rows(2) == 0);
    // token 0: expert 1 (row 1) then 3 (row 3); token 1: 1 (row 2) then 4 (row 4); token 2: 0 (row 0) then 4 (row 5)
    CHECK(g.sum_rows == std::vector<int32_t>{1, 3, 2, 4, 0, 5});
    CHECK(g.sum_weights == std::vector<float>{0.3f, 0.7f, 0.6f, 0.4f, 0.1f, 0.9f});
}

TEST_CASE("expert_groups: random routings keep every (token, expert, weight) once, in order") {
    std::mt19937 rng(std::random_device{}());
    for (int trial = 0; trial < 50; ++trial) {
        const int64_t n_expert = 1 + int64_t(rng() % 40), k = 1 + int64_t(rng() % uint32_t(std::min<int64_t>(n_expert, 8)));
        const int64_t n = 1 + int64_t(rng() % 30);
        std::vector<int32_t> chosen(static_cast<size_t>(n * k));
        std::vector<float> weights(chosen.size());
        std::vector<int32_t> ids(static_cast<size_t>(n_expert));
        std::iota(ids.begin(), ids.end(), 0);
        for (int64_t t = 0; t < n; ++t) {
            std::shuffle(ids.begin(), ids.end(), rng);
            for (int64_t i = 0; i < k; ++i) {
                chosen[size_t(t * k + i)] = ids[size_t(i)];
                weights[size_t(t * k + i)] = float(rng() % 1000) / 1000.0f;
            }
        }
        exec::ExpertGroups g;
        g.build(chosen.data(), weights.data(), n, k, n_expert);
        REQUIRE(g.first.back() == n * k);
        // the expert of each grouped row, from first[]
        std::vector<int32_t> expert_of(static_cast<size_t>(n * k));
        for (int64_t x = 0; x < n_expert; ++x) {
            for (int64_t r = g.first[size_t(x)]; r < g.first[size_t(x) + 1]; ++r) {
                expert_of[size_t(r)] = int32_t(x);
                if (r > g.first[size_t(x)]) CHECK(g.src_token[size_t(r - 1)] < g.src_token[size_t(r)]);
            }
        }
        for (int64_t t = 0; t < n; ++t) {
            for (int64_t j = 0; j < k; ++j) {
                const int32_t row = g.sum_rows[size_t(t * k + j)];
                CHECK(g.src_token[size_t(row)] == t);
                if (j > 0) CHECK(expert_of[size_t(g.sum_rows[size_t(t * k + j - 1)])] < expert_of[size_t(row)]);
                // the weight is the one the token gave that expert
                const auto it = std::find(chosen.begin() + t * k, chosen.begin() + (t + 1) * k, expert_of[size_t(row)]);
                REQUIRE(it != chosen.begin() + (t + 1) * k);
                CHECK(g.sum_weights[size_t(t * k + j)] == weights[size_t(it - chosen.begin())]);
            }
        }
    }
}
