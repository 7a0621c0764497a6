// The Markdown rendering says what the JSON says: IEC units beside exact bytes, publisher labels
// under "(unverified)", configured and observed side by side, the first pass beside the
// composite, the configured window beside the verified input, the sampled peak beside its cadence.
#include <doctest/doctest.h>

#include <nlohmann/json.hpp>

#include "report/eval_json.hpp"
#include "report/memory_sampler.hpp"
#include "report/report_json.hpp"
#include "report/report_markdown.hpp"
#include "report/units.hpp"
#include "util/error.hpp"

using namespace strata::report;

namespace {

Report small_report() {
    Report r;
    r.title = "md | test";
    r.created_utc = "2025-08-07T00:00:00Z";
    r.artifact.shards = {{"/m/a-00001-of-00002.gguf", 3ull << 30, std::string(64, '1')},
                         {"/m/a-00002-of-00002.gguf", 1ull << 29, std::string(64, '2')}};
    r.artifact.model_identity = std::string(64, 'f');
    r.artifact.architecture = "kimi-linear";
    r.artifact.tensor_types = {{"iq1_s", 10, 3ull << 30}, {"f32", 4, 1ull << 29}};
    r.artifact.labels = {{"general.name", "\"Kimi K3\""}, {"general.size_label", "\"1T\""}};
    r.runtime = describe_runtime();
    Link l;
    l.from = "head";
    l.to = "spark2";
    l.kind = "rdma";
    l.configured.source = "fabric overview";
    l.configured.mtu_bytes = 9000;
    l.observed.source = "deployment configuration";
    l.observed.mtu_bytes = 4096;
    l.observed.other["inline"] = "316";
    l.observed.other["rx_depth"] = "24";
    r.transport.links.push_back(l);
    r.deployment.nodes = {{"head", "", 0, 20, "cuda"}, {"spark2", "10.0.0.2:50052", 20, 40, "cuda"}};
    r.deployment.kv_type = "f16";
    r.deployment.configured_context_tokens = 1048576;
    std::vector<MemorySample> s(2);
    s[0].rss_bytes = 1ull << 30;
    s[0].vm_hwm_bytes = 1ull << 30;
    s[1].t_s = 0.5;
    s[1].rss_bytes = 2ull << 30;
    s[1].vm_hwm_bytes = 5ull << 30;
    s[1].context_tokens = 4096;
    r.memory.push_back(memory_record_json("head", s, 250));
    r.benchmarks.push_back(R"({"name": "decode", "tokens_per_s_median": 2.9, "runs": [1, 2]})");
    EvalRecord e;
    e.name = "humaneval";
    add_task(e, "HumanEval/1", "code", "def f():");
    add_task(e, "HumanEval/2", "code", "def g():");
    Attempt a;
    a.sampling = {0.2, 0.95, 40, 1, 8192};
    a.timeout_s = 600;
    a.verdict = Verdict::timeout;
    record_attempt(e, "HumanEval/1", a);
    a.verdict = Verdict::pass;
    record_attempt(e, "HumanEval/2", a);
    const int round = begin_retry_round(e, "retry timeouts", {Verdict::timeout}, 1800, 0);
    a.round = round;
    a.timeout_s = 1800;
    record_attempt(e, "HumanEval/1", a);
    r.evaluations.push_back(eval_record_json(e));
    return r;
}

bool has(const std::string& md, const std::string& s) { return md.find(s) != std::string::npos; }

}  // namespace

TEST_CASE("report markdown: IEC units, exact bytes and derived totals beside their inputs") {
    CHECK(iec_bytes(0) == "0 B");
    CHECK(iec_bytes(1023) == "1023 B");
    CHECK(iec_bytes(1536) == "1.50 KiB");
    CHECK(iec_bytes(3ull << 30) == "3.00 GiB");
    CHECK(iec_bytes_exact(3ull << 30) == "3.00 GiB (3221225472 B)");
    CHECK(format_number(600) == "600");
    CHECK(format_number(0.25) == "0.25");

    const std::string md = render_markdown(report_to_json(small_report()), {{"Memory over time", "memory.png"}});
    CHECK(has(md, "# md \\| test"));
    CHECK(has(md, "3.00 GiB (3221225472 B)"));
    CHECK(has(md, "| total (sum of the 2 shards above) | 3.50 GiB (3758096384 B) |"));
    CHECK_FALSE(has(md, " GB"));
    CHECK(has(md, "![Memory over time](memory.png)"));
}

