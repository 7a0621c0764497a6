#include "transport/ucx/ucx_context.hpp"

#include <ucp/api/ucp.h>

#include <cstdio>
#include <cstdlib>
#include <mutex>
#include <sstream>

namespace strata::transport {
namespace {

// The value of setting `name` in ucp_config_print's text (its "UCX_NAME=value" lines); "" when absent.
std::string setting_in(const std::string& printed, const std::string& name) {
    std::istringstream lines(printed);
    const std::string prefix = "UCX_" + name + "=";
    for (std::string line; std::getline(lines, line);)
        if (line.rfind(prefix, 0) == 0) return line.substr(prefix.size());
    return {};
}

}  // namespace

std::string ucx_printed(const std::function<void(FILE*)>& print) {
    char* text = nullptr;
    size_t size = 0;
    FILE* f = open_memstream(&text, &size);
    if (!f) return {};
    print(f);
    std::fclose(f);
    std::string out(text, size);
    std::free(text);
    return out;
}

std::string ucx_status_text(int status) { return ucs_status_string(static_cast<ucs_status_t>(status)); }

std::string UcxContext::version() {
    unsigned major = 0, minor = 0, release = 0;
    ucp_get_version(&major, &minor, &release);
    return std::to_string(major) + "." + std::to_string(minor) + "." + std::to_string(release);
}

Result<std::shared_ptr<UcxContext>> UcxContext::make(const UcxOptions& options) {
    if (Status st = options.validate(); !st) return st.error();
    // A worker restarted on its port must be able to listen again at once, as over TCP (our TCP
    // listeners set SO_REUSEADDR; UCX's TCP connection manager does not by default). UCX reads
    // its connection managers' settings from the environment only (ucp_config_modify does not
    // reach them), so this sets UCX_TCP_CM_REUSEADDR once, unless the user has set it.
    static std::once_flag reuse_once;
    std::call_once(reuse_once, [] { ::setenv("UCX_TCP_CM_REUSEADDR", "y", /*overwrite=*/0); });
    ucp_config_t* config = nullptr;
    ucs_status_t st = ucp_config_read(nullptr, nullptr, &config);
    if (st != UCS_OK) return make_error(Errc::io, "UCX cannot read its configuration: " + ucx_status_text(st));
    auto settings = options.settings();
    for (const auto& [name, value] : settings) {
        st = ucp_config_modify(config, name.c_str(), value.c_str());
        if (st != UCS_OK) {
            ucp_config_release(config);
            return make_error(Errc::invalid_argument,
                              "UCX refuses " + name + "=" + value + ": " + ucx_status_text(st));
        }
    }
    const char* reuse = std::getenv("UCX_TCP_CM_REUSEADDR");
    settings.emplace_back("TCP_CM_REUSEADDR (environment)", reuse ? reuse : "");
    // UCP's own view of the lists after configuration.
    const std::string printed = ucx_printed([config](FILE* f) { ucp_config_print(config, f, nullptr, UCS_CONFIG_PRINT_CONFIG); });
    settings.emplace_back("TLS (as read back)", setting_in(printed, "TLS"));
    settings.emplace_back("NET_DEVICES (as read back)", setting_in(printed, "NET_DEVICES"));

    ucp_params_t params{};
    params.field_mask = UCP_PARAM_FIELD_FEATURES | UCP_PARAM_FIELD_MT_WORKERS_SHARED | UCP_PARAM_FIELD_NAME;
    params.features = UCP_FEATURE_STREAM | UCP_FEATURE_WAKEUP;
    params.mt_workers_shared = 1;  // workers on different threads (the head's links, a worker's heads)
    params.name = "strata";
    ucp_context_h context = nullptr;
    st = ucp_init(&params, config, &context);
    ucp_config_release(config);
    if (st != UCS_OK)
        return make_error(Errc::io, "UCX found no transport to run on" +
                                        (options.transports.empty() ? std::string()
                                                                    : " among \"" + options.transports + "\"") +
                                        ": " + ucx_status_text(st));
    return std::shared_ptr<UcxContext>(new UcxContext(context, options, std::move(settings)));
}

UcxContext::~UcxContext() { ucp_cleanup(context_); }

}  // namespace strata::transport
