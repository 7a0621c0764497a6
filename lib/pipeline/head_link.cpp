#include "pipeline/head_link.hpp"

#include <algorithm>

namespace strata::pipeline::detail {

void Call::complete(size_t part, transport::Message reply) {
    std::lock_guard lock(mutex_);
    if (part < replies_.size()) replies_[part] = std::move(reply);
    done_locked();
}

void Call::fail(size_t, const Error& error) {
    std::lock_guard lock(mutex_);
    if (!error_) error_ = error;
    done_locked();
}

void Call::drop(size_t) {
    std::lock_guard lock(mutex_);
    done_locked();
}

bool Call::failed() const {
    std::lock_guard lock(mutex_);
    return error_.has_value();
}

void Call::done_locked() {
    if (remaining_ > 0 && --remaining_ == 0) cv_.notify_all();
}

std::vector<transport::Message> Call::wait() {
    std::unique_lock lock(mutex_);
    cv_.wait(lock, [&] { return remaining_ == 0; });
    if (error_) throw *error_;
    return std::move(replies_);
}

void LatencyStats::add(double us) {
    min_us = count == 0 ? us : std::min(min_us, us);
    max_us = count == 0 ? us : std::max(max_us, us);
    sum_us += us;
    ++count;
}

std::string Link::name() const {
    const std::string range = layers.second > layers.first
                                  ? "layers " + std::to_string(layers.first) + ":" + std::to_string(layers.second)
                                  : "layers not yet planned";
    return "stage " + std::to_string(stage) + " (worker " + endpoint.to_string() + ", " + range + ")";
}

Error remote_error(const Link& link, const transport::ErrorMessage& m) {
    using transport::Errc;
    if (m.code > transport::kLibraryStatusBase && m.code <= transport::kLibraryStatusBase + uint32_t(Status::refused))
        return Error(Status(m.code - transport::kLibraryStatusBase), link.name() + ": " + m.message);
    const auto code = Errc(m.code);
    const bool refusal = code == Errc::auth_failed || code == Errc::identity_mismatch ||
                         code == Errc::unsupported_version || code == Errc::tls_failed;
    return Error(refusal ? Status::refused : Status::stage_failed, link.name() + " refused: " + m.message);
}

Error link_error(const Link& link, const transport::Error& e, const char* doing) {
    using transport::Errc;
    // A TLS refusal (certificate check, handshake, a head required to present a certificate)
    // is the peer saying no, as a wrong key is.
    const bool refusal = e.code == Errc::auth_failed || e.code == Errc::identity_mismatch ||
                         e.code == Errc::unsupported_version || e.code == Errc::tls_failed;
    std::string what = link.name() + " " + doing + ": " + transport::to_string(e.code);
    if (!e.detail.empty()) what += " (" + e.detail + ")";
    return Error(refusal ? Status::refused : Status::stage_failed, what);
}

}  // namespace strata::pipeline::detail