TEST_CASE("report markdown: labels are unverified, transport sides are kept apart") {
    const std::string md = render_markdown(report_to_json(small_report()));
    CHECK(has(md, "### Publisher labels (unverified)"));
    CHECK(has(md, "| `general.name` | Kimi K3 |"));
    CHECK(has(md, "| setting | configured | observed |"));
    CHECK(has(md, "| MTU | 9000 | 4096 |"));
    CHECK(has(md, "| inline | — | 316 |"));
    CHECK(has(md, "| source | fabric overview | deployment configuration |"));
    CHECK(has(md, "CUDA | absent: "));
}

TEST_CASE("report markdown: context, memory and scores each keep their qualifiers") {
    const std::string md = render_markdown(report_to_json(small_report()));
    CHECK(has(md, "configured window (what memory was sized for; not an input that was run) | 1048576 |"));
    CHECK(has(md, "largest input actually completed and verified | not measured (no context probe ran) |"));
    CHECK(has(md, "| sampled peak RSS | 2.00 GiB (2147483648 B) | max of 2 samples, one every 250 ms over 500 ms; at t = 500 ms, context 4096 tokens |"));
    CHECK(has(md, "kernel high-water mark (VmHWM) | 5.00 GiB (5368709120 B)"));
    CHECK(has(md, "**first pass 1/2 (1 timeout at 600 s); after retrying the 1 timeout at 1800 s: 2/2**"));
    CHECK(has(md, "| first pass (never replaced) | 1 | 2 |"));
    CHECK(has(md, "| after retry round 1 | 2 | 2 | 1 of 1 eligible tasks retried"));
    CHECK(has(md, "temp 0.2, top-p 0.95, top-k 40, seed 1, max 8192 tokens, timeout 600 s"));
    CHECK(has(md, "| tokens_per_s_median | 2.9 |"));
}

TEST_CASE("report markdown: an invalid report is refused with its problems") {
    CHECK_THROWS_AS(render_markdown("{}"), strata::Error);
    CHECK_THROWS_AS(render_markdown("not json"), strata::Error);
    auto doc = nlohmann::json::parse(report_to_json(small_report()));
    doc["artifact"]["labels"]["verified"] = true;
    try {
        render_markdown(doc.dump());
        FAIL("rendered an invalid report");
    } catch (const strata::Error& e) {
        CHECK(std::string(e.what()).find("/artifact/labels/verified") != std::string::npos);
    }
}

TEST_CASE("report markdown: durations read with 3 significant digits in µs, ms or s") {
    CHECK(format_duration(0) == "0 s");
    CHECK(format_duration(0.000123456) == "123 µs");
    CHECK(format_duration(0.0000012345) == "1.23 µs");
    CHECK(format_duration(0.0123456) == "12.3 ms");
    CHECK(format_duration(0.9996) == "1 s");
    CHECK(format_duration(2.5) == "2.5 s");
    CHECK(format_duration(1234.6) == "1235 s");  // no integer digit dropped
    CHECK(format_duration(1e-6, 6) == "1 µs");
    CHECK(format_duration(600, 6) == "600 s");
    CHECK(format_significant(1234.5678, 4) == "1235");
    CHECK(format_significant(0.000123456, 3) == "0.000123");
}

