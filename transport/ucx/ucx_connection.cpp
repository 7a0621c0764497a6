#include "transport/ucx/ucx_connection.hpp"

#include <ucp/api/ucp.h>

#include <arpa/inet.h>
#include <netinet/in.h>

#include <cstdio>

#include "transport/crc32c.hpp"

namespace strata::transport {
namespace {

// How long a send cut off by its deadline may take to be let go of once its endpoint is closed
// by force (UCX completes it locally, with an error).
constexpr auto kLetGo = std::chrono::milliseconds(2000);

// Setting an endpoint up failed with `st`: io, "connection refused" when the peer was not there.
Error set_up_error(ucs_status_t st) {
    const bool refused = st == UCS_ERR_NOT_CONNECTED || st == UCS_ERR_UNREACHABLE || st == UCS_ERR_REJECTED ||
                         st == UCS_ERR_CONNECTION_RESET;
    return make_error(Errc::io, std::string(refused ? "connection refused" : "connection failed") + " (UCX: " +
                                    ucx_status_text(st) + ")");
}

}  // namespace

std::string sockaddr_text(const sockaddr_storage& sa) {
    char text[INET6_ADDRSTRLEN] = {};
    if (sa.ss_family == AF_INET) {
        const auto& in = reinterpret_cast<const sockaddr_in&>(sa);
        if (!inet_ntop(AF_INET, &in.sin_addr, text, sizeof text)) return {};
        return std::string(text) + ":" + std::to_string(ntohs(in.sin_port));
    }
    if (sa.ss_family == AF_INET6) {
        const auto& in6 = reinterpret_cast<const sockaddr_in6&>(sa);
        if (!inet_ntop(AF_INET6, &in6.sin6_addr, text, sizeof text)) return {};
        return "[" + std::string(text) + "]:" + std::to_string(ntohs(in6.sin6_port));
    }
    return {};
}

std::pair<std::string, std::string> endpoint_addresses(ucp_ep_h ep) {
    ucp_ep_attr_t attr{};
    attr.field_mask = UCP_EP_ATTR_FIELD_LOCAL_SOCKADDR | UCP_EP_ATTR_FIELD_REMOTE_SOCKADDR;
    if (ucp_ep_query(ep, &attr) != UCS_OK) return {};
    return {sockaddr_text(attr.local_sockaddr), sockaddr_text(attr.remote_sockaddr)};
}

UcxConnection::UcxConnection(std::shared_ptr<UcxWorker> worker, ucp_ep_h ep, std::shared_ptr<UcxEndpointState> shared,
                             uint64_t max_payload, std::string local, std::string remote)
    : worker_(std::move(worker)),
      ep_(ep),
      shared_(std::move(shared)),
      decoder_(max_payload),
      local_(std::move(local)),
      remote_(std::move(remote)) {}

UcxConnection::~UcxConnection() { close(); }

bool UcxConnection::is_open() const { return !closed_ && shared_->failure == 0; }

Error UcxConnection::failure_error(const char* what) const {
    const auto st = static_cast<ucs_status_t>(shared_->failure);
    return make_error(Errc::closed, std::string(what) + ": peer closed the connection (UCX: " + ucx_status_text(st) + ")");
}

void UcxConnection::close() {
    if (closed_) return;
    closed_ = true;
    // Flush what was posted (a bye, the last answer) unless the endpoint has failed; the
    // worker's pump lingers on the close, then ends (io_context::run can return) and the worker
    // goes with the last reference. Waiters on this connection wake and see it closed.
    worker_->close_endpoint(ep_, shared_, shared_->failure != 0, spoke_last_);
}

Task<Status> UcxConnection::flush(Clock::time_point deadline, Timeout timeout) {
    if (closed_) co_return make_error(Errc::closed, "connect: connection is closed");
    if (shared_->failure) co_return set_up_error(static_cast<ucs_status_t>(shared_->failure));
    ucp_request_param_t param{};
    ucs_status_ptr_t req = ucp_ep_flush_nbx(ep_, &param);
    ucs_status_t st = UCS_OK;
    if (UCS_PTR_IS_ERR(req)) {
        st = UCS_PTR_STATUS(req);
    } else if (req) {
        const bool done = co_await worker_->wait_until(
            [req] { return ucp_request_check_status(req) != UCS_INPROGRESS; }, deadline);
        if (!done) {
            ucp_request_free(req);  // released: UCX drops it with the endpoint
            if (!shared_->failure) shared_->failure = int(UCS_ERR_TIMED_OUT);
            close();
            co_return make_error(Errc::timed_out, "connect: UCX did not set the endpoint up within " +
                                                      std::to_string(timeout.count()) + " ms");
        }
        st = ucp_request_check_status(req);
        ucp_request_free(req);
    }
    if (st == UCS_OK && shared_->failure) st = static_cast<ucs_status_t>(shared_->failure);
    if (st != UCS_OK) co_return set_up_error(st);
    co_return Ok{};
}

Task<Status> UcxConnection::send_frame(const Frame& frame, Timeout timeout) {
    const std::span<const uint8_t> part = frame.payload;
    const std::span<const std::span<const uint8_t>> parts(&part, 1);
    Status st = co_await send_parts(frame.type, parts, timeout);
    co_return st;
}

Task<Status> UcxConnection::send_parts(MessageType type, std::span<const std::span<const uint8_t>> parts,
                                       Timeout timeout) {
    const auto deadline = deadline_after(timeout);
    if (closed_) co_return make_error(Errc::closed, "send: connection is closed");
    if (shared_->failure) co_return failure_error("send");
    uint64_t length = 0;
    uint32_t crc = 0;
    for (auto part : parts) {
        length += part.size();
        crc = crc32c(part, crc);
    }
    if (length > decoder_.max_payload())
        co_return make_error(Errc::oversized_length, "send: payload of " + std::to_string(length) +
                                                         " bytes exceeds the maximum of " +
                                                         std::to_string(decoder_.max_payload()));
    const auto header = encode_header(type, length, crc);
    std::vector<std::span<const uint8_t>> pieces{std::span<const uint8_t>(header.data(), header.size())};
    pieces.insert(pieces.end(), parts.begin(), parts.end());
    Status st = co_await send_raw(pieces, remaining(deadline));
    co_return st;
}

Task<Status> UcxConnection::send_raw(std::span<const std::span<const uint8_t>> pieces, Timeout timeout) {
    const auto deadline = deadline_after(timeout);
    if (closed_) co_return make_error(Errc::closed, "send: connection is closed");
    if (shared_->failure) co_return failure_error("send");
    std::vector<ucp_dt_iov_t> iov;
    uint64_t total = 0;
    for (auto piece : pieces)
        if (!piece.empty()) {
            iov.push_back({const_cast<uint8_t*>(piece.data()), piece.size()});
            total += piece.size();
        }
    if (iov.empty()) co_return Ok{};

    ucp_request_param_t param{};
    param.op_attr_mask = UCP_OP_ATTR_FIELD_DATATYPE;
    param.datatype = ucp_dt_make_iov();
    ucs_status_ptr_t req = ucp_stream_send_nbx(ep_, iov.data(), iov.size(), &param);
    if (UCS_PTR_IS_ERR(req)) {
        const ucs_status_t st = UCS_PTR_STATUS(req);
        close();
        co_return make_error(Errc::io, std::string("send: UCX: ") + ucx_status_text(st));
    }
    if (req) {
        ++sends_in_flight_;
        const bool done = co_await worker_->wait_until(
            [req] { return ucp_request_check_status(req) != UCS_INPROGRESS; }, deadline, /*poll=*/true);
        --sends_in_flight_;
        if (!done) {
            // Part of the frame may be out: the stream cannot be resumed. Take the send back
            // before returning, since UCX reads the caller's buffers until then.
            shared_->failure = shared_->failure ? shared_->failure : int(UCS_ERR_TIMED_OUT);
            close();
            worker_->progress_until_done(req, kLetGo);  // a forced close completes it locally
            ucp_request_free(req);
            co_return make_error(Errc::timed_out, "send: no progress within " + std::to_string(timeout.count()) + " ms");
        }
        const ucs_status_t st = ucp_request_check_status(req);
        ucp_request_free(req);
        if (st != UCS_OK) {
            const bool was_closed = closed_;
            close();
            if (was_closed && !shared_->failure) co_return make_error(Errc::closed, "send: connection was closed");
            if (shared_->failure) co_return failure_error("send");
            co_return make_error(Errc::io, std::string("send: UCX: ") + ucx_status_text(st));
        }
    }
    bytes_sent_.fetch_add(total, std::memory_order_relaxed);
    spoke_last_ = true;
    co_return Ok{};
}

Task<Result<Frame>> UcxConnection::receive_frame(Timeout timeout) {
    const auto deadline = deadline_after(timeout);
    // Moves what UCX has received into buffer_; true when there was anything.
    auto pull = [this]() -> bool {
        if (closed_) return false;
        size_t length = 0;
        ucs_status_ptr_t data = ucp_stream_recv_data_nb(ep_, &length);
        if (UCS_PTR_IS_ERR(data)) {
            if (!shared_->failure) shared_->failure = int(UCS_PTR_STATUS(data));
            return false;
        }
        if (!data) return false;
        if (buffer_begin_ > 0 && buffer_begin_ * 2 >= buffer_.size()) {
            buffer_.erase(buffer_.begin(), buffer_.begin() + ptrdiff_t(buffer_begin_));
            buffer_begin_ = 0;
        }
        const auto* bytes = static_cast<const uint8_t*>(data);
        buffer_.insert(buffer_.end(), bytes, bytes + length);
        ucp_stream_data_release(ep_, data);
        bytes_received_.fetch_add(length, std::memory_order_relaxed);
        spoke_last_ = false;
        return true;
    };
    for (;;) {
        std::span<const uint8_t> pending(buffer_.data() + buffer_begin_, buffer_.size() - buffer_begin_);
        auto r = decoder_.next(pending);
        buffer_begin_ = buffer_.size() - pending.size();
        if (!r) {
            shared_->failure = shared_->failure ? shared_->failure : int(UCS_ERR_IO_ERROR);
            close();
            co_return r.error();
        }
        if (r.value()) co_return std::move(*r.value());
        if (closed_) co_return make_error(Errc::closed, "receive: connection is closed");
        if (pull()) continue;
        if (shared_->failure) {
            if (decoder_.mid_frame()) {
                close();
                co_return decoder_.finish().error();  // truncated
            }
            co_return failure_error("receive");
        }
        const bool arrived = co_await worker_->wait_until(
            [&] { return pull() || closed_ || shared_->failure != 0; }, deadline, sends_in_flight_ > 0);
        if (!arrived)
            co_return make_error(Errc::timed_out,
                                 "receive: no progress within " + std::to_string(timeout.count()) + " ms");
    }
}

std::optional<UcxObserved> UcxConnection::ucx() const {
    UcxObserved o;
    o.version = UcxContext::version();
    o.local = local_;
    o.remote = remote_;
    o.settings = worker_->context()->settings();
    if (!closed_) {
        if (o.local.empty() || o.remote.empty()) {
            auto [local, remote] = endpoint_addresses(ep_);
            if (o.local.empty()) o.local = local;
            if (o.remote.empty()) o.remote = remote;
        }
        parse_endpoint_info(ucx_printed([this](FILE* f) { ucp_ep_print_info(ep_, f); }), o);
    }
    for (auto& lane : o.lanes)
        if (lane.transport == "tcp") lane.mtu = interface_mtu(lane.device);
    return o;
}

}  // namespace strata::transport
