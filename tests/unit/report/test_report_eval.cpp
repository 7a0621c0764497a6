// Evaluation arithmetic: the first pass is kept and never replaced, timeouts and token-cap
// exhaustions stay in the denominator, retries are new attempts with their own limits, and the
// summary line carries the whole history. The comparability check lists every difference.
#include <doctest/doctest.h>

#include <set>

#include <nlohmann/json.hpp>

#include "report/eval_compare.hpp"
#include "report/eval_json.hpp"
#include "report/eval_score.hpp"
#include "util/error.hpp"

using nlohmann::json;
using namespace strata::report;

namespace {

const SamplingControls kLocal{0.2, 0.95, 40, 1, 8192};

Attempt attempt(Verdict v, double timeout_s, int round = 0, SamplingControls s = kLocal) {
    Attempt a;
    a.round = round;
    a.sampling = s;
    a.timeout_s = timeout_s;
    a.verdict = v;
    a.wall_s = v == Verdict::timeout ? timeout_s : 30;
    return a;
}

// The field report's HumanEval run: 20 tasks, 14 pass, 4 time out at 600 s (1, 6, 10, 17), 2 fail
// (2, 7); the timeouts are retried at 1800 s and all pass.
EvalRecord humaneval(bool retry_all_timeouts = true) {
    EvalRecord r;
    r.name = "humaneval-20";
    for (int i = 0; i < 20; ++i) add_task(r, "HumanEval/" + std::to_string(i), "code", "def f" + std::to_string(i));
    for (int i = 0; i < 20; ++i) {
        Verdict v = Verdict::pass;
        if (i == 1 || i == 6 || i == 10 || i == 17) v = Verdict::timeout;
        if (i == 2 || i == 7) v = Verdict::fail;
        record_attempt(r, "HumanEval/" + std::to_string(i), attempt(v, 600));
    }
    const int round = begin_retry_round(r, "retry timeouts", {Verdict::timeout}, 1800, 0);
    auto ids = tasks_to_retry(r, round);
    REQUIRE(ids.size() == 4);
    if (!retry_all_timeouts) ids.pop_back();
    for (const auto& id : ids) record_attempt(r, id, attempt(Verdict::pass, 1800, round));
    return r;
}

std::string report_with(const EvalRecord& e, const std::string& identity = std::string(64, 'a')) {
    json doc = {{"artifact", {{"model_identity", identity}, {"shards", json::array({{{"sha256", std::string(64, 'b')}}})}}},
                {"evaluations", json::array({json::parse(eval_record_json(e))})}};
    return doc.dump();
}

}  // namespace

TEST_CASE("report eval: first pass 14/20 with its timeouts and failures, then the retry round") {
    const EvalRecord r = humaneval();
    const EvalScore s = score_evaluation(r);
    CHECK(s.n_tasks == 20);
    CHECK(s.first_pass_passed == 14);
    CHECK(s.first_pass_verdicts.timeout == 4);
    CHECK(s.first_pass_verdicts.fail == 2);
    REQUIRE(s.rounds.size() == 1);
    CHECK(s.rounds[0].eligible == 4);
    CHECK(s.rounds[0].retried == 4);
    CHECK(s.rounds[0].outcomes.pass == 4);
    CHECK(s.rounds[0].passed_after == 18);
    CHECK(s.composite_passed == 18);
    CHECK(s.summary == "first pass 14/20 (4 timeouts at 600 s, 2 failures); after retrying the 4 timeouts at 1800 s: 18/20");
    // The first attempts are untouched by the retries.
    CHECK(r.tasks[1].attempts.size() == 2);
    CHECK(r.tasks[1].attempts[0].verdict == Verdict::timeout);
    CHECK(r.tasks[1].attempts[0].timeout_s == 600);
}

TEST_CASE("report eval: a selective retry says how many of the eligible tasks it retried") {
    const EvalScore s = score_evaluation(humaneval(false));
    CHECK(s.rounds[0].eligible == 4);
    CHECK(s.rounds[0].retried == 3);
    CHECK(s.summary == "first pass 14/20 (4 timeouts at 600 s, 2 failures); after retrying 3 of the 4 timeouts at 1800 s: 17/20");
}

