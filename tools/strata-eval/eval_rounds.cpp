#include "eval_rounds.hpp"

#include <cstdio>
#include <set>

namespace eval {

namespace {

using json = nlohmann::json;

struct TaskState {
    const Task* task;
    json attempts = json::array();
};

// Tasks a round retries: not passed in any attempt so far, latest verdict among the round's.
std::vector<TaskState*> to_retry(std::vector<TaskState>& states, const std::set<std::string>& verdicts) {
    std::vector<TaskState*> out;
    for (auto& st : states) {
        bool passed = false;
        for (const json& a : st.attempts) passed = passed || a["verdict"] == "pass";
        if (!passed && !st.attempts.empty() && verdicts.count(st.attempts.back()["verdict"].get<std::string>()))
            out.push_back(&st);
    }
    return out;
}

void progress(const TaskState& st, const json& a) {
    std::fprintf(stderr, "  round %d  %-24s %-9s %6.2f s  %lld+%lld tokens\n", a["round"].get<int>(),
                 st.task->id.c_str(), a["verdict"].get<std::string>().c_str(), a["wall_s"].get<double>(),
                 (long long)a["prompt_tokens"].get<int64_t>(), (long long)a["output_tokens"].get<int64_t>());
}

}  // namespace

json run_rounds(const std::vector<Task>& tasks, const RoundPlan& plan, const AttemptRunner& attempt) {
    std::vector<TaskState> states;
    for (const auto& t : tasks) states.push_back({&t});
    for (auto& st : states) {
        st.attempts.push_back(attempt(*st.task, AttemptPlan{0, st.task->sampling(plan.sampling), plan.timeout_s}));
        progress(st, st.attempts.back());
    }
    json rounds = json::array();
    auto retry_round = [&](const std::string& label, const std::set<std::string>& verdicts, double timeout_s) {
        const int round = int(rounds.size()) + 1;
        rounds.push_back({{"round", round}, {"label", label}, {"retry_verdicts", verdicts}, {"timeout_s", timeout_s},
                          {"max_tokens", 0}});
        for (TaskState* st : to_retry(states, verdicts)) {
            st->attempts.push_back(attempt(*st->task, AttemptPlan{round, st->task->sampling(plan.sampling), timeout_s}));
            progress(*st, st->attempts.back());
        }
    };
    if (plan.retry_timeout_s) retry_round("retry the timeouts with a longer timeout", {"timeout"}, *plan.retry_timeout_s);
    if (plan.retry_failed) retry_round("retry the failures with the first-pass limits", {"fail", "token_cap", "error"}, plan.timeout_s);

    json record = {{"name", plan.name}, {"rounds", rounds}, {"tasks", json::array()}};
    for (const auto& st : states)
        record["tasks"].push_back(
            {{"id", st.task->id}, {"kind", st.task->kind}, {"prompt", st.task->prompt}, {"attempts", st.attempts}});
    return record;
}

}  // namespace eval
