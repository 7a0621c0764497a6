#include "openai_client.hpp"

#include <cstdio>
#include <limits>
#include <optional>
#include <string_view>

#include <boost/asio/ip/tcp.hpp>
#include <boost/beast/core.hpp>
#include <boost/beast/http.hpp>

namespace openai {

namespace {

namespace beast = boost::beast;
namespace http = beast::http;
namespace net = boost::asio;
using tcp = net::ip::tcp;
using json = nlohmann::json;

// Far above any answer of the API; a bigger one is refused rather than held in memory.
constexpr uint64_t kMaxBodyBytes = 64ull << 20;
constexpr size_t kMaxEventBytes = 8u << 20;

std::string seconds_text(double s) {
    char buf[32];
    std::snprintf(buf, sizeof buf, "%g", s);
    return buf;
}

// A stream line past kMaxEventBytes: the stream is refused (turned into a ClientError by the caller).
struct EventTooLong {};

// Server-sent events as the HTML standard defines them, the parts the API uses: "data:" lines
// (joined by "\n" within an event), a blank line ending an event, ":" comments and other fields ignored.
class SseReader {
public:
    // False once "[DONE]" came or ON_EVENT asked to stop: nothing more is to be read.
    bool feed(std::string_view bytes, Clock::time_point at, const std::function<bool(const Event&)>& on_event) {
        for (char c : bytes) {
            if (c != '\n') {
                if (line_.size() >= kMaxEventBytes || data_.size() >= kMaxEventBytes) throw EventTooLong{};
                line_.push_back(c);
                continue;
            }
            if (!line_.empty() && line_.back() == '\r') line_.pop_back();
            const bool more = line_.empty() ? dispatch(at, on_event) : (take_field(), true);
            line_.clear();
            if (!more) return false;
        }
        return true;
    }

    // The end of the answer: an event not yet closed by a blank line still counts.
    void finish(Clock::time_point at, const std::function<bool(const Event&)>& on_event) {
        if (!line_.empty()) take_field();
        line_.clear();
        dispatch(at, on_event);
    }

private:
    void take_field() {
        if (line_[0] == ':') return;  // a comment (keep-alive)
        const size_t colon = line_.find(':');
        if (line_.compare(0, colon, "data") != 0) return;
        std::string_view value = colon == std::string::npos ? std::string_view() : std::string_view(line_).substr(colon + 1);
        if (!value.empty() && value[0] == ' ') value.remove_prefix(1);
        if (has_data_) data_.push_back('\n');
        data_.append(value);
        has_data_ = true;
    }

    bool dispatch(Clock::time_point at, const std::function<bool(const Event&)>& on_event) {
        if (!has_data_) return true;
        Event e{std::move(data_), at};
        data_.clear();
        has_data_ = false;
        if (e.data == "[DONE]") return false;
        return on_event(e);
    }

    std::string line_, data_;
    bool has_data_ = false;
};

// One request on its own connection and io_context. Every operation is asynchronous, so the
// tcp_stream's deadline applies to it (Beast's timeouts govern asynchronous operations only),
// and is run to completion here, so the caller sees a synchronous call.
class Exchange {
public:
    Exchange(const Url& url, std::string what, double timeout_s) : url_(url), what_(std::move(what)) {
        if (timeout_s > 0) {
            timeout_s_ = timeout_s;
            deadline_ = Clock::now() + std::chrono::duration_cast<Clock::duration>(std::chrono::duration<double>(timeout_s));
        }
    }

    ~Exchange() {
        beast::error_code ignored;
        stream_.socket().shutdown(tcp::socket::shutdown_both, ignored);
        stream_.socket().close(ignored);
    }

    void connect() {
        tcp::resolver resolver(ioc_);
        beast::error_code ec;
        const auto endpoints = resolver.resolve(url_.host, url_.port, ec);
        if (ec) fail(Failure::connect, "cannot resolve " + url_.host + ": " + ec.message());
        ec = run([&](auto handler) { stream_.async_connect(endpoints, handler); });
        if (ec == beast::error::timeout) fail_timeout();
        if (ec) fail(Failure::connect, "cannot connect to " + url_.host + ":" + url_.port + ": " + ec.message());
    }

    void send(http::request<http::string_body>& req) {
        check(run([&](auto handler) { http::async_write(stream_, req, handler); }), "sending the request");
    }

    template <class Parser>
    void read_header(Parser& p) {
        check(run([&](auto handler) { http::async_read_header(stream_, buffer_, p, handler); }), "reading the answer");
    }

    template <class Parser>
    void read(Parser& p) {
        check(run([&](auto handler) { http::async_read(stream_, buffer_, p, handler); }), "reading the answer");
    }

