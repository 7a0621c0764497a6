#include "transport/ucx/ucx_options.hpp"

#include <cctype>
#include <regex>
#include <sstream>

namespace strata::transport {

Status UcxOptions::validate() const {
    if (mtu != 0 && mtu != 512 && mtu != 1024 && mtu != 2048 && mtu != 4096)
        return make_error(Errc::invalid_argument, "rdma mtu " + std::to_string(mtu) +
                                                      " is not an InfiniBand path MTU (512, 1024, 2048 or 4096; 0: the port's)");
    if (max_inline < 0 || max_inline > 4096)
        return make_error(Errc::invalid_argument,
                          "rdma inline size " + std::to_string(max_inline) + " must be 0 to 4096 bytes");
    if (rx_queue_len < 0 || rx_queue_len > 65536)
        return make_error(Errc::invalid_argument,
                          "rdma receive queue depth " + std::to_string(rx_queue_len) + " must be 0 to 65536");
    if (tx_queue_len < 0 || tx_queue_len > 65536)
        return make_error(Errc::invalid_argument,
                          "rdma send queue depth " + std::to_string(tx_queue_len) + " must be 0 to 65536");
    for (const std::string* list : {&transports, &devices})
        for (char c : *list)
            if (!(std::isalnum(static_cast<unsigned char>(c)) || c == ',' || c == '_' || c == ':' || c == '.' ||
                  c == '-' || c == '^'))
                return make_error(Errc::invalid_argument, std::string("rdma ") +
                                                              (list == &transports ? "transports" : "devices") + " \"" +
                                                              *list + "\" has a character UCX does not use in a list");
    return Ok{};
}

std::vector<std::pair<std::string, std::string>> UcxOptions::settings() const {
    std::vector<std::pair<std::string, std::string>> out;
    if (!transports.empty()) out.emplace_back("TLS", transports);
    if (!devices.empty()) out.emplace_back("NET_DEVICES", devices);
    // The IB_ prefix reaches every verbs transport (rc, ud, dc; verbs and mlx5) at once.
    if (mtu) out.emplace_back("IB_PATH_MTU", std::to_string(mtu));
    if (max_inline) out.emplace_back("IB_TX_MIN_INLINE", std::to_string(max_inline));
    if (rx_queue_len) out.emplace_back("IB_RX_QUEUE_LEN", std::to_string(rx_queue_len));
    if (tx_queue_len) out.emplace_back("IB_TX_QUEUE_LEN", std::to_string(tx_queue_len));
    return out;
}

void parse_endpoint_info(const std::string& text, UcxObserved& out) {
    // "lane[1]:  2:tcp/lo.0 md[1] ..." : resource index, transport/device, then ".path index".
    static const std::regex lane(R"(lane\[\d+\]:\s+\d+:([A-Za-z0-9_]+)/(\S+?)(?:\.\d+)?\s)");
    static const std::regex cm(R"(lane\[\d+\]:\s+cm\s+([A-Za-z0-9_]+))");
    std::istringstream lines(text);
    std::string line;
    while (std::getline(lines, line)) {
        line += ' ';
        std::smatch m;
        if (std::regex_search(line, m, cm)) {
            out.connection_manager = m[1];
        } else if (std::regex_search(line, m, lane)) {
            UcxLane l{m[1], m[2], 0};
            bool seen = false;
            for (const auto& have : out.lanes) seen = seen || (have.transport == l.transport && have.device == l.device);
            if (!seen) out.lanes.push_back(std::move(l));
        }
    }
}

}  // namespace strata::transport
