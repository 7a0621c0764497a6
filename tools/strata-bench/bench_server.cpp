// strata-bench server URL [--api-key K] [--model NAME] [--streams 1,2,4,8] [--tokens N] [--prompt TEXT]
//                         [--timeout-s S] [--json OUT] [--md OUT]
//
// Serving throughput of an OpenAI-compatible server (strata-server, llama-server, ...), measured
// from the client side: for each concurrency C, C threads each stream one completion
// (/v1/completions, stream true, temperature 0, max_tokens N, "stop": [] so that only max_tokens
// or the model's end of text ends it), all sent at once. Per concurrency:
//   aggregate tok/s  completion tokens of all streams / (last token of any stream - first request sent)
//   TTFT             first text event - request sent, per stream
//   ITL              the gaps between consecutive text events within a stream
// with p50 and p99 (linear between ranks). Completion tokens are the server's "usage" (asked
// for with stream_options.include_usage) where it sends one, else the text events counted. One
// short untimed stream warms the server first. The server's GET /v1/models answer and its
// GET /metrics text (after the runs) are kept in the JSON.
#include <algorithm>
#include <chrono>
#include <cstdio>
#include <cstdlib>
#include <fstream>
#include <latch>
#include <sstream>
#include <string>
#include <thread>
#include <vector>

#include <nlohmann/json.hpp>

#include "common/cli_args.hpp"
#include "common/openai_client.hpp"

namespace {

using json = nlohmann::ordered_json;
using Clock = openai::Clock;

constexpr const char* kUsage =
    "usage: strata-bench server URL [--api-key K] [--model NAME] [--streams 1,2,4,8] [--tokens N]\n"
    "                           [--prompt TEXT] [--timeout-s S] [--json OUT] [--md OUT]\n"
    "For each concurrency in --streams, that many clients each stream one /v1/completions answer\n"
    "(temperature 0, max_tokens --tokens, default 128) at once; reports aggregate decode tok/s, time\n"
    "to first token and inter-token latency p50/p99, the server's /v1/models and /metrics.\n"
    "--api-key (else $OPENAI_API_KEY) is sent as a Bearer token; --timeout-s (default 600) is the\n"
    "deadline of each stream. Exit status 1 when any stream failed (the outputs are still written).\n";

constexpr const char* kDefaultPrompt =
    "The following is a long, detailed history of the lighthouse on the northern cape, told year by year.\n\n"
    "In the first year,";

struct Options {
    std::string url, api_key, model, prompt = kDefaultPrompt, json_out, md_out;
    std::vector<int> streams = {1, 2, 4, 8};
    int64_t tokens = 128;
    double timeout_s = 600;
};

struct StreamResult {
    Clock::time_point sent;
    std::vector<Clock::time_point> text_events;  // when each event carrying text arrived
    int64_t usage_tokens = -1;                   // the server's usage.completion_tokens, -1: none sent
    std::string finish_reason, error;

