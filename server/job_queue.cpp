// job_queue.cpp
#include "job_queue.hpp"

#include <algorithm>

namespace server {

bool JobQueue::push(std::shared_ptr<Job> job) {
    {
        std::lock_guard lock(mutex_);
        if (closed_ || jobs_.size() >= limit_) return false;
        jobs_.push_back(std::move(job));
    }
    ready_.notify_one();
    return true;
}

std::shared_ptr<Job> JobQueue::pop_locked() {
    while (!jobs_.empty()) {
        auto job = std::move(jobs_.front());
        jobs_.pop_front();
        if (!job->cancelled()) return job;
    }
    return nullptr;
}

std::shared_ptr<Job> JobQueue::try_pop() {
    std::lock_guard lock(mutex_);
    return pop_locked();
}

std::shared_ptr<Job> JobQueue::pop_for(std::chrono::milliseconds wait) {
    std::unique_lock lock(mutex_);
    ready_.wait_for(lock, wait, [&] { return closed_ || !jobs_.empty(); });
    return pop_locked();
}

void JobQueue::remove(const std::shared_ptr<Job>& job) {
    std::lock_guard lock(mutex_);
    jobs_.erase(std::remove(jobs_.begin(), jobs_.end(), job), jobs_.end());
}

void JobQueue::close() {
    {
        std::lock_guard lock(mutex_);
        closed_ = true;
    }
    ready_.notify_all();
}

size_t JobQueue::size() const {
    std::lock_guard lock(mutex_);
    return jobs_.size();
}

}  // namespace server
