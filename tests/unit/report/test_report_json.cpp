// The report file: a generated report validates against the committed schema (checked here by a
// small checker for the schema keywords it uses) and against the library's validator; broken
// reports fail both; the sections keep labels unverified and configured/observed apart; any
// text read back is handled without a crash.
#include <doctest/doctest.h>

#include <fstream>
#include <functional>
#include <regex>
#include <set>
#include <sstream>

#include <nlohmann/json.hpp>

#include "gguf/digest.hpp"
#include "gguf/model_file.hpp"
#include "report/eval_json.hpp"
#include "report/memory_sampler.hpp"
#include "report/report_json.hpp"
#include "test_support.hpp"
#include "util/error.hpp"

using nlohmann::json;
using namespace strata::report;

namespace {

// Checks a document against a JSON Schema that uses only the keywords listed in kKeywords;
// enough for lib/report/schema/report.schema.json, not a general implementation.
class SchemaSubsetChecker {
public:
    static inline const std::set<std::string> kKeywords = {
        "$schema", "$id", "title", "description", "$defs", "$ref", "type", "const", "enum", "required",
        "properties", "additionalProperties", "items", "minimum", "minLength", "pattern"};

    explicit SchemaSubsetChecker(const json& root) : root_(root) {}

    std::vector<std::string> check(const json& doc) {
        errors_.clear();
        check(root_, doc, "");
        return errors_;
    }

    // Every keyword the schema uses, wherever it is (properties and $defs hold schemas by name).
    static void collect_keywords(const json& schema, std::set<std::string>& out) {
        if (!schema.is_object()) return;
        for (const auto& [k, v] : schema.items()) {
            out.insert(k);
            if (k == "properties" || k == "$defs")
                for (const auto& [name, sub] : v.items()) collect_keywords(sub, out);
            else if (k == "items" || k == "additionalProperties")
                collect_keywords(v, out);
        }
    }

private:
    const json& resolve(const std::string& ref) {
        REQUIRE(ref.rfind("#/$defs/", 0) == 0);
        return root_["$defs"][ref.substr(8)];
    }

    static bool has_type(const json& v, const std::string& t) {
        if (t == "object") return v.is_object();
        if (t == "array") return v.is_array();
        if (t == "string") return v.is_string();
        if (t == "integer") return v.is_number_integer();
        if (t == "number") return v.is_number();
        if (t == "boolean") return v.is_boolean();
        if (t == "null") return v.is_null();
        return false;
    }

    void check(const json& schema, const json& v, const std::string& path) {
        if (schema.contains("$ref")) return check(resolve(schema["$ref"]), v, path);
        if (schema.contains("type")) {
            bool ok = false;
            if (schema["type"].is_string()) ok = has_type(v, schema["type"]);
            else
                for (const auto& t : schema["type"]) ok = ok || has_type(v, t);
            if (!ok) return errors_.push_back(path + ": type");
        }
        if (schema.contains("const") && v != schema["const"]) errors_.push_back(path + ": const");
        if (schema.contains("enum") &&
            std::find(schema["enum"].begin(), schema["enum"].end(), v) == schema["enum"].end())
            errors_.push_back(path + ": enum");
        if (schema.contains("minimum") && v.is_number() && v.get<double>() < schema["minimum"].get<double>())
            errors_.push_back(path + ": minimum");
        if (v.is_string()) {
            if (schema.contains("minLength") && v.get<std::string>().size() < schema["minLength"].get<size_t>())
                errors_.push_back(path + ": minLength");
            if (schema.contains("pattern") &&
                !std::regex_search(v.get<std::string>(), std::regex(schema["pattern"].get<std::string>())))
                errors_.push_back(path + ": pattern");
        }
        if (v.is_object()) {
            if (schema.contains("required"))
                for (const auto& k : schema["required"])
                    if (!v.contains(k.get<std::string>())) errors_.push_back(path + "/" + k.get<std::string>() + ": required");
            for (const auto& [k, sub] : v.items()) {
                if (schema.contains("properties") && schema["properties"].contains(k))
                    check(schema["properties"][k], sub, path + "/" + k);
                else if (schema.contains("additionalProperties")) {
                    const json& ap = schema["additionalProperties"];
                    if (ap.is_boolean()) {
                        if (!ap.get<bool>()) errors_.push_back(path + "/" + k + ": additionalProperties");
                    } else
                        check(ap, sub, path + "/" + k);
                }
            }
        }
        if (v.is_array() && schema.contains("items"))
            for (size_t i = 0; i < v.size(); ++i) check(schema["items"], v[i], path + "/" + std::to_string(i));
    }

