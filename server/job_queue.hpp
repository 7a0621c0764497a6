// job_queue.hpp: requests waiting for a slot, bounded (a full queue is the caller's 503).
#pragma once

#include <chrono>
#include <condition_variable>
#include <deque>
#include <memory>
#include <mutex>

#include "job.hpp"

namespace server {

class JobQueue {
public:
    explicit JobQueue(size_t limit) : limit_(limit) {}

    // False when `limit` jobs already wait or the queue is closed.
    bool push(std::shared_ptr<Job> job);
    // The oldest job not cancelled; nullptr when none is waiting.
    std::shared_ptr<Job> try_pop();
    // As try_pop, waiting up to `wait` (or until closed) for one.
    std::shared_ptr<Job> pop_for(std::chrono::milliseconds wait);
    // Drops a job that no longer waits (its client left); a no-op when it is not queued.
    void remove(const std::shared_ptr<Job>& job);
    // Wakes every waiter; later pushes fail.
    void close();
    size_t size() const;

private:
    std::shared_ptr<Job> pop_locked();
    size_t limit_;
    bool closed_ = false;
    mutable std::mutex mutex_;
    std::condition_variable ready_;
    std::deque<std::shared_ptr<Job>> jobs_;
};

}  // namespace server
