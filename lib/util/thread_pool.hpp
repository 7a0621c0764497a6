// A small fixed-size pool for data-parallel loops (GEMV over rows). Each pool owns its threads;
// there is no global pool, so two models (or two sessions) can each hold their own.
#pragma once

#include <atomic>
#include <condition_variable>
#include <cstdint>
#include <functional>
#include <mutex>
#include <thread>
#include <vector>

namespace strata::util {

class ThreadPool {
public:
    // n_threads total workers including the calling thread; 0 = std::thread::hardware_concurrency().
    explicit ThreadPool(int n_threads = 0);
    ~ThreadPool();
    ThreadPool(const ThreadPool&) = delete;
    ThreadPool& operator=(const ThreadPool&) = delete;

    int size() const noexcept { return n_threads_; }
    // The size a pool started with n_threads has (<= 0: hardware concurrency, at least 1).
    static int size_for(int n_threads) noexcept;

    // Splits [0, n) into size() contiguous ranges (the first n % size() one element longer) and
    // calls fn(begin, end) for each non-empty one, one range per thread; the calling thread runs the
    // first. Returns when all are done. The split depends only on n and size(), so results that are
    // computed per element do not depend on scheduling. The first exception thrown by fn is
    // rethrown here. Not reentrant: one parallel_for at a time per pool (calls are serialized).
    void parallel_for(int64_t n, const std::function<void(int64_t begin, int64_t end)>& fn);

private:
    void worker(int index);
    void run_range(int index);

    int n_threads_;
    std::vector<std::thread> threads_;
    std::mutex call_mutex_;  // serializes parallel_for callers
    // Workers and the caller spin briefly (kSpinMicros in the .cpp) on these atomics before blocking on
    // the condition variables: decode runs GEMVs back to back, and waking a sleeping thread costs
    // tens of microseconds on a VM, as much as a whole small GEMV.
    std::mutex mutex_;
    std::condition_variable start_cv_;
    std::condition_variable done_cv_;
    std::atomic<uint64_t> generation_{0};  // bumped (under mutex_) once per parallel_for
    std::atomic<int> pending_{0};          // workers still running the current call
    std::atomic<bool> stop_{false};
    int64_t n_ = 0;
    const std::function<void(int64_t, int64_t)>* fn_ = nullptr;
    std::exception_ptr error_;  // guarded by mutex_
};

}  // namespace strata::util
