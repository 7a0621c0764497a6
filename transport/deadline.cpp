#include "transport/deadline.hpp"

namespace strata::transport {

Deadline::Deadline(const boost::asio::any_io_executor& ex, Clock::time_point at, std::function<void()> on_expiry)
    : timer_(ex), state_(std::make_shared<State>()) {
    state_->on_expiry = std::move(on_expiry);
    timer_.expires_at(at);
    timer_.async_wait([state = state_](const boost::system::error_code& ec) {
        if (ec || !state->alive) return;  // cancelled, or the operation finished first
        state->fired = true;
        state->on_expiry();
    });
}

Deadline::~Deadline() {
    state_->alive = false;  // a handler already queued with success must not act any more
    timer_.cancel();
}

}  // namespace strata::transport
