// The ABI boundary: every exported function body runs inside STRATA_API_BEGIN/END, which turns
// any exception into a strata_status and the thread-local message behind strata_last_error().
#pragma once

#include <algorithm>
#include <cstring>
#include <new>
#include <string>

#include "strata/strata.h"
#include "util/error.hpp"

namespace strata::capi {

// Records the message of the failing call on this thread and returns its status.
strata_status set_error(strata_status status, const std::string& message);
void clear_error();

// Throws invalid_argument naming the parameter when p is null.
template <typename T>
T* require(T* p, const char* what) {
    if (!p) fail(Status::invalid_argument, std::string(what) + " must not be NULL");
    return p;
}

// struct_size must cover the fields this library version reads (older, smaller structs are
// refused rather than read past their end).
template <typename Struct>
void require_struct(const Struct* s, size_t min_size, const char* what) {
    require(s, what);
    if (s->struct_size < min_size)
        fail(Status::invalid_argument, std::string(what) + "->struct_size is " + std::to_string(s->struct_size) +
                                           ", expected at least " + std::to_string(min_size) +
                                           " (set it to sizeof the struct)");
}

// The caller's parameters, or the defaults when params is NULL. Fields appended to a struct
// after `min_size` (the size of its first released layout; default: all of it) keep their
// defaults when the caller's struct_size says its struct ends before them: only struct_size
// bytes are read. A struct smaller than min_size is refused by require_struct.
template <typename Params>
Params params_or_default(const Params* params, void (*fill_defaults)(Params*), size_t min_size = sizeof(Params)) {
    Params p;
    fill_defaults(&p);
    if (params) {
        require_struct(params, min_size, "params");
        std::memcpy(static_cast<void*>(&p), params, std::min(params->struct_size, sizeof(Params)));
        p.struct_size = sizeof(Params);
    }
    return p;
}

// Copies text plus a NUL into a caller buffer; *out_needed (may be NULL) receives the size
// including the NUL. Too small a buffer: buffer_too_small naming `what`, nothing written.
void copy_text_out(const std::string& text, char* buffer, size_t capacity, size_t* out_needed, const char* what);

}  // namespace strata::capi

#define STRATA_API_BEGIN \
    try {                \
        ::strata::capi::clear_error();
#define STRATA_API_END                                                                               \
    return STRATA_OK;                                                                                \
    }                                                                                                \
    catch (const ::strata::Error& e) {                                                               \
        return ::strata::capi::set_error(static_cast<strata_status>(e.status()), e.what());          \
    }                                                                                                \
    catch (const std::bad_alloc&) {                                                                  \
        return ::strata::capi::set_error(STRATA_ERR_OUT_OF_MEMORY, "out of memory");                 \
    }                                                                                                \
    catch (const std::exception& e) {                                                                \
        return ::strata::capi::set_error(STRATA_ERR_INTERNAL, std::string("internal error: ") + e.what()); \
    }                                                                                                \
    catch (...) {                                                                                    \
        return ::strata::capi::set_error(STRATA_ERR_INTERNAL, "internal error: unknown exception");  \
    }