    // Reads what has arrived into the parser's buffer_body; the number of body bytes it got.
    size_t read_some(http::response_parser<http::buffer_body>& p, char* buf, size_t size) {
        p.get().body().data = buf;
        p.get().body().size = size;
        beast::error_code ec = run([&](auto handler) { http::async_read_some(stream_, buffer_, p, handler); });
        if (ec == http::error::need_buffer) ec = {};
        check(ec, "reading the stream");
        return size - p.get().body().size;
    }

    [[noreturn]] void fail(Failure kind, const std::string& why, int status = 0) const {
        throw ClientError(kind, status, what_ + ": " + why);
    }

private:
    template <class Start>
    beast::error_code run(Start&& start) {
        if (deadline_) stream_.expires_at(*deadline_);
        else stream_.expires_never();
        beast::error_code result;
        start([&result](beast::error_code ec, auto&&) { result = ec; });
        ioc_.restart();
        ioc_.run();
        return result;
    }

    void check(beast::error_code ec, const std::string& during) const {
        if (ec == beast::error::timeout) fail_timeout();
        if (ec) fail(Failure::protocol, "the connection failed while " + during + ": " + ec.message());
    }

    [[noreturn]] void fail_timeout() const {
        fail(Failure::timeout, "no complete answer within the " + seconds_text(timeout_s_) + " s timeout");
    }

