// A small fixed-size pool for data-parallel loops (GEMV over rows). Each pool owns its threads;
// there is no global pool, so two models (or two sessions) can each hold their own.
#pragma once

#include <atomic>
#include <condition_variable>
#include <cstdint>
#include <functional>
#include <memory>
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

    // Splits [0, n) into contiguous chunks (a few per thread; their bounds depend only on n and
    // size()) and calls fn(begin, end) once for each. Each thread runs its own share of the chunks
    // and then takes over the chunks the others have not started, so a worker the OS has
    // descheduled (another process holds its core) costs at most the chunk it holds, not its
    // share. fn must compute each element independently of the others in its range: which thread
    // runs a chunk is not determined.
    // Returns when all are done. The first exception thrown by fn is rethrown here (the other
    // chunks still run). Not reentrant: one parallel_for at a time per pool (calls are serialized).
    void parallel_for(int64_t n, const std::function<void(int64_t begin, int64_t end)>& fn);

    // How many chunks parallel_for(n, ...) cuts [0, n) into.
    int64_t chunk_count(int64_t n) const noexcept;

private:
    // The chunks of one call are dealt out in even contiguous runs, one run per thread; each run is
    // handed out from its slot: generation (32 bits) | end (16) | next (16), alone on its cache
    // line. A thread claims from its own slot (a compare-exchange nobody else touches while all
    // goes well), then from the others' (taking over a descheduled thread's share). Claiming
    // compares the whole word, so a thread that wakes late never takes a chunk of a call it did
    // not see start, and it reads n_ and fn_ only after a claim succeeded: the caller keeps them
    // until every claimed chunk is counted done.
    struct alignas(64) Slot {
        std::atomic<uint64_t> word{0};
    };

    void worker(int index);
    // Claims and runs chunks of call number generation, its own slot first, until none is left,
    // then counts what it ran into done_.
    void run_chunks(uint32_t generation, int index);

    int n_threads_;
    std::vector<std::thread> threads_;
    std::unique_ptr<Slot[]> slots_;
    std::mutex call_mutex_;  // serializes parallel_for callers
    alignas(64) std::atomic<uint32_t> generation_{0};  // the current call, published after its slots
    alignas(64) std::atomic<int64_t> done_{0};         // chunks of the current call finished
    alignas(64) std::atomic<bool> stop_{false};
    // Idle threads spin briefly (kSpinMicros in the .cpp) before blocking on these: decode runs
    // GEMVs back to back, and waking a sleeping thread costs tens of microseconds on a VM, as much
    // as a whole small GEMV.
    std::mutex mutex_;
    std::condition_variable start_cv_;
    std::condition_variable done_cv_;
    int64_t n_ = 0;
    int64_t chunks_ = 0;
    const std::function<void(int64_t, int64_t)>* fn_ = nullptr;
    std::exception_ptr error_;  // guarded by mutex_
};

}  // namespace strata::util
