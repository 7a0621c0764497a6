// GEMV (lib/quant/dot/gemv.hpp) and the thread pool it runs on (lib/util/thread_pool.hpp).
#include <doctest/doctest.h>

#include <algorithm>
#include <atomic>
#include <chrono>
#include <condition_variable>
#include <mutex>
#include <thread>
#include <cmath>
#include <cstring>
#include <random>
#include <stdexcept>

#include "quant/formats.hpp"
#include "quant/dot/gemv.hpp"
#include "quant_test_util.hpp"
#include "test_support.hpp"
#include "util/error.hpp"
#include "util/thread_pool.hpp"

using namespace strata;

TEST_CASE("IQ1_S GEMV matches a float64 reference on odd shapes, bit-identically for 1, 2 and 3 threads") {
    const uint64_t seed = test::test_seed();
    CAPTURE(seed);
    std::mt19937_64 rng(seed);
    util::ThreadPool pool2(2), pool3(3);
    for (int64_t rows : {1, 3, 17, 100})
        for (int64_t cols : {256, 768, 4096}) {
            CAPTURE(rows);
            CAPTURE(cols);
            const auto w = test::random_iq1s_matrix(rng, rows, cols);
            const auto x = test::random_normal(rng, cols);
            // Reference: float64 sums of dequantized weights times the dequantized Q8_K activations
            // (the value both kernels approximate), and times x itself (adds the Q8_K noise).
            std::vector<quant::block_q8_K> xq(size_t(cols / 256));
            quant::quantize_row_q8_k(x.data(), xq.data(), cols);
            std::vector<float> xd(static_cast<size_t>(cols)), wd(static_cast<size_t>(rows * cols));
            quant::dequantize_row(quant::kTypeQ8_K, xq.data(), xd.data(), cols);
            quant::dequantize_row(quant::kTypeIQ1_S, w.data(), wd.data(), rows * cols);

            for (quant::Iq1sKernel kernel : {quant::Iq1sKernel::scalar, quant::Iq1sKernel::avx2}) {
                if (kernel == quant::Iq1sKernel::avx2 && !test::have_avx2_kernels()) continue;
                CAPTURE(quant::iq1s_kernel_name(kernel));
                std::vector<float> y1(static_cast<size_t>(rows)), y2(static_cast<size_t>(rows)), y3(static_cast<size_t>(rows));
                quant::gemv_iq1s(w.data(), rows, cols, x.data(), y1.data(), {nullptr, kernel});
                quant::gemv_iq1s(w.data(), rows, cols, x.data(), y2.data(), {&pool2, kernel});
                quant::gemv_iq1s(w.data(), rows, cols, x.data(), y3.data(), {&pool3, kernel});
                CHECK(std::memcmp(y1.data(), y2.data(), y1.size() * sizeof(float)) == 0);
                CHECK(std::memcmp(y1.data(), y3.data(), y1.size() * sizeof(float)) == 0);
                for (int64_t r = 0; r < rows; ++r) {
                    CAPTURE(r);
                    double exact = 0, terms = 0, with_x = 0, x_terms = 0;
                    for (int64_t c = 0; c < cols; ++c) {
                        const double wv = wd[size_t(r * cols + c)];
                        exact += wv * xd[size_t(c)];
                        terms += std::fabs(wv * xd[size_t(c)]);
                        with_x += wv * x[size_t(c)];
                        x_terms += std::fabs(wv * x[size_t(c)]);
                    }
                    REQUIRE(terms > 0);
                    CHECK(std::fabs(y1[size_t(r)] - exact) <= 1e-6 * terms);
                    // Q8_K rounds each activation by at most half a step (|d|/2 <= max|x|/254).
                    CHECK(std::fabs(y1[size_t(r)] - with_x) <= x_terms / 127.0);
                }
            }
        }
}

