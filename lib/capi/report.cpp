// The "Reports" section of strata.h: lib/report behind JSON text in and JSON text out, so that
// programs on the public headers (strata-bench, strata-eval, strata-report) and the Python
// bindings write, check, render and compare the same report files as the library's own tests.
#include <cmath>
#include <cstring>
#include <filesystem>
#include <fstream>
#include <memory>
#include <string>
#include <string_view>
#include <vector>

#include <nlohmann/json.hpp>

#include "capi/guard.hpp"
#include "capi/handles.hpp"
#include "gguf/digest.hpp"
#include "report/artifact.hpp"
#include "report/eval_compare.hpp"
#include "report/eval_json.hpp"
#include "report/json_io.hpp"
#include "report/memory_sampler.hpp"
#include "report/png_plot.hpp"
#include "report/report.hpp"
#include "report/report_json.hpp"
#include "report/report_markdown.hpp"
#include "report/runtime_info.hpp"
#include "report/sandbox.hpp"

#if defined(STRATA_HAVE_CUDA) && STRATA_HAVE_CUDA
#include "runtime/runtime_record.hpp"
#endif

struct strata_memory_sampler {
    explicit strata_memory_sampler(std::chrono::milliseconds cadence) : sampler(cadence) {}
    strata::report::MemorySampler sampler;
    // strata_memory_sampler_json's snapshot that did not fit the caller's buffer (see there).
    mutable std::string pending, pending_node;
};

