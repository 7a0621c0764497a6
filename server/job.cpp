// job.cpp: the hand-over between the engine thread and the request's connection.
#include "job.hpp"

namespace server {

void Job::cancel(Cancel why) {
    Cancel expected = Cancel::none;
    if (cancel_.compare_exchange_strong(expected, why)) notify();
}

void Job::emit(std::string text, std::vector<TokenLogprob> logprobs) {
    {
        std::lock_guard lock(mutex_);
        if (outcome_) return;
        events_.push_back({std::move(text), std::move(logprobs)});
    }
    notify();
}

void Job::finish(JobOutcome outcome) {
    {
        std::lock_guard lock(mutex_);
        if (outcome_) return;
        outcome_ = std::move(outcome);
    }
    notify();
}

bool Job::finished() const {
    std::lock_guard lock(mutex_);
    return outcome_.has_value();
}

void Job::set_notifier(std::function<void()> notify_fn) {
    std::lock_guard lock(mutex_);
    notify_ = std::move(notify_fn);
}

Job::Drained Job::drain() {
    std::lock_guard lock(mutex_);
    Drained d;
    d.events.swap(events_);
    if (outcome_ && !outcome_taken_) {
        d.outcome = outcome_;
        outcome_taken_ = true;
    }
    return d;
}

void Job::notify() {
    std::function<void()> fn;
    {
        std::lock_guard lock(mutex_);
        fn = notify_;
    }
    if (fn) fn();
}

}  // namespace server
