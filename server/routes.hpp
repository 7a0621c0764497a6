// routes.hpp: dispatch by path and method (404 for an unknown path, 405 for a known path with
// another method), the API key check, and the per-endpoint request counts of /metrics.
#pragma once

#include "app.hpp"
#include "http_server.hpp"

namespace server {

// A handler answers through the exchange and returns the HTTP status it answered with.
using RouteHandler = net::awaitable<int> (*)(App&, Request&, Exchange&);

net::awaitable<void> handle_request(App& app, Request& request, Exchange& exchange);

// The handlers, by file: generation_routes.cpp and info_routes.cpp.
net::awaitable<int> chat_completions(App& app, Request& request, Exchange& exchange);
net::awaitable<int> completions(App& app, Request& request, Exchange& exchange);
net::awaitable<int> health(App& app, Request& request, Exchange& exchange);
net::awaitable<int> list_models(App& app, Request& request, Exchange& exchange);
net::awaitable<int> metrics_text(App& app, Request& request, Exchange& exchange);
net::awaitable<int> tokenize(App& app, Request& request, Exchange& exchange);
net::awaitable<int> detokenize(App& app, Request& request, Exchange& exchange);

// A JSON response with this status.
Response json_response(int status, const nlohmann::json& body);
// Sends the error and returns its status.
net::awaitable<int> send_error(Exchange& exchange, struct ApiError error);

}  // namespace server
