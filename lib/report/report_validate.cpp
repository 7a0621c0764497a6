// validate_report_json: the rules of lib/report/schema/report.schema.json, section by section,
// then the arithmetic the schema cannot express. Keep the two in step: the unit tests check
// generated and broken reports against both.
#include <string>

#include "report/json_checker.hpp"
#include "report/json_io.hpp"
#include "report/report_json.hpp"

namespace strata::report {

using nlohmann::json;

namespace {

void check_artifact(JsonChecker& c, const json& a, const std::string& p) {
    if (!c.object(a, p, {"shards", "total_size_bytes", "model_identity", "architecture", "tensor_types", "labels"}))
        return;
    uint64_t sum = 0;
    bool sum_known = true;
    if (const json* shards = c.array(a, "shards", p))
        for (size_t i = 0; i < shards->size(); ++i) {
            const json& s = (*shards)[i];
            const std::string sp = JsonChecker::at(JsonChecker::at(p, "shards"), i);
            if (!c.object(s, sp, {"path", "size_bytes", "sha256"})) {
                sum_known = false;
                continue;
            }
            c.string(s, "path", sp);
            if (const json* size = c.integer(s, "size_bytes", sp, 0)) sum += size->get<uint64_t>();
            else sum_known = false;
            c.sha256(s, "sha256", sp);
        }
    if (const json* total = c.integer(a, "total_size_bytes", p, 0); total && sum_known && total->get<uint64_t>() != sum)
        c.problem(JsonChecker::at(p, "total_size_bytes"),
                  "is " + total->dump() + " but the shard sizes sum to " + std::to_string(sum));
    c.sha256(a, "model_identity", p);
    c.string(a, "architecture", p);
    if (const json* types = c.array(a, "tensor_types", p))
        for (size_t i = 0; i < types->size(); ++i) {
            const std::string tp = JsonChecker::at(JsonChecker::at(p, "tensor_types"), i);
            const json& t = (*types)[i];
            if (!c.object(t, tp, {"type", "count", "bytes"})) continue;
            c.string(t, "type", tp, false, 1);
            c.integer(t, "count", tp, 1);
            c.integer(t, "bytes", tp, 0);
        }
    if (const json* labels = c.sub_object(a, "labels", p, {"verified", "note", "values"})) {
        const std::string lp = JsonChecker::at(p, "labels");
        if (auto it = labels->find("verified"); it != labels->end() && *it != json(false))
            c.problem(JsonChecker::at(lp, "verified"), "must be false: publisher labels are never verified identity");
        c.string(*labels, "note", lp);
        if (auto it = labels->find("values"); it != labels->end() && !it->is_object())
            c.problem(JsonChecker::at(lp, "values"), std::string("expected an object, found ") + json_type_word(*it));
    }
}

void check_runtime(JsonChecker& c, const json& r, const std::string& p) {
    if (!c.object(r, p, {"strata_version", "git_commit", "build_type", "compiler", "cxx_flags", "cuda", "cpu",
                         "host_memory_bytes", "os"}))
        return;
    c.string(r, "strata_version", p, false, 1);
    c.string(r, "git_commit", p, false, 1);
    c.string(r, "build_type", p);
    if (const json* comp = c.sub_object(r, "compiler", p, {"id", "version"})) {
        c.string(*comp, "id", JsonChecker::at(p, "compiler"));
        c.string(*comp, "version", JsonChecker::at(p, "compiler"));
    }
    c.string(r, "cxx_flags", p);
    if (const json* cuda = c.sub_object(r, "cuda", p, {"present", "absent_reason", "runtime_version", "driver_version", "gpus"})) {
        const std::string cp = JsonChecker::at(p, "cuda");
        const json* present = c.boolean(*cuda, "present", cp);
        const json* reason = c.string(*cuda, "absent_reason", cp, true);
        c.string(*cuda, "runtime_version", cp, true);
        c.string(*cuda, "driver_version", cp, true);
        if (present && *present == json(false) && !reason)
            c.problem(JsonChecker::at(cp, "absent_reason"), "required when CUDA is absent (say why)");
        if (const json* gpus = c.array(*cuda, "gpus", cp))
            for (size_t i = 0; i < gpus->size(); ++i) {
                const std::string gp = JsonChecker::at(JsonChecker::at(cp, "gpus"), i);
                if (!c.object((*gpus)[i], gp, {"name", "memory_bytes"})) continue;
                c.string((*gpus)[i], "name", gp);
                c.integer((*gpus)[i], "memory_bytes", gp, 0, true);
            }
    }
    if (const json* cpu = c.sub_object(r, "cpu", p, {"model", "logical_cores"})) {
        c.string(*cpu, "model", JsonChecker::at(p, "cpu"));
        c.integer(*cpu, "logical_cores", JsonChecker::at(p, "cpu"), 1, true);
    }
    c.integer(r, "host_memory_bytes", p, 0, true);
    c.string(r, "os", p);
}

void check_link_settings(JsonChecker& c, const json& link, const char* side, const std::string& p) {
    const json* s = c.sub_object(link, side, p,
                                 {"source", "send_buffer_bytes", "recv_buffer_bytes", "mtu_bytes", "tcp_nodelay",
                                  "interface", "other"});
    if (!s) return;
    const std::string sp = JsonChecker::at(p, side);
    c.string(*s, "source", sp);
    c.integer(*s, "send_buffer_bytes", sp, 0, true);
    c.integer(*s, "recv_buffer_bytes", sp, 0, true);
    c.integer(*s, "mtu_bytes", sp, 0, true);
    c.boolean(*s, "tcp_nodelay", sp, true);
    c.string(*s, "interface", sp, true);
    if (auto it = s->find("other"); it != s->end()) {
        if (!it->is_object()) c.problem(JsonChecker::at(sp, "other"), "expected an object");
        else
            for (const auto& [k, v] : it->items())
                if (!v.is_string()) c.problem(JsonChecker::at(JsonChecker::at(sp, "other"), k), "expected a string");
    }
}

void check_transport(JsonChecker& c, const json& t, const std::string& p) {
    if (!c.object(t, p, {"links"})) return;
    if (const json* links = c.array(t, "links", p))
        for (size_t i = 0; i < links->size(); ++i) {
            const std::string lp = JsonChecker::at(JsonChecker::at(p, "links"), i);
            const json& l = (*links)[i];
            if (!c.object(l, lp, {"from", "to", "kind", "configured", "observed"})) continue;
            c.string(l, "from", lp);
            c.string(l, "to", lp);
            c.string(l, "kind", lp);
            check_link_settings(c, l, "configured", lp);
            check_link_settings(c, l, "observed", lp);
        }
}

void check_deployment(JsonChecker& c, const json& d, const std::string& p) {
    if (!c.object(d, p, {"nodes", "kv_type", "slots", "configured_context_tokens", "model_context_tokens",
                         "largest_verified_input_tokens"}))
        return;
    if (const json* nodes = c.array(d, "nodes", p))
        for (size_t i = 0; i < nodes->size(); ++i) {
            const std::string np = JsonChecker::at(JsonChecker::at(p, "nodes"), i);
            const json& n = (*nodes)[i];
            if (!c.object(n, np, {"name", "address", "layers", "backend"})) continue;
            c.string(n, "name", np, false, 1);
            c.string(n, "address", np);
            c.string(n, "backend", np);
            if (const json* layers = c.sub_object(n, "layers", np, {"begin", "end"})) {
                const std::string lp = JsonChecker::at(np, "layers");
                const json* b = c.integer(*layers, "begin", lp, 0);
                const json* e = c.integer(*layers, "end", lp, 0);
                if (b && e && b->get<int64_t>() > e->get<int64_t>())
                    c.problem(lp, "begin is after end");
            }
        }
    c.string(d, "kv_type", p);
    c.integer(d, "slots", p, 1);
    c.integer(d, "configured_context_tokens", p, 0);
    c.integer(d, "model_context_tokens", p, 0, true);
    c.integer(d, "largest_verified_input_tokens", p, 0, true);
}

}  // namespace

// Defined beside the code that writes each section (memory_json.cpp, eval_json.cpp).
void check_memory_record(JsonChecker& c, const json& m, const std::string& path);
void check_evaluation(JsonChecker& c, const json& e, const std::string& path);

std::vector<std::string> validate_report_json(std::string_view text) {
    std::string error;
    auto doc = parse_untrusted_json(text, &error);
    if (!doc) return {"/: " + error};
    JsonChecker c;
    const json& d = *doc;
    if (!c.object(d, "", {"schema", "created_utc", "title", "artifact", "runtime", "transport", "deployment",
                          "memory", "benchmarks", "evaluations"}))
        return c.problems();
    if (auto it = d.find("schema"); it != d.end() && *it != json(kSchemaVersion))
        c.problem("/schema", std::string("must be \"") + kSchemaVersion + "\" (found " + it->dump() + ")");
    c.string(d, "created_utc", "", false, 1);
    c.string(d, "title", "");
    if (d.contains("artifact")) check_artifact(c, d["artifact"], "/artifact");
    if (d.contains("runtime")) check_runtime(c, d["runtime"], "/runtime");
    if (d.contains("transport")) check_transport(c, d["transport"], "/transport");
    if (d.contains("deployment")) check_deployment(c, d["deployment"], "/deployment");
    if (const json* memory = c.array(d, "memory", ""))
        for (size_t i = 0; i < memory->size(); ++i) check_memory_record(c, (*memory)[i], JsonChecker::at("/memory", i));
    if (const json* benchmarks = c.array(d, "benchmarks", ""))
        for (size_t i = 0; i < benchmarks->size(); ++i) {
            const std::string bp = JsonChecker::at("/benchmarks", i);
            if (c.object((*benchmarks)[i], bp, {"name"}, false)) c.string((*benchmarks)[i], "name", bp, false, 1);
        }
    if (const json* evaluations = c.array(d, "evaluations", ""))
        for (size_t i = 0; i < evaluations->size(); ++i)
            check_evaluation(c, (*evaluations)[i], JsonChecker::at("/evaluations", i));
    return c.problems();
}

}  // namespace strata::report
