#include "util/thread_pool.hpp"

#include <algorithm>
#include <chrono>
#include <exception>

namespace strata::util {

namespace {

// How long an idle thread polls before it sleeps: long enough to bridge the gap between the GEMVs of
// one decode step, short enough that an idle pool costs nothing measurable.
constexpr auto kSpinMicros = std::chrono::microseconds(100);
// Chunks per thread: with two, a thread the OS deschedules holds back at most half its share (the
// rest is taken over); four measured a few percent slower on a tiny model's decode, where the
// per-chunk setup of the loops (allocations, kernel entry) is not negligible.
constexpr int64_t kChunksPerThread = 2;
constexpr int64_t kMaxChunks = 0xffff;  // the 16-bit fields of the claim word

constexpr uint64_t pack(uint32_t generation, int64_t end, int64_t next) {
    return uint64_t(generation) << 32 | uint64_t(end) << 16 | uint64_t(next);
}
constexpr uint32_t generation_of(uint64_t word) { return uint32_t(word >> 32); }
constexpr int64_t end_of(uint64_t word) { return int64_t(word >> 16 & 0xffff); }
constexpr int64_t next_of(uint64_t word) { return int64_t(word & 0xffff); }

inline void cpu_relax() {
#if defined(__x86_64__) || defined(__i386__)
    __builtin_ia32_pause();
#elif defined(__aarch64__)
    asm volatile("yield");
#endif
}

// Polls ready() until it holds (true) or the spin budget is spent (false). It never yields: under
// CFS a yield hands the core to a busy process for a whole time slice (measured: decode 3x slower
// beside two busy loops), while a short spin and then a futex sleep costs the others little.
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

int64_t ThreadPool::chunk_count(int64_t n) const noexcept {
    if (n <= 0) return 0;
    if (n_threads_ == 1) return 1;
    return std::min({n, int64_t(n_threads_) * kChunksPerThread, kMaxChunks});
}

ThreadPool::ThreadPool(int n_threads) {
    n_threads_ = size_for(n_threads);
    slots_ = std::make_unique<Slot[]>(size_t(n_threads_));
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

void ThreadPool::run_chunks(uint32_t generation, int index) {
    int64_t ran = 0;
    for (int s = 0; s < n_threads_; ++s) {
        std::atomic<uint64_t>& slot = slots_[size_t((index + s) % n_threads_)].word;
        uint64_t word = slot.load(std::memory_order_acquire);
        while (generation_of(word) == generation && next_of(word) < end_of(word)) {
            if (!slot.compare_exchange_weak(word, word + 1, std::memory_order_acq_rel, std::memory_order_acquire))
                continue;  // word now holds the slot's current value
            // The chunk is ours: n_, fn_ and chunks_ stay as they are until it is counted done.
            const int64_t chunk = next_of(word);
            const int64_t base = n_ / chunks_, extra = n_ % chunks_;
            const int64_t begin = chunk * base + std::min(chunk, extra);
            const int64_t end = begin + base + (chunk < extra ? 1 : 0);
            try {
                (*fn_)(begin, end);
            } catch (...) {
                std::lock_guard<std::mutex> lock(mutex_);
                if (!error_) error_ = std::current_exception();
            }
            ++ran;
            word = slot.load(std::memory_order_acquire);
        }
    }
    if (ran == 0) return;
    const int64_t chunks = chunks_;  // still this call's: it cannot end before ran is counted
    if (done_.fetch_add(ran, std::memory_order_acq_rel) + ran == chunks) {
        std::lock_guard<std::mutex> lock(mutex_);  // pairs with the caller's predicate check
        done_cv_.notify_one();
    }
}

void ThreadPool::worker(int index) {
    uint32_t seen = 0;  // generation 0 is never a call
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
        run_chunks(seen, index);
    }
}

void ThreadPool::parallel_for(int64_t n, const std::function<void(int64_t, int64_t)>& fn) {
    if (n <= 0) return;
    std::lock_guard<std::mutex> call_lock(call_mutex_);
    const int64_t chunks = chunk_count(n);
    if (chunks == 1) {
        fn(0, n);
        return;
    }
    uint32_t generation = generation_.load(std::memory_order_relaxed) + 1;
    if (generation == 0) generation = 1;  // workers start having "seen" 0
    {
        std::lock_guard<std::mutex> lock(mutex_);
        n_ = n;
        chunks_ = chunks;
        fn_ = &fn;
        error_ = nullptr;
        done_.store(0, std::memory_order_relaxed);
        for (int i = 0; i < n_threads_; ++i)  // thread i's share: an even contiguous run of chunks
            slots_[size_t(i)].word.store(pack(generation, chunks * (i + 1) / n_threads_, chunks * i / n_threads_),
                                         std::memory_order_relaxed);
        generation_.store(generation, std::memory_order_release);
    }
    start_cv_.notify_all();
    run_chunks(generation, 0);
    auto done = [&] { return done_.load(std::memory_order_acquire) == chunks; };
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
