// openai_client.hpp: a small client of the OpenAI HTTP API for the example programs (strata-eval
// --server, strata-bench server). Boost.Beast over plain TCP, one connection per request, each
// request under one deadline (connect, send and the whole answer together).
//
// Every failure is a ClientError whose message names the method, the URL and what failed:
//   "POST http://127.0.0.1:8080/v1/completions: cannot connect to 127.0.0.1:8080: Connection refused"
//   "POST http://.../v1/completions: no complete answer within the 5 s timeout"
//   "POST http://.../v1/completions: HTTP 500 Internal Server Error: <the server's error message>"
#pragma once

#include <chrono>
#include <functional>
#include <stdexcept>
#include <string>

#include <nlohmann/json.hpp>

namespace openai {

using Clock = std::chrono::steady_clock;

enum class Failure {
    bad_url,      // the URL is not http://HOST[:PORT][/PATH]
    connect,      // name resolution or the TCP connection failed
    timeout,      // the deadline passed before the answer was complete
    http_status,  // the server answered, with a status outside 2xx
    protocol,     // the answer is not what the API promises (not HTTP, not JSON, a broken stream)
};

struct ClientError : std::runtime_error {
    ClientError(Failure kind, int status, const std::string& message)
        : std::runtime_error(message), kind(kind), status(status) {}
    Failure kind;
    int status;  // the HTTP status for Failure::http_status, else 0
};

// A parsed http:// base URL. PATH is the prefix every API path goes under ("" or "/prefix"); a
// trailing "/v1" is dropped so that "http://h:p" and "http://h:p/v1" (the openai package's
// base_url) mean the same server.
struct Url {
    std::string host, port, path;
};
Url parse_url(const std::string& text);  // throws ClientError(Failure::bad_url)

struct Response {
    int status = 0;
    std::string reason;
    std::string body;
};

// One server-sent event (the data lines of one event, joined by "\n") and when its last byte arrived.
struct Event {
    std::string data;
    Clock::time_point arrived;
};

class Client {
public:
    // TIMEOUT_S: the deadline of a request that names none (0: no deadline).
    explicit Client(const std::string& base_url, std::string api_key = "", double timeout_s = 600);

    // "http://HOST:PORT/PREFIX" + path, as messages print it.
    std::string url(const std::string& path) const;
    double timeout_s() const { return timeout_s_; }

    // The request as sent and the answer as received, whatever its status. TIMEOUT_S < 0: the client's.
    Response request(const std::string& method, const std::string& path, const std::string& body,
                     double timeout_s = -1) const;

    // GET PATH, its body; ClientError for a status outside 2xx (with the server's error message).
    std::string get_text(const std::string& path, double timeout_s = -1) const;
    // GET or POST with a JSON answer, parsed; ClientError for a status outside 2xx or a body that is not JSON.
    nlohmann::json get_json(const std::string& path, double timeout_s = -1) const;
    nlohmann::json post_json(const std::string& path, const nlohmann::json& body, double timeout_s = -1) const;

    // POST PATH with BODY (which should ask for "stream": true) and read the answer as server-sent
    // events: ON_EVENT gets each event's data as it arrives, up to "[DONE]" (not passed on) or the
    // end of the answer; returning false from it closes the connection (the server sees the
    // client leave). A status outside 2xx is a ClientError before any event.
    void post_stream(const std::string& path, const nlohmann::json& body,
                     const std::function<bool(const Event&)>& on_event, double timeout_s = -1) const;

private:
    Url url_;
    std::string api_key_;
    double timeout_s_;
};

// The message of an OpenAI-style error body ({"error": {"message": ...}}), else the start of the body.
std::string error_message(const std::string& body);

}  // namespace openai
