// generation_routes.cpp: POST /v1/chat/completions and POST /v1/completions. A request is
// parsed and checked, its prompt tokenized and measured against the slot's context, then queued
// as a Job; the connection waits for the job's events (streamed as SSE, or gathered into one
// answer), watching for the client leaving and for the request's deadline.
//
// Deadline (--timeout-s): the request ends there. Not streamed: 504 with an OpenAI-style error
// (the partial text is not sent: a caller asked for a whole answer). Streamed: an error event
// {"error": {... "code": "timeout"}} after the text sent so far, then [DONE] (or a 504 when
// nothing had been sent yet).
#include <random>

#include "api_error.hpp"
#include "openai_request.hpp"
#include "openai_response.hpp"
#include "routes.hpp"
#include "sse.hpp"

namespace server {
namespace {

uint64_t fresh_seed() {
    static std::mutex mutex;
    static std::mt19937_64 rng{std::random_device{}()};
    std::lock_guard lock(mutex);
    return rng();
}

// The job's input from the request; ApiError for a prompt or max_tokens that does not fit.
JobInput prepare(App& app, const CompletionRequest& r) {
    JobInput in;
    const std::string param = r.endpoint == Endpoint::chat ? "messages" : "prompt";
    const std::string prompt = r.endpoint == Endpoint::chat ? app.host.render_chat(r.messages.dump()) : r.prompt;
    in.prompt = app.host.tokenize(prompt, true, true);
    if (in.prompt.empty()) throw invalid_field(param, "gives no tokens");
    const int64_t n_ctx = app.host.n_ctx();
    const int64_t n_prompt = int64_t(in.prompt.size());
    if (n_prompt >= n_ctx)
        throw ApiError(400,
                       "the prompt is " + std::to_string(n_prompt) + " tokens; a slot's context holds " +
                           std::to_string(n_ctx) + " tokens, the prompt and at least one generated token",
                       "invalid_request_error", param, "context_length_exceeded");
    const int64_t room = n_ctx - n_prompt;
    const int64_t limit = app.options.max_tokens_limit;
    const char* max_name = "max_tokens";
    if (r.max_tokens) {
        if (limit > 0 && *r.max_tokens > limit)
            throw ApiError(400,
                           "max_tokens is " + std::to_string(*r.max_tokens) + ", over this server's limit of " +
                               std::to_string(limit),
                           "invalid_request_error", max_name, "max_tokens_over_limit");
        if (*r.max_tokens > room)
            throw ApiError(400,
                           "the prompt (" + std::to_string(n_prompt) + " tokens) and max_tokens (" +
                               std::to_string(*r.max_tokens) + ") exceed a slot's context of " + std::to_string(n_ctx) +
                               " tokens",
                           "invalid_request_error", max_name, "context_length_exceeded");
        in.max_tokens = int32_t(*r.max_tokens);
    } else {
        in.max_tokens = int32_t(limit > 0 ? std::min(room, limit) : room);
    }
    in.stop = r.stop;
    in.sampling = r.sampling;
    in.seed = r.sampling.seed ? *r.sampling.seed : fresh_seed();
    in.logprobs = r.logprobs;
    in.top_logprobs = r.top_logprobs;
    if (app.options.timeout_s > 0)
        in.deadline = Clock::now() + std::chrono::duration_cast<Clock::duration>(
                                         std::chrono::duration<double>(app.options.timeout_s));
    return in;
}

struct InFlight {
    explicit InFlight(std::atomic<int64_t>& n) : count(n) { ++count; }
    ~InFlight() { --count; }
    std::atomic<int64_t>& count;
};

net::awaitable<int> generate(App& app, Request& request, Exchange& exchange, Endpoint endpoint) {
    if (!app.host.loaded())
        co_return co_await send_error(exchange, ApiError(503, "the model is loading", "server_error", "", "model_loading"));
    if (app.draining)
        co_return co_await send_error(exchange, ApiError(503, "the server is shutting down", "server_error", "", "shutting_down"));
    CompletionRequest r;
    JobInput input;
    std::optional<ApiError> error;
    try {
        const nlohmann::json body = parse_json_object(request.body());
        r = endpoint == Endpoint::chat ? parse_chat_request(body) : parse_completion_request(body);
        input = prepare(app, r);
    } catch (const ApiError& e) {
        error = e;
    }
    if (error) co_return co_await send_error(exchange, *error);

    InFlight in_flight(app.in_flight);
    const Clock::time_point deadline = input.deadline;
    auto job = std::make_shared<Job>(std::move(input));
    auto wake = std::make_shared<net::steady_timer>(exchange.executor());
    auto executor = exchange.executor();
    job->set_notifier([wake, executor] { net::post(executor, [wake] { wake->cancel(); }); });
    if (!app.queue.push(job))
        co_return co_await send_error(exchange, ApiError(503, "every slot is busy and the queue is full: retry later",
                                                         "server_error", "", "queue_full"));
    app.metrics.add_prompt_tokens(int64_t(job->input.prompt.size()));
    JobQueue& queue = app.queue;
    exchange.watch_disconnect([job, &queue] {
        job->cancel(Job::Cancel::client_gone);
        queue.remove(job);
    });

    const ResponseHeader header = new_response_header(endpoint, r.model.empty() ? app.host.model_id() : r.model);
    SseWriter sse(exchange);
    bool role_sent = false;
    std::string text;
    std::vector<TokenLogprob> logprobs;
    size_t token_offset = 0;
    std::optional<JobOutcome> outcome;
    bool timed_out = false;
    for (;;) {
        Job::Drained d = job->drain();
        for (auto& e : d.events) {
            if (r.stream) {
                ChunkParts parts;
                parts.role = endpoint == Endpoint::chat && !role_sent;
                role_sent = true;
                parts.text = std::move(e.text);
                if (r.logprobs) parts.logprobs = logprobs_json(endpoint, e.logprobs, app.host, token_offset);
                if (!co_await sse.send(chunk_json(header, parts))) break;
            } else {
                text += e.text;
                logprobs.insert(logprobs.end(), e.logprobs.begin(), e.logprobs.end());
            }
        }
        if (exchange.client_gone()) break;
        if (d.outcome) {
            outcome = std::move(d.outcome);
            break;
        }
        if (Clock::now() >= deadline) {
            timed_out = true;
            break;
        }
        wake->expires_at(std::min(deadline, Clock::now() + std::chrono::seconds(1)));
        beast::error_code ec;
        co_await wake->async_wait(net::redirect_error(net::use_awaitable, ec));
    }
    job->set_notifier(nullptr);
    exchange.stop_watching();

    if (exchange.client_gone()) {
        job->cancel(Job::Cancel::client_gone);
        queue.remove(job);
        exchange.close_after();
        co_return 499;  // nginx's "client closed request", for the request counts
    }
    if (timed_out || !outcome->ok) {
        ApiError failure = timed_out
            ? ApiError(504, "the request ran past the server's deadline of " + std::to_string(app.options.timeout_s) + " s",
                       "timeout_error", "", "timeout")
            : ApiError(outcome->error_status, outcome->error_message, outcome->error_type);
        if (timed_out) {
            job->cancel(Job::Cancel::deadline);
            queue.remove(job);
        }
        if (!sse.started()) co_return co_await send_error(exchange, failure);
        co_await sse.send(error_body(failure));
        co_await sse.done();
        co_return failure.status;
    }
    if (r.stream) {
        ChunkParts last;
        last.role = endpoint == Endpoint::chat && !role_sent;
        last.finish_reason = finish_reason_name(outcome->reason);
        if (co_await sse.send(chunk_json(header, last)) && r.include_usage)
            co_await sse.send(usage_chunk_json(header, outcome->prompt_tokens, outcome->completion_tokens));
        co_await sse.done();
        co_return 200;
    }
    nlohmann::json lp = r.logprobs ? logprobs_json(endpoint, logprobs, app.host, token_offset) : nlohmann::json(nullptr);
    co_await exchange.respond(json_response(200, completion_json(header, text, *outcome, lp)));
    co_return 200;
}

}  // namespace

net::awaitable<int> chat_completions(App& app, Request& request, Exchange& exchange) {
    co_return co_await generate(app, request, exchange, Endpoint::chat);
}

net::awaitable<int> completions(App& app, Request& request, Exchange& exchange) {
    co_return co_await generate(app, request, exchange, Endpoint::completion);
}

}  // namespace server
