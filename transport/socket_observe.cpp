#include "transport/socket_options.hpp"

#include <ifaddrs.h>
#include <net/if.h>
#include <netinet/in.h>
#include <sys/ioctl.h>
#include <sys/socket.h>
#include <unistd.h>

#include <cstring>

namespace strata::transport {
namespace {

namespace ip = boost::asio::ip;

// The interface whose address is `local` ("" when none is found, e.g. a wildcard address).
std::string interface_of(const ip::address& local) {
    ip::address a = local;
    if (a.is_v6() && a.to_v6().is_v4_mapped()) a = ip::make_address_v4(ip::v4_mapped, a.to_v6());
    ifaddrs* list = nullptr;
    if (getifaddrs(&list) != 0) return {};
    std::string name;
    for (ifaddrs* it = list; it && name.empty(); it = it->ifa_next) {
        if (!it->ifa_addr || !it->ifa_name) continue;
        if (it->ifa_addr->sa_family == AF_INET && a.is_v4()) {
            const auto* sin = reinterpret_cast<const sockaddr_in*>(it->ifa_addr);
            const auto bytes = a.to_v4().to_bytes();
            if (std::memcmp(&sin->sin_addr, bytes.data(), bytes.size()) == 0) name = it->ifa_name;
        } else if (it->ifa_addr->sa_family == AF_INET6 && a.is_v6()) {
            const auto* sin6 = reinterpret_cast<const sockaddr_in6*>(it->ifa_addr);
            const auto bytes = a.to_v6().to_bytes();
            if (std::memcmp(&sin6->sin6_addr, bytes.data(), bytes.size()) == 0) name = it->ifa_name;
        }
    }
    freeifaddrs(list);
    return name;
}

}  // namespace

// SIOCGIFMTU on a throwaway datagram socket (any socket can ask; 0 when unknown).
int interface_mtu(const std::string& interface) {
    if (interface.empty() || interface.size() >= IFNAMSIZ) return 0;
    const int fd = ::socket(AF_INET, SOCK_DGRAM, 0);
    if (fd < 0) return 0;
    ifreq req{};
    std::memcpy(req.ifr_name, interface.c_str(), interface.size() + 1);
    const int mtu = ::ioctl(fd, SIOCGIFMTU, &req) == 0 ? req.ifr_mtu : 0;
    ::close(fd);
    return mtu;
}

std::string endpoint_text(const ip::tcp::endpoint& e) {
    const std::string addr = e.address().to_string();
    return (e.address().is_v6() ? "[" + addr + "]" : addr) + ":" + std::to_string(e.port());
}

Status apply_stream_options(ip::tcp::socket& s, const TcpOptions& options) {
    if (auto st = apply_socket_options(s, options); !st) return st;
    boost::system::error_code ec;
    s.set_option(ip::tcp::no_delay(options.no_delay), ec);
    if (ec) return make_error(Errc::io, std::string("TCP_NODELAY: ") + ec.message());
    return Ok{};
}

SocketObserved observe_socket(const ip::tcp::socket& s) {
    SocketObserved o;
    boost::system::error_code ec;
    const auto local = s.local_endpoint(ec);
    if (!ec) {
        o.local = endpoint_text(local);
        o.interface = interface_of(local.address());
        o.mtu = interface_mtu(o.interface);
    }
    const auto remote = s.remote_endpoint(ec);
    if (!ec) o.remote = endpoint_text(remote);
    boost::asio::socket_base::send_buffer_size snd;
    s.get_option(snd, ec);
    if (!ec) o.send_buffer = snd.value();
    boost::asio::socket_base::receive_buffer_size rcv;
    s.get_option(rcv, ec);
    if (!ec) o.receive_buffer = rcv.value();
    ip::tcp::no_delay nd;
    s.get_option(nd, ec);
    if (!ec) o.no_delay = nd.value();
    return o;
}

}  // namespace strata::transport