    int64_t tokens() const { return usage_tokens >= 0 ? usage_tokens : int64_t(text_events.size()); }
};

double seconds(Clock::duration d) { return std::chrono::duration<double>(d).count(); }

double percentile(std::vector<double> v, double p) {
    if (v.empty()) return 0;
    std::sort(v.begin(), v.end());
    const double rank = p / 100 * double(v.size() - 1);
    const size_t lo = size_t(rank);
    const size_t hi = std::min(lo + 1, v.size() - 1);
    return v[lo] + (v[hi] - v[lo]) * (rank - double(lo));
}

json summary(const std::vector<double>& v) {
    if (v.empty()) return {{"n", 0}, {"p50", nullptr}, {"p99", nullptr}};
    return {{"n", v.size()}, {"p50", percentile(v, 50)}, {"p99", percentile(v, 99)}};
}

std::vector<int> parse_streams(const std::string& text) {
    std::vector<int> out;
    std::stringstream ss(text);
    std::string item;
    while (std::getline(ss, item, ',')) out.push_back(int(cli::number("--streams", item, 1, 1024)));
    if (out.empty()) throw cli::usage_error("--streams needs a list such as 1,2,4,8");
    return out;
}

Options parse_args(int argc, char** argv) {
    Options o;
    for (int i = 1; i < argc; ++i) {
        const std::string a = argv[i];
        auto value = [&] { return cli::value(argc, argv, i); };
        if (a == "-h" || a == "--help") cli::help(kUsage);
        else if (a == "--api-key") o.api_key = value();
        else if (a == "--model") o.model = value();
        else if (a == "--streams") o.streams = parse_streams(value());
        else if (a == "--tokens") o.tokens = int64_t(cli::number(a, value(), 1, 1 << 20));
        else if (a == "--prompt") o.prompt = value();
        else if (a == "--timeout-s") o.timeout_s = cli::number(a, value(), 0, 1e7);
        else if (a == "--json") o.json_out = value();
        else if (a == "--md") o.md_out = value();
        else if (!a.empty() && a[0] != '-' && o.url.empty()) o.url = a;
        else throw cli::usage_error("unknown argument '" + a + "'");
    }
    if (o.url.empty()) throw cli::usage_error("needs the server's URL (http://HOST:PORT)");
    if (o.prompt.empty()) throw cli::usage_error("--prompt must not be empty");
    if (o.api_key.empty())
        if (const char* k = std::getenv("OPENAI_API_KEY")) o.api_key = k;
    try {
        openai::parse_url(o.url);
    } catch (const openai::ClientError& e) {
        throw cli::usage_error(e.what());
    }
    return o;
}

// One stream's events into R; an error event or a broken answer ends it with R.error set.
void read_event(const openai::Event& e, StreamResult& r) {
    nlohmann::json j;
    try {
        j = nlohmann::json::parse(e.data);
    } catch (const nlohmann::json::exception&) {
        throw std::runtime_error("an event is not JSON: " + e.data.substr(0, 120));
    }
    if (!j.is_object()) throw std::runtime_error("an event is not a JSON object");
    if (j.contains("error")) throw std::runtime_error("the stream carried an error: " + openai::error_message(e.data));
    if (j.contains("usage") && j["usage"].is_object() && j["usage"].contains("completion_tokens") &&
        j["usage"]["completion_tokens"].is_number_integer())
        r.usage_tokens = j["usage"]["completion_tokens"].get<int64_t>();
    if (!j.contains("choices") || !j["choices"].is_array() || j["choices"].empty()) return;
    const nlohmann::json& c = j["choices"][0];
    if (!c.is_object()) return;
    if (c.contains("text") && c["text"].is_string() && !c["text"].get<std::string>().empty())
        r.text_events.push_back(e.arrived);
    if (c.contains("finish_reason") && c["finish_reason"].is_string()) r.finish_reason = c["finish_reason"].get<std::string>();
}

StreamResult stream_one(const openai::Client& client, const nlohmann::json& body, std::latch* go) {
    StreamResult r;
    if (go) go->arrive_and_wait();
    r.sent = Clock::now();
    try {
        client.post_stream("/v1/completions", body, [&](const openai::Event& e) {
            read_event(e, r);
            return true;
        });
        if (r.text_events.empty() && r.error.empty()) r.error = "the stream ended without any text";
    } catch (const std::exception& e) {
        r.error = e.what();
    }
    return r;
}

json run_concurrency(const openai::Client& client, const nlohmann::json& body, int streams) {
    std::vector<StreamResult> results(static_cast<size_t>(streams));
    std::latch go(streams);
    {
        std::vector<std::jthread> threads;
        for (int k = 0; k < streams; ++k)
            threads.emplace_back([&, k] { results[size_t(k)] = stream_one(client, body, &go); });
    }
    Clock::time_point first_sent = results[0].sent, last_token = results[0].sent;
    int64_t tokens = 0;
    int failed = 0;
    bool any_usage = false, any_counted = false;
    std::vector<double> ttft, itl;
    json per_stream = json::array(), errors = json::array();
    for (const StreamResult& r : results) {
        first_sent = std::min(first_sent, r.sent);
        if (!r.error.empty()) {
            ++failed;
            errors.push_back(r.error);
        }
        if (!r.text_events.empty()) {
            ttft.push_back(seconds(r.text_events.front() - r.sent));
            last_token = std::max(last_token, r.text_events.back());
            for (size_t i = 1; i < r.text_events.size(); ++i) itl.push_back(seconds(r.text_events[i] - r.text_events[i - 1]));
        }
        tokens += r.tokens();
        if (r.usage_tokens >= 0) any_usage = true;
        else any_counted = true;
        per_stream.push_back({{"ttft_s", r.text_events.empty() ? json(nullptr) : json(seconds(r.text_events.front() - r.sent))},
                              {"completion_tokens", r.tokens()},
                              {"text_events", r.text_events.size()},
                              {"finish_reason", r.finish_reason},
                              {"wall_s", r.text_events.empty() ? 0.0 : seconds(r.text_events.back() - r.sent)},
                              {"error", r.error}});
    }
    const double wall = seconds(last_token - first_sent);
    // Decode while every stream decodes: the text events that arrive after the last stream's
    // first token and before the first stream's last one, over that window (the aggregate above
    // also holds every prompt's prefill, which a slow prefill dominates).
    json steady = nullptr;
    if (failed == 0 && !results.empty()) {
        Clock::time_point from = results[0].text_events.front(), to = results[0].text_events.back();
        for (const StreamResult& r : results) {
            from = std::max(from, r.text_events.front());
            to = std::min(to, r.text_events.back());
        }
        int64_t inside = 0;
        for (const StreamResult& r : results)
            for (const auto& t : r.text_events) inside += t > from && t <= to ? 1 : 0;
        if (to > from && inside > 0) steady = {{"tok_s", double(inside) / seconds(to - from)},
                                               {"window_s", seconds(to - from)},
                                               {"text_events", inside}};
    }
    return {{"streams", streams},
            {"wall_s", wall},
            {"completion_tokens", tokens},
            {"token_count_source", any_usage && any_counted ? "mixed" : any_usage ? "usage" : "text events"},
            {"aggregate_tok_s", wall > 0 ? json(double(tokens) / wall) : json(nullptr)},
            {"steady_decode", steady},
            {"ttft_s", summary(ttft)},
            {"itl_s", summary(itl)},
            {"failed", failed},
            {"errors", errors},
            {"per_stream", per_stream}};
}

// V (a number or null) times SCALE with DECIMALS decimals, "-" for null.
std::string fixed(const json& v, double scale = 1, int decimals = 1) {
    if (!v.is_number()) return "-";
    char buf[32];
    std::snprintf(buf, sizeof buf, "%.*f", decimals, v.get<double>() * scale);
    return buf;
}

std::string markdown(const json& report) {
    std::string md = "# strata-bench server " + report["url"].get<std::string>() + "\n\nModel " +
                     report["model"].get<std::string>() + ", /v1/completions streamed, temperature 0, max_tokens " +
                     report["max_tokens"].dump() + ".\n\n";
    md += "Aggregate: completion tokens over the wall time from the first request to the last token (prefill "
          "included). Steady decode: text events while every stream decodes, over that window.\n\n";
    md += "| streams | aggregate tok/s | steady decode tok/s | completion tokens | wall s | TTFT p50 ms | TTFT p99 ms | ITL p50 ms | ITL p99 ms | failed |\n"
          "|---|---|---|---|---|---|---|---|---|---|\n";
    for (const json& r : report["runs"]) {
        const json steady_tok_s = r["steady_decode"].is_object() ? r["steady_decode"]["tok_s"] : json(nullptr);
        md += "| " + r["streams"].dump() + " | " + fixed(r["aggregate_tok_s"]) + " | " + fixed(steady_tok_s) + " | " +
              r["completion_tokens"].dump() +
              " | " + fixed(r["wall_s"], 1, 3) + " | " + fixed(r["ttft_s"]["p50"], 1e3) + " | " + fixed(r["ttft_s"]["p99"], 1e3) +
              " | " + fixed(r["itl_s"]["p50"], 1e3) + " | " + fixed(r["itl_s"]["p99"], 1e3) + " | " + r["failed"].dump() + " |\n";
    }
    for (const json& r : report["runs"])
        for (const json& e : r["errors"]) md += "\n- " + r["streams"].dump() + " streams: " + e.get<std::string>();
    md += "\n\nGET /v1/models:\n\n```json\n" + report["server"]["models"].dump(2) + "\n```\n\nGET /metrics after the runs:\n\n```\n" +
          (report["server"]["metrics"].is_string() ? report["server"]["metrics"].get<std::string>()
                                                   : report["server"]["metrics_error"].get<std::string>()) +
          "\n```\n";
    return md;
}

void write(const std::string& path, const std::string& text) {
    std::ofstream f(path, std::ios::binary);
    f << text;
    f.close();
    if (!f) throw std::runtime_error("cannot write " + path);
}

}  // namespace

