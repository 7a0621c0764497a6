// A deadline raced against an Asio operation. Boost 1.74 has neither awaitable operators nor
// per-operation cancellation slots, so when the timer fires first it runs `on_expiry` (which
// cancels the pending work, e.g. socket.cancel()) and remembers that it fired, so that the
// caller can tell its own deadline from any other cancellation.
//
// Single-threaded: the timer handler and the awaiting coroutine run on the same executor
// (one thread or a strand). `on_expiry` never runs once the Deadline is destroyed, so it may
// capture pointers to objects that the awaiting coroutine owns.
#pragma once

#include <utility>  // before Asio: Boost 1.74's awaitable.hpp uses std::exchange unincluded

#include <boost/asio/any_io_executor.hpp>
#include <boost/asio/steady_timer.hpp>

#include <chrono>
#include <functional>
#include <memory>

#include "transport/connection.hpp"

namespace strata::transport {

using Clock = std::chrono::steady_clock;

// now + timeout, saturating (Timeout::max() means "never").
inline Clock::time_point deadline_after(Timeout timeout) {
    const auto now = Clock::now();
    if (timeout >= std::chrono::duration_cast<Timeout>(Clock::time_point::max() - now)) return Clock::time_point::max();
    return now + timeout;
}

class Deadline {
public:
    Deadline(const boost::asio::any_io_executor& ex, Clock::time_point at, std::function<void()> on_expiry);
    Deadline(const boost::asio::any_io_executor& ex, Timeout timeout, std::function<void()> on_expiry)
        : Deadline(ex, deadline_after(timeout), std::move(on_expiry)) {}
    ~Deadline();
    Deadline(const Deadline&) = delete;
    Deadline& operator=(const Deadline&) = delete;

    bool fired() const { return state_->fired; }

private:
    struct State {
        bool alive = true;
        bool fired = false;
        std::function<void()> on_expiry;
    };
    boost::asio::steady_timer timer_;
    std::shared_ptr<State> state_;  // shared with the timer handler, which may run after ~Deadline
};

// Time left until `at`, never negative.
inline Timeout remaining(Clock::time_point at) {
    const auto left = std::chrono::duration_cast<Timeout>(at - Clock::now());
    return left.count() > 0 ? left : Timeout{0};
}

}  // namespace strata::transport