namespace {

using nlohmann::json;
using strata::Status;
using strata::fail;
using strata::capi::require;
namespace report = strata::report;

// The caller's text (length bytes, NUL not required) after the pointer check.
std::string_view input(const char* text, size_t length, const char* what) {
    if (length) require(text, what);
    return {length ? text : "", length};
}

json parse(std::string_view text, const char* what) {
    std::string error;
    auto doc = report::parse_untrusted_json(text, &error);
    if (!doc) fail(Status::format, std::string(what) + " is not valid JSON: " + error);
    return std::move(*doc);
}

std::string dump(const json& v) { return v.dump(2, ' ', false, json::error_handler_t::replace); }

void out(const std::string& text, char* buffer, size_t capacity, size_t* out_needed, const char* what) {
    strata::capi::copy_text_out(text, buffer, capacity, out_needed, what);
}

// A member of an untrusted object, with its type checked; nullptr when absent and optional.
const json* member(const json& obj, const char* key, json::value_t type, const char* where, bool optional = false) {
    auto it = obj.find(key);
    if (it == obj.end()) {
        if (optional) return nullptr;
        fail(Status::format, std::string(where) + ": missing \"" + key + "\"");
    }
    const bool ok = type == json::value_t::number_float ? it->is_number() : it->type() == type ||
                    (type == json::value_t::number_unsigned && it->is_number_unsigned());
    if (!ok)
        fail(Status::format, std::string(where) + ": \"" + key + "\" is " + report::json_type_word(*it) +
                                 ", expected " + report::json_type_word(json(type)));
    return &*it;
}

// Report sections that the report model keeps typed (artifact, runtime) are produced by
// serializing a report that holds them, so their JSON comes from the one serializer.
// The CUDA part of the runtime section: what the runtime says in a build with the CUDA backend.
void describe_cuda(report::CudaRecord& c) {
#if defined(STRATA_HAVE_CUDA) && STRATA_HAVE_CUDA
    const auto info = strata::cuda::describe_cuda_runtime();
    c.runtime_version = info.runtime_version;
    c.driver_version = info.driver_version;
    c.present = info.usable;
    c.absent_reason = info.usable ? "" : "built with the CUDA backend, but no usable device: " + info.why_not;
    for (const auto& [name, bytes] : info.gpus) c.gpus.push_back({name, bytes});
#else
    (void)c;  // describe_runtime's record: absent, no CUDA backend in this build
#endif
}

json typed_sections(const report::Artifact& artifact) {
    report::Report r;
    r.artifact = artifact;
    r.runtime = report::describe_runtime();
    describe_cuda(r.runtime.cuda);
    return parse(report::report_to_json(r), "report");
}

std::vector<report::MarkdownImage> images_from(const char* images_json) {
    std::vector<report::MarkdownImage> images;
    if (!images_json) return images;
    const json list = parse(images_json, "images_json");
    if (!list.is_array()) fail(Status::format, "images_json: expected an array of {\"caption\", \"path\"}");
    for (const json& item : list) {
        if (!item.is_object()) fail(Status::format, "images_json: every element must be an object");
        images.push_back({member(item, "caption", json::value_t::string, "images_json element")->get<std::string>(),
                          member(item, "path", json::value_t::string, "images_json element")->get<std::string>()});
    }
    return images;
}

report::SandboxLimits limits_from(const json& request) {
    report::SandboxLimits l;
    const json* limits = member(request, "limits", json::value_t::object, "request", true);
    if (!limits) return l;
    auto number = [&](const char* key, double max, double& field) {
        if (const json* v = member(*limits, key, json::value_t::number_float, "request.limits", true)) {
            const double x = v->get<double>();
            if (!(x > 0 && x <= max))
                fail(Status::invalid_argument, std::string("request.limits.") + key + " must be in (0, " +
                                                   std::to_string(max) + "]");
            field = x;
        }
    };
    auto count = [&](const char* key, uint64_t& field) {
        if (const json* v = member(*limits, key, json::value_t::number_unsigned, "request.limits", true)) {
            if (v->get<uint64_t>() == 0) fail(Status::invalid_argument, std::string("request.limits.") + key + " must be positive");
            field = v->get<uint64_t>();
        }
    };
    number("cpu_seconds", 86400, l.cpu_seconds);
    number("wall_seconds", 86400, l.wall_seconds);
    count("address_space_bytes", l.address_space_bytes);
    count("file_size_bytes", l.file_size_bytes);
    count("max_processes", l.max_processes);
    count("output_cap_bytes", l.output_cap_bytes);
    return l;
}

// Plots: a PNG per benchmark run with token timestamps and per memory record.
struct PlotFile {
    std::string caption, name;
};

std::string safe_piece(std::string text) {
    for (char& c : text)
        if (!std::isalnum(static_cast<unsigned char>(c)) && c != '-' && c != '_') c = '_';
    return text.substr(0, 40);
}

void write_png(const std::filesystem::path& path, const std::vector<uint8_t>& png) {
    std::ofstream f(path, std::ios::binary);
    f.write(reinterpret_cast<const char*>(png.data()), std::streamsize(png.size()));
    if (!f) fail(Status::io, "cannot write " + path.string());
}

std::vector<double> numbers(const json& list) {
    std::vector<double> v;
    for (const json& x : list) v.push_back(x.is_number() ? x.get<double>() : NAN);
    return v;
}

std::vector<PlotFile> draw_plots(const json& doc, const std::filesystem::path& dir, const std::string& prefix) {
    std::vector<PlotFile> files;
    size_t b_index = 0;
    for (const json& b : doc["benchmarks"]) {
        ++b_index;
        const auto runs = b.find("runs");
        if (runs == b.end() || !runs->is_array()) continue;
        size_t r_index = 0;
        for (const json& run : *runs) {
            ++r_index;
            if (!run.is_object() || run.value("warmup", false)) continue;
            const auto times = run.find("token_times_s");
            if (times == run.end() || !times->is_array() || times->size() < 2) continue;
            const std::string label = run.contains("label") && run["label"].is_string() ? run["label"].get<std::string>()
                                                                                         : "run " + std::to_string(r_index);
            const std::string name = prefix + "latency-" + std::to_string(b_index) + "-" + std::to_string(r_index) + "-" +
                                     safe_piece(label) + ".png";
            write_png(dir / name, report::plot_png(report::token_latency_plot(numbers(*times))));
            files.push_back({"Per-token latency, ms between consecutive tokens (" + b["name"].get<std::string>() +
                                 ", " + label + ")",
                             name});
        }
    }
    for (const json& m : doc["memory"]) {
        std::vector<report::MemorySample> samples;
        for (const json& s : m["samples"]) {
            report::MemorySample x;
            x.t_s = s["t_s"].get<double>();
            if (s["rss_bytes"].is_number()) x.rss_bytes = s["rss_bytes"].get<uint64_t>();
            if (s["gpu_used_bytes"].is_number()) x.gpu_used_bytes = s["gpu_used_bytes"].get<uint64_t>();
            x.context_tokens = s["context_tokens"].get<int64_t>();
            samples.push_back(x);
        }
        if (samples.size() < 2) continue;
        const std::string node = m["node"].get<std::string>();
        const std::string name = prefix + "memory-" + safe_piece(node) + ".png";
        write_png(dir / name, report::plot_png(report::memory_plot(samples)));
        files.push_back({"Memory over time, GiB against seconds: process RSS (blue), GPU memory used (red) (" + node +
                             ")",
                         name});
    }
    return files;
}

}  // namespace

