// Layer plans: parsing, checking, and planning from each stage's memory.
#include <doctest/doctest.h>

#include <functional>

#include "pipeline/planner.hpp"
#include "util/error.hpp"

#include <random>

#include "test_support.hpp"

using strata::pipeline::LayerCosts;
using strata::pipeline::LayerRange;
using strata::pipeline::check_layer_plan;
using strata::pipeline::format_layer_plan;
using strata::pipeline::parse_layer_plan;
using strata::pipeline::plan_by_memory;

namespace {

strata::Status status_of(const std::function<void()>& f) {
    try {
        f();
    } catch (const strata::Error& e) {
        return e.status();
    }
    return strata::Status::ok;
}

}  // namespace

TEST_CASE("pipeline planner: explicit plans parse, print and are checked") {
    const auto plan = parse_layer_plan("0:3,3:4,4:10");
    CHECK(plan == std::vector<LayerRange>{{0, 3}, {3, 4}, {4, 10}});
    CHECK(format_layer_plan(plan) == "0:3,3:4,4:10");
    CHECK_NOTHROW(check_layer_plan(plan, 10, 3));
    CHECK(status_of([] { parse_layer_plan("0:3,,3:4"); }) == strata::Status::invalid_argument);
    CHECK(status_of([] { parse_layer_plan("0-3"); }) == strata::Status::invalid_argument);
    CHECK(status_of([] { parse_layer_plan("0:x"); }) == strata::Status::invalid_argument);
    CHECK(status_of([] { parse_layer_plan("-1:3"); }) == strata::Status::invalid_argument);
    CHECK(status_of([&] { check_layer_plan(plan, 11, 3); }) == strata::Status::invalid_argument);  // short
    CHECK(status_of([&] { check_layer_plan(plan, 10, 2); }) == strata::Status::invalid_argument);  // count
    CHECK(status_of([] { check_layer_plan({{0, 3}, {4, 10}}, 10, 2); }) == strata::Status::invalid_argument);  // gap
    CHECK(status_of([] { check_layer_plan({{0, 0}, {0, 10}}, 10, 2); }) == strata::Status::invalid_argument);  // empty
}

TEST_CASE("pipeline planner: equal capacities split evenly, unequal ones proportionally") {
    std::mt19937_64 rng(strata::test::test_seed());
    LayerCosts costs;
    costs.layer_bytes.assign(24, 1000);
    costs.first_stage_bytes = 500;
    costs.last_stage_bytes = 700;
    const auto even = plan_by_memory(costs, {1 << 20, 1 << 20, 1 << 20});
    CHECK(even == std::vector<LayerRange>{{0, 8}, {8, 16}, {16, 24}});
    // Unknown capacity (0) counts as the largest known one.
    CHECK(plan_by_memory(costs, {0, 1 << 20, 1 << 20}) == even);
    const auto skewed = plan_by_memory(costs, {1 << 20, 2 << 20, 1 << 20});
    CHECK(skewed == std::vector<LayerRange>{{0, 6}, {6, 18}, {18, 24}});
    // Random capacities: always a valid plan, each stage within its capacity when one fits.
    for (int trial = 0; trial < 200; ++trial) {
        std::vector<uint64_t> cap(2 + rng() % 3);
        for (auto& c : cap) c = 3000 + rng() % 30000;
        try {
            const auto p = plan_by_memory(costs, cap);
            check_layer_plan(p, 24, cap.size());
            for (size_t i = 0; i < p.size(); ++i) CHECK(costs.stage_bytes(p[i], i == 0, i + 1 == p.size()) <= cap[i]);
        } catch (const strata::Error& e) {
            CHECK(e.status() == strata::Status::out_of_memory);
        }
    }
}

TEST_CASE("pipeline planner: a GPU stage's capacity is its free memory less its device scratch") {
    CHECK(strata::pipeline::gpu_stage_capacity(10'000, 3'000) == 7'000);
    CHECK(strata::pipeline::gpu_stage_capacity(3'000, 3'000) == 1);  // nothing left: move layers away
    CHECK(strata::pipeline::gpu_stage_capacity(2'000, 3'000) == 1);
    CHECK(strata::pipeline::gpu_stage_capacity(0, 3'000) == 0);  // unknown stays unknown
    CHECK(strata::pipeline::gpu_stage_capacity(5'000, 0) == 5'000);
}

TEST_CASE("pipeline planner: a stage too small moves layers to its neighbours, or the plan is refused") {
    LayerCosts costs;
    costs.layer_bytes.assign(12, 1000);
    // Proportional would give the middle stage 4 layers; it fits 2 only.
    const auto p = plan_by_memory(costs, {10000, 2500, 10000});
    check_layer_plan(p, 12, 3);
    CHECK(p[1].second - p[1].first <= 2);
    try {
        plan_by_memory(costs, {1500, 1500, 1500});
        FAIL("a plan that cannot fit was accepted");
    } catch (const strata::Error& e) {
        CHECK(e.status() == strata::Status::out_of_memory);
        CHECK(std::string(e.what()).find("stage 0") != std::string::npos);
    }
    CHECK(status_of([&] { plan_by_memory(costs, std::vector<uint64_t>(13, 1 << 20)); }) ==
          strata::Status::invalid_argument);  // more stages than layers
}
