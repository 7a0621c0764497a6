// The measured choice of a device matmul path (exec/matmul_choice.hpp), driven by injected
// timings: token buckets, one measurement per (type, rows, cols, bucket), the fastest kept,
// paths that cannot run skipped, an error when none can, and the description of what was chosen.
#include <doctest/doctest.h>

#include <algorithm>
#include <array>
#include <functional>
#include <limits>
#include <map>
#include <string>
#include <vector>

#include "exec/matmul_choice.hpp"
#include "util/error.hpp"

using namespace strata;
using exec::MatmulPath;

namespace {

constexpr uint32_t kIq1s = 19;
constexpr uint32_t kQ8_0 = 8;
constexpr int64_t kGemvMax = 8;
constexpr std::array<MatmulPath, 2> kBoth = {MatmulPath::mma, MatmulPath::cublas};

// A timer that returns fixed seconds per path and counts how often each path was timed.
struct FakeTimer {
    std::map<MatmulPath, double> seconds;
    std::map<MatmulPath, int> calls;
    double operator()(MatmulPath p) {
        ++calls[p];
        const auto it = seconds.find(p);
        return it == seconds.end() ? -1.0 : it->second;
    }
    int total() const {
        int n = 0;
        for (const auto& [p, c] : calls) n += c;
        return n;
    }
};

exec::MatmulShape shape(uint32_t type, int64_t rows, int64_t cols, int64_t n_tokens) {
    return exec::MatmulShape{type, rows, cols, n_tokens};
}

}  // namespace

TEST_CASE("matmul_choice: token buckets are the largest power of two not above the count") {
    CHECK(exec::token_bucket(1) == 1);
    CHECK(exec::token_bucket(2) == 2);
    CHECK(exec::token_bucket(3) == 2);
    CHECK(exec::token_bucket(16) == 16);
    CHECK(exec::token_bucket(31) == 16);
    CHECK(exec::token_bucket(300) == 256);
    CHECK(exec::token_bucket(511) == 256);
    CHECK(exec::token_bucket(512) == 512);
    CHECK(exec::token_bucket(4096) == 4096);
    CHECK(exec::token_bucket(4096 + 17) == 4096);
    CHECK(exec::token_bucket(int64_t(1) << 62) == int64_t(1) << 62);
    CHECK(exec::token_bucket(INT64_MAX) == int64_t(1) << 62);
    CHECK_THROWS_AS(exec::token_bucket(0), Error);
    CHECK_THROWS_AS(exec::token_bucket(-5), Error);
}

TEST_CASE("matmul_choice: path names") {
    CHECK(std::string(exec::matmul_path_name(MatmulPath::gemv)) == "gemv");
    CHECK(std::string(exec::matmul_path_name(MatmulPath::mma)) == "mma");
    CHECK(std::string(exec::matmul_path_name(MatmulPath::cublas)) == "cublas");
}

TEST_CASE("matmul_choice: decode sizes take gemv without measuring") {
    exec::MatmulChooser chooser;
    FakeTimer timer{{{MatmulPath::mma, 1.0}, {MatmulPath::cublas, 2.0}}, {}};
    for (int64_t n = 1; n <= kGemvMax; ++n)
        CHECK(chooser.choose(shape(kIq1s, 4096, 4096, n), kGemvMax, kBoth, std::ref(timer)) == MatmulPath::gemv);
    CHECK(timer.total() == 0);
    CHECK(chooser.size() == 0);
    CHECK(chooser.describe().empty());
    CHECK_THROWS_AS(chooser.choose(shape(kIq1s, 4096, 4096, 0), kGemvMax, kBoth, std::ref(timer)), Error);
}

