#include "report/report_markdown.hpp"

#include <algorithm>
#include <set>

#include "report/json_io.hpp"
#include "report/markdown_table.hpp"
#include "report/report_json.hpp"
#include "report/units.hpp"
#include "util/error.hpp"

namespace strata::report {

using nlohmann::json;

namespace {

// The validator has run: types are as the schema says, nullable fields may be null.
std::string bytes_or_unknown(const json& v) { return v.is_null() ? "unknown" : iec_bytes_exact(v.get<uint64_t>()); }
std::string int_or(const json& v, const char* absent) { return v.is_null() ? absent : v.dump(); }
std::string text_or(const json& v, const char* absent) {
    return v.is_null() || (v.is_string() && v.get<std::string>().empty()) ? absent : v.get<std::string>();
}
std::string num(const json& v) { return v.is_null() ? "unknown" : format_number(v.get<double>()); }
// Measured durations with 3 significant digits in µs/ms/s; the JSON keeps the full value.
std::string duration(const json& v) { return v.is_number() ? format_duration(v.get<double>()) : "unknown"; }
// A configured time limit: 0 (or less) means no limit was set, which is not "0 s".
std::string time_limit(const json& v) {
    if (!v.is_number()) return "unknown";
    return v.get<double>() > 0 ? format_duration(v.get<double>(), 6) : "none";
}
bool ends_with(const std::string& s, const std::string& tail) {
    return s.size() >= tail.size() && s.compare(s.size() - tail.size(), tail.size(), tail) == 0;
}
// Keys naming seconds end in "_s" ("prefill_s"); rates end in "_per_s" ("decode_tokens_per_s").
bool is_seconds_key(const std::string& key) { return ends_with(key, "_s") && !ends_with(key, "_per_s"); }
// A free-form benchmark value in one cell: durations with units, other numbers with 4
// significant digits, integers and text as they are.
std::string scalar_cell(const std::string& key, const json& v) {
    if (v.is_null()) return key == "largest_verified_input_tokens" ? "none verified" : "none";
    if (v.is_string()) return md_cell(v.get<std::string>(), 1000);  // a method or result is read whole
    if (v.is_number_float()) return is_seconds_key(key) ? duration(v) : format_significant(v.get<double>(), 4);
    return md_cell(v.dump());
}
const json& field(const json& obj, const char* key) {
    static const json null_value;
    if (!obj.is_object()) return null_value;
    const auto it = obj.find(key);
    return it == obj.end() ? null_value : *it;
}

// A context probe among the benchmarks (bench_probe.cpp writes these fields); a context probe is
// what the "largest verified input" row reports on, so it must be told apart from "no probe ran".
bool is_context_probe(const json& b) {
    return field(b, "kind") == "context_probe" || b.contains("completed_input_tokens");
}

void artifact(std::string& md, const json& a) {
    md += "## Artifact\n\n";
    md += "- Model identity: " + md_code(a["model_identity"].get<std::string>()) +
          " (sha256 over metadata, tensor table and the shard digests below)\n";
    md += "- Architecture: " + md_cell(a["architecture"].get<std::string>()) + "\n\n";
    MarkdownTable shards({"#", "path", "size", "sha256"});
    size_t i = 0;
    for (const json& s : a["shards"])
        shards.row({std::to_string(++i), md_code(s["path"].get<std::string>()), iec_bytes_exact(s["size_bytes"].get<uint64_t>()),
                    md_code(s["sha256"].get<std::string>())});
    shards.row({"", "total (sum of the " + std::to_string(i) + " shards above)",
                iec_bytes_exact(a["total_size_bytes"].get<uint64_t>()), ""});
    md += shards.str() + "\n";
    MarkdownTable types({"tensor type", "tensors", "bytes"});
    for (const json& t : a["tensor_types"])
        types.row({md_cell(t["type"].get<std::string>()), t["count"].dump(), iec_bytes_exact(t["bytes"].get<uint64_t>())});
    if (!types.empty()) md += types.str() + "\n";
    md += "### Publisher labels (unverified)\n\n";
    md += md_cell(a["labels"]["note"].get<std::string>(), 1000) + ".\n\n";
    MarkdownTable labels({"metadata key", "value"});
    for (const auto& [k, v] : a["labels"]["values"].items())
        labels.row({md_code(k), md_cell(v.is_string() ? v.get<std::string>() : v.dump())});
    md += labels.empty() ? "The metadata carries no publisher labels.\n\n" : labels.str() + "\n";
}

void runtime(std::string& md, const json& r) {
    md += "## Runtime\n\n";
    MarkdownTable t({"", "value"});
    t.row({"strata", md_cell(r["strata_version"].get<std::string>()) + ", commit " + md_code(r["git_commit"].get<std::string>())});
    t.row({"build", md_cell(r["build_type"].get<std::string>()) + ", " + md_cell(r["compiler"]["id"].get<std::string>()) + " " +
                        md_cell(r["compiler"]["version"].get<std::string>())});
    t.row({"flags", md_code(r["cxx_flags"].get<std::string>())});
    const json& cuda = r["cuda"];
    if (cuda["present"].get<bool>()) {
        t.row({"CUDA runtime / driver", md_cell(text_or(cuda["runtime_version"], "unknown")) + " / " +
                                            md_cell(text_or(cuda["driver_version"], "unknown"))});
        std::string gpus;
        for (const json& g : cuda["gpus"])
            gpus += (gpus.empty() ? "" : "; ") + md_cell(g["name"].get<std::string>()) + " (" + bytes_or_unknown(g["memory_bytes"]) + ")";
        t.row({"GPUs", gpus.empty() ? "none listed" : gpus});
    } else {
        t.row({"CUDA", "absent: " + md_cell(text_or(cuda["absent_reason"], "no reason given"))});
    }
    t.row({"CPU", md_cell(r["cpu"]["model"].get<std::string>()) + ", " + int_or(r["cpu"]["logical_cores"], "unknown") +
                      " logical cores"});
    t.row({"host memory", bytes_or_unknown(r["host_memory_bytes"])});
    t.row({"OS", md_cell(r["os"].get<std::string>())});
    md += t.str() + "\n";
}

void transport(std::string& md, const json& t) {
    md += "## Transport\n\n";
    if (t["links"].empty()) {
        md += "No links (a single process).\n\n";
        return;
    }
    for (const json& l : t["links"]) {
        md += "### " + md_cell(l["from"].get<std::string>()) + " → " + md_cell(l["to"].get<std::string>()) + " (" +
              md_cell(l["kind"].get<std::string>()) + ")\n\n";
        const json &c = l["configured"], &o = l["observed"];
        MarkdownTable table({"setting", "configured", "observed"});
        table.row({"source", md_cell(c["source"].get<std::string>()), md_cell(o["source"].get<std::string>())});
        table.row({"send buffer", bytes_or_unknown(c["send_buffer_bytes"]), bytes_or_unknown(o["send_buffer_bytes"])});
        table.row({"receive buffer", bytes_or_unknown(c["recv_buffer_bytes"]), bytes_or_unknown(o["recv_buffer_bytes"])});
        table.row({"MTU", int_or(c["mtu_bytes"], "unknown"), int_or(o["mtu_bytes"], "unknown")});
        table.row({"TCP_NODELAY", int_or(c["tcp_nodelay"], "unknown"), int_or(o["tcp_nodelay"], "unknown")});
        table.row({"interface", md_cell(text_or(c["interface"], "unknown")), md_cell(text_or(o["interface"], "unknown"))});
        std::set<std::string> keys;
        for (const auto& [k, v] : c["other"].items()) keys.insert(k);
        for (const auto& [k, v] : o["other"].items()) keys.insert(k);
        for (const std::string& k : keys)
            table.row({md_cell(k), c["other"].contains(k) ? md_cell(c["other"][k].get<std::string>()) : "—",
                       o["other"].contains(k) ? md_cell(o["other"][k].get<std::string>()) : "—"});
        md += table.str() + "\n";
    }
}

// The "largest input actually completed and verified" cell: the figure when there is one; "none
// verified" beside what a probe did complete when one ran; "not measured" only when none ran.
std::string verified_input_cell(const json& d, const json& benchmarks) {
    if (!d["largest_verified_input_tokens"].is_null()) return d["largest_verified_input_tokens"].dump();
    std::string probes;
    for (const json& b : benchmarks) {
        if (!is_context_probe(b)) continue;
        const json& stated = field(b, "input_tokens_stated");
        const json& completed = field(b, "completed_input_tokens");
        std::string one = completed.is_number() ? "a " + completed.dump() + "-token input completed, not verified"
                          : stated.is_number()  ? "the " + stated.dump() + "-token input did not complete"
                                                : "the probe did not complete";
        probes += (probes.empty() ? "" : "; ") + one;
    }
    if (probes.empty()) return "not measured (no context probe ran)";
    return "none verified (" + probes + "; configured window " + d["configured_context_tokens"].dump() + " tokens)";
}

void deployment(std::string& md, const json& d, const json& benchmarks) {
    md += "## Deployment\n\n";
    MarkdownTable nodes({"node", "address", "layers", "backend"});
    for (const json& n : d["nodes"])
        nodes.row({md_cell(n["name"].get<std::string>()), md_cell(n["address"].get<std::string>()),
                   n["layers"]["begin"].dump() + " to " + n["layers"]["end"].dump() + " (end exclusive)",
                   md_cell(n["backend"].get<std::string>())});
    if (!nodes.empty()) md += nodes.str() + "\n";
    MarkdownTable ctx({"context", "tokens"});
    ctx.row({"configured window (what memory was sized for; not an input that was run)",
             d["configured_context_tokens"].dump()});
    ctx.row({"largest input actually completed and verified",
             verified_input_cell(d, benchmarks)});
    ctx.row({"model's context_length (metadata)", int_or(d["model_context_tokens"], "unknown")});
    md += ctx.str() + "\n";
    md += "KV cache type " + md_cell(d["kv_type"].get<std::string>()) + ", " + d["slots"].dump() + " slot(s).\n\n";
}

void memory(std::string& md, const json& records, const std::vector<MarkdownImage>& images) {
    md += "## Memory\n\n";
    if (records.empty()) md += "Not sampled.\n\n";
    for (const json& m : records) {
        const json& s = m["summary"];
        md += "### " + md_cell(m["node"].get<std::string>()) + "\n\n";
        md += "Method: " + md_cell(m["method"].get<std::string>(), 2000) + ".\n\n";
        MarkdownTable t({"figure", "value", "from"});
        t.row({"sampled peak RSS", bytes_or_unknown(s["sampled_peak_rss_bytes"]),
               "max of " + s["n_samples"].dump() + " samples, one every " +
                   (m["cadence_ms"].is_number() ? format_duration(m["cadence_ms"].get<double>() / 1000) : "unknown") +
                   " over " + duration(s["duration_s"]) + "; at t = " + duration(s["sampled_peak_t_s"]) + ", context " +
                   int_or(s["sampled_peak_context_tokens"], "unknown") + " tokens"});
        t.row({"kernel high-water mark (VmHWM)", bytes_or_unknown(s["kernel_hwm_bytes"]),
               "the kernel's figure for the whole process lifetime, not only the sampled window"});
        t.row({"lowest host MemAvailable", bytes_or_unknown(s["min_mem_available_bytes"]), "min over the samples"});
        t.row({"swap pages in / out during the run",
               int_or(s["swap_pages_in_delta"], "unknown") + " / " + int_or(s["swap_pages_out_delta"], "unknown"),
               "last minus first sample of /proc/vmstat pswpin / pswpout"});
        t.row({"sampled peak GPU memory", s["sampled_peak_gpu_used_bytes"].is_null() ? "no GPU figures" : bytes_or_unknown(s["sampled_peak_gpu_used_bytes"]),
               "max over the samples"});
        md += t.str() + "\n";
    }
    for (const MarkdownImage& img : images) md += "![" + md_cell(img.caption) + "](" + img.path + ")\n\n";
}

// One row per run of a prompt length; the per-token timestamps stay in the JSON and the plots.
void run_table(std::string& md, const json& runs) {
    MarkdownTable t({"run", "warm-up", "prompt tokens", "output tokens", "prefill", "decode", "decode tok/s"});
    size_t i = 0;
    bool timestamps = false;
    for (const json& r : runs) {
        const json& warm = field(r, "warmup");
        const json& rate = field(r, "decode_tokens_per_s");
        t.row({std::to_string(++i), warm.is_boolean() ? (warm.get<bool>() ? "yes" : "no") : "—",
               int_or(field(r, "prompt_tokens"), "—"), int_or(field(r, "output_tokens"), "—"),
               field(r, "prefill_s").is_number() ? duration(field(r, "prefill_s")) : "—",
               field(r, "decode_s").is_number() ? duration(field(r, "decode_s")) : "—",
               rate.is_number() ? format_significant(rate.get<double>(), 4) : "—"});
        timestamps = timestamps || field(r, "token_times_s").is_array();
    }
    md += t.str() + "\n";
    if (timestamps)
        md += "Per-token timestamps (`token_times_s`) are kept in the JSON report and drawn by `strata-report plot`.\n\n";
}

// One row per depth of a context probe, with the model's raw answer.
void probe_table(std::string& md, const json& runs) {
    MarkdownTable t({"depth", "fact at token", "input tokens", "completed", "recalled", "prefill", "answer"});
    for (const json& r : runs) {
        auto yes_no = [](const json& v) { return v.is_boolean() ? (v.get<bool>() ? "yes" : "no") : "—"; };
        std::string answer = field(r, "error").is_string() ? "error: " + field(r, "error").get<std::string>()
                             : field(r, "output").is_string() ? field(r, "output").get<std::string>()
                                                              : "—";
        if (answer.size() > 120) answer = answer.substr(0, 120) + "...";
        t.row({scalar_cell("depth", field(r, "depth")), int_or(field(r, "fact_position_tokens"), "—"),
               int_or(field(r, "input_tokens"), "—"), yes_no(field(r, "completed")), yes_no(field(r, "recalled")),
               field(r, "prefill_s").is_number() ? duration(field(r, "prefill_s")) : "—", md_code(answer)});
    }
    md += t.str() + "\n";
}

// Median, min, max and standard deviation of each figure across the measured runs.
void spread_table(std::string& md, const json& spread) {
    MarkdownTable t({"figure (measured runs)", "median", "min", "max", "stddev", "runs"});
    for (const auto& [k, v] : spread.items()) {
        auto cell = [&](const char* stat) { return scalar_cell(k, field(v, stat)); };
        t.row({md_cell(k), cell("median"), cell("min"), cell("max"), cell("stddev"), int_or(field(v, "n"), "—")});
    }
    md += t.str() + "\n";
}

bool is_run_list(const json& v) {
    return v.is_array() && !v.empty() && std::all_of(v.begin(), v.end(), [](const json& r) { return r.is_object(); });
}

// A benchmark's own summary table, {"columns": [names], "rows": [[cells]]} (strata-bench kernels);
// false when the member is not of that form (then it is shown as JSON like any other).
bool summary_table(std::string& md, const json& t) {
    if (!t.is_object() || !field(t, "columns").is_array() || !field(t, "rows").is_array()) return false;
    const json& columns = t["columns"];
    std::vector<std::string> header;
    for (const json& c : columns) {
        if (!c.is_string()) return false;
        header.push_back(md_cell(c.get<std::string>()));
    }
    if (header.empty()) return false;
    MarkdownTable table(header);
    for (const json& r : t["rows"]) {
        if (!r.is_array() || r.size() != columns.size()) return false;
        std::vector<std::string> cells;
        for (const json& v : r) cells.push_back(v.is_string() ? md_cell(v.get<std::string>()) : scalar_cell("", v));
        table.row(std::move(cells));
    }
    md += table.str() + "\n";
    return true;
}

void benchmarks(std::string& md, const json& list) {
    if (list.empty()) return;
    md += "## Benchmarks\n\n";
    for (const json& b : list) {
        md += "### " + md_cell(b["name"].get<std::string>()) + "\n\n";
        MarkdownTable t({"field", "value"});
        json nested = json::object();
        for (const auto& [k, v] : b.items()) {
            if (k == "name" || k == "kind" || k == "runs" || (k == "spread" && v.is_object())) continue;
            if (k == "table" && summary_table(md, v)) continue;
            if (v.is_structured()) nested[k] = v;
            else t.row({md_cell(k), scalar_cell(k, v)});
        }
        if (!t.empty()) md += t.str() + "\n";
        if (b.contains("spread") && b["spread"].is_object()) spread_table(md, b["spread"]);
        if (b.contains("runs") && is_run_list(b["runs"])) {
            if (is_context_probe(b)) probe_table(md, b["runs"]);
            else run_table(md, b["runs"]);
        } else if (b.contains("runs")) {
            nested["runs"] = b["runs"];
        }
        if (!nested.empty()) md += "```json\n" + nested.dump(2, ' ', false, json::error_handler_t::replace) + "\n```\n\n";
    }
}

std::string sampling_brief(const json& a) {
    const json& s = a["sampling"];
    return "temp " + num(s["temperature"]) + ", top-p " + num(s["top_p"]) + ", top-k " + s["top_k"].dump() + ", seed " +
           s["seed"].dump() + ", max " + s["max_tokens"].dump() + " tokens, timeout " + time_limit(a["timeout_s"]);
}

std::string counts_brief(const json& c) {
    std::string out;
    for (const char* k : {"pass", "fail", "timeout", "token_cap", "error"})
        if (c[k].get<int>() > 0) out += (out.empty() ? "" : ", ") + c[k].dump() + " " + k;
    return out.empty() ? "none" : out;
}

void evaluations(std::string& md, const json& list) {
    if (list.empty()) return;
    md += "## Evaluations\n\n";
    for (const json& e : list) {
        const json& s = e["score"];
        md += "### " + md_cell(e["name"].get<std::string>()) + "\n\n";
        md += "**" + md_cell(s["summary"].get<std::string>(), 2000) + "**\n\n";
        MarkdownTable score({"score", "passed", "of", "from"});
        score.row({"first pass (never replaced)", s["first_pass_passed"].dump(), s["n_tasks"].dump(),
                   "first attempts: " + counts_brief(s["first_pass_verdicts"])});
        for (const json& r : s["rounds"])
            score.row({"after retry round " + r["round"].dump(), r["passed_after"].dump(), s["n_tasks"].dump(),
                       r["retried"].dump() + " of " + r["eligible"].dump() + " eligible tasks retried (" +
                           counts_brief(r["retried_verdicts"]) + " before; " + counts_brief(r["outcomes"]) + " after)"});
        md += score.str() + "\n";
        if (!e["rounds"].empty()) {
            MarkdownTable rounds({"round", "label", "retries", "timeout", "max tokens"});
            for (const json& r : e["rounds"]) {
                std::string verdicts;
                for (const json& v : r["retry_verdicts"]) verdicts += (verdicts.empty() ? "" : ", ") + v.get<std::string>();
                rounds.row({r["round"].dump(), md_cell(r["label"].get<std::string>()), verdicts, time_limit(r["timeout_s"]),
                            r["max_tokens"].get<int64_t>() > 0 ? r["max_tokens"].dump() : "as first pass"});
            }
            md += rounds.str() + "\n";
        }
        MarkdownTable tasks({"task", "kind", "first pass", "first-pass controls", "retries"});
        for (const json& t : e["tasks"]) {
            const json& attempts = t["attempts"];
            if (attempts.empty()) {
                tasks.row({md_cell(t["id"].get<std::string>()), md_cell(t["kind"].get<std::string>()), "no attempt", "", ""});
                continue;
            }
            std::string retries;
            for (size_t i = 1; i < attempts.size(); ++i)
                retries += (i > 1 ? "; " : "") + std::string("round ") + attempts[i]["round"].dump() + ": " +
                           attempts[i]["verdict"].get<std::string>() + " (" + duration(attempts[i]["wall_s"]) + ")";
            tasks.row({md_cell(t["id"].get<std::string>()), md_cell(t["kind"].get<std::string>()),
                       attempts[0]["verdict"].get<std::string>() + " (" + duration(attempts[0]["wall_s"]) + ")",
                       sampling_brief(attempts[0]), retries.empty() ? "—" : retries});
        }
        md += tasks.str() + "\n";
    }
}

}  // namespace

std::string render_markdown(std::string_view text, const std::vector<MarkdownImage>& images) {
    const auto problems = validate_report_json(text);
    if (!problems.empty()) {
        std::string message = "not a valid report:";
        for (const auto& p : problems) message += "\n  " + p;
        fail(Status::format, message);
    }
    std::string error;
    const json doc = *parse_untrusted_json(text, &error);
    std::string md = "# " + (doc["title"].get<std::string>().empty() ? std::string("strata report") : md_cell(doc["title"].get<std::string>())) + "\n\n";
    md += "Schema " + md_code(doc["schema"].get<std::string>()) + ", written " + md_cell(doc["created_utc"].get<std::string>()) +
          ". Sizes in IEC units (1 GiB = 2^30 bytes) with the exact byte count.\n\n";
    artifact(md, doc["artifact"]);
    runtime(md, doc["runtime"]);
    transport(md, doc["transport"]);
    deployment(md, doc["deployment"], doc["benchmarks"]);
    memory(md, doc["memory"], images);
    benchmarks(md, doc["benchmarks"]);
    evaluations(md, doc["evaluations"]);
    return md;
}

}  // namespace strata::report
