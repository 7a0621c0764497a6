// strata-bench tokenize VOCAB.gguf --text FILE [--repeat N] [-o REPORT.json]
//
// Tokenization speed on one text: MB/s of input (best and median of --repeat runs, each over the
// whole file, no BOS, special tokens not parsed), tokens per second, and the detokenization speed.
// tools/llamacpp/tok_bench.cpp measures llama.cpp's llama_tokenize the same way;
// bench/tokenize_peer.sh runs both on one file and prints the ratio.
#include <algorithm>
#include <chrono>
#include <cstdio>
#include <fstream>
#include <sstream>
#include <string>
#include <vector>

#include <nlohmann/json.hpp>

#include "common/cli_args.hpp"
#include "strata/strata.hpp"

namespace {

using json = nlohmann::ordered_json;
using Clock = std::chrono::steady_clock;

constexpr const char* kUsage =
    "usage: strata-bench tokenize VOCAB.gguf --text FILE [--repeat N] [-o REPORT.json]\n"
    "Tokenizes FILE (no BOS, special tokens not parsed) --repeat times (default 5) and reports MB/s.\n";

double seconds_since(Clock::time_point t0) { return std::chrono::duration<double>(Clock::now() - t0).count(); }

double median(std::vector<double> v) {
    std::sort(v.begin(), v.end());
    return v[v.size() / 2];
}

}  // namespace

int bench_tokenize_main(int argc, char** argv) {
    std::string model_path, text_path, out_path;
    int repeat = 5;
    try {
        for (int i = 1; i < argc; ++i) {
            const std::string a = argv[i];
            if (a == "-h" || a == "--help") {
                std::fputs(kUsage, stdout);
                return 0;
            }
            if (a == "--text") text_path = cli::value(argc, argv, i);
            else if (a == "--repeat") repeat = int(cli::number(a, cli::value(argc, argv, i), 1, 1e6));
            else if (a == "-o") out_path = cli::value(argc, argv, i);
            else if (!a.empty() && a[0] != '-' && model_path.empty()) model_path = a;
            else throw cli::usage_error("unknown argument '" + a + "'");
        }
        if (model_path.empty() || text_path.empty()) throw cli::usage_error("VOCAB.gguf and --text FILE are needed");
        if (repeat < 1) throw cli::usage_error("--repeat must be at least 1");
    } catch (const cli::usage_error& e) {
        std::fprintf(stderr, "strata-bench tokenize: %s\n%s", e.what(), kUsage);
        return 2;
    }
    std::ifstream f(text_path, std::ios::binary);
    if (!f) {
        std::fprintf(stderr, "strata-bench tokenize: cannot read %s\n", text_path.c_str());
        return 1;
    }
    std::stringstream ss;
    ss << f.rdbuf();
    const std::string text = ss.str();
    try {
        strata::model model(model_path);
        std::vector<double> enc, dec;
        size_t n_tokens = 0;
        for (int r = 0; r < repeat; ++r) {
            auto t0 = Clock::now();
            const auto ids = model.tokenize(text, false, false);
            enc.push_back(seconds_since(t0));
            n_tokens = ids.size();
            t0 = Clock::now();
            const auto back = model.detokenize(ids);
            dec.push_back(seconds_since(t0));
            std::fprintf(stderr, "\rrun %d/%d: %.2f MB/s", r + 1, repeat, double(text.size()) / 1e6 / enc.back());
        }
        std::fputc('\n', stderr);
        const double mb = double(text.size()) / 1e6;
        const auto vocab = model.vocab();
        json report = {
            {"benchmark", "tokenize"},
            {"model", model_path},
            {"pre_tokenizer", model.has_key("tokenizer.ggml.pre") ? std::string(model.get_string("tokenizer.ggml.pre")) : ""},
            {"vocab_kind", vocab.kind},
            {"text", {{"path", text_path}, {"bytes", text.size()}}},
            {"repeat", repeat},
            {"tokens", n_tokens},
            {"tokenize_seconds", enc},
            {"tokenize_mb_per_s_best", mb / *std::min_element(enc.begin(), enc.end())},
            {"tokenize_mb_per_s_median", mb / median(enc)},
            {"tokens_per_s_median", double(n_tokens) / median(enc)},
            {"detokenize_seconds", dec},
            {"detokenize_mb_per_s_median", mb / median(dec)},
        };
        const std::string out = report.dump(2) + "\n";
        if (!out_path.empty()) std::ofstream(out_path) << out;
        std::fputs(out.c_str(), stdout);
        std::printf("\n| file | bytes | tokens | tokenize MB/s (median) | best | detokenize MB/s |\n|---|---|---|---|---|---|\n"
                    "| %s | %zu | %zu | %.2f | %.2f | %.2f |\n",
                    model_path.c_str(), text.size(), n_tokens, mb / median(enc), mb / *std::min_element(enc.begin(), enc.end()),
                    mb / median(dec));
        return 0;
    } catch (const strata::error& e) {
        std::fprintf(stderr, "strata-bench tokenize: %s\n", e.what());
        return 1;
    }
}
