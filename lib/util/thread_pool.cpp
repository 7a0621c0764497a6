#include "util/thread_pool.hpp"

#include <chrono>
#include <exception>

namespace strata::util {

namespace {

// How long an idle thread polls before it sleeps: long enough to bridge the gap between the GEMVs of
// one decode step, short enough that an idle pool costs nothing measurable.
constexpr auto kSpinMicros = std::chrono::microseconds(100);

inline void cpu_relax() {
#if defined(__x86_64__) || defined(__i386__)
    __builtin_ia32_pause();
#elif defined(__aarch64__)
    asm volatile("yield");
#endif
}

// Polls ready() until it holds (true) or the spin budget is spent (false).
template <typename Ready>
bool spin_until(const Ready& ready) {
    const auto deadline = std::chrono::steady_clock::now() + kSpinMicros;
    for (unsigned i = 1;; ++i) {
        if (ready()) return true;
        cpu_relax();
        if (i % 64 == 0 && std::chrono::steady_clock::now() > deadline) return ready();
    }
}

}  // namespace

int ThreadPool::size_for(int n_threads) noexcept {
    if (n_threads <= 0) n_threads = int(std::thread::hardware_concurrency());
    return n_threads > 0 ? n_threads : 1;
}

ThreadPool::ThreadPool(int n_threads) {
    n_threads_ = size_for(n_threads);
    threads_.reserve(size_t(n_threads_ - 1));
    for (int i = 1; i < n_threads_; ++i) threads_.emplace_back([this, i] { worker(i); });
}

ThreadPool::~ThreadPool() {
    {
        std::lock_guard<std::mutex> lock(mutex_);
        stop_.store(true, std::memory_order_release);
    }
    start_cv_.notify_all();
    for (auto& t : threads_) t.join();
}

void ThreadPool::run_range(int index) {
    const int64_t base = n_ / n_threads_, extra = n_ % n_threads_;
    const int64_t begin = index * base + (index < extra ? index : extra);
    const int64_t end = begin + base + (index < extra ? 1 : 0);
    if (begin >= end) return;
    try {
        (*fn_)(begin, end);
    } catch (...) {
        std::lock_guard<std::mutex> lock(mutex_);
        if (!error_) error_ = std::current_exception();
    }
}

void ThreadPool::worker(int index) {
    uint64_t seen = 0;
    for (;;) {
        auto ready = [&] {
            return stop_.load(std::memory_order_acquire) || generation_.load(std::memory_order_acquire) != seen;
        };
        if (!spin_until(ready)) {
            std::unique_lock<std::mutex> lock(mutex_);
            start_cv_.wait(lock, ready);
        }
        if (stop_.load(std::memory_order_acquire)) return;
        seen = generation_.load(std::memory_order_acquire);
        run_range(index);
        if (pending_.fetch_sub(1, std::memory_order_acq_rel) == 1) {
            std::lock_guard<std::mutex> lock(mutex_);  // pairs with the caller's predicate check
            done_cv_.notify_one();
        }
    }
}

void ThreadPool::parallel_for(int64_t n, const std::function<void(int64_t, int64_t)>& fn) {
    if (n <= 0) return;
    std::lock_guard<std::mutex> call_lock(call_mutex_);
    if (n_threads_ == 1 || n == 1) {
        fn(0, n);
        return;
    }
    {
        std::lock_guard<std::mutex> lock(mutex_);
        n_ = n;
        fn_ = &fn;
        error_ = nullptr;
        pending_.store(n_threads_ - 1, std::memory_order_relaxed);
        generation_.fetch_add(1, std::memory_order_release);
    }
    start_cv_.notify_all();
    run_range(0);
    auto done = [&] { return pending_.load(std::memory_order_acquire) == 0; };
    if (!spin_until(done)) {
        std::unique_lock<std::mutex> lock(mutex_);
        done_cv_.wait(lock, done);
    }
    std::exception_ptr error;
    {
        std::lock_guard<std::mutex> lock(mutex_);
        error = error_;
        fn_ = nullptr;
    }
    if (error) std::rethrow_exception(error);
}

}  // namespace strata::util
