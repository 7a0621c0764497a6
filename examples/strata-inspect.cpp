// strata-inspect: print a GGUF model's metadata, tensor table, shard digests and identity.
//
//   strata-inspect MODEL.gguf [MORE-SHARDS...] [--json] [--no-digests]
//   strata-inspect MODEL.gguf --tensor NAME --dump-f32 OUT.npy
//
// Uses only the public C++ API (strata.hpp). Exit status: 0 success, 2 bad input (a bad file,
// an unknown tensor, bad arguments) with one line on stderr naming the file and the problem.
#include <chrono>
#include <cstdio>
#include <cstring>
#include <fstream>
#include <iostream>
#include <sstream>
#include <string>
#include <vector>

#include "cli_args.hpp"
#include "strata/strata.hpp"

namespace {

struct Options {
    std::vector<std::string> paths;
    bool json = false;
    bool digests = true;
    std::string tensor;
    std::string dump_path;
};

const char* kUsage =
    "usage: strata-inspect MODEL.gguf [MORE-SHARDS...] [--json] [--no-digests]\n"
    "       strata-inspect MODEL.gguf [MORE-SHARDS...] --tensor NAME --dump-f32 OUT.npy\n"
    "Prints metadata, the tensor table (name, type, shape, bytes, shard), the sha256 of every shard\n"
    "and the model identity. Give the first shard of a split model (NAME-00001-of-0000N.gguf) or\n"
    "every shard. --json prints the same as one JSON object; --no-digests skips hashing.\n";

Options parse_args(int argc, char** argv) {
    Options o;
    for (int i = 1; i < argc; ++i) {
        const std::string a = argv[i];
        auto value = [&] { return cli::value(argc, argv, i); };
        if (a == "--json") o.json = true;
        else if (a == "--no-digests") o.digests = false;
        else if (a == "--tensor") o.tensor = value();
        else if (a == "--dump-f32") o.dump_path = value();
        else if (a == "-h" || a == "--help") cli::help(kUsage);
        else if (a.size() > 1 && a[0] == '-') throw cli::usage_error("unknown option " + a);
        else o.paths.push_back(a);
    }
    if (o.paths.empty()) throw cli::usage_error("no model file given");
    if (o.tensor.empty() != o.dump_path.empty()) throw cli::usage_error("--tensor and --dump-f32 go together");
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
    std::printf("  total tensor bytes: %llu\n\nshards:\n", (unsigned long long)total);
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
    out << "],\"shards\":[";
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

}  // namespace

int main(int argc, char** argv) {
    const Options o = cli::parse_or_exit("strata-inspect", kUsage, [&] { return parse_args(argc, argv); });
    try {
        strata::model::params params;
        params.progress = show_progress;
        strata::model m(o.paths, params);
        if (!o.tensor.empty()) {
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