namespace {

// small_report() with a benchmark as strata-bench writes one: a prompt length with a warm-up and
// two measured runs, and (when asked) a context probe that completed but recalled nothing.
std::string bench_report(bool with_probe, bool verified = false) {
    Report r = small_report();
    r.benchmarks.clear();
    r.evaluations.clear();
    r.benchmarks.push_back(R"({"name": "prompt 128 tokens, generate 4", "kind": "prompt_length",
        "spread": {"prefill_s": {"n": 2, "min": 0.000123456, "median": 0.0002, "max": 0.0003, "stddev": 0.00001},
                   "decode_tokens_per_s": {"n": 2, "min": 1234.5678, "median": 1300.0, "max": 1400.25, "stddev": 12.3456}},
        "runs": [
          {"label": "w", "warmup": true, "prompt_tokens": 128, "output_tokens": 4, "prefill_s": 0.000123456,
           "decode_s": 0.0123456, "decode_tokens_per_s": 243.0001, "token_times_s": [0.001, 0.002, 0.003, 0.004]},
          {"label": "r1", "warmup": false, "prompt_tokens": 128, "output_tokens": 4, "prefill_s": 1.5,
           "decode_s": 2.25, "decode_tokens_per_s": 1.3333333, "token_times_s": [1.6, 2.0, 2.8, 3.7]}]})");
    if (with_probe) {
        r.deployment.configured_context_tokens = 1040;
        if (verified) r.deployment.largest_verified_input_tokens = 1024;
        r.benchmarks.push_back(R"({"name": "context probe 1024 tokens", "kind": "context_probe",
            "input_tokens_stated": 1024, "configured_context_tokens": 1040, "completed_input_tokens": 1024,
            "largest_verified_input_tokens": null,
            "runs": [{"depth": 0.5, "fact_position_tokens": 500, "input_tokens": 1024, "completed": true,
                      "recalled": false, "prefill_s": 0.5, "output": "no | idea"}]})");
    }
    return report_to_json(r);
}

}  // namespace

TEST_CASE("report markdown: a context probe that did not verify says 'none verified', never 'not measured'") {
    const std::string md = render_markdown(bench_report(true));
    CHECK(has(md, "| largest input actually completed and verified | none verified (a 1024-token input completed, "
                  "not verified; configured window 1040 tokens) |"));
    CHECK_FALSE(has(md, "not measured"));
    CHECK(has(md, "| largest_verified_input_tokens | none verified |"));
    CHECK(has(md, "| depth | fact at token | input tokens | completed | recalled | prefill | answer |"));
    CHECK(has(md, "| 0.5 | 500 | 1024 | yes | no | 500 ms | `no \\| idea` |"));

    const std::string verified = render_markdown(bench_report(true, true));
    CHECK(has(verified, "| largest input actually completed and verified | 1024 |"));
    const std::string no_probe = render_markdown(bench_report(false));
    CHECK(has(no_probe, "| largest input actually completed and verified | not measured (no context probe ran) |"));
}

TEST_CASE("report markdown: benchmark runs as a table, timestamps left to the JSON and the plots") {
    const std::string md = render_markdown(bench_report(false));
    CHECK(has(md, "| run | warm-up | prompt tokens | output tokens | prefill | decode | decode tok/s |"));
    CHECK(has(md, "| 1 | yes | 128 | 4 | 123 µs | 12.3 ms | 243 |"));
    CHECK(has(md, "| 2 | no | 128 | 4 | 1.5 s | 2.25 s | 1.333 |"));
    CHECK(has(md, "Per-token timestamps (`token_times_s`) are kept in the JSON report and drawn by `strata-report plot`."));
    CHECK(has(md, "| prefill_s | 200 µs | 123 µs | 300 µs | 10 µs | 2 |"));
    CHECK(has(md, "| decode_tokens_per_s | 1300 | 1235 | 1400 | 12.35 | 2 |"));
    CHECK_FALSE(has(md, "```json"));  // no raw dump of the runs
    CHECK_FALSE(has(md, "0.001, 0.002"));
    CHECK_FALSE(has(md, "| kind |"));
    // The JSON keeps every value in full.
    CHECK(bench_report(false).find("0.000123456") != std::string::npos);
}

TEST_CASE("report markdown: a timeout of 0 (no timeout) reads 'none', not '0 s'") {
    Report r = small_report();
    r.benchmarks.clear();
    r.evaluations.clear();
    EvalRecord e;
    e.name = "math";
    add_task(e, "a", "math", "1+1=");
    Attempt a;
    a.sampling = {0, 1, 0, 7, 16};
    a.timeout_s = 0;
    a.wall_s = 0.000042;
    a.verdict = Verdict::fail;
    record_attempt(e, "a", a);
    const int round = begin_retry_round(e, "retry failures", {Verdict::fail}, 0, 0);
    a.round = round;
    record_attempt(e, "a", a);
    r.evaluations.push_back(eval_record_json(e));
    const std::string md = render_markdown(report_to_json(r));
    CHECK(has(md, "max 16 tokens, timeout none"));
    CHECK(has(md, "| retry failures | fail | none |"));
    CHECK(has(md, "fail (42 µs)"));
    CHECK_FALSE(has(md, "timeout 0 s"));
    CHECK_FALSE(has(md, "| 0 s |"));
}