TEST_CASE("report eval: token caps, errors, mixed limits and a second round") {
    EvalRecord r;
    r.name = "gsm8k-5";
    for (int i = 0; i < 5; ++i) add_task(r, "q" + std::to_string(i), "math", "?");
    SamplingControls capped = kLocal;
    capped.max_tokens = 2048;
    record_attempt(r, "q0", attempt(Verdict::pass, 300));
    record_attempt(r, "q1", attempt(Verdict::token_cap, 300, 0, capped));
    record_attempt(r, "q2", attempt(Verdict::timeout, 300));
    record_attempt(r, "q3", attempt(Verdict::timeout, 120));
    record_attempt(r, "q4", attempt(Verdict::error, 300));
    EvalScore s = score_evaluation(r);
    CHECK(s.summary == "first pass 1/5 (2 timeouts (1 at 300 s, 1 at 120 s), 1 token-cap exhaustion at 2048 tokens, 1 error)");
    CHECK(s.composite_passed == 1);

    const int r1 = begin_retry_round(r, "raise the cap", {Verdict::token_cap, Verdict::error}, 300, 8192);
    CHECK(tasks_to_retry(r, r1) == std::vector<std::string>{"q1", "q4"});
    record_attempt(r, "q1", attempt(Verdict::fail, 300, r1));
    record_attempt(r, "q4", attempt(Verdict::pass, 300, r1));
    const int r2 = begin_retry_round(r, "retry the rest", {Verdict::timeout, Verdict::fail}, 900, 0);
    CHECK(tasks_to_retry(r, r2) == std::vector<std::string>{"q1", "q2", "q3"});
    record_attempt(r, "q2", attempt(Verdict::pass, 900, r2));
    s = score_evaluation(r);
    CHECK(s.first_pass_passed == 1);
    CHECK(s.composite_passed == 3);
    CHECK(s.summary ==
          "first pass 1/5 (2 timeouts (1 at 300 s, 1 at 120 s), 1 token-cap exhaustion at 2048 tokens, 1 error); "
          "after retrying the 1 token-cap exhaustion and the 1 error at 300 s with max tokens 8192: 2/5; "
          "after retrying 0 of the 1 failure and 1 of the 2 timeouts at 900 s: 3/5");
}

TEST_CASE("report eval: the history rules refuse overwriting or reordering attempts") {
    EvalRecord r = humaneval();
    // A second first pass would replace the first.
    CHECK_THROWS_AS(record_attempt(r, "HumanEval/1", attempt(Verdict::pass, 600)), strata::Error);
    // Passed tasks are not retried; rounds must exist and move forward.
    CHECK_THROWS_AS(record_attempt(r, "HumanEval/0", attempt(Verdict::pass, 1800, 1)), strata::Error);
    CHECK_THROWS_AS(record_attempt(r, "HumanEval/2", attempt(Verdict::pass, 1800, 2)), strata::Error);
    // Round 1 retries timeouts only: a failure cannot slip into it.
    CHECK_THROWS_AS(record_attempt(r, "HumanEval/2", attempt(Verdict::pass, 1800, 1)), strata::Error);
    CHECK_THROWS_AS(record_attempt(r, "nope", attempt(Verdict::pass, 1)), strata::Error);
    CHECK_THROWS_AS(add_task(r, "HumanEval/3", "code", ""), strata::Error);
    CHECK_THROWS_AS(begin_retry_round(r, "x", {Verdict::pass}, 1, 0), strata::Error);
    CHECK(score_evaluation(r).composite_passed == 18);  // nothing changed

    // A record read back with a rewritten history is refused by the score.
    EvalRecord bad = humaneval();
    bad.tasks[1].attempts.erase(bad.tasks[1].attempts.begin());
    CHECK_THROWS_AS(score_evaluation(bad), strata::Error);
}

TEST_CASE("report eval: a task with no attempt counts as an error in the denominator") {
    EvalRecord r;
    add_task(r, "a", "math", "");
    add_task(r, "b", "math", "");
    record_attempt(r, "a", attempt(Verdict::pass, 10));
    const EvalScore s = score_evaluation(r);
    CHECK(s.summary == "first pass 1/2 (1 error)");
}

