// One UCP context: UCX's transports read and opened once, with this pipeline's settings, shared
// by the workers (one per connection) made from it. Workers of one context may live on
// different threads; each worker is used from one thread at a time.
#pragma once

#include <ucp/api/ucp_def.h>

#include <cstdio>
#include <functional>
#include <memory>
#include <string>
#include <utility>
#include <vector>

#include "transport/error.hpp"
#include "transport/ucx/ucx_options.hpp"

namespace strata::transport {

class UcxContext {
public:
    // ucp_init with `options` applied (stream API, wake-up fds). invalid_argument for options
    // that do not validate or that UCX refuses (naming the setting), io when UCX finds nothing to
    // run on.
    static Result<std::shared_ptr<UcxContext>> make(const UcxOptions& options);
    ~UcxContext();
    UcxContext(const UcxContext&) = delete;
    UcxContext& operator=(const UcxContext&) = delete;

    ucp_context_h handle() const { return context_; }
    const UcxOptions& options() const { return options_; }
    // What observed() reports for every connection of this context: UCX's version, the
    // settings given and the transport and device lists as UCX read them back.
    const std::vector<std::pair<std::string, std::string>>& settings() const { return settings_; }
    static std::string version();

private:
    UcxContext(ucp_context_h context, UcxOptions options, std::vector<std::pair<std::string, std::string>> settings)
        : context_(context), options_(std::move(options)), settings_(std::move(settings)) {}
    ucp_context_h context_;
    UcxOptions options_;
    std::vector<std::pair<std::string, std::string>> settings_;
};

// ucs_status_string for a UCX status.
std::string ucx_status_text(int status);

// What `print` writes to a FILE* (UCX prints its descriptions to streams), as a string.
std::string ucx_printed(const std::function<void(FILE*)>& print);

}  // namespace strata::transport
