#include "eval_server_run.hpp"

#include <cstdio>
#include <ctime>

#include <nlohmann/json.hpp>

#include "eval_server.hpp"
#include "common/openai_client.hpp"
#include "common/report_sections.hpp"
#include "strata/strata.hpp"

namespace eval {

namespace {

using json = nlohmann::ordered_json;

json ordered(const nlohmann::json& j) { return json::parse(j.dump(-1, ' ', false, nlohmann::json::error_handler_t::replace)); }

std::string utc_now() {
    const std::time_t t = std::time(nullptr);
    std::tm tm{};
    gmtime_r(&t, &tm);
    char buf[32];
    std::strftime(buf, sizeof buf, "%Y-%m-%dT%H:%M:%SZ", &tm);
    return buf;
}

// A Markdown table cell: one line, no '|', at most 160 characters.
std::string cell(const std::string& text) {
    std::string out;
    for (char c : text.substr(0, 160)) out += c == '|' ? std::string("\\|") : c == '\n' || c == '\r' ? std::string(" ") : std::string(1, c);
    return text.size() > 160 ? out + "..." : out;
}

std::string markdown(const json& r) {
    const json& ev = r["evaluations"][0];
    const json& server = r["runtime"]["server"];
    const json& client = r["client"];
    std::string md = "# " + r["title"].get<std::string>() + "\n\nCreated " + r["created_utc"].get<std::string>() + ".\n\n";
    md += "## Server\n\n| | |\n|---|---|\n";
    md += "| URL | " + cell(server["url"].get<std::string>()) + " |\n";
    md += "| API | " + cell(client["api"].get<std::string>()) + " |\n";
    md += "| model | " + cell(client["model"].get<std::string>()) + " |\n";
    const double timeout = client["timeout_s"].get<double>();
    md += "| client timeout per request | " + (timeout > 0 ? json(timeout).dump() + " s" : std::string("none")) + " |\n";
    md += "| client | strata " + cell(r["runtime"]["client"]["strata_version"].get<std::string>()) + " |\n\n";
    md += "Settings the server reports for the model:\n\n```json\n" + server["settings"].dump(2) + "\n```\n\n";
    md += "GET /v1/models:\n\n```json\n" + server["models"].dump(2) + "\n```\n\n";
    md += "GET /props: " + std::string(server["props"].is_null() ? "not served\n\n" : "\n\n```json\n" + server["props"].dump(2) + "\n```\n\n");
    md += "## Evaluation " + cell(ev["name"].get<std::string>()) + "\n\n" + ev["score"]["summary"].get<std::string>() + "\n\n";
    md += "| task | kind | round | verdict | wall s | tokens in+out | error |\n|---|---|---|---|---|---|---|\n";
    for (const json& t : ev["tasks"])
        for (const json& a : t["attempts"]) {
            char wall[32];
            std::snprintf(wall, sizeof wall, "%.2f", a["wall_s"].get<double>());
            md += "| " + cell(t["id"].get<std::string>()) + " | " + t["kind"].get<std::string>() + " | " +
                  a["round"].dump() + " | " + a["verdict"].get<std::string>() + " | " + wall + " | " +
                  a["prompt_tokens"].dump() + "+" + a["output_tokens"].dump() + " | " + cell(a["error"].get<std::string>()) + " |\n";
        }
    return md;
}

}  // namespace

int run_server_eval(const ServerEvalOptions& o) {
    const std::vector<Task> tasks = load_suite(o.suite);
    const openai::Client client(o.url, o.api_key, o.rounds.timeout_s);
    ServerTarget target{o.model, o.completions};
    const json server = ordered(describe_server(client, target));
    const std::string api = o.completions ? "/v1/completions" : "/v1/chat/completions";
    std::fprintf(stderr, "strata-eval: %zu tasks from %s through %s (model %s)\n", tasks.size(), o.suite.c_str(),
                 client.url(api).c_str(), target.model.c_str());

    const nlohmann::json record = run_rounds(tasks, o.rounds, [&](const Task& t, const AttemptPlan& p) {
        return run_server_attempt(client, target, t, p, o.sandbox);
    });
    const json evaluation = json::parse(strata::reports::eval_score(ordered(record).dump()));
    const json report = {
        {"schema", "strata.server-eval/1"},
        {"created_utc", utc_now()},
        {"title", "strata-eval " + o.rounds.name + " against " + client.url("")},
        {"client",
         {{"api", api}, {"model", target.model}, {"timeout_s", o.rounds.timeout_s}, {"api_key", !o.api_key.empty()}}},
        {"runtime", {{"server", server}, {"client", json::parse(strata::reports::runtime_json())}}},
        {"evaluations", json::array({evaluation})},
    };
    report_sections::write_file(o.out, report.dump(2, ' ', false, json::error_handler_t::replace) + "\n");
    const std::string md_path = report_sections::markdown_path(o.out);
    report_sections::write_file(md_path, markdown(report));
    std::printf("%s\n", evaluation["score"]["summary"].get<std::string>().c_str());
    std::fprintf(stderr, "report: %s and %s\n", o.out.c_str(), md_path.c_str());
    return 0;
}

}  // namespace eval