TEST_CASE("scalar and AVX2 GEMV agree to float32 accumulation error on a large random matrix") {
    if (!test::avx2_kernels_or_skip()) return;
    const uint64_t seed = test::test_seed();
    CAPTURE(seed);
    std::mt19937_64 rng(seed);
    const int64_t rows = 64, cols = 4096;
    const auto w = test::random_iq1s_matrix(rng, rows, cols);
    const auto x = test::random_normal(rng, cols);
    std::vector<float> ys(static_cast<size_t>(rows)), ya(static_cast<size_t>(rows)), wd(static_cast<size_t>(rows * cols));
    quant::gemv_iq1s(w.data(), rows, cols, x.data(), ys.data(), {nullptr, quant::Iq1sKernel::scalar});
    quant::gemv_iq1s(w.data(), rows, cols, x.data(), ya.data(), {nullptr, quant::Iq1sKernel::avx2});
    quant::dequantize_row(quant::kTypeIQ1_S, w.data(), wd.data(), rows * cols);
    for (int64_t r = 0; r < rows; ++r) {
        double terms = 0;
        for (int64_t c = 0; c < cols; ++c) terms += std::fabs(double(wd[size_t(r * cols + c)]) * x[size_t(c)]);
        CAPTURE(r);
        CHECK(std::fabs(double(ys[size_t(r)]) - double(ya[size_t(r)])) <= 2e-6 * terms);
    }
}

TEST_CASE("F32 GEMV matches a float64 reference for odd shapes and any thread count") {
    const uint64_t seed = test::test_seed();
    CAPTURE(seed);
    std::mt19937_64 rng(seed);
    util::ThreadPool pool(3);
    for (int64_t rows : {1, 3, 17}) {
        for (int64_t cols : {1, 7, 33, 1000}) {
            CAPTURE(rows);
            CAPTURE(cols);
            const auto w = test::random_normal(rng, rows * cols);
            const auto x = test::random_normal(rng, cols);
            for (quant::Iq1sKernel kernel : {quant::Iq1sKernel::scalar, quant::Iq1sKernel::best}) {
                std::vector<float> y(static_cast<size_t>(rows)), yp(static_cast<size_t>(rows));
                quant::gemv_f32(w.data(), rows, cols, x.data(), y.data(), {nullptr, kernel});
                quant::gemv_f32(w.data(), rows, cols, x.data(), yp.data(), {&pool, kernel});
                CHECK(std::memcmp(y.data(), yp.data(), y.size() * sizeof(float)) == 0);
                for (int64_t r = 0; r < rows; ++r) {
                    double exact = 0, terms = 0;
                    for (int64_t c = 0; c < cols; ++c) {
                        exact += double(w[size_t(r * cols + c)]) * x[size_t(c)];
                        terms += std::fabs(double(w[size_t(r * cols + c)]) * x[size_t(c)]);
                    }
                    CHECK(std::fabs(y[size_t(r)] - exact) <= 1e-6 * double(cols) * terms + 1e-30);
                }
            }
        }
    }
}

TEST_CASE("GEMV rejects shapes it cannot run and accepts zero rows") {
    std::vector<quant::block_iq1_s> w(4);
    std::vector<float> x(512, 1.0f), y(4);
    CHECK_THROWS_AS(quant::gemv_iq1s(w.data(), 1, 300, x.data(), y.data()), Error);
    CHECK_THROWS_AS(quant::gemv_iq1s(w.data(), -1, 256, x.data(), y.data()), Error);
    CHECK_THROWS_AS(quant::gemv_iq1s(nullptr, 1, 256, x.data(), y.data()), Error);
    CHECK_NOTHROW(quant::gemv_iq1s(w.data(), 0, 256, x.data(), y.data()));
    CHECK_THROWS_AS(quant::gemv_f32(x.data(), 1, 0, x.data(), y.data()), Error);
}

