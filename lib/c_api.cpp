// Implements strata.h: versions, errors and type names here; models in capi/model.cpp,
// writers in capi/writer.cpp.
#include <cstring>

#include "capi/guard.hpp"
#include "gguf/ggml_types.hpp"
#include "quant/formats.hpp"

namespace {

thread_local std::string g_last_error;

// strata_status and strata::Status must stay the same numbers.
static_assert(STRATA_OK == int(strata::Status::ok));
static_assert(STRATA_ERR_INVALID_ARGUMENT == int(strata::Status::invalid_argument));
static_assert(STRATA_ERR_IO == int(strata::Status::io));
static_assert(STRATA_ERR_FORMAT == int(strata::Status::format));
static_assert(STRATA_ERR_UNSUPPORTED == int(strata::Status::unsupported));
static_assert(STRATA_ERR_NOT_FOUND == int(strata::Status::not_found));
static_assert(STRATA_ERR_BUFFER_TOO_SMALL == int(strata::Status::buffer_too_small));
static_assert(STRATA_ERR_OUT_OF_MEMORY == int(strata::Status::out_of_memory));
static_assert(STRATA_ERR_INTERNAL == int(strata::Status::internal));
static_assert(STRATA_ERR_TYPE_MISMATCH == int(strata::Status::type_mismatch));
static_assert(STRATA_ERR_CONTEXT_OVERFLOW == int(strata::Status::context_overflow));
static_assert(STRATA_ERR_STAGE_FAILED == int(strata::Status::stage_failed));
static_assert(STRATA_ERR_REFUSED == int(strata::Status::refused));

#define STRATA_STR2(x) #x
#define STRATA_STR(x) STRATA_STR2(x)

}  // namespace

namespace strata::capi {

strata_status set_error(strata_status status, const std::string& message) {
    try {
        g_last_error = message;
    } catch (...) {
        // Keep the status even when the message cannot be stored.
    }
    return status;
}

void clear_error() { g_last_error.clear(); }

void copy_text_out(const std::string& text, char* buffer, size_t capacity, size_t* out_needed, const char* what) {
    if (out_needed) *out_needed = text.size() + 1;
    if (capacity < text.size() + 1)
        fail(Status::buffer_too_small, std::string(what) + " needs " + std::to_string(text.size() + 1) +
                                           " bytes, the buffer holds " + std::to_string(capacity));
    std::memcpy(require(buffer, "buffer"), text.c_str(), text.size() + 1);
}

}  // namespace strata::capi

extern "C" {

const char* strata_version(void) {
    return STRATA_STR(STRATA_VERSION_MAJOR) "." STRATA_STR(STRATA_VERSION_MINOR) "." STRATA_STR(STRATA_VERSION_PATCH);
}

int strata_version_number(void) { return STRATA_VERSION_NUMBER; }

int strata_abi_version(void) { return STRATA_ABI_VERSION; }

const char* strata_last_error(void) { return g_last_error.c_str(); }

const char* strata_status_string(strata_status status) {
    switch (status) {
        case STRATA_OK: return "ok";
        case STRATA_ERR_INVALID_ARGUMENT: return "invalid argument";
        case STRATA_ERR_IO: return "i/o error";
        case STRATA_ERR_FORMAT: return "malformed file";
        case STRATA_ERR_UNSUPPORTED: return "unsupported";
        case STRATA_ERR_NOT_FOUND: return "not found";
        case STRATA_ERR_BUFFER_TOO_SMALL: return "buffer too small";
        case STRATA_ERR_OUT_OF_MEMORY: return "out of memory";
        case STRATA_ERR_INTERNAL: return "internal error";
        case STRATA_ERR_TYPE_MISMATCH: return "type mismatch";
        case STRATA_ERR_CONTEXT_OVERFLOW: return "context overflow";
        case STRATA_ERR_STAGE_FAILED: return "pipeline stage failed";
        case STRATA_ERR_REFUSED: return "refused by peer";
        default: return "unknown status";
    }
}

const char* strata_tensor_type_name(int type) {
    if (type < 0) return "unknown";
    return strata::gguf::ggml_type_name(uint32_t(type));
}

int strata_tensor_type_supported(int type) {
    return type >= 0 && strata::quant::can_quantize(uint32_t(type)) ? 1 : 0;  // read and write
}

}  // extern "C"
