// strata-bench: benchmarks built on the public API only (strata.h / strata.hpp).
//
//   strata-bench pipeline --model SHARD [SHARD...] [options]   one local session against a pipeline
//                                                              of local strata-worker processes
//   strata-bench MODEL [MORE-SHARDS...] -o REPORT.json [--repeat N] [--prompt-tokens 512,4096]
//                [--gen-tokens N] [--context-probe N] [--worker HOST:PORT ...]   the default mode
//   strata-bench decode MODEL [...] [--device cpu|cuda]                  the default mode, prompts 512/4096,
//                                                              decode tok/s against the streaming-read bound
//   strata-bench kernels [-o REPORT.json] [--quick] ...              the CUDA kernels against ceilings
//   strata-bench tokenize VOCAB.gguf --text FILE [--repeat N]        tokenization MB/s
//   strata-bench server URL [--streams 1,2,4,8] [--tokens N] ...      an OpenAI-compatible server:
//                                                              aggregate tok/s, TTFT and ITL per concurrency
//   strata-bench help [SUBCOMMAND]
//
// Each subcommand is a function `int NAME_main(int argc, char** argv)` receiving its own name as
// argv[0] and the remaining arguments; it lives in its own bench_NAME.cpp. Add one by declaring
// it below and listing it in kSubcommands.
#include <cstdio>
#include <cstring>
#include <string>

int bench_pipeline_main(int argc, char** argv);
int bench_kernels_main(int argc, char** argv);
int bench_tokenize_main(int argc, char** argv);
int bench_server_main(int argc, char** argv);
int bench_decode_main(int argc, char** argv);  // strata-bench decode MODEL ... (bench_model.cpp)
int run_model_bench(int argc, char** argv);  // strata-bench MODEL ... (bench_model.cpp)

namespace {

struct Subcommand {
    const char* name;
    int (*run)(int argc, char** argv);
    const char* summary;
};

constexpr Subcommand kSubcommands[] = {
    {"pipeline", bench_pipeline_main,
     "decode/prefill tok/s with 1 stage (a local session) and N stages (local strata-worker processes),\n"
     "              per-hop latency, bytes on the wire per token, prefill overlap"},
    {"decode", bench_decode_main,
     "the default mode with prompts of 512 and 4096 tokens and the decode bound: weight bytes per\n"
     "              token, the streaming-read ceiling (--device cuda), percent of the bound"},
    {"kernels", bench_kernels_main,
     "the CUDA kernels on model shapes against ceilings measured in the same run (streaming read,\n"
     "              device copy, cuBLAS f16 GEMM): GB/s or TFLOP/s, percent of the ceiling"},
    {"tokenize", bench_tokenize_main,
     "tokenization MB/s of one text file with a model's vocabulary (bench/tokenize_peer.sh: beside\n"
     "              llama.cpp's llama_tokenize on the same file)"},
    {"server", bench_server_main,
     "an OpenAI-compatible server (strata-server, llama-server): aggregate decode tok/s, time to\n"
     "              first token and inter-token latency p50/p99 with 1, 2, 4, 8 concurrent streams"},
};

const Subcommand* find(const char* name) {
    for (const auto& s : kSubcommands)
        if (std::strcmp(s.name, name) == 0) return &s;
    return nullptr;
}

void usage(FILE* out) {
    std::fprintf(out, "usage: strata-bench SUBCOMMAND [ARGS...]   (strata-bench SUBCOMMAND --help for its options)\n");
    std::fprintf(out, "       strata-bench MODEL [MORE-SHARDS...] -o REPORT.json [...]   (the default mode; MODEL --help)\n");
    for (const auto& s : kSubcommands) std::fprintf(out, "  %-10s  %s\n", s.name, s.summary);
}

}  // namespace

int main(int argc, char** argv) {
    if (argc < 2) {
        usage(stderr);
        return 2;
    }
    const std::string first = argv[1];
    if (first == "-h" || first == "--help" || first == "help") {
        if (first == "help" && argc >= 3) {
            if (const Subcommand* s = find(argv[2])) {
                char help[] = "--help";
                char* args[] = {argv[2], help, nullptr};
                return s->run(2, args);
            }
        }
        usage(stdout);
        return 0;
    }
    if (const Subcommand* s = find(argv[1])) return s->run(argc - 1, argv + 1);
    // Not a subcommand: the default mode, `strata-bench MODEL ...` (bench_model.cpp).
    if (argv[1][0] != '-') return run_model_bench(argc, argv);
    std::fprintf(stderr, "strata-bench: unknown subcommand '%s'\n", argv[1]);
    usage(stderr);
    return 2;
}