    const json& root_;
    std::vector<std::string> errors_;
};

json load_schema() {
    std::ifstream in(std::string(STRATA_SOURCE_DIR) + "/lib/report/schema/report.schema.json");
    REQUIRE(in);
    return json::parse(in);
}

EvalRecord sample_eval() {
    EvalRecord r;
    r.name = "code-subset";
    SamplingControls s{0.2, 0.95, 40, 7, 8192};
    for (int i = 0; i < 5; ++i) add_task(r, "t" + std::to_string(i), "code", "prompt " + std::to_string(i));
    const Verdict first[] = {Verdict::pass, Verdict::pass, Verdict::timeout, Verdict::fail, Verdict::timeout};
    for (int i = 0; i < 5; ++i) {
        Attempt a;
        a.sampling = s;
        a.timeout_s = 600;
        a.verdict = first[i];
        a.wall_s = first[i] == Verdict::timeout ? 600 : 12.5;
        record_attempt(r, "t" + std::to_string(i), a);
    }
    const int round = begin_retry_round(r, "retry timeouts", {Verdict::timeout}, 1800, 0);
    for (const std::string& id : tasks_to_retry(r, round)) {
        Attempt a;
        a.round = round;
        a.sampling = s;
        a.timeout_s = 1800;
        a.verdict = Verdict::pass;
        a.wall_s = 995.8;
        record_attempt(r, id, a);
    }
    return r;
}

Report sample_report() {
    Report r;
    r.title = "sample";
    auto model = strata::gguf::ModelFile::open({strata::test::gguf_fixture("tiny-model-00001-of-00003.gguf").string()});
    strata::gguf::DigestOptions opt;
    opt.use_cache = false;
    r.artifact = describe_artifact(*model, opt);
    r.runtime = describe_runtime();
    Link link;
    link.from = "head";
    link.to = "worker1";
    link.kind = "tcp";
    link.configured.source = "command line";
    link.configured.send_buffer_bytes = 4u << 20;
    link.configured.mtu_bytes = 9000;
    link.configured.other["rdma.inline"] = "316";
    link.observed.source = "getsockopt(SO_SNDBUF, SO_RCVBUF), SIOCGIFMTU";
    link.observed.send_buffer_bytes = 8u << 20;
    link.observed.recv_buffer_bytes = 131072;
    link.observed.mtu_bytes = 4096;
    link.observed.tcp_nodelay = true;
    link.observed.interface_name = "eth0";
    r.transport.links.push_back(link);
    r.deployment.nodes = {{"head", "", 0, 12, "cpu"}, {"worker1", "10.0.0.2:7070", 12, 24, "cpu"}};
    r.deployment.kv_type = "f16";
    r.deployment.slots = 1;
    r.deployment.configured_context_tokens = 1048576;
    r.deployment.model_context_tokens = 131072;
    std::vector<MemorySample> samples(3);
    for (int i = 0; i < 3; ++i) {
        samples[size_t(i)].t_s = 0.1 * i;
        samples[size_t(i)].rss_bytes = uint64_t(100 + 50 * i) << 20;
        samples[size_t(i)].vm_hwm_bytes = uint64_t(100 + 50 * i) << 20;
        samples[size_t(i)].context_tokens = 512 * i;
    }
    r.memory.push_back(memory_record_json("head", samples, 100));
    r.benchmarks.push_back(R"({"name": "decode", "tokens": 128, "seconds": [1.5, 1.6]})");
    r.evaluations.push_back(eval_record_json(sample_eval()));
    return r;
}

}  // namespace

TEST_CASE("report: the committed schema uses only the keywords the test checker understands") {
    std::set<std::string> used;
    SchemaSubsetChecker::collect_keywords(load_schema(), used);
    for (const std::string& k : used) {
        CAPTURE(k);
        CHECK(SchemaSubsetChecker::kKeywords.count(k) == 1);
    }
}