    const Url& url_;
    std::string what_;
    double timeout_s_ = 0;
    std::optional<Clock::time_point> deadline_;
    net::io_context ioc_;
    beast::tcp_stream stream_{ioc_};
    beast::flat_buffer buffer_;
};

bool is_ok(unsigned status) { return status >= 200 && status < 300; }

std::string reason_of(unsigned status, beast::string_view reason) {
    return reason.empty() ? std::string(http::obsolete_reason(http::status(status))) : std::string(reason);
}

[[noreturn]] void fail_status(const Exchange& x, unsigned status, const std::string& reason, const std::string& body) {
    x.fail(Failure::http_status, "HTTP " + std::to_string(status) + " " + reason + ": " + error_message(body),
           int(status));
}

}  // namespace

Url parse_url(const std::string& text) {
    auto bad = [&](const std::string& why) -> ClientError {
        return ClientError(Failure::bad_url, 0, "bad server URL '" + text + "': " + why);
    };
    const std::string scheme = "http://";
    if (text.rfind("https://", 0) == 0) throw bad("https is not supported by this client; use http://");
    if (text.rfind(scheme, 0) != 0) throw bad("expected http://HOST[:PORT][/PATH]");
    const std::string rest = text.substr(scheme.size());
    const size_t slash = rest.find('/');
    const std::string authority = rest.substr(0, slash);
    Url u;
    u.path = slash == std::string::npos ? "" : rest.substr(slash);
    std::string port_text;
    if (!authority.empty() && authority[0] == '[') {  // [IPv6]:port
        const size_t close = authority.find(']');
        if (close == std::string::npos) throw bad("unclosed '[' in the host");
        u.host = authority.substr(1, close - 1);
        if (close + 1 < authority.size()) {
            if (authority[close + 1] != ':') throw bad("expected ':' after ']'");
            port_text = authority.substr(close + 2);
        }
    } else {
        const size_t colon = authority.rfind(':');
        u.host = authority.substr(0, colon);
        if (colon != std::string::npos) port_text = authority.substr(colon + 1);
    }
    if (u.host.empty()) throw bad("no host");
    if (port_text.empty()) port_text = "80";
    if (port_text.size() > 5 || port_text.find_first_not_of("0123456789") != std::string::npos ||
        std::stoi(port_text) < 1 || std::stoi(port_text) > 65535)
        throw bad("the port must be a number from 1 to 65535");
    u.port = port_text;
    while (!u.path.empty() && u.path.back() == '/') u.path.pop_back();
    if (u.path.size() >= 3 && u.path.compare(u.path.size() - 3, 3, "/v1") == 0) u.path.resize(u.path.size() - 3);
    return u;
}

std::string error_message(const std::string& body) {
    try {
        const json j = json::parse(body);
        if (j.is_object()) {
            const json* e = j.contains("error") ? &j["error"] : &j;
            if (e->is_string()) return e->get<std::string>();
            if (e->is_object() && e->contains("message") && (*e)["message"].is_string())
                return (*e)["message"].get<std::string>();
        }
    } catch (const json::exception&) {
    }
    if (body.find_first_not_of(" \t\r\n") == std::string::npos) return "(empty body)";
    std::string start = body.substr(0, 300);
    for (char& c : start)
        if (c == '\n' || c == '\r') c = ' ';
    return start + (body.size() > 300 ? "..." : "");
}

Client::Client(const std::string& base_url, std::string api_key, double timeout_s)
    : url_(parse_url(base_url)), api_key_(std::move(api_key)), timeout_s_(timeout_s) {}

std::string Client::url(const std::string& path) const {
    const bool v6 = url_.host.find(':') != std::string::npos;
    return "http://" + (v6 ? "[" + url_.host + "]" : url_.host) + ":" + url_.port + url_.path + path;
}

namespace {

http::request<http::string_body> make_request(const Url& u, const std::string& method, const std::string& target,
                                              const std::string& api_key, const std::string& body, bool stream) {
    const http::verb verb = http::string_to_verb(method);
    if (verb == http::verb::unknown) throw std::invalid_argument("unknown HTTP method " + method);
    http::request<http::string_body> req{verb, target, 11};
    req.set(http::field::host, u.host + ":" + u.port);
    req.set(http::field::user_agent, "strata-openai-client");
    req.set(http::field::accept, stream ? "text/event-stream" : "application/json");
    if (!api_key.empty()) req.set(http::field::authorization, "Bearer " + api_key);
    if (verb != http::verb::get) {
        req.set(http::field::content_type, "application/json");
        req.body() = body;
    }
    req.keep_alive(false);
    req.prepare_payload();
    return req;
}

}  // namespace

Response Client::request(const std::string& method, const std::string& path, const std::string& body,
                         double timeout_s) const {
    Exchange x(url_, method + " " + url(path), timeout_s < 0 ? timeout_s_ : timeout_s);
    auto req = make_request(url_, method, url_.path + path, api_key_, body, false);
    x.connect();
    x.send(req);
    http::response_parser<http::string_body> p;
    p.body_limit(kMaxBodyBytes);
    x.read(p);
    Response r;
    r.status = int(p.get().result_int());
    r.reason = reason_of(p.get().result_int(), p.get().reason());
    r.body = std::move(p.get().body());
    return r;
}

std::string Client::get_text(const std::string& path, double timeout_s) const {
    Response r = request("GET", path, "", timeout_s);
    if (!is_ok(unsigned(r.status)))
        throw ClientError(Failure::http_status, r.status,
                          "GET " + url(path) + ": HTTP " + std::to_string(r.status) + " " + r.reason + ": " +
                              error_message(r.body));
    return r.body;
}

namespace {

json parse_answer(const std::string& what, const Response& r) {
    if (!is_ok(unsigned(r.status)))
        throw ClientError(Failure::http_status, r.status,
                          what + ": HTTP " + std::to_string(r.status) + " " + r.reason + ": " + error_message(r.body));
    try {
        return json::parse(r.body);
    } catch (const json::exception& e) {
        throw ClientError(Failure::protocol, 0, what + ": the answer is not JSON (" + e.what() + ")");
    }
}

}  // namespace

json Client::get_json(const std::string& path, double timeout_s) const {
    return parse_answer("GET " + url(path), request("GET", path, "", timeout_s));
}

json Client::post_json(const std::string& path, const json& body, double timeout_s) const {
    return parse_answer("POST " + url(path),
                        request("POST", path, body.dump(-1, ' ', false, json::error_handler_t::replace), timeout_s));
}

void Client::post_stream(const std::string& path, const json& body, const std::function<bool(const Event&)>& on_event,
                         double timeout_s) const {
    Exchange x(url_, "POST " + url(path), timeout_s < 0 ? timeout_s_ : timeout_s);
    auto req = make_request(url_, "POST", url_.path + path, api_key_,
                            body.dump(-1, ' ', false, json::error_handler_t::replace), true);
    x.connect();
    x.send(req);
    http::response_parser<http::buffer_body> p;
    // A stream is as long as the generation; each event is bounded instead. (Not boost::none:
    // Boost 1.74's parser compares a Content-Length against an empty limit as over it.)
    p.body_limit(std::numeric_limits<std::uint64_t>::max());
    x.read_header(p);
    char buf[16384];
    const unsigned status = p.get().result_int();
    if (!is_ok(status)) {
        std::string text;
        while (!p.is_done() && text.size() < (1u << 20)) text.append(buf, x.read_some(p, buf, sizeof buf));
        fail_status(x, status, reason_of(status, p.get().reason()), text);
    }
    const std::string type(p.get()[http::field::content_type]);
    if (type.rfind("application/json", 0) == 0)
        x.fail(Failure::protocol, "the server answered with one JSON body (Content-Type " + type + "), not a stream");
    SseReader sse;
    try {
        while (!p.is_done()) {
            const size_t n = x.read_some(p, buf, sizeof buf);
            if (!sse.feed(std::string_view(buf, n), Clock::now(), on_event)) return;  // [DONE], or the caller stopped
        }
        sse.finish(Clock::now(), on_event);
    } catch (const EventTooLong&) {
        x.fail(Failure::protocol, "an event of the stream is longer than " + std::to_string(kMaxEventBytes) + " bytes");
    }
}

}  // namespace openai
