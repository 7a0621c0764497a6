#include "transport/send_lock.hpp"

#include <boost/asio/redirect_error.hpp>
#include <boost/asio/steady_timer.hpp>
#include <boost/asio/use_awaitable.hpp>

#include <algorithm>

namespace strata::transport {
namespace asio = boost::asio;

struct SendLock::Waiter {
    Waiter(SendLock& l, Clock::time_point deadline) : lock(&l), timer(l.ex_) { timer.expires_at(deadline); }
    // A waiter whose coroutine is destroyed while queued (its io_context torn down) leaves the queue.
    ~Waiter() {
        if (lock && !granted) {
            auto& q = lock->waiters_;
            q.erase(std::remove(q.begin(), q.end(), this), q.end());
        }
    }
    SendLock* lock;  // null once the lock itself is gone
    asio::steady_timer timer;
    bool granted = false;
};

SendLock::~SendLock() {
    for (Waiter* w : waiters_) w->lock = nullptr;
}

Task<bool> SendLock::acquire(Clock::time_point deadline) {
    if (!held_) {
        held_ = true;  // nobody waits while the lock is free: the queue is drained by release()
        co_return true;
    }
    Waiter w(*this, deadline);
    waiters_.push_back(&w);
    boost::system::error_code ec;
    co_await w.timer.async_wait(asio::redirect_error(asio::use_awaitable, ec));
    // A hand-over wins over an expiry that was queued at the same moment: `granted` decides,
    // not the error code. A waiter that was not granted leaves the queue in ~Waiter.
    co_return w.granted;
}

void SendLock::release() {
    if (waiters_.empty()) {
        held_ = false;
        return;
    }
    Waiter* next = waiters_.front();
    waiters_.pop_front();
    next->granted = true;  // the lock stays held: ownership passes to `next`
    next->timer.cancel();
}

}  // namespace strata::transport
