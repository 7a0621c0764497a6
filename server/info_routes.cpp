// info_routes.cpp: GET /health, GET /v1/models, GET /metrics, POST /tokenize, POST /detokenize.
#include <nlohmann/json.hpp>

#include "api_error.hpp"
#include "openai_request.hpp"
#include "routes.hpp"

namespace server {
namespace {

ApiError loading_error() { return ApiError(503, "the model is loading", "server_error", "", "model_loading"); }

// JSON bodies are built outside the coroutines: GCC 12 miscompiles braced lists of string
// literals inside a coroutine ("array used as initializer").
nlohmann::json health_body(bool ok) { return {{"status", ok ? "ok" : "loading"}}; }

nlohmann::json models_body(ModelHost& host) {
    nlohmann::json model = {{"id", host.model_id()},
                            {"object", "model"},
                            {"created", 0},
                            {"owned_by", "strata"},
                            {"meta", nlohmann::json::parse(host.settings_json())}};
    return {{"object", "list"}, {"data", nlohmann::json::array({model})}};
}

nlohmann::json one_member(const char* name, nlohmann::json value) {
    nlohmann::json out = nlohmann::json::object();
    out[name] = std::move(value);
    return out;
}

}  // namespace

net::awaitable<int> health(App& app, Request&, Exchange& exchange) {
    const bool ok = app.host.loaded();
    Response res = json_response(ok ? 200 : 503, health_body(ok));
    if (!ok) res.set(http::field::retry_after, "1");
    co_await exchange.respond(std::move(res));
    co_return ok ? 200 : 503;
}

net::awaitable<int> list_models(App& app, Request&, Exchange& exchange) {
    if (!app.host.loaded()) co_return co_await send_error(exchange, loading_error());
    co_await exchange.respond(json_response(200, models_body(app.host)));
    co_return 200;
}

net::awaitable<int> metrics_text(App& app, Request&, Exchange& exchange) {
    const bool loaded = app.host.loaded();
    const EngineGauges gauges = loaded ? app.host.engine().gauges() : EngineGauges{};
    Response res{http::status::ok, 11};
    res.set(http::field::content_type, "text/plain; version=0.0.4; charset=utf-8");
    res.body() = app.metrics.render(gauges, app.queue.size(), app.in_flight.load(), loaded);
    co_await exchange.respond(std::move(res));
    co_return 200;
}

net::awaitable<int> tokenize(App& app, Request& request, Exchange& exchange) {
    if (!app.host.loaded()) co_return co_await send_error(exchange, loading_error());
    nlohmann::json tokens;
    std::optional<ApiError> error;
    try {
        const TokenizeRequest r = parse_tokenize_request(parse_json_object(request.body()));
        tokens = app.host.tokenize(r.content, r.add_special, r.parse_special);
    } catch (const ApiError& e) {
        error = e;
    }
    if (error) co_return co_await send_error(exchange, *error);
    co_await exchange.respond(json_response(200, one_member("tokens", std::move(tokens))));
    co_return 200;
}

net::awaitable<int> detokenize(App& app, Request& request, Exchange& exchange) {
    if (!app.host.loaded()) co_return co_await send_error(exchange, loading_error());
    std::string content;
    std::optional<ApiError> error;
    try {
        content = app.host.detokenize(parse_detokenize_request(parse_json_object(request.body())));
    } catch (const ApiError& e) {
        error = e;
    }
    if (error) co_return co_await send_error(exchange, *error);
    co_await exchange.respond(json_response(200, one_member("content", std::move(content))));
    co_return 200;
}

}  // namespace server
