#include "eval_server.hpp"

#include <algorithm>
#include <chrono>
#include <cstdio>

namespace eval {

namespace {

using json = nlohmann::json;
using Clock = std::chrono::steady_clock;

// Chat models are asked for the function, the stub alone being no question.
constexpr const char* kChatCodeInstruction =
    "Complete the following Python function. Answer with the whole function in one ```python code block.\n\n";

struct BadAnswer : std::runtime_error {
    using std::runtime_error::runtime_error;
};

int64_t usage_count(const json& answer, const char* key) {
    const auto u = answer.find("usage");
    if (u == answer.end() || !u->is_object()) return 0;
    const auto v = u->find(key);
    return v != u->end() && v->is_number_integer() && v->get<int64_t>() >= 0 ? v->get<int64_t>() : 0;
}

// The text and finish_reason of the answer's first choice.
std::pair<std::string, std::string> first_choice(const json& answer, bool completions) {
    if (!answer.is_object() || !answer.contains("choices") || !answer["choices"].is_array() || answer["choices"].empty())
        throw BadAnswer("the answer has no \"choices\"");
    const json& c = answer["choices"][0];
    if (!c.is_object()) throw BadAnswer("\"choices\"[0] is not an object");
    const json* text = nullptr;
    if (completions) {
        if (c.contains("text")) text = &c["text"];
    } else if (c.contains("message") && c["message"].is_object() && c["message"].contains("content")) {
        text = &c["message"]["content"];
    }
    if (!text || !(text->is_string() || text->is_null()))
        throw BadAnswer(completions ? "\"choices\"[0] has no \"text\" string" : "\"choices\"[0] has no \"message\".\"content\" string");
    const auto f = c.find("finish_reason");
    return {text->is_null() ? "" : text->get<std::string>(), f != c.end() && f->is_string() ? f->get<std::string>() : ""};
}

}  // namespace

json attempt_request(const ServerTarget& target, const Task& task, const Sampling& s) {
    json body = {{"model", target.model},
                 {"max_tokens", s.max_tokens},
                 {"temperature", s.temperature},
                 {"top_p", s.top_p},
                 {"seed", s.seed},
                 {"stream", false}};
    if (s.top_k > 0) body["top_k"] = s.top_k;  // not an OpenAI field: sent only when asked for
    // HumanEval's default stops cut a completion; a chat answer (a code block) would lose its body.
    if (!task.stop.empty() && (target.completions || task.stop_from_suite)) body["stop"] = task.stop;
    if (target.completions) {
        body["prompt"] = task.prompt;
    } else {
        const std::string content = task.kind == "code" ? kChatCodeInstruction + task.prompt : task.prompt;
        body["messages"] = json::array({{{"role", "user"}, {"content", content}}});
    }
    return body;
}

std::string chat_code_completion(const Task& task, const std::string& answer) {
    std::string code = answer;
    if (const size_t open = answer.find("```"); open != std::string::npos) {
        const size_t start = answer.find('\n', open);
        const size_t close = start == std::string::npos ? std::string::npos : answer.find("```", start);
        if (start != std::string::npos)
            code = answer.substr(start + 1, close == std::string::npos ? std::string::npos : close - start - 1);
    }
    if (code.find("def " + task.entry_point + "(") != std::string::npos) return "\n" + code;
    return code;
}

json run_server_attempt(const openai::Client& client, const ServerTarget& target, const Task& task,
                        const AttemptPlan& plan, const SandboxLimits& sandbox) {
    json a = blank_attempt(plan);
    const std::string path = target.completions ? "/v1/completions" : "/v1/chat/completions";
    const auto t0 = Clock::now();
    auto elapsed = [&] { return std::chrono::duration<double>(Clock::now() - t0).count(); };
    json answer;
    try {
        answer = client.post_json(path, attempt_request(target, task, plan.sampling), plan.timeout_s);
    } catch (const openai::ClientError& e) {
        a["wall_s"] = elapsed();
        a["verdict"] = e.kind == openai::Failure::timeout ? "timeout" : "error";
        a["error"] = e.what();
        return a;
    }
    a["wall_s"] = elapsed();
    a["prompt_tokens"] = usage_count(answer, "prompt_tokens");
    a["output_tokens"] = usage_count(answer, "completion_tokens");
    std::string output, finish;
    try {
        std::tie(output, finish) = first_choice(answer, target.completions);
    } catch (const BadAnswer& e) {
        a["error"] = "POST " + client.url(path) + ": " + e.what();
        return a;
    }
    a["raw_output"] = output;
    if (finish == "length") {
        a["verdict"] = "token_cap";
        a["error"] = "the output reached the " + std::to_string(plan.sampling.max_tokens) +
                     "-token cap before it ended (finish_reason \"length\")";
        return a;
    }
    std::string text = output;
    if (task.kind == "code")
        text = target.completions ? cut_at_stop(output, task.stop) : chat_code_completion(task, output);
    judge(task, text, sandbox, a);
    return a;
}

json describe_server(const openai::Client& client, ServerTarget& target) {
    const json models = client.get_json("/v1/models");
    if (!models.is_object() || !models.contains("data") || !models["data"].is_array())
        throw openai::ClientError(openai::Failure::protocol, 0,
                                  "GET " + client.url("/v1/models") + ": the answer has no \"data\" list of models");
    json entry = nullptr;
    for (const json& m : models["data"]) {
        if (!m.is_object() || !m.contains("id") || !m["id"].is_string()) continue;
        if (target.model.empty()) target.model = m["id"].get<std::string>();
        if (m["id"] == target.model) {
            entry = m;
            break;
        }
    }
    if (target.model.empty())
        throw openai::ClientError(openai::Failure::protocol, 0,
                                  "GET " + client.url("/v1/models") + ": no model listed; name one with --model");
    if (entry.is_null())
        std::fprintf(stderr, "strata-eval: warning: %s does not list the model '%s'; asking for it anyway\n",
                     client.url("/v1/models").c_str(), target.model.c_str());
    json settings = json::object();
    if (entry.is_object())
        for (const auto& [k, v] : entry.items())
            if (k != "id" && k != "object" && k != "created" && k != "owned_by") settings[k] = v;
    json props = nullptr;
    try {
        props = client.get_json("/props", std::min(client.timeout_s() > 0 ? client.timeout_s() : 10.0, 10.0));
    } catch (const openai::ClientError&) {
        // Not every server has /props (it is llama-server's); absent, the record says null.
    }
    return {{"url", client.url("")}, {"models", models}, {"model", entry}, {"settings", settings}, {"props", props}};
}

}  // namespace eval