TEST_CASE("report: a generated report validates against the schema file and the library validator") {
    const std::string text = report_to_json(sample_report());
    const json doc = json::parse(text);
    const json schema = load_schema();
    SchemaSubsetChecker checker(schema);
    const auto schema_errors = checker.check(doc);
    for (const auto& e : schema_errors) CAPTURE(e);
    CHECK(schema_errors.empty());
    CHECK(validate_report_json(text).empty());

    CHECK(doc["schema"] == "strata.report/1");
    CHECK(doc["artifact"]["shards"].size() == 3);
    uint64_t sum = 0;
    for (const auto& s : doc["artifact"]["shards"]) sum += s["size_bytes"].get<uint64_t>();
    CHECK(doc["artifact"]["total_size_bytes"] == sum);
    // Identity is the digest; the name the file gives itself is only a label.
    CHECK(doc["artifact"]["labels"]["verified"] == false);
    CHECK(doc["artifact"]["labels"]["values"].contains("general.name"));
    CHECK_FALSE(doc["artifact"].contains("name"));
    // Configured and observed stay two objects with their own values.
    const json& link = doc["transport"]["links"][0];
    CHECK(link["configured"]["mtu_bytes"] == 9000);
    CHECK(link["observed"]["mtu_bytes"] == 4096);
    CHECK(link["configured"]["recv_buffer_bytes"].is_null());
    CHECK(link["observed"]["recv_buffer_bytes"] == 131072);
    // Absent things are recorded as absent, with the reason.
    CHECK(doc["runtime"]["cuda"]["present"] == false);
    CHECK(doc["runtime"]["cuda"]["absent_reason"].is_string());
    CHECK(doc["runtime"]["git_commit"].get<std::string>().size() > 0);
    CHECK(doc["deployment"]["largest_verified_input_tokens"].is_null());
    CHECK(doc["deployment"]["configured_context_tokens"] == 1048576);
    CHECK(doc["evaluations"][0]["score"]["first_pass_passed"] == 2);
    CHECK(doc["evaluations"][0]["score"]["composite_passed"] == 4);
}

TEST_CASE("report: broken reports fail both the schema and the validator") {
    const json good = json::parse(report_to_json(sample_report()));
    const json schema = load_schema();
    SchemaSubsetChecker checker(schema);
    struct Breakage {
        const char* what;
        std::function<void(json&)> apply;
    };
    const std::vector<Breakage> breakages = {
        {"missing section", [](json& d) { d.erase("runtime"); }},
        {"wrong schema version", [](json& d) { d["schema"] = "strata.report/0"; }},
        {"unknown top-level field", [](json& d) { d["score"] = 18; }},
        {"short sha256", [](json& d) { d["artifact"]["shards"][0]["sha256"] = "abc"; }},
        {"upper-case identity", [](json& d) { d["artifact"]["model_identity"] = std::string(64, 'A'); }},
        {"labels claimed verified", [](json& d) { d["artifact"]["labels"]["verified"] = true; }},
        {"negative size", [](json& d) { d["artifact"]["shards"][1]["size_bytes"] = -5; }},
        {"size as text", [](json& d) { d["artifact"]["shards"][1]["size_bytes"] = "5 GB"; }},
        {"merged transport", [](json& d) { d["transport"]["links"][0].erase("observed"); }},
        {"missing null field", [](json& d) { d["deployment"].erase("largest_verified_input_tokens"); }},
        {"zero slots", [](json& d) { d["deployment"]["slots"] = 0; }},
        {"bad verdict", [](json& d) { d["evaluations"][0]["tasks"][0]["attempts"][0]["verdict"] = "ok"; }},
        {"benchmark without name", [](json& d) { d["benchmarks"][0].erase("name"); }},
        {"memory sample without time", [](json& d) { d["memory"][0]["samples"][0].erase("t_s"); }},
    };
    for (const Breakage& b : breakages) {
        CAPTURE(b.what);
        json doc = good;
        b.apply(doc);
        CHECK_FALSE(checker.check(doc).empty());
        CHECK_FALSE(validate_report_json(doc.dump()).empty());
    }
}

