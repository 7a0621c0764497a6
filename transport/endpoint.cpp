#include <charconv>

#include "transport/tcp.hpp"

namespace strata::transport {
namespace {

Error invalid(std::string_view text, const std::string& why) {
    return make_error(Errc::invalid_argument, "endpoint \"" + std::string(text) + "\": " + why);
}

}  // namespace

std::string Endpoint::to_string() const {
    const bool v6 = host.find(':') != std::string::npos && !host.starts_with('[');
    return (v6 ? "[" + host + "]" : host) + ":" + std::to_string(port);
}

Result<Endpoint> parse_endpoint(std::string_view text) {
    if (text.empty()) return invalid(text, "empty (expected HOST:PORT)");
    Endpoint e;
    std::string_view port;
    if (text.front() == '[') {
        const size_t close = text.find(']');
        if (close == std::string_view::npos) return invalid(text, "missing ']' after the IPv6 address");
        e.host = std::string(text.substr(1, close - 1));
        const auto rest = text.substr(close + 1);
        if (rest.empty() || rest.front() != ':') return invalid(text, "missing port (expected [ADDRESS]:PORT)");
        port = rest.substr(1);
    } else {
        const size_t colon = text.rfind(':');
        if (colon == std::string_view::npos) return invalid(text, "missing port (expected HOST:PORT)");
        e.host = std::string(text.substr(0, colon));
        if (e.host.find(':') != std::string::npos)
            return invalid(text, "an IPv6 address needs brackets ([ADDRESS]:PORT)");
        port = text.substr(colon + 1);
    }
    if (e.host.empty()) return invalid(text, "empty host");
    if (port.empty()) return invalid(text, "missing port (expected HOST:PORT)");
    if (port.find_first_not_of("0123456789") != std::string_view::npos)
        return invalid(text, "port \"" + std::string(port) + "\" is not a number");
    uint64_t value = 0;
    const auto [end, ec] = std::from_chars(port.data(), port.data() + port.size(), value);
    if (ec != std::errc{} || end != port.data() + port.size() || value > 65535)
        return invalid(text, "port " + std::string(port) + " is out of range (0 to 65535)");
    e.port = uint16_t(value);
    return e;
}

}  // namespace strata::transport
