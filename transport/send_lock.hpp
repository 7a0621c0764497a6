// First come, first served exclusion for one connection's writes, so that frames from several
// coroutines go out whole and in call order. Built on timers (Boost 1.74 has no async mutex and
// no experimental channels worth relying on): each waiter sleeps on its own timer until the
// holder hands the lock over by cancelling it, or until the waiter's deadline passes.
//
// Single-threaded: every user runs on the same executor (one thread or a strand).
#pragma once

#include <utility>  // before Asio: Boost 1.74's awaitable.hpp uses std::exchange unincluded

#include <boost/asio/any_io_executor.hpp>

#include <deque>

#include "transport/connection.hpp"
#include "transport/deadline.hpp"

namespace strata::transport {

class SendLock {
public:
    explicit SendLock(boost::asio::any_io_executor ex) : ex_(std::move(ex)) {}
    ~SendLock();
    SendLock(const SendLock&) = delete;
    SendLock& operator=(const SendLock&) = delete;

    // True once the lock is the caller's (release() it, or hold a SendLock::Held); false when
    // `deadline` passed first, and then the caller holds nothing.
    Task<bool> acquire(Clock::time_point deadline);
    // Hands the lock to the longest waiter, or frees it.
    void release();
    bool held() const { return held_; }

    // Releases on scope exit, including every early co_return.
    class Held {
    public:
        explicit Held(SendLock& lock) : lock_(lock) {}
        ~Held() { lock_.release(); }
        Held(const Held&) = delete;
        Held& operator=(const Held&) = delete;

    private:
        SendLock& lock_;
    };

private:
    struct Waiter;
    boost::asio::any_io_executor ex_;
    bool held_ = false;
    std::deque<Waiter*> waiters_;  // in arrival order; each lives in its acquire() frame
};

}  // namespace strata::transport