extern "C" {

const char* strata_report_schema_version(void) { return report::kSchemaVersion; }

strata_status strata_report_artifact_json(strata_model* model, char* buffer, size_t capacity, size_t* out_needed) {
    STRATA_API_BEGIN
    require(model, "model");
    strata::capi::identity_of(model);  // hashes through the model's own cache, progress included
    strata::gguf::DigestOptions options;
    options.cache_dir = model->digest_cache_dir;
    options.use_cache = model->use_digest_cache;
    const auto artifact = report::describe_artifact(strata::capi::file_of(model), options);
    out(dump(typed_sections(artifact)["artifact"]), buffer, capacity, out_needed, "the artifact JSON");
    STRATA_API_END
}

strata_status strata_report_runtime_json(char* buffer, size_t capacity, size_t* out_needed) {
    STRATA_API_BEGIN
    report::Artifact placeholder;  // only the runtime section is taken from this report
    placeholder.model_identity = std::string(64, '0');
    out(dump(typed_sections(placeholder)["runtime"]), buffer, capacity, out_needed, "the runtime JSON");
    STRATA_API_END
}

strata_status strata_report_assemble(const char* sections_json, size_t length, char* buffer, size_t capacity,
                                     size_t* out_needed) {
    STRATA_API_BEGIN
    const json in = parse(input(sections_json, length, "sections_json"), "sections_json");
    if (!in.is_object()) fail(Status::format, "sections_json: expected a JSON object of report sections");
    json doc = json::object();
    doc["schema"] = report::kSchemaVersion;
    const json* created = member(in, "created_utc", json::value_t::string, "sections_json", true);
    doc["created_utc"] = created ? created->get<std::string>() : report::utc_now_iso8601();
    doc["title"] = *member(in, "title", json::value_t::string, "sections_json");
    for (const char* key : {"artifact", "runtime", "transport", "deployment"})
        doc[key] = *member(in, key, json::value_t::object, "sections_json");
    for (const char* key : {"memory", "benchmarks", "evaluations"})
        doc[key] = *member(in, key, json::value_t::array, "sections_json");
    for (const auto& [key, value] : in.items())
        if (!doc.contains(key)) fail(Status::format, "sections_json: unknown section \"" + key + "\"");
    const std::string text = dump(doc) + "\n";
    const auto problems = report::validate_report_json(text);
    if (!problems.empty()) {
        std::string message = "the report does not validate (" + std::to_string(problems.size()) + " problems):";
        for (const auto& p : problems) message += "\n  " + p;
        fail(Status::format, message);
    }
    out(text, buffer, capacity, out_needed, "the report");
    STRATA_API_END
}

strata_status strata_report_validate(const char* report_json, size_t length, char* buffer, size_t capacity,
                                     size_t* out_needed) {
    STRATA_API_BEGIN
    const json problems = report::validate_report_json(input(report_json, length, "report_json"));
    out(problems.dump(-1, ' ', false, json::error_handler_t::replace), buffer, capacity, out_needed,
        "the problem list");
    STRATA_API_END
}

strata_status strata_report_markdown(const char* report_json, size_t length, const char* images_json, char* buffer,
                                     size_t capacity, size_t* out_needed) {
    STRATA_API_BEGIN
    const auto text = input(report_json, length, "report_json");
    out(report::render_markdown(text, images_from(images_json)), buffer, capacity, out_needed, "the Markdown");
    STRATA_API_END
}

strata_status strata_report_eval_score(const char* evaluation_json, size_t length, char* buffer, size_t capacity,
                                       size_t* out_needed) {
    STRATA_API_BEGIN
    const auto record = report::parse_eval_record(input(evaluation_json, length, "evaluation_json"));
    out(dump(parse(report::eval_record_json(record), "evaluation")), buffer, capacity, out_needed, "the evaluation");
    STRATA_API_END
}

strata_status strata_report_eval_compare(const char* report_a, size_t length_a, const char* report_b, size_t length_b,
                                         size_t evaluation_a, size_t evaluation_b, char* buffer, size_t capacity,
                                         size_t* out_needed) {
    STRATA_API_BEGIN
    const auto c = report::compare_evaluations(input(report_a, length_a, "report_a"), input(report_b, length_b, "report_b"),
                                               evaluation_a, evaluation_b);
    json differences = json::array();
    for (const auto& d : c.differences) differences.push_back({{"what", d.what}, {"a", d.a}, {"b", d.b}});
    out(dump(json{{"comparable", c.comparable}, {"differences", differences}}), buffer, capacity, out_needed,
        "the comparison");
    STRATA_API_END
}

strata_status strata_report_sandbox_run(const char* request_json, size_t length, char* buffer, size_t capacity,
                                        size_t* out_needed) {
    STRATA_API_BEGIN
    const json request = parse(input(request_json, length, "request_json"), "request_json");
    if (!request.is_object()) fail(Status::format, "request_json: expected a JSON object");
    std::vector<std::string> argv;
    for (const json& a : *member(request, "argv", json::value_t::array, "request")) {
        if (!a.is_string()) fail(Status::format, "request.argv: every element must be a string");
        argv.push_back(a.get<std::string>());
    }
    if (argv.empty() || argv[0].empty()) fail(Status::invalid_argument, "request.argv: needs a command");
    std::vector<report::SandboxFile> files;
    if (const json* list = member(request, "files", json::value_t::array, "request", true))
        for (const json& f : *list) {
            if (!f.is_object()) fail(Status::format, "request.files: every element must be an object");
            report::SandboxFile file{member(f, "name", json::value_t::string, "request.files")->get<std::string>(),
                                     member(f, "content", json::value_t::string, "request.files")->get<std::string>()};
            if (file.name.empty() || file.name.find('/') != std::string::npos || file.name == "." || file.name == "..")
                fail(Status::invalid_argument, "request.files: '" + file.name + "' is not a plain file name");
            files.push_back(std::move(file));
        }
    // Running the command is not repeatable: a result that did not fit is kept for this thread and
    // handed out by the next call with the same request instead of running it again.
    thread_local std::string pending_request, pending_result;
    std::string result;
    if (!pending_request.empty() && pending_request == std::string_view(request_json, length)) {
        result = std::move(pending_result);
        pending_request.clear();
        pending_result.clear();
    } else {
        result = report::sandbox_result_json(report::run_sandboxed(argv, limits_from(request), files));
    }
    if (capacity < result.size() + 1) {
        pending_request.assign(request_json, length);
        pending_result = result;
    }
    out(result, buffer, capacity, out_needed, "the sandbox result");
    STRATA_API_END
}

strata_status strata_report_plot(const char* report_json, size_t length, const char* out_dir, const char* prefix,
                                 char* buffer, size_t capacity, size_t* out_needed) {
    STRATA_API_BEGIN
    const auto text = input(report_json, length, "report_json");
    const std::filesystem::path dir = require(out_dir, "out_dir");
    const std::string pre = prefix ? prefix : "";
    if (pre.find('/') != std::string::npos) fail(Status::invalid_argument, "prefix must not contain '/'");
    if (!std::filesystem::is_directory(dir)) fail(Status::not_found, "out_dir " + dir.string() + " is not a directory");
    const auto problems = report::validate_report_json(text);
    if (!problems.empty()) fail(Status::format, "not a valid report: " + problems.front());
    json list = json::array();
    for (const auto& f : draw_plots(parse(text, "report_json"), dir, pre))
        list.push_back({{"caption", f.caption}, {"path", f.name}});
    out(dump(list), buffer, capacity, out_needed, "the plot list");
    STRATA_API_END
}

strata_status strata_memory_sampler_create(int32_t cadence_ms, strata_memory_sampler** out_sampler) {
    STRATA_API_BEGIN
    require(out_sampler, "out_sampler");
    *out_sampler = nullptr;
    if (cadence_ms < 1 || cadence_ms > 3600000)
        fail(Status::invalid_argument, "cadence_ms is " + std::to_string(cadence_ms) + ", expected 1 to 3600000");
    *out_sampler = new strata_memory_sampler(std::chrono::milliseconds(cadence_ms));
    STRATA_API_END
}

void strata_memory_sampler_free(strata_memory_sampler* sampler) { delete sampler; }

strata_status strata_memory_sampler_start(strata_memory_sampler* sampler) {
    STRATA_API_BEGIN
    require(sampler, "sampler")->sampler.start();
    STRATA_API_END
}

strata_status strata_memory_sampler_set_context(strata_memory_sampler* sampler, int64_t context_tokens) {
    STRATA_API_BEGIN
    if (context_tokens < 0)
        fail(Status::invalid_argument, "context_tokens is " + std::to_string(context_tokens) + ", expected 0 or more");
    require(sampler, "sampler")->sampler.set_context_tokens(context_tokens);
    STRATA_API_END
}

strata_status strata_memory_sampler_stop(strata_memory_sampler* sampler) {
    STRATA_API_BEGIN
    require(sampler, "sampler")->sampler.stop();
    STRATA_API_END
}

strata_status strata_memory_sampler_json(const strata_memory_sampler* sampler, const char* node, char* buffer,
                                         size_t capacity, size_t* out_needed) {
    STRATA_API_BEGIN
    const auto& s = require(sampler, "sampler")->sampler;
    require(node, "node");
    // A running sampler adds samples between a size query and the call that fetches: the snapshot
    // that did not fit is kept and handed out by the next call for the same node.
    std::string text;
    if (!sampler->pending.empty() && sampler->pending_node == node) {
        text = std::move(sampler->pending);
        sampler->pending.clear();
    } else {
        text = dump(parse(report::memory_record_json(node, s.samples(), double(s.cadence().count())), "memory record"));
    }
    if (capacity < text.size() + 1) {
        sampler->pending = text;
        sampler->pending_node = node;
    }
    out(text, buffer, capacity, out_needed, "the memory record");
    STRATA_API_END
}

}  // extern "C"
