#include "report/eval_json.hpp"

#include "report/json_checker.hpp"
#include "report/json_io.hpp"
#include "util/error.hpp"

namespace strata::report {

using nlohmann::json;

namespace {

json counts_json(const VerdictCounts& c) {
    return {{"pass", c.pass}, {"fail", c.fail}, {"timeout", c.timeout}, {"token_cap", c.token_cap}, {"error", c.error}};
}

json sampling_json(const SamplingControls& s) {
    return {{"temperature", s.temperature},
            {"top_p", s.top_p},
            {"top_k", s.top_k},
            {"seed", s.seed},
            {"max_tokens", s.max_tokens}};
}

json score_json(const EvalScore& s) {
    json rounds = json::array();
    for (const RoundScore& r : s.rounds)
        rounds.push_back({{"round", r.round},
                          {"eligible", r.eligible},
                          {"retried", r.retried},
                          {"retried_verdicts", counts_json(r.retried_verdicts)},
                          {"outcomes", counts_json(r.outcomes)},
                          {"passed_after", r.passed_after}});
    return {{"n_tasks", s.n_tasks},
            {"first_pass_passed", s.first_pass_passed},
            {"first_pass_verdicts", counts_json(s.first_pass_verdicts)},
            {"rounds", rounds},
            {"composite_passed", s.composite_passed},
            {"summary", s.summary}};
}

json record_json(const EvalRecord& r) {
    json rounds = json::array();
    for (const RetryRound& rr : r.rounds) {
        json verdicts = json::array();
        for (Verdict v : rr.retry_verdicts) verdicts.push_back(verdict_name(v));
        rounds.push_back({{"round", rr.round},
                          {"label", rr.label},
                          {"retry_verdicts", verdicts},
                          {"timeout_s", rr.timeout_s},
                          {"max_tokens", rr.max_tokens}});
    }
    json tasks = json::array();
    for (const TaskRecord& t : r.tasks) {
        json attempts = json::array();
        for (const Attempt& a : t.attempts) {
            json sandbox = nullptr;
            if (!a.sandbox_json.empty()) {
                std::string error;
                auto parsed = parse_untrusted_json(a.sandbox_json, &error);
                if (!parsed || !parsed->is_object())
                    fail(Status::invalid_argument, "task '" + t.id + "': sandbox_json is not a JSON object");
                sandbox = std::move(*parsed);
            }
            attempts.push_back({{"round", a.round},
                                {"sampling", sampling_json(a.sampling)},
                                {"timeout_s", a.timeout_s},
                                {"verdict", verdict_name(a.verdict)},
                                {"raw_output", a.raw_output},
                                {"extracted_answer", a.extracted_answer},
                                {"error", a.error},
                                {"prompt_tokens", a.prompt_tokens},
                                {"output_tokens", a.output_tokens},
                                {"wall_s", a.wall_s},
                                {"sandbox", sandbox}});
        }
        tasks.push_back({{"id", t.id}, {"kind", t.kind}, {"prompt", t.prompt}, {"attempts", attempts}});
    }
    return {{"name", r.name}, {"rounds", rounds}, {"tasks", tasks}, {"score", score_json(score_evaluation(r))}};
}

// Reading back: every accessor names the field it refuses.
[[noreturn]] void malformed(const std::string& path, const std::string& what) {
    fail(Status::format, "evaluation " + path + ": " + what);
}

const json& field(const json& obj, const char* key, const std::string& path) {
    if (!obj.is_object()) malformed(path, "expected an object");
    auto it = obj.find(key);
    if (it == obj.end()) malformed(path + "/" + key, "missing");
    return *it;
}

std::string get_string(const json& obj, const char* key, const std::string& path) {
    const json& v = field(obj, key, path);
    if (!v.is_string()) malformed(path + "/" + key, "expected a string");
    return v.get<std::string>();
}

double get_number(const json& obj, const char* key, const std::string& path) {
    const json& v = field(obj, key, path);
    if (!v.is_number() || !(v.get<double>() >= 0)) malformed(path + "/" + key, "expected a number >= 0");
    return v.get<double>();
}

int64_t get_int(const json& obj, const char* key, const std::string& path) {
    const json& v = field(obj, key, path);
    if (!v.is_number_integer() || (v.is_number_unsigned() && v.get<uint64_t>() > uint64_t(INT64_MAX)) ||
        v.get<int64_t>() < 0)
        malformed(path + "/" + key, "expected an integer >= 0");
    return v.get<int64_t>();
}

uint64_t get_uint(const json& obj, const char* key, const std::string& path) {
    const json& v = field(obj, key, path);
    if (!v.is_number_unsigned()) malformed(path + "/" + key, "expected an integer >= 0");
    return v.get<uint64_t>();
}

Verdict get_verdict(const json& v, const std::string& path) {
    Verdict out;
    if (!v.is_string() || !verdict_from_name(v.get<std::string>(), &out))
        malformed(path, "expected one of pass, fail, timeout, token_cap, error");
    return out;
}

const json& get_array(const json& obj, const char* key, const std::string& path) {
    const json& v = field(obj, key, path);
    if (!v.is_array()) malformed(path + "/" + key, "expected an array");
    return v;
}

int get_round(const json& obj, const std::string& path) {
    const int64_t n = get_int(obj, "round", path);
    if (n > 1000000) malformed(path + "/round", "implausibly large");
    return int(n);
}

}  // namespace

std::string eval_record_json(const EvalRecord& record) {
    return record_json(record).dump(-1, ' ', false, json::error_handler_t::replace);
}

EvalRecord parse_eval_record(std::string_view text) {
    std::string error;
    auto doc = parse_untrusted_json(text, &error);
    if (!doc) fail(Status::format, "evaluation: " + error);
    const json& d = *doc;
    EvalRecord r;
    r.name = get_string(d, "name", "");
    const json& rounds = get_array(d, "rounds", "");
    for (size_t i = 0; i < rounds.size(); ++i) {
        const std::string p = "/rounds/" + std::to_string(i);
        RetryRound rr;
        rr.round = get_round(rounds[i], p);
        rr.label = get_string(rounds[i], "label", p);
        const json& verdicts = get_array(rounds[i], "retry_verdicts", p);
        for (size_t k = 0; k < verdicts.size(); ++k)
            rr.retry_verdicts.insert(get_verdict(verdicts[k], p + "/retry_verdicts/" + std::to_string(k)));
        rr.timeout_s = get_number(rounds[i], "timeout_s", p);
        rr.max_tokens = get_int(rounds[i], "max_tokens", p);
        r.rounds.push_back(std::move(rr));
    }
    const json& tasks = get_array(d, "tasks", "");
    for (size_t i = 0; i < tasks.size(); ++i) {
        const std::string p = "/tasks/" + std::to_string(i);
        TaskRecord t;
        t.id = get_string(tasks[i], "id", p);
        t.kind = get_string(tasks[i], "kind", p);
        t.prompt = get_string(tasks[i], "prompt", p);
        const json& attempts = get_array(tasks[i], "attempts", p);
        for (size_t k = 0; k < attempts.size(); ++k) {
            const std::string ap = p + "/attempts/" + std::to_string(k);
            const json& a = attempts[k];
            Attempt at;
            at.round = get_round(a, ap);
            const json& s = field(a, "sampling", ap);
            at.sampling.temperature = get_number(s, "temperature", ap + "/sampling");
            at.sampling.top_p = get_number(s, "top_p", ap + "/sampling");
            at.sampling.top_k = get_int(s, "top_k", ap + "/sampling");
            at.sampling.seed = get_uint(s, "seed", ap + "/sampling");
            at.sampling.max_tokens = get_int(s, "max_tokens", ap + "/sampling");
            at.timeout_s = get_number(a, "timeout_s", ap);
            at.verdict = get_verdict(field(a, "verdict", ap), ap + "/verdict");
            at.raw_output = get_string(a, "raw_output", ap);
            at.extracted_answer = get_string(a, "extracted_answer", ap);
            at.error = get_string(a, "error", ap);
            at.prompt_tokens = get_int(a, "prompt_tokens", ap);
            at.output_tokens = get_int(a, "output_tokens", ap);
            at.wall_s = get_number(a, "wall_s", ap);
            if (const json& sb = field(a, "sandbox", ap); sb.is_object()) at.sandbox_json = sb.dump();
            t.attempts.push_back(std::move(at));
        }
        r.tasks.push_back(std::move(t));
    }
    score_evaluation(r);  // the history rules
    return r;
}

// The "evaluations" rules of the report validator: the schema's shape, then the stored score
// must be the score of the stored tasks (a composite can't be passed off as a first pass).
void check_evaluation(JsonChecker& c, const json& e, const std::string& p) {
    if (!c.object(e, p, {"name", "rounds", "tasks", "score"})) return;
    c.string(e, "name", p);
    const json* rounds = c.array(e, "rounds", p);
    const json* tasks = c.array(e, "tasks", p);
    const json* score = c.sub_object(e, "score", p,
                                     {"n_tasks", "first_pass_passed", "first_pass_verdicts", "rounds", "composite_passed",
                                      "summary"});
    if (!rounds || !tasks || !score) return;
    const size_t before = c.problems().size();
    for (size_t i = 0; i < rounds->size(); ++i) {
        const std::string rp = JsonChecker::at(JsonChecker::at(p, "rounds"), i);
        const json& r = (*rounds)[i];
        if (!c.object(r, rp, {"round", "label", "retry_verdicts", "timeout_s", "max_tokens"})) continue;
        c.integer(r, "round", rp, 0);
        c.string(r, "label", rp);
        c.number(r, "timeout_s", rp, 0);
        c.integer(r, "max_tokens", rp, 0);
        if (const json* vs = c.array(r, "retry_verdicts", rp))
            for (size_t k = 0; k < vs->size(); ++k) {
                Verdict v;
                if (!(*vs)[k].is_string() || !verdict_from_name((*vs)[k].get<std::string>(), &v))
                    c.problem(JsonChecker::at(JsonChecker::at(rp, "retry_verdicts"), k), "not a verdict");
            }
    }
    for (size_t i = 0; i < tasks->size(); ++i) {
        const std::string tp = JsonChecker::at(JsonChecker::at(p, "tasks"), i);
        const json& t = (*tasks)[i];
        if (!c.object(t, tp, {"id", "kind", "prompt", "attempts"})) continue;
        c.string(t, "id", tp, false, 1);
        c.string(t, "kind", tp);
        c.string(t, "prompt", tp);
        const json* attempts = c.array(t, "attempts", tp);
        if (!attempts) continue;
        for (size_t k = 0; k < attempts->size(); ++k) {
            const std::string ap = JsonChecker::at(JsonChecker::at(tp, "attempts"), k);
            const json& a = (*attempts)[k];
            if (!c.object(a, ap, {"round", "sampling", "timeout_s", "verdict", "raw_output", "extracted_answer", "error",
                                  "prompt_tokens", "output_tokens", "wall_s", "sandbox"}))
                continue;
            c.integer(a, "round", ap, 0);
            if (const json* s = c.sub_object(a, "sampling", ap, {"temperature", "top_p", "top_k", "seed", "max_tokens"})) {
                const std::string sp = JsonChecker::at(ap, "sampling");
                c.number(*s, "temperature", sp, 0);
                c.number(*s, "top_p", sp, 0);
                c.integer(*s, "top_k", sp, 0);
                c.integer(*s, "seed", sp, 0);
                c.integer(*s, "max_tokens", sp, 0);
            }
            c.number(a, "timeout_s", ap, 0);
            c.one_of(a, "verdict", ap, {"pass", "fail", "timeout", "token_cap", "error"});
            c.string(a, "raw_output", ap);
            c.string(a, "extracted_answer", ap);
            c.string(a, "error", ap);
            c.integer(a, "prompt_tokens", ap, 0);
            c.integer(a, "output_tokens", ap, 0);
            c.number(a, "wall_s", ap, 0);
            if (auto it = a.find("sandbox"); it != a.end() && !it->is_null() && !it->is_object())
                c.problem(JsonChecker::at(ap, "sandbox"), "expected an object or null");
        }
    }
    if (c.problems().size() != before) return;  // the shape is wrong: no arithmetic on it

    // Recompute the score from the tasks and compare with what the file claims.
    EvalRecord record;
    EvalScore expected;
    try {
        record = parse_eval_record(e.dump());
        expected = score_evaluation(record);
    } catch (const Error& err) {
        c.problem(p, err.what());
        return;
    }
    const json expected_score = score_json(expected);
    for (const auto& [key, value] : expected_score.items())
        if (auto it = score->find(key); it != score->end() && *it != value)
            c.problem(JsonChecker::at(JsonChecker::at(p, "score"), key),
                      "does not match the tasks: the attempts give " + value.dump());
}

}  // namespace strata::report