TEST_CASE("matmul_choice: the fastest path is kept and remembered per bucket") {
    exec::MatmulChooser chooser;
    FakeTimer timer{{{MatmulPath::mma, 0.003}, {MatmulPath::cublas, 0.002}}, {}};
    CHECK(chooser.choose(shape(kIq1s, 4096, 7168, 300), kGemvMax, kBoth, std::ref(timer)) == MatmulPath::cublas);
    CHECK(timer.calls[MatmulPath::mma] == 1);
    CHECK(timer.calls[MatmulPath::cublas] == 1);

    // Same bucket (256..511): remembered, even if the timings would now say otherwise.
    timer.seconds[MatmulPath::mma] = 0.001;
    CHECK(chooser.choose(shape(kIq1s, 4096, 7168, 256), kGemvMax, kBoth, std::ref(timer)) == MatmulPath::cublas);
    CHECK(chooser.choose(shape(kIq1s, 4096, 7168, 511), kGemvMax, kBoth, std::ref(timer)) == MatmulPath::cublas);
    CHECK(timer.total() == 2);
    CHECK(chooser.size() == 1);

    // Another bucket, rows, cols or type: measured afresh.
    CHECK(chooser.choose(shape(kIq1s, 4096, 7168, 512), kGemvMax, kBoth, std::ref(timer)) == MatmulPath::mma);
    CHECK(chooser.choose(shape(kIq1s, 4097, 7168, 300), kGemvMax, kBoth, std::ref(timer)) == MatmulPath::mma);
    CHECK(chooser.choose(shape(kIq1s, 4096, 7424, 300), kGemvMax, kBoth, std::ref(timer)) == MatmulPath::mma);
    const std::array<MatmulPath, 1> only_cublas = {MatmulPath::cublas};
    CHECK(chooser.choose(shape(kQ8_0, 4096, 7168, 300), kGemvMax, only_cublas, std::ref(timer)) ==
          MatmulPath::cublas);
    CHECK(chooser.size() == 5);
    CHECK(timer.total() == 2 + 3 * 2 + 1);
}

TEST_CASE("matmul_choice: a tie keeps the first candidate") {
    exec::MatmulChooser chooser;
    FakeTimer timer{{{MatmulPath::mma, 0.5}, {MatmulPath::cublas, 0.5}}, {}};
    CHECK(chooser.choose(shape(kIq1s, 64, 256, 16), kGemvMax, kBoth, std::ref(timer)) == MatmulPath::mma);
    const std::array<MatmulPath, 2> reversed = {MatmulPath::cublas, MatmulPath::mma};
    CHECK(chooser.choose(shape(kIq1s, 64, 256, 32), kGemvMax, reversed, std::ref(timer)) == MatmulPath::cublas);
}

TEST_CASE("matmul_choice: paths that cannot run are skipped; none runnable is an error") {
    exec::MatmulChooser chooser;
    FakeTimer timer{{{MatmulPath::cublas, 0.010}}, {}};  // mma reports -1: cannot run this shape
    CHECK(chooser.choose(shape(kIq1s, 1000, 4096, 33), kGemvMax, kBoth, std::ref(timer)) == MatmulPath::cublas);
    CHECK(timer.calls[MatmulPath::mma] == 1);

    // A NaN from a broken timer counts as "cannot run", never as fastest.
    FakeTimer nan_timer{{{MatmulPath::mma, std::numeric_limits<double>::quiet_NaN()}, {MatmulPath::cublas, 1.0}}, {}};
    CHECK(chooser.choose(shape(kIq1s, 1000, 4096, 64), kGemvMax, kBoth, std::ref(nan_timer)) ==
          MatmulPath::cublas);

    FakeTimer none{{}, {}};
    try {
        chooser.choose(shape(kIq1s, 1000, 4096, 128), kGemvMax, kBoth, std::ref(none));
        FAIL("expected an error");
    } catch (const Error& e) {
        CHECK(e.status() == Status::unsupported);
        const std::string what = e.what();
        CHECK(what.find("1000 x 4096") != std::string::npos);
        CHECK(what.find("128 tokens") != std::string::npos);
    }
    CHECK_THROWS_AS(chooser.choose(shape(kIq1s, 1000, 4096, 128), kGemvMax, {}, std::ref(none)), Error);
    // The failure was not remembered: a later call with a runnable path measures again.
    FakeTimer later{{{MatmulPath::mma, 0.001}}, {}};
    CHECK(chooser.choose(shape(kIq1s, 1000, 4096, 128), kGemvMax, kBoth, std::ref(later)) == MatmulPath::mma);
    CHECK(chooser.size() == 3);
}

TEST_CASE("matmul_choice: describe lists every choice with the times measured") {
    exec::MatmulChooser chooser;
    FakeTimer timer{{{MatmulPath::mma, 0.0012}, {MatmulPath::cublas, 0.0025}}, {}};
    chooser.choose(shape(kIq1s, 4096, 7168, 512), kGemvMax, kBoth, std::ref(timer));
    const std::array<MatmulPath, 1> only_cublas = {MatmulPath::cublas};
    chooser.choose(shape(kQ8_0, 1000, 256, 40), kGemvMax, only_cublas, std::ref(timer));
    const std::string d = chooser.describe();
    CHECK(d.find("type 19 4096 x 7168, tokens 512: mma (mma 1.200 ms, cublas 2.500 ms)\n") != std::string::npos);
    CHECK(d.find("type 8 1000 x 256, tokens 32: cublas (cublas 2.500 ms)\n") != std::string::npos);
    CHECK(std::count(d.begin(), d.end(), '\n') == 2);
}
