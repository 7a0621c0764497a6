#include "util/thread_pool.hpp"

#include <exception>

namespace strata::util {

ThreadPool::ThreadPool(int n_threads) {
    if (n_threads <= 0) n_threads = int(std::thread::hardware_concurrency());
    n_threads_ = n_threads > 0 ? n_threads : 1;
    threads_.reserve(size_t(n_threads_ - 1));
    for (int i = 1; i < n_threads_; ++i) threads_.emplace_back([this, i] { worker(i); });
}

ThreadPool::~ThreadPool() {
    {
        std::lock_guard<std::mutex> lock(mutex_);
        stop_ = true;
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
        {
            std::unique_lock<std::mutex> lock(mutex_);
            start_cv_.wait(lock, [&] { return stop_ || generation_ != seen; });
            if (stop_) return;
            seen = generation_;
        }
        run_range(index);
        {
            std::lock_guard<std::mutex> lock(mutex_);
            if (--pending_ == 0) done_cv_.notify_one();
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
        pending_ = n_threads_ - 1;
        ++generation_;
    }
    start_cv_.notify_all();
    run_range(0);
    std::exception_ptr error;
    {
        std::unique_lock<std::mutex> lock(mutex_);
        done_cv_.wait(lock, [&] { return pending_ == 0; });
        error = error_;
        fn_ = nullptr;
    }
    if (error) std::rethrow_exception(error);
}

}  // namespace strata::util
