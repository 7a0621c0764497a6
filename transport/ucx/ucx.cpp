#include "transport/ucx/ucx.hpp"

#include <ucp/api/ucp.h>

#include <arpa/inet.h>
#include <netinet/in.h>

#include <boost/asio/ip/tcp.hpp>
#include <boost/asio/redirect_error.hpp>
#include <boost/asio/use_awaitable.hpp>

#include <cstring>

namespace strata::transport {
namespace asio = boost::asio;
using asio::ip::tcp;

struct UcxListener::Pending {
    std::deque<ucp_conn_request_h> requests;
    UcxWorker* worker = nullptr;
    ucp_listener_h listener = nullptr;
};

namespace {

// UCX's error handler (peer failure mode): the endpoint's peer died, closed or refused.
void on_endpoint_error(void* arg, ucp_ep_h, ucs_status_t status) {
    auto* shared = static_cast<UcxEndpointState*>(arg);
    if (!shared->failure) shared->failure = int(status);
    if (shared->worker) shared->worker->wake();
}

void on_connection_request(ucp_conn_request_h request, void* arg) {
    auto* pending = static_cast<UcxListener::Pending*>(arg);
    pending->requests.push_back(request);
    if (pending->worker) pending->worker->wake();
}

void set_peer_failure_mode(ucp_ep_params_t& params, UcxEndpointState* shared) {
    params.field_mask |= UCP_EP_PARAM_FIELD_ERR_HANDLER | UCP_EP_PARAM_FIELD_ERR_HANDLING_MODE;
    params.err_mode = UCP_ERR_HANDLING_MODE_PEER;
    params.err_handler.cb = on_endpoint_error;
    params.err_handler.arg = shared;
}

}  // namespace

Task<Result<std::unique_ptr<UcxConnection>>> ucx_dial(asio::any_io_executor ex, Endpoint to,
                                                      std::shared_ptr<UcxContext> context, Timeout timeout) {
    const auto deadline = deadline_after(timeout);
    tcp::resolver resolver(ex);
    boost::system::error_code ec;
    const auto found = co_await resolver.async_resolve(to.host, std::to_string(to.port),
                                                       asio::redirect_error(asio::use_awaitable, ec));
    if (ec || found.empty())
        co_return make_error(Errc::io, "cannot resolve " + to.to_string() + ": " + (ec ? ec.message() : "no address"));
    const tcp::endpoint address = found.begin()->endpoint();

    auto made = UcxWorker::make(context, ex);
    if (!made) co_return made.error();
    std::shared_ptr<UcxWorker> worker = made.value();
    auto shared = std::make_shared<UcxEndpointState>();
    shared->worker = worker.get();

    sockaddr_storage sa{};
    std::memcpy(&sa, address.data(), address.size());
    ucp_ep_params_t params{};
    params.field_mask = UCP_EP_PARAM_FIELD_FLAGS | UCP_EP_PARAM_FIELD_SOCK_ADDR;
    params.flags = UCP_EP_PARAMS_FLAGS_CLIENT_SERVER;
    params.sockaddr.addr = reinterpret_cast<const sockaddr*>(&sa);
    params.sockaddr.addrlen = socklen_t(address.size());
    set_peer_failure_mode(params, shared.get());
    ucp_ep_h ep = nullptr;
    const ucs_status_t st = ucp_ep_create(worker->handle(), &params, &ep);
    if (st != UCS_OK)
        co_return make_error(Errc::io, "cannot connect to " + to.to_string() + ": UCX: " + ucx_status_text(st));
    auto conn = std::make_unique<UcxConnection>(worker, ep, std::move(shared), context->options().max_payload, "",
                                                to.to_string());
    Status set_up = co_await conn->flush(deadline, timeout);
    if (!set_up) {
        Error e = set_up.error();
        e.detail = to.to_string() + ": " + e.detail;
        co_return e;
    }
    co_return conn;
}

Result<std::unique_ptr<UcxListener>> UcxListener::bind(asio::any_io_executor ex, const Endpoint& at,
                                                      std::shared_ptr<UcxContext> context) {
    boost::system::error_code ec;
    const auto addr = asio::ip::make_address(at.host, ec);
    if (ec)
        return make_error(Errc::invalid_argument, "rdma listens on an IP address, not \"" + at.host + "\"");
    const tcp::endpoint where(addr, at.port);
    auto made = UcxWorker::make(std::move(context), ex);
    if (!made) return made.error();
    auto pending = std::make_unique<Pending>();
    pending->worker = made.value().get();

    sockaddr_storage sa{};
    std::memcpy(&sa, where.data(), where.size());
    ucp_listener_params_t params{};
    params.field_mask = UCP_LISTENER_PARAM_FIELD_SOCK_ADDR | UCP_LISTENER_PARAM_FIELD_CONN_HANDLER;
    params.sockaddr.addr = reinterpret_cast<const sockaddr*>(&sa);
    params.sockaddr.addrlen = socklen_t(where.size());
    params.conn_handler.cb = on_connection_request;
    params.conn_handler.arg = pending.get();
    ucs_status_t st = ucp_listener_create(made.value()->handle(), &params, &pending->listener);
    if (st != UCS_OK)
        return make_error(Errc::io, "UCX cannot listen on " + at.to_string() + ": " + ucx_status_text(st));
    std::unique_ptr<UcxListener> listener(new UcxListener(made.value(), std::move(pending)));
    ucp_listener_attr_t attr{};
    attr.field_mask = UCP_LISTENER_ATTR_FIELD_SOCKADDR;
    if (ucp_listener_query(listener->pending_->listener, &attr) == UCS_OK) {
        if (attr.sockaddr.ss_family == AF_INET)
            listener->port_ = ntohs(reinterpret_cast<const sockaddr_in&>(attr.sockaddr).sin_port);
        else if (attr.sockaddr.ss_family == AF_INET6)
            listener->port_ = ntohs(reinterpret_cast<const sockaddr_in6&>(attr.sockaddr).sin6_port);
    }
    listener->loopback_ = addr.is_loopback();
    return listener;
}

UcxListener::UcxListener(std::shared_ptr<UcxWorker> worker, std::unique_ptr<Pending> pending)
    : worker_(std::move(worker)), pending_(std::move(pending)) {}

UcxListener::~UcxListener() {
    close();
    worker_->stop();
}

void UcxListener::close() {
    if (closed_) return;
    closed_ = true;
    for (ucp_conn_request_h request : pending_->requests) ucp_listener_reject(pending_->listener, request);
    pending_->requests.clear();
    ucp_listener_destroy(pending_->listener);
    worker_->stop();
}

Task<Result<std::unique_ptr<UcxConnection>>> UcxListener::accept() {
    for (;;) {
        if (closed_) co_return make_error(Errc::closed, "accept: the listener is closed");
        if (pending_->requests.empty()) {
            co_await worker_->wait_until([this] { return closed_ || !pending_->requests.empty(); },
                                         Clock::time_point::max());
            continue;
        }
        ucp_conn_request_h request = pending_->requests.front();
        pending_->requests.pop_front();
        std::string remote;
        ucp_conn_request_attr_t attr{};
        attr.field_mask = UCP_CONN_REQUEST_ATTR_FIELD_CLIENT_ADDR;
        if (ucp_conn_request_query(request, &attr) == UCS_OK) remote = sockaddr_text(attr.client_address);

        // Each connection gets a worker of its own, so that it waits on its own wake-up fd.
        auto made = UcxWorker::make(worker_->context(), worker_->executor());
        if (!made) {
            ucp_listener_reject(pending_->listener, request);
            co_return made.error();
        }
        auto shared = std::make_shared<UcxEndpointState>();
        shared->worker = made.value().get();
        ucp_ep_params_t params{};
        params.field_mask = UCP_EP_PARAM_FIELD_CONN_REQUEST;
        params.conn_request = request;
        set_peer_failure_mode(params, shared.get());
        ucp_ep_h ep = nullptr;
        const ucs_status_t st = ucp_ep_create(made.value()->handle(), &params, &ep);
        if (st != UCS_OK)
            co_return make_error(Errc::io, "accept from " + remote + ": UCX: " + ucx_status_text(st));
        auto [local, seen_remote] = endpoint_addresses(ep);
        if (remote.empty()) remote = seen_remote;
        co_return std::make_unique<UcxConnection>(made.value(), ep, std::move(shared),
                                                  worker_->context()->options().max_payload, local, remote);
    }
}

}  // namespace strata::transport
