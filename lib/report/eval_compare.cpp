#include "report/eval_compare.hpp"

#include <map>

#include "report/eval_json.hpp"
#include "report/json_io.hpp"
#include "report/units.hpp"
#include "util/error.hpp"

namespace strata::report {

using nlohmann::json;

namespace {

struct Side {
    std::string identity;
    std::vector<std::string> shard_digests;
    EvalRecord eval;
};

// Reads what the comparison needs; throws Error with the reason.
Side read_side(std::string_view text, size_t index) {
    std::string error;
    auto doc = parse_untrusted_json(text, &error);
    if (!doc) fail(Status::format, error);
    if (!doc->is_object()) fail(Status::format, "not a report (not a JSON object)");
    Side s;
    if (auto a = doc->find("artifact"); a != doc->end() && a->is_object()) {
        if (auto id = a->find("model_identity"); id != a->end() && id->is_string()) s.identity = id->get<std::string>();
        if (auto shards = a->find("shards"); shards != a->end() && shards->is_array())
            for (const json& sh : *shards)
                if (sh.is_object())
                    if (auto d = sh.find("sha256"); d != sh.end() && d->is_string())
                        s.shard_digests.push_back(d->get<std::string>());
    }
    auto evals = doc->find("evaluations");
    if (evals == doc->end() || !evals->is_array()) fail(Status::format, "no \"evaluations\" array");
    if (index >= evals->size())
        fail(Status::format, "no evaluation " + std::to_string(index) + " (the report has " +
                                 std::to_string(evals->size()) + ")");
    s.eval = parse_eval_record((*evals)[index].dump());
    return s;
}

void differ(std::vector<Difference>& out, std::string what, const std::string& a, const std::string& b) {
    if (a != b) out.push_back({std::move(what), a, b});
}

// The prompt itself can be long: show a short prefix with the length.
std::string prompt_brief(const std::string& p) {
    return std::to_string(p.size()) + " bytes: " + (p.size() > 60 ? p.substr(0, 60) + "..." : p);
}

}  // namespace

Comparability compare_evaluations(std::string_view text_a, std::string_view text_b, size_t index_a, size_t index_b) {
    Comparability c;
    Side a, b;
    bool ok = true;
    try {
        a = read_side(text_a, index_a);
    } catch (const Error& e) {
        c.differences.push_back({"report A unreadable", e.what(), ""});
        ok = false;
    }
    try {
        b = read_side(text_b, index_b);
    } catch (const Error& e) {
        c.differences.push_back({"report B unreadable", "", e.what()});
        ok = false;
    }
    if (!ok) return c;

    auto& d = c.differences;
    differ(d, "artifact.model_identity", a.identity, b.identity);
    differ(d, "artifact.shards (count)", std::to_string(a.shard_digests.size()), std::to_string(b.shard_digests.size()));
    for (size_t i = 0; i < std::min(a.shard_digests.size(), b.shard_digests.size()); ++i)
        differ(d, "artifact.shards[" + std::to_string(i) + "].sha256", a.shard_digests[i], b.shard_digests[i]);

    std::map<std::string, const TaskRecord*> tasks_b;
    for (const TaskRecord& t : b.eval.tasks) tasks_b[t.id] = &t;
    std::map<std::string, const TaskRecord*> tasks_a;
    for (const TaskRecord& t : a.eval.tasks) tasks_a[t.id] = &t;
    for (const auto& [id, t] : tasks_a)
        if (!tasks_b.count(id)) d.push_back({"tasks: only in A", id, ""});
    for (const auto& [id, t] : tasks_b)
        if (!tasks_a.count(id)) d.push_back({"tasks: only in B", "", id});

    for (const auto& [id, ta] : tasks_a) {
        auto it = tasks_b.find(id);
        if (it == tasks_b.end()) continue;
        const TaskRecord* tb = it->second;
        const std::string who = "task " + id + ": ";
        differ(d, who + "kind", ta->kind, tb->kind);
        if (ta->prompt != tb->prompt) d.push_back({who + "prompt", prompt_brief(ta->prompt), prompt_brief(tb->prompt)});
        if (ta->attempts.empty() || tb->attempts.empty()) {
            differ(d, who + "first-pass attempts", std::to_string(ta->attempts.size()), std::to_string(tb->attempts.size()));
            continue;
        }
        // The first pass is what is compared; its controls must match.
        const Attempt &fa = ta->attempts[0], &fb = tb->attempts[0];
        differ(d, who + "sampling.temperature", format_number(fa.sampling.temperature), format_number(fb.sampling.temperature));
        differ(d, who + "sampling.top_p", format_number(fa.sampling.top_p), format_number(fb.sampling.top_p));
        differ(d, who + "sampling.top_k", std::to_string(fa.sampling.top_k), std::to_string(fb.sampling.top_k));
        differ(d, who + "sampling.seed", std::to_string(fa.sampling.seed), std::to_string(fb.sampling.seed));
        differ(d, who + "sampling.max_tokens", std::to_string(fa.sampling.max_tokens), std::to_string(fb.sampling.max_tokens));
        differ(d, who + "timeout_s", format_number(fa.timeout_s), format_number(fb.timeout_s));
    }
    c.comparable = d.empty();
    return c;
}

}  // namespace strata::report
