#include "transport/ucx/ucx_worker.hpp"

#include <ucp/api/ucp.h>

#include <boost/asio/co_spawn.hpp>
#include <boost/asio/detached.hpp>
#include <boost/asio/post.hpp>
#include <boost/asio/redirect_error.hpp>
#include <boost/asio/use_awaitable.hpp>

namespace strata::transport {
namespace asio = boost::asio;

namespace {
// The pump wakes at least this often: insurance against a wake-up UCX does not signal.
constexpr auto kIdleWake = std::chrono::milliseconds(50);
constexpr auto kPollWake = std::chrono::milliseconds(1);
// How long a closing endpoint's pump keeps progressing for the close to complete.
constexpr auto kLinger = std::chrono::milliseconds(1000);
// How long the side that sent last waits for its peer to close first.
constexpr auto kPeerGrace = std::chrono::milliseconds(2000);
}  // namespace

Result<std::shared_ptr<UcxWorker>> UcxWorker::make(std::shared_ptr<UcxContext> context, asio::any_io_executor ex) {
    ucp_worker_params_t params{};
    params.field_mask = UCP_WORKER_PARAM_FIELD_THREAD_MODE;
    params.thread_mode = UCS_THREAD_MODE_SINGLE;  // one executor drives it
    ucp_worker_h worker = nullptr;
    ucs_status_t st = ucp_worker_create(context->handle(), &params, &worker);
    if (st != UCS_OK) return make_error(Errc::io, "UCX cannot create a worker: " + ucx_status_text(st));
    int fd = -1;
    st = ucp_worker_get_efd(worker, &fd);
    if (st != UCS_OK) {
        ucp_worker_destroy(worker);
        return make_error(Errc::io, "UCX gives no wake-up descriptor: " + ucx_status_text(st));
    }
    std::shared_ptr<UcxWorker> made(new UcxWorker(std::move(context), worker, fd, ex));
    asio::co_spawn(ex, pump(made), asio::detached);
    return made;
}

UcxWorker::UcxWorker(std::shared_ptr<UcxContext> context, ucp_worker_h worker, int fd, asio::any_io_executor ex)
    : context_(std::move(context)), worker_(worker), ex_(ex), wakeup_(ex, fd) {}

UcxWorker::~UcxWorker() {
    abandon_close();  // the pump did not get to it (its io_context went first)
    boost::system::error_code ignored;
    wakeup_.cancel(ignored);
    wakeup_.release();  // the fd is the worker's
    // Endpoints still open are destroyed with the worker (their sockets close, so peers see it);
    // their close requests were released when posted, which UCX requires here.
    ucp_worker_destroy(worker_);
}

void UcxWorker::progress() {
    unsigned done = 0;
    while (ucp_worker_progress(worker_) != 0) ++done;
    if (done) wake();
}

void UcxWorker::wake() {
    for (auto* timer : waiters_) timer->cancel();
}

void UcxWorker::progress_until_done(void* request, Clock::duration limit) {
    const auto until = Clock::now() + limit;
    while (ucp_request_check_status(request) == UCS_INPROGRESS && Clock::now() < until) ucp_worker_progress(worker_);
}

void UcxWorker::abandon_close() {
    if (!closing_) return;
    post_close(*closing_, true);
    // A forced close completes locally: wait for it (briefly), so that UCX does not find the
    // request outstanding when the worker goes (it warns on stdout, which is the host's).
    if (closing_->request) {
        progress_until_done(closing_->request, std::chrono::milliseconds(200));
        ucp_request_free(closing_->request);
    }
    closing_.reset();
}

void UcxWorker::close_endpoint(ucp_ep_h ep, std::shared_ptr<UcxEndpointState> state, bool force,
                               bool wait_for_peer) {
    abandon_close();  // one endpoint per worker: a second close would be a bug; close the first now
    closing_.emplace();
    closing_->ep = ep;
    closing_->state = std::move(state);
    closing_->wait_for_peer = wait_for_peer && !force;
    closing_->peer_grace_until = Clock::now() + kPeerGrace;
    if (!closing_->wait_for_peer) post_close(*closing_, force);
    stop();
}

void UcxWorker::post_close(Closing& c, bool force) {
    if (c.posted) return;
    c.posted = true;
    ucp_request_param_t param{};
    param.op_attr_mask = UCP_OP_ATTR_FIELD_FLAGS;
    param.flags = force || c.state->failure ? UCP_EP_CLOSE_FLAG_FORCE : 0;
    ucs_status_ptr_t req = ucp_ep_close_nbx(c.ep, &param);
    if (UCS_PTR_IS_PTR(req)) {
        c.request = req;
        c.linger_until = Clock::now() + kLinger;
    }
}

// True once the closing endpoint (if any) needs no more progress: closed, or given up on.
bool UcxWorker::closing_done() {
    if (!closing_) return true;
    Closing& c = *closing_;
    const auto now = Clock::now();
    if (!c.posted) {
        if (c.state->failure == 0 && now < c.peer_grace_until) return false;  // the peer has not hung up yet
        post_close(c, false);
    }
    if (c.request && ucp_request_check_status(c.request) == UCS_INPROGRESS && now < c.linger_until) return false;
    if (c.request) ucp_request_free(c.request);  // released: UCX may drop it with the worker
    closing_.reset();
    return true;
}

void UcxWorker::stop() {
    stopped_ = true;
    boost::system::error_code ignored;
    wakeup_.cancel(ignored);
    wake();
}


Task<void> UcxWorker::pump(std::shared_ptr<UcxWorker> self) {
    UcxWorker& w = *self;
    // Done once stopped and no close is left to linger on (or it has lingered long enough).
    auto done = [&w] { return w.stopped_ && w.closing_done(); };
    while (!done()) {
        w.progress();
        if (done()) break;
        if (ucp_worker_arm(w.worker_) == UCS_ERR_BUSY) {
            // Events came in since the last progress: take them, but let other coroutines run.
            co_await asio::post(w.ex_, asio::use_awaitable);
            continue;
        }
        Deadline tick(w.ex_, w.polling_ > 0 || w.closing_ ? kPollWake : kIdleWake, [&w] {
            boost::system::error_code ignored;
            w.wakeup_.cancel(ignored);
        });
        boost::system::error_code ec;
        co_await w.wakeup_.async_wait(asio::posix::stream_descriptor::wait_read,
                                      asio::redirect_error(asio::use_awaitable, ec));
    }
}

Task<bool> UcxWorker::wait_until(std::function<bool()> ready, Clock::time_point deadline, bool poll) {
    struct Polling {  // the pump polls while this waiter has a send in flight
        UcxWorker& w;
        bool on;
        Polling(UcxWorker& worker, bool p) : w(worker), on(p) {
            if (!on) return;
            if (w.polling_++ == 0) {
                boost::system::error_code ignored;
                w.wakeup_.cancel(ignored);  // the pump re-arms with the short tick
            }
        }
        ~Polling() {
            if (on) --w.polling_;
        }
    } polling(*this, poll);
    asio::steady_timer timer(ex_);
    for (;;) {
        progress();
        if (ready()) co_return true;
        if (Clock::now() >= deadline) co_return false;
        if (stopped_) co_return ready();
        timer.expires_at(deadline);
        struct Listed {  // off the list on every exit, a destroyed coroutine's included
            std::set<asio::steady_timer*>& list;
            asio::steady_timer* timer;
            ~Listed() { list.erase(timer); }
        } listed{waiters_, &timer};
        waiters_.insert(&timer);
        boost::system::error_code ec;
        co_await timer.async_wait(asio::redirect_error(asio::use_awaitable, ec));
    }
}

}  // namespace strata::transport
