#include "pipeline/worker_reply.hpp"

#include <exception>
#include <new>

namespace strata::pipeline::detail {
namespace {

// At most kMaxErrorMessage bytes, never ending inside a UTF-8 sequence.
std::string wire_text(const std::string& text) {
    if (text.size() <= transport::kMaxErrorMessage && transport::is_valid_utf8(text)) return text;
    std::string cut = text.substr(0, transport::kMaxErrorMessage);
    while (!cut.empty() && !transport::is_valid_utf8(cut)) cut.pop_back();
    return cut;
}

const char* status_name(Status s) {
    switch (s) {
    case Status::ok: return "ok";
    case Status::invalid_argument: return "invalid_argument";
    case Status::io: return "io";
    case Status::format: return "format";
    case Status::unsupported: return "unsupported";
    case Status::not_found: return "not_found";
    case Status::buffer_too_small: return "buffer_too_small";
    case Status::out_of_memory: return "out_of_memory";
    case Status::internal: return "internal";
    case Status::type_mismatch: return "type_mismatch";
    case Status::context_overflow: return "context_overflow";
    case Status::stage_failed: return "stage_failed";
    case Status::refused: return "refused";
    }
    return "unknown status";
}

}  // namespace

transport::ErrorMessage error_reply(Status status, const std::string& message) {
    return {transport::kLibraryStatusBase + uint32_t(status), wire_text(message)};
}

transport::ErrorMessage error_reply(const transport::Error& error) {
    return {uint32_t(error.code), wire_text(error.detail)};
}

transport::ErrorMessage current_exception_reply() {
    try {
        throw;
    } catch (const Error& e) {
        return error_reply(e.status(), e.what());
    } catch (const std::bad_alloc&) {
        return error_reply(Status::out_of_memory, "out of memory");
    } catch (const std::exception& e) {
        return error_reply(Status::internal, std::string("internal error: ") + e.what());
    } catch (...) {
        return error_reply(Status::internal, "internal error: unknown exception");
    }
}

std::string describe(const transport::ErrorMessage& m) {
    const char* name = m.code >= transport::kLibraryStatusBase
                           ? status_name(Status(m.code - transport::kLibraryStatusBase))
                           : transport::to_string(transport::Errc(m.code));
    return std::string(name) + ": " + m.message;
}

}  // namespace strata::pipeline::detail