TEST_CASE("the thread pool covers every index exactly once in its chunks and rethrows errors") {
    for (int threads : {1, 2, 3, 5}) {
        util::ThreadPool pool(threads);
        CHECK(pool.size() == threads);
        for (int64_t n : {0, 1, 2, 7, 100, 1001, 70001}) {
            CAPTURE(threads);
            CAPTURE(n);
            std::vector<std::atomic<int>> hits(static_cast<size_t>(n));
            std::atomic<int> calls{0};
            pool.parallel_for(n, [&](int64_t begin, int64_t end) {
                CHECK(begin < end);
                ++calls;
                for (int64_t i = begin; i < end; ++i) ++hits[size_t(i)];
            });
            int wrong = 0;
            for (auto& h : hits) wrong += h.load() != 1;
            CHECK(wrong == 0);
            CHECK(calls.load() == pool.chunk_count(n));  // one call per chunk, never an empty one
            CHECK(pool.chunk_count(n) <= std::min<int64_t>(n, threads == 1 ? 1 : 0xffff));
        }
        CHECK_THROWS_AS(pool.parallel_for(10, [](int64_t begin, int64_t) {
                            if (begin > 0 || true) throw std::runtime_error("boom");
                        }),
                        std::runtime_error);
        // Still usable after an exception.
        std::atomic<int64_t> sum{0};
        pool.parallel_for(100, [&](int64_t b, int64_t e) {
            for (int64_t i = b; i < e; ++i) sum += i;
        });
        CHECK(sum.load() == 4950);
    }
    util::ThreadPool automatic(0);
    CHECK(automatic.size() >= 1);
}

TEST_CASE("two thread pools used at once from two threads do not interfere") {
    util::ThreadPool a(2), b(2);
    std::atomic<int64_t> sa{0}, sb{0};
    auto work = [](util::ThreadPool& pool, std::atomic<int64_t>& sum) {
        for (int rep = 0; rep < 200; ++rep)
            pool.parallel_for(64, [&](int64_t begin, int64_t end) {
                for (int64_t i = begin; i < end; ++i) sum += i;
            });
    };
    std::thread ta([&] { work(a, sa); }), tb([&] { work(b, sb); });
    ta.join();
    tb.join();
    CHECK(sa.load() == 200 * 2016);
    CHECK(sb.load() == 200 * 2016);
}

TEST_CASE("the thread pool hands out work correctly whether its workers are spinning or asleep") {
    util::ThreadPool pool(3);
    for (int call = 0; call < 300; ++call) {
        // Every few calls, pause longer than the spin budget so the workers block on the condvar.
        if (call % 7 == 0) std::this_thread::sleep_for(std::chrono::microseconds(300));
        const int64_t n = 1 + call % 13;
        std::vector<std::atomic<int>> hits(static_cast<size_t>(n));
        pool.parallel_for(n, [&](int64_t begin, int64_t end) {
            for (int64_t i = begin; i < end; ++i) ++hits[size_t(i)];
        });
        int wrong = 0;
        for (auto& h : hits) wrong += h.load() != 1;
        CAPTURE(call);
        REQUIRE(wrong == 0);
    }
}

TEST_CASE("a stalled worker holds back only the chunk it claimed: the caller takes the rest") {
    // The worker's first chunk waits for the caller to have run more than an even share of the
    // loop. With a fixed share per thread the caller would run its half and wait on the worker,
    // and the worker's wait would time out.
    util::ThreadPool pool(2);
    const auto caller = std::this_thread::get_id();
    const int64_t n = pool.chunk_count(int64_t(1) << 20);  // as many elements as chunks: one each
    REQUIRE(n >= 4);
    REQUIRE(pool.chunk_count(n) == n);
    for (int rep = 0; rep < 20; ++rep) {
        std::mutex m;
        std::condition_variable cv;
        int64_t caller_ran = 0;
        bool worker_timed_out = false;
        pool.parallel_for(n, [&](int64_t, int64_t) {
            std::unique_lock<std::mutex> lock(m);
            if (std::this_thread::get_id() == caller) {
                if (++caller_ran > n / 2) cv.notify_all();
                return;
            }
            if (!cv.wait_for(lock, std::chrono::seconds(10), [&] { return caller_ran > n / 2; })) worker_timed_out = true;
        });
        CAPTURE(rep);
        CHECK_FALSE(worker_timed_out);
    }
}
