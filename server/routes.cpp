// routes.cpp
#include "routes.hpp"

#include <cstdio>
#include <string>

#include "api_error.hpp"

namespace server {
namespace {

struct Route {
    const char* path;
    http::verb method;
    RouteHandler handler;
    bool needs_key;
};

const Route kRoutes[] = {
    {"/v1/chat/completions", http::verb::post, chat_completions, true},
    {"/v1/completions", http::verb::post, completions, true},
    {"/v1/models", http::verb::get, list_models, true},
    {"/health", http::verb::get, health, false},  // load balancers ask without a key
    {"/metrics", http::verb::get, metrics_text, true},
    {"/tokenize", http::verb::post, tokenize, true},
    {"/detokenize", http::verb::post, detokenize, true},
};

bool accepts_key(App& app, const Request& request) {
    const auto header = request[http::field::authorization];
    return app.auth.accepts(std::string_view(header.data(), header.size()));
}

}  // namespace

Response json_response(int status, const nlohmann::json& body) {
    Response res{http::status(status), 11};
    res.set(http::field::content_type, "application/json");
    res.body() = json_text(body);
    return res;
}

net::awaitable<int> send_error(Exchange& exchange, ApiError error) {
    Response res = json_response(error.status, error_body(error));
    if (error.status == 401) res.set(http::field::www_authenticate, "Bearer");
    if (error.status == 503) res.set(http::field::retry_after, "1");
    co_await exchange.respond(std::move(res));
    co_return error.status;
}

net::awaitable<void> handle_request(App& app, Request& request, Exchange& exchange) {
    const std::string_view target(request.target().data(), request.target().size());
    const std::string path(target.substr(0, target.find('?')));
    const Route* route = nullptr;
    bool path_known = false;
    for (const auto& r : kRoutes) {
        if (path != r.path) continue;
        path_known = true;
        if (request.method() == r.method) route = &r;
    }
    int status = 500;
    if (!route && !path_known) {
        status = co_await send_error(exchange, ApiError(404, "no route " + path, "not_found_error", "", "not_found"));
    } else if (!route) {
        Response res = json_response(
            405, error_body(ApiError(405, "method " + std::string(request.method_string()) + " is not allowed on " + path,
                                     "invalid_request_error", "", "method_not_allowed")));
        for (const auto& r : kRoutes)
            if (path == r.path) res.set(http::field::allow, http::to_string(r.method));
        co_await exchange.respond(std::move(res));
        status = 405;
    } else if (route->needs_key && !accepts_key(app, request)) {
        status = co_await send_error(exchange, ApiError(401, "a valid API key is needed: Authorization: Bearer KEY",
                                                        "authentication_error", "", "invalid_api_key"));
    } else {
        bool failed = false;
        std::string why;
        try {
            status = co_await route->handler(app, request, exchange);
        } catch (const std::exception& e) {
            failed = true;
            why = e.what();
        }
        if (failed) {
            std::fprintf(stderr, "strata-server: %s failed: %s\n", path.c_str(), why.c_str());
            if (exchange.streaming()) exchange.close_after();
            else status = co_await send_error(exchange, ApiError(500, "internal error: " + why, "server_error"));
        }
    }
    app.metrics.count_request(path_known ? path : "other", status);
}

}  // namespace server