int bench_server_main(int argc, char** argv) {
    const Options o = cli::parse_or_exit("strata-bench server", kUsage, [&] { return parse_args(argc, argv); });
    try {
        const openai::Client client(o.url, o.api_key, o.timeout_s);
        const nlohmann::json models = client.get_json("/v1/models");
        std::string model = o.model;
        if (model.empty() && models.contains("data") && models["data"].is_array() && !models["data"].empty() &&
            models["data"][0].is_object() && models["data"][0].contains("id") && models["data"][0]["id"].is_string())
            model = models["data"][0]["id"].get<std::string>();
        if (model.empty()) throw std::runtime_error("GET " + client.url("/v1/models") + " lists no model; name one with --model");
        nlohmann::json body = {{"model", model},        {"prompt", o.prompt},
                               {"max_tokens", o.tokens}, {"temperature", 0},
                               {"stream", true},        {"stream_options", {{"include_usage", true}}},
                               {"stop", nlohmann::json::array()}};
        nlohmann::json warm = body;
        warm["max_tokens"] = 4;
        const StreamResult w = stream_one(client, warm, nullptr);
        if (!w.error.empty()) throw std::runtime_error("the warm-up stream failed: " + w.error);

        json runs = json::array();
        int failed = 0;
        for (int c : o.streams) {
            runs.push_back(run_concurrency(client, body, c));
            failed += runs.back()["failed"].get<int>();
            const json& steady = runs.back()["steady_decode"];
            std::fprintf(stderr, "strata-bench server: %d stream(s): %s tok/s aggregate, %s tok/s steady decode, %d failed\n",
                         c, fixed(runs.back()["aggregate_tok_s"]).c_str(),
                         fixed(steady.is_object() ? steady["tok_s"] : json(nullptr)).c_str(), runs.back()["failed"].get<int>());
        }
        json metrics = nullptr, metrics_error = nullptr;
        try {
            metrics = client.get_text("/metrics");
        } catch (const openai::ClientError& e) {
            metrics_error = e.what();  // not every server has /metrics
        }
        const json report = {{"benchmark", "server"},
                             {"url", client.url("")},
                             {"api", "/v1/completions"},
                             {"model", model},
                             {"prompt", o.prompt},
                             {"max_tokens", o.tokens},
                             {"temperature", 0},
                             {"timeout_s", o.timeout_s},
                             {"server", {{"models", json::parse(models.dump())}, {"metrics", metrics}, {"metrics_error", metrics_error}}},
                             {"runs", runs}};
        const std::string md = markdown(report);
        if (!o.json_out.empty()) write(o.json_out, report.dump(2, ' ', false, json::error_handler_t::replace) + "\n");
        if (!o.md_out.empty()) write(o.md_out, md);
        std::fputs(md.c_str(), stdout);
        return failed ? 1 : 0;
    } catch (const std::exception& e) {
        std::fprintf(stderr, "strata-bench server: %s\n", e.what());
        return 1;
    }
}
