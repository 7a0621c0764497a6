// strata-bench kernels [-o REPORT.json] [--samples N] [--sample-ms MS] [--quick] [--filter TEXT]
//                      [--save-raw RAW.json | --from-raw RAW.json]
//
// The CUDA backend's kernels timed on model shapes (strata_cuda_kernel_bench_json), each figure
// beside a ceiling measured in the same run: IQ1_S decode GEMV (GB/s of weight bytes against the
// streaming-read kernel), Q8_0 and F16 GEMV, prefill products (the tensor-core path, dequantize +
// cuBLAS, DeviceMatmul's measured choice; TFLOP/s against cuBLAS f16 GEMM on the same shape),
// decode and prefill attention, the deepseek2/Kimi kernels (latent attention, KDA step and chunked
// forms, IQ1_S MoE expert products, attention residuals), rms_norm. Prints one table; with -o,
// writes REPORT.json (raw times, every sample, the device, versions) and REPORT.md. Without a
// usable GPU: "no CUDA device: REASON" and exit status 1. Public headers only.
#include <cstdio>
#include <string>

#include <nlohmann/json.hpp>

#include "common/cli_args.hpp"
#include "common/report_sections.hpp"
#include "strata/strata.hpp"

namespace {

using json = nlohmann::ordered_json;

const char* kUsage =
    "usage: strata-bench kernels [-o REPORT.json] [--samples N] [--sample-ms MS] [--quick] [--filter TEXT]\n"
    "Times the CUDA kernels on model shapes against ceilings measured in the same run (streaming read,\n"
    "device copy, cuBLAS f16 GEMM on the same shape). --samples: timed samples per row, the median\n"
    "reported (default 7); --sample-ms: launches per sample run for about this long (default 20);\n"
    "--quick: the short set for device checks; --filter: only rows whose name contains TEXT.\n"
    "Prints a table; -o also writes REPORT.json and REPORT.md. --save-raw keeps the library's JSON\n"
    "(strata_cuda_kernel_bench_json); --from-raw prints and reports a saved one without running anything.\n"
    "Exit status: 0, 1 without a usable GPU or on an error, 2 bad arguments, 3 when some rows failed.\n";

struct Options {
    std::string out;
    int samples = 7;
    double sample_ms = 20;
    bool quick = false;
    std::string filter;
    std::string save_raw, from_raw;
};

Options parse_args(int argc, char** argv) {
    Options o;
    for (int i = 1; i < argc; ++i) {
        const std::string a = argv[i];
        auto value = [&] { return cli::value(argc, argv, i); };
        if (a == "-o") o.out = value();
        else if (a == "--samples") o.samples = int(cli::number(a, value(), 1, 1000));
        else if (a == "--sample-ms") o.sample_ms = cli::number(a, value(), 0.01, 10000);
        else if (a == "--quick") o.quick = true;
        else if (a == "--filter") o.filter = value();
        else if (a == "--save-raw") o.save_raw = value();
        else if (a == "--from-raw") o.from_raw = value();
        else if (a == "-h" || a == "--help") cli::help(kUsage);
        else throw cli::usage_error("unknown argument " + a);
    }
    if (!o.save_raw.empty() && !o.from_raw.empty()) throw cli::usage_error("--save-raw and --from-raw exclude each other");
    return o;
}

void log_line(const char* line, void*) {
    std::fprintf(stderr, "  %s\n", line);
    std::fflush(stderr);
}

std::string num(const json& v, int decimals) {
    if (!v.is_number()) return "-";
    char buf[64];
    std::snprintf(buf, sizeof buf, "%.*f", decimals, v.get<double>());
    return buf;
}

// The table: one line per row, the figure beside its ceiling and the ratio.
json table(const json& doc) {
    json t = {{"columns", {"kernel", "time us", "figure", "unit", "ceiling", "ceiling is", "% of ceiling", "goal %",
                           "output finite"}},
              {"rows", json::array()}};
    for (const json& r : doc["rows"])
        t["rows"].push_back({r["name"], num(r["time_s"].get<double>() * 1e6, 2), num(r["figure"], 2), r["figure_unit"],
                             num(r["ceiling"], 2), r.value("ceiling_name", ""), num(r["percent_of_ceiling"], 1),
                             r.contains("goal_percent") ? num(r["goal_percent"], 0) : "-",
                             r.contains("output_finite") ? (r["output_finite"].get<bool>() ? "yes" : "NO") : "-"});
    return t;
}

void print_table(const json& doc, const json& t) {
    const json& d = doc["device"];
    auto text = [&](const char* key) {
        const json v = d.value(key, json(nullptr));
        return v.is_string() ? v.get<std::string>() : v.is_null() ? std::string("unknown") : v.dump();
    };
    std::printf("device: %s (cc %s), CUDA runtime %s, driver %s, cuBLAS %s\n", text("name").c_str(),
                text("compute_capability").c_str(), text("cuda_runtime_version").c_str(),
                text("cuda_driver_version").c_str(), text("cublas_version").c_str());
    for (const auto& [name, c] : doc["ceilings"].items()) {
        const json& rate = c.contains("gb_per_s") ? c["gb_per_s"] : c["traffic_gb_per_s"];
        std::printf("ceiling %-12s %10s GB/s%s\n", name.c_str(), num(rate, 1).c_str(),
                    c.contains("traffic_gb_per_s") ? " (read + write)" : "");
    }
    std::printf("%-62s %10s %10s %-8s %10s %7s %6s %s\n", "kernel", "time us", "figure", "unit", "ceiling", "%", "goal",
                "finite");
    for (const json& r : t["rows"])
        std::printf("%-62s %10s %10s %-8s %10s %7s %6s %s\n", r[0].get<std::string>().c_str(),
                    r[1].get<std::string>().c_str(), r[2].get<std::string>().c_str(), r[3].get<std::string>().c_str(),
                    r[4].get<std::string>().c_str(), r[6].get<std::string>().c_str(), r[7].get<std::string>().c_str(),
                    r[8].get<std::string>().c_str());
    for (const json& e : doc["errors"])
        std::printf("ERROR %s: %s\n", e["name"].get<std::string>().c_str(), e["error"].get<std::string>().c_str());
}

// A report without a model: the kernels ran on pseudo-random tensors.
json sections(const json& doc, const json& t) {
    const json& d = doc["device"];
    json artifact = {{"shards", json::array()},
                     {"total_size_bytes", 0},
                     {"model_identity", std::string(64, '0')},
                     {"architecture", "none (kernel benchmarks on pseudo-random tensors)"},
                     {"tensor_types", json::array()},
                     {"labels", {{"verified", false}, {"note", "no model file: nothing to label"}, {"values", json::object()}}}};
    json deployment = {
        {"nodes", {{{"name", "this process"}, {"address", "local"}, {"layers", {{"begin", 0}, {"end", 0}}},
                    {"backend", "cuda: " + d.value("name", std::string("unknown device"))}}}},
        {"kv_type", "f16 (attention rows)"},
        {"slots", 1},
        {"configured_context_tokens", 0},
        {"model_context_tokens", nullptr},
        {"largest_verified_input_tokens", nullptr}};
    json benchmarks = json::array();
    json summary = {{"name", "kernel table"}, {"kind", "kernel_table"}, {"table", t}};
    benchmarks.push_back(summary);
    json device = {{"name", "device"}, {"kind", "kernel_device"}, {"device_name", d.value("name", json(nullptr))}};
    for (const auto& [k, v] : d.items())
        if (k != "name") device[k] = v;
    benchmarks.push_back(device);
    json method = {{"name", "method"}, {"kind", "kernel_method"}};
    method.update(doc["method"]);
    method["options"] = doc["options"];
    benchmarks.push_back(method);
    for (const auto& [name, c] : doc["ceilings"].items()) {
        json e = c;
        e["name"] = "ceiling " + name;
        e["kind"] = "kernel_ceiling";
        benchmarks.push_back(e);
    }
    for (json r : doc["rows"]) {
        r["kind"] = "kernel";
        benchmarks.push_back(r);
    }
    if (!doc["errors"].empty()) benchmarks.push_back({{"name", "errors"}, {"kind", "kernel_errors"}, {"errors", doc["errors"]}});
    return {{"title", "strata-bench kernels"},
            {"artifact", artifact},
            {"runtime", json::parse(strata::reports::runtime_json())},
            {"transport", {{"links", json::array()}}},
            {"deployment", deployment},
            {"memory", json::array()},
            {"benchmarks", benchmarks},
            {"evaluations", json::array()}};
}

}  // namespace