TEST_CASE("report: the validator checks the arithmetic the schema cannot state") {
    const json good = json::parse(report_to_json(sample_report()));
    const json schema = load_schema();
    SchemaSubsetChecker checker(schema);
    {
        json doc = good;
        doc["artifact"]["total_size_bytes"] = doc["artifact"]["total_size_bytes"].get<uint64_t>() + 1;
        CHECK(checker.check(doc).empty());
        const auto problems = validate_report_json(doc.dump());
        REQUIRE(problems.size() == 1);
        CHECK(problems[0].find("/artifact/total_size_bytes") == 0);
    }
    {
        // A composite passed off as the first pass.
        json doc = good;
        doc["evaluations"][0]["score"]["first_pass_passed"] = 4;
        CHECK(checker.check(doc).empty());
        const auto problems = validate_report_json(doc.dump());
        REQUIRE(problems.size() == 1);
        CHECK(problems[0].find("/evaluations/0/score/first_pass_passed") == 0);
    }
    {
        // A retry written as the first attempt (history rewritten).
        json doc = good;
        auto& attempts = doc["evaluations"][0]["tasks"][2]["attempts"];
        attempts.erase(attempts.begin());
        CHECK(checker.check(doc).empty());
        CHECK_FALSE(validate_report_json(doc.dump()).empty());
    }
    {
        // A peak that no sample shows (an occupancy snapshot or a guess presented as the peak).
        json doc = good;
        doc["memory"][0]["summary"]["sampled_peak_rss_bytes"] = 1ull << 40;
        CHECK(checker.check(doc).empty());
        const auto problems = validate_report_json(doc.dump());
        REQUIRE(problems.size() == 1);
        CHECK(problems[0].find("/memory/0/summary/sampled_peak_rss_bytes") == 0);
    }
    {
        json doc = good;
        doc["deployment"]["nodes"][0]["layers"]["begin"] = 30;
        CHECK_FALSE(validate_report_json(doc.dump()).empty());
    }
}

TEST_CASE("report: report_to_json refuses what would not validate and free sections that are not objects") {
    Report r = sample_report();
    r.benchmarks.push_back("[1, 2]");
    CHECK_THROWS_AS(report_to_json(r), strata::Error);
    r = sample_report();
    r.benchmarks.push_back("{\"name\": ");
    CHECK_THROWS_AS(report_to_json(r), strata::Error);
    r = sample_report();
    r.artifact.model_identity = "not a digest";
    CHECK_THROWS_AS(report_to_json(r), strata::Error);
}

TEST_CASE("report: any text given to the validator gives problems, never a crash") {
    CHECK_FALSE(validate_report_json("").empty());
    CHECK_FALSE(validate_report_json("null").empty());
    CHECK_FALSE(validate_report_json("[]").empty());
    CHECK_FALSE(validate_report_json("{\"schema\": 1}").empty());
    CHECK_FALSE(validate_report_json(std::string(100000, '[')).empty());
    CHECK_FALSE(validate_report_json("{\"a\": \"\xff\xfe\"}").empty());
    // Every prefix of a valid report, and a report with every value swapped for another type.
    const std::string text = report_to_json(sample_report());
    for (size_t n = 0; n < text.size(); n += 97) CHECK_FALSE(validate_report_json(text.substr(0, n)).empty());
    const json doc = json::parse(text);
    std::vector<json::json_pointer> paths;
    std::function<void(const json&, const json::json_pointer&)> walk = [&](const json& v, const json::json_pointer& at) {
        paths.push_back(at);
        if (v.is_object())
            for (const auto& [k, child] : v.items()) walk(child, at / k);
        else if (v.is_array())
            for (size_t i = 0; i < v.size(); ++i) walk(v[i], at / i);
    };
    walk(doc, json::json_pointer());
    const json replacements[] = {nullptr, json("x"), json(-1), json(1.5), json::array(), json::object(), json(true)};
    size_t found = 0;
    for (size_t i = 1; i < paths.size(); i += 5)
        for (const json& r : replacements) {
            json broken = doc;
            broken[paths[i]] = r;
            found += validate_report_json(broken.dump()).empty() ? 0 : 1;
        }
    CHECK(found > 0);
    CHECK(validate_report_json(doc.dump()).empty());
}
