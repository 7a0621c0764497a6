// cli_args.hpp: the command-line parsing the example programs share. Public headers only.
//
// A program's parse_args throws cli::usage_error for a bad command line; main runs it through
// cli::parse_or_exit, which prints "TOOL: what" and the program's usage text on stderr and exits
// with 2 (the exit status every example gives bad arguments). Each program keeps its own usage
// text and its own messages; this header holds the mechanics.
#pragma once

#include <cmath>
#include <cstdio>
#include <cstdlib>
#include <optional>
#include <stdexcept>
#include <string>
#include <type_traits>

#include "strata/strata.h"

namespace cli {

// A bad command line (or a bad combination of arguments): what is printed before the usage.
struct usage_error : std::runtime_error {
    using std::runtime_error::runtime_error;
};

// Prints "TOOL: MESSAGE" and USAGE on stderr and ends the process with exit status 2.
[[noreturn]] inline void fail(const char* tool, const char* usage, const std::string& message) {
    std::fprintf(stderr, "%s: %s\n%s", tool, message.c_str(), usage);
    std::fflush(stderr);
    std::exit(2);
}

// Prints USAGE on stdout and ends the process with exit status 0 (-h, --help).
[[noreturn]] inline void help(const char* usage) {
    std::fputs(usage, stdout);
    std::fflush(stdout);
    std::exit(0);
}

// PARSE() (a program's parse_args), or fail() with the message of the usage_error it throws.
template <typename Parse>
auto parse_or_exit(const char* tool, const char* usage, Parse&& parse) -> decltype(parse()) {
    try {
        return parse();
    } catch (const usage_error& e) {
        fail(tool, usage, e.what());
    }
}

// The value of the option argv[i]: argv[i + 1], with i moved onto it; a usage_error
// "OPTION needs a value" when argv[i] is the last argument.
inline std::string value(int argc, char** argv, int& i) {
    if (i + 1 >= argc) throw usage_error(std::string(argv[i]) + " needs a value");
    return argv[++i];
}

// TEXT, all of it, as a number: std::stod for floating-point T, std::stoll (converted to T)
// otherwise; nothing when TEXT is not one (or is out of the parser's range).
template <typename T>
std::optional<T> to_number(const std::string& text) {
    try {
        size_t used = 0;
        T v;
        if constexpr (std::is_floating_point_v<T>) v = T(std::stod(text, &used));
        else v = T(std::stoll(text, &used));
        if (used != text.size()) return std::nullopt;
        return v;
    } catch (const std::exception&) {
        return std::nullopt;
    }
}

// A bound as JSON writes a double: a whole number below 1e15 with ".0" (4096.0), another one in
// the fewest digits that read back the same (0.01, 9e+15).
inline std::string bound_text(double v) {
    char buf[64];
    if (v == std::floor(v) && std::fabs(v) < 1e15) {
        std::snprintf(buf, sizeof buf, "%.0f.0", v);
        return buf;
    }
    for (int precision = 1; precision <= 17; ++precision) {
        std::snprintf(buf, sizeof buf, "%.*g", precision, v);
        if (std::strtod(buf, nullptr) == v) break;
    }
    return buf;
}

// TEXT as a number from LO to HI; a usage_error "FLAG needs a number from LO to HI, got 'TEXT'"
// otherwise.
inline double number(const std::string& flag, const std::string& text, double lo, double hi) {
    if (const auto v = to_number<double>(text); v && *v >= lo && *v <= hi) return *v;
    throw usage_error(flag + " needs a number from " + bound_text(lo) + " to " + bound_text(hi) + ", got '" + text +
                      "'");
}

// --wire: the type hidden states travel in between stages (f32 keeps the logits bit-identical
// to one process; f16, the default, halves the bytes).
inline int32_t wire_dtype(const std::string& name) {
    if (name == "f16") return STRATA_WIRE_F16;
    if (name == "bf16") return STRATA_WIRE_BF16;
    if (name == "f32") return STRATA_WIRE_F32;
    throw usage_error("--wire must be f16, bf16 or f32, got '" + name + "'");
}

// The pipeline options of strata-bench and strata-eval (PARAMS a strata::pipeline_params):
// --worker HOST:PORT (repeatable), --layers A:B,..., --key-file F, --wire f16|bf16|f32,
// --transport tcp|rdma (what the links run on; the workers must serve the same). True
// when A is one of them (VALUE() its value, as cli::value gives it); --wire sets WIRE_GIVEN.
template <typename Params, typename Value>
bool pipeline_option(const std::string& a, Value&& value, Params& params, bool& wire_given) {
    if (a == "--worker") params.workers.push_back(value());
    else if (a == "--layers") params.layers = value();
    else if (a == "--key-file") params.key_file = value();
    else if (a == "--transport") params.transport = value();
    else if (a == "--wire") {
        params.wire_dtype = wire_dtype(value());
        wire_given = true;
    } else return false;
    return true;
}

// A usage_error when --layers, --key-file or --wire came without a --worker.
template <typename Params>
void check_pipeline_options(const Params& params, bool wire_given) {
    if (params.workers.empty() && (!params.layers.empty() || !params.key_file.empty() || !params.transport.empty() ||
                                   wire_given))
        throw usage_error("--layers, --key-file, --transport and --wire need at least one --worker");
}

}  // namespace cli
