// strata-inspect: print a GGUF model's metadata, tensor table, shard digests and identity, or
// the memory plan of its stages.
//
//   strata-inspect MODEL.gguf [MORE-SHARDS...] [--json] [--no-digests]
//   strata-inspect MODEL.gguf --tensor NAME --dump-f32 OUT.npy
//   strata-inspect MODEL.gguf --plan [--n-ctx N] [--kv-type f16|q8_0] [--layers A:B,... | --stages N]
//                             [--n-batch N] [--threads N] [--device cpu|cuda] [--json]
//
// Uses only the public C++ API (strata.hpp). Exit status: 0 success, 2 bad input (a bad file,
// an unknown tensor, bad arguments) with one line on stderr naming the file and the problem.
#include <chrono>
#include <cstdio>
#include <cstring>
#include <fstream>
#include <map>
#include <optional>
#include <iostream>
#include <sstream>
#include <string>
#include <vector>

#include <nlohmann/json.hpp>

#include "common/cli_args.hpp"
#include "strata/strata.hpp"

namespace {

struct Options {
    std::vector<std::string> paths;
    bool json = false;
    bool digests = true;
    std::string tensor;
    std::string dump_path;
    bool plan = false;
    std::optional<int64_t> n_ctx;  // unset: the model's context_length
    strata::plan_params plan_params;
    bool layers_given = false, stages_given = false;
    std::string plan_option;  // the last plan option given (they need --plan)
};

const char* kUsage =
    "usage: strata-inspect MODEL.gguf [MORE-SHARDS...] [--json] [--no-digests]\n"
    "       strata-inspect MODEL.gguf [MORE-SHARDS...] --tensor NAME --dump-f32 OUT.npy\n"
    "Prints metadata, the tensor table (name, type, shape, bytes, shard), the sha256 of every shard\n"
    "and the model identity. Give the first shard of a split model (NAME-00001-of-0000N.gguf) or\n"
    "every shard. --json prints the same as one JSON object; --no-digests skips hashing.\n"
    "\n"
    "       strata-inspect MODEL.gguf --plan [--n-ctx N] [--kv-type f16|q8_0] [--layers A:B,... | --stages N]\n"
    "                                 [--n-batch N] [--threads N] [--device cpu|cuda] [--json]\n"
    "Prints the memory plan of each stage without allocating or hashing anything: layers, weights,\n"
    "KV cache bytes per token, the KV cache at the configured context (--n-ctx, default the model's\n"
    "context_length) and at 1048576 tokens, scratch and total. --layers gives the stages' layer\n"
    "ranges, --stages N splits the layers evenly over N stages (default: one stage); --threads and\n"
    "--n-batch size the scratch as a session's (defaults: every hardware thread, 512 tokens).\n"
    "--device cuda plans each stage's device memory as a CUDA session or stage would (upload,\n"
    "device caches and workspaces; no GPU needed; --threads is then ignored); default cpu.\n"
    "--json prints the plan as JSON (strata_model_plan_json).\n";

bool plan_option(const std::string& a) {
    return a == "--n-ctx" || a == "--kv-type" || a == "--layers" || a == "--stages" || a == "--n-batch" ||
           a == "--threads" || a == "--device";
}

strata_kv_type kv_type(const std::string& name) {
    if (name == "f16") return STRATA_KV_F16;
    if (name == "q8_0") return STRATA_KV_Q8_0;
    throw cli::usage_error("--kv-type must be f16 or q8_0, got '" + name + "'");
}

strata_device device(const std::string& name) {
    if (name == "cpu") return STRATA_DEVICE_CPU;
    if (name == "cuda") return STRATA_DEVICE_CUDA;
    throw cli::usage_error("--device must be cpu or cuda, got '" + name + "'");
}

Options parse_args(int argc, char** argv) {
    Options o;
    for (int i = 1; i < argc; ++i) {
        const std::string a = argv[i];
        auto value = [&] { return cli::value(argc, argv, i); };
        auto count = [&](int64_t lo, int64_t hi) { return int64_t(cli::number(a, value(), double(lo), double(hi))); };
        if (a == "--json") o.json = true;
        else if (a == "--no-digests") o.digests = false;
        else if (a == "--tensor") o.tensor = value();
        else if (a == "--dump-f32") o.dump_path = value();
        else if (a == "--plan") o.plan = true;
        else if (plan_option(a)) {
            o.plan_option = a;
            if (a == "--n-ctx") o.n_ctx = count(1, int64_t(1) << 40);
            else if (a == "--kv-type") o.plan_params.kv_type = kv_type(value());
            else if (a == "--layers") o.plan_params.layers = value();
            else if (a == "--stages") o.plan_params.n_stages = int32_t(count(1, 1 << 20));
            else if (a == "--n-batch") o.plan_params.n_batch = count(1, 1 << 30);
            else if (a == "--device") o.plan_params.device = device(value());
            else o.plan_params.n_threads = int32_t(count(0, 1 << 16));  // --threads
            o.layers_given = o.layers_given || a == "--layers";
            o.stages_given = o.stages_given || a == "--stages";
        } else if (a == "-h" || a == "--help") cli::help(kUsage);
        else if (a.size() > 1 && a[0] == '-') throw cli::usage_error("unknown option " + a);
        else o.paths.push_back(a);
    }
    if (o.paths.empty()) throw cli::usage_error("no model file given");
    if (o.tensor.empty() != o.dump_path.empty()) throw cli::usage_error("--tensor and --dump-f32 go together");
    if (o.plan && !o.tensor.empty()) throw cli::usage_error("--plan and --tensor do not go together");
    if (o.layers_given && o.stages_given) throw cli::usage_error("give --layers or --stages, not both");
    if (!o.plan && !o.plan_option.empty()) throw cli::usage_error(o.plan_option + " needs --plan");
    return o;
}

std::string json_string(std::string_view s) {
    std::string out = "\"";
    for (unsigned char c : s) {
        switch (c) {
            case '"': out += "\\\""; break;
            case '\\': out += "\\\\"; break;
            case '\n': out += "\\n"; break;
            case '\t': out += "\\t"; break;
            case '\r': out += "\\r"; break;
            default:
                if (c < 0x20) {
                    char buf[8];
                    std::snprintf(buf, sizeof buf, "\\u%04x", c);
                    out += buf;
                } else {
                    out += char(c);
                }
        }
    }
    return out + "\"";
}

const char* value_type_name(strata_value_type t) {
    static const char* names[] = {"u8",   "i8",     "u16",   "i16", "u32", "i32", "f32",
                                  "bool", "string", "array", "u64", "i64", "f64"};
    return unsigned(t) < 13 ? names[t] : "?";
}

std::string type_label(const strata::metadata_type& t) {
    if (t.type != STRATA_VALUE_ARRAY) return value_type_name(t.type);
    return std::string("array[") + value_type_name(t.element_type) + "]";
}

std::string shape_text(const std::vector<int64_t>& shape) {
    std::string s = "[";
    for (size_t i = 0; i < shape.size(); ++i) s += (i ? ", " : "") + std::to_string(shape[i]);
    return s + "]";
}

// Long arrays are shortened for people; --json always prints everything.
std::string readable_value(const std::string& json, const strata::metadata_type& t) {
    if (json.size() <= 96) return json;
    std::string head = json.substr(0, 80);
    if (t.type == STRATA_VALUE_ARRAY) return head + " ... (" + std::to_string(t.count) + " elements)";
    return head + " ... (" + std::to_string(json.size()) + " bytes)";
}

// Progress on stderr for shards worth waiting for.
void show_progress(const char* what, uint64_t done, uint64_t total, void*) {
    static auto last = std::chrono::steady_clock::now();
    const auto now = std::chrono::steady_clock::now();
    if (total < (uint64_t(256) << 20)) return;
    if (done != total && now - last < std::chrono::milliseconds(500)) return;
    last = now;
    std::fprintf(stderr, "\rhashing %s: %5.1f%% of %.1f GiB%s", what, 100.0 * double(done) / double(total),
                 double(total) / double(1 << 30), done == total ? "\n" : "");
}

void write_npy(const std::string& path, const std::vector<float>& values, std::vector<int64_t> shape) {
    std::string dims;
    for (auto it = shape.rbegin(); it != shape.rend(); ++it) dims += std::to_string(*it) + ", ";
    if (shape.size() > 1) dims.resize(dims.size() - 1);  // "(5,)" for 1-D, "(5, 512)" for 2-D
    std::string header = "{'descr': '<f4', 'fortran_order': False, 'shape': (" + dims + "), }";
    const size_t unpadded = 10 + header.size() + 1;
    header.append((64 - unpadded % 64) % 64, ' ');
    header += '\n';
    std::ofstream out(path, std::ios::binary);
    if (!out) throw std::runtime_error(path + ": cannot create the file");
    out.write("\x93NUMPY\x01\x00", 8);
    const uint16_t len = uint16_t(header.size());
    const char len_bytes[2] = {char(len & 0xff), char(len >> 8)};
    out.write(len_bytes, 2);
    out << header;
    out.write(reinterpret_cast<const char*>(values.data()), std::streamsize(values.size() * sizeof(float)));
    if (!out) throw std::runtime_error(path + ": write failed");
}

// Per-type tensor counts, bytes and elements, as llama.cpp's loader prints them ("type iq1_m: 58
// tensors"), ordered by type name; and the file's totals.
struct TypeCount {
    uint64_t count = 0, bytes = 0, elements = 0;
};
struct TypeSummary {
    std::map<std::string, TypeCount> by_type;
    uint64_t bytes = 0, elements = 0;
};
TypeSummary summarize_types(strata::model& m) {
    TypeSummary s;
    for (const auto& t : m.tensors()) {
        TypeCount& c = s.by_type[t.type_name()];
        c.count += 1;
        c.bytes += t.n_bytes;
        c.elements += t.n_elements;
        s.bytes += t.n_bytes;
        s.elements += t.n_elements;
    }
    return s;
}
double bits_per_weight(uint64_t bytes, uint64_t elements) { return elements ? 8.0 * double(bytes) / double(elements) : 0.0; }

void print_text(strata::model& m, const Options& o) {
    std::cout << "GGUF v" << m.gguf_version() << ", " << m.shard_count() << " shard(s), " << m.metadata_count()
              << " metadata keys, " << m.tensor_count() << " tensors\n\nmetadata:\n";
    for (const auto& key : m.metadata_keys()) {
        auto t = m.type_of(key);
        std::printf("  %-40s %-14s %s\n", key.c_str(), type_label(t).c_str(),
                    readable_value(m.metadata_json(key), t).c_str());
    }
    std::printf("\ntensors:\n  %-32s %-7s %-22s %12s %5s\n", "name", "type", "shape", "bytes", "shard");
    uint64_t total = 0;
    for (const auto& t : m.tensors()) {
        std::printf("  %-32s %-7s %-22s %12llu %5u\n", t.name.c_str(), t.type_name().c_str(),
                    shape_text(t.shape).c_str(), (unsigned long long)t.n_bytes, t.shard);
        total += t.n_bytes;
    }
    std::printf("  total tensor bytes: %llu\n\ntensor types:\n", (unsigned long long)total);
    const TypeSummary types = summarize_types(m);
    for (const auto& [name, c] : types.by_type)
        std::printf("  type %-8s %6llu tensors %14llu bytes %8.4f bits/weight\n", (name + ":").c_str(),
                    (unsigned long long)c.count, (unsigned long long)c.bytes, bits_per_weight(c.bytes, c.elements));
    std::printf("  file: %llu weights in %llu bytes, %.4f bits/weight\n\nshards:\n",
                (unsigned long long)types.elements, (unsigned long long)types.bytes,
                bits_per_weight(types.bytes, types.elements));
    for (size_t i = 0; i < m.shard_count(); ++i) {
        auto s = m.shard(i);
        std::printf("  [%zu] %s  %llu bytes  v%u  alignment %u  %llu keys  %llu tensors\n", i, s.path.c_str(),
                    (unsigned long long)s.size, s.gguf_version, s.alignment, (unsigned long long)s.n_metadata,
                    (unsigned long long)s.n_tensors);
        if (o.digests) std::printf("      sha256 %s\n", m.shard_sha256(i).c_str());
    }
    if (o.digests) std::printf("\nmodel identity: %s\n", m.identity().c_str());
}

void print_json(strata::model& m, const Options& o) {
    std::ostringstream out;
    out << "{\"gguf_version\":" << m.gguf_version() << ",\"metadata\":{";
    bool first = true;
    for (const auto& key : m.metadata_keys()) {
        out << (first ? "" : ",") << json_string(key) << ":{\"type\":" << json_string(type_label(m.type_of(key)))
            << ",\"value\":" << m.metadata_json(key) << "}";
        first = false;
    }
    out << "},\"tensors\":[";
    first = true;
    for (const auto& t : m.tensors()) {
        out << (first ? "" : ",") << "{\"name\":" << json_string(t.name) << ",\"type\":" << json_string(t.type_name())
            << ",\"type_id\":" << t.type << ",\"shape\":[";
        for (size_t i = 0; i < t.shape.size(); ++i) out << (i ? "," : "") << t.shape[i];
        out << "],\"n_elements\":" << t.n_elements << ",\"n_bytes\":" << t.n_bytes << ",\"shard\":" << t.shard
            << ",\"file_offset\":" << t.file_offset << "}";
        first = false;
    }
    out << "],\"tensor_types\":[";
    const TypeSummary types = summarize_types(m);
    first = true;
    for (const auto& [name, c] : types.by_type) {
        out << (first ? "" : ",") << "{\"type\":" << json_string(name) << ",\"tensors\":" << c.count
            << ",\"bytes\":" << c.bytes << ",\"elements\":" << c.elements
            << ",\"bits_per_weight\":" << bits_per_weight(c.bytes, c.elements) << "}";
        first = false;
    }
    out << "],\"bits_per_weight\":" << bits_per_weight(types.bytes, types.elements) << ",\"shards\":[";
    for (size_t i = 0; i < m.shard_count(); ++i) {
        auto s = m.shard(i);
        out << (i ? "," : "") << "{\"path\":" << json_string(s.path) << ",\"size\":" << s.size
            << ",\"gguf_version\":" << s.gguf_version << ",\"alignment\":" << s.alignment
            << ",\"data_offset\":" << s.data_offset << ",\"n_metadata\":" << s.n_metadata
            << ",\"n_tensors\":" << s.n_tensors;
        if (o.digests) out << ",\"sha256\":" << json_string(m.shard_sha256(i));
        out << "}";
    }
    out << "]";
    if (o.digests) out << ",\"identity\":" << json_string(m.identity());
    out << "}\n";
    std::cout << out.str();
}

std::string size_text(uint64_t bytes) {
    char buf[32];
    const double b = double(bytes);
    if (bytes >= (uint64_t(1) << 30)) std::snprintf(buf, sizeof buf, "%.2f GiB", b / double(uint64_t(1) << 30));
    else if (bytes >= (uint64_t(1) << 20)) std::snprintf(buf, sizeof buf, "%.2f MiB", b / double(uint64_t(1) << 20));
    else if (bytes >= 1024) std::snprintf(buf, sizeof buf, "%.2f KiB", b / 1024.0);
    else std::snprintf(buf, sizeof buf, "%llu B", (unsigned long long)bytes);
    return buf;
}

// The plan as a table: one row per stage, the whole model's KV cache per token above it.
void print_plan(const std::string& text) {
    const auto plan = nlohmann::json::parse(text);
    const auto u = [](const nlohmann::json& j, const char* key) { return j.at(key).get<uint64_t>(); };
    const int64_t n_ctx = plan.at("n_ctx").get<int64_t>(), long_ctx = plan.at("long_context_tokens").get<int64_t>();
    const bool cuda = plan.value("device", "cpu") == "cuda";
    const std::string where = cuda ? "on the CUDA device" : std::to_string(plan.at("n_threads").get<int>()) + " threads";
    std::printf("memory plan: %s, %lld layers, %s KV cache, context %lld tokens (context_length %lld), micro-batch "
                "%lld, %s\n",
                plan.at("architecture").get<std::string>().c_str(), (long long)plan.at("n_layer").get<int64_t>(),
                plan.at("kv_type").get<std::string>().c_str(), (long long)n_ctx,
                (long long)plan.at("n_ctx_train").get<int64_t>(), (long long)plan.at("n_batch").get<int64_t>(),
                where.c_str());
    std::printf("KV cache per token, all layers: %llu B; at %lld tokens: %s; at %lld tokens: %s\n",
                (unsigned long long)u(plan, "kv_bytes_per_token"), (long long)n_ctx, size_text(u(plan, "kv_bytes")).c_str(),
                (long long)long_ctx, size_text(u(plan, "kv_bytes_at_1m")).c_str());
    if (plan.contains("state_bytes") && u(plan, "state_bytes") > 0)
        std::printf("recurrent (KDA) state per sequence, any context: %s in %zu layers\n",
                    size_text(u(plan, "state_bytes")).c_str(), plan.at("recurrent_layers").size());
    std::printf("\n");
    const std::string at_ctx = "KV at " + std::to_string(n_ctx), at_long = "KV at " + std::to_string(long_ctx);
    const std::string total_long = "total at " + std::to_string(long_ctx);
    std::printf("%-5s %-9s %12s %12s %14s %16s %12s %12s %12s %19s\n", "stage", "layers", "weights", "KV B/token",
                at_ctx.c_str(), at_long.c_str(), "state", "scratch", "total", total_long.c_str());
    const char* keys[] = {"weight_bytes", "kv_bytes_per_token", "kv_bytes",    "kv_bytes_at_1m",
                          "state_bytes",  "scratch_bytes",      "total_bytes", "total_bytes_at_1m"};
    uint64_t sum[8] = {};
    auto row = [](const std::string& stage, const std::string& layers, const uint64_t* v) {
        std::printf("%-5s %-9s %12s %12llu %14s %16s %12s %12s %12s %19s\n", stage.c_str(), layers.c_str(),
                    size_text(v[0]).c_str(), (unsigned long long)v[1], size_text(v[2]).c_str(), size_text(v[3]).c_str(),
                    size_text(v[4]).c_str(), size_text(v[5]).c_str(), size_text(v[6]).c_str(), size_text(v[7]).c_str());
    };
    for (const auto& st : plan.at("stages")) {
        uint64_t v[8];
        for (int k = 0; k < 8; ++k) sum[k] += v[k] = u(st, keys[k]);
        row(std::to_string(st.at("stage").get<int>()),
            std::to_string(st.at("first_layer").get<int>()) + ":" + std::to_string(st.at("last_layer").get<int>()), v);
    }
    if (plan.at("stages").size() > 1) row("all", "0:" + std::to_string(plan.at("n_layer").get<int>()), sum);
}

// --plan: the context defaults to the model's context_length.
void plan(const strata::model& m, const Options& o) {
    strata::plan_params p = o.plan_params;
    if (o.n_ctx) {
        p.n_ctx = *o.n_ctx;
    } else {
        const std::string key = std::string(m.get_string("general.architecture")) + ".context_length";
        if (!m.has_key(key)) throw std::runtime_error("the model has no " + key + ": give --n-ctx");
        p.n_ctx = m.get_int(key);
    }
    const std::string text = m.plan_json(p);
    if (o.json) std::cout << text << "\n";
    else print_plan(text);
}

}  // namespace

int main(int argc, char** argv) {
    const Options o = cli::parse_or_exit("strata-inspect", kUsage, [&] { return parse_args(argc, argv); });
    try {
        strata::model::params params;
        params.progress = show_progress;
        strata::model m(o.paths, params);
        if (o.plan) {
            plan(m, o);
        } else if (!o.tensor.empty()) {
            const auto info = m.tensor(m.find_tensor(o.tensor));
            write_npy(o.dump_path, m.read_f32(m.find_tensor(o.tensor)), info.shape);
            std::fprintf(stderr, "wrote %s: %s %s as float32\n", o.dump_path.c_str(), info.name.c_str(),
                         shape_text(info.shape).c_str());
        } else if (o.json) {
            print_json(m, o);
        } else {
            print_text(m, o);
        }
    } catch (const strata::error& e) {
        // Library messages name the file; add the path when one does not.
        std::string message = e.what();
        if (message.find(o.paths[0]) == std::string::npos)
            message = o.paths[0] + ": " + message;
        std::cerr << "strata-inspect: " << message << "\n";
        return 2;
    } catch (const std::exception& e) {
        std::cerr << "strata-inspect: " << e.what() << "\n";
        return 2;
    }
    return 0;
}
