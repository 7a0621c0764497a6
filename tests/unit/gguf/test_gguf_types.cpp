// The ggml type table: ids, names, block sizes and bytes per block as ggml defines them.
#include <doctest/doctest.h>

#include <string>

#include "gguf/ggml_types.hpp"

using namespace strata::gguf;

TEST_CASE("the ggml type table has ggml's block sizes and bytes per block") {
    struct Row {
        uint32_t id;
        const char* name;
        uint32_t block, bytes;
    };
    const Row rows[] = {{0, "f32", 1, 4},        {1, "f16", 1, 2},       {2, "q4_0", 32, 18},
                        {8, "q8_0", 32, 34},     {10, "q2_K", 256, 84},  {15, "q8_K", 256, 292},
                        {19, "iq1_s", 256, 50},  {23, "iq4_xs", 256, 136}, {29, "iq1_m", 256, 56},
                        {30, "bf16", 1, 2},      {34, "tq1_0", 256, 54}, {39, "mxfp4", 32, 17},
                        {40, "nvfp4", 64, 36},   {41, "q1_0", 128, 18},  {42, "q2_0", 64, 18}};
    for (const Row& r : rows) {
        CAPTURE(r.id);
        const GgmlTypeInfo* info = ggml_type_info(r.id);
        REQUIRE(info);
        CHECK(std::string(info->name) == r.name);
        CHECK(info->block_size == r.block);
        CHECK(info->type_size == r.bytes);
        CHECK(ggml_type_usable(r.id));
        CHECK(ggml_type_from_name(r.name) == r.id);
    }
    for (uint32_t removed : {4u, 5u, 31u, 32u, 33u, 36u, 37u, 38u}) {
        CAPTURE(removed);
        CHECK(ggml_type_info(removed)->removed);
        CHECK_FALSE(ggml_type_usable(removed));
    }
    CHECK(ggml_type_info(43) == nullptr);
    CHECK(std::string(ggml_type_name(1000)) == "unknown");
}

TEST_CASE("row and tensor sizes are checked for block multiples, negative sizes and overflow") {
    CHECK(ggml_row_size(kIQ1_S, 512) == 100u);
    CHECK_FALSE(ggml_row_size(kIQ1_S, 500));
    CHECK_FALSE(ggml_row_size(4, 32));
    const int64_t ok[] = {256, 3};
    CHECK(ggml_nbytes(kQ8_0, 2, ok) == 8u * 34 * 3);
    const int64_t negative[] = {32, -1};
    CHECK_FALSE(ggml_nbytes(kQ8_0, 2, negative));
    const int64_t huge[] = {INT64_MAX - 31, INT64_MAX, 1, 1};
    CHECK_FALSE(ggml_nbytes(kF32, 4, huge));
    const int64_t empty[] = {0, 5};
    CHECK(ggml_nbytes(kF32, 2, empty) == 0u);
}
