#include "report/eval_score.hpp"

#include <algorithm>
#include <map>
#include <unordered_set>

#include "report/units.hpp"
#include "util/error.hpp"

namespace strata::report {

namespace {

constexpr Verdict kAllVerdicts[] = {Verdict::pass, Verdict::fail, Verdict::timeout, Verdict::token_cap, Verdict::error};

TaskRecord* find_task(EvalRecord& r, const std::string& id) {
    for (TaskRecord& t : r.tasks)
        if (t.id == id) return &t;
    return nullptr;
}

const RetryRound* find_round(const EvalRecord& r, int round) {
    for (const RetryRound& rr : r.rounds)
        if (rr.round == round) return &rr;
    return nullptr;
}

bool passed(const TaskRecord& t) {
    return std::any_of(t.attempts.begin(), t.attempts.end(), [](const Attempt& a) { return a.verdict == Verdict::pass; });
}

// The history rules of one task, for records built here or read back from a file.
void check_history(const EvalRecord& r, const TaskRecord& t) {
    const std::string who = "task '" + t.id + "': ";
    for (size_t i = 0; i < t.attempts.size(); ++i) {
        const Attempt& a = t.attempts[i];
        if (i == 0 && a.round != 0) fail(Status::invalid_argument, who + "the first attempt must be the first pass (round 0)");
        if (i > 0) {
            if (a.round <= t.attempts[i - 1].round)
                fail(Status::invalid_argument, who + "attempt " + std::to_string(i) + " is not in a later round than the one before");
            if (!find_round(r, a.round))
                fail(Status::invalid_argument, who + "attempt " + std::to_string(i) + " is in round " +
                                                   std::to_string(a.round) + ", which was never opened");
            if (t.attempts[i - 1].verdict == Verdict::pass)
                fail(Status::invalid_argument, who + "retried after it passed");
            if (!find_round(r, a.round)->retry_verdicts.count(t.attempts[i - 1].verdict))
                fail(Status::invalid_argument, who + "retried in round " + std::to_string(a.round) +
                                                   ", which does not retry " + verdict_name(t.attempts[i - 1].verdict));
        }
    }
}

std::string plural(int n, const char* one, const char* many) { return std::to_string(n) + " " + (n == 1 ? one : many); }

const char* verdict_noun(Verdict v, int n) {
    switch (v) {
        case Verdict::pass: return n == 1 ? "pass" : "passes";
        case Verdict::fail: return n == 1 ? "failure" : "failures";
        case Verdict::timeout: return n == 1 ? "timeout" : "timeouts";
        case Verdict::token_cap: return n == 1 ? "token-cap exhaustion" : "token-cap exhaustions";
        case Verdict::error: return n == 1 ? "error" : "errors";
    }
    return "?";
}

// " at 600 s" or " (3 at 600 s, 1 at 300 s)" for the limits a group of attempts ran under;
// `render` writes one limit with its unit (durations in µs/ms/s, so 1e-6 reads "1 µs").
template <typename Value>
std::string limits_phrase(const std::map<Value, int>& by_limit, std::string (*render)(double)) {
    if (by_limit.empty()) return "";
    if (by_limit.size() == 1) {
        if (by_limit.begin()->first <= 0) return "";
        return " at " + render(double(by_limit.begin()->first));
    }
    std::string s = " (";
    bool first = true;
    for (auto it = by_limit.rbegin(); it != by_limit.rend(); ++it) {
        s += (first ? "" : ", ") + std::to_string(it->second) + " at " +
             (it->first > 0 ? render(double(it->first)) : std::string("no limit"));
        first = false;
    }
    return s + ")";
}

// A configured time limit reads as set (6 significant digits), a token cap as its count.
std::string seconds_limit(double s) { return format_duration(s, 6); }
std::string token_limit(double n) { return format_number(n) + " tokens"; }

std::string first_pass_phrase(const EvalRecord& r, const EvalScore& s) {
    std::map<double, int> timeouts;
    std::map<int64_t, int> caps;
    for (const TaskRecord& t : r.tasks) {
        if (t.attempts.empty()) continue;
        const Attempt& a = t.attempts[0];
        if (a.verdict == Verdict::timeout) ++timeouts[a.timeout_s];
        if (a.verdict == Verdict::token_cap) ++caps[a.sampling.max_tokens];
    }
    std::vector<std::string> parts;
    const VerdictCounts& v = s.first_pass_verdicts;
    if (v.timeout) parts.push_back(plural(v.timeout, "timeout", "timeouts") + limits_phrase(timeouts, seconds_limit));
    if (v.token_cap)
        parts.push_back(std::to_string(v.token_cap) + " " + verdict_noun(Verdict::token_cap, v.token_cap) +
                        limits_phrase(caps, token_limit));
    if (v.fail) parts.push_back(plural(v.fail, "failure", "failures"));
    if (v.error) parts.push_back(plural(v.error, "error", "errors"));
    std::string out = "first pass " + std::to_string(s.first_pass_passed) + "/" + std::to_string(s.n_tasks);
    if (parts.empty()) return out;
    out += " (";
    for (size_t i = 0; i < parts.size(); ++i) out += (i ? ", " : "") + parts[i];
    return out + ")";
}

std::string round_phrase(const EvalRecord& r, const RetryRound& round, const RoundScore& rs,
                         const VerdictCounts& eligible, int n_tasks) {
    std::vector<std::string> parts;
    for (Verdict v : kAllVerdicts) {
        if (!round.retry_verdicts.count(v) || eligible.at(v) == 0) continue;
        const int e = eligible.at(v), k = rs.retried_verdicts.at(v);
        parts.push_back((k == e ? "the " : std::to_string(k) + " of the ") + std::to_string(e) + " " + verdict_noun(v, e));
    }
    std::string out = "after retrying ";
    if (parts.empty()) {
        out = "after retry round " + std::to_string(round.round) + " (nothing to retry)";
    } else {
        for (size_t i = 0; i < parts.size(); ++i) out += (i ? " and " : "") + parts[i];
        // The limits the retries actually ran under.
        std::map<double, int> timeouts;
        for (const TaskRecord& t : r.tasks)
            for (const Attempt& a : t.attempts)
                if (a.round == round.round) ++timeouts[a.timeout_s];
        out += limits_phrase(timeouts, seconds_limit);
        if (round.max_tokens > 0) out += " with max tokens " + std::to_string(round.max_tokens);
    }
    return out + ": " + std::to_string(rs.passed_after) + "/" + std::to_string(n_tasks);
}

}  // namespace

const char* verdict_name(Verdict v) {
    switch (v) {
        case Verdict::pass: return "pass";
        case Verdict::fail: return "fail";
        case Verdict::timeout: return "timeout";
        case Verdict::token_cap: return "token_cap";
        case Verdict::error: return "error";
    }
    return "error";
}

bool verdict_from_name(const std::string& name, Verdict* out) {
    for (Verdict v : kAllVerdicts)
        if (name == verdict_name(v)) {
            *out = v;
            return true;
        }
    return false;
}

int& VerdictCounts::at(Verdict v) {
    switch (v) {
        case Verdict::pass: return pass;
        case Verdict::fail: return fail;
        case Verdict::timeout: return timeout;
        case Verdict::token_cap: return token_cap;
        case Verdict::error: break;
    }
    return error;
}

int VerdictCounts::at(Verdict v) const { return const_cast<VerdictCounts*>(this)->at(v); }

void add_task(EvalRecord& r, std::string id, std::string kind, std::string prompt) {
    if (id.empty()) fail(Status::invalid_argument, "a task needs an id");
    if (find_task(r, id)) fail(Status::invalid_argument, "task '" + id + "' added twice");
    r.tasks.push_back({std::move(id), std::move(kind), std::move(prompt), {}});
}

int begin_retry_round(EvalRecord& r, std::string label, std::set<Verdict> retry_verdicts, double timeout_s,
                      int64_t max_tokens) {
    if (retry_verdicts.count(Verdict::pass)) fail(Status::invalid_argument, "a retry round cannot retry passes");
    const int n = int(r.rounds.size()) + 1;
    r.rounds.push_back({n, std::move(label), std::move(retry_verdicts), timeout_s, max_tokens});
    return n;
}

std::vector<std::string> tasks_to_retry(const EvalRecord& r, int round) {
    const RetryRound* rr = find_round(r, round);
    if (!rr) fail(Status::invalid_argument, "no retry round " + std::to_string(round));
    std::vector<std::string> ids;
    for (const TaskRecord& t : r.tasks)
        if (!t.attempts.empty() && !passed(t) && t.attempts.back().round < round &&
            rr->retry_verdicts.count(t.attempts.back().verdict))
            ids.push_back(t.id);
    return ids;
}

void record_attempt(EvalRecord& r, const std::string& task_id, Attempt attempt) {
    TaskRecord* t = find_task(r, task_id);
    if (!t) fail(Status::invalid_argument, "no task '" + task_id + "'");
    const std::string who = "task '" + task_id + "': ";
    if (t->attempts.empty()) {
        if (attempt.round != 0) fail(Status::invalid_argument, who + "the first attempt must be the first pass (round 0)");
    } else {
        if (attempt.round == 0) fail(Status::invalid_argument, who + "the first pass is already recorded and is never replaced");
        const RetryRound* rr = find_round(r, attempt.round);
        if (!rr) fail(Status::invalid_argument, who + "retry round " + std::to_string(attempt.round) + " was never opened");
        if (attempt.round <= t->attempts.back().round)
            fail(Status::invalid_argument, who + "already has an attempt in round " + std::to_string(t->attempts.back().round));
        if (passed(*t)) fail(Status::invalid_argument, who + "already passed");
        if (!rr->retry_verdicts.count(t->attempts.back().verdict))
            fail(Status::invalid_argument, who + "its latest verdict (" + verdict_name(t->attempts.back().verdict) +
                                               ") is not one round " + std::to_string(rr->round) + " retries");
    }
    t->attempts.push_back(std::move(attempt));
}

EvalScore score_evaluation(const EvalRecord& r) {
    std::unordered_set<std::string> ids;
    for (const TaskRecord& t : r.tasks) {
        if (!ids.insert(t.id).second) fail(Status::invalid_argument, "task '" + t.id + "' appears twice");
        check_history(r, t);
    }
    for (size_t i = 0; i < r.rounds.size(); ++i)
        if (r.rounds[i].round != int(i) + 1)
            fail(Status::invalid_argument, "retry rounds must be numbered 1, 2, ... in order");

    EvalScore s;
    s.n_tasks = int(r.tasks.size());
    std::vector<Verdict> latest(r.tasks.size(), Verdict::error);
    std::vector<bool> done(r.tasks.size(), false);
    for (size_t i = 0; i < r.tasks.size(); ++i) {
        const TaskRecord& t = r.tasks[i];
        latest[i] = t.attempts.empty() ? Verdict::error : t.attempts[0].verdict;
        s.first_pass_verdicts.at(latest[i]) += 1;
        done[i] = latest[i] == Verdict::pass;
    }
    s.first_pass_passed = s.first_pass_verdicts.pass;
    s.summary = first_pass_phrase(r, s);
    int passed_so_far = s.first_pass_passed;
    for (const RetryRound& round : r.rounds) {
        RoundScore rs;
        rs.round = round.round;
        VerdictCounts eligible;
        for (size_t i = 0; i < r.tasks.size(); ++i) {
            if (done[i]) continue;
            const bool covered = round.retry_verdicts.count(latest[i]) > 0;
            if (covered) eligible.at(latest[i]) += 1;
            for (const Attempt& a : r.tasks[i].attempts) {
                if (a.round != round.round) continue;
                rs.retried += 1;
                rs.retried_verdicts.at(latest[i]) += 1;
                rs.outcomes.at(a.verdict) += 1;
                latest[i] = a.verdict;
                if (a.verdict == Verdict::pass) {
                    done[i] = true;
                    ++passed_so_far;
                }
            }
        }
        rs.eligible = eligible.total();
        rs.passed_after = passed_so_far;
        s.summary += "; " + round_phrase(r, round, rs, eligible, s.n_tasks);
        s.rounds.push_back(rs);
    }
    s.composite_passed = passed_so_far;
    return s;
}

}  // namespace strata::report