TEST_CASE("report eval: the record survives the round trip through JSON") {
    const EvalRecord r = humaneval();
    const EvalRecord back = parse_eval_record(eval_record_json(r));
    REQUIRE(back.tasks.size() == 20);
    CHECK(back.tasks[6].attempts.size() == 2);
    CHECK(back.tasks[6].attempts[1].timeout_s == 1800);
    CHECK(back.tasks[6].attempts[0].sampling == kLocal);
    CHECK(score_evaluation(back).summary == score_evaluation(r).summary);
    CHECK_THROWS_AS(parse_eval_record("{"), strata::Error);
    CHECK_THROWS_AS(parse_eval_record("{\"name\": 1}"), strata::Error);
    CHECK_THROWS_AS(parse_eval_record(R"({"name": "", "rounds": [], "tasks": [{"id": "a"}]})"), strata::Error);
}

TEST_CASE("report eval compare: identical runs are comparable") {
    const std::string a = report_with(humaneval());
    const Comparability c = compare_evaluations(a, a);
    CHECK(c.comparable);
    CHECK(c.differences.empty());
}

TEST_CASE("report eval compare: every difference in artifact, subset and controls is listed") {
    EvalRecord a = humaneval();
    EvalRecord b;
    b.name = "cloud";
    // B: tasks 0..17 only, plus one A lacks; task 3 at temperature 1 and a 2048-token cap; task 4
    // with another seed; task 5 with another timeout; task 8 with another prompt.
    for (int i = 0; i < 18; ++i) add_task(b, "HumanEval/" + std::to_string(i), "code", i == 8 ? "other" : "def f" + std::to_string(i));
    add_task(b, "extra", "code", "");
    for (int i = 0; i < 18; ++i) {
        SamplingControls s = kLocal;
        double timeout = 600;
        if (i == 3) s.temperature = 1, s.max_tokens = 2048;
        if (i == 4) s.seed = 2;
        if (i == 5) timeout = 300;
        record_attempt(b, "HumanEval/" + std::to_string(i), attempt(Verdict::pass, timeout, 0, s));
    }
    record_attempt(b, "extra", attempt(Verdict::pass, 600));
    const Comparability c = compare_evaluations(report_with(a), report_with(b, std::string(64, 'c')));
    CHECK_FALSE(c.comparable);
    std::set<std::string> what;
    for (const Difference& d : c.differences) what.insert(d.what);
    CHECK(what.count("artifact.model_identity"));
    CHECK(what.count("tasks: only in A"));
    CHECK(what.count("tasks: only in B"));
    CHECK(what.count("task HumanEval/3: sampling.temperature"));
    CHECK(what.count("task HumanEval/3: sampling.max_tokens"));
    CHECK(what.count("task HumanEval/4: sampling.seed"));
    CHECK(what.count("task HumanEval/5: timeout_s"));
    CHECK(what.count("task HumanEval/8: prompt"));
    size_t only_a = 0;
    for (const Difference& d : c.differences) only_a += d.what == "tasks: only in A";
    CHECK(only_a == 2);  // HumanEval/18 and /19
    CHECK(c.differences.size() == 9);
}

TEST_CASE("report eval compare: unreadable reports are differences, not crashes") {
    const std::string good = report_with(humaneval());
    for (const std::string& bad : {std::string(""), std::string("[]"), std::string("{\"evaluations\": 3}"),
                                  std::string("{\"evaluations\": []}"), std::string(5000, '{'),
                                  std::string(R"({"evaluations": [{"name": "x", "rounds": [], "tasks": [{"id": "a", "kind": "", "prompt": "", "attempts": [{"round": 2}]}]}]})")}) {
        const Comparability c = compare_evaluations(good, bad);
        CHECK_FALSE(c.comparable);
        REQUIRE(c.differences.size() == 1);
        CHECK(c.differences[0].what == "report B unreadable");
    }
    CHECK_FALSE(compare_evaluations(good, good, 0, 1).comparable);
}