int bench_kernels_main(int argc, char** argv) {
    const Options o = cli::parse_or_exit("strata-bench kernels", kUsage, [&] { return parse_args(argc, argv); });
    strata_cuda_kernel_bench_params p;
    strata_cuda_kernel_bench_default_params(&p);
    p.samples = o.samples;
    p.sample_seconds = o.sample_ms / 1e3;
    p.quick = o.quick ? 1 : 0;
    p.filter = o.filter.c_str();
    p.log = log_line;
    std::string text;
    try {
        if (!o.from_raw.empty()) text = report_sections::read_file(o.from_raw);
        else text = strata::reports::detail::text(
            [&](char* b, size_t c, size_t* n) { return strata_cuda_kernel_bench_json(&p, b, c, n); });
    } catch (const strata::error& e) {
        const std::string msg = e.what();
        if (e.status() == STRATA_ERR_UNSUPPORTED) {
            std::fprintf(stderr, "strata-bench kernels: %s%s\n",
                         msg.rfind("no CUDA device", 0) == 0 ? "" : "no CUDA device: ", msg.c_str());
            return 1;
        }
        std::fprintf(stderr, "strata-bench kernels: %s: %s\n", e.status_name(), msg.c_str());
        return 1;
    }
    try {
        if (!o.save_raw.empty()) report_sections::write_file(o.save_raw, text);
        const json doc = json::parse(text);
        for (const char* k : {"device", "method", "options", "ceilings", "rows", "errors"})
            if (!doc.contains(k)) throw std::runtime_error(std::string("the kernel benchmark JSON has no \"") + k + "\"");
        const json t = table(doc);
        print_table(doc, t);
        if (!o.out.empty()) {
            const std::string md = report_sections::write_report(sections(doc, t), o.out);
            std::fprintf(stderr, "report: %s and %s\n", o.out.c_str(), md.c_str());
        }
        return doc["errors"].empty() ? 0 : 3;
    } catch (const std::exception& e) {
        std::fprintf(stderr, "strata-bench kernels: %s\n", e.what());
        return 1;
    }
}
